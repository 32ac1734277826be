/*
 * walk_ftw.c — ftw and nftw (+64) for walks that may meet the prefix,
 * built on our own wrappers (walk.h says why).
 *
 * Behaviour is glibc 2.36's: entries in readdir order, "." and ".."
 * skipped; at most `nfd` directory streams open at once — when a deeper
 * level needs one more, the oldest open stream is read to the end into
 * memory and closed; an entry is stat'ed relative to its directory's fd
 * while that stream is open, by path otherwise; FTW_PHYS, FTW_MOUNT,
 * FTW_CHDIR (the cwd is restored at the end), FTW_DEPTH, FTW_ACTIONRETVAL;
 * without FTW_PHYS each directory is visited once (by device and inode);
 * FTW_DNR only for EACCES, other errors end the walk with -1 and errno;
 * ftw() reports FTW_SL as FTW_F, FTW_DP as FTW_D and FTW_SLN as FTW_NS.
 *
 * Sections: state; entries and directories; the walk; entry points.
 */
#include "shim.h"
#include "walk.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat and stat64 differ");

/* ------------------------------------------------------------ state */

/* A directory being read. */
struct fdir {
	DIR *stream;		/* NULL once closed early (names holds the rest) */
	int fd;			/* dirfd(stream), or -1 */
	char *names;		/* the rest of the entries, NUL-separated, "" ends */
};

/* One walk (lives on the caller's stack for its duration). */
struct fwalk {
	char *buf;		/* the current path, as the callback sees it */
	size_t cap;
	struct FTW ftw;		/* base and level, given to the callback */
	int flags;		/* FTW_* */
	int is_nftw;		/* 0: ftw's three-argument callback and flag values */
	__nftw64_func_t fn;
	__ftw64_func_t fn3;
	dev_t dev;		/* device of the root (FTW_MOUNT) */
	void *seen;		/* tsearch tree of directories visited (not with FTW_PHYS) */
	struct fdir **open;	/* ring of open streams, at most nopen */
	size_t nopen, cur;	/* ring size, next slot */
};

struct seen_key {
	dev_t dev;
	ino64_t ino;
};

static int seen_cmp(const void *a, const void *b)
{
	const struct seen_key *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->dev < y->dev ? -1 : x->dev > y->dev;
}

static void seen_free(void *k)
{
	free(k);
}

/* 1 if the directory st was visited already; else remember it (0), or -1 (ENOMEM). */
static int seen_check(struct fwalk *w, const struct stat64 *st)
{
	struct seen_key probe = { st->st_dev, st->st_ino }, *k;

	if (tfind(&probe, &w->seen, seen_cmp))
		return 1;
	if (!(k = malloc(sizeof(*k))))
		return -1;
	*k = probe;
	if (!tsearch(k, &w->seen, seen_cmp)) {
		free(k);
		return -1;
	}
	return 0;
}

/* Call the callback with the walk's flag value, converted for ftw(). */
static int report(struct fwalk *w, const struct stat64 *st, int flag)
{
	if (w->is_nftw)
		return w->fn(w->buf, st, flag, &w->ftw);
	if (flag == FTW_SL)
		flag = FTW_F;
	else if (flag == FTW_DP)
		flag = FTW_D;
	else if (flag == FTW_SLN)
		flag = FTW_NS;
	return w->fn3(w->buf, st, flag);
}

/* Room for n more bytes after base. */
static int grow(struct fwalk *w, size_t need)
{
	char *nb;

	if (need <= w->cap)
		return 0;
	if (!(nb = realloc(w->buf, 2 * need)))
		return -1;
	w->buf = nb;
	w->cap = 2 * need;
	return 0;
}

/* ------------------------------------------------------------ entries and directories */

/*
 * Read the rest of d's stream into memory and close it, freeing its slot
 * (its fd counts against nfd).  0 or -1 with errno.
 */
