/*
 * spawn_loop.c — start a program N times (posix_spawn + waitpid) and print
 * the nanoseconds per start.  The benchmark of start-up cost: the child's
 * environment is this process's, so LD_PRELOAD reaches it.
 *
 *   spawn_loop N PROGRAM [ARGS...]
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv)
{
	struct timespec a, b;
	long i, n;
	pid_t pid;
	int st;

	if (argc < 3) {
		fprintf(stderr, "usage: spawn_loop N PROGRAM [ARGS...]\n");
		return 2;
	}
	n = atol(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0)
			return 1;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
