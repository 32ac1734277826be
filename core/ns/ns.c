/*
 * ns.c — the namespace handle, inodes and attributes.
 *
 * Sections: helpers (random, time, backoff) · inodes (get/put/CAS loop,
 * nlink) · open/close (root creation) · getattr/setattr · xattrs · resolve.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ns_http.h"
#include "ns_int.h"
#include "nsmap.h"
#include "sys.h"

/* ---------------------------------------------------------------- helpers */

uint64_t ns_random(struct pohm_ns *ns)
{
	pid_t pid = pohm_sys_getpid();	/* one syscall; every caller then talks to the network */
	uint64_t x;

	pthread_mutex_lock(&ns->rng_lock);
	if (ns->rng_pid != pid) {
		ns->rng = pohm_sys_seed();
		ns->rng_pid = pid;
	}
	do {
		x = ns->rng;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ns->rng = x;
	} while (!x);
	pthread_mutex_unlock(&ns->rng_lock);
	return x;
}

void ns_backoff(struct pohm_ns *ns, unsigned attempt)
{
	/* Random sleep up to min(2^attempt, 256) × 50 µs: split votes drift apart. */
	unsigned cap = attempt < 8 ? 1u << attempt : 256;
	uint64_t us = (ns_random(ns) % cap + 1) * 50;
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	if (attempt == 0)
		return;
	nanosleep(&ts, NULL);
}

uint64_t ns_now_ns(void)
{
	return pohm_sys_real_ns();
}

void ns_now_ts(struct pohm_ts *t)
{
	uint64_t n = ns_now_ns();

	t->sec = (int64_t)(n / 1000000000ULL);
	t->nsec = (uint32_t)(n % 1000000000ULL);
}

void ns_hdr(struct pohm_ns *ns, struct pohm_obj_hdr *h, uint8_t type, uint64_t parent,
	    const char *key)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->parent = parent;
	memcpy(h->fsid, ns->fsid, sizeof(h->fsid));
	snprintf(h->key, POHM_KEY_MAX, "%s", key);
}

