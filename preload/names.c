/*
 * names.c — calls that change the namespace: mkdir, rmdir, unlink, remove,
 * rename, link, symlink, mknod, mkfifo (with their *at and __xmknod forms).
 *
 * Under the prefix: one call, pohm_hook_ns, with the operation's arguments
 * and the wrapper's own libc call (real_<name>, struct pohm_real_call):
 * the storage's half, the real call when the kernel must answer, and what
 * follows its result happen inside it (core/mount procns.c).
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

#include "sys.h"

/* ------------------------------------------------------------ the boundary */

/* openat(2) without libc, then close: 0 or -errno. */
static int probe_open(int dirfd, const char *path, int flags)
{
	int fd = pohm_sys_openat(dirfd, path, flags, 0);

	return fd < 0 ? fd : (pohm_sys_close(fd), 0);
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
	int r, trailing;

	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	r = pohm_sys_fstatat(ofd, old, &st,
			     (flags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW) |
			     (flags & AT_EMPTY_PATH));
	if (r == 0 && (r = parent_check(nfd, new, &trailing)) == 0) {
		r = pohm_sys_fstatat(nfd, new, &st, AT_SYMLINK_NOFOLLOW);
		r = r == 0 ? -EEXIST : trailing ? -ENOENT : -EXDEV;
	}
	return r;
}

/* How a two-name call (rename, link) relates to the prefix. */
enum two { TWO_NONE, TWO_CROSS, TWO_BOTH };

/* op: 'R' rename, 'L' link (the signal queue's record, sigsafe.c). */
static enum two claim_two(char op, int ofd, const char *old, int nfd, const char *new,
			  struct pohm_path *a, struct pohm_path *b)
{
	int ia, ib;

	if (!pohm_active() || !pohm_addr_ok(old) || !pohm_addr_ok(new)) {
		if (pohm_busy && pohm_state.on && pohm_addr_ok(old) && pohm_addr_ok(new))
			pohm_sig_note_op(op, ofd, old, nfd, new);	/* a handler interrupted the shim */
		return TWO_NONE;	/* a bad pointer: EFAULT from the kernel */
	}
	ia = pohm_classify(ofd, old, a);
	ib = pohm_classify(nfd, new, b);
	if (ia != ib)
		return TWO_CROSS;
	return ia ? TWO_BOTH : TWO_NONE;
}

/* ------------------------------------------------------------ namespace wrappers */

/*
 * How the caller spelled its last component: LAST_DOT for "." or ".."
 * (with or without slashes after it), LAST_SLASH for a name followed by
 * slashes, else LAST_NAME.  The classifier normalises both away ("a/b/."
 * is "a/b" in rel), but the kernel does not: it never removes, renames or
 * creates "." or "..", and a trailing slash demands a directory.
 */
enum last { LAST_NAME, LAST_SLASH, LAST_DOT };

static enum last last_of(const char *path)
{
	size_t n = strlen(path), end;

	while (n > 0 && path[n - 1] == '/')
		n--;
	end = n;
	while (n > 0 && path[n - 1] != '/')
		n--;
	if ((end - n == 1 && path[n] == '.') || (end - n == 2 && path[n] == '.' && path[n + 1] == '.'))
		return LAST_DOT;
	return path[end] ? LAST_SLASH : LAST_NAME;
}

/*
 * 1 when the kernel refuses the call for its spelling alone, whatever the
 * tree holds (fs/namei.c): a last component "." or ".." is never made,
 * removed or renamed (mkdir/mknod/symlink/link target: EEXIST; rmdir:
 * EINVAL or ENOTEMPTY; unlink: EISDIR; rename: EBUSY; link source: a
 * directory, EPERM), and a trailing slash fails every call that makes or
 * removes a non-directory (unlink: EISDIR or ENOTDIR; link, symlink,
 * mknod: EEXIST or ENOENT).  Then the storage is not touched and the real
 * call answers.  rmdir, remove and rename with a trailing slash depend on
 * the entry's type: pohm_hook_ns decides those.
 */
