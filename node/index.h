/*
 * index.h — the store's in-memory index: record id → where its newest
 * committed version lies in the blobs (see store.c).  Rebuilt at every
 * start by scanning the blobs; never written to disk.
 *
 * Thread safety: every call takes the index's own lock (short critical
 * sections; no I/O under it).  Callers serialise changes of one key with
 * the store's key stripes.
 */
#ifndef POHM_NODE_INDEX_H
#define POHM_NODE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* One live record. */
struct node_ient {
	uint8_t id[POHM_ID_SIZE];
	uint32_t blob;			/* blob number (data-0.N) */
	uint32_t chunk;			/* CRC chunk size */
	uint64_t off;			/* header offset in the blob */
	uint64_t disk_size;		/* header + data + CRCs + padding */
	uint64_t size;			/* data bytes */
	uint64_t flags;			/* POHM_RECORD_* */
	uint64_t tsec, tnsec, user_flags;
};

struct node_index;

struct node_index *node_index_new(void);
void node_index_free(struct node_index *x);

/* Copy the entry of id to *e; 0 or -ENOENT. */
int node_index_get(struct node_index *x, const uint8_t *id, struct node_ient *e);

/*
 * Insert or replace the entry of e->id.  With old != NULL the replaced
 * entry is copied there.  1 when one was replaced, 0 when new, -ENOMEM.
 */
int node_index_put(struct node_index *x, const struct node_ient *e, struct node_ient *old);

/* Remove id; the removed entry goes to *old (may be NULL).  0 or -ENOENT. */
int node_index_del(struct node_index *x, const uint8_t *id, struct node_ient *old);

/* Every entry (a malloc'ed copy, in no order) and the count. 0 or -ENOMEM. */
int node_index_all(struct node_index *x, struct node_ient **out, size_t *n);

/* Number of entries. */
size_t node_index_count(struct node_index *x);

/*
 * Check put/get/del against a plain array over many random operations
 * (growth, wrap-around, backward-shift deletion); 0 or -1 with a message
 * on stderr.  For --self-test.
 */
int node_index_selftest(void);

#endif
