/*
 * cachens.c — namespace changes under the prefix: the storage first (so
 * other hosts see them as soon as the call returns, like the 2012 directory
 * objects), then the same change on the local copy; if the local change
 * fails, the storage change is compensated.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"
#include "stub.h"

static uint32_t my_uid(void)
{
	return (uint32_t)pohm_sys_geteuid();
}

static uint32_t my_gid(void)
{
	return (uint32_t)pohm_perm_egid();	/* kept: perm.h */
}

/* The inode this thread's last pohm_cache_create made, and a hash of its
 * path, for the pohm_cache_opened that follows (thread-local: no lock). */
static __thread uint64_t created_ino, created_hash, created_dino;
static __thread char created_name[256];
/* Its stored attributes as the create answered them (a new file: no
 * chunks; nothing malloc'ed is kept) and when, for the one record
 * pohm_cache_opened_as writes with the local file (issue 23: one record
 * write per create, none before the open). */
static __thread struct pohm_inode created_in;
static __thread uint64_t created_vns;
/* pohm_cache_create_held's parent, held for the open (hdfd -1: none), and
 * whether the open by it made the file (created_at: no names_fd needed). */
static __thread int hdfd = -1, created_at;
static __thread struct cache_look hlook;
static __thread const char *hname;

/* Is dfd/name (lst) a clean copy of an inode other than ino, i.e. of a file
 * deleted elsewhere?  An unknown file, or a changed one, is not stale. */
static int stale_local(struct pohm_cache *c, int dfd, const char *name, const struct stat *lst,
		       uint64_t ino)
{
	struct pohm_jrec rec;
	uint64_t known;
	int stale;

	if (pohm_journal_lookup_local(&c->j, (uint64_t)lst->st_dev, (uint64_t)lst->st_ino, &known) ||
	    known == ino || pohm_journal_get(&c->j, known, &rec))
		return 0;
	stale = rec.lino == (uint64_t)lst->st_ino && !cache_local_changed(c, &rec, dfd, name, lst);
	pohm_jrec_clear(&rec);
	return stale;
}

/*
 * The local copy of the regular file in, which a create found in the storage
 * but not here: an empty file (or a stub when in has data, fetched next),
 * built under a temp name and linked in, so that nobody writes to it before
 * its state is taken.  If another process of this host made the name
 * meanwhile, that file stays as it is (it may already hold writes; its
 * maker records it).  0 or -errno.
 */
static int create_local(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			const struct pohm_inode *in)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	struct pohm_jrec rec;
	struct stat st;
	char tmp[64];
	int fd, r;

	if (in->nlink > 1)
		return cache_make_local(c, dfd, name, rel, in);	/* maybe a local hardlink */
	snprintf(tmp, sizeof(tmp), "c.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	if (in->size) {
		/* A stub (stub.h): no open of it succeeds without the shim. */
		r = pohm_stub_make(c->stage_fd, tmp, c->is_root, in->uid, in->gid);
		if (r)
			return r;
		r = pohm_sys_fstatat(c->stage_fd, tmp, &st, AT_SYMLINK_NOFOLLOW);
	} else {
		/* An empty file needs no fetch: its mode and times now (a copy
		 * with its own mtime would push it as a change, over the
		 * stored one, before anything is written). */
		struct timespec tv[2] = {
			{ in->atime.sec, in->atime.nsec }, { in->mtime.sec, in->mtime.nsec },
		};

		fd = pohm_sys_openat(c->stage_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0);
		if (fd < 0)
			return fd;
		/* Owner before mode: chown clears S_ISUID/S_ISGID. */
		if (c->is_root)
			pohm_sys_fchown(fd, in->uid, in->gid);
		pohm_sys_fchmod(fd, in->mode & 07777);
		pohm_sys_utimensat(fd, NULL, tv, 0);
		r = pohm_sys_fstat(fd, &st);
		pohm_sys_close(fd);
	}
	if (!r)
		r = pohm_sys_linkat(c->stage_fd, tmp, dfd, name, 0);
	pohm_sys_unlinkat(c->stage_fd, tmp, 0);
	if (r)
		return r == -EEXIST ? 0 : r;
	/* The state before the link: the link's own ctime change reads as dirty
	 * (the push then finds nothing to send), a write by anyone else too. */
	memset(&rec, 0, sizeof(rec));
	pohm_journal_note_inode(&rec, in);
	pohm_journal_note_local(&rec, &st);
	rec.flags = in->size ? POHM_J_STUB | (in->nxattr ? 0 : POHM_J_NOXATTR) : 0;
	rec.validated_ns = pohm_sys_real_ns();
	pohm_jrec_set_hint(&rec, rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * Refresh dfd/name from in, the version the create found, in this host's
 * push turn of the inode: other processes may be appending to the local
 * file and pushing it, and in may already be older than what one of them
 * committed and recorded since; that local copy is newer, never replaced.
 */
static int refresh_in_turn(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			   const struct pohm_inode *in)
{
	struct pohm_jrec rec;
	int turn = cache_push_turn_take(c, in->ino), r = 0, newer = 0;

	if (!pohm_journal_get(&c->j, in->ino, &rec)) {
		newer = !(rec.flags & POHM_J_STUB) && rec.dversion > in->dversion;
		pohm_jrec_clear(&rec);
	}
	if (!newer)
		r = pohm_cache_refresh(c, dfd, name, rel, in);
	if (turn)
		cache_push_turn_drop(c, in->ino);
	return r;
}

/*
 * The kernel's checks of a new name rel (dfd/name in storage directory dino),
 * made from the stored attributes before the storage changes: 0, -EEXIST
 * when the name exists (that comes first, as in the kernel), -EACCES.
 */
static int may_create(struct pohm_cache *c, uint64_t dino, const char *name, const char *rel)
{
	uint64_t ino;
	int r = cache_perm_parent(c, rel, W_OK | X_OK);

	if (r == -EACCES && !cache_perm_parent(c, rel, X_OK) &&
	    !pohm_ns_lookup(c->ns, dino, name, &ino, NULL))
		r = -EEXIST;
	return r;
}

/* The same for removing (or renaming away) rel: 0, -ENOENT when it does not
 * exist, -EACCES, or -EPERM by the sticky bit. */
static int may_remove(struct pohm_cache *c, int dfd, uint64_t dino, const char *name,
		      const char *rel)
{
	uint64_t ino;
	int r = cache_perm_parent(c, rel, W_OK | X_OK);

	if (r == -EACCES && !cache_perm_parent(c, rel, X_OK) &&
	    pohm_ns_lookup(c->ns, dino, name, &ino, NULL) == -ENOENT)
		r = -ENOENT;
	if (!r)
		r = cache_perm_sticky(c, dfd, name);
	return r;
}

/*
 * Offline (no group answers), an open with O_CREAT but not O_EXCL of a
 * name this cache holds a recorded copy of opens that copy, as if it had
 * existed all along (it did, when last validated); what is written is
 * pushed when the storage answers.  A new name needs the storage: -EIO.
 * 1 (it exists), or -errno.
 */
static int create_offline(struct pohm_cache *c, const char *rel)
{
	struct stat st;
	uint64_t ino;
	int r = pohm_cache_materialize(c, rel, POHM_MAT_DATA | POHM_MAT_OPEN | POHM_MAT_OPEN_W);

	if (r)
		return r == -ENOENT ? -EIO : r;
	if (pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
	    pohm_stub_shape(&st) ||
	    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino))
		return -EIO;
	return 1;
}

