/*
 * bench_ops.c — the passthrough microbenchmark: N rounds of
 * open/fstatat/stat/close (and the same by a relative path) on one file,
 * printed as nanoseconds per round.  Run with and without the shim by
 * tests/bench/bench_passthrough.sh.  Time is this process's CPU time
 * (user + system), so other load on the machine does not count.
 *
 *   bench_ops FILE ROUNDS [rel]     rel: chdir to FILE's directory and
 *                                   use its base name
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spelled.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	char dir[4096], base[4096];
	const char *path;
	struct stat st;
	long i, n;
	double t0;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_ops FILE ROUNDS [rel]\n");
		return 2;
	}
	path = argv[1];
	n = atol(argv[2]);
	if (argc > 3 && !strcmp(argv[3], "rel")) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
		snprintf(base, sizeof(base), "%s", basename(argv[1]));
		if (chdir(dirname(dir)) < 0)
			return 1;
		path = base;
	}
	spell(path);
	for (i = 0; i < n / 10 + 1; i++) {	/* warm up */
		fd = open(SPELLED(i), O_RDONLY);
		close(fd);
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		fd = open(SPELLED(i), O_RDONLY);
		if (fd < 0 || fstat(fd, &st) < 0 || stat(SPELLED(i), &st) < 0)
			return 1;
		close(fd);
	}
	printf("%.1f\n", (now() - t0) / n);
	return 0;
}
