/*
 * io_op.c — the group operation engine under io.c and iocas.c (io_int.h):
 * the pure helpers (times, the strictly increasing clock, the quorum pick), an
 * operation's context and notes, adding a request per group, running and
 * rerouting them, and the write quorum's "enough" and per-group outcome.
 *
 * A file of its own so that io.c (plain objects) and iocas.c (CAS objects)
 * both call down into it and no longer call each other in a circle
 * (issue 20).  Moved unchanged from io.c.
 */
#include "io_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"
#include "wire.h"

#define GRACE_MIN_NS	20000000ULL	/* after a quorum, wait at least this for the rest */

/* ---------------------------------------------------------------- pure helpers */

struct pohm_time pohm_time_from_ns(uint64_t ns)
{
	struct pohm_time t = { ns / 1000000000ULL, ns % 1000000000ULL };

	return t;
}

uint64_t pohm_time_to_ns(const struct pohm_time *t)
{
	if (t->tsec > UINT64_MAX / 1000000000ULL - 1)
		return UINT64_MAX;
	return t->tsec * 1000000000ULL + (t->tnsec < 1000000000ULL ? t->tnsec : 999999999ULL);
}

uint64_t pohm_clock_next(uint64_t *last, uint64_t now_ns, uint64_t floor_ns)
{
	uint64_t old = __atomic_load_n(last, __ATOMIC_ACQUIRE), v;

	do {
		v = now_ns;
		if (v <= old)
			v = old + 1;
		if (v < floor_ns)
			v = floor_ns;
	} while (!__atomic_compare_exchange_n(last, &old, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	return v;
}

int pohm_quorum_pick(const struct pohm_vote *v, size_t n, unsigned w, int final,
		     struct pohm_time *ts, int *absent, unsigned *held)
{
	size_t answered = 0, need, i;
	const struct pohm_time *best = NULL;
	unsigned h = 0;

	for (i = 0; i < n; i++)
		if (v[i].status == 0 || v[i].status == -ENOENT)
			answered++;
	if (final && !answered)
		return -ENODATA;
	/*
	 * A version acknowledged by w groups is on at least one of any
	 * n - w + 1 groups: once that many have answered, no group still
	 * pending can hold a newer acknowledged version.
	 */
	if (w > n)
		w = (unsigned)n;
	need = n - (w ? w : 1) + 1;
	if (!final && answered < need)
		return 0;
	for (i = 0; i < n; i++)
		if (v[i].status == 0 && (!best || pohm_time_cmp(&v[i].ts, best) > 0))
			best = &v[i].ts;
	if (best) {
		*ts = *best;
		*absent = 0;
		for (i = 0; i < n; i++)
			h += v[i].status == 0 && !pohm_time_cmp(&v[i].ts, best);
	} else {
		memset(ts, 0, sizeof(*ts));
		*absent = 1;
	}
	if (held)
		*held = h;
	return 1;
}


/* ---------------------------------------------------------------- operation context */

void io_op_init(struct gop *op, struct pohm_client *c, const void *key, size_t keylen,
		    struct pohm_io_result *res)
{
	char shown[100];
	size_t i, o = 0;
	unsigned g;

	/* All but the requests (12.5 KiB: io_op_add initialises each one it
	 * adds, nothing reads one past op->n). */
	memset(op, 0, offsetof(struct gop, reqs));
	memset(&op->ptrs, 0, sizeof(*op) - offsetof(struct gop, ptrs));
	memset(res, 0, sizeof(*res));
	op->c = c;
	op->res = res;
	op->start = pohm_sys_mono_ns();
	pohm_key_id(op->id, c->cfg->fsid, strlen(c->cfg->fsid), key, keylen);
	res->ngroups = c->cfg->ngroups;
	res->chosen = -1;
	for (g = 0; g < res->ngroups; g++) {
		res->g[g].group = c->cfg->groups[g];
		res->g[g].node = -1;
		res->g[g].status = -ECANCELED;
	}
	/* Keys are printed escaped and cut, for messages. */
	for (i = 0; i < keylen && o + 5 < sizeof(shown) - 4; i++) {
		unsigned char ch = ((const unsigned char *)key)[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			shown[o++] = (char)ch;
		else
			o += (size_t)snprintf(shown + o, sizeof(shown) - o, "\\x%02x", ch);
	}
	if (i < keylen)
		o += (size_t)snprintf(shown + o, sizeof(shown) - o, "...");
	shown[o] = 0;
	snprintf(res->msg, sizeof(res->msg), "key %s", shown);
	op->res->msg[sizeof(res->msg) - 1] = 0;
}

void io_op_release(struct gop *op)
{
	size_t k;

	for (k = 0; k < op->n; k++)
		pohm_req_release(&op->reqs[k]);
	op->n = 0;
}

/* Append "; text" (or ": text" first) to the result message. */
void io_note(struct gop *op, const char *fmt, ...)
{
	char *m = op->res->msg;
	size_t len = strlen(m);
	va_list ap;

	if (len >= sizeof(op->res->msg) - 8)
		return;
	memcpy(m + len, op->res->notes ? "; " : ": ", 3);
	len += 2;
	op->res->notes++;
	va_start(ap, fmt);
	vsnprintf(m + len, sizeof(op->res->msg) - len, fmt, ap);
	va_end(ap);
}

static const char *status_text(int st)
{
	switch (st) {
	case -EILSEQ:
		return "the node's copy is corrupt (EILSEQ, -84)";
	case -EBADMSG:
		return "checksum mismatch: the bytes received do not match the SHA-512 the node sent";
	case -EBADFD:
		return "compare-and-swap refused (EBADFD, -77)";
	case -ETIMEDOUT:
		return "no answer in time";
	case -EOPNOTSUPP:
		return "the node does not serve this key (-95), even after a route refresh";
	case -ENXIO:
		return "no node serves this group";
	case -ENOENT:
		return "no such key";
	case -ECANCELED:
		return "not waited for";
	case -ESTALE:
		return "the copy changed while being read";
	default:
		return strerror(-st);
	}
}

/* Note a group's failure: "group 2 (node 127.0.0.1:1026): why[: node's last error]". */
void io_note_group(struct gop *op, unsigned gi, int st, const char *what)
{
	struct pohm_group_reply *g = &op->res->g[gi];
	struct pohm_node_info ni;
	char extra[200] = "";

	if (g->node >= 0 && !pohm_net_node_info(op->c->net, g->node, &ni)) {
		if ((st == -ECONNREFUSED || st == -ECONNRESET || st == -ENOTCONN || st == -EPROTO ||
		     st == -EHOSTUNREACH || st == -EPERM || st == -ETIMEDOUT || st == -EPIPE) &&
		    ni.last_msg[0] && !ni.up)
			snprintf(extra, sizeof(extra), " (%s)", ni.last_msg);
		io_note(op, "%sgroup %u node %s: %s%s", what, g->group, ni.name, status_text(st), extra);
	} else if (st == -ENXIO) {
		/* The group's nodes are unknown: name the nodes we could not reach. */
		int i, n = pohm_net_nodes(op->c->net), shown = 0;
		size_t off = 0;

		for (i = 0; i < n && shown < 3; i++)
			if (!pohm_net_node_info(op->c->net, i, &ni) && !ni.up && ni.last_msg[0]) {
				off += (size_t)snprintf(extra + off, sizeof(extra) - off, "%s%s %s",
							shown++ ? ", " : "; unreachable: ", ni.name,
							ni.last_msg);
				if (off >= sizeof(extra))
					break;
			}
		io_note(op, "%sgroup %u: %s%s", what, g->group, status_text(st), extra);
	} else {
		io_note(op, "%sgroup %u: %s", what, g->group, status_text(st));
	}
}

/* ---------------------------------------------------------------- routing and running */

/* Add a request for group index gi; a group without route gets -ENXIO and no request. */
struct pohm_req *io_op_add(struct gop *op, unsigned gi, int32_t cmd, uint64_t flags,
			       const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct pohm_group_reply *g = &op->res->g[gi];
	struct pohm_req *r;
	int32_t backend = 0;
	int node = -1;

	if (pohm_net_owner(op->c->net, g->group, op->id, op->own_node, &node, &backend)) {
		g->status = -ENXIO;
		g->node = -1;
		return NULL;
	}
	g->node = node;
	r = &op->reqs[op->n];
	pohm_req_init(r, node, cmd, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT | flags);
	memcpy(r->cmd.id.id, op->id, POHM_ID_SIZE);
	r->cmd.id.group = g->group;
	r->cmd.backend_id = backend;
	r->p1 = p1;
	r->n1 = n1;
	r->p2 = p2;
	r->n2 = n2;
	op->ptrs[op->n] = r;
	op->gi[op->n] = gi;
	op->n++;
	return r;
}

/* Run the requests; those answered -95 are re-routed after a forced refresh and sent once more. */
void io_op_run(struct gop *op, uint64_t deadline, pohm_enough_fn enough)
{
	pohm_net_run(op->c->net, op->ptrs, op->n, deadline, enough, op);
	io_op_reroute(op, deadline, enough);
}

void io_op_reroute(struct gop *op, uint64_t deadline, pohm_enough_fn enough)
{
	struct pohm_req *again[POHM_MAX_GROUPS];
	size_t k, m = 0;

	for (k = 0; k < op->n; k++)
		if (op->reqs[k].status == -EOPNOTSUPP)
			again[m++] = &op->reqs[k];
	if (!m || pohm_sys_mono_ns() >= deadline)
		return;
	pohm_net_refresh(op->c->net, deadline, 1);
	for (k = 0; k < m; k++) {
		struct pohm_req *r = again[k];
		int32_t backend;
		int node;

		if (pohm_net_owner(op->c->net, r->cmd.id.group, op->id, op->own_node, &node, &backend))
			continue;
		pohm_req_release(r);
		r->node = node;
		r->cmd.backend_id = backend;
		op->res->g[op->gi[r - op->reqs]].node = node;
	}
	pohm_net_run(op->c->net, again, m, deadline, enough, op);
}

uint64_t io_grace_end(const struct gop *op, uint64_t quorum_t)
{
	uint64_t grace = quorum_t - op->start;

	return quorum_t + (grace < GRACE_MIN_NS ? GRACE_MIN_NS : grace);
}

void io_set_grace(struct gop *op, uint64_t *dl)
{
	uint64_t t = pohm_sys_mono_ns(), end;

	if (op->quorum_at)
		return;
	op->quorum_at = t;
	end = io_grace_end(op, t);
	if (end < *dl)
		*dl = end;
}


void io_set_read_grace(struct gop *op, uint64_t *dl)
{
	/* read_repair 2 (fsck's repair): every group's answer counts, up to
	 * the read's own deadline. */
	if (op->c->cfg->read_repair > 1)
		return;
	io_set_grace(op, dl);
}

/* ---------------------------------------------------------------- write: quorum and outcome */

int io_write_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl)
{
	struct gop *op = arg;
	size_t k, ok = op->pre_ok, pending = 0;

	(void)reqs;
	(void)n;
	for (k = 0; k < op->n; k++) {
		if (!op->reqs[k].done)
			pending++;
		else if (!op->reqs[k].status)
			ok++;
	}
	if (ok >= op->w) {
		io_set_grace(op, dl);
		return !pending;
	}
	/* Short of a quorum: keep waiting; a -95 answer is retried after the run. */
	return 0;
}

int io_many_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl)
{
	struct io_many *m = arg;
	uint64_t last = 0;
	int all = 1, quorum = 1;
	size_t i;

	(void)reqs;
	(void)n;
	for (i = 0; i < m->n; i++) {
		if (!m->op[i])
			continue;
		if (!io_write_enough(m->op[i], NULL, 0, &m->dl[i]))
			all = 0;
		if (!m->op[i]->quorum_at)
			quorum = 0;
		else if (m->dl[i] > last)
			last = m->dl[i];
	}
	if (quorum && last && last < *dl)
		*dl = last;	/* every key has its quorum: the longest grace */
	return all;
}

/* Collect per-group outcomes of the last step; return groups that succeeded. */
unsigned io_write_collect(struct gop *op)
{
	unsigned ok = 0;
	size_t k;

	for (k = 0; k < op->n; k++) {
		struct pohm_req *r = &op->reqs[k];
		struct pohm_group_reply *g = &op->res->g[op->gi[k]];
		const struct pohm_pkt *p = pohm_req_final(r);
		struct pohm_file_info fi;

		g->status = r->status;
		g->rtt_ns = r->done_ns - r->sent_ns;
		if (r->status)
			continue;
		ok++;
		if (p && p->cmd.size && !pohm_lookup_reply_decode(NULL, &fi, p->data, (size_t)p->cmd.size)) {
			g->ts = fi.mtime;
			g->size = fi.size;
			g->record_flags = fi.record_flags;
		}
	}
	return ok;
}
