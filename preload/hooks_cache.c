/*
 * hooks_cache.c — the storage side of the hooks (hooks.h): strong
 * definitions that replace the passthrough defaults of hooks_pass.c and
 * hand every call under the prefix to core/cache.
 *
 * Heavy init (DESIGN.md §5) happens here, on the first hook call: the
 * configuration, the client and the cache (core/mount).  If it fails, the
 * reason is logged once and every call under the prefix fails with ENOTCONN
 * (no server could be configured) or EIO; calls outside the prefix never
 * get here.  A cache belongs to one user: a process that switches to
 * another effective uid (setuid, seteuid) gets a mount of that user's own
 * at its first call under the prefix as that user (see mounts below; a
 * refused per-user cache_dir fails its calls with EACCES).  Everything
 * runs with pohm_hold() held, so libc calls made by core/ (config files,
 * name lookups) pass straight through the wrappers.
 *
 * POHMELFS_TEST_PASSTHROUGH=1 (read only by the test build of the library,
 * build/test/: sys.h pohm_sys_test_switch; documented in libpohmelfs(7)) turns every hook back into the passthrough default: the interposition
 * layer's own tests (classification, errno, processes) run without a
 * cluster that way.
 *
 * Pushes: a writing fd is pushed at close when sync_on_close is set (at
 * the close of the process's last writing fd of the file), and always at
 * fsync/fdatasync/sync/syncfs and msync(MS_SYNC); otherwise the files
 * this process wrote are pushed at exit (and by exec, which ends the
 * image) and pohmelfsd pushes them every sync_timeout seconds meanwhile.
 * write, ftruncate through an fd and stores into a mapping push nothing
 * themselves; munmap pushes only what no writing fd of the process still
 * holds (issue 22 item 12).  A write-open makes the inode "open for
 * write" (core/cache/writer.c, decision 0016) and makes sure pohmelfsd
 * runs, whatever sync_on_close says: a writer that never closes (_exit,
 * SIGKILL, a raw SYS_close) leaves its file dirty, and pohmelfsd pushes it.
 *
 * Sections: heavy init · open · stat · namespace · attributes · lookups ·
 * directories · fds · processes.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <sys/wait.h>

#include "shim.h"
#include "hooks_stack.h"
#include "shadow.h"
#include "cache.h"
#include "sys.h"
#include "mount.h"

extern char **environ;

/*
 * The mounts of this process: one per effective uid that made calls under
 * the prefix (a cache belongs to one user, DESIGN.md §2).  mounts[0] is
 * opened by heavy_init under pthread_once for the euid of the first call
 * (its rc says how it went).  A call made after a setuid or seteuid to
 * another user opens that user's mount on first use (mount_other: its
 * cache_dir is the user's own, core/mount/mount_user.c), and a switch back finds
 * the earlier one again.  cfg_rc: how loading the configuration went
 * (POHM_PASS in passthrough tests); when it failed, every mount fails.  mounts_lock guards opening (nmounts and the
 * entries past it); an entry below nmounts never changes again and is
 * read without the lock (nmounts is stored with release, loaded with
 * acquire).  mount_cfg is written by heavy_init only.  The caches and
 * clients inside are thread-safe themselves.
 */
#define POHM_MOUNTS_MAX 4

struct umount {
	struct pohm_mount m;	/* m.owner: the euid it serves */
	int rc;			/* 0, or -errno: its open failed (logged once) */
	uint64_t spawn_ns;	/* when this process last spawned pohmelfsd for it (0: never,
				 * or start it again at once); under dirty_lock */
};

static struct umount mounts[POHM_MOUNTS_MAX];
static int nmounts;
static pthread_mutex_t mounts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pohm_config mount_cfg;
static int cfg_rc = -EAGAIN;
static pthread_once_t mount_once = PTHREAD_ONCE_INIT;

/* Files this process wrote and did not push yet (ino list), guarded by dirty_lock. */
static pthread_mutex_t dirty_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *dirty;
static size_t ndirty, capdirty;

/* This process's counters (stats.h): relaxed atomics, any thread. */
static struct pohm_stats proc_stats;
/* stats=1: a copy of the stderr the process started with (coreutils close
 * fd 2 in an atexit handler, before our destructor runs); written once by
 * heavy_init, -1 if none. */
static int stats_ifd = -1;
/* What flush_stats last reported of each mount's cumulative cache and
 * network counters (the cache and client count from their open, and a
 * fork child inherits the parent's): a report is the difference, so an
 * exec attempt that fails, or a child's exit, does not report the same
 * pushes again.  Guarded by stats_lock; a fork child takes the values
 * its parent had as already reported. */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pohm_stats mount_reported[POHM_MOUNTS_MAX];

/* Count one call of kind k; r, counted as an error when the storage or the
 * cache failed (not for answers a local disk gives too: ENOENT, EEXIST...). */
static int counted(enum pohm_stat k, int r)
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

/* This thread created the file the current open is about (undo on failure). */
static POHM_TLS int open_created;
/* This thread passed a rename of a local-only name (a bound socket) to the
 * kernel: when it succeeds, the stored name it replaced goes (ns_done). */
static POHM_TLS int ns_drop_to;
/* The cache pohm_hook_open used, for its pohm_hook_open_done in this thread
 * (the same cache for both halves, and one geteuid per open, not two);
 * NULL when open_done comes alone (mkstemp) or the open got no cache. */
static POHM_TLS struct pohm_cache *open_cache;
/* The current open's name by its real path (a symlink with an absolute
 * target on the way: beyond()), malloc'd; or OPEN_OUTSIDE when that path
 * leaves the prefix (the open is libc's alone); NULL: p->rel. */
static POHM_TLS char *open_rel;
#define OPEN_OUTSIDE ((char *)1)

static int space_fn(void *arg, uint64_t need);
static int held_here(void *arg, uint64_t dev, uint64_t ino);

