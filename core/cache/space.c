/*
 * space.c — room on a full disk, from a host process (moved from
 * preload/hooks_cache.c, issue 18/20).  The eviction itself never runs in
 * a host process: it takes leases, whose breaks signal the lease holder,
 * and a host must not get signals from us.  pohmelfsd evicts; a host asks
 * it through its wake FIFO and waits.
 */
#include <errno.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cache.h"
#include "sys.h"

/* Free bytes on the prefix's filesystem (0 when it cannot be asked). */
static uint64_t prefix_free(struct pohm_cache *c)
{
	struct statfs sfs;

	if (pohm_sys_fstatfs(pohm_cache_prefix_fd(c), &sfs))
		return 0;
	return (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
}

int pohm_cache_room(struct pohm_cache *c, uint64_t need, uint64_t *last_ns)
{
	unsigned mib = (unsigned)((need >> 20) + 1 < 0x7fffffff ? (need >> 20) + 1 : 0x7fffffff);
	uint64_t t0;
	int r;

	/* Through its wake FIFO (no pid, no signal); started if it does not
	 * run, and given 2 s to open the FIFO. */
	r = pohm_cache_daemon_ask_room(c, mib);
	for (t0 = pohm_sys_mono_ns(); r == -ESRCH && pohm_sys_mono_ns() - t0 < 2000000000ULL;) {
		if (last_ns && !pohm_cache_daemon_running(c)) {
			/* it left when idle: start it again */
			__atomic_store_n(last_ns, 0, __ATOMIC_RELAXED);
			pohm_cache_daemon_start(c, last_ns);
		}
		pohm_sys_nap_ns(20000000ULL);
		r = pohm_cache_daemon_ask_room(c, mib);
	}
	if (r)
		return -ENOSPC;
	for (t0 = pohm_sys_mono_ns(); pohm_sys_mono_ns() - t0 < 5000000000ULL;) {
		if (prefix_free(c) >= need)
			return 0;
		pohm_sys_nap_ns(20000000ULL);
	}
	return -ENOSPC;
}
