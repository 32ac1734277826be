/*
 * io.c — group operations of io.h: write, lookup, read, get (+ read
 * repair) and delete over every configured group in parallel.
 *
 * Sections: client · write · lookup · read · repair · get · delete.
 * Objects changed only by compare-and-swap have their own reads and
 * writes in iocas.c.  Both run on io_op.c's machinery (io_int.h): the pure
 * helpers (quorum, clock), the per-operation context and messages, and
 * routing and running with the -95 retry.
 */
#include "io_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"
#include "wire.h"

#define READ_INFLIGHT	8		/* pieces in flight per read */
#define WRITE_PIECE	(8u << 20)	/* a chunked write goes in pieces of this size */
#define WRITE_INFLIGHT	8		/* middle pieces in flight per group */
#define WRITE_FIRST	(1u << 20)	/* the PREPARE piece: small, since nothing else
					 * may be sent until it is acknowledged */

/* ---------------------------------------------------------------- client */

int pohm_client_open(struct pohm_client **out, const struct pohm_config *cfg, char *err,
		     size_t errlen)
{
	struct pohm_client *c;
	int r = pohm_config_check_client(cfg, err, errlen);

	if (r)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	pohm_sha512(pohm_io_absent_marker, POHM_IO_MARKER_LEN, c->marker_sum);
	r = pohm_net_open(&c->net, cfg);
	if (r) {
		free(c);
		snprintf(err, errlen, "cannot create the client: %s", strerror(-r));
		return r;
	}
	*out = c;
	return 0;
}

void pohm_client_close(struct pohm_client *c)
{
	if (!c)
		return;
	io_cas_deferred_drop(c);
	pohm_net_close(c->net);
	free(c);
}

struct pohm_net *pohm_client_net(struct pohm_client *c)
{
	return c->net;
}

/* ---------------------------------------------------------------- write */

unsigned io_write_quorum(struct pohm_client *c, unsigned flags)
{
	unsigned w = pohm_config_write_quorum(c->cfg), maj = c->cfg->ngroups / 2 + 1;

	if ((flags & POHM_W_MAJORITY) && w < maj)
		w = maj;
	return w;
}

/* One piece of a windowed write: its WRITE attributes and a request per group. */
struct write_slot {
	uint8_t io[POHM_IO_ATTR_SIZE];
	struct pohm_req req[POHM_MAX_GROUPS];
	unsigned gi[POHM_MAX_GROUPS];
	size_t n;
};

