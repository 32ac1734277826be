/*
 * reqbody.h — the bodies of the node's control and scan requests, decoded
 * with the one bounds-checked cursor (core/wire/buf.h, pohm_rd): STATUS
 * (dnet_node_status), ITERATOR (dnet_iterator_request and the per-key
 * reply) and BULK_READ (an io_attr list).  A short, long or inconsistent
 * body is -EINVAL; nothing is read outside [p, p + n).  Key commands with an
 * io_attr (READ, WRITE, LOOKUP) decode with core/wire/proto.h.
 */
#ifndef POHM_NODE_REQBODY_H
#define POHM_NODE_REQBODY_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* dnet_node_status (12 bytes); -1 / 0xFFFFFFFF mean "leave as is". */
struct node_status_body {
	int32_t nflags, status_flags;
	uint32_t log_level;
};

/* Decode a STATUS body (request or reply): exactly 12 bytes; 0 or -EINVAL. */
int node_status_body_decode(struct node_status_body *s, const uint8_t *p, size_t n);

#define NODE_ITER_REQ_SIZE	104	/* dnet_iterator_request, ranges and groups follow */
#define NODE_ITER_RANGE_SIZE	128	/* two ids: first, last */
#define NODE_ITER_RESP_SIZE	140	/* dnet_iterator_response, data follows */

/* A decoded dnet_iterator_request. */
struct node_iter_req {
	uint64_t id;
	uint32_t action, itype, group_num;
	uint64_t range_num, flags;
	struct pohm_time tb, te;
	const uint8_t *ranges;		/* range_num · NODE_ITER_RANGE_SIZE bytes inside p */
};

/*
 * Decode an ITERATOR body: the request, range_num key ranges, group_num
 * u32 groups, nothing more; 0 or -EINVAL.
 */
int node_iter_req_decode(struct node_iter_req *q, const uint8_t *p, size_t n);

/* One dnet_iterator_response (the reply to ITERATOR, one per key). */
struct node_iter_resp {
	uint64_t iter_id;
	uint8_t id[POHM_ID_SIZE];
	int32_t status;
	struct pohm_time ts;
	uint64_t user_flags, size, iterated, total, record_flags;
};

/* Encode r into NODE_ITER_RESP_SIZE bytes at out. */
void node_iter_resp_encode(uint8_t *out, const struct node_iter_resp *r);
/* Decode the first NODE_ITER_RESP_SIZE of n bytes (data may follow); 0 or -EINVAL. */
int node_iter_resp_decode(struct node_iter_resp *r, const uint8_t *p, size_t n);

/* A BULK_READ body: a head io_attr whose size is N · 208, then N io_attrs. */
struct node_bulk_body {
	struct pohm_io_attr head;
	size_t count;			/* N */
	struct pohm_rd rest;		/* the N io_attrs not yet taken */
};

/* Decode the head and check the count against the bytes; 0 or -EINVAL. */
int node_bulk_body_decode(struct node_bulk_body *b, const uint8_t *p, size_t n);
/* The next io_attr of a decoded body into *io; 1, or 0 when none is left. */
int node_bulk_body_next(struct node_bulk_body *b, struct pohm_io_attr *io);

#endif