int ns_check_name(const char *name)
{
	size_t n = strlen(name);

	if (!n || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
		return -EINVAL;
	if (n > POHM_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

uint8_t ns_dtype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:	return DT_REG;
	case S_IFDIR:	return DT_DIR;
	case S_IFLNK:	return DT_LNK;
	case S_IFIFO:	return DT_FIFO;
	case S_IFSOCK:	return DT_SOCK;
	case S_IFCHR:	return DT_CHR;
	case S_IFBLK:	return DT_BLK;
	default:	return DT_UNKNOWN;
	}
}

/* ---------------------------------------------------------------- inodes */

int ns_inode_get(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *in, uint8_t *csum,
		 int want_tomb)
{
	struct pohm_kv_val v = { 0 };
	char key[POHM_KEY_MAX];
	int r;

	pohm_key_inode(key, ino);
	r = ns->kv.ops->get(ns->kv.ctx, key, &v);
	if (r)
		return r;
	r = pohm_inode_decode(in, v.data, v.len);
	if (r) {
		/* A storage error, not "missing": damaged bytes, or a format
		 * newer than this client's (decision 0023). */
		pohm_warn("inode %s does not decode (%s): damaged, or written by a newer "
			  "client", key, strerror(-r));
		r = -EIO;
		goto out;
	}
	if (in->ino != ino) {
		pohm_inode_clear(in);
		r = -EIO;
		goto out;
	}
	if (csum)
		memcpy(csum, v.csum, POHM_KV_CSUM);
	if ((in->hdr.flags & POHM_OBJF_TOMBSTONE) && !want_tomb) {
		pohm_inode_clear(in);
		r = -ENOENT;
	}
out:
	pohm_kv_val_free(&v);
	return r;
}

int ns_peek(struct pohm_ns *ns, const char *key, struct pohm_kv_val *v)
{
	uint64_t age;
	int r;

	memset(v, 0, sizeof(*v));
	if (!ns->kv.ops->peek)
		return -ENOENT;
	r = ns->kv.ops->peek(ns->kv.ctx, key, v, &age);
	if (!r && age >= NS_PEEK_NS) {
		pohm_kv_val_free(v);
		r = -ENOENT;
	}
	return r;
}

/* ns_inode_get from what this thread saw (ns_peek): 0, -ENOENT (none, or a tombstone). */
static int inode_peek(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *in, uint8_t *csum)
{
	struct pohm_kv_val v;
	char key[POHM_KEY_MAX];
	int r;

	pohm_key_inode(key, ino);
	r = ns_peek(ns, key, &v);
	if (r)
		return r;
	r = pohm_inode_decode(in, v.data, v.len) ? -ENOENT : 0;
	if (!r && (in->ino != ino || (in->hdr.flags & POHM_OBJF_TOMBSTONE))) {
		pohm_inode_clear(in);
		r = -ENOENT;
	}
	if (!r)
		memcpy(csum, v.csum, POHM_KV_CSUM);
	pohm_kv_val_free(&v);
	return r;
}

int ns_inode_put(struct pohm_ns *ns, const struct pohm_inode *in, const uint8_t *expect)
{
	struct pohm_buf b = POHM_BUF_INIT;
	int r = pohm_inode_encode(&b, in);

	if (!r)
		r = ns->kv.ops->put(ns->kv.ctx, in->hdr.key, b.p, b.len, expect);
	pohm_buf_free(&b);
	return r;
}

/* 1 when inode_peek has ino (a live inode), and it is a directory if dir. */
static int peeked(struct pohm_ns *ns, uint64_t ino, int dir)
{
	uint8_t csum[POHM_KV_CSUM];
	struct pohm_inode in;
	int r;

	if (inode_peek(ns, ino, &in, csum))
		return 0;
	r = !dir || S_ISDIR(in.mode);
	pohm_inode_clear(&in);
	return r;
}

int ns_dir_peeked(struct pohm_ns *ns, uint64_t dir)
{
	return peeked(ns, dir, 1);
}

int ns_inode_peeked(struct pohm_ns *ns, uint64_t ino)
{
	return peeked(ns, ino, 0);
}

int ns_inode_change_peeked(struct pohm_ns *ns, uint64_t ino,
			   int (*fn)(struct pohm_inode *in, void *arg), void *arg,
			   struct pohm_buf *b, uint8_t *csum)
{
	struct pohm_inode in;
	int r = inode_peek(ns, ino, &in, csum);

	if (r)
		return r;
	r = fn(&in, arg);
	if (!r) {
		in.version++;
		in.txid = ns_random(ns);
		r = pohm_inode_encode(b, &in);
	}
	pohm_inode_clear(&in);
	return r;
}

int ns_inode_update(struct pohm_ns *ns, uint64_t ino,
		    int (*fn)(struct pohm_inode *in, void *arg), void *arg,
		    struct pohm_inode *out)
{
	uint8_t csum[POHM_KV_CSUM];
	struct pohm_inode in;
	uint64_t txid = ns_random(ns);
	unsigned attempt;
	int r;

	/*
	 * Optimistic first (issue 23): the version this thread just read or
	 * wrote, without a read.  Only a change written by CAS against it
	 * counts; a lost CAS wrote nothing, and any other outcome of fn (stop,
	 * an error) may come from a stale copy: both go to the loop, which
	 * reads.
	 */
	if (!inode_peek(ns, ino, &in, csum)) {
		r = fn(&in, arg);
		if (r == 0) {
			in.version++;
			in.txid = txid;
			r = ns_inode_put(ns, &in, csum);
			if (!r) {
				if (out)
					*out = in;
				else
					pohm_inode_clear(&in);
				return 0;
			}
			if (r != -EAGAIN) {
				pohm_inode_clear(&in);
				return r;
			}
		}
		pohm_inode_clear(&in);
	}
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = ns_inode_get(ns, ino, &in, csum, 0);
		if (r)
			return r;
		/*
		 * A put that reported failure may still have been committed (a
		 * minority write spread by repair): the version says who wrote
		 * it, so a retry never applies the same change twice.
		 */
		if (attempt && in.txid == txid)
			r = 1;
		else
			r = fn(&in, arg);
		if (r == 0) {
			in.version++;
			in.txid = txid;
			r = ns_inode_put(ns, &in, csum);
			if (r == -EAGAIN) {
				pohm_inode_clear(&in);
				continue;
			}
		} else if (r == 1) {
			r = 0;
		}
		if (!r && out)
			*out = in;
		else
			pohm_inode_clear(&in);
		return r;
	}
	return -EBUSY;
}

