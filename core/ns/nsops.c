/*
 * nsops.c — namespace operations: lookup, create, mkdir, symlink, link,
 * unlink, rmdir, rename, readdir.
 *
 * Orders (DESIGN.md §3, "multi-object changes"), each with one commit point:
 *   create/mkdir/symlink: write the new inode (create-if-absent; an orphan
 *     inode is harmless) and insert the entry (commit); mkdir raises the
 *     parent's nlink (a count too high is repaired by fsck).  When the
 *     lookup's copies allow, all of these go out at once in one put_n
 *     (decision 0022): an entry whose inode is missing reads as absent
 *     (dangling_settle, fsck by age), and a parent count the entry got
 *     ahead of is raised at once; else in that order, one after another.
 *   link: nlink+1 first, then insert the entry (commit).
 *   unlink: remove the entry (commit), then nlink-1 (tombstone at 0).
 *   rmdir: RMDIR intent on the entry, seal every (empty) bucket of the
 *     directory, remove the entry (commit), tombstone the inode.
 *   rename: MOVE intent on the source entry, set the destination entry
 *     (commit), remove (or, for EXCHANGE, repoint) the source.  Whoever meets
 *     a MOVE intent completes it (nsdir.c ns_intent_resolve).
 * A directory moving to another parent holds the per-fsid rename lease and
 * checks ancestry through the parent inodes, so no cycle can be built.
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
#include "sys.h"

/* ---------------------------------------------------------------- lookup */

/* dir must be a live directory: 0, -ENOENT, -ENOTDIR. */
static int check_dir(struct pohm_ns *ns, uint64_t dir)
{
	struct pohm_inode in;
	int r = ns_inode_get(ns, dir, &in, NULL, 0);

	if (r)
		return r;
	r = S_ISDIR(in.mode) ? 0 : -ENOTDIR;
	pohm_inode_clear(&in);
	return r;
}

/* The entry dir/name; a missing one is -ENOENT only if dir is a live
 * directory.  The directory and the name's bucket are read together
 * (ns_dir_lookup): a missing name costs one round trip, not two. */
static int entry_from(struct pohm_ns *ns, uint64_t dir, const char *name, int r,
		      struct pohm_dentry *e);

static int entry_of_with(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t also,
			 struct pohm_dentry *e)
{
	return entry_from(ns, dir, name, ns_dir_lookup_with(ns, dir, name, also, e), e);
}

/* entry_of_with's answer from what ns_dir_lookup_with said (r). */
static int entry_from(struct pohm_ns *ns, uint64_t dir, const char *name, int r,
		      struct pohm_dentry *e)
{
	int d;

	if (r == NS_NAME_ABSENT)
		return -ENOENT;
	if (r == NS_NAME_UNKNOWN)
		return ns_entry_get(ns, dir, name, e);	/* dir is live: -ENOENT is the name's */
	if (r != -EIO && r != -ETIMEDOUT)
		return r;
	/* The storage failed on one of the two (the directory's inode is a hot
	 * object: every mkdir in it CASes it): the name alone, as before. */
	r = ns_entry_get(ns, dir, name, e);
	if (r != -ENOENT)
		return r;
	d = check_dir(ns, dir);
	return d ? d : r;
}

static int entry_of(struct pohm_ns *ns, uint64_t dir, const char *name, struct pohm_dentry *e)
{
	return entry_of_with(ns, dir, name, 0, e);
}

int pohm_ns_lookup(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
		   uint8_t *type)
{
	struct pohm_dentry e;
	int r;

	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		struct pohm_inode in;

		r = ns_inode_get(ns, dir, &in, NULL, 0);
		if (r)
			return r;
		if (!S_ISDIR(in.mode)) {
			pohm_inode_clear(&in);
			return -ENOTDIR;
		}
		*ino = name[1] ? in.hdr.parent : dir;
		if (type)
			*type = DT_DIR;
		pohm_inode_clear(&in);
		return 0;
	}
	r = ns_check_name(name);
	if (r)
		return r;
	r = entry_of(ns, dir, name, &e);
	if (r)
		return r;
	*ino = e.ino;
	if (type)
		*type = e.type;
	pohm_dentry_clear(&e);
	return 0;
}

/* ---------------------------------------------------------------- create */

/* A new inode's attributes with a fresh random number (not written yet;
 * in->target is the caller's, or NULL). */
static void inode_fill(struct pohm_ns *ns, uint64_t parent, uint32_t mode, uint32_t uid,
		       uint32_t gid, uint64_t rdev, const char *target, struct pohm_inode *in)
{
	char key[POHM_KEY_MAX];

	do {
		memset(in, 0, sizeof(*in));
		in->ino = ns_random(ns) >> 1;
	} while (in->ino <= POHM_ROOT_INO);
	pohm_key_inode(key, in->ino);
	ns_hdr(ns, &in->hdr, POHM_OBJ_INODE, parent, key);
	in->mode = mode;
	in->uid = uid;
	in->gid = gid;
	in->rdev = rdev;
	in->nlink = S_ISDIR(mode) ? 2 : 1;
	in->chunk_shift = (uint8_t)ns->chunk_shift;
	in->version = 1;
	ns_now_ts(&in->mtime);
	in->atime = in->ctime = in->btime = in->mtime;
	in->target = (char *)target;
	in->size = target ? strlen(target) : 0;
}

/* in->target as its own copy of target (the caller's until now). */
static int inode_own_target(struct pohm_inode *in, const char *target)
{
	in->target = NULL;
	if (!target)
		return 0;
	in->target = malloc(strlen(target) + 1);
	if (!in->target)
		return -ENOMEM;
	strcpy(in->target, target);
	return 0;
}

/* Write a new inode with a fresh random number (create-if-absent). */
static int inode_new(struct pohm_ns *ns, uint64_t parent, uint32_t mode, uint32_t uid,
		     uint32_t gid, uint64_t rdev, const char *target, struct pohm_inode *in)
{
	int tries, r = -EBUSY;

	for (tries = 0; tries < 8; tries++) {
		inode_fill(ns, parent, mode, uid, gid, rdev, target, in);
		r = ns_inode_put(ns, in, POHM_KV_NEW);	/* a random number: no race */
		in->target = NULL;
		if (r != -EEXIST)
			break;		/* -EEXIST: the number is taken; draw another */
	}
	if (!r)
		r = inode_own_target(in, target);
	return r;
}

/*
 * The new inode and its entry in one round trip (issue 23, decision 0022):
 * the inode's create-new and the insert into the bucket this thread just
 * read (ns_entry_insert_along), sent together; for a directory also the
 * parent's link count + 1 on the copy of the parent the lookup just read,
 * and the new directory's empty root bucket (decision 0079).
 * Any of them may land without the others (no order, and the writer may
 * die between): an inode without its entry is an orphan (fsck collects
 * it, as before), so is a bucket without its inode (by age); an entry whose inode is not there reads as absent
 * (getattr -ENOENT; dangling_settle; fsck by age); a parent count too high
 * is fsck's, as before; one too low (the entry in, the count's CAS lost
 * or not landed) is raised by the caller at once (*parent_done 0), and
 * only a writer that dies in between leaves it for fsck.
 * 0: all written (*in, e->ino set); 1: the entry lost its CAS or its
 * outcome is unknown, with the inode written (*in, e->ino set): the caller
 * goes on as after inode_new (the reading insert); 2: nothing sent
 * (inode_new and insert as before); -errno: failed, nothing of ours named.
 * *parent_done: the parent's count is known raised by this call.
 */