static int drain(struct fdir *d)
{
	size_t len = 0, cap = 1024, n;
	struct dirent64 *e;
	char *names = malloc(cap), *nn;

	if (!names)
		return -1;
	while ((e = readdir64(d->stream))) {
		n = strlen(e->d_name);
		if (len + n + 2 > cap) {
			cap += n + 2 > 1024 ? 2 * (n + 2) : 1024;
			if (!(nn = realloc(names, cap))) {
				int e2 = errno;

				free(names);
				errno = e2;
				return -1;
			}
			names = nn;
		}
		memcpy(names + len, e->d_name, n + 1);
		len += n + 1;
	}
	names[len] = '\0';
	closedir(d->stream);
	d->stream = NULL;
	d->fd = -1;
	d->names = names;
	return 0;
}

/* Open the directory now in w->buf (a child of parent, or the root). */
static int open_dir(struct fwalk *w, struct fdir *parent, struct fdir *d)
{
	const char *name;
	int fd;

	if (w->open[w->cur]) {
		if (drain(w->open[w->cur]) < 0)
			return -1;
		w->open[w->cur] = NULL;
	}
	d->names = NULL;
	d->stream = NULL;
	if (parent && parent->fd != -1) {
		fd = openat(parent->fd, w->buf + w->ftw.base, O_RDONLY | O_DIRECTORY | O_NDELAY);
		if (fd != -1 && !(d->stream = fdopendir(fd))) {
			int e = errno;

			close(fd);
			errno = e;
		}
	} else {
		name = w->buf;
		if (w->flags & FTW_CHDIR)
			name = w->buf[w->ftw.base] ? w->buf + w->ftw.base : ".";
		d->stream = opendir(name);
	}
	if (!d->stream)
		return -1;
	d->fd = dirfd(d->stream);
	w->open[w->cur] = d;
	w->cur = (w->cur + 1) % w->nopen;
	return 0;
}

/* Close d's stream (still open, and the newest in the ring); errno kept. */
static void close_dir(struct fwalk *w, struct fdir *d)
{
	int e = errno;

	closedir(d->stream);
	d->stream = NULL;
	d->fd = -1;
	w->cur = w->cur ? w->cur - 1 : w->nopen - 1;
	w->open[w->cur] = NULL;
	errno = e;
}

static int walk_dir(struct fwalk *w, const struct stat64 *st, struct fdir *parent);

/* One entry of directory d: stat it, report it or descend. */
static int walk_entry(struct fwalk *w, struct fdir *d, const char *name)
{
	const char *sname = name;
	struct stat64 st;
	size_t n = strlen(name);
	int r = 0, flag, sr, nofollow = (w->flags & FTW_PHYS) ? AT_SYMLINK_NOFOLLOW : 0;

	if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
		return 0;
	if (grow(w, (size_t)w->ftw.base + n + 2) < 0)
		return -1;
	memcpy(w->buf + w->ftw.base, name, n + 1);
	if (d->fd == -1 && !(w->flags & FTW_CHDIR))
		sname = w->buf;
	if (d->fd != -1)
		sr = fstatat64(d->fd, name, &st, nofollow);
	else
		sr = nofollow ? lstat64(sname, &st) : stat64(sname, &st);
	if (sr < 0) {
		if (errno != EACCES && errno != ENOENT)
			r = -1;
		else if (nofollow)
			flag = FTW_NS;
		else {
			/* A dangling link: reported with its own lstat (glibc >= 2.30). */
			sr = d->fd != -1 ? fstatat64(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) :
					   lstat64(sname, &st);
			flag = sr == 0 && S_ISLNK(st.st_mode) ? FTW_SLN : FTW_NS;
		}
	} else {
		flag = S_ISDIR(st.st_mode) ? FTW_D : S_ISLNK(st.st_mode) ? FTW_SL : FTW_F;
	}
	if (r == 0 && (flag == FTW_NS || !(w->flags & FTW_MOUNT) || st.st_dev == w->dev)) {
		if (flag != FTW_D)
			r = report(w, &st, flag);
		else if (nofollow || (r = seen_check(w, &st)) == 0)
			r = walk_dir(w, &st, d);
		else if (r == 1)
			r = 0;		/* met before: not visited again */
	}
	if ((w->flags & FTW_ACTIONRETVAL) && r == FTW_SKIP_SUBTREE)
		r = 0;
	return r;
}

