/*
 * node_store.h — records on disk for pohmelfs-node (node/store.c; named
 * apart from core/store/store.h).
 *
 * A log-structured store as eblob keeps one: records are appended to blob
 * files under DIR/blob/ and an in-memory index, rebuilt at start, points
 * each key at its newest record; a committed record is never modified in
 * place, deletes append tombstones.  Every record carries a header
 * checksum and a CRC-32C per 64 KiB chunk; reads verify what they touch
 * and report -EILSEQ (-84) on a mismatch, exactly as eblob does.  See
 * store.c for the format and the reasoning, blob.h for the record layout.
 */
#ifndef POHM_NODE_STORE_H
#define POHM_NODE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wire.h"

#define NODE_STORE_MAX_OBJECT	(1ULL << 36)	/* 64 GiB: the largest object ever stored */
#define NODE_STORE_MAX_IDS	1024		/* ring ids per node */

struct node_store;

/* What a record says about itself. */
struct node_meta {
	uint64_t size;			/* data bytes */
	uint64_t record_flags;		/* POHM_RECORD_* as reported to clients */
	uint64_t user_flags;		/* stored verbatim */
	struct pohm_time ts;		/* stored verbatim */
	uint64_t data_offset;		/* where the data starts in its blob file */
	unsigned blob;			/* which blob file (data-0.N) */
};

/* One WRITE as the store sees it. */
struct node_wreq {
	const uint8_t *id;		/* 64 bytes: the record key (io.id) */
	const struct pohm_io_attr *io;	/* flags, offset, size, num, parent, timestamp, user_flags */
	const uint8_t *data;		/* io->size bytes */
	int want_csum;			/* fill res.csum with sha512 of the object */
};

struct node_wres {
	struct node_meta meta;		/* uncommitted: size 0, flags 0x1c0 (§10.6) */
	uint8_t csum[POHM_ID_SIZE];	/* with want_csum: sha512 of the whole object */
	uint64_t reply_size;		/* file_info.size to report (§10.3 for APPEND) */
	int release_fd;			/* always -1 (blobs stay open); the caller closes it
					 * when >= 0 */
};

/*
 * Open (creating if needed) the store in dir; stale temp files of an
 * interrupted write are removed.  sync_interval is the sync policy of
 * gcommit.h: > 0 seconds between syncs, 0 every write (group commit),
 * < 0 never.  Writes that
 * would make an object larger than max_object bytes (at most
 * NODE_STORE_MAX_OBJECT; 0 = that) get -EFBIG.  A new blob file is started
 * once the active one holds blob_size bytes (0 = 256 MiB).  The blobs are
 * scanned into the index and, when garbage dominates, compacted.
 * 0 or -errno.
 */
int node_store_open(struct node_store **out, const char *dir, int sync_interval,
		    uint64_t max_object, uint64_t blob_size);
void node_store_close(struct node_store *s);

/*
 * Open the store for a test tool while its node may be running: nothing
 * is truncated, compacted or created, no sync thread; only
 * node_store_corrupt, node_store_dump and reads are meant to be used.
 */
int node_store_open_tool(struct node_store **out, const char *dir);

/*
 * This node's ring ids: read from DIR/ids, or on first start create want
 * random ids and persist them (so a restart keeps the ring position).
 * *ids is malloc'ed (n × 64).  0 or -errno.
 */
int node_store_ids(struct node_store *s, unsigned want, uint8_t **ids, unsigned *n);

/*
 * Metadata of a committed record.  With csum != NULL the whole data is
 * verified and its sha512 written there (64 zero bytes for an empty record).
 * lock = take the key lock (0 for NOLOCK).  0, -ENOENT (missing or only
 * uncommitted), -EILSEQ (corrupt or torn record) or -errno.
 */
int node_store_lookup(struct node_store *s, const uint8_t *id, int lock, struct node_meta *m,
		      uint8_t *csum);

/*
 * Where read data lives: the reusable buffer, or (large reads) a read-only
 * mapping of the record file, which saves one copy of every byte.
 */
struct node_rbuf {
	struct pohm_buf buf;		/* reused between reads */
	void *map;			/* a mapping to release, or NULL */
	size_t maplen;
};

/* Unmap the mapping of the last read, if any (the buffer is kept). */
void node_rbuf_release(struct node_rbuf *b);

/*
 * Read size bytes (0 = to the end) at off of a committed record into rb
 * (call node_rbuf_release after using the data); *data points into it
 * and *n is the byte count (the bytes may be read-only).  verify = check
 * the chunk CRCs of the range (-EILSEQ on mismatch).  -ENOENT, -E2BIG
 * (off >= size, except off 0 of an empty record), -EFBIG (more than max
 * bytes), -EILSEQ, or 0.
 */
int node_store_read(struct node_store *s, const uint8_t *id, uint64_t off, uint64_t size,
		    uint64_t max, int verify, int lock, struct node_rbuf *rb,
		    struct node_meta *m, const uint8_t **data, size_t *n);

/*
 * Apply one WRITE (plain, APPEND, PREPARE/PLAIN_WRITE/COMMIT, CAS,
 * CAS_TIMESTAMP) under the key lock.  Durable before it returns with
 * sync_interval 0; otherwise in the page cache (synced within the interval,
 * never with < 0).  0 or -ENOENT, -EPERM, -EBADFD, -E2BIG, -EFBIG, -EILSEQ,
 * -errno; nothing is changed on failure (except a COMMIT beyond the
 * reservation, whose chunk stays in the uncommitted record, as in eblob).
 * On success the caller must close res->release_fd when it is >= 0.
 */
int node_store_write(struct node_store *s, const struct node_wreq *w, struct node_wres *res);

/* 1 when a write returns only once it is durable (sync_interval 0): it may wait long. */
int node_store_write_waits(const struct node_store *s);

/*
 * An estimate, from io and the index alone (no I/O, no key lock), of the
 * bytes a request on id reads, copies or hashes: a READ of io (write 0), a
 * WRITE of io (write 1), or with io NULL the whole committed record (a
 * LOOKUP with CHECKSUM).  The caller decides from it whether the request
 * is short enough to run on the thread it arrived on.
 */
uint64_t node_store_cost(struct node_store *s, const uint8_t *id, const struct pohm_io_attr *io,
			 int write);

/*
 * Make every write so far durable now (not with sync_interval < 0) and
 * report the counters: writes (calls that needed durability: WRITE and DEL)
 * and syncs run since open.  0 or the sync's -errno.
 */
int node_store_flush(struct node_store *s, uint64_t *writes, uint64_t *syncs);

/* Remove a record (committed and uncommitted): a tombstone. 0 or -ENOENT / -errno. */
int node_store_del(struct node_store *s, const uint8_t *id);

/* Every committed key, sorted (*ids malloc'ed, n × 64). 0 or -errno. */
int node_store_list(struct node_store *s, uint8_t **ids, size_t *n);

/*
 * Print one line per committed record, in blob order:
 * "ID-HEX size=N blob=B offset=O" (test tools).  0 or -errno.
 */
int node_store_dump(struct node_store *s, FILE *f);

/*
 * Test tool: flip one data byte of a record on disk so that it reads as
 * -EILSEQ.  Idempotent: a record that already fails its check is left
 * alone.  0, -ENOENT, -EINVAL (empty record) or -errno.
 */
int node_store_corrupt(struct node_store *s, const uint8_t *id);

/* The record's blob path relative to DIR (for file_info), NUL-terminated. */
void node_store_relpath(const struct node_meta *m, char *out, size_t outlen);

#endif
