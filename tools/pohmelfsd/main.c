/*
 * pohmelfsd — the per-cache background process (DESIGN.md §2 "No threads in
 * host processes").  One runs per cache (an exclusive OFD lock on byte 0
 * of cache_dir/pohmelfsd.lock, which the kernel drops when it ends: the
 * library's liveness test, core/cache/writer.c; its pid in
 * cache_dir/pohmelfsd.pid, for signals and status only).  Every
 * sync_timeout seconds it pushes what is dirty in the cache (files closed
 * without sync_on_close, files left by processes that died or closed
 * behind the library's back, files changed by programs without the shim,
 * and names they made: pohm_cache_reconcile).  A file that a live process
 * still has open for write and changed within the last period is left to
 * its writer (whose last close or death brings a push anyway), for at most
 * 4 periods in a row (pohm_cache_sync_round).  It exits after --idle
 * seconds with nothing to push and no inode open for write (w.lock, writer.c):
 * it drops its lock first and looks at w.lock once more, so a writer that
 * came meanwhile either saw it running or is seen (decision 0016).
 * SIGTERM or SIGINT: one last push, then exit.
 *
 * It also keeps the cache within cache_size and cache_min_free: after each
 * push round it evicts clean, unopened files, least recently used first
 * (core/admin/cachetool.c).  A process whose fetch found the disk full
 * writes the MiB it needs into cache_dir/pohmelfsd.wake, a FIFO we keep
 * open (or sends SIGUSR1 with it, sigqueue, by hand): the daemon wakes at
 * once and evicts until that much is free, whatever the configured bounds.
 *
 *   pohmelfsd [--foreground] [--once] [--idle SECONDS]
 *
 * --once runs one round beside a running daemon (no lock, no pid file).
 *
 * Configured by the same POHMELFS_* variables and file as the library.
 * Logs go to the log= file when one is set (detached or not; never to the
 * stderr we inherited), else, detached, to cache_dir/pohmelfsd.log.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "sys.h"
#include "mount.h"

extern char **environ;

/* Set by the signal handlers, read by the main loop (this is our own process). */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t need_mib;	/* largest room asked for (wake FIFO or SIGUSR1)
						 * since the last round */

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_need(int sig, siginfo_t *si, void *uc)
{
	int mib = si->si_code == SI_QUEUE ? si->si_value.sival_int : 1;

	(void)sig;
	(void)uc;
	if (mib > need_mib)
		need_mib = mib;
}

/*
 * What this daemon pushed since its last report, added to the cache's total
 * after each round: `pohmelfs stats` counts every process that used the
 * cache, and pohmelfsd pushes what writers left (or got to first).
 */
static void report_stats(struct pohm_mount *m, struct pohm_cache_stats *last)
{
	struct pohm_cache_stats cs;
	struct pohm_stats st;

	memset(&st, 0, sizeof(st));
	pohm_cache_get_stats(m->cache, &cs);
	st.v[POHM_ST_PUSHES] = cs.pushes - last->pushes;
	st.v[POHM_ST_PUSHED_BYTES] = cs.pushed_bytes - last->pushed_bytes;
	st.v[POHM_ST_CONFLICTS] = cs.conflicts - last->conflicts;
	st.v[POHM_ST_RETRIES] = cs.retries - last->retries;
	*last = cs;
	if (st.v[POHM_ST_PUSHES] || st.v[POHM_ST_CONFLICTS] || st.v[POHM_ST_RETRIES])
		pohm_stats_merge(m->cache_dir, &st);
}

/* One eviction round: the configured bounds, raised by what was asked for. */
static void evict_round(struct pohm_ct *t, const struct pohm_config *cfg, const char *prefix)
{
	struct pohm_ct_limits lim = { 0, 0 };
	struct pohm_ct_clean res;
	struct statvfs vfs;
	uint64_t fs_size = 0, need = (uint64_t)need_mib << 20;
	int r;

	need_mib = 0;
	if (!statvfs(prefix, &vfs))
		fs_size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	pohm_ct_size_value(pohm_config_raw(cfg, "cache_size"), fs_size, &lim.max_bytes);
	pohm_ct_size_value(pohm_config_raw(cfg, "cache_min_free"), fs_size, &lim.min_free);
	if (need > lim.min_free)
		lim.min_free = need;
	r = pohm_ct_evict(t, &lim, &res, NULL, NULL);
	if (r)
		pohm_err("eviction failed: %s", strerror(-r));
	else if (res.stubbed || res.failed)
		pohm_info("evicted %llu file%s (%llu bytes); kept %llu dirty, %llu open, %llu "
			  "linked; %llu failed", (unsigned long long)res.stubbed,
			  res.stubbed == 1 ? "" : "s", (unsigned long long)res.freed,
			  (unsigned long long)res.dirty, (unsigned long long)res.busy,
			  (unsigned long long)res.linked, (unsigned long long)res.failed);
}