/* A create found rel stored: absent here, it may be a name a signal
 * handler removed or renamed, its record still queued (another process's
 * bounded drain left it): applied now (the cache's absent_fn), the create
 * is asked again.  1 (records applied), 0. */
static int stored_by_queued_removal(struct pohm_cache *c, int dfd, const char *name,
				    const char *rel)
{
	struct stat lst;

	return c->absent_fn &&
	       pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == -ENOENT &&
	       c->absent_fn(c, rel) > 0;
}

/* A stale local file of dfd/name (deleted elsewhere, clean) makes way for
 * the new inode ino.  Not a file the journal does not tie to another
 * inode: that may be another process's local copy of the inode we just
 * made (its create found ours), already being written. */
static void stale_name_away(struct pohm_cache *c, int dfd, const char *name, uint64_t ino)
{
	struct stat lst;

	if (!pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(lst.st_mode) &&
	    stale_local(c, dfd, name, &lst, ino))
		pohm_sys_unlinkat(dfd, name, 0);
}

/* pohm_cache_create; hold: a new inode's parent, when it is the kept one
 * (walkfresh.c), stays held for the open (hdfd), its stale-name check
 * left to pohm_cache_create_parent_done. */
static int create(struct pohm_cache *c, const char *rel, mode_t mode, int excl, int hold)
{
	struct pohm_inode in;
	struct cache_look look;
	const char *name;
	uint64_t dino;
	int dfd, r;

	created_at = 0;
	r = cache_walk_parent_direct(c, rel, &dfd, &dino, &name, &look);
	if (r)
		return r == -EIO && !excl && cache_offline(c) ? create_offline(c, rel) : r;
	/* A cache is its owner's (DESIGN §2): an fsuid that may not write its
	 * journal is refused before the storage changes (the create's record
	 * is written only after the open, decision 0063). */
	r = pohm_journal_may(&c->j);
	if (!r)
		r = may_create(c, dino, name, rel);
	if (r == -EEXIST && !excl)
		r = 0;		/* opening an existing file needs no write on the directory */
	if (r) {
		cache_walk_look_done(c, dfd, &look);
		return r;
	}
	cache_create_mark(c, dino, name, 1);
	r = pohm_ns_create(c->ns, dino, name, S_IFREG | (mode & 07777), my_uid(), my_gid(), 0,
			   excl ? POHM_CREATE_EXCL : 0, &in);
	if ((r == 1 || r == -EEXIST) && stored_by_queued_removal(c, dfd, name, rel)) {
		if (r == 1)
			pohm_inode_clear(&in);
		r = pohm_ns_create(c->ns, dino, name, S_IFREG | (mode & 07777), my_uid(), my_gid(),
				   0, excl ? POHM_CREATE_EXCL : 0, &in);
	}
	if (r)
		cache_create_mark(c, dino, name, 0);
	if (r < 0 && r != -EEXIST)
		cache_dir_incomplete(c, dino);	/* the insert may have happened */
	if (r < 0 && !excl && cache_offline(c)) {
		cache_walk_look_done(c, dfd, &look);
		return create_offline(c, rel);
	}
	if (r == 1) {
		/* It exists: open it with its contents, as a local file system would. */
		if (S_ISREG(in.mode)) {
			struct stat lst;

			if (pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW))
				create_local(c, dfd, name, rel, &in);
			r = refresh_in_turn(c, dfd, name, rel, &in);
			if (r == -ENOENT)
				r = 0;	/* gone locally meanwhile (another thread's create): O_CREAT makes it */
			r = r ? r : 1;
		}
		pohm_inode_clear(&in);
	} else if (r == 0) {
		/* Only the kept parent (a high fd) is held across the open: a
		 * walk's low fd would change the number the host's open gets. */
		hold = hold && look.kept;
		if (!hold)
			stale_name_away(c, dfd, name, in.ino);
		cache_mark_fresh(c, in.ino);
		cache_dir_changed(c, dino);
		created_ino = in.ino;
		created_hash = cache_rel_hash(rel);
		created_dino = dino;
		snprintf(created_name, sizeof(created_name), "%s", name);
		/* Remember the inode until the real open tells us the local file:
		 * its record is written then, once (pohm_cache_opened_as).  A
		 * crash before that leaves no record, as a crash before this
		 * one's put did: the next walk reads the stored entry. */
		created_in = (struct pohm_inode){
			.ino = in.ino, .mode = in.mode, .uid = in.uid, .gid = in.gid,
			.nlink = in.nlink, .size = in.size, .rdev = in.rdev, .atime = in.atime,
			.mtime = in.mtime, .ctime = in.ctime, .version = in.version,
			.dversion = in.dversion, .chunk_shift = in.chunk_shift,
		};
		created_vns = pohm_sys_real_ns();
		if (in.nchunks)
			created_ino = 0;	/* not a new file's inode: the open asks */
		pohm_inode_clear(&in);
		if (hold) {
			hdfd = dfd;
			hlook = look;
			hname = name;
			return 0;
		}
	}
	cache_walk_look_done(c, dfd, &look);
	return r;
}

