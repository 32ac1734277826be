/*
 * lookup.c — read-only uses of a name: readlink (+ fortified), the access
 * family, pathconf, ftok, inotify_add_watch, fanotify_mark.  Under the prefix the storage materializes the
 * name first (pohm_hook_lookup), then libc answers from the local copy.
 */
#include "shim.h"

#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/ipc.h>

POHM_EXPORT ssize_t readlink(const char *path, char *buf, size_t n)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.readlink(path, buf, n);
	r = pohm_hook_lookup(POHM_PL_READLINK, &p, 0);
	if (r == POHM_PASS)
		r = pohm_sysretl(pohm_real.readlink(path, buf, n));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_at_ro(dirfd, path, AT_EMPTY_PATH, &p))
		return pohm_real.readlinkat(dirfd, path, buf, n);
	r = pohm_hook_lookup(POHM_PL_READLINK, &p, 0);
	if (r == POHM_PASS)
		r = pohm_sysretl(pohm_real.readlinkat(dirfd, path, buf, n));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t __readlink_chk(const char *path, char *buf, size_t n, size_t buflen)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.__readlink_chk(path, buf, n, buflen);
	r = pohm_hook_lookup(POHM_PL_READLINK, &p, 0);
	if (r == POHM_PASS)
		r = pohm_sysretl(pohm_real.__readlink_chk(path, buf, n, buflen));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t n,
				     size_t buflen)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_at_ro(dirfd, path, AT_EMPTY_PATH, &p))
		return pohm_real.__readlinkat_chk(dirfd, path, buf, n, buflen);
	r = pohm_hook_lookup(POHM_PL_READLINK, &p, 0);
	if (r == POHM_PASS)
		r = pohm_sysretl(pohm_real.__readlinkat_chk(dirfd, path, buf, n, buflen));
	return pohm_retl(r);
}

POHM_EXPORT int access(const char *path, int mode)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.access(path, mode);
	r = pohm_hook_lookup(POHM_PL_ACCESS, &p, mode);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.access(path, mode));
	return pohm_ret(r);
}

POHM_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at_ro(dirfd, path, flags, &p))
		return pohm_real.faccessat(dirfd, path, mode, flags);
	r = pohm_hook_lookup(POHM_PL_ACCESS, &p,
			     mode | (flags & AT_EACCESS ? POHM_ACCESS_EFFECTIVE : 0));
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.faccessat(dirfd, path, mode, flags));
	return pohm_ret(r);
}

POHM_EXPORT int euidaccess(const char *path, int mode)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.euidaccess(path, mode);
	r = pohm_hook_lookup(POHM_PL_ACCESS, &p, mode | POHM_ACCESS_EFFECTIVE);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.euidaccess(path, mode));
	return pohm_ret(r);
}

POHM_EXPORT int eaccess(const char *path, int mode)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.eaccess(path, mode);
	r = pohm_hook_lookup(POHM_PL_ACCESS, &p, mode | POHM_ACCESS_EFFECTIVE);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.eaccess(path, mode));
	return pohm_ret(r);
}

POHM_EXPORT int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.inotify_add_watch(fd, path, mask);
	r = pohm_hook_lookup(POHM_PL_WATCH, &p, (int)mask);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.inotify_add_watch(fd, path, mask));
	return pohm_ret(r);
}

/* pathconf asks the file system of path (statfs inside glibc). */
POHM_EXPORT long pathconf(const char *path, int name)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.pathconf(path, name);
	r = pohm_hook_lookup(POHM_PL_STATFS, &p, name);
	if (r == POHM_PASS)
		r = pohm_sysretl(pohm_real.pathconf(path, name));
	return pohm_retl(r);
}

/* ftok stats path inside glibc; its key is host-local anyway. */
POHM_EXPORT key_t ftok(const char *path, int id)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.ftok(path, id);
	r = pohm_hook_lookup(POHM_PL_ACCESS, &p, 0);
	if (r != POHM_PASS && r < 0)
		return pohm_ret(r);
	return pohm_real.ftok(path, id);
}

/* A NULL pathname marks dirfd itself. */
POHM_EXPORT int fanotify_mark(int fd, unsigned int flags, uint64_t mask, int dirfd,
			      const char *path)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at_ro(dirfd, pohm_given(path) ? path : "", AT_EMPTY_PATH, &p))
		return pohm_real.fanotify_mark(fd, flags, mask, dirfd, path);
	r = pohm_hook_lookup(POHM_PL_WATCH, &p, (int)flags);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.fanotify_mark(fd, flags, mask, dirfd, path));
	return pohm_ret(r);
}
