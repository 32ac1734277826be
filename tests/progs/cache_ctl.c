/*
 * cache_ctl — the cache's C API from the command line, for bats tests of
 * what the preload layer will do (one process = one host's call).
 *
 *   cache_ctl get REL          materialize with data, print the local path
 *   cache_ctl ls REL           list a directory whole (stubs)
 *   cache_ctl write REL TEXT   create (not excl) + open + write + push, as
 *                              open(O_CREAT|O_TRUNC)/write/close with sync_on_close
 *   cache_ctl push REL         push a file changed without the shim
 *   cache_ctl sync             push everything dirty; prints the count
 *   cache_ctl mkdir|unlink|rmdir REL, mv FROM TO, ln FROM TO, symlink TARGET REL
 *   cache_ctl stat REL         the overlaid stat: "ino dev mode size nlink"
 *
 * Configured by POHMELFS_* (prefix=, cache_dir=, host_id=, ...).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "mount.h"

extern char **environ;

static int fail(const char *what, int r)
{
	fprintf(stderr, "cache_ctl: %s: %s\n", what, strerror(-r));
	return 1;
}

int main(int argc, char **argv)
{
	struct pohm_config cfg;
	struct pohm_mount m;
	char err[1024], path[8192];
	const char *cmd = argc > 1 ? argv[1] : "";
	int r = 0, fd;

	if (argc < 2) {
		fprintf(stderr, "usage: cache_ctl get|ls|write|push|sync|mkdir|unlink|rmdir|mv|ln|symlink|stat ...\n");
		return 2;
	}
	if (pohm_config_load(&cfg, environ, err, sizeof(err))) {
		fprintf(stderr, "cache_ctl: %s\n", err);
		return 2;
	}
	pohm_log_setup((enum pohm_log_level)cfg.log_level, -1);
	if (pohm_mount_open(&m, &cfg, err, sizeof(err))) {
		fprintf(stderr, "cache_ctl: %s\n", err);
		return 2;
	}
	if (argc > 2)
		snprintf(path, sizeof(path), "%s/%s", m.prefix, argv[2]);
	if (!strcmp(cmd, "get") && argc == 3) {
		r = pohm_cache_materialize(m.cache, argv[2], POHM_MAT_DATA);
		if (r)
			return fail("get", r);
		printf("%s\n", path);
	} else if (!strcmp(cmd, "ls") && argc == 3) {
		r = pohm_cache_materialize(m.cache, argv[2], POHM_MAT_LIST);
		if (r)
			return fail("ls", r);
	} else if (!strcmp(cmd, "write") && argc == 4) {
		r = pohm_cache_create(m.cache, argv[2], 0644, 0);
		if (r < 0)
			return fail("create", r);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return fail("open", -errno);
		pohm_cache_opened(m.cache, argv[2], fd);
		if (write(fd, argv[3], strlen(argv[3])) != (ssize_t)strlen(argv[3]))
			return fail("write", -EIO);
		/* A write-only fd: the push reads through a read-only shadow. */
		{
			int rfd = open(path, O_RDONLY);

			r = pohm_cache_push_fd(m.cache, rfd);
			close(rfd);
		}
		close(fd);
		if (r < 0)
			return fail("push", r);
		r = 0;
	} else if (!strcmp(cmd, "push") && argc == 3) {
		r = pohm_cache_push_path(m.cache, argv[2]);
		if (r < 0)
			return fail("push", r);
		printf("%d\n", r);
		r = 0;
	} else if (!strcmp(cmd, "sync") && argc == 2) {
		r = pohm_cache_sync_all(m.cache);
		if (r < 0)
			return fail("sync", r);
		printf("%d\n", r);
		r = 0;
	} else if (!strcmp(cmd, "mkdir") && argc == 3) {
		r = pohm_cache_mkdir(m.cache, argv[2], 0755);
	} else if (!strcmp(cmd, "unlink") && argc == 3) {
		r = pohm_cache_unlink(m.cache, argv[2]);
	} else if (!strcmp(cmd, "rmdir") && argc == 3) {
		r = pohm_cache_rmdir(m.cache, argv[2]);
	} else if (!strcmp(cmd, "mv") && argc == 4) {
		r = pohm_cache_rename(m.cache, argv[2], argv[3], 0);
	} else if (!strcmp(cmd, "ln") && argc == 4) {
		r = pohm_cache_link(m.cache, argv[2], argv[3]);
	} else if (!strcmp(cmd, "symlink") && argc == 4) {
		r = pohm_cache_symlink(m.cache, argv[2], argv[3]);
	} else if (!strcmp(cmd, "stat") && argc == 3) {
		struct stat st;

		r = pohm_cache_materialize(m.cache, argv[2], POHM_MAT_NOFOLLOW);
		if (!r && lstat(path, &st))
			r = -errno;
		if (!r) {
			pohm_cache_stat_fix(m.cache, &st);
			printf("%llx %llx %o %lld %lu\n", (unsigned long long)st.st_ino,
			       (unsigned long long)st.st_dev, st.st_mode, (long long)st.st_size,
			       (unsigned long)st.st_nlink);
		}
	} else {
		fprintf(stderr, "cache_ctl: bad arguments\n");
		r = -EINVAL;
	}
	pohm_mount_close(&m);
	pohm_config_free(&cfg);
	return r ? fail(cmd, r) : 0;
}
