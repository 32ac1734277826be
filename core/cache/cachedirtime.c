/*
 * cachedirtime.c — a directory's stored mtime and ctime follow its entries
 * (issue 18 case 4; doc/decisions/0015-dir-times.md).
 *
 * The entry change itself is one bucket CAS (nsops.c); the directory inode
 * is not part of it.  After a create, mkdir, mknod, symlink, link, unlink,
 * rmdir or rename has reached the storage, the cache moves the directory's
 * stored mtime and ctime to now with one setattr, unless the stored mtime
 * (as this host's journal knows it) is already younger than
 * POHM_DIR_TIME_LAG_NS: a burst of creates in one directory costs one extra
 * round trip per directory per window, never one per create, and the stored
 * mtime is never more than the window behind the last entry change made
 * through any cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "sys.h"

static uint64_t ts_ns(struct pohm_ts t)
{
	return (uint64_t)t.sec * 1000000000ULL + t.nsec;
}

/* The window; a test build may set it in seconds (cache_budget.bats counts
 * a call's own waits, whatever the load makes of a one-second window). */
uint64_t cache_dir_time_lag_ns(void)
{
	const char *t = pohm_sys_test_switch(POHM_TEST_DIR_TIME_LAG);

	return t ? strtoull(t, NULL, 10) * 1000000000ULL : POHM_DIR_TIME_LAG_NS;
}

void cache_dir_changed(struct pohm_cache *c, uint64_t dino)
{
	struct pohm_setattr sa = { 0 };
	struct pohm_inode in;
	struct pohm_jrec rec;
	uint64_t now = pohm_sys_real_ns(), m;
	int saved = errno, r;

	if (pohm_journal_get(&c->j, dino, &rec))
		return;		/* a directory this cache never recorded: its next walk reads it */
	m = ts_ns(rec.mtime);
	if (!S_ISDIR(rec.mode) || (m <= now && now - m < cache_dir_time_lag_ns()))
		goto out;
	sa.mask = POHM_SET_MTIME | POHM_SET_CTIME;
	sa.mtime.sec = now / 1000000000ULL;
	sa.mtime.nsec = (uint32_t)(now % 1000000000ULL);
	sa.ctime = sa.mtime;
	/* Based: a newer stored mtime (another host's, a clock ahead of
	 * ours) is never moved back to this host's now (issue 18). */
	sa.based = POHM_SET_MTIME;
	sa.base_mtime = rec.mtime;
	r = pohm_ns_setattr(c->ns, dino, &sa, &in);
	if (r) {
		pohm_debug("directory %llu: mtime not moved (%s)", (unsigned long long)dino,
			   strerror(-r));
		goto out;
	}
	/* This host shows the new times at once, in the record as it is now
	 * (rec is older than the setattr: another process may have listed the
	 * directory or recorded a newer version meanwhile, issue 18); its
	 * local state and flags (LISTED) stay. */
	pohm_journal_note_stored(&c->j, &in);
	pohm_inode_clear(&in);
out:
	pohm_jrec_clear(&rec);
	errno = saved;
}
