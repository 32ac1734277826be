/*
 * hooks_stack.c — every storage hook on the library's own stack (issue 19
 * item 10).  Each pohm_hook_* of hooks.h (but fork and exec_env, which
 * run at fork and exec and reach no storage call) packs its arguments and
 * runs hooks_cache.c's pohm_hk_* through pohm_stack_run (stack.c): the
 * cache's walk, the namespace and the network client then use the
 * library's stack, not the host thread's.  Written from hooks.h's
 * prototypes (a new hook there needs its pair here and in hooks_stack.h).
 *
 * A path whose name below the prefix did not fit struct pohm_path's
 * inline buffer (POHM_PATH_TRUNC: a cwd or dirfd deep in the tree plus a
 * relative path, 4096 bytes or more in all; the kernel takes such a
 * call, its path argument being shorter) is made whole here before
 * every hook that takes a path (issue 19 item 10): classified again, on
 * this stack, into a heap buffer of POHM_REL_CAP bytes (the library's
 * allocator), and the hook gets a copy whose rel points there.  A name
 * longer than that, or no memory for it, fails with ENAMETOOLONG or
 * ENOMEM (pohm_hk_too_long), the call not made: the local file alone,
 * which the storage would never hear of, is never changed.  hooks.h
 * (struct pohm_path) and libpohmelfs(7) LIMITS say the same.
 */
#include "shim.h"
#include "hooks_stack.h"

/*
 * *pp made whole when it did not fit (above): 0 with *pp pointing to lp
 * (or unchanged: NULL or a path that fit), POHM_PASS when the second walk
 * found it no longer under the prefix (the cwd moved meanwhile: the real
 * call decides), -ENAMETOOLONG or -ENOMEM.  whole_done frees lp's buffer.
 */
static int whole(const struct pohm_path **pp, struct pohm_path *lp)
{
	char *buf;
	int r;

	if (!*pp || !((*pp)->flags & POHM_PATH_TRUNC))
		return 0;
	buf = pohm_busy_malloc(POHM_REL_CAP);
	if (!buf)
		return -ENOMEM;
	r = pohm_locate_long(*pp, lp, buf, POHM_REL_CAP);
	if (r) {
		pohm_busy_free(buf);
		return r == -ENOENT ? POHM_PASS : r;
	}
	*pp = lp;
	return 0;
}

static void whole_done(const struct pohm_path *p, struct pohm_path *lp)
{
	if (p == lp)
		pohm_busy_free(lp->rel);
}

/* A hook's path that could not be made whole: its result (-errno, or
 * POHM_PASS in passthrough tests and for a path found outside). */
static int refused(int r)
{
	return r == POHM_PASS ? r : pohm_hk_too_long(r);
}

/* A one-call hook refused before the storage: its result, or in
 * passthrough tests (POHM_PASS) the wrapper's real call. */
static int or_real(int r, const struct pohm_real_call *real)
{
	return r == POHM_PASS ? real->call(real->arg) : r;
}

struct a_open {
	const struct pohm_path *p;
	int flags;
	mode_t mode;
	struct pohm_fd_info *fi;
	const struct pohm_real_call *real;
};

static long run_open(void *v)
{
	struct a_open *x = v;
	struct pohm_path lp;
	int r = whole(&x->p, &lp);

	if (r)
		return or_real(refused(r), x->real);
	r = pohm_hk_open(x->p, x->flags, x->mode, x->fi, x->real);
	whole_done(x->p, &lp);
	return r;
}

int pohm_hook_open(const struct pohm_path *p, int flags, mode_t mode, struct pohm_fd_info *fi,
		   const struct pohm_real_call *real)
{
	struct a_open x = { p, flags, mode, fi, real };

	return (int)pohm_stack_run(run_open, &x);
}

struct a_mktemp {
	const struct pohm_path *p;
	int flags;
	struct pohm_fd_info *fi;
	const struct pohm_real_call *real;
};

