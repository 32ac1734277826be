/*
 * cr_wonly — writes a file its owner may not read (mode 0200) and stays
 * alive, for cache_shadow.bats: the shim cannot open a read-only shadow at
 * the close, so the push is pohmelfsd's (DESIGN.md §2).
 *
 *   cr_wonly FILE SECONDS
 *
 * Creates FILE, makes it mode 0200 with fchmod (not with the umask: the
 * cache's own files follow the process umask, see NOTES.md), writes
 * "write-only data\n", closes it
 * (the close must succeed), prints "closed MODE" and "not readable" (or
 * "readable?"), then sleeps SECONDS so that no push at exit can happen
 * before the test looks.  Exit 0, or 1 if a call failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *msg = "write-only data\n";
	struct stat st;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: cr_wonly FILE SECONDS\n");
		return 1;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || fchmod(fd, 0200) || write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		fprintf(stderr, "cr_wonly: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (close(fd)) {
		fprintf(stderr, "cr_wonly: close: %s\n", strerror(errno));
		return 1;
	}
	if (stat(argv[1], &st)) {
		fprintf(stderr, "cr_wonly: stat: %s\n", strerror(errno));
		return 1;
	}
	printf("closed %o\n", (unsigned)(st.st_mode & 07777));
	fd = open(argv[1], O_RDONLY);
	printf("%s\n", fd < 0 && errno == EACCES ? "not readable" : "readable?");
	fflush(stdout);
	sleep((unsigned)atoi(argv[2]));
	return 0;
}
