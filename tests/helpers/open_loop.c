/*
 * open_loop — N × open(PATH, O_RDONLY) + close, prints the mean ns per
 * pair (wall clock).  For the cached-open benchmark (tests/bench/bench_open.sh).
 * With w: open(PATH, O_WRONLY) (no write: what a write-open itself costs,
 * tests/bench/ab_open.sh).
 *
 *   open_loop N PATH [w]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	long n, i;
	int fd, flags = argc == 4 && argv[3][0] == 'w' ? O_WRONLY : O_RDONLY;

	if (argc < 3 || argc > 4 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: open_loop N PATH [w]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		fd = open(argv[2], flags);
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
