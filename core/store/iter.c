/*
 * iter.c — list every key of every backend of every group (ITERATOR) and
 * read each object's copies group by group (iter.h).
 *
 * Sections: wire helpers · listing one group · reading copies · all groups.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_int.h"	/* the client's configuration (see pohm_client_cfg below) */
#include "iter.h"
#include "net.h"
#include "wire.h"
#include "sys.h"

#define ITER_ACTION_START	1u
#define ITER_TYPE_NETWORK	2u
#define ITER_FLAG_KEY_RANGE	2u

#define READ_BATCH_OBJS		64
#define READ_BATCH_BYTES	(64u << 20)

/*
 * io.h has no accessor for the configuration a client was opened with;
 * until it has one, read it here (the only use of io's internals).
 */
static const struct pohm_config *pohm_client_cfg(struct pohm_client *c)
{
	return c->cfg;
}

int pohm_iter_key_is(struct pohm_client *c, const uint8_t id[POHM_ID_SIZE], const char *key)
{
	const struct pohm_config *cfg = pohm_client_cfg(c);
	uint8_t want[POHM_ID_SIZE];

	pohm_key_id(want, cfg->fsid, strlen(cfg->fsid), key, strlen(key));
	return !memcmp(want, id, POHM_ID_SIZE);
}

/* ---------------------------------------------------------------- wire helpers */

void pohm_iter_request_encode(uint8_t out[POHM_ITER_REQ_SIZE + POHM_ITER_RANGE_SIZE],
			      const uint8_t begin[POHM_ID_SIZE], const uint8_t end[POHM_ID_SIZE])
{
	memset(out, 0, POHM_ITER_REQ_SIZE + POHM_ITER_RANGE_SIZE);
	/* id 0: the server picks one; time range unused (no TS_RANGE flag). */
	pohm_st32(out + 8, ITER_ACTION_START);
	pohm_st64(out + 12, 1);				/* range_num */
	pohm_st32(out + 52, ITER_TYPE_NETWORK);
	pohm_st64(out + 56, ITER_FLAG_KEY_RANGE);	/* no DATA: keys and metadata */
	memcpy(out + POHM_ITER_REQ_SIZE, begin, POHM_ID_SIZE);
	memcpy(out + POHM_ITER_REQ_SIZE + POHM_ID_SIZE, end, POHM_ID_SIZE);
}

int pohm_iter_response_decode(struct pohm_iter_key *k, const uint8_t *p, size_t n)
{
	/* Exactly one dnet_iterator_response: we asked for no data, so anything
	 * longer is another format (e.g. a msgpack-encoded iterator). */
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);

	if (n != POHM_ITER_RESP_SIZE)
		return -EPROTO;
	pohm_rd_take(&r, 8);			/* the iterator's id */
	pohm_rd_copy(&r, k->id, POHM_ID_SIZE);
	k->status = (int32_t)pohm_rd_u32(&r);
	k->ts.tsec = pohm_rd_u64(&r);
	k->ts.tnsec = pohm_rd_u64(&r);
	k->user_flags = pohm_rd_u64(&r);
	k->size = pohm_rd_u64(&r);
	pohm_rd_take(&r, 16);			/* iterated and total key counts */
	k->record_flags = pohm_rd_u64(&r);
	pohm_rd_take(&r, 8);			/* reserved */
	if (r.err || r.left || k->ts.tnsec >= 1000000000ULL)
		return -EPROTO;
	return 0;
}

void pohm_iter_slice(unsigned i, unsigned n, uint8_t begin[POHM_ID_SIZE], uint8_t end[POHM_ID_SIZE])
{
	unsigned step = n && n <= 256 ? 256 / n : 256;

	memset(begin, 0, POHM_ID_SIZE);
	memset(end, 0xff, POHM_ID_SIZE);
	begin[0] = (uint8_t)(i * step);
	end[0] = (uint8_t)(i * step + step - 1);
}

/* ---------------------------------------------------------------- listing one group */

struct backend {
	int node;
	int32_t backend;
	uint8_t id[POHM_ID_SIZE];	/* one of its ring ids: routes the request */
};