/* The usage: on stdout and status 0 when asked for (--help), else stderr and 2. */
static void usage(int asked)
{
	fprintf(asked ? stdout : stderr,
		"usage: pohmelfsd [--foreground] [--once] [--idle SECONDS]\n"
		"The cache's background process: pushes dirty files every sync_timeout\n"
		"seconds and keeps the cache within cache_size and cache_min_free.\n"
		"  --foreground    do not detach\n"
		"  --once          push what is dirty once, in the foreground, and exit\n"
		"  --idle SECONDS  exit after this long with nothing to push (default 60)\n"
		"Configured like the library (POHMELFS_*, pohmelfs.conf(5)); see pohmelfsd(8).\n");
	exit(asked ? 0 : 2);
}

/* Read every request in the wake FIFO ("MiB\n" lines) into need_mib. */
static void wake_read(int wfd)
{
	char buf[512], *p, *end;
	ssize_t n;
	long v;

	while ((n = read(wfd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		for (p = buf; *p; p = end) {
			v = strtol(p, &end, 10);
			if (end == p) {
				end = p + 1;
				continue;
			}
			if (v > 0 && v <= 0x7fffffff && v > need_mib)
				need_mib = (sig_atomic_t)v;
		}
	}
}

/* Sleep up to ns, waking early on a signal or a request in the wake FIFO. */
static void nap(uint64_t ns, int wfd)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };
	struct pollfd pfd = { wfd, POLLIN, 0 };

	if (wfd < 0) {
		nanosleep(&ts, NULL);
		return;
	}
	if (ppoll(&pfd, 1, &ts, NULL) > 0)
		wake_read(wfd);
}