/* Send piece [o, o + piece) to every live group in slot s. */
static void write_piece_send(struct gop *op, struct pohm_batch *w, struct write_slot *s,
			     const struct pohm_io_attr *base, const uint8_t *data, uint64_t o,
			     size_t piece, unsigned *alive, unsigned *live, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	struct pohm_req *ptrs[POHM_MAX_GROUPS];
	struct pohm_io_attr a = *base;
	unsigned gi;

	a.offset = o;
	a.size = piece;
	a.flags = POHM_IO_PLAIN_WRITE;
	a.num = o + piece;
	memset(a.parent, 0, sizeof(a.parent));
	pohm_io_attr_encode(s->io, &a);
	s->n = 0;
	for (gi = 0; gi < res->ngroups; gi++) {
		struct pohm_group_reply *g = &res->g[gi];
		struct pohm_req *r = &s->req[s->n];
		int32_t backend = 0;
		int node = -1;

		if (!alive[gi])
			continue;
		if (pohm_net_owner(op->c->net, g->group, op->id, op->own_node, &node, &backend)) {
			g->status = -ENXIO;
			alive[gi] = 0;
			(*live)--;
			continue;
		}
		g->node = node;
		pohm_req_init(r, node, POHM_CMD_WRITE, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
		memcpy(r->cmd.id.id, op->id, POHM_ID_SIZE);
		r->cmd.id.group = g->group;
		r->cmd.backend_id = backend;
		r->p1 = s->io;
		r->n1 = POHM_IO_ATTR_SIZE;
		r->p2 = data + o;
		r->n2 = piece;
		s->gi[s->n] = gi;
		ptrs[s->n++] = r;
	}
	pohm_net_window_send(op->c->net, w, ptrs, s->n, deadline);
}

/*
 * The middle pieces [off, end) of a chunked write (PLAIN_WRITE) in a
 * sliding window of WRITE_INFLIGHT pieces: the node may apply them in any
 * order, each lands at its own offset of the prepared record, and the
 * caller sends the COMMIT only after all of them were acknowledged.  A
 * group that fails one is dropped (alive[gi] = 0, its status in res).
 * Each answer is waited for at most timeout.  Returns the groups still alive.
 */
static unsigned write_middle(struct gop *op, const struct pohm_io_attr *base, const uint8_t *data,
			     uint64_t off, uint64_t end, unsigned *alive, uint64_t timeout)
{
	struct pohm_net *net = op->c->net;
	struct pohm_io_result *res = op->res;
	struct write_slot *slots = calloc(WRITE_INFLIGHT, sizeof(*slots));
	struct pohm_req **all = calloc(WRITE_INFLIGHT * POHM_MAX_GROUPS, sizeof(*all));
	struct pohm_batch *w = slots && all ? pohm_net_window_open(net) : NULL;
	size_t sent = 0, next = 0, k;
	unsigned gi, live = 0;

	for (gi = 0; gi < res->ngroups; gi++)
		live += alive[gi];
	if (!w) {
		for (gi = 0; gi < res->ngroups; gi++)
			if (alive[gi])
				res->g[gi].status = -ENOMEM;
		live = 0;
		goto out;
	}
	for (k = 0; k < WRITE_INFLIGHT * POHM_MAX_GROUPS; k++)
		all[k] = &slots[k / POHM_MAX_GROUPS].req[k % POHM_MAX_GROUPS];
	while (live) {
		struct write_slot *s;

		while (sent - next < WRITE_INFLIGHT && off < end && live) {
			size_t piece = end - off < WRITE_PIECE ? (size_t)(end - off) : WRITE_PIECE;

			write_piece_send(op, w, &slots[sent % WRITE_INFLIGHT], base, data, off, piece,
					 alive, &live, pohm_sys_mono_ns() + timeout);
			off += piece;
			sent++;
		}
		if (next == sent)
			break;
		/* The oldest piece: every group's answer. */
		s = &slots[next % WRITE_INFLIGHT];
		for (k = 0; k < s->n; k++) {
			struct pohm_req *r = &s->req[k];
			struct pohm_group_reply *g = &res->g[s->gi[k]];

			pohm_net_window_wait(net, w, r, pohm_sys_mono_ns() + timeout);
			g->rtt_ns = r->done_ns - r->sent_ns;
			if (alive[s->gi[k]]) {
				g->status = r->status;
				if (r->status) {
					alive[s->gi[k]] = 0;
					live--;
				}
			}
			pohm_req_release(r);
		}
		s->n = 0;
		next++;
	}
out:
	if (w) {
		pohm_net_window_close(net, w, all, WRITE_INFLIGHT * POHM_MAX_GROUPS);
		for (k = 0; k < WRITE_INFLIGHT * POHM_MAX_GROUPS; k++)
			pohm_req_release(all[k]);
	}
	free(all);
	free(slots);
	return live;
}

int io_write_error(struct gop *op, unsigned ok)
{
	unsigned gi, timeouts = 0, cas = 0, failed = 0;

	io_note(op, "write committed on %u of %u groups, %u needed", ok, op->res->ngroups, op->w);
	for (gi = 0; gi < op->res->ngroups; gi++) {
		int st = op->res->g[gi].status;

		if (!st)
			continue;
		failed++;
		timeouts += st == -ETIMEDOUT;
		cas += st == -EBADFD;
		io_note_group(op, gi, st, "");
	}
	if (cas)
		return -EBADFD;
	if (timeouts == failed)
		return -ETIMEDOUT;
	return -EIO;
}

int pohm_io_write(struct pohm_client *c, const void *key, size_t keylen, const void *data,
		  size_t len, const struct pohm_write_opts *opts, struct pohm_io_result *res)
{
	static const struct pohm_write_opts none;
	uint8_t io[POHM_IO_ATTR_SIZE];
	struct pohm_io_attr a;
	struct gop *op = malloc(sizeof(*op));
	uint64_t deadline, ts, off = 0;
	size_t piece_max;
	unsigned gi, ok = 0, alive[POHM_MAX_GROUPS];
	int rc;

	if (!op)
		return -ENOMEM;
	if (!opts)
		opts = &none;
	io_op_init(op, c, key, keylen, res);
	if (!len) {
		io_note(op, "empty objects cannot be stored (Elliptics creates no zero-length record)");
		rc = -EINVAL;
		goto out;
	}
	deadline = op->start + c->cfg->write_wait_timeout_ns;
	rc = pohm_net_refresh(c->net, deadline, 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(c->net, m, sizeof(m));
		io_note(op, "%s", m);
		goto out;
	}
	op->w = io_write_quorum(c, opts->flags);
	ts = pohm_clock_next(&c->clock_last, pohm_sys_real_ns(), opts->min_ts_ns);
	res->ts = pohm_time_from_ns(ts);
	res->size = len;
	for (gi = 0; gi < res->ngroups; gi++)
		alive[gi] = 1;

	/* One packet up to POHM_IO_PACKET_MAX, else PREPARE (WRITE_FIRST bytes) /
	 * PLAIN_WRITE... / COMMIT in pieces of WRITE_PIECE. */
	piece_max = len > POHM_IO_PACKET_MAX ? WRITE_PIECE : len;
	do {
		size_t piece = len - off > piece_max ? piece_max : len - (size_t)off;
		int first = off == 0, last;

		if (first && len > POHM_IO_PACKET_MAX)
			piece = WRITE_FIRST;
		last = off + piece == len;
		if (!first && !last) {
			/* Every piece up to the last one, pipelined; then the COMMIT. */
			uint64_t end = len - ((len - off - 1) % piece_max + 1);

			ok = write_middle(op, &a, data, off, end, alive, c->cfg->write_wait_timeout_ns);
			off = end;
			continue;
		}

		memset(&a, 0, sizeof(a));
		memcpy(a.id, op->id, POHM_ID_SIZE);
		a.timestamp = res->ts;
		a.user_flags = opts->user_flags;
		a.offset = off;
		a.size = piece;
		if (first) {
			if (opts->flags & POHM_W_CAS_TS)
				a.flags |= POHM_IO_CAS_TIMESTAMP;
			if (opts->flags & POHM_W_CAS_DATA) {
				a.flags |= POHM_IO_CAS;
				memcpy(a.parent, opts->parent, POHM_ID_SIZE);
			}
		}
		if (!(first && last)) {
			a.flags |= POHM_IO_PLAIN_WRITE;
			if (first)
				a.flags |= POHM_IO_PREPARE;
			if (last)
				a.flags |= POHM_IO_COMMIT;
			a.num = first || last ? len : off + piece;
		}
		pohm_io_attr_encode(io, &a);
		io_op_release(op);
		op->quorum_at = 0;
		/* A chunked write may take long: every step has write_wait_timeout of its own. */
		if (!first)
			deadline = pohm_sys_mono_ns() + c->cfg->write_wait_timeout_ns;
		for (gi = 0; gi < res->ngroups; gi++)
			if (alive[gi])
				io_op_add(op, gi, POHM_CMD_WRITE, 0, io, sizeof(io),
				       (const uint8_t *)data + off, piece);
		/* Middle chunks must reach every group still writing: no early return. */
		io_op_run(op, deadline, last ? io_write_enough : NULL);
		ok = io_write_collect(op);
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].status)
				alive[gi] = 0;
		off += piece;
	} while (off < len && ok >= op->w);

	res->committed = ok;
	if (ok >= op->w && off == len) {
		rc = 0;
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].status && res->g[gi].status != -ECANCELED)
				io_note_group(op, gi, res->g[gi].status, "not written to ");
	} else {
		rc = io_write_error(op, off == len ? ok : 0);
	}
out:
	io_op_release(op);
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- lookup */

static void take_lookup(struct gop *op, size_t k, int with_csum);

/* Vote of request k (lock held by the caller of enough, or after the run). */
static void vote_of(const struct pohm_req *r, struct pohm_vote *v)
{
	const struct pohm_pkt *p;
	struct pohm_file_info fi;

	memset(v, 0, sizeof(*v));
	if (!r->done) {
		v->status = 1;
		return;
	}
	v->status = r->status;
	if (r->status)
		return;
	p = pohm_req_final(r);
	if (!p || pohm_lookup_reply_decode(NULL, &fi, p->data, (size_t)p->cmd.size))
		v->status = -EPROTO;
	else
		v->ts = fi.mtime;
}

static int lookup_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl)
{
	struct gop *op = arg;
	struct pohm_vote v[POHM_MAX_GROUPS];
	struct pohm_time ts;
	size_t k, m = 0, pending = 0;
	int absent;

	(void)reqs;
	(void)n;
	for (k = 0; k < op->n; k++) {
		vote_of(&op->reqs[k], &v[m]);
		pending += v[m].status == 1;
		m++;
	}
	/* Groups without a route count as no answer. */
	for (; m < op->res->ngroups; m++) {
		memset(&v[m], 0, sizeof(v[m]));
		v[m].status = -ENXIO;
	}
	if (pohm_quorum_pick(v, m, op->w, 0, &ts, &absent, NULL) != 1)
		return 0;
	if (!op->wait_rest)
		return 1;
	io_set_read_grace(op, dl);
	return !pending;
}

