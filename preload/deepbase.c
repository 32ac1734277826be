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
 * getdents64 scan of the parent): 360 us from 16 levels down.  The last
 * answer is kept (hint below) and checked by identity first (an fstatat
 * of its name from the prefix root, as classify.c checks a dirfd's
 * name): 6 system calls while the process stays in one deep directory.
 * The last deep directory found outside the prefix is kept too (by
 * device, inode and birth time): 4 system calls.
 */
#include "shim.h"

#include <dirent.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* At most this many levels are walked (a longer chain: "not under"). */
#define DEEP_LEVELS	8192

/*
 * The last directory found under the prefix (its identity, position and
 * name below the prefix root), checked before use.  Guarded by hint_lock,
 * only ever try-locked (a signal handler or a fork child that finds it
 * held walks instead).
 */
static pthread_mutex_t hint_lock = PTHREAD_MUTEX_INITIALIZER;

/* A directory's identity: device, inode and, where known, birth time. */
struct ident {
	uint64_t dev, ino;
	int64_t bsec;
	uint32_t bnsec;
	int born;
};

static struct {
	int valid;
	uint64_t dev, ino;
	struct pohm_pc_pos pos;
	size_t len;
	char rel[POHM_REL_MAX];
	/* and the last directory found outside: no rename through the
	 * library moves a directory across the prefix (EXDEV), and its birth
	 * time tells a reused inode number (not kept where the file system
	 * has none: ctime changes with every entry made in the directory) */
	int out_valid;
	struct ident out;
} hint;

/* 1 when id is the directory last found outside the prefix. */
static int hint_outside(const struct ident *id)
{
	int r;

	if (!id->born || pthread_mutex_trylock(&hint_lock))
		return 0;
	r = hint.out_valid && !memcmp(&hint.out, id, sizeof(*id));
	pthread_mutex_unlock(&hint_lock);
	return r;
}

static void hint_keep_outside(const struct ident *id)
{
	if (!id->born || pthread_mutex_trylock(&hint_lock))
		return;
	hint.out_valid = 1;
	hint.out = *id;
	pthread_mutex_unlock(&hint_lock);
}

/* The identity of the directory fd: 0, or -1. */
static int ident_of(int fd, struct ident *id)
{
	struct statx sx;

	memset(id, 0, sizeof(*id));
	if (pohm_sys_statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) < 0)
		return -1;
	id->dev = (uint64_t)makedev(sx.stx_dev_major, sx.stx_dev_minor);
	id->ino = sx.stx_ino;
	if (sx.stx_mask & STATX_BTIME) {
		id->born = 1;
		id->bsec = sx.stx_btime.tv_sec;
		id->bnsec = sx.stx_btime.tv_nsec;
	}
	return 0;
}

/* An fd of the parent of fd ("..") for reading, or -errno. */
static int parent_of(int fd)
{
	return pohm_sys_openat(fd, "..", O_RDONLY | O_DIRECTORY, 0);
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
	long depth;
	int cur = fd, par;

	if (pohm_sys_fstat(fd, &st) < 0)
		return -1;
	for (depth = 0; depth < DEEP_LEVELS; depth++) {
		if (same(&st, root)) {
			if (cur != fd)
				pohm_sys_close(cur);
			return depth;
		}
		par = pohm_sys_openat(cur, "..", O_PATH | O_DIRECTORY, 0);
		if (cur != fd)
			pohm_sys_close(cur);
		if (par < 0)
			return -1;
		cur = par;
		if (pohm_sys_fstat(cur, &up) < 0 || same(&up, &st))
			break;		/* no stat, or "/" */
		st = up;
	}
	if (cur != fd)
		pohm_sys_close(cur);
	return -1;
}

/* The hint, if it is the directory whose identity is *st and its name
 * still leads there from the prefix root (root: its path): 0, or -1. */
static int hint_take(const struct ident *st, const char *root, struct pohm_pc_pos *pos,
		     char *rel, size_t relsz, size_t *rellen)
{
	struct stat now;
	int rfd;
	int ok = 0;

	if (pthread_mutex_trylock(&hint_lock))
		return -1;
	if (hint.valid && hint.dev == st->dev && hint.ino == st->ino &&
	    hint.len < relsz) {
		*pos = hint.pos;
		*rellen = hint.len;
		memcpy(rel, hint.rel, hint.len + 1);
		ok = 1;
	}
	pthread_mutex_unlock(&hint_lock);
	if (!ok)
		return -1;
	rfd = pohm_sys_openat(AT_FDCWD, root, O_PATH | O_DIRECTORY, 0);
	if (rfd < 0)
		return -1;
	ok = !pohm_sys_fstatat(rfd, *rellen ? rel : ".", &now, AT_SYMLINK_NOFOLLOW) &&
	     (uint64_t)now.st_dev == st->dev && (uint64_t)now.st_ino == st->ino;
	pohm_sys_close(rfd);
	return ok ? 0 : -1;
}

static void hint_keep(const struct ident *st, const struct pohm_pc_pos *pos, const char *rel,
		      size_t len)
{
	if (len >= sizeof(hint.rel) || pthread_mutex_trylock(&hint_lock))
		return;
	hint.valid = 1;
	hint.dev = st->dev;
	hint.ino = st->ino;
	hint.pos = *pos;
	hint.len = len;
	memcpy(hint.rel, rel, len + 1);
	pthread_mutex_unlock(&hint_lock);
}

int pohm_deep_base(int dirfd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen)
{
	const struct pohm_pc_prefix *pf = &pohm_state.prefix;
	int s = (int)pf->nsp - 1, fd, cur = -1, par, r = -1;
	size_t end = relsz - 1;
	struct stat root, st;
	struct ident self;
	long depth, i;

	if (!pf->nsp || relsz < 2)
		goto out;
	fd = pohm_sys_openat(dirfd, ".", O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		goto out;
	if (ident_of(fd, &self) < 0 || hint_outside(&self))
		goto close;
	/* the last spelling: the prefix's realpath, as getcwd would have said */
	if (!hint_take(&self, pf->sp[s].path, pos, rel, relsz, rellen)) {
		r = 0;
		goto close;
	}
	if (pohm_sys_fstatat(AT_FDCWD, pf->sp[s].path, &root, 0) < 0)
		goto close;
	depth = levels_to(fd, &root);
	if (depth < 0) {
		hint_keep_outside(&self);
		goto close;
	}
	*pos = pohm_pc_root_of(pf, s);
	pos->depth += (uint32_t)depth;
	*rellen = relsz;	/* "did not fit", unless every name is found below */
	rel[end] = '\0';
	cur = fd;
	for (i = 0; i < depth; i++) {
		if (pohm_sys_fstat(cur, &st) < 0 || (par = parent_of(cur)) < 0)
			break;
		if (cur != fd)
			pohm_sys_close(cur);
		cur = par;
		if (name_in(cur, (uint64_t)st.st_ino, rel, relsz, &end) < 0)
			break;
	}
	if (i == depth) {
		*rellen = relsz - 1 - end;
		memmove(rel, rel + end, *rellen + 1);
		hint_keep(&self, pos, rel, *rellen);
	}
	if (cur != fd)
		pohm_sys_close(cur);
	r = 0;
close:
	pohm_sys_close(fd);
out:
	return r;
}