/* Is rel (under the prefix) a regular file open through an fd of this process? */
static int held_path(struct pohm_cache *c, const char *rel)
{
	struct stat st;

	return !pohm_sys_fstatat(pohm_cache_prefix_fd(c), rel, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st.st_mode) &&	/* only a file's push opens an fd of ours */
	       held_here(NULL, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
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

/* Open um for the calling process's euid (the shim held). */
static int mount_open(struct umount *um)
{
	char err[1024];
	int r;

	/* Another user's mount reaches the prefix through the first mount's
	 * directory fd, as the kernel lets a process use the handles it holds. */
	r = pohm_mount_open_like(&um->m, &mount_cfg,
				 um != &mounts[0] && !mounts[0].rc ? &mounts[0].m : NULL, err,
				 sizeof(err));
	if (r) {
		pohm_err("%s; calls under the prefix fail until this is fixed", err);
		return um->rc = open_errno(r, err);
	}
	pohm_cache_set_space_fn(um->m.cache, space_fn, um);
	pohm_mount_offline_load(&um->m);
	if (um == &mounts[0]) {
		int qfd, tfd;

		/* Signal handlers' records go to this cache's queue (sigsafe.c). */
		r = pohm_cache_sigq_dirs(um->m.cache, &qfd, &tfd);
		if (!r) {
			qfd = pohm_sys_move_high(qfd);
			tfd = pohm_sys_move_high(tfd);
		}
		if (!r && qfd >= 0 && tfd >= 0)
			pohm_sig_queue_set(qfd, tfd);
		else
			pohm_debug("no signal queue (%s): a signal handler's changes live in memory",
				   strerror(r ? -r : EBADF));
	}
	return um->rc = 0;
}

/* The open-for-write locks the previous image handed over (shim.h). */
static void adopt_wlocks(struct umount *um)
{
	int i, r;

	for (i = 0; i < pohm_nwlocks_in && !um->rc; i++) {
		r = pohm_cache_writer_adopt(um->m.cache, pohm_wlocks_in[i].fd, pohm_wlocks_in[i].ino,
					    pohm_wlocks_in[i].ldev, pohm_wlocks_in[i].lino);
		pohm_debug("inherited open-for-write lock fd %d of inode %llx: %s",
			   pohm_wlocks_in[i].fd, (unsigned long long)pohm_wlocks_in[i].ino,
			   r ? strerror(-r) : "adopted");
	}
}

static void heavy_init(void)
{
	const char *pt = pohm_sys_test_switch(POHM_TEST_PASSTHROUGH);	/* test builds */
	char err[1024];
	int r;

	if (pt && *pt && strcmp(pt, "0")) {
		cfg_rc = POHM_PASS;	/* test-only: the storage side stays out */
		return;
	}
	pohm_hold();
	mounts[0].m.owner = (uid_t)syscall(SYS_geteuid);
	r = pohm_config_load(&mount_cfg, environ, err, sizeof(err));
	pohm_log_configure(&mount_cfg, !r);	/* before any line of ours */
	if (r) {
		pohm_err("%s; calls under the prefix fail until this is fixed", err);
		cfg_rc = mounts[0].rc = open_errno(r, err);
	} else {
		cfg_rc = 0;
		mount_open(&mounts[0]);
		adopt_wlocks(&mounts[0]);
	}
	__atomic_store_n(&nmounts, 1, __ATOMIC_RELEASE);
	if (!mounts[0].rc && pohm_config_bool(&mount_cfg, "stats") && !mount_cfg.log[0]) {
		long fd = syscall(SYS_fcntl, 2, F_DUPFD_CLOEXEC, POHM_FD_BASE);

		if (fd >= 0 && (stats_ifd = pohm_ifd_register((int)fd)) < 0)
			pohm_sys_close((int)fd);
	}
	pohm_unhold();
}

/* The mount of euid among the first n, or NULL. */
static struct umount *mount_find(uid_t euid, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (mounts[i].m.owner == euid)
			return &mounts[i];
	return NULL;
}

/* The mount of euid, opened now if this is its first call (see mounts). */
static struct umount *mount_other(uid_t euid)
{
	struct umount *um;
	int n;

	pthread_mutex_lock(&mounts_lock);
	n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);
	if (!(um = mount_find(euid, n)) && n < POHM_MOUNTS_MAX) {
		um = &mounts[n];
		memset(um, 0, sizeof(*um));
		um->m.owner = euid;
		pohm_hold();
		mount_open(um);
		pohm_unhold();
		__atomic_store_n(&nmounts, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mounts_lock);
	if (!um) {
		static int said;	/* once per process; atomic */

		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			pohm_err("uid %u: this process switched between more than %d users; calls "
				 "under the prefix as this one fail with EACCES", (unsigned)euid,
				 POHM_MOUNTS_MAX);
	}
	return um;
}

/*
 * The mount for the calling thread's effective uid, or NULL with *rc set:
 * -errno when its open failed, POHM_PASS in passthrough tests.  One
 * geteuid per call under the prefix; nothing outside it gets here.
 */
static struct umount *mount_here(int *rc)
{
	struct umount *um;
	uid_t euid;

	pthread_once(&mount_once, heavy_init);
	if (cfg_rc) {
		*rc = cfg_rc;	/* passthrough tests, or no usable configuration */
		return NULL;
	}
	euid = (uid_t)syscall(SYS_geteuid);
	if (euid == mounts[0].m.owner)
		um = &mounts[0];
	else if (!(um = mount_find(euid, __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE))))
		um = mount_other(euid);
	*rc = um ? um->rc : -EACCES;
	return *rc ? NULL : um;
}

/* The cache for the calling thread's euid, or NULL with *rc set (mount_here). */
static struct pohm_cache *cache(int *rc)
{
	struct umount *um = mount_here(rc);

	return um ? um->m.cache : NULL;
}

/* The open mount of the current euid, if any (never opens one: exit paths). */
static struct umount *mount_now(void)
{
	struct umount *um;

	if (__atomic_load_n(&nmounts, __ATOMIC_ACQUIRE) == 0 || cfg_rc)
		return NULL;
	um = mount_find((uid_t)syscall(SYS_geteuid), __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE));
	return um && !um->rc ? um : NULL;
}

/*
 * The process umask (applied to modes stored in the storage, as the kernel
 * does locally), read without changing it.  Read each time: umask is not
 * interposed (and programs may call SYS_umask directly), and 12 us is
 * nothing next to the round trips of a create (milliseconds).
 */
static mode_t cur_umask(void)
{
	return pohm_sys_umask();
}

/*
 * Paths a signal handler changed while this thread or another was inside
 * the shim (sigsafe.c): the local name is the truth now.  Gone locally →
 * removed from the storage (the walk brings its stub back first, then
 * unlink or rmdir removes both); present → pohmelfsd's reconcile adopts a
 * new name and its sync pushes a changed one.  Runs at the start of an
 * outermost hook and at exit, never inside the shim.
 */
static void daemon_start(struct umount *um);

static void sig_drain(int all)
{
	static struct pohm_path p;	/* sig_lock */
	static char abs[POHM_REL_MAX];	/* sig_lock */
	static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;	/* one drainer */
	struct umount *um;
	struct stat st;
	int r, n, replay, daemon = 0;

	if (pthread_mutex_trylock(&sig_lock))
		return;	/* another thread drains */
	if (pohm_sig_lost_take())
		pohm_warn("a signal handler changed names under the prefix while the shim was busy, "
			  "more than could be noted: pohmelfsd's reconcile adopts new names, removals "
			  "may come back");
	/* This thread's handlers are done with their calls (all threads' at
	 * exit): their queue records may be replayed now. */
	replay = pohm_sig_commit(all) + pohm_sig_replay_take();
	if (!(um = mount_here(&r))) {
		while (pohm_sig_take(abs, sizeof(abs)))
			;
		goto out;
	}
	if (replay) {
		/* Lock-free names only here (removals, renames); a record that
		 * needs a file opened waits for pohmelfsd (started below). */
		pohm_hold();
		r = pohm_cache_sigq_replay(um->m.cache, 0);
		pohm_unhold();
		if (r < 0)
			pohm_warn("replaying the signal queue: %s", strerror(-r));
	}
	daemon = replay || pohm_sig_pending();
	/* At most a ring's worth: a handler that keeps firing must not keep
	 * this call here (the rest waits for the next hook). */
	for (n = 0; n < POHM_SIG_SLOTS && pohm_sig_take(abs, sizeof(abs)); n++) {
		if (!pohm_classify(AT_FDCWD, abs, &p) || !p.rel[0] || (p.flags & POHM_PATH_TRUNC))
			continue;
		if (pohm_sys_fstatat(pohm_cache_prefix_fd(um->m.cache), p.rel, &st,
				     AT_SYMLINK_NOFOLLOW) != -ENOENT)
			continue;	/* present: pohmelfsd's reconcile and sync */
		/* Only a name this cache knew (a changing call on a name never
		 * fetched says nothing of the storage), and no local stub
		 * brought back. */
		pohm_hold();
		pohm_cache_sigq_gone(um->m.cache, p.rel);	/* logs */
		pohm_unhold();
	}
out:
	pthread_mutex_unlock(&sig_lock);
	if (daemon)
		daemon_start(um);
}