int pohm_cache_create(struct pohm_cache *c, const char *rel, mode_t mode, int excl)
{
	return create(c, rel, mode, excl, 0);
}

int pohm_cache_create_held(struct pohm_cache *c, const char *rel, mode_t mode, int excl)
{
	return create(c, rel, mode, excl, 1);
}

int pohm_cache_create_parent(struct pohm_cache *c, const char **name)
{
	(void)c;
	*name = hname;
	return hdfd;
}

void pohm_cache_create_parent_done(struct pohm_cache *c, int opened_new)
{
	if (hdfd < 0)
		return;
	if (!opened_new)
		stale_name_away(c, hdfd, hname, created_in.ino);
	created_at = opened_new;
	cache_walk_look_done(c, hdfd, &hlook);
	hdfd = -1;
}

/*
 * Is the file open as fd (fst) the one rel names in the prefix, walked one
 * component at a time without following a symlink?  An open that went
 * through a symlink (or a directory swapped for one) may have reached a
 * file outside the prefix: that file is never recorded, so never pushed.
 */
static int names_fd_walk(struct pohm_cache *c, const char *rel, const struct stat *fst)
{
	const char *name;
	struct stat st;
	int dfd = pohm_sys_open_parent(c->pfd, rel, &name), same;

	if (dfd < 0)
		return 0;
	same = !pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
	       st.st_dev == fst->st_dev && st.st_ino == fst->st_ino;
	pohm_sys_close(dfd);
	if (!same)
		pohm_debug("%s: the open reached another file (through a symlink): not ours", rel);
	return same;
}

/*
 * names_fd_walk's answer in one readlink when it is yes: the kernel's path
 * of the open file (the path the open reached, every symlink on the way
 * resolved) is the prefix's own path and rel.  An open through a symlink,
 * a directory swapped for one, or a file renamed or unlinked since, shows
 * another path: those are walked as before.  The kept prefix path holds
 * while the prefix directory keeps its path, as every path-classified call
 * of the shim assumes (issue 23: two calls fewer per open of a new file).
 */
static int names_fd(struct pohm_cache *c, const char *rel, int fd, const struct stat *fst)
{
	if (S_ISREG(fst->st_mode) && cache_fd_is_rel(c, fd, rel))
		return 1;
	return names_fd_walk(c, rel, fst);
}

int cache_fd_is_rel(struct pohm_cache *c, int fd, const char *rel)
{
	static const char mark[] = " (deleted)";
	char got[4096];
	size_t l = strlen(rel), ml = sizeof(mark) - 1;
	int rn = cache_prefix_root(c), n;

	/* A removed file's or directory's kernel path ends in the mark. */
	if (rn <= 0 || (l >= ml && !strcmp(rel + l - ml, mark)))
		return 0;
	n = pohm_sys_fd_path(fd, got, sizeof(got));
	return n > rn && !memcmp(got, c->proot, (size_t)rn) && got[rn] == '/' &&
	       !strcmp(got + rn + 1, rel);
}

int pohm_cache_opened(struct pohm_cache *c, const char *rel, int fd)
{
	struct stat st;
	uint64_t ino;

	return pohm_cache_opened_as(c, rel, fd, &st, &ino);
}

/* The record of a created or opened file with its local file: what
 * pohm_cache_opened_as knows of the inode (base) and the local file. */
struct opened_arg {
	struct pohm_jrec *base;	/* used when ino has no record yet (its csum then moves) */
	struct stat *st;	/* unset when fresh: taken here */
	const char *rel;
	int fd;
	int fresh;		/* made empty by its open's O_EXCL (created_at) */
};

/* pohm_journal_update_make's edit, under the record's lock: the record as
 * it is now (another process's, if it recorded the file first), else
 * base; the local file starts as the (empty) committed version, with its
 * times (so that closing it unwritten pushes nothing): a write makes it
 * dirty. */
static int opened_fn(struct pohm_jrec *r, const void *arg)
{
	const struct opened_arg *a = arg;
	struct stat *st = a->st;

	if (!r->ino) {
		if (!a->base->ino)
			return -ENOENT;	/* its record went since it was read: nothing to make */
		*r = *a->base;
		a->base->csum = NULL;	/* r's now */
		a->base->nchunks = 0;
	}
	if (!r->lino && (a->fresh || !st->st_size)) {
		struct timespec tv[2] = {
			{ r->atime.sec, r->atime.nsec }, { r->mtime.sec, r->mtime.nsec },
		};
		int rc = 0;

		if (!pohm_sys_utimensat(a->fd, NULL, tv, 0) || a->fresh)
			rc = pohm_sys_fstat(a->fd, st);
		if (rc && a->fresh)
			return rc;
		if (!st->st_size)
			pohm_journal_note_local(r, st);
		else	/* another process wrote meanwhile: that is a change to push */
			r->ldev = (uint64_t)st->st_dev, r->lino = (uint64_t)st->st_ino;
	} else {
		int rc = a->fresh ? pohm_sys_fstat(a->fd, st) : 0;

		if (rc)
			return rc;
		r->ldev = (uint64_t)st->st_dev;
		r->lino = (uint64_t)st->st_ino;
	}
	pohm_jrec_set_hint(r, a->rel);
	return 0;
}

