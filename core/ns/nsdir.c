/*
 * nsdir.c — directories as hashed buckets (DESIGN.md §3).
 *
 * A directory's entries live in buckets b:<dir>:<depth>:<index>.  The name
 * hash h picks index = h mod 2^depth.  A full bucket splits: it is first
 * CAS'd to SPLITTING (sealed for changes), its two children at depth+1 are
 * created (create-if-absent, so any number of helpers may race), then it is
 * CAS'd to SPLIT and emptied.  A reader at depth d that finds the key
 * missing goes one level up; one that finds SPLIT goes one level down, and
 * so does one that finds SPLITTING once the name's child exists (writers may
 * already be changing the child; the sealed entries are current only while
 * it is absent); a per-handle hint remembers the depth, so a lookup is one
 * read.  Children
 * always exist before their parent says SPLIT, so the walk cannot oscillate.
 *
 * rmdir seals empty buckets (SEALED, with the rmdir's txid and entry); a
 * writer that meets a seal asks the parent entry whether that rmdir is still
 * running (wait), committed (-ENOENT) or aborted/stale (unseal and go on).
 * Before undoing half of a two-wait rmdir (decision 0058) it fences the
 * other half's target (a rewrite with a fresh tag), so that half, still in
 * flight, cannot land after.
 *
 * Sections: locate/store · split · seals · intents · entries · walk.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"
#include "ns_http.h"
#include "ns_int.h"
#include "wire.h"

/* ---------------------------------------------------------------- locate/store */

static uint32_t index_at(uint64_t h, unsigned depth)
{
	return depth ? (uint32_t)(h & ((1ULL << depth) - 1)) : 0;
}

static void empty_bucket(struct pohm_ns *ns, struct ns_bucket_ref *ref, uint64_t dir,
			 unsigned depth, uint32_t index)
{
	memset(&ref->bk, 0, sizeof(ref->bk));
	pohm_key_bucket(ref->key, dir, depth, index);
	ns_hdr(ns, &ref->bk.hdr, POHM_OBJ_BUCKET, dir, ref->key);
	ref->bk.dir = dir;
	ref->bk.depth = (uint8_t)depth;
	ref->bk.index = index;
	ref->absent = 1;
	memset(ref->csum, 0, sizeof(ref->csum));
}

/* Bucket (dir, depth, index) from its value v into ref (ref->key set): 0,
 * -EIO.  v is released. */
static int bucket_from(struct pohm_kv_val *v, uint64_t dir, unsigned depth, uint32_t index,
		       struct ns_bucket_ref *ref)
{
	int r = pohm_bucket_decode(&ref->bk, v->data, v->len);

	if (!r && (ref->bk.dir != dir || ref->bk.depth != depth || ref->bk.index != index)) {
		pohm_bucket_clear(&ref->bk);
		r = -EPROTO;
	}
	if (r) {
		r = -EIO;
	} else {
		memcpy(ref->csum, v->csum, sizeof(ref->csum));
		ref->absent = 0;
	}
	pohm_kv_val_free(v);
	return r;
}

/* Read bucket (dir, depth, index) into ref: 0, -ENOENT, -EIO. */
static int bucket_read(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index,
		       struct ns_bucket_ref *ref)
{
	struct pohm_kv_val v = { 0 };
	int r;

	pohm_key_bucket(ref->key, dir, depth, index);
	r = ns->kv.ops->get(ns->kv.ctx, ref->key, &v);
	if (r)
		return r;
	return bucket_from(&v, dir, depth, index, ref);
}

int ns_bucket_read_at(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index,
		      struct ns_bucket_ref *ref)
{
	return bucket_read(ns, dir, depth, index, ref);
}

/* The depth hint of dir (0 if unknown); a lossy direct-mapped cache. */
static unsigned hint_get(struct pohm_ns *ns, uint64_t dir)
{
	unsigned slot = (unsigned)(dir % POHM_NS_HINTS), d = 0;

	pthread_mutex_lock(&ns->hint_lock);
	if (ns->hint_dir[slot] == dir)
		d = ns->hint_depth[slot];
	pthread_mutex_unlock(&ns->hint_lock);
	return d;
}

static void hint_set(struct pohm_ns *ns, uint64_t dir, unsigned depth)
{
	unsigned slot = (unsigned)(dir % POHM_NS_HINTS);

	pthread_mutex_lock(&ns->hint_lock);
	ns->hint_dir[slot] = dir;
	ns->hint_depth[slot] = (uint8_t)depth;
	pthread_mutex_unlock(&ns->hint_lock);
}

/* Does bucket (dir, depth, index) exist? 1, 0, -errno. */
static int child_present(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index)
{
	struct pohm_kv_val v = { 0 };
	char key[POHM_KEY_MAX];
	int r;

	pohm_key_bucket(key, dir, depth, index);
	r = ns->kv.ops->get(ns->kv.ctx, key, &v);
	pohm_kv_val_free(&v);
	return r == -ENOENT ? 0 : (r ? r : 1);
}

int ns_bucket_locate(struct pohm_ns *ns, uint64_t dir, const char *name,
		     struct ns_bucket_ref *ref)
{
	uint64_t h = pohm_name_hash(name);
	unsigned depth = hint_get(ns, dir), steps;
	int r;

	for (steps = 0; steps < 80; steps++) {
		r = bucket_read(ns, dir, depth, index_at(h, depth), ref);
		if (r == -ENOENT) {
			if (!depth) {
				empty_bucket(ns, ref, dir, 0, 0);
				return 0;
			}
			depth--;
			continue;
		}
		if (r)
			return r;
		if (ref->bk.state == POHM_BUCKET_SPLIT && depth < 40) {
			pohm_bucket_clear(&ref->bk);
			depth++;
			continue;
		}
		if (ref->bk.state == POHM_BUCKET_SPLITTING && depth < 40) {
			/*
			 * Once name's child exists it, not this sealed snapshot,
			 * holds name: writers that reach the child (by the hint,
			 * or after helping the split) change it while this bucket
			 * still says SPLITTING.  A child still absent means the
			 * snapshot is current for name.
			 */
			r = child_present(ns, dir, depth + 1, index_at(h, depth + 1));
			if (r < 0) {
				pohm_bucket_clear(&ref->bk);
				return r;
			}
			if (r) {
				pohm_bucket_clear(&ref->bk);
				depth++;
				continue;
			}
		}
		hint_set(ns, dir, depth);
		return 0;
	}
	return -EIO;
}

int ns_bucket_store(struct pohm_ns *ns, struct ns_bucket_ref *ref)
{
	struct pohm_buf b = POHM_BUF_INIT;
	int r;

	/*
	 * A version is its bytes (decision 0006), so no two writes may store
	 * the same bytes: create then unlink of one name would bring back
	 * the bucket's bytes from before the create, and a writer still
	 * holding that old read would CAS over the newer history (finding
	 * 15: its roll-forward then restored the unlinked name).  A NORMAL
	 * bucket's txid is a fresh tag on every rewrite.  A create-if-absent
	 * (the first bucket, a split's children, which racing helpers build
	 * from one snapshot and must build identically) keeps its own.
	 */
	if (!ref->absent && ref->bk.state == POHM_BUCKET_NORMAL)
		ref->bk.txid = ns_random(ns);
	r = pohm_bucket_encode(&b, &ref->bk);

	if (!r)
		r = ns->kv.ops->put(ns->kv.ctx, ref->key, b.p, b.len,
				    ref->absent ? POHM_KV_ABSENT : ref->csum);
	if (r == -EEXIST)
		r = -EAGAIN;
	if (!r) {
		pohm_sha512(b.p, b.len, ref->csum);
		ref->absent = 0;
	}
	pohm_buf_free(&b);
	return r;
}

int ns_bucket_store_deferred(struct pohm_ns *ns, struct ns_bucket_ref *ref,
			     void (*done)(void *arg, int st), void *arg)
{
	struct pohm_buf b = POHM_BUF_INIT;
	int r;

	if (!ns->kv.ops->put_deferred || ref->absent || ref->bk.state != POHM_BUCKET_NORMAL)
		return 1;
	ref->bk.txid = ns_random(ns);	/* a fresh tag (ns_bucket_store) */
	r = pohm_bucket_encode(&b, &ref->bk);
	if (!r)
		r = ns->kv.ops->put_deferred(ns->kv.ctx, ref->key, b.p, b.len, ref->csum, done,
					     arg);
	pohm_buf_free(&b);
	return r == -EAGAIN ? 1 : r;
}

void ns_bucket_release(struct ns_bucket_ref *ref)
{
	pohm_bucket_clear(&ref->bk);
}

/* ---------------------------------------------------------------- split */

/*
 * Create a split child (create-if-absent).  Losing means another helper's
 * create won, or that all of them lost (each rolled back where it landed):
 * only a read tells, and the parent may say SPLIT only once the child is
 * really there.
 */
static int child_create(struct pohm_ns *ns, struct ns_bucket_ref *child)
{
	unsigned attempt;
	int r;

	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		struct pohm_kv_val v = { 0 };

		ns_backoff(ns, attempt);
		r = ns_bucket_store(ns, child);
		if (r != -EAGAIN)
			return r;
		r = ns->kv.ops->get(ns->kv.ctx, child->key, &v);
		pohm_kv_val_free(&v);
		if (r != -ENOENT)
			return r;	/* 0: another helper created it from the same entries */
		child->absent = 1;
	}
	return -EBUSY;
}