/* cache_dir/pohmelfsd.pid := our pid, atomically (a temp file renamed over it). */
static void write_pid_file(const char *cache_dir)
{
	char path[4200], tmp[4232], pid[32];
	int fd, n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

	snprintf(path, sizeof(path), "%s/pohmelfsd.pid", cache_dir);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		pohm_warn("cannot write %s: %s", tmp, strerror(errno));
		return;
	}
	fchmod(fd, 0600);
	if ((write(fd, pid, (size_t)n) != n) | (close(fd) != 0) || rename(tmp, path)) {
		pohm_warn("cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
}

/* An error before the main loop: to the log= file when one is open (it is
 * where the user looks, and stderr may be a host's), else to stderr. */
static void say_error(const struct pohm_config *cfg, const char *msg)
{
	if (cfg->log[0] && pohm_log_fd() != 2)
		pohm_err("pohmelfsd: %s", msg);
	else
		fprintf(stderr, "pohmelfsd: %s\n", msg);
}

int main(int argc, char **argv)
{
	struct pohm_config cfg;
	struct pohm_mount m;
	struct pohm_ct t;
	struct sigaction sa;
	char err[1024], path[4200];
	int foreground = 0, once = 0, i, lockfd, logfd = -1, log_failed = 0, wfd, r;
	uint64_t idle_ns = 60ULL * 1000000000ULL, idle_since;
	struct pohm_cache_stats reported;
	struct pohm_sync_defer deferred;	/* files left to live writers (sync_round) */

	/* A writer's open-for-write lock fds survive its exec when its writing
	 * fd does (writer.c); one inherited here would keep that inode "open
	 * for write" for our whole life.  Nothing we need comes above 2. */
	pohm_sys_close_range(3U, ~0U, 0U);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--foreground"))
			foreground = 1;
		else if (!strcmp(argv[i], "--once"))
			once = 1;
		else if (!strcmp(argv[i], "--idle") && i + 1 < argc)
			idle_ns = strtoull(argv[++i], NULL, 10) * 1000000000ULL;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			usage(1);
		else
			usage(0);
	}
	r = pohm_config_load(&cfg, environ, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pohmelfsd: %s\n", err);
		return 2;
	}
	pohm_log_setup((enum pohm_log_level)cfg.log_level, -1);
	/* log=: every line goes to that file, detached or not, never to the
	 * stderr we inherited (when a host process started us, its stderr is
	 * /dev/null by then; by hand, log= still means the file).  A file
	 * that cannot be opened: the lines go where they would without log=
	 * (pohmelfsd.log once detached), with one line saying why. */
	if (cfg.log[0] && (r = pohm_log_open(cfg.log)) < 0) {
		log_failed = -r;
		pohm_log_setup((enum pohm_log_level)cfg.log_level, -1);
	}
	r = pohm_mount_open(&m, &cfg, err, sizeof(err));
	if (r) {
		say_error(&cfg, err);
		return 1;
	}
	/* The daemon's own files are 0600 whatever the umask it inherited (a
	 * host process with umask 0577 may have started it).  --once is one
	 * round by hand, beside a running daemon if there is one (pushes take
	 * turns per inode, eviction takes leases): it is not "the" daemon and
	 * takes neither the lock nor the pid file. */
	lockfd = once ? -1 : pohm_cache_daemon_lock(m.cache_dir);
	if (lockfd < 0 && !once) {
		if (lockfd == -EAGAIN) {
			if (foreground)
				fprintf(stderr, "pohmelfsd: already running for %s\n", m.prefix);
			pohm_mount_close(&m);
			return 0;
		}
		snprintf(path, sizeof(path), "%s/pohmelfsd.lock: %s", m.cache_dir,
			 strerror(-lockfd));
		say_error(&cfg, path);
		return 1;
	}
	if (!foreground && !once) {
		/* Detach: our own session, no terminal, standard fds on /dev/null or the log. */
		if (daemon(1, 1))
			return 1;
		if (!cfg.log[0] || log_failed) {
			snprintf(path, sizeof(path), "%s/pohmelfsd.log", m.cache_dir);
			logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
			if (logfd >= 0)
				fchmod(logfd, 0600);
		}
		i = open("/dev/null", O_RDWR);
		if (i >= 0) {
			dup2(i, 0);
			dup2(i, 1);
			dup2(logfd >= 0 ? logfd : i, 2);
			if (i > 2)
				close(i);
		}
	}
	if (log_failed)
		pohm_err("log=%s: %s; logging to %s", cfg.log, strerror(log_failed),
			 foreground || once ? "standard error" : "pohmelfsd.log");
	/* Requests for room (pohm_cache_daemon_ask_room): a FIFO, so that no
	 * process needs our pid (issue 19 item 11).  SIGUSR1 still works. */
	wfd = once ? -1 : pohm_cache_daemon_wake_open(m.cache_dir);
	if (wfd < -1)
		pohm_warn("%s/pohmelfsd.wake: %s; requests for room come by SIGUSR1 only",
			  m.cache_dir, strerror(-wfd));
	r = pohm_ct_open(&t, m.prefix, m.cache_dir, err, sizeof(err));
	if (r) {
		pohm_err("%s", err);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_sigaction = on_need;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Evicting holds a write lease for a moment: an open by someone else signals SIGIO. */
	signal(SIGIO, SIG_IGN);
	/* The pid file last: whoever reads it may signal us at once.  Written
	 * under a temporary name and renamed into place, so that a reader
	 * (`pohmelfs status`) never sees it empty or half written. */
	if (!once)
		write_pid_file(m.cache_dir);
	pohm_info("pohmelfsd %d: prefix %s, push every %.1f s", (int)getpid(), m.prefix,
		  (double)m.sync_timeout_ns / 1e9);

	idle_since = pohm_sys_mono_ns();
	memset(&reported, 0, sizeof(reported));
	memset(&deferred, 0, sizeof(deferred));
	for (;;) {
		i = pohm_cache_reconcile(m.cache);
		if (i < 0)
			pohm_err("reconcile: %s", strerror(-i));
		else if (i > 0)
			idle_since = pohm_sys_mono_ns();
		/* --once is a push by hand: everything dirty, live writers' too. */
		r = once ? pohm_cache_sync_all(m.cache)
			 : pohm_cache_sync_round(m.cache, m.sync_timeout_ns, &deferred);
		if (r < 0 && pohm_mount_offline(&m)) {
			/* No group answers: what is dirty waits, and so do we. */
			pohm_debug("push round: the storage is offline");
			idle_since = pohm_sys_mono_ns();
		} else if (r < 0)
			pohm_err("push round failed: %s", strerror(-r));
		else if (r > 0) {
			pohm_info("pushed %d file%s", r, r == 1 ? "" : "s");
			idle_since = pohm_sys_mono_ns();
		}
		report_stats(&m, &reported);
		evict_round(&t, &cfg, m.prefix);
		if (once || stop_requested)
			break;
		if (pohm_sys_mono_ns() - idle_since > idle_ns && !pohm_cache_writers_any(m.cache)) {
			/* Leave: the lock first, then one more look for writers
			 * (a writer tests the daemon after taking its w.lock byte). */
			close(lockfd);
			lockfd = -1;
			if (!pohm_cache_writers_any(m.cache))
				break;
			lockfd = pohm_cache_daemon_lock(m.cache_dir);
			if (lockfd < 0)
				break;	/* another pohmelfsd took over */
			idle_since = pohm_sys_mono_ns();
		}
		if (wfd >= 0)
			wake_read(wfd);
		if (!need_mib)
			nap(m.sync_timeout_ns, wfd);	/* a request or SIGUSR1 cuts it short */
	}
	/* Ours only: a successor may have written its own after our lock went. */
	snprintf(path, sizeof(path), "%s/pohmelfsd.pid", m.cache_dir);
	if ((i = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		char have[32];
		ssize_t n = read(i, have, sizeof(have) - 1);

		close(i);
		have[n > 0 ? n : 0] = '\0';
		if (atoi(have) == (int)getpid())
			unlink(path);
	}
	pohm_ct_close(&t);
	pohm_mount_close(&m);
	pohm_config_free(&cfg);
	if (wfd >= 0)
		close(wfd);
	if (lockfd >= 0)
		close(lockfd);
	return r < 0 ? 1 : 0;
}