int ns_nlink_fn(struct pohm_inode *in, void *arg)
{
	int delta = *(int *)arg;

	if (delta < 0 && in->nlink < (uint32_t)-delta)
		in->nlink = 0;
	else
		in->nlink = (uint32_t)((int)in->nlink + delta);
	ns_now_ts(&in->ctime);
	if (!in->nlink)
		in->hdr.flags |= POHM_OBJF_TOMBSTONE;
	return 0;
}

int ns_inode_nlink(struct pohm_ns *ns, uint64_t ino, int delta)
{
	return ns_inode_update(ns, ino, ns_nlink_fn, &delta, NULL);
}

int ns_inode_nlink_to(struct pohm_ns *ns, uint64_t ino, int delta, uint32_t *nlink)
{
	struct pohm_inode out;
	int r = ns_inode_update(ns, ino, ns_nlink_fn, &delta, &out);

	if (!r) {
		*nlink = out.nlink;
		pohm_inode_clear(&out);
	}
	return r;
}

/* ---------------------------------------------------------------- open/close */

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

int pohm_ns_open(struct pohm_ns **out, const struct pohm_kv *kv, const struct pohm_ns_opts *o)
{
	struct pohm_ns *ns = calloc(1, sizeof(*ns));
	int r;

	if (!ns)
		return -ENOMEM;
	ns->kv = *kv;
	snprintf(ns->fsid, sizeof(ns->fsid), "%s", o->fsid ? o->fsid : "pohmelfs");
	ns->bucket_max = o->bucket_max ? o->bucket_max : 256;
	ns->chunk_shift = o->chunk_shift ? o->chunk_shift : 20;
	if (ns->chunk_shift < 12 || ns->chunk_shift > 30)
		ns->chunk_shift = 20;
	ns->intent_timeout_ns = (o->intent_timeout_ms ? o->intent_timeout_ms : 10000) * 1000000ULL;
	/*
	 * 600 attempts span about 5 s (ns_backoff), longer than a CAS copy
	 * stays young (iocas.c cas_age_limit, at most 3 s): a lost write its
	 * dead writer left on a key's arbiter refuses every CAS until then,
	 * and the next read undoes it (RELIABILITY.md finding 12).  200
	 * spanned 1.3 s: a create right after such a death failed EBUSY.
	 */
	ns->max_retries = o->max_retries ? o->max_retries : 600;
	ns->http_compat = o->http_compat;
	ns->no_inline = o->no_inline;
	ns->map_cache = ns_map_cache_new();	/* NULL: no cache, still correct */
	pthread_mutex_init(&ns->rng_lock, NULL);
	pthread_mutex_init(&ns->hint_lock, NULL);
	ns->rng_pid = 0;	/* seeded by the first ns_random */

	pthread_mutex_init(&ns->root_lock, NULL);
	ns->store = *kv;
	ns->root_uid = o->root_uid;
	ns->root_gid = o->root_gid;
	ns->root_mode = o->root_mode;
	ns->root_failed = o->root_failed;
	ns->root_failed_arg = o->root_failed_arg;
	if (o->lazy_root) {
		ns_lazy_kv(ns);
		*out = ns;
		return 0;
	}
	r = ns_root_check(ns);
	if (r) {
		pohm_ns_close(ns);
		return r;
	}
	ns->root_ready = 1;
	*out = ns;
	return 0;
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

void pohm_ns_atfork_child(struct pohm_ns *ns)
{
	/* Held by another thread of the parent, they would stay held here.
	 * Each guards a few words, never across a call: new locks over the
	 * words as they were is safe (the generator reseeds by its pid check). */
	pthread_mutex_init(&ns->rng_lock, NULL);
	pthread_mutex_init(&ns->hint_lock, NULL);
	pthread_mutex_init(&ns->root_lock, NULL);
	ns_map_cache_atfork_child(ns->map_cache);
}

void pohm_ns_close(struct pohm_ns *ns)
{
	if (!ns)
		return;
	pthread_mutex_destroy(&ns->rng_lock);
	pthread_mutex_destroy(&ns->hint_lock);
	pthread_mutex_destroy(&ns->root_lock);
	ns_map_cache_free(ns->map_cache);
	free(ns);
}

/* ---------------------------------------------------------------- attributes */

int pohm_ns_getattr(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out)
{
	int r = ns_inode_get(ns, ino, out, NULL, 0);

	if (!r && (r = pohm_ns_map_load(ns, out)))	/* large files: the whole map */
		pohm_inode_clear(out);
	return r;
}

int pohm_ns_getattr_many(struct pohm_ns *ns, size_t n, const uint64_t *inos,
			 struct pohm_inode *out, int *st)
{
	struct pohm_kv_val *v = NULL;
	char (*keys)[POHM_KEY_MAX] = NULL;
	const char **kp = NULL;
	size_t i;
	int r = 0;

	for (i = 0; i < n; i++)
		memset(&out[i], 0, sizeof(out[i]));
	if (!n)
		return 0;
	if (!ns->kv.ops->get_n) {
		for (i = 0; i < n; i++)
			st[i] = pohm_ns_getattr(ns, inos[i], &out[i]);
		return 0;
	}
	v = calloc(n, sizeof(*v));
	keys = calloc(n, sizeof(*keys));
	kp = calloc(n, sizeof(*kp));
	if (!v || !keys || !kp) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		pohm_key_inode(keys[i], inos[i]);
		kp[i] = keys[i];
	}
	r = ns->kv.ops->get_n(ns->kv.ctx, n, kp, v, st);
	if (r)
		goto out;
	/* Each as ns_inode_get and pohm_ns_getattr judge it. */
	for (i = 0; i < n; i++) {
		struct pohm_inode *in = &out[i];

		if (st[i])
			continue;
		if (pohm_inode_decode(in, v[i].data, v[i].len)) {
			memset(in, 0, sizeof(*in));
			st[i] = -EIO;
		} else if (in->ino != inos[i]) {
			pohm_inode_clear(in);
			st[i] = -EIO;
		} else if (in->hdr.flags & POHM_OBJF_TOMBSTONE) {
			pohm_inode_clear(in);
			st[i] = -ENOENT;
		} else if ((st[i] = pohm_ns_map_load(ns, in))) {
			pohm_inode_clear(in);
		}
	}
out:
	if (v)
		for (i = 0; i < n; i++)
			pohm_kv_val_free(&v[i]);
	free(v);
	free(keys);
	free(kp);
	return r;
}

