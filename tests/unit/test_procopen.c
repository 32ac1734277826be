/*
 * test_procopen.c — core/mount procopen.c's one call per open
 * (pohm_proc_open) on a cache over the in-memory store: a create whose
 * real open fails leaves no name in the storage (the undo that used to
 * depend on a thread-local passed from preload's before hook to its after
 * hook); one that succeeds makes the real open once, gives the writer's
 * storage inode and the write-only fd's readable fd, and other hosts see
 * the name.  The mkstemp family's one call (pohm_proc_mktemp): the
 * template's directory made local before libc's loop, the file libc made
 * adopted under the name it chose; a failed loop adopts nothing.  Other
 * caches on the same store are the other hosts.
 */
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

/* The fake host: no fds of its own under the prefix; counts the
 * readable fds asked for. */
static int readables;

static int fake_next(int from, uint64_t *ino, unsigned *flags)
{
	return -1;
}

static int fake_readable(int fd, const struct stat *st, int fresh)
{
	readables++;
	return -EBADF;
}

static void fake_closing(int fd, const struct stat *st)
{
}

static void fake_sweep(void)
{
}

static const struct pohm_host_fds hfds = { fake_next, fake_readable, fake_closing, fake_sweep, NULL };

/* The fake host's real open: of host h's local name, counted; fail set:
 * refused as the kernel would refuse it. */
static int calls;
struct ropen { const char *path; int flags, fail; };

static int real_open(void *v)
{
	const struct ropen *x = v;
	int fd;

	calls++;
	if (x->fail)
		return -x->fail;
	fd = open(x->path, x->flags, 0644);
	return fd < 0 ? -errno : fd;
}

TEST(a_create_whose_real_open_fails_leaves_no_name_in_the_storage)
{
	struct ropen x = { NULL, O_CREAT | O_WRONLY | O_EXCL, EACCES };
	struct pohm_proc_real real = { real_open, &x, NULL };
	struct pohm_cache *c, *c2;
	uint64_t ino = 0;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	x.path = ch_path("h", "n");
	calls = 0;
	EXPECT_EQ_INT(pohm_proc_open(c, &hfds, "n", 0, x.flags, 0644, &ino, &real), -EACCES);
	EXPECT_EQ_INT(calls, 1);
	EXPECT_EQ_INT(access(ch_path("h", "n"), F_OK), -1);	/* nor here */
	pohm_cache_materialize(c2, "n", 0);
	EXPECT_EQ_INT(access(ch_path("h2", "n"), F_OK), -1);	/* the other host has none */
	pohm_cache_close(c);
	pohm_cache_close(c2);
}

TEST(a_create_opens_once_and_the_writer_gets_its_inode_and_readable_fd)
{
	struct ropen x = { NULL, O_CREAT | O_WRONLY | O_TRUNC, 0 };
	struct pohm_proc_real real = { real_open, &x, NULL };
	struct pohm_cache *c, *c2;
	uint64_t ino = 0;
	int fd;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	x.path = ch_path("h", "w");
	calls = readables = 0;
	fd = pohm_proc_open(c, &hfds, "w", 0, x.flags, 0644, &ino, &real);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(calls, 1);
	EXPECT_EQ_INT(readables, 1);
	EXPECT(ino != 0);
	EXPECT_EQ_INT((int)write(fd, "x", 1), 1);
	close(fd);
	EXPECT_EQ_INT(pohm_cache_materialize(c2, "w", 0), 0);
	EXPECT_EQ_INT(access(ch_path("h2", "w"), F_OK), 0);	/* the other host sees the name */
	/* A directory's name with O_CREAT: the kernel's alone (EISDIR). */
	x.path = ch_path("h", "");
	x.flags = O_CREAT | O_WRONLY;
	calls = 0;
	EXPECT_EQ_INT(pohm_proc_open(c, &hfds, "", POHM_POF_DIRNAME, x.flags, 0644, &ino, &real),
		      -EISDIR);
	EXPECT_EQ_INT(calls, 1);
	pohm_cache_close(c);
	pohm_cache_close(c2);
}


