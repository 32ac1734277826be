/*
 * shell.c — system, popen and pclose.
 *
 * glibc's system and popen start /bin/sh with an internal posix_spawn and
 * glibc's own copy of environ, so the shell would not get the table of
 * fds under the prefix (POHMELFS_FDTAB) that it inherits: a child writing
 * through such an fd after the parent closed its copy would never be
 * pushed.  Our versions spawn the shell through our posix_spawn wrapper,
 * which hands the table over, and otherwise do what glibc 2.36 does:
 *
 *   system  /bin/sh -c CMD (no "--"); SIGINT and SIGQUIT ignored in the
 *           caller while any system() of ours runs (counted), SIGCHLD
 *           blocked; the child gets the caller's signal mask and default
 *           SIGINT/SIGQUIT unless they were ignored; waits with EINTR
 *           retried; 127 << 8 when the shell cannot be started;
 *           system(NULL) asks whether "exit 0" runs.  Used only while fds
 *           under the prefix are open (otherwise glibc's own runs), so the
 *           two counters of ignored signals never interleave in practice.
 *           Not a cancellation point (glibc's is).
 *   popen   mode "r" or "w" plus optional "e" (else EINVAL); a pipe made
 *           O_CLOEXEC whose child end becomes the shell's stdin or stdout;
 *           the parent end is inheritable unless "e"; the child closes the
 *           streams of every earlier popen still open.  Every popen of an
 *           active shim is ours (so that rule covers them all); pclose
 *           waits for our streams' shells and hands any other stream to
 *           glibc.
 *
 * Sections: system; popen and pclose.
 */
#include "shim.h"

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

#define SHELL_PATH "/bin/sh"

/* ------------------------------------------------------------ system */

/* system() calls of ours running, and the dispositions they replaced (sys_lock). */
static pthread_mutex_t sys_lock = PTHREAD_MUTEX_INITIALIZER;
static int sys_running;
static struct sigaction sys_intr, sys_quit;

static int run_shell(const char *cmd)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, intr, quit;
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	posix_spawnattr_t attr;
	sigset_t chld, omask, reset;
	int status, r;
	pid_t pid;

	sigemptyset(&ign.sa_mask);
	pthread_mutex_lock(&sys_lock);
	if (sys_running++ == 0) {
		sigaction(SIGINT, &ign, &sys_intr);
		sigaction(SIGQUIT, &ign, &sys_quit);
	}
	intr = sys_intr;
	quit = sys_quit;
	pthread_mutex_unlock(&sys_lock);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &omask);
	sigemptyset(&reset);
	if (intr.sa_handler != SIG_IGN)
		sigaddset(&reset, SIGINT);
	if (quit.sa_handler != SIG_IGN)
		sigaddset(&reset, SIGQUIT);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &omask);
	posix_spawnattr_setsigdefault(&attr, &reset);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	r = posix_spawn(&pid, SHELL_PATH, NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (r == 0) {
		while ((r = (int)waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (r != pid)
			status = -1;
	} else {
		status = 127 << 8;	/* as if the shell had run and _exit(127)ed */
	}
	pthread_mutex_lock(&sys_lock);
	if (--sys_running == 0) {
		sigaction(SIGINT, &sys_intr, NULL);
		sigaction(SIGQUIT, &sys_quit, NULL);
	}
	pthread_mutex_unlock(&sys_lock);
	sigprocmask(SIG_SETMASK, &omask, NULL);
	return status;
}

POHM_EXPORT int system(const char *cmd)
{
	if (!pohm_active() || !pohm_fd_count_under())
		return pohm_real.system(cmd);
	if (!pohm_given(cmd))
		return run_shell("exit 0") == 0;
	return run_shell(cmd);
}

/* ------------------------------------------------------------ popen and pclose */

/* A stream of our popen and its shell. */
struct pstream {
	FILE *f;
	pid_t pid;
	struct pstream *next;
};

/* Our open popen streams (pipe_lock). */
static pthread_mutex_t pipe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pstream *pipes;

/* "r"/"w" plus "e": 0 with *rd and *cloexec set, or -EINVAL. */
static int pipe_mode(const char *mode, int *rd, int *cloexec)
{
	int r = 0, w = 0;

	*cloexec = 0;
	for (; *mode; mode++) {
		if (*mode == 'r')
			r = 1;
		else if (*mode == 'w')
			w = 1;
		else if (*mode == 'e')
			*cloexec = 1;
		else
			return -EINVAL;
	}
	if (r == w)
		return -EINVAL;
	*rd = r;
	return 0;
}

static FILE *do_popen(const char *cmd, const char *mode)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	int fds[2], rd, cloexec, parent, child, std, r;
	posix_spawn_file_actions_t fa;
	struct pstream *ps, *q;
	FILE *f;

	if ((r = pipe_mode(mode, &rd, &cloexec)) < 0) {
		errno = -r;
		return NULL;
	}
	if (!(ps = malloc(sizeof(*ps))))
		return NULL;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(ps);
		return NULL;
	}
	parent = rd ? fds[0] : fds[1];
	child = rd ? fds[1] : fds[0];
	std = rd ? 1 : 0;
	if (!(f = fdopen(parent, rd ? "r" : "w"))) {
		r = errno;
		close(fds[0]);
		close(fds[1]);
		free(ps);
		errno = r;
		return NULL;
	}
	posix_spawn_file_actions_init(&fa);
	if (child != std)
		posix_spawn_file_actions_adddup2(&fa, child, std);
	else
		fcntl(child, F_SETFD, 0);	/* already the right number: must survive exec */
	pthread_mutex_lock(&pipe_lock);
	for (q = pipes; q; q = q->next)
		if (fileno(q->f) != std)
			posix_spawn_file_actions_addclose(&fa, fileno(q->f));
	r = posix_spawn(&ps->pid, SHELL_PATH, &fa, NULL, argv, environ);
	if (r == 0) {
		ps->f = f;
		ps->next = pipes;
		pipes = ps;
	}
	pthread_mutex_unlock(&pipe_lock);
	posix_spawn_file_actions_destroy(&fa);
	close(child);
	if (r) {
		pohm_real.fclose(f);
		free(ps);
		errno = r;
		return NULL;
	}
	if (!cloexec)
		fcntl(parent, F_SETFD, 0);
	return f;
}

POHM_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	if (!pohm_active() || !pohm_given(mode))
		return pohm_real.popen(cmd, mode);
	return do_popen(cmd, mode);
}

POHM_EXPORT int pclose(FILE *f)
{
	struct pstream **pp, *ps = NULL;
	int status;
	pid_t pid, r;

	pohm_init();
	pthread_mutex_lock(&pipe_lock);
	for (pp = &pipes; *pp; pp = &(*pp)->next)
		if ((*pp)->f == f) {
			ps = *pp;
			*pp = ps->next;
			break;
		}
	pthread_mutex_unlock(&pipe_lock);
	if (!ps)
		return pohm_real.pclose(f);
	pid = ps->pid;
	free(ps);
	pohm_real.fclose(f);
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	return r < 0 ? -1 : status;
}
