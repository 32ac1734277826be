/*
 * gcommit.h — when the store's writes reach the disk: on an interval, at
 * every write with group commit, or never.
 *
 * Modes (the node's `sync_interval` and `nosync` settings):
 *   interval > 0   a write returns once it is in the page cache; a thread
 *                  makes everything durable every `interval` seconds (the
 *                  way eblob runs by default).  A killed process loses
 *                  nothing (the page cache survives it); a host crash loses
 *                  at most the last interval, which replicas in other groups
 *                  cover.
 *   interval == 0  a write returns once it is durable.  Group commit: one
 *                  sync runs at a time, and it covers every write that
 *                  reached the page cache before it started, so N writers
 *                  arriving while a sync runs share the next one.
 *   interval < 0   never sync (nosync: benchmarks and throw-away clusters).
 */
#ifndef POHM_NODE_GCOMMIT_H
#define POHM_NODE_GCOMMIT_H

#include <stdint.h>

struct node_gcommit;

/*
 * Start the policy.  sync_fn(arg) makes every byte written so far durable
 * (0 or -errno); it may run on any thread, never twice at once.  NULL on
 * failure (no memory, no thread).
 */
struct node_gcommit *node_gcommit_new(int interval, int (*sync_fn)(void *), void *arg);

/*
 * Stop the interval thread, sync once more if anything was written since
 * the last sync (unless interval < 0), and free.  NULL is a no-op.
 */
void node_gcommit_free(struct node_gcommit *g);

/*
 * A write has reached the page cache.  interval == 0: wait until a sync that
 * started after this call finished (0, or the sync's -errno); otherwise note
 * the store is dirty and return 0 at once.
 */
int node_gcommit_wrote(struct node_gcommit *g);

/*
 * Make everything written so far durable now (unless interval < 0), e.g. at
 * a clean shutdown.  0 or the sync's -errno.
 */
int node_gcommit_flush(struct node_gcommit *g);

/* Counters since start: calls of node_gcommit_wrote and syncs run. */
void node_gcommit_stats(struct node_gcommit *g, uint64_t *writes, uint64_t *syncs);

#endif
