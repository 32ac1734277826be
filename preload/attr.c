/*
 * attr.c — attribute changes: the chmod, chown, truncate and utime
 * families, by path (pohm_claim) or on an fd opened under the prefix
 * (pohm_claim_fd).  Under the prefix: pohm_hook_attr before (materialize
 * the file), the real call, pohm_hook_attr_done after; the change itself
 * travels with the file's next push (DESIGN.md §2 step 4).
 *
 * utimensat(fd, NULL, ...) is Linux's futimens: it acts on the fd.
 */
#include "shim.h"

#include <sys/time.h>
#include <utime.h>

/* After the real call: the done hook, errno set by pohm_ret. */
static int path_done(enum pohm_attr_op op, struct pohm_path *p, int flags, int r)
{
	return pohm_ret(pohm_hook_attr_done(op, p, -1, NULL, flags, r));
}

static int fd_done(enum pohm_attr_op op, int fd, struct pohm_fd_info *fi, int r)
{
	return pohm_ret(pohm_hook_attr_done(op, NULL, fd, fi, 0, r));
}

/* What a chown sets, for the hook's owner check: POHM_ATTR_SET unless both are -1. */
static int sets(uid_t uid, gid_t gid)
{
	return uid != (uid_t)-1 || gid != (gid_t)-1 ? POHM_ATTR_SET : 0;
}

/* What utimensat's times set, as the kernel judges them: NULL or both
 * UTIME_NOW a touch (owner or write permission), any explicit time a set
 * (owner only), otherwise (UTIME_OMIT with UTIME_NOW) no check. */
static int ts_sets(const struct timespec ts[2])
{
	if (!ts || (ts[0].tv_nsec == UTIME_NOW && ts[1].tv_nsec == UTIME_NOW))
		return POHM_ATTR_TOUCH;
	if ((ts[0].tv_nsec != UTIME_NOW && ts[0].tv_nsec != UTIME_OMIT) ||
	    (ts[1].tv_nsec != UTIME_NOW && ts[1].tv_nsec != UTIME_OMIT))
		return POHM_ATTR_SET;
	return 0;
}

/* ---- chmod */

POHM_EXPORT int chmod(const char *path, mode_t mode)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.chmod(path, mode);
	if ((r = pohm_hook_attr(POHM_AT_CHMOD, &p, -1, NULL, 0)) == POHM_PASS)
		r = pohm_sysret(pohm_real.chmod(path, mode));
	return path_done(POHM_AT_CHMOD, &p, 0, r);
}

POHM_EXPORT int lchmod(const char *path, mode_t mode)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lchmod(path, mode);
	if ((r = pohm_hook_attr(POHM_AT_CHMOD, &p, -1, NULL, AT_SYMLINK_NOFOLLOW)) == POHM_PASS)
		r = pohm_sysret(pohm_real.lchmod(path, mode));
	return path_done(POHM_AT_CHMOD, &p, AT_SYMLINK_NOFOLLOW, r);
}

POHM_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.fchmodat(dirfd, path, mode, flags);
	if ((r = pohm_hook_attr(POHM_AT_CHMOD, &p, -1, NULL, flags)) == POHM_PASS)
		r = pohm_sysret(pohm_real.fchmodat(dirfd, path, mode, flags));
	return path_done(POHM_AT_CHMOD, &p, flags, r);
}

POHM_EXPORT int fchmod(int fd, mode_t mode)
{
	struct pohm_fd_info fi;
	int r;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.fchmod(fd, mode);
	if ((r = pohm_hook_attr(POHM_AT_CHMOD, NULL, fd, &fi, 0)) == POHM_PASS)
		r = pohm_sysret(pohm_real.fchmod(fd, mode));
	return fd_done(POHM_AT_CHMOD, fd, &fi, r);
}

/* ---- chown */

POHM_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.chown(path, uid, gid);
	if ((r = pohm_hook_attr(POHM_AT_CHOWN, &p, -1, NULL, sets(uid, gid))) == POHM_PASS)
		r = pohm_sysret(pohm_real.chown(path, uid, gid));
	return path_done(POHM_AT_CHOWN, &p, 0, r);
}

POHM_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lchown(path, uid, gid);
	if ((r = pohm_hook_attr(POHM_AT_CHOWN, &p, -1, NULL, AT_SYMLINK_NOFOLLOW | sets(uid, gid))) == POHM_PASS)
		r = pohm_sysret(pohm_real.lchown(path, uid, gid));
	return path_done(POHM_AT_CHOWN, &p, AT_SYMLINK_NOFOLLOW, r);
}

POHM_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.fchownat(dirfd, path, uid, gid, flags);
	if ((r = pohm_hook_attr(POHM_AT_CHOWN, &p, -1, NULL, flags | sets(uid, gid))) == POHM_PASS)
		r = pohm_sysret(pohm_real.fchownat(dirfd, path, uid, gid, flags));
	return path_done(POHM_AT_CHOWN, &p, flags, r);
}

POHM_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	struct pohm_fd_info fi;
	int r;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.fchown(fd, uid, gid);
	if ((r = pohm_hook_attr(POHM_AT_CHOWN, NULL, fd, &fi, sets(uid, gid))) == POHM_PASS)
		r = pohm_sysret(pohm_real.fchown(fd, uid, gid));
	return fd_done(POHM_AT_CHOWN, fd, &fi, r);
}

