/*
 * fdtorture.c — a host that closes and overwrites fds it never opened, as
 * daemons and shells do.  The shim's internal fds must survive it (close
 * of one fails EBADF as if it were not open; close_range/closefrom skip
 * them; dup2 onto one moves it aside).  Prints how many fds >= 3 are
 * still open at the end (the shim's internal ones).
 *
 *   fdtorture close-each | close-range | closefrom | dup2-onto
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Open fds >= 3 other than the listing's own. */
static int count_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0, fd;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && (fd = atoi(e->d_name)) >= 3 && fd != dirfd(d))
			n++;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	int fd, ebadf = 0;

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "close-each")) {
		for (fd = 3; fd < 1024; fd++)
			if (close(fd) < 0 && errno == EBADF)
				ebadf++;
		printf("ebadf %d\n", ebadf);
	} else if (!strcmp(argv[1], "close-range")) {
		if (close_range(3, ~0u, 0) < 0)
			return 1;
	} else if (!strcmp(argv[1], "closefrom")) {
		closefrom(3);
	} else if (!strcmp(argv[1], "dup2-onto")) {
		/* Every number up to 1023, or to the soft limit less 16 when that
		 * is lower (an unprivileged shell's 1024): our fds need a free
		 * number to move to (with none, the known limit of
		 * libpohmelfs(7)). */
		struct rlimit rl;
		int top = 1024;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 1024 + 16)
			top = (int)rl.rlim_cur - 16;
		for (fd = 3; fd < top; fd++)
			if (dup2(1, fd) < 0)
				return 1;
		for (fd = 3; fd < top; fd++)
			if (close(fd) < 0)
				return 1;
	} else {
		return 2;
	}
	printf("open %d\n", count_open());
	return 0;
}
