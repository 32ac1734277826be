/*
 * log.c — the library's logger.  One buffer on the stack, one write(2):
 * lines from several threads or processes never interleave mid-line.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sys.h"

/* Set once at init (pohm_log_setup), read-only afterwards: no lock. */
static enum pohm_log_level log_threshold = POHM_LOG_ERROR;
static int log_fd = -1;

void pohm_log_setup(enum pohm_log_level level, int fd)
{
	log_threshold = level;
	log_fd = fd;
}

enum pohm_log_level pohm_log_level(void)
{
	return log_threshold;
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
	int saved = errno, n, m;
	va_list ap;

	if (level > log_threshold)
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
	pohm_sys_write_full(log_fd >= 0 ? log_fd : 2, line, (size_t)n);
	errno = saved;
}
