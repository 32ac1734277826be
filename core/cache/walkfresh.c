/*
 * walkfresh.c — directories a walk passed through, so the next walk below
 * one starts there (issue 23: find -ls, ls -l, du stat every entry of a
 * directory by its path; each stat walked every component from the prefix
 * root again: a fstatat, an index and a journal read, an open and a close
 * per directory on the way).
 *
 * An entry: a directory's path below the prefix (as the walk spelled it,
 * no symlink followed on the way), its local (dev, ino), its storage inode,
 * and for every directory of the path (root's child first, the directory
 * itself last) the storage inode and the validated_ns its record had when
 * the walk found it fresh (0: this process's own check, cachebase.c's mark
 * decides).  It is used only while every one of those is still fresh by
 * cache_fresh_at_count, the test the walk itself makes (attr_timeout, a
 * change this process saw: VSTALE), and while the path still opens to the
 * same local directory: the walk it replaces would have answered from the
 * same records without a round trip.  Like pfresh (cache.c), a directory
 * removed and made again under the same path with the same local inode
 * number is taken for the old one until its marks expire.
 *
 * Direct-mapped by the path's hash, under c->vlock.  No system call but
 * the look (one openat2 that follows no symlink, one fstat) — none when
 * the caller hands the same look over (struct pohm_walk_base: a stat
 * relative to a dirfd, whose classifier opened the dirfd's path that way
 * to check its name, or read the kernel's name of the dirfd; issue 23).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "cache_int.h"
#include "sys.h"
#include "wire.h"

static uint64_t dir_hash(const char *rel)
{
	uint64_t h = pohm_fnv1a(POHM_FNV_BASIS, rel);

	return h ? h : 1;
}

void cache_walk_note(struct pohm_cache *c, const char *rel, const struct cache_walk_chain *ch,
		     uint64_t ldev, uint64_t lino)
{
	struct pohm_dfresh *e;
	uint64_t h;

	if (!c->attr_timeout_ns || !*rel || ch->n == 0 || ch->n > POHM_DCHAIN)
		return;
	h = dir_hash(rel);
	e = &c->dfresh[h % POHM_DCACHE];
	pthread_mutex_lock(&c->vlock);
	e->hash = h;
	e->ldev = ldev;
	e->lino = lino;
	e->chain = *ch;
	pthread_mutex_unlock(&c->vlock);
}

/* base's fd closed (-1 after), if it has one. */
static void base_drop(struct pohm_walk_base *base)
{
	if (base && base->fd >= 0) {
		pohm_sys_close(base->fd);
		base->fd = -1;
	}
}

/* cache_walk_start's look, base's fd taken (base->fd set to -1): base's
 * own fd when it is the table's directory, else closed before any open of
 * its own (one free fd must do, as for the walk from the root: review 2 of
 * session 17, finding 1). */
static int walk_start(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
		      struct pohm_walk_base *base)
{
	struct pohm_dfresh e;
	uint64_t h;
	unsigned i;
	int fd;

	if (!c->attr_timeout_ns || !*rel)
		return -ENOENT;
	h = dir_hash(rel);
	pthread_mutex_lock(&c->vlock);
	e = c->dfresh[h % POHM_DCACHE];
	pthread_mutex_unlock(&c->vlock);
	if (e.hash != h || e.chain.n == 0 || e.chain.n > POHM_DCHAIN)
		return -ENOENT;
	for (i = 0; i < e.chain.n; i++)
		if (cache_fresh_at_count(c, e.chain.ino[i], e.chain.vns[i], 0) != 1)
			return -ENOENT;
	if (base && (base->fd >= 0 || base->named) && base->dev == e.ldev &&
	    base->ino == e.lino) {
		/* The caller's look, made the same way as the one below (an
		 * open), or by the kernel's name of the caller's own fd. */
		fd = base->fd >= 0 ? base->fd : CACHE_WALK_NOFD;
		base->fd = -1;
		base->taken = 1;
		*ch = e.chain;
		return fd;
	}
	base_drop(base);
	fd = cache_walk_open(c, rel, e.ldev, e.lino);
	if (fd >= 0)
		*ch = e.chain;
	return fd;
}

int cache_walk_open(struct pohm_cache *c, const char *rel, uint64_t ldev, uint64_t lino)
{
	struct stat st;
	int fd;

	/* No symlink anywhere on the path, not only at its end (O_NOFOLLOW's
	 * reach): an ancestor replaced here by a link to another directory
	 * would lead to the remembered one under another path.  Where openat2
	 * is missing or filtered, the walk. */
	fd = pohm_sys_open_dir_nolinks(c->pfd, rel);
	if (fd < 0)
		return -ENOENT;
	if (pohm_sys_fstat(fd, &st) || (uint64_t)st.st_dev != ldev ||
	    (uint64_t)st.st_ino != lino) {
		pohm_sys_close(fd);
		return -ENOENT;
	}
	return fd;
}

int cache_walk_start(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
		     struct pohm_walk_base *base)
{
	int fd;

	if (base)
		base->taken = 0;
	fd = walk_start(c, rel, ch, base);
	base_drop(base);	/* the table does not hold rel: before the walk's opens */
	return fd;
}
