/*
 * test_cachesib.c — issue 23: an expired entry of a directory this process
 * listed (or the second it revalidates there) is revalidated with its
 * siblings, one listing and one batch of inodes (cache.c sib_batch), not a
 * round trip each; freshness is not weakened (a batch-checked entry
 * expires attr_timeout after the batch's reads; another host's change or
 * removal shows after attr_timeout).  Store calls are counted as round
 * trips: a get, a read, a get_n each one (cache_hosts.h's ch_counted_n,
 * which has a get_n).
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "cache_hosts.h"

#define SIB_N 60			/* entries of the directory */
#define SIB_TIMEOUT_NS 1000000000ULL	/* attr_timeout of the counted hosts */

/* Host name's cache over the counted store with get_n (a new one: a new
 * process), attr_timeout SIB_TIMEOUT_NS. */
static struct pohm_cache *sib_host(const char *name)
{
	return ch_host_over(name, &ch_counted_n, SIB_TIMEOUT_NS);
}

/* Round trips (get, read and get_n calls) since the last call. */
static unsigned sib_take(void)
{
	return ch_rt_take();
}

static void sib_sleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* a makes d with SIB_N files; b lists it (stubs). */
static void sib_fill(struct pohm_cache **a, struct pohm_cache **b)
{
	char rel[64];
	int i;

	ch_setup();
	*a = sib_host("a");
	*b = sib_host("b");
	EXPECT(*a && *b);
	EXPECT_EQ_INT(pohm_cache_mkdir(*a, "d", 0755), 0);
	for (i = 0; i < SIB_N; i++) {
		snprintf(rel, sizeof(rel), "d/f%02d", i);
		EXPECT_EQ_INT(ch_write(*a, "a", rel, "data", 4), 0);
	}
	EXPECT_EQ_INT(pohm_cache_materialize(*b, "d", POHM_MAT_LIST), 0);
}

/* b's entries of d, last to first: 0 each (present or absent). */
static void sib_stat_reverse(struct pohm_cache *b)
{
	char rel[64];
	int i;

	for (i = SIB_N - 1; i >= 0; i--) {
		snprintf(rel, sizeof(rel), "d/f%02d", i);
		EXPECT_EQ_INT(pohm_cache_materialize(b, rel, POHM_MAT_NOFOLLOW), 0);
	}
}

TEST(expired_entries_of_a_listed_directory_are_checked_in_one_batch)
{
	struct pohm_cache *a, *b;
	unsigned n;

	sib_fill(&a, &b);
	sib_sleep(1200);
	sib_take();
	sib_stat_reverse(b);
	n = sib_take();
	printf("# %u store calls for %d expired entries of a listed directory\n", n, SIB_N);
	EXPECT(n <= 6);		/* the old code: one or more an entry */
	/* Validated as of the batch's reads: expired again after attr_timeout. */
	sib_sleep(1200);
	sib_stat_reverse(b);
	n = sib_take();
	EXPECT(n >= 1 && n <= 6);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(a_process_that_did_not_list_batches_from_the_second_expired_entry)
{
	struct pohm_cache *a, *b, *b2;
	unsigned n;

	sib_fill(&a, &b);
	pohm_cache_close(b);
	b2 = sib_host("b");	/* a new process of host b: no listing of its own */
	EXPECT(b2 != NULL);
	sib_sleep(1200);
	sib_take();
	sib_stat_reverse(b2);
	n = sib_take();
	printf("# %u store calls for %d expired entries, not listed\n", n, SIB_N);
	EXPECT(n <= 10);
	pohm_cache_close(a);
	pohm_cache_close(b2);
}

TEST(another_hosts_change_and_removal_show_through_the_batch_after_attr_timeout)
{
	struct pohm_cache *a, *b;
	struct stat st;

	sib_fill(&a, &b);
	EXPECT_EQ_INT(ch_write(a, "a", "d/f07", "changed", 7), 0);
	EXPECT_EQ_INT(pohm_cache_unlink(a, "d/f11"), 0);
	sib_sleep(1200);
	sib_stat_reverse(b);
	EXPECT_EQ_INT(lstat(ch_path("b", "d/f07"), &st), 0);
	pohm_cache_stat_fix(b, &st);	/* a stub: the stored size, as the shim shows it */
	EXPECT_EQ_INT((int)st.st_size, 7);
	EXPECT_EQ_INT(lstat(ch_path("b", "d/f11"), &st), -1);
	EXPECT_EQ_INT(lstat(ch_path("b", "d/f12"), &st), 0);
	/* Within attr_timeout of b's batch, a change may not show; after it, it does. */
	EXPECT_EQ_INT(ch_write(a, "a", "d/f20", "changed again", 13), 0);
	sib_sleep(1200);
	sib_stat_reverse(b);
	EXPECT_EQ_INT(lstat(ch_path("b", "d/f20"), &st), 0);
	pohm_cache_stat_fix(b, &st);
	EXPECT_EQ_INT((int)st.st_size, 13);
	pohm_cache_close(a);
	pohm_cache_close(b);
}