/* The directory now in w->buf, whose stat is st. */
static int walk_dir(struct fwalk *w, const struct stat64 *st, struct fdir *parent)
{
	int prev_base = w->ftw.base, r;
	struct dirent64 *e;
	struct fdir d;
	size_t len;

	if (open_dir(w, parent, &d) < 0)
		return errno == EACCES ? report(w, st, FTW_DNR) : -1;
	if (!(w->flags & FTW_DEPTH) && (r = report(w, st, FTW_D)) != 0) {
		close_dir(w, &d);
		return r;
	}
	if ((w->flags & FTW_CHDIR) && fchdir(d.fd) < 0) {
		close_dir(w, &d);
		return -1;
	}
	w->ftw.level++;
	len = strlen(w->buf);
	if (w->buf[len - 1] != '/')
		w->buf[len++] = '/';
	w->ftw.base = (int)len;
	r = 0;
	while (d.stream && (e = readdir64(d.stream)))
		if ((r = walk_entry(w, &d, e->d_name)) != 0)
			break;
	if (d.stream) {
		close_dir(w, &d);
	} else {
		int saved;
		char *n;

		for (n = d.names; r == 0 && *n; n += strlen(n) + 1)
			r = walk_entry(w, &d, n);
		saved = errno;
		free(d.names);
		errno = saved;
	}
	if ((w->flags & FTW_ACTIONRETVAL) && r == FTW_SKIP_SIBLINGS)
		r = 0;
	w->buf[w->ftw.base - 1] = '\0';
	w->ftw.level--;
	w->ftw.base = prev_base;
	if (r == 0 && (w->flags & FTW_DEPTH))
		r = report(w, st, FTW_DP);
	if (parent && (w->flags & FTW_CHDIR) &&
	    (r == 0 || ((w->flags & FTW_ACTIONRETVAL) && r != -1 && r != FTW_STOP))) {
		if (!(parent->stream && fchdir(parent->fd) == 0) &&
		    chdir(w->ftw.base == 1 ? "/" : "..") < 0)
			r = -1;
	}
	return r;
}

/* ------------------------------------------------------------ the walk */

