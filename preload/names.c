/*
 * names.c — calls that change the namespace: access checks, mkdir, rmdir,
 * unlink, rename.  Under the prefix these will push the change to the
 * storage before returning (core/sync, issue 8); until then they go to libc.
 */
#include <stdio.h>
#include <unistd.h>

#include "shim.h"

/* Resolve the table; a call during our own initialisation fails ENOSYS. */
#define REAL_OR_ENOSYS(name) \
	do { if (pohm_enter() < 0 || !pohm_real.name) return pohm_ret(-ENOSYS); } while (0)

POHM_EXPORT int access(const char *path, int mode)
{
	REAL_OR_ENOSYS(access);
	return pohm_real.access(path, mode);
}

POHM_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	REAL_OR_ENOSYS(faccessat);
	return pohm_real.faccessat(dirfd, path, mode, flags);
}

POHM_EXPORT int mkdir(const char *path, mode_t mode)
{
	REAL_OR_ENOSYS(mkdir);
	return pohm_real.mkdir(path, mode);
}

POHM_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	REAL_OR_ENOSYS(mkdirat);
	return pohm_real.mkdirat(dirfd, path, mode);
}

POHM_EXPORT int rmdir(const char *path)
{
	REAL_OR_ENOSYS(rmdir);
	return pohm_real.rmdir(path);
}

POHM_EXPORT int unlink(const char *path)
{
	REAL_OR_ENOSYS(unlink);
	return pohm_real.unlink(path);
}

POHM_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	REAL_OR_ENOSYS(unlinkat);
	return pohm_real.unlinkat(dirfd, path, flags);
}

POHM_EXPORT int rename(const char *from, const char *to)
{
	REAL_OR_ENOSYS(rename);
	return pohm_real.rename(from, to);
}

POHM_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	REAL_OR_ENOSYS(renameat);
	return pohm_real.renameat(fromfd, from, tofd, to);
}

POHM_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to,
			  unsigned int flags)
{
	REAL_OR_ENOSYS(renameat2);
	return pohm_real.renameat2(fromfd, from, tofd, to, flags);
}