/* A hook starts: the shim is busy on this thread (shim.h pohm_busy). */
static void busy_enter(void)
{
	pohm_busy++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* A hook that starts an operation (never a *_done, *_fix or readdir hook,
 * whose operation's state a drain's own cache calls could disturb): the
 * outermost one first settles what signal handlers noted. */
static void busy_enter_drain(void)
{
	if (!pohm_busy++ && !pohm_depth && pohm_sig_pending())
		sig_drain(0);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void busy_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pohm_busy--;
}

/* Run a core call with the shim held (core may call libc by name). */
#define HELD(expr) ({ int held_r_; pohm_hold(); held_r_ = (expr); pohm_unhold(); held_r_; })

/* ---------------------------------------------------------------- symlinks out */

/*
 * A core call answered -EXDEV for p: the storage's own walk met a symlink
 * with an absolute target, or one climbing above the prefix root, on the
 * way to p's parent.  The kernel follows it, so ask the kernel where the
 * parent is (pohm_cache_parent_real): 1 when outside the prefix (the call
 * is libc's alone, as for any path outside), 0 and q = p by its real path
 * below the prefix (the caller tries once more), or -errno when the parent
 * does not resolve (the real call gives the kernel's errno).  A name right
 * under the root has no such parent: q = p.  Held.
 */
static int beyond(struct pohm_cache *c, const struct pohm_path *p, struct pohm_path *q)
{
	int r;

	*q = *p;
	if (!strchr(p->rel, '/'))
		return 0;
	r = pohm_cache_parent_real(c, p->rel, q->rel, sizeof(q->rel));
	if (r == 0)
		q->len = strlen(q->rel);
	return r;
}

/* ---------------------------------------------------------------- open */

/* pohm_hook_open's create answered -EXDEV (beyond()): the open goes on by
 * the real path, or to libc alone when that is outside (open_rel). */
static int open_beyond(struct pohm_cache *c, const struct pohm_path *p, mode_t mode, int excl)
{
	struct pohm_path q;
	int r;

	pohm_hold();
	r = beyond(c, p, &q);
	/* malloc, not strdup: libc's strdup allocates outside our private malloc */
	if (r == 0 && strcmp(q.rel, p->rel) && (open_rel = malloc(q.len + 1)) &&
	    memcpy(open_rel, q.rel, q.len + 1))
		r = pohm_cache_create(c, q.rel, mode, excl);
	else
		r = r == 0 ? -EXDEV : POHM_PASS;
	if (r == POHM_PASS || r == -EXDEV) {
		if (open_rel)
			free(open_rel);
		open_rel = r == POHM_PASS ? OPEN_OUTSIDE : NULL;
		r = POHM_PASS;	/* open never fails EXDEV: the kernel decides */
	}
	pohm_unhold();
	return r;
}

static int hook_open(const struct pohm_path *p, int flags, mode_t mode, int *fd_out)
{
	struct pohm_cache *c;
	unsigned mf = POHM_MAT_DATA | POHM_MAT_LIST;	/* a file's data, a directory's entries */
	int r;

	open_created = 0;
	open_cache = NULL;
	if (open_rel && open_rel != OPEN_OUTSIDE)
		free(open_rel);
	open_rel = NULL;
	if (p->flags & POHM_PATH_TRUNC)
		return POHM_PASS;
	if (!(c = cache(&r)))
		return r;
	open_cache = c;
	if ((flags & O_CREAT) && (!p->rel[0] || (p->flags & POHM_PATH_SLASH) ||
				  !strcmp(p->path, ".") || !strcmp(p->path, "..")))
		return POHM_PASS;	/* a directory's name: EISDIR (or ENOTDIR, EEXIST) from the kernel */
	if (flags & O_CREAT) {
		r = HELD(pohm_cache_create(c, p->rel, mode & ~cur_umask(), !!(flags & O_EXCL)));
		if (r == -EXDEV)
			r = open_beyond(c, p, mode & ~cur_umask(), !!(flags & O_EXCL));
		if (r == -ENOENT && HELD(pohm_cache_parent_refused(c, p->rel)))
			r = POHM_PASS;	/* a socket on the way: ENOTDIR from the kernel */
		if (r == 0)
			open_created = 1;
		return counted(POHM_ST_CREATE, r < 0 && r != -EISDIR ? r : POHM_PASS);
	}
	if (flags & O_NOFOLLOW)
		mf |= POHM_MAT_NOFOLLOW;
	/* The open mode's own bits, as the kernel checks them (not R_OK always). */
	mf |= POHM_MAT_OPEN;
	if ((flags & O_ACCMODE) != O_WRONLY)
		mf |= POHM_MAT_OPEN_R;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		mf |= POHM_MAT_OPEN_W;	/* O_TRUNC asks write permission too */
	if (flags & O_PATH)
		mf = flags & O_NOFOLLOW ? POHM_MAT_NOFOLLOW : 0;
	r = HELD(pohm_cache_materialize(c, p->rel, mf));
	return counted(POHM_ST_OPEN, r < 0 ? r : POHM_PASS);
}

int pohm_hk_open(const struct pohm_path *p, int flags, mode_t mode, int *fd_out)
{
	int r;

	busy_enter_drain();
	r = hook_open(p, flags, mode, fd_out);
	busy_leave();
	return r;
}

static int held_here(void *arg, uint64_t dev, uint64_t ino);

/* The mount whose cache is c (NULL if none of ours). */
static struct umount *mount_of(struct pohm_cache *c)
{
	int i, n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (mounts[i].m.cache == c && !mounts[i].rc)
			return &mounts[i];
	return NULL;
}

/* Open-for-write locks held before the next sweep (see writer_opened);
 * relaxed atomic, any thread. */
static int sweep_at = 16;

/*
 * A write-open of the local file (ldev, lino), storage inode ino: the inode
 * is open for write until this process's last writing fd on it closes or
 * the process ends (writer.c), and pohmelfsd runs (it pushes what a writer
 * that never closes leaves).  Locks and shadows of files the host closed
 * behind our back (a raw SYS_close: node/libuv) are swept first, by
 * identity: no fd in the table still names that (dev, ino).  Sweeps are
 * amortized: when the held locks reach twice what the last sweep left.
 */
static void writer_opened(struct pohm_cache *c, uint64_t ino, uint64_t ldev, uint64_t lino,
			  int keep_on_exec)
{
	struct umount *um = mount_of(c);
	int n, r;

	pohm_hold();
	n = pohm_cache_writer_count(c);
	if (n >= __atomic_load_n(&sweep_at, __ATOMIC_RELAXED)) {
		n -= pohm_cache_writer_sweep(c, held_here, NULL);
		pohm_shadow_sweep();
		__atomic_store_n(&sweep_at, n * 2 > 16 ? n * 2 : 16, __ATOMIC_RELAXED);
	}
	r = pohm_cache_writer_open(c, ino, ldev, lino, keep_on_exec);
	if (r)
		pohm_debug("inode %llx: not marked open for write (%s); pohmelfsd's rounds push it",
			   (unsigned long long)ino, strerror(-r));
	if (um)
		daemon_start(um);
	pohm_unhold();
}

static int hook_open_done(const struct pohm_path *p, int flags, int fd, struct pohm_fd_info *fi)
{
	struct pohm_cache *c = open_cache;
	char *own = open_rel;
	const char *rel = own ? own : p->rel;
	struct stat st;
	int r;

	open_cache = NULL;
	open_rel = NULL;
	if (own == OPEN_OUTSIDE || (!c && !(c = cache(&r)))) {
		open_created = 0;
		return fd;	/* through a symlink out of the prefix: libc's alone */
	}
	if (fd < 0) {
		if (open_created)
			HELD((pohm_cache_create_undo(c, rel), 0));
		open_created = 0;
		free(own);
		return fd;
	}
	if (open_created)
		HELD(pohm_cache_opened(c, rel, fd));
	else if ((flags & O_CREAT) && !(p->flags & POHM_PATH_TRUNC))
		HELD(pohm_cache_adopt(c, rel, fd));	/* made by libc itself (mkstemp) */
	open_created = 0;
	free(own);
	/* The storage inode, for the dirty list at close, and "open for write":
	 * writers only (a reader's open stays a few syscalls). */
	if ((flags & O_ACCMODE) != O_RDONLY && !pohm_sys_fstat(fd, &st)) {
		uint64_t ldev = (uint64_t)st.st_dev, lino = (uint64_t)st.st_ino;

		pohm_cache_stat_fix(c, &st);
		fi->cookie = (uint64_t)st.st_ino;
		if (S_ISREG(st.st_mode) && !(flags & O_PATH))
			writer_opened(c, fi->cookie, ldev, lino, !(flags & O_CLOEXEC));
	}
	/* A write-only fd gets its read-only shadow now, while the name still
	 * names its inode (shadow.c); a file we may not read gets none. */
	if ((flags & O_ACCMODE) == O_WRONLY && !(flags & O_PATH))
		pohm_shadow_get(fd);
	return fd;
}

int pohm_hk_open_done(const struct pohm_path *p, int flags, int fd, struct pohm_fd_info *fi)
{
	int r;

	busy_enter();
	r = hook_open_done(p, flags, fd, fi);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- stat */

static int hook_stat(const struct pohm_path *p, int flags, struct stat *st)
{
	struct pohm_cache *c;
	int r;

	if (p->flags & POHM_PATH_TRUNC)
		return POHM_PASS;
	if (!(c = cache(&r)))
		return r;
	r = HELD(pohm_cache_materialize(c, p->rel,
					(flags & AT_SYMLINK_NOFOLLOW) ? POHM_MAT_NOFOLLOW : 0));
	return counted(POHM_ST_STAT, r < 0 ? r : POHM_PASS);
}

int pohm_hk_stat(const struct pohm_path *p, int flags, struct stat *st)
{
	int r;

	busy_enter_drain();
	r = hook_stat(p, flags, st);
	busy_leave();
	return r;
}

static int hook_statx(const struct pohm_path *p, int flags, unsigned mask, struct statx *stx)
{
	return pohm_hk_stat(p, flags, NULL);
}

int pohm_hk_statx(const struct pohm_path *p, int flags, unsigned mask, struct statx *stx)
{
	int r;

	busy_enter_drain();
	r = hook_statx(p, flags, mask, stx);
	busy_leave();
	return r;
}

static void hook_stat_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi,
			struct stat *st)
{
	struct pohm_cache *c;
	int r;

	if ((c = cache(&r)))
		pohm_cache_stat_fix(c, st);
}

void pohm_hk_stat_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi,
			struct stat *st)
{
	busy_enter();
	hook_stat_fix(p, fd, fi, st);
	busy_leave();
}

static void hook_statx_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi,
			 struct statx *stx)
{
	struct pohm_cache *c;
	struct stat st;
	int r;

