/*
 * hooks_cache.c — the storage side of the hooks (hooks.h): the pohm_hk_*
 * that hooks_stack.c's pohm_hook_* run on the library's stack, and the
 * hooks that need no stack (fork, exec_env, statfs_fix); every call under
 * the prefix goes to core/mount and core/cache.
 *
 * Heavy init (DESIGN.md §5) happens on the first hook call, in core/mount
 * (proc.c, pohm_proc_mount): the configuration, the client and the cache;
 * this file only passes it the shim's services (struct pohm_proc_glue).
 * The cache policy lives in core too (hooks.h says where).  If it fails, the
 * reason is logged once and every call under the prefix fails with ENOTCONN
 * (no server could be configured) or EIO; calls outside the prefix never
 * get here.  A cache belongs to one user: a process that switches to
 * another effective uid (setuid, seteuid) gets a mount of that user's own
 * at its first call under the prefix as that user (core/mount proc.c; a
 * refused per-user cache_dir fails its calls with EACCES).  Everything
 * runs with pohm_hold() held, so libc calls made by core/ (config files,
 * name lookups) pass straight through the wrappers.
 *
 * POHMELFS_TEST_PASSTHROUGH=1 (read only by the test build of the library,
 * build/test/: sys.h pohm_sys_test_switch; documented in libpohmelfs(7))
 * makes every hook pass (POHM_PASS, or the wrapper's real call alone, as
 * if no storage were there: mount_here): the interposition
 * layer's own tests (classification, errno, processes) run without a
 * cluster that way.
 *
 * Pushes: when a written file travels (close, fsync and sync, msync,
 * munmap, exit and exec) is decided in core/mount closepush.c, and what
 * an attribute change checks first and when it travels in procattr.c,
 * and a namespace change's storage cases in procns.c; this file hands
 * them the fd table and shadows (host_fds) and, for the one-call hooks
 * (open, stat, ns, attr), the wrapper's real call, made with the shim
 * busy (real_outside).
 * An open is core/mount procopen.c's: a write-open makes the inode "open
 * for write" (core/cache/writer.c, decision 0016) and makes sure pohmelfsd
 * runs, whatever sync_on_close says: a writer that never closes (_exit,
 * SIGKILL, a raw SYS_close) leaves its file dirty, and pohmelfsd pushes it.
 *
 * Sections: glue to core/mount · open · stat · namespace · attributes ·
 * lookups · directories · fds · processes.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "shim.h"
#include "hooks_stack.h"
#include "shadow.h"
#include "cache.h"
#include "sys.h"
#include "mount.h"

/* The mounts of this process live in core/mount (proc.c: heavy init, one
 * per effective uid, the call counters); this is what they ask of the
 * shim.  stats=1: a copy of the stderr the process started with (coreutils
 * close fd 2 in an atexit handler, before our destructor runs); written
 * once by glue_opened under heavy init's pthread_once, -1 if none. */
static int stats_ifd = -1;

static void glue_opened(struct pohm_mount *m, const struct pohm_config *cfg, int first);
static const struct pohm_proc_glue glue = {
	pohm_hold, pohm_unhold, pohm_log_configure, glue_opened,
};

/*
 * What core/mount's push decisions (closepush.c) need of this process's
 * fds: the fds under the prefix (fd.c's table), the read-only shadows of
 * write-only fds (shadow.c).
 */
/* The POHM_HOST_FD_* flags of a table entry's POHM_FD_* flags. */
static unsigned host_flags(unsigned f)
{
	return ((f & POHM_FD_WRITE) ? POHM_HOST_FD_WRITE : 0) |
	       ((f & (POHM_FD_DIR | POHM_FD_PATH)) ? POHM_HOST_FD_NODATA : 0) |
	       ((f & POHM_FD_WRONLY) ? POHM_HOST_FD_WRONLY : 0);
}

static int fds_next(int from, uint64_t *ino, unsigned *flags)
{
	struct pohm_fd_info fi;
	int fd, max = pohm_fd_max();

	for (fd = from; fd <= max; fd++)
		if (pohm_fd_lookup(fd, &fi)) {
			*ino = fi.cookie;
			*flags = host_flags(fi.flags);
			return fd;
		}
	return -1;
}

