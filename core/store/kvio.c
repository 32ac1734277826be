/*
 * kvio.c — the namespace's key-value store (kv.h) on the replicated client
 * (io.h): every key in the fsid namespace on every configured group.
 *
 *   get   pohm_io_cas_get: the content a majority of the groups holds
 *         (objects that core/ns reads with get are the ones it CASes);
 *   put   with a condition, pohm_io_cas_put: a data CAS on every group that
 *         counts only where it applied and is rolled back where it applied
 *         if that is fewer than a majority (io.h "compare-and-swap objects");
 *         "absent" is a CAS against the absent marker, which passes where
 *         the key is missing or was rolled back to the marker.  Without a
 *         condition (immutable data chunks) a plain pohm_io_write.
 *   read  pohm_io_read (data chunks: immutable, the timestamp rule holds).
 *   del   pohm_io_del (core/ns deletes only objects nobody CASes).
 *   get_n pohm_io_cas_get_many (a name's bucket and its inode together).
 *   put_n pohm_io_cas_put_n (independent CASes of one operation, one wait).
 *   put_many  pohm_io_cas_put_n, POHM_KV_PUT_MANY keys a wait, the bases
 *         the caller's (an exit's pushes).
 *   write_n   pohm_io_write_n (a push's new chunk generations, one wait).
 *   put_deferred  pohm_io_cas_put_deferred (sent, not waited for); its
 *         outcome is processed (pohm_io_cas_settle_deferred) by settle and
 *         at the start of every other call of this store (gate).
 *   get_many  pohm_io_get_many (data chunks: immutable, verified by the
 *         caller against the chunk map's checksums).
 *   scan  pohm_iter_all (every backend of every group, each id's copies
 *         read): an object is found by its self-describing header, whose
 *         key must hash to the id it is stored under; its value is the
 *         content a majority of the groups holds (pohm_cas_pick), or, while
 *         the groups disagree, what kvio_get settles.  Absent markers and
 *         objects without our header (http_compat copies, other data) are
 *         skipped.
 *
 * A put goes to every group at once first (io.h); a key this thread lost a
 * put on to a racing writer in the last 2 s goes the arbiter way at once
 * (contended).
 *
 * A rollback needs the content our CAS replaced.  core/ns always reads (or
 * has just written) what it CASes against, so this thread's last few values
 * are kept, by key and checksum, and handed to pohm_io_cas_put with it.
 *
 * Results: -EAGAIN / -EEXIST mean "lost, and nothing of ours is left that
 * could ever become committed"; an outcome io could not settle (groups that
 * did not answer) is -EIO, never -EAGAIN.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_int.h"
#include "iter.h"
#include "kv.h"
#include "nsobj.h"
#include "sys.h"
#include "wire.h"

/*
 * This thread's recent values (gets and committed puts), for rollbacks.
 * Thread-local, so no lock; bounded to small objects (inodes, buckets).
 */
#define RECENT_N	8
#define RECENT_MAX	(256u << 10)
static __thread struct recent {
	char key[POHM_KEY_MAX];
	uint8_t csum[POHM_KV_CSUM];
	uint8_t *data;
	size_t len, cap;
	uint64_t ts_ns;			/* stamp of the version (newest holder) */
	uint32_t behind;		/* groups that were behind it (pohm_cas_old.behind) */
	uint64_t used;			/* LRU tick, 0 = empty */
	const void *client;		/* the store it was read from or written to */
	uint64_t mono_ns;		/* when (kvio_peek's age) */
} recent[RECENT_N];
static __thread uint64_t recent_tick;

/*
 * Keys this thread lost a CAS on lately to a racing writer (its parallel
 * attempt split the groups, or it lost the arbiter way): their next put
 * goes the arbiter way at once (pohm_cas_old.arbiter), since a parallel
 * attempt would likely split with the racer again and cost a rollback.
 * A CAS refused everywhere (a stale base: nobody was writing with us) does
 * not count.  Thread-local; a few slots, overwritten oldest first.
 */