	if (!(c = cache(&r)))
		return;
	memset(&st, 0, sizeof(st));
	st.st_dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
	st.st_ino = stx->stx_ino;
	st.st_mode = stx->stx_mode;
	st.st_nlink = stx->stx_nlink;
	st.st_uid = stx->stx_uid;
	st.st_gid = stx->stx_gid;
	st.st_size = (off_t)stx->stx_size;
	st.st_blocks = (blkcnt_t)stx->stx_blocks;
	st.st_atim.tv_sec = stx->stx_atime.tv_sec;
	st.st_atim.tv_nsec = stx->stx_atime.tv_nsec;
	st.st_mtim.tv_sec = stx->stx_mtime.tv_sec;
	st.st_mtim.tv_nsec = stx->stx_mtime.tv_nsec;
	st.st_ctim.tv_sec = stx->stx_ctime.tv_sec;
	st.st_ctim.tv_nsec = stx->stx_ctime.tv_nsec;
	pohm_cache_stat_fix(c, &st);
	stx->stx_dev_major = major(st.st_dev);
	stx->stx_dev_minor = minor(st.st_dev);
	stx->stx_ino = (uint64_t)st.st_ino;
	stx->stx_mode = (uint16_t)st.st_mode;
	stx->stx_nlink = (uint32_t)st.st_nlink;
	stx->stx_uid = st.st_uid;
	stx->stx_gid = st.st_gid;
	stx->stx_size = (uint64_t)st.st_size;
	stx->stx_blocks = (uint64_t)st.st_blocks;
	stx->stx_atime.tv_sec = st.st_atim.tv_sec;
	stx->stx_atime.tv_nsec = (uint32_t)st.st_atim.tv_nsec;
	stx->stx_mtime.tv_sec = st.st_mtim.tv_sec;
	stx->stx_mtime.tv_nsec = (uint32_t)st.st_mtim.tv_nsec;
	stx->stx_ctime.tv_sec = st.st_ctim.tv_sec;
	stx->stx_ctime.tv_nsec = (uint32_t)st.st_ctim.tv_nsec;
}

void pohm_hk_statx_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi,
			 struct statx *stx)
{
	busy_enter();
	hook_statx_fix(p, fd, fi, stx);
	busy_leave();
}

/* ---------------------------------------------------------------- namespace */

/*
 * 1 when rel is something other than a directory: a trailing slash on
 * either name of rmdir, remove or rename (on a rename's target too, for
 * its source) then fails ENOTDIR in the kernel, so the storage must not
 * change (names.c refuses "." and ".." outright).  Held.
 */
static int not_dir(struct pohm_cache *c, const char *rel)
{
	struct stat st;

	if (pohm_cache_materialize(c, rel, POHM_MAT_NOFOLLOW) ||
	    pohm_sys_fstatat(pohm_cache_prefix_fd(c), rel, &st, AT_SYMLINK_NOFOLLOW))
		return 0;	/* missing: the storage call answers ENOENT */
	return !S_ISDIR(st.st_mode);
}

/* The storage's half of a namespace call (held). */
static int ns_apply(struct pohm_cache *c, enum pohm_ns_op op, const struct pohm_path *a,
		    const struct pohm_path *b, const struct pohm_ns_arg *arg)
{
	struct stat st;
	int r;

	switch (op) {
	case POHM_NS_MKDIR:
		r = pohm_cache_mkdir(c, a->rel, arg->mode & ~cur_umask());
		break;
	case POHM_NS_RMDIR:
		r = pohm_cache_rmdir(c, a->rel);
		break;
	case POHM_NS_UNLINK:
		r = pohm_cache_unlink(c, a->rel);
		break;
	case POHM_NS_REMOVE:
		r = pohm_cache_materialize(c, a->rel, POHM_MAT_NOFOLLOW);
		if (!r)
			r = pohm_sys_fstatat(pohm_cache_prefix_fd(c), a->rel, &st, AT_SYMLINK_NOFOLLOW);
		if (!r)
			r = S_ISDIR(st.st_mode) ? pohm_cache_rmdir(c, a->rel) :
						  pohm_cache_unlink(c, a->rel);
		break;
	case POHM_NS_RENAME:
		r = pohm_cache_rename(c, a->rel, b->rel, arg->flags);
		break;
	case POHM_NS_LINK:
		r = pohm_cache_link(c, a->rel, b->rel);
		break;
	case POHM_NS_SYMLINK:
		r = pohm_cache_symlink(c, arg->target, a->rel);
		break;
	case POHM_NS_MKNOD:
		if (S_ISSOCK(arg->mode))
			r = POHM_PASS;	/* sockets stay local */
		else
			r = pohm_cache_mknod(c, a->rel,
					     (arg->mode & S_IFMT) | (arg->mode & 07777 & ~cur_umask()),
					     (uint64_t)arg->dev);
		break;
	default:
		r = POHM_PASS;
		break;
	}
	return r;
}

/*
 * ns_apply answered -EXDEV: a symlink out of the storage's reach on the
 * way (beyond()).  Each name by its real path: all outside the prefix,
 * the call is libc's alone; all inside, try once more by the real paths;
 * one in and one out (rename, link), EXDEV as across any boundary; a
 * parent that does not resolve, the real call answers.  Held.
 */
static int ns_beyond(struct pohm_cache *c, enum pohm_ns_op op, const struct pohm_path *a,
		     const struct pohm_path *b, const struct pohm_ns_arg *arg)
{
	struct pohm_path *q = malloc(2 * sizeof(*q));
	int ra, rb = 0, r;

	if (!q)
		return -ENOMEM;
	ra = beyond(c, a, &q[0]);
	if (b)
		rb = beyond(c, b, &q[1]);
	if (ra < 0 || rb < 0)
		r = POHM_PASS;
	else if (ra == 1 && (!b || rb == 1))
		r = POHM_PASS;
	else if (ra == 1 || rb == 1)
		r = -EXDEV;
	else if (!strcmp(q[0].rel, a->rel) && (!b || !strcmp(q[1].rel, b->rel)))
		r = -EXDEV;	/* the same names: the storage's answer stands */
	else
		r = ns_apply(c, op, &q[0], b ? &q[1] : NULL, arg);
	free(q);
	return r;
}

/*
 * The storage answered -ENOENT (and changed nothing): a name it does not
 * hold may be involved — a socket bind(2) made, which exists only here
 * (issue 22 item 4).  The kernel answers when it cannot walk to a parent
 * (ENOTDIR through a socket, EACCES...) or when the name changed is itself
 * local-only (a rename or link of a socket; rmdir, unlink of one).  A
 * rename of one that replaces a stored name removes that name once the
 * kernel did it (ns_done).  Held.
 */
static int ns_local_only(struct pohm_cache *c, enum pohm_ns_op op, const struct pohm_path *a,
			 const struct pohm_path *b, const struct pohm_ns_arg *arg)
{
	if (pohm_cache_parent_refused(c, a->rel) || (b && pohm_cache_parent_refused(c, b->rel)))
		return POHM_PASS;
	switch (op) {
	case POHM_NS_RENAME:
		if (!pohm_cache_local_only(c, a->rel))
			break;
		ns_drop_to = !(arg->flags & RENAME_EXCHANGE);
		return POHM_PASS;
	case POHM_NS_LINK:
	case POHM_NS_UNLINK:
	case POHM_NS_RMDIR:
	case POHM_NS_REMOVE:
		if (pohm_cache_local_only(c, a->rel))
			return POHM_PASS;
		break;
	default:
		break;
	}
	return -ENOENT;
}

static int hook_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		 const struct pohm_ns_arg *arg)
{
	struct pohm_cache *c;
	int r;

	if ((a->flags & POHM_PATH_TRUNC) || (b && (b->flags & POHM_PATH_TRUNC)))
		return POHM_PASS;
	if (!(c = cache(&r)))
		return r;
	if (!a->rel[0])
		return op == POHM_NS_MKDIR ? -EEXIST : -EBUSY;	/* the prefix root itself */
	pohm_hold();
	if ((op == POHM_NS_RMDIR || op == POHM_NS_REMOVE || op == POHM_NS_RENAME) &&
	    ((a->flags | (b ? b->flags : 0)) & POHM_PATH_SLASH) && not_dir(c, a->rel))
		r = POHM_PASS;	/* ENOTDIR from the real call */
	else
		r = ns_apply(c, op, a, b, arg);
	if (r == -EXDEV)
		r = ns_beyond(c, op, a, b, arg);
	if (r == -ENOENT)
		r = ns_local_only(c, op, a, b, arg);
	pohm_unhold();
	return r == POHM_PASS ? r : counted(POHM_ST_NS, r);
}

int pohm_hk_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		 const struct pohm_ns_arg *arg)
{
	int r;

	busy_enter_drain();
	r = hook_ns(op, a, b, arg);
	busy_leave();
	return r;
}

