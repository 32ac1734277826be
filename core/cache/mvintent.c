/*
 * mvintent.c — a rename's intent (tests/RELIABILITY.md finding 5).  The
 * storage rename and the local one are two steps; a process killed between
 * them left the old local name, unknown to the journal after the next
 * listing, beside the new stored name.  So before the storage rename,
 * cache_dir/p/INO.mv says which local file is renamed: a line "pid tid ldev
 * lino dversion lsize lctime.sec lctime.nsec recorded_ns" (the journal's
 * local state of it; pid and tid name the renamer in logs only), then from
 * and to, each ended by a NUL.  It goes once the local rename is recorded;
 * cache_rename_recover completes the intents of renamers that died.
 *
 * Whether the renamer lives is an exclusive OFD lock on byte <ino> of
 * cache_dir/m.lock, taken before the intent is written and given back after
 * it is removed (decision 0016: the kernel drops it when its holder dies).
 * A pid would be reused, and means nothing to another pid namespace sharing
 * the cache.  A p/INO.mv whose byte is not locked is a dead renamer's.
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

struct mv_intent {
	long pid, tid;
	uint64_t ino, ldev, lino, dversion, lsize, recorded_ns;
	struct pohm_ts lctime;
	char from[4096], to[4096];
};

/* This thread's renamer lock on m.lock: fd + 1 (0: none).  Thread-local:
 * one rename at a time per thread, taken and given back by the same call. */
static __thread int mv_lock;

static void intent_name(uint64_t ino, char *out, size_t len)
{
	snprintf(out, len, "p/%llx.mv", (unsigned long long)ino);
}

static void lock_range(struct flock *fl, short type, uint64_t ino)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)(ino & 0x3fffffffffffffffULL);	/* two inodes may share a byte */
	fl->l_len = 1;
}

/* Take this thread's renamer lock for ino.  0 or -errno (-EAGAIN: another
 * renamer of the same byte holds it; the intent is then not written). */
static int renamer_lock(struct pohm_cache *c, uint64_t ino)
{
	struct flock fl;
	int fd, r;

	if (mv_lock)
		return -EBUSY;
	fd = pohm_journal_open_own(c->j.dirfd, "m.lock", O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	lock_range(&fl, F_WRLCK, ino);
	r = pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl);
	if (r) {
		pohm_sys_close(fd);
		return r == -EACCES ? -EAGAIN : r;
	}
	mv_lock = fd + 1;
	return 0;
}

static void renamer_unlock(void)
{
	if (!mv_lock)
		return;
	pohm_sys_close(mv_lock - 1);
	mv_lock = 0;
}

/* Does a live renamer hold ino's byte of m.lock (fd: m.lock, or -1)?  When
 * the lock cannot be asked, it is taken as held: an intent is never
 * completed under a renamer that may be alive. */
static int renamer_alive(int fd, uint64_t ino)
{
	struct flock fl;

	if (fd < 0)
		return 0;	/* no m.lock: no renamer ever took a lock here */
	lock_range(&fl, F_WRLCK, ino);
	if (pohm_sys_fcntl(fd, F_OFD_GETLK, (long)&fl))
		return 1;
	return fl.l_type != F_UNLCK;
}