/* Groups whose last answer was a copy or "absent". */
static unsigned answered_groups(const struct pohm_io_result *res)
{
	unsigned gi, n = 0;

	for (gi = 0; gi < res->ngroups; gi++)
		n += !res->g[gi].status || res->g[gi].status == -ENOENT;
	return n;
}

/* LOOKUP every group and pick the version. 0, -ENOENT or -errno. Fills res. */
static int do_lookup(struct gop *op, int with_csum, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	struct pohm_vote v[POHM_MAX_GROUPS];
	struct pohm_time ts;
	unsigned gi, held = 0;
	size_t k;
	int absent = 0, rc;

	rc = pohm_net_refresh(op->c->net, deadline, 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(op->c->net, m, sizeof(m));
		io_note(op, "%s", m);
		return rc;
	}
	op->w = pohm_config_write_quorum(op->c->cfg);
	for (gi = 0; gi < res->ngroups; gi++)
		io_op_add(op, gi, POHM_CMD_LOOKUP, with_csum ? POHM_FLAG_CHECKSUM : 0, NULL, 0, NULL, 0);
	io_op_run(op, deadline, op->wait_all ? NULL : lookup_enough);
	for (k = 0; k < op->n; k++)
		take_lookup(op, k, with_csum);
	for (gi = 0; gi < res->ngroups; gi++) {
		v[gi].status = res->g[gi].status;
		v[gi].ts = res->g[gi].ts;
	}
	rc = pohm_quorum_pick(v, res->ngroups, op->w, 1, &ts, &absent, &held);
	if (rc < 0) {
		io_note(op, "no group answered");
		for (gi = 0; gi < res->ngroups; gi++)
			io_note_group(op, gi, res->g[gi].status, "");
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].status == -ETIMEDOUT)
				return -ETIMEDOUT;
		return -EIO;
	}
	if (absent)
		return -ENOENT;
	res->ts = ts;
	if (held < op->w && held < answered_groups(res)) {
		/* Newest, but on fewer groups than a write needs while another
		 * answering group holds an older copy or none: an acknowledged
		 * write whose other copies are down or stale, or a failed write.
		 * (Groups that are only silent are no evidence either way.) */
		io_note(op, "the newest copy is on %u group(s), fewer than the %u a write needs: "
			"served, being newer than the others", held, op->w);
		pohm_warn("%s", res->msg);
	}
	/* The fastest group holding exactly that version. */
	for (gi = 0; gi < res->ngroups; gi++) {
		struct pohm_group_reply *g = &res->g[gi];

		if (g->status || pohm_time_cmp(&g->ts, &ts))
			continue;
		if (res->chosen < 0 || g->rtt_ns < res->g[res->chosen].rtt_ns)
			res->chosen = (int)gi;
	}
	res->size = res->g[res->chosen].size;
	return 0;
}