#define LOST_N		4
#define LOST_NS		2000000000ULL	/* how long a loss makes a key "contended" */
static __thread struct lost {
	char key[POHM_KEY_MAX];
	const void *client;
	uint64_t mono_ns;		/* 0 = empty */
} lost[LOST_N];

static void lost_note(const void *client, const char *key)
{
	struct lost *l = &lost[0];
	size_t i;

	if (strlen(key) >= sizeof(l->key))
		return;
	for (i = 0; i < LOST_N; i++) {
		if (lost[i].mono_ns && lost[i].client == client && !strcmp(lost[i].key, key)) {
			l = &lost[i];
			break;
		}
		if (lost[i].mono_ns < l->mono_ns)
			l = &lost[i];
	}
	strcpy(l->key, key);
	l->client = client;
	l->mono_ns = pohm_sys_mono_ns();
}

static int lost_lately(const void *client, const char *key)
{
	uint64_t now = pohm_sys_mono_ns();
	size_t i;

	for (i = 0; i < LOST_N; i++)
		if (lost[i].mono_ns && lost[i].client == client && now - lost[i].mono_ns < LOST_NS &&
		    !strcmp(lost[i].key, key))
			return 1;
	return 0;
}

static void remember(const void *client, const char *key, const void *data, size_t len,
		     const uint8_t *csum, const struct pohm_io_result *res)
{
	struct recent *r = NULL;
	size_t i;

	if (len > RECENT_MAX || strlen(key) >= sizeof(r->key))
		return;
	/* The slot of this key, else the least recently used. */
	for (i = 0; i < RECENT_N; i++)
		if (recent[i].used && !strcmp(recent[i].key, key)) {
			r = &recent[i];
			break;
		}
	if (!r) {
		r = &recent[0];
		for (i = 1; i < RECENT_N; i++)
			if (recent[i].used < r->used)
				r = &recent[i];
	}
	if (len > r->cap) {
		uint8_t *p = realloc(r->data, len);

		if (!p) {
			r->used = 0;
			return;
		}
		r->data = p;
		r->cap = len;
	}
	memcpy(r->data, data, len);
	r->len = len;
	memcpy(r->csum, csum, POHM_KV_CSUM);
	strcpy(r->key, key);
	r->client = client;
	r->mono_ns = pohm_sys_mono_ns();
	r->ts_ns = pohm_time_to_ns(&res->ts);
	/* Behind: groups whose copy was missing or older than these bytes. */
	r->behind = 0;
	for (i = 0; i < res->ngroups; i++) {
		const struct pohm_group_reply *g = &res->g[i];

		if (g->applied > 0 || (g->has_csum && !memcmp(g->csum, csum, POHM_KV_CSUM)))
			continue;
		if (g->status == -ENOENT || (!g->status && pohm_time_cmp(&g->ts, &res->ts) < 0))
			r->behind |= 1u << i;
	}
	r->used = ++recent_tick;
}

static const struct recent *recall(const char *key, const uint8_t *csum)
{
	size_t i;

	for (i = 0; i < RECENT_N; i++)
		if (recent[i].used && !strcmp(recent[i].key, key) &&
		    !memcmp(recent[i].csum, csum, POHM_KV_CSUM))
			return &recent[i];
	return NULL;
}

/* Drop what this thread kept of key at csum (a CAS against it was refused:
 * another version is stored), so that peek no longer offers it as a base. */
static void forget(const char *key, const uint8_t *csum)
{
	size_t i;

	for (i = 0; i < RECENT_N; i++)
		if (recent[i].used && !strcmp(recent[i].key, key) &&
		    !memcmp(recent[i].csum, csum, POHM_KV_CSUM))
			recent[i].used = 0;
}

/*
 * The round-trip trace (issue 23): at log_level=debug every kv operation
 * logs one "rtt:" line with its key and the waits and requests it cost
 * (the client's counters before and after; exact for one thread).
 */
struct trace {
	struct pohm_net_counts c0;
	int on;
};

