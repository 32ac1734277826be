/*
 * longat.c — a relative name of PATH_MAX bytes or more for an *at call
 * (issue 19 item 10).
 *
 * The kernel refuses any path argument of PATH_MAX (4096) bytes or more
 * with ENAMETOOLONG, however deep the directory it starts from.  The
 * cache names a file by its path below the prefix root and makes its
 * local calls as *at(prefix fd, rel, ...); a rel that long is reached
 * here: the wrappers of sys.c and raw.h, on -ENAMETOOLONG for such a
 * path, open the directory holding its last part (pohm_sys_long_at) and
 * make the call again from there.  Nothing changes for shorter paths:
 * the first call is the only one, and this file is never entered.
 */
#include "sys.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>

int pohm_sys_long_path(const char *path)
{
	return path && strnlen(path, PATH_MAX) >= PATH_MAX;
}

/*
 * The last '/' in p[1 .. PATH_MAX - 1] that has a name after it: the
 * chunk before it is shorter than PATH_MAX, and so is no directory name
 * the kernel would refuse for its length; NULL if there is none (one
 * component or a run of slashes longer than that).
 */
static const char *cut_at(const char *p)
{
	const char *s;

	for (s = p + PATH_MAX - 1; s > p; s--)
		if (*s == '/' && s[1] && s[1] != '/')
			return s;
	return NULL;
}

int pohm_sys_long_at(int dirfd, const char *path, const char **tail)
{
	char chunk[PATH_MAX];	/* only here, for paths of PATH_MAX bytes or more */
	const char *p = path, *cut;
	int d = dirfd, nd, own = 0;

	while (strnlen(p, PATH_MAX) >= PATH_MAX) {
		cut = cut_at(p);
		if (!cut) {
			nd = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(chunk, p, (size_t)(cut - p));
		chunk[cut - p] = '\0';
		/* Symlinks on the way are followed, as the kernel follows them
		 * in a whole path's directories: the same answer as one call
		 * would give if the kernel took the whole name. */
		nd = (int)POHM_RAW(SYS_openat, d, chunk, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (nd < 0)
			goto fail;
		if (own)
			POHM_RAW(SYS_close, d);
		d = nd;
		own = 1;
		p = cut + 1;
	}
	if (!own) {	/* not long after all: a dirfd the caller keeps is not ours to hand */
		nd = (int)POHM_RAW(SYS_fcntl, d, F_DUPFD_CLOEXEC, 0);
		if (nd < 0)
			return nd;
		d = nd;
	}
	*tail = p;
	return d;
fail:
	if (own)
		POHM_RAW(SYS_close, d);
	return nd;
}