/* Finish a split whose bucket is SPLITTING: children, then SPLIT. */
static int split_finish(struct pohm_ns *ns, struct ns_bucket_ref *ref)
{
	struct ns_bucket_ref child[2];
	unsigned d = ref->bk.depth, c;
	uint32_t i;
	int r = 0;

	for (c = 0; c < 2; c++)
		empty_bucket(ns, &child[c], ref->bk.dir, d + 1,
			     ref->bk.index | (c ? 1u << d : 0));
	for (i = 0; i < ref->bk.n && !r; i++) {
		c = (unsigned)((pohm_name_hash(ref->bk.e[i].name) >> d) & 1);
		r = pohm_bucket_add(&child[c].bk, &ref->bk.e[i]);
	}
	for (c = 0; c < 2 && !r; c++)
		r = child_create(ns, &child[c]);
	for (c = 0; c < 2; c++)
		pohm_bucket_clear(&child[c].bk);
	if (r)
		return r;
	for (i = ref->bk.n; i > 0; i--)
		pohm_bucket_remove(&ref->bk, i - 1);
	ref->bk.state = POHM_BUCKET_SPLIT;
	r = ns_bucket_store(ns, ref);
	return r == -EAGAIN ? 0 : r;
}

int ns_bucket_maybe_split(struct pohm_ns *ns, struct ns_bucket_ref *ref)
{
	int r;

	if (ref->bk.state != POHM_BUCKET_NORMAL || ref->bk.n < ns->bucket_max ||
	    ref->bk.depth >= 40 || ref->absent)
		return 0;
	ref->bk.state = POHM_BUCKET_SPLITTING;
	ref->bk.txid = ns_random(ns);
	ref->bk.stamp = ns_now_ns();
	r = ns_bucket_store(ns, ref);
	if (r == -EAGAIN)
		return 1;
	if (r)
		return r;
	r = split_finish(ns, ref);
	return r ? r : 1;
}

/* ---------------------------------------------------------------- seals */

/* Return a sealed bucket to NORMAL (CAS against what we read). */
static int unseal(struct pohm_ns *ns, struct ns_bucket_ref *ref)
{
	ref->bk.state = POHM_BUCKET_NORMAL;
	ref->bk.txid = 0;
	ref->bk.seal_parent = 0;
	free(ref->bk.seal_name);
	ref->bk.seal_name = NULL;
	return ns_bucket_store(ns, ref);
}

void ns_intent_drop(struct pohm_dentry *e)
{
	e->intent = POHM_INTENT_NONE;
	e->i_txid = e->i_dir = e->i_time = e->i_replaced = 0;
	e->i_flags = 0;
	free(e->i_name);
	e->i_name = NULL;
}

/* Clear the intent of entry i in ref (only if it is still txid). */
static int intent_clear(struct pohm_ns *ns, struct ns_bucket_ref *ref, int i, uint64_t txid)
{
	struct pohm_dentry *e = &ref->bk.e[i];

	if (e->intent == POHM_INTENT_NONE || e->i_txid != txid)
		return 0;
	ns_intent_drop(e);
	return ns_bucket_store(ns, ref);
}

/*
 * A stale rmdir whose seal went with its intent (decision 0058) is
 * committed: entry i of pref goes, then the directory's tombstone (best
 * effort: an unnamed live inode is fsck's, as after a crash between the
 * commit and the tombstone).  The parent's count stays one too high (safe,
 * fsck's): its decrement may have landed already.  0, -EAGAIN, -errno.
 */
static int rmdir_complete(struct pohm_ns *ns, struct ns_bucket_ref *pref, int i, uint64_t dino)
{
	int r;

	pohm_bucket_remove(&pref->bk, (uint32_t)i);
	r = ns_bucket_store(ns, pref);
	if (!r)
		ns_inode_update(ns, dino, ns_tomb_fn, NULL, NULL);
	return r;
}

/* Does some entry of dir name inode ino?  (A walk of every bucket.) */
struct named_arg {
	uint64_t ino;
	int found;
};

static int named_fn(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg)
{
	struct named_arg *a = arg;
	uint32_t i;

	(void)ns;
	for (i = 0; i < ref->bk.n; i++)
		if (ref->bk.e[i].ino == a->ino)
			a->found = 1;
	return a->found;
}

/*
 * The seal of dir names an entry (seal_parent, seal_name) that no longer
 * names dir.  Either its rmdir committed (the entry went; the tombstone
 * goes with it or just after) or the rmdir's intent lost and its seal was
 * not taken back, and dir was renamed since (review 15, D3): then no
 * intent can land any more (the bucket it was sent on changed) and the
 * seal only stops a live directory.  A tombstone (or no inode) says
 * committed: -ENOENT.  A live dir moved to another parent cannot be a
 * committed rmdir's: unsealed.  A live dir still under seal_parent is
 * waited for while the seal is young (a committed rmdir's tombstone is on
 * its way), then looked for among seal_parent's entries: named, unsealed;
 * not named, committed (its tombstone lost: fsck's): -ENOENT.
 */
static int seal_name_gone(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref,
			  uint64_t now)
{
	struct named_arg a = { dir, 0 };
	struct pohm_inode in;
	uint64_t st = ref->bk.stamp;
	int r, moved;

	r = ns_inode_get(ns, dir, &in, NULL, 0);
	if (r)
		return r;	/* -ENOENT: tombstoned, the rmdir committed */
	moved = in.hdr.parent != ref->bk.seal_parent;
	pohm_inode_clear(&in);
	if (!moved) {
		if (st > now || now - st < ns->intent_timeout_ns)
			return -EAGAIN;
		r = ns_bucket_walk_read(ns, ref->bk.seal_parent, 0, named_fn, &a, NULL);
		if (r < 0)
			return r;
		if (!a.found)
			return -ENOENT;
	}
	unseal(ns, ref);
	return -EAGAIN;
}

/* A writer met a SEALED or SEALED_WITH bucket of dir: decide what the seal
 * means. */
static int seal_resolve(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref)
{
	struct ns_bucket_ref pref;
	uint64_t txid = ref->bk.txid, now = ns_now_ns();
	int with = ref->bk.state == POHM_BUCKET_SEALED_WITH;
	int i, r;

	if (!ref->bk.seal_name)
		return unseal(ns, ref) ? -EAGAIN : -EAGAIN;
	r = ns_bucket_locate(ns, ref->bk.seal_parent, ref->bk.seal_name, &pref);
	if (r)
		return r;
	i = pohm_bucket_find(&pref.bk, ref->bk.seal_name);
	if (i < 0 || pref.bk.e[i].ino != dir) {
		r = seal_name_gone(ns, dir, ref, now);	/* committed, or dir moved */
	} else if ((pref.bk.e[i].intent == POHM_INTENT_RMDIR ||
		    pref.bk.e[i].intent == POHM_INTENT_RMDIR_SEALED) && pref.bk.e[i].i_txid == txid) {
		uint64_t it = pref.bk.e[i].i_time;

		if (it > now || now - it < ns->intent_timeout_ns) {	/* ahead: young */
			r = -EAGAIN;	/* still running: the caller backs off and retries */
		} else if (with && pref.bk.e[i].intent == POHM_INTENT_RMDIR_SEALED) {
			/* Its seal and its intent: committed (decision 0058). */
			r = rmdir_complete(ns, &pref, i, dir) ? -EAGAIN : -ENOENT;
		} else {
			/* Stale: abort it first (its commit then fails), then unseal. */
			r = intent_clear(ns, &pref, i, txid);
			if (!r)
				unseal(ns, ref);
			r = -EAGAIN;
		}
	} else if (with && (ref->bk.stamp > now || now - ref->bk.stamp < ns->intent_timeout_ns)) {
		/* Sent with its intent, which may still land (decision 0058):
		 * waited for as an intent is; its rmdir unseals it if the
		 * intent lost.  (A stamp ahead of this clock is young too.) */
		r = -EAGAIN;
	} else if (with) {
		/* Stale and no intent: the intent may still be in flight (a
		 * retried CAS, a stopped sender, a clock behind).  The parent's
		 * bucket is rewritten first (a fresh tag: an intent sent on
		 * the older bytes can no longer land), then the seal goes; a
		 * lost fence (the bucket changed: our intent?) reads again
		 * (decision 0058, review 15 D1).  Intents go only on NORMAL
		 * copies (bucket_peek): one not NORMAL is fenced already. */
		r = pref.bk.state == POHM_BUCKET_NORMAL ? ns_bucket_store(ns, &pref) : 0;
		if (!r)
			unseal(ns, ref);
		r = -EAGAIN;
	} else {
		unseal(ns, ref);	/* aborted rmdir left this seal */
		r = -EAGAIN;
	}
	ns_bucket_release(&pref);
	return r;
}

int ns_bucket_prepare(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref)
{
	int r;

	switch (ref->bk.state) {
	case POHM_BUCKET_NORMAL:
		return 0;
	case POHM_BUCKET_SPLITTING:
		r = split_finish(ns, ref);
		return r ? r : -EAGAIN;
	case POHM_BUCKET_SEALED:
	case POHM_BUCKET_SEALED_WITH:
		return seal_resolve(ns, dir, ref);
	default:
		return -EAGAIN;
	}
}

/* ---------------------------------------------------------------- intents */

/* e carries the MOVED_IN mark of a txid this handle knows settled at its
 * source: a change of e may skip the settle. */
static int moved_known(struct pohm_ns *ns, const struct pohm_dentry *e)
{
	int r;

	if (e->intent != POHM_INTENT_MOVED_IN || !e->i_txid)
		return 0;
	pthread_mutex_lock(&ns->hint_lock);
	r = ns->settled[e->i_txid % POHM_NS_HINTS] == e->i_txid;
	pthread_mutex_unlock(&ns->hint_lock);
	return r;
}

void ns_moved_note(struct pohm_ns *ns, uint64_t txid)
{
	pthread_mutex_lock(&ns->hint_lock);
	ns->settled[txid % POHM_NS_HINTS] = txid;
	pthread_mutex_unlock(&ns->hint_lock);
}

