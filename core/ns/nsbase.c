/*
 * nsbase.c — CAS bases that outlive the process (issue 23, decision 0048).
 *
 * An optimistic CAS (decision 0017) needs the bytes of the version it
 * replaces; kv peek keeps them per thread, so a new process (every shell
 * command) has none and reads before its first write.  With
 * pohm_ns_opts.base_note / base_load (the cache keeps them in cache_dir)
 * the handle's kv is wrapped here: every inode and bucket value a get, a
 * small get_n (peek's size), a put or a put_n of this handle read or wrote
 * is handed to base_note; ns_peek asks base_load when the thread has no
 * copy of its own younger than NS_PEEK_NS.  Nothing else changes: the
 * base is only ever the expect of a CAS, and only a CAS that succeeded
 * acts on it (a stale or torn base costs the read that would have come
 * first anyway).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ns_int.h"

/* Keys whose values are CAS bases: inodes and buckets. */
static int is_base_key(const char *key)
{
	return (key[0] == 'i' || key[0] == 'b') && key[1] == ':';
}

/*
 * Hand key's value to base_note with the version's stamp, which the
 * store's peek knows when it kept the same bytes (kvio does for every get,
 * small get_n and committed put): a CAS against the base then rolls a
 * partial write back to exactly that version (kv.h adopt).
 */
static void note(struct pohm_ns *ns, const char *key, const void *data, size_t len)
{
	struct pohm_kv_val v, p;
	uint64_t age;

	if (!is_base_key(key))
		return;
	memset(&v, 0, sizeof(v));
	v.data = (uint8_t *)data;
	v.len = len;
	memset(&p, 0, sizeof(p));
	if (ns->store.ops->peek && !ns->store.ops->peek(ns->store.ctx, key, &p, &age)) {
		if (p.len == len && !memcmp(p.data, data, len))
			v.ts_ns = p.ts_ns;
		pohm_kv_val_free(&p);
	}
	ns->base_note(ns->base_arg, key, &v);
}

/* A CAS of key was refused: the kept base (if it was the one) is stale. */
static void lost(struct pohm_ns *ns, const char *key)
{
	if (is_base_key(key))
		ns->base_note(ns->base_arg, key, NULL);
}

static int bs_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	struct pohm_ns *ns = ctx;
	int r = ns->base_kv.ops->get(ns->base_kv.ctx, key, out);

	if (!r)
		note(ns, key, out->data, out->len);
	return r;
}

static int bs_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	struct pohm_ns *ns = ctx;

	return ns->base_kv.ops->read(ns->base_kv.ctx, key, off, buf, len);
}

static int bs_put(void *ctx, const char *key, const void *data, size_t len, const uint8_t *expect)
{
	struct pohm_ns *ns = ctx;
	int r = ns->base_kv.ops->put(ns->base_kv.ctx, key, data, len, expect);

	if (!r)
		note(ns, key, data, len);
	else if (r == -EAGAIN)
		lost(ns, key);
	return r;
}

static int bs_del(void *ctx, const char *key)
{
	struct pohm_ns *ns = ctx;
	int r = ns->base_kv.ops->del(ns->base_kv.ctx, key);

	if (is_base_key(key))
		ns->base_note(ns->base_arg, key, NULL);	/* forget it, whatever r */
	return r;
}

static int bs_get_many(void *ctx, size_t n, const char *const *keys, unsigned inflight,
		       size_t max_len, int (*fn)(void *arg, size_t i, const uint8_t *data, size_t len),
		       void *arg)
{
	struct pohm_ns *ns = ctx;

	return ns->base_kv.ops->get_many(ns->base_kv.ctx, n, keys, inflight, max_len, fn, arg);
}

static int bs_get_n(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out, int *st)
{
	struct pohm_ns *ns = ctx;
	size_t i;
	int r = ns->base_kv.ops->get_n(ns->base_kv.ctx, n, keys, out, st);

	/* A listing's hundreds of inodes are not bases (peek keeps small calls only). */
	for (i = 0; !r && n <= POHM_KV_GET_N && i < n; i++)
		if (!st[i])
			note(ns, keys[i], out[i].data, out[i].len);
	return r;
}

static int bs_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		    const size_t *len, const uint8_t *const *expect, int *st)
{
	struct pohm_ns *ns = ctx;
	size_t i;
	int r = ns->base_kv.ops->put_n(ns->base_kv.ctx, n, keys, data, len, expect, st);

	for (i = 0; !r && i < n; i++)
		if (!st[i])
			note(ns, keys[i], data[i], len[i]);
		else if (st[i] == -EAGAIN)
			lost(ns, keys[i]);
	return r;
}

static int bs_put_many(void *ctx, size_t n, struct pohm_kv_cas *p)
{
	struct pohm_ns *ns = ctx;
	size_t i;
	int r = ns->base_kv.ops->put_many(ns->base_kv.ctx, n, p);

	for (i = 0; !r && i < n; i++)
		if (!p[i].st)
			note(ns, p[i].key, p[i].data, p[i].len);
		else if (p[i].st == -EAGAIN)
			lost(ns, p[i].key);
	return r;
}

