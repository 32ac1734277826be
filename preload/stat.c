/*
 * stat.c — the stat family in both glibc ABIs: stat/lstat/fstatat (+64,
 * real symbols since glibc 2.33), the older __xstat/__lxstat/__fxstatat
 * (+64) that binaries built against glibc < 2.33 call, and statx.  On
 * x86-64 struct stat and struct stat64 are the same layout and every
 * _STAT_VER maps to it, so the __xstat names are thin maps onto fstatat.
 * The overlay for stubs and storage identity comes with core/cache.
 */
#include <sys/stat.h>

#include "shim.h"

static int do_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if (pohm_enter() < 0 || !pohm_real.fstatat)
		return pohm_ret(pohm_fallback_fstatat(dirfd, path, st, flags));
	return pohm_real.fstatat(dirfd, path, st, flags);
}

POHM_EXPORT int stat(const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, 0);
}

POHM_EXPORT int lstat(const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

POHM_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return do_fstatat(dirfd, path, st, flags);
}

POHM_EXPORT int stat64(const char *path, struct stat64 *st)
{
	return do_fstatat(AT_FDCWD, path, (struct stat *)st, 0);
}

POHM_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	return do_fstatat(AT_FDCWD, path, (struct stat *)st, AT_SYMLINK_NOFOLLOW);
}

POHM_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return do_fstatat(dirfd, path, (struct stat *)st, flags);
}

POHM_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, 0);
}

POHM_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

POHM_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	return do_fstatat(dirfd, path, st, flags);
}

POHM_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	return do_fstatat(AT_FDCWD, path, (struct stat *)st, 0);
}

POHM_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	return do_fstatat(AT_FDCWD, path, (struct stat *)st, AT_SYMLINK_NOFOLLOW);
}

POHM_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	return do_fstatat(dirfd, path, (struct stat *)st, flags);
}

POHM_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		      struct statx *stx)
{
	if (pohm_enter() < 0 || !pohm_real.statx)
		return pohm_ret(-ENOSYS);
	return pohm_real.statx(dirfd, path, flags, mask, stx);
}