static int make_together(struct pohm_ns *ns, uint64_t dir, struct pohm_dentry *e,
			 uint32_t mode, uint32_t uid, uint32_t gid, uint64_t rdev,
			 const char *target, struct pohm_inode *in, int *parent_done)
{
	struct pohm_buf b = POHM_BUF_INIT, pb = POHM_BUF_INIT, bb = POHM_BUF_INIT;
	uint8_t pcsum[POHM_KV_CSUM];
	char pkey[POHM_KEY_MAX], bkey[POHM_KEY_MAX];
	struct ns_put p[3];
	size_t n = 1;
	int r, delta = 1;

	*parent_done = 0;
	inode_fill(ns, dir, mode, uid, gid, rdev, target, in);
	r = pohm_inode_encode(&b, in);
	in->target = NULL;
	if (r)
		goto out;
	e->ino = in->ino;
	memset(p, 0, sizeof(p));
	p[0].st = p[1].st = p[2].st = 1;	/* not sent */
	p[0].key = in->hdr.key;
	p[0].data = b.p;
	p[0].len = b.len;
	p[0].expect = POHM_KV_NEW;
	if (S_ISDIR(mode)) {
		/* The parent as the lookup just read it (no copy: not together). */
		if (ns_inode_change_peeked(ns, dir, ns_nlink_fn, &delta, &pb, pcsum)) {
			r = 2;
			goto out;
		}
		pohm_key_inode(pkey, dir);
		p[1].key = pkey;
		p[1].data = pb.p;
		p[1].len = pb.len;
		p[1].expect = pcsum;
		n = 2;
		/*
		 * Its empty root bucket, so that its first entry (a create, a
		 * rename into it) has a copy to change without a read, in this
		 * process and the next (decision 0079).  Lost or refused: the
		 * first entry creates it, as before.
		 */
		if (!ns_bucket_new_root(ns, in->ino, &bb, bkey)) {
			p[2].key = bkey;
			p[2].data = bb.p;
			p[2].len = bb.len;
			p[2].expect = POHM_KV_NEW;
			n = 3;
		}
	}
	r = ns_entry_insert_along(ns, dir, e, p, n);
	if (r == 1 || p[0].st == 1) {
		r = r == 1 || !r ? 2 : r;	/* nothing sent (or failed before) */
		goto out;
	}
	*parent_done = n >= 2 && !p[1].st;
	if (!p[0].st) {
		if (inode_own_target(in, target))
			r = -ENOMEM;	/* (the entry, if in, names a live inode) */
		else
			r = r ? 1 : 0;	/* lost or unsure: the reading insert settles it */
		goto out;
	}
	/*
	 * The inode was not written (the number was taken: -EEXIST, or the
	 * storage failed).  Our entry, where it landed, would name another
	 * inode or none: take it out (by name and number: nobody else has
	 * this pair); what cannot be taken out now fsck removes by age.
	 */
	if (r != -EAGAIN)
		ns_entry_remove(ns, dir, e->name, e->ino);
	r = p[0].st == -EEXIST ? 2 : p[0].st;
out:
	pohm_buf_free(&b);
	pohm_buf_free(&pb);
	pohm_buf_free(&bb);
	return r;
}

/*
 * An inode whose entry could not be inserted.  It is left in place, not
 * deleted: a bucket write reported as failed may still surface later (a
 * minority version spread by repair), and its entry must then point at a
 * live inode.  An inode that never got a name is an orphan for fsck.
 */
static void inode_discard(struct pohm_ns *ns, struct pohm_inode *in)
{
	(void)ns;
	pohm_inode_clear(in);
}

/*
 * dir/name names ino, which is not there (pohm_ns_getattr said -ENOENT):
 * a create of another writer whose inode has not landed yet (its inode and
 * entry go out together, decision 0022), or one that died with only the
 * entry written.  The inode is read again with growing pauses for up to
 * the intent timeout (longer than a write may stay undecided): 0 with *out
 * when it appears; else the entry is taken out (by name and number, so
 * nothing newer goes) and -ENOENT says the name is free; -errno.
 */
static int dangling_settle(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			   struct pohm_inode *out)
{
	/* The monotonic clock: a wait on the real-time clock ended at once
	 * when it stepped back (now - t0 wrapped; test_nsclock). */
	uint64_t t0 = pohm_sys_mono_ns();
	unsigned attempt = 1;
	int r;

	do {
		if (attempt < 8) {
			ns_backoff(ns, attempt++);	/* a create in flight: soon */
		} else {
			struct timespec ts = { 0, 50000000 };	/* then every 50 ms */

			nanosleep(&ts, NULL);
		}
		r = pohm_ns_getattr(ns, ino, out);
		if (r != -ENOENT)
			return r;
	} while (pohm_sys_mono_ns() - t0 < ns->intent_timeout_ns);
	pohm_warn("directory %llu: entry \"%s\" names inode %llu, missing for %llu ms: "
		  "taken out (a create that died half-way)", (unsigned long long)dir, name,
		  (unsigned long long)ino, (unsigned long long)(ns->intent_timeout_ns / 1000000));
	r = ns_entry_remove(ns, dir, name, ino);
	return r && r != -ENOENT && r != -ESTALE ? r : -ENOENT;
}

static int make_node(struct pohm_ns *ns, uint64_t dir, const char *name, uint32_t mode,
		     uint32_t uid, uint32_t gid, uint64_t rdev, const char *target,
		     unsigned flags, struct pohm_inode *out)
{
	struct pohm_dentry e = { 0 }, old = { 0 };
	struct pohm_inode in;
	int r, isdir = S_ISDIR(mode), again = 0, parent_done = 0;

	r = ns_check_name(name);
	if (r)
		return r;
	/*
	 * The bucket this thread read or wrote within 2 s (the create before,
	 * in a tar -x or a checkout) lacks the name: no lookup at all, the
	 * insert's CAS on that copy decides (it succeeds only if the copy was
	 * the committed bucket: NORMAL, unsealed, hence a live directory,
	 * without the name; decision 0017).  Anything else reads.
	 */
	if (ns_name_absent_peeked(ns, dir, name) && (!isdir || ns_dir_peeked(ns, dir)))
		goto make;	/* (a mkdir also needs the parent's copy, for its count) */
again:
	/* The directory and the name's bucket in one round trip (issue 23);
	 * an exclusive create reads the bucket too, for its insert (ns_peek). */
	r = ns_dir_lookup(ns, dir, name, &e);
	if (r < 0)
		return r;
	if (!r && (flags & POHM_CREATE_EXCL)) {
		pohm_dentry_clear(&e);	/* there, plainly: no inode to make */
		return -EEXIST;
	}
	if (!(flags & POHM_CREATE_EXCL) && r != NS_NAME_ABSENT) {
		uint64_t ino;

		/* The entry alone, unless the first look saw it plainly. */
		if (r == NS_NAME_UNKNOWN)
			r = ns_entry_get(ns, dir, name, &e);
		if (!r) {
			ino = e.ino;
			pohm_dentry_clear(&e);
			memset(&e, 0, sizeof(e));
			if (!out)
				return 1;
			r = pohm_ns_getattr(ns, ino, out);
			if (r != -ENOENT || again++)
				return r ?: 1;
			/* A name whose inode is not there: another create in
			 * flight, or one that died half-way (decision 0022). */
			r = dangling_settle(ns, dir, name, ino, out);
			if (r != -ENOENT)
				return r ?: 1;
			goto again;	/* taken out: the name is free */
		}
		if (r != -ENOENT)
			return r;
	}
make:
	e.name = (char *)name;
	e.type = ns_dtype(mode);
	e.txid = ns_random(ns);
	r = make_together(ns, dir, &e, mode, uid, gid, rdev, target, &in, &parent_done);
	if (!r)
		goto made;
	if (r < 0)
		goto undo_parent;
	if (r == 2) {
		/* As before: the parent's count first (too high is safe). */
		if (isdir && !parent_done) {
			r = ns_inode_nlink(ns, dir, +1);
			if (r)
				return r;
			parent_done = 1;
		}
		r = inode_new(ns, dir, mode, uid, gid, rdev, target, &in);
		if (r)
			goto undo_parent;
		e.ino = in.ino;
	}
	r = ns_entry_insert(ns, dir, &e, &old);
	if (r == -NS_EMAYBE) {
		/* The entry may be in: its inode stays (an orphan at worst,
		 * which fsck collects), and so does the parent's link (raised
		 * now if its CAS did not go through: too high is safe). */
		pohm_inode_clear(&in);
		if (isdir && !parent_done)
			ns_inode_nlink(ns, dir, +1);
		return -EIO;
	}
	if (r) {
		inode_discard(ns, &in);
		if (r == -EEXIST && !(flags & POHM_CREATE_EXCL) && !isdir) {
			r = out ? (pohm_ns_getattr(ns, old.ino, out) ?: 1) : 1;
			pohm_dentry_clear(&old);
			return r;
		}
		pohm_dentry_clear(&old);
		goto undo_parent;
	}
made:
	if (isdir && !parent_done) {
		/* The count's CAS went with the entry and lost (or its outcome
		 * is unknown: one too many is safe): raise it now. */
		r = ns_inode_nlink(ns, dir, +1);
		if (r)
			pohm_warn("directory %llu: link count not raised for \"%s\" (%d): "
				  "one too low until repair", (unsigned long long)dir, name, r);
	}
	if (out)
		*out = in;
	else
		pohm_inode_clear(&in);
	return 0;
undo_parent:
	if (isdir && parent_done)
		ns_inode_nlink(ns, dir, -1);
	return r;
}

int pohm_ns_create(struct pohm_ns *ns, uint64_t dir, const char *name, uint32_t mode,
		   uint32_t uid, uint32_t gid, uint64_t rdev, unsigned flags,
		   struct pohm_inode *out)
{
	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	return make_node(ns, dir, name, mode, uid, gid, rdev, NULL, flags, out);
}

int pohm_ns_mkdir(struct pohm_ns *ns, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, struct pohm_inode *out)
{
	return make_node(ns, dir, name, S_IFDIR | (mode & 07777), uid, gid, 0, NULL,
			 POHM_CREATE_EXCL, out);
}

