/*
 * fork_faults.c — what a fork costs a process under the shim, in page
 * faults (issue 23: a shell that starts programs from a directory under
 * the prefix).  Reads FILE once (under the prefix: the storage side
 * starts and the library's allocator initialises), optionally starts a
 * thread that waits (MODE thread: the process is no longer
 * single-threaded), then forks N children that exit at once, and prints
 * the minor page faults per fork of the parent and of a child:
 *
 *   fork_faults single|thread FILE N  →  "parent P child C"
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int gate[2];

static void *waiter(void *arg)
{
	char c;

	(void)arg;
	return read(gate[0], &c, 1) < 0 ? NULL : arg;
}

int main(int argc, char **argv)
{
	struct rusage s0, s1, c0, c1;
	pthread_t t;
	char buf[64];
	int fd, i, n, st;

	if (argc != 4 || (strcmp(argv[1], "single") && strcmp(argv[1], "thread"))) {
		fprintf(stderr, "usage: fork_faults single|thread FILE N\n");
		return 2;
	}
	n = atoi(argv[3]);
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf)) < 0 || close(fd)) {
		perror(argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "thread") &&
	    (pipe(gate) || pthread_create(&t, NULL, waiter, NULL))) {
		perror("thread");
		return 1;
	}
	/* One fork first: what only the first one pays is not counted. */
	for (i = -1; i < n; i++) {
		if (i == 0) {
			getrusage(RUSAGE_SELF, &s0);
			getrusage(RUSAGE_CHILDREN, &c0);
		}
		pid_t p = fork();

		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0)
			_exit(0);
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "child %d failed\n", (int)p);
			return 1;
		}
	}
	getrusage(RUSAGE_SELF, &s1);
	getrusage(RUSAGE_CHILDREN, &c1);
	if (!strcmp(argv[1], "thread")) {
		if (write(gate[1], "x", 1) != 1 || pthread_join(t, NULL))
			return 1;
	}
	printf("parent %.1f child %.1f\n", (double)(s1.ru_minflt - s0.ru_minflt) / n,
	       (double)(c1.ru_minflt - c0.ru_minflt) / n);
	return 0;
}
