/*
 * attr.c — attribute changes: the chmod, chown, truncate and utime
 * families, by path (pohm_claim) or on an fd opened under the prefix
 * (pohm_claim_fd).  Under the prefix: one call, pohm_attr_call (shim.h),
 * with the wrapper's own libc call (real_<name>): the storage's checks
 * (materialize the file, owner checks), the real call, and the change's
 * push after it happen inside the hook (core/mount procattr.c; DESIGN.md
 * §2 step 4).
 *
 * utimensat(fd, NULL, ...) is Linux's futimens: it acts on the fd.
 */
#include "shim.h"

#include <sys/time.h>
#include <utime.h>

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

struct real_chmod {
	const char *path;
	mode_t mode;
};

static int real_chmod(void *v)
{
	const struct real_chmod *x = v;

	return pohm_sysret(pohm_real.chmod(x->path, x->mode));
}

POHM_EXPORT int chmod(const char *path, mode_t mode)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.chmod(path, mode);
	return pohm_attr_call(POHM_AT_CHMOD, &p, -1, NULL, 0, real_chmod,
			      &(struct real_chmod){ path, mode });
}

struct real_lchmod {
	const char *path;
	mode_t mode;
};

static int real_lchmod(void *v)
{
	const struct real_lchmod *x = v;

	return pohm_sysret(pohm_real.lchmod(x->path, x->mode));
}

POHM_EXPORT int lchmod(const char *path, mode_t mode)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lchmod(path, mode);
	return pohm_attr_call(POHM_AT_CHMOD, &p, -1, NULL, AT_SYMLINK_NOFOLLOW, real_lchmod,
			      &(struct real_lchmod){ path, mode });
}

struct real_fchmodat {
	int dirfd;
	const char *path;
	mode_t mode;
	int flags;
};

static int real_fchmodat(void *v)
{
	const struct real_fchmodat *x = v;

	return pohm_sysret(pohm_real.fchmodat(x->dirfd, x->path, x->mode, x->flags));
}

POHM_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.fchmodat(dirfd, path, mode, flags);
	return pohm_attr_call(POHM_AT_CHMOD, &p, -1, NULL, flags, real_fchmodat,
			      &(struct real_fchmodat){ dirfd, path, mode, flags });
}

struct real_fchmod {
	int fd;
	mode_t mode;
};

static int real_fchmod(void *v)
{
	const struct real_fchmod *x = v;

	return pohm_sysret(pohm_real.fchmod(x->fd, x->mode));
}

POHM_EXPORT int fchmod(int fd, mode_t mode)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.fchmod(fd, mode);
	return pohm_attr_call(POHM_AT_CHMOD, NULL, fd, &fi, 0, real_fchmod,
			      &(struct real_fchmod){ fd, mode });
}

/* ---- chown */

struct real_chown {
	const char *path;
	uid_t uid;
	gid_t gid;
};

static int real_chown(void *v)
{
	const struct real_chown *x = v;

	return pohm_sysret(pohm_real.chown(x->path, x->uid, x->gid));
}

POHM_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.chown(path, uid, gid);
	return pohm_attr_call(POHM_AT_CHOWN, &p, -1, NULL, sets(uid, gid), real_chown,
			      &(struct real_chown){ path, uid, gid });
}

struct real_lchown {
	const char *path;
	uid_t uid;
	gid_t gid;
};

static int real_lchown(void *v)
{
	const struct real_lchown *x = v;

	return pohm_sysret(pohm_real.lchown(x->path, x->uid, x->gid));
}

POHM_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lchown(path, uid, gid);
	return pohm_attr_call(POHM_AT_CHOWN, &p, -1, NULL,
			      AT_SYMLINK_NOFOLLOW | sets(uid, gid), real_lchown,
			      &(struct real_lchown){ path, uid, gid });
}

struct real_fchownat {
	int dirfd;
	const char *path;
	uid_t uid;
	gid_t gid;
	int flags;
};

static int real_fchownat(void *v)
{
	const struct real_fchownat *x = v;

	return pohm_sysret(pohm_real.fchownat(x->dirfd, x->path, x->uid, x->gid, x->flags));
}

POHM_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	struct pohm_path p;

	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.fchownat(dirfd, path, uid, gid, flags);
	return pohm_attr_call(POHM_AT_CHOWN, &p, -1, NULL, flags | sets(uid, gid), real_fchownat,
			      &(struct real_fchownat){ dirfd, path, uid, gid, flags });
}

struct real_fchown {
	int fd;
	uid_t uid;
	gid_t gid;
};

static int real_fchown(void *v)
{
	const struct real_fchown *x = v;

	return pohm_sysret(pohm_real.fchown(x->fd, x->uid, x->gid));
}

POHM_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.fchown(fd, uid, gid);
	return pohm_attr_call(POHM_AT_CHOWN, NULL, fd, &fi, sets(uid, gid), real_fchown,
			      &(struct real_fchown){ fd, uid, gid });
}

/* ---- truncate */

struct real_truncate {
	const char *path;
	off_t len;
};

static int real_truncate(void *v)
{
	const struct real_truncate *x = v;

	return pohm_sysret(pohm_real.truncate(x->path, x->len));
}

POHM_EXPORT int truncate(const char *path, off_t len)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.truncate(path, len);
	return pohm_attr_call(POHM_AT_TRUNCATE, &p, -1, NULL, 0, real_truncate,
			      &(struct real_truncate){ path, len });
}

struct real_truncate64 {
	const char *path;
	off64_t len;
};

static int real_truncate64(void *v)
{
	const struct real_truncate64 *x = v;

	return pohm_sysret(pohm_real.truncate64(x->path, x->len));
}