static int kernel_refuses(enum pohm_ns_op op, const struct pohm_path *a,
			  const struct pohm_path *b)
{
	enum last la = last_of(a->path), lb = b ? last_of(b->path) : LAST_NAME;

	if (la == LAST_DOT || lb == LAST_DOT)
		return 1;
	switch (op) {
	case POHM_NS_UNLINK:
	case POHM_NS_LINK:
	case POHM_NS_SYMLINK:
	case POHM_NS_MKNOD:
		return la == LAST_SLASH || lb == LAST_SLASH;
	default:
		return 0;
	}
}

/* 1 if path has a ".." component before its last one. */
static int inner_dotdot(const char *path)
{
	const char *s;

	for (s = path; (s = strstr(s, "..")); s += 2)
		if ((s == path || s[-1] == '/') && s[2] == '/') {
			const char *t = s + 2;

			while (*t == '/')
				t++;
			if (*t)
				return 1;
		}
	return 0;
}

/*
 * A ".." inside the path: the classifier climbed lexically ("a/../b" is
 * "b"), the kernel climbs from wherever "a" really is, and only if it is
 * a directory (a missing "a" is ENOENT, a symlink "a" leads elsewhere).
 * Let the kernel resolve the parent and classify its real path again:
 * 1 when p then names the same place below the prefix by its real path,
 * 0 when it is not under the prefix, -1 when the parent does not resolve
 * (the real call gives the kernel's errno).
 */
static int by_kernel(struct pohm_path *p)
{
	char buf[PATH_MAX + NAME_MAX + 2], link[40];
	const char *path = p->path, *name;
	int dirfd = p->dirfd, fd;
	size_t n = strlen(path), end, cut;
	long len;

	while (n > 1 && path[n - 1] == '/')
		n--;
	end = n;
	for (cut = n; cut > 0 && path[cut - 1] != '/'; cut--)
		;
	name = path + cut;
	if (cut >= PATH_MAX || end - cut > NAME_MAX)
		return -1;
	memcpy(buf, path, cut);
	buf[cut] = '\0';
	fd = pohm_sys_openat(dirfd, buf, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = pohm_sys_readlinkat(AT_FDCWD, link, buf, PATH_MAX - 1);
	pohm_sys_close(fd);
	if (len <= 0 || buf[0] != '/')
		return -1;
	if (len > 1)
		buf[len++] = '/';
	memcpy(buf + len, name, end - cut);
	buf[len + (long)(end - cut)] = '\0';
	if (pohm_locate(AT_FDCWD, buf, 0, p, NULL) != POHM_PC_IN)
		return 0;
	p->dirfd = dirfd;	/* the real call still gets the caller's (dirfd, path) */
	p->path = path;
	return 1;
}

/* Everything under the prefix after classification: hooks around the real result. */
static int ns_pre(enum pohm_ns_op op, struct pohm_path *a, struct pohm_path *b,
		  struct pohm_ns_arg *arg, const struct pohm_real_call *real)
{
	int ia = 1, ib = 1;

	if (op == POHM_NS_SYMLINK && !pohm_addr_ok(arg->target))
		return POHM_PASS;	/* EFAULT from the kernel, before we read it */
	if (kernel_refuses(op, a, b)) {
		pohm_debug("%s: refused by the kernel for its spelling; storage untouched", a->path);
		return POHM_PASS;
	}
	if (inner_dotdot(a->path))
		ia = by_kernel(a);
	if (b && inner_dotdot(b->path))
		ib = by_kernel(b);
	if (ia < 0 || ib < 0 || (!ia && !ib))
		return POHM_PASS;	/* the kernel fails the lookup, or all outside */
	if (!ia || !ib)
		return b ? -EXDEV : POHM_PASS;	/* one side left the prefix */
	return pohm_hook_ns(op, a, b, arg, real);
}

/* p classified again from its base as it is now (as first: "" names the
 * dirfd itself when AT_EMPTY_PATH said so).  1 under the prefix, else 0. */
static int locate_again(struct pohm_path *p)
{
	unsigned flags = (p->flags & POHM_PATH_EMPTY) ? POHM_LOC_EMPTY : 0;

	return pohm_locate(p->dirfd, p->path, flags, p, NULL) == POHM_PC_IN;
}

/*
 * A wrapper's call under the prefix: the hook makes the real call
 * (fn(x): the wrapper's own libc function, real_<name>) itself between
 * the storage's halves, unless the spelling or a ".." decided first.
 */
static int ns_call(enum pohm_ns_op op, struct pohm_path *a, struct pohm_path *b,
		   struct pohm_ns_arg *arg, int (*fn)(void *), void *x)
{
	struct pohm_real_call real = { fn, x, NULL };
	int r = ns_pre(op, a, b, arg, &real);

	if (r == POHM_PROC_AGAIN) {
		/* The walk moved a directory on the way (a rename made on
		 * another host, applied here): once more by the names the
		 * bases have now, as the kernel's call goes by them. */
		int ia = locate_again(a), ib = !b || locate_again(b);

		r = ia && ib ? ns_pre(op, a, b, arg, &real) : !ia && (!b || !ib) ? POHM_PASS : -EXDEV;
		if (r == POHM_PROC_AGAIN)
			r = -ENOENT;
	}
	return pohm_ret(r == POHM_PASS ? fn(x) : r);
}

struct real_mkdir {
	const char *path;
	mode_t mode;
};

static int real_mkdir(void *v)
{
	const struct real_mkdir *x = v;

	return pohm_sysret(pohm_real.mkdir(x->path, x->mode));
}

POHM_EXPORT int mkdir(const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.mkdir(path, mode);
	return ns_call(POHM_NS_MKDIR, &p, NULL, &arg, real_mkdir,
			&(struct real_mkdir){ path, mode });
}

struct real_mkdirat {
	int dirfd;
	const char *path;
	mode_t mode;
};

static int real_mkdirat(void *v)
{
	const struct real_mkdirat *x = v;

	return pohm_sysret(pohm_real.mkdirat(x->dirfd, x->path, x->mode));
}

POHM_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.mkdirat(dirfd, path, mode);
	return ns_call(POHM_NS_MKDIR, &p, NULL, &arg, real_mkdirat,
			&(struct real_mkdirat){ dirfd, path, mode });
}

