/*
 * test_jstale.c — no journal record is put back stale (issue 18,
 * ARCHITECTURE §11): a cache call that read a record and wrote it later
 * undid what another process of the host wrote in between.  The sites:
 * a directory's times after an entry change (cache_dir_changed), a
 * directory's attribute push (push_dir_attrs), the re-noting of a clean
 * copy after an unlink of another name (renote_if_clean) and a remote
 * rename followed by a listing (list_drop_gone's hint).
 *
 * Linked with -Wl,--wrap=pohm_journal_get (Makefile): right after every
 * read of the watched inode's record by the cache, "another process" (a
 * second journal handle on the same cache_dir) writes that record with
 * a newer version each time (as a revalidation or a push there would).
 * The record at the end must carry the last one written.
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
#include "journal.h"

int __real_pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r);
int __wrap_pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r);

static uint64_t watch_ino;	/* 0: no other writer */
static char watch_dir[600];	/* the cache_dir it writes in */
static uint64_t marks;		/* records written by the other process */
static uint64_t last;		/* the version it wrote last */
static int in_other;
static int once;		/* only after the first read */

/* Another process of the host writes ino's record (a newer version). */
static void other_writes(uint64_t ino)
{
	struct pohm_journal oj;
	struct pohm_jrec r;

	if (pohm_journal_open(&oj, watch_dir))
		return;
	if (!__real_pohm_journal_get(&oj, ino, &r)) {
		r.version += 1000;
		if (!pohm_journal_put(&oj, &r)) {
			marks++;
			last = r.version;
		}
	}
	pohm_jrec_clear(&r);
	pohm_journal_close(&oj);
}

int __wrap_pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r)
{
	int rc = __real_pohm_journal_get(j, ino, r);

	if (watch_ino && ino == watch_ino && !in_other && !(once && marks)) {
		in_other = 1;
		other_writes(ino);
		in_other = 0;
	}
	return rc;
}

/* Storage inode of rel on host h's cache c. */
static uint64_t ino_of(struct pohm_cache *c, const char *h, const char *rel)
{
	struct stat st;

	if (lstat(ch_path(h, rel), &st))
		return 0;
	pohm_cache_stat_fix(c, &st);
	return (uint64_t)st.st_ino;
}

static void watch(const char *h, uint64_t ino)
{
	snprintf(watch_dir, sizeof(watch_dir), "%s/%s/state", ch_root, h);
	marks = last = 0;
	once = 0;
	watch_ino = ino;
}

/* Stop watching; the record of ino as it is now into *r. */
static int unwatch(uint64_t ino, struct pohm_jrec *r)
{
	struct pohm_journal oj;
	int rc;

	watch_ino = 0;
	rc = pohm_journal_open(&oj, watch_dir);
	if (rc)
		return rc;
	rc = __real_pohm_journal_get(&oj, ino, r);
	pohm_journal_close(&oj);
	return rc;
}

TEST(an_entry_change_keeps_a_directory_record_written_meanwhile)
{
	struct pohm_cache *a;
	struct pohm_jrec r;
	uint64_t d;

	ch_setup();
	setenv("POHMELFS_TEST_DIR_TIME_LAG", "0", 1);	/* every change moves the times */
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	d = ino_of(a, "a", "d");
	EXPECT(d != 0);
	watch("a", d);
	EXPECT_EQ_INT(ch_write(a, "a", "d/f", "x\n", 2), 0);
	EXPECT_EQ_INT(pohm_cache_unlink(a, "d/f"), 0);
	EXPECT_EQ_INT(unwatch(d, &r), 0);
	EXPECT(marks > 0);
	EXPECT_EQ_U64(r.version, last);
	pohm_jrec_clear(&r);
	unsetenv("POHMELFS_TEST_DIR_TIME_LAG");
	pohm_cache_close(a);
}

TEST(a_directory_attribute_push_keeps_a_record_written_meanwhile)
{
	struct pohm_cache *a, *b;
	struct pohm_jrec r;
	struct stat st;
	uint64_t d;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	d = ino_of(a, "a", "d");
	EXPECT(d != 0);
	EXPECT_EQ_INT(chmod(ch_path("a", "d"), 0750), 0);	/* a change without the shim */
	watch("a", d);
	EXPECT_EQ_INT(pohm_cache_push_path(a, "d"), 1);
	EXPECT_EQ_INT(unwatch(d, &r), 0);
	EXPECT(marks > 0);
	EXPECT_EQ_U64(r.version, last);
	pohm_jrec_clear(&r);
	/* The push reached the storage. */
	b = ch_host("b");
	EXPECT(b != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d", 0), 0);
	EXPECT_EQ_INT(lstat(ch_path("b", "d"), &st), 0);
	pohm_cache_stat_fix(b, &st);
	EXPECT_EQ_INT(st.st_mode & 07777, 0750);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(an_unlink_of_another_name_keeps_a_record_written_meanwhile)
{
	struct pohm_cache *a;
	struct pohm_jrec r;
	struct stat st;
	uint64_t f;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "x\n", 2), 0);
	EXPECT_EQ_INT(pohm_cache_link(a, "f", "g"), 0);
	f = ino_of(a, "a", "f");
	EXPECT(f != 0);
	usleep(30000);		/* past the racy tick of f's record */
	watch("a", f);
	EXPECT_EQ_INT(pohm_cache_unlink(a, "g"), 0);
	EXPECT_EQ_INT(unwatch(f, &r), 0);
	EXPECT_EQ_U64(r.version, last);
	/* And the copy was re-noted clean at its new ctime. */
	EXPECT_EQ_INT(lstat(ch_path("a", "f"), &st), 0);
	EXPECT_EQ_INT(pohm_journal_is_dirty(&r, &st) == 1, 0);
	EXPECT_EQ_U64((uint64_t)st.st_ctim.tv_nsec, r.lctime.nsec);
	pohm_jrec_clear(&r);
	pohm_cache_close(a);
}

TEST(a_remote_rename_seen_in_a_listing_keeps_a_record_written_meanwhile)
{
	struct pohm_cache *a, *b;
	struct pohm_jrec r;
	struct stat st;
	uint64_t f;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "d/f", "x\n", 2), 0);
	f = ino_of(a, "a", "d/f");
	EXPECT(f != 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_rename(b, "d/f", "d/g", 0), 0);
	watch("a", f);
	once = 1;	/* the listing reads f's record again after its put */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(unwatch(f, &r), 0);
	EXPECT(marks > 0);
	EXPECT_EQ_U64(r.version, last);
	EXPECT_EQ_STR(r.hint, "d/g");				/* the hint followed */
	EXPECT_EQ_INT(lstat(ch_path("a", "d/g"), &st), 0);	/* a local rename */
	pohm_jrec_clear(&r);
	pohm_cache_close(a);
	pohm_cache_close(b);
}