static const struct pohm_host_fds host_fds = {
	fds_next, pohm_shadow_get, pohm_shadow_host_closing, pohm_shadow_sweep, pohm_shadow_known,
};

/* What the first mount needs of the shim: the signal handlers' queue
 * (sigsafe.c), the open-for-write locks the previous image handed over
 * (shim.h), and the stats=1 copy of stderr.  Held. */
static void glue_opened(struct pohm_mount *m, const struct pohm_config *cfg, int first)
{
	int qfd, tfd, i, r;

	if (!first)
		return;
	/* Signal handlers' records go to this cache's queue (sigsafe.c). */
	r = pohm_cache_sigq_dirs(m->cache, &qfd, &tfd);
	if (!r) {
		qfd = pohm_sys_move_high(qfd);
		tfd = pohm_sys_move_high(tfd);
	}
	if (!r && qfd >= 0 && tfd >= 0)
		pohm_sig_queue_set(qfd, tfd);
	else
		pohm_debug("no signal queue (%s): a signal handler's changes live in memory",
			   strerror(r ? -r : EBADF));
	for (i = 0; i < pohm_nwlocks_in; i++) {
		r = pohm_cache_writer_adopt(m->cache, pohm_wlocks_in[i].fd, pohm_wlocks_in[i].ino,
					    pohm_wlocks_in[i].ldev, pohm_wlocks_in[i].lino);
		pohm_debug("inherited open-for-write lock fd %d of inode %llx: %s",
			   pohm_wlocks_in[i].fd, (unsigned long long)pohm_wlocks_in[i].ino,
			   r ? strerror(-r) : "adopted");
	}
	if (pohm_config_bool(cfg, "stats") && !cfg->log[0]) {
		int fd = pohm_sys_fcntl(2, F_DUPFD_CLOEXEC, POHM_FD_BASE);

		if (fd >= 0 && (stats_ifd = pohm_ifd_register((int)fd)) < 0)
			pohm_sys_close((int)fd);
	}
}

/* Atomic: 1 once this process asked core/mount for a mount since it
 * started or was forked (pohm_hook_fork resets it in the child: what the
 * parent's storage side holds is the parent's).  pohm_storage_idle reads it. */
static POHM_START_BSS int mount_asked;

/*
 * core/mount's fork child resets (pohm_proc_atfork_child: the parent's
 * dirty list, counters and kept bases dropped, core's mutexes made new)
 * of a fork from a single-threaded process, deferred to the child's first
 * use of the storage side: a shell's fork child that execs at once (issue
 * 23) never runs them, where they wrote some eleven pages of the parent's
 * heap and the library's data and faulted in five pages of their code.
 * With one thread at the fork no lock can be held by another thread, and
 * nothing of core/mount is read or written in the child before
 * fork_resets runs: every way in goes through mount_here,
 * pohm_hook_exec_env or pohm_hk_exit.  A threaded process's fork child
 * runs them at once, in the fork handler, as before (decisions 0059, 0066).
 * Atomic: FR_NONE, FR_DUE (set in the child by pohm_hook_fork), FR_RUNNING
 * (one thread runs them, fork_resetter; the others wait for FR_NONE).
 */
enum { FR_NONE, FR_DUE, FR_RUNNING };
static POHM_START_BSS int fork_reset_state;
/* Atomic: the thread running the resets (a nested call on it, from a
 * signal handler, must not wait for itself). */
static POHM_START_BSS pid_t fork_resetter;