struct real_rmdir {
	const char *path;
};

static int real_rmdir(void *v)
{
	const struct real_rmdir *x = v;

	return pohm_sysret(pohm_real.rmdir(x->path));
}

POHM_EXPORT int rmdir(const char *path)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.rmdir(path);
	return ns_call(POHM_NS_RMDIR, &p, NULL, &arg, real_rmdir,
			&(struct real_rmdir){ path });
}

struct real_unlink {
	const char *path;
};

static int real_unlink(void *v)
{
	const struct real_unlink *x = v;

	return pohm_sysret(pohm_real.unlink(x->path));
}

POHM_EXPORT int unlink(const char *path)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.unlink(path);
	return ns_call(POHM_NS_UNLINK, &p, NULL, &arg, real_unlink,
			&(struct real_unlink){ path });
}

struct real_unlinkat {
	int dirfd;
	const char *path;
	int flags;
};

static int real_unlinkat(void *v)
{
	const struct real_unlinkat *x = v;

	return pohm_sysret(pohm_real.unlinkat(x->dirfd, x->path, x->flags));
}

POHM_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	enum pohm_ns_op op = (flags & AT_REMOVEDIR) ? POHM_NS_RMDIR : POHM_NS_UNLINK;
	struct pohm_ns_arg arg = { .flags = (unsigned)flags };
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.unlinkat(dirfd, path, flags);
	return ns_call(op, &p, NULL, &arg, real_unlinkat,
			&(struct real_unlinkat){ dirfd, path, flags });
}

/* remove(3): glibc tries unlink, then rmdir, internally. */
struct real_remove {
	const char *path;
};

static int real_remove(void *v)
{
	const struct real_remove *x = v;

	return pohm_sysret(pohm_real.remove(x->path));
}

POHM_EXPORT int remove(const char *path)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.remove(path);
	return ns_call(POHM_NS_REMOVE, &p, NULL, &arg, real_remove,
			&(struct real_remove){ path });
}

struct real_rename {
	const char *old;
	const char *new;
};

static int real_rename(void *v)
{
	const struct real_rename *x = v;

	return pohm_sysret(pohm_real.rename(x->old, x->new));
}

POHM_EXPORT int rename(const char *old, const char *new)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path a, b;

	switch (claim_two('R', AT_FDCWD, old, AT_FDCWD, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.rename(old, new);
	case TWO_CROSS:
		return pohm_ret(cross_rename(AT_FDCWD, old, AT_FDCWD, new, 0));
	case TWO_BOTH:
		break;
	}
	return ns_call(POHM_NS_RENAME, &a, &b, &arg, real_rename,
			&(struct real_rename){ old, new });
}

