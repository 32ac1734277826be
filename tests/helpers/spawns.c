/*
 * spawns.c — the calls that start programs through glibc-internal paths:
 * PATH searches and the shell (preload_walks.bats).
 *
 *   execvp FILE ARG...    execvp (PATH search); prints why if it returns
 *   execvpe FILE ARG...   execvpe with environ plus SPAWNS=execvpe
 *   execlp FILE ARG       execlp with one argument
 *   spawnp FILE ARG...    posix_spawnp, waits, prints the exit status
 *   system CMD            system(), prints the status
 *   popen r|w CMD [TEXT]  popen: "r" prints what the shell wrote, "w"
 *                         writes TEXT to it; prints pclose's status
 *   hold PATH CMD TEXT    opens PATH for writing as fd 5 (inheritable),
 *                         popen(CMD, "w"), closes fd 5 *before* the shell
 *                         runs on, writes TEXT, pclose: only the shell and
 *                         its children write PATH after the parent closed it
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	const char *how = argc > 2 ? argv[1] : "";
	char buf[4096];
	FILE *f;
	pid_t pid;
	int st, fd, r;

	if (!strcmp(how, "execvp")) {
		execvp(argv[2], argv + 2);
		printf("execvp %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (!strcmp(how, "execvpe")) {
		size_t n = 0;
		char **env;

		while (environ[n])
			n++;
		env = calloc(n + 2, sizeof(*env));
		memcpy(env, environ, n * sizeof(*env));
		env[n] = "SPAWNS=execvpe";
		execvpe(argv[2], argv + 2, env);
		printf("execvpe %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (!strcmp(how, "execlp") && argc > 3) {
		execlp(argv[2], argv[2], argv[3], (char *)NULL);
		printf("execlp %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (!strcmp(how, "spawnp")) {
		r = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
		if (r) {
			printf("posix_spawnp %s: %s\n", argv[2], strerror(r));
			return 1;
		}
		waitpid(pid, &st, 0);
		printf("exit %d\n", WEXITSTATUS(st));
		return 0;
	}
	if (!strcmp(how, "system")) {
		printf("system %d\n", system(argv[2]));
		return 0;
	}
	if (!strcmp(how, "popen") && argc > 3) {
		if (!(f = popen(argv[3], argv[2]))) {
			printf("popen: %s\n", strerror(errno));
			return 1;
		}
		if (argv[2][0] == 'r')
			while (fgets(buf, sizeof(buf), f))
				fputs(buf, stdout);
		else if (argc > 4)
			fputs(argv[4], f);
		printf("pclose %d\n", pclose(f));
		return 0;
	}
	if (!strcmp(how, "hold") && argc > 4) {
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 5) < 0) {
			printf("open %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		if (fd != 5)
			close(fd);
		if (!(f = popen(argv[3], "w"))) {
			printf("popen: %s\n", strerror(errno));
			return 1;
		}
		close(5);
		fputs(argv[4], f);
		printf("pclose %d\n", pclose(f));
		return 0;
	}
	fprintf(stderr, "usage: spawns execvp|execvpe|execlp|spawnp|system|popen|hold ...\n");
	return 2;
}
