/*
 * stats.c — per-process counters and their per-cache total (stats.h).
 *
 * cache_dir/stats is text, one "name value" line per counter, replaced
 * atomically under an flock on cache_dir/stats.lock (a file never renamed),
 * so concurrent exits add up and a reader never sees half a file.  Names it
 * does not know are ignored (files from other versions stay readable).
 */
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys.h"

static const char *const names[POHM_ST_COUNT] = {
	[POHM_ST_OPEN] = "open",
	[POHM_ST_CREATE] = "create",
	[POHM_ST_STAT] = "stat",
	[POHM_ST_LOOKUP] = "lookup",
	[POHM_ST_READDIR] = "readdir",
	[POHM_ST_NS] = "namespace_change",
	[POHM_ST_ATTR] = "attribute_change",
	[POHM_ST_CLOSE] = "close_written",
	[POHM_ST_SYNC] = "sync",
	[POHM_ST_HITS] = "cache_hits",
	[POHM_ST_MISSES] = "cache_misses",
	[POHM_ST_FETCHED_BYTES] = "bytes_fetched",
	[POHM_ST_PUSHES] = "pushes",
	[POHM_ST_PUSHED_BYTES] = "bytes_pushed",
	[POHM_ST_CONFLICTS] = "conflicts",
	[POHM_ST_RETRIES] = "retries",
	[POHM_ST_ERRORS] = "errors",
	[POHM_ST_NET_WAITS] = "net_waits",
	[POHM_ST_NET_REQUESTS] = "net_requests",
	[POHM_ST_NET_SETUP_WAITS] = "net_setup_waits",
	[POHM_ST_NET_SETUP_REQUESTS] = "net_setup_requests",
};

const char *pohm_stat_name(enum pohm_stat s)
{
	return (unsigned)s < POHM_ST_COUNT ? names[s] : "?";
}

void pohm_stat_add(struct pohm_stats *st, enum pohm_stat s, uint64_t n)
{
	if ((unsigned)s < POHM_ST_COUNT)
		__atomic_add_fetch(&st->v[s], n, __ATOMIC_RELAXED);
}

/* Parse the text of a stats file into out (adding). 0 or -EIO. */
static int parse(const char *text, struct pohm_stats *out)
{
	const char *p = text;

	while (*p) {
		const char *eol = strchr(p, '\n'), *sp = strchr(p, ' ');
		char *end;
		uint64_t v;
		unsigned i;

		if (!eol || !sp || sp > eol)
			return -EIO;
		v = strtoull(sp + 1, &end, 10);
		if (end != eol)
			return -EIO;
		for (i = 0; i < POHM_ST_COUNT; i++)
			if ((size_t)(sp - p) == strlen(names[i]) && !memcmp(p, names[i], (size_t)(sp - p)))
				out->v[i] += v;
		p = eol + 1;
	}
	return 0;
}

/* Read cache_dir/stats (dirfd) into out, adding. */
static int load_at(int dfd, struct pohm_stats *out)
{
	char buf[4096];
	ssize_t n;
	int fd = pohm_sys_openat(dfd, "stats", O_RDONLY | O_NOFOLLOW, 0);

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	n = pohm_sys_read_full(fd, buf, sizeof(buf) - 1);
	pohm_sys_close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return parse(buf, out);
}

int pohm_stats_load(const char *cache_dir, struct pohm_stats *out)
{
	int dfd, r;

	memset(out, 0, sizeof(*out));
	dfd = pohm_sys_openat(AT_FDCWD, cache_dir, O_PATH | O_DIRECTORY, 0);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	r = load_at(dfd, out);
	pohm_sys_close(dfd);
	return r;
}

int pohm_stats_merge(const char *cache_dir, const struct pohm_stats *add)
{
	struct pohm_stats sum;
	char buf[4096], tmp[64];
	int dfd, lfd = -1, fd, r;
	size_t len = 0;
	unsigned i;

	memset(&sum, 0, sizeof(sum));
	dfd = pohm_sys_openat(AT_FDCWD, cache_dir, O_PATH | O_DIRECTORY, 0);
	if (dfd < 0)
		return dfd;
	lfd = pohm_sys_openat(dfd, "stats.lock", O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	if (lfd < 0) {
		r = lfd;
		goto out;
	}
	/* The cache's own files are 0600 whatever the host's umask. */
	pohm_sys_fchmod(lfd, 0600);
	r = pohm_sys_flock(lfd, LOCK_EX);
	if (r)
		goto out;
	r = load_at(dfd, &sum);
	if (r == -EIO)
		memset(&sum, 0, sizeof(sum));	/* a damaged total starts again */
	for (i = 0; i < POHM_ST_COUNT; i++) {
		sum.v[i] += add->v[i];
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %" PRIu64 "\n", names[i],
					sum.v[i]);
	}
	snprintf(tmp, sizeof(tmp), "stats.%d", (int)pohm_sys_getpid());
	fd = pohm_sys_openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	pohm_sys_fchmod(fd, 0600);
	r = pohm_sys_write_full(fd, buf, len) == (ssize_t)len ? 0 : -EIO;
	pohm_sys_close(fd);
	if (!r)
		r = pohm_sys_renameat(dfd, tmp, dfd, "stats");
	if (r)
		pohm_sys_unlinkat(dfd, tmp, 0);
out:
	if (lfd >= 0)
		pohm_sys_close(lfd);	/* drops the lock */
	pohm_sys_close(dfd);
	return r;
}

size_t pohm_stats_format(char *buf, size_t len, const char *title, const struct pohm_stats *st)
{
	size_t n = 0;
	unsigned i;

	if (!len)
		return 0;
	buf[0] = '\0';
	n += (size_t)snprintf(buf + n, len - n, "%s\n", title);
	for (i = 0; i < POHM_ST_COUNT && n < len; i++)
		if (st->v[i])
			n += (size_t)snprintf(buf + n, len - n, "  %-18s %" PRIu64 "\n", names[i],
					      st->v[i]);
	return n < len ? n : len - 1;
}