int pohm_io_lookup(struct pohm_client *c, const void *key, size_t keylen, unsigned flags,
		   struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	int rc;

	if (!op)
		return -ENOMEM;
	io_op_init(op, c, key, keylen, res);
	op->wait_all = !!(flags & POHM_LOOKUP_ALL);
	rc = do_lookup(op, !!(flags & POHM_LOOKUP_CSUM), op->start + c->cfg->read_wait_timeout_ns);
	io_op_release(op);
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- read */

typedef pohm_io_sink_fn read_sink_fn;

struct buf_sink {
	uint8_t *buf;
	uint64_t base;		/* object offset of buf[0] */
};

static int buf_sink(void *arg, const uint8_t *p, size_t n, uint64_t off)
{
	struct buf_sink *b = arg;
	uint8_t *to = b->buf + (off - b->base);

	if (to != p)			/* read_group read it in place already */
		memcpy(to, p, n);
	return 0;
}

/* One piece of a windowed read: its request and its READ attributes. */
struct read_slot {
	struct pohm_req req;
	uint8_t io[POHM_IO_ATTR_SIZE];
	size_t at, want;		/* offset within the range, bytes asked */
	uint8_t *own;			/* reused reply memory when there is no caller buffer */
};

/*
 * The attributes and bytes of READ request r's answer, whether the data went
 * straight to the caller's memory (a split packet) or came with the reply.
 * 0 or -errno (the node's status, or -EPROTO for a malformed answer).
 */
static int read_reply(const struct pohm_req *r, struct pohm_io_attr *a, const uint8_t **data,
		      size_t *dlen)
{
	const struct pohm_pkt *p = pohm_req_final(r);

	if (r->status)
		return r->status;
	if (!p)
		return -EPROTO;
	if (!p->split)
		return pohm_io_payload_decode(a, data, dlen, p->data, (size_t)p->cmd.size, 1) ?
			       -EPROTO : 0;
	/* The data went straight to the caller's memory; the attributes stayed. */
	if (!p->ext || p->cmd.size - p->ext_len != POHM_IO_ATTR_SIZE)
		return -EPROTO;
	pohm_io_attr_decode(a, p->data);
	*data = p->ext;
	*dlen = p->ext_len;
	return a->size == *dlen ? 0 : -EPROTO;
}

/* Check piece s's reply (stamp ts, checksum if csum); *data, *dlen its bytes. 0 or -errno. */
static int read_check(const struct read_slot *s, const struct pohm_time *ts, int csum,
		      const uint8_t **data, size_t *dlen)
{
	struct pohm_io_attr a;
	int r = read_reply(&s->req, &a, data, dlen);

	if (r)
		return r;
	if (*dlen > s->want)
		return -EPROTO;
	if (pohm_time_cmp(&a.timestamp, ts))
		return -ESTALE;
	if (csum) {
		uint8_t sum[POHM_SHA512_LEN];

		pohm_sha512(*data, *dlen, sum);
		if (memcmp(sum, a.parent, sizeof(sum)))
			return -EBADMSG;
	}
	return 0;
}

/*
 * Read [off, off+len) of version ts from group gi in pieces, READ_INFLIGHT
 * of them in flight in a sliding window (pohm_net_window_*): while one
 * answer is checked and handed to sink, the node works on the next ones.
 * Each piece's stamp and checksum are checked; pieces reach sink in order.
 * *got = bytes delivered (a failover continues from there).  0 (also at an
 * early end of the object), or -errno.
 */
static int read_group(struct gop *op, unsigned gi, const struct pohm_time *ts, uint64_t off,
		      size_t len, read_sink_fn sink, void *arg, size_t *got, uint64_t deadline)
{
	struct pohm_net *net = op->c->net;
	struct pohm_group_reply *g = &op->res->g[gi];
	int csum = !op->c->cfg->noreadcsum;
	struct read_slot *slots = calloc(READ_INFLIGHT, sizeof(*slots));
	struct pohm_req *ptrs[READ_INFLIGHT];
	struct pohm_batch *w = slots ? pohm_net_window_open(net) : NULL;
	size_t sent = 0, next = 0, k;
	uint8_t *direct = NULL;
	int rc = 0;

	/*
	 * Replies are read straight into memory: the caller's buffer when it
	 * gave one, else one reused buffer per slot (not a fresh allocation,
	 * with its page faults, per piece).
	 */
	if (sink == buf_sink)
		direct = ((struct buf_sink *)arg)->buf + (off - ((struct buf_sink *)arg)->base);
	*got = 0;
	if (!w) {
		free(slots);
		return -ENOMEM;
	}
	for (k = 0; k < READ_INFLIGHT; k++)
		ptrs[k] = &slots[k].req;
	while (next * (size_t)POHM_IO_PIECE < len && !rc) {
		struct read_slot *s;
		const uint8_t *data;
		size_t dlen;
		uint64_t dl;

		/* Keep the window full. */
		while (sent - next < READ_INFLIGHT && sent * (size_t)POHM_IO_PIECE < len) {
			struct pohm_io_attr a;
			struct pohm_req *r;
			int32_t backend = 0;
			int node = -1;

			s = &slots[sent % READ_INFLIGHT];
			if (pohm_net_owner(net, g->group, op->id, 0, &node, &backend)) {
				rc = -ENXIO;
				break;
			}
			g->node = node;
			s->at = sent * (size_t)POHM_IO_PIECE;
			s->want = len - s->at < POHM_IO_PIECE ? len - s->at : POHM_IO_PIECE;
			memset(&a, 0, sizeof(a));
			memcpy(a.id, op->id, POHM_ID_SIZE);
			memcpy(a.parent, op->id, POHM_ID_SIZE);
			a.offset = off + s->at;
			a.size = s->want;
			a.flags = csum ? POHM_IO_CHECKSUM : 0;
			pohm_io_attr_encode(s->io, &a);
			r = &s->req;
			pohm_req_init(r, node, POHM_CMD_READ,
				      POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
			memcpy(r->cmd.id.id, op->id, POHM_ID_SIZE);
			r->cmd.id.group = g->group;
			r->cmd.backend_id = backend;
			r->p1 = s->io;
			r->n1 = POHM_IO_ATTR_SIZE;
			if (!direct && !s->own)
				s->own = malloc(len < POHM_IO_PIECE ? len : POHM_IO_PIECE);
			r->rdest = direct ? direct + s->at : s->own;
			r->rdest_cap = s->want;
			r->rdest_skip = POHM_IO_ATTR_SIZE;
			pohm_net_window_send(net, w, &r, 1, deadline);
			sent++;
		}
		if (rc || next == sent)
			break;
		/* A stream gets a fresh timeout per piece: its consumer sets the pace. */
		dl = op->piece_timeout ? pohm_sys_mono_ns() + op->piece_timeout : deadline;
		s = &slots[next % READ_INFLIGHT];
		pohm_net_window_wait(net, w, &s->req, dl);
		g->rtt_ns = s->req.done_ns - s->req.sent_ns;
		rc = read_check(s, ts, csum, &data, &dlen);
		if (!rc && dlen) {
			rc = sink(arg, data, dlen, off + s->at);
			if (rc) {
				rc = rc < 0 ? rc : -EIO;
				op->sink_failed = 1;
			}
		}
		if (!rc) {
			*got = s->at + dlen;
			if (dlen < s->want) {	/* end of the object */
				pohm_req_release(&s->req);
				next++;
				break;
			}
		}
		/* The piece's memory goes back now, so the next ones can reuse it. */
		pohm_req_release(&s->req);
		next++;
	}
	pohm_net_window_close(net, w, ptrs, READ_INFLIGHT);
	for (k = 0; k < READ_INFLIGHT; k++) {
		pohm_req_release(&slots[k].req);
		free(slots[k].own);
	}
	free(slots);
	return rc;
}

/* Fill res->g[gi] from a LOOKUP reply. */
static void take_lookup(struct gop *op, size_t k, int with_csum)
{
	struct pohm_req *r = &op->reqs[k];
	struct pohm_group_reply *g = &op->res->g[op->gi[k]];
	const struct pohm_pkt *p = pohm_req_final(r);
	struct pohm_file_info fi;

	g->status = r->status;
	g->rtt_ns = r->done_ns - r->sent_ns;
	if (r->status)
		return;
	if (!p || pohm_lookup_reply_decode(NULL, &fi, p->data, (size_t)p->cmd.size)) {
		g->status = -EPROTO;
		return;
	}
	g->ts = fi.mtime;
	g->size = fi.size;
	g->record_flags = fi.record_flags;
	g->has_csum = with_csum;
	memcpy(g->csum, fi.checksum, POHM_ID_SIZE);
}

/* LOOKUP the groups not waited for (the quorum answered first). Count asked. */
static int relookup_cancelled(struct gop *op, uint64_t deadline)
{
	unsigned gi;
	size_t k;

	io_op_release(op);
	for (gi = 0; gi < op->res->ngroups; gi++)
		if (op->res->g[gi].status == -ECANCELED)
			io_op_add(op, gi, POHM_CMD_LOOKUP, 0, NULL, 0, NULL, 0);
	if (!op->n)
		return 0;
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++)
		take_lookup(op, k, 0);
	k = op->n;
	io_op_release(op);
	return (int)k;
}

/*
 * Try every group holding version ts, fastest first, until the range is
 * read; a group that fails part-way is followed by the next one from the
 * first byte not yet delivered.  *got = bytes delivered to sink.
 */
static int read_failover(struct gop *op, uint64_t off, size_t len, read_sink_fn sink, void *arg,
			 size_t *got, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	int tried[POHM_MAX_GROUPS] = { 0 }, rc = -EIO, relooked = 0, refreshed = 0;
	unsigned gi;

	*got = 0;
	for (;;) {
		size_t part = 0;
		int best = -1;

		for (gi = 0; gi < res->ngroups; gi++) {
			struct pohm_group_reply *g = &res->g[gi];

			if (tried[gi] || g->status || pohm_time_cmp(&g->ts, &res->ts))
				continue;
			if (best < 0 || g->rtt_ns < res->g[best].rtt_ns)
				best = (int)gi;
		}
		if (best < 0 && !relooked++ && relookup_cancelled(op, deadline))
			continue;
		if (best < 0)
			return rc;
		tried[best] = 1;
		rc = read_group(op, (unsigned)best, &res->ts, off + *got, len - *got, sink, arg, &part,
				deadline);
		*got += part;
		if (!rc) {
			res->chosen = best;
			return 0;
		}
		if (op->sink_failed)
			return rc;	/* the caller refused the bytes: no other group helps */
		if (rc == -EOPNOTSUPP && !refreshed++ && pohm_sys_mono_ns() < deadline) {
			/* A stale route: refresh it and ask the group's new owner. */
			pohm_net_refresh(op->c->net, deadline, 1);
			tried[best] = 0;
			continue;
		}
		if (rc == -EILSEQ || rc == -EBADMSG)
			op->bad[best] = rc;
		io_note_group(op, (unsigned)best, rc, "read failed from ");
	}
}

int pohm_io_read(struct pohm_client *c, const void *key, size_t keylen, uint64_t off, void *buf,
		 size_t len, size_t *got, struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	struct buf_sink bs;
	uint64_t deadline;
	int rc;

	*got = 0;
	if (!op)
		return -ENOMEM;
	io_op_init(op, c, key, keylen, res);
	deadline = op->start + c->cfg->read_wait_timeout_ns;
	rc = do_lookup(op, 0, deadline);
	io_op_release(op);
	if (rc)
		goto out;
	if (off >= res->size) {
		rc = 0;			/* at or past the end: nothing to read */
		goto out;
	}
	if (len > res->size - off)
		len = (size_t)(res->size - off);
	bs.buf = buf;
	bs.base = off;
	rc = read_failover(op, off, len, buf_sink, &bs, got, deadline);
out:
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- repair */

/* A parent no data hashes to: CAS with it passes only when the key is missing. */
static const uint8_t absent_parent[POHM_ID_SIZE] = {
	'p', 'o', 'h', 'm', 'e', 'l', 'f', 's', ':', 'a', 'b', 's', 'e', 'n', 't', 0xa5,
};

static int needs_repair(const struct gop *op, unsigned gi)
{
	const struct pohm_group_reply *g = &op->res->g[gi];

	if (op->bad[gi] || g->status == -EILSEQ || g->status == -ENOENT)
		return 1;
	return !g->status && pohm_time_cmp(&g->ts, &op->res->ts);
}

/*
 * Rewrite the committed content under a fresh stamp on every group that
 * answered, when any of them is stale, missing, corrupt or ahead.
 */
static void repair(struct gop *op, const uint8_t *data, size_t len, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	uint8_t io[3][POHM_IO_ATTR_SIZE], sum[POHM_SHA512_LEN];
	struct pohm_io_attr a;
	uint64_t floor = pohm_time_to_ns(&res->ts), ts;
	unsigned gi, any = 0, v;
	size_t k;

	for (gi = 0; gi < res->ngroups; gi++) {
		any |= (unsigned)needs_repair(op, gi);
		if (!res->g[gi].status && pohm_time_to_ns(&res->g[gi].ts) > floor)
			floor = pohm_time_to_ns(&res->g[gi].ts);
	}
	if (!any || len > POHM_IO_PACKET_MAX)
		return;
	ts = pohm_clock_next(&op->c->clock_last, pohm_sys_real_ns(), floor + 1);
	pohm_sha512(data, len, sum);
	/* 0: holds the version (data CAS), 1: absent (create only), 2: other (stamp CAS). */
	for (v = 0; v < 3; v++) {
		memset(&a, 0, sizeof(a));
		memcpy(a.id, op->id, POHM_ID_SIZE);
		a.timestamp = pohm_time_from_ns(ts);
		a.size = len;
		a.flags = POHM_IO_CAS_TIMESTAMP | (v < 2 ? POHM_IO_CAS : 0);
		if (v == 0)
			memcpy(a.parent, sum, sizeof(sum));
		if (v == 1)
			memcpy(a.parent, absent_parent, sizeof(absent_parent));
		pohm_io_attr_encode(io[v], &a);
	}
	io_op_release(op);
	for (gi = 0; gi < res->ngroups; gi++) {
		struct pohm_group_reply *g = &res->g[gi];

		if (g->status && g->status != -ENOENT && g->status != -EILSEQ)
			continue;	/* no answer: nothing to write to */
		v = g->status == -ENOENT ? 1 : (!g->status && !op->bad[gi] &&
						 !pohm_time_cmp(&g->ts, &res->ts)) ? 0 : 2;
		io_op_add(op, gi, POHM_CMD_WRITE, 0, io[v], POHM_IO_ATTR_SIZE, data, len);
	}
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++) {
		struct pohm_group_reply *g = &res->g[op->gi[k]];
		int st = op->reqs[k].status;

		g->repair = st ? st : 1;
		if (st)
			io_note_group(op, op->gi[k], st, "read repair failed on ");
		else if (needs_repair(op, op->gi[k]))
			io_note(op, "group %u repaired", g->group);
	}
	if (op->n)
		res->ts = pohm_time_from_ns(ts);
	io_op_release(op);
}

/* ---------------------------------------------------------------- get */

/* Read the whole committed version (looked up in op->res) to sink. 0 or -errno. */
static int get_body(struct gop *op, read_sink_fn sink, void *arg, size_t *got, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	unsigned gi;
	int rc;

	for (gi = 0; gi < res->ngroups; gi++)
		if (res->g[gi].status == -EILSEQ)
			io_note_group(op, gi, -EILSEQ, "");
	rc = read_failover(op, 0, (size_t)res->size, sink, arg, got, deadline);
	if (!rc && *got != res->size) {
		io_note(op, "object shorter than its LOOKUP size (%zu of %llu bytes)", *got,
			(unsigned long long)res->size);
		rc = -EIO;
	}
	return rc;
}

/* Without read repair: say which groups hold another version. */
static void note_stale(struct gop *op)
{
	unsigned gi;

	for (gi = 0; gi < op->res->ngroups; gi++)
		if (needs_repair(op, gi) && !op->bad[gi])
			io_note(op, op->res->g[gi].status == -ENOENT ? "group %u has no copy" :
				"group %u holds another version (stale or uncommitted)",
				op->res->g[gi].group);
}

/* Start a get: op for key, the committed version looked up.  0 or -errno. */
static int get_start(struct gop *op, struct pohm_client *c, const void *key, size_t keylen,
		     struct pohm_io_result *res, uint64_t *deadline)
{
	int rc;

	io_op_init(op, c, key, keylen, res);
	op->wait_rest = c->cfg->read_repair;
	*deadline = op->start + c->cfg->read_wait_timeout_ns;
	rc = do_lookup(op, 0, *deadline);
	io_op_release(op);
	if (!rc && res->size > SIZE_MAX - 1)
		rc = -EFBIG;
	return rc;
}

/* The whole object into a new buffer, repaired when configured (and small enough). */
static int get_whole(struct gop *op, uint64_t deadline, uint8_t **data, size_t *len)
{
	struct pohm_client *c = op->c;
	struct pohm_io_result *res = op->res;
	struct buf_sink bs;
	uint8_t *buf;
	size_t got = 0;
	int rc;

	buf = malloc(res->size ? (size_t)res->size : 1);
	if (!buf)
		return -ENOMEM;
	bs.buf = buf;
	bs.base = 0;
	rc = get_body(op, buf_sink, &bs, &got, deadline);
	if (rc) {
		free(buf);
		return rc;
	}
	if (c->cfg->read_repair)
		repair(op, buf, got, op->start + c->cfg->read_wait_timeout_ns +
		       c->cfg->write_wait_timeout_ns);
	else
		note_stale(op);
	*data = buf;
	*len = got;
	return 0;
}

int pohm_io_get(struct pohm_client *c, const void *key, size_t keylen, uint8_t **data,
		size_t *len, struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	uint64_t deadline;
	int rc;

	*data = NULL;
	*len = 0;
	if (!op)
		return -ENOMEM;
	rc = get_start(op, c, key, keylen, res, &deadline);
	if (!rc)
		rc = get_whole(op, deadline, data, len);
	io_op_release(op);
	free(op);
	return rc;
}

int pohm_io_get_stream(struct pohm_client *c, const void *key, size_t keylen,
		       pohm_io_sink_fn sink, void *arg, uint64_t *total,
		       struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	uint64_t deadline;
	uint8_t *data = NULL;
	size_t got = 0;
	int rc;

	*total = 0;
	if (!op)
		return -ENOMEM;
	rc = get_start(op, c, key, keylen, res, &deadline);
	if (rc)
		goto out;
	if (c->cfg->read_repair && res->size <= POHM_IO_PACKET_MAX) {
		/* Repair needs the whole content: read it first, then hand it over. */
		rc = get_whole(op, deadline, &data, &got);
		if (!rc && got)
			rc = sink(arg, data, got, 0);
		if (!rc)
			*total = got;
		goto out;
	}
	op->piece_timeout = c->cfg->read_wait_timeout_ns;
	rc = get_body(op, sink, arg, &got, deadline);
	*total = got;
	if (!rc)
		note_stale(op);
out:
	free(data);
	io_op_release(op);
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- delete */

int pohm_io_del(struct pohm_client *c, const void *key, size_t keylen,
		struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	uint8_t io[POHM_IO_ATTR_SIZE];
	struct pohm_io_attr a;
	uint64_t deadline;
	unsigned gi, ok = 0, absent = 0;
	size_t k;
	int rc;

	if (!op)
		return -ENOMEM;
	io_op_init(op, c, key, keylen, res);
	deadline = op->start + c->cfg->write_wait_timeout_ns;
	rc = pohm_net_refresh(c->net, deadline, 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(c->net, m, sizeof(m));
		io_note(op, "%s", m);
		goto out;
	}
	op->w = io_write_quorum(c, 0);
	memset(&a, 0, sizeof(a));
	memcpy(a.id, op->id, POHM_ID_SIZE);
	memcpy(a.parent, op->id, POHM_ID_SIZE);
	pohm_io_attr_encode(io, &a);
	for (gi = 0; gi < res->ngroups; gi++)
		io_op_add(op, gi, POHM_CMD_DEL, 0, io, sizeof(io), NULL, 0);
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++) {
		struct pohm_group_reply *g = &res->g[op->gi[k]];

		g->status = op->reqs[k].status;
		g->rtt_ns = op->reqs[k].done_ns - op->reqs[k].sent_ns;
		ok += !g->status || g->status == -ENOENT;
		absent += g->status == -ENOENT;
	}
	res->committed = ok;
	if (ok >= op->w) {
		rc = absent == ok && ok == res->ngroups ? -ENOENT : 0;
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].status && res->g[gi].status != -ENOENT)
				io_note_group(op, gi, res->g[gi].status, "not deleted on ");
	} else {
		io_note(op, "delete confirmed by %u of %u groups, %u needed", ok, res->ngroups, op->w);
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].status && res->g[gi].status != -ENOENT)
				io_note_group(op, gi, res->g[gi].status, "");
		rc = -EIO;
	}
