/*
 * stat.c — the stat family in both glibc ABIs: stat/lstat/fstat/fstatat
 * (+64, real symbols since glibc 2.33), the older __xstat/__lxstat/
 * __fxstat/__fxstatat (+64) that binaries built against glibc < 2.33 call,
 * and statx.  On x86-64 struct stat and struct stat64 have one layout, so
 * one hook serves both.
 *
 * Under the prefix: one call, pohm_hook_stat (statx: pohm_hook_statx),
 * with the wrapper's real call (real_path_stat, real_statx): the name
 * materialized, the real call, the overlay of storage identity and stub
 * attributes (core/mount procstat.c).  fstat of a tracked fd gets the
 * overlay only (pohm_hook_stat_fix).
 *
 * The path forms are the hottest calls a program makes outside the
 * prefix: each wrapper decides that inline (pohm_pass) and tail-calls
 * libc; everything else is in one out-of-line stat_slow.
 *
 * Sections: path forms; fd forms; statx.
 */
#include "shim.h"

#include <sys/stat.h>

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat and stat64 differ");

/* After a real fstat: the overlay when fd is ours (errno untouched). */
__attribute__((noinline)) static void fstat_fix(int fd, void *st)
{
	struct pohm_fd_info fi;

	if (pohm_claim_fd(fd, &fi))
		pohm_hook_stat_fix(NULL, fd, &fi, st);
}

/* After a real fstat: the overlay for a tracked fd (an untracked one costs one test). */
static inline int fstat_done(int fd, int r, void *st)
{
	if (__builtin_expect(r == 0 && pohm_fd_known(fd), 0))
		fstat_fix(fd, st);
	return r;
}

/* The path forms: which real function a stat_slow call stands for. */
enum stat_fn {
	F_STAT, F_LSTAT, F_FSTATAT, F_STAT64, F_LSTAT64, F_FSTATAT64,
	F_XSTAT, F_LXSTAT, F_FXSTATAT, F_XSTAT64, F_LXSTAT64, F_FXSTATAT64,
};

static int real_stat(enum stat_fn f, int ver, int dirfd, const char *path, void *st, int flags)
{
	switch (f) {
	case F_STAT:		return pohm_real.stat(path, st);
	case F_LSTAT:		return pohm_real.lstat(path, st);
	case F_FSTATAT:		return pohm_real.fstatat(dirfd, path, st, flags);
	case F_STAT64:		return pohm_real.stat64(path, st);
	case F_LSTAT64:		return pohm_real.lstat64(path, st);
	case F_FSTATAT64:	return pohm_real.fstatat64(dirfd, path, st, flags);
	case F_XSTAT:		return pohm_real.__xstat(ver, path, st);
	case F_LXSTAT:		return pohm_real.__lxstat(ver, path, st);
	case F_FXSTATAT:	return pohm_real.__fxstatat(ver, dirfd, path, st, flags);
	case F_XSTAT64:		return pohm_real.__xstat64(ver, path, st);
	case F_LXSTAT64:	return pohm_real.__lxstat64(ver, path, st);
	default:		return pohm_real.__fxstatat64(ver, dirfd, path, st, flags);
	}
}

/* A stat_slow call's real call, for the hook to make (struct pohm_real_call). */
struct real_path_stat {
	enum stat_fn f;
	int ver, dirfd;
	const char *path;
	void *st;
	int flags;
};

static int real_path_stat(void *v)
{
	const struct real_path_stat *x = v;

	return pohm_sysret(real_stat(x->f, x->ver, x->dirfd, x->path, x->st, x->flags));
}

/* How the stat calls classify: a name below a dirfd gets its directory
 * opened by the classifier's check, for the walk (POHM_LOC_BASE); for an
 * lstat (hflags), whose real call the walk takes as its look at the name,
 * checked by the dirfd's own name if it can (POHM_LOC_NAMED). */
static unsigned loc_flags(int atflags, int hflags)
{
	return ((atflags & AT_EMPTY_PATH) ? POHM_LOC_EMPTY : 0) | POHM_LOC_BASE |
	       ((hflags & AT_SYMLINK_NOFOLLOW) ? POHM_LOC_NAMED : 0);
}

/* The hook's result r, p's POHM_LOC_BASE fd closed if the walk left it. */
static int base_done(const struct pohm_path *p, int r)
{
	if (p->lent.fd >= 0)
		pohm_sys_close(p->lent.fd);	/* the walk did not take it */
	return r;
}

/* A path form that may be under the prefix: one hook call, which makes
 * the real call itself (the overlay after it). */
