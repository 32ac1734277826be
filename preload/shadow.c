/*
 * shadow.c — read-only shadow fds for files the program opened write-only
 * under the prefix (DESIGN.md §2 "Never close a second fd at the wrong
 * moment").  A push reads the local file through an fd; a write-only fd
 * cannot be read, so the shim keeps a second, read-only fd on the same
 * inode: opened right after the program's open (or lazily at the first
 * push, for fds inherited through exec), moved high and O_CLOEXEC, and
 * closed only immediately before the host closes the last fd of its own
 * on that inode.  Closing any fd on an inode releases the process's POSIX
 * locks on it; the host's own close releases them at that moment anyway,
 * so the shadow's close never drops a lock the program still expects.
 *
 * One shadow per local inode (dev, ino): every host fd on the inode (dup,
 * dup2, F_DUPFD, a second open) shares it, which is what makes "the last
 * host fd" the right moment.  Before use a shadow is checked with fstat:
 * if the program closed its number (close_range over everything) and the
 * number now names something else, the entry is dropped (not closed: the
 * number is the program's) and a new shadow is opened.  A push with the
 * host fd's stat checks the shadow with its own fstat in its turn instead
 * (POHM_HOST_FD_UNCHECKED; issue 23): nothing is read through it before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "shim.h"
#include "shadow.h"
#include "sys.h"

struct shadow {
	int fd;			/* -1 = free slot */
	int host;		/* the host fd whose open made it, while that fd is
				 * the inode's (-1: none, or not known) */
	dev_t dev;
	ino_t ino;
};

/* The shadows of this process (grown, never shrunk).  Guarded by
 * shadow_lock; copied by fork (the child inherits the fds too) and gone
 * at exec (CLOEXEC). */
static struct shadow *shadows;
static int cap;
static pthread_mutex_t shadow_lock = PTHREAD_MUTEX_INITIALIZER;
static int nshadows;	/* atomic: slots in use (a quick "none" for closes) */

static struct shadow *find(dev_t dev, ino_t ino)
{
	int i;

	for (i = 0; i < cap; i++)
		if (shadows[i].fd >= 0 && shadows[i].dev == dev && shadows[i].ino == ino)
			return &shadows[i];
	return NULL;
}

/* Is s->fd still our fd on s's inode? */
static int valid(const struct shadow *s)
{
	struct stat st;

	return !pohm_sys_fstat(s->fd, &st) && st.st_dev == s->dev && st.st_ino == s->ino;
}

/* Open a read-only fd on the inode behind host fd (hst: its stat): the fd,
 * or -errno.  check: fstat the new fd against hst (an fd the host has held
 * a while: another of its threads may have closed the number and opened
 * another file on it meanwhile).  A host fd its open just returned cannot
 * be renamed over: /proc/self/fd/N is the open file itself, and the host
 * has not seen the number yet (issue 23: two calls per create fewer);
 * valid() checks the shadow at each use anyway. */