int pohm_ns_symlink(struct pohm_ns *ns, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, struct pohm_inode *out)
{
	if (!*target)
		return -ENOENT;
	if (strlen(target) >= 4096)
		return -ENAMETOOLONG;
	return make_node(ns, dir, name, S_IFLNK | 0777, uid, gid, 0, target,
			 POHM_CREATE_EXCL, out);
}

int pohm_ns_link(struct pohm_ns *ns, uint64_t ino, uint64_t dir, const char *name,
		 struct pohm_inode *out)
{
	struct pohm_dentry e = { 0 };
	struct pohm_inode in;
	int r;

	r = ns_check_name(name);
	if (r)
		return r;
	r = check_dir(ns, dir);
	if (r)
		return r;
	r = ns_inode_get(ns, ino, &in, NULL, 0);
	if (r)
		return r;
	if (S_ISDIR(in.mode)) {
		pohm_inode_clear(&in);
		return -EPERM;
	}
	e.type = ns_dtype(in.mode);
	pohm_inode_clear(&in);
	r = ns_inode_nlink(ns, ino, +1);	/* first: too high is safe */
	if (r)
		return r;
	e.name = (char *)name;
	e.ino = ino;
	e.txid = ns_random(ns);
	r = ns_entry_insert(ns, dir, &e, NULL);
	if (r == -NS_EMAYBE)
		return -EIO;	/* maybe linked: the count stays one up (safe) */
	if (r) {
		ns_inode_nlink(ns, ino, -1);
		return r;
	}
	return out ? pohm_ns_getattr(ns, ino, out) : 0;
}

/* ---------------------------------------------------------------- unlink */

int pohm_ns_unlink(struct pohm_ns *ns, uint64_t dir, const char *name)
{
	uint64_t ino = 0;
	int gone;

	return pohm_ns_unlink_ino(ns, dir, name, &ino, &gone);
}

/* The inode's side of a one-wait unlink (decision 0049): its last name
 * goes; it stays live (nlink 1) with POHM_OBJF_UNLINKED for fsck. */
static int unlinked_fn(struct pohm_inode *in, void *arg)
{
	if (S_ISDIR(in->mode) || in->nlink != 1)
		return 1;	/* hard links: the count's own CAS after the entry */
	in->hdr.flags |= POHM_OBJF_UNLINKED;
	ns_now_ts(&in->ctime);
	return 0;
}

/*
 * An unlink's first look when the caller knows the name's inode (issue 23,
 * decision 0048): the bucket as this thread, or a process of its cache,
 * last saw it (ns_bucket_peek) maps name to ino, not a directory, without
 * an intent: the entry is removed there by one CAS, whose success proves
 * that mapping at the commit.  When the kept inode has that one name, its
 * UNLINKED mark goes in the same put_n (decision 0049; *marked: it
 * landed, the link count needs no CAS of its own).  0 removed (*type
 * filled), 1 not tried or lost (nothing of the entry written: the lookup
 * path runs, and a mark that landed on a still named inode is harmless),
 * or the put's -errno.
 */
static int unlink_peeked(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			 uint8_t *type, int *marked)
{
	struct pohm_buf ib = POHM_BUF_INIT;
	uint8_t icsum[POHM_KV_CSUM];
	char ikey[POHM_KEY_MAX];
	struct ns_bucket_ref ref;
	struct ns_put also;
	int i, r = 1;

	*marked = 0;
	if (!ino || ns_bucket_peek(ns, dir, name, &ref))
		return 1;
	i = pohm_bucket_find(&ref.bk, name);
	if (i >= 0 && ref.bk.e[i].ino == ino && ref.bk.e[i].type != DT_DIR &&
	    NS_PLAIN(&ref.bk.e[i])) {
		/* A moved-in entry: its source first (decision 0067; the mark
		 * proves its rename committed, whatever this copy's age). */
		r = ns_moved_settle(ns, dir, &ref.bk.e[i]);
		if (r) {
			ns_bucket_release(&ref);
			return r;
		}
		*type = ref.bk.e[i].type;
		pohm_bucket_remove(&ref.bk, (uint32_t)i);
		r = 1;	/* 1 below: not sent along (no put_n, no kept inode, hard links) */
		if (!ns_inode_change_peeked(ns, ino, unlinked_fn, NULL, &ib, icsum)) {
			pohm_key_inode(ikey, ino);
			memset(&also, 0, sizeof(also));
			also.key = ikey;
			also.data = ib.p;
			also.len = ib.len;
			also.expect = icsum;
			also.st = -ECANCELED;
			r = ns_bucket_store_along(ns, &ref, &also);
			if (r != 1)
				*marked = !also.st;
		}
		if (r == 1)
			r = ns_bucket_store(ns, &ref);
	}
	pohm_buf_free(&ib);
	ns_bucket_release(&ref);
	return r == -EAGAIN ? 1 : r;
}

int pohm_ns_unlink_ino(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
		       int *gone)
{
	struct pohm_dentry e;
	uint32_t nlink;
	int r, unsure, marked;

	*gone = -1;
	r = ns_check_name(name);
	if (r)
		return r == -EINVAL ? -EISDIR : r;
	memset(&e, 0, sizeof(e));
	r = unlink_peeked(ns, dir, name, *ino, &e.type, &marked);
	if (!r && marked) {
		/* Entry and mark in one wait (decision 0049): its last name. */
		*gone = 1;
		e.ino = *ino;
		goto out;
	}
	if (!r) {
		e.ino = *ino;
		goto removed;
	}
	if (r != 1 && !NS_UNSURE(r))
		return r;
	unsure = r != 1;
	/* Not tried, lost (nothing written), or an outcome unknown (the
	 * lookup tells: a name gone may be our removal, answered 0 with its
	 * link count left as it is, as below). */
	/* The name's inode as the caller guesses it comes along with the
	 * lookup: the link count's CAS below needs no read of it (ns_peek). */
	r = entry_of_with(ns, dir, name, *ino, &e);
	if (r == -ENOENT && unsure)
		return 0;
	if (r)
		return r;
	*ino = e.ino;
	if (e.type == DT_DIR) {
		pohm_dentry_clear(&e);
		return -EISDIR;
	}
	r = ns_entry_remove(ns, dir, name, e.ino);
removed:
	if (!r) {
		r = ns_inode_nlink_to(ns, e.ino, -1, &nlink);
		if (!r)
			*gone = nlink == 0;	/* what the committed CAS wrote: no read */
	}
	/*
	 * -ENOENT: the inode was already gone (the name was dangling), or a
	 * racing unlink removed the name first.  -ESTALE: the name is gone,
	 * maybe by our own put whose outcome was unknown; its link count is
	 * left as it is: one too many is garbage for fsck, one too few could
	 * free an inode another name still has.
	 */
	if (r == -ENOENT || r == -ESTALE)
		r = 0;
out:
	if (!r)
		ns_http_unlink(ns, dir, name, e.type, e.ino);
	pohm_dentry_clear(&e);
	return r;
}

/* ---------------------------------------------------------------- intents */

/* Set (or check) an intent on dir/name, which must still map to ino;
 * *at (may be NULL) gets the boot clock read just before its stamp and
 * the stamp (i_time), for the renamer's deadline. */
static int intent_set(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
		      const struct pohm_dentry *intent, struct ns_deadline *at)
{
	struct ns_bucket_ref ref;
	unsigned attempt;
	int i, r, peeked;

	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		/* The first look: the bucket this thread just read (the
		 * rename's lookup of the source; issue 23), for the CAS only. */
		peeked = !attempt && !ns_bucket_peek(ns, dir, name, &ref);
		if (!peeked) {
			r = ns_bucket_locate(ns, dir, name, &ref);
			if (r)
				return r;
		}
		r = ns_bucket_prepare(ns, dir, &ref);
		i = r ? -1 : pohm_bucket_find(&ref.bk, name);
		if (peeked && (r || i < 0 || ref.bk.e[i].ino != ino || !NS_PLAIN(&ref.bk.e[i]))) {
			ns_bucket_release(&ref);
			continue;	/* maybe stale news: decide on a read */
		}
		if (!r && (i < 0 || ref.bk.e[i].ino != ino))
			r = -ENOENT;
		if (!r && ref.bk.e[i].intent == POHM_INTENT_MOVED_IN)
			r = ns_moved_settle(ns, dir, &ref.bk.e[i]);	/* its source first */
		else if (!r && ref.bk.e[i].intent)
			r = ns_intent_resolve(ns, dir, &ref, i) < 0 ? -EIO : -EAGAIN;
		if (!r && at)
			at->boot_ns = pohm_sys_boot_ns();	/* taken before the stamp */
		if (!r)
			r = ns_intent_copy(&ref.bk.e[i], intent);
		if (!r && at)
			at->real_ns = ref.bk.e[i].i_time;
		if (!r)
			r = ns_bucket_store(ns, &ref);
		ns_bucket_release(&ref);
		if (r != -EAGAIN)
			return r;
	}
	return -EBUSY;
}

