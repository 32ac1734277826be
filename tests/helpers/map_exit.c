/*
 * map_exit — writes through a shared mapping that outlives its fd, then
 * exits without munmap, for cache_push.bats: the mapping is a writer of
 * the file until the process ends, so the exit must push what it wrote
 * (the close came before the write and, under sync_on_close, pushed the
 * old bytes).
 *
 *   map_exit FILE TEXT
 *
 * Opens FILE (existing, at least strlen(TEXT) bytes) read-write, maps its
 * first page MAP_SHARED, closes the fd, copies TEXT to offset 0 and calls
 * exit(0) with the mapping in place.  Exit 1 if a call failed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t len;
	char *m;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: map_exit FILE TEXT\n");
		return 2;
	}
	len = strlen(argv[2]);
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (close(fd)) {
		perror("close");
		return 1;
	}
	memcpy(m, argv[2], len);
	exit(0);	/* the mapping stays: no munmap */
}