int ns_moved_settle(struct pohm_ns *ns, uint64_t ddir, const struct pohm_dentry *e)
{
	struct ns_bucket_ref sref;
	unsigned attempt;
	uint64_t now;
	int i, r, stale;

	if (e->intent != POHM_INTENT_MOVED_IN || !e->i_name || moved_known(ns, e))
		return 0;
	/* This process's own finish may be still untold (decision 0073):
	 * its outcome first, no wait when its replies are in. */
	if (ns->kv.ops->settle && ns->kv.ops->settle(ns->kv.ctx, UINT64_MAX) > 0 &&
	    moved_known(ns, e))
		return 0;
	/* A refused one (owed, ns_finish_owed) is the finish done below. */
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = ns_bucket_locate(ns, e->i_dir, e->i_name, &sref);
		if (r == -ENOENT)
			break;		/* the source directory is gone: nothing holds T */
		if (r)
			return r;
		i = pohm_bucket_find(&sref.bk, e->i_name);
		if (i < 0 || sref.bk.e[i].intent != POHM_INTENT_MOVE ||
		    sref.bk.e[i].i_txid != e->i_txid || sref.bk.e[i].ino != e->ino) {
			ns_bucket_release(&sref);
			break;		/* settled already */
		}
		/* The mark proves the commit landed: the finish, by CAS on the
		 * source's bucket (a concurrent settle or finish wins). */
		now = ns_now_ns();
		stale = sref.bk.e[i].i_time <= now &&
			now - sref.bk.e[i].i_time >= ns->intent_timeout_ns;
		pohm_bucket_remove(&sref.bk, (uint32_t)i);
		r = ns_bucket_store(ns, &sref);
		ns_bucket_release(&sref);
		if (!r && stale)	/* its renamer died before the path copies */
			ns_http_rename(ns, e->i_dir, e->i_name, ddir, e->name, e->ino, e->type, 0, 0);
		if (!r)
			break;
		if (r != -EAGAIN)
			return r;
	}
	if (attempt == ns->max_retries)
		return -EBUSY;
	ns_moved_note(ns, e->i_txid);
	return 0;
}

/* Is the MOVE of entry e committed at its destination? 1, 0, -errno. */
static int move_committed(struct pohm_ns *ns, const struct pohm_dentry *e)
{
	struct ns_bucket_ref dref;
	int i, r;

	r = ns_bucket_locate(ns, e->i_dir, e->i_name, &dref);
	if (r)
		return r;
	i = pohm_bucket_find(&dref.bk, e->i_name);
	r = i >= 0 && dref.bk.e[i].ino == e->ino && dref.bk.e[i].txid == e->i_txid;
	ns_bucket_release(&dref);
	return r;
}

/*
 * A stale marked MOVE e whose destination lacked its txid (decision 0067):
 * with marks the destination cannot have changed while the source held
 * the txid, so the commit never landed -- but it may still be in flight.
 * The destination's bucket is rewritten first (a fresh tag, or created
 * empty if absent: a commit sent on the older copy can no longer land;
 * the renamer starts no put after its deadline, ns_move_commit_from).
 * 0 fenced (roll back), -EAGAIN (committed after all, or changed: decide
 * again), -errno.
 */
static int move_fence(struct pohm_ns *ns, const struct pohm_dentry *e)
{
	struct ns_bucket_ref dref;
	int i, r;

	r = ns_bucket_locate(ns, e->i_dir, e->i_name, &dref);
	if (r)
		return r == -ENOENT ? 0 : r;
	i = pohm_bucket_find(&dref.bk, e->i_name);
	if (i >= 0 && dref.bk.e[i].ino == e->ino && dref.bk.e[i].txid == e->i_txid)
		r = -EAGAIN;
	else if (!dref.absent && dref.bk.state != POHM_BUCKET_NORMAL)
		r = ns_bucket_prepare(ns, e->i_dir, &dref);
	if (r == -ENOENT)
		r = 0;		/* its directory is gone: no commit can land */
	else if (!r)
		r = ns_bucket_store(ns, &dref);
	ns_bucket_release(&dref);
	return r;
}

int ns_intent_resolve(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref, int i)
{
	struct pohm_dentry *e = &ref->bk.e[i];
	uint64_t now = ns_now_ns();
	/* A time ahead of this clock is young, not a wrapped huge age. */
	int fresh = e->i_time > now || now - e->i_time < ns->intent_timeout_ns;
	uint64_t txid = e->i_txid, replaced = 0, ino = e->ino, ddir = e->i_dir;
	char sname[POHM_NAME_MAX + 1], dname[POHM_NAME_MAX + 1];
	uint8_t rtype = 0, type = e->type;
	int r, completed = 0, exch = !!(e->i_flags & POHM_RENAME_EXCHANGE);

	if (e->intent == POHM_INTENT_RMDIR) {
		if (fresh)
			return 1;
		r = intent_clear(ns, ref, i, txid);
		return r && r != -EAGAIN ? r : 0;
	}
	if (e->intent == POHM_INTENT_RMDIR_SEALED) {
		struct ns_bucket_ref root;
		int committed = 0;

		if (fresh)
			return 1;
		/* Committed iff its seal went in too (decision 0058): completed
		 * then, rolled back otherwise. */
		r = bucket_read(ns, ino, 0, 0, &root);
		if (r && r != -ENOENT)
			return r;
		if (r == -ENOENT)
			empty_bucket(ns, &root, ino, 0, 0);
		committed = root.bk.state == POHM_BUCKET_SEALED_WITH && root.bk.txid == txid;
		/* Not committed: the seal may still be in flight.  The root is
		 * rewritten first (a fresh tag, or created empty if absent: a
		 * seal sent on the older copy can no longer land), then the
		 * intent goes; a lost fence reads again (decision 0058,
		 * review 15 D2).  Seals go only on NORMAL roots: one not
		 * NORMAL (a walk's seal, a split) is fenced already. */
		r = committed || root.bk.state != POHM_BUCKET_NORMAL ? 0 : ns_bucket_store(ns, &root);
		ns_bucket_release(&root);
		if (r)
			return r == -EAGAIN ? 0 : r;
		r = committed ? rmdir_complete(ns, ref, i, ino) : intent_clear(ns, ref, i, txid);
		return r && r != -EAGAIN ? r : 0;
	}
	if (e->intent != POHM_INTENT_MOVE)
		return 1;
	r = move_committed(ns, e);
	if (r < 0)
		return r;
	if (!r) {
		if (fresh)
			return 1;
		if (e->i_flags & POHM_MOVE_MARKED) {
			/* Stale, never committed (decision 0067): fence the
			 * destination, then roll back by CAS on the source's
			 * copy read here (a concurrent settle wins). */
			r = move_fence(ns, e);
			if (!r)
				r = intent_clear(ns, ref, i, txid);
			return r && r != -EAGAIN ? r : 0;
		}
		/* Stale, uncommitted and unmarked (a renamer before decision
		 * 0067): the renamer died; finish its rename. */
		r = ns_move_commit(ns, e, &replaced, &rtype);
		if (r == -ENOENT || r == -EEXIST || r == -ENOTDIR || r == -EISDIR) {
			r = intent_clear(ns, ref, i, txid);	/* cannot complete: roll back */
			return r && r != -EAGAIN ? r : 0;
		}
		if (r)
			return r;
		if (replaced && rtype != DT_DIR)
			ns_inode_nlink(ns, replaced, -1);
		completed = 1;
	}
	/* Committed: the source name goes. */
	snprintf(sname, sizeof(sname), "%s", e->name);
	snprintf(dname, sizeof(dname), "%s", e->i_name ? e->i_name : "");
	pohm_bucket_remove(&ref->bk, (uint32_t)i);
	r = ns_bucket_store(ns, ref);
	if (!r)
		ns_moved_note(ns, txid);
	/*
	 * A stale intent: its renamer died, before moving the path copies
	 * (ns_http.h); this completion moves them.  A fresh one's renamer does.
	 */
	if (!r && (completed || !fresh))
		ns_http_rename(ns, dir, sname, ddir, dname, ino, type, exch ? replaced : 0, rtype);
	return r && r != -EAGAIN ? r : 0;
}

/* ---------------------------------------------------------------- entries */

int ns_entry_copy(struct pohm_dentry *out, const struct pohm_dentry *e)
{
	struct pohm_bucket tmp = { 0 };
	int r = pohm_bucket_add(&tmp, e);

	if (!r)
		*out = tmp.e[0];
	free(tmp.e);
	return r;
}

int ns_entry_get(struct pohm_ns *ns, uint64_t dir, const char *name, struct pohm_dentry *out)
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
		if (i < 0) {
			ns_bucket_release(&ref);
			return -ENOENT;
		}
		if (ref.bk.e[i].intent) {
			r = ns_intent_resolve(ns, dir, &ref, i);
			if (r == 0) {
				ns_bucket_release(&ref);
				continue;
			}
			if (r < 0) {
				ns_bucket_release(&ref);
				return r;
			}
		}
		r = ns_entry_copy(out, &ref.bk.e[i]);
		ns_bucket_release(&ref);
		return r;
	}
	return -EBUSY;
}

/*
 * The bucket of name at dir's depth hint as this thread just read or wrote
 * it (ns_peek), when it decodes as that bucket and is NORMAL: 0 with ref
 * (release it), else -ENOENT.  A base for an optimistic change only.
 */
static int bucket_peek(struct pohm_ns *ns, uint64_t dir, const char *name,
		       struct ns_bucket_ref *ref)
{
	struct pohm_kv_val v;
	unsigned depth = hint_get(ns, dir);
	uint32_t index = index_at(pohm_name_hash(name), depth);
	int r;

	memset(ref, 0, sizeof(*ref));
	pohm_key_bucket(ref->key, dir, depth, index);
	if (ns_peek(ns, ref->key, &v))
		return -ENOENT;
	r = pohm_bucket_decode(&ref->bk, v.data, v.len);
	memcpy(ref->csum, v.csum, sizeof(ref->csum));
	pohm_kv_val_free(&v);
	if (r)
		return -ENOENT;		/* (decode leaves nothing to free on failure) */
	if (ref->bk.dir != dir || ref->bk.depth != depth || ref->bk.index != index ||
	    ref->bk.state != POHM_BUCKET_NORMAL) {
		ns_bucket_release(ref);
		return -ENOENT;
	}
	return 0;
}

