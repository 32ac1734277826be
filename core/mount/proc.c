/*
 * proc.c — the mounts of one host process (moved from
 * preload/hooks_cache.c, issue 20): heavy init, one mount per effective
 * uid, and the process's call counters (mount.h pohm_proc_*).
 *
 * The mounts: one per effective uid that made calls under the prefix (a
 * cache belongs to one user, DESIGN.md §2).  mounts[0] is opened by
 * heavy_init under pthread_once for the euid of the first call (its rc
 * says how it went).  A call made after a setuid or seteuid to another
 * user opens that user's mount on first use (mount_other: its cache_dir
 * is the user's own, mount_user.c), and a switch back finds the earlier
 * one again.  cfg_rc: how loading the configuration went (POHM_PROC_PASS
 * in passthrough tests); when it failed, every mount fails.  mounts_lock
 * guards opening (nmounts and the entries past it); an entry below
 * nmounts never changes again and is read without the lock (nmounts is
 * stored with release, loaded with acquire).  cfg is written by heavy_init
 * only; glue is set by the first pohm_proc_mount (every caller passes the
 * same).  The caches and clients inside are thread-safe themselves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount.h"
#include "sys.h"

extern char **environ;

struct proc_mount {
	struct pohm_mount m;	/* m.owner: the euid it serves */
	int rc;			/* 0, or -errno: its open failed (logged once) */
};

static struct proc_mount mounts[POHM_PROC_MOUNTS];
static int nmounts;
static pthread_mutex_t mounts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pohm_config cfg;
static int cfg_rc = -EAGAIN;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct pohm_proc_glue *glue;

/* The files this process wrote and did not push yet (core/cache dirty.c:
 * its own lock; moved from preload/hooks_cache.c): pushed at exit or exec
 * (closepush.c). */
static struct pohm_dirty proc_dirty = POHM_DIRTY_INIT;

/* This process's counters (stats.h): relaxed atomics, any thread. */
static struct pohm_stats proc_stats;
/* What pohm_proc_flush_stats last reported of each mount's cumulative
 * cache and network counters (the cache and client count from their open,
 * and a fork child inherits the parent's): a report is the difference, so
 * an exec attempt that fails, or a child's exit, does not report the same
 * pushes again.  Guarded by stats_lock; a fork child takes the values its
 * parent had as already reported. */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pohm_stats mount_reported[POHM_PROC_MOUNTS];

struct pohm_dirty *pohm_proc_dirty(void)
{
	return &proc_dirty;
}

int pohm_proc_count(enum pohm_stat k, int r)
{
	pohm_stat_add(&proc_stats, k, 1);
	switch (r) {
	case -EIO: case -ENOTCONN: case -ETIMEDOUT: case -ENOSPC: case -EDQUOT:
	case -ESTALE: case -ENOMEM: case -EAGAIN: case -EROFS:
		pohm_stat_add(&proc_stats, POHM_ST_ERRORS, 1);
		break;
	default:
		break;
	}
	return r;
}

/* An open failure of a mount as an errno for the calls: -ENOTCONN when no
 * server could be configured, -EACCES for a refused per-user cache_dir,
 * else -EIO. */
static int open_errno(int r, const char *err)
{
	if (r == -EINVAL && strstr(err, "server"))
		return -ENOTCONN;
	return r == -EACCES ? -EACCES : -EIO;
}

/* Open pm for the calling process's euid (held). */
static int mount_open(struct proc_mount *pm)
{
	char err[1024];
	int r;

	/* Another user's mount reaches the prefix through the first mount's
	 * directory fd, as the kernel lets a process use the handles it holds. */
	r = pohm_mount_open_like(&pm->m, &cfg,
				 pm != &mounts[0] && !mounts[0].rc ? &mounts[0].m : NULL, err,
				 sizeof(err));
	if (r) {
		pohm_err("%s; calls under the prefix fail until this is fixed", err);
		return pm->rc = open_errno(r, err);
	}
	pohm_mount_host_attach(&pm->m);
	pm->rc = 0;
	glue->opened(&pm->m, &cfg, pm == &mounts[0]);
	return 0;
}

