/*
 * host.c — a mount as a host process uses it (moved from
 * preload/hooks_cache.c, issue 18/20): pohmelfsd started for it as its
 * owner, room asked of pohmelfsd when the disk is full, and the umask
 * applied to the modes of new objects.  pohmelfsd and the tools open
 * mounts too, but never call these.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"
#include "sys.h"

void pohm_mount_daemon_start(struct pohm_mount *m)
{
	if (pohm_sys_geteuid() == m->owner)
		pohm_cache_daemon_start(m->cache, &m->spawn_ns);
}

/*
 * The cache's space callback (pohm_cache_set_space_fn).  need == 0: data
 * was fetched; with cache_size or cache_min_free set, pohmelfsd must run
 * to keep the bounds.  need > 0: the disk is full; pohm_cache_room asks
 * pohmelfsd (started if it does not run, as the owner only) for that much.
 */
static int host_space(void *arg, uint64_t need)
{
	struct pohm_mount *m = arg;

	if (!need) {
		if (m->bounded)
			pohm_mount_daemon_start(m);
		return 0;
	}
	return pohm_cache_room(m->cache, need,
			       pohm_sys_geteuid() == m->owner ? &m->spawn_ns : NULL);
}

void pohm_mount_host_attach(struct pohm_mount *m)
{
	pohm_cache_set_space_fn(m->cache, host_space, m);
	pohm_cache_set_follow_fn(m->cache, pohm_cache_sigq_follow);
	pohm_cache_set_absent_fn(m->cache, pohm_cache_sigq_absent);
	pohm_mount_offline_load(m);
	/* DESIGN §3: what an unclean shutdown left dirty is pushed when the
	 * cache is next used, by whatever process uses it first. */
	if (pohm_cache_boot_dirty(m->cache))
		pohm_mount_daemon_start(m);
}

mode_t pohm_mount_new_mode(mode_t mode)
{
	/* Read once, again after each umask(3) (preload/creds.c's wrapper;
	 * issue 23: /proc/self/status was 3 calls a create). */
	return (mode & S_IFMT) | (mode & 07777 & ~pohm_sys_umask_kept());
}
