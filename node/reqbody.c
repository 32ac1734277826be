/*
 * reqbody.c — decoders (and the one encoder) of the request bodies in
 * reqbody.h, every field read through one pohm_rd cursor.
 */
#include "reqbody.h"

#include <errno.h>
#include <string.h>

/* The cursor's verdict: -EINVAL if it ran short or bytes are left over. */
static int rd_done(const struct pohm_rd *r)
{
	return r->err || r->left ? -EINVAL : 0;
}

/* See reqbody.h. */
int node_status_body_decode(struct node_status_body *s, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);

	s->nflags = (int32_t)pohm_rd_u32(&r);
	s->status_flags = (int32_t)pohm_rd_u32(&r);
	s->log_level = pohm_rd_u32(&r);
	return rd_done(&r);
}

/* See reqbody.h. */
int node_iter_req_decode(struct node_iter_req *q, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);

	memset(q, 0, sizeof(*q));
	q->id = pohm_rd_u64(&r);
	q->action = pohm_rd_u32(&r);
	q->range_num = pohm_rd_u64(&r);
	q->tb.tsec = pohm_rd_u64(&r);
	q->tb.tnsec = pohm_rd_u64(&r);
	q->te.tsec = pohm_rd_u64(&r);
	q->te.tnsec = pohm_rd_u64(&r);
	q->itype = pohm_rd_u32(&r);
	q->flags = pohm_rd_u64(&r);
	q->group_num = pohm_rd_u32(&r);
	pohm_rd_take(&r, NODE_ITER_REQ_SIZE - 68);	/* reserved */
	/* Counts from the wire are checked against the bytes before any product. */
	if (!r.err && q->range_num > r.left / NODE_ITER_RANGE_SIZE)
		r.err = -EINVAL;
	q->ranges = pohm_rd_take(&r, (size_t)q->range_num * NODE_ITER_RANGE_SIZE);
	if (!r.err && q->group_num > r.left / 4)
		r.err = -EINVAL;
	pohm_rd_take(&r, (size_t)q->group_num * 4);
	return rd_done(&r);
}

/* See reqbody.h. */
void node_iter_resp_encode(uint8_t *out, const struct node_iter_resp *r)
{
	memset(out, 0, NODE_ITER_RESP_SIZE);
	pohm_st64(out, r->iter_id);
	memcpy(out + 8, r->id, POHM_ID_SIZE);
	pohm_st32(out + 72, (uint32_t)r->status);
	pohm_st64(out + 76, r->ts.tsec);
	pohm_st64(out + 84, r->ts.tnsec);
	pohm_st64(out + 92, r->user_flags);
	pohm_st64(out + 100, r->size);
	pohm_st64(out + 108, r->iterated);
	pohm_st64(out + 116, r->total);
	pohm_st64(out + 124, r->record_flags);
}

/* See reqbody.h. */
int node_iter_resp_decode(struct node_iter_resp *r, const uint8_t *p, size_t n)
{
	struct pohm_rd c = pohm_rd_make(p, n);
	const uint8_t *id;

	memset(r, 0, sizeof(*r));
	r->iter_id = pohm_rd_u64(&c);
	id = pohm_rd_take(&c, POHM_ID_SIZE);
	if (id)
		memcpy(r->id, id, POHM_ID_SIZE);
	r->status = (int32_t)pohm_rd_u32(&c);
	r->ts.tsec = pohm_rd_u64(&c);
	r->ts.tnsec = pohm_rd_u64(&c);
	r->user_flags = pohm_rd_u64(&c);
	r->size = pohm_rd_u64(&c);
	r->iterated = pohm_rd_u64(&c);
	r->total = pohm_rd_u64(&c);
	r->record_flags = pohm_rd_u64(&c);
	pohm_rd_take(&c, NODE_ITER_RESP_SIZE - 132);	/* reserved */
	return c.err ? -EINVAL : 0;
}

/* See reqbody.h. */
int node_bulk_body_decode(struct node_bulk_body *b, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	const uint8_t *head = pohm_rd_take(&r, POHM_IO_ATTR_SIZE);

	memset(b, 0, sizeof(*b));
	if (!head || r.left % POHM_IO_ATTR_SIZE)
		return -EINVAL;
	pohm_io_attr_decode(&b->head, head);
	b->count = r.left / POHM_IO_ATTR_SIZE;
	if (b->head.size != (uint64_t)b->count * POHM_IO_ATTR_SIZE)
		return -EINVAL;
	b->rest = r;
	return 0;
}

/* See reqbody.h. */
int node_bulk_body_next(struct node_bulk_body *b, struct pohm_io_attr *io)
{
	const uint8_t *p;

	if (b->rest.left < POHM_IO_ATTR_SIZE)
		return 0;
	p = pohm_rd_take(&b->rest, POHM_IO_ATTR_SIZE);
	if (!p)
		return 0;
	pohm_io_attr_decode(io, p);
	return 1;
}
