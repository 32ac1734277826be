/*
 * test_closepush.c — core/mount closepush.c's decisions that need no
 * cache: which fds of the host hold a file (pohm_proc_fd_held, over the
 * host's fd iterator), and a close while another writing fd of the
 * process holds the same file (sync_on_close: no push, the host's close
 * is announced once, the file goes on the process's dirty list).  The
 * host's fd table is a fake: an array of real fds on scratch files.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "mount.h"

/* The fake host's fds under the prefix, their flags and inodes. */
static int nfds, fds[4];
static unsigned flag[4];
static uint64_t inos[4];
static int closing_fd = -1, closings;

static int fake_next(int from, uint64_t *ino, unsigned *flags)
{
	int i, best = -1;

	for (i = 0; i < nfds; i++)
		if (fds[i] >= from && (best < 0 || fds[i] < fds[best]))
			best = i;
	if (best < 0)
		return -1;
	*ino = inos[best];
	*flags = flag[best];
	return fds[best];
}

static int fake_readable(int fd, const struct stat *st, int fresh)
{
	return fd;
}

static void fake_closing(int fd, const struct stat *st)
{
	closing_fd = fd;
	closings++;
}

static void fake_sweep(void)
{
}

static const struct pohm_host_fds host = { fake_next, fake_readable, fake_closing, fake_sweep, NULL };

/* Two fds on one scratch file (a writer, and w2 per its flags), one on another. */
static void setup(const char *dir, unsigned second)
{
	char a[200], b[200];

	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	fds[0] = open(a, O_RDWR | O_CREAT, 0600);
	fds[1] = open(a, O_RDWR);
	fds[2] = open(b, O_RDWR | O_CREAT, 0600);
	flag[0] = POHM_HOST_FD_WRITE;
	flag[1] = second;
	flag[2] = POHM_HOST_FD_WRITE;
	inos[0] = inos[1] = 7;
	inos[2] = 8;
	nfds = 3;
}

static void teardown(void)
{
	int i;

	for (i = 0; i < nfds; i++)
		close(fds[i]);
	nfds = 0;
}

static char *scratch(void)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/pohm-closepush.XXXXXX");
	return mkdtemp(dir);
}

static void rm_scratch(const char *dir)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ_INT(system(cmd), 0);
}

TEST(a_file_is_held_while_any_fd_of_the_host_names_it)
{
	char *dir = scratch();
	struct stat st;

	EXPECT(dir != NULL);
	setup(dir, 0);
	EXPECT_EQ_INT(fstat(fds[0], &st), 0);
	EXPECT_EQ_INT(pohm_proc_fd_held((void *)&host, (uint64_t)st.st_dev, (uint64_t)st.st_ino), 1);
	EXPECT_EQ_INT(pohm_proc_fd_held((void *)&host, (uint64_t)st.st_dev, (uint64_t)st.st_ino + 1000000), 0);
	nfds = 0;	/* no fd under the prefix: nothing held */
	EXPECT_EQ_INT(pohm_proc_fd_held((void *)&host, (uint64_t)st.st_dev, (uint64_t)st.st_ino), 0);
	nfds = 3;
	teardown();
	rm_scratch(dir);
}

/* sync_on_close: the close of a writer while another writing fd of the
 * process is open leaves the push to that fd (issue 22 item 12). */
TEST(a_writer_closed_while_another_writes_the_file_is_only_marked_dirty)
{
	struct pohm_mount m;
	char *dir = scratch();

	EXPECT(dir != NULL);
	memset(&m, 0, sizeof(m));	/* no cache: a push would crash */
	m.sync_on_close = 1;
	setup(dir, POHM_HOST_FD_WRITE);
	pohm_dirty_take(pohm_proc_dirty());
	closings = 0;
	EXPECT_EQ_INT(pohm_proc_close(&m, &host, fds[0], 7, flag[0]), 0);
	EXPECT_EQ_INT(closings, 1);
	EXPECT_EQ_INT(closing_fd, fds[0]);
	EXPECT_EQ_INT((int)pohm_dirty_take(pohm_proc_dirty()), 1);
	teardown();
	rm_scratch(dir);
}