/*
 * Finish (commit=1: remove or repoint) or abort (commit=0: clear) the entry
 * dir/name carrying intent txid.  -ENOENT if the intent is no longer there
 * (someone else finished or aborted it).
 */
static int intent_finish(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t txid,
			 int commit, uint64_t repoint, uint8_t repoint_type, struct ns_put *also)
{
	struct ns_bucket_ref ref;
	unsigned attempt;
	int i, r, peeked;

	for (attempt = 0; attempt < ns->max_retries; attempt++) {
		ns_backoff(ns, attempt);
		/* The first look: the bucket as this thread's intent_set wrote
		 * it (issue 23), for the CAS only. */
		peeked = !attempt && !ns_bucket_peek(ns, dir, name, &ref);
		if (!peeked) {
			r = ns_bucket_locate(ns, dir, name, &ref);
			if (r)
				return r;
		}
		r = ns_bucket_prepare(ns, dir, &ref);
		i = r ? -1 : pohm_bucket_find(&ref.bk, name);
		if (peeked && (r || i < 0 || !ref.bk.e[i].intent || ref.bk.e[i].i_txid != txid)) {
			ns_bucket_release(&ref);
			continue;	/* maybe stale news: decide on a read */
		}
		if (!r && (i < 0 || !ref.bk.e[i].intent || ref.bk.e[i].i_txid != txid))
			r = -ENOENT;
		if (!r) {
			struct pohm_dentry *e = &ref.bk.e[i];

			if (commit && !repoint) {
				pohm_bucket_remove(&ref.bk, (uint32_t)i);
			} else {
				if (commit) {
					e->ino = repoint;
					e->type = repoint_type;
					e->txid = txid;
				}
				e->intent = POHM_INTENT_NONE;
				e->i_txid = e->i_dir = e->i_time = e->i_replaced = 0;
				e->i_flags = 0;
				free(e->i_name);
				e->i_name = NULL;
			}
			/* The first attempt may carry another write (decision 0022). */
			r = 1;
			if (also && also->st == 1 && peeked)
				r = ns_bucket_store_along(ns, &ref, also);
			if (r == 1)
				r = ns_bucket_store(ns, &ref);
		}
		ns_bucket_release(&ref);
		if (r != -EAGAIN)
			return r;
	}
	return -EBUSY;
}

/* ---------------------------------------------------------------- seal */

struct seal_ctx {
	uint64_t txid;
	uint64_t parent;
	const char *name;
	int restart;
	uint64_t dir;		/* the directory sealed */
	int resolved;		/* seal_moved_out removed entries: walk again */
};

/*
 * ref's entries, when every one is a MOVE intent: each resolved as a
 * reader resolves it (ns_entry_get: a committed one's source name goes,
 * decision 0067), so that a file moved out whose finish was lost or is
 * still untold does not keep its old directory from being removed.  1
 * when at least one went (walk again), else -ENOTEMPTY.
 */