int pohm_cache_opened_as(struct pohm_cache *c, const char *rel, int fd, struct stat *out,
			 uint64_t *oino)
{
	struct opened_arg a;
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	/* Made by the open at its held parent with O_EXCL: a new, empty
	 * regular file of that name in the directory rel's parent names
	 * (the kept parent, no symlink on the way) — what names_fd checks; its
	 * stat is taken once, under the record's lock (opened_fn). */
	int r, created = 0, fresh = created_at && created_ino && created_hash == cache_rel_hash(rel);

	*oino = 0;
	created_at = 0;
	memset(&st, 0, sizeof(st));
	if (!fresh) {
		r = pohm_sys_fstat(fd, &st);
		if (r)
			return r;
		if (!names_fd(c, rel, fd, &st))
			return 0;
	}
	/*
	 * Just created: whatever the index says about this local inode number
	 * is stale (the file system reuses numbers of deleted files at once).
	 * The create just before told us the inode (else ask the storage).
	 */
	if (created_ino && created_hash == cache_rel_hash(rel)) {
		ino = created_ino;
		created = 1;
		cache_create_mark(c, created_dino, created_name, 0);
	} else {
		r = pohm_ns_resolve(c->ns, rel, 0, &ino);
		if (r)
			return r;
	}
	created_ino = 0;
	cache_create_mark(c, 0, "", 0);	/* whatever this thread still held */
	memset(&rec, 0, sizeof(rec));
	if (created) {
		pohm_journal_note_inode(&rec, &created_in);	/* the create's answer */
		rec.validated_ns = created_vns;
	} else {
		/* Its record is read again under the lock below; without one,
		 * the stored inode is asked for first (no round trip under a
		 * journal lock). */
		r = pohm_journal_get(&c->j, ino, &rec);
		pohm_jrec_clear(&rec);
		memset(&rec, 0, sizeof(rec));
		if (r == -ENOENT) {
			struct pohm_inode in;

			r = pohm_ns_getattr(c->ns, ino, &in);
			if (r)
				return r;
			pohm_journal_note_inode(&rec, &in);
			pohm_inode_clear(&in);
		} else if (r) {
			return r;
		}
	}
	a = (struct opened_arg){ &rec, &st, rel, fd, fresh };
	r = pohm_journal_update_make(&c->j, ino, opened_fn, &a);
	pohm_jrec_clear(&rec);
	if (!r && !st.st_ino)
		r = -EIO;	/* fresh, and opened_fn did not take the stat */
	if (!r) {
		*out = st;
		*oino = ino;
	}
	return r;
}

int pohm_cache_adopt(struct pohm_cache *c, const char *rel, int fd)
{
	struct pohm_inode in;
	struct pohm_jrec rec;
	const char *name;
	struct stat st;
	uint64_t dino, ino = 0;	/* ino: a stale index entry's inode, else 0 */
	int dfd, r;

	r = pohm_sys_fstat(fd, &st);
	if (r)
		return r;
	if (cache_index_known(c, &st, &ino) != -ENOENT)
		return 0;	/* known already (a stale index entry is not), or cannot tell */
	if (!names_fd(c, rel, fd, &st))
		return 0;
	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_ns_create(c->ns, dino, name, S_IFREG | (st.st_mode & 07777),
			   (uint32_t)st.st_uid, (uint32_t)st.st_gid, 0, 0, &in);
	pohm_sys_close(dfd);
	if (r < 0)
		return r;
	if (r == 0) {
		cache_dir_changed(c, dino);
	} else if (!S_ISREG(in.mode) || in.size || in.ino == ino) {
		/* The storage has the name with contents (or the index maps this
		 * file to it on purpose: note_unrecorded_fetch): taking it as this
		 * file's base would overwrite that version.  Left to the push's
		 * conflict copy (the index) or the reconcile scan's (DESIGN §2). */
		pohm_inode_clear(&in);
		return 0;
	}
	memset(&rec, 0, sizeof(rec));
	pohm_journal_note_inode(&rec, &in);
	pohm_inode_clear(&in);
	/* Recorded as the empty committed version: any content is a change to push. */
	rec.ldev = (uint64_t)st.st_dev;
	rec.lino = (uint64_t)st.st_ino;
	rec.lsize = st.st_size ? (uint64_t)-1 : 0;
	rec.lctime.sec = st.st_ctim.tv_sec;
	rec.lctime.nsec = (uint32_t)st.st_ctim.tv_nsec;
	rec.recorded_ns = pohm_sys_real_ns();
	pohm_jrec_set_hint(&rec, rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	return r;
}

void pohm_cache_create_undo(struct pohm_cache *c, const char *rel)
{
	const char *name;
	uint64_t dino;
	int dfd;

	cache_create_mark(c, 0, "", 0);
	if (cache_walk_parent(c, rel, &dfd, &dino, &name))
		return;
	/* If the unlink fails, the stored name has no local file. */
	cache_dir_incomplete(c, dino);
	pohm_ns_unlink(c->ns, dino, name);
	pohm_sys_close(dfd);
}

/*
 * A new name that is not a regular file opened by its create: a directory,
 * a node (FIFO, device, socket, an empty regular file by mknod) or a
 * symlink.  They share one shape: the storage first (the name exists there
 * before the call returns), then the local object; a local failure undoes
 * the storage step and is what the caller sees; a success records the new
 * inode in the journal and moves the directory's times.
 */
enum new_kind { NEW_DIR, NEW_NODE, NEW_SYMLINK };

struct new_name {
	enum new_kind kind;
	mode_t mode;		/* type and permission bits (NEW_DIR: permissions) */
	uint64_t rdev;		/* NEW_NODE: a device's number */
	const char *target;	/* NEW_SYMLINK */
};

static int new_in_store(struct pohm_cache *c, uint64_t dino, const char *name,
			const struct new_name *nn, struct pohm_inode *in)
{
	switch (nn->kind) {
	case NEW_DIR:
		return pohm_ns_mkdir(c->ns, dino, name, nn->mode & 07777, my_uid(), my_gid(), in);
	case NEW_NODE:
		return pohm_ns_create(c->ns, dino, name, (uint32_t)(nn->mode & (S_IFMT | 07777)),
				      my_uid(), my_gid(), nn->rdev, POHM_CREATE_EXCL, in);
	default:
		return pohm_ns_symlink(c->ns, dino, name, nn->target, my_uid(), my_gid(), in);
	}
}

static int new_locally(int dfd, const char *name, const struct new_name *nn)
{
	struct stat lst;
	int r;

	switch (nn->kind) {
	case NEW_DIR:
		r = pohm_sys_mkdirat(dfd, name, nn->mode & 07777);
		/* A stale local directory (removed elsewhere) is reused as it is:
		 * 1, its names are not the new directory's. */
		if (r == -EEXIST && !pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) &&
		    S_ISDIR(lst.st_mode))
			r = 1;
		return r;
	case NEW_NODE:
		return pohm_sys_mknodat(dfd, name, nn->mode, (dev_t)nn->rdev);
	default:
		return pohm_sys_symlinkat(nn->target, dfd, name);
	}
}