static void trace_start(struct pohm_client *c, struct trace *t)
{
	t->on = pohm_log_level() >= POHM_LOG_DEBUG;
	if (t->on)
		pohm_net_counts(pohm_client_net(c), &t->c0);
}

static void trace_end(struct pohm_client *c, const struct trace *t, const char *op,
		      const char *key, size_t more, int r)
{
	struct pohm_net_counts c1;

	if (!t->on)
		return;
	pohm_net_counts(pohm_client_net(c), &c1);
	pohm_debug("rtt: %s %s%s%.0zu: %d, %llu waits, %llu requests", op, key,
		   more ? " +" : "", more, r, (unsigned long long)(c1.waits - t->c0.waits),
		   (unsigned long long)(c1.requests - t->c0.requests));
}

static int kvio_peek(void *ctx, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	size_t i;

	for (i = 0; i < RECENT_N; i++) {
		const struct recent *r = &recent[i];

		if (!r->used || r->client != ctx || strcmp(r->key, key))
			continue;
		out->data = malloc(r->len);
		if (!out->data)
			return -ENOMEM;
		memcpy(out->data, r->data, r->len);
		out->len = r->len;
		memcpy(out->csum, r->csum, POHM_KV_CSUM);
		out->ts_ns = r->ts_ns;
		*age_ns = pohm_sys_mono_ns() - r->mono_ns;
		return 0;
	}
	return -ENOENT;
}

/* A base another process kept (kv.h adopt): remembered as read, no group known behind. */
static int kvio_adopt(void *ctx, const char *key, const struct pohm_kv_val *v)
{
	struct pohm_io_result res;

	memset(&res, 0, sizeof(res));
	res.ts = pohm_time_from_ns(v->ts_ns);
	remember(ctx, key, v->data, v->len, v->csum, &res);
	return 0;
}

static int raw_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	struct pohm_io_result res;
	struct trace t;
	int r;

	trace_start(ctx, &t);
	r = pohm_io_cas_get(ctx, key, strlen(key), &out->data, &out->len, out->csum, &res);
	trace_end(ctx, &t, "get", key, 0, r);

	if (r == -ENOENT)
		return r;
	if (r) {
		pohm_info("%s", res.msg);
		return r == -ETIMEDOUT ? -EIO : r;
	}
	if (res.notes)
		pohm_debug("%s", res.msg);
	remember(ctx, key, out->data, out->len, out->csum, &res);
	return 0;
}

_Static_assert(POHM_KV_GET_N_ROUND == POHM_IO_CAS_MANY, "kv.h's get_n round is the io batch");

/* One get_n batch of n <= POHM_IO_CAS_MANY keys; remember: keep the values for peek. */
static int get_n_batch(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out,
		       int *st, int keep)
{
	/* ~5.5 KB each: on the heap, a host thread's stack may be small.  Not
	 * calloc (io.c pohm_io_cas_get_many's op array says why): io_op_init
	 * clears each one. */
	struct pohm_io_result *res = malloc((n ? n : 1) * sizeof(*res));
	struct pohm_io_cas_val *v = calloc(n ? n : 1, sizeof(*v));
	struct trace t;
	size_t i;
	int r;

	r = res && v ? 0 : -ENOMEM;
	if (r)
		goto out;
	trace_start(ctx, &t);
	r = pohm_io_cas_get_many(ctx, n, keys, v, res);
	trace_end(ctx, &t, "get_n", keys[0], n - 1, r);
	if (r)
		goto out;
	for (i = 0; i < n; i++) {
		int x = v[i].status;

		out[i].data = v[i].data;
		out[i].len = v[i].len;
		memcpy(out[i].csum, v[i].csum, POHM_KV_CSUM);
		out[i].ts_ns = x ? 0 : pohm_time_to_ns(&res[i].ts);	/* a base's stamp (put_many) */
		if (x && x != -ENOENT)
			pohm_info("%s", res[i].msg);
		else if (!x && res[i].notes)
			pohm_debug("%s", res[i].msg);
		if (!x && keep)
			remember(ctx, keys[i], out[i].data, out[i].len, out[i].csum, &res[i]);
		st[i] = x == -ETIMEDOUT ? -EIO : x;
	}
out:
	free(v);
	free(res);
	return r;
}

