/*
 * stats.h — counters of one process (calls under the prefix by kind, cache
 * hits and misses, bytes moved, failures of the storage or the cache), and
 * their running total per cache in cache_dir/stats, which every process adds
 * to when it exits.
 * `pohmelfs stats` prints the total; stats=1 prints a process's own table
 * at its exit (like DAOS's interception report).
 */
#ifndef POHM_CORE_STATS_H
#define POHM_CORE_STATS_H

#include <stdint.h>
#include <stddef.h>

enum pohm_stat {
	POHM_ST_OPEN, POHM_ST_CREATE, POHM_ST_STAT, POHM_ST_LOOKUP, POHM_ST_READDIR,
	POHM_ST_NS, POHM_ST_ATTR, POHM_ST_CLOSE, POHM_ST_SYNC,
	POHM_ST_HITS, POHM_ST_MISSES, POHM_ST_FETCHED_BYTES,
	POHM_ST_PUSHES, POHM_ST_PUSHED_BYTES, POHM_ST_CONFLICTS,
	POHM_ST_RETRIES, POHM_ST_ERRORS,
	/* The client's work (core/net pohm_net_counts): times a call waited for
	 * replies and requests it sent; connection setup (handshake, ping,
	 * route list) apart.  Issue 23's round-trip budget counts these. */
	POHM_ST_NET_WAITS, POHM_ST_NET_REQUESTS, POHM_ST_NET_SETUP_WAITS,
	POHM_ST_NET_SETUP_REQUESTS,
	POHM_ST_COUNT
};

/* Counters; a process's own are updated with relaxed atomics (any thread). */
struct pohm_stats {
	uint64_t v[POHM_ST_COUNT];
};

/* The counter's name in reports ("open", "cache_hits", ...). */
const char *pohm_stat_name(enum pohm_stat s);
/* Add n to counter s of st (thread-safe). */
void pohm_stat_add(struct pohm_stats *st, enum pohm_stat s, uint64_t n);
/* Add add into cache_dir/stats under its lock (atomic replace). 0 or -errno. */
int pohm_stats_merge(const char *cache_dir, const struct pohm_stats *add);
/* Read cache_dir/stats (all zero if missing). 0, or -errno (-EIO if malformed). */
int pohm_stats_load(const char *cache_dir, struct pohm_stats *out);
/* One compact table of the non-zero counters under a title line into buf; its length. */
size_t pohm_stats_format(char *buf, size_t len, const char *title, const struct pohm_stats *st);

#endif