static int new_name(struct pohm_cache *c, const char *rel, const struct new_name *nn)
{
	struct pohm_inode in;
	const char *name;
	uint64_t dino, t0, t0real;
	int dfd, r, reused;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = may_create(c, dino, name, rel);
	/* Before the insert: nobody can put a name in the new directory earlier. */
	t0 = pohm_sys_mono_ns();
	t0real = pohm_sys_real_ns();
	if (!r)
		r = new_in_store(c, dino, name, nn, &in);
	if (r) {
		if (r != -EEXIST && r != -EACCES)
			cache_dir_incomplete(c, dino);	/* the insert may have happened */
		goto out;
	}
	r = new_locally(dfd, name, nn);
	reused = r == 1;
	r = r == 1 ? 0 : r;
	if (r) {
		/* compensate: the storage loses the name again (if that fails,
		 * the stored name has no local file) */
		cache_dir_incomplete(c, dino);
		if (nn->kind == NEW_DIR)
			pohm_ns_rmdir(c->ns, dino, name);
		else
			pohm_ns_unlink(c->ns, dino, name);
	} else {
		int fresh_dir = nn->kind == NEW_DIR && !reused;

		/* A new directory is complete and empty (decision 0047), for
		 * the other processes too (0062: its record, validated and
		 * listed as of before the insert). */
		r = fresh_dir ? cache_record_at(c, dfd, name, rel, &in, POHM_J_LISTED, t0real)
			      : cache_record(c, dfd, name, rel, &in, 0);
		cache_mark_fresh(c, in.ino);
		if (fresh_dir && !r)
			cache_mark_complete(c, in.ino, t0);
		cache_dir_changed(c, dino);
	}
	pohm_inode_clear(&in);
out:
	pohm_sys_close(dfd);
	return r;
}

int pohm_cache_mkdir(struct pohm_cache *c, const char *rel, mode_t mode)
{
	struct new_name nn = { NEW_DIR, mode, 0, NULL };

	return new_name(c, rel, &nn);
}

/* Storage inode behind dfd/name as the journal knows it (0 if unknown). */
static uint64_t local_ino(struct pohm_cache *c, int dfd, const char *name)
{
	struct stat st;
	uint64_t ino = 0;

	if (!pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino);
	return ino;
}

/* ino's record names rel now (the push finds a file by its hint). */
static void rehint_one(struct pohm_cache *c, uint64_t ino, const char *rel)
{
	struct pohm_jrec rec;

	if (!pohm_journal_get(&c->j, ino, &rec)) {
		pohm_jrec_set_hint(&rec, rel);
		pohm_journal_put(&c->j, &rec);
		pohm_jrec_clear(&rec);
	}
}

/* ino lost a name, and gone says whether it was its last (the storage's
 * link count reached 0): then the journal forgets it. */
static void forget_known(struct pohm_cache *c, uint64_t ino, int gone)
{
	cache_unmark(c, ino);
	if (gone) {
		pohm_journal_del(&c->j, ino);
		cache_push_forget(c, ino);
	}
}

/* ino lost a name: if the storage has no more of it, the journal forgets it. */
static void forget_if_gone(struct pohm_cache *c, uint64_t ino)
{
	struct pohm_inode in;
	int r;

	r = pohm_ns_getattr(c->ns, ino, &in);
	if (r == -ENOENT || !r)
		forget_known(c, ino, r == -ENOENT);
	else
		cache_unmark(c, ino);
	if (!r)
		pohm_inode_clear(&in);	/* only a read that succeeded filled in */
}

/*
 * A rename, link or unlink of another name moves the inode's ctime.  If the
 * local copy was clean just before (pre, as the journal recorded it), record
 * its state now (post), so the copy stays clean: no false "dirty" in status,
 * no needless push, and no stale copy taken for a local change when another
 * host wrote meanwhile (issue 18 cases 1 and 6).  A copy changed in between
 * (another inode, size or mtime) is left as it is.  The new ctime is fresh,
 * so the record is "racy" for a tick and a content check settles a write in
 * that tick.
 */
struct renote {
	const struct stat *pre, *post;
};

static int renote_fn(struct pohm_jrec *r, const void *arg)
{
	const struct renote *a = arg;

	if ((r->flags & POHM_J_STUB) || r->lino != (uint64_t)a->pre->st_ino ||
	    r->ldev != (uint64_t)a->pre->st_dev || pohm_journal_is_dirty(r, a->pre) == 1)
		return -ESTALE;
	pohm_journal_note_local(r, a->post);
	return 0;
}

/* Decided and written on the record as it is now, under its lock: a copy
 * read before would put back over another process's newer record (a
 * push's new base) what it held (issue 18). */
static void renote_if_clean(struct pohm_cache *c, uint64_t ino, const struct stat *pre,
			    const struct stat *post)
{
	struct renote a = { pre, post };

	if (!ino || !S_ISREG(pre->st_mode) || post->st_ino != pre->st_ino ||
	    post->st_dev != pre->st_dev || post->st_size != pre->st_size ||
	    post->st_mtim.tv_sec != pre->st_mtim.tv_sec ||
	    post->st_mtim.tv_nsec != pre->st_mtim.tv_nsec)
		return;
	pohm_journal_update(&c->j, ino, renote_fn, &a);
}

