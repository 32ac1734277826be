/*
 * test_listfail.c — a directory whose listing fails still opens, and says so: the
 * listing (pohm_cache_materialize with POHM_MAT_LIST, what an open of a
 * directory for reading asks) is the cache's business, and its failure
 * is not the open's but its reads' (pohm_cache_list_failed, below).
 *
 * Programs open "." to come back to the working directory later (gnulib's
 * savewd: GNU mkdir -p, and fts: rm -r, find, du).  When that open failed
 * with anything but EACCES or ESTALE, GNU `mkdir -p d2/s3 common/sub` went
 * on in d2, made d2/common/sub instead of ./common/sub and exited 0 (shown
 * without the shim by failing that one open with EIO): the ./d2/common and
 * ./d2/common/sub of rel_concurrency's failure at the end of session 14,
 * an open of "." whose listing failed under load (doc/notes-s15-conc.md).
 * Here the store fails every read of the directory's buckets.
 *
 * The open succeeding is not the listing passing for complete (DESIGN.md
 * §0): pohm_cache_list_failed reports it to the shim, which fails the
 * fd's first read of entries with EIO unless a listing then succeeds
 * (preload/dir.c; tests/bats/cache_listfail.bats runs ls, tar and mkdir -p).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "cache_hosts.h"

/* Keys starting so fail -EIO on read (empty: none). */
static char failing_dir[64];

static int failing_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	if (failing_dir[0] && !strncmp(key, failing_dir, strlen(failing_dir)))
		return -EIO;
	return ch_get(ctx, key, out);
}

static const struct pohm_kv_ops failing_ops = {
	.get = failing_get, .read = ch_read, .put = ch_put, .del = ch_del, .scan = ch_scan,
};

TEST(a_directory_whose_listing_fails_opens_and_says_so)
{
	struct pohm_kv fk = { &failing_ops, NULL };
	const unsigned open_dir = POHM_MAT_DATA | POHM_MAT_LIST | POHM_MAT_OPEN | POHM_MAT_OPEN_R;
	struct pohm_cache *a;
	struct stat st;

	ch_setup();
	a = ch_host_over("a", &fk, 0);
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "w", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "w/f", "f\n", 2), 0);
	EXPECT_EQ_INT(stat(ch_path("a", "w"), &st), 0);
	pohm_cache_stat_fix(a, &st);
	snprintf(failing_dir, sizeof(failing_dir), "b:%llx:", (unsigned long long)st.st_ino);
	/* The walk to w still works (the root's buckets answer); w's listing
	 * cannot be read. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", 0), 0);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 0);	/* no listing asked */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", open_dir), 0);
	/* ... but the listing's failure is kept for the reads of the fd, once. */
	EXPECT_EQ_INT(pohm_cache_list_failed(), 1);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 0);
	/* What is there locally stays: the open lists it. */
	EXPECT_EQ_INT(lstat(ch_path("a", "w/f"), &st), 0);
	/* Listed again (the first read of the fd) and failing again. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 1);
	/* The store answering: the listing passes, no mark. */
	failing_dir[0] = '\0';
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 0);
	pohm_cache_close(a);
}

/* The walk's last step, the directory's own lookup in its parent, failing
 * the same way: an open of the directory is the local one too; a stat of
 * it (no listing) still reports the failure. */
TEST(a_directory_whose_lookup_fails_opens_for_listing_and_says_so)
{
	struct pohm_kv fk = { &failing_ops, NULL };
	const unsigned open_dir = POHM_MAT_DATA | POHM_MAT_LIST | POHM_MAT_OPEN | POHM_MAT_OPEN_R;
	struct pohm_cache *a;

	ch_setup();
	a = ch_host_over("a", &fk, 0);
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "w", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "w/d", 0755), 0);
	/* The root's buckets: the lookup of w in it. */
	snprintf(failing_dir, sizeof(failing_dir), "b:1:");
	pohm_cache_list_failed();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", open_dir), 0);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 1);	/* its reads will fail */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", 0), -EIO);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 0);
	/* Deeper, a failing lookup on the way is still the open's. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w/d", open_dir), -EIO);
	failing_dir[0] = '\0';
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w", open_dir), 0);
	EXPECT_EQ_INT(pohm_cache_list_failed(), 0);
	pohm_cache_close(a);
}
