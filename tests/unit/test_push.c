/*
 * test_push.c — core/cache/push.c through the cache's API, two hosts on
 * one in-memory store whose writes are counted: a push sends only the
 * chunks that changed, a push of an unchanged file writes nothing, the
 * bytes arrive whole across chunk boundaries, and a truncate travels.
 * (A push based on an old version: test_cache.c, concurrent writers.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "cache_hosts.h"

#define CS	4096	/* the hosts' chunk size */

/* n bytes of a pattern that differs per chunk and per seed. */
static void fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + i / CS * 7 + seed);
}

TEST(a_push_sends_only_the_chunks_that_changed)
{
	static unsigned char data[3 * CS + 17], back[sizeof(data) + 1];
	struct pohm_cache *a, *b;
	int fd;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	fill(data, sizeof(data), 1);
	ch_puts_reset();
	EXPECT_EQ_INT(ch_write(a, "a", "f", data, sizeof(data)), 0);
	EXPECT_EQ_INT(ch_puts_of('d'), 4);	/* every chunk, the short last one too */
	EXPECT(ch_puts_of('i') >= 1);
	/* One byte changed in the third chunk: one chunk written. */
	fd = open(ch_path("a", "f"), O_RDWR);
	EXPECT(fd >= 0);
	pohm_cache_opened(a, "f", fd);
	EXPECT_EQ_INT(pwrite(fd, "X", 1, 2 * CS + 5), 1);
	EXPECT_EQ_INT(pohm_cache_push_fd(a, fd), 1);	/* 1: pushed */
	close(fd);
	EXPECT_EQ_INT(ch_puts_of('d'), 1);
	/* b gets every byte, across the chunk boundaries. */
	data[2 * CS + 5] = 'X';
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(ch_read_all(ch_path("b", "f"), back, sizeof(back)), sizeof(data));
	EXPECT(!memcmp(back, data, sizeof(data)));
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(a_push_of_an_unchanged_file_writes_nothing)
{
	struct pohm_cache *a;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "same", 4), 0);
	ch_puts_reset();
	EXPECT_EQ_INT(pohm_cache_push_path(a, "f"), 0);	/* 0: unchanged */
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 0);
	EXPECT_EQ_INT(ch_puts_of('d'), 0);
	EXPECT_EQ_INT(ch_puts_of('i'), 0);
	EXPECT_EQ_INT(ch_puts_of('b'), 0);
	pohm_cache_close(a);
}

TEST(a_truncate_travels)
{
	static unsigned char data[2 * CS];
	struct pohm_cache *a, *b;
	struct stat st;
	int fd;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	fill(data, sizeof(data), 2);
	EXPECT_EQ_INT(ch_write(a, "a", "f", data, sizeof(data)), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	fd = open(ch_path("a", "f"), O_RDWR);
	EXPECT(fd >= 0);
	pohm_cache_opened(a, "f", fd);
	EXPECT_EQ_INT(ftruncate(fd, 10), 0);
	EXPECT_EQ_INT(pohm_cache_push_fd(a, fd), 1);
	close(fd);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(stat(ch_path("b", "f"), &st), 0);
	EXPECT_EQ_INT(st.st_size, 10);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/* ---------------------------------------------------------------- issue 18: the push's base */

static struct pohm_cache *race_a;	/* the host whose append the hook pushes */

/* Host a appends "a\n" to its copy of f and pushes it (sync_on_close). */
static void race_a_appends(void)
{
	int fd = open(ch_path("a", "f"), O_RDWR | O_APPEND);

	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "a\n", 2), 2);
	EXPECT_EQ_INT(pohm_cache_push_fd(race_a, fd), 1);
	close(fd);
}

/* The conflict copies from host `from` that host h (cache c) sees whose
 * contents are want: their number, or -1 if one holds anything else. */
static int conflict_copies(struct pohm_cache *c, const char *h, const char *from, const char *want)
{
	char rel[800], dir[256], buf[256];
	struct dirent *de;
	ssize_t n;
	DIR *d;
	int found = 0;

	snprintf(dir, sizeof(dir), ".pohmelfs-conflicts/%s", from);
	if (pohm_cache_materialize(c, dir, POHM_MAT_LIST))
		return 0;
	d = opendir(ch_path(h, dir));
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", dir, de->d_name);
		if (pohm_cache_materialize(c, rel, POHM_MAT_DATA) ||
		    (n = ch_read_all(ch_path(h, rel), buf, sizeof(buf) - 1)) < 0) {
			found = -1;
			break;
		}
		buf[n] = '\0';
		if (strcmp(buf, want)) {
			found = -1;
			break;
		}
		found++;
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * The CI failure of cache_append_hosts (issue 18): host b's push of a copy
 * that holds its base's bytes but a new mtime sends only the attributes;
 * host a commits an append between b's look at the stored inode and b's
 * setattr, whose CAS then retries over a's version and returns it.  b must
 * not take that version as its copy's base (it does not hold its bytes):
 * b's next change is a conflict copy, and a's line stays.
 */
TEST(an_attribute_push_never_adopts_a_data_version_it_did_not_fetch)
{
	struct timespec tv[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
	struct pohm_cache *a, *b, *c;
	char buf[64];
	ssize_t n;
	int fd;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "x\n", 2), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	/* b: same bytes, another mtime; a's append lands just before b's setattr. */
	EXPECT_EQ_INT(utimensat(AT_FDCWD, ch_path("b", "f"), tv, 0), 0);
	race_a = a;
	ch_before_inode_cas = race_a_appends;
	EXPECT_EQ_INT(pohm_cache_push_path(b, "f"), 1);	/* the mtime went */
	EXPECT(ch_before_inode_cas == NULL);		/* a's append ran */
	/* b appends to its copy (no open in between: the copy it has) and pushes. */
	fd = open(ch_path("b", "f"), O_RDWR | O_APPEND);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "b\n", 2), 2);
	EXPECT_EQ_INT(pohm_cache_push_fd(b, fd), 0);	/* 0: not committed, a conflict copy */
	close(fd);
	/* A fresh host: a's line in the file, b's in a conflict copy. */
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(c, "f", POHM_MAT_DATA), 0);
	n = ch_read_all(ch_path("c", "f"), buf, sizeof(buf) - 1);
	EXPECT_EQ_INT(n, 4);
	buf[n > 0 ? n : 0] = '\0';
	EXPECT_EQ_STR(buf, "x\na\n");
	EXPECT_EQ_INT(conflict_copies(c, "c", "b", "x\nb\n"), 1);
	/* b's next open shows the stored version. */
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	n = ch_read_all(ch_path("b", "f"), buf, sizeof(buf) - 1);
	EXPECT_EQ_INT(n, 4);
	pohm_cache_close(a);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

