/*
 * spawn_loop.c — start a program N times (posix_spawn + wait4) and print
 * the CPU nanoseconds (user + system) each child used, on average: the
 * start-up cost, without the noise of other load on the machine.  The benchmark of start-up cost: the child's
 * environment is this process's, so LD_PRELOAD reaches it.
 *
 *   spawn_loop [-e NAME=VALUE]... N PROGRAM [ARGS...]
 *
 * -e adds a variable to the children's environment only (LD_PRELOAD=...:
 * the children run with the shim, this loop without).
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
	static char *env[4096];
	struct rusage ru;
	double cpu = 0;
	long i, n, k = 0;
	pid_t pid;
	int st;

	for (argv++, argc--; argc > 1 && !strcmp(argv[0], "-e"); argv += 2, argc -= 2)
		if (k < 64)
			env[k++] = argv[1];
	for (i = 0; environ[i] && k < 4095; i++)
		env[k++] = environ[i];
	if (argc < 2) {
		fprintf(stderr, "usage: spawn_loop [-e NAME=VALUE]... N PROGRAM [ARGS...]\n");
		return 2;
	}
	n = atol(argv[0]);
	for (i = 0; i < n; i++) {
		if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, env) != 0)
			return 1;
		if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		cpu += (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
	}
	printf("%.0f\n", cpu / n);
	return 0;
}
