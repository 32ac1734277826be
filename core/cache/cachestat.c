/*
 * cachestat.c — the stat overlay: a local file's stat shown as the stored
 * inode's (its number, device, owner, and a stub's or directory's mode,
 * size and times) from its journal record.  (Moved out of cache.c in
 * session 13, issue 20.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

/* ---------------------------------------------------------------- stat overlay */

/* The stored access, change and modification times of rec into st. */
static void stat_times(struct stat *st, const struct pohm_jrec *rec)
{
	st->st_atim.tv_sec = rec->atime.sec;
	st->st_atim.tv_nsec = rec->atime.nsec;
	st->st_mtim.tv_sec = rec->mtime.sec;
	st->st_mtim.tv_nsec = rec->mtime.nsec;
	st->st_ctim.tv_sec = rec->ctime.sec;
	st->st_ctim.tv_nsec = rec->ctime.nsec;
}

void cache_stat_fix_ino(struct pohm_cache *c, struct stat *st, uint64_t *known)
{
	struct pohm_jrec rec;
	uint64_t ino = *known;

	*known = 0;
	if ((uint64_t)st->st_dev != c->pdev)
		return;
	/* A known inode saves the index read (issue 23: a stat within
	 * attr_timeout); its record must name this very local inode. */
	if (ino && !pohm_journal_get(&c->j, ino, &rec)) {
		if (rec.lino == (uint64_t)st->st_ino)
			goto found;
		pohm_jrec_clear(&rec);
	}
	if (pohm_journal_lookup_local(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino))
		return;		/* not known (staging, or made without the shim): leave it */
	if (pohm_journal_get(&c->j, ino, &rec))
		return;
	if (cache_index_stale(&rec, st)) {
		pohm_jrec_clear(&rec);	/* a stale index entry: not ours to describe */
		return;
	}
found:
	*known = ino;
	st->st_ino = (ino_t)ino;
	st->st_dev = (dev_t)c->dev;
	if ((rec.flags & POHM_J_STUB) || !c->is_root) {
		st->st_uid = rec.uid;
		st->st_gid = rec.gid;
	}
	if (rec.flags & POHM_J_STUB) {
		st->st_mode = rec.mode;
		st->st_size = (off_t)rec.size;
		st->st_blocks = (blkcnt_t)((rec.size + 511) / 512);
		st->st_nlink = rec.nlink;
		stat_times(st, &rec);
	} else if (S_ISDIR(rec.mode)) {
		/*
		 * Local directories keep u+rwx for the cache's own use, and their
		 * times move when a fetch renames a file into them: show the
		 * stored mode and times (entry changes move the stored ones,
		 * cachedirtime.c).
		 */
		st->st_mode = rec.mode;
		stat_times(st, &rec);
	}
	/* The link count is the storage's: local hardlinks are made lazily. */
	if (rec.nlink)
		st->st_nlink = rec.nlink;
	pohm_jrec_clear(&rec);
}

void pohm_cache_stat_fix(struct pohm_cache *c, struct stat *st)
{
	uint64_t ino = 0;

	/* The file this thread just recorded (a create's fstat): its record,
	 * which must name this local inode, without the index read. */
	pohm_journal_local_hint(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino);
	cache_stat_fix_ino(c, st, &ino);
}
