/*
 * xattr.c — the extended attribute families, path, l- and f-forms.
 * Reads (get, list) by path materialize the name first (lookup hook);
 * changes (set, remove) are attribute changes (attr hooks), by path or on
 * an fd opened under the prefix.  Reads on an fd need nothing: the file
 * is local already.
 */
#include "shim.h"

#include <string.h>
#include <sys/xattr.h>

/* A read by path: lookup hook, then libc.  user: the call may return
 * user.* xattrs (a stub has none locally: the hook fetches it first);
 * flags: AT_SYMLINK_NOFOLLOW for the l-forms. */
static long get_pre(struct pohm_path *p, int user, int flags)
{
	return pohm_hook_lookup(POHM_PL_XATTR_GET, p, (user ? POHM_XATTR_USER : 0) | flags);
}

static int user_name(const char *name)
{
	return name && !strncmp(name, "user.", 5);
}

POHM_EXPORT ssize_t getxattr(const char *path, const char *name, void *val, size_t n)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.getxattr(path, name, val, n);
	if ((r = get_pre(&p, user_name(name), 0)) == POHM_PASS)
		r = pohm_sysretl(pohm_real.getxattr(path, name, val, n));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t lgetxattr(const char *path, const char *name, void *val, size_t n)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.lgetxattr(path, name, val, n);
	if ((r = get_pre(&p, user_name(name), AT_SYMLINK_NOFOLLOW)) == POHM_PASS)
		r = pohm_sysretl(pohm_real.lgetxattr(path, name, val, n));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t fgetxattr(int fd, const char *name, void *val, size_t n)
{
	pohm_init();
	return pohm_real.fgetxattr(fd, name, val, n);
}

POHM_EXPORT ssize_t listxattr(const char *path, char *list, size_t n)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.listxattr(path, list, n);
	if ((r = get_pre(&p, 1, 0)) == POHM_PASS)
		r = pohm_sysretl(pohm_real.listxattr(path, list, n));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t llistxattr(const char *path, char *list, size_t n)
{
	struct pohm_path p;
	long r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.llistxattr(path, list, n);
	if ((r = get_pre(&p, 1, AT_SYMLINK_NOFOLLOW)) == POHM_PASS)
		r = pohm_sysretl(pohm_real.llistxattr(path, list, n));
	return pohm_retl(r);
}

POHM_EXPORT ssize_t flistxattr(int fd, char *list, size_t n)
{
	pohm_init();
	return pohm_real.flistxattr(fd, list, n);
}

struct real_setxattr {
	const char *path;
	const char *name;
	const void *val;
	size_t n;
	int flags;
};

static int real_setxattr(void *v)
{
	const struct real_setxattr *x = v;

	return pohm_sysret(pohm_real.setxattr(x->path, x->name, x->val, x->n, x->flags));
}

POHM_EXPORT int setxattr(const char *path, const char *name, const void *val, size_t n,
			 int flags)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.setxattr(path, name, val, n, flags);
	return pohm_attr_call(POHM_AT_XATTR_SET, &p, -1, NULL, 0, real_setxattr,
			      &(struct real_setxattr){ path, name, val, n, flags });
}

struct real_lsetxattr {
	const char *path;
	const char *name;
	const void *val;
	size_t n;
	int flags;
};

static int real_lsetxattr(void *v)
{
	const struct real_lsetxattr *x = v;

	return pohm_sysret(pohm_real.lsetxattr(x->path, x->name, x->val, x->n, x->flags));
}

POHM_EXPORT int lsetxattr(const char *path, const char *name, const void *val, size_t n,
			  int flags)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lsetxattr(path, name, val, n, flags);
	return pohm_attr_call(POHM_AT_XATTR_SET, &p, -1, NULL, AT_SYMLINK_NOFOLLOW, real_lsetxattr,
			      &(struct real_lsetxattr){ path, name, val, n, flags });
}

struct real_fsetxattr {
	int fd;
	const char *name;
	const void *val;
	size_t n;
	int flags;
};

static int real_fsetxattr(void *v)
{
	const struct real_fsetxattr *x = v;

	return pohm_sysret(pohm_real.fsetxattr(x->fd, x->name, x->val, x->n, x->flags));
}

POHM_EXPORT int fsetxattr(int fd, const char *name, const void *val, size_t n, int flags)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.fsetxattr(fd, name, val, n, flags);
	return pohm_attr_call(POHM_AT_XATTR_SET, NULL, fd, &fi, 0, real_fsetxattr,
			      &(struct real_fsetxattr){ fd, name, val, n, flags });
}

struct real_removexattr {
	const char *path;
	const char *name;
};

static int real_removexattr(void *v)
{
	const struct real_removexattr *x = v;

	return pohm_sysret(pohm_real.removexattr(x->path, x->name));
}

POHM_EXPORT int removexattr(const char *path, const char *name)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.removexattr(path, name);
	return pohm_attr_call(POHM_AT_XATTR_REMOVE, &p, -1, NULL, 0, real_removexattr,
			      &(struct real_removexattr){ path, name });
}

struct real_lremovexattr {
	const char *path;
	const char *name;
};

static int real_lremovexattr(void *v)
{
	const struct real_lremovexattr *x = v;

	return pohm_sysret(pohm_real.lremovexattr(x->path, x->name));
}

POHM_EXPORT int lremovexattr(const char *path, const char *name)
{
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.lremovexattr(path, name);
	return pohm_attr_call(POHM_AT_XATTR_REMOVE, &p, -1, NULL, AT_SYMLINK_NOFOLLOW, real_lremovexattr,
			      &(struct real_lremovexattr){ path, name });
}

struct real_fremovexattr {
	int fd;
	const char *name;
};

static int real_fremovexattr(void *v)
{
	const struct real_fremovexattr *x = v;

	return pohm_sysret(pohm_real.fremovexattr(x->fd, x->name));
}

POHM_EXPORT int fremovexattr(int fd, const char *name)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi))
		return pohm_real.fremovexattr(fd, name);
	return pohm_attr_call(POHM_AT_XATTR_REMOVE, NULL, fd, &fi, 0, real_fremovexattr,
			      &(struct real_fremovexattr){ fd, name });
}