int ns_bucket_peek(struct pohm_ns *ns, uint64_t dir, const char *name, struct ns_bucket_ref *ref)
{
	return bucket_peek(ns, dir, name, ref);
}

/*
 * ns_entry_insert's first attempt (issue 23, decision 0017): the peeked
 * bucket (bucket_peek), with no read, when it has room and lacks the name.
 * 0: inserted; 1: not tried, or lost the CAS (nothing written): read; else
 * the put's -errno.  A name found there, a full, sealed or splitting
 * bucket may all be stale news, so they are left to the reading loop.
 */
static int insert_peeked(struct pohm_ns *ns, uint64_t dir, const struct pohm_dentry *e)
{
	struct ns_bucket_ref ref;
	int r;

	if (bucket_peek(ns, dir, e->name, &ref))
		return 1;
	if (ref.bk.n >= ns->bucket_max || pohm_bucket_find(&ref.bk, e->name) >= 0)
		r = 1;
	else if (!(r = pohm_bucket_add(&ref.bk, e)))
		r = ns_bucket_store(ns, &ref);
	ns_bucket_release(&ref);
	return r == -EAGAIN ? 1 : r;
}

int ns_name_absent_peeked(struct pohm_ns *ns, uint64_t dir, const char *name)
{
	struct ns_bucket_ref ref;
	int r;

	if (!ns->kv.ops->put_n || bucket_peek(ns, dir, name, &ref))
		return 0;
	r = ref.bk.n < ns->bucket_max && pohm_bucket_find(&ref.bk, name) < 0;
	ns_bucket_release(&ref);
	return r;
}

int ns_bucket_new_root(struct pohm_ns *ns, uint64_t dir, struct pohm_buf *b, char *key)
{
	struct ns_bucket_ref ref;
	int r;

	empty_bucket(ns, &ref, dir, 0, 0);
	ref.bk.txid = ns_random(ns);	/* a fresh tag (ns_bucket_store) */
	r = pohm_bucket_encode(b, &ref.bk);
	memcpy(key, ref.key, POHM_KEY_MAX);
	ns_bucket_release(&ref);
	return r;
}

/*
 * The peeked bucket ref, re-encoded with a fresh tag, and the writes also[]
 * in one put_n, the bucket last (by CAS on its peeked copy): 1 when
 * nothing was sent (put_n refused it), -errno before anything was sent,
 * else the bucket's answer (-EAGAIN: it changed) with also[k].st each
 * other write's.  ns_entry_insert_along and ns_rmdir_finish_along.
 */
static int bucket_put_along(struct pohm_ns *ns, struct ns_bucket_ref *ref, struct pohm_buf *b,
			    struct ns_put *also, size_t nalso)
{
	const char *keys[POHM_KV_PUT_N];
	const void *datas[POHM_KV_PUT_N];
	size_t lens[POHM_KV_PUT_N], k;
	const uint8_t *expects[POHM_KV_PUT_N];
	int st[POHM_KV_PUT_N], r;

	ref->bk.txid = ns_random(ns);	/* a fresh tag (ns_bucket_store) */
	r = pohm_bucket_encode(b, &ref->bk);
	if (r)
		return r;
	for (k = 0; k < nalso; k++) {
		keys[k] = also[k].key;
		datas[k] = also[k].data;
		lens[k] = also[k].len;
		expects[k] = also[k].expect;
	}
	keys[nalso] = ref->key;
	datas[nalso] = b->p;
	lens[nalso] = b->len;
	expects[nalso] = ref->csum;
	r = ns->kv.ops->put_n(ns->kv.ctx, nalso + 1, keys, datas, lens, expects, st);
	if (r)
		return r == -EINVAL || r == -ENOMEM ? 1 : r;	/* nothing sent */
	for (k = 0; k < nalso; k++)
		also[k].st = st[k];
	return st[nalso] == -EEXIST ? -EAGAIN : st[nalso];
}

int ns_entry_insert_along(struct pohm_ns *ns, uint64_t dir, const struct pohm_dentry *e,
			  struct ns_put *also, size_t nalso)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct ns_bucket_ref ref;
	int r;

	if (!ns->kv.ops->put_n || nalso + 1 > POHM_KV_PUT_N || bucket_peek(ns, dir, e->name, &ref))
		return 1;
	if (ref.bk.n >= ns->bucket_max || pohm_bucket_find(&ref.bk, e->name) >= 0) {
		ns_bucket_release(&ref);
		return 1;
	}
	r = pohm_bucket_add(&ref.bk, e);
	if (!r)
		r = bucket_put_along(ns, &ref, &b, also, nalso);
	pohm_buf_free(&b);
	ns_bucket_release(&ref);
	return r;
}

/* ns_entry_remove's first attempt, the same way: the peeked bucket holds
 * name (for ino, if given) without an intent.  0, 1 (read), or -errno. */
static int remove_peeked(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino)
{
	struct ns_bucket_ref ref;
	int i, r = 1;

	if (bucket_peek(ns, dir, name, &ref))
		return 1;
	i = pohm_bucket_find(&ref.bk, name);
	if (i >= 0 && (!ino || ref.bk.e[i].ino == ino) && NS_PLAIN(&ref.bk.e[i])) {
		/* A moved-in entry: its source first (decision 0067; the mark
		 * proves its rename committed, whatever this copy's age). */
		r = ns_moved_settle(ns, dir, &ref.bk.e[i]);
		if (r) {
			ns_bucket_release(&ref);
			return r;
		}
		pohm_bucket_remove(&ref.bk, (uint32_t)i);
		r = ns_bucket_store(ns, &ref);
	}
	ns_bucket_release(&ref);
	return r == -EAGAIN ? 1 : r;
}

int ns_entry_insert(struct pohm_ns *ns, uint64_t dir, const struct pohm_dentry *e,
		    struct pohm_dentry *existing)
{
	struct ns_bucket_ref ref;
	unsigned attempt, unsure = 0;
	int i, r;

	r = insert_peeked(ns, dir, e);
	if (!r)
		return 0;
	if (r != 1) {
		if (!NS_UNSURE(r) || !e->txid)
			return r;
		unsure = 1;	/* outcome unknown: the loop's read tells (our txid) */
	}
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = ns_bucket_locate(ns, dir, e->name, &ref);
		if (r && unsure && NS_UNSURE(r) && unsure++ < NS_UNSURE_RETRIES)
			continue;	/* the read that would settle it failed too: again */
		if (r)
			return unsure ? -NS_EMAYBE : r;
		r = ns_bucket_prepare(ns, dir, &ref);
		i = r ? -1 : pohm_bucket_find(&ref.bk, e->name);
		if (i >= 0 && ref.bk.e[i].intent)
			r = ns_intent_resolve(ns, dir, &ref, i) == 1 ? 0 : -EAGAIN;
		if (!r && i >= 0 && e->txid && ref.bk.e[i].txid == e->txid &&
		    ref.bk.e[i].ino == e->ino) {
			/* Our own earlier attempt, reported failed, did commit. */
			ns_bucket_release(&ref);
			return 0;
		}
		if (!r && i >= 0) {
			r = existing ? ns_entry_copy(existing, &ref.bk.e[i]) : 0;
			ns_bucket_release(&ref);
			return r ? r : -EEXIST;
		}
		if (!r) {
			r = ns_bucket_maybe_split(ns, &ref);
			if (r == 1)
				r = -EAGAIN;
		}
		if (!r)
			r = pohm_bucket_add(&ref.bk, e);
		if (!r) {
			r = ns_bucket_store(ns, &ref);
			if (NS_UNSURE(r) && e->txid && unsure++ < NS_UNSURE_RETRIES)
				r = -EAGAIN;	/* outcome unknown: the next read tells (our txid) */
		}
		ns_bucket_release(&ref);
		if (r != -EAGAIN)
			return r && r != -EEXIST && unsure ? -NS_EMAYBE : r;
	}
	return unsure ? -NS_EMAYBE : -EBUSY;
}


/* In ref's bucket, entry i takes the name dname (with txid) and the entry j
 * it replaces (j < 0: none) goes, reported in *replaced and *replaced_type;
 * then the bucket is stored (CAS).  0 or -errno (-EAGAIN: lost the CAS). */
/* bucket_move_entry's change of ref->bk, not stored.  0 or -errno. */
static int bucket_move_apply(struct ns_bucket_ref *ref, int i, int j, const char *dname,
			     uint64_t txid, uint64_t *replaced, uint8_t *replaced_type)
{
	struct pohm_dentry n = ref->bk.e[i];	/* (shallow: pohm_bucket_add copies) */
	int r;

	n.name = (char *)dname;
	n.txid = txid;
	n.intent = POHM_INTENT_NONE;	/* a MOVED_IN mark goes (settled: move_settle) */
	n.i_txid = n.i_dir = n.i_time = n.i_replaced = 0;
	n.i_flags = 0;
	n.i_name = NULL;
	r = pohm_bucket_add(&ref->bk, &n);
	if (r)
		return r;
	if (j >= 0) {
		*replaced = ref->bk.e[j].ino;
		*replaced_type = ref->bk.e[j].type;
	}
	/* Drop the higher index first: the lower one stays where it is. */
	pohm_bucket_remove(&ref->bk, (uint32_t)(j > i ? j : i));
	if (j >= 0)
		pohm_bucket_remove(&ref->bk, (uint32_t)(j > i ? i : j));
	return 0;
}

/* Before a move inside ref's bucket: the MOVED_IN marks of entry i and of
 * the entry j it replaces (j < 0: none) settled (decision 0067). */
static int move_settle(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref, int i, int j)
{
	int r = ns_moved_settle(ns, dir, &ref->bk.e[i]);

	return r || j < 0 ? r : ns_moved_settle(ns, dir, &ref->bk.e[j]);
}