/*
 * A file made behind the storage's back (no name in the storage, no inode
 * of ours) was just removed locally only.  The signal queue's replay may
 * have adopted it meanwhile (sigqueue.c sq_adopt_check, the mirror of this
 * look): created its name in the storage after this removal's look there,
 * and looked at the local name before the unlink.  Its journal record
 * (for lst, the removed file) then exists, and the stored name goes.  The
 * adopt records before its look and this looks after the unlink: one of
 * the two sees the other.
 */
static void drop_if_adopted(struct pohm_cache *c, const char *rel, uint64_t dino,
			    const char *name, const struct stat *lst)
{
	uint64_t ino, sino;
	uint8_t type;

	if (cache_index_known(c, lst, &ino) ||
	    pohm_ns_lookup(c->ns, dino, name, &sino, &type) || sino != ino)
		return;
	if (!pohm_ns_unlink(c->ns, dino, name)) {
		cache_dir_changed(c, dino);
		forget_if_gone(c, ino);
		pohm_debug("%s: adopted while removed; removed from the storage", rel);
	}
}

/*
 * Is the local file dfd/name (st, known in the index as ino) ino's own copy
 * with data not pushed yet: changed since the last fetch or push, or open
 * for write here?  Then a removal the storage refuses (the name moved or
 * went elsewhere) keeps it.  Its own copy: the record's local file, born
 * no later than the record saw it — a file born after is a reused local
 * number (ext4 hands a removed file's number out at once).  Where the file
 * system keeps no birth time, the record's name (rel) decides instead (a
 * hardlink of the file removed by another name is then not kept; with a
 * birth time it is: session 20 re-review).  1, 0.
 */
static int own_copy_unpushed(struct pohm_cache *c, uint64_t ino, const char *rel, int dfd,
			     const char *name, const struct stat *st)
{
	struct pohm_jrec rec;
	uint64_t born;
	int keep = 0;

	if (pohm_journal_get(&c->j, ino, &rec))
		return 0;
	if (!S_ISREG(st->st_mode))
		goto out;
	if (pohm_sys_birth_ns(dfd, name, (uint64_t)st->st_ino, &born) ? (uint64_t)st->st_ino != rec.lino ||
						 (uint64_t)st->st_dev != rec.ldev ||
						 born > rec.recorded_ns
					   : strcmp(rec.hint, rel) != 0)
		goto out;
	keep = pohm_cache_writer_alive(c, ino) == 1 || cache_local_changed(c, &rec, dfd, name, st);
out:
	pohm_jrec_clear(&rec);
	return keep;
}

static int remove_entry(struct pohm_cache *c, const char *rel, int dir)
{
	struct stat pre, post;
	const char *name;
	uint64_t dino, ino, sino = 0;
	int dfd, r, kfd = -1, gone = -1;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	/* Refused before the storage changes, as a create is (pohm_cache_create). */
	r = pohm_journal_may(&c->j);
	if (!r)
		r = pohm_cache_materialize(c, rel, POHM_MAT_NOFOLLOW);
	if (!r)
		r = may_remove(c, dfd, dino, name, rel);
	if (r)
		goto out;
	ino = local_ino(c, dfd, name);
	/*
	 * Emptiness is the storage's (a stale listing of entries another host
	 * removed does not keep the directory), but only for what the storage
	 * holds: an entry here that is not a stale stored copy (made without
	 * the shim or not adopted yet, a socket, a file open for write here, a
	 * rename in flight) keeps the directory, refused before the storage
	 * changes.
	 */
	if (dir && !cache_rmdir_only_stale(c, dfd, name, rel, ino)) {
		r = -ENOTEMPTY;
		goto out;
	}
	sino = ino;	/* the journal's guess comes along with the lookup */
	r = dir ? pohm_ns_rmdir_ino(c->ns, dino, name, &sino, &gone) :
		  pohm_ns_unlink_ino(c->ns, dino, name, &sino, &gone);
	if (r == -ENOENT) {
		struct stat lst;

		/* Not in the storage (made behind its back, e.g. by libc's
		 * mkstemp or a signal handler): local only.  Also when the index
		 * named an inode for the local file but only by a reused number
		 * (ext4 hands a removed file's number out at once, its removal
		 * waiting in the signal queue: shim_procs 23 under TSan).  The
		 * inode's own copy changed here or open for write stays (its
		 * data is pushed to wherever the storage has it now). */
		if (pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) ||
		    (ino && own_copy_unpushed(c, ino, rel, dfd, name, &lst)))
			goto out;
		r = pohm_sys_unlinkat(dfd, name, dir ? AT_REMOVEDIR : 0);
		if (!r && !dir && S_ISREG(lst.st_mode))
			drop_if_adopted(c, rel, dino, name, &lst);
		if (!r && ino)
			forget_if_gone(c, ino);
		goto out;
	}
	if (r)
		goto out;
	cache_dir_changed(c, dino);
	/* Another name of the file stays: watch the inode across the unlink. */
	if (!dir && ino && !pohm_sys_fstatat(dfd, name, &pre, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(pre.st_mode) && pre.st_nlink > 1)
		kfd = pohm_sys_openat(dfd, name, O_PATH | O_NOFOLLOW, 0);
	/* The storage change is made; the local copy follows. */
	r = pohm_sys_unlinkat(dfd, name, dir ? AT_REMOVEDIR : 0);
	if (r == -ENOENT)
		r = 0;
	/*
	 * The storage's seal found the directory empty and removed it: what
	 * is still here was removed on another host after this host listed
	 * it (a stale listing; the check above let only such copies by).  It
	 * goes (listgone.c: a file changed here kept as a conflict copy
	 * first).  Something made here without the shim since that check
	 * stays, and the directory with it (below: the warning, ENOTEMPTY).
	 */
	if (r == -ENOTEMPTY && dir && cache_rmdir_drop_stale(c, dfd, name, rel, sino))
		r = 0;
	if (!r && kfd >= 0 && !pohm_sys_fstat(kfd, &post))
		renote_if_clean(c, ino, &pre, &post);
	if (kfd >= 0)
		pohm_sys_close(kfd);
	if (r)
		pohm_warn("%s: removed from the storage, but the local copy stays (%s)", rel,
			  strerror(-r));
	if (ino && gone >= 0 && sino == ino)
		forget_known(c, ino, gone);	/* the storage's CAS said it: no read */
	else if (ino)
		forget_if_gone(c, ino);
out:
	pohm_sys_close(dfd);
	return r;
}