static long run_mktemp(void *v)
{
	struct a_mktemp *x = v;
	struct pohm_path lp;
	int r = whole(&x->p, &lp);

	if (r)
		return or_real(refused(r), x->real);
	r = pohm_hk_mktemp(x->p, x->flags, x->fi, x->real);
	whole_done(x->p, &lp);
	return r;
}

int pohm_hook_mktemp(const struct pohm_path *p, int flags, struct pohm_fd_info *fi,
		     const struct pohm_real_call *real)
{
	struct a_mktemp x = { p, flags, fi, real };

	return (int)pohm_stack_run(run_mktemp, &x);
}

struct a_stat {
	const struct pohm_path *p;
	int flags;
	struct stat *st;
	const struct pohm_real_call *real;
};

static long run_stat(void *v)
{
	struct a_stat *x = v;
	struct pohm_path lp;
	int r = whole(&x->p, &lp);

	if (r)
		return or_real(refused(r), x->real);
	r = pohm_hk_stat(x->p, x->flags, x->st, x->real);
	whole_done(x->p, &lp);
	return r;
}

int pohm_hook_stat(const struct pohm_path *p, int flags, struct stat *st,
		   const struct pohm_real_call *real)
{
	struct a_stat x = { p, flags, st, real };

	return (int)pohm_stack_run(run_stat, &x);
}

struct a_statx {
	const struct pohm_path *p;
	int flags;
	unsigned mask;
	struct statx *stx;
	const struct pohm_real_call *real;
};

static long run_statx(void *v)
{
	struct a_statx *x = v;
	struct pohm_path lp;
	int r = whole(&x->p, &lp);

	if (r)
		return or_real(refused(r), x->real);
	r = pohm_hk_statx(x->p, x->flags, x->mask, x->stx, x->real);
	whole_done(x->p, &lp);
	return r;
}

int pohm_hook_statx(const struct pohm_path *p, int flags, unsigned mask, struct statx *stx,
		    const struct pohm_real_call *real)
{
	struct a_statx x = { p, flags, mask, stx, real };

	return (int)pohm_stack_run(run_statx, &x);
}

struct a_stat_fix {
	const struct pohm_path *p;
	int fd;
	const struct pohm_fd_info *fi;
	struct stat *st;
};

static long run_stat_fix(void *v)
{
	struct a_stat_fix *x = v;

	pohm_hk_stat_fix(x->p, x->fd, x->fi, x->st);
	return 0;
}

void pohm_hook_stat_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi, struct stat *st)
{
	struct a_stat_fix x = { p, fd, fi, st };

	pohm_stack_run(run_stat_fix, &x);
}

struct a_ns {
	enum pohm_ns_op op;
	const struct pohm_path *a;
	const struct pohm_path *b;
	const struct pohm_ns_arg *arg;
	const struct pohm_real_call *real;
};

static long run_ns(void *v)
{
	struct a_ns *x = v;
	struct pohm_path la, lb;
	int r = whole(&x->a, &la);

	if (r)
		return or_real(refused(r), x->real);
	r = whole(&x->b, &lb);
	if (r) {
		whole_done(x->a, &la);
		return or_real(refused(r), x->real);
	}
	r = pohm_hk_ns(x->op, x->a, x->b, x->arg, x->real);
	whole_done(x->a, &la);
	whole_done(x->b, &lb);
	return r;
}

int pohm_hook_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		 const struct pohm_ns_arg *arg, const struct pohm_real_call *real)
{
	struct a_ns x = { op, a, b, arg, real };

	return (int)pohm_stack_run(run_ns, &x);
}

struct a_mount_dev {
	uint64_t *dev;
};

static long run_mount_dev(void *v)
{
	struct a_mount_dev *x = v;

	return pohm_hk_mount_dev(x->dev);
}

int pohm_hook_mount_dev(uint64_t *dev)
{
	struct a_mount_dev x = { dev };

	return (int)pohm_stack_run(run_mount_dev, &x);
}

struct a_attr {
	enum pohm_attr_op op;
	const struct pohm_path *p;
	int fd;
	const struct pohm_fd_info *fi;
	int flags;
	const struct pohm_real_call *real;
};