/* Distinct (node, backend) pairs of group from a route table copy. */
static size_t backends_of(const struct pohm_route *rt, uint32_t group, struct backend **out)
{
	struct backend *b = NULL;
	size_t n = 0, i, j;

	for (i = 0; i < rt->n; i++) {
		const struct pohm_route_entry *e = &rt->e[i];

		if (e->group != group)
			continue;
		for (j = 0; j < n; j++)
			if (b[j].node == e->node && b[j].backend == e->backend)
				break;
		if (j < n)
			continue;
		if (!(n & (n - 1)) || !n) {
			struct backend *nb = realloc(b, (n ? n * 2 : 4) * sizeof(*b));

			if (!nb) {
				free(b);
				*out = NULL;
				return 0;
			}
			b = nb;
		}
		b[n].node = e->node;
		b[n].backend = e->backend;
		memcpy(b[n].id, e->id, POHM_ID_SIZE);
		n++;
	}
	*out = b;
	return n;
}

static void note(struct pohm_iter_group_stat *st, struct pohm_client *c, int node, int32_t be,
		 int err, const char *what)
{
	char name[80];

	if (st->error)
		return;
	st->error = err;
	pohm_net_node_name(pohm_client_net(c), node, name, sizeof(name));
	snprintf(st->msg, sizeof(st->msg), "group %u node %s backend %d: %s: %s", st->group, name,
		 (int)be, what, strerror(-err));
}

/*
 * Hand the keys of one finished ITERATOR request to fn.  0, or the
 * request's -errno (nothing more of it is used); *stop gets fn's non-zero.
 */
static int take_keys(struct pohm_req *r, uint32_t group, int32_t be,
		     int (*fn)(void *arg, const struct pohm_iter_key *k), void *arg,
		     uint64_t *count, int *stop)
{
	const struct pohm_pkt *p;
	int rc;

	if (r->status)
		return r->status;
	for (p = r->replies; p; p = p->next) {
		struct pohm_iter_key k;

		if (p->cmd.cmd != POHM_CMD_ITERATOR || p->cmd.status)
			return p->cmd.status ? pohm_status_errno(p->cmd.status) : -EPROTO;
		if (!p->cmd.size)
			continue;	/* the final ack */
		memset(&k, 0, sizeof(k));
		rc = pohm_iter_response_decode(&k, p->data, p->cmd.size);
		if (rc)
			return rc;
		k.group = group;
		k.node = r->node;
		k.backend = be;
		if (k.status > 0)
			continue;	/* not a key: a progress report */
		k.status = k.status ? pohm_status_errno(k.status) : 0;
		(*count)++;
		rc = fn(arg, &k);
		if (rc) {
			*stop = rc;
			return 0;
		}
	}
	return 0;
}

int pohm_iter_group(struct pohm_client *c, uint32_t group,
		    int (*fn)(void *arg, const struct pohm_iter_key *k), void *arg,
		    struct pohm_iter_group_stat *st)
{
	const struct pohm_config *cfg = pohm_client_cfg(c);
	struct pohm_net *net = pohm_client_net(c);
	struct pohm_route rt = POHM_ROUTE_INIT;
	struct backend *b = NULL;
	struct pohm_req *reqs = NULL, **ptrs = NULL;
	uint8_t (*bufs)[POHM_ITER_REQ_SIZE + POHM_ITER_RANGE_SIZE] = NULL;
	uint64_t tmo = cfg->read_wait_timeout_ns * POHM_ITER_TIMEOUT_MUL;
	size_t nb = 0, i;
	unsigned s;
	int rc, stop = 0;

