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

/* The stored access, change and modification times of seen into st. */
static void stat_times(struct stat *st, const struct pohm_stat_seen *seen)
{
	st->st_atim.tv_sec = seen->atime.sec;
	st->st_atim.tv_nsec = seen->atime.nsec;
	st->st_mtim.tv_sec = seen->mtime.sec;
	st->st_mtim.tv_nsec = seen->mtime.nsec;
	st->st_ctim.tv_sec = seen->ctime.sec;
	st->st_ctim.tv_nsec = seen->ctime.nsec;
}

void cache_stat_seen_of(struct pohm_stat_seen *seen, const struct pohm_jrec *rec)
{
	seen->ok = 1;
	seen->ino = rec->ino;
	seen->lino = rec->lino;
	seen->flags = rec->flags;
	seen->mode = rec->mode;
	seen->uid = rec->uid;
	seen->gid = rec->gid;
	seen->nlink = rec->nlink;
	seen->size = rec->size;
	seen->atime = rec->atime;
	seen->mtime = rec->mtime;
	seen->ctime = rec->ctime;
}

void cache_stat_apply(struct pohm_cache *c, struct stat *st, const struct pohm_stat_seen *seen)
{
	st->st_ino = (ino_t)seen->ino;
	st->st_dev = (dev_t)c->dev;
	if ((seen->flags & POHM_J_STUB) || !c->is_root) {
		st->st_uid = seen->uid;
		st->st_gid = seen->gid;
	}
	if (seen->flags & POHM_J_STUB) {
		st->st_mode = seen->mode;
		st->st_size = (off_t)seen->size;
		st->st_blocks = (blkcnt_t)((seen->size + 511) / 512);
		st->st_nlink = seen->nlink;
		stat_times(st, seen);
	} else if (S_ISDIR(seen->mode)) {
		/*
		 * Local directories keep u+rwx for the cache's own use, and their
		 * times move when a fetch renames a file into them: show the
		 * stored mode and times (entry changes move the stored ones,
		 * cachedirtime.c).
		 */
		st->st_mode = seen->mode;
		stat_times(st, seen);
	}
	/* The link count is the storage's: local hardlinks are made lazily. */
	if (seen->nlink)
		st->st_nlink = seen->nlink;
}

static unsigned lhint_slot(uint64_t dev, uint64_t lino)
{
	return (unsigned)((lino ^ (dev * 0x9e3779b97f4a7c15ULL)) % POHM_LHINT);
}

/* The index's answer ino for st's local inode, for cache_lhint_rec. */
static void lhint_note(struct pohm_cache *c, const struct stat *st, uint64_t ino)
{
	struct pohm_lhint *h;

	if (!c->attr_timeout_ns)
		return;
	h = &c->lhint[lhint_slot((uint64_t)st->st_dev, (uint64_t)st->st_ino)];
	pthread_mutex_lock(&c->vlock);
	h->dev = (uint64_t)st->st_dev;
	h->lino = (uint64_t)st->st_ino;
	h->ino = ino;
	h->mono_ns = pohm_sys_mono_ns();
	pthread_mutex_unlock(&c->vlock);
}

int cache_lhint_rec(struct pohm_cache *c, const struct stat *lst, uint64_t *ino,
		    struct pohm_jrec *rec)
{
	struct pohm_lhint h;

	if (!c->attr_timeout_ns)
		return -ENOENT;
	pthread_mutex_lock(&c->vlock);
	h = c->lhint[lhint_slot((uint64_t)lst->st_dev, (uint64_t)lst->st_ino)];
	pthread_mutex_unlock(&c->vlock);
	if (!h.ino || h.dev != (uint64_t)lst->st_dev || h.lino != (uint64_t)lst->st_ino ||
	    pohm_sys_mono_ns() - h.mono_ns >= c->attr_timeout_ns ||
	    pohm_journal_get(&c->j, h.ino, rec))
		return -ENOENT;
	/* The record must name this very local file, not an earlier one whose
	 * inode number the file system gave again (a name of a file with two
	 * stored names unlinked here, or a file deleted without the shim,
	 * keeps its record): its local size and ctime as recorded, else the
	 * index answers (session 16 review). */
	if (rec->ldev != h.dev || rec->lino != h.lino || rec->lsize != (uint64_t)lst->st_size ||
	    rec->lctime.sec != (int64_t)lst->st_ctim.tv_sec ||
	    rec->lctime.nsec != (uint32_t)lst->st_ctim.tv_nsec) {
		pohm_jrec_clear(rec);
		return -ENOENT;
	}
	*ino = h.ino;
	return 0;
}

void cache_stat_fix_ino(struct pohm_cache *c, struct stat *st, uint64_t *known)
{
	struct pohm_stat_seen seen;
	struct pohm_jrec rec;
	uint64_t ino = *known;

	*known = 0;
	if ((uint64_t)st->st_dev != c->pdev)
		return;
	/* A known inode saves the index read (issue 23: a stat within
	 * attr_timeout); its record must name this very local inode. */
	if (ino && !pohm_journal_get(&c->j, ino, &rec)) {
		if (rec.lino == (uint64_t)st->st_ino && !cache_index_stale(&rec, st))
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
	if (rec.lino == (uint64_t)st->st_ino)
		lhint_note(c, st, ino);
found:
	*known = ino;
	cache_stat_seen_of(&seen, &rec);
	seen.ino = ino;
	pohm_jrec_clear(&rec);
	cache_stat_apply(c, st, &seen);
}

void pohm_cache_stat_fix(struct pohm_cache *c, struct stat *st)
{
	uint64_t ino = 0;

	/* The file this thread just recorded (a create's fstat): its record,
	 * which must name this local inode, without the index read. */
	pohm_journal_local_hint(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino);
	cache_stat_fix_ino(c, st, &ino);
}