static void heavy_init(void)
{
	const char *pt = pohm_sys_test_switch(POHM_TEST_PASSTHROUGH);	/* test builds */
	char err[1024];
	int r;

	if (pt && *pt && strcmp(pt, "0")) {
		cfg_rc = POHM_PROC_PASS;	/* test-only: the storage side stays out */
		return;
	}
	glue->hold();
	mounts[0].m.owner = pohm_sys_geteuid();
	r = pohm_config_load(&cfg, environ, err, sizeof(err));
	glue->configured(&cfg, !r);	/* before any line of ours */
	if (r) {
		pohm_err("%s; calls under the prefix fail until this is fixed", err);
		cfg_rc = mounts[0].rc = open_errno(r, err);
	} else {
		cfg_rc = 0;
		mount_open(&mounts[0]);
	}
	__atomic_store_n(&nmounts, 1, __ATOMIC_RELEASE);
	glue->unhold();
}

/* The mount of euid among the first n, or NULL. */
static struct proc_mount *mount_find(uid_t euid, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (mounts[i].m.owner == euid)
			return &mounts[i];
	return NULL;
}

/* The mount of euid, opened now if this is its first call (see above). */
static struct proc_mount *mount_other(uid_t euid)
{
	struct proc_mount *pm;
	int n;

	pthread_mutex_lock(&mounts_lock);
	n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);
	if (!(pm = mount_find(euid, n)) && n < POHM_PROC_MOUNTS) {
		pm = &mounts[n];
		memset(pm, 0, sizeof(*pm));
		pm->m.owner = euid;
		glue->hold();
		mount_open(pm);
		glue->unhold();
		__atomic_store_n(&nmounts, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mounts_lock);
	if (!pm) {
		static int said;	/* once per process; atomic */

		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			pohm_err("uid %u: this process switched between more than %d users; calls "
				 "under the prefix as this one fail with EACCES", (unsigned)euid,
				 POHM_PROC_MOUNTS);
	}
	return pm;
}

struct pohm_mount *pohm_proc_mount(const struct pohm_proc_glue *g, int *rc)
{
	struct proc_mount *pm;
	uid_t euid;

	if (!__atomic_load_n(&glue, __ATOMIC_RELAXED))
		__atomic_store_n(&glue, g, __ATOMIC_RELAXED);
	pthread_once(&once, heavy_init);
	if (cfg_rc) {
		*rc = cfg_rc;	/* passthrough tests, or no usable configuration */
		return NULL;
	}
	euid = pohm_sys_geteuid();
	if (euid == mounts[0].m.owner)
		pm = &mounts[0];
	else if (!(pm = mount_find(euid, __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE))))
		pm = mount_other(euid);
	*rc = pm ? pm->rc : -EACCES;
	return *rc ? NULL : &pm->m;
}

/* The open mount of the current euid, if any (never opens one). */
static struct proc_mount *mount_now(void)
{
	struct proc_mount *pm;
	int n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

	if (n == 0 || cfg_rc)
		return NULL;
	pm = mount_find(pohm_sys_geteuid(), n);
	return pm && !pm->rc ? pm : NULL;
}

struct pohm_mount *pohm_proc_mount_now(void)
{
	struct proc_mount *pm = mount_now();

	return pm ? &pm->m : NULL;
}

struct pohm_mount *pohm_proc_mount_of(const struct pohm_cache *c)
{
	int i, n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (mounts[i].m.cache == c && !mounts[i].rc)
			return &mounts[i].m;
	return NULL;
}

int pohm_proc_fds_relief(void)
{
	int i, r = 0, n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (!mounts[i].rc && mounts[i].m.cache)
			r |= pohm_cache_kept_drop(mounts[i].m.cache);
	return r;
}

void pohm_proc_settle_all(uint64_t deadline_ns)
{
	int i, n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (!mounts[i].rc && mounts[i].m.kv.ops && mounts[i].m.kv.ops->settle)
			mounts[i].m.kv.ops->settle(mounts[i].m.kv.ctx, deadline_ns);
}