int pohm_cache_drop_stored(struct pohm_cache *c, const char *rel)
{
	const char *name;
	uint64_t dino, ino;
	uint8_t type;
	int dfd, r;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r == -ENOENT ? 0 : r;
	r = pohm_ns_lookup(c->ns, dino, name, &ino, &type);
	if (!r && type != DT_DIR) {
		r = pohm_ns_unlink(c->ns, dino, name);
		if (!r)
			forget_if_gone(c, ino);
	}
	pohm_sys_close(dfd);
	return r == -ENOENT ? 0 : r;
}

int pohm_cache_unlink(struct pohm_cache *c, const char *rel)
{
	return remove_entry(c, rel, 0);
}

int pohm_cache_rmdir(struct pohm_cache *c, const char *rel)
{
	return remove_entry(c, rel, 1);
}

/* Both parents of a rename or link, materialized, with the source itself. */
struct two_paths {
	int ffd, tfd;			/* parent directory fds (close with two_close) */
	uint64_t fdino, tdino;		/* their storage inodes */
	const char *fname, *tname;	/* the last components */
	int blind;			/* the target was not looked up (blind_target) */
};

#define TWO_LINK     0	/* the target is not materialized */
#define TWO_RENAME   1	/* it is, unless blind_target says the CAS decides */
#define TWO_EXCHANGE 2	/* it always is */

/*
 * A rename whose target name is not here: look it up, or let the storage's
 * CAS decide (decision 0052; a file into another directory, 0054)?  The lookup only makes a
 * local copy of a target another host made, which the rename then replaces
 * anyway; what the caller's checks need of it is its owner in a sticky
 * directory.  So it is skipped when the directory is not sticky for this
 * caller and the copies kept from before (the bucket, the source's inode:
 * decision 0048) say the target is absent: the rename's first attempt is
 * one put_n against them, a stale copy loses its CAS and the storage path
 * reads, deciding on what is stored then (a target there is replaced, a
 * directory there refused, as after a lookup).
 */
static int blind_target(struct pohm_cache *c, const struct two_paths *t, uint64_t sino)
{
	struct stat st;

	if (!sino || pohm_sys_fstatat(t->tfd, t->tname, &st, AT_SYMLINK_NOFOLLOW) != -ENOENT ||
	    cache_offline(c) || cache_perm_sticky_matters(c, t->tfd))
		return 0;
	return t->fdino == t->tdino ?
		       pohm_ns_rename_ready(c->ns, t->fdino, t->fname, sino, t->tname) :
		       pohm_ns_move_ready(c->ns, t->fdino, t->fname, sino, t->tdino, t->tname);
}

static int two_walk(struct pohm_cache *c, const char *from, const char *to, int mat_to,
		    struct two_paths *t)
{
	int r;

	t->ffd = t->tfd = -1;
	t->blind = 0;
	r = cache_walk_parent(c, from, &t->ffd, &t->fdino, &t->fname);
	if (!r)
		r = cache_walk_parent(c, to, &t->tfd, &t->tdino, &t->tname);
	if (!r)
		r = pohm_cache_materialize(c, from, POHM_MAT_NOFOLLOW);
	if (!r && mat_to == TWO_RENAME &&
	    blind_target(c, t, local_ino(c, t->ffd, t->fname))) {
		pohm_debug("rename %s -> %s: the target not looked up (kept copies)", from, to);
		t->blind = 1;
		return 0;
	}
	if (!r && mat_to) {
		/* The source's inode rides along with the target's lookup: the
		 * rename's ctime CAS needs no read (issue 23, decision 0022). */
		pohm_ns_read_along(c->ns, local_ino(c, t->ffd, t->fname));
		r = pohm_cache_materialize(c, to, POHM_MAT_NOFOLLOW);
		pohm_ns_read_along(c->ns, 0);
	}
	return r;
}

static void two_close(struct two_paths *t)
{
	if (t->ffd >= 0)
		pohm_sys_close(t->ffd);
	if (t->tfd >= 0)
		pohm_sys_close(t->tfd);
}