/* ---- truncate */

POHM_EXPORT int truncate(const char *path, off_t len)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.truncate(path, len);
	if ((r = pohm_hook_attr(POHM_AT_TRUNCATE, &p, -1, NULL, 0)) == POHM_PASS)
		r = pohm_sysret(pohm_real.truncate(path, len));
	return path_done(POHM_AT_TRUNCATE, &p, 0, r);
}

POHM_EXPORT int truncate64(const char *path, off64_t len)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.truncate64(path, len);
	if ((r = pohm_hook_attr(POHM_AT_TRUNCATE, &p, -1, NULL, 0)) == POHM_PASS)
		r = pohm_sysret(pohm_real.truncate64(path, len));
	return path_done(POHM_AT_TRUNCATE, &p, 0, r);
}

POHM_EXPORT int ftruncate(int fd, off_t len)
{
	struct pohm_fd_info fi;
	int r;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.ftruncate(fd, len);
	if ((r = pohm_hook_attr(POHM_AT_TRUNCATE, NULL, fd, &fi, 0)) == POHM_PASS)
		r = pohm_sysret(pohm_real.ftruncate(fd, len));
	return fd_done(POHM_AT_TRUNCATE, fd, &fi, r);
}

POHM_EXPORT int ftruncate64(int fd, off64_t len)
{
	struct pohm_fd_info fi;
	int r;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.ftruncate64(fd, len);
	if ((r = pohm_hook_attr(POHM_AT_TRUNCATE, NULL, fd, &fi, 0)) == POHM_PASS)
		r = pohm_sysret(pohm_real.ftruncate64(fd, len));
	return fd_done(POHM_AT_TRUNCATE, fd, &fi, r);
}

/* ---- utime family */

POHM_EXPORT int utime(const char *path, const struct utimbuf *t)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.utime(path, t);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, &p, -1, NULL, t ? POHM_ATTR_SET : POHM_ATTR_TOUCH)) ==
	    POHM_PASS)
		r = pohm_sysret(pohm_real.utime(path, t));
	return path_done(POHM_AT_UTIMES, &p, 0, r);
}

POHM_EXPORT int utimes(const char *path, const struct timeval tv[2])
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.utimes(path, tv);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, &p, -1, NULL, tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH)) ==
	    POHM_PASS)
		r = pohm_sysret(pohm_real.utimes(path, tv));
	return path_done(POHM_AT_UTIMES, &p, 0, r);
}

POHM_EXPORT int lutimes(const char *path, const struct timeval tv[2])
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lutimes(path, tv);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, &p, -1, NULL,
				 AT_SYMLINK_NOFOLLOW | (tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH))) == POHM_PASS)
		r = pohm_sysret(pohm_real.lutimes(path, tv));
	return path_done(POHM_AT_UTIMES, &p, AT_SYMLINK_NOFOLLOW, r);
}

POHM_EXPORT int futimesat(int dirfd, const char *path, const struct timeval tv[2])
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.futimesat(dirfd, path, tv);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, &p, -1, NULL, tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH)) ==
	    POHM_PASS)
		r = pohm_sysret(pohm_real.futimesat(dirfd, path, tv));
	return path_done(POHM_AT_UTIMES, &p, 0, r);
}

POHM_EXPORT int utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	struct pohm_fd_info fi;
	struct pohm_path p;
	int r;

	if (!pohm_launder(path)) {
		if (!pohm_claim_fd(dirfd, &fi))
			return pohm_real.utimensat(dirfd, path, ts, flags);
		if ((r = pohm_hook_attr(POHM_AT_UTIMES, NULL, dirfd, &fi, flags | ts_sets(ts))) ==
		    POHM_PASS)
			r = pohm_sysret(pohm_real.utimensat(dirfd, path, ts, flags));
		return fd_done(POHM_AT_UTIMES, dirfd, &fi, r);
	}
	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.utimensat(dirfd, path, ts, flags);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, &p, -1, NULL, flags | ts_sets(ts))) == POHM_PASS)
		r = pohm_sysret(pohm_real.utimensat(dirfd, path, ts, flags));
	return path_done(POHM_AT_UTIMES, &p, flags, r);
}

POHM_EXPORT int futimes(int fd, const struct timeval tv[2])
{
	struct pohm_fd_info fi;
	int r;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.futimes(fd, tv);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, NULL, fd, &fi, tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH)) ==
	    POHM_PASS)
		r = pohm_sysret(pohm_real.futimes(fd, tv));
	return fd_done(POHM_AT_UTIMES, fd, &fi, r);
}

POHM_EXPORT int futimens(int fd, const struct timespec ts[2])
{
	struct pohm_fd_info fi;
	int r;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.futimens(fd, ts);
	if ((r = pohm_hook_attr(POHM_AT_UTIMES, NULL, fd, &fi, ts_sets(ts))) == POHM_PASS)
		r = pohm_sysret(pohm_real.futimens(fd, ts));
	return fd_done(POHM_AT_UTIMES, fd, &fi, r);
}