static long run_attr(void *v)
{
	struct a_attr *x = v;
	struct pohm_path lp;
	int r = whole(&x->p, &lp);

	if (r)
		return or_real(refused(r), x->real);
	r = pohm_hk_attr(x->op, x->p, x->fd, x->fi, x->flags, x->real);
	whole_done(x->p, &lp);
	return r;
}

int pohm_hook_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
		   const struct pohm_fd_info *fi, int flags, const struct pohm_real_call *real)
{
	struct a_attr x = { op, p, fd, fi, flags, real };

	return (int)pohm_stack_run(run_attr, &x);
}

struct a_lookup {
	enum pohm_proc_lookup why;
	const struct pohm_path *p;
	int flags;
};

static long run_lookup(void *v)
{
	struct a_lookup *x = v;
	struct pohm_path lp;
	int r = whole(&x->p, &lp);

	if (r)
		return refused(r);
	r = pohm_hk_lookup(x->why, x->p, x->flags);
	whole_done(x->p, &lp);
	return r;
}

int pohm_hook_lookup(enum pohm_proc_lookup why, const struct pohm_path *p, int flags)
{
	struct a_lookup x = { why, p, flags };

	return (int)pohm_stack_run(run_lookup, &x);
}

struct a_readdir {
	DIR *dir;
	int fd;
	struct dirent64 *ent;
};

static long run_readdir(void *v)
{
	struct a_readdir *x = v;

	return pohm_hk_readdir(x->dir, x->fd, x->ent);
}

int pohm_hook_readdir(DIR *dir, int fd, struct dirent64 *ent)
{
	struct a_readdir x = { dir, fd, ent };

	return (int)pohm_stack_run(run_readdir, &x);
}

struct a_close {
	int fd;
	const struct pohm_fd_info *fi;
};

static long run_close(void *v)
{
	struct a_close *x = v;

	return pohm_hk_close(x->fd, x->fi);
}

int pohm_hook_close(int fd, const struct pohm_fd_info *fi)
{
	struct a_close x = { fd, fi };

	return (int)pohm_stack_run(run_close, &x);
}

struct a_sync {
	enum pohm_sync_op op;
	int fd;
	const struct pohm_fd_info *fi;
};

static long run_sync(void *v)
{
	struct a_sync *x = v;

	return pohm_hk_sync(x->op, x->fd, x->fi);
}

int pohm_hook_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi)
{
	struct a_sync x = { op, fd, fi };

	return (int)pohm_stack_run(run_sync, &x);
}

struct a_fd_event {
	enum pohm_fd_event ev;
	int fd;
	const struct pohm_fd_info *fi;
	void *addr;
	size_t len;
};

static long run_fd_event(void *v)
{
	struct a_fd_event *x = v;

	return pohm_hk_fd_event(x->ev, x->fd, x->fi, x->addr, x->len);
}

int pohm_hook_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi, void *addr, size_t len)
{
	struct a_fd_event x = { ev, fd, fi, addr, len };

	return (int)pohm_stack_run(run_fd_event, &x);
}

struct a_fd_inherited {
	int fd;
	struct pohm_fd_info *fi;
};

static long run_fd_inherited(void *v)
{
	struct a_fd_inherited *x = v;

	pohm_hk_fd_inherited(x->fd, x->fi);
	return 0;
}

void pohm_hook_fd_inherited(int fd, struct pohm_fd_info *fi)
{
	struct a_fd_inherited x = { fd, fi };

	pohm_stack_run(run_fd_inherited, &x);
}

struct a_exit {
	int unused;
};

static long run_exit(void *v)
{
	(void)v;
	pohm_hk_exit();
	return 0;
}

void pohm_hook_exit(void)
{
	struct a_exit x = { 0 };

	if (pohm_storage_idle())
		return;		/* hooks.h: nothing to push; no stack mapped for it */
	pohm_stack_run(run_exit, &x);
}
