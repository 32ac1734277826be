/*
 * log.c — the library's logger.  One buffer on the stack, one write(2):
 * lines from several threads or processes never interleave mid-line.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sys.h"

#define LOG_DROP (-2)	/* log_fd: log= set but not openable, write nothing */

/*
 * Atomics, no lock: set at init or by the first configuration load (which
 * may run while other threads log), read by every line.  log_fd -1 is
 * stderr; log_opened: log_fd is the log= file (pohm_log_open ran).
 */
static POHM_START_BSS int log_threshold = POHM_LOG_ERROR;
static int log_fd = -1;
static int log_opened;

void pohm_log_setup(enum pohm_log_level level, int fd)
{
	__atomic_store_n(&log_threshold, (int)level, __ATOMIC_RELAXED);
	__atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
}

void pohm_log_set_level(enum pohm_log_level level)
{
	__atomic_store_n(&log_threshold, (int)level, __ATOMIC_RELAXED);
}

int pohm_log_open(const char *path)
{
	int fd, expect = 0;

	if (!__atomic_compare_exchange_n(&log_opened, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
		return fd >= 0 ? fd : -EBADF;
	}
	/* Nothing goes to stderr from here on, whatever the open gives. */
	__atomic_store_n(&log_fd, LOG_DROP, __ATOMIC_RELEASE);
	fd = pohm_sys_open_high(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0)
		__atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
	return fd;
}

int pohm_log_fd(void)
{
	int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);

	return fd == LOG_DROP ? -1 : fd >= 0 ? fd : 2;
}

void pohm_log_fd_moved(int old, int nfd)
{
	if (old >= 0)
		__atomic_compare_exchange_n(&log_fd, &old, nfd, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
}

enum pohm_log_level pohm_log_level(void)
{
	return (enum pohm_log_level)__atomic_load_n(&log_threshold, __ATOMIC_RELAXED);
}

int pohm_log_parse_level(const char *s)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	unsigned i;

	for (i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i]) || (s[0] == (char)('0' + i) && !s[1]))
			return (int)i;
	if (!strcasecmp(s, "warning"))
		return POHM_LOG_WARN;
	return -EINVAL;
}

void pohm_log(enum pohm_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[1024];
	int saved = errno, n, m, fd;
	va_list ap;

	if ((int)level > __atomic_load_n(&log_threshold, __ATOMIC_RELAXED))
		return;
	fd = pohm_log_fd();
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "pohmelfs[%d]: %s: ", (int)pohm_sys_getpid(),
		     names[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	pohm_sys_write_full(fd, line, (size_t)n);
	errno = saved;
}