static int seal_moved_out(struct pohm_ns *ns, struct ns_bucket_ref *ref, struct seal_ctx *c)
{
	char (*names)[POHM_NAME_MAX + 1];
	uint32_t i, n = ref->bk.n;
	int r = -ENOTEMPTY;

	for (i = 0; i < n; i++)
		if (ref->bk.e[i].intent != POHM_INTENT_MOVE)
			return -ENOTEMPTY;
	names = malloc(n * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		snprintf(names[i], sizeof(names[i]), "%s", ref->bk.e[i].name);
	for (i = 0; i < n; i++) {
		struct pohm_dentry d = { 0 };
		int g = ns_entry_get(ns, c->dir, names[i], &d);

		pohm_dentry_clear(&d);
		if (g == -ENOENT)
			r = 1;		/* moved: its source name went */
		else if (g && g != -ENOENT && r != 1)
			r = g;
	}
	free(names);
	if (r == 1)
		c->resolved = 1;
	return r;
}

static int seal_fn(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg)
{
	struct seal_ctx *c = arg;
	int r;

	if (ref->bk.state == POHM_BUCKET_SPLITTING)
		return -ENOTEMPTY;
	if (ref->bk.n)
		return seal_moved_out(ns, ref, c);
	if ((ref->bk.state == POHM_BUCKET_SEALED || ref->bk.state == POHM_BUCKET_SEALED_WITH) &&
	    ref->bk.txid == c->txid)
		return 0;
	ref->bk.state = POHM_BUCKET_SEALED;
	ref->bk.txid = c->txid;
	ref->bk.stamp = ns_now_ns();
	ref->bk.seal_parent = c->parent;
	free(ref->bk.seal_name);
	ref->bk.seal_name = malloc(strlen(c->name) + 1);
	if (!ref->bk.seal_name)
		return -ENOMEM;
	strcpy(ref->bk.seal_name, c->name);
	r = ns_bucket_store(ns, ref);
	if (r == -EAGAIN) {
		c->restart = 1;		/* it changed under us: walk again */
		return 1;
	}
	return r;
}

static int unseal_fn(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg)
{
	struct seal_ctx *c = arg;

	if ((ref->bk.state != POHM_BUCKET_SEALED && ref->bk.state != POHM_BUCKET_SEALED_WITH) ||
	    ref->bk.txid != c->txid)
		return 0;
	ref->bk.state = POHM_BUCKET_NORMAL;
	ref->bk.txid = 0;
	ref->bk.seal_parent = 0;
	free(ref->bk.seal_name);
	ref->bk.seal_name = NULL;
	ns_bucket_store(ns, ref);	/* best effort: a leftover seal is resolved by writers */
	return 0;
}

/* Seal every bucket of dir (which must be empty) for txid: 0 or -ENOTEMPTY. */
static int seal_dir(struct pohm_ns *ns, uint64_t dir, uint64_t txid, uint64_t parent,
		    const char *name)
{
	struct seal_ctx c = { txid, parent, name, 0, dir, 0 };
	unsigned round;
	int r = 0;

	/* One write when a copy says the root bucket is empty, or none is
	 * kept (decision 0055); a lost one walks on reads. */
	r = ns_seal_first(ns, dir, txid, parent, name);
	if (NS_UNSURE(r))
		ns_bucket_walk(ns, dir, unseal_fn, &c);	/* the seal may have landed */
	if (r <= 0)
		return r;
	r = 0;
	for (round = 0; round < ns->max_retries; round++) {
		c.restart = c.resolved = 0;
		r = ns_bucket_walk(ns, dir, seal_fn, &c);
		if (r < 0 || (!c.restart && !c.resolved))
			break;
	}
	if (r > 0 || c.restart || c.resolved)
		r = -EBUSY;
	if (r)
		ns_bucket_walk(ns, dir, unseal_fn, &c);
	return r;
}

static void unseal_dir(struct pohm_ns *ns, uint64_t dir, uint64_t txid)
{
	struct seal_ctx c = { txid, 0, "", 0, dir, 0 };

	ns_bucket_walk(ns, dir, unseal_fn, &c);
}

/* ---------------------------------------------------------------- rmdir */

/*
 * Two inode changes that may land in either order or alone (each after a
 * commit point, decision 0022), on the copies this thread read within 2 s
 * (ns_inode_change_peeked), in one put_n.  *st_a / *st_b: each put's
 * answer (0 written, -EAGAIN lost: nothing written, else unknown), or 1
 * when nothing was sent (no copy, no put_n): the caller then changes
 * each by ns_inode_update as before.
 */
static void two_inodes_along(struct pohm_ns *ns, uint64_t a, int (*fa)(struct pohm_inode *, void *),
			     void *arg_a, uint64_t b, int (*fb)(struct pohm_inode *, void *),
			     void *arg_b, int *st_a, int *st_b)
{
	struct pohm_buf ba = POHM_BUF_INIT, bb = POHM_BUF_INIT;
	uint8_t ca[POHM_KV_CSUM], cb[POHM_KV_CSUM];
	char ka[POHM_KEY_MAX], kb[POHM_KEY_MAX];
	const char *keys[2] = { ka, kb };
	const void *data[2];
	size_t len[2];
	const uint8_t *expect[2] = { ca, cb };
	int st[2];

	*st_a = *st_b = 1;
	if (!ns->kv.ops->put_n || a == b ||
	    ns_inode_change_peeked(ns, a, fa, arg_a, &ba, ca) ||
	    ns_inode_change_peeked(ns, b, fb, arg_b, &bb, cb))
		goto out;
	pohm_key_inode(ka, a);
	pohm_key_inode(kb, b);
	data[0] = ba.p;
	len[0] = ba.len;
	data[1] = bb.p;
	len[1] = bb.len;
	if (!ns->kv.ops->put_n(ns->kv.ctx, 2, keys, data, len, expect, st)) {
		*st_a = st[0];
		*st_b = st[1];
	}
out:
	pohm_buf_free(&ba);
	pohm_buf_free(&bb);
}

/*
 * The second wait of an rmdir whose intent and seal both landed (decision
 * 0058; committed then): the entry's removal, the directory's tombstone and
 * the parent's count in one put_n, on the copies this thread wrote and read
 * (ns_peek).  A lost or unknown removal goes again on reads (intent_finish:
 * -ENOENT is a helper that completed it); a lost tombstone or count is
 * written alone; an unknown count is left (one too many is safe).
 */
static int rmdir_sealed_finish(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t dino,
			       uint64_t txid, int *gone)
{
	struct pohm_buf tb = POHM_BUF_INIT, nb = POHM_BUF_INIT;
	uint8_t tcsum[POHM_KV_CSUM], ncsum[POHM_KV_CSUM];
	char tkey[POHM_KEY_MAX], nkey[POHM_KEY_MAX];
	struct ns_put also[2];
	int r, delta = -1, st_tomb = 1, st_nlink = 1, it = -1, in = -1;
	unsigned unsure;
	size_t n = 0;

	if (!ns_inode_change_peeked(ns, dino, ns_tomb_fn, NULL, &tb, tcsum)) {
		pohm_key_inode(tkey, dino);
		also[n] = (struct ns_put){ tkey, tb.p, tb.len, tcsum, 1 };
		it = (int)n++;
	}
	if (!ns_inode_change_peeked(ns, dir, ns_nlink_fn, &delta, &nb, ncsum)) {
		pohm_key_inode(nkey, dir);
		also[n] = (struct ns_put){ nkey, nb.p, nb.len, ncsum, 1 };
		in = (int)n++;
	}
	r = ns_rmdir_finish_along(ns, dir, name, txid, also, n);
	if (r == 1)
		n = 0;		/* nothing sent */
	if (it >= 0 && n)
		st_tomb = also[it].st;
	if (in >= 0 && n)
		st_nlink = also[in].st;
	pohm_buf_free(&tb);
	pohm_buf_free(&nb);
	for (unsure = 0; r && unsure <= NS_UNSURE_RETRIES; unsure++) {
		r = intent_finish(ns, dir, name, txid, 1, 0, 0, NULL);
		if (r == -ENOENT)
			r = 0;	/* ours landed, or a helper completed it */
		if (!NS_UNSURE(r))
			break;
	}
	if (r)
		return r;	/* committed all the same: completed by whoever meets it */
	if (!st_tomb || !ns_inode_update(ns, dino, ns_tomb_fn, NULL, NULL))
		*gone = 1;
	if (st_nlink == 1 || st_nlink == -EAGAIN || st_nlink == -EEXIST)
		ns_inode_nlink(ns, dir, -1);
	return 0;
}

int pohm_ns_rmdir(struct pohm_ns *ns, uint64_t dir, const char *name)
{
	uint64_t ino = 0;
	int gone;

	return pohm_ns_rmdir_ino(ns, dir, name, &ino, &gone);
}

int pohm_ns_rmdir_ino(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
		      int *gone)
{
	struct pohm_dentry e, intent = { 0 };
	int r, delta = -1, st_tomb, st_nlink, kept, sti = 0, sts = 0, together = 1;

	*gone = -1;

	if (!strcmp(name, "."))
		return -EINVAL;
	if (!strcmp(name, ".."))
		return -ENOTEMPTY;
	r = ns_check_name(name);
	if (r)
		return r;
	/* The kept copy of the bucket naming the caller's guess: no lookup;
	 * the intent's CAS proves it, a lost one reads (decision 0055). */
	memset(&e, 0, sizeof(e));
	kept = !ns_entry_peek_dir(ns, dir, name, *ino, &e);
again:
	/* The directory's inode as the caller guesses it comes along: its
	 * tombstone's CAS needs no read (ns_peek). */
	if (!kept) {
		r = entry_of_with(ns, dir, name, *ino, &e);
		if (r)
			return r;
	}
	*ino = e.ino;
	if (e.type != DT_DIR) {
		pohm_dentry_clear(&e);
		return -ENOTDIR;
	}
	intent.i_txid = ns_random(ns);
	/*
	 * The intent and the seal of an empty directory's only bucket in one
	 * put_n (decision 0058), on the copies this thread read or kept: both
	 * written, the rmdir is committed, and its second wait removes the
	 * entry with the tombstone and the count.
	 */
	intent.intent = POHM_INTENT_RMDIR_SEALED;
	r = together ? ns_rmdir_begin_along(ns, dir, name, e.ino, &intent, &sti, &sts) : 1;
	if (r < 0)
		goto out;
	if (!r && !sti && !sts) {
		/* Test only: an rmdir killed at its commit (both written). */
		pohm_sys_test_kill(POHM_TEST_KILL_AT_RMDIR_SEALED);
		r = rmdir_sealed_finish(ns, dir, name, e.ino, intent.i_txid, gone);
		goto out;
	}
	if (!r && (sti || sts != -EAGAIN)) {
		/*
		 * Not both written, and not the plain "seal lost" (below): the
		 * entry changed since the copy, or an answer is unknown.  Take
		 * back what may have landed, the seal first (without it the
		 * intent is uncommitted), so no writer waits for a seal in
		 * flight; then the whole rmdir on reads, the old way.  What
		 * cannot be taken back is left to whoever meets it, who
		 * decides by the seal.
		 */
		if (sts != -EAGAIN && ns_unseal_with(ns, e.ino, intent.i_txid)) {
			r = -EIO;
			goto out;
		}
		if (sti != -EAGAIN) {
			r = intent_finish(ns, dir, name, intent.i_txid, 0, 0, 0, NULL);
			if (r && r != -ENOENT) {
				r = -EIO;
				goto out;
			}
		}
		pohm_dentry_clear(&e);
		memset(&e, 0, sizeof(e));
		kept = 0;
		together = 0;
		goto again;
	}
	if (r) {
		/* Not sent: the intent alone, the old way. */
		intent.intent = POHM_INTENT_RMDIR;
		r = intent_set(ns, dir, name, e.ino, &intent, NULL);
		if (r == -ENOENT && kept) {
			/* The name is another inode (or none) now: decide on a lookup. */
			pohm_dentry_clear(&e);
			memset(&e, 0, sizeof(e));
			kept = 0;
			goto again;
		}
		if (r)
			goto out;
	}
	/* The intent is there (RMDIR, or RMDIR_SEALED whose seal lost: the
	 * directory filled meanwhile, or not only one bucket): seal by a walk. */
	r = seal_dir(ns, e.ino, intent.i_txid, dir, name);
	if (r) {
		intent_finish(ns, dir, name, intent.i_txid, 0, 0, 0, NULL);
		goto out;
	}
	/* Commit point: the entry goes, if our intent is still there. */
	r = intent_finish(ns, dir, name, intent.i_txid, 1, 0, 0, NULL);
	if (r == -ENOENT) {
		unseal_dir(ns, e.ino, intent.i_txid);
		r = -EBUSY;	/* aborted by a writer that met our seal */
		goto out;
	}
	if (r)
		goto out;
	/* The tombstone and the parent's count in one round trip (both after
	 * the commit point: either alone is a count too high or an unnamed
	 * empty inode, fsck's as before; decision 0022). */
	two_inodes_along(ns, e.ino, ns_tomb_fn, NULL, dir, ns_nlink_fn, &delta, &st_tomb, &st_nlink);
	if (!st_tomb || !ns_inode_update(ns, e.ino, ns_tomb_fn, NULL, NULL))
		*gone = 1;	/* the tombstone is written: no read to learn it */
	if (st_nlink == 1 || st_nlink == -EAGAIN)
		ns_inode_nlink(ns, dir, -1);	/* not written (unknown: one too many is safe) */
out:
	pohm_dentry_clear(&e);
	return r;
}

/* ---------------------------------------------------------------- rename */

/* The rename lease: one directory move across parents at a time per fsid. */
static int lease_take(struct pohm_ns *ns, uint64_t txid)
{
	unsigned attempt;
	int r;

	for (attempt = 0; attempt < ns->max_retries * 4; attempt++) {
		struct pohm_kv_val v = { 0 };
		struct pohm_lease l;
		struct pohm_buf b = POHM_BUF_INIT;
		const uint8_t *expect = POHM_KV_ABSENT;

		ns_backoff(ns, attempt < 10 ? attempt : 10);
		r = ns->kv.ops->get(ns->kv.ctx, "l:rename", &v);
		if (r && r != -ENOENT)
			return r;
		if (!r) {
			if (pohm_lease_decode(&l, v.data, v.len) == 0 && l.txid &&
			    l.expires > ns_now_ns()) {
				pohm_kv_val_free(&v);
				continue;	/* held by a live renamer */
			}
			expect = v.csum;
		}
		memset(&l, 0, sizeof(l));
		ns_hdr(ns, &l.hdr, POHM_OBJ_LEASE, 0, "l:rename");
		l.txid = txid;
		l.expires = ns_now_ns() + ns->intent_timeout_ns;
		r = pohm_lease_encode(&b, &l);
		if (!r)
			r = ns->kv.ops->put(ns->kv.ctx, "l:rename", b.p, b.len, expect);
		pohm_buf_free(&b);
		pohm_kv_val_free(&v);
		if (r != -EAGAIN && r != -EEXIST)
			return r;
	}
	return -EBUSY;
}

static void lease_drop(struct pohm_ns *ns, uint64_t txid)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_lease l;
	struct pohm_buf b = POHM_BUF_INIT;

	if (ns->kv.ops->get(ns->kv.ctx, "l:rename", &v))
		return;
	if (!pohm_lease_decode(&l, v.data, v.len) && l.txid == txid) {
		l.txid = 0;
		l.expires = ns_now_ns();	/* free; unique bytes (see ns_bucket_store) */
		if (!pohm_lease_encode(&b, &l))
			ns->kv.ops->put(ns->kv.ctx, "l:rename", b.p, b.len, v.csum);
	}
	pohm_buf_free(&b);
	pohm_kv_val_free(&v);
}

