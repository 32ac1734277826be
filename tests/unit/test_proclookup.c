/*
 * test_proclookup.c — core/mount proclookup.c (pohm_proc_lookup), the
 * table of what each read-only use of a name needs materialized (moved
 * from preload's hook_lookup): exec and dlopen fetch a file's data, a
 * stat-like use (chdir, access) leaves a stub a stub, opendir brings the
 * entries another host made; access(2) of a stub is answered from its
 * stored attributes without the host's call.  Other caches on the same
 * in-memory store are the other hosts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "cache_hosts.h"
#include "kv.h"
#include "mount.h"

/* A file "f" with data and a directory "d" with "d/e", made on host h
 * as the shim makes them and pushed. */
static void stored(struct pohm_cache *c)
{
	int fd;

	EXPECT_EQ_INT(pohm_cache_create(c, "f", 0644, 0), 0);
	fd = open(ch_path("h", "f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	pohm_cache_opened(c, "f", fd);
	EXPECT_EQ_INT((int)write(fd, "data\n", 5), 5);
	EXPECT(pohm_cache_push_fd(c, fd) >= 0);
	close(fd);
	EXPECT_EQ_INT(pohm_cache_mkdir(c, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_create(c, "d/e", 0644, 0), 0);
	fd = open(ch_path("h", "d/e"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	pohm_cache_opened(c, "d/e", fd);
	close(fd);
}

static off_t size_of(const char *p)
{
	struct stat st;

	return stat(p, &st) ? -1 : st.st_size;
}

TEST(exec_fetches_the_data_and_a_name_use_leaves_the_stub)
{
	struct pohm_cache *c, *c2;
	struct stat st;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	stored(c);
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_CHDIR, "f", 0, 0), POHM_PROC_PASS);
	EXPECT_EQ_INT(lstat(ch_path("h2", "f"), &st), 0);
	EXPECT_EQ_INT((int)(st.st_mode & 07777), 0);	/* a stub: nothing fetched */
	/* access(2) of the stub: by its stored mode, no real call needed. */
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_ACCESS, "f", R_OK, 0), 0);
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_EXEC, "f", 0, 0), POHM_PROC_PASS);
	EXPECT_EQ_INT((int)size_of(ch_path("h2", "f")), 5);	/* fetched */
	/* access of a fetched file: the local file answers (the real call). */
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_ACCESS, "f", R_OK, 0), POHM_PROC_PASS);
	pohm_cache_close(c);
	pohm_cache_close(c2);
}

TEST(opendir_brings_the_entries_another_host_made)
{
	struct pohm_cache *c, *c2;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	stored(c);
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_OPENDIR, "d", 0, 0), POHM_PROC_PASS);
	EXPECT_EQ_INT(access(ch_path("h2", "d/e"), F_OK), 0);
	pohm_cache_close(c);
	pohm_cache_close(c2);
}
