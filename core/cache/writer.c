/*
 * writer.c — liveness by locks the kernel releases (issue 18 case 2,
 * issue 19 item 11; decision 0016 has the whole per-inode state machine).
 *
 * "Open for write".  A process that opens a file under the prefix for
 * writing takes a shared OFD lock (F_RDLCK) on byte <ino> of
 * cache_dir/w.lock, the storage inode's byte (ino & 2^62-1; j.lock, unused
 * since decision 0056, was keyed the same).
 * It holds it on an fd of its own (one per inode per process, registered
 * in core/sys/ownfd, >= POHM_FD_BASE) until its last fd writing that
 * local file is closed: then an F_UNLCK, and the description is kept for
 * the next writer (lockfd.c, decision 0065); an inheritable one is closed.
 * The kernel drops the lock when the last copy of that fd goes: exit,
 * _exit, SIGKILL.  A fork child holds it too: on a description of its own,
 * taken again at the fork (cache_writers_atfork_child; a single-threaded
 * process's child only at its first use of the storage, decision 0066:
 * until then on its copy of the parent's, which the parent therefore
 * closes, never unlocks: wr_drop), or for an inheritable writer the same
 * description, as it shares the writing fd.  Across exec
 * the lock fd follows the writing fd: it is close-on-exec exactly when
 * the writing fd was opened O_CLOEXEC, so `sh -c 'echo hi' > P/f` keeps
 * the inode open for write until sh exits.  The exec hands the surviving
 * lock fds to the new image (POHMELFS_WLOCKS, pohm_cache_writer_export),
 * which adopts them when its cache opens: its own close of the inherited
 * writing fd then drops the lock, and its closefrom keeps it.  Nothing else is written at
 * open: the inode's durable state is the local file against its journal
 * record (dirty when they differ), and a writer that is gone leaves
 * exactly that behind.  Anyone can ask "is ino open for write?"
 * (F_OFD_GETLK for a write lock on its byte) and "is anything open for
 * write?" (the same over the whole file) without taking anything.
 *
 * "pohmelfsd runs".  pohmelfsd holds an exclusive OFD lock on byte 0 of
 * cache_dir/pohmelfsd.lock for its lifetime; F_OFD_GETLK on that byte is
 * the liveness test (no pid file read, no kill(pid, 0)).  A writer takes
 * its w.lock byte first and then tests the daemon; the daemon, before it
 * leaves, drops its lock and then looks at w.lock once more (and stays if
 * a writer appeared): so a writer either sees the daemon or is seen by it.
 *
 * The states of a file in one host's cache (decision 0016; the locks of
 * the other steps are push.c's p.lock and cachens.c's c.lock, the same
 * kind):
 *
 *   stub ──fetch──▶ clean ──write-open──▶ open-for-write ──last writer
 *   gone (close, exit, _exit, SIGKILL: the kernel)──▶ dirty ──p.lock
 *   taken──▶ pushing ──CAS won, record put──▶ clean
 *                    └─CAS lost: conflict copy, record CONFLICT──▶ conflict
 *   clean ──eviction (pohmelfsd, write lease)──▶ stub
 *   clean|stub ──refresh: fetch, then with the w.lock byte held
 *   exclusively (no writer here) and the record and copy re-checked as
 *   it found them──▶ clean at the newer version (cache.c fetch_install)
 *
 *   state           how it is known                        durable by
 *   stub            record POHM_J_STUB                     the record
 *   clean           local (ino, size, ctime) = record's    file + record
 *   open-for-write  w.lock byte held (this file)           the holder's life
 *   dirty           no writer, local differs from record   file + record
 *   pushing         p.lock byte held (push.c)              the holder's life
 *   conflict        record POHM_J_CONFLICT                 the record
 *
 * dirty → pushing is the closing process's under sync_on_close, else
 * pohmelfsd's (every sync_timeout); a write-open makes sure pohmelfsd
 * runs.  A crash of any holder just drops its lock: open-for-write falls
 * to dirty (or clean, if nothing was written), pushing to dirty (the
 * next push rebases on the record's last commit, or finds the stored
 * chunk sums equal to its own, push.c).  What a crash between the steps
 * of every transition leaves, and who finishes it: ARCHITECTURE.md §8,
 * tests/unit/test_crash.c.
 *
 * Guards: struct cache_writers is per cache; `mu` guards the table.  The
 * entries' fds are slots in ownfd (their addresses never move: the table
 * is one fixed allocation).  The daemon-test fd `dfd` is set once under
 * `mu` and read lock-free afterwards (an int, stored with release).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

#define WR_MAX 128	/* inodes one process holds open for write with a lock; more
			 * are still pushed (pohmelfsd's rounds), just not waited for */