__attribute__((noinline)) static int stat_slow(enum stat_fn f, int ver, int dirfd,
					       const char *path, void *st, int flags)
{
	int hflags = flags;
	struct pohm_path p;

	if (!pohm_active())
		return real_stat(f, ver, dirfd, path, st, flags);
	if (f == F_LSTAT || f == F_LSTAT64 || f == F_LXSTAT || f == F_LXSTAT64)
		hflags = AT_SYMLINK_NOFOLLOW;
	if (pohm_locate(dirfd, path, loc_flags(flags, hflags), &p, NULL) != POHM_PC_IN)
		return real_stat(f, ver, dirfd, path, st, flags);
	return pohm_ret(base_done(&p, pohm_hook_stat(&p, hflags, st, &(struct pohm_real_call){
		real_path_stat, &(struct real_path_stat){ f, ver, dirfd, path, st, flags }, NULL })));
}

/* ------------------------------------------------------------ path forms */

POHM_EXPORT int stat(const char *path, struct stat *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.stat(path, st);
	return stat_slow(F_STAT, 0, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int lstat(const char *path, struct stat *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.lstat(path, st);
	return stat_slow(F_LSTAT, 0, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if (pohm_pass(dirfd, path))
		return pohm_real.fstatat(dirfd, path, st, flags);
	return stat_slow(F_FSTATAT, 0, dirfd, path, st, flags);
}

POHM_EXPORT int stat64(const char *path, struct stat64 *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.stat64(path, st);
	return stat_slow(F_STAT64, 0, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.lstat64(path, st);
	return stat_slow(F_LSTAT64, 0, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	if (pohm_pass(dirfd, path))
		return pohm_real.fstatat64(dirfd, path, st, flags);
	return stat_slow(F_FSTATAT64, 0, dirfd, path, st, flags);
}

/* ---- the glibc < 2.33 ABI: a version argument first */

POHM_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.__xstat(ver, path, st);
	return stat_slow(F_XSTAT, ver, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.__lxstat(ver, path, st);
	return stat_slow(F_LXSTAT, ver, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	if (pohm_pass(dirfd, path))
		return pohm_real.__fxstatat(ver, dirfd, path, st, flags);
	return stat_slow(F_FXSTATAT, ver, dirfd, path, st, flags);
}

POHM_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.__xstat64(ver, path, st);
	return stat_slow(F_XSTAT64, ver, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	if (pohm_pass(AT_FDCWD, path))
		return pohm_real.__lxstat64(ver, path, st);
	return stat_slow(F_LXSTAT64, ver, AT_FDCWD, path, st, 0);
}

POHM_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	if (pohm_pass(dirfd, path))
		return pohm_real.__fxstatat64(ver, dirfd, path, st, flags);
	return stat_slow(F_FXSTATAT64, ver, dirfd, path, st, flags);
}

/* ------------------------------------------------------------ fd forms */

__attribute__((noinline)) static int fstat_slow(int fd, struct stat *st)
{
	pohm_init();
	return fstat_done(fd, pohm_real.fstat(fd, st), st);
}

POHM_EXPORT int fstat(int fd, struct stat *st)
{
	if (__builtin_expect(pohm_fd_plain(fd), 1))
		return pohm_real.fstat(fd, st);	/* not ours: nothing to overlay */
	return fstat_slow(fd, st);
}

__attribute__((noinline)) static int fstat64_slow(int fd, struct stat64 *st)
{
	pohm_init();
	return fstat_done(fd, pohm_real.fstat64(fd, st), st);
}

POHM_EXPORT int fstat64(int fd, struct stat64 *st)
{
	if (__builtin_expect(pohm_fd_plain(fd), 1))
		return pohm_real.fstat64(fd, st);	/* not ours: nothing to overlay */
	return fstat64_slow(fd, st);
}

POHM_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	pohm_init();
	return fstat_done(fd, pohm_real.__fxstat(ver, fd, st), st);
}

POHM_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	pohm_init();
	return fstat_done(fd, pohm_real.__fxstat64(ver, fd, st), st);
}

/* ------------------------------------------------------------ statx */

struct real_statx {
	int dirfd;
	const char *path;
	int flags;
	unsigned int mask;
	struct statx *stx;
};

static int real_statx(void *v)
{
	const struct real_statx *x = v;

	return pohm_sysret(pohm_real.statx(x->dirfd, x->path, x->flags, x->mask, x->stx));
}

POHM_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		      struct statx *stx)
{
	struct pohm_path p;

	if (!pohm_claim_at_op(dirfd, path, flags, 0, POHM_LOC_BASE, &p))
		return pohm_real.statx(dirfd, path, flags, mask, stx);
	return pohm_ret(base_done(&p, pohm_hook_statx(&p, flags, mask, stx, &(struct pohm_real_call){
		real_statx, &(struct real_statx){ dirfd, path, flags, mask, stx }, NULL })));
}
