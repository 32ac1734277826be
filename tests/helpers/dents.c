/*
 * dents.c — a directory's names read with getdents64 itself, not through
 * readdir (cache_listfail.bats: a directory whose listing failed at its
 * open must list again or fail EIO there too, preload/dir.c).
 *
 *   dents DIR libc|raw
 *	Opens DIR (O_RDONLY | O_DIRECTORY) and prints each name but those
 *	starting with '.', one a line, read with glibc's getdents64 (libc)
 *	or syscall(SYS_getdents64) (raw).  Exit 0; 1 with
 *	"getdents64: <strerror>" on stderr when a read fails; 2 on usage or
 *	a failed open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[8192];
	long n, off;
	int fd;

	if (argc != 3)
		return 2;
	fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 2;
	for (;;) {
		n = !strcmp(argv[2], "raw") ? syscall(SYS_getdents64, fd, buf, sizeof(buf))
					    : (long)getdents64(fd, buf, sizeof(buf));
		if (n < 0) {
			fprintf(stderr, "getdents64: %s\n", strerror(errno));
			return 1;
		}
		if (!n)
			return 0;
		for (off = 0; off < n; off += ((struct dirent64 *)(buf + off))->d_reclen)
			if (((struct dirent64 *)(buf + off))->d_name[0] != '.')
				printf("%s\n", ((struct dirent64 *)(buf + off))->d_name);
	}
}