struct real_renameat {
	int ofd;
	const char *old;
	int nfd;
	const char *new;
};

static int real_renameat(void *v)
{
	const struct real_renameat *x = v;

	return pohm_sysret(pohm_real.renameat(x->ofd, x->old, x->nfd, x->new));
}

POHM_EXPORT int renameat(int ofd, const char *old, int nfd, const char *new)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path a, b;

	switch (claim_two('R', ofd, old, nfd, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.renameat(ofd, old, nfd, new);
	case TWO_CROSS:
		return pohm_ret(cross_rename(ofd, old, nfd, new, 0));
	case TWO_BOTH:
		break;
	}
	return ns_call(POHM_NS_RENAME, &a, &b, &arg, real_renameat,
			&(struct real_renameat){ ofd, old, nfd, new });
}

struct real_renameat2 {
	int ofd;
	const char *old;
	int nfd;
	const char *new;
	unsigned int flags;
};

static int real_renameat2(void *v)
{
	const struct real_renameat2 *x = v;

	return pohm_sysret(pohm_real.renameat2(x->ofd, x->old, x->nfd, x->new, x->flags));
}

POHM_EXPORT int renameat2(int ofd, const char *old, int nfd, const char *new, unsigned int flags)
{
	struct pohm_ns_arg arg = { .flags = flags };
	struct pohm_path a, b;

	switch (claim_two('R', ofd, old, nfd, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.renameat2(ofd, old, nfd, new, flags);
	case TWO_CROSS:
		return pohm_ret(cross_rename(ofd, old, nfd, new, flags));
	case TWO_BOTH:
		break;
	}
	return ns_call(POHM_NS_RENAME, &a, &b, &arg, real_renameat2,
			&(struct real_renameat2){ ofd, old, nfd, new, flags });
}

struct real_link {
	const char *old;
	const char *new;
};

static int real_link(void *v)
{
	const struct real_link *x = v;

	return pohm_sysret(pohm_real.link(x->old, x->new));
}

POHM_EXPORT int link(const char *old, const char *new)
{
	struct pohm_ns_arg arg = { 0 };
	struct pohm_path a, b;

	switch (claim_two('L', AT_FDCWD, old, AT_FDCWD, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.link(old, new);
	case TWO_CROSS:
		return pohm_ret(cross_link(AT_FDCWD, old, AT_FDCWD, new, 0));
	case TWO_BOTH:
		break;
	}
	return ns_call(POHM_NS_LINK, &a, &b, &arg, real_link,
			&(struct real_link){ old, new });
}

struct real_linkat {
	int ofd;
	const char *old;
	int nfd;
	const char *new;
	int flags;
};

static int real_linkat(void *v)
{
	const struct real_linkat *x = v;

	return pohm_sysret(pohm_real.linkat(x->ofd, x->old, x->nfd, x->new, x->flags));
}

POHM_EXPORT int linkat(int ofd, const char *old, int nfd, const char *new, int flags)
{
	struct pohm_ns_arg arg = { .flags = (unsigned)flags };
	struct pohm_path a, b;

	switch (claim_two('L', ofd, old, nfd, new, &a, &b)) {
	case TWO_NONE:
		return pohm_real.linkat(ofd, old, nfd, new, flags);
	case TWO_CROSS:
		return pohm_ret(cross_link(ofd, old, nfd, new, flags));
	case TWO_BOTH:
		break;
	}
	return ns_call(POHM_NS_LINK, &a, &b, &arg, real_linkat,
			&(struct real_linkat){ ofd, old, nfd, new, flags });
}

struct real_symlink {
	const char *target;
	const char *path;
};

static int real_symlink(void *v)
{
	const struct real_symlink *x = v;

	return pohm_sysret(pohm_real.symlink(x->target, x->path));
}

POHM_EXPORT int symlink(const char *target, const char *path)
{
	struct pohm_ns_arg arg = { .target = target };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.symlink(target, path);
	return ns_call(POHM_NS_SYMLINK, &p, NULL, &arg, real_symlink,
			&(struct real_symlink){ target, path });
}

struct real_symlinkat {
	const char *target;
	int dirfd;
	const char *path;
};

static int real_symlinkat(void *v)
{
	const struct real_symlinkat *x = v;

	return pohm_sysret(pohm_real.symlinkat(x->target, x->dirfd, x->path));
}

POHM_EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	struct pohm_ns_arg arg = { .target = target };
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.symlinkat(target, dirfd, path);
	return ns_call(POHM_NS_SYMLINK, &p, NULL, &arg, real_symlinkat,
			&(struct real_symlinkat){ target, dirfd, path });
}

struct real_mknod {
	const char *path;
	mode_t mode;
	dev_t dev;
};

static int real_mknod(void *v)
{
	const struct real_mknod *x = v;

	return pohm_sysret(pohm_real.mknod(x->path, x->mode, x->dev));
}

POHM_EXPORT int mknod(const char *path, mode_t mode, dev_t dev)
{
	struct pohm_ns_arg arg = { .mode = mode, .dev = dev };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.mknod(path, mode, dev);
	return ns_call(POHM_NS_MKNOD, &p, NULL, &arg, real_mknod,
			&(struct real_mknod){ path, mode, dev });
}

struct real_mknodat {
	int dirfd;
	const char *path;
	mode_t mode;
	dev_t dev;
};

static int real_mknodat(void *v)
{
	const struct real_mknodat *x = v;

	return pohm_sysret(pohm_real.mknodat(x->dirfd, x->path, x->mode, x->dev));
}

POHM_EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	struct pohm_ns_arg arg = { .mode = mode, .dev = dev };
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.mknodat(dirfd, path, mode, dev);
	return ns_call(POHM_NS_MKNOD, &p, NULL, &arg, real_mknodat,
			&(struct real_mknodat){ dirfd, path, mode, dev });
}

