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

/* Set the threshold and the destination fd (-1 = stderr). */
void pohm_log_setup(enum pohm_log_level level, int fd);
/* Set the threshold only. */
void pohm_log_set_level(enum pohm_log_level level);
/*
 * log=: lines go to path from now on, opened O_WRONLY|O_APPEND|O_CREAT|
 * O_CLOEXEC (0644) at POHM_FD_BASE or above; never to stderr again in this
 * process, even when the open fails (the lines are then dropped: a library
 * in someone else's process must not write on their stderr once told not
 * to).  Once per process: a later call keeps the file already open and
 * returns its fd.  The fd, or -errno.
 */
int pohm_log_open(const char *path);
/* The destination fd: the log= file, a pohm_log_setup fd, 2 (stderr), or
 * -1 when log= could not be opened (nothing is written). */
int pohm_log_fd(void);
/* The fd the log writes to was moved to nfd (a host dup2 onto it). */
void pohm_log_fd_moved(int old, int nfd);
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
