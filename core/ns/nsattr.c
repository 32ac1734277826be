/*
 * nsattr.c — attributes and directory lookups: getattr (with the whole map
 * of a large file), the batched getattr, lookup_check, the create's first
 * look at a directory (ns_dir_lookup and its pair and with forms), and
 * setattr.  Above nsmap.c and nsdir.c, below nsops.c.  (Moved out of ns.c
 * in session 13, issue 20.)
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

/* ---------------------------------------------------------------- attributes */

static void first_bucket_key(struct pohm_ns *ns, uint64_t dir, uint64_t h, char *key,
			     unsigned *depth, uint32_t *index);

int pohm_ns_getattr(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out)
{
	int r = ns_inode_get(ns, ino, out, NULL, 0);

	if (!r && (r = pohm_ns_map_load(ns, out)))	/* large files: the whole map */
		pohm_inode_clear(out);
	return r;
}

int pohm_ns_getattr_dir(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out)
{
	struct pohm_kv_val v[2];
	char keys[2][POHM_KEY_MAX];
	const char *kp[2] = { keys[0], keys[1] };
	unsigned depth;
	uint32_t index;
	int st[2], r, i;

	if (!ns->kv.ops->get_n)
		return pohm_ns_getattr(ns, ino, out);
	memset(out, 0, sizeof(*out));
	memset(v, 0, sizeof(v));
	pohm_key_inode(keys[0], ino);
	/* Read along only: the read leaves it for ns_peek (a guess for the
	 * next lookup in it, pohm_ns_lookup_guess); not looked at here. */
	first_bucket_key(ns, ino, 0, keys[1], &depth, &index);
	r = ns->kv.ops->get_n(ns->kv.ctx, 2, kp, v, st);
	if (r)
		return r;
	r = st[0];
	if (!r && pohm_inode_decode(out, v[0].data, v[0].len)) {
		memset(out, 0, sizeof(*out));
		pohm_warn("inode %s does not decode: damaged, or written by a newer client",
			  keys[0]);
		r = -EIO;
	} else if (!r && out->ino != ino) {
		pohm_inode_clear(out);
		r = -EIO;
	} else if (!r && (out->hdr.flags & POHM_OBJF_TOMBSTONE)) {
		pohm_inode_clear(out);
		r = -ENOENT;
	} else if (!r && (r = pohm_ns_map_load(ns, out))) {
		pohm_inode_clear(out);
	}
	for (i = 0; i < 2; i++)
		pohm_kv_val_free(&v[i]);
	return r;
}

int pohm_ns_getattr_many(struct pohm_ns *ns, size_t n, const uint64_t *inos,
			 const uint8_t *head, struct pohm_inode *out, int *st)
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
		return 0;	/* all of each: more than head asks */
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
	if (!r)
		ns_inodes_take(ns, n, inos, head, v, out, st);
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
	/* Only a NORMAL bucket is current: a SPLITTING one's snapshot goes
	 * stale once its children exist (and stays so if its splitter died),
	 * a SPLIT or SEALED one's never names anything. */
	if (bk.dir == dir && bk.depth == depth && bk.index == index &&
	    bk.state == POHM_BUCKET_NORMAL) {
		i = pohm_bucket_find(&bk, name);
		if (i >= 0 && NS_PLAIN(&bk.e[i]) && bk.e[i].ino == ino)
			r = 0;
	}
	pohm_bucket_clear(&bk);
	return r;
}

/* pohm_ns_lookup_check, and with isdir ino's first bucket read along (a
 * guess for the next lookup in it: pohm_ns_getattr_dir). */
static int lookup_check(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			int isdir, struct pohm_inode *out)
{
	struct pohm_kv_val v[3];
	char keys[3][POHM_KEY_MAX];
	const char *kp[3] = { keys[0], keys[1], keys[2] };
	unsigned depth, d2;
	uint32_t index, i2;
	int st[3], r, i, n = isdir ? 3 : 2;

	memset(out, 0, sizeof(*out));
	memset(v, 0, sizeof(v));
	if (!ns->kv.ops->get_n || !strcmp(name, ".") || !strcmp(name, "..") || ns_check_name(name))
		return -ESTALE;
	first_bucket_key(ns, dir, pohm_name_hash(name), keys[0], &depth, &index);
	pohm_key_inode(keys[1], ino);
	if (isdir)
		first_bucket_key(ns, ino, 0, keys[2], &d2, &i2);	/* read along only */
	r = ns->kv.ops->get_n(ns->kv.ctx, (size_t)n, kp, v, st);
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
	for (i = 0; i < n; i++)
		pohm_kv_val_free(&v[i]);
	return r;
}

int pohm_ns_lookup_check(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			 struct pohm_inode *out)
{
	return lookup_check(ns, dir, name, ino, 0, out);
}

int pohm_ns_lookup_check_dir(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			     struct pohm_inode *out)
{
	return lookup_check(ns, dir, name, ino, 1, out);
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
			else if (NS_PLAIN(&bk.e[i]))
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

int ns_setattr_apply(struct pohm_inode *in, const struct pohm_setattr *sa)
{
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

static int setattr_fn(struct pohm_inode *in, void *arg)
{
	return ns_setattr_apply(in, arg);
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