/* Is dir equal to or below anc?  Walks the parent inodes up to the root. */
static int is_under(struct pohm_ns *ns, uint64_t dir, uint64_t anc)
{
	unsigned hops;

	for (hops = 0; hops < 4096; hops++) {
		struct pohm_inode in;
		uint64_t parent;
		int r;

		if (dir == anc)
			return 1;
		if (dir == POHM_ROOT_INO)
			return 0;
		r = ns_inode_get(ns, dir, &in, NULL, 0);
		if (r)
			return r;
		parent = in.hdr.parent;
		pohm_inode_clear(&in);
		dir = parent;
	}
	return -ELOOP;
}

static int parent_fn(struct pohm_inode *in, void *arg)
{
	in->hdr.parent = *(uint64_t *)arg;
	ns_now_ts(&in->ctime);
	return 0;
}


static int touch_fn(struct pohm_inode *in, void *arg)
{
	ns_now_ts(&in->ctime);
	in->hdr.flags &= (uint16_t)~POHM_OBJF_UNLINKED;	/* a rename's: it has a name */
	return 0;
}

/*
 * touch_fn for the same-directory rename's put sent along its bucket CAS
 * (bucket_move_along), before the commit is known: not on a marked inode
 * (1: nothing sent).  That CAS may win while the bucket's loses -- the
 * name already gone by an unlinker that died before the count -- and
 * would clear the mark of an inode with no name, which fsck then takes
 * for a lost file (decisions 0049/0050).  After the commit touch_fn runs.
 */
static int touch_along_fn(struct pohm_inode *in, void *arg)
{
	if (in->hdr.flags & POHM_OBJF_UNLINKED)
		return 1;
	return touch_fn(in, arg);
}

/* touch (a put_n's write) set to fn's change of the copy of ino this
 * thread read (ns_inode_change_peeked): its bytes in *tb, its base in
 * tcsum, its key in tkey.  Left untouched when there is no such copy or
 * fn says no. */
static void touch_prepare(struct pohm_ns *ns, uint64_t ino,
			  int (*fn)(struct pohm_inode *in, void *arg), struct pohm_buf *tb,
			  uint8_t *tcsum, char *tkey, struct ns_put *touch)
{
	if (ns_inode_change_peeked(ns, ino, fn, NULL, tb, tcsum))
		return;
	pohm_key_inode(tkey, ino);
	touch->key = tkey;
	touch->data = tb->p;
	touch->len = tb->len;
	touch->expect = tcsum;
}

/* The deferred finish (finish_deferred), told at its settle; owed (on
 * ns->owed) when refused. */
struct ns_owed {
	struct ns_owed *next;
	struct pohm_ns *ns;
	uint64_t dir;
	uint64_t txid;
	char name[POHM_NAME_MAX + 1];
};

/*
 * T is known settled only when the finish was acknowledged (decision
 * 0067).  One refused (-EAGAIN, -EEXIST: the source's bucket changed since
 * the intent, a concurrent mover's or creator's write) is owed: queued
 * here, redone by ns_finish_owed once no settle is running -- a done runs
 * while this thread is the process's one settler and every other thread's
 * store call waits for it, and intent_finish may read and CAS up to
 * max_retries times.  Unknown (-EIO: no quorum in time, a fork child's
 * copy, a closed client) is the readers' to settle, as a renamer killed
 * after its commit leaves it.
 */
