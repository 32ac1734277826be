/*
 * nsrepair.c — the namespace's repair entry points for fsck (ns.h "repair
 * entry points").  Each reuses the code path a client takes when it meets
 * the same state (intents, splits, seals: nsdir.c), so fsck completes an
 * operation exactly as the next client would; the others are the smallest
 * CAS changes that make the stored counts agree with the names.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_int.h"

uint64_t pohm_ns_intent_timeout_ns(const struct pohm_ns *ns)
{
	return ns->intent_timeout_ns;
}

int pohm_ns_settle_entry(struct pohm_ns *ns, uint64_t dir, const char *name)
{
	struct ns_bucket_ref ref;
	unsigned attempt;
	int i, r;

	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = ns_bucket_locate(ns, dir, name, &ref);
		if (r)
			return r;
		i = pohm_bucket_find(&ref.bk, name);
		if (i < 0 || NS_PLAIN(&ref.bk.e[i])) {
			ns_bucket_release(&ref);
			return 0;	/* no intent (any more; a mark is none) */
		}
		r = ns_intent_resolve(ns, dir, &ref, i);
		ns_bucket_release(&ref);
		if (r == 1)
			return -EINPROGRESS;
		if (r < 0)
			return r;
	}
	return -EBUSY;
}

int pohm_ns_settle_bucket(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index)
{
	struct ns_bucket_ref ref;
	unsigned attempt;
	int r, sealed;

	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = ns_bucket_read_at(ns, dir, depth, index, &ref);
		if (r)
			return r;
		if (ref.bk.state != POHM_BUCKET_SPLITTING && ref.bk.state != POHM_BUCKET_SEALED &&
		    ref.bk.state != POHM_BUCKET_SEALED_WITH) {
			ns_bucket_release(&ref);
			return 0;
		}
		sealed = ref.bk.state != POHM_BUCKET_SPLITTING;
		r = ns_bucket_prepare(ns, dir, &ref);
		ns_bucket_release(&ref);
		if (r == -ENOENT && sealed)
			return 0;	/* the rmdir committed: the seal stays with its directory
					 * (a live, named one is unsealed: seal_resolve) */
		if (r != -EAGAIN)
			return r;
	}
	return -EBUSY;
}

int pohm_ns_clear_stale_lease(struct pohm_ns *ns)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_lease l;
	int r;

	r = ns->kv.ops->get(ns->kv.ctx, "l:rename", &v);
	if (r)
		return r == -ENOENT ? 0 : r;
	r = pohm_lease_decode(&l, v.data, v.len);
	if (r) {
		r = -EIO;
		goto out;
	}
	if (!l.txid || l.expires > ns_now_ns())
		goto out;	/* free, or held by a live renamer */
	l.txid = 0;
	l.expires = ns_now_ns();	/* free; unique bytes (see ns_bucket_store) */
	r = pohm_lease_encode(&b, &l);
	if (!r)
		r = ns->kv.ops->put(ns->kv.ctx, "l:rename", b.p, b.len, v.csum);
	if (!r)
		r = 1;
out:
	pohm_buf_free(&b);
	pohm_kv_val_free(&v);
	return r;
}

int pohm_ns_drop_entry(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino)
{
	int r = ns_entry_remove(ns, dir, name, ino);

	return r == -ESTALE ? 0 : r;
}

static int parent_set_fn(struct pohm_inode *in, void *arg)
{
	uint64_t parent = *(uint64_t *)arg;

	if (in->hdr.parent == parent)
		return 1;
	in->hdr.parent = parent;
	ns_now_ts(&in->ctime);
	return 0;
}

int pohm_ns_relink(struct pohm_ns *ns, uint64_t ino, uint64_t dir, const char *name)
{
	struct pohm_dentry e = { 0 };
	struct pohm_inode in;
	int r;

	r = ns_check_name(name);
	if (r)
		return r;
	r = ns_inode_get(ns, ino, &in, NULL, 0);
	if (r)
		return r;
	e.type = ns_dtype(in.mode);
	pohm_inode_clear(&in);
	e.name = (char *)name;
	e.ino = ino;
	e.txid = ns_random(ns);
	r = ns_entry_insert(ns, dir, &e, NULL);
	if (r == -NS_EMAYBE)
		return -EIO;
	if (!r && e.type == DT_DIR) {
		r = ns_inode_update(ns, ino, parent_set_fn, &dir, NULL);
		if (!r)
			r = ns_inode_nlink(ns, dir, +1);
	}
	return r;
}

struct links {
	uint32_t nlink;
	uint64_t parent;
};

static int links_fn(struct pohm_inode *in, void *arg)
{
	const struct links *l = arg;

	if (in->nlink == l->nlink && (!l->parent || in->hdr.parent == l->parent) &&
	    !(in->hdr.flags & POHM_OBJF_UNLINKED))
		return 1;
	in->nlink = l->nlink;
	in->hdr.flags &= (uint16_t)~POHM_OBJF_UNLINKED;	/* names found: not garbage */
	if (l->parent)
		in->hdr.parent = l->parent;
	ns_now_ts(&in->ctime);
	return 0;
}

int pohm_ns_fix_links(struct pohm_ns *ns, uint64_t ino, uint32_t nlink, uint64_t parent)
{
	struct links l = { nlink, parent };

	if (!nlink)
		return -EINVAL;		/* no names: pohm_ns_tombstone or pohm_ns_relink */
	return ns_inode_update(ns, ino, links_fn, &l, NULL);
}

static int tomb_set_fn(struct pohm_inode *in, void *arg)
{
	in->nlink = 0;
	in->hdr.flags |= POHM_OBJF_TOMBSTONE;
	ns_now_ts(&in->ctime);
	return 0;
}

int pohm_ns_tombstone(struct pohm_ns *ns, uint64_t ino)
{
	if (ino == POHM_ROOT_INO)
		return -EPERM;
	return ns_inode_update(ns, ino, tomb_set_fn, NULL, NULL);
}
