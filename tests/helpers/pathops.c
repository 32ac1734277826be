/*
 * pathops.c — run a script of path and fd operations given as arguments,
 * then show what the shim's fd table says, through the one thing it
 * exports to the outside: the POHMELFS_FDTAB variable an exec hands to
 * the new image.  "show" execs /usr/bin/env *without* LD_PRELOAD, so the
 * printed table is what this process's shim classified as under the
 * prefix (fd numbers only are printed, sorted).
 *
 *   cd PATH | fcd N | open PATH N | openw PATH N | openat N PATH M |
 *   dirat PATH N (opendir, then openat(dirfd, ".") as N) | close N |
 *   dup2 N M | fdup N M (fcntl F_DUPFD >= M) | closerange LO |
 *   stat PATH (must succeed) | fail PATH (stat must fail) |
 *   show | forkshow | vforkshow | spawnshow | sh CMD (system)
 *
 * Every step that fails prints "FAIL step: error" and exits 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void die(const char *step, const char *arg)
{
	printf("FAIL %s %s: %s\n", step, arg ? arg : "", strerror(errno));
	exit(1);
}

/* environ without LD_PRELOAD, plus a marker: the child runs without the shim. */
static char **env_noshim(void)
{
	static char *out[4096];
	size_t i, j = 0;

	for (i = 0; environ[i] && j < 4094; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			out[j++] = environ[i];
	out[j] = NULL;
	return out;
}

/* In the shim-less child: print the fd numbers of POHMELFS_FDTAB. */
static int dump(void)
{
	const char *t = getenv("POHMELFS_FDTAB");
	char *dup, *tok, *save;

	if (!t) {
		printf("fdtab: none\n");
		return 0;
	}
	dup = strdup(t);
	printf("fdtab:");
	for (tok = strtok_r(dup, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		printf(" %ld", strtol(tok, NULL, 16));
	printf("\n");
	free(dup);
	return 0;
}

static char *dump_argv[] = { "pathops", "--dump", NULL };

static void show(const char *self)
{
	fflush(stdout);
	execve(self, dump_argv, env_noshim());
	die("show", self);
}

int main(int argc, char **argv)
{
	const char *self = "/proc/self/exe";
	struct stat st;
	pid_t pid;
	DIR *d;
	int i, fd, st_;

	if (argc > 1 && !strcmp(argv[1], "--dump"))
		return dump();
	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 1; i < argc; i++) {
		const char *op = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;
		const char *b = i + 2 < argc ? argv[i + 2] : NULL;
		const char *c = i + 3 < argc ? argv[i + 3] : NULL;

		if (!strcmp(op, "cd")) {
			if (chdir(a) < 0)
				die(op, a);
			i++;
		} else if (!strcmp(op, "fcd")) {
			if (fchdir(atoi(a)) < 0)
				die(op, a);
			i++;
		} else if (!strcmp(op, "open") || !strcmp(op, "openw")) {
			fd = open(a, op[4] ? O_WRONLY | O_CREAT : O_RDONLY, 0644);
			if (fd < 0 || (fd != atoi(b) && (dup2(fd, atoi(b)) < 0 || close(fd) < 0)))
				die(op, a);
			i += 2;
		} else if (!strcmp(op, "openat")) {
			fd = openat(atoi(a), b, O_RDONLY);
			if (fd < 0 || (fd != atoi(c) && (dup2(fd, atoi(c)) < 0 || close(fd) < 0)))
				die(op, b);
			i += 3;
		} else if (!strcmp(op, "dirat")) {
			d = opendir(a);
			if (!d || (fd = openat(dirfd(d), ".", O_RDONLY)) < 0 ||
			    (fd != atoi(b) && (dup2(fd, atoi(b)) < 0 || close(fd) < 0)) ||
			    closedir(d) < 0)
				die(op, a);
			i += 2;
		} else if (!strcmp(op, "close")) {
			if (close(atoi(a)) < 0)
				die(op, a);
			i++;
		} else if (!strcmp(op, "dup2")) {
			if (dup2(atoi(a), atoi(b)) < 0)
				die(op, a);
			i += 2;
		} else if (!strcmp(op, "fdup")) {
			if (fcntl(atoi(a), F_DUPFD, atoi(b)) < 0)
				die(op, a);
			i += 2;
		} else if (!strcmp(op, "closerange")) {
			if (close_range((unsigned)atoi(a), ~0u, 0) < 0)
				die(op, a);
			i++;
		} else if (!strcmp(op, "stat")) {
			if (stat(a, &st) < 0)
				die(op, a);
			i++;
		} else if (!strcmp(op, "fail")) {
			if (stat(a, &st) == 0) {
				errno = EEXIST;
				die(op, a);
			}
			i++;
		} else if (!strcmp(op, "show")) {
			show(self);
		} else if (!strcmp(op, "forkshow") || !strcmp(op, "vforkshow")) {
			fflush(stdout);
			pid = op[0] == 'v' ? vfork() : fork();
			if (pid == 0) {
				execve(self, dump_argv, env_noshim());
				_exit(127);
			}
			if (pid < 0 || waitpid(pid, &st_, 0) < 0 || !WIFEXITED(st_) ||
			    WEXITSTATUS(st_))
				die(op, NULL);
		} else if (!strcmp(op, "spawnshow")) {
			if (posix_spawn(&pid, self, NULL, NULL, dump_argv, env_noshim()) ||
			    waitpid(pid, &st_, 0) < 0 || !WIFEXITED(st_) || WEXITSTATUS(st_))
				die(op, NULL);
		} else if (!strcmp(op, "sh")) {
			if (system(a) != 0)
				die(op, a);
			i++;
		} else {
			errno = EINVAL;
			die("unknown op", op);
		}
	}
	return 0;
}