/*
 * get_n: POHM_IO_CAS_MANY keys per round trip.  Only a small batch's
 * values are remembered (rollbacks, peek): a listing's hundreds of inodes
 * would only push this thread's few recent values out.
 */
static int raw_get_n(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out,
		      int *st)
{
	size_t i, k;
	int r = 0;

	for (i = 0; i < n; i += k) {
		k = n - i < POHM_IO_CAS_MANY ? n - i : POHM_IO_CAS_MANY;
		r = get_n_batch(ctx, k, keys + i, out + i, st + i, n <= POHM_KV_GET_N);
		if (r)
			break;
	}
	if (r)		/* nothing filled, as the contract says */
		for (k = 0; k < i; k++) {
			free(out[k].data);
			memset(&out[k], 0, sizeof(out[k]));
		}
	return r;
}

static int raw_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	struct pohm_io_result res;
	struct trace t;
	size_t got = 0;
	int r;

	trace_start(ctx, &t);
	r = pohm_io_read(ctx, key, strlen(key), off, buf, len, &got, &res);
	trace_end(ctx, &t, "read", key, 0, r);

	if (r == -E2BIG)
		return 0;	/* offset at or past the end */
	if (r)
		return r;
	return (int)got;
}

/* What a conditional put of key replaces (kv.h expect) as pohm_io_cas_put wants it. */
static void old_for(void *ctx, const char *key, const uint8_t *expect, struct pohm_cas_old *old)
{
	const struct recent *prev;

	memset(old, 0, sizeof(*old));
	old->fresh = expect == POHM_KV_NEW;
	old->arbiter = !old->fresh && lost_lately(ctx, key);
	if (expect != POHM_KV_ABSENT && expect != POHM_KV_NEW) {
		old->csum = expect;
		prev = recall(key, expect);
		if (prev) {
			old->data = prev->data;
			old->len = prev->len;
			old->min_ts_ns = prev->ts_ns + 1;
			old->behind = prev->behind;
		} else {
			pohm_debug("key %s: CAS against a value this thread has not read: "
				   "a lost write cannot be rolled back", key);
		}
	}
}

/* A conditional put's answer r (pohm_io_cas_put) as kv.h says it. */
static int put_answer(void *ctx, const char *key, const void *data, size_t len,
		      const struct pohm_cas_old *old, const struct pohm_io_result *res, int r,
		      int keep)
{
	uint8_t sum[POHM_KV_CSUM];

	if (!r) {
		/* The CAS hashed these bytes already (issue 23: a small file's
		 * commit was hashed twice here). */
		if (res->has_csum)
			memcpy(sum, res->csum, sizeof(sum));
		else
			pohm_sha512(data, len, sum);
		if (keep)
			remember(ctx, key, data, len, sum, res);
		if (res->notes)
			pohm_debug("%s", res->msg);
		return 0;
	}
	if (r == -EBADFD) {
		pohm_debug("%s", res->msg);
		if (keep && (old->arbiter || res->split))
			lost_note(ctx, key);
		if (keep && old->csum)
			forget(key, old->csum);	/* no longer the stored version: no base */
		return old->csum ? -EAGAIN : -EEXIST;
	}
	if (res->unknown)
		pohm_err("%s", res->msg);	/* the caller gets EIO: say why, at the default level */
	else
		pohm_info("%s", res->msg);
	return r == -ETIMEDOUT ? -EIO : r;
}

static const char *put_what(const struct pohm_cas_old *old, const uint8_t *expect)
{
	return old->fresh ? "create-new" : expect == POHM_KV_ABSENT ? "create" : "cas";
}