/*
 * The bucket a lookup of a name with hash h reads first (nsdir.c's depth
 * hint of dir, 0 when unknown): its key.
 */
static void first_bucket_key(struct pohm_ns *ns, uint64_t dir, uint64_t h, char *key,
			     unsigned *depth, uint32_t *index)
{
	unsigned slot = (unsigned)(dir % POHM_NS_HINTS);

	pthread_mutex_lock(&ns->hint_lock);
	*depth = ns->hint_dir[slot] == dir ? ns->hint_depth[slot] : 0;
	pthread_mutex_unlock(&ns->hint_lock);
	*index = *depth ? (uint32_t)(h & ((1ULL << *depth) - 1)) : 0;
	pohm_key_bucket(key, dir, *depth, *index);
}

/* Whether bucket bytes v say plainly that dir/name is ino: 0 or -ESTALE. */
static int bucket_says(const struct pohm_kv_val *v, uint64_t dir, unsigned depth, uint32_t index,
		       const char *name, uint64_t ino)
{
	struct pohm_bucket bk;
	int i, r = -ESTALE;

	if (pohm_bucket_decode(&bk, v->data, v->len))
		return -ESTALE;
	if (bk.dir == dir && bk.depth == depth && bk.index == index &&
	    bk.state != POHM_BUCKET_SPLIT) {
		i = pohm_bucket_find(&bk, name);
		if (i >= 0 && !bk.e[i].intent && bk.e[i].ino == ino)
			r = 0;
	}
	pohm_bucket_clear(&bk);
	return r;
}

