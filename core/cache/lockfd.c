/*
 * lockfd.c — the open file descriptions of cache_dir's lock files (w.lock,
 * p.lock, c.lock) a process keeps between uses (issue 23: a create opened
 * and closed each of them once, 9 calls of its 60-odd).
 *
 * Every lock of these files is an OFD lock (decision 0016): it belongs to
 * the open file description, so one holder (a thread's push turn or create
 * mark, one inode's open-for-write lock) needs a description no other
 * holder uses, or the first to release would release the other's byte
 * too, and two holders of one description would not exclude each other.
 * So a holder takes a description of its own here (a kept one, or a new
 * open), and gives it back with its locks released (one F_UNLCK over the
 * whole file instead of a close); a kept one holds no lock.  At most
 * LF_KEEP are kept per file; more are closed.
 *
 * fork: the child's copies of the kept descriptions are the parent's
 * descriptions too (a lock the child took on one would be the parent's
 * as well, and the parent's F_UNLCK would release it): the child closes
 * them at once (cache_lockfds_atfork_child), which leaves the parent's
 * alone (a description goes with its last fd).  A description in use at
 * the fork is its holder's business (writer.c re-takes the child's
 * open-for-write locks on descriptions of its own).  The child of a
 * single-threaded process does that only at its first use of the storage
 * (decision 0066), possibly never, so the parent side does not rely on it:
 * every fork counts in lf_forks (pohm_cache_fork_mark, from the fork
 * handlers), and a description from before the latest fork is closed, not
 * lent (cache_lockfd_take: a lock set on it would be the child's copy's
 * too and outlive the holder).  Its age is the count its take saw, handed
 * back to cache_lockfd_give: a description lent across a fork (another
 * thread forked, or a signal handler did, while its holder held it) is the
 * child's too, since the child closes only the kept ones; give closes it,
 * and one given back just as a fork happens keeps its take's count, so the
 * next take closes it (decision 0065, review 2).  writer.c closes, never
 * unlocks, a writer's description from before a fork (decisions 0065,
 * 0066: corrections).
 * exec: they are close-on-exec.  A program that closes every fd: kept ones
 * sit at or above POHM_FD_BASE, close-on-exec, registered in ownfd
 * (preload/fdkeep.c keeps them from a close_range).
 *
 * Guards: `mu` guards the kept fds (slots in ownfd: their addresses never
 * move, the struct is one allocation).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "sys.h"

#define LF_KEEP 4	/* kept per lock file: threads holding one at once */

static const char *const lf_name[CACHE_LF_N] = { "w.lock", "p.lock", "c.lock" };

struct cache_lockfds {
	pthread_mutex_t mu;
	int fd[CACHE_LF_N][LF_KEEP];	/* -1: none kept in the slot */
	unsigned gen[CACHE_LF_N][LF_KEEP];	/* lf_forks when it was taken */
};

/* Atomic: forks this process made since it first opened a lock file
 * description (lf_used), counted by its fork handlers (prepare and parent:
 * a description made between the two is older than the fork too); the
 * child inherits the count.  A process that never opened one writes
 * neither: its forks fault no page of ours in the parent (fork_faults,
 * decision 0059). */
static unsigned lf_forks;
static int lf_used;	/* atomic: set once, before the first open */

void pohm_cache_fork_mark(void)
{
	if (__atomic_load_n(&lf_used, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&lf_forks, 1, __ATOMIC_SEQ_CST);
}

unsigned cache_fork_gen(void)
{
	return __atomic_load_n(&lf_forks, __ATOMIC_ACQUIRE);
}

int cache_lockfds_init(struct pohm_cache *c)
{
	struct cache_lockfds *l = calloc(1, sizeof(*l));
	int f, i;

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->mu, NULL);
	for (f = 0; f < CACHE_LF_N; f++)
		for (i = 0; i < LF_KEEP; i++)
			l->fd[f][i] = -1;
	c->lf = l;
	return 0;
}

void cache_lockfds_close(struct pohm_cache *c)
{
	struct cache_lockfds *l = c->lf;
	int f, i;

	if (!l)
		return;
	for (f = 0; f < CACHE_LF_N; f++)
		for (i = 0; i < LF_KEEP; i++)
			pohm_own_close(&l->fd[f][i]);
	pthread_mutex_destroy(&l->mu);
	free(l);
	c->lf = NULL;
}

void cache_lockfds_atfork_child(struct pohm_cache *c)
{
	struct cache_lockfds *l = c->lf;
	int f, i;

	if (!l)
		return;
	pthread_mutex_init(&l->mu, NULL);
	for (f = 0; f < CACHE_LF_N; f++)
		for (i = 0; i < LF_KEEP; i++)
			pohm_own_close(&l->fd[f][i]);	/* the parent's stay open */
}

int cache_lockfd_take(struct pohm_cache *c, enum cache_lockfile f, unsigned *genp)
{
	struct cache_lockfds *l = c->lf;
	unsigned gen = cache_fork_gen();
	int i, fd = -1;

	*genp = gen;	/* read before the take: the description is no older */
	pthread_mutex_lock(&l->mu);
	for (i = 0; i < LF_KEEP && fd < 0; i++) {
		if (l->fd[f][i] < 0)
			continue;
		if (l->gen[f][i] != gen)
			pohm_own_close(&l->fd[f][i]);	/* a fork child may hold a copy */
		else
			fd = pohm_own_release(&l->fd[f][i]);	/* the caller's now */
	}
	pthread_mutex_unlock(&l->mu);
	if (fd >= 0)
		return fd;
	if (!__atomic_load_n(&lf_used, __ATOMIC_RELAXED))
		__atomic_store_n(&lf_used, 1, __ATOMIC_SEQ_CST);	/* forks count from here */
	fd = pohm_journal_open_own(c->j.dirfd, lf_name[f], O_RDWR | O_CREAT);
	return fd < 0 ? fd : pohm_sys_move_high(fd);
}

void cache_lockfd_give(struct pohm_cache *c, enum cache_lockfile f, int fd, unsigned gen)
{
	struct cache_lockfds *l = c->lf;
	struct flock fl;
	int i;

	if (fd < 0)
		return;
	if (gen != cache_fork_gen()) {
		pohm_sys_close(fd);	/* a fork child may hold a copy: never unlocked, never lent */
		return;
	}
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_UNLCK;
	fl.l_whence = SEEK_SET;	/* l_len 0: every byte */
	if (pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl)) {
		pohm_sys_close(fd);	/* the close releases them */
		return;
	}
	pthread_mutex_lock(&l->mu);
	for (i = 0; i < LF_KEEP; i++)
		if (l->fd[f][i] < 0) {
			l->gen[f][i] = gen;	/* the take's: a fork since then shows at the next take */
			pohm_own_set(&l->fd[f][i], fd);
			fd = -1;
			break;
		}
	pthread_mutex_unlock(&l->mu);
	if (fd >= 0)
		pohm_sys_close(fd);
}