static int raw_put(void *ctx, const char *key, const void *data, size_t len,
		    const uint8_t *expect)
{
	struct pohm_io_result res;
	struct pohm_cas_old old;
	struct trace t;
	int r;

	trace_start(ctx, &t);
	if (!expect) {
		r = pohm_io_write(ctx, key, strlen(key), data, len, NULL, &res);
		trace_end(ctx, &t, "write", key, 0, r);
		if (r)
			pohm_info("%s", res.msg);
		return r == -ETIMEDOUT ? -EIO : r;
	}
	old_for(ctx, key, expect, &old);
	r = pohm_io_cas_put(ctx, key, strlen(key), data, len, &old, &res);
	trace_end(ctx, &t, put_what(&old, expect), key, 0, r);
	return put_answer(ctx, key, data, len, &old, &res, r, 1);
}

/* put_n: pohm_io_cas_put_n; the trace names the first key and the count. */
static int raw_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		     const size_t *len, const uint8_t *const *expect, int *st)
{
	struct pohm_io_cas_put *p;
	struct trace t;
	char what[64];
	size_t i;
	int r;

	if (n > POHM_KV_PUT_N || n > POHM_IO_CAS_PUT_N)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!expect[i])
			return -EINVAL;
	p = calloc(n, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		p[i].key = keys[i];
		p[i].keylen = strlen(keys[i]);
		p[i].data = data[i];
		p[i].len = len[i];
		old_for(ctx, keys[i], expect[i], &p[i].old);
	}
	trace_start(ctx, &t);
	r = pohm_io_cas_put_n(ctx, n, p);
	snprintf(what, sizeof(what), "put_n %s", put_what(&p[0].old, expect[0]));
	trace_end(ctx, &t, what, keys[0], n - 1, r);
	for (i = 0; !r && i < n; i++)
		st[i] = put_answer(ctx, keys[i], data[i], len[i], &p[i].old, &p[i].res, p[i].rc, 1);
	free(p);
	return r;
}

/* write_n: pohm_io_write_n; the trace names the first key and the count. */
static int raw_write_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		       const size_t *len, int *st)
{
	struct pohm_io_write_one *w = calloc(n ? n : 1, sizeof(*w));
	struct trace t;
	size_t i;
	int r;

	if (!w)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		w[i].key = keys[i];
		w[i].keylen = strlen(keys[i]);
		w[i].data = data[i];
		w[i].len = len[i];
	}
	trace_start(ctx, &t);
	r = pohm_io_write_n(ctx, n, w);
	trace_end(ctx, &t, "write_n", n ? keys[0] : "", n ? n - 1 : 0, r);
	for (i = 0; !r && i < n; i++) {
		st[i] = w[i].rc == -ETIMEDOUT ? -EIO : w[i].rc;
		if (st[i])
			pohm_info("%s", w[i].res.msg);
	}
	free(w);
	return r;
}

/* put_many: pohm_io_cas_put_n per POHM_KV_PUT_MANY keys, each key's
 * rollback base the caller's (p[i].base) unless this thread kept one. */
