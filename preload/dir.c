/*
 * dir.c — directory streams: opendir, fdopendir, readdir (+64, _r),
 * closedir.  The tree walks built on them are in walk_*.c.
 *
 * opendir opens its fd inside glibc, so the wrapper records dirfd(d) in
 * the fd table itself (find/fts then openat() relative to it).  A stream
 * under the prefix counts in pohm_dirs_under, and readdir passes its
 * entries through pohm_hook_readdir only while that count is not zero.
 *
 * Sections: streams; readdir.
 */
#include "shim.h"

#include <dirent.h>

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