/* The fake host's mkstemp: glibc's loop on host h's local template (tmpl),
 * then the chosen name written over rel's end, as the shim's hook does
 * (rel ends with the template's last component). */
struct rtemp { char *tmpl, *rel; int fd, fail; };

static int real_mkstemp(void *v)
{
	struct rtemp *x = v;
	size_t n = strlen(strrchr(x->tmpl, '/') + 1);

	calls++;
	if (x->fail)
		return -x->fail;
	x->fd = mkstemp(x->tmpl);
	if (x->fd < 0)
		return -errno;
	memcpy(x->rel + strlen(x->rel) - n, x->tmpl + strlen(x->tmpl) - n, n);
	return x->fd;
}

TEST(mkstemp_makes_the_templates_directory_local_then_adopts_the_chosen_name)
{
	char tmpl[1024], rel[] = "d/tXXXXXX", name[64];
	struct rtemp x = { tmpl, rel, -1, 0 };
	struct pohm_proc_real real = { real_mkstemp, &x, NULL };
	struct pohm_cache *c, *c2;
	uint64_t ino = 0;
	int fd;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	/* "d" is in the storage (made by h2), not yet on h: without the
	 * lookup first, libc's loop fails ENOENT. */
	EXPECT_EQ_INT(pohm_cache_mkdir(c2, "d", 0755), 0);
	EXPECT_EQ_INT(access(ch_path("h", "d"), F_OK), -1);
	snprintf(tmpl, sizeof(tmpl), "%s", ch_path("h", "d/tXXXXXX"));
	calls = readables = 0;
	fd = pohm_proc_mktemp(c, &hfds, rel, O_RDWR | O_CREAT | O_EXCL, &ino, &real);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(fd, x.fd);
	EXPECT_EQ_INT(calls, 1);
	EXPECT_EQ_INT(readables, 0);		/* read-write: no shadow */
	EXPECT(ino != 0);
	EXPECT(strcmp(rel, "d/tXXXXXX") != 0);	/* the name libc chose */
	EXPECT_EQ_INT(strcmp(tmpl + strlen(tmpl) - strlen(rel), rel), 0);
	close(fd);
	/* The other host finds the adopted name; the template is no name. */
	snprintf(name, sizeof(name), "%s", rel);
	EXPECT_EQ_INT(pohm_cache_materialize(c2, name, 0), 0);
	EXPECT_EQ_INT(access(ch_path("h2", name), F_OK), 0);
	pohm_cache_materialize(c2, "d/tXXXXXX", 0);
	EXPECT_EQ_INT(access(ch_path("h2", "d/tXXXXXX"), F_OK), -1);
	pohm_cache_close(c);
	pohm_cache_close(c2);
}

TEST(mkstemp_whose_loop_fails_adopts_nothing_and_returns_its_error)
{
	char tmpl[1024], rel[] = "uXXXXXX";
	struct rtemp x = { tmpl, rel, -1, EEXIST };
	struct pohm_proc_real real = { real_mkstemp, &x, NULL };
	struct pohm_cache *c;
	uint64_t ino = 0;

	ch_setup();
	c = ch_host("h");
	EXPECT(c != NULL);
	snprintf(tmpl, sizeof(tmpl), "%s", ch_path("h", "uXXXXXX"));
	calls = 0;
	EXPECT_EQ_INT(pohm_proc_mktemp(c, &hfds, rel, O_RDWR | O_CREAT | O_EXCL, &ino, &real),
		      -EEXIST);
	EXPECT_EQ_INT(calls, 1);
	EXPECT_EQ_INT((int)ino, 0);
	EXPECT_EQ_INT(strcmp(rel, "uXXXXXX"), 0);
	pohm_cache_close(c);
}
