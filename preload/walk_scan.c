/*
 * walk_scan.c — scandir, scandirat (+64) and glob (+64) for names that may
 * meet the prefix, built on our own wrappers (walk.h says why).
 *
 * scandir behaves as glibc 2.36's: entries in readdir order, each copied
 * whole (d_reclen bytes) into memory of the host's malloc, the caller's
 * select() may set errno freely, any error of readdir or the allocator
 * frees everything and returns -1 with errno, success restores errno.
 *
 * glob is glibc's own, run with GLOB_ALTDIRFUNC and our opendir, readdir,
 * closedir, stat and lstat as the directory functions: every flag
 * (GLOB_MARK, GLOB_ONLYDIR, GLOB_NOCHECK, GLOB_BRACE, GLOB_TILDE, ...)
 * keeps glibc's meaning, and each step goes through the wrappers.  The
 * caller's glob_t fields and gl_flags read as if glob had run plainly.
 * A caller that passes GLOB_ALTDIRFUNC itself gets exactly that.
 *
 * Sections: scandir; glob.
 */
#include "shim.h"
#include "walk.h"

#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ scandir */

typedef int (*sel_fn)(const struct dirent64 *);
typedef int (*cmp_fn)(const struct dirent64 **, const struct dirent64 **);

/* The stream of scandirat(dirfd, path), as glibc's opendirat opens it. */
static DIR *open_at(int dirfd, const char *path)
{
	DIR *d;
	int fd, e;

	if (dirfd == AT_FDCWD)
		return opendir(path);
	fd = openat(dirfd, path, O_RDONLY | O_NDELAY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (!(d = fdopendir(fd))) {
		e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

static int scan(int dirfd, const char *path, struct dirent64 ***list, sel_fn sel, cmp_fn cmp)
{
	struct dirent64 **v = NULL, **nv, *e, *copy;
	size_t n = 0, cap = 0, i;
	int saved, r;
	DIR *d;

	if (!(d = open_at(dirfd, path)))
		return -1;
	saved = errno;
	errno = 0;
	while ((e = readdir64(d))) {
		if (sel) {
			r = sel(e);
			errno = 0;	/* select may set it on success */
			if (!r)
				continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 10;
			if (!(nv = pohm_host_realloc(v, cap * sizeof(*v))))
				break;
			v = nv;
		}
		if (!(copy = pohm_host_malloc(e->d_reclen)))
			break;
		v[n++] = memcpy(copy, e, e->d_reclen);
		errno = 0;
	}
	if (errno) {
		r = errno;
		for (i = 0; i < n; i++)
			pohm_host_free(v[i]);
		pohm_host_free(v);
		closedir(d);
		errno = r;
		return -1;
	}
	closedir(d);
	if (cmp)
		qsort(v, n, sizeof(*v), (int (*)(const void *, const void *))cmp);
	*list = v;
	errno = saved;
	return (int)n;
}

POHM_EXPORT int scandir(const char *path, struct dirent ***list,
			int (*sel)(const struct dirent *),
			int (*cmp)(const struct dirent **, const struct dirent **))
{
	if (!pohm_walk_ours(AT_FDCWD, path))
		return pohm_real.scandir(path, list, sel, cmp);
	return scan(AT_FDCWD, path, (struct dirent64 ***)list, (sel_fn)sel, (cmp_fn)cmp);
}

POHM_EXPORT int scandir64(const char *path, struct dirent64 ***list,
			  int (*sel)(const struct dirent64 *),
			  int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	if (!pohm_walk_ours(AT_FDCWD, path))
		return pohm_real.scandir64(path, list, sel, cmp);
	return scan(AT_FDCWD, path, list, sel, cmp);
}

POHM_EXPORT int scandirat(int dirfd, const char *path, struct dirent ***list,
			  int (*sel)(const struct dirent *),
			  int (*cmp)(const struct dirent **, const struct dirent **))
{
	if (!pohm_walk_ours(dirfd, path))
		return pohm_real.scandirat(dirfd, path, list, sel, cmp);
	return scan(dirfd, path, (struct dirent64 ***)list, (sel_fn)sel, (cmp_fn)cmp);
}

POHM_EXPORT int scandirat64(int dirfd, const char *path, struct dirent64 ***list,
			    int (*sel)(const struct dirent64 *),
			    int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	if (!pohm_walk_ours(dirfd, path))
		return pohm_real.scandirat64(dirfd, path, list, sel, cmp);
	return scan(dirfd, path, list, sel, cmp);
}

/* ------------------------------------------------------------ glob */

/*
 * 1 when the pattern may match under the prefix: its fixed leading
 * directory (up to the last "/" before the first special character) is
 * under the prefix or one of its ancestors.  "~" (GLOB_TILDE) and a
 * fixed part too long to copy are taken as ours.
 */
static int glob_ours(const char *pat, int flags)
{
	char dir[PATH_MAX];
	const char *s, *slash = NULL;
	size_t n;

	if (!pohm_active() || !pohm_given(pat) || (flags & GLOB_ALTDIRFUNC))
		return 0;
	if (pat[0] == '~' && (flags & (GLOB_TILDE | GLOB_TILDE_CHECK)))
		return 1;
	for (s = pat; *s; s++) {
		if (*s == '*' || *s == '?' || *s == '[' || (*s == '{' && (flags & GLOB_BRACE)) ||
		    (*s == '\\' && !(flags & GLOB_NOESCAPE)))
			break;
		if (*s == '/')
			slash = s;
	}
	if (!slash)
		return pohm_walk_ours(AT_FDCWD, ".");
	n = slash == pat ? 1 : (size_t)(slash - pat);
	if (n >= sizeof(dir))
		return 1;
	memcpy(dir, pat, n);
	dir[n] = '\0';
	return pohm_walk_ours(AT_FDCWD, dir);
}

/* The directory functions of a glob_t and glob64_t (the same layout here). */
struct glob_fns {
	void (*closedir)(void *);
	void *(*readdir)(void *);
	void *(*opendir)(const char *);
	int (*lstat)(const char *, void *);
	int (*stat)(const char *, void *);
};

_Static_assert(sizeof(glob_t) == sizeof(glob64_t), "glob_t and glob64_t differ");

static void fns_swap(glob_t *g, struct glob_fns *f)
{
	struct glob_fns t = { (void (*)(void *))g->gl_closedir, (void *(*)(void *))g->gl_readdir,
			      g->gl_opendir, (int (*)(const char *, void *))g->gl_lstat,
			      (int (*)(const char *, void *))g->gl_stat };

	g->gl_closedir = f->closedir;
	g->gl_readdir = (struct dirent *(*)(void *))f->readdir;
	g->gl_opendir = f->opendir;
	g->gl_lstat = (int (*)(const char *, struct stat *))f->lstat;
	g->gl_stat = (int (*)(const char *, struct stat *))f->stat;
	*f = t;
}

/* Our wrappers in the shapes glob wants. */
static void g_closedir(void *d)
{
	closedir(d);
}

static void *g_readdir(void *d)
{
	return readdir64(d);
}

static void *g_opendir(const char *path)
{
	return opendir(path);
}

static int g_lstat(const char *path, void *st)
{
	return lstat64(path, st);
}

static int g_stat(const char *path, void *st)
{
	return stat64(path, st);
}

static int glob_ours_run(int is64, const char *pat, int flags, int (*errfn)(const char *, int),
			 glob_t *g)
{
	struct glob_fns f = { g_closedir, g_readdir, g_opendir, g_lstat, g_stat };
	int r;

	fns_swap(g, &f);
	r = is64 ? pohm_real.glob64(pat, flags | GLOB_ALTDIRFUNC, errfn, (glob64_t *)g) :
		   pohm_real.glob(pat, flags | GLOB_ALTDIRFUNC, errfn, g);
	fns_swap(g, &f);	/* the caller's fields back */
	g->gl_flags &= ~GLOB_ALTDIRFUNC;
	return r;
}

POHM_EXPORT int glob(const char *pat, int flags, int (*errfn)(const char *, int), glob_t *g)
{
	if (!glob_ours(pat, flags))
		return pohm_real.glob(pat, flags, errfn, g);
	return glob_ours_run(0, pat, flags, errfn, g);
}

POHM_EXPORT int glob64(const char *pat, int flags, int (*errfn)(const char *, int),
		       glob64_t *g)
{
	if (!glob_ours(pat, flags))
		return pohm_real.glob64(pat, flags, errfn, g);
	return glob_ours_run(1, pat, flags, errfn, (glob_t *)g);
}
