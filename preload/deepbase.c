/*
 * deepbase.c — where a directory is when the kernel cannot say (issue 19
 * item 10).  getcwd(2) and readlink of /proc/self/fd/N fail with
 * ENAMETOOLONG once a directory's absolute path passes PATH_MAX: a
 * process that went down a deep tree one short relative step at a time
 * (cd, openat of a dirfd) is there.  classify.c then asks this file:
 * walk ".." from the directory, comparing identities with the prefix
 * root's, and, when it is under it, read each parent's entries for the
 * child's name.  The name below the prefix is what the cache needs, and
 * it often fits POHM_REL_MAX where the absolute path does not.
 *
 * Costs: per level, an openat and an fstat (and, under the prefix, one
 * getdents64 scan of the parent); classify.c caches the answer for a
 * dirfd in the fd table, the cwd is walked again for each call.
 */
#include "shim.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* At most this many levels are walked (a longer chain: "not under"). */
#define DEEP_LEVELS	8192

/* An fd of the parent of fd ("..") for reading, or -errno. */
static int parent_of(int fd)
{
	long r = syscall(SYS_openat, fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);

	return r < 0 ? -errno : (int)r;
}

static int same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * The name of the entry with inode ino in directory fd, copied to the end
 * of buf[0..*end) (with a '/' after it when *end is not at its end):
 * 0, -ENAMETOOLONG when it does not fit, -ENOENT when no entry has it.
 */
static int name_in(int fd, uint64_t ino, char *buf, size_t size, size_t *end)
{
	char dents[1024];
	ssize_t n, off;

	for (;;) {
		n = pohm_sys_getdents64(fd, dents, sizeof(dents));
		if (n <= 0)
			return n < 0 ? (int)n : -ENOENT;
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);
			size_t len = strlen(d->d_name), need = len + (*end < size - 1 ? 1 : 0);

			off += d->d_reclen;
			if (d->d_ino != ino || !strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			if (need > *end)
				return -ENAMETOOLONG;
			if (*end < size - 1)
				buf[--*end] = '/';
			*end -= len;
			memcpy(buf + *end, d->d_name, len);
			return 0;
		}
	}
}

/* Levels from the directory fd up to the prefix root (whose identity is
 * *root), or -1 when fd is not below it. */
static long levels_to(int fd, const struct stat *root)
{
	struct stat st, up;
	long depth, cur = fd, par;

	if (syscall(SYS_fstat, fd, &st) < 0)
		return -1;
	for (depth = 0; depth < DEEP_LEVELS; depth++) {
		if (same(&st, root)) {
			if (cur != fd)
				syscall(SYS_close, cur);
			return depth;
		}
		par = syscall(SYS_openat, cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (cur != fd)
			syscall(SYS_close, cur);
		if (par < 0)
			return -1;
		cur = par;
		if (syscall(SYS_fstat, cur, &up) < 0 || same(&up, &st))
			break;		/* no stat, or "/" */
		st = up;
	}
	if (cur != fd)
		syscall(SYS_close, cur);
	return -1;
}

int pohm_deep_base(int dirfd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen)
{
	const struct pohm_pc_prefix *pf = &pohm_state.prefix;
	int s = (int)pf->nsp - 1, saved = errno, fd, cur = -1, par, r = -1;
	size_t end = relsz - 1;
	struct stat root, st;
	long depth, i;

	/* the last spelling: the prefix's realpath, as getcwd would have said */
	if (!pf->nsp || relsz < 2 ||
	    syscall(SYS_newfstatat, AT_FDCWD, pf->sp[s].path, &root, 0) < 0)
		goto out;
	fd = (int)syscall(SYS_openat, dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	depth = levels_to(fd, &root);
	if (depth < 0)
		goto close;
	*pos = pohm_pc_root_of(pf, s);
	pos->depth += (uint32_t)depth;
	*rellen = relsz;	/* "did not fit", unless every name is found below */
	rel[end] = '\0';
	cur = fd;
	for (i = 0; i < depth; i++) {
		if (syscall(SYS_fstat, cur, &st) < 0 || (par = parent_of(cur)) < 0)
			break;
		if (cur != fd)
			syscall(SYS_close, cur);
		cur = par;
		if (name_in(cur, (uint64_t)st.st_ino, rel, relsz, &end) < 0)
			break;
	}
	if (i == depth) {
		*rellen = relsz - 1 - end;
		memmove(rel, rel + end, *rellen + 1);
	}
	if (cur != fd)
		syscall(SYS_close, cur);
	r = 0;
close:
	syscall(SYS_close, fd);
out:
	errno = saved;
	return r;
}