struct real___xmknod {
	int ver;
	const char *path;
	mode_t mode;
	dev_t *dev;
};

static int real___xmknod(void *v)
{
	const struct real___xmknod *x = v;

	return pohm_sysret(pohm_real.__xmknod(x->ver, x->path, x->mode, x->dev));
}

POHM_EXPORT int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.__xmknod(ver, path, mode, dev);
	arg.dev = dev ? *dev : 0;
	return ns_call(POHM_NS_MKNOD, &p, NULL, &arg, real___xmknod,
			&(struct real___xmknod){ ver, path, mode, dev });
}

struct real___xmknodat {
	int ver;
	int dirfd;
	const char *path;
	mode_t mode;
	dev_t *dev;
};

static int real___xmknodat(void *v)
{
	const struct real___xmknodat *x = v;

	return pohm_sysret(pohm_real.__xmknodat(x->ver, x->dirfd, x->path, x->mode, x->dev));
}

POHM_EXPORT int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev)
{
	struct pohm_ns_arg arg = { .mode = mode };
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.__xmknodat(ver, dirfd, path, mode, dev);
	arg.dev = dev ? *dev : 0;
	return ns_call(POHM_NS_MKNOD, &p, NULL, &arg, real___xmknodat,
			&(struct real___xmknodat){ ver, dirfd, path, mode, dev });
}

struct real_mkfifo {
	const char *path;
	mode_t mode;
};

static int real_mkfifo(void *v)
{
	const struct real_mkfifo *x = v;

	return pohm_sysret(pohm_real.mkfifo(x->path, x->mode));
}

POHM_EXPORT int mkfifo(const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode | S_IFIFO };
	struct pohm_path p;

	if (!pohm_claim(AT_FDCWD, path, &p))
		return pohm_real.mkfifo(path, mode);
	return ns_call(POHM_NS_MKNOD, &p, NULL, &arg, real_mkfifo,
			&(struct real_mkfifo){ path, mode });
}

struct real_mkfifoat {
	int dirfd;
	const char *path;
	mode_t mode;
};

static int real_mkfifoat(void *v)
{
	const struct real_mkfifoat *x = v;

	return pohm_sysret(pohm_real.mkfifoat(x->dirfd, x->path, x->mode));
}

POHM_EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	struct pohm_ns_arg arg = { .mode = mode | S_IFIFO };
	struct pohm_path p;

	if (!pohm_claim(dirfd, path, &p))
		return pohm_real.mkfifoat(dirfd, path, mode);
	return ns_call(POHM_NS_MKNOD, &p, NULL, &arg, real_mkfifoat,
			&(struct real_mkfifoat){ dirfd, path, mode });
}