#define WR_WAIT_MS 2000	/* longest wait of a writer for a refresh's exclusive byte */

struct wr_ent {
	uint64_t ino, ldev, lino;
	int fd;			/* -1: free slot; an ownfd slot otherwise */
	int keep;		/* the lock fd survives exec (not O_CLOEXEC) */
	int mapped;		/* a writable shared mapping: held until the process ends */
	int shared;		/* the lock fd's description may be another process's
				 * too (cache_writers_atfork_child): closed, never unlocked */
	unsigned gen;		/* cache_fork_gen() at its description's take:
				 * older than now, a fork child may share it (shared) */
};

struct cache_writers {
	pthread_mutex_t mu;
	int n;			/* entries in use */
	int nmapped;		/* entries ever marked mapped: written under mu,
				 * read without it (cache_writer_mapped_here's
				 * shortcut: 0 in almost every process) */
	int dfd;		/* cache_dir/pohmelfsd.lock, opened once, ownfd slot */
	struct wr_ent e[WR_MAX];
};

static off_t ino_byte(uint64_t ino)
{
	return (off_t)(ino & 0x3fffffffffffffffULL);	/* two inodes may share a byte */
}

int cache_writers_init(struct pohm_cache *c)
{
	struct cache_writers *w = calloc(1, sizeof(*w));
	int i;

	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	w->dfd = -1;
	for (i = 0; i < WR_MAX; i++)
		w->e[i].fd = -1;
	c->wr = w;
	return 0;
}

void cache_writers_close(struct pohm_cache *c)
{
	struct cache_writers *w = c->wr;
	int i;

	if (!w)
		return;
	for (i = 0; i < WR_MAX; i++)
		if (w->e[i].fd >= 0)
			pohm_own_close(&w->e[i].fd);
	pohm_own_close(&w->dfd);
	pthread_mutex_destroy(&w->mu);
	free(w);
	c->wr = NULL;
}

/* ---------------------------------------------------------------- open for write */

static struct wr_ent *wr_find(struct cache_writers *w, uint64_t ldev, uint64_t lino)
{
	int i;

	for (i = 0; i < WR_MAX; i++)
		if (w->e[i].fd >= 0 && w->e[i].ldev == ldev && w->e[i].lino == lino)
			return &w->e[i];
	return NULL;
}

/* A fresh fd on cache_dir/w.lock (above the host's fds), and in *fl the
 * lock of type on ino's byte, not taken yet. */
static int wr_lock_fd(struct pohm_cache *c, uint64_t ino, short type, struct flock *fl)
{
	int fd = pohm_journal_open_own(c->j.dirfd, "w.lock", O_RDWR | O_CREAT);

	if (fd < 0)
		return fd;
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = ino_byte(ino);
	fl->l_len = 1;
	return pohm_sys_move_high(fd);
}

/* An fd on cache_dir/w.lock, a description of its own (lockfd.c: kept
 * between writers, issue 23), holding a shared lock on ino's byte. */
static int wr_lock(struct pohm_cache *c, uint64_t ino, int keep, unsigned *gen)
{
	struct flock fl;
	int fd, r, i;

	fd = cache_lockfd_take(c, CACHE_LF_W, gen);
	if (fd < 0)
		return fd;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_RDLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = ino_byte(ino);
	fl.l_len = 1;
	/* Writers take shared locks; the only exclusive one is a refresh's,
	 * held for its re-check and rename (local file calls, no network:
	 * cache_writer_exclude).  Wait that out, a bounded while: a writer
	 * that opened the old copy just before the rename then sees it
	 * replaced (pohm_cache_writer_open's check). */
	for (i = 0; (r = pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl)) == -EAGAIN &&
		    i < WR_WAIT_MS; i++)
		pohm_sys_nap_ns(1000000ULL);
	if (!r && keep)
		r = pohm_sys_fcntl(fd, F_SETFD, 0);
	if (r) {
		pohm_sys_close(fd);
		return r;
	}
	return fd;
}

/* Entry e's lock is over (w->mu held): its description goes back to the
 * keep with its lock released (one F_UNLCK, no close), unless another
 * process may hold a copy of it: an inheritable one (exec hands it on,
 * and a fork child of a keep entry shares it: only the close of this
 * copy leaves theirs alone), or one from before a fork (the child of a
 * single-threaded process takes its own only at its first use of the
 * storage, decision 0066: until then it writes under this copy's lock). */
