/*
 * names.c — calls that change the namespace: mkdir, rmdir, unlink, remove,
 * rename, link, symlink, mknod, mkfifo (with their *at and __xmknod forms).
 *
 * Under the prefix: pohm_hook_ns before (the storage pushes the change),
 * the real call, pohm_hook_ns_done after (commit or compensate).
 *
 * rename and link with exactly one side under the prefix fail with EXDEV,
 * as the kernel does across two mounts, so mv and cp -l fall back to
 * copying (the storage could not follow a local rename out of or into its
 * cache).  The kernel resolves both parents before it compares mounts, so
 * their errors come first; for link the source must exist and the target
 * must not (cross_rename, cross_link).
 *
 * Sections: the boundary; namespace wrappers.
 */
#include "shim.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "log.h"

/* ------------------------------------------------------------ the boundary */

/* openat(2) without libc; 0 or -errno. */
static int probe_open(int dirfd, const char *path, int flags)
{
	int saved = errno;
	long fd = syscall(SYS_openat, dirfd, path, flags | O_CLOEXEC, 0);

	fd = fd < 0 ? -errno : (syscall(SYS_close, fd), 0);
	errno = saved;
	return (int)fd;
}

/*
 * Resolve the parent of (dirfd, path) as the kernel's path_parentat does:
 * 0 or its error.  *trailing is set when the last component had slashes.
 */
static int parent_check(int dirfd, const char *path, int *trailing)
{
	char parent[PATH_MAX];
	size_t n = strlen(path), cut;

	if (!n)
		return -ENOENT;
	if (n >= sizeof(parent))
		return -ENAMETOOLONG;
	*trailing = 0;
	while (n > 1 && path[n - 1] == '/') {
		n--;
		*trailing = 1;
	}
	for (cut = n; cut > 0 && path[cut - 1] != '/'; cut--)
		;
	if (cut == 0)		/* "name": the parent is dirfd itself */
		return dirfd == AT_FDCWD ? 0 : probe_open(dirfd, ".", O_PATH | O_DIRECTORY);
	memcpy(parent, path, cut);
	parent[cut] = '\0';
	return probe_open(dirfd, parent, O_PATH | O_DIRECTORY);
}

/* rename/renameat/renameat2 with one side under the prefix. */
static int cross_rename(int ofd, const char *old, int nfd, const char *new, unsigned flags)
{
	int r, t;

	if ((flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) ||
	    ((flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)) && (flags & RENAME_EXCHANGE)))
		return -EINVAL;
	if ((r = parent_check(ofd, old, &t)) < 0 || (r = parent_check(nfd, new, &t)) < 0)
		return r;
	pohm_debug("rename across the prefix boundary: EXDEV");
	return -EXDEV;
}

/* link/linkat with one side under the prefix. */
static int cross_link(int ofd, const char *old, int nfd, const char *new, int flags)
{
	struct stat st;
	int r, trailing, saved = errno;

	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	r = (int)syscall(SYS_newfstatat, ofd, old, &st,
			 (flags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW) |
			 (flags & AT_EMPTY_PATH));
	r = r < 0 ? -errno : 0;
	if (r == 0 && (r = parent_check(nfd, new, &trailing)) == 0) {
		r = (int)syscall(SYS_newfstatat, nfd, new, &st, AT_SYMLINK_NOFOLLOW);
		r = r == 0 ? -EEXIST : trailing ? -ENOENT : -EXDEV;
	}
	errno = saved;
	return r;
}

/* How a two-name call (rename, link) relates to the prefix. */
enum two { TWO_NONE, TWO_CROSS, TWO_BOTH };

static enum two claim_two(int ofd, const char *old, int nfd, const char *new,
			  struct pohm_path *a, struct pohm_path *b)
{
	int ia, ib;

	if (!pohm_active())
		return TWO_NONE;
	ia = pohm_classify(ofd, old, a);
	ib = pohm_classify(nfd, new, b);
	if (ia != ib)
		return TWO_CROSS;
	return ia ? TWO_BOTH : TWO_NONE;
}