static int hook_ns_done(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		      const struct pohm_ns_arg *arg, int result)
{
	struct pohm_cache *c;
	int drop = ns_drop_to, r;

	ns_drop_to = 0;
	if (drop && result == 0 && b && (c = cache(&r))) {
		r = HELD(pohm_cache_drop_stored(c, b->rel));
		if (r < 0)
			pohm_warn("%s: replaced here by a local-only name, but still in the storage (%s)",
				  b->rel, strerror(-r));
	}
	return result;
}

int pohm_hk_ns_done(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		      const struct pohm_ns_arg *arg, int result)
{
	int r;

	busy_enter();
	r = hook_ns_done(op, a, b, arg, result);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- mount tables */

int pohm_hk_mount_dev(uint64_t *dev)
{
	struct pohm_cache *c;
	int r;

	if (!(c = cache(&r)))
		return POHM_PASS;
	*dev = pohm_cache_dev(c);
	return 0;
}

/* ---------------------------------------------------------------- attributes */

static int hook_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
		   const struct pohm_fd_info *fi, int flags)
{
	struct pohm_cache *c;
	int r;

	if (!(c = cache(&r)))
		return r;
	if (p && !(p->flags & POHM_PATH_TRUNC)) {
		/* Change a real copy, not a stub (a changed stub would be a conflict). */
		r = HELD(pohm_cache_materialize(c, p->rel,
			 POHM_MAT_DATA | ((flags & AT_SYMLINK_NOFOLLOW) ? POHM_MAT_NOFOLLOW : 0)));
		if (r < 0)
			return counted(POHM_ST_ATTR, r);
	}
	if (!p || !(p->flags & POHM_PATH_TRUNC)) {
		r = HELD(pohm_cache_attr_offline(c, p ? p->rel : NULL, fd,
			 (flags & AT_SYMLINK_NOFOLLOW) ? POHM_MAT_NOFOLLOW : 0, op == POHM_AT_CHOWN));
		if (r < 0)
			return counted(POHM_ST_ATTR, r);
	}
	/* The kernel's owner checks, on the stored owner: the local copy may be
	 * the caller's own whoever owns the file (issue 22). */
	if (fd >= 0 || (p && !(p->flags & POHM_PATH_TRUNC))) {
		r = 0;
		if (op == POHM_AT_CHMOD || (op == POHM_AT_UTIMES && (flags & POHM_ATTR_SET)))
			r = HELD(pohm_cache_perm_owner(c, fd, p ? p->rel : NULL,
						       !(flags & AT_SYMLINK_NOFOLLOW),
						       POHM_PERM_FOWNER));
		else if (op == POHM_AT_CHOWN && (flags & POHM_ATTR_SET))
			r = HELD(pohm_cache_perm_owner(c, fd, p ? p->rel : NULL,
						       !(flags & AT_SYMLINK_NOFOLLOW),
						       POHM_PERM_CHOWN));
		else if (op == POHM_AT_UTIMES && (flags & POHM_ATTR_TOUCH))
			r = HELD(pohm_cache_perm_owner(c, fd, p ? p->rel : NULL,
						       !(flags & AT_SYMLINK_NOFOLLOW),
						       POHM_PERM_TOUCH));
		if (r < 0)
			return counted(POHM_ST_ATTR, r);
	}
	return counted(POHM_ST_ATTR, POHM_PASS);
}

int pohm_hk_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
		   const struct pohm_fd_info *fi, int flags)
{
	int r;

	busy_enter_drain();
	r = hook_attr(op, p, fd, fi, flags);
	busy_leave();
	return r;
}

static int hook_attr_done(enum pohm_attr_op op, const struct pohm_path *p, int fd,
			const struct pohm_fd_info *fi, int flags, int result)
{
	struct pohm_cache *c;
	const char *rel = p ? p->rel : NULL;
	char real[4096];
	int r, chattr = op == POHM_AT_CHMOD || op == POHM_AT_CHOWN;

	if (result < 0 || !(c = cache(&r)))
		return result;
	if (p && (p->flags & POHM_PATH_TRUNC))
		rel = NULL;
	/* chmod, chown... follow a symlink: the change is its target's
	 * (issue 22 item 7).  One fstatat when rel is no symlink. */
	if (rel && !(flags & AT_SYMLINK_NOFOLLOW)) {
		r = HELD(pohm_cache_follow(c, rel, real, sizeof(real)));
		if (r == 2 || r < 0)
			return result;	/* out of the prefix: libc's alone */
		if (r == 0)
			rel = real;
	}
	/* The change travels now, so that other hosts see it after attr_timeout.
	 * A truncation through an fd is a data change of a writer still open,
	 * as a write is (issue 22 item 12: fsx's 645 ftruncates were 645 pushes
	 * of the whole file): it travels with the fd's next push, at its close
	 * (sync_on_close), fsync, the process's exit or pohmelfsd's round. */
	if (fd >= 0 && op == POHM_AT_TRUNCATE)
		r = 0;
	else if (fd >= 0)
		r = HELD(pohm_cache_push_fd(c, fd));
	else if (rel && !held_path(c, rel))
		r = HELD(pohm_cache_push_path(c, rel));
	else
		r = 0;	/* open here: pushed through its fd at close or sync */
	/* What a push cannot tell from the cache's own differences (chattr.c). */
	if (r >= 0 && chattr && (fd >= 0 || rel))
		r = HELD(pohm_cache_push_chattr(c, fd, rel, op == POHM_AT_CHOWN));
	if (r < 0 && r != -EBADF)
		pohm_warn("%s: attribute change not pushed yet (%s)", rel ? rel : "fd",
			  strerror(-r));
	return result;
}