static void wr_drop(struct pohm_cache *c, struct wr_ent *e)
{
	if (e->keep || e->shared)
		pohm_own_close(&e->fd);
	else	/* closed there if from before a fork (its take's count) */
		cache_lockfd_give(c, CACHE_LF_W, pohm_own_release(&e->fd), e->gen);
}

/*
 * A fork child shares each lock fd's description with its parent; the
 * parent only closes its copy of one from before the fork (wr_drop), so
 * the child writes under that lock until it runs this.  Kept shared, the
 * child's drop could only close it too, and the description could not go
 * back to a keep.  So the child takes each close-on-exec writer's lock
 * again on a description of its own (the parent still holds
 * the byte, shared: no refresh holds it exclusively, the lock is granted
 * at once) and closes its copy of the parent's.  A keep entry stays
 * shared (both sides close theirs).  If the child's lock cannot be taken,
 * the entry stays shared: closed, never unlocked, as before.
 */
void cache_writers_atfork_child(struct pohm_cache *c)
{
	struct cache_writers *w = c->wr;
	unsigned gen;
	int i, fd;

	if (!w)
		return;
	pthread_mutex_init(&w->mu, NULL);
	for (i = 0; i < WR_MAX; i++) {
		if (w->e[i].fd < 0 || w->e[i].keep)
			continue;
		fd = wr_lock(c, w->e[i].ino, 0, &gen);
		if (fd < 0) {
			w->e[i].shared = 1;
			continue;
		}
		pohm_own_close(&w->e[i].fd);	/* the parent's copy stays */
		pohm_own_set(&w->e[i].fd, fd);
		w->e[i].gen = gen;
	}
}

/* A free slot of w, or -1 (w->mu held). */
static int wr_free_slot(const struct cache_writers *w)
{
	int i;

	for (i = 0; i < WR_MAX; i++)
		if (w->e[i].fd < 0)
			return i;
	return -1;
}

/* Slot i now holds the lock fd of inode ino, local (ldev, lino) (w->mu held). */
static void wr_add(struct cache_writers *w, int i, int fd, uint64_t ino, uint64_t ldev,
		   uint64_t lino, int keep, unsigned gen)
{
	struct wr_ent *e = &w->e[i];

	e->gen = gen;
	e->ino = ino;
	e->ldev = ldev;
	e->lino = lino;
	e->keep = !!keep;
	e->mapped = 0;
	e->shared = 0;
	pohm_own_set(&e->fd, fd);
	w->n++;
}

/*
 * After a new open-for-write lock on ino: does the local file the writer
 * opened (lino) still hold the copy the journal records?  A refresh that
 * renamed a fetched copy over the name between the writer's open and its
 * lock leaves the writer on the replaced copy: its writes would reach no
 * name.  0, or -ESTALE (logged: the caller's fd writes a replaced copy).
 */
static int wr_check_copy(struct pohm_cache *c, uint64_t ino, uint64_t ldev, uint64_t lino)
{
	struct pohm_jrec rec;
	uint64_t known;
	int r = 0;

	/* The common answer in one readlink: the index still maps the local
	 * file to ino (a refresh's record put drops the replaced file's entry
	 * before its lock goes, and this lock waited for that). */
	if (!pohm_journal_lookup_local(&c->j, ldev, lino, &known))
		return 0;
	if (pohm_journal_get(&c->j, ino, &rec))
		goto out;	/* not recorded (yet): nothing replaced it */
	if (rec.lino && rec.lino != lino) {
		pohm_warn("%s: opened for write just as a refresh replaced the copy; "
			  "these writes reach no name (open it again)", rec.hint);
		r = -ESTALE;
	}
out:
	pohm_jrec_clear(&rec);
	return r;
}

int pohm_cache_writer_open(struct pohm_cache *c, uint64_t ino, uint64_t ldev, uint64_t lino,
			   int keep_on_exec)
{
	struct cache_writers *w = c->wr;
	struct wr_ent *e;
	unsigned gen;
	int i, fd, r = 0;

	pthread_mutex_lock(&w->mu);
	e = wr_find(w, ldev, lino);
	if (e) {
		/* Already held by this process: only an inheritable writer
		 * makes an inheritable lock. */
		if (keep_on_exec && !e->keep && !(r = pohm_sys_fcntl(e->fd, F_SETFD, 0)))
			e->keep = 1;
		goto out;
	}
	i = wr_free_slot(w);
	if (i < 0) {
		r = -ENOSPC;
		goto out;
	}
	fd = wr_lock(c, ino, keep_on_exec, &gen);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	wr_add(w, i, fd, ino, ldev, lino, keep_on_exec, gen);
out:
	pthread_mutex_unlock(&w->mu);
	if (!r && !e)
		r = wr_check_copy(c, ino, ldev, lino);
	return r;
}

