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
#include "kv.h"
#include "mount.h"

static struct pohm_kv kv;
static char root[128];

static struct pohm_cache *host(const char *name)
{
	struct pohm_cache_opts o = { 0 };
	struct pohm_cache *c = NULL;
	char prefix[512], cdir[512], err[512];

	snprintf(prefix, sizeof(prefix), "%s/%s/prefix", root, name);
	snprintf(cdir, sizeof(cdir), "%s/%s/state", root, name);
	o.prefix = prefix;
	o.cache_dir = cdir;
	o.fsid = "t";
	o.host_id = name;
	o.kv = &kv;
	o.chunk_shift = 12;
	if (pohm_cache_open(&c, &o, err, sizeof(err)))
		printf("# open %s: %s\n", name, err);
	return c;
}

static void setup(void)
{
	char cmd[400];

	snprintf(root, sizeof(root), "/tmp/pohm-proclookup-test.%d", (int)getpid());
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", root, root);
	if (system(cmd))
		printf("# setup failed\n");
	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
}

static void cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	EXPECT_EQ_INT(system(cmd), 0);
}

static char *path(const char *h, const char *rel)
{
	static char buf[2][512];
	static int i;

	i = (i + 1) % 2;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s/prefix/%s", root, h, rel);
	return buf[i];
}

/* A file "f" with data and a directory "d" with "d/e", made on host h
 * as the shim makes them and pushed. */
static void stored(struct pohm_cache *c)
{
	int fd;

	EXPECT_EQ_INT(pohm_cache_create(c, "f", 0644, 0), 0);
	fd = open(path("h", "f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	pohm_cache_opened(c, "f", fd);
	EXPECT_EQ_INT((int)write(fd, "data\n", 5), 5);
	EXPECT(pohm_cache_push_fd(c, fd) >= 0);
	close(fd);
	EXPECT_EQ_INT(pohm_cache_mkdir(c, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_create(c, "d/e", 0644, 0), 0);
	fd = open(path("h", "d/e"), O_CREAT | O_RDWR | O_TRUNC, 0644);
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

	setup();
	c = host("h");
	c2 = host("h2");
	EXPECT(c && c2);
	stored(c);
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_CHDIR, "f", 0, 0), POHM_PROC_PASS);
	EXPECT_EQ_INT(lstat(path("h2", "f"), &st), 0);
	EXPECT_EQ_INT((int)(st.st_mode & 07777), 0);	/* a stub: nothing fetched */
	/* access(2) of the stub: by its stored mode, no real call needed. */
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_ACCESS, "f", R_OK, 0), 0);
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_EXEC, "f", 0, 0), POHM_PROC_PASS);
	EXPECT_EQ_INT((int)size_of(path("h2", "f")), 5);	/* fetched */
	/* access of a fetched file: the local file answers (the real call). */
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_ACCESS, "f", R_OK, 0), POHM_PROC_PASS);
	pohm_cache_close(c);
	pohm_cache_close(c2);
	cleanup();
}

TEST(opendir_brings_the_entries_another_host_made)
{
	struct pohm_cache *c, *c2;

	setup();
	c = host("h");
	c2 = host("h2");
	EXPECT(c && c2);
	stored(c);
	EXPECT_EQ_INT(pohm_proc_lookup(c2, POHM_PL_OPENDIR, "d", 0, 0), POHM_PROC_PASS);
	EXPECT_EQ_INT(access(path("h2", "d/e"), F_OK), 0);
	pohm_cache_close(c);
	pohm_cache_close(c2);
	cleanup();
}
