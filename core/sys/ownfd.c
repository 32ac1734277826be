/*
 * ownfd.c — the registry of the library's own long-lived fds (ownfd.h).
 */
#include "ownfd.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>

#define OWN_MAX 256

struct own_ent {
	int *slot;	/* NULL: free entry */
	int fd;		/* atomic: the registered number, -1 none */
};

/* Entries: fd read lock-free; slot and changes of fd under own_lock. */
static struct own_ent own_tab[OWN_MAX] = { [0 ... OWN_MAX - 1] = { NULL, -1 } };
/* Guards own_tab's slots and every write of an entry's fd and of *slot. */
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((weak)) void pohm_own_noted(int fd)
{
	(void)fd;
}

static struct own_ent *find_slot(int *slot)
{
	int i;

	for (i = 0; i < OWN_MAX; i++)
		if (own_tab[i].slot == slot)
			return &own_tab[i];
	return NULL;
}

int pohm_own_set(int *slot, int fd)
{
	struct own_ent *e;
	int r = 0;

	pthread_mutex_lock(&own_lock);
	e = find_slot(slot);
	if (!e && fd >= 0) {
		e = find_slot(NULL);
		if (e)
			e->slot = slot;
		else
			r = -ENOSPC;
	}
	if (fd >= 0)
		pohm_own_noted(fd);	/* before the fd is registered */
	if (e)
		__atomic_store_n(&e->fd, fd, __ATOMIC_RELEASE);
	__atomic_store_n(slot, fd, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&own_lock);
	return r;
}

int pohm_own_release(int *slot)
{
	struct own_ent *e;
	int fd;

	pthread_mutex_lock(&own_lock);
	e = find_slot(slot);
	if (e) {
		__atomic_store_n(&e->fd, -1, __ATOMIC_RELEASE);
		e->slot = NULL;
	}
	fd = *slot;
	*slot = -1;
	pthread_mutex_unlock(&own_lock);
	return fd;
}

void pohm_own_close(int *slot)
{
	int fd = pohm_own_release(slot);

	if (fd >= 0)
		pohm_sys_close(fd);
}

int pohm_own_is(int fd)
{
	int i;

	if (fd < 0)
		return 0;
	for (i = 0; i < OWN_MAX; i++)
		if (__atomic_load_n(&own_tab[i].fd, __ATOMIC_ACQUIRE) == fd)
			return 1;
	return 0;
}

int pohm_own_first_in(unsigned lo, unsigned hi)
{
	int i, fd, best = -1;

	for (i = 0; i < OWN_MAX; i++) {
		fd = __atomic_load_n(&own_tab[i].fd, __ATOMIC_ACQUIRE);
		if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi && (best < 0 || fd < best))
			best = fd;
	}
	return best;
}

int pohm_own_evict(int fd)
{
	int i, nfd, r = 0;

	if (fd < 0)
		return 0;
	pthread_mutex_lock(&own_lock);
	for (i = 0; i < OWN_MAX; i++) {
		if (!own_tab[i].slot || __atomic_load_n(&own_tab[i].fd, __ATOMIC_ACQUIRE) != fd)
			continue;
		nfd = pohm_sys_fcntl(fd, F_DUPFD_CLOEXEC, POHM_FD_BASE);
		if (nfd < 0) {
			r = nfd;
			break;
		}
		pohm_own_noted(nfd);
		__atomic_store_n(&own_tab[i].fd, nfd, __ATOMIC_RELEASE);
		__atomic_store_n(own_tab[i].slot, nfd, __ATOMIC_RELEASE);
		/* The old number is left to the host's dup2, which replaces it
		 * atomically; closing it here would let another thread's open
		 * take it first. */
		r = 1;
		break;
	}
	pthread_mutex_unlock(&own_lock);
	return r;
}

void pohm_own_atfork_child(void)
{
	pthread_mutex_init(&own_lock, NULL);
}