/* ---------------------------------------------------------------- before the open */

int pohm_cache_writer_prelock(struct pohm_cache *c, const char *rel, int flags,
			      struct pohm_wprelock *pl)
{
	struct cache_writers *w = c->wr;
	struct stat st;
	uint64_t ino;
	unsigned gen;
	int i, fd, r = 0;

	pl->state = POHM_WPRE_NONE;
	if ((flags & O_ACCMODE) == O_RDONLY || (flags & O_PATH))
		return 0;	/* no writer: nothing to hold */
	if (pohm_sys_fstatat(c->pfd, rel, &st, (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != c->pdev ||
	    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino))
		return 0;	/* no recorded copy to replace (yet): the open makes or finds it */
	pl->ino = ino;
	pl->ldev = (uint64_t)st.st_dev;
	pl->lino = (uint64_t)st.st_ino;
	pthread_mutex_lock(&w->mu);
	if (wr_find(w, pl->ldev, pl->lino)) {
		pl->state = POHM_WPRE_HELD;	/* this process holds the byte already */
		goto out;
	}
	i = wr_free_slot(w);
	if (i < 0)
		goto out;	/* the open goes on unheld, as pohm_cache_writer_open's -ENOSPC */
	fd = wr_lock(c, ino, !(flags & O_CLOEXEC), &gen);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	wr_add(w, i, fd, ino, pl->ldev, pl->lino, !(flags & O_CLOEXEC), gen);
	pl->state = POHM_WPRE_TAKEN;
out:
	pthread_mutex_unlock(&w->mu);
	return r ? r : pl->state != POHM_WPRE_NONE;
}

void pohm_cache_writer_prelock_drop(struct pohm_cache *c, struct pohm_wprelock *pl,
				    int (*held)(void *arg, uint64_t ldev, uint64_t lino), void *arg)
{
	if (pl->state == POHM_WPRE_TAKEN && !(held && held(arg, pl->ldev, pl->lino)))
		pohm_cache_writer_close(c, pl->ldev, pl->lino);
	pl->state = POHM_WPRE_NONE;
}

int pohm_cache_writer_open_pre(struct pohm_cache *c, struct pohm_wprelock *pl, uint64_t ino,
			       uint64_t ldev, uint64_t lino, int keep_on_exec,
			       int (*held)(void *arg, uint64_t ldev, uint64_t lino), void *arg)
{
	struct cache_writers *w = c->wr;
	struct wr_ent *e;
	int r = 0;

	if (pl->state == POHM_WPRE_NONE || pl->ino != ino || pl->ldev != ldev ||
	    pl->lino != lino) {
		/* Not the file held before the open (none was, or the name
		 * moved on in between): lock now and check the copy.  The fd
		 * on the very file the prelock saw, under another storage
		 * inode: the caller's ino came from the index after the open,
		 * and a refresh since dropped the replaced copy's entry (the
		 * caller then passes the local inode number).  The copy check
		 * must ask about the inode the writer opened, known from
		 * before the open. */
		if (pl->state != POHM_WPRE_NONE && pl->ldev == ldev && pl->lino == lino)
			ino = pl->ino;
		r = pohm_cache_writer_open(c, ino, ldev, lino, keep_on_exec);
		pohm_cache_writer_prelock_drop(c, pl, held, arg);
		return r;
	}
	/* The byte was held from before the open: no refresh renamed over
	 * the name since, so the fd is on the copy the name shows. */
	pl->state = POHM_WPRE_NONE;
	pthread_mutex_lock(&w->mu);
	e = wr_find(w, ldev, lino);
	if (e && keep_on_exec && !e->keep && !(r = pohm_sys_fcntl(e->fd, F_SETFD, 0)))
		e->keep = 1;
	pthread_mutex_unlock(&w->mu);
	/* Gone meanwhile (another thread closed its last writer of the file,
	 * or swept it): lock again, and check the copy. */
	return e ? r : pohm_cache_writer_open(c, ino, ldev, lino, keep_on_exec);
}

int cache_writer_exclude(struct pohm_cache *c, uint64_t ino)
{
	struct flock fl;
	int fd, r;

	fd = wr_lock_fd(c, ino, F_WRLCK, &fl);
	if (fd < 0)
		return fd;
	r = pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl);	/* never waited for */
	if (r) {
		pohm_sys_close(fd);
		return r == -EACCES ? -EAGAIN : r;
	}
	return fd;
}

