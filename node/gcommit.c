/*
 * gcommit.c — the store's sync policy: interval thread or group commit
 * (see gcommit.h).
 *
 * Group commit is ticket based.  Each write takes ticket = ++issued after
 * its bytes are in the page cache.  A sync that starts when issued == T
 * covers tickets <= T; when it ends, done = T.  A writer waits while
 * done < its ticket: if no sync is running it runs one itself (the leader),
 * else it sleeps until the running one ends and checks again.  So a sync
 * never covers less than it claims, and every writer that arrived while
 * one sync ran is covered by the next one, run by one of them.
 *
 * Gathering: with steady concurrent writers the groups would alternate
 * between one writer (the first to come back after a sync starts the next
 * one alone) and all the others.  So when the last sync covered several
 * writes, a new leader first waits, at most as long as the last sync took
 * (and never more than GATHER_MAX_NS), until as many writes are pending as
 * the last sync covered.  A lone writer never waits.
 */
#include "gcommit.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "sys.h"

#define GATHER_MAX_NS	2000000ull	/* 2 ms */

/* CLOCK_MONOTONIC in ns. */
static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct node_gcommit {
	int interval;
	int (*sync_fn)(void *);
	void *arg;
	/* Everything below is guarded by lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a sync ended, or stop */
	uint64_t issued;		/* tickets handed out (= writes) */
	uint64_t done;			/* every ticket <= done is durable */
	uint64_t failed;		/* tickets <= failed saw a failed sync */
	int failed_err;
	int running;			/* a sync is in progress (or gathering) */
	int gathering;			/* the leader waits for more writes */
	uint64_t last_group;		/* writes the last sync covered */
	uint64_t last_ns;		/* how long it took */
	uint64_t syncs;
	int stop;
	int have_thread;
	pthread_t thread;
};

/* Run one sync covering every ticket issued so far; called and returns with lock held. */
static int run_sync(struct node_gcommit *g)
{
	uint64_t upto = g->issued, t0;
	int ret;

	g->running = 1;
	pthread_mutex_unlock(&g->lock);
	t0 = mono_ns();
	ret = g->sync_fn(g->arg);
	g->last_ns = mono_ns() - t0;
	pthread_mutex_lock(&g->lock);
	g->running = 0;
	g->last_group = upto - g->done;
	g->syncs++;
	if (ret) {
		g->failed = upto;
		g->failed_err = ret;
	} else if (upto > g->done) {
		g->done = upto;
	}
	pthread_cond_broadcast(&g->cond);
	return ret;
}

/* The interval thread: sync every interval seconds when something was written. */
static void *interval_main(void *arg)
{
	struct node_gcommit *g = arg;
	struct timespec until;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += g->interval;
		while (!g->stop &&
		       pthread_cond_timedwait(&g->cond, &g->lock, &until) != ETIMEDOUT)
			;
		if (g->stop)
			break;
		if (g->issued > g->done && !g->running) {
			int ret = run_sync(g);

			if (ret)
				pohm_warn("store: periodic sync failed: %d", ret);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* See gcommit.h. */
struct node_gcommit *node_gcommit_new(int interval, int (*sync_fn)(void *), void *arg)
{
	struct node_gcommit *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	g->interval = interval;
	g->sync_fn = sync_fn;
	g->arg = arg;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (interval > 0) {
		if (pthread_create(&g->thread, NULL, interval_main, g)) {
			node_gcommit_free(g);
			return NULL;
		}
		g->have_thread = 1;
	}
	return g;
}

/* See gcommit.h. */
void node_gcommit_free(struct node_gcommit *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (g->have_thread)
		pthread_join(g->thread, NULL);
	node_gcommit_flush(g);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* The leader's wait for more writes (see the top); lock held. */
static void gather(struct node_gcommit *g)
{
	uint64_t wait = g->last_ns < GATHER_MAX_NS ? g->last_ns : GATHER_MAX_NS, end;
	struct timespec until;

	if (g->last_group < 2 || g->issued - g->done >= g->last_group)
		return;
	g->running = 1;		/* the others wait for this leader's sync */
	g->gathering = 1;
	end = mono_ns() + wait;
	until.tv_sec = (time_t)(end / 1000000000ull);
	until.tv_nsec = (long)(end % 1000000000ull);
	while (g->issued - g->done < g->last_group && !g->stop &&
	       pthread_cond_timedwait(&g->cond, &g->lock, &until) != ETIMEDOUT)
		;
	g->gathering = 0;
	g->running = 0;
}

/* See gcommit.h. */
int node_gcommit_wrote(struct node_gcommit *g)
{
	uint64_t ticket;
	int ret = 0;

	pthread_mutex_lock(&g->lock);
	ticket = ++g->issued;
	if (g->gathering)
		pthread_cond_broadcast(&g->cond);
	while (g->interval == 0 && g->done < ticket) {
		if (g->failed >= ticket) {
			ret = g->failed_err;
			break;
		}
		if (!g->running) {
			gather(g);
			run_sync(g);	/* its error is seen through failed */
		} else {
			pthread_cond_wait(&g->cond, &g->lock);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return ret;
}

/* See gcommit.h. */
int node_gcommit_flush(struct node_gcommit *g)
{
	int ret = 0;

	pthread_mutex_lock(&g->lock);
	while (g->running)
		pthread_cond_wait(&g->cond, &g->lock);
	if (g->interval >= 0 && g->issued > g->done)
		ret = run_sync(g);
	pthread_mutex_unlock(&g->lock);
	return ret;
}

/* See gcommit.h. */
void node_gcommit_stats(struct node_gcommit *g, uint64_t *writes, uint64_t *syncs)
{
	pthread_mutex_lock(&g->lock);
	*writes = g->issued;
	*syncs = g->syncs;
	pthread_mutex_unlock(&g->lock);
}
