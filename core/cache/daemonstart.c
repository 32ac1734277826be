/*
 * daemonstart.c — starting pohmelfsd from a host process (moved from
 * preload/hooks_cache.c, issue 18/20): find the binary next to the
 * library, and spawn it detached so that the host never sees a child of
 * ours.  Who asks for a start and when (a write-open, a close, a full
 * disk) is the caller's policy; how often is bounded here.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "sys.h"

extern char **environ;

/* May we execute path?  errno untouched (a host's close must not see ENOENT). */
static int may_exec(const char *path)
{
	return !pohm_sys_faccessat(AT_FDCWD, path, X_OK);
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

/*
 * In the grandchild, before execve: only system calls (it is a copy of a
 * possibly multi-threaded host, made without glibc's fork).  Every handler
 * back to SIG_DFL (a host handler must never run in our copy; ignored
 * signals stay ignored across exec otherwise), then an empty mask.
 */
static __attribute__((noreturn)) void daemon_exec(const char *path, char **env,
						  const uint64_t *empty)
{
	struct pohm_ksigaction dfl = { SIG_DFL, 0, NULL, 0 };
	char *argv[] = { (char *)path, NULL };
	int fd, sig;

	for (sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			pohm_sys_sigaction(sig, &dfl, NULL);
	pohm_sys_setsid();
	fd = pohm_sys_openat_inherit(AT_FDCWD, "/dev/null", O_RDWR, 0);
	if (fd >= 0) {
		pohm_sys_dup2(fd, 0);
		pohm_sys_dup2(fd, 1);
		pohm_sys_dup2(fd, 2);
	}
	pohm_sys_close_range(3, ~0U, 0);	/* fd itself too when it was >= 3 */
	pohm_sys_sigmask(SIG_SETMASK, empty, NULL);
	pohm_sys_execve(path, argv, env);
	pohm_sys_exit_thread(127);
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
	int saved = errno;	/* for free(); the system calls leave errno alone */
	pid_t pid;

	if (!env)
		return;
	pohm_sys_sigmask(SIG_SETMASK, &all, &old);
	/* No exit signal: the host gets no SIGCHLD, and its wait calls without
	 * __WCLONE/__WALL never see the copy. */
	pid = pohm_sys_clone_copy(0);
	if (pid == 0) {
		/* Let go of the host's fds before the daemon is made: once we
		 * are reaped, no copy holds them (a copy that still held the
		 * writing fd of a file just written would make its exec fail
		 * ETXTBSY; every write-open may spawn, decision 0016). */
		int nul = pohm_sys_openat_inherit(AT_FDCWD, "/dev/null", O_RDWR, 0);

		if (nul >= 0) {
			pohm_sys_dup2(nul, 0);
			pohm_sys_dup2(nul, 1);
			pohm_sys_dup2(nul, 2);
		}
		pohm_sys_close_range(3, ~0U, 0);
		if (pohm_sys_clone_copy(0) == 0)
			daemon_exec(path, env, &empty);
		pohm_sys_exit_thread(0);	/* the daemon, or its failed clone, goes on alone */
	}
	if (pid > 0)
		pohm_sys_wait4(pid, NULL, __WCLONE);
	pohm_sys_sigmask(SIG_SETMASK, &old, NULL);
	free(env);
	errno = saved;
}

void pohm_cache_daemon_start(struct pohm_cache *c, uint64_t *last_ns)
{
	Dl_info info;
	char path[PATH_MAX], *slash;
	uint64_t now, last;

	if (pohm_cache_daemon_running(c))
		return;	/* one fcntl: its lock is held */
	now = pohm_sys_mono_ns();
	last = __atomic_load_n(last_ns, __ATOMIC_RELAXED);
	if (last && now - last < 1000000000ULL)
		return;	/* spawned a moment ago: still starting (or cannot start) */
	if (!__atomic_compare_exchange_n(last_ns, &last, now, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;	/* another thread spawns it */
	if (!dladdr((void *)pohm_cache_daemon_start, &info) || !info.dli_fname)
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
