/*
 * test_cacheneg.c — negative lookups (issue 23, decision 0047): a name
 * missing locally in a directory this process holds complete (listed, or
 * made by it, within attr_timeout) is absent with no store call; after
 * attr_timeout the store is asked again; whatever may leave a stored name
 * without a local file (a create's failed undo, a rename from another
 * directory) makes the directory incomplete.  The store calls are counted
 * (every read kind) through cache_hosts.h's counted store (ch_counted).
 */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "cache_hosts.h"

#define NEG_TIMEOUT_NS 1000000000ULL	/* attr_timeout of the counted hosts */

/* Host name's cache over the counted store (no get_n), attr_timeout NEG_TIMEOUT_NS. */
static struct pohm_cache *neg_host(const char *name)
{
	return ch_host_over(name, &ch_counted, NEG_TIMEOUT_NS);
}

/* Reads (get and read calls) since the last call. */
static unsigned neg_take(void)
{
	return ch_rt_take();
}

static void neg_sleep_past_timeout(void)
{
	struct timespec ts = { 1, 200000000 };	/* attr_timeout + 0.2 s */

	nanosleep(&ts, NULL);
}

static int exists(const char *h, const char *rel)
{
	struct stat st;

	return !lstat(ch_path(h, rel), &st);
}

/* Host b makes d with d/f; host a's cache lists d (f is there after). */
static void made_there_listed_here(struct pohm_cache *a, struct pohm_cache *b)
{
	EXPECT_EQ_INT(pohm_cache_mkdir(b, "d", 0755), 0);
	EXPECT_EQ_INT(ch_write(b, "b", "d/f", "data", 4), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d", POHM_MAT_LIST), 0);
	EXPECT(exists("a", "d/f"));
}

TEST(a_missing_name_in_a_directory_made_here_costs_no_store_call)
{
	struct pohm_cache *a;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	neg_take();
	/* The real call reports ENOENT: materialize leaves it to it (0). */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/x", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/y", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	EXPECT(!exists("a", "d/x"));
	/* Expired: the store is asked again. */
	neg_sleep_past_timeout();
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/x", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	pohm_cache_close(a);
}

TEST(a_listed_directory_answers_within_attr_timeout_then_sees_another_hosts_create)
{
	struct pohm_cache *a, *b;

	ch_setup();
	a = neg_host("a");
	b = neg_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "d/f", "data", 4), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d", POHM_MAT_LIST), 0);
	EXPECT(exists("b", "d/f"));
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d/new", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	/* a creates it: b may not know within attr_timeout, must after it. */
	EXPECT_EQ_INT(ch_write(a, "a", "d/new", "x", 1), 0);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d/new", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	EXPECT(!exists("b", "d/new"));
	neg_sleep_past_timeout();
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d/new", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	EXPECT(exists("b", "d/new"));
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(a_create_whose_undo_failed_leaves_the_directory_incomplete)
{
	struct pohm_cache *a;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	/* The insert is made, the local open "fails", and so does the undo. */
	EXPECT_EQ_INT(pohm_cache_create(a, "d/y", 0644, 1), 0);
	pohm_kvmem_fail_after(&ch_mem, 0);
	pohm_cache_create_undo(a, "d/y");
	pohm_kvmem_fail_after(&ch_mem, -1);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/y", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	EXPECT(exists("a", "d/y"));	/* the stored name, made here */
	pohm_cache_close(a);
}

TEST(a_rename_from_another_directory_leaves_the_target_incomplete)
{
	struct pohm_cache *a;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "e/f", "data", 4), 0);
	/* A rename within a directory keeps it complete. */
	EXPECT_EQ_INT(pohm_cache_rename(a, "e/f", "e/g", 0), 0);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "e/missing", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	EXPECT_EQ_INT(pohm_cache_rename(a, "e/g", "d/g", 0), 0);
	EXPECT(exists("a", "d/g"));
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/missing", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	pohm_cache_close(a);
}

/* A new process of host a's cache: its listing of d and a lookup of a
 * missing name in it make no store call. */
static struct pohm_cache *next_process_asks_nothing(void)
{
	struct pohm_cache *a2 = neg_host("a");

	EXPECT(a2 != NULL);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a2, "d", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(a2, "d/missing", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	return a2;
}

/* Decision 0062: the mark is in the directory's record, so a second
 * process of the same cache (a second pohm_cache over a's dirs) neither
 * lists d again nor asks for a missing name, within attr_timeout; after
 * it, it asks and sees another host's create. */
TEST(a_directory_one_process_listed_is_complete_for_the_next_process_of_the_cache)
{
	struct pohm_cache *a, *a2, *b;

	ch_setup();
	a = neg_host("a");
	b = neg_host("b");
	EXPECT(a && b);
	made_there_listed_here(a, b);
	a2 = next_process_asks_nothing();
	EXPECT_EQ_INT(ch_write(b, "b", "d/new", "x", 1), 0);
	neg_sleep_past_timeout();
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a2, "d", POHM_MAT_LIST), 0);
	EXPECT(neg_take() >= 1);
	EXPECT(exists("a", "d/new"));
	pohm_cache_close(a2);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/* A process whose create may have left a stored name without a local
 * file (the undo failed) clears the mark in the record: another process
 * that listed d before does not hide the name from a third. */
TEST(a_failed_create_undo_clears_the_mark_for_the_other_processes)
{
	struct pohm_cache *a, *a2, *a3, *b;

	ch_setup();
	a = neg_host("a");
	a2 = neg_host("a");
	b = neg_host("b");
	EXPECT(a && a2 && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(b, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_create(a2, "d/y", 0644, 1), 0);
	pohm_kvmem_fail_after(&ch_mem, 0);
	pohm_cache_create_undo(a2, "d/y");
	pohm_kvmem_fail_after(&ch_mem, -1);
	a3 = neg_host("a");
	EXPECT(a3 != NULL);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a3, "d/y", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	EXPECT(exists("a", "d/y"));
	pohm_cache_close(a3);
	pohm_cache_close(a2);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/* A directory made by one process is complete (and empty) for the next
 * process of the cache too, as of before its insert (decision 0062). */
TEST(a_directory_one_process_made_is_complete_for_the_next_process_of_the_cache)
{
	struct pohm_cache *a, *a2;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "d/f", "data", 4), 0);
	a2 = next_process_asks_nothing();
	EXPECT(exists("a", "d/f"));
	pohm_cache_close(a2);
	pohm_cache_close(a);
}
