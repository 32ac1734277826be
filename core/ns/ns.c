/*
 * ns.c — the bottom of the namespace: helpers, inodes and xattrs.
 *
 * Sections: helpers (random, time, backoff) · inodes (get/put/CAS loop,
 * nlink) · xattrs.  Calls no other file of core/ns (issue 20, session 13:
 * open/close went to nsopen.c, the root check to nslazy.c, getattr,
 * setattr and the directory lookups to nsattr.c, resolve to nsresolve.c;
 * ns_int.h has the order of the files).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ns_int.h"
#include "sys.h"

/* ---------------------------------------------------------------- helpers */

uint64_t ns_random(struct pohm_ns *ns)
{
	pid_t pid = pohm_sys_pid();	/* no syscall: sys.h */
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
	if (r == -ENOENT)
		r = ns_base_peek(ns, key, v);	/* another process's (decision 0048) */
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

int pohm_ns_getattr_base(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out)
{
	uint8_t csum[POHM_KV_CSUM];

	return inode_peek(ns, ino, out, csum);
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

	/*
	 * A link keeps an UNLINKED mark (decision 0049, s14): on a marked
	 * inode nlink may count one name too many (a one-wait unlink took its
	 * last name and left nlink 1), so the mark must outlive the + 1: the
	 * new name's unlink then leaves it marked (garbage for fsck) rather
	 * than unmarked with no name (a lost file).  fsck's link repair,
	 * which counts the names, is what clears it.
	 */
	if (delta < 0 && in->nlink < (uint32_t)-delta)
		in->nlink = 0;
	else
		in->nlink = (uint32_t)((int)in->nlink + delta);
	ns_now_ts(&in->ctime);
	if (!in->nlink)
		in->hdr.flags |= POHM_OBJF_TOMBSTONE;
	return 0;
}

int ns_tomb_fn(struct pohm_inode *in, void *arg)
{
	(void)arg;
	in->nlink = 0;
	in->hdr.flags |= POHM_OBJF_TOMBSTONE;
	ns_now_ts(&in->ctime);
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