static int walk(const char *path, __nftw64_func_t fn, __ftw64_func_t fn3, int nfd, int flags)
{
	struct fwalk w = { .flags = flags, .is_nftw = fn != NULL, .fn = fn, .fn3 = fn3 };
	size_t len = strlen(path), i;
	char *cwd = NULL, *cp;
	struct stat64 st;
	const char *name;
	int cwdfd = -1, r = 0, saved, phys = flags & FTW_PHYS;

	if (!path[0]) {
		errno = ENOENT;
		return -1;
	}
	w.nopen = nfd < 1 ? 1 : (size_t)nfd;
	w.cap = 2 * len > PATH_MAX ? 2 * len : PATH_MAX;
	w.open = calloc(w.nopen, sizeof(*w.open));
	w.buf = malloc(w.cap);
	if (!w.open || !w.buf) {
		r = -1;
		goto out;
	}
	memcpy(w.buf, path, len + 1);
	for (i = len; i > 1 && w.buf[i - 1] == '/'; i--)
		;
	w.buf[i] = '\0';
	cp = strrchr(w.buf, '/');
	w.ftw.base = cp ? (int)(cp - w.buf) + 1 : 0;
	if (flags & FTW_CHDIR) {
		cwdfd = open(".", O_RDONLY | O_DIRECTORY);
		if (cwdfd == -1) {
			if (errno == EACCES)
				cwd = getcwd(NULL, 0);	/* the host's malloc */
			if (!cwd) {
				r = -1;
				goto out;
			}
		} else if (w.nopen > 1) {
			w.nopen--;
		}
		if (w.ftw.base == 1) {
			r = chdir("/");
		} else if (w.ftw.base > 1) {
			w.buf[w.ftw.base - 1] = '\0';
			r = chdir(w.buf);
			w.buf[w.ftw.base - 1] = '/';
		}
	}
	if (r == 0) {
		name = w.buf;
		if (flags & FTW_CHDIR)
			name = w.buf[w.ftw.base] ? w.buf + w.ftw.base : ".";
		if ((phys ? lstat64(name, &st) : stat64(name, &st)) < 0) {
			if (!phys && errno == ENOENT && lstat64(name, &st) == 0 && S_ISLNK(st.st_mode))
				r = report(&w, &st, FTW_SLN);
			else
				r = -1;
		} else if (S_ISDIR(st.st_mode)) {
			w.dev = st.st_dev;
			if (!phys && seen_check(&w, &st) < 0)
				r = -1;
			if (r == 0)
				r = walk_dir(&w, &st, NULL);
		} else {
			r = report(&w, &st, S_ISLNK(st.st_mode) ? FTW_SL : FTW_F);
		}
		if ((flags & FTW_ACTIONRETVAL) && (r == FTW_SKIP_SUBTREE || r == FTW_SKIP_SIBLINGS))
			r = 0;
	}
	saved = errno;
	if (cwdfd != -1) {
		fchdir(cwdfd);
		close(cwdfd);
	} else if (cwd) {
		chdir(cwd);
		pohm_host_free(cwd);
	}
	errno = saved;
out:
	saved = errno;
	tdestroy(w.seen, seen_free);
	free(w.buf);
	free(w.open);
	errno = saved;
	return r;
}

/* ------------------------------------------------------------ entry points */

#define NFTW_FLAGS (FTW_PHYS | FTW_MOUNT | FTW_CHDIR | FTW_DEPTH | FTW_ACTIONRETVAL)

/* glibc's, with the cwd state volatile while FTW_CHDIR moves it behind our back. */
static int real_nftw(int is64, const char *path, void *fn, int nfd, int flags)
{
	int vol = (flags & FTW_CHDIR) && pohm_active(), r, saved;

	if (vol)
		pohm_cwd_volatile(1);
	r = is64 ? pohm_real.nftw64(path, (__nftw64_func_t)fn, nfd, flags) :
		   pohm_real.nftw(path, (__nftw_func_t)fn, nfd, flags);
	if (vol) {
		saved = errno;
		pohm_cwd_volatile(-1);
		errno = saved;
	}
	return r;
}

POHM_EXPORT int ftw(const char *path, __ftw_func_t fn, int nfd)
{
	if (!pohm_walk_ours(AT_FDCWD, path))
		return pohm_real.ftw(path, fn, nfd);
	return walk(path, NULL, (__ftw64_func_t)fn, nfd, 0);
}

POHM_EXPORT int ftw64(const char *path, __ftw64_func_t fn, int nfd)
{
	if (!pohm_walk_ours(AT_FDCWD, path))
		return pohm_real.ftw64(path, fn, nfd);
	return walk(path, NULL, fn, nfd, 0);
}

POHM_EXPORT int nftw(const char *path, __nftw_func_t fn, int nfd, int flags)
{
	if (!pohm_walk_ours(AT_FDCWD, path))
		return real_nftw(0, path, (void *)fn, nfd, flags);
	if (flags & ~NFTW_FLAGS)
		return pohm_ret(-EINVAL);
	return walk(path, (__nftw64_func_t)fn, NULL, nfd, flags);
}

POHM_EXPORT int nftw64(const char *path, __nftw64_func_t fn, int nfd, int flags)
{
	if (!pohm_walk_ours(AT_FDCWD, path))
		return real_nftw(1, path, (void *)fn, nfd, flags);
	if (flags & ~NFTW_FLAGS)
		return pohm_ret(-EINVAL);
	return walk(path, fn, NULL, nfd, flags);
}