	memset(st, 0, sizeof(*st));
	st->group = group;
	rc = pohm_net_refresh(net, pohm_sys_mono_ns() + cfg->read_wait_timeout_ns, 0);
	if (rc) {
		snprintf(st->msg, sizeof(st->msg), "group %u: no node answers: %s", group,
			 strerror(-rc));
		return st->error = rc;
	}
	rc = pohm_net_route_copy(net, &rt);
	if (rc)
		return st->error = rc;
	nb = backends_of(&rt, group, &b);
	pohm_route_free(&rt);
	if (!nb) {
		snprintf(st->msg, sizeof(st->msg), "group %u: no backend in the route table", group);
		free(b);
		return st->error = -ENXIO;
	}
	reqs = calloc(nb, sizeof(*reqs));
	ptrs = calloc(nb, sizeof(*ptrs));
	bufs = calloc(nb, sizeof(*bufs));
	if (!reqs || !ptrs || !bufs) {
		rc = -ENOMEM;
		goto out;
	}
	st->backends = (unsigned)nb;
	/* Slice by slice, every backend of the group at once. */
	for (s = 0; s < POHM_ITER_SLICES && !stop; s++) {
		uint8_t lo[POHM_ID_SIZE], hi[POHM_ID_SIZE];
		size_t n = 0;

		pohm_iter_slice(s, POHM_ITER_SLICES, lo, hi);
		for (i = 0; i < nb; i++) {
			if (b[i].node < 0)
				continue;	/* failed earlier: not asked again */
			pohm_iter_request_encode(bufs[i], lo, hi);
			pohm_req_init(&reqs[i], b[i].node, POHM_CMD_ITERATOR,
				      POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT |
				      POHM_FLAG_DIRECT_BACKEND);
			memcpy(reqs[i].cmd.id.id, b[i].id, POHM_ID_SIZE);
			reqs[i].cmd.id.group = group;
			reqs[i].cmd.backend_id = b[i].backend;
			reqs[i].p1 = bufs[i];
			reqs[i].n1 = sizeof(bufs[i]);
			ptrs[n++] = &reqs[i];
		}
		if (!n)
			break;
		pohm_net_run(net, ptrs, n, pohm_sys_mono_ns() + tmo, NULL, NULL);
		for (i = 0; i < nb; i++) {
			int r2;

			if (b[i].node < 0)
				continue;
			r2 = stop ? 0 : take_keys(&reqs[i], group, b[i].backend, fn, arg, &st->keys,
						  &stop);
			if (r2) {
				note(st, c, b[i].node, b[i].backend, r2, "iteration failed");
				st->failed++;
				b[i].node = -1;
			}
			pohm_req_release(&reqs[i]);
		}
	}
	rc = stop ? stop : st->error;
out:
	free(reqs);
	free(ptrs);
	free(bufs);
	free(b);
	return rc;
}

/* ---------------------------------------------------------------- reading copies */

struct listed {
	uint8_t id[POHM_ID_SIZE];
	uint64_t size;
	unsigned gi;			/* configured group index */
};

struct lister {
	struct listed *v;
	size_t n, cap;
	unsigned gi;
};

static int collect(void *arg, const struct pohm_iter_key *k)
{
	struct lister *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct listed *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	memcpy(l->v[l->n].id, k->id, POHM_ID_SIZE);
	l->v[l->n].size = k->size;
	l->v[l->n].gi = l->gi;
	l->n++;
	return 0;
}

static int cmp_listed(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;
	int d = memcmp(x->id, y->id, POHM_ID_SIZE);

	return d ? d : (x->gi > y->gi) - (x->gi < y->gi);
}

/* One batch of objects and their READ requests (object k, group g → k * ng + g). */
struct batch {
	struct pohm_iter_obj obj[READ_BATCH_OBJS];
	uint64_t want[READ_BATCH_OBJS];	/* bytes to ask for (0 = whole) */
	struct pohm_req req[READ_BATCH_OBJS * POHM_MAX_GROUPS];
	struct pohm_req *ptr[READ_BATCH_OBJS * POHM_MAX_GROUPS];
	uint8_t io[READ_BATCH_OBJS][POHM_IO_ATTR_SIZE];
	int sent[READ_BATCH_OBJS * POHM_MAX_GROUPS];
	size_t n;
	uint64_t bytes;
};

