/*
 * test_dirindex.c — a local directory's index entry (x.idx: local
 * (dev, ino) → storage inode) that names another directory's record is
 * stale, and never makes that other directory the parent of a new name.
 *
 * The file system reuses inode numbers at once (ext4 does; tmpfs does
 * not), so an index entry can outlive the local file it was made for.
 * For files, ensure_entry has taken a record whose local inode differs
 * from the file at the name for a stale entry since session 5; a
 * directory was exempt, and with attr_timeout > 0 the walk answered from
 * that other directory's fresh record: a create, mkdir or rename under
 * the directory went into the other one in the storage (session 15,
 * rel_concurrency's wrong-parent mkdir hunt; doc/notes-s15-conc.md).
 * Here the bad state is made directly: d2's local directory indexed as
 * d1's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "cache_hosts.h"
#include "journal.h"

/* Host h's journal says its local file rel is storage inode *ino: 0 or -errno. */
static int indexed_as(const char *h, const char *rel, uint64_t *ino)
{
	struct pohm_journal j;
	char dir[600];
	struct stat st;
	int r;

	if (stat(ch_path(h, rel), &st))
		return -errno;
	snprintf(dir, sizeof(dir), "%s/%s/state", ch_root, h);
	r = pohm_journal_open(&j, dir);
	if (r)
		return r;
	r = pohm_journal_lookup_local(&j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, ino);
	pohm_journal_close(&j);
	return r;
}

/* Index host h's local directory rel as storage inode ino (what a stale
 * entry left by an earlier file of the same local inode number says). */
static int index_as(const char *h, const char *rel, uint64_t ino)
{
	struct pohm_journal j;
	char dir[600];
	struct stat st;
	int r;

	if (stat(ch_path(h, rel), &st))
		return -errno;
	snprintf(dir, sizeof(dir), "%s/%s/state", ch_root, h);
	r = pohm_journal_open(&j, dir);
	if (r)
		return r;
	r = pohm_journal_index_set(&j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, ino);
	pohm_journal_close(&j);
	return r;
}

static int exists_on(struct pohm_cache *c, const char *h, const char *rel)
{
	struct stat st;

	return !pohm_cache_materialize(c, rel, POHM_MAT_NOFOLLOW) && !lstat(ch_path(h, rel), &st);
}

TEST(a_stale_index_entry_of_a_directory_never_makes_another_directory_the_parent)
{
	struct pohm_cache *a, *b;
	uint64_t d1 = 0, d2 = 0;

	ch_setup();
	/* a answers from fresh records (attr_timeout 10 s); b asks the store. */
	a = ch_host_over("a", &ch_kv, 10000000000ULL);
	b = ch_host("b");
	EXPECT(a != NULL && b != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d1", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d2", 0755), 0);
	EXPECT_EQ_INT(indexed_as("a", "d1", &d1), 0);
	EXPECT_EQ_INT(indexed_as("a", "d2", &d2), 0);
	EXPECT(d1 && d2 && d1 != d2);
	/* The bad state: d2's local directory indexed as d1, whose record
	 * (fresh: a made it just now) names d1's own local directory. */
	EXPECT_EQ_INT(index_as("a", "d2", d1), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d2/x", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "d2/f", "f\n", 2), 0);
	/* Where the storage put them: under d2, as the local tree has them. */
	EXPECT(exists_on(b, "b", "d2/x"));
	EXPECT(exists_on(b, "b", "d2/f"));
	EXPECT(!exists_on(b, "b", "d1/x"));
	EXPECT(!exists_on(b, "b", "d1/f"));
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/*
 * The same stale entry met by pohmelfsd's reconcile (cachescan.c
 * scan_dir): a symlink made without the shim in d2's local directory is
 * made in the storage under d2, not under the directory the stale entry
 * names.  (Sleeps 5 s: reconcile adopts a name once it settled.)
 */
TEST(reconcile_never_adopts_into_the_directory_a_stale_index_entry_names)
{
	struct pohm_cache *a, *b;
	uint64_t d1 = 0;

	ch_setup();
	a = ch_host_over("a", &ch_kv, 10000000000ULL);
	b = ch_host("b");
	EXPECT(a != NULL && b != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d1", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d2", 0755), 0);
	EXPECT_EQ_INT(indexed_as("a", "d1", &d1), 0);
	EXPECT_EQ_INT(index_as("a", "d2", d1), 0);
	EXPECT_EQ_INT(symlink("t", ch_path("a", "d2/l")), 0);	/* no shim */
	usleep(5300 * 1000);	/* cachescan.c SETTLE_NS, 5 s */
	EXPECT_EQ_INT(pohm_cache_reconcile(a), 1);
	EXPECT(exists_on(b, "b", "d2/l"));
	EXPECT(!exists_on(b, "b", "d1/l"));
	pohm_cache_close(a);
	pohm_cache_close(b);
}
