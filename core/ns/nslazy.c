/*
 * nslazy.c — the root check on first use (pohm_ns_opts.lazy_root).
 *
 * A process whose calls the cache answers from its journal (a stat
 * validated within attr_timeout) should not reach the cluster at all, not
 * even to see that the root exists (issue 23).  So with lazy_root the
 * handle's kv is a thin wrapper over the store: every operation first
 * makes sure the root was checked (ns_root_check: read it, create it if
 * absent), once per handle, then forwards.  A failed check fails the call
 * that needed it and is tried again by the next one, as a failed open
 * failed every call before; root_failed (pohm_ns_opts) hears of it, so
 * the reason a failed open used to log is still said.  The check itself
 * runs through the same
 * wrapper; the thread making it is let through (checking, thread-local),
 * the others wait on root_lock.  Reads may go first (lz_get): a key
 * found present proves the root.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_int.h"

/* Set while this thread runs ns_root_check (its own calls go straight through). */
static __thread int checking;

/* 0 once the root of ns was checked, else the check's -errno. */
static int ready(struct pohm_ns *ns)
{
	int r = 0;

	if (checking || __atomic_load_n(&ns->root_ready, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&ns->root_lock);
	if (!ns->root_ready) {
		checking = 1;
		r = ns_root_check(ns);
		checking = 0;
		if (!r)
			__atomic_store_n(&ns->root_ready, 1, __ATOMIC_RELEASE);
		else if (ns->root_failed)
			ns->root_failed(ns->root_failed_arg, r);
	}
	pthread_mutex_unlock(&ns->root_lock);
	return r;
}

/*
 * A read may go before the check: every client checks the root before its
 * first write and the root is never removed, so any object found present
 * proves the root, and the check is skipped (issue 23: a create in a
 * validated directory reads that directory's inode first).  A read that
 * finds nothing runs the check after it, and is made again when it asked
 * for the root inode itself (which the check may just have created).
 */
static int unchecked(struct pohm_ns *ns)
{
	return !checking && !__atomic_load_n(&ns->root_ready, __ATOMIC_ACQUIRE);
}

static void proven(struct pohm_ns *ns)
{
	__atomic_store_n(&ns->root_ready, 1, __ATOMIC_RELEASE);
}

static int is_root_key(const char *key)
{
	char rk[POHM_KEY_MAX];

	pohm_key_inode(rk, POHM_ROOT_INO);
	return !strcmp(key, rk);
}

static int lz_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	struct pohm_ns *ns = ctx;
	int r, c;

	if (unchecked(ns)) {
		r = ns->store.ops->get(ns->store.ctx, key, out);
		if (!r) {
			proven(ns);
			return 0;
		}
		c = ready(ns);
		if (c)
			return c;
		if (!is_root_key(key))
			return r;
	} else if ((r = ready(ns))) {
		return r;
	}
	return ns->store.ops->get(ns->store.ctx, key, out);
}

static int lz_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->read(ns->store.ctx, key, off, buf, len);
}

static int lz_put(void *ctx, const char *key, const void *data, size_t len, const uint8_t *expect)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->put(ns->store.ctx, key, data, len, expect);
}

static int lz_del(void *ctx, const char *key)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->del(ns->store.ctx, key);
}

static int lz_get_many(void *ctx, size_t n, const char *const *keys, unsigned inflight,
		       size_t max_len, int (*fn)(void *arg, size_t i, const uint8_t *data, size_t len),
		       void *arg)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->get_many(ns->store.ctx, n, keys, inflight, max_len, fn, arg);
}

static int lz_get_n(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out, int *st)
{
	struct pohm_ns *ns = ctx;
	size_t i;
	int r, c, again = 0;

	if (unchecked(ns)) {
		r = ns->store.ops->get_n(ns->store.ctx, n, keys, out, st);
		for (i = 0; !r && i < n; i++)
			if (!st[i]) {
				proven(ns);
				return 0;
			}
		c = ready(ns);	/* nothing present: nothing in out to release */
		if (c)
			return c;
		for (i = 0; i < n; i++)
			again |= is_root_key(keys[i]);
		if (!again)
			return r;
	} else if ((r = ready(ns))) {
		return r;
	}
	return ns->store.ops->get_n(ns->store.ctx, n, keys, out, st);
}

static int lz_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		    const size_t *len, const uint8_t *const *expect, int *st)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->put_n(ns->store.ctx, n, keys, data, len, expect, st);
}

static int lz_put_many(void *ctx, size_t n, struct pohm_kv_cas *p)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->put_many(ns->store.ctx, n, p);
}