int pohm_cache_rename(struct pohm_cache *c, const char *from, const char *to, unsigned flags)
{
	struct two_paths t;
	struct stat pre, post;
	uint64_t ino = 0, over = 0;
	int r, intent = 0, pre_ok = 0;

	r = two_walk(c, from, to, (flags & POHM_RENAME_EXCHANGE) ? TWO_EXCHANGE : TWO_RENAME, &t);
	if (!r)
		r = may_remove(c, t.ffd, t.fdino, t.fname, from);
	if (!r)
		r = cache_perm_parent(c, to, W_OK | X_OK);
	if (!r)
		r = cache_perm_sticky(c, t.tfd, t.tname);
	if (r)
		goto out;
	ino = local_ino(c, t.ffd, t.fname);
	pre_ok = !pohm_sys_fstatat(t.ffd, t.fname, &pre, AT_SYMLINK_NOFOLLOW);
	/* Renamed over; in an exchange, the object that ends at from. */
	over = local_ino(c, t.tfd, t.tname);
	if (ino && !(flags & POHM_RENAME_EXCHANGE)) {
		struct pohm_jrec rec;

		/* A kill between the two halves is completed later from this intent. */
		if (!pohm_journal_get(&c->j, ino, &rec)) {
			intent = !cache_intent_write(c, &rec, from, to);
			pohm_jrec_clear(&rec);
		}
	}
	/* A name coming from another directory: the target directory is not
	 * complete here any more (a failed or killed half leaves the stored
	 * name without a local file; mvintent.c completes it later). */
	if (t.tdino != t.fdino)
		cache_dir_incomplete(c, t.tdino);
	/* Not looked up (blind_target): a lost CAS's read brings the source's
	 * inode along, as the cache's lookup would have. */
	if (t.blind)
		pohm_ns_read_along(c->ns, ino);
	r = pohm_ns_rename_ino(c->ns, t.fdino, t.fname, t.tdino, t.tname, flags, ino);
	if (t.blind)
		pohm_ns_read_along(c->ns, 0);
	if (r == POHM_NS_RENAME_SAME) {
		/* The target names the source's inode already (a link another
		 * host made, maybe not here): rename(2) does nothing, the
		 * storage keeps both names, so must this copy -- no local
		 * rename (it would drop from here); a target not here is
		 * looked up when asked for, not taken for absent (0047). */
		cache_dir_incomplete(c, t.tdino);
		r = 0;
		goto out;
	}
	if (r) {
		if (r != -EEXIST && r != -ENOENT && r != -ENOTEMPTY)
			cache_dir_incomplete(c, t.fdino);	/* it may have happened */
		goto out;
	}
	pohm_sys_test_kill(POHM_TEST_KILL_IN_RENAME);	/* test only: a kill right here */
	r = pohm_sys_renameat2(t.ffd, t.fname, t.tfd, t.tname, flags);
	if (r) {
		/* Put the storage back as it was (best effort; logged if it fails). */
		unsigned back = flags & POHM_RENAME_EXCHANGE;

		cache_dir_incomplete(c, t.fdino);
		cache_dir_incomplete(c, t.tdino);
		if (pohm_ns_rename(c->ns, t.tdino, t.tname, t.fdino, t.fname, back))
			pohm_err("rename %s -> %s: done in the storage, failed locally (%s), and "
				 "could not be undone", from, to, strerror(-r));
		goto out;
	}
	cache_dir_changed(c, t.fdino);
	if (t.tdino != t.fdino)
		cache_dir_changed(c, t.tdino);
	if (over && over != ino && !(flags & POHM_RENAME_EXCHANGE))
		forget_if_gone(c, over);	/* renamed over: an fd's later push is dropped */
	if (over && over != ino && (flags & POHM_RENAME_EXCHANGE))
		rehint_one(c, over, from);	/* the other object of an exchange */
	if (ino) {
		rehint_one(c, ino, to);
		if (pre_ok && !(flags & POHM_RENAME_EXCHANGE) &&
		    !pohm_sys_fstatat(t.tfd, t.tname, &post, AT_SYMLINK_NOFOLLOW))
			renote_if_clean(c, ino, &pre, &post);
	}
	/* A directory moved: the records below it follow (the push finds a
	 * file by its hint); an exchange moved both. */
	if (pre_ok && S_ISDIR(pre.st_mode))
		cache_dir_rehint_below(c, t.tfd, t.tname, to);
	if (flags & POHM_RENAME_EXCHANGE)
		cache_dir_rehint_below(c, t.ffd, t.fname, from);
out:
	if (intent)
		cache_intent_drop(c, ino);
	two_close(&t);
	return r;
}

int pohm_cache_link(struct pohm_cache *c, const char *from, const char *to)
{
	struct two_paths t;
	struct stat pre, post;
	uint64_t ino;
	int r, pre_ok;

	r = two_walk(c, from, to, TWO_LINK, &t);
	if (!r)
		r = cache_perm_parent(c, from, X_OK);
	if (!r)	/* the kernel's order: the source's protection, then the directory */
		r = cache_perm_hardlink(c, t.ffd, t.fname);
	if (!r)
		r = may_create(c, t.tdino, t.tname, to);
	if (!r)
		r = pohm_ns_lookup(c->ns, t.fdino, t.fname, &ino, NULL);
	if (!r)
		r = pohm_ns_link(c->ns, ino, t.tdino, t.tname, NULL);
	if (r)
		goto out;
	pre_ok = !pohm_sys_fstatat(t.ffd, t.fname, &pre, AT_SYMLINK_NOFOLLOW);
	r = pohm_sys_linkat(t.ffd, t.fname, t.tfd, t.tname, 0);
	if (r) {
		cache_dir_incomplete(c, t.tdino);	/* if the compensation fails */
		pohm_ns_unlink(c->ns, t.tdino, t.tname);	/* compensate */
	}
	if (!r && pre_ok && !pohm_sys_fstatat(t.tfd, t.tname, &post, AT_SYMLINK_NOFOLLOW))
		renote_if_clean(c, ino, &pre, &post);
	if (!r)
		cache_dir_changed(c, t.tdino);
	cache_unmark(c, ino);
out:
	two_close(&t);
	return r;
}

int pohm_cache_mknod(struct pohm_cache *c, const char *rel, mode_t mode, uint64_t rdev)
{
	struct new_name nn = { NEW_NODE, mode, 0, NULL };

	if ((S_ISCHR(mode) || S_ISBLK(mode)) && !c->is_root)
		return -EPERM;		/* what mknod(2) says without CAP_MKNOD */
	if (!(nn.mode & S_IFMT))
		nn.mode |= S_IFREG;	/* as mknod(2): no type is a regular file */
	if (!S_ISFIFO(nn.mode) && !S_ISCHR(nn.mode) && !S_ISBLK(nn.mode) && !S_ISREG(nn.mode))
		return -EINVAL;
	if (S_ISCHR(mode) || S_ISBLK(mode))
		nn.rdev = rdev;
	return new_name(c, rel, &nn);
}

int pohm_cache_symlink(struct pohm_cache *c, const char *target, const char *rel)
{
	struct new_name nn = { NEW_SYMLINK, S_IFLNK | 0777, 0, target };

	return new_name(c, rel, &nn);
}