POHM_EXPORT int truncate64(const char *path, off64_t len)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.truncate64(path, len);
	return pohm_attr_call(POHM_AT_TRUNCATE, &p, -1, NULL, 0, real_truncate64,
			      &(struct real_truncate64){ path, len });
}

struct real_ftruncate {
	int fd;
	off_t len;
};

static int real_ftruncate(void *v)
{
	const struct real_ftruncate *x = v;

	return pohm_sysret(pohm_real.ftruncate(x->fd, x->len));
}

POHM_EXPORT int ftruncate(int fd, off_t len)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.ftruncate(fd, len);
	return pohm_attr_call(POHM_AT_TRUNCATE, NULL, fd, &fi, 0, real_ftruncate,
			      &(struct real_ftruncate){ fd, len });
}

struct real_ftruncate64 {
	int fd;
	off64_t len;
};

static int real_ftruncate64(void *v)
{
	const struct real_ftruncate64 *x = v;

	return pohm_sysret(pohm_real.ftruncate64(x->fd, x->len));
}

POHM_EXPORT int ftruncate64(int fd, off64_t len)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.ftruncate64(fd, len);
	return pohm_attr_call(POHM_AT_TRUNCATE, NULL, fd, &fi, 0, real_ftruncate64,
			      &(struct real_ftruncate64){ fd, len });
}

/* ---- utime family */

struct real_utime {
	const char *path;
	const struct utimbuf *t;
};

static int real_utime(void *v)
{
	const struct real_utime *x = v;

	return pohm_sysret(pohm_real.utime(x->path, x->t));
}

POHM_EXPORT int utime(const char *path, const struct utimbuf *t)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.utime(path, t);
	return pohm_attr_call(POHM_AT_UTIMES, &p, -1, NULL,
			      t ? POHM_ATTR_SET : POHM_ATTR_TOUCH, real_utime,
			      &(struct real_utime){ path, t });
}

struct real_utimes {
	const char *path;
	const struct timeval *tv;
};

static int real_utimes(void *v)
{
	const struct real_utimes *x = v;

	return pohm_sysret(pohm_real.utimes(x->path, x->tv));
}

POHM_EXPORT int utimes(const char *path, const struct timeval tv[2])
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.utimes(path, tv);
	return pohm_attr_call(POHM_AT_UTIMES, &p, -1, NULL,
			      tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH, real_utimes,
			      &(struct real_utimes){ path, tv });
}

struct real_lutimes {
	const char *path;
	const struct timeval *tv;
};

static int real_lutimes(void *v)
{
	const struct real_lutimes *x = v;

	return pohm_sysret(pohm_real.lutimes(x->path, x->tv));
}

POHM_EXPORT int lutimes(const char *path, const struct timeval tv[2])
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lutimes(path, tv);
	return pohm_attr_call(POHM_AT_UTIMES, &p, -1, NULL,
			      AT_SYMLINK_NOFOLLOW | (tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH), real_lutimes,
			      &(struct real_lutimes){ path, tv });
}

struct real_futimesat {
	int dirfd;
	const char *path;
	const struct timeval *tv;
};

static int real_futimesat(void *v)
{
	const struct real_futimesat *x = v;

	return pohm_sysret(pohm_real.futimesat(x->dirfd, x->path, x->tv));
}

POHM_EXPORT int futimesat(int dirfd, const char *path, const struct timeval tv[2])
{
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.futimesat(dirfd, path, tv);
	return pohm_attr_call(POHM_AT_UTIMES, &p, -1, NULL,
			      tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH, real_futimesat,
			      &(struct real_futimesat){ dirfd, path, tv });
}

struct real_utimensat {
	int dirfd;
	const char *path;
	const struct timespec *ts;
	int flags;
};

static int real_utimensat(void *v)
{
	const struct real_utimensat *x = v;

	return pohm_sysret(pohm_real.utimensat(x->dirfd, x->path, x->ts, x->flags));
}

POHM_EXPORT int utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	struct pohm_fd_info fi;
	struct pohm_path p;

	if (!pohm_launder(path)) {
		if (!pohm_claim_fd(dirfd, &fi))
			return pohm_real.utimensat(dirfd, path, ts, flags);
		return pohm_attr_call(POHM_AT_UTIMES, NULL, dirfd, &fi,
				      flags | ts_sets(ts), real_utimensat,
				      &(struct real_utimensat){ dirfd, path, ts, flags });
	}
	if (!pohm_claim_at(dirfd, path, flags, &p))
		return pohm_real.utimensat(dirfd, path, ts, flags);
	return pohm_attr_call(POHM_AT_UTIMES, &p, -1, NULL, flags | ts_sets(ts), real_utimensat,
			      &(struct real_utimensat){ dirfd, path, ts, flags });
}

struct real_futimes {
	int fd;
	const struct timeval *tv;
};

static int real_futimes(void *v)
{
	const struct real_futimes *x = v;

	return pohm_sysret(pohm_real.futimes(x->fd, x->tv));
}

POHM_EXPORT int futimes(int fd, const struct timeval tv[2])
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.futimes(fd, tv);
	return pohm_attr_call(POHM_AT_UTIMES, NULL, fd, &fi,
			      tv ? POHM_ATTR_SET : POHM_ATTR_TOUCH, real_futimes,
			      &(struct real_futimes){ fd, tv });
}

struct real_futimens {
	int fd;
	const struct timespec *ts;
};

static int real_futimens(void *v)
{
	const struct real_futimens *x = v;

	return pohm_sysret(pohm_real.futimens(x->fd, x->ts));
}

POHM_EXPORT int futimens(int fd, const struct timespec ts[2])
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.futimens(fd, ts);
	return pohm_attr_call(POHM_AT_UTIMES, NULL, fd, &fi, ts_sets(ts), real_futimens,
			      &(struct real_futimens){ fd, ts });
}
