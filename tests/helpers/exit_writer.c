/*
 * exit_writer — writers that never close their file the usual way, for
 * cache_exit.bats (issue 18 case 2: their output must reach the storage).
 *
 *   exit_writer exit TEXT           write(1, TEXT) then _exit(0): no close,
 *                                   no atexit, no library destructor
 *   exit_writer hang FILE TEXT      open FILE for write, write TEXT, print
 *                                   "ready", then sleep until killed
 *   exit_writer rawclose DIR N      N times: open DIR/fI (O_CLOEXEC, as
 *                                   node does), write "fI\n", close it with
 *                                   syscall(SYS_close) (node/libuv), then
 *                                   print how many fds the process has
 *   exit_writer closewait FD GO     print "started", wait until the file
 *                                   GO exists, close(FD), print "closed",
 *                                   then sleep until killed
 *
 * Exit 0, or 1 with the failing call on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "exit_writer: %s: %s\n", what, strerror(errno));
	return 1;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the listing's own fd */
}

int main(int argc, char **argv)
{
	char path[4096], line[64];
	int fd, i, n;

	if (argc == 3 && !strcmp(argv[1], "exit")) {
		if (write(1, argv[2], strlen(argv[2])) < 0)
			return fail("write");
		_exit(0);
	}
	if (argc == 4 && !strcmp(argv[1], "hang")) {
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return fail("open");
		if (write(fd, argv[3], strlen(argv[3])) < 0)
			return fail("write");
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (argc == 4 && !strcmp(argv[1], "rawclose")) {
		n = atoi(argv[3]);
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/f%d", argv[2], i);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0) {
				fprintf(stderr, "exit_writer: open %s (file %d): %s\n", path, i,
					strerror(errno));
				return 1;
			}
			snprintf(line, sizeof(line), "f%d\n", i);
			if (write(fd, line, strlen(line)) < 0)
				return fail("write");
			if (syscall(SYS_close, fd))
				return fail("SYS_close");
		}
		printf("fds %d\n", count_fds());
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "closewait")) {
		printf("started\n");
		fflush(stdout);
		while (access(argv[3], F_OK))
			usleep(20000);
		if (close(atoi(argv[2])))
			return fail("close");
		printf("closed\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: exit_writer exit TEXT | hang FILE TEXT | rawclose DIR N | "
		"closewait FD GO\n");
	return 2;
}
