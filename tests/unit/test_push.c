/*
 * test_push.c — core/cache/push.c through the cache's API, two hosts on
 * one in-memory store whose writes are counted: a push sends only the
 * chunks that changed, a push of an unchanged file writes nothing, the
 * bytes arrive whole across chunk boundaries, and a truncate travels.
 * (A push based on an old version: test_cache.c, concurrent writers.)
 */
#include <errno.h>
#include <fcntl.h>

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