static int bucket_move_entry(struct pohm_ns *ns, struct ns_bucket_ref *ref, int i, int j,
			     const char *dname, uint64_t txid, uint64_t *replaced,
			     uint8_t *replaced_type)
{
	int r = bucket_move_apply(ref, i, j, dname, txid, replaced, replaced_type);

	return r ? r : ns_bucket_store(ns, ref);
}

int ns_bucket_store_along(struct pohm_ns *ns, struct ns_bucket_ref *ref, struct ns_put *also)
{
	struct pohm_buf b = POHM_BUF_INIT;
	const char *keys[2];
	const void *datas[2];
	size_t lens[2];
	const uint8_t *expects[2];
	int st[2], r;

	if (!ns->kv.ops->put_n || ref->absent || ref->bk.state != POHM_BUCKET_NORMAL)
		return 1;
	ref->bk.txid = ns_random(ns);	/* a fresh tag (ns_bucket_store) */
	r = pohm_bucket_encode(&b, &ref->bk);
	if (!r) {
		keys[0] = also->key;
		datas[0] = also->data;
		lens[0] = also->len;
		expects[0] = also->expect;
		keys[1] = ref->key;
		datas[1] = b.p;
		lens[1] = b.len;
		expects[1] = ref->csum;
		r = ns->kv.ops->put_n(ns->kv.ctx, 2, keys, datas, lens, expects, st);
	}
	if (!r) {
		also->st = st[0];
		r = st[1] == -EEXIST ? -EAGAIN : st[1];
		if (!r)
			pohm_sha512(b.p, b.len, ref->csum);
	}
	pohm_buf_free(&b);
	return r;
}

/* bucket_move_entry whose bucket CAS goes out in one put_n with *also
 * (ns_bucket_store_along).  1: no put_n in the store (nothing changed). */
static int bucket_move_along(struct pohm_ns *ns, struct ns_bucket_ref *ref, int i, int j,
			     const char *dname, uint64_t txid, uint64_t *replaced,
			     uint8_t *replaced_type, struct ns_put *also)
{
	int r;

	if (!ns->kv.ops->put_n)
		return 1;
	r = bucket_move_apply(ref, i, j, dname, txid, replaced, replaced_type);
	if (!r)
		r = ns_bucket_store_along(ns, ref, also);
	return r == 1 ? ns_bucket_store(ns, ref) : r;	/* (changed: store it alone) */
}

/*
 * Whether dir/dname is sino written by txid (a rename's own entry), read in
 * dname's own bucket: 1 yes, 0 no, -errno when the read failed.  A settling
 * rename whose source's bucket split since its put (a concurrent creator's)
 * finds its target in another bucket than the source's.
 */
static int renamed_here(struct pohm_ns *ns, uint64_t dir, const char *dname, uint64_t sino,
			uint64_t txid)
{
	struct ns_bucket_ref ref;
	int j, r = ns_bucket_locate(ns, dir, dname, &ref);

	if (r)
		return r;
	j = pohm_bucket_find(&ref.bk, dname);
	r = j >= 0 && ref.bk.e[j].ino == sino && ref.bk.e[j].txid == txid;
	ns_bucket_release(&ref);
	return r;
}

/* ns_entry_rename_local; unsure: a put of this txid (replacing dino) had an
 * unknown outcome before the call (ns_entry_rename_settle). */
static int rename_local(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			const char *dname, uint64_t dino, uint64_t txid, uint64_t *replaced,
			uint8_t *replaced_type, unsigned unsure, uint8_t dtype)
{
	struct ns_bucket_ref ref;
	unsigned attempt;
	uint64_t rep0 = unsure ? dino : 0;
	uint8_t rtype0 = unsure ? dtype : 0;
	int i, j, r, peeked = 0;

	*replaced = 0;
	*replaced_type = 0;
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		/* The first look may be the bucket this thread just read (ns_peek). */
		peeked = !attempt && !unsure && !bucket_peek(ns, dir, sname, &ref);
		if (!peeked) {
			r = ns_bucket_locate(ns, dir, sname, &ref);
			if (r && unsure && NS_UNSURE(r) && unsure++ < NS_UNSURE_RETRIES)
				continue;	/* the read that would settle it failed too */
			if (r)
				return unsure ? -EIO : r;
		}
		i = pohm_bucket_find(&ref.bk, sname);
		j = pohm_bucket_find(&ref.bk, dname);
		if (unsure && i < 0 && j >= 0 && ref.bk.e[j].ino == sino &&
		    ref.bk.e[j].txid == txid) {
			/* Our put whose outcome was unknown did commit. */
			ns_bucket_release(&ref);
			*replaced = rep0;
			*replaced_type = rtype0;
			return 0;
		}
		if (ref.absent || ref.bk.state != POHM_BUCKET_NORMAL ||
		    index_at(pohm_name_hash(dname), ref.bk.depth) != ref.bk.index ||
		    i < 0 || ref.bk.e[i].ino != sino || !NS_PLAIN(&ref.bk.e[i]) ||
		    (dino ? j < 0 || ref.bk.e[j].ino != dino || !NS_PLAIN(&ref.bk.e[j]) : j >= 0)) {
			pohm_debug("rename in one bucket: not here (absent %d state %d i %d j %d)",
				   ref.absent, ref.bk.state, i, j);
			ns_bucket_release(&ref);
			if (peeked)
				continue;	/* maybe stale: decide on a read */
			if (unsure && i < 0) {
				/* The source gone and our target not beside it:
				 * the bucket split since our put, which may have
				 * landed -- our txid at dname, in its own bucket,
				 * says it did (ns_replicas, s19-mv4b). */
				r = renamed_here(ns, dir, dname, sino, txid);
				if (r == 1) {
					*replaced = rep0;
					*replaced_type = rtype0;
					return 0;
				}
				if (NS_UNSURE(r) && unsure++ < NS_UNSURE_RETRIES)
					continue;
			}
			/* The intent path's case, nothing written -- unless an
			 * unknown outcome of ours is still unsettled. */
			return unsure ? -EIO : 1;
		}
		r = move_settle(ns, dir, &ref, i, j);
		if (!r)
			r = bucket_move_entry(ns, &ref, i, j, dname, txid, replaced, replaced_type);
		ns_bucket_release(&ref);
		if (NS_UNSURE(r) && unsure++ < NS_UNSURE_RETRIES) {
			rep0 = *replaced;	/* outcome unknown: the next read tells (our txid) */
			rtype0 = *replaced_type;
			r = -EAGAIN;
		}
		if (r != -EAGAIN)
			return r;
		*replaced = 0;
		*replaced_type = 0;
	}
	return unsure ? -EIO : -EBUSY;
}

int ns_entry_rename_local(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			  const char *dname, uint64_t dino, uint64_t txid, uint64_t *replaced,
			  uint8_t *replaced_type)
{
	return rename_local(ns, dir, sname, sino, dname, dino, txid, replaced, replaced_type, 0, 0);
}

int ns_entry_rename_settle(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			   const char *dname, uint64_t dino, uint8_t dtype, uint64_t txid,
			   uint64_t *replaced, uint8_t *replaced_type)
{
	return rename_local(ns, dir, sname, sino, dname, dino, txid, replaced, replaced_type, 1,
			    dtype);
}

int pohm_ns_lookup_guess(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
			 uint8_t *type)
{
	struct ns_bucket_ref ref;
	int i, r = -ENOENT;

	if (ns_check_name(name) || bucket_peek(ns, dir, name, &ref))
		return -ENOENT;
	i = pohm_bucket_find(&ref.bk, name);
	if (i >= 0 && NS_PLAIN(&ref.bk.e[i]) && ref.bk.e[i].ino) {
		*ino = ref.bk.e[i].ino;
		*type = ref.bk.e[i].type;
		r = 0;
	}
	ns_bucket_release(&ref);
	return r;
}

/*
 * The copy of bucket (dir, depth, index) noted less than max_age_ns ago
 * (issue 23, decision 0061): this thread's (kv peek, within NS_PEEK_NS too)
 * or the cache's kept one (ns_base_peek, younger than base_max_ns, which
 * must not exceed max_age_ns).  0 and ref filled, else -ENOENT.
 */
static int bucket_peek_young(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index,
			     uint64_t max_age_ns, struct ns_bucket_ref *ref)
{
	struct pohm_kv_val v = { 0 };
	uint64_t age = 0;
	int r = -ENOENT;

	memset(ref, 0, sizeof(*ref));
	pohm_key_bucket(ref->key, dir, depth, index);
	if (ns->kv.ops->peek)
		r = ns->kv.ops->peek(ns->kv.ctx, ref->key, &v, &age);
	if (!r && (age >= NS_PEEK_NS || age >= max_age_ns)) {
		pohm_kv_val_free(&v);
		r = -ENOENT;
	}
	if (r == -ENOENT && ns->base_max_ns && ns->base_max_ns <= max_age_ns)
		r = ns_base_peek(ns, ref->key, &v);
	if (r)
		return -ENOENT;
	return bucket_from(&v, dir, depth, index, ref) ? -ENOENT : 0;
}

int pohm_ns_lookup_absent(struct pohm_ns *ns, uint64_t dir, const char *name,
			  uint64_t max_age_ns)
{
	struct ns_bucket_ref ref;
	uint64_t h;
	unsigned depth;
	int absent = 0;

	if (!max_age_ns || ns_check_name(name))
		return 0;
	h = pohm_name_hash(name);
	/*
	 * Where ns_bucket_locate would look: from this process's depth hint
	 * (a NORMAL bucket there is the name's), else from the first bucket
	 * down through SPLIT copies.  Anything else (no young copy, SPLITTING,
	 * SEALED, the name there, with or without an intent) says nothing.
	 */
	depth = hint_get(ns, dir);
	if (depth && !bucket_peek_young(ns, dir, depth, index_at(h, depth), max_age_ns, &ref)) {
		if (ref.bk.state == POHM_BUCKET_NORMAL) {
			absent = pohm_bucket_find(&ref.bk, name) < 0;
			ns_bucket_release(&ref);
			return absent;
		}
		ns_bucket_release(&ref);
	}
	for (depth = 0; depth < 40; depth++) {
		if (bucket_peek_young(ns, dir, depth, index_at(h, depth), max_age_ns, &ref))
			return 0;
		if (ref.bk.state == POHM_BUCKET_SPLIT) {
			ns_bucket_release(&ref);
			continue;
		}
		absent = ref.bk.state == POHM_BUCKET_NORMAL && pohm_bucket_find(&ref.bk, name) < 0;
		ns_bucket_release(&ref);
		return absent;
	}
	return 0;
}

