/*
 * rehint.c — the records below a directory that moved take their new
 * paths (DESIGN §2: the push finds a file by its record's hint): after any
 * local move of a directory, cache_dir_rehint_below walks what it holds;
 * cache_rehint_all is the same walk of the whole tree, the sync's repair
 * (pushmany.c), which takes an entry for a record only when born before
 * the record last saw its file.  An iterative walk with its levels on the
 * heap and at most REHINT_KEEP_FDS fds open; other filesystems and binds
 * of its own levels are left out (session 19; split from dirmove.c in
 * session 20).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "sys.h"

/* Directory fds a re-hint walk keeps open: the levels nearest its place;
 * those above are closed and opened again by ".." on the way back. */
#define REHINT_KEEP_FDS 16

/* pohm_journal_update's edit: the record of local file (ldev, lino, of
 * type mode) takes the hint `hint` when its own no longer names that file
 * (a second name of a hard link elsewhere that still does keeps it).  Only
 * under the same last name and file type: a move of a directory above
 * keeps them.  The whole-tree repair (strict) also asks that the entry be
 * the file the record last saw: a file made without the shim on the reused
 * inode number of one removed without it (the index cannot tell them
 * apart) would otherwise take its record, and its push would overwrite the
 * removed file's stored copy.  Born no later than the record's local state
 * was recorded (statx's birth time), or where the filesystem keeps none,
 * with the recorded ctime (a move of a directory above changes no ctime
 * below it; a file changed since is then left to the reconcile scan). */
struct below {
	struct pohm_cache *c;
	const char *hint;
	uint64_t ldev, lino;
	mode_t mode;
	int strict;		/* the whole-tree repair: the birth/ctime rule */
	int has_btime;		/* btime_ns is the entry's birth time */
	uint64_t btime_ns;
	struct timespec ctime;
};