static void fork_resets(void)
{
	int due = FR_DUE;

	if (__builtin_expect(__atomic_load_n(&fork_reset_state, __ATOMIC_ACQUIRE) == FR_NONE, 1))
		return;
	if (__atomic_compare_exchange_n(&fork_reset_state, &due, FR_RUNNING, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		__atomic_store_n(&fork_resetter, gettid(), __ATOMIC_RELAXED);
		pohm_proc_atfork_child();
		__atomic_store_n(&fork_resetter, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fork_reset_state, FR_NONE, __ATOMIC_RELEASE);
		return;
	}
	if (__atomic_load_n(&fork_resetter, __ATOMIC_RELAXED) == gettid())
		return;
	while (__atomic_load_n(&fork_reset_state, __ATOMIC_ACQUIRE) != FR_NONE)
		sched_yield();
}

/*
 * The mount for the calling thread's effective uid (core/mount
 * pohm_proc_mount), or NULL with *rc set: -errno when its open failed,
 * POHM_PASS in passthrough tests.
 */
static struct pohm_mount *mount_here(int *rc)
{
	struct pohm_mount *m;

	fork_resets();
	__atomic_store_n(&mount_asked, 1, __ATOMIC_RELAXED);
	m = pohm_proc_mount(&glue, rc);

	if (!m && *rc == POHM_PROC_PASS)
		*rc = POHM_PASS;
	return m;
}

/* The cache for the calling thread's euid, or NULL with *rc set (mount_here). */
static struct pohm_cache *cache(int *rc)
{
	struct pohm_mount *m = mount_here(rc);

	return m ? m->cache : NULL;
}

/* Atomic: 1 once a drain ran.  The process's first outermost hook drains
 * even with nothing pending: it opens the mount, whose queue asks for a
 * replay of older records, and so that replay (two folder reads) belongs
 * to the first operation, not to the next one (issue 23's counts). */
static int sig_drained;

/* Atomic: 1 while the last drain deferred records (pohm_sigq_bound.deferred):
 * each outermost hook drains until one defers none. */
static int sig_deferred;

/*
 * Paths a signal handler changed while this thread or another was inside
 * the shim (sigsafe.c): the local name is the truth now.  Gone locally →
 * removed from the storage (the walk brings its stub back first, then
 * unlink or rmdir removes both); present → pohmelfsd's reconcile adopts a
 * new name and its sync pushes a changed one.  Runs at the start of an
 * outermost hook and at exit, never inside the shim.
 */
/* Records a drain replays beyond those its call needs (pohm_cache_sigq_replay_for):
 * a handler whose records cost more round trips than its period allows must not
 * keep the thread in its drains (shim_procs 23 under TSan); pohmelfsd and later
 * drains take the rest. */
#define SIG_DRAIN_BUDGET	8
#define SIG_DRAIN_NS		(5 * 1000000ULL)	/* nor for longer than this */

/* The call a drain runs before: its paths (NULL when fewer), all set when one
 * could not be told (a path too long for rel: every record is applied). */
struct sig_call {
	const char *rel[2];
	int all;
};

static void sig_drain(int all, const struct sig_call *call)
{
	static struct pohm_path p;	/* sig_lock */
	static char abs[POHM_REL_MAX];	/* sig_lock */
	static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;	/* one drainer */
	struct pohm_mount *um;
	struct stat st;
	int r, n, replay, left = 0, daemon = 0;

	if (pthread_mutex_trylock(&sig_lock))
		return;	/* another thread drains */
	__atomic_store_n(&sig_drained, 1, __ATOMIC_RELAXED);
	if (pohm_sig_lost_take())
		pohm_warn("a signal handler changed names under the prefix while the shim was busy, "
			  "more than could be noted: pohmelfsd's reconcile adopts new names, removals "
			  "may come back");
	/* The mount first: a process's first one opens the queue, which asks
	 * for a replay of older records, done here at once. */
	um = mount_here(&r);
	/* This thread's handlers are done with their calls (all threads' at
	 * exit): their queue records may be replayed now. */
	replay = pohm_sig_commit(all) + pohm_sig_replay_take() +
		 __atomic_load_n(&sig_deferred, __ATOMIC_RELAXED);
	if (!um) {
		while (pohm_sig_take(abs, sizeof(abs)))
			;
		goto out;
	}
	/* Names the handlers could not record (their ring: no record entry
	 * free, the queue not open yet) become records, replayed below as the
	 * others; a name that cannot is settled here.  At most a ring's worth:
	 * a handler that keeps firing must not keep this call here. */
	for (n = 0; n < POHM_SIG_SLOTS && pohm_sig_take(abs, sizeof(abs)); n++) {
		if (!pohm_classify(AT_FDCWD, abs, &p) || !p.rel[0] || (p.flags & POHM_PATH_TRUNC))
			continue;
		pohm_hold();
		r = pohm_cache_sigq_put(um->cache, p.rel);
		pohm_unhold();
		if (!r) {
			replay = 1;
			continue;
		}
		if (pohm_sys_fstatat(pohm_cache_prefix_fd(um->cache), p.rel, &st,
				     AT_SYMLINK_NOFOLLOW) != -ENOENT)
			continue;	/* present: pohmelfsd's reconcile and sync */
		/* Only a name this cache knew (a changing call on a name never
		 * fetched says nothing of the storage), and no local stub
		 * brought back. */
		pohm_hold();
		pohm_cache_sigq_gone(um->cache, p.rel);	/* logs */
		pohm_unhold();
	}
	if (replay) {
		/* Lock-free names only here (removals, renames); a record that
		 * needs a file opened waits for pohmelfsd (started below). */
		struct pohm_sigq_bound bd = {
			{ call->rel[0], call->rel[1] }, SIG_DRAIN_BUDGET,
			pohm_sys_mono_ns() + SIG_DRAIN_NS, 0
		};

		pohm_hold();
		r = call->all ? pohm_cache_sigq_replay(um->cache, 0, &left)
			      : pohm_cache_sigq_replay_for(um->cache, &bd, &left);
		pohm_unhold();
		__atomic_store_n(&sig_deferred, !!bd.deferred, __ATOMIC_RELAXED);
		if (r < 0)
			pohm_warn("replaying the signal queue: %s", strerror(-r));
	}
	/* pohmelfsd for what the replay left (records needing a file opened,
	 * locked, failed or deferred) and for names settled above; not for a
	 * replay that found the queue empty (every process's first one: its
	 * queue's opening asks for one, for older records). */
	daemon = left || n || pohm_sig_pending();
out:
	pthread_mutex_unlock(&sig_lock);
	if (daemon)
		pohm_mount_daemon_start(um);
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
static void busy_enter_drain(const struct pohm_path *a, const struct pohm_path *b, int all)
{
	struct sig_call call = { { NULL, NULL }, 0 };

	if (!pohm_busy++ && !pohm_depth &&
	    (pohm_sig_pending() || !__atomic_load_n(&sig_drained, __ATOMIC_RELAXED) ||
	     __atomic_load_n(&sig_deferred, __ATOMIC_RELAXED))) {
		call.rel[0] = a ? a->rel : NULL;
		call.rel[1] = b ? b->rel : NULL;
		call.all = all || (a && (a->flags & POHM_PATH_TRUNC)) ||
			   (b && (b->flags & POHM_PATH_TRUNC));
		sig_drain(0, &call);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void busy_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pohm_busy--;
}

/* Run a core call with the shim held (core may call libc by name). */
#define HELD(expr) ({ int held_r_; pohm_hold(); held_r_ = (expr); pohm_unhold(); held_r_; })

/*
 * The wrapper's real call from inside a one-call hook (hooks.h struct
 * pohm_real_call), made from core (pohm_proc_real): with the shim's hold
 * released, as the wrapper would make it, but still busy.  A signal
 * handler that interrupts the real call interrupts a core function in the
 * middle of its operation (a create recorded and not yet opened, a
 * writer's open-for-write lock taken, the host's fd not yet in the table)
 * on the library's stack: its calls under the prefix must not run the
 * hooks there, so it is inside the shim as during the rest of the hook
 * (sigsafe.c: straight to libc, a change noted in the queue; the next
 * hook replays it, after the operation).  (Until session 12 the shim was
 * made "not busy" for the real call, as between the old before and after
 * hooks, and such a handler's unlink reached the storage while the open
 * it interrupted was in flight: doc/notes-s12-openpair.md.)
 */
static int real_outside(void *v)
{
	const struct pohm_real_call *real = v;
	int r;

	pohm_unhold();
	r = real->call(real->arg);
	pohm_hold();
	return r;
}

/* real_outside for the open by name in a directory (real->at). */
static int real_outside_at(void *v, int dirfd, const char *name, int more)
{
	const struct pohm_real_call *real = v;
	int r;

	pohm_unhold();
	r = real->at(real->arg, dirfd, name, more);
	pohm_hold();
	return r;
}

/* ---------------------------------------------------------------- open */

/* An open in one call: core/mount pohm_proc_open (procopen.c). */
static int hook_open(const struct pohm_path *p, int flags, mode_t mode, struct pohm_fd_info *fi,
		     const struct pohm_real_call *real)
{
	struct pohm_proc_real outside = { real_outside, (void *)real,
					  real->at ? real_outside_at : NULL };
	struct pohm_cache *c;
	unsigned pf = 0;
	int r;

	if (p->flags & POHM_PATH_TRUNC)
		return real->call(real->arg);
	if (!(c = cache(&r)))
		return r == POHM_PASS ? real->call(real->arg) : r;
	if (!p->rel[0] || (p->flags & POHM_PATH_SLASH) || !strcmp(p->path, ".") ||
	    !strcmp(p->path, ".."))
		pf |= POHM_POF_DIRNAME;
	if (p->len >= POHM_REL_MAX && (fi->flags & POHM_FD_WRITE))
		fi->flags |= POHM_FD_LONG;
	pohm_cache_list_failed();	/* a mark left by an earlier call is not this one's */
	r = HELD(pohm_proc_open(c, &host_fds, p->rel, pf, flags, mode, &fi->cookie, &outside));
	if (pohm_cache_list_failed() && r >= 0)
		fi->flags |= POHM_FD_UNLISTED;	/* its reads of entries list again (dir.c) */
	return r;
}

int pohm_hk_open(const struct pohm_path *p, int flags, mode_t mode, struct pohm_fd_info *fi,
		 const struct pohm_real_call *real)
{
	int r;

	busy_enter_drain(p, NULL, 0);
	r = hook_open(p, flags, mode, fi, real);
	busy_leave();
	return r;
}

/*
 * The mkstemp family's real call: real_outside, then the name libc chose
 * copied into p->rel.  glibc rewrites the template's X's in place, in the
 * part of the caller's path that rel ends with as spelled (its last
 * component: same bytes, same length), so that part is copied over rel's
 * end (same: its length, measured before the call).
 */
struct mktemp_real {
	const struct pohm_real_call *real;
	const struct pohm_path *p;
	size_t same;
};

static int real_mktemp(void *v)
{
	struct mktemp_real *m = v;
	int r = real_outside((void *)m->real);

	if (r >= 0)
		memcpy(m->p->rel + m->p->len - m->same,
		       m->p->path + strlen(m->p->path) - m->same, m->same);
	return r;
}

/* The mkstemp family in one call: core/mount pohm_proc_mktemp. */
static int hook_mktemp(const struct pohm_path *p, int flags, struct pohm_fd_info *fi,
		       const struct pohm_real_call *real)
{
	struct mktemp_real m = { real, p, 0 };
	struct pohm_proc_real outside = { real_mktemp, &m, NULL };
	struct pohm_cache *c;
	size_t plen;
	int r;

	if (p->flags & POHM_PATH_TRUNC)
		return real->call(real->arg);
	if (!(c = cache(&r)))
		return r == POHM_PASS ? real->call(real->arg) : r;
	plen = strlen(p->path);
	while (m.same < p->len && m.same < plen &&
	       p->rel[p->len - 1 - m.same] == p->path[plen - 1 - m.same])
		m.same++;
	return HELD(pohm_proc_mktemp(c, &host_fds, p->rel, flags, &fi->cookie, &outside));
}

int pohm_hk_mktemp(const struct pohm_path *p, int flags, struct pohm_fd_info *fi,
		   const struct pohm_real_call *real)
{
	int r;

	busy_enter_drain(p, NULL, 1);
	r = hook_mktemp(p, flags, fi, real);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- stat */

/* stat or statx by path (one of st, stx): core/mount pohm_proc_stat. */
static int hook_stat(const struct pohm_path *p, int flags, struct stat *st, struct statx *stx,
		     const struct pohm_real_call *real)
{
	struct pohm_proc_real outside = { real_outside, (void *)real, NULL };
	struct pohm_cache *c;
	int r;

	if (p->flags & POHM_PATH_TRUNC)
		return real->call(real->arg);
	if (!(c = cache(&r)))
		return r == POHM_PASS ? real->call(real->arg) : r;
	return HELD(pohm_proc_stat(c, p->rel, (flags & AT_SYMLINK_NOFOLLOW) ? POHM_PAF_NOFOLLOW : 0,
				   p->base, st, stx, &outside));
}

int pohm_hk_stat(const struct pohm_path *p, int flags, struct stat *st,
		 const struct pohm_real_call *real)
{
	int r;

	busy_enter_drain(p, NULL, 0);
	r = hook_stat(p, flags, st, NULL, real);
	busy_leave();
	return r;
}

int pohm_hk_statx(const struct pohm_path *p, int flags, unsigned mask, struct statx *stx,
		  const struct pohm_real_call *real)
{
	int r;

	busy_enter_drain(p, NULL, 0);
	r = hook_stat(p, flags, NULL, stx, real);
	busy_leave();
	return r;
}

/* fstat of a tracked fd: the overlay alone. */
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

/* ---------------------------------------------------------------- namespace */

/* The shim's namespace operations in core/mount's words (procns.c). */
static const enum pohm_proc_ns ns_op[] = {
	[POHM_NS_MKDIR] = POHM_PN_MKDIR,	[POHM_NS_RMDIR] = POHM_PN_RMDIR,
	[POHM_NS_UNLINK] = POHM_PN_UNLINK,	[POHM_NS_REMOVE] = POHM_PN_REMOVE,
	[POHM_NS_RENAME] = POHM_PN_RENAME,	[POHM_NS_LINK] = POHM_PN_LINK,
	[POHM_NS_SYMLINK] = POHM_PN_SYMLINK,	[POHM_NS_MKNOD] = POHM_PN_MKNOD,
};

static int hook_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		   const struct pohm_ns_arg *arg, const struct pohm_real_call *real)
{
	struct pohm_proc_real outside = { real_outside, (void *)real, NULL };
	struct pohm_proc_ns_arg pa = {
		arg->mode, (uint64_t)arg->dev, arg->flags, arg->target,
		!!((a->flags | (b ? b->flags : 0)) & POHM_PATH_SLASH),
	};
	struct pohm_cache *c;
	int r;

	if ((a->flags & POHM_PATH_TRUNC) || (b && (b->flags & POHM_PATH_TRUNC)))
		return real->call(real->arg);
	if (!(c = cache(&r)))
		return r == POHM_PASS ? real->call(real->arg) : r;
	return HELD(pohm_proc_ns(c, ns_op[op], a->rel, b ? b->rel : NULL, &pa, &outside));
}

int pohm_hk_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
	       const struct pohm_ns_arg *arg, const struct pohm_real_call *real)
{
	int r;

	busy_enter_drain(a, b, 0);
	r = hook_ns(op, a, b, arg, real);
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

/*
 * statfs/statvfs under the prefix: the cache_dir's file system's numbers
 * stand (nothing to fix yet; the cluster's free space could go into
 * f_bavail here).  The one hook without a storage call, so not on the
 * library's stack (hooks_stack.c).
 */
void pohm_hook_statfs_fix(const struct pohm_path *p, int fd, struct statfs *sf,
			  struct statvfs *sv)
{
}

/* ---------------------------------------------------------------- attributes */

/* The shim's attribute operations in core/mount's words (procattr.c). */
static const enum pohm_proc_attr attr_op[] = {
	[POHM_AT_CHMOD] = POHM_PA_MODE,		[POHM_AT_CHOWN] = POHM_PA_OWNER,
	[POHM_AT_TRUNCATE] = POHM_PA_SIZE,	[POHM_AT_UTIMES] = POHM_PA_TIMES,
	[POHM_AT_XATTR_SET] = POHM_PA_XATTR,	[POHM_AT_XATTR_REMOVE] = POHM_PA_XATTR,
};

static unsigned attr_flags(int flags)
{
	return ((flags & AT_SYMLINK_NOFOLLOW) ? POHM_PAF_NOFOLLOW : 0) |
	       ((flags & POHM_ATTR_SET) ? POHM_PAF_SET : 0) |
	       ((flags & POHM_ATTR_TOUCH) ? POHM_PAF_TOUCH : 0);
}

/* The name of p for core, NULL if none or too long to resolve here. */
static const char *attr_rel(const struct pohm_path *p)
{
	return p && !(p->flags & POHM_PATH_TRUNC) ? p->rel : NULL;
}

static int hook_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
		     const struct pohm_fd_info *fi, int flags, const struct pohm_real_call *real)
{
	struct pohm_proc_real outside = { real_outside, (void *)real, NULL };
	struct pohm_cache *c;
	int r;

	if (!(c = cache(&r)))
		return r == POHM_PASS ? real->call(real->arg) : r;
	return HELD(pohm_proc_attr(c, &host_fds, attr_op[op], attr_rel(p), fd, attr_flags(flags),
				   &outside));
}

int pohm_hk_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
		 const struct pohm_fd_info *fi, int flags, const struct pohm_real_call *real)
{
	int r;

	busy_enter_drain(p, NULL, 0);
	r = hook_attr(op, p, fd, fi, flags, real);
	busy_leave();
	return r;
}

/* ---------------------------------------------------------------- lookups */

static int hook_lookup(enum pohm_proc_lookup why, const struct pohm_path *p, int flags)
{
	struct pohm_cache *c;
	unsigned pf = 0;
	int r;

	if (p->flags & POHM_PATH_TRUNC)
		return POHM_PASS;
	if (!(c = cache(&r)))
		return r;
	if (why == POHM_PL_XATTR_GET)
		pf = ((flags & AT_SYMLINK_NOFOLLOW) ? POHM_PLF_NOFOLLOW : 0) |
		     ((flags & POHM_XATTR_USER) ? POHM_PLF_USER_XATTR : 0);
	else if (why == POHM_PL_ACCESS && (flags & POHM_ACCESS_EFFECTIVE))
		pf = POHM_PLF_EFFECTIVE;
	pohm_cache_list_failed();	/* a mark left by an earlier call is not this one's */
	r = HELD(pohm_proc_lookup(c, why, p->rel, flags & (R_OK | W_OK | X_OK), pf));
	if (pohm_cache_list_failed() && why == POHM_PL_OPENDIR && r == POHM_PROC_PASS)
		return POHM_LOOKUP_UNLISTED;
	return r == POHM_PROC_PASS ? POHM_PASS : r;
}

/*
 * A path that could not be made whole (hooks_stack.c: a name below the
 * prefix longer than POHM_REL_CAP, or no memory for it): err
 * (-ENAMETOOLONG, -ENOMEM), the call not made, rather than reach the
 * local file alone (issue 19 item 10).  POHM_PASS in passthrough tests,
 * the mount's error when it could not be opened.
 */
int pohm_hk_too_long(int err)
{
	int r;

	return cache(&r) ? err : r;
}

int pohm_hk_lookup(enum pohm_proc_lookup why, const struct pohm_path *p, int flags)
{
	int r;

	busy_enter_drain(p, NULL, 0);
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

	if (!strcmp(ent->d_name, POHM_STAGING_NAME))
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

static int hook_close(int fd, const struct pohm_fd_info *fi)
{
	struct pohm_mount *um;
	int r;

	if (!(fi->flags & POHM_FD_WRITE) || !(um = mount_here(&r))) {
		pohm_shadow_host_closing(fd, NULL);	/* a reader may be the inode's last fd */
		return 0;
	}
	/* No name in the journal (a name of 4096 bytes or more below the
	 * prefix): neither pohmelfsd nor the exit could find the file, so it
	 * travels now, through this fd, as with sync_on_close (issue 19 item
	 * 10).  A failure stays on the dirty list as any close's. */
	if (fi->flags & POHM_FD_LONG)
		(void)HELD(pohm_proc_sync(um, &host_fds, fd, fi->cookie));
	return HELD(pohm_proc_close(um, &host_fds, fd, fi->cookie, host_flags(fi->flags)));
}

int pohm_hk_close(int fd, const struct pohm_fd_info *fi)
{
	int r;

	busy_enter_drain(NULL, NULL, 0);
	r = hook_close(fd, fi);
	busy_leave();
	return r;
}

static int hook_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi)
{
	struct pohm_mount *um;
	int r;

	if (!(um = mount_here(&r)))
		return r == POHM_PASS ? 0 : r;
	if (op == POHM_SYNC_ALL || op == POHM_SYNC_FS)
		return HELD(pohm_proc_sync(um, &host_fds, -1, 0));
	return HELD(pohm_proc_sync(um, &host_fds, fd, fi->cookie));
}

int pohm_hk_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi)
{
	int r;

	busy_enter_drain(NULL, NULL, 0);
	r = hook_sync(op, fd, fi);
	busy_leave();
	return r;
}