static int raw_put_many(void *ctx, size_t n, struct pohm_kv_cas *p)
{
	struct pohm_io_cas_put *q;
	struct trace t;
	char what[64];
	size_t i, at, k;
	int r = 0;

	for (i = 0; i < n; i++)
		if (!p[i].expect)
			return -EINVAL;
	q = calloc(n < POHM_KV_PUT_MANY ? (n ? n : 1) : POHM_KV_PUT_MANY, sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (at = 0; at < n; at += k) {
		k = n - at < POHM_KV_PUT_MANY ? n - at : POHM_KV_PUT_MANY;
		if (k > POHM_IO_CAS_PUT_N)
			k = POHM_IO_CAS_PUT_N;
		memset(q, 0, k * sizeof(*q));
		for (i = 0; i < k; i++) {
			const struct pohm_kv_cas *c = &p[at + i];

			q[i].key = c->key;
			q[i].keylen = strlen(c->key);
			q[i].data = c->data;
			q[i].len = c->len;
			old_for(ctx, c->key, c->expect, &q[i].old);
			if (q[i].old.csum && !q[i].old.data && c->base && c->base->data &&
			    !memcmp(c->base->csum, c->expect, POHM_KV_CSUM)) {
				q[i].old.data = c->base->data;
				q[i].old.len = c->base->len;
				q[i].old.min_ts_ns = c->base->ts_ns ? c->base->ts_ns + 1 : 0;
			}
		}
		trace_start(ctx, &t);
		r = pohm_io_cas_put_n(ctx, k, q);
		snprintf(what, sizeof(what), "put_many %s", put_what(&q[0].old, p[at].expect));
		trace_end(ctx, &t, what, p[at].key, k - 1, r);
		if (r)
			break;
		for (i = 0; i < k; i++)
			p[at + i].st = put_answer(ctx, p[at + i].key, p[at + i].data, p[at + i].len,
						  &q[i].old, &q[i].res, q[i].rc, 1);
	}
	free(q);
	return r;
}

static int raw_del(void *ctx, const char *key)
{
	struct pohm_io_result res;
	struct trace t;
	int r;

	trace_start(ctx, &t);
	r = pohm_io_del(ctx, key, strlen(key), &res);
	trace_end(ctx, &t, "del", key, 0, r);
	return r;
}

static int raw_get_many(void *ctx, size_t n, const char *const *keys, unsigned inflight,
			 size_t max_len,
			 int (*fn)(void *arg, size_t i, const uint8_t *data, size_t len), void *arg)
{
	struct pohm_io_result res;
	struct trace t;
	int r;

	trace_start(ctx, &t);
	r = pohm_io_get_many(ctx, n, keys, inflight, max_len, fn, arg, &res);
	trace_end(ctx, &t, "get_many", keys[0], n - 1, r);

	if (r && r != -ENOENT)
		pohm_info("%s", res.msg);
	else if (res.notes)
		pohm_debug("%s", res.msg);
	return r == -ETIMEDOUT ? -EIO : r;
}

struct scan_ctx {
	struct pohm_client *c;
	const char *prefix;
	size_t plen;
	int (*fn)(void *arg, const char *key, const void *data, size_t len);
	void *arg;
};

/* The key an object's copies claim, checked against its id: 0 or -ENOENT. */
static int scan_key(struct scan_ctx *s, const struct pohm_iter_obj *o, char *key)
{
	unsigned g;

	for (g = 0; g < o->ncopies; g++) {
		const struct pohm_iter_copy *cp = &o->copy[g];
		struct pohm_obj_hdr h;

		if (cp->status || pohm_obj_peek(&h, cp->data, cp->len))
			continue;
		if (pohm_iter_key_is(s->c, o->id, h.key)) {
			memcpy(key, h.key, POHM_KEY_MAX);
			return 0;
		}
	}
	return -ENOENT;
}

static int scan_obj(void *arg, const struct pohm_iter_obj *o)
{
	struct scan_ctx *s = arg;
	struct pohm_cas_vote v[POHM_MAX_GROUPS];
	struct pohm_kv_val val = { 0 };
	char key[POHM_KEY_MAX];
	unsigned g;
	int idx, r;

	if (scan_key(s, o, key) || strncmp(key, s->prefix, s->plen))
		return 0;
	memset(v, 0, sizeof(v));
	for (g = 0; g < o->ncopies; g++) {
		const struct pohm_iter_copy *cp = &o->copy[g];

		if (cp->status == -ENOENT ||
		    (!cp->status && cp->len == POHM_IO_MARKER_LEN &&
		     !memcmp(cp->data, pohm_io_absent_marker, POHM_IO_MARKER_LEN)))
			v[g].status = -ENOENT;
		else if (cp->status || cp->partial)
			v[g].status = -EIO;
		else
			memcpy(v[g].csum, cp->csum, POHM_KV_CSUM);
		v[g].ts = cp->ts;
	}
	idx = pohm_cas_pick(v, o->ncopies, 1);
	if (idx == -ENOENT)
		return 0;
	if (idx >= 0)
		return s->fn(s->arg, key, o->copy[idx].data, o->copy[idx].len);
	/* The groups disagree (or too few answered): settle it as a reader does. */
	r = raw_get(s->c, key, &val);
	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	r = s->fn(s->arg, key, val.data, val.len);
	pohm_kv_val_free(&val);
	return r;
}

static int raw_scan(void *ctx, const char *prefix,
		     int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	struct scan_ctx s = { ctx, prefix, strlen(prefix), fn, arg };
	struct pohm_iter_stats st;
	unsigned g;
	int r = pohm_iter_all(ctx, scan_obj, &s, &st);

	for (g = 0; g < st.ngroups; g++)
		if (st.g[g].error)
			pohm_info("scan: %s", st.g[g].msg);
	return r;
}

/* ---------------------------------------------------------------- deferred put */

/* A put_deferred's own copies, for its answer (put_answer) at settle. */
struct kvio_deferred {
	struct pohm_client *c;
	char *key;
	void *data;
	size_t len;
	uint8_t expect[POHM_KV_CSUM];
	struct pohm_cas_old old;	/* csum: expect (or NULL); data NULL */
	void (*done)(void *arg, int st);
	void *arg;
	const struct recent *sender;	/* the sending thread's kept values */
};

static void deferred_box_free(struct kvio_deferred *b)
{
	free(b->key);
	free(b->data);
	free(b);
}

static void deferred_done(void *arg, int rc, const struct pohm_io_result *res)
{
	struct kvio_deferred *b = arg;
	int st;

	/* Not processed in this process (client closed, a fork child's copy):
	 * unknown here, nothing to keep or forget. */
	if (rc == -ECANCELED)
		st = -EIO;
	else
		st = io_net_errno(put_answer(b->c, b->key, b->data, b->len, &b->old, res, rc,
					     b->sender == recent));
	pohm_debug("key %s: deferred put told %d", b->key, st);
	if (b->done)
		b->done(b->arg, st);
	deferred_box_free(b);
}

static int raw_put_deferred(void *ctx, const char *key, const void *data, size_t len,
			    const uint8_t *expect, void (*done)(void *arg, int st), void *arg)
{
	struct kvio_deferred *b;
	struct pohm_cas_old old;
	int r = -ENOMEM;

	/* A create of a drawn key has nobody to race and no base: put it. */
	if (!expect || expect == POHM_KV_NEW)
		return -EAGAIN;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->c = ctx;
	/* Not strdup: libc's copy would not come from the allocator the
	 * library's free() is (a crash at the first settle, session 18). */
	b->key = malloc(strlen(key) + 1);
	b->data = malloc(len ? len : 1);
	if (!b->key || !b->data)
		goto fail;
	strcpy(b->key, key);
	memcpy(b->data, data, len);
	b->len = len;
	b->done = done;
	b->arg = arg;
	/* The outcome is kept (remember, lost_note) only by this thread's
	 * settle: another thread's kept values are not the sender's. */
	b->sender = recent;
	old_for(ctx, key, expect, &old);
	/* b complete before the send: another thread's settle may tell it
	 * (and free b) as soon as it is sent. */
	b->old = old;
	if (old.csum) {
		memcpy(b->expect, expect, sizeof(b->expect));
		b->old.csum = b->expect;
	}
	b->old.data = NULL;	/* this thread's kept copy: gone by settle */
	r = pohm_io_cas_put_deferred(ctx, key, strlen(key), data, len, &old, deferred_done, b);
	if (r)
		goto fail;
	/* The base is replaced, or stale, whatever the outcome (review 1
	 * finding 5: peek offered it after another thread told the commit). */
	if (old.csum)
		forget(key, expect);
	pohm_debug("key %s: deferred %s sent", key, put_what(&old, expect));
	return 0;
fail:
	deferred_box_free(b);
	return r;
}

static int kvio_settle(void *ctx, uint64_t deadline_ns)
{
	return pohm_io_cas_settle_deferred(ctx, deadline_ns);
}

/* Every call's start: the outcomes of this process's deferred puts first
 * (kv.h: before any other write goes out; at once when none is pending),
 * then the offline gate. */
static int gate(struct pohm_client *c, uint64_t *t0)
{
	pohm_io_cas_settle_deferred(c, UINT64_MAX);
	return io_offline_gate(c, t0);
}

static int kvio_put_deferred(void *ctx, const char *key, const void *data, size_t len,
			     const uint8_t *expect, void (*done)(void *arg, int st), void *arg)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_put_deferred(ctx, key, data, len, expect,
								     done, arg));
}