struct pohm_mount *pohm_proc_mount_first(void)
{
	if (!__atomic_load_n(&nmounts, __ATOMIC_ACQUIRE) || mounts[0].rc)
		return NULL;
	return &mounts[0].m;
}

/* The cumulative counters of pm's cache and client (zero elsewhere). */
static void mount_counters(struct proc_mount *pm, struct pohm_stats *cur)
{
	struct pohm_cache_stats cs;
	struct pohm_net_counts nc;

	memset(cur, 0, sizeof(*cur));
	if (!pm->m.cache)
		return;		/* a mount whose open failed (a bad configuration) */
	pohm_cache_get_stats(pm->m.cache, &cs);
	cur->v[POHM_ST_MISSES] = cs.fetches;
	cur->v[POHM_ST_FETCHED_BYTES] = cs.fetched_bytes;
	cur->v[POHM_ST_PUSHES] = cs.pushes;
	cur->v[POHM_ST_PUSHED_BYTES] = cs.pushed_bytes;
	cur->v[POHM_ST_CONFLICTS] = cs.conflicts;
	cur->v[POHM_ST_RETRIES] = cs.retries;
	pohm_mount_net_counts(&pm->m, &nc);
	cur->v[POHM_ST_NET_WAITS] = nc.waits;
	cur->v[POHM_ST_NET_REQUESTS] = nc.requests;
	cur->v[POHM_ST_NET_SETUP_WAITS] = nc.setup_waits;
	cur->v[POHM_ST_NET_SETUP_REQUESTS] = nc.setup_requests;
}

void pohm_proc_atfork_child(void)
{
	int i, n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

	/* The child keeps every mount (its euid is the parent's); a mount
	 * another thread was opening at the fork stays unpublished. */
	pthread_mutex_init(&mounts_lock, NULL);
	pthread_mutex_init(&stats_lock, NULL);
	pohm_dirty_atfork_child(&proc_dirty);	/* the parent's files are the parent's */
	/* The parent's counts are the parent's to report. */
	memset(&proc_stats, 0, sizeof(proc_stats));
	for (i = 0; i < n; i++) {
		mounts[i].m.spawn_ns = 0;
		pohm_mount_atfork_child(&mounts[i].m);
		mount_counters(&mounts[i], &mount_reported[i]);
	}
}

void pohm_proc_flush_stats(int err_fd)
{
	struct pohm_stats st, cur;
	struct proc_mount *pm = mount_now();
	char buf[2048], title[4200];
	unsigned i;
	int any = 0, fd;
	size_t n;

	if (!pm)
		return;	/* counted in no cache_dir this user may write */
	for (i = 0; i < POHM_ST_COUNT; i++)
		st.v[i] = __atomic_exchange_n(&proc_stats.v[i], 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&stats_lock);
	mount_counters(pm, &cur);
	for (i = 0; i < POHM_ST_COUNT; i++)
		if (cur.v[i]) {
			st.v[i] = cur.v[i] - mount_reported[pm - mounts].v[i];
			mount_reported[pm - mounts].v[i] = cur.v[i];
		}
	pthread_mutex_unlock(&stats_lock);
	st.v[POHM_ST_HITS] = st.v[POHM_ST_OPEN] > st.v[POHM_ST_MISSES] ?
			     st.v[POHM_ST_OPEN] - st.v[POHM_ST_MISSES] : 0;
	for (i = 0; i < POHM_ST_COUNT; i++)
		any |= st.v[i] != 0;
	if (!any)
		return;
	pohm_stats_merge(pm->m.cache_dir, &st);
	if (!pohm_config_bool(&cfg, "stats"))
		return;
	snprintf(title, sizeof(title), "pohmelfs[%d]: calls under %s", (int)pohm_sys_getpid(),
		 pm->m.prefix);
	n = pohm_stats_format(buf, sizeof(buf), title, &st);
	if (cfg.log[0]) {
		if ((fd = pohm_log_fd()) >= 0)	/* the log= file, opened at heavy init */
			pohm_sys_write_full(fd, buf, n);
	} else if (err_fd >= 0) {
		pohm_sys_write_full(err_fd, buf, n);
	}
}