int ns_entry_peek_dir(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
		      struct pohm_dentry *e)
{
	struct ns_bucket_ref ref;
	int i, r = 1;

	if (!ino || bucket_peek(ns, dir, name, &ref))
		return 1;
	i = pohm_bucket_find(&ref.bk, name);
	if (i >= 0 && !ref.bk.e[i].intent && ref.bk.e[i].ino == ino && ref.bk.e[i].type == DT_DIR &&
	    ns_dir_peeked(ns, ino))
		r = ns_entry_copy(e, &ref.bk.e[i]) ? 1 : 0;
	ns_bucket_release(&ref);
	return r;
}

int ns_seal_first(struct pohm_ns *ns, uint64_t dir, uint64_t txid, uint64_t parent,
		  const char *name)
{
	struct ns_bucket_ref ref;
	struct pohm_kv_val v;
	int r;

	empty_bucket(ns, &ref, dir, 0, 0);
	if (!ns_peek(ns, ref.key, &v)) {
		/* A copy: only an empty NORMAL root bucket (no split below). */
		if (bucket_from(&v, dir, 0, 0, &ref))
			return 1;
		if (ref.bk.state != POHM_BUCKET_NORMAL || ref.bk.n) {
			ns_bucket_release(&ref);
			return 1;
		}
	}
	ref.bk.state = POHM_BUCKET_SEALED;
	ref.bk.txid = txid;
	ref.bk.stamp = ns_now_ns();
	ref.bk.seal_parent = parent;
	ref.bk.seal_name = malloc(strlen(name) + 1);
	if (!ref.bk.seal_name) {
		ns_bucket_release(&ref);
		return 1;
	}
	strcpy(ref.bk.seal_name, name);
	r = ns_bucket_store(ns, &ref);
	ns_bucket_release(&ref);
	return r == -EAGAIN ? 1 : r;
}

int ns_intent_copy(struct pohm_dentry *e, const struct pohm_dentry *intent)
{
	e->intent = intent->intent;
	e->i_txid = intent->i_txid;
	e->i_dir = intent->i_dir;
	e->i_time = ns_now_ns();
	e->i_replaced = intent->i_replaced;
	e->i_flags = intent->i_flags;
	free(e->i_name);
	e->i_name = NULL;
	if (!intent->i_name)
		return 0;
	/* (malloc, not strdup: the library's allocator must own it) */
	e->i_name = malloc(strlen(intent->i_name) + 1);
	if (!e->i_name)
		return -ENOMEM;
	strcpy(e->i_name, intent->i_name);
	return 0;
}

int ns_rmdir_begin_along(struct pohm_ns *ns, uint64_t pdir, const char *name, uint64_t dino,
			 const struct pohm_dentry *intent, int *st_intent, int *st_seal)
{
	struct pohm_buf pb = POHM_BUF_INIT, rb = POHM_BUF_INIT;
	struct ns_bucket_ref pref, root;
	struct pohm_kv_val v;
	const char *keys[2];
	const void *datas[2];
	size_t lens[2];
	const uint8_t *expects[2];
	int st[2], i, r = 1;

	if (!ns->kv.ops->put_n || bucket_peek(ns, pdir, name, &pref))
		return 1;
	empty_bucket(ns, &root, dino, 0, 0);
	i = pohm_bucket_find(&pref.bk, name);
	if (i < 0 || pref.bk.e[i].intent || pref.bk.e[i].ino != dino ||
	    pref.bk.e[i].type != DT_DIR)
		goto out;
	/* The root's copy: an empty NORMAL root (no split below), or none
	 * kept: created sealed (ns_seal_first). */
	if (!ns_peek(ns, root.key, &v)) {
		if (bucket_from(&v, dino, 0, 0, &root)) {
			empty_bucket(ns, &root, dino, 0, 0);
			goto out;
		}
		if (root.bk.state != POHM_BUCKET_NORMAL || root.bk.n)
			goto out;
	}
	r = ns_intent_copy(&pref.bk.e[i], intent);
	if (r)
		goto out;
	pref.bk.txid = ns_random(ns);	/* a fresh tag (ns_bucket_store) */
	root.bk.state = POHM_BUCKET_SEALED_WITH;
	root.bk.txid = intent->i_txid;
	root.bk.stamp = ns_now_ns();
	root.bk.seal_parent = pdir;
	free(root.bk.seal_name);
	root.bk.seal_name = malloc(strlen(name) + 1);
	r = root.bk.seal_name ? 0 : -ENOMEM;
	if (!r)
		strcpy(root.bk.seal_name, name);
	if (!r)
		r = pohm_bucket_encode(&pb, &pref.bk);
	if (!r)
		r = pohm_bucket_encode(&rb, &root.bk);
	if (r)
		goto out;
	keys[0] = pref.key;
	datas[0] = pb.p;
	lens[0] = pb.len;
	expects[0] = pref.csum;
	keys[1] = root.key;
	datas[1] = rb.p;
	lens[1] = rb.len;
	expects[1] = root.absent ? POHM_KV_ABSENT : root.csum;
	r = ns->kv.ops->put_n(ns->kv.ctx, 2, keys, datas, lens, expects, st);
	if (r) {
		r = r == -EINVAL || r == -ENOMEM ? 1 : r;	/* nothing sent */
		goto out;
	}
	*st_intent = st[0] == -EEXIST ? -EAGAIN : st[0];
	*st_seal = st[1] == -EEXIST ? -EAGAIN : st[1];
out:
	pohm_buf_free(&pb);
	pohm_buf_free(&rb);
	ns_bucket_release(&pref);
	ns_bucket_release(&root);
	return r;
}

int ns_rmdir_finish_along(struct pohm_ns *ns, uint64_t pdir, const char *name, uint64_t txid,
			  struct ns_put *also, size_t nalso)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct ns_bucket_ref ref;
	int i, r = 1;

	if (!ns->kv.ops->put_n || nalso + 1 > POHM_KV_PUT_N || bucket_peek(ns, pdir, name, &ref))
		return 1;
	i = pohm_bucket_find(&ref.bk, name);
	if (i < 0 || ref.bk.e[i].intent != POHM_INTENT_RMDIR_SEALED || ref.bk.e[i].i_txid != txid)
		goto out;
	pohm_bucket_remove(&ref.bk, (uint32_t)i);
	r = bucket_put_along(ns, &ref, &b, also, nalso);
out:
	pohm_buf_free(&b);
	ns_bucket_release(&ref);
	return r;
}

int ns_unseal_with(struct pohm_ns *ns, uint64_t dino, uint64_t txid)
{
	struct ns_bucket_ref root;
	unsigned attempt;
	int r;

	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = bucket_read(ns, dino, 0, 0, &root);
		if (r)
			return r == -ENOENT ? 0 : r;
		if (root.bk.state != POHM_BUCKET_SEALED_WITH || root.bk.txid != txid) {
			ns_bucket_release(&root);
			return 0;
		}
		r = unseal(ns, &root);
		ns_bucket_release(&root);
		if (r != -EAGAIN)
			return r;
	}
	return -EBUSY;
}

int ns_entry_move_ready(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t sino,
			uint64_t ddir, const char *dname, struct pohm_dentry *src)
{
	struct ns_bucket_ref sref, dref;
	int i, r = 0;

	if (!sino || sdir == ddir || bucket_peek(ns, sdir, sname, &sref))
		return 0;
	if (bucket_peek(ns, ddir, dname, &dref)) {
		ns_bucket_release(&sref);
		return 0;
	}
	i = pohm_bucket_find(&sref.bk, sname);
	/* A moved-in source (decision 0067) too: the intent's write settles
	 * its own source first. */
	if (i >= 0 && NS_PLAIN(&sref.bk.e[i]) && sref.bk.e[i].ino == sino &&
	    sref.bk.e[i].type != DT_DIR && pohm_bucket_find(&dref.bk, dname) < 0 &&
	    ns_inode_peeked(ns, sino))
		r = src ? (ns_entry_copy(src, &sref.bk.e[i]) ? 0 : 1) : 1;
	if (r && src)
		ns_intent_drop(src);
	ns_bucket_release(&sref);
	ns_bucket_release(&dref);
	return r;
}

int ns_entry_rename_ready(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			  const char *dname)
{
	struct ns_bucket_ref ref;
	int i, r;

	if (!sino || !strcmp(sname, dname) || bucket_peek(ns, dir, sname, &ref))
		return 0;
	i = pohm_bucket_find(&ref.bk, sname);
	r = index_at(pohm_name_hash(dname), ref.bk.depth) == ref.bk.index && i >= 0 &&
	    NS_PLAIN(&ref.bk.e[i]) && ref.bk.e[i].ino == sino &&
	    pohm_bucket_find(&ref.bk, dname) < 0;
	ns_bucket_release(&ref);
	return r && ns_inode_peeked(ns, sino);
}