int pohm_hk_attr_done(enum pohm_attr_op op, const struct pohm_path *p, int fd,
			const struct pohm_fd_info *fi, int flags, int result)
{
	int r;

	busy_enter();
	r = hook_attr_done(op, p, fd, fi, flags, result);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- lookups */

/* Is one of the caller's groups gid? (effective: egid, else the real gid) */
static int in_group(gid_t gid, int effective)
{
	gid_t groups[256];
	long n, i;

	if (gid == (gid_t)syscall(effective ? SYS_getegid : SYS_getgid))
		return 1;
	n = syscall(SYS_getgroups, 256, groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/*
 * access(2) of rel, answered from its stored attributes when the local
 * file is still a stub (mode 000: nothing fetched yet), with the kernel's
 * rules: root may read and write anything and execute what has any x
 * bit (a directory always); others by the owner, group or other bits.
 * POHM_PASS when the local file answers for itself.
 */
static int access_stored(struct pohm_cache *c, const char *rel, int how)
{
	int mode = how & (R_OK | W_OK | X_OK), effective = !!(how & POHM_ACCESS_EFFECTIVE);
	struct stat st;
	uid_t uid;
	unsigned bits;

	if (pohm_sys_fstatat(pohm_cache_prefix_fd(c), rel, &st, *rel ? 0 : AT_EMPTY_PATH))
		return POHM_PASS;	/* the real call says what is missing */
	if (st.st_mode & 07777)
		return POHM_PASS;
	pohm_cache_stat_fix(c, &st);
	if (!(st.st_mode & 07777) || !mode)
		return POHM_PASS;
	uid = (uid_t)syscall(effective ? SYS_geteuid : SYS_getuid);
	if (uid == 0) {
		if ((mode & X_OK) && !S_ISDIR(st.st_mode) && !(st.st_mode & 0111))
			return -EACCES;
		return 0;
	}
	if (st.st_uid == uid)
		bits = (st.st_mode >> 6) & 7;
	else if (in_group(st.st_gid, effective))
		bits = (st.st_mode >> 3) & 7;
	else
		bits = st.st_mode & 7;
	return ((unsigned)mode & ~bits) ? -EACCES : 0;
}

static int hook_lookup(enum pohm_lookup why, const struct pohm_path *p, int flags)
{
	struct pohm_cache *c;
	unsigned mf = 0;
	int r;

	if (p->flags & POHM_PATH_TRUNC)
		return POHM_PASS;
	if (!(c = cache(&r)))
		return r;
	switch (why) {
	case POHM_LK_READLINK:
		mf = POHM_MAT_NOFOLLOW;
		break;
	case POHM_LK_XATTR_GET:
		mf = (flags & AT_SYMLINK_NOFOLLOW) ? POHM_MAT_NOFOLLOW : 0;
		break;
	case POHM_LK_OPENDIR:
		mf = POHM_MAT_LIST;
		break;
	case POHM_LK_EXEC:
	case POHM_LK_DLOPEN:
	case POHM_LK_SPAWN_OPEN:
		mf = POHM_MAT_DATA;
		break;
	case POHM_LK_TEMPDIR:
		mf = 0;
		break;
	default:
		mf = 0;
		break;
	}
	r = HELD(pohm_cache_materialize(c, p->rel, mf));
	if (r >= 0 && why == POHM_LK_XATTR_GET && (flags & POHM_XATTR_USER))
		r = HELD(pohm_cache_xattr_ready(c, p->rel, mf));
	if (r >= 0 && why == POHM_LK_ACCESS)
		r = access_stored(c, p->rel, flags);
	return counted(why == POHM_LK_OPENDIR ? POHM_ST_READDIR : POHM_ST_LOOKUP,
		       r < 0 ? r : r == 0 && why == POHM_LK_ACCESS ? 0 : POHM_PASS);
}

/*
 * A path whose name below the prefix does not fit struct pohm_path
 * (POHM_PATH_TRUNC, hooks_stack.c): the cache cannot name it, so the call
 * fails with -ENAMETOOLONG rather than reach the local file alone (issue
 * 19 item 10).  POHM_PASS in passthrough tests, the mount's error when it
 * could not be opened.
 */
int pohm_hk_too_long(void)
{
	int r;

	return cache(&r) ? -ENAMETOOLONG : r;
}

int pohm_hk_lookup(enum pohm_lookup why, const struct pohm_path *p, int flags)
{
	int r;

	busy_enter_drain();
	r = hook_lookup(why, p, flags);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- directories */

static int hook_readdir(DIR *dir, int fd, struct dirent64 *ent)
{
	struct pohm_cache *c;
	struct stat st;
	int r;

	if (!strcmp(ent->d_name, ".pohmelfs-staging"))
		return 1;
	if (!(c = cache(&r)) || fd < 0)
		return 0;
	if (!pohm_sys_fstatat(fd, ent->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
		pohm_cache_stat_fix(c, &st);
		ent->d_ino = st.st_ino;
		ent->d_type = IFTODT(st.st_mode);	/* a stub's is its stored type */
	}
	return 0;
}

int pohm_hk_readdir(DIR *dir, int fd, struct dirent64 *ent)
{
	int r;

	busy_enter();
	r = hook_readdir(dir, fd, ent);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- fds */

static void note_dirty(uint64_t ino)
{
	size_t i;

	pthread_mutex_lock(&dirty_lock);
	for (i = 0; i < ndirty && dirty[i] != ino; i++)
		;
	if (i == ndirty) {
		if (ndirty == capdirty) {
			size_t cap = capdirty ? capdirty * 2 : 16;
			uint64_t *d = realloc(dirty, cap * sizeof(*d));

			if (d) {
				dirty = d;
				capdirty = cap;
			}
		}
		if (ndirty < capdirty)
			dirty[ndirty++] = ino;
	}
	pthread_mutex_unlock(&dirty_lock);
}

/*
 * Push through fd, or through the read-only shadow of its inode when fd
 * is write-only (shadow.c: the shadow stays open until just before the
 * host's last close of the inode, so no POSIX lock of the program is
 * released by a push).  -EACCES/-EPERM: no shadow can be opened (no read
 * permission); the caller hands the push to pohmelfsd.
 */
/* May we execute path?  errno untouched (a host's close must not see ENOENT). */
static int may_exec(const char *path)
{
	int saved = errno, ok = !syscall(SYS_faccessat, AT_FDCWD, path, X_OK, 0);

	errno = saved;
	return ok;
}

static void daemon_start(struct umount *um);

static int push_fd(struct pohm_cache *c, int fd)
{
	int r, shadow;

	r = HELD(pohm_cache_push_fd(c, fd));
	if (r != -EBADF)
		return r;
	shadow = pohm_shadow_get(fd);
	if (shadow < 0)
		return shadow == -EBADF ? 0 : shadow;	/* not a regular file: nothing to push */
	return HELD(pohm_cache_push_fd(c, shadow));
}

/* A push no fd of ours can read: pohmelfsd pushes it (maybe with other rights). */
static void hand_to_daemon(struct umount *um, uint64_t ino, int r)
{
	pohm_warn("a file written under the prefix cannot be read back for its push (%s); "
		  "pohmelfsd will push it", strerror(-r));
	note_dirty(ino);
	pohm_hold();
	daemon_start(um);
	pohm_unhold();
}

/*
 * The daemon's environment: the host's without LD_PRELOAD (pohmelfsd must
 * not run under the shim).  Built before any fork, so that the children
 * only make system calls.  A malloc'd array of environ's pointers, or NULL.
 */
static char **daemon_env(void)
{
	char **env;
	size_t n = 0, i, j = 0;

	while (environ && environ[n])
		n++;
	env = malloc((n + 1) * sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[j++] = environ[i];
	env[j] = NULL;
	return env;
}

/* clone(2) without CLONE_VM: a copy of this process, like fork but with no
 * atfork handlers, and with exit signal sig (0: none, so the host gets no
 * SIGCHLD and its wait calls without __WCLONE/__WALL never see it). */
static pid_t clone_copy(int sig)
{
	return (pid_t)syscall(SYS_clone, (unsigned long)sig, NULL, NULL, NULL, 0UL);
}

/* The kernel's struct sigaction for rt_sigaction(2) (x86-64 layout). */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/*
 * In the grandchild, before execve: only system calls (it is a copy of a
 * possibly multi-threaded host, made without glibc's fork).  Every handler
 * back to SIG_DFL (a host handler must never run in our copy; ignored
 * signals stay ignored across exec otherwise), then an empty mask.
 */
static __attribute__((noreturn)) void daemon_exec(const char *path, char **env,
						  const uint64_t *empty)
{
	struct ksigaction dfl = { SIG_DFL, 0, NULL, 0 };
	char *argv[] = { (char *)path, NULL };
	int fd, sig;

	for (sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(uint64_t));
	syscall(SYS_setsid);
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
	if (fd >= 0) {
		syscall(SYS_dup2, fd, 0);
		syscall(SYS_dup2, fd, 1);
		syscall(SYS_dup2, fd, 2);
	}
	syscall(SYS_close_range, 3, ~0U, 0);	/* fd itself too when it was >= 3 */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, empty, NULL, sizeof(uint64_t));
	syscall(SYS_execve, path, argv, env);
	syscall(SYS_exit, 127);
	__builtin_unreachable();
}

/*
 * Start pohmelfsd at path, detached, so that the host never sees a child
 * of ours: an intermediate copy with no exit signal (no SIGCHLD; invisible
 * to the host's waitpid(-1), which waits for SIGCHLD children only) makes
 * the daemon and exits; we reap it with __WCLONE, retrying EINTR.  The
 * daemon, orphaned, belongs to init (or the nearest subreaper).  All
 * signals stay blocked in this thread from before the clone until the
 * reap: no host handler runs in a copy before its exec.  The intermediate
 * closes the host's fds (0-2 onto /dev/null) before it makes the daemon.
 */
static void spawn_daemon(const char *path)
{
	uint64_t all = ~0ULL, empty = 0, old;
	char **env = daemon_env();
	int saved = errno;
	pid_t pid;
	long r;

	if (!env)
		return;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(uint64_t));
	pid = clone_copy(0);
	if (pid == 0) {
		/* Let go of the host's fds before the daemon is made: once we
		 * are reaped, no copy holds them (a copy that still held the
		 * writing fd of a file just written would make its exec fail
		 * ETXTBSY; every write-open may spawn, decision 0016). */
		int nul = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);

		if (nul >= 0) {
			syscall(SYS_dup2, nul, 0);
			syscall(SYS_dup2, nul, 1);
			syscall(SYS_dup2, nul, 2);
		}
		syscall(SYS_close_range, 3, ~0U, 0);
		if (clone_copy(0) == 0)
			daemon_exec(path, env, &empty);
		syscall(SYS_exit, 0);	/* the daemon, or its failed clone, goes on alone */
	}
	if (pid > 0)
		do
			r = syscall(SYS_wait4, pid, NULL, __WCLONE, NULL);
		while (r < 0 && errno == EINTR);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(uint64_t));
	free(env);
	errno = saved;
}

/*
 * Make sure pohmelfsd runs for um's cache: nothing when its lock is held,
 * else spawn it (at most once a second per process and mount); it exits
 * when idle and no inode is open for write.  Only while the process runs
 * as um's user: the daemon inherits the euid, and with it finds the same
 * cache_dir (pohm_mount_cache_dir).
 */
static void daemon_start(struct umount *um)
{
	Dl_info info;
	char path[PATH_MAX], *slash;
	uint64_t now;

	if ((uid_t)syscall(SYS_geteuid) != um->m.owner)
		return;
	if (pohm_cache_daemon_running(um->m.cache))
		return;	/* one fcntl: its lock is held */
	now = pohm_sys_mono_ns();
	pthread_mutex_lock(&dirty_lock);
	if (um->spawn_ns && now - um->spawn_ns < 1000000000ULL) {
		pthread_mutex_unlock(&dirty_lock);
		return;	/* spawned a moment ago: still starting (or cannot start) */
	}
	um->spawn_ns = now;
	pthread_mutex_unlock(&dirty_lock);
	if (!dladdr((void *)daemon_start, &info) || !info.dli_fname)
		return;
	snprintf(path, sizeof(path), "%s", info.dli_fname);
	slash = strrchr(path, '/');
	if (!slash)
		return;
	/* build/libpohmelfs.so → build/pohmelfsd; PREFIX/lib → PREFIX/bin. */
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "pohmelfsd");
	if (!may_exec(path)) {
		snprintf(slash, sizeof(path) - (size_t)(slash - path), "/../bin/pohmelfsd");
		if (!may_exec(path))
			return;
	}
	spawn_daemon(path);
}

static void nap_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	syscall(SYS_nanosleep, &ts, NULL);
}

/* Free bytes on the prefix's filesystem. */
static uint64_t prefix_free(struct umount *um)
{
	struct statfs sfs;

	if (syscall(SYS_fstatfs, pohm_cache_prefix_fd(um->m.cache), &sfs))
		return 0;
	return (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
}

/*
 * The cache's space callback (pohm_cache_set_space_fn).  need == 0: data
 * was fetched; with cache_size or cache_min_free set, pohmelfsd must run
 * to keep the bounds.  need > 0: the disk is full; ask pohmelfsd (started
 * if it does not run) for that much room through its wake FIFO and wait
 * up to 5 s for it.  The
 * eviction itself never runs here: it takes leases, whose breaks signal
 * the lease holder, and a host process must not get signals from us.
 */
static int space_fn(void *arg, uint64_t need)
{
	struct umount *um = arg;
	unsigned mib = (unsigned)((need >> 20) + 1 < 0x7fffffff ? (need >> 20) + 1 : 0x7fffffff);
	uint64_t t0;
	int r;

	if (!need) {
		if (pohm_config_raw(&mount_cfg, "cache_size") ||
		    pohm_config_raw(&mount_cfg, "cache_min_free"))
			daemon_start(um);
		return 0;
	}
	/* Through its wake FIFO (no pid, no signal); started if it does not
	 * run, and given 2 s to open the FIFO. */
	r = pohm_cache_daemon_ask_room(um->m.cache, mib);
	for (t0 = pohm_sys_mono_ns(); r == -ESRCH && pohm_sys_mono_ns() - t0 < 2000000000ULL;) {
		if (!pohm_cache_daemon_running(um->m.cache)) {
			pthread_mutex_lock(&dirty_lock);
			um->spawn_ns = 0;	/* it left when idle: start it again */
			pthread_mutex_unlock(&dirty_lock);
			daemon_start(um);
		}
		nap_ms(20);
		r = pohm_cache_daemon_ask_room(um->m.cache, mib);
	}
	if (r)
		return -ENOSPC;
	for (t0 = pohm_sys_mono_ns(); pohm_sys_mono_ns() - t0 < 5000000000ULL;) {
		if (prefix_free(um) >= need)
			return 0;
		nap_ms(20);
	}
	return -ENOSPC;
}

/*
 * A writing fd opened before a switch to another user belongs to the
 * first user's cache: the new user's cache does not know the file, its
 * push here finds nothing to do, and the first user's pohmelfsd or
 * `pohmelfs sync` pushes it (libpohmelfs(7) LIMITS).
 */
static int held_writer(uint64_t dev, uint64_t ino, int except);

static int hook_close(int fd, const struct pohm_fd_info *fi)
{
	struct umount *um;
	struct pohm_cache *c;
	struct stat st;
	int r, last;

	if (!(fi->flags & POHM_FD_WRITE) || !(um = mount_here(&r))) {
		pohm_shadow_host_closing(fd);	/* a reader may be the inode's last fd */
		return 0;
	}
	c = um->m.cache;
	/* Is this the process's last writing fd of the file?  While another
	 * one is open (Python's mmap keeps a dup of the fd it maps) the file
	 * is still being written: it stays open for write (writer.c), and
	 * under sync_on_close that fd's close pushes (issue 22 item 12); the
	 * exit pushes it at the latest. */
	last = !pohm_sys_fstat(fd, &st) && S_ISREG(st.st_mode);
	if (last && held_writer((uint64_t)st.st_dev, (uint64_t)st.st_ino, fd)) {
		last = 0;
		if (um->m.sync_on_close) {
			pohm_shadow_host_closing(fd);
			counted(POHM_ST_CLOSE, 0);
			note_dirty(fi->cookie);
			return 0;
		}
	}
	if (um->m.sync_on_close) {
		r = push_fd(c, fd);
		pohm_shadow_host_closing(fd);
		/* Pushed: the inode is no longer open for write here (after the
		 * push, so pohmelfsd does not push it at the same time). */
		if (last)
			HELD((pohm_cache_writer_close(c, (uint64_t)st.st_dev, (uint64_t)st.st_ino), 0));
		if (r < 0 && pohm_mount_offline(&um->m)) {
			/* Offline: the data stays in the cache, and pohmelfsd
			 * pushes it when the storage answers. */
			counted(POHM_ST_CLOSE, 0);
			note_dirty(fi->cookie);
			pohm_hold();
			daemon_start(um);
			pohm_unhold();
			return 0;
		}
		if (r != -EACCES && r != -EPERM)
			return counted(POHM_ST_CLOSE, r < 0 ? -EIO : 0);
		/* A write-only fd on a file we may not read: another process
		 * (pohmelfsd, maybe with other rights) pushes it, the close succeeds. */
		counted(POHM_ST_CLOSE, 0);
		hand_to_daemon(um, fi->cookie, r);
		return 0;
	}
	pohm_shadow_host_closing(fd);
	if (last)
		HELD((pohm_cache_writer_close(c, (uint64_t)st.st_dev, (uint64_t)st.st_ino), 0));
	counted(POHM_ST_CLOSE, 0);
	/* Pushed at exit and by pohmelfsd meanwhile. */
	note_dirty(fi->cookie);
	pohm_hold();
	daemon_start(um);
	pohm_unhold();
	return 0;
}

int pohm_hk_close(int fd, const struct pohm_fd_info *fi)
{
	int r;

	busy_enter_drain();
	r = hook_close(fd, fi);
	busy_leave();
	return r;
}

/* Is the local file (dev, ino) open through an fd of this process under the prefix? */
static int held_here(void *arg, uint64_t dev, uint64_t ino)
{
	struct pohm_fd_info fi;
	struct stat st;
	int fd, max = pohm_fd_max();

	(void)arg;
	for (fd = 0; fd <= max; fd++)
		if (pohm_fd_lookup(fd, &fi) && !pohm_sys_fstat(fd, &st) &&
		    (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino)
			return 1;
	return 0;
}

/* Is the local file (dev, ino) open for writing through an fd of this
 * process other than except (-1: any)? */
static int held_writer(uint64_t dev, uint64_t ino, int except)
{
	struct pohm_fd_info fi;
	struct stat st;
	int fd, max = pohm_fd_max();

	for (fd = 0; fd <= max; fd++)
		if (fd != except && pohm_fd_lookup(fd, &fi) && (fi.flags & POHM_FD_WRITE) &&
		    !pohm_sys_fstat(fd, &st) && (uint64_t)st.st_dev == dev &&
		    (uint64_t)st.st_ino == ino)
			return 1;
	return 0;
}

/*
 * Push everything dirty without touching the process's POSIX locks: files
 * it has open through its own fds (pread on them), the others by path.
 * but_writers: leave out the files this process still has open for
 * writing (their writer's close, fsync or exit pushes them, or pohmelfsd):
 * a munmap ends a writer, not a write session (issue 22 item 12).
 */
static int sync_process(struct umount *um, int but_writers)
{
	struct pohm_cache *c = um->m.cache;
	struct pohm_fd_info fi;
	struct stat st;
	int fd, max = pohm_fd_max(), r, err = 0;

	for (fd = 0; fd <= max; fd++) {
		if (!pohm_fd_lookup(fd, &fi) || (fi.flags & (POHM_FD_DIR | POHM_FD_PATH)))
			continue;
		if (but_writers && ((fi.flags & POHM_FD_WRITE) ||
				    (!pohm_sys_fstat(fd, &st) &&
				     held_writer((uint64_t)st.st_dev, (uint64_t)st.st_ino, -1))))
			continue;
		r = push_fd(c, fd);
		if (r == -EACCES || r == -EPERM)
			hand_to_daemon(um, fi.cookie, r);
		else if (r < 0)
			err = r;
	}
	r = HELD(pohm_cache_sync_others(c, held_here, NULL));
	return r < 0 ? r : err;
}

static int hook_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi)
{
	struct umount *um;
	int r;

	if (!(um = mount_here(&r)))
		return r == POHM_PASS ? 0 : r;
	if (op == POHM_SYNC_ALL || op == POHM_SYNC_FS)
		r = sync_process(um, 0);
	else if ((r = push_fd(um->m.cache, fd)) == -EACCES || r == -EPERM) {
		hand_to_daemon(um, fi->cookie, r);
		r = 0;
	}
	return counted(POHM_ST_SYNC, r < 0 ? -EIO : 0);
}

int pohm_hk_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi)
{
	int r;

	busy_enter_drain();
	r = hook_sync(op, fd, fi);
	busy_leave();
	return r;
}

static int hook_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi,
		       void *addr, size_t len)
{
	struct umount *um;
	int r;

	if (!(um = mount_here(&r)))
		return 0;
	/* A writable shared mapping writes the file until it is unmapped,
	 * maybe after its fd's close (whose push came before those writes):
	 * the exit pushes it if no munmap did, and the inode stays open for
	 * write until the process ends (writer.c). */
	if (ev == POHM_EV_MAP_WRITE) {
		struct stat st;

		if (fi)
			note_dirty(fi->cookie);
		if (fd >= 0 && !pohm_sys_fstat(fd, &st))
			HELD((pohm_cache_writer_mapped(um->m.cache, (uint64_t)st.st_dev,
						       (uint64_t)st.st_ino), 0));
		return 0;
	}
	/* msync(MS_SYNC) promises what fsync does: everything, now.  A munmap
	 * ends a writer: what no open fd of ours still writes travels now. */
	if (ev == POHM_EV_MSYNC)
		return sync_process(um, 0) < 0 ? -EIO : 0;
	if (ev == POHM_EV_UNMAP)
		sync_process(um, 1);
	return 0;
}