/* Chunk generations: no base key among them, nothing to note. */
static int bs_write_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		      const size_t *len, int *st)
{
	struct pohm_ns *ns = ctx;

	return ns->base_kv.ops->write_n(ns->base_kv.ctx, n, keys, data, len, st);
}

/* A put_deferred's note, told at its settle (bs_put_deferred). */
struct bs_deferred {
	struct pohm_ns *ns;
	void (*done)(void *arg, int st);
	void *arg;
	size_t len;
	char key[POHM_KEY_MAX];
	uint8_t data[];
};

static void bs_deferred_done(void *arg, int st)
{
	struct bs_deferred *d = arg;

	if (!st)
		note(d->ns, d->key, d->data, d->len);
	if (d->done)
		d->done(d->arg, st);
	free(d);
}

/* The base is noted when the outcome is told: committed, the bytes sent;
 * else forgotten (the send replaced it, or it was stale). */
static int bs_put_deferred(void *ctx, const char *key, const void *data, size_t len,
			   const uint8_t *expect, void (*done)(void *arg, int st), void *arg)
{
	struct pohm_ns *ns = ctx;
	struct bs_deferred *d;
	int r;

	if (strlen(key) >= sizeof(d->key))
		return -EAGAIN;
	d = malloc(sizeof(*d) + len);
	if (!d)
		return -ENOMEM;
	d->ns = ns;
	d->done = done;
	d->arg = arg;
	d->len = len;
	strcpy(d->key, key);
	memcpy(d->data, data, len);
	lost(ns, key);
	r = ns->base_kv.ops->put_deferred(ns->base_kv.ctx, key, data, len, expect,
					  bs_deferred_done, d);
	if (r)
		free(d);
	return r;
}

static int bs_settle(void *ctx, uint64_t deadline_ns)
{
	struct pohm_ns *ns = ctx;

	return ns->base_kv.ops->settle(ns->base_kv.ctx, deadline_ns);
}

static int bs_peek(void *ctx, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	struct pohm_ns *ns = ctx;

	return ns->base_kv.ops->peek(ns->base_kv.ctx, key, out, age_ns);
}

static int bs_scan(void *ctx, const char *prefix,
		   int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	struct pohm_ns *ns = ctx;

	return ns->base_kv.ops->scan(ns->base_kv.ctx, prefix, fn, arg);
}

void ns_base_kv(struct pohm_ns *ns)
{
	const struct pohm_kv_ops *o = ns->kv.ops;

	ns->base_kv = ns->kv;
	ns->base_ops.get = bs_get;
	ns->base_ops.read = o->read ? bs_read : NULL;
	ns->base_ops.put = bs_put;
	ns->base_ops.del = o->del ? bs_del : NULL;
	ns->base_ops.get_many = o->get_many ? bs_get_many : NULL;
	ns->base_ops.get_n = o->get_n ? bs_get_n : NULL;
	ns->base_ops.scan = o->scan ? bs_scan : NULL;
	ns->base_ops.peek = o->peek ? bs_peek : NULL;
	ns->base_ops.put_n = o->put_n ? bs_put_n : NULL;
	ns->base_ops.put_many = o->put_many ? bs_put_many : NULL;
	ns->base_ops.write_n = o->write_n ? bs_write_n : NULL;
	ns->base_ops.put_deferred = o->put_deferred && o->settle ? bs_put_deferred : NULL;
	ns->base_ops.settle = o->put_deferred && o->settle ? bs_settle : NULL;
	ns->kv.ops = &ns->base_ops;
	ns->kv.ctx = ns;
}

int ns_base_peek(struct pohm_ns *ns, const char *key, struct pohm_kv_val *v)
{
	uint64_t age = 0;
	int r;

	if (!ns->base_load || !ns->base_max_ns || !is_base_key(key) || !ns->kv.ops->peek)
		return -ENOENT;
	memset(v, 0, sizeof(*v));
	r = ns->base_load(ns->base_arg, key, v, &age);
	if (r)
		return -ENOENT;
	/* A copy noted without its version's stamp would give the CAS no
	 * timestamp floor (kvio.c): a write against it could carry an older
	 * stamp than the version it replaces (session 13 review). */
	if (age >= ns->base_max_ns || !v->ts_ns) {
		pohm_kv_val_free(v);
		return -ENOENT;
	}
	/* The store's writer needs the bytes it replaces to undo a partial write. */
	if (ns->store.ops->adopt && ns->store.ops->adopt(ns->store.ctx, key, v)) {
		pohm_kv_val_free(v);
		return -ENOENT;
	}
	/*
	 * A base is there only because a process of this cache read or wrote
	 * the object, after its handle had checked the root (nslazy.c): the
	 * root exists, and is never removed.  So a write against this base
	 * needs no root check first (issue 23: the first call of a new
	 * process may be that write).
	 */
	__atomic_store_n(&ns->root_ready, 1, __ATOMIC_RELEASE);
	return 0;
}
