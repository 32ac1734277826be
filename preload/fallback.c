/*
 * fallback.c — raw system calls standing in for a few real functions while
 * the table is being resolved (dlsym and an allocator's own initialisation
 * may open, stat or readlink files).  Used by nothing else.  They set errno
 * as libc does (core/sys's wrappers return -errno; pohm_ret sets it).
 */
#include "shim.h"

#include <stdarg.h>

int pohm_fallback_openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	va_start(ap, flags);
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	return pohm_ret(pohm_sys_openat_inherit(dirfd, path, flags, mode));
}

int pohm_fallback_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	va_start(ap, flags);
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	return pohm_ret(pohm_sys_openat_inherit(AT_FDCWD, path, flags, mode));
}

int pohm_fallback_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return pohm_ret(pohm_sys_fstatat(dirfd, path, st, flags));
}

int pohm_fallback_stat(const char *path, struct stat *st)
{
	return pohm_fallback_fstatat(AT_FDCWD, path, st, 0);
}

int pohm_fallback_lstat(const char *path, struct stat *st)
{
	return pohm_fallback_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int pohm_fallback_fstat(int fd, struct stat *st)
{
	return pohm_ret(pohm_sys_fstat(fd, st));
}

ssize_t pohm_fallback_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	return pohm_retl(pohm_sys_readlinkat(dirfd, path, buf, n));
}

ssize_t pohm_fallback_readlink(const char *path, char *buf, size_t n)
{
	return pohm_fallback_readlinkat(AT_FDCWD, path, buf, n);
}

int pohm_fallback_close(int fd)
{
	return pohm_ret(pohm_sys_close(fd));
}
