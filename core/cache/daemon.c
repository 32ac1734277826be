/*
 * daemon.c — finding the pohmelfsd that serves a cache directory.  Whether
 * one runs is its lock on cache_dir/pohmelfsd.lock (writer.c), which the
 * kernel drops when it ends; the pid file only names it for `pohmelfs
 * status` and for a SIGUSR1 sent by hand (requests for room go through its
 * FIFO pohmelfsd.wake).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "sys.h"

int pohm_cache_daemon_pid(const char *cache_dir)
{
	char path[4200], buf[64];
	ssize_t n;
	long pid;
	char *end;
	int fd;

	if (!pohm_cache_daemon_alive(cache_dir))
		return 0;
	snprintf(path, sizeof(path), "%s/pohmelfsd.pid", cache_dir);
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0)
		return 0;
	n = pohm_sys_read_full(fd, buf, sizeof(buf) - 1);
	pohm_sys_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	if (pid <= 0 || pid > 0x3fffffff || (*end && *end != '\n'))
		return 0;
	return (int)pid;
}