static int hook_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi,
		       void *addr, size_t len)
{
	struct pohm_mount *um;
	int r;

	if (!(um = mount_here(&r)))
		return 0;
	if (ev == POHM_EV_MAP_WRITE)
		return HELD((pohm_proc_mapped(um, &host_fds, fd, fi ? &fi->cookie : NULL), 0));
	if (ev == POHM_EV_MSYNC || ev == POHM_EV_UNMAP)
		return HELD(pohm_proc_unmapped(um, &host_fds, ev == POHM_EV_MSYNC));
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
	 *
	 * The parent counts the fork: core/cache only, no fork_resets first
	 * (a not-yet-reset child's own forks count too), nothing of core/mount.
	 */
	if (phase == POHM_FORK_PREPARE || phase == POHM_FORK_PREPARE_NOLOCK ||
	    phase == POHM_FORK_PARENT)
		pohm_cache_fork_mark();
	if (phase == POHM_FORK_PREPARE_NOLOCK)
		return;
	if (phase != POHM_FORK_CHILD_NOLOCK)
		pohm_shadow_atfork(phase);
	if (phase == POHM_FORK_CHILD) {
		pohm_proc_atfork_child();	/* the mounts, the counters, the dirty list */
		__atomic_store_n(&fork_resetter, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fork_reset_state, FR_NONE, __ATOMIC_RELAXED);
	} else if (phase == POHM_FORK_CHILD_NOLOCK) {
		/* The same resets, at the child's first use (fork_resets). */
		__atomic_store_n(&fork_resetter, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fork_reset_state, FR_DUE, __ATOMIC_RELAXED);
	}
	/* The child's exit and exec push, count and keep nothing of the
	 * parent's (core/mount pohm_proc_atfork_child and the kept bases start
	 * empty): idle until it reaches the storage itself. */
	if (phase == POHM_FORK_CHILD || phase == POHM_FORK_CHILD_NOLOCK)
		__atomic_store_n(&mount_asked, 0, __ATOMIC_RELAXED);
}

/*
 * Push everything this process wrote (core/mount pohm_proc_exit_push).
 * No settle of the deferred writes when this thread is inside the shim
 * (pohm_busy: an exit from a signal handler that interrupted it): the
 * settle waits on the net's lock, which the interrupted frame may hold
 * (review of s19-mv4); their outcomes are the readers' to settle.
 */
static void push_written(void)
{
	int settle = !pohm_busy;

	HELD((pohm_proc_exit_push(&host_fds, settle), 0));
}

/* This image's counters (core/mount pohm_proc_flush_stats): at exit, and
 * at an exec that replaces the image. */
static void flush_stats(void)
{
	pohm_proc_flush_stats(stats_ifd >= 0 ? pohm_ifd_fd(stats_ifd) : -1);
}

/* POHMELFS_WLOCKS=... for the new image (shim.h): the open-for-write
 * locks that survive the exec with their writing fds. */
static size_t wlocks_env(char *buf, size_t size)
{
	static const char name[] = POHM_WLOCK_ENV "=";
	struct pohm_mount *first = pohm_proc_mount_first();
	size_t n;

	if (!first || size < sizeof(name) + 2 || !pohm_cache_writer_count(first->cache))
		return 0;
	memcpy(buf, name, sizeof(name) - 1);
	n = pohm_cache_writer_export(first->cache, buf + sizeof(name) - 1,
				     size - sizeof(name));
	if (!n)
		return 0;
	buf[sizeof(name) - 1 + n] = '\0';
	return sizeof(name) + n;
}

/* No mount was asked for since the start or the fork, so core/mount holds
 * nothing of this process to push, count or keep (pohm_proc_exit_push,
 * pohm_proc_flush_stats), and no signal handler's record waits for
 * sig_drain.  Open-for-write locks inherited through a fork (wlocks_env)
 * go with fds under the prefix: pohm_exec_env asks for them whenever it
 * hands fds over. */
int pohm_storage_idle(void)
{
	return !__atomic_load_n(&mount_asked, __ATOMIC_RELAXED) && !pohm_sig_pending();
}

size_t pohm_hook_exec_env(char *buf, size_t size, int replacing)
{
	fork_resets();
	if (replacing) {
		push_written();
		flush_stats();
	}
	return wlocks_env(buf, size);
}

void pohm_hk_exit(void)
{
	fork_resets();
	if (!pohm_depth && pohm_sig_pending()) {
		struct sig_call none = { { NULL, NULL }, 0 };

		pohm_busy++;
		sig_drain(1, &none);
		pohm_busy--;
	}
	push_written();
	flush_stats();
}