int pohm_hk_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi,
		       void *addr, size_t len)
{
	int r;

	busy_enter();
	r = hook_fd_event(ev, fd, fi, addr, len);
	busy_leave();
	return r;
}

void pohm_hk_fd_inherited(int fd, struct pohm_fd_info *fi)
{
}

/* ---------------------------------------------------------------- processes */

/* The cumulative counters of um's cache and client (zero elsewhere). */
static void mount_counters(struct umount *um, struct pohm_stats *cur)
{
	struct pohm_cache_stats cs;
	struct pohm_net_counts nc;

	memset(cur, 0, sizeof(*cur));
	if (!um->m.cache)
		return;		/* a mount whose open failed (a bad configuration) */
	pohm_cache_get_stats(um->m.cache, &cs);
	cur->v[POHM_ST_MISSES] = cs.fetches;
	cur->v[POHM_ST_FETCHED_BYTES] = cs.fetched_bytes;
	cur->v[POHM_ST_PUSHES] = cs.pushes;
	cur->v[POHM_ST_PUSHED_BYTES] = cs.pushed_bytes;
	cur->v[POHM_ST_CONFLICTS] = cs.conflicts;
	cur->v[POHM_ST_RETRIES] = cs.retries;
	pohm_mount_net_counts(&um->m, &nc);
	cur->v[POHM_ST_NET_WAITS] = nc.waits;
	cur->v[POHM_ST_NET_REQUESTS] = nc.requests;
	cur->v[POHM_ST_NET_SETUP_WAITS] = nc.setup_waits;
	cur->v[POHM_ST_NET_SETUP_REQUESTS] = nc.setup_requests;
}