static void finish_told(void *arg, int st)
{
	struct ns_owed *f = arg;

	if (st == -EAGAIN || st == -EEXIST) {
		f->next = __atomic_load_n(&f->ns->owed, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(&f->ns->owed, &f->next, f, 1,
						    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			;
		return;
	}
	if (!st)
		ns_moved_note(f->ns, f->txid);
	free(f);
}

/* Set while this thread redoes owed finishes (their own calls do not). */
static __thread int owing_here;

void ns_finish_owed(struct pohm_ns *ns)
{
	struct ns_owed *f, *next;
	int r;

	if (owing_here || !__atomic_load_n(&ns->owed, __ATOMIC_RELAXED))
		return;
	owing_here = 1;
	/* Again while the redos' own calls told more refusals. */
	while ((f = __atomic_exchange_n(&ns->owed, NULL, __ATOMIC_ACQUIRE)))
		for (; f; f = next) {
			next = f->next;
			r = intent_finish(ns, f->dir, f->name, f->txid, 1, 0, 0, NULL);
			if (!r || r == -ENOENT)	/* -ENOENT: a helper finished it */
				ns_moved_note(ns, f->txid);
			free(f);
		}
	owing_here = 0;
}

/*
 * A marked file move's finish after its commit, sent without waiting
 * (decision 0073): the source entry dir/name (ino, intent txid) removed on
 * the copy this thread's intent_set wrote, by kv put_deferred.  Any
 * outcome is one the namespace reads and repairs: the MOVE intent stays a
 * committed one until a reader or a changer of the destination removes it
 * (decision 0067); a refused one is redone (finish_told).  0 sent; 1
 * nothing sent: finish it with intent_finish.
 */
static int finish_deferred(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			   uint64_t txid)
{
	struct ns_bucket_ref ref;
	struct ns_owed *f;
	int i, r = 1;

	if (!ns->kv.ops->put_deferred || strlen(name) > POHM_NAME_MAX ||
	    ns_bucket_peek(ns, dir, name, &ref))
		return 1;
	i = pohm_bucket_find(&ref.bk, name);
	f = malloc(sizeof(*f));
	if (f && i >= 0 && ref.bk.e[i].ino == ino && ref.bk.e[i].intent == POHM_INTENT_MOVE &&
	    ref.bk.e[i].i_txid == txid) {
		f->ns = ns;
		f->dir = dir;
		f->txid = txid;
		strcpy(f->name, name);
		pohm_bucket_remove(&ref.bk, (uint32_t)i);
		r = ns_bucket_store_deferred(ns, &ref, finish_told, f) ? 1 : 0;
	}
	ns_bucket_release(&ref);
	if (r)
		free(f);
	return r;
}

int pohm_ns_rename(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t ddir,
		   const char *dname, unsigned flags)
{
	int r = pohm_ns_rename_ino(ns, sdir, sname, ddir, dname, flags, 0);

	return r == POHM_NS_RENAME_SAME ? 0 : r;
}

int pohm_ns_rename_ino(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t ddir,
		       const char *dname, unsigned flags, uint64_t guess)
{
	struct pohm_dentry src = { 0 }, dst = { 0 }, intent = { 0 };
	int r, have_dst, sealed = 0, leased = 0, exch = flags & POHM_RENAME_EXCHANGE, touched = 0;
	int kept = 0;	/* 1: decided on kept copies (no lookup); 2: read after that */
	unsigned unsure;	/* the commit's retries after an unknown outcome */
	struct pohm_buf tb = POHM_BUF_INIT;	/* the source's ctime, sent along */
	uint8_t tcsum[POHM_KV_CSUM];
	char tkey[POHM_KEY_MAX];
	struct ns_put touch = { .st = 1 };
	uint64_t replaced = 0;
	struct ns_deadline until = { 0, 0 };	/* intent_set fills it */
	uint8_t rtype = 0;

	if ((flags & POHM_RENAME_EXCHANGE) && (flags & POHM_RENAME_NOREPLACE))
		return -EINVAL;
	if ((r = ns_check_name(sname)) || (r = ns_check_name(dname)))
		return r == -EINVAL ? -EBUSY : r;	/* rename of "." or ".." */
	ns_finish_owed(ns);	/* the renamer's refused finishes, redone first */
	intent.i_txid = ns_random(ns);
	if (sdir == ddir) {
		/* The bucket this thread just read (the cache's lookup of the
		 * target), without reading it again: a CAS on it (issue 23). */
		uint64_t dino;
		uint8_t dtype;

		/* The source's ctime in the same round trip, on the copy read
		 * along with the lookup (decision 0022): independent of the
		 * move, so any of the two may land alone. */
		if (guess)
			touch_prepare(ns, guess, touch_along_fn, &tb, tcsum, tkey, &touch);
		r = ns_entry_rename_peeked(ns, sdir, sname, dname, flags, intent.i_txid, &src,
					   &replaced, &rtype, touch.key ? &touch : NULL, guess);
		pohm_buf_free(&tb);
		touched = touch.key && !touch.st;
		touch.key = NULL;
		touch.st = 1;
		if (!r)
			goto committed;
		if (NS_UNSURE(r)) {
			/* Settled on a read (our txid at dname), as rename_local does. */
			dino = replaced;
			dtype = rtype;
			r = ns_entry_rename_settle(ns, sdir, sname, src.ino, dname, dino, dtype,
						   intent.i_txid, &replaced, &rtype);
			if (!r)
				goto committed;
			goto out;
		}
		if (r != 1)
			return r;
		replaced = 0;
		rtype = 0;
	}
again:
	/*
	 * A file moving to another directory whose kept copies (decision 0048)
	 * say the source is guess and the target absent: no lookup; the
	 * intent's CAS proves the source and a live source directory, the
	 * commit's the target's bucket; a target found there by the commit
	 * (-EEXIST) makes it start over on reads (decision 0054).
	 */
	if (sdir != ddir && !kept && !exch && !(flags & POHM_RENAME_NOREPLACE) &&
	    ns_entry_move_ready(ns, sdir, sname, guess, ddir, dname, &src)) {
		kept = 1;
		have_dst = NS_NAME_ABSENT;
		r = 0;
	} else if (kept) {
		kept = 2;	/* the second round: read */
		r = ns_dir_lookup(ns, ddir, dname, &dst);
		if (r < 0)
			return r;
		have_dst = r;
		r = entry_of_with(ns, sdir, sname, guess, &src);
	/*
	 * Across directories, when the source's inode is already at hand
	 * (read along with the cache's lookup of the target, or no guess):
	 * the target's and the source's directory and bucket in one round
	 * trip (decision 0022).
	 */
	} else if (sdir != ddir && (!guess || ns_inode_peeked(ns, guess)) &&
	    !ns_dir_lookup_pair(ns, ddir, dname, &dst, &have_dst, sdir, sname, &src, &r)) {
		if (have_dst < 0) {
			if (!r)
				pohm_dentry_clear(&src);
			return have_dst;
		}
		r = entry_from(ns, sdir, sname, r, &src);
	} else {
		/* The target directory and the target name in one round trip. */
		r = ns_dir_lookup(ns, ddir, dname, &dst);
		if (r < 0)
			return r;
		have_dst = r;	/* 0: the name is there (dst), else to be read or absent */
		/* The source's inode as the caller guesses it comes along: its
		 * ctime CAS at the end needs no read (ns_peek). */
		r = entry_of_with(ns, sdir, sname, guess, &src);
	}
	if (r) {
		if (!have_dst)
			pohm_dentry_clear(&dst);
		return r;
	}
	if (sdir == ddir && !strcmp(sname, dname)) {
		r = 0;
		goto out;
	}
	if (have_dst == NS_NAME_ABSENT)
		r = -ENOENT;
	else if (have_dst == NS_NAME_UNKNOWN)
		r = ns_entry_get(ns, ddir, dname, &dst);
	else
		r = 0;
	if (r && r != -ENOENT)
		goto out;
	have_dst = !r;
	r = 0;
	if (have_dst && (flags & POHM_RENAME_NOREPLACE)) {
		r = -EEXIST;
		goto out;
	}
	if (!have_dst && exch) {
		r = -ENOENT;
		goto out;
	}
	if (have_dst && dst.ino == src.ino) {
		r = POHM_NS_RENAME_SAME;	/* two names of one inode: POSIX says do nothing */
		goto out;
	}
	if (have_dst && !exch) {
		if (src.type == DT_DIR && dst.type != DT_DIR) {
			r = -ENOTDIR;
			goto out;
		}
		if (src.type != DT_DIR && dst.type == DT_DIR) {
			r = -EISDIR;
			goto out;
		}
	}
	intent.intent = POHM_INTENT_MOVE;
	if (sdir == ddir && !exch && !(have_dst && dst.type == DT_DIR)) {
		/* Both names in one bucket: one CAS, no intent (issue 23). */
		r = ns_entry_rename_local(ns, sdir, sname, src.ino, dname, have_dst ? dst.ino : 0,
					  intent.i_txid, &replaced, &rtype);
		if (!r)
			goto committed;
		if (r != 1)
			goto out;
		r = 0;
	}
	intent.i_dir = ddir;
	intent.i_name = (char *)dname;
	intent.i_replaced = have_dst ? dst.ino : 0;
	/* Every move but an exchange marks its destination (decision 0067). */
	intent.i_flags = flags | (exch ? 0 : POHM_MOVE_MARKED);

	if ((src.type == DT_DIR || (exch && dst.type == DT_DIR)) && sdir != ddir) {
		r = lease_take(ns, intent.i_txid);
		if (r)
			goto out;
		leased = 1;
		if (src.type == DT_DIR && (r = is_under(ns, ddir, src.ino)) != 0) {
			r = r > 0 ? -EINVAL : r;
			goto out;
		}
		if (exch && dst.type == DT_DIR && (r = is_under(ns, sdir, dst.ino)) != 0) {
			r = r > 0 ? -EINVAL : r;
			goto out;
		}
	}
	if (have_dst && !exch && dst.type == DT_DIR) {
		/* Replacing a directory: it must be empty, and stays sealed. */
		r = seal_dir(ns, dst.ino, intent.i_txid, ddir, dname);
		if (r)
			goto out;
		sealed = 1;
	}
	r = intent_set(ns, sdir, sname, src.ino, &intent, &until);
	if (r == -ENOENT && kept == 1) {
		/* The kept copy's source is another inode (or none) now, e.g.
		 * a file another host renamed over it: decide on reads, as
		 * rmdir does (decision 0054). */
		pohm_dentry_clear(&src);
		memset(&src, 0, sizeof(src));
		intent.i_txid = ns_random(ns);
		goto again;
	}
	if (r)
		goto out;
	/* The commit starts no put after half the intent's timeout: a
	 * resolver fences the destination only after the whole timeout
	 * (decision 0067), so a clock skew under half of it is safe.  The
	 * boot clock bounds the time this renamer really took, whatever
	 * its real-time clock does meanwhile (a step back plus a stall). */
	until.boot_ns += ns->intent_timeout_ns / 2;
	until.real_ns += ns->intent_timeout_ns / 2;
	src.i_txid = intent.i_txid;
	src.i_dir = ddir;
	src.i_flags = intent.i_flags;
	src.i_replaced = intent.i_replaced;
	free(src.i_name);
	src.i_name = malloc(strlen(dname) + 1);
	if (!src.i_name) {
		r = -ENOMEM;
		goto abort;
	}
	strcpy(src.i_name, dname);
	/* Test only: a renamer killed between its intent and the commit. */
	pohm_sys_test_kill(POHM_TEST_KILL_AT_RENAME_INTENT);
	/*
	 * A file's ctime goes in the commit's put_n, on the copy read along
	 * (the cache's pohm_ns_read_along): it may land alone, and then never
	 * clears an UNLINKED mark (touch_along_fn; decisions 0022, 0073).
	 */
	if (!exch && src.type != DT_DIR)
		touch_prepare(ns, src.ino, touch_along_fn, &tb, tcsum, tkey, &touch);
	r = ns_move_commit_from(ns, sdir, &src, &until, &replaced, &rtype,
				touch.key ? &touch : NULL);	/* the commit point */
	pohm_buf_free(&tb);
	touched = touch.key && !touch.st;
	touch.key = NULL;
	touch.st = 1;
	for (unsure = 0; NS_UNSURE(r) && unsure < NS_UNSURE_RETRIES; unsure++) {
		/* Our put may have landed: its read finds our txid (0), or
		 * commits it now.  A commit only ever displaces i_replaced. */
		r = ns_move_commit_from(ns, sdir, &src, &until, &replaced, &rtype, NULL);
		if (!r) {
			replaced = intent.i_replaced;
			rtype = replaced ? dst.type : 0;
		}
	}
	if (r && unsure) {
		/*
		 * Still unknown, or refused after a put that may have landed:
		 * the intent stays (no abort: a commit that landed would be
		 * left with two plain names of one inode of nlink 1) and is
		 * settled by txid by whoever meets it (ns_intent_resolve);
		 * the lease expires with it.
		 */
		leased = 0;
		r = -EIO;
		goto out;
	}
	if (r == -EEXIST && kept == 1) {
		/* A target the kept copy did not have: clear our intent, then
		 * the whole rename again on reads (it replaces that target). */
		intent_finish(ns, sdir, sname, intent.i_txid, 0, 0, 0, NULL);
		if (leased)
			lease_drop(ns, intent.i_txid);
		leased = 0;
		pohm_dentry_clear(&src);
		pohm_dentry_clear(&dst);
		memset(&src, 0, sizeof(src));
		memset(&dst, 0, sizeof(dst));
		intent.i_txid = ns_random(ns);
		goto again;
	}
	if (r == -ETIME)
		r = -EIO;	/* too slow: nothing committed, the intent goes */
	if (r)
		goto abort;
	/* A file's move whose ctime went with the commit answers there: the
	 * finish goes out without a wait (decision 0073).  Else the ctime
	 * rides in the finish's put_n, which is waited for (3 waits). */
	if (touched && (intent.i_flags & POHM_MOVE_MARKED) &&
	    !finish_deferred(ns, sdir, sname, src.ino, intent.i_txid))
		goto committed;
	/*
	 * The source name goes (or, for an exchange, takes the other inode);
	 * a file's ctime goes with it, on the copy read along before (the
	 * cache's pohm_ns_read_along): both after the commit point, either
	 * may land alone (decision 0022).
	 */
	if (!exch && src.type != DT_DIR && !touched)
		touch_prepare(ns, src.ino, touch_fn, &tb, tcsum, tkey, &touch);
	r = intent_finish(ns, sdir, sname, intent.i_txid, 1, exch ? replaced : 0, rtype,
			  touch.key ? &touch : NULL);
	pohm_buf_free(&tb);
	if (touch.key && !touch.st)
		touched = 1;
	if (!r)
		ns_moved_note(ns, intent.i_txid);	/* acknowledged: settled (0067) */
	if (r == -ENOENT)
		r = 0;		/* a helper finished it for us */
	if (NS_UNSURE(r)) {
		/* Past the commit point the rename happened: a finish with
		 * no quorum in time (a group killed mid-request) leaves a
		 * committed MOVE, the readers' as a renamer killed here
		 * leaves it and as a lost deferred finish does (0073); the
		 * lease expires with it. */
		leased = 0;
		r = 0;
	}
	if (r)
		goto out;
committed:
	if (replaced && !exch) {
		if (rtype == DT_DIR) {
			ns_inode_update(ns, replaced, ns_tomb_fn, NULL, NULL);
			ns_inode_nlink(ns, ddir, -1);
		} else {
			ns_inode_nlink(ns, replaced, -1);
		}
	}
	if (sdir != ddir && src.type == DT_DIR) {
		ns_inode_update(ns, src.ino, parent_fn, &ddir, NULL);
		if (!(replaced && rtype == DT_DIR && !exch))
			ns_inode_nlink(ns, ddir, +1);
		ns_inode_nlink(ns, sdir, -1);
	} else if (!touched) {
		ns_inode_update(ns, src.ino, touch_fn, NULL, NULL);
	}
	if (exch && replaced && sdir != ddir && rtype == DT_DIR) {
		ns_inode_update(ns, replaced, parent_fn, &sdir, NULL);
		ns_inode_nlink(ns, sdir, +1);
		ns_inode_nlink(ns, ddir, -1);
	} else if (exch && replaced) {
		/* The other side has a name too (its ctime, as Linux's
		 * exchange sets both): an UNLINKED mark on it goes as the
		 * source's does (s14; a directory is never marked). */
		ns_inode_update(ns, replaced, touch_fn, NULL, NULL);
	}
	ns_http_rename(ns, sdir, sname, ddir, dname, src.ino, src.type, exch ? replaced : 0, rtype);
	goto out;
abort:
	intent_finish(ns, sdir, sname, intent.i_txid, 0, 0, 0, NULL);
	if (sealed)
		unseal_dir(ns, dst.ino, intent.i_txid);
out:
	if (leased)
		lease_drop(ns, intent.i_txid);
	pohm_dentry_clear(&src);
	pohm_dentry_clear(&dst);
	return r;
}

int pohm_ns_rename_ready(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			 const char *dname)
{
	if (ns_check_name(sname) || ns_check_name(dname))
		return 0;
	return ns_entry_rename_ready(ns, dir, sname, sino, dname);
}

int pohm_ns_move_ready(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t sino,
		       uint64_t ddir, const char *dname)
{
	if (ns_check_name(sname) || ns_check_name(dname))
		return 0;
	return ns_entry_move_ready(ns, sdir, sname, sino, ddir, dname, NULL);
}

/* ---------------------------------------------------------------- readdir */

/*
 * readdir collects the whole listing first, then calls the callback: an
 * entry with a rename in flight is looked up again (which completes the
 * rename if it committed or its writer died), and if that changed anything
 * the collected snapshot is stale and the walk starts over.  So a listing
 * after a crash already shows the completed state, and every entry appears
 * exactly once.
 */
struct readdir_ctx {
	struct pohm_dentry *e;		/* collected entries (name owned; intent kept) */
	size_t n, cap;
	int changed;			/* an intent was resolved: walk again */
};

static void readdir_reset(struct readdir_ctx *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->e[i].name);
	c->n = 0;
	c->changed = 0;
}

static int readdir_fn(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg)
{
	struct readdir_ctx *c = arg;
	uint32_t i;
	int r;

	for (i = 0; i < ref->bk.n; i++) {
		struct pohm_dentry *e = &ref->bk.e[i], d = { 0 };

		/* A stale rmdir whose seal went with it completes too
		 * (decision 0058). */
		if (e->intent == POHM_INTENT_MOVE || e->intent == POHM_INTENT_RMDIR_SEALED) {
			r = ns_entry_get(ns, ref->bk.dir, e->name, &d);
			if (r && r != -ENOENT)
				return r;
			if (r == -ENOENT || d.ino != e->ino || !d.intent) {
				/* Resolved: this snapshot is stale.  The rest of
				 * the walk is resolved too, so a directory with
				 * many leftover moves lists in a round or two,
				 * not one per entry (16 rounds: EBUSY). */
				c->changed = 1;
				pohm_dentry_clear(&d);
				continue;
			}
			pohm_dentry_clear(&d);
		}
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			struct pohm_dentry *a = realloc(c->e, cap * sizeof(*a));

			if (!a)
				return -ENOMEM;
			c->e = a;
			c->cap = cap;
		}
		d.ino = e->ino;
		d.type = e->type;
		d.intent = e->intent;
		d.name = malloc(strlen(e->name) + 1);
		if (!d.name)
			return -ENOMEM;
		strcpy(d.name, e->name);
		c->e[c->n++] = d;
	}
	return 0;
}