static int lz_write_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		      const size_t *len, int *st)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->write_n(ns->store.ctx, n, keys, data, len, st);
}

static int lz_put_deferred(void *ctx, const char *key, const void *data, size_t len,
			   const uint8_t *expect, void (*done)(void *arg, int st), void *arg)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->put_deferred(ns->store.ctx, key, data, len, expect, done,
						   arg);
}

/* Nothing to check: only outcomes of writes this handle sent. */
static int lz_settle(void *ctx, uint64_t deadline_ns)
{
	struct pohm_ns *ns = ctx;

	return ns->store.ops->settle(ns->store.ctx, deadline_ns);
}

/* No storage call, nothing to check: a value this thread read or wrote. */
static int lz_peek(void *ctx, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	struct pohm_ns *ns = ctx;

	return ns->store.ops->peek(ns->store.ctx, key, out, age_ns);
}

static int lz_scan(void *ctx, const char *prefix,
		   int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	struct pohm_ns *ns = ctx;
	int r = ready(ns);

	return r ? r : ns->store.ops->scan(ns->store.ctx, prefix, fn, arg);
}

void ns_lazy_kv(struct pohm_ns *ns)
{
	/* The wrapper offers what the store offers (callers test the optional ops for NULL). */
	ns->lazy_ops.get = lz_get;
	ns->lazy_ops.read = ns->store.ops->read ? lz_read : NULL;
	ns->lazy_ops.put = lz_put;
	ns->lazy_ops.del = ns->store.ops->del ? lz_del : NULL;
	ns->lazy_ops.get_many = ns->store.ops->get_many ? lz_get_many : NULL;
	ns->lazy_ops.get_n = ns->store.ops->get_n ? lz_get_n : NULL;
	ns->lazy_ops.scan = ns->store.ops->scan ? lz_scan : NULL;
	ns->lazy_ops.peek = ns->store.ops->peek ? lz_peek : NULL;
	ns->lazy_ops.put_n = ns->store.ops->put_n ? lz_put_n : NULL;
	ns->lazy_ops.put_many = ns->store.ops->put_many ? lz_put_many : NULL;
	ns->lazy_ops.write_n = ns->store.ops->write_n ? lz_write_n : NULL;
	ns->lazy_ops.put_deferred = ns->store.ops->put_deferred ? lz_put_deferred : NULL;
	ns->lazy_ops.settle = ns->store.ops->settle ? lz_settle : NULL;
	ns->kv.ops = &ns->lazy_ops;
	ns->kv.ctx = ns;
}

/* ---------------------------------------------------------------- the check itself */

/* Moved from ns.c (session 13, issue 20): the check this file runs. */
static int root_create(struct pohm_ns *ns)
{
	struct pohm_inode root;
	char key[POHM_KEY_MAX];
	unsigned attempt;
	int r = -EBUSY;

	memset(&root, 0, sizeof(root));
	pohm_key_inode(key, POHM_ROOT_INO);
	ns_hdr(ns, &root.hdr, POHM_OBJ_INODE, POHM_ROOT_INO, key);
	root.ino = POHM_ROOT_INO;
	root.mode = S_IFDIR | (ns->root_mode ? ns->root_mode & 07777 : 0755);
	root.uid = ns->root_uid;
	root.gid = ns->root_gid;
	root.nlink = 2;
	root.chunk_shift = (uint8_t)ns->chunk_shift;
	ns_now_ts(&root.mtime);
	root.atime = root.ctime = root.btime = root.mtime;
	root.version = 1;
	/*
	 * Create-if-absent: whichever client gets there first makes the root,
	 * once.  Losing means another client won, or that racing creates all
	 * lost (each rolled back): read it to know which.
	 */
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		struct pohm_inode cur;

		ns_backoff(ns, attempt);
		r = ns_inode_put(ns, &root, POHM_KV_ABSENT);
		if (r != -EEXIST)
			return r;
		r = ns_inode_get(ns, POHM_ROOT_INO, &cur, NULL, 1);
		if (r != -ENOENT) {
			if (!r)
				pohm_inode_clear(&cur);
			return r;
		}
	}
	return -EBUSY;
}

int ns_root_check(struct pohm_ns *ns)
{
	struct pohm_inode root;
	int r = ns_inode_get(ns, POHM_ROOT_INO, &root, NULL, 0);

	if (r == -ENOENT)
		r = root_create(ns);
	else if (!r)
		pohm_inode_clear(&root);
	return r;
}