int cache_intent_write(struct pohm_cache *c, const struct pohm_jrec *rec, const char *from,
		       const char *to)
{
	char name[64], tmp[128], head[256];
	int fd, r, n, again = 1;

	r = renamer_lock(c, rec->ino);
	if (r)
		return r;
	intent_name(rec->ino, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "p/.%llx.mv.%d.%ld", (unsigned long long)rec->ino,
		 (int)pohm_sys_getpid(), (long)pohm_sys_gettid());
	n = snprintf(head, sizeof(head), "%d %ld %llx %llx %llx %llx %lld %u %llx\n",
		     (int)pohm_sys_getpid(), (long)pohm_sys_gettid(),
		     (unsigned long long)rec->ldev, (unsigned long long)rec->lino,
		     (unsigned long long)rec->dversion, (unsigned long long)rec->lsize,
		     (long long)rec->lctime.sec, rec->lctime.nsec,
		     (unsigned long long)rec->recorded_ns);
retry:
	fd = pohm_sys_openat(c->j.dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	if (fd == -ENOENT && again) {
		again = 0;	/* the first intent of this cache */
		r = pohm_sys_mkdirat(c->j.dirfd, "p", 0700);
		if (!r || r == -EEXIST)
			goto retry;
	}
	if (fd < 0) {
		r = fd;
		goto out;
	}
	r = (int)pohm_sys_write_full(fd, head, (size_t)n);
	if (r >= 0)
		r = (int)pohm_sys_write_full(fd, from, strlen(from) + 1);
	if (r >= 0)
		r = (int)pohm_sys_write_full(fd, to, strlen(to) + 1);
	pohm_sys_close(fd);
	if (r >= 0)
		r = pohm_sys_renameat(c->j.dirfd, tmp, c->j.dirfd, name);
	if (r < 0)
		pohm_sys_unlinkat(c->j.dirfd, tmp, 0);
	else
		r = 0;
out:
	if (r)
		renamer_unlock();
	return r;
}

void cache_intent_drop(struct pohm_cache *c, uint64_t ino)
{
	char name[64];

	/* The file first, then the lock: a recovery never sees the intent of a
	 * finished rename without its lock. */
	intent_name(ino, name, sizeof(name));
	pohm_sys_unlinkat(c->j.dirfd, name, 0);
	renamer_unlock();
}

/* Read the intent file p/NAME (on the heap: two paths are 8 KB).  0 or
 * -errno (-EINVAL: malformed). */
static int intent_read(struct pohm_cache *c, const char *name, struct mv_intent *mi)
{
	const size_t size = 256 + 2 * 4096 + 2;
	unsigned long long ldev, lino, dv, lsize, rns;
	char path[320], *buf, *nl, *to, *end;
	long long sec;
	unsigned nsec;
	ssize_t n;
	int fd, r = -EINVAL;

	snprintf(path, sizeof(path), "p/%s", name);
	fd = pohm_sys_openat(c->j.dirfd, path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	buf = malloc(size);
	if (!buf) {
		pohm_sys_close(fd);
		return -ENOMEM;
	}
	n = pohm_sys_read_full(fd, buf, size - 1);
	pohm_sys_close(fd);
	if (n < 0) {
		r = (int)n;
		goto out;
	}
	buf[n] = '\0';
	end = buf + n;
	nl = memchr(buf, '\n', (size_t)n);
	if (!nl || sscanf(buf, "%ld %ld %llx %llx %llx %llx %lld %u %llx", &mi->pid, &mi->tid,
			  &ldev, &lino, &dv, &lsize, &sec, &nsec, &rns) != 9)
		goto out;
	to = memchr(nl + 1, '\0', (size_t)(end - nl - 1));
	if (!to || to + 1 >= end || !memchr(to + 1, '\0', (size_t)(end - to - 1)) ||
	    strlen(nl + 1) >= sizeof(mi->from) || strlen(to + 1) >= sizeof(mi->to))
		goto out;
	mi->ino = strtoull(name, NULL, 16);
	mi->ldev = ldev;
	mi->lino = lino;
	mi->dversion = dv;
	mi->lsize = lsize;
	mi->recorded_ns = rns;
	mi->lctime.sec = sec;
	mi->lctime.nsec = nsec;
	strcpy(mi->from, nl + 1);
	strcpy(mi->to, to + 1);
	r = 0;
out:
	free(buf);
	return r;
}

/* May the local name dfd/name (tst) be replaced by the renamed file?  Yes if
 * the journal knows it: a stub or copy the listing made of the new name, or
 * the old target the rename replaces.  An unknown file stays, and so does
 * one on a stale index entry (made without the shim on a reused number). */
static int replaceable(struct pohm_cache *c, const struct stat *tst, const struct stat *fst)
{
	uint64_t known;

	if (S_ISDIR(tst->st_mode))
		return S_ISDIR(fst->st_mode);	/* the kernel's rename refuses a non-empty one */
	return cache_index_known(c, tst, &known) != -ENOENT;
}

/* pohm_journal_update's edit: the renamed file's record names mi->to,
 * unless its hint names the file already (another name of a hard link). */
static int own_hint_fn(struct pohm_jrec *r, const void *arg)
{
	const struct mv_intent *mi = arg;

	if (r->ldev != mi->ldev || r->lino != mi->lino || !strcmp(r->hint, mi->to))
		return -ESTALE;
	pohm_jrec_set_hint(r, mi->to);
	return 0;
}

/*
 * The renamed file is at mi->to by identity (this completion moved it, or
 * the renamer did before it died): its record names it, and, a directory,
 * the records below it take their new paths (rehint.c) -- what the
 * renamer did after its local rename, and a kill may have cut short.
 */
static void intent_rehint(struct pohm_cache *c, const struct mv_intent *mi)
{
	const char *name;
	struct stat st, hst;
	struct pohm_jrec rec;
	int dfd = pohm_sys_open_parent(c->pfd, mi->to, &name);

	if (dfd < 0)
		return;
	if (pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st.st_dev != mi->ldev || (uint64_t)st.st_ino != mi->lino)
		goto out;
	if (!pohm_journal_get(&c->j, mi->ino, &rec)) {
		if (pohm_sys_fstatat(c->pfd, rec.hint, &hst, AT_SYMLINK_NOFOLLOW) ||
		    hst.st_ino != st.st_ino || hst.st_dev != st.st_dev)
			pohm_journal_update(&c->j, mi->ino, own_hint_fn, mi);
		pohm_jrec_clear(&rec);
	}
	if (S_ISDIR(st.st_mode))
		cache_dir_rehint_below(c, dfd, name, mi->to);
out:
	pohm_sys_close(dfd);
}

/* Finish the local half of the rename mi, whose storage half is done. */
static int intent_complete(struct pohm_cache *c, const struct mv_intent *mi)
{
	const char *fname, *tname;
	struct pohm_jrec rec;
	struct stat fst, tst;
	uint64_t sino, tdino;
	int ffd, tfd = -1, r;

	ffd = pohm_sys_open_parent(c->pfd, mi->from, &fname);
	if (ffd < 0)
		return 0;	/* the old name's directory is gone: nothing left to move */
	r = pohm_sys_fstatat(ffd, fname, &fst, AT_SYMLINK_NOFOLLOW);
	if (r || (uint64_t)fst.st_ino != mi->lino || (uint64_t)fst.st_dev != mi->ldev) {
		intent_rehint(c, mi);	/* moved already (its records maybe not) */
		r = 0;		/* or another file now */
		goto out;
	}
	if (pohm_ns_resolve(c->ns, mi->to, 0, &sino) || sino != mi->ino) {
		r = 0;		/* the storage rename did not happen: the old name is right */
		goto out;
	}
	r = cache_walk_parent(c, mi->to, &tfd, &tdino, &tname);
	if (r)
		goto out;
	if (!pohm_sys_fstatat(tfd, tname, &tst, AT_SYMLINK_NOFOLLOW) &&
	    !replaceable(c, &tst, &fst)) {
		pohm_warn("%s: renamed to %s in the storage by a process that died, but %s is "
			  "taken here by an unknown file: both stay", mi->from, mi->to, mi->to);
		r = 0;
		goto out;
	}
	r = pohm_sys_renameat(ffd, fname, tfd, tname);
	if (r)
		goto out;
	if (!pohm_journal_get(&c->j, mi->ino, &rec)) {
		if (rec.lino != mi->lino || rec.ldev != mi->ldev) {
			/* A listing made the new name meanwhile: the record is the renamed
			 * file's again, as the journal knew it before the rename. */
			if (rec.dversion != mi->dversion) {
				free(rec.csum);
				rec.csum = NULL;
				rec.nchunks = 0;	/* unknown base: every chunk is pushed */
			}
			rec.ldev = mi->ldev;
			rec.lino = mi->lino;
			rec.dversion = mi->dversion;
			rec.lsize = mi->lsize;
			rec.lctime = mi->lctime;
			rec.recorded_ns = mi->recorded_ns;
			rec.flags &= ~(uint32_t)(POHM_J_STUB | POHM_J_NOXATTR);
		}
		/* Clean just before the rename (its local state the record's): the
		 * ctime the rename moved is no change of ours (renote_if_clean's
		 * rule), else the next push looks and sends its atime. */
		if (rec.lino == (uint64_t)fst.st_ino && rec.lsize == (uint64_t)fst.st_size &&
		    rec.lctime.sec == fst.st_ctim.tv_sec &&
		    rec.lctime.nsec == (uint32_t)fst.st_ctim.tv_nsec &&
		    !pohm_sys_fstatat(tfd, tname, &tst, AT_SYMLINK_NOFOLLOW) &&
		    tst.st_ino == fst.st_ino && tst.st_dev == fst.st_dev)
			pohm_journal_note_local(&rec, &tst);
		pohm_jrec_set_hint(&rec, mi->to);
		r = pohm_journal_put(&c->j, &rec);
		pohm_jrec_clear(&rec);
	}
	intent_rehint(c, mi);
	cache_unmark(c, mi->ino);
	pohm_info("%s: the rename to %s, cut short by the death of its process, is completed",
		  mi->from, mi->to);
out:
	if (tfd >= 0)
		pohm_sys_close(tfd);
	pohm_sys_close(ffd);
	return r;
}

/* One entry of p/ (dfd), name of length len: an intent to complete or drop,
 * or an earlier-format create mark to expire.  0 or -errno. */
static int recover_one(struct pohm_cache *c, int dfd, int lockfd, const char *name, size_t len)
{
	struct mv_intent *mi;
	char bad[320];
	int e;

	if (cache_old_mark_expire(dfd, name, len))
		return 0;
	if (name[0] == '.' || len < 4 || strcmp(name + len - 3, ".mv"))
		return 0;
	mi = malloc(sizeof(*mi));
	if (!mi)
		return -ENOMEM;
	e = intent_read(c, name, mi);
	if (!e && !renamer_alive(lockfd, mi->ino)) {
		e = intent_complete(c, mi);
		if (!e) {
			intent_name(mi->ino, bad, sizeof(bad));
			pohm_sys_unlinkat(c->j.dirfd, bad, 0);
		}
	} else if (e == -EINVAL) {
		pohm_warn("p/%s: a malformed rename intent, removed", name);
		snprintf(bad, sizeof(bad), "p/%s", name);
		pohm_sys_unlinkat(c->j.dirfd, bad, 0);
		e = 0;
	}
	free(mi);
	return e == -ENOENT ? 0 : e;
}

int cache_rename_recover(struct pohm_cache *c)
{
	char buf[4096];
	long n;
	int dfd, lockfd, r = 0;

	dfd = pohm_sys_openat(c->j.dirfd, "p", O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	lockfd = pohm_sys_openat(c->j.dirfd, "m.lock", O_RDONLY, 0);
	while ((n = pohm_sys_getdents64(dfd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			int e;

			off += de->d_reclen;
			e = recover_one(c, dfd, lockfd, de->d_name, strlen(de->d_name));
			if (e == -ENOMEM) {
				r = e;
				goto out;
			}
			if (e)
				r = e;
		}
	}
out:
	if (lockfd >= 0)
		pohm_sys_close(lockfd);
	pohm_sys_close(dfd);
	return r;
}