int pohm_ns_readdir_flags(struct pohm_ns *ns, uint64_t dir,
			  int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type,
				    unsigned flags),
			  void *arg)
{
	return pohm_ns_readdir_along(ns, dir, fn, arg, NULL);
}

int pohm_ns_readdir_along(struct pohm_ns *ns, uint64_t dir,
			  int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type,
				    unsigned flags),
			  void *arg, struct pohm_ns_along *along)
{
	struct readdir_ctx c = { 0 };
	unsigned round;
	size_t i;
	int r = 0;

	ns_finish_owed(ns);
	/* The first round reads dir's inode with the root bucket: check_dir
	 * without a round trip of its own. */
	for (round = 0; round < 16; round++) {
		readdir_reset(&c);
		r = ns_bucket_walk_read(ns, dir, round == 0, readdir_fn, &c,
					round == 0 && along && along->n ? along : NULL);
		if (r < 0 || !c.changed)
			break;
	}
	if (c.changed)
		r = -EBUSY;
	for (i = 0; i < c.n && !r; i++)
		r = fn(arg, c.e[i].name, c.e[i].ino, c.e[i].type,
		       NS_PLAIN(&c.e[i]) ? 0 : POHM_NS_DENT_INTENT);
	readdir_reset(&c);
	free(c.e);
	return r > 0 ? 0 : r;
}

struct readdir_plain {
	int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type);
	void *arg;
};

static int readdir_plain_fn(void *arg, const char *name, uint64_t ino, uint8_t type,
			    unsigned flags)
{
	struct readdir_plain *p = arg;

	(void)flags;
	return p->fn(p->arg, name, ino, type);
}

int pohm_ns_readdir(struct pohm_ns *ns, uint64_t dir,
		    int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type),
		    void *arg)
{
	struct readdir_plain p = { fn, arg };

	return pohm_ns_readdir_flags(ns, dir, readdir_plain_fn, &p);
}
