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

/* The kernel's path of the prefix directory, read at the first need and
 * kept (c->proot): its length, or <= 0 (none: walk instead). */
int cache_prefix_root(struct pohm_cache *c)
{
	int n = __atomic_load_n(&c->proot_len, __ATOMIC_ACQUIRE);

	if (n)
		return n;
	pthread_mutex_lock(&c->vlock);
	n = c->proot_len;
	if (!n) {
		n = pohm_sys_fd_path(c->pfd, c->proot, sizeof(c->proot));
		n = n > 0 ? n : -1;
		__atomic_store_n(&c->proot_len, n, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->vlock);
	return n;
}

/*
 * The kept look (issue 23): the O_PATH fd of a create's parent that the
 * walk table holds, kept after the create (c->kdir: high, close-on-exec,
 * registered as ownfd, so the host's close, close_range and dup2 leave it
 * alone) instead of being closed.  The next create below the same
 * directory takes it with one readlink in place of cache_walk_open's
 * openat2, fstat and the close after: the kernel's path of the kept fd is
 * the prefix's own and rel, so rel spelled from the prefix reaches that
 * very directory now and no component on the way is a symlink (each is
 * one of the directory's ancestors) — cache_walk_open's look, as
 * names_fd (cachens.c) takes a new file's path from the kernel.  The
 * table's freshness of every directory of the chain is checked as before.
 * It is kept from the second create in a row in one directory on (that
 * one pays the move high and the close of the one kept before); every
 * create after it there is two calls fewer, and creates that go from
 * one directory to another pay what they paid before.  Threads share it:
 * kdir_users counts the creates using it (vlock), and it is replaced only
 * while none does.  It takes one of the program's numbers: an open that
 * fails EMFILE or ENFILE (the program's, procopen.c and preload/open.c,
 * or cache_walk_open's) closes it while no create uses it and is tried
 * once more (pohm_cache_kept_drop).  Once a move high failed (a limit at
 * or below POHM_FD_BASE) nothing is kept or moved any more (klow).
 */
static int look_take(struct pohm_cache *c, const char *rel, const struct pohm_dfresh *e)
{
	char got[4096];
	int fd, rn = cache_prefix_root(c), n;
	size_t l = strlen(rel);

	/* A rel whose kernel path could be read as a removed directory's. */
	if (rn <= 0 || (l >= 10 && !strcmp(rel + l - 10, " (deleted)")))
		return -1;
	pthread_mutex_lock(&c->vlock);
	fd = __atomic_load_n(&c->kdir, __ATOMIC_ACQUIRE);
	if (fd >= 0 && c->kdir_dev == e->ldev && c->kdir_ino == e->lino)
		c->kdir_users++;
	else
		fd = -1;
	pthread_mutex_unlock(&c->vlock);
	if (fd < 0)
		return -1;
	n = pohm_sys_fd_path(fd, got, sizeof(got));
	if (n == rn + 1 + (int)l && !memcmp(got, c->proot, (size_t)rn) && got[rn] == '/' &&
	    !memcmp(got + rn + 1, rel, l))
		return fd;
	pthread_mutex_lock(&c->vlock);
	c->kdir_users--;
	pthread_mutex_unlock(&c->vlock);
	return -1;
}

/* cache_walk_start's look, base's fd taken (base->fd set to -1): base's
 * own fd when it is the table's directory, else closed before any open of
 * its own (one free fd must do, as for the walk from the root: review 2 of
 * session 17, finding 1). */
/* look (NULL: none): a create's, which may take the kept look. */
static int walk_start(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
		      struct pohm_walk_base *base, struct cache_look *look)
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
	if (look) {
		look->kept = 0;
		look->ldev = e.ldev;
		look->lino = e.lino;
		fd = look_take(c, rel, &e);
		if (fd >= 0) {
			look->kept = 1;
			*ch = e.chain;
			return fd;
		}
	}
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
	if ((fd == -EMFILE || fd == -ENFILE) && pohm_cache_kept_drop(c))
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

int cache_walk_start_look(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
			  struct cache_look *look)
{
	int fd;

	look->kept = 0;
	fd = walk_start(c, rel, ch, NULL, look);
	if (fd < 0)
		look->ldev = look->lino = 0;
	return fd;
}

void cache_walk_look_done(struct pohm_cache *c, int dfd, const struct cache_look *look)
{
	int old = -1, again = 0;

	pthread_mutex_lock(&c->vlock);
	if (look->kept) {
		c->kdir_users--;
	} else if (look->lino) {
		/* Kept from a directory's second create in a row on: creates
		 * that go from one directory to another pay no move high and
		 * no close of the one kept before. */
		again = c->klast_dev == look->ldev && c->klast_ino == look->lino &&
			!c->kdir_users && !c->klow;
		c->klast_dev = look->ldev;
		c->klast_ino = look->lino;
	}
	pthread_mutex_unlock(&c->vlock);
	if (look->kept)
		return;
	if (again && dfd >= 0 && (dfd = pohm_sys_move_high(dfd)) >= 0 && dfd < POHM_FD_BASE) {
		/* No high number (RLIMIT_NOFILE): stop trying (2 calls a create). */
		pthread_mutex_lock(&c->vlock);
		c->klow = 1;
		pthread_mutex_unlock(&c->vlock);
		again = 0;
	}
	if (!again || dfd < 0) {
		if (dfd >= 0)
			pohm_sys_close(dfd);
		return;
	}
	pthread_mutex_lock(&c->vlock);
	if (!c->kdir_users) {
		old = pohm_own_release(&c->kdir);
		if (!pohm_own_set(&c->kdir, dfd)) {
			c->kdir_dev = look->ldev;
			c->kdir_ino = look->lino;
			dfd = -1;
		} else {
			pohm_own_release(&c->kdir);	/* own-fd table full: unprotected, closed */
		}
	}
	pthread_mutex_unlock(&c->vlock);
	if (old >= 0)
		pohm_sys_close(old);
	if (dfd >= 0)
		pohm_sys_close(dfd);
}

int pohm_cache_kept_drop(struct pohm_cache *c)
{
	int fd = -1;

	pthread_mutex_lock(&c->vlock);
	if (!c->kdir_users && __atomic_load_n(&c->kdir, __ATOMIC_ACQUIRE) >= 0)
		fd = pohm_own_release(&c->kdir);
	pthread_mutex_unlock(&c->vlock);
	if (fd < 0)
		return 0;
	pohm_sys_close(fd);
	return 1;
}

int cache_walk_start(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
		     struct pohm_walk_base *base)
{
	int fd;

	if (base)
		base->taken = 0;
	fd = walk_start(c, rel, ch, base, NULL);
	base_drop(base);	/* the table does not hold rel: before the walk's opens */
	return fd;
}