void cache_writer_include(int fd)
{
	if (fd >= 0)
		pohm_sys_close(fd);	/* the lock goes with its open file description */
}

void pohm_cache_writer_close(struct pohm_cache *c, uint64_t ldev, uint64_t lino)
{
	struct cache_writers *w = c->wr;
	struct wr_ent *e;

	pthread_mutex_lock(&w->mu);
	e = wr_find(w, ldev, lino);
	if (e && !e->mapped) {
		wr_drop(c, e);
		w->n--;
	}
	pthread_mutex_unlock(&w->mu);
}

size_t pohm_cache_writer_export(struct pohm_cache *c, char *buf, size_t size)
{
	struct cache_writers *w = c->wr;
	char *o = buf, *lim = buf + size;
	int i;

	pthread_mutex_lock(&w->mu);
	for (i = 0; i < WR_MAX && lim - o > 72; i++) {
		if (w->e[i].fd < 0 || !w->e[i].keep)
			continue;
		o = pohm_put_hex(o, lim, (uint64_t)w->e[i].fd);
		*o++ = ':';
		o = pohm_put_hex(o, lim, w->e[i].ino);
		*o++ = ':';
		o = pohm_put_hex(o, lim, w->e[i].ldev);
		*o++ = ':';
		o = pohm_put_hex(o, lim, w->e[i].lino);
		*o++ = ';';
	}
	pthread_mutex_unlock(&w->mu);
	return (size_t)(o - buf);
}

