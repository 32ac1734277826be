/*
 * fdkeep.c — which fds a close_range/closefrom of the program must leave
 * open: the library's own.  The registered internal fds (pohm_ifd_*) are
 * only some of them; core/ opens its cache directory, staging directory,
 * journal and sockets with raw syscalls, at or above POHM_FD_BASE and
 * close-on-exec, and nothing records them.  So every close-on-exec fd at
 * or above POHM_FD_BASE in the range is kept.  A program fd that looks
 * the same (it asked for a high number with F_DUPFD_CLOEXEC, or already
 * holds POHM_FD_BASE fds) stays open too, until the exec that usually
 * follows such a close — which closes it.  Listing /proc/self/fd costs a
 * few syscalls; close_range over everything is rare (spawns), and the
 * range below POHM_FD_BASE never pays it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim.h"
#include "fdkeep.h"
#include "sys.h"

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void add(int *keep, int *n, int max, int fd)
{
	int i;

	for (i = 0; i < *n; i++)
		if (keep[i] == fd)
			return;
	if (*n < max)
		keep[(*n)++] = fd;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int pohm_fdkeep_collect(unsigned lo, unsigned hi, int *keep, int max)
{
	char buf[4096];
	int n = 0, dfd, ifd, fd;
	unsigned from = lo;
	long got, off;

	/* The registered ones first. */
	while (from <= hi && (ifd = pohm_ifd_first_in(from, hi)) >= 0) {
		add(keep, &n, max, ifd);
		if ((unsigned)ifd == hi)
			break;
		from = (unsigned)ifd + 1;
	}
	if (hi < POHM_FD_BASE)
		goto out;
	dfd = pohm_sys_openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		goto out;
	while ((got = pohm_sys_getdents64(dfd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < got;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			char *end;
			long v;

			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			v = strtol(d->d_name, &end, 10);
			if (*end || v < POHM_FD_BASE || v == dfd || (unsigned long)v < lo ||
			    (unsigned long)v > hi)
				continue;
			fd = (int)v;
			if (pohm_sys_fcntl(fd, F_GETFD, 0) > 0)	/* FD_CLOEXEC set */
				add(keep, &n, max, fd);
		}
	}
	pohm_sys_close(dfd);
out:
	qsort(keep, (size_t)n, sizeof(*keep), cmp_int);
	return n;
}