int ns_entry_rename_peeked(struct pohm_ns *ns, uint64_t dir, const char *sname,
			   const char *dname, unsigned flags, uint64_t txid, struct pohm_dentry *src,
			   uint64_t *replaced, uint8_t *replaced_type, struct ns_put *also,
			   uint64_t also_ino)
{
	struct ns_bucket_ref ref;
	int i, j, r;

	memset(src, 0, sizeof(*src));
	*replaced = 0;
	*replaced_type = 0;
	if ((flags & POHM_RENAME_EXCHANGE) || !strcmp(sname, dname) ||
	    bucket_peek(ns, dir, sname, &ref))
		return 1;
	i = pohm_bucket_find(&ref.bk, sname);
	j = pohm_bucket_find(&ref.bk, dname);
	/* Only the plain case; every refusal (EEXIST, ENOTDIR, EISDIR, two
	 * names of one inode) may be stale news: the caller's reads judge. */
	if (index_at(pohm_name_hash(dname), ref.bk.depth) != ref.bk.index || i < 0 ||
	    !NS_PLAIN(&ref.bk.e[i]) ||
	    (j >= 0 && (!NS_PLAIN(&ref.bk.e[j]) || (flags & POHM_RENAME_NOREPLACE) ||
			ref.bk.e[j].type == DT_DIR || ref.bk.e[i].type == DT_DIR ||
			ref.bk.e[j].ino == ref.bk.e[i].ino))) {
		ns_bucket_release(&ref);
		return 1;
	}
	r = move_settle(ns, dir, &ref, i, j);
	if (!r)
		r = ns_entry_copy(src, &ref.bk.e[i]);
	if (r) {
		ns_bucket_release(&ref);
		return r;
	}
	r = 1;
	if (also && ref.bk.e[i].ino == also_ino)
		r = bucket_move_along(ns, &ref, i, j, dname, txid, replaced, replaced_type, also);
	if (r == 1)
		r = bucket_move_entry(ns, &ref, i, j, dname, txid, replaced, replaced_type);
	ns_bucket_release(&ref);
	if (r == -EAGAIN)
		r = 1;		/* lost the CAS: nothing written */
	if (r && !NS_UNSURE(r)) {
		pohm_dentry_clear(src);
		*replaced = 0;
		*replaced_type = 0;
	}
	return r;
}

int ns_entry_remove(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino)
{
	struct ns_bucket_ref ref;
	unsigned attempt, unsure = 0;
	int i, r;

	r = remove_peeked(ns, dir, name, ino);
	if (!r)
		return 0;
	if (r != 1) {
		if (!NS_UNSURE(r))
			return r;
		unsure = 1;	/* outcome unknown: the loop's read tells */
	}
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		r = ns_bucket_locate(ns, dir, name, &ref);
		if (r)
			return r;
		i = pohm_bucket_find(&ref.bk, name);
		if (i < 0 || (ino && ref.bk.e[i].ino != ino)) {
			ns_bucket_release(&ref);
			/*
			 * A lost put left nothing of ours (kv.h -EAGAIN), so a
			 * name gone now was removed by someone else -- or, after
			 * a put whose outcome was unknown, maybe by us.
			 */
			return unsure ? -ESTALE : -ENOENT;
		}
		r = ns_bucket_prepare(ns, dir, &ref);
		if (!r && ref.bk.e[i].intent == POHM_INTENT_MOVED_IN) {
			r = ns_moved_settle(ns, dir, &ref.bk.e[i]);	/* its source first */
		} else if (!r && ref.bk.e[i].intent) {
			r = ns_intent_resolve(ns, dir, &ref, i);
			r = r == 1 ? -EAGAIN : (r == 0 ? -EAGAIN : r);	/* wait for it, or relocate */
		}
		if (!r) {
			pohm_bucket_remove(&ref.bk, (uint32_t)i);
			r = ns_bucket_store(ns, &ref);
			if (NS_UNSURE(r) && unsure++ < NS_UNSURE_RETRIES)
				r = -EAGAIN;	/* outcome unknown: the next read tells */
		}
		ns_bucket_release(&ref);
		if (r == -EAGAIN)
			continue;
		return r;
	}
	return -EBUSY;
}

/* ---------------------------------------------------------------- walk */

/*
 * A SPLITTING bucket met by a walk: *have gets bit c set for each child
 * (c = hash bit d) that exists, and the entries of those halves are dropped
 * from ref, which then holds only the halves its snapshot is current for
 * (as in ns_bucket_locate).  Such a ref is for reading: fn must not store a
 * SPLITTING bucket (seal_fn refuses one with -ENOTEMPTY).
 */
static int splitting_children(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref,
			      unsigned *have)
{
	unsigned d = ref->bk.depth, c;
	uint32_t i;
	int r;

	*have = 0;
	for (c = 0; c < 2; c++) {
		r = child_present(ns, dir, d + 1, ref->bk.index | (c ? 1u << d : 0));
		if (r < 0)
			return r;
		if (r)
			*have |= 1u << c;
	}
	for (i = ref->bk.n; i > 0 && *have; i--) {
		c = (unsigned)((pohm_name_hash(ref->bk.e[i - 1].name) >> d) & 1);
		if (*have & (1u << c))
			pohm_bucket_remove(&ref->bk, i - 1);
	}
	return 0;
}

struct walk_level {
	struct { uint8_t depth; uint32_t index; } *b;	/* this level's buckets */
	size_t n, cap;
};

static int level_add(struct walk_level *l, unsigned depth, uint32_t index)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->b, cap * sizeof(*l->b));

		if (!p)
			return -ENOMEM;
		l->b = p;
		l->cap = cap;
	}
	l->b[l->n].depth = (uint8_t)depth;
	l->b[l->n++].index = index;
	return 0;
}

void ns_inodes_take(struct pohm_ns *ns, size_t n, const uint64_t *inos, const uint8_t *head,
		    const struct pohm_kv_val *v, struct pohm_inode *out, int *st)
{
	size_t i;

	/* Each as ns_inode_get and pohm_ns_getattr judge it. */
	for (i = 0; i < n; i++) {
		struct pohm_inode *in = &out[i];
		int hd = head && head[i];

		if (st[i])
			continue;
		if (hd ? pohm_inode_decode_head(in, v[i].data, v[i].len)
		       : pohm_inode_decode(in, v[i].data, v[i].len)) {
			memset(in, 0, sizeof(*in));
			st[i] = -EIO;
		} else if (in->ino != inos[i]) {
			pohm_inode_clear(in);
			st[i] = -EIO;
		} else if (in->hdr.flags & POHM_OBJF_TOMBSTONE) {
			pohm_inode_clear(in);
			st[i] = -ENOENT;
		} else if (!hd && (st[i] = pohm_ns_map_load(ns, in))) {
			pohm_inode_clear(in);
		}
	}
}

/*
 * Read level cur's buckets together into refs/st (st[i]: 0, -ENOENT,
 * -errno); with_dir: dir's inode along (a check as check_dir's: 0,
 * -ENOTDIR, -ENOENT, -errno in *dir_st); along (NULL: none): its inodes
 * too, judged into along->out/st (head only).
 */
static int level_read(struct pohm_ns *ns, uint64_t dir, const struct walk_level *cur,
		      struct ns_bucket_ref *refs, int *st, int with_dir, int *dir_st,
		      struct pohm_ns_along *along)
{
	size_t na = along ? along->n : 0, nd = cur->n + (with_dir ? 1 : 0), n = nd + na, i;
	struct pohm_kv_val *v = calloc(n, sizeof(*v));
	const char **kp = calloc(n, sizeof(*kp));
	int *vs = calloc(n, sizeof(*vs));
	char ikey[POHM_KEY_MAX], (*akeys)[POHM_KEY_MAX] = na ? calloc(na, sizeof(*akeys)) : NULL;
	uint8_t *head = na ? malloc(na) : NULL;
	int r = v && kp && vs && (!na || (akeys && head)) ? 0 : -ENOMEM;

	for (i = 0; !r && i < cur->n; i++) {
		pohm_key_bucket(refs[i].key, dir, cur->b[i].depth, cur->b[i].index);
		kp[i] = refs[i].key;
	}
	if (!r && with_dir) {
		pohm_key_inode(ikey, dir);
		kp[cur->n] = ikey;
	}
	for (i = 0; !r && i < na; i++) {
		pohm_key_inode(akeys[i], along->inos[i]);
		kp[nd + i] = akeys[i];
		head[i] = 1;
	}
	if (!r && ns->kv.ops->get_n)
		r = ns->kv.ops->get_n(ns->kv.ctx, n, kp, v, vs);
	else
		for (i = 0; !r && i < n; i++)
			vs[i] = ns->kv.ops->get(ns->kv.ctx, kp[i], &v[i]);
	if (!r && with_dir) {
		/* As ns_inode_get, then check_dir. */
		struct pohm_inode in;

		*dir_st = vs[cur->n];
		if (!*dir_st && pohm_inode_decode(&in, v[cur->n].data, v[cur->n].len)) {
			*dir_st = -EIO;
		} else if (!*dir_st) {
			if (in.ino != dir)
				*dir_st = -EIO;
			else if (in.hdr.flags & POHM_OBJF_TOMBSTONE)
				*dir_st = -ENOENT;
			else if (!S_ISDIR(in.mode))
				*dir_st = -ENOTDIR;
			pohm_inode_clear(&in);
		}
		pohm_kv_val_free(&v[cur->n]);
	}
	if (!r && na) {
		memcpy(along->st, vs + nd, na * sizeof(*vs));
		ns_inodes_take(ns, na, along->inos, head, v + nd, along->out, along->st);
	}
	for (i = 0; !r && i < cur->n; i++) {
		st[i] = vs[i];
		if (!st[i])
			st[i] = bucket_from(&v[i], dir, cur->b[i].depth, cur->b[i].index, &refs[i]);
	}
	for (i = 0; v && i < na; i++)
		pohm_kv_val_free(&v[nd + i]);
	free(v);
	free(kp);
	free(vs);
	free(akeys);
	free(head);
	return r;
}

