/*
 * dir.c — directory streams and tree walks: opendir, fdopendir, readdir
 * (+64, _r), closedir, scandir (+at, +64), ftw/nftw (+64), fts_* (+64),
 * glob (+64).
 *
 * opendir opens its fd inside glibc, so the wrapper records dirfd(d) in
 * the fd table itself (find/fts then openat() relative to it).  A stream
 * under the prefix counts in pohm_dirs_under, and readdir passes its
 * entries through pohm_hook_readdir only while that count is not zero.
 *
 * scandir, nftw, fts and glob reach the kernel inside glibc without an
 * interposable call: for now they get a lookup hook on their root (so the
 * storage can list it) and then run glibc's code on the local copy.  When
 * the storage must see their every step they need implementations on top
 * of our wrappers (man/libpohmelfs.7, "Coverage").  nftw(FTW_CHDIR) and
 * fts without FTS_NOCHDIR move the cwd behind our back: the cwd state is
 * volatile while they run.
 *
 * Sections: streams; readdir; walks.
 */
#include "shim.h"

#include <dirent.h>
#include <fts.h>
#include <ftw.h>
#include <glob.h>

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "dirent and dirent64 differ");

/* ------------------------------------------------------------ streams */

/* After opendir/fdopendir succeeded: note the stream if it is under the prefix. */
static void stream_opened(DIR *d, const struct pohm_path *p, const struct pohm_where *w)
{
	struct pohm_fd_info fi = { 0, POHM_FD_DIR };
	int fd = dirfd(d);

	if (p)
		pohm_fd_opened(fd, p, w, &fi);
	if (pohm_fd_lookup(fd, &fi))
		__atomic_add_fetch(&pohm_dirs_under, 1, __ATOMIC_RELAXED);
}

POHM_EXPORT DIR *opendir(const char *path)
{
	struct pohm_where w;
	struct pohm_path p;
	DIR *d;
	int r;

	if (!pohm_active())
		return pohm_real.opendir(path);
	if (pohm_locate(AT_FDCWD, path, 0, &p, &w) == POHM_PC_IN &&
	    (r = pohm_hook_lookup(POHM_LK_OPENDIR, &p, 0)) != POHM_PASS && r < 0) {
		errno = -r;
		return NULL;
	}
	d = pohm_real.opendir(path);
	if (d)
		stream_opened(d, &p, &w);
	return d;
}

POHM_EXPORT DIR *fdopendir(int fd)
{
	DIR *d;

	pohm_init();
	d = pohm_real.fdopendir(fd);
	if (d && pohm_active())
		stream_opened(d, NULL, NULL);
	return d;
}

POHM_EXPORT int closedir(DIR *d)
{
	struct pohm_fdsnap snap;
	struct pohm_fd_info fi;
	int r, fd;

	if (!pohm_active() || !pohm_given(d))
		return pohm_real.closedir(d);
	fd = dirfd(d);
	if (pohm_fd_take(fd, &snap, &fi)) {
		__atomic_sub_fetch(&pohm_dirs_under, 1, __ATOMIC_RELAXED);
		pohm_hook_close(fd, &fi);
	}
	r = pohm_real.closedir(d);
	pohm_fd_release(&snap);
	return r;
}

/* ------------------------------------------------------------ readdir */

/* 1 when entries of d go through the readdir hook. */
static int stream_ours(DIR *d, int *fd)
{
	struct pohm_fd_info fi;

	if (!__atomic_load_n(&pohm_dirs_under, __ATOMIC_RELAXED) || !pohm_active())
		return 0;
	*fd = dirfd(d);
	return pohm_fd_lookup(*fd, &fi);
}

POHM_EXPORT struct dirent *readdir(DIR *d)
{
	struct dirent *e;
	int fd;

	pohm_init();
	if (!stream_ours(d, &fd))
		return pohm_real.readdir(d);
	while ((e = pohm_real.readdir(d)) && pohm_hook_readdir(d, fd, (struct dirent64 *)e))
		;
	return e;
}