int pohm_cache_writer_adopt(struct pohm_cache *c, int fd, uint64_t ino, uint64_t ldev,
			    uint64_t lino)
{
	struct cache_writers *w = c->wr;
	struct stat a, b;
	int i, r = 0;

	/* Only an fd on this cache's w.lock (the number may have been reused
	 * by a program without the library between two images). */
	if (pohm_sys_fstat(fd, &a) || pohm_sys_fstatat(c->j.dirfd, "w.lock", &b, 0) ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -EBADF;
	pthread_mutex_lock(&w->mu);
	i = wr_free_slot(w);
	if (wr_find(w, ldev, lino) || i < 0) {
		r = -EEXIST;
		goto out;
	}
	wr_add(w, i, fd, ino, ldev, lino, 1, cache_fork_gen());
out:
	pthread_mutex_unlock(&w->mu);
	return r;
}

void pohm_cache_writer_mapped(struct pohm_cache *c, uint64_t ldev, uint64_t lino)
{
	struct cache_writers *w = c->wr;
	struct wr_ent *e;

	pthread_mutex_lock(&w->mu);
	e = wr_find(w, ldev, lino);
	if (e && !e->mapped) {
		e->mapped = 1;
		__atomic_store_n(&w->nmapped, w->nmapped + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&w->mu);
}

int cache_writer_mapped_here(struct pohm_cache *c, uint64_t ldev, uint64_t lino)
{
	struct cache_writers *w = c->wr;
	struct wr_ent *e;
	int r;

	if (!w || !__atomic_load_n(&w->nmapped, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&w->mu);
	e = wr_find(w, ldev, lino);
	r = e && e->mapped;
	pthread_mutex_unlock(&w->mu);
	return r;
}

int pohm_cache_writer_sweep(struct pohm_cache *c, int (*held)(void *arg, uint64_t ldev,
							       uint64_t lino), void *arg)
{
	struct cache_writers *w = c->wr;
	struct wr_ent e[WR_MAX];
	int i, n = 0, gone = 0;

	/* Copy out: held() makes file calls, never under mu. */
	pthread_mutex_lock(&w->mu);
	for (i = 0; i < WR_MAX; i++)
		if (w->e[i].fd >= 0 && !w->e[i].mapped)
			e[n++] = w->e[i];
	pthread_mutex_unlock(&w->mu);
	for (i = 0; i < n; i++) {
		if (held(arg, e[i].ldev, e[i].lino))
			continue;
		pohm_debug("inode %llx: its writing fds were closed behind the library's back; "
			   "no longer open for write here", (unsigned long long)e[i].ino);
		pohm_cache_writer_close(c, e[i].ldev, e[i].lino);
		gone++;
	}
	return gone;
}

int pohm_cache_writer_count(struct pohm_cache *c)
{
	int n;

	pthread_mutex_lock(&c->wr->mu);
	n = c->wr->n;
	pthread_mutex_unlock(&c->wr->mu);
	return n;
}

/* Does a lock of another open file description cover [start, start+len)
 * (len 0: to the end) of dirfd/name?  1, 0 (none, or no such file), -errno. */
static int locked_in(int dirfd, const char *name, off_t start, off_t len)
{
	struct flock fl;
	int fd, r;

	fd = pohm_sys_openat(dirfd, name, O_RDONLY, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	r = pohm_sys_fcntl(fd, F_OFD_GETLK, (long)&fl);
	pohm_sys_close(fd);
	if (r)
		return r;
	return fl.l_type != F_UNLCK;
}

int pohm_cache_writer_alive(struct pohm_cache *c, uint64_t ino)
{
	return locked_in(c->j.dirfd, "w.lock", ino_byte(ino), 1);
}

int pohm_cache_writers_any(struct pohm_cache *c)
{
	return locked_in(c->j.dirfd, "w.lock", 0, 0);
}

/* ---------------------------------------------------------------- pohmelfsd */

static int daemon_test(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	if (pohm_sys_fcntl(fd, F_OFD_GETLK, (long)&fl))
		return 0;
	return fl.l_type != F_UNLCK;
}

int pohm_cache_daemon_running(struct pohm_cache *c)
{
	struct cache_writers *w = c->wr;
	int fd = __atomic_load_n(&w->dfd, __ATOMIC_ACQUIRE);

	if (fd < 0) {
		pthread_mutex_lock(&w->mu);
		if (w->dfd < 0) {
			fd = pohm_journal_open_own(c->j.dirfd, "pohmelfsd.lock", O_RDWR | O_CREAT);
			if (fd >= 0 && (fd = pohm_sys_move_high(fd)) >= 0)
				pohm_own_set(&w->dfd, fd);
		}
		fd = w->dfd;
		pthread_mutex_unlock(&w->mu);
		if (fd < 0)
			return 0;
	}
	return daemon_test(fd);
}

int pohm_cache_daemon_lock(const char *cache_dir)
{
	char path[4200];
	struct flock fl;
	int fd, r;

	snprintf(path, sizeof(path), "%s/pohmelfsd.lock", cache_dir);
	fd = pohm_journal_open_own(AT_FDCWD, path, O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	r = pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl);
	if (r) {
		pohm_sys_close(fd);
		return r == -EACCES ? -EAGAIN : r;
	}
	return fd;
}

int pohm_cache_daemon_ask_room(struct pohm_cache *c, unsigned mib)
{
	char line[24];
	int fd, n, r;

	fd = pohm_sys_openat(c->j.dirfd, "pohmelfsd.wake", O_WRONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd == -ENXIO || fd == -ENOENT ? -ESRCH : fd;	/* ENXIO: no reader */
	n = snprintf(line, sizeof(line), "%u\n", mib);
	r = (int)pohm_sys_write_full(fd, line, (size_t)n);	/* < PIPE_BUF: one piece */
	pohm_sys_close(fd);
	return r == n ? 0 : r < 0 ? r : -EIO;
}

int pohm_cache_daemon_wake_open(const char *cache_dir)
{
	char path[4200];
	struct stat st;
	int fd, r;

	snprintf(path, sizeof(path), "%s/pohmelfsd.wake", cache_dir);
	r = pohm_sys_mknodat(AT_FDCWD, path, S_IFIFO | 0600, 0);
	if (r && r != -EEXIST)
		return r;
	/* O_RDWR: never an EOF, and writers find a reader while we live. */
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDWR | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	if (pohm_sys_fstat(fd, &st) || !S_ISFIFO(st.st_mode) || st.st_uid != pohm_sys_geteuid()) {
		pohm_sys_close(fd);
		return -EINVAL;
	}
	return fd;
}

int pohm_cache_daemon_alive(const char *cache_dir)
{
	char path[4200];
	int fd, r;

	snprintf(path, sizeof(path), "%s/pohmelfsd.lock", cache_dir);
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0)
		return 0;
	r = daemon_test(fd);
	pohm_sys_close(fd);
	return r;
}