void pohm_hook_fork(enum pohm_fork_phase phase)
{
	/*
	 * The client notices the pid change on its next use and drops the
	 * inherited connections then.  Its pohm_net_atfork_* handlers are not
	 * called from here: the child handler frees memory, and our private
	 * allocator's own fork handlers may run after ours (a deadlock seen
	 * with `cp -a`); the client's lock is made new by that pid check.  The
	 * locks of the cache and the namespace are made new here (issue 19
	 * item 6): another thread may have held one at the fork.
	 */
	pohm_shadow_atfork(phase);
	if (phase == POHM_FORK_CHILD) {
		int i, n = __atomic_load_n(&nmounts, __ATOMIC_ACQUIRE);

		/* The child keeps every mount (its euid is the parent's); a
		 * mount another thread was opening at the fork stays unpublished. */
		pthread_mutex_init(&mounts_lock, NULL);
		pthread_mutex_init(&dirty_lock, NULL);
		pthread_mutex_init(&stats_lock, NULL);
		ndirty = 0;
		/* The parent's counts are the parent's to report. */
		memset(&proc_stats, 0, sizeof(proc_stats));
		for (i = 0; i < n; i++) {
			mounts[i].spawn_ns = 0;
			pohm_mount_atfork_child(&mounts[i].m);
			mount_counters(&mounts[i], &mount_reported[i]);
		}
	}
}

/* Push everything this process wrote, through the cache of its user now
 * (another user's cache_dir is closed to it: that user's pohmelfsd or
 * `pohmelfs sync` pushes what was left there). */
static void push_written(void)
{
	struct umount *um = mount_now();
	int r;

	if (!um)
		return;
	pthread_mutex_lock(&dirty_lock);
	r = (int)ndirty;
	ndirty = 0;
	pthread_mutex_unlock(&dirty_lock);
	if (r)
		sync_process(um, 0);
}

/*
 * This image's counters: added to the cache's total (pohmelfs stats) and,
 * with stats=1, printed as one table on stderr (or to the log= file).  At
 * exit, and at an exec that replaces the image.
 */
static void flush_stats(void)
{
	struct pohm_stats st, cur;
	struct umount *um = mount_now();
	char buf[2048], title[4200];
	unsigned i;
	int any = 0, fd;
	size_t n;

	if (!um)
		return;	/* counted in no cache_dir this user may write */
	for (i = 0; i < POHM_ST_COUNT; i++)
		st.v[i] = __atomic_exchange_n(&proc_stats.v[i], 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&stats_lock);
	mount_counters(um, &cur);
	for (i = 0; i < POHM_ST_COUNT; i++)
		if (cur.v[i]) {
			st.v[i] = cur.v[i] - mount_reported[um - mounts].v[i];
			mount_reported[um - mounts].v[i] = cur.v[i];
		}
	pthread_mutex_unlock(&stats_lock);
	st.v[POHM_ST_HITS] = st.v[POHM_ST_OPEN] > st.v[POHM_ST_MISSES] ?
			     st.v[POHM_ST_OPEN] - st.v[POHM_ST_MISSES] : 0;
	for (i = 0; i < POHM_ST_COUNT; i++)
		any |= st.v[i] != 0;
	if (!any)
		return;
	pohm_stats_merge(um->m.cache_dir, &st);
	if (!pohm_config_bool(&mount_cfg, "stats"))
		return;
	snprintf(title, sizeof(title), "pohmelfs[%d]: calls under %s", (int)pohm_sys_getpid(),
		 um->m.prefix);
	n = pohm_stats_format(buf, sizeof(buf), title, &st);
	if (mount_cfg.log[0]) {
		if ((fd = pohm_log_fd()) >= 0)	/* the log= file, opened by heavy_init */
			pohm_sys_write_full(fd, buf, n);
	} else if (stats_ifd >= 0 && (fd = pohm_ifd_fd(stats_ifd)) >= 0) {
		pohm_sys_write_full(fd, buf, n);
	}
}

/* POHMELFS_WLOCKS=... for the new image (shim.h): the open-for-write
 * locks that survive the exec with their writing fds. */
static size_t wlocks_env(char *buf, size_t size)
{
	static const char name[] = POHM_WLOCK_ENV "=";
	size_t n;

	if (!__atomic_load_n(&nmounts, __ATOMIC_ACQUIRE) || mounts[0].rc || size < sizeof(name) + 2 ||
	    !pohm_cache_writer_count(mounts[0].m.cache))
		return 0;
	memcpy(buf, name, sizeof(name) - 1);
	n = pohm_cache_writer_export(mounts[0].m.cache, buf + sizeof(name) - 1,
				     size - sizeof(name));
	if (!n)
		return 0;
	buf[sizeof(name) - 1 + n] = '\0';
	return sizeof(name) + n;
}

size_t pohm_hook_exec_env(char *buf, size_t size, int replacing)
{
	if (replacing) {
		push_written();
		flush_stats();
	}
	return wlocks_env(buf, size);
}

void pohm_hk_exit(void)
{
	if (!pohm_depth && pohm_sig_pending()) {
		pohm_busy++;
		sig_drain(1);
		pohm_busy--;
	}
	push_written();
	flush_stats();
}