/* ------------------------------------------------------------ namespace wrappers */

/* Everything under the prefix after classification: hooks around the real result. */
static int ns_pre(enum pohm_ns_op op, struct pohm_path *a, struct pohm_path *b,
		  struct pohm_ns_arg *arg)
{
	return pohm_hook_ns(op, a, b, arg);
}

static int ns_post(enum pohm_ns_op op, struct pohm_path *a, struct pohm_path *b,
		   struct pohm_ns_arg *arg, int r)
{
	return pohm_ret(pohm_hook_ns_done(op, a, b, arg, r));
}

POHM_EXPORT int mkdir(const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.mkdir(path, mode);
	if ((r = ns_pre(POHM_NS_MKDIR, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.mkdir(path, mode));
	return ns_post(POHM_NS_MKDIR, &p, NULL, &arg, r);
}

POHM_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.mkdirat(dirfd, path, mode);
	if ((r = ns_pre(POHM_NS_MKDIR, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.mkdirat(dirfd, path, mode));
	return ns_post(POHM_NS_MKDIR, &p, NULL, &arg, r);
}

POHM_EXPORT int rmdir(const char *path)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.rmdir(path);
	if ((r = ns_pre(POHM_NS_RMDIR, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.rmdir(path));
	return ns_post(POHM_NS_RMDIR, &p, NULL, &arg, r);
}

POHM_EXPORT int unlink(const char *path)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.unlink(path);
	if ((r = ns_pre(POHM_NS_UNLINK, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.unlink(path));
	return ns_post(POHM_NS_UNLINK, &p, NULL, &arg, r);
}

POHM_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	enum pohm_ns_op op = (flags & AT_REMOVEDIR) ? POHM_NS_RMDIR : POHM_NS_UNLINK;
	struct pohm_ns_arg arg = { .flags = (unsigned)flags };
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.unlinkat(dirfd, path, flags);
	if ((r = ns_pre(op, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.unlinkat(dirfd, path, flags));
	return ns_post(op, &p, NULL, &arg, r);
}

/* remove(3): glibc tries unlink, then rmdir, internally. */
POHM_EXPORT int remove(const char *path)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.remove(path);
	if ((r = ns_pre(POHM_NS_REMOVE, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.remove(path));
	return ns_post(POHM_NS_REMOVE, &p, NULL, &arg, r);
}

POHM_EXPORT int rename(const char *old, const char *new)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path a, b;
	int r;

	switch (claim_two(AT_FDCWD, old, AT_FDCWD, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.rename(old, new);
	case TWO_CROSS:
		return pohm_ret(cross_rename(AT_FDCWD, old, AT_FDCWD, new, 0));
	case TWO_BOTH:
		break;
	}
	if ((r = ns_pre(POHM_NS_RENAME, &a, &b, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.rename(old, new));
	return ns_post(POHM_NS_RENAME, &a, &b, &arg, r);
}

POHM_EXPORT int renameat(int ofd, const char *old, int nfd, const char *new)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path a, b;
	int r;

	switch (claim_two(ofd, old, nfd, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.renameat(ofd, old, nfd, new);
	case TWO_CROSS:
		return pohm_ret(cross_rename(ofd, old, nfd, new, 0));
	case TWO_BOTH:
		break;
	}
	if ((r = ns_pre(POHM_NS_RENAME, &a, &b, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.renameat(ofd, old, nfd, new));
	return ns_post(POHM_NS_RENAME, &a, &b, &arg, r);
}

POHM_EXPORT int renameat2(int ofd, const char *old, int nfd, const char *new, unsigned int flags)
{
	struct pohm_ns_arg arg = { .flags = flags };
	struct pohm_path a, b;
	int r;

	switch (claim_two(ofd, old, nfd, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.renameat2(ofd, old, nfd, new, flags);
	case TWO_CROSS:
		return pohm_ret(cross_rename(ofd, old, nfd, new, flags));
	case TWO_BOTH:
		break;
	}
	if ((r = ns_pre(POHM_NS_RENAME, &a, &b, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.renameat2(ofd, old, nfd, new, flags));
	return ns_post(POHM_NS_RENAME, &a, &b, &arg, r);
}

POHM_EXPORT int link(const char *old, const char *new)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path a, b;
	int r;

	switch (claim_two(AT_FDCWD, old, AT_FDCWD, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.link(old, new);
	case TWO_CROSS:
		return pohm_ret(cross_link(AT_FDCWD, old, AT_FDCWD, new, 0));
	case TWO_BOTH:
		break;
	}
	if ((r = ns_pre(POHM_NS_LINK, &a, &b, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.link(old, new));
	return ns_post(POHM_NS_LINK, &a, &b, &arg, r);
}

POHM_EXPORT int linkat(int ofd, const char *old, int nfd, const char *new, int flags)
{
	struct pohm_ns_arg arg = { .flags = (unsigned)flags };
	struct pohm_path a, b;
	int r;

	switch (claim_two(ofd, old, nfd, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.linkat(ofd, old, nfd, new, flags);
	case TWO_CROSS:
		return pohm_ret(cross_link(ofd, old, nfd, new, flags));
	case TWO_BOTH:
		break;
	}
	if ((r = ns_pre(POHM_NS_LINK, &a, &b, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.linkat(ofd, old, nfd, new, flags));
	return ns_post(POHM_NS_LINK, &a, &b, &arg, r);
}

POHM_EXPORT int symlink(const char *target, const char *path)
{
	struct pohm_ns_arg arg = { .target = target };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.symlink(target, path);
	if ((r = ns_pre(POHM_NS_SYMLINK, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.symlink(target, path));
	return ns_post(POHM_NS_SYMLINK, &p, NULL, &arg, r);
}

POHM_EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	struct pohm_ns_arg arg = { .target = target };
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.symlinkat(target, dirfd, path);
	if ((r = ns_pre(POHM_NS_SYMLINK, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.symlinkat(target, dirfd, path));
	return ns_post(POHM_NS_SYMLINK, &p, NULL, &arg, r);
}

POHM_EXPORT int mknod(const char *path, mode_t mode, dev_t dev)
{
	struct pohm_ns_arg arg = { .mode = mode, .dev = dev };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.mknod(path, mode, dev);
	if ((r = ns_pre(POHM_NS_MKNOD, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.mknod(path, mode, dev));
	return ns_post(POHM_NS_MKNOD, &p, NULL, &arg, r);
}

POHM_EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	struct pohm_ns_arg arg = { .mode = mode, .dev = dev };
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.mknodat(dirfd, path, mode, dev);
	if ((r = ns_pre(POHM_NS_MKNOD, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.mknodat(dirfd, path, mode, dev));
	return ns_post(POHM_NS_MKNOD, &p, NULL, &arg, r);
}

POHM_EXPORT int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.__xmknod(ver, path, mode, dev);
	arg.dev = dev ? *dev : 0;
	if ((r = ns_pre(POHM_NS_MKNOD, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.__xmknod(ver, path, mode, dev));
	return ns_post(POHM_NS_MKNOD, &p, NULL, &arg, r);
}

POHM_EXPORT int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.__xmknodat(ver, dirfd, path, mode, dev);
	arg.dev = dev ? *dev : 0;
	if ((r = ns_pre(POHM_NS_MKNOD, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.__xmknodat(ver, dirfd, path, mode, dev));
	return ns_post(POHM_NS_MKNOD, &p, NULL, &arg, r);
}

POHM_EXPORT int mkfifo(const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode | S_IFIFO };
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.mkfifo(path, mode);
	if ((r = ns_pre(POHM_NS_MKNOD, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.mkfifo(path, mode));
	return ns_post(POHM_NS_MKNOD, &p, NULL, &arg, r);
}

POHM_EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode | S_IFIFO };
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.mkfifoat(dirfd, path, mode);
	if ((r = ns_pre(POHM_NS_MKNOD, &p, NULL, &arg)) == POHM_PASS)
		r = pohm_sysret(pohm_real.mkfifoat(dirfd, path, mode));
	return ns_post(POHM_NS_MKNOD, &p, NULL, &arg, r);
}