/*
 * A host that opens an existing empty file with O_CREAT (`>>`) makes its
 * empty local copy with the stored times: a push before any write (the
 * exec of `sh -c 'exec printf ... >>f'` pushes what it opened for write)
 * has nothing to send.  It sent the copy's own mtime: a spurious setattr
 * over the stored mtime, and the window of the race above.
 */
TEST(an_empty_copy_made_by_a_create_pushes_nothing)
{
	struct pohm_cache *a, *b;
	struct stat st;
	int fd;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "", 0), 0);
	ch_puts_reset();
	EXPECT_EQ_INT(pohm_cache_create(b, "f", 0644, 0), 1);	/* 1: it exists */
	fd = open(ch_path("b", "f"), O_RDWR | O_CREAT | O_APPEND, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(fstat(fd, &st), 0);
	EXPECT_EQ_INT(st.st_size, 0);
	EXPECT_EQ_INT(pohm_cache_push_fd(b, fd), 0);	/* 0: nothing to push */
	close(fd);
	EXPECT_EQ_INT(ch_puts_of('i'), 0);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/* ---------------------------------------------------------------- two pushers of a written stub */

static struct pohm_cache *stub_b;	/* the host whose stub was written into */
static int stub_fd2 = -1;		/* the second pusher's fd, opened before the first's restub */
static int stub_r2 = -100;		/* what the second push returned */
static pthread_t stub_th;
static int stub_started;

static void *stub_second_push(void *arg)
{
	(void)arg;
	stub_r2 = pohm_cache_push_fd(stub_b, stub_fd2);
	return NULL;
}

/* Run inside the first push, while it holds the turn: the second pusher
 * (`pohmelfs sync` beside pohmelfsd's round) starts and waits for it. */
static void stub_second_starts(void)
{
	struct timespec ts = { 0, 200000000L };

	stub_started = !pthread_create(&stub_th, NULL, stub_second_push, NULL);
	nanosleep(&ts, NULL);	/* past its look at the journal, waiting for the turn */
}

/*
 * The CI failure of cache_refresh.bats 7 (session 11): a regular stub
 * written without the shim was pushed by `pohmelfs sync` and by host a's
 * pohmelfsd at once.  The first made the conflict copy and put a fresh
 * stub in its place; the second had opened the written file before that,
 * waited for its turn, and then took the record (a stub now) and its own
 * fd (the written file, no longer the cache's) for a stub still written
 * into: a second conflict copy of the same bytes.
 */
TEST(two_pushers_of_a_written_stub_make_one_conflict_copy)
{
	struct pohm_cache *a, *b, *c;
	struct stat st;
	int fd;

	ch_setup();
	setenv("POHMELFS_TEST_REGULAR_STUBS", "1", 1);
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "stored\n", 7), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(lstat(ch_path("b", "f"), &st), 0);
	EXPECT(S_ISREG(st.st_mode) && st.st_size == 0 && !(st.st_mode & 07777));
	/* Written without the shim. */
	EXPECT_EQ_INT(chmod(ch_path("b", "f"), 0644), 0);
	fd = open(ch_path("b", "f"), O_WRONLY | O_TRUNC);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "written into the stub\n", 22), 22);
	close(fd);
	/* Two pushers, each with its own fd of the written file. */
	fd = open(ch_path("b", "f"), O_RDONLY);
	stub_fd2 = open(ch_path("b", "f"), O_RDONLY);
	EXPECT(fd >= 0 && stub_fd2 >= 0);
	stub_b = b;
	stub_started = 0;
	ch_before_inode_cas = stub_second_starts;
	EXPECT_EQ_INT(pohm_cache_push_fd(b, fd), 1);	/* the conflict copy, a stub again */
	EXPECT(stub_started);
	if (stub_started)
		pthread_join(stub_th, NULL);
	EXPECT_EQ_INT(stub_r2, 0);			/* nothing left to keep */
	close(fd);
	close(stub_fd2);
	unsetenv("POHMELFS_TEST_REGULAR_STUBS");
	/* One copy; the storage keeps its version. */
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_INT(conflict_copies(c, "c", "b", "written into the stub\n"), 1);
	EXPECT_EQ_INT(pohm_cache_materialize(c, "f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(ch_read_all(ch_path("c", "f"), (char[16]){ 0 }, 15), 7);
	pohm_cache_close(a);
	pohm_cache_close(b);
	pohm_cache_close(c);
}
