/*
 * route.h — the route table: which node and backend own a key id in a group.
 *
 * Built from the backends each node lists in its handshake reply (and the
 * UPDATE_IDS pushes that change them); ROUTE_LIST only tells which nodes
 * exist (PROTOCOL.md §3.1–§3.3).  Per group the ids of every backend are
 * sorted as 64-byte big-endian numbers (memcmp order); the owner of key K is
 * the entry with the largest id <= K, wrapping around to the largest id of
 * the group when K is below them all (§3.6).
 *
 * Pure data structure: no locking, no network.  The client (core/net)
 * guards its table with its own lock.  Nodes are small integers chosen by
 * the caller (the index of the node in the client's node table).
 */
#ifndef POHM_CORE_ROUTE_H
#define POHM_CORE_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct pohm_route_entry {
	uint8_t  id[POHM_ID_SIZE];	/* ring position */
	uint32_t group;
	int32_t  backend;
	int      node;			/* caller's node index */
};

struct pohm_route {
	struct pohm_route_entry *e;	/* sorted by (group, id, node, backend) */
	size_t n, cap;
};

#define POHM_ROUTE_INIT { NULL, 0, 0 }

/* Release the table's memory. */
void pohm_route_free(struct pohm_route *r);

/* Remove every entry of node (it failed, or is about to be re-listed). */
void pohm_route_drop_node(struct pohm_route *r, int node);

/*
 * Replace the ids of (node, b->backend_id) with b's ids and group; with
 * b->flags & 1 (DISABLE) just remove them.  0 or -ENOMEM.
 */
int pohm_route_update_backend(struct pohm_route *r, int node, const struct pohm_backend_ids *b);

/*
 * Apply a dnet_id_container (handshake tail or UPDATE_IDS payload) for
 * node.  replace_all != 0 first drops every entry of node (handshake).
 * The container is validated completely before the table changes:
 * 0, -EPROTO (malformed; table untouched) or -ENOMEM.
 */
int pohm_route_apply_ids(struct pohm_route *r, int node, const uint8_t *p, size_t n,
			 int replace_all);

/* Owner of id in group, or NULL when the group has no entry (-ENXIO for callers). */
const struct pohm_route_entry *pohm_route_owner(const struct pohm_route *r, uint32_t group,
						const uint8_t id[POHM_ID_SIZE]);

/*
 * The ring rule over the entries whose node usable(arg, node) accepts:
 * the usable entry with the largest id <= id, else (wrap-around) the
 * usable entry with the largest id.  NULL when no entry of group is
 * usable.  A failed node's keys so fall to its ring neighbours, as the
 * Elliptics client drops a failed node from its table (and the servers
 * drop a lost peer from theirs).
 */
const struct pohm_route_entry *pohm_route_owner_among(const struct pohm_route *r, uint32_t group,
						      const uint8_t id[POHM_ID_SIZE],
						      int (*usable)(void *arg, int node), void *arg);

/* Number of entries of group (0 = group unknown). */
size_t pohm_route_group_size(const struct pohm_route *r, uint32_t group);

/*
 * Split a REVERSE_LOOKUP reply payload: the node's address container and
 * the id container that follows.  0 or -EPROTO.
 */
int pohm_route_parse_handshake(const uint8_t *p, size_t n, struct pohm_addr_list *addrs,
			       const uint8_t **ids, size_t *idslen);

/*
 * Validate a ROUTE_LIST reply payload (the container must fill it exactly,
 * PROTOCOL.md §3.2).  *nodes gets the number of node blocks.  0 or -EPROTO.
 */
int pohm_route_parse_list(const uint8_t *p, size_t n, struct pohm_addr_list *l, uint32_t *nodes);

/* Address idx of node block i of a parsed list (idx clamped to the block). 0 or -EPROTO. */
int pohm_route_list_addr(const struct pohm_addr_list *l, uint32_t i, uint32_t idx,
			 struct pohm_addr *out);

#endif
