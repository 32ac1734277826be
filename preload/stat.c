/*
 * stat.c — the stat family in both glibc ABIs: stat/lstat/fstat/fstatat
 * (+64, real symbols since glibc 2.33), the older __xstat/__lxstat/
 * __fxstat/__fxstatat (+64) that binaries built against glibc < 2.33 call,
 * and statx.  On x86-64 struct stat and struct stat64 have one layout, so
 * one hook serves both.
 *
 * Under the prefix: pohm_hook_stat before (it may answer alone), the real
 * call, then pohm_hook_stat_fix to overlay storage identity and stub
 * attributes.  fstat of a tracked fd gets the overlay only.
 */
#include "shim.h"

#include <sys/stat.h>

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat and stat64 differ");

/* After the real call under the prefix: the overlay on success. */
static int stat_done(const struct pohm_path *p, int r, void *st)
{
	if (r == 0)
		pohm_hook_stat_fix(p, -1, NULL, st);
	return r;
}

/* After a real fstat: the overlay when fd is ours (errno untouched). */
static int fstat_done(int fd, int r, void *st)
{
	struct pohm_fd_info fi;

	if (r == 0 && pohm_claim_fd(fd, &fi))
		pohm_hook_stat_fix(NULL, fd, &fi, st);
	return r;
}

POHM_EXPORT int stat(const char *path, struct stat *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.stat(path, st);
	r = pohm_hook_stat(&p, 0, st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.stat(path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int lstat(const char *path, struct stat *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lstat(path, st);
	r = pohm_hook_stat(&p, AT_SYMLINK_NOFOLLOW, st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.lstat(path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.fstatat(dirfd, path, st, flags);
	r = pohm_hook_stat(&p, flags, st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.fstatat(dirfd, path, st, flags)), st);
	return pohm_ret(r);
}

POHM_EXPORT int stat64(const char *path, struct stat64 *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.stat64(path, st);
	r = pohm_hook_stat(&p, 0, (struct stat *)st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.stat64(path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lstat64(path, st);
	r = pohm_hook_stat(&p, AT_SYMLINK_NOFOLLOW, (struct stat *)st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.lstat64(path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.fstatat64(dirfd, path, st, flags);
	r = pohm_hook_stat(&p, flags, (struct stat *)st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.fstatat64(dirfd, path, st, flags)), st);
	return pohm_ret(r);
}

POHM_EXPORT int fstat(int fd, struct stat *st)
{
	pohm_init();
	return fstat_done(fd, pohm_real.fstat(fd, st), st);
}

POHM_EXPORT int fstat64(int fd, struct stat64 *st)
{
	pohm_init();
	return fstat_done(fd, pohm_real.fstat64(fd, st), st);
}

/* ---- the glibc < 2.33 ABI: a version argument first */

POHM_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.__xstat(ver, path, st);
	r = pohm_hook_stat(&p, 0, st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.__xstat(ver, path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.__lxstat(ver, path, st);
	r = pohm_hook_stat(&p, AT_SYMLINK_NOFOLLOW, st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.__lxstat(ver, path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.__fxstatat(ver, dirfd, path, st, flags);
	r = pohm_hook_stat(&p, flags, st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.__fxstatat(ver, dirfd, path, st, flags)),
			      st);
	return pohm_ret(r);
}

POHM_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.__xstat64(ver, path, st);
	r = pohm_hook_stat(&p, 0, (struct stat *)st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.__xstat64(ver, path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.__lxstat64(ver, path, st);
	r = pohm_hook_stat(&p, AT_SYMLINK_NOFOLLOW, (struct stat *)st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.__lxstat64(ver, path, st)), st);
	return pohm_ret(r);
}

POHM_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.__fxstatat64(ver, dirfd, path, st, flags);
	r = pohm_hook_stat(&p, flags, (struct stat *)st);
	if (r == POHM_PASS)
		r = stat_done(&p, pohm_sysret(pohm_real.__fxstatat64(ver, dirfd, path, st, flags)),
			      st);
	return pohm_ret(r);
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

/* ---- statx */

POHM_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		      struct statx *stx)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.statx(dirfd, path, flags, mask, stx);
	r = pohm_hook_statx(&p, flags, mask, stx);
	if (r == POHM_PASS) {
		r = pohm_sysret(pohm_real.statx(dirfd, path, flags, mask, stx));
		if (r == 0)
			pohm_hook_statx_fix(&p, -1, NULL, stx);
	}
	return pohm_ret(r);
}
