/*
 * dir.c — directory streams: opendir, fdopendir, readdir (+64, _r),
 * closedir.  The tree walks built on them are in walk_*.c.
 *
 * opendir opens its fd inside glibc, so the wrapper records dirfd(d) in
 * the fd table itself (find/fts then openat() relative to it).  A stream
 * under the prefix counts in pohm_dirs_under, and readdir passes its
 * entries through pohm_hook_readdir only while that count is not zero.
 *
 * A directory whose listing failed still opens (core/cache/cache.c
 * list_for_open: savewd, fchdir, fts go on), its fd marked
 * POHM_FD_UNLISTED (open.c, opendir here).  The stream's first read lists
 * it again (stream_relist); when that fails too, readdir returns NULL with
 * errno EIO, as the kernel does for a directory it cannot read, rather than
 * the local entries as if they were all (DESIGN.md §0: tar, cp -r, rsync
 * --delete, git add -A would take the missing names for deleted).  Offline
 * the cache lists as last listed and sets no mark.  A program's own
 * getdents64 (glibc's, or syscall(2)'s: creds.c) on a marked fd does the
 * same (pohm_dir_fd_readable): lists again, or fails EIO.  Limit: the
 * system call made without libc (inline assembly, Go's runtime) is not
 * seen; it reads the local entries.
 *
 * Sections: streams; readdir.
 */
#include "shim.h"

#include <dirent.h>

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "dirent and dirent64 differ");

/* ------------------------------------------------------------ streams */

/* After opendir/fdopendir succeeded: note the stream if it is under the prefix. */
static void stream_opened(DIR *d, const struct pohm_path *p, const struct pohm_where *w,
			  int unlisted)
{
	struct pohm_fd_info fi = { 0, POHM_FD_DIR | (unlisted ? POHM_FD_UNLISTED : 0) };
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
	int r = POHM_PASS;

	if (pohm_pass(AT_FDCWD, path)) {	/* certainly outside and no ancestor: nothing to record */
		d = pohm_real.opendir(path);
		if (d)
			pohm_fd_opened_outside(dirfd(d));
		return d;
	}
	if (!pohm_active())
		return pohm_real.opendir(path);
	if (pohm_locate(AT_FDCWD, path, 0, &p, &w) == POHM_PC_IN &&
	    (r = pohm_hook_lookup(POHM_PL_OPENDIR, &p, 0)) != POHM_PASS && r < 0) {
		errno = -r;
		return NULL;
	}
	d = pohm_real.opendir(path);
	if (d)
		stream_opened(d, &p, &w, r == POHM_LOOKUP_UNLISTED);
	return d;
}

POHM_EXPORT DIR *fdopendir(int fd)
{
	DIR *d;

	pohm_init();
	d = pohm_real.fdopendir(fd);
	if (d && pohm_active())
		stream_opened(d, NULL, NULL, 0);
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

/*
 * The stream's directory was opened while its listing failed: list it
 * now.  0 when it is listed (the mark dropped: the entries the stream
 * reads next are all), else -errno (-EIO when the listing failed again;
 * the mark stays, so every read fails until one listing succeeds).
 */
static int stream_relist(int fd)
{
	struct pohm_path p;
	int r;

	if (pohm_locate(fd, "", POHM_LOC_EMPTY, &p, NULL) != POHM_PC_IN)
		return 0;	/* no longer under the prefix (a moved cwd): the kernel's */
	r = pohm_hook_lookup(POHM_PL_OPENDIR, &p, 0);
	if (r == POHM_LOOKUP_UNLISTED)
		return -EIO;
	if (r < 0 && r != POHM_PASS)
		return r;
	pohm_fd_listed(fd);
	return 0;
}

/*
 * 1 when entries of d go through the readdir hook; -1 with errno set when
 * its directory could not be listed (stream_relist): the read fails.
 */
static int stream_ours(DIR *d, int *fd)
{
	struct pohm_fd_info fi;
	int r;

	if (!__atomic_load_n(&pohm_dirs_under, __ATOMIC_RELAXED) || !pohm_active())
		return 0;
	*fd = dirfd(d);
	if (!pohm_fd_lookup(*fd, &fi))
		return 0;
	if ((fi.flags & POHM_FD_UNLISTED) && (r = stream_relist(*fd)) < 0) {
		errno = -r;
		return -1;
	}
	return 1;
}

POHM_EXPORT struct dirent *readdir(DIR *d)
{
	struct dirent *e;
	int fd, r;

	pohm_init();
	if (!(r = stream_ours(d, &fd)))
		return pohm_real.readdir(d);
	if (r < 0)
		return NULL;
	while ((e = pohm_real.readdir(d)) && pohm_hook_readdir(d, fd, (struct dirent64 *)e))
		;
	return e;
}

POHM_EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct dirent64 *e;
	int fd, r;

	pohm_init();
	if (!(r = stream_ours(d, &fd)))
		return pohm_real.readdir64(d);
	if (r < 0)
		return NULL;
	while ((e = pohm_real.readdir64(d)) && pohm_hook_readdir(d, fd, e))
		;
	return e;
}

POHM_EXPORT int readdir_r(DIR *d, struct dirent *ent, struct dirent **res)
{
	int r, fd;

	pohm_init();
	if (!(r = stream_ours(d, &fd)))
		return pohm_real.readdir_r(d, ent, res);
	if (r < 0) {
		*res = NULL;
		return errno;
	}
	while (!(r = pohm_real.readdir_r(d, ent, res)) && *res &&
	       pohm_hook_readdir(d, fd, (struct dirent64 *)*res))
		;
	return r;
}

POHM_EXPORT int readdir64_r(DIR *d, struct dirent64 *ent, struct dirent64 **res)
{
	int r, fd;

	pohm_init();
	if (!(r = stream_ours(d, &fd)))
		return pohm_real.readdir64_r(d, ent, res);
	if (r < 0) {
		*res = NULL;
		return errno;
	}
	while (!(r = pohm_real.readdir64_r(d, ent, res)) && *res &&
	       pohm_hook_readdir(d, fd, *res))
		;
	return r;
}

/* -------------------------------------------------------- getdents64 */

int pohm_dir_fd_readable(int fd)
{
	struct pohm_fd_info fi;

	if (!pohm_claim_fd(fd, &fi) || !(fi.flags & POHM_FD_UNLISTED))
		return 0;
	return stream_relist(fd);
}

POHM_EXPORT ssize_t getdents64(int fd, void *buf, size_t len)
{
	int r;

	pohm_init();
	r = pohm_dir_fd_readable(fd);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return pohm_real.getdents64(fd, buf, len);
}
