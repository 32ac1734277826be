/*
 * procstat.c — a stat by a host process under the prefix, in one call
 * (moved from preload/hooks_cache.c, issue 20): the name materialized
 * (a stub's attributes are the stored ones), the host's own stat or
 * statx, and on success the overlay of storage identity and stub
 * attributes (pohm_cache_stat_fix; a struct statx through a struct stat).
 * A name this process materialized within attr_timeout: the real call
 * first, the walk only when it found another file (stat_recent).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mount.h"

/* A struct statx's fields that a struct stat has, and back. */
static void statx_to_stat(const struct statx *stx, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
	st->st_ino = stx->stx_ino;
	st->st_mode = stx->stx_mode;
	st->st_nlink = stx->stx_nlink;
	st->st_uid = stx->stx_uid;
	st->st_gid = stx->stx_gid;
	st->st_size = (off_t)stx->stx_size;
	st->st_blocks = (blkcnt_t)stx->stx_blocks;
	st->st_atim.tv_sec = stx->stx_atime.tv_sec;
	st->st_atim.tv_nsec = stx->stx_atime.tv_nsec;
	st->st_mtim.tv_sec = stx->stx_mtime.tv_sec;
	st->st_mtim.tv_nsec = stx->stx_mtime.tv_nsec;
	st->st_ctim.tv_sec = stx->stx_ctime.tv_sec;
	st->st_ctim.tv_nsec = stx->stx_ctime.tv_nsec;
}

static void stat_to_statx(const struct stat *st, struct statx *stx)
{
	stx->stx_dev_major = major(st->st_dev);
	stx->stx_dev_minor = minor(st->st_dev);
	stx->stx_ino = (uint64_t)st->st_ino;
	stx->stx_mode = (uint16_t)st->st_mode;
	stx->stx_nlink = (uint32_t)st->st_nlink;
	stx->stx_uid = st->st_uid;
	stx->stx_gid = st->st_gid;
	stx->stx_size = (uint64_t)st->st_size;
	stx->stx_blocks = (uint64_t)st->st_blocks;
	stx->stx_atime.tv_sec = st->st_atim.tv_sec;
	stx->stx_atime.tv_nsec = (uint32_t)st->st_atim.tv_nsec;
	stx->stx_mtime.tv_sec = st->st_mtim.tv_sec;
	stx->stx_mtime.tv_nsec = (uint32_t)st->st_mtim.tv_nsec;
	stx->stx_ctime.tv_sec = st->st_ctim.tv_sec;
	stx->stx_ctime.tv_nsec = (uint32_t)st->st_ctim.tv_nsec;
}

/* pohm_cache_stat_fix_seen on a struct statx: the fields a struct stat has. */
static void statx_fix(struct pohm_cache *c, const char *rel, unsigned mf, struct statx *stx,
		      const struct pohm_stat_seen *seen)
{
	struct stat st;

	statx_to_stat(stx, &st);
	pohm_cache_stat_fix_seen(c, rel, mf, &st, seen);
	stat_to_statx(&st, stx);
}

/*
 * Issue 23: a name this process materialized within attr_timeout needs no
 * walk, only a look that its local file is still the one it found then.
 * The real call is that look: made first, its result compared with the
 * table (pohm_cache_stat_found), and overlaid.  1 when that answered the
 * call (*r: 0, or the permission check's -errno), 0 when the walk and the
 * real call must run after all (the name moved, or the call failed).
 */
static int stat_recent(struct pohm_cache *c, const char *rel, unsigned mf, struct stat *st,
		       struct statx *stx, const struct pohm_proc_real *real, int *r)
{
	struct stat x;

	if (!pohm_cache_stat_recent(c, rel, mf) || real->call(real->arg))
		return 0;
	if (st) {
		*r = pohm_cache_stat_found(c, rel, mf, st);
		return *r != -EAGAIN;
	}
	if (!(stx->stx_mask & STATX_INO))
		return 0;
	statx_to_stat(stx, &x);
	*r = pohm_cache_stat_found(c, rel, mf, &x);
	if (!*r)
		stat_to_statx(&x, stx);
	return *r != -EAGAIN;
}

/*
 * Issue 23: an lstat of one name below a dirfd the classifier opened or
 * checked by its name (base): the real call is the walk's look at the
 * name (the same directory by identity, the same name, no symlink
 * followed), made first and handed to the walk.  Its result stands when
 * the walk answered the name from a fresh record (seen->ok: nothing of
 * the name changed); else (the walk asked the storage, made or fetched
 * the name) the real call again.  1 when that answered the call (*r), 0 when the usual order must
 * run (the real call failed: a name the walk may make).
 */
static int stat_base(struct pohm_cache *c, const char *rel, unsigned mf,
		     struct pohm_walk_base *base, struct stat *st,
		     const struct pohm_proc_real *real, struct pohm_stat_seen *seen, int *r)
{
	if (!base || (base->fd < 0 && !base->named) || !st || !(mf & POHM_MAT_NOFOLLOW) ||
	    real->call(real->arg))
		return 0;
	*r = pohm_cache_materialize_from(c, rel, mf, seen, base, st);
	pohm_proc_count(POHM_ST_STAT, *r < 0 ? *r : 0);
	if (*r < 0)
		return 1;
	if (!seen->ok)
		*r = real->call(real->arg);
	if (*r == 0)
		pohm_cache_stat_fix_seen(c, rel, mf, st, seen);
	return 1;
}

int pohm_proc_stat(struct pohm_cache *c, const char *rel, unsigned flags,
		   struct pohm_walk_base *base, struct stat *st, struct statx *stx,
		   const struct pohm_proc_real *real)
{
	unsigned mf = (flags & POHM_PAF_NOFOLLOW) ? POHM_MAT_NOFOLLOW : 0;
	struct pohm_stat_seen seen;
	int r;

	if (stat_recent(c, rel, mf, st, stx, real, &r)) {
		pohm_proc_count(POHM_ST_STAT, r < 0 ? r : 0);
		return r;
	}
	if (stat_base(c, rel, mf, base, st, real, &seen, &r))
		return r;
	/* The walk's record of the name: the overlay reads it no second time.
	 * The parent the classifier opened: the walk opens it no second time. */
	r = pohm_cache_materialize_from(c, rel, mf, &seen, base, NULL);
	pohm_proc_count(POHM_ST_STAT, r < 0 ? r : 0);
	if (r < 0)
		return r;
	r = real->call(real->arg);
	if (r == 0 && st)
		pohm_cache_stat_fix_seen(c, rel, mf, st, &seen);
	if (r == 0 && stx)
		statx_fix(c, rel, mf, stx, &seen);
	return r;
}