/* The last component of a path. */
static const char *last_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Is the entry b the file record r last saw (below's strict rule)? */
static int same_birth(const struct pohm_jrec *r, const struct below *b)
{
	if (b->has_btime)
		return b->btime_ns <= r->recorded_ns;
	return b->ctime.tv_sec == r->lctime.sec && (uint32_t)b->ctime.tv_nsec == r->lctime.nsec;
}

static int below_fn(struct pohm_jrec *r, const void *arg)
{
	const struct below *b = arg;
	struct stat st;

	if (r->ldev != b->ldev || r->lino != b->lino || !strcmp(r->hint, b->hint) ||
	    (r->mode & S_IFMT) != (b->mode & S_IFMT) || strcmp(last_name(r->hint), last_name(b->hint)) ||
	    (b->strict && !same_birth(r, b)))
		return -ESTALE;
	if (r->hint[0] && !pohm_sys_fstatat(b->c->pfd, r->hint, &st, AT_SYMLINK_NOFOLLOW) &&
	    (uint64_t)st.st_dev == r->ldev && (uint64_t)st.st_ino == r->lino)
		return -EEXIST;
	pohm_jrec_set_hint(r, b->hint);
	return 0;
}

/* One level of a walk (rehint_walk): a directory whose listing is being read. */
struct rh_frame {
	int fd;			/* -1: closed, opened again by ".." from its child */
	uint64_t dev, ino;	/* the directory, to check that reopen by identity */
	off_t resume;		/* where its listing goes on once reopened */
	size_t len;		/* its path's length in rel */
	char *buf;		/* its listing's last read, RH_BUF bytes ... */
	long got, off;		/* ... got of them, read up to off */
};

#define RH_BUF 2048

/* Enter the directory fd (st), path rel[0..len): a new deepest frame; the
 * frame REHINT_KEEP_FDS levels above closes its fd (its listing is read
 * again from its resume point once reopened).  0 or -ENOMEM. */
static int frame_push(struct rh_frame **v, size_t *n, size_t *cap, int fd, const struct stat *st,
		      size_t len)
{
	struct rh_frame *nv, *f;

	if (*n == *cap) {
		nv = realloc(*v, (*cap ? *cap * 2 : 16) * sizeof(**v));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = *cap ? *cap * 2 : 16;
	}
	f = &(*v)[*n];
	f->buf = malloc(RH_BUF);
	if (!f->buf)
		return -ENOMEM;
	f->fd = fd;
	f->dev = (uint64_t)st->st_dev;
	f->ino = (uint64_t)st->st_ino;
	f->resume = 0;
	f->len = len;
	f->got = f->off = 0;
	(*n)++;
	if (*n > REHINT_KEEP_FDS && (*v)[*n - 1 - REHINT_KEEP_FDS].fd >= 0) {
		f = &(*v)[*n - 1 - REHINT_KEEP_FDS];
		pohm_sys_close(f->fd);
		f->fd = -1;
		f->got = f->off = 0;
	}
	return 0;
}

/* Leave the deepest frame; its parent, if closed, is opened again (by "..",
 * checked by identity) at its resume point.  0 or -errno (the walk cannot
 * go on: moved meanwhile, or out of fds). */
static int frame_pop(struct rh_frame *v, size_t *n)
{
	struct rh_frame *ch = &v[*n - 1], *p = *n > 1 ? &v[*n - 2] : NULL;
	struct stat st;
	off_t o;
	int r = 0;

	if (p && p->fd < 0) {
		r = pohm_sys_openat(ch->fd, "..", O_RDONLY | O_DIRECTORY, 0);
		if (r >= 0) {
			p->fd = r;
			r = pohm_sys_fstat(p->fd, &st);
			if (!r && ((uint64_t)st.st_dev != p->dev || (uint64_t)st.st_ino != p->ino))
				r = -ESTALE;
		}
		if (!r) {
			o = pohm_sys_lseek(p->fd, p->resume, SEEK_SET);
			r = o < 0 ? (int)o : 0;
		}
	}
	pohm_sys_close(ch->fd);
	free(ch->buf);
	(*n)--;
	return r;
}

/* The record of the local entry dfd/name, st (known to the journal), takes
 * rel when its hint no longer names it (below_fn; strict: the repair's
 * rule).  0 or the update's -errno. */
static int rehint_entry(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			const struct stat *st, int strict)
{
	struct below b = { c, rel, (uint64_t)st->st_dev, (uint64_t)st->st_ino, st->st_mode, strict,
			   0, 0, st->st_ctim };
	uint64_t known;
	int r;

	if (pohm_journal_lookup_local(&c->j, b.ldev, b.lino, &known))
		return 0;	/* not ours */
	if (strict)
		b.has_btime = pohm_sys_birth_ns(dfd, name, b.lino, &b.btime_ns);
	r = pohm_journal_update(&c->j, known, below_fn, &b);
	return r == -ESTALE || r == -EEXIST || r == -ENOENT ? 0 : r;
}

/* Is the directory st one of the walk's levels v[0..n) (a bind mount of
 * an ancestor below itself: the walk would go over it again, and records
 * take paths through the bind)?  1 or 0. */
static int on_stack(const struct rh_frame *v, size_t n, const struct stat *st)
{
	while (n--)
		if (v[n].dev == (uint64_t)st->st_dev && v[n].ino == (uint64_t)st->st_ino)
			return 1;
	return 0;
}

/*
 * Every entry below the directory top (opened by the caller, closed here),
 * whose path is rel (PATH_MAX bytes of room; "" the prefix root, whose
 * staging directory is left out), re-hinted (rehint_entry; strict: the
 * repair's rule), at any depth: iterative, its levels on the heap, at most
 * REHINT_KEEP_FDS fds open.  Entries on another filesystem than top's and
 * a directory that is one of its own ancestors (bind mounts) are left out.
 * 0 when every entry was seen and every record that needed it updated;
 * else an -errno met (the walk went on where it could): a failure's
 * before -ENAMETOOLONG (paths no hint can hold, and what is below them,
 * left out: no walk ever re-hints a record there, so the repair takes
 * the walk as complete).
 */
static int rehint_walk(struct pohm_cache *c, int top, char *rel, int strict)
{
	struct rh_frame *v = NULL, *f;
	size_t n = 0, cap = 0, len = strlen(rel);
	struct stat st;
	int err = 0, toolong = 0, r, sub;

	r = pohm_sys_fstat(top, &st);
	if (!r)
		r = frame_push(&v, &n, &cap, top, &st, len);
	if (r) {
		pohm_sys_close(top);
		free(v);
		return r;
	}
	while (n) {
		f = &v[n - 1];
		if (f->off >= f->got) {
			f->off = 0;
			f->got = pohm_sys_getdents64(f->fd, f->buf, RH_BUF);
			if (f->got <= 0) {
				if (f->got < 0)
					err = (int)f->got;
				r = frame_pop(v, &n);
				if (r) {
					err = r;
					break;
				}
				continue;
			}
		}
		while (f->off < f->got) {
			struct dirent64 *de = (struct dirent64 *)(f->buf + f->off);
			size_t room = PATH_MAX - f->len;

			f->off += de->d_reclen;
			if (cache_name_ours(!f->len, de->d_name))
				continue;
			if ((size_t)snprintf(rel + f->len, room, "%s%s", f->len ? "/" : "",
					     de->d_name) >= room) {
				toolong = 1;	/* no hint can name it */
				continue;
			}
			if (pohm_sys_fstatat(f->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    (uint64_t)st.st_dev != v[0].dev)
				continue;	/* gone meanwhile, or another filesystem's */
			r = rehint_entry(c, f->fd, de->d_name, rel, &st, strict);
			if (r)
				err = r;
			if (!S_ISDIR(st.st_mode) || on_stack(v, n, &st))
				continue;
			sub = pohm_sys_openat(f->fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
			if (sub < 0) {
				if (sub != -EACCES)	/* not ours to reach (another user's) */
					err = sub;
				continue;
			}
			f->resume = (off_t)de->d_off;
			r = frame_push(&v, &n, &cap, sub, &st, strlen(rel));
			if (r) {
				pohm_sys_close(sub);
				err = r;
				f = &v[n - 1];	/* v may have moved */
				continue;
			}
			break;	/* the child's entries first, then the rest of f's */
		}
	}
	while (n) {
		n--;
		if (v[n].fd >= 0)
			pohm_sys_close(v[n].fd);
		free(v[n].buf);
	}
	free(v);
	return err ? err : toolong ? -ENAMETOOLONG : 0;
}

void cache_dir_rehint_below(struct pohm_cache *c, int dfd, const char *name, const char *rel)
{
	char *path = NULL;
	int fd, r;

	pohm_sys_test_kill(POHM_TEST_KILL_IN_REHINT);	/* test only: the walk cut short */
	r = -ENAMETOOLONG;
	if (strlen(rel) >= PATH_MAX)
		goto out;
	r = -ENOMEM;
	path = malloc(PATH_MAX);
	if (!path)
		goto out;
	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	strcpy(path, rel);
	r = fd < 0 ? fd : rehint_walk(c, fd, path, 0);
out:
	free(path);
	if (r)
		pohm_debug("%s: not every record below re-hinted (%s): the next sync's repair does it",
			   rel, strerror(-r));
}

int cache_rehint_all(struct pohm_cache *c)
{
	char *path = malloc(PATH_MAX);
	int fd, r;

	if (!path)
		return -ENOMEM;
	path[0] = '\0';
	fd = pohm_sys_openat(c->pfd, ".", O_RDONLY | O_DIRECTORY, 0);
	r = fd < 0 ? fd : rehint_walk(c, fd, path, 1);
	free(path);
	return r;
}