int pohm_ns_lookup_check(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			 struct pohm_inode *out)
{
	struct pohm_kv_val v[2];
	char keys[2][POHM_KEY_MAX];
	const char *kp[2] = { keys[0], keys[1] };
	unsigned depth;
	uint32_t index;
	int st[2], r, i;

	memset(out, 0, sizeof(*out));
	memset(v, 0, sizeof(v));
	if (!ns->kv.ops->get_n || !strcmp(name, ".") || !strcmp(name, "..") || ns_check_name(name))
		return -ESTALE;
	first_bucket_key(ns, dir, pohm_name_hash(name), keys[0], &depth, &index);
	pohm_key_inode(keys[1], ino);
	r = ns->kv.ops->get_n(ns->kv.ctx, 2, kp, v, st);
	if (r)
		return r;
	/* Anything but the plain case (a split, an intent, another inode, a
	 * missing name or bucket) is the sequential lookup's to judge. */
	if (st[0] == -EIO || st[0] == -ETIMEDOUT)
		r = st[0];	/* the storage failed: a sequential lookup would wait again */
	else if (st[1] == -EIO || st[1] == -ETIMEDOUT)
		r = st[1];
	else
		r = st[0] || st[1] ? -ESTALE : bucket_says(&v[0], dir, depth, index, name, ino);
	if (!r && pohm_inode_decode(out, v[1].data, v[1].len))
		r = -EIO;
	if (!r && (out->ino != ino || (out->hdr.flags & POHM_OBJF_TOMBSTONE)))
		r = -ESTALE;
	if (!r)
		r = pohm_ns_map_load(ns, out);	/* as pohm_ns_getattr gives it */
	if (r)
		pohm_inode_clear(out);
	for (i = 0; i < 2; i++)
		pohm_kv_val_free(&v[i]);
	return r;
}

/* pohm_ns_read_along's inode and the handle it is for: thread-local, so no
 * lock; taken (and cleared) by the thread's next ns_dir_lookup_with. */
static __thread struct {
	const struct pohm_ns *ns;
	uint64_t ino;
} read_along;

void pohm_ns_read_along(struct pohm_ns *ns, uint64_t ino)
{
	read_along.ns = ino ? ns : NULL;
	read_along.ino = ino;
}

int ns_dir_lookup(struct pohm_ns *ns, uint64_t dir, const char *name, struct pohm_dentry *e)
{
	return ns_dir_lookup_with(ns, dir, name, 0, e);
}

/* What ns_dir_lookup_with says from dir's inode (vi, sti) and the name's
 * bucket at depth/index (vb, stb) as read. */
static int lookup_judge(uint64_t dir, const char *name, unsigned depth, uint32_t index,
			const struct pohm_kv_val *vi, int sti, const struct pohm_kv_val *vb, int stb,
			struct pohm_dentry *e)
{
	struct pohm_bucket bk;
	struct pohm_inode in;
	int r, i;

	/* The directory, as check_dir judges it. */
	r = sti;
	if (!r && pohm_inode_decode(&in, vi->data, vi->len))
		r = -EIO;
	if (!r) {
		if (in.ino != dir)
			r = -EIO;
		else if (in.hdr.flags & POHM_OBJF_TOMBSTONE)
			r = -ENOENT;
		else if (!S_ISDIR(in.mode))
			r = -ENOTDIR;
		pohm_inode_clear(&in);
	}
	if (r)
		return r;
	/* The name: only the plain cases; the rest is ns_entry_get's. */
	r = NS_NAME_UNKNOWN;
	if (stb == -ENOENT && !depth) {
		r = NS_NAME_ABSENT;	/* no bucket yet: an empty directory */
	} else if (!stb && !pohm_bucket_decode(&bk, vb->data, vb->len)) {
		if (bk.dir == dir && bk.depth == depth && bk.index == index &&
		    bk.state == POHM_BUCKET_NORMAL) {
			i = pohm_bucket_find(&bk, name);
			if (i < 0)
				r = NS_NAME_ABSENT;
			else if (!bk.e[i].intent)
				r = ns_entry_copy(e, &bk.e[i]);
		}
		pohm_bucket_clear(&bk);
	}
	return r;
}

int ns_dir_lookup_pair(struct pohm_ns *ns, uint64_t dir1, const char *name1,
		       struct pohm_dentry *e1, int *r1, uint64_t dir2, const char *name2,
		       struct pohm_dentry *e2, int *r2)
{
	struct pohm_kv_val v[4];
	char keys[4][POHM_KEY_MAX];
	const char *kp[4] = { keys[0], keys[1], keys[2], keys[3] };
	unsigned depth1, depth2;
	uint32_t index1, index2;
	int st[4], r, i;

