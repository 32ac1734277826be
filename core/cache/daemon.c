/*
 * daemon.c — finding the pohmelfsd that serves a cache directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache.h"
#include "sys.h"

int pohm_cache_daemon_pid(const char *cache_dir)
{
	char path[4200], buf[64];
	int fd, saved = errno, alive;
	ssize_t n;
	long pid;
	char *end;

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
	alive = !syscall(SYS_kill, (pid_t)pid, 0) || errno == EPERM;
	errno = saved;
	if (!alive)
		return 0;
	/* A stale pid file whose number was reused by another program is not pohmelfsd. */
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY, 0);
	if (fd >= 0) {
		n = pohm_sys_read_full(fd, buf, sizeof(buf) - 1);
		pohm_sys_close(fd);
		if (n > 0 && strncmp(buf, "pohmelfsd", 9))
			return 0;
	}
	return (int)pid;
}
