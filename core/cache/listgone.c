/*
 * listgone.c — a local directory whose stored directory is gone (removed
 * on another host, `rm -r`): its local copy goes, entries and all, as a
 * listing of its parent finds it (cache.c list_drop_gone).  Before session
 * 16 only an empty one went, and the local files below a removed
 * directory stayed visible here for good.  Nothing changed here is lost
 * by it: a clean copy (what this host fetched or pushed, a stub) goes; a file
 * changed here (or made without the shim) is first kept as a conflict copy
 * under /.pohmelfs-conflicts/HOST/ (DESIGN §1 "Conflicts"), as a push
 * that lost its compare-and-swap keeps it; whatever cannot be handled so
 * (a rename of this host in flight, a file the journal marks as a
 * conflict already, a file open for write here, a node, a failed copy)
 * stays, and with it the directories above it.
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

/* Deeper trees are left (the stack holds a name per level). */
#define GONE_MAX_DEPTH 64

/* What a walk may drop: GONE_ANY also what the journal does not know (a
 * directory removed on another host: kept as conflict copies); GONE_KNOWN
 * only stale copies the journal knows (this host's rmdir: a file made
 * without the shim, or not adopted yet, is not the storage's to remove);
 * GONE_DRY drops nothing and answers whether GONE_KNOWN would drop all. */
enum gone_mode { GONE_ANY, GONE_KNOWN, GONE_DRY };

/* One removal: the top local directory (ldev, lino), the storage
 * directory ino whose lookup said it is gone, and what may go. */
struct gone_walk {
	struct pohm_cache *c;
	uint64_t ldev, lino, ino;
	enum gone_mode mode;
};

/* The journal's record of the local file st, or -ENOENT (none, or an
 * index entry left by another file). */
static int gone_rec(struct pohm_cache *c, const struct stat *st, struct pohm_jrec *rec)
{
	uint64_t known;
	int r;

	memset(rec, 0, sizeof(*rec));
	r = pohm_journal_lookup_local(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &known);
	if (!r)
		r = pohm_journal_get(&c->j, known, rec);
	if (!r && cache_index_stale(rec, st))
		r = -ENOENT;
	return r;
}

/* Keep the local regular file dfd/name (st) as a conflict copy.  0 or -errno. */
static int gone_keep(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		     struct pohm_jrec *rec, const struct stat *st)
{
	int fd, r;

	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	pohm_jrec_set_hint(rec, rel);
	r = cache_conflict_copy(c, fd, rec, st, "changed here, its directory removed elsewhere");
	pohm_sys_close(fd);
	return r;
}

/*
 * Does the top local directory still stand for the removed storage
 * directory?  Another process of this host may make the name again
 * between the caller's lookup and this walk: its mkdir reuses the stale
 * local directory (cachens.c new_locally) and records it under the new
 * inode before anything is made in it, so each unlink and rmdir below,
 * asked after its entry was seen, finds the new record and leaves the
 * entry (the next listing of the new directory sorts it out).
 */
static int gone_still(const struct gone_walk *w)
{
	uint64_t known;

	return !pohm_journal_lookup_local(&w->c->j, w->ldev, w->lino, &known) && known == w->ino;
}

/* Does dfd/name still show the local file st (nothing replaced or changed it)? */
static int gone_same(int dfd, const char *name, const struct stat *st)
{
	struct stat now;

	return !pohm_sys_fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) &&
	       now.st_ino == st->st_ino && now.st_size == st->st_size &&
	       now.st_ctim.tv_sec == st->st_ctim.tv_sec && now.st_ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/*
 * The non-directory dfd/name (st): gone, or kept.  1 gone, 0 kept.  A file
 * open for write here (its w.lock byte held: the storage inode's, or for a
 * file the journal does not know the local inode's, as its writer took it)
 * stays as it is, and its directories with it: what its writer wrote and
 * writes goes to its storage inode by the pushes, as a file another host
 * unlinked while open here (decision 0049: an unnamed inode), and a look
 * after the writer is done drops the copy.  The re-check and the unlink
 * hold the byte exclusively (cache_writer_exclude, as a refresh's
 * rename): no writer opens the file meanwhile; the conflict copy (network
 * I/O) is made before, without it, and the file goes only if it is still
 * as copied.
 */