/*
 * The seam's calls, each through the offline gate and settled after
 * (offline.c): offline they fail with -EIO at once, and no network errno
 * gets past them.
 */
static int kvio_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_get(ctx, key, out));
}

/* A batch's end (get_n, put_n): the per-key statuses without network
 * errnos, and the offline window told of the outcome; a batch whose keys
 * no group answered is settled as -EIO but returns 0 (the statuses say it,
 * per key). */
static int settle_n(void *ctx, uint64_t t0, int r, size_t n, int *st)
{
	int worst = 0;
	size_t i;

	for (i = 0; !r && i < n; i++) {
		if (io_net_errno(st[i]) == -EIO && !worst)
			worst = st[i];	/* a key no group answered for */
		st[i] = io_net_errno(st[i]);
	}
	r = io_offline_settle(ctx, t0, r ? r : worst);
	return r == -EIO && worst ? 0 : r;
}

static int kvio_get_n(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out,
		      int *st)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : settle_n(ctx, t0, raw_get_n(ctx, n, keys, out, st), n, st);
}

static int kvio_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_read(ctx, key, off, buf, len));
}

static int kvio_put(void *ctx, const char *key, const void *data, size_t len,
		    const uint8_t *expect)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_put(ctx, key, data, len, expect));
}

static int kvio_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		      const size_t *len, const uint8_t *const *expect, int *st)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : settle_n(ctx, t0, raw_put_n(ctx, n, keys, data, len, expect, st), n, st);
}

