/*
 * open_loop — N × open(PATH, O_RDONLY) + close, prints the mean ns per
 * pair (wall clock).  For the cached-open benchmark (tests/bench/bench_open.sh).
 *
 *   open_loop N PATH [w|at|cwd]
 *
 * "w": open(PATH, O_WRONLY) (no write: what a write-open itself costs,
 * tests/bench/ab_open.sh).  "at": openat(dirfd, NAME) with dirfd an
 * O_DIRECTORY fd of PATH's directory and NAME its last component; "cwd":
 * open(NAME) after a chdir to that directory (the relative paths whose
 * base is checked by identity, issue 18).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	const char *name = NULL;
	char dir[4096];
	int fd, dfd = AT_FDCWD, flags = O_RDONLY;
	long n, i;

	if (argc < 3 || argc > 4 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: open_loop N PATH [w|at|cwd]\n");
		return 2;
	}
	name = argv[2];
	if (argc == 4 && !strcmp(argv[3], "w")) {
		flags = O_WRONLY;
	} else if (argc == 4) {
		const char *s = strrchr(argv[2], '/');

		if (!s || (size_t)(s - argv[2]) >= sizeof(dir)) {
			fprintf(stderr, "open_loop: %s: need a path with a directory\n", argv[2]);
			return 2;
		}
		memcpy(dir, argv[2], (size_t)(s - argv[2]));
		dir[s - argv[2]] = '\0';
		name = s + 1;
		if (!strcmp(argv[3], "at"))
			dfd = open(dir, O_RDONLY | O_DIRECTORY);
		else if (chdir(dir) < 0)
			dfd = -1;
		if (dfd == -1) {
			perror(dir);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		fd = openat(dfd, name, flags);
		if (fd < 0) {
			perror(argv[2]);
			return 1;
		}
		close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