static int gone_file(const struct gone_walk *w, int dfd, const char *name, const char *rel,
		     const struct stat *st)
{
	struct pohm_cache *c = w->c;
	struct pohm_jrec rec;
	int have = !gone_rec(c, st, &rec), gone = 0, clean, lk = -1, reg = S_ISREG(st->st_mode);
	uint64_t key = have ? rec.ino : (uint64_t)st->st_ino;

	if (!have && w->mode != GONE_ANY)
		goto out;	/* not the storage's: made here without the shim, or not adopted yet */
	if (have && ((rec.flags & POHM_J_CONFLICT) || cache_dir_moving(c, rec.ino)))
		goto out;
	if (reg && pohm_cache_writer_alive(c, key))
		goto out;	/* open for write here: no copy while it is written */
	clean = have && !cache_local_changed(c, &rec, dfd, name, st);
	if (w->mode == GONE_DRY) {
		gone = clean || reg;	/* a changed file would be kept as a copy */
		goto out;
	}
	if (!clean && (!reg || gone_keep(c, dfd, name, rel, &rec, st)))
		goto out;	/* nothing to keep it as: it stays */
	if (reg && (lk = cache_writer_exclude(c, key)) < 0)
		goto out;	/* opened for write meanwhile */
	if (!gone_same(dfd, name, st) || !gone_still(w) || pohm_sys_unlinkat(dfd, name, 0))
		goto out;	/* changed since it was looked at (and copied) */
	gone = 1;
	if (have) {
		if (rec.nlink <= 1)
			pohm_journal_del(&c->j, rec.ino);
		cache_unmark(c, rec.ino);
	}
out:
	cache_writer_include(lk);
	pohm_jrec_clear(&rec);
	return gone;
}

/* The local directory dfd/name (rel) and what it holds: 1 gone, 0 (part) kept. */
static int gone_dir(struct gone_walk *w, int dfd, const char *name, const char *rel, int depth)
{
	struct pohm_cache *c = w->c;
	char buf[8192], *sub;
	struct pohm_jrec rec;
	struct stat st, dst;
	long n = 0, off;
	size_t len;
	int fd, kept = 0, have, moving;

	if (depth > GONE_MAX_DEPTH)
		return 0;
	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return w->mode == GONE_DRY && !depth;	/* nothing here: the storage decides */
	have = !pohm_sys_fstat(fd, &dst) && !gone_rec(c, &dst, &rec);
	if (!depth) {
		w->ldev = (uint64_t)dst.st_dev;
		w->lino = (uint64_t)dst.st_ino;
	}
	/* A rename of this host moves it: the renamer's; a directory made
	 * again here meanwhile stays (gone_still).  Else every entry that can
	 * go goes, whatever stays beside it. */
	moving = have && (cache_dir_moving(c, rec.ino) || (!depth && rec.ino != w->ino));
	kept = moving || ((!depth || w->mode != GONE_ANY) && !have);
	if (w->mode == GONE_DRY && !depth)
		moving = kept = 0;	/* the rmdir's own directory: only its entries count */
	while (!moving && !(kept && w->mode == GONE_DRY) &&
	       (n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			/* Not asprintf: libc's allocator is not the one free() uses here. */
			len = strlen(rel) + strlen(de->d_name) + 2;
			sub = malloc(len);
			if (!sub || pohm_sys_fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
				free(sub);
				kept = 1;
				continue;
			}
			snprintf(sub, len, "%s/%s", rel, de->d_name);
			if (S_ISDIR(st.st_mode))
				kept |= !gone_dir(w, fd, de->d_name, sub, depth + 1);
			else
				kept |= !gone_file(w, fd, de->d_name, sub, &st);
			free(sub);
		}
	}
	kept |= n < 0;
	pohm_sys_close(fd);
	if (w->mode == GONE_DRY) {
		/* nothing dropped */
	} else if (!kept && gone_still(w) && !pohm_sys_unlinkat(dfd, name, AT_REMOVEDIR)) {
		if (have) {
			pohm_journal_del(&c->j, rec.ino);
			cache_unmark(c, rec.ino);
		}
	} else {
		kept = 1;
	}
	if (have)
		pohm_jrec_clear(&rec);
	return !kept;
}

int cache_drop_gone_dir(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			uint64_t ino)
{
	struct gone_walk w = { c, 0, 0, ino, GONE_ANY };

	return gone_dir(&w, dfd, name, rel, 0);
}

int cache_rmdir_only_stale(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			   uint64_t ino)
{
	struct gone_walk w = { c, 0, 0, ino, GONE_DRY };

	return gone_dir(&w, dfd, name, rel, 0);
}

int cache_rmdir_drop_stale(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			   uint64_t ino)
{
	struct gone_walk w = { c, 0, 0, ino, GONE_KNOWN };

	return gone_dir(&w, dfd, name, rel, 0);
}