static int kvio_write_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
			const size_t *len, int *st)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : settle_n(ctx, t0, raw_write_n(ctx, n, keys, data, len, st), n, st);
}

static int kvio_put_many(void *ctx, size_t n, struct pohm_kv_cas *p)
{
	uint64_t t0;
	int *st, r = gate(ctx, &t0);
	size_t i;

	if (r)
		return r;
	st = calloc(n ? n : 1, sizeof(*st));
	if (!st)
		return io_offline_settle(ctx, t0, -ENOMEM);
	r = raw_put_many(ctx, n, p);
	for (i = 0; !r && i < n; i++)
		st[i] = p[i].st;
	r = settle_n(ctx, t0, r, n, st);
	for (i = 0; i < n; i++)
		p[i].st = st[i];
	free(st);
	return r;
}

static int kvio_del(void *ctx, const char *key)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_del(ctx, key));
}

static int kvio_get_many(void *ctx, size_t n, const char *const *keys, unsigned inflight,
			 size_t max_len,
			 int (*fn)(void *arg, size_t i, const uint8_t *data, size_t len), void *arg)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_get_many(ctx, n, keys, inflight, max_len,
								fn, arg));
}

static int kvio_scan(void *ctx, const char *prefix,
		     int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	uint64_t t0;
	int r = gate(ctx, &t0);

	return r ? r : io_offline_settle(ctx, t0, raw_scan(ctx, prefix, fn, arg));
}

static const struct pohm_kv_ops kvio_ops = {
	.get = kvio_get, .read = kvio_read, .put = kvio_put, .del = kvio_del, .scan = kvio_scan,
	.get_many = kvio_get_many, .get_n = kvio_get_n, .peek = kvio_peek, .put_n = kvio_put_n,
	.put_many = kvio_put_many, .adopt = kvio_adopt, .write_n = kvio_write_n,
	.put_deferred = kvio_put_deferred, .settle = kvio_settle,
};

void pohm_kvio_init(struct pohm_kv *kv, struct pohm_client *client)
{
	kv->ops = &kvio_ops;
	kv->ctx = client;
}