	if (!ns->kv.ops->get_n || dir1 == dir2)
		return 1;
	pohm_key_inode(keys[0], dir1);
	first_bucket_key(ns, dir1, pohm_name_hash(name1), keys[1], &depth1, &index1);
	pohm_key_inode(keys[2], dir2);
	first_bucket_key(ns, dir2, pohm_name_hash(name2), keys[3], &depth2, &index2);
	memset(v, 0, sizeof(v));
	r = ns->kv.ops->get_n(ns->kv.ctx, 4, kp, v, st);
	if (r)
		return r;
	*r1 = lookup_judge(dir1, name1, depth1, index1, &v[0], st[0], &v[1], st[1], e1);
	*r2 = lookup_judge(dir2, name2, depth2, index2, &v[2], st[2], &v[3], st[3], e2);
	for (i = 0; i < 4; i++)
		pohm_kv_val_free(&v[i]);
	return 0;
}

int ns_dir_lookup_with(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t also,
		       struct pohm_dentry *e)
{
	struct pohm_kv_val v[3];
	struct pohm_inode in;
	char keys[3][POHM_KEY_MAX];
	const char *kp[3] = { keys[0], keys[1], keys[2] };
	unsigned depth;
	uint32_t index;
	int st[3], r, i;
	size_t n;

	if (!also && read_along.ns == ns) {
		also = read_along.ino;	/* the caller's (pohm_ns_read_along) */
		read_along.ns = NULL;
	}
	n = also && also != dir ? 3 : 2;
	if (!ns->kv.ops->get_n)
		goto sequential;
	pohm_key_inode(keys[0], dir);
	first_bucket_key(ns, dir, pohm_name_hash(name), keys[1], &depth, &index);
	/* Read along only: the read leaves it for ns_peek (a CAS base), and
	 * what it says is not looked at here. */
	if (n == 3)
		pohm_key_inode(keys[2], also);
	memset(v, 0, sizeof(v));
	r = ns->kv.ops->get_n(ns->kv.ctx, n, kp, v, st);
	if (r)
		return r;
	r = lookup_judge(dir, name, depth, index, &v[0], st[0], &v[1], st[1], e);
	for (i = 0; i < (int)n; i++)
		pohm_kv_val_free(&v[i]);
	return r;
sequential:
	r = ns_inode_get(ns, dir, &in, NULL, 0);
	if (r)
		return r;
	r = S_ISDIR(in.mode) ? NS_NAME_UNKNOWN : -ENOTDIR;
	pohm_inode_clear(&in);
	return r;
}

static void truncate_map(struct pohm_inode *in, uint64_t size)
{
	uint64_t cs = pohm_inode_chunk_size(in);
	uint64_t keep = (size + cs - 1) / cs;

	if (keep < in->nchunks)
		in->nchunks = (uint32_t)keep;
	/* A kept last chunk longer than the new size: its tail is cut on read. */
	if (keep && keep == in->nchunks && in->chunks[keep - 1].len > size - (keep - 1) * cs) {
		in->chunks[keep - 1].len = (uint32_t)(size - (keep - 1) * cs);
		/* Inline data's checksum is of the bytes it keeps (decision 0023). */
		if (pohm_inode_is_inline(in) && in->idata)
			pohm_sha512(in->idata, in->chunks[0].len, in->chunks[0].csum);
	}
}

static int ts_cmp(struct pohm_ts a, struct pohm_ts b)
{
	if (a.sec != b.sec)
		return a.sec < b.sec ? -1 : 1;
	return a.nsec < b.nsec ? -1 : a.nsec > b.nsec;
}

/* Is the based time `bit` of sa to be left as stored (cur): moved since
 * its base and newer than the value sent?  (struct pohm_setattr.based) */
static int setattr_stale_time(const struct pohm_setattr *sa, unsigned bit, struct pohm_ts cur,
			      struct pohm_ts base, struct pohm_ts val)
{
	return (sa->mask & sa->based & bit) && ts_cmp(cur, base) && ts_cmp(cur, val) > 0;
}