out:
	io_op_release(op);
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- many immutable objects */

/* One key of pohm_io_get_many in flight: its request, the groups tried. */
struct many_slot {
	struct pohm_req req;
	uint8_t io[POHM_IO_ATTR_SIZE];
	uint8_t id[POHM_ID_SIZE];
	uint32_t tried;			/* group indexes asked (bit gi) */
	unsigned gi;			/* the group asked last */
	unsigned absent, failed;	/* answers: the key is missing / anything else */
	int busy;			/* req sent and not yet waited for */
	uint64_t deadline;
	uint8_t *own;			/* reused reply memory (max_len), or NULL */
};

/* Ask the next untried group for the whole object; -ENXIO when none is left. */
static int many_send(struct gop *op, struct pohm_batch *w, struct many_slot *s, size_t max_len)
{
	struct pohm_net *net = op->c->net;
	struct pohm_io_attr a;
	unsigned gi;

	for (gi = 0; gi < op->res->ngroups; gi++) {
		struct pohm_req *r = &s->req;
		int32_t backend = 0;
		int node = -1;

		if (s->tried & (1u << gi))
			continue;
		s->tried |= 1u << gi;
		if (pohm_net_owner(net, op->res->g[gi].group, s->id, 0, &node, &backend)) {
			s->failed++;
			continue;
		}
		memset(&a, 0, sizeof(a));
		memcpy(a.id, s->id, POHM_ID_SIZE);
		memcpy(a.parent, s->id, POHM_ID_SIZE);
		pohm_io_attr_encode(s->io, &a);	/* offset 0, size 0: the whole object */
		pohm_req_release(r);
		pohm_req_init(r, node, POHM_CMD_READ, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
		memcpy(r->cmd.id.id, s->id, POHM_ID_SIZE);
		r->cmd.id.group = op->res->g[gi].group;
		r->cmd.backend_id = backend;
		r->p1 = s->io;
		r->n1 = POHM_IO_ATTR_SIZE;
		if (s->own) {
			r->rdest = s->own;
			r->rdest_cap = max_len;
			r->rdest_skip = POHM_IO_ATTR_SIZE;
		}
		s->gi = gi;
		op->res->g[gi].node = node;
		s->deadline = pohm_sys_mono_ns() + op->c->cfg->read_wait_timeout_ns;
		pohm_net_window_send(net, w, &r, 1, s->deadline);
		s->busy = 1;
		return 0;
	}
	return -ENXIO;
}

/* The whole object in s's answer: 0 and its bytes in *data, *len; or -errno. */
static int many_check(const struct many_slot *s, const uint8_t **data, size_t *len)
{
	struct pohm_io_attr a;
	int r = read_reply(&s->req, &a, data, len);

	if (r)
		return r;
	if (a.offset || a.total_size != *len)
		return -EPROTO;		/* not the whole object in one answer */
	return 0;
}

int pohm_io_get_many(struct pohm_client *c, size_t n, const char *const *keys, unsigned inflight,
		     size_t max_len, pohm_io_many_fn fn, void *arg, struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	struct many_slot *slots = NULL;
	struct pohm_req **ptrs = NULL;
	struct pohm_batch *w = NULL;
	size_t next = 0, sent = 0, k;
	const uint8_t *data;
	size_t len;
	int rc = -ENOMEM;

	if (!op)
		return -ENOMEM;
	io_op_init(op, c, n ? keys[0] : "", n ? strlen(keys[0]) : 0, res);
	if (!n) {
		rc = 0;
		goto out;
	}
	if (inflight < 1)
		inflight = 1;
	if (inflight > n)
		inflight = (unsigned)n;
	slots = calloc(inflight, sizeof(*slots));
	ptrs = calloc(inflight, sizeof(*ptrs));
	if (!slots || !ptrs)
		goto out;
	for (k = 0; k < inflight; k++) {
		ptrs[k] = &slots[k].req;
		if (max_len && !(slots[k].own = malloc(max_len)))
			goto out;
	}
	rc = pohm_net_refresh(c->net, op->start + c->cfg->read_wait_timeout_ns, 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(c->net, m, sizeof(m));
		io_note(op, "%s", m);
		goto out;
	}
	w = pohm_net_window_open(c->net);
	if (!w) {
		rc = -ENOMEM;
		goto out;
	}
	while (next < n && !rc) {
		struct many_slot *s;

		/* Keep the window full: key `sent` goes to slot sent % inflight. */
		while (sent < n && sent - next < inflight) {
			s = &slots[sent % inflight];
			s->tried = 0;
			s->absent = s->failed = 0;
			s->busy = 0;
			pohm_key_id(s->id, c->cfg->fsid, strlen(c->cfg->fsid), keys[sent],
				    strlen(keys[sent]));
			many_send(op, w, s, max_len);
			sent++;
		}
		s = &slots[next % inflight];
		for (;;) {
			int st;

			if (!s->busy) {
				/* Every group tried: missing everywhere, or unreadable. */
				io_note(op, "key %s: %s on every group", keys[next],
					s->failed ? "unreadable" : "absent");
				rc = s->failed ? -EIO : -ENOENT;
				break;
			}
			pohm_net_window_wait(c->net, w, &s->req, s->deadline);
			s->busy = 0;
			res->g[s->gi].rtt_ns = s->req.done_ns - s->req.sent_ns;
			st = many_check(s, &data, &len);
			if (!st) {
				st = fn(arg, next, data, len);
				if (st && st != -EBADMSG) {
					rc = st;	/* the caller stops the read */
					break;
				}
			}
			res->g[s->gi].status = st;
			if (!st) {
				res->chosen = (int)s->gi;
				break;
			}
			if (st == -ENOENT) {
				s->absent++;
			} else {
				s->failed++;
				io_note(op, "key %s: group %u: %s", keys[next], res->g[s->gi].group,
					st == -EBADMSG ? "a copy that fails its checksum" : strerror(-st));
			}
			pohm_req_release(&s->req);
			many_send(op, w, s, max_len);	/* the next group, if any */
		}
		pohm_req_release(&s->req);
		next++;
	}
out:
	if (w)
		pohm_net_window_close(c->net, w, ptrs, inflight);
	if (slots)
		for (k = 0; k < inflight; k++) {
			pohm_req_release(&slots[k].req);
			free(slots[k].own);
		}
	free(slots);
	free(ptrs);
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- several CAS objects at once */

struct cas_many {
	struct gop *op;			/* n of them */
	size_t n;
	size_t first;			/* keys before it are decided: skipped */
};

/* Every key's content decided by the answers so far (as iocas.c's reader decides). */
static int cas_many_enough(void *arg, struct pohm_req **reqs, size_t nreq, uint64_t *dl)
{
	struct cas_many *m = arg;
	size_t i, k, rest = 0;

	(void)reqs;
	(void)nreq;
	/*
	 * A decided key stays decided as more answers come (a majority does
	 * not go away; a split is only judged on all answers), so the keys
	 * before m->first are not looked at again: a batch of hundreds of
	 * keys costs O(n) in all, not per answer.  Read repair's count of
	 * copies still pending is the exception: it is counted for them all.
	 */
	for (i = 0; i < m->n; i++) {
		struct gop *op = &m->op[i];

		if (i < m->first) {
			if (op->c->cfg->read_repair)
				for (k = 0; k < op->n; k++)
					rest += !op->reqs[k].done;
			continue;
		}
		struct pohm_cas_vote v[POHM_MAX_GROUPS];
		const uint8_t *d;
		size_t dn, pending = 0;
		unsigned gi;
		int r;

		for (gi = 0; gi < op->res->ngroups; gi++) {
			memset(&v[gi], 0, sizeof(v[gi]));
			v[gi].status = -ENXIO;
		}
		for (k = 0; k < op->n; k++) {
			io_cas_vote_read(op, &op->reqs[k], &v[op->gi[k]], &d, &dn, 0);
			pending += v[op->gi[k]].status == 1;
		}
		r = pohm_cas_pick(v, op->res->ngroups, 0);
		/* A split is judged on all answers. */
		if (r == POHM_CAS_UNDECIDED || (pending && r == POHM_CAS_SPLIT))
			return 0;
		if (r != POHM_CAS_NOQUORUM && op->c->cfg->read_repair)
			rest += pending;
		if (i == m->first && r != POHM_CAS_NOQUORUM)
			m->first = i + 1;
	}
	if (!rest)
		return 1;
	/*
	 * Read repair wants every copy, but, as iocas.c's reader, waits for
	 * the rest only briefly once every key is decided: a silent group
	 * must not cost each validated name the whole read timeout
	 * (RELIABILITY.md finding 11).
	 */
	io_set_read_grace(&m->op[0], dl);
	return 0;
}

/*
 * Key i's outcome from its answers: 0 (out filled), -ENOENT, or 1 when the
 * answers leave anything to settle or repair (then pohm_io_cas_get decides).
 */
static int cas_many_take(struct gop *op, struct pohm_io_cas_val *out)
{
	struct pohm_io_result *res = op->res;
	struct pohm_cas_vote v[POHM_MAX_GROUPS];
	const uint8_t *bytes[POHM_MAX_GROUPS] = { NULL };
	size_t blen[POHM_MAX_GROUPS] = { 0 }, k;
	unsigned gi, same = 0;
	uint8_t sum[POHM_ID_SIZE];
	/*
	 * Every copy's bytes hashed only when copies are repaired (a copy
	 * damaged on the way must be found to be repaired).  Otherwise the
	 * vote is on the nodes' checksums (each node hashed what it holds
	 * and sent) and only the copy taken is hashed, below: a damaged one
	 * goes to the full reader as a damaged copy did.  Session 19: a
	 * listing's inodes were hashed once per group (a fifth of find -ls's
	 * CPU with 2 groups).
	 */
	int verify = op->c->cfg->read_repair || op->c->cfg->noreadcsum;
	int idx;

	for (gi = 0; gi < res->ngroups; gi++) {
		memset(&v[gi], 0, sizeof(v[gi]));
		v[gi].status = -ENXIO;
	}
	for (k = 0; k < op->n; k++) {
		unsigned g = op->gi[k];

		io_cas_vote_read(op, &op->reqs[k], &v[g], &bytes[g], &blen[g], verify);
		res->g[g].rtt_ns = op->reqs[k].done_ns - op->reqs[k].sent_ns;
		res->g[g].status = v[g].status;
		res->g[g].ts = v[g].ts;
		res->g[g].size = blen[g];
		memcpy(res->g[g].csum, v[g].csum, POHM_ID_SIZE);
		res->g[g].has_csum = v[g].status == 0;
	}
	idx = pohm_cas_pick(v, res->ngroups, 1);
	if (idx == POHM_CAS_NOQUORUM) {
		/*
		 * Too few answers in the read's whole time: reading the key
		 * alone would wait that long again for the same silent groups
		 * (RELIABILITY.md finding 11).  pohm_io_cas_get's answer.
		 */
		for (gi = 0; gi < res->ngroups; gi++)
			if (v[gi].status == -ETIMEDOUT)
				break;
		if (gi < res->ngroups) {
			io_note(op, "fewer than a majority of the groups answered");
			for (gi = 0; gi < res->ngroups; gi++)
				if (v[gi].status != 0 && v[gi].status != -ENOENT)
					io_note_group(op, gi, res->g[gi].status, "");
			return -ETIMEDOUT;
		}
	}
	if (idx < 0 && idx != -ENOENT)
		return 1;
	for (gi = 0; gi < res->ngroups; gi++)
		same += idx >= 0 ? v[gi].status == 0 && !memcmp(v[gi].csum, v[idx].csum, POHM_ID_SIZE)
				 : v[gi].status == -ENOENT;
	/* Only a copy that answered can be repaired (cas_repair leaves silent groups alone). */
	for (gi = 0; gi < res->ngroups; gi++)
		same += v[gi].status != 0 && v[gi].status != -ENOENT &&
			v[gi].status != -EBADMSG && v[gi].status != -EILSEQ;
	if (op->c->cfg->read_repair && same != res->ngroups)
		return 1;		/* copies to repair: the full reader does it */
	if (idx == -ENOENT)
		return -ENOENT;
	if (!verify) {
		pohm_sha512(bytes[idx], blen[idx], sum);
		if (memcmp(sum, v[idx].csum, POHM_ID_SIZE))
			return 1;	/* damaged on the way: the full reader */
	}
	res->chosen = idx;
	res->size = blen[idx];
	for (gi = 0; gi < res->ngroups; gi++)
		if (v[gi].status == 0 && !memcmp(v[gi].csum, v[idx].csum, POHM_ID_SIZE) &&
		    pohm_time_cmp(&v[gi].ts, &res->ts) > 0)
			res->ts = v[gi].ts;
	out->data = malloc(blen[idx] ? blen[idx] : 1);
	if (!out->data)
		return -ENOMEM;
	memcpy(out->data, bytes[idx], blen[idx]);
	out->len = blen[idx];
	memcpy(out->csum, v[idx].csum, POHM_ID_SIZE);
	return 0;
}

int pohm_io_cas_get_many(struct pohm_client *c, size_t n, const char *const *keys,
			 struct pohm_io_cas_val *out, struct pohm_io_result *res)
{
	struct cas_many *m;
	struct pohm_req **ptrs = NULL;
	uint8_t (*io)[POHM_IO_ATTR_SIZE] = NULL;
	struct pohm_io_attr a;
	uint64_t deadline;
	size_t i, k, np = 0;
	unsigned gi;
	int rc;

	if (n > POHM_IO_CAS_MANY)
		return -EINVAL;
	/* On the heap: hundreds of keys, and a host thread's stack may be small. */
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/*
	 * Not calloc: ~13 KiB an op (32 groups' requests), and the allocator
	 * zeroes a recycled extent of that size by giving its pages back
	 * (madvise), so every page io_op_init then touches faulted anew: 3
	 * page faults an entry of a revalidated listing (session 19).
	 * io_op_init initialises what is read (io_op_add each request).
	 */
	m->op = malloc((n ? n : 1) * sizeof(*m->op));
	ptrs = calloc(n ? n * POHM_MAX_GROUPS : 1, sizeof(*ptrs));
	io = calloc(n ? n : 1, sizeof(*io));
	if (!m->op || !ptrs || !io) {
		rc = -ENOMEM;
		goto out;
	}
	m->n = n;
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].status = 1;
		io_op_init(&m->op[i], c, keys[i], strlen(keys[i]), &res[i]);
		m->op[i].own_node = 1;
	}
	deadline = (n ? m->op[0].start : pohm_sys_mono_ns()) + c->cfg->read_wait_timeout_ns;
	rc = pohm_net_refresh(c->net, deadline, 0);
	for (i = 0; i < n && !rc; i++) {
		struct gop *op = &m->op[i];

		memset(&a, 0, sizeof(a));
		memcpy(a.id, op->id, POHM_ID_SIZE);
		memcpy(a.parent, op->id, POHM_ID_SIZE);
		a.flags = c->cfg->noreadcsum ? 0 : POHM_IO_CHECKSUM;
		pohm_io_attr_encode(io[i], &a);
		for (gi = 0; gi < res[i].ngroups; gi++)
			io_op_add(op, gi, POHM_CMD_READ, 0, io[i], POHM_IO_ATTR_SIZE, NULL, 0);
		for (k = 0; k < op->n; k++)
			ptrs[np++] = &op->reqs[k];
	}
	/* One round trip for all of them, back as soon as every key is decided. */
	if (!rc)
		pohm_net_run(c->net, ptrs, np, deadline, cas_many_enough, m);
	for (i = 0; i < n; i++) {
		int st = rc ? 1 : cas_many_take(&m->op[i], &out[i]);

		io_op_release(&m->op[i]);
		if (st == 1)		/* anything unusual: the full reader, on its own */
			st = pohm_io_cas_get(c, keys[i], strlen(keys[i]), &out[i].data, &out[i].len,
					     out[i].csum, &res[i]);
		out[i].status = st;
	}
	rc = 0;
out:
	free(io);
	free(ptrs);
	free(m->op);
	free(m);
	return rc;
}