static int open_on(int fd, const struct stat *hst, int check)
{
	char proc[64];
	struct stat st;
	int s;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/* O_NOATIME: a push's read is no access of the program's (an atime it
	 * set with futimens must stay).  Only the owner or root may ask. */
	s = pohm_sys_open_high(AT_FDCWD, proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOATIME, 0);
	if (s == -EPERM)
		s = pohm_sys_open_high(AT_FDCWD, proc, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (s < 0 || !check)
		return s;
	if (pohm_sys_fstat(s, &st) || st.st_dev != hst->st_dev || st.st_ino != hst->st_ino) {
		pohm_sys_close(s);	/* renamed over between the two opens */
		return -ESTALE;
	}
	return s;
}

int pohm_shadow_get(int fd, const struct stat *known, int fresh)
{
	struct shadow *s;
	struct stat st;
	int i, r;

	if (known)
		st = *known;
	else if (pohm_sys_fstat(fd, &st))
		return -EBADF;
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	pohm_busy_lock(&shadow_lock);
	if (fresh == 1)		/* fd names another file now than any shadow made at its open */
		for (i = 0; i < cap; i++)
			if (shadows[i].fd >= 0 && shadows[i].host == fd)
				shadows[i].host = -1;
	s = find(st.st_dev, st.st_ino);
	if (s && ((known && fresh == POHM_HOST_FD_UNCHECKED) || valid(s))) {
		r = s->fd;
		goto out;
	}
	if (s) {
		s->fd = -1;	/* the program's number now: forget it */
		__atomic_sub_fetch(&nshadows, 1, __ATOMIC_RELAXED);
	}
	for (i = 0; i < cap && shadows[i].fd >= 0; i++)
		;
	if (i == cap) {
		int ncap = cap ? cap * 2 : 16, k;
		struct shadow *n = pohm_busy_realloc(shadows, (size_t)ncap * sizeof(*n));

		if (!n) {
			r = -ENOMEM;
			goto out;
		}
		for (k = cap; k < ncap; k++)
			n[k].fd = -1;
		shadows = n;
		cap = ncap;
	}
	r = open_on(fd, &st, !(known && fresh == 1));
	if (r >= 0) {
		__atomic_add_fetch(&nshadows, 1, __ATOMIC_RELAXED);
		shadows[i].fd = r;
		shadows[i].host = fresh == 1 ? fd : -1;
		shadows[i].dev = st.st_dev;
		shadows[i].ino = st.st_ino;
	}
out:
	pohm_busy_unlock(&shadow_lock);
	return r;
}

int pohm_shadow_known(int fd, struct stat *st)
{
	int i, r = -ENOENT;

	if (!__atomic_load_n(&nshadows, __ATOMIC_RELAXED))
		return r;
	pohm_busy_lock(&shadow_lock);
	for (i = 0; i < cap; i++)
		if (shadows[i].fd >= 0 && shadows[i].host == fd) {
			memset(st, 0, sizeof(*st));
			st->st_dev = shadows[i].dev;
			st->st_ino = shadows[i].ino;
			st->st_mode = S_IFREG;
			r = 0;
			break;
		}
	pohm_busy_unlock(&shadow_lock);
	return r;
}

/* Does another fd in the table (not fd) name the inode (dev, ino)? */
static int other_host_fd(int fd, dev_t dev, ino_t ino)
{
	struct pohm_fd_info fi;
	struct stat st;
	int i, max = pohm_fd_max();

	for (i = 0; i <= max; i++)
		if (i != fd && pohm_fd_lookup(i, &fi) && !pohm_sys_fstat(i, &st) &&
		    st.st_dev == dev && st.st_ino == ino)
			return 1;
	return 0;
}

void pohm_shadow_host_closing(int fd, const struct stat *known)
{
	struct shadow *s;
	struct stat st;

	if (!__atomic_load_n(&nshadows, __ATOMIC_RELAXED))
		return;
	if (known)
		st = *known;
	else if (pohm_sys_fstat(fd, &st))
		return;
	if (!S_ISREG(st.st_mode))
		return;
	pohm_busy_lock(&shadow_lock);
	s = find(st.st_dev, st.st_ino);
	if (s && !other_host_fd(fd, st.st_dev, st.st_ino)) {
		if (valid(s))
			pohm_sys_close(s->fd);
		s->fd = -1;
		__atomic_sub_fetch(&nshadows, 1, __ATOMIC_RELAXED);
	} else if (s && s->host == fd) {
		s->host = -1;	/* the inode's other fds stay: fd's number goes */
	}
	pohm_busy_unlock(&shadow_lock);
}

void pohm_shadow_sweep(void)
{
	int i;

	if (!__atomic_load_n(&nshadows, __ATOMIC_RELAXED))
		return;
	pohm_busy_lock(&shadow_lock);
	for (i = 0; i < cap; i++) {
		if (shadows[i].fd < 0 || other_host_fd(-1, shadows[i].dev, shadows[i].ino))
			continue;
		if (valid(&shadows[i]))
			pohm_sys_close(shadows[i].fd);
		shadows[i].fd = -1;
		__atomic_sub_fetch(&nshadows, 1, __ATOMIC_RELAXED);
	}
	pohm_busy_unlock(&shadow_lock);
}

void pohm_shadow_atfork(enum pohm_fork_phase phase)
{
	if (phase == POHM_FORK_PREPARE)
		pohm_busy_lock(&shadow_lock);
	else
		pohm_busy_unlock(&shadow_lock);
}
