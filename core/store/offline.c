/*
 * offline.c — the kv seam's offline decision and its errno boundary
 * (io.h pohm_client_offline, io_int.h).
 *
 * "No group answers" is decided from what the connection layer heard: a
 * call that failed while no node sent a single packet since it started
 * (pohm_net_last_rx_ns) did not reach the storage at all.  A failure with
 * some answer (a group short of a quorum, a CAS split) is an ordinary
 * -EIO, not offline.  Offline, calls do not wait for connects: a window of
 * OFFLINE_MIN_NS, doubling up to OFFLINE_MAX_NS while it lasts, in which
 * every kv call fails with -EIO at once while no node is connected (a
 * connected but silent one is still asked); one call after it probes.  The
 * layers above (core/cache) ask pohm_client_offline to serve their clean
 * copies instead of failing.
 *
 * The boundary: whatever the kv seam returns carries no network errno
 * (io_net_errno); they all become -EIO here, so none reaches a host
 * program's errno through core/ns or core/cache.
 */
#include <errno.h>
#include <string.h>

#include "io_int.h"
#include "sys.h"
#include "net.h"

#define OFFLINE_MIN_NS 1000000000ULL
#define OFFLINE_MAX_NS 5000000000ULL

/* The offline warning was logged by this process (once; atomic). */
static int offline_said;

int io_net_errno(int r)
{
	switch (r) {
	case -EHOSTUNREACH: case -ECONNREFUSED: case -ETIMEDOUT: case -ENOTCONN:
	case -ECONNRESET: case -EPIPE: case -ENETUNREACH: case -ENETDOWN: case -ENETRESET:
	case -EHOSTDOWN: case -ECONNABORTED: case -EADDRNOTAVAIL: case -ECANCELED:
	case -EPROTO: case -ENXIO:
		return -EIO;
	default:
		return r;
	}
}

int pohm_client_offline(struct pohm_client *c)
{
	uint64_t until = __atomic_load_n(&c->offline_until_ns, __ATOMIC_RELAXED);

	return until && pohm_sys_mono_ns() < until;
}

void pohm_client_offline_hook(struct pohm_client *c,
			      void (*fn)(void *arg, uint64_t until_ns, uint64_t step_ns), void *arg)
{
	c->offline_fn = fn;
	c->offline_arg = arg;
}

void pohm_client_offline_seed(struct pohm_client *c, uint64_t until_ns, uint64_t step_ns)
{
	if (until_ns <= pohm_sys_mono_ns() || !step_ns)
		return;
	if (step_ns > OFFLINE_MAX_NS)
		step_ns = OFFLINE_MAX_NS;
	if (until_ns > pohm_sys_mono_ns() + step_ns)
		until_ns = pohm_sys_mono_ns() + step_ns;	/* never longer than a window */
	__atomic_store_n(&c->offline_step_ns, step_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&c->offline_until_ns, until_ns, __ATOMIC_RELAXED);
}

/* Is this client connected to some node (handshake done, connection up)? */
static int any_node_up(struct pohm_net *net)
{
	struct pohm_node_info ni;
	int i, n = pohm_net_nodes(net);

	for (i = 0; i < n; i++)
		if (!pohm_net_node_info(net, i, &ni) && ni.up)
			return 1;
	return 0;
}

int io_offline_gate(struct pohm_client *c, uint64_t *t0)
{
	uint64_t now = pohm_sys_mono_ns();
	uint64_t until = __atomic_load_n(&c->offline_until_ns, __ATOMIC_RELAXED);
	uint64_t step = __atomic_load_n(&c->offline_step_ns, __ATOMIC_RELAXED);

	*t0 = now;
	if (!until)
		return 0;
	/*
	 * Connected but silent nodes (stopped, or only slow: a loaded host, a
	 * sanitizer build) are still asked: the cache serves its clean copies
	 * meanwhile (pohm_client_offline), but a call that goes to the
	 * storage waits its timeout as before.  Failing at once here turned
	 * one slow answer into seconds of EIO for every namespace change
	 * (ns_replicas under load: a worker's creates all failed).  Only a
	 * storage no node of which is connected fails at once.
	 */
	if (any_node_up(c->net))
		return 0;
	if (now < until)
		return -EIO;
	/* The window is over: the caller that moves it on probes, the others
	 * stay offline meanwhile (a probe may wait for a connect). */
	if (__atomic_compare_exchange_n(&c->offline_until_ns, &until, now + (step ? step : OFFLINE_MIN_NS),
					0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return 0;
	return -EIO;
}

/* Errors that say "not reached", as opposed to an answer (ENOENT, EEXIST...). */
static int unreached(int r)
{
	return r == -EIO || io_net_errno(r) == -EIO;
}

int io_offline_settle(struct pohm_client *c, uint64_t t0, int r)
{
	struct pohm_net *net = c->net;
	uint64_t step, now;
	char why[300];

	if (r < 0 && unreached(r) && pohm_net_last_rx_ns(net) < t0) {
		step = __atomic_load_n(&c->offline_step_ns, __ATOMIC_RELAXED);
		step = !step ? OFFLINE_MIN_NS : step * 2 > OFFLINE_MAX_NS ? OFFLINE_MAX_NS : step * 2;
		now = pohm_sys_mono_ns();
		__atomic_store_n(&c->offline_step_ns, step, __ATOMIC_RELAXED);
		__atomic_store_n(&c->offline_until_ns, now + step, __ATOMIC_RELAXED);
		if (c->offline_fn)
			c->offline_fn(c->offline_arg, now + step, step);
		if (!__atomic_exchange_n(&offline_said, 1, __ATOMIC_RELAXED)) {
			pohm_net_last_error(net, why, sizeof(why));
			pohm_warn("fsid=%s: no node answers (%s): offline; cached files are served as "
				  "last validated, writes to them stay in the cache until it answers, "
				  "calls that need the storage fail with EIO; trying again every %g to "
				  "%g s", c->cfg->fsid, why[0] ? why : strerror(-r),
				  OFFLINE_MIN_NS / 1e9, OFFLINE_MAX_NS / 1e9);
		}
	} else if (pohm_net_last_rx_ns(net) >= t0) {
		/* Some node answered (a success always has an answer): online. */
		if (__atomic_exchange_n(&c->offline_until_ns, 0, __ATOMIC_RELAXED)) {
			__atomic_store_n(&c->offline_step_ns, 0, __ATOMIC_RELAXED);
			if (c->offline_fn)
				c->offline_fn(c->offline_arg, 0, 0);
			pohm_info("fsid=%s: the storage answers again: online", c->cfg->fsid);
		}
	}
	return io_net_errno(r);
}