POHM_EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct dirent64 *e;
	int fd;

	pohm_init();
	if (!stream_ours(d, &fd))
		return pohm_real.readdir64(d);
	while ((e = pohm_real.readdir64(d)) && pohm_hook_readdir(d, fd, e))
		;
	return e;
}

POHM_EXPORT int readdir_r(DIR *d, struct dirent *ent, struct dirent **res)
{
	int r, fd;

	pohm_init();
	if (!stream_ours(d, &fd))
		return pohm_real.readdir_r(d, ent, res);
	while (!(r = pohm_real.readdir_r(d, ent, res)) && *res &&
	       pohm_hook_readdir(d, fd, (struct dirent64 *)*res))
		;
	return r;
}

POHM_EXPORT int readdir64_r(DIR *d, struct dirent64 *ent, struct dirent64 **res)
{
	int r, fd;

	pohm_init();
	if (!stream_ours(d, &fd))
		return pohm_real.readdir64_r(d, ent, res);
	while (!(r = pohm_real.readdir64_r(d, ent, res)) && *res &&
	       pohm_hook_readdir(d, fd, *res))
		;
	return r;
}

/* ------------------------------------------------------------ walks */

/* The lookup hook of a walk's root: POHM_PASS (go on), or -errno to fail the walk. */
static int walk_root(int dirfd, const char *path)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(dirfd, path, &p))
		return POHM_PASS;
	r = pohm_hook_lookup(POHM_LK_OPENDIR, &p, 0);
	return r < 0 ? r : POHM_PASS;
}

/* The hook failed the walk: -1 and errno. */
static int walk_fail(int r)
{
	errno = -r;
	return -1;
}

POHM_EXPORT int scandir(const char *path, struct dirent ***list,
			int (*sel)(const struct dirent *),
			int (*cmp)(const struct dirent **, const struct dirent **))
{
	int r = walk_root(AT_FDCWD, path);

	return r == POHM_PASS ? pohm_real.scandir(path, list, sel, cmp) : walk_fail(r);
}

POHM_EXPORT int scandir64(const char *path, struct dirent64 ***list,
			  int (*sel)(const struct dirent64 *),
			  int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	int r = walk_root(AT_FDCWD, path);

	return r == POHM_PASS ? pohm_real.scandir64(path, list, sel, cmp) : walk_fail(r);
}

POHM_EXPORT int scandirat(int dirfd, const char *path, struct dirent ***list,
			  int (*sel)(const struct dirent *),
			  int (*cmp)(const struct dirent **, const struct dirent **))
{
	int r = walk_root(dirfd, path);

	return r == POHM_PASS ? pohm_real.scandirat(dirfd, path, list, sel, cmp) : walk_fail(r);
}

POHM_EXPORT int scandirat64(int dirfd, const char *path, struct dirent64 ***list,
			    int (*sel)(const struct dirent64 *),
			    int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	int r = walk_root(dirfd, path);

	return r == POHM_PASS ? pohm_real.scandirat64(dirfd, path, list, sel, cmp) : walk_fail(r);
}

POHM_EXPORT int ftw(const char *path, __ftw_func_t fn, int nfd)
{
	int r = walk_root(AT_FDCWD, path);

	return r == POHM_PASS ? pohm_real.ftw(path, fn, nfd) : walk_fail(r);
}

POHM_EXPORT int ftw64(const char *path, __ftw64_func_t fn, int nfd)
{
	int r = walk_root(AT_FDCWD, path);

	return r == POHM_PASS ? pohm_real.ftw64(path, fn, nfd) : walk_fail(r);
}

POHM_EXPORT int nftw(const char *path, __nftw_func_t fn, int nfd, int flags)
{
	int r = walk_root(AT_FDCWD, path), vol = (flags & FTW_CHDIR) && pohm_active();

	if (r != POHM_PASS)
		return walk_fail(r);
	if (vol)
		pohm_cwd_volatile(1);
	r = pohm_real.nftw(path, fn, nfd, flags);
	if (vol)
		pohm_cwd_volatile(-1);
	return r;
}