static int setattr_fn(struct pohm_inode *in, void *arg)
{
	const struct pohm_setattr *sa = arg;
	unsigned mask = sa->mask;

	if (setattr_stale_time(sa, POHM_SET_ATIME, in->atime, sa->base_atime, sa->atime))
		mask &= ~(unsigned)POHM_SET_ATIME;
	if (setattr_stale_time(sa, POHM_SET_MTIME, in->mtime, sa->base_mtime, sa->mtime))
		mask &= ~(unsigned)POHM_SET_MTIME;
	if (sa->based && !mask)
		return 1;	/* nothing left: the stored inode stands */
	if (mask & POHM_SET_SIZE) {
		if (!S_ISREG(in->mode))
			return S_ISDIR(in->mode) ? -EISDIR : -EINVAL;
		if (sa->size < in->size) {
			/*
			 * Shrinking keeps the chunks' checksums valid only if no
			 * kept chunk is cut: a cut chunk must be rewritten by a
			 * commit.  Here the cut chunk keeps its object and the
			 * map records the shorter length; the reader verifies
			 * the checksum over the stored bytes and returns only
			 * the prefix.
			 */
			truncate_map(in, sa->size);
		}
		in->size = sa->size;
		in->dversion++;
		ns_now_ts(&in->mtime);
	}
	if (mask & POHM_SET_MODE)
		in->mode = (in->mode & S_IFMT) | (sa->mode & 07777);
	if (mask & POHM_SET_UID)
		in->uid = sa->uid;
	if (mask & POHM_SET_GID)
		in->gid = sa->gid;
	if (mask & POHM_SET_ATIME)
		in->atime = sa->atime;
	if (mask & POHM_SET_MTIME)
		in->mtime = sa->mtime;
	if (mask & POHM_SET_CTIME)
		in->ctime = sa->ctime;
	else
		ns_now_ts(&in->ctime);
	return 0;
}

int pohm_ns_setattr(struct pohm_ns *ns, uint64_t ino, const struct pohm_setattr *sa,
		    struct pohm_inode *out)
{
	int r = ns_inode_update(ns, ino, setattr_fn, (void *)sa, out);

	if (!r)
		ns_http_setattr(ns, ino, sa->mask);
	if (!r && out && (r = pohm_ns_map_load(ns, out)))	/* large files: the whole map */
		pohm_inode_clear(out);
	return r;
}

/* ---------------------------------------------------------------- xattrs */

struct xattr_op {
	const char *name;
	const void *value;
	size_t len;
	int flags;
	int remove;
};

static int xattr_fn(struct pohm_inode *in, void *arg)
{
	const struct xattr_op *op = arg;
	struct pohm_xattr *x;
	uint32_t i;

	for (i = 0; i < in->nxattr; i++)
		if (!strcmp(in->xattr[i].name, op->name))
			break;
	if (op->remove) {
		if (i == in->nxattr)
			return -ENODATA;
		free(in->xattr[i].name);
		free(in->xattr[i].value);
		memmove(&in->xattr[i], &in->xattr[i + 1], (in->nxattr - i - 1) * sizeof(*in->xattr));
		in->nxattr--;
		ns_now_ts(&in->ctime);
		return 0;
	}
	if (i < in->nxattr && (op->flags & POHM_XATTR_CREATE))
		return -EEXIST;
	if (i == in->nxattr && (op->flags & POHM_XATTR_REPLACE))
		return -ENODATA;
	if (i == in->nxattr) {
		if (in->nxattr >= 1024)
			return -ENOSPC;
		x = realloc(in->xattr, (in->nxattr + 1) * sizeof(*x));
		if (!x)
			return -ENOMEM;
		in->xattr = x;
		x = &in->xattr[in->nxattr];
		memset(x, 0, sizeof(*x));
		x->name = malloc(strlen(op->name) + 1);
		if (!x->name)
			return -ENOMEM;
		strcpy(x->name, op->name);
		in->nxattr++;
	} else {
		x = &in->xattr[i];
		free(x->value);
		x->value = NULL;
	}
	x->value = malloc(op->len + 1);
	if (!x->value)
		return -ENOMEM;
	memcpy(x->value, op->value, op->len);
	x->len = (uint32_t)op->len;
	ns_now_ts(&in->ctime);
	return 0;
}

int pohm_ns_setxattr(struct pohm_ns *ns, uint64_t ino, const char *name, const void *value,
		     size_t len, int flags)
{
	struct xattr_op op = { name, value, len, flags, 0 };

	if (!*name || strlen(name) > POHM_NAME_MAX)
		return -ERANGE;
	if (len > 65536)
		return -E2BIG;
	return ns_inode_update(ns, ino, xattr_fn, &op, NULL);
}

int pohm_ns_removexattr(struct pohm_ns *ns, uint64_t ino, const char *name)
{
	struct xattr_op op = { name, NULL, 0, 0, 1 };

	return ns_inode_update(ns, ino, xattr_fn, &op, NULL);
}