/* Route and prepare request k*ng+g; 0 or -ENXIO (no node for the group). */
static int read_prepare(struct pohm_client *c, struct batch *bt, size_t k, unsigned g)
{
	const struct pohm_config *cfg = pohm_client_cfg(c);
	size_t ri = k * cfg->ngroups + g;
	struct pohm_req *r = &bt->req[ri];
	int32_t backend = 0;
	int node = -1;

	if (pohm_net_owner(pohm_client_net(c), cfg->groups[g], bt->obj[k].id, 0, &node, &backend))
		return -ENXIO;
	pohm_req_init(r, node, POHM_CMD_READ, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
	memcpy(r->cmd.id.id, bt->obj[k].id, POHM_ID_SIZE);
	r->cmd.id.group = cfg->groups[g];
	r->cmd.backend_id = backend;
	r->p1 = bt->io[k];
	r->n1 = POHM_IO_ATTR_SIZE;
	return 0;
}

/* The copy of a finished READ: status, bytes, checksum check. */
static void read_take(struct pohm_iter_copy *cp, const struct pohm_req *r)
{
	const struct pohm_pkt *f = pohm_req_final(r);
	struct pohm_io_attr io;
	const uint8_t *data;
	size_t dlen;

	cp->status = r->status;
	if (cp->status == -EOPNOTSUPP || cp->status == -ENOENT || cp->status == -EILSEQ)
		return;
	if (cp->status)
		return;
	if (!f || f->cmd.cmd != POHM_CMD_READ ||
	    pohm_io_payload_decode(&io, &data, &dlen, f->data, f->cmd.size, 1) ||
	    memcmp(io.id, r->cmd.id.id, POHM_ID_SIZE)) {
		cp->status = -EPROTO;
		return;
	}
	pohm_sha512(data, dlen, cp->csum);
	if (memcmp(cp->csum, io.parent, POHM_ID_SIZE)) {
		cp->status = -EILSEQ;	/* the bytes are not what the node summed */
		return;
	}
	cp->data = data;
	cp->len = dlen;
	cp->ts = io.timestamp;
	cp->total_size = io.total_size > dlen ? io.total_size : dlen;
	cp->partial = cp->total_size > dlen;
}

/* Read every copy of the batch's objects, then hand them to fn in order. */
static int batch_run(struct pohm_client *c, struct batch *bt,
		     int (*fn)(void *arg, const struct pohm_iter_obj *o), void *arg,
		     struct pohm_iter_stats *st)
{
	const struct pohm_config *cfg = pohm_client_cfg(c);
	struct pohm_net *net = pohm_client_net(c);
	uint64_t deadline = pohm_sys_mono_ns() + cfg->read_wait_timeout_ns;
	size_t k, n = 0, again = 0, i;
	unsigned g;
	int rc = 0;

	for (k = 0; k < bt->n; k++) {
		struct pohm_io_attr a;

		memset(&a, 0, sizeof(a));
		memcpy(a.id, bt->obj[k].id, POHM_ID_SIZE);
		memcpy(a.parent, bt->obj[k].id, POHM_ID_SIZE);
		a.flags = POHM_IO_CHECKSUM;
		a.size = bt->want[k];
		pohm_io_attr_encode(bt->io[k], &a);
		for (g = 0; g < cfg->ngroups; g++) {
			size_t ri = k * cfg->ngroups + g;

			bt->sent[ri] = !read_prepare(c, bt, k, g);
			if (bt->sent[ri])
				bt->ptr[n++] = &bt->req[ri];
			else
				bt->obj[k].copy[g].status = -ENXIO;
		}
	}
	pohm_net_run(net, bt->ptr, n, deadline, NULL, NULL);
	/* -95: the route moved; refresh once and ask the new owners. */
	for (i = 0; i < n; i++)
		if (bt->ptr[i]->status == -EOPNOTSUPP)
			again++;
	if (again && pohm_sys_mono_ns() < deadline) {
		size_t m = 0;

		pohm_net_refresh(net, deadline, 1);
		for (k = 0; k < bt->n; k++)
			for (g = 0; g < cfg->ngroups; g++) {
				size_t ri = k * cfg->ngroups + g;

				if (!bt->sent[ri] || bt->req[ri].status != -EOPNOTSUPP)
					continue;
				pohm_req_release(&bt->req[ri]);
				if (!read_prepare(c, bt, k, g))
					bt->ptr[m++] = &bt->req[ri];
				else
					bt->sent[ri] = 0;
			}
		pohm_net_run(net, bt->ptr, m, deadline, NULL, NULL);
	}
	for (k = 0; k < bt->n; k++) {
		for (g = 0; g < cfg->ngroups; g++) {
			size_t ri = k * cfg->ngroups + g;

			if (!bt->sent[ri])
				continue;
			read_take(&bt->obj[k].copy[g], &bt->req[ri]);
			if (st) {
				st->reads++;
				if (bt->obj[k].copy[g].status && bt->obj[k].copy[g].status != -ENOENT)
					st->read_errors++;
			}
		}
		if (!rc)
			rc = fn(arg, &bt->obj[k]);
	}
	for (k = 0; k < bt->n; k++)
		for (g = 0; g < cfg->ngroups; g++)
			if (bt->sent[k * cfg->ngroups + g])
				pohm_req_release(&bt->req[k * cfg->ngroups + g]);
	bt->n = 0;
	bt->bytes = 0;
	return rc;
}

/* ---------------------------------------------------------------- all groups */

int pohm_iter_all(struct pohm_client *c, int (*fn)(void *arg, const struct pohm_iter_obj *o),
		  void *arg, struct pohm_iter_stats *st)
{
	const struct pohm_config *cfg = pohm_client_cfg(c);
	struct pohm_iter_stats local;
	struct lister l = { NULL, 0, 0, 0 };
	struct batch *bt = NULL;
	unsigned g, listed_ok = 0;
	size_t i, j;
	int rc = 0;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	st->ngroups = cfg->ngroups;
	for (g = 0; g < cfg->ngroups; g++) {
		l.gi = g;
		rc = pohm_iter_group(c, cfg->groups[g], collect, &l, &st->g[g]);
		if (rc == -ENOMEM)
			goto out;
		if (st->g[g].failed < st->g[g].backends)
			listed_ok++;
	}
	if (!listed_ok) {
		rc = st->g[0].error ? st->g[0].error : -EIO;
		goto out;
	}
	qsort(l.v, l.n, sizeof(*l.v), cmp_listed);
	bt = calloc(1, sizeof(*bt));
	if (!bt) {
		rc = -ENOMEM;
		goto out;
	}
	rc = 0;
	for (i = 0; i < l.n && !rc; i = j) {
		struct pohm_iter_obj *o = &bt->obj[bt->n];
		uint64_t size = 0;

		memset(o, 0, sizeof(*o));
		memcpy(o->id, l.v[i].id, POHM_ID_SIZE);
		o->ncopies = cfg->ngroups;
		for (g = 0; g < cfg->ngroups; g++)
			o->copy[g].group = cfg->groups[g];
		for (j = i; j < l.n && !memcmp(l.v[j].id, l.v[i].id, POHM_ID_SIZE); j++) {
			o->copy[l.v[j].gi].listed = 1;
			if (l.v[j].size > size)
				size = l.v[j].size;
		}
		bt->want[bt->n] = size > POHM_ITER_READ_MAX ? POHM_ITER_PEEK : 0;
		bt->bytes += (size > POHM_ITER_READ_MAX ? POHM_ITER_PEEK : size) * cfg->ngroups;
		bt->n++;
		st->objects++;
		if (bt->n == READ_BATCH_OBJS || bt->bytes >= READ_BATCH_BYTES)
			rc = batch_run(c, bt, fn, arg, st);
	}
	if (!rc && bt->n)
		rc = batch_run(c, bt, fn, arg, st);
out:
	free(bt);
	free(l.v);
	return rc;
}

int pohm_iter_del(struct pohm_client *c, const uint8_t id[POHM_ID_SIZE])
{
	const struct pohm_config *cfg = pohm_client_cfg(c);
	struct pohm_net *net = pohm_client_net(c);
	struct pohm_req req[POHM_MAX_GROUPS], *ptr[POHM_MAX_GROUPS];
	uint8_t io[POHM_IO_ATTR_SIZE];
	struct pohm_io_attr a;
	size_t n = 0, k;
	unsigned g;
	int rc = 0;

	memset(&a, 0, sizeof(a));
	memcpy(a.id, id, POHM_ID_SIZE);
	memcpy(a.parent, id, POHM_ID_SIZE);
	pohm_io_attr_encode(io, &a);
	for (g = 0; g < cfg->ngroups; g++) {
		int32_t backend = 0;
		int node = -1;

		if (pohm_net_owner(net, cfg->groups[g], id, 0, &node, &backend)) {
			rc = -ENXIO;
			continue;
		}
		pohm_req_init(&req[n], node, POHM_CMD_DEL, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
		memcpy(req[n].cmd.id.id, id, POHM_ID_SIZE);
		req[n].cmd.id.group = cfg->groups[g];
		req[n].cmd.backend_id = backend;
		req[n].p1 = io;
		req[n].n1 = sizeof(io);
		ptr[n] = &req[n];
		n++;
	}
	pohm_net_run(net, ptr, n, pohm_sys_mono_ns() + cfg->write_wait_timeout_ns, NULL, NULL);
	for (k = 0; k < n; k++) {
		if (req[k].status && req[k].status != -ENOENT && !rc)
			rc = req[k].status;
		pohm_req_release(&req[k]);
	}
	return rc;
}
