/*
 * log.h — one line per event, "pohmelfs[pid]: level: message", written with
 * one write(2) to stderr or the configured log file; never to stdout.
 * Default level is error.  errno is preserved.
 */
#ifndef POHM_CORE_LOG_H
#define POHM_CORE_LOG_H

enum pohm_log_level {
	POHM_LOG_ERROR = 0,
	POHM_LOG_WARN  = 1,
	POHM_LOG_INFO  = 2,
	POHM_LOG_DEBUG = 3,
};

/* Set the threshold and the destination fd (-1 = stderr). Not thread-safe: call at init. */
void pohm_log_setup(enum pohm_log_level level, int fd);
/* Current threshold. */
enum pohm_log_level pohm_log_level(void);
/* Parse "error|warn|info|debug" or 0..3; -EINVAL if neither. */
int pohm_log_parse_level(const char *s);
/* Log one line if level <= threshold. */
void pohm_log(enum pohm_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pohm_err(...)   pohm_log(POHM_LOG_ERROR, __VA_ARGS__)
#define pohm_warn(...)  pohm_log(POHM_LOG_WARN, __VA_ARGS__)
#define pohm_info(...)  pohm_log(POHM_LOG_INFO, __VA_ARGS__)
#define pohm_debug(...) pohm_log(POHM_LOG_DEBUG, __VA_ARGS__)

#endif