int ns_bucket_walk_read(struct pohm_ns *ns, uint64_t dir, int check,
			int (*fn)(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg),
			void *arg, struct pohm_ns_along *along)
{
	struct walk_level cur = { 0 }, next = { 0 }, t;
	struct ns_bucket_ref *refs = NULL;
	struct pohm_ns_along part = { 0 };
	int *st = NULL, r, dir_st = 0;
	size_t i, aoff = 0;

	for (i = 0; along && i < along->n; i++) {
		memset(&along->out[i], 0, sizeof(along->out[i]));
		along->st[i] = -EIO;	/* until read */
	}
	r = level_add(&cur, 0, 0);
	while (!r && (cur.n || (along && aoff < along->n))) {
		/* The inodes along fill each level's round trip up to a get_n
		 * round (POHM_KV_GET_N_ROUND keys), the first level's first;
		 * what the levels leave goes in rounds of its own after. */
		size_t used = cur.n + (check ? 1 : 0);
		size_t room = used < POHM_KV_GET_N_ROUND ? POHM_KV_GET_N_ROUND - used : 0;

		if (along && aoff < along->n) {
			part.n = along->n - aoff < room || !cur.n ? along->n - aoff : room;
			part.inos = along->inos + aoff;
			part.out = along->out + aoff;
			part.st = along->st + aoff;
			aoff += part.n;
		} else {
			part.n = 0;
		}
		refs = cur.n ? calloc(cur.n, sizeof(*refs)) : NULL;
		st = cur.n ? calloc(cur.n, sizeof(*st)) : NULL;
		r = (refs && st) || !cur.n ?
			level_read(ns, dir, &cur, refs, st, check, &dir_st, part.n ? &part : NULL) :
			-ENOMEM;
		if (!r && check && dir_st)
			r = dir_st;	/* not a live directory: nothing walked */
		check = 0;
		/* Each bucket as ns_bucket_walk treats it. */
		for (i = 0; i < cur.n; i++) {
			unsigned d = cur.b[i].depth, have = 0;
			uint32_t idx = cur.b[i].index;
			struct ns_bucket_ref *ref = &refs[i];
			int x = st[i];

			if (r) {
				if (!x)
					ns_bucket_release(ref);
				continue;	/* stopped: only releasing what was read */
			}
			if (x == -ENOENT) {
				if (d)
					continue;	/* a SPLIT parent always has its children */
				empty_bucket(ns, ref, dir, 0, 0);
			} else if (x) {
				r = x;
				continue;
			}
			if (ref->bk.state == POHM_BUCKET_SPLIT && d < 40) {
				have = 3;
			} else if (ref->bk.state == POHM_BUCKET_SPLITTING && d < 40) {
				r = splitting_children(ns, dir, ref, &have);
				if (r) {
					ns_bucket_release(ref);
					continue;
				}
			}
			if (!r && (have & 1))
				r = level_add(&next, d + 1, idx);
			if (!r && (have & 2))
				r = level_add(&next, d + 1, idx | (1u << d));
			if (!r && have != 3)
				r = fn(ns, ref, arg);	/* a leaf, or a SPLITTING one's halves */
			ns_bucket_release(ref);
		}
		free(refs);
		free(st);
		refs = NULL;
		st = NULL;
		t = cur;
		cur = next;
		next = t;
		next.n = 0;
	}
	free(cur.b);
	free(next.b);
	return r;
}

int ns_bucket_walk(struct pohm_ns *ns, uint64_t dir,
		   int (*fn)(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg), void *arg)
{
	struct { uint8_t depth; uint32_t index; } *stack;
	size_t top = 0, cap = 64;
	struct ns_bucket_ref ref;
	int r = 0;

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[top].depth = 0;
	stack[top++].index = 0;
	while (top && !r) {
		unsigned d, have = 0;
		uint32_t idx;

		top--;
		d = stack[top].depth;
		idx = stack[top].index;
		r = bucket_read(ns, dir, d, idx, &ref);
		if (r == -ENOENT) {
			r = 0;
			if (d)
				continue;	/* a SPLIT parent always has its children; be lenient */
			empty_bucket(ns, &ref, dir, 0, 0);
		} else if (r) {
			break;
		}
		if (ref.bk.state == POHM_BUCKET_SPLIT && d < 40) {
			have = 3;
		} else if (ref.bk.state == POHM_BUCKET_SPLITTING && d < 40) {
			r = splitting_children(ns, dir, &ref, &have);
			if (r) {
				ns_bucket_release(&ref);
				break;
			}
		}
		if (have) {
			if (top + 2 > cap) {
				void *n = realloc(stack, cap * 2 * sizeof(*stack));

				if (!n) {
					r = -ENOMEM;
					ns_bucket_release(&ref);
					break;
				}
				stack = n;
				cap *= 2;
			}
			if (have & 2) {
				stack[top].depth = (uint8_t)(d + 1);
				stack[top++].index = idx | (1u << d);
			}
			if (have & 1) {
				stack[top].depth = (uint8_t)(d + 1);
				stack[top++].index = idx;
			}
		}
		if (have != 3)
			r = fn(ns, &ref, arg);	/* a leaf, or a SPLITTING one's halves without a child */
		ns_bucket_release(&ref);
	}
	free(stack);
	return r;
}

/* ---------------------------------------------------------------- move commit */

/* Moved from nsops.c (session 13, issue 20): ns_intent_resolve and the
 * rename both commit a MOVE intent through it. */
int ns_move_commit(struct pohm_ns *ns, const struct pohm_dentry *e, uint64_t *replaced,
		   uint8_t *replaced_type)
{
	return ns_move_commit_from(ns, 0, e, NULL, replaced, replaced_type, NULL);
}

/* Give d (the destination entry just written by e's commit) the MOVED_IN
 * mark naming (sdir, e->name) when e is a marked MOVE: 0 or -ENOMEM.  An
 * older mark goes; another operation's intent on d (in progress, kept as
 * before decision 0067) stays, and d is then not marked. */
static int move_mark(struct pohm_dentry *d, uint64_t sdir, const struct pohm_dentry *e)
{
	struct pohm_dentry m = { 0 };

	if (d->intent == POHM_INTENT_MOVED_IN)
		ns_intent_drop(d);
	if (d->intent || !(e->i_flags & POHM_MOVE_MARKED))
		return 0;
	m.intent = POHM_INTENT_MOVED_IN;
	m.i_txid = e->i_txid;
	m.i_dir = sdir;
	m.i_name = e->name;
	return ns_intent_copy(d, &m);
}

int ns_move_commit_from(struct pohm_ns *ns, uint64_t sdir, const struct pohm_dentry *e,
			const struct ns_deadline *until, uint64_t *replaced,
			uint8_t *replaced_type, struct ns_put *also)
{
	struct ns_bucket_ref ref;
	unsigned attempt;
	int i, r, peeked;

	*replaced = 0;
	*replaced_type = 0;
	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		/* The first look: the target's bucket as this thread's lookup
		 * just read it (issue 23), for the CAS of the plain cases only. */
		peeked = !attempt && !ns_bucket_peek(ns, e->i_dir, e->i_name, &ref);
		if (!peeked) {
			r = ns_bucket_locate(ns, e->i_dir, e->i_name, &ref);
			if (r)
				return r;
		}
		r = ns_bucket_prepare(ns, e->i_dir, &ref);
		i = r ? -1 : pohm_bucket_find(&ref.bk, e->i_name);
		if (peeked && (r || (i >= 0 ? ref.bk.e[i].intent || ref.bk.e[i].ino == e->ino ||
					  (e->i_flags & POHM_RENAME_NOREPLACE) ||
					  ref.bk.e[i].ino != e->i_replaced :
					  (e->i_flags & POHM_RENAME_EXCHANGE) || e->i_replaced ||
					  ref.bk.n >= ns->bucket_max))) {
			ns_bucket_release(&ref);
			continue;	/* maybe stale news: decide on a read */
		}
		if (!r && i >= 0) {
			struct pohm_dentry *d = &ref.bk.e[i];

			if (d->ino == e->ino && d->txid == e->i_txid) {
				ns_bucket_release(&ref);
				return 0;		/* already committed */
			}
			if (d->intent && d->intent != POHM_INTENT_MOVED_IN)
				r = ns_intent_resolve(ns, e->i_dir, &ref, i) == 1 ? 0 : -EAGAIN;
			if (!r && (e->i_flags & POHM_RENAME_NOREPLACE))
				r = -EEXIST;
			if (!r && d->ino != e->i_replaced)
				r = -EEXIST;		/* the target changed since we checked */
			if (!r)		/* a moved-in target: its source first */
				r = ns_moved_settle(ns, e->i_dir, d);
			if (!r) {
				*replaced = d->ino;
				*replaced_type = d->type;
				d->ino = e->ino;
				d->type = e->type;
				d->txid = e->i_txid;
				r = move_mark(d, sdir, e);
			}
		} else if (!r) {
			struct pohm_dentry n = { 0 };

			if (e->i_flags & POHM_RENAME_EXCHANGE)
				r = -ENOENT;
			else if (e->i_replaced)
				r = -EEXIST;		/* the target we meant to replace vanished */
			if (!r)
				r = ns_bucket_maybe_split(ns, &ref) ? -EAGAIN : 0;
			n.name = e->i_name;
			n.ino = e->ino;
			n.type = e->type;
			n.txid = e->i_txid;
			if (!r)
				r = pohm_bucket_add(&ref.bk, &n);
			if (!r)
				r = move_mark(&ref.bk.e[ref.bk.n - 1], sdir, e);
		}
		if (!r && until && (pohm_sys_boot_ns() >= until->boot_ns ||
				    ns_now_ns() >= until->real_ns))
			r = -ETIME;	/* past the renamer's deadline: a resolver may fence */
		if (!r && also && also->st == 1 && peeked)	/* first attempt (0022) */
			r = ns_bucket_store_along(ns, &ref, also);
		else if (!r)
			r = 1;
		if (r == 1)
			r = ns_bucket_store(ns, &ref);
		ns_bucket_release(&ref);
		if (r != -EAGAIN)
			return r;
	}
	return -EBUSY;
}