POHM_EXPORT int nftw64(const char *path, __nftw64_func_t fn, int nfd, int flags)
{
	int r = walk_root(AT_FDCWD, path), vol = (flags & FTW_CHDIR) && pohm_active();

	if (r != POHM_PASS)
		return walk_fail(r);
	if (vol)
		pohm_cwd_volatile(1);
	r = pohm_real.nftw64(path, fn, nfd, flags);
	if (vol)
		pohm_cwd_volatile(-1);
	return r;
}

/* Every root of an fts walk gets the lookup hook. */
static int fts_roots(char *const *roots)
{
	int r = POHM_PASS;

	for (; roots && *roots && r == POHM_PASS; roots++)
		r = walk_root(AT_FDCWD, *roots);
	return r;
}

POHM_EXPORT FTS *fts_open(char *const *roots, int opts,
			  int (*cmp)(const FTSENT **, const FTSENT **))
{
	int r = fts_roots(roots);
	FTS *f;

	if (r != POHM_PASS) {
		walk_fail(r);
		return NULL;
	}
	f = pohm_real.fts_open(roots, opts, cmp);
	if (f && !(f->fts_options & FTS_NOCHDIR) && pohm_active())
		pohm_cwd_volatile(1);
	return f;
}

POHM_EXPORT int fts_close(FTS *f)
{
	int vol = f && !(f->fts_options & FTS_NOCHDIR) && pohm_active(), r, saved;

	r = pohm_real.fts_close(f);
	if (vol) {
		saved = errno;
		pohm_cwd_volatile(-1);
		errno = saved;
	}
	return r;
}

POHM_EXPORT FTSENT *fts_read(FTS *f)
{
	pohm_init();
	return pohm_real.fts_read(f);
}

POHM_EXPORT FTSENT *fts_children(FTS *f, int opts)
{
	pohm_init();
	return pohm_real.fts_children(f, opts);
}

POHM_EXPORT int fts_set(FTS *f, FTSENT *e, int opts)
{
	pohm_init();
	return pohm_real.fts_set(f, e, opts);
}

POHM_EXPORT FTS64 *fts64_open(char *const *roots, int opts,
			      int (*cmp)(const FTSENT64 **, const FTSENT64 **))
{
	int r = fts_roots(roots);
	FTS64 *f;

	if (r != POHM_PASS) {
		walk_fail(r);
		return NULL;
	}
	f = pohm_real.fts64_open(roots, opts, cmp);
	if (f && !(f->fts_options & FTS_NOCHDIR) && pohm_active())
		pohm_cwd_volatile(1);
	return f;
}

POHM_EXPORT int fts64_close(FTS64 *f)
{
	int vol = f && !(f->fts_options & FTS_NOCHDIR) && pohm_active(), r, saved;

	r = pohm_real.fts64_close(f);
	if (vol) {
		saved = errno;
		pohm_cwd_volatile(-1);
		errno = saved;
	}
	return r;
}

POHM_EXPORT FTSENT64 *fts64_read(FTS64 *f)
{
	pohm_init();
	return pohm_real.fts64_read(f);
}

POHM_EXPORT FTSENT64 *fts64_children(FTS64 *f, int opts)
{
	pohm_init();
	return pohm_real.fts64_children(f, opts);
}

POHM_EXPORT int fts64_set(FTS64 *f, FTSENT64 *e, int opts)
{
	pohm_init();
	return pohm_real.fts64_set(f, e, opts);
}

/* glob's result is its own code, not errno: a hook failure is GLOB_ABORTED. */
POHM_EXPORT int glob(const char *pat, int flags, int (*errfn)(const char *, int), glob_t *g)
{
	int r = walk_root(AT_FDCWD, pat);

	if (r != POHM_PASS)
		return GLOB_ABORTED;
	return pohm_real.glob(pat, flags, errfn, g);
}

POHM_EXPORT int glob64(const char *pat, int flags, int (*errfn)(const char *, int),
		       glob64_t *g)
{
	int r = walk_root(AT_FDCWD, pat);

	if (r != POHM_PASS)
		return GLOB_ABORTED;
	return pohm_real.glob64(pat, flags, errfn, g);
}