int pohm_ns_getxattr(struct pohm_ns *ns, uint64_t ino, const char *name, void *buf,
		     size_t size)
{
	struct pohm_inode in;
	uint32_t i;
	int r = ns_inode_get(ns, ino, &in, NULL, 0);

	if (r)
		return r;
	r = -ENODATA;
	for (i = 0; i < in.nxattr; i++) {
		if (strcmp(in.xattr[i].name, name))
			continue;
		r = (int)in.xattr[i].len;
		if (size && size < in.xattr[i].len)
			r = -ERANGE;
		else if (size)
			memcpy(buf, in.xattr[i].value, in.xattr[i].len);
		break;
	}
	pohm_inode_clear(&in);
	return r;
}

int pohm_ns_listxattr(struct pohm_ns *ns, uint64_t ino, char *buf, size_t size)
{
	struct pohm_inode in;
	size_t need = 0;
	uint32_t i;
	int r = ns_inode_get(ns, ino, &in, NULL, 0);

	if (r)
		return r;
	for (i = 0; i < in.nxattr; i++)
		need += strlen(in.xattr[i].name) + 1;
	if (size && size < need) {
		r = -ERANGE;
	} else {
		if (size) {
			char *p = buf;

			for (i = 0; i < in.nxattr; i++) {
				strcpy(p, in.xattr[i].name);
				p += strlen(p) + 1;
			}
		}
		r = (int)need;
	}
	pohm_inode_clear(&in);
	return r;
}

/* ---------------------------------------------------------------- resolve */

/*
 * pohm_ns_resolve's buffers, on the heap: a host thread's stack may be
 * small.  buf and rest hold cap bytes each, a path (and a link's
 * continuation) of up to cap / 2 - 1: 8 KiB for the usual path, twice
 * POHM_REL_CAP for one of PATH_MAX bytes or more (issue 19 item 10).
 */
struct resolve_work {
	uint64_t stack[256];
	size_t cap;
	char *buf, *rest;
	char mem[];
};

static int resolve_in(struct pohm_ns *ns, const char *path, int follow, uint64_t *ino,
		      struct resolve_work *w)
{
	char *buf = w->buf, name[POHM_NAME_MAX + 1];
	uint64_t cur = POHM_ROOT_INO, *stack = w->stack;
	unsigned depth = 0, links = 0;
	const char *p;
	int r;

	if (strlen(path) >= w->cap / 2)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	p = buf;
	for (;;) {
		const char *end;
		size_t n;
		uint64_t next;
		uint8_t type;
		struct pohm_inode in;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n > POHM_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (!depth)
				return -EXDEV;	/* leaves the fsid */
			cur = stack[--depth];
			continue;
		}
		r = pohm_ns_lookup(ns, cur, name, &next, &type);
		if (r)
			return r;
		if (type == DT_LNK && (*p || follow)) {
			char *rest = w->rest;

			if (++links > 40)
				return -ELOOP;
			r = ns_inode_get(ns, next, &in, NULL, 0);
			if (r)
				return r;
			if (!in.target) {
				pohm_inode_clear(&in);
				return -EIO;
			}
			if (strlen(in.target) + strlen(p) + 2 > w->cap / 2) {
				pohm_inode_clear(&in);
				return -ENAMETOOLONG;
			}
			snprintf(rest, w->cap, "%s%s%s", in.target, *p ? "/" : "", p);
			if (in.target[0] == '/') {
				pohm_inode_clear(&in);
				return -EXDEV;	/* absolute targets are resolved by the caller */
			}
			pohm_inode_clear(&in);
			strcpy(buf, rest);
			p = buf;
			continue;
		}
		if (*p && type != DT_DIR && type != DT_UNKNOWN)
			return -ENOTDIR;
		if (depth == sizeof(w->stack) / sizeof(w->stack[0]))
			return -ENAMETOOLONG;
		stack[depth++] = cur;
		cur = next;
	}
	*ino = cur;
	return 0;
}

int pohm_ns_resolve(struct pohm_ns *ns, const char *path, int follow, uint64_t *ino)
{
	size_t cap = strnlen(path, 4096) < 4096 ? 8192 : 2 * (size_t)POHM_REL_CAP;
	struct resolve_work *w = malloc(sizeof(*w) + 2 * cap);
	int r;

	if (!w)
		return -ENOMEM;
	w->cap = cap;
	w->buf = w->mem;
	w->rest = w->mem + cap;
	r = resolve_in(ns, path, follow, ino, w);
	free(w);
	return r;
}
