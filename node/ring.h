/*
 * ring.h — the node's route table: every known node (itself included) with
 * its backends and ids, and the ring rule of PROTOCOL.md §3.6.
 * Thread-safe (a read-write lock inside).
 */
#ifndef POHM_NODE_RING_H
#define POHM_NODE_RING_H

#include <stdint.h>

#include "wire.h"

struct node_ring;

/* The owner of a (group, id). */
struct node_owner {
	struct pohm_addr addr;		/* the owning node's advertised address */
	int32_t backend_id;
	int self;			/* 1 if it is this node */
};

/* A table that knows only this node (at self). NULL on ENOMEM. */
struct node_ring *node_ring_new(const struct pohm_addr *self);
void node_ring_free(struct node_ring *r);
/*
 * Set every backend of the node at addr (replacing what was known; nbe 0
 * removes the node).  be[i].ids are copied.  0 or -ENOMEM / -E2BIG.
 */
int node_ring_set(struct node_ring *r, const struct pohm_addr *addr,
		  const struct pohm_backend_ids *be, unsigned nbe);
/* Forget a node (its link went down). */
void node_ring_remove(struct node_ring *r, const struct pohm_addr *addr);
/*
 * Ring rule: the entry of group with the largest id <= id, wrapping to the
 * largest id of the group.  0 or -ENOENT when no node serves the group.
 */
int node_ring_owner(struct node_ring *r, uint32_t group, const uint8_t *id, struct node_owner *o);
/* Addresses of every known node, this node first; returns the count (<= max). */
unsigned node_ring_nodes(struct node_ring *r, struct pohm_addr *out, unsigned max);
/* 1 if a node with this address is in the table. */
int node_ring_has(struct node_ring *r, const struct pohm_addr *addr);

#endif
