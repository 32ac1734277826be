/*
 * threads.c — many host threads doing file work under one directory at
 * once: mkdir, open/O_CREAT, write, fstat, stat, rename, openat through a
 * directory fd, dup, close, unlink, rmdir, opendir/readdir; thread 0 also
 * moves the cwd in and out of the directory and uses relative names, and
 * one thread forks while the others run (the child stats and exits).
 * Prints "ok THREADS ITERS" when every call did what it should.
 *
 *   threads DIR THREADS ITERS
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static int iters, failed;

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "thread %ld iter %d: %s failed\n", t, i, #c); \
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED); return NULL; } } while (0)

static void *work(void *arg)
{
	long t = (long)arg;
	char d[2048], f[4096], g[4096];
	struct stat st;
	DIR *dp;
	int i, fd, dfd, fd2, n;

	for (i = 0; i < iters; i++) {
		snprintf(d, sizeof(d), "%s/t%ld_%d", dir, t, i);
		snprintf(f, sizeof(f), "%s/f", d);
		snprintf(g, sizeof(g), "%s/g", d);
		CHECK(mkdir(d, 0755) == 0);
		CHECK((fd = open(f, O_CREAT | O_RDWR | O_TRUNC, 0644)) >= 0);
		CHECK(write(fd, "0123456789", 10) == 10);
		CHECK(fstat(fd, &st) == 0 && st.st_size == 10);
		CHECK(close(fd) == 0);
		CHECK(stat(f, &st) == 0 && st.st_size == 10);
		CHECK(rename(f, g) == 0);
		CHECK((dfd = open(d, O_RDONLY | O_DIRECTORY)) >= 0);
		CHECK((fd = openat(dfd, "g", O_RDONLY)) >= 0);
		CHECK((fd2 = dup(fd)) >= 0);
		CHECK(close(fd) == 0 && close(fd2) == 0);
		CHECK(fstatat(dfd, "g", &st, 0) == 0 && st.st_size == 10);
		CHECK((dp = opendir(d)) != NULL);
		for (n = 0; readdir(dp); n++)
			;
		CHECK(n == 3 && closedir(dp) == 0);
		CHECK(unlinkat(dfd, "g", 0) == 0);
		CHECK(close(dfd) == 0);
		if (t == 0) {
			CHECK(chdir(d) == 0);
			CHECK((fd = open("rel", O_CREAT | O_WRONLY, 0600)) >= 0 && close(fd) == 0);
			CHECK(unlink("rel") == 0);
			CHECK(chdir("/") == 0);
		}
		if (t == 1 && i % 16 == 0) {
			pid_t pid = fork();
			int s;

			if (pid == 0)
				_exit(stat(dir, &st) == 0 ? 0 : 1);
			CHECK(pid > 0 && waitpid(pid, &s, 0) == pid && WIFEXITED(s) && !WEXITSTATUS(s));
		}
		CHECK(rmdir(d) == 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	long i, n;

	if (argc < 4)
		return 2;
	dir = argv[1];
	n = atol(argv[2]);
	iters = atoi(argv[3]);
	if (n < 1 || n > 64)
		return 2;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, work, (void *)i))
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (failed)
		return 1;
	printf("ok %ld %d\n", n, iters);
	return 0;
}
