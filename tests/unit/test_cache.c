/* test_cache.c — the cache through its C API: two caches on one in-memory
 * store act as two hosts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache.h"
#include "cache_int.h"
#include "harness.h"
#include "kv.h"
#include "log.h"
#include "sha512.h"

static struct pohm_kv kv;
static const char *root;	/* th_scratch's directory */

/* The cache of host name's prefix kept in cache_dir state (a per-user one
 * is another state on the same prefix), with host id id. */
static struct pohm_cache *cache_in(const char *name, const char *state, const char *id)
{
	struct pohm_cache_opts o = { 0 };
	struct pohm_cache *c = NULL;
	char prefix[512], cdir[512], err[512];
	int r;

	snprintf(prefix, sizeof(prefix), "%s/%s/prefix", root, name);
	snprintf(cdir, sizeof(cdir), "%s/%s/%s", root, name, state);
	o.prefix = prefix;
	o.cache_dir = cdir;
	o.fsid = "t";
	o.host_id = id;
	o.kv = &kv;
	o.chunk_shift = 12;
	r = pohm_cache_open(&c, &o, err, sizeof(err));
	if (r)
		printf("# open %s: %d %s\n", name, r, err);
	return c;
}

static struct pohm_cache *host(const char *name)
{
	return cache_in(name, "state", name);
}

static void setup(void)
{
	root = th_scratch("cache");
	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
}

static char *path(const char *h, const char *rel)
{
	static char buf[4][1024];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s/prefix/%s", root, h, rel);
	return buf[i];
}

/* What the shim does for open(O_CREAT|O_WRONLY|O_TRUNC) + write + close. */
static int write_file(struct pohm_cache *c, const char *h, const char *rel, const char *data)
{
	int fd, r;

	r = pohm_cache_create(c, rel, 0644, 0);
	if (r < 0)
		return r;
	fd = open(path(h, rel), O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	pohm_cache_opened(c, rel, fd);
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		return -EIO;
	r = pohm_cache_push_fd(c, fd);
	close(fd);
	return r < 0 ? r : 0;
}

static int read_file(const char *p, char *buf, size_t len)
{
	int fd = open(p, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

TEST(two_hosts_round_trip)
{
	struct pohm_cache *a, *b;
	char buf[256];
	struct stat sa, sb;

	setup();
	a = host("a");
	b = host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "dir", 0755), 0);
	EXPECT_EQ_INT(write_file(a, "a", "dir/f", "hello from a"), 0);
	/* b has never seen it: materialize with data brings it whole. */
	EXPECT_EQ_INT(pohm_cache_materialize(b, "dir/f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "dir/f"), buf, sizeof(buf)), 12);
	EXPECT_EQ_STR(buf, "hello from a");
	/* Same identity on both hosts. */
	EXPECT_EQ_INT(stat(path("a", "dir/f"), &sa), 0);
	EXPECT_EQ_INT(stat(path("b", "dir/f"), &sb), 0);
	pohm_cache_stat_fix(a, &sa);
	pohm_cache_stat_fix(b, &sb);
	EXPECT_EQ_U64(sa.st_ino, sb.st_ino);
	EXPECT_EQ_U64(sa.st_dev, sb.st_dev);
	EXPECT_EQ_U64(sa.st_dev, pohm_cache_dev(a));
	/* An update on a, then b refreshes (attr_timeout 0: every open checks). */
	EXPECT_EQ_INT(write_file(a, "a", "dir/f", "second version"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "dir/f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "dir/f"), buf, sizeof(buf)), 14);
	EXPECT_EQ_STR(buf, "second version");
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/*
 * Is the local file open as fd recorded as the local copy of the inode rel
 * names in the storage: the index points from the file to that inode, and
 * its record names the file?  Not the index alone: an entry left by a
 * local file removed without the shim (the directory a link replaced)
 * stays, and the file system may give its inode number to the next new
 * file (the index then said "e" for the file that e/h reached).
 */
static int recorded(struct pohm_cache *c, const char *rel, int fd)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino, known;
	int r;

	if (fstat(fd, &st) || pohm_ns_resolve(c->ns, rel, 0, &ino) ||
	    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &known) ||
	    known != ino || pohm_journal_get(&c->j, ino, &rec))
		return 0;
	r = rec.ldev == (uint64_t)st.st_dev && rec.lino == (uint64_t)st.st_ino;
	pohm_jrec_clear(&rec);
	return r;
}

/* The open of a created name, then its record (pohm_cache_opened): fd, or -errno. */
static int create_open(struct pohm_cache *c, const char *rel, const char *lpath)
{
	int fd;

	if (pohm_cache_create(c, rel, 0644, 0) < 0)
		return -EIO;
	fd = open(lpath, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd >= 0)
		pohm_cache_opened(c, rel, fd);
	return fd < 0 ? -errno : fd;
}

/* rel created in the storage, then link (rel itself or a directory on its
 * way, removed locally first) made a symlink to target before the open:
 * is the file the open reached recorded?  1, 0, or -1 (a step failed). */
static int recorded_through_link(struct pohm_cache *c, const char *rel, const char *link,
				 const char *target)
{
	struct stat st;
	uint64_t ino;
	int fd, r;

	if (pohm_cache_create(c, rel, 0644, 0) || (remove(path("a", link)) && errno != ENOENT) ||
	    symlink(target, path("a", link)))
		return -1;
	fd = open(path("a", rel), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	/* Recorded by the cache's own answer (ino), or found so in the journal. */
	r = pohm_cache_opened_as(c, rel, fd, &st, &ino) ? -1 : ino || recorded(c, rel, fd);
	close(fd);
	return r;
}

/*
 * A created file is recorded only when its name reaches it with no symlink
 * on the way (cachens.c names_fd: the kernel's path of the fd, else a walk).
 * A name the shim created that a symlink took meanwhile (to a file in the
 * prefix or outside it) leaves the file it reached unrecorded, never pushed.
 * A name that ends like the kernel's " (deleted)" mark is walked, and kept.
 */
TEST(a_created_name_is_recorded_only_for_the_file_it_names)
{
	struct pohm_cache *a;
	char out[1024];
	int fd;

	setup();
	a = host("a");
	EXPECT(a);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	fd = create_open(a, "d/f", path("a", "d/f"));
	EXPECT(fd >= 0 && recorded(a, "d/f", fd));
	close(fd);
	fd = create_open(a, "d/g (deleted)", path("a", "d/g (deleted)"));
	EXPECT(fd >= 0 && recorded(a, "d/g (deleted)", fd));
	close(fd);
	/* A plain local file in the prefix the journal does not know, and one outside. */
	fd = open(path("a", "y"), O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	close(fd);
	snprintf(out, sizeof(out), "%s/outside", root);
	fd = open(out, O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	close(fd);
	/* The name swapped for a symlink after the storage's create, before the open. */
	EXPECT_EQ_INT(recorded_through_link(a, "x", "x", path("a", "y")), 0);
	EXPECT_EQ_INT(recorded_through_link(a, "d/o", "d/o", out), 0);
	/* A directory on the way swapped for a symlink to another one in the prefix. */
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e", 0755), 0);
	EXPECT_EQ_INT(recorded_through_link(a, "e/h", "e", path("a", "d")), 0);
	pohm_cache_close(a);
}

/* Make host a's record of ino name the local file st, in a journal handle
 * of its own (as another process would): 0 or -errno. */
static int renumber(uint64_t ino, const struct stat *st)
{
	struct pohm_journal j;
	struct pohm_jrec rec;
	char dir[600];
	int r;

	snprintf(dir, sizeof(dir), "%s/a/state", root);
	r = pohm_journal_open(&j, dir);
	if (r)
		return r;
	r = pohm_journal_get(&j, ino, &rec);
	if (!r) {
		rec.ldev = (uint64_t)st->st_dev;
		rec.lino = (uint64_t)st->st_ino;
		r = pohm_journal_put(&j, &rec);
		pohm_jrec_clear(&rec);
	}
	pohm_journal_close(&j);
	return r;
}

/* Does a stat of the local file st show it as it is (twice: the index's
 * answer, then the one this thread found, pohm_journal_local_hint)? */
static int stat_shows_local(struct pohm_cache *c, const struct stat *st)
{
	struct stat got;
	int i;

	for (i = 0; i < 2; i++) {
		got = *st;
		pohm_cache_stat_fix(c, &got);
		if (got.st_mode != st->st_mode || got.st_ino != st->st_ino ||
		    got.st_dev != st->st_dev)
			return 0;
	}
	return 1;
}

/*
 * What test 2 met when the file system gave the file e/h reached the local
 * inode number of the directory e removed just before (without the shim):
 * e's record and index entry name that number.  A directory's record never
 * describes a file that is not a directory (cache_index_stale), nor the
 * other way round: a stat shows the local file.  Made directly here.
 */
TEST(a_directory_record_never_describes_a_file_of_its_local_inode_number)
{
	struct pohm_cache *a;
	struct stat st;
	uint64_t ino = 0;
	int fd;

	setup();
	a = host("a");
	EXPECT(a);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e", 0755), 0);
	EXPECT_EQ_INT(stat(path("a", "e"), &st), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&a->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						&ino), 0);
	fd = open(path("a", "f"), O_CREAT | O_WRONLY | O_EXCL, 0644);	/* no shim */
	EXPECT(fd >= 0 && !fstat(fd, &st));
	close(fd);
	EXPECT_EQ_INT(renumber(ino, &st), 0);
	EXPECT(stat_shows_local(a, &st));
	/* A directory made without the shim, with the number of g's copy. */
	EXPECT_EQ_INT(write_file(a, "a", "g", "g"), 0);
	EXPECT_EQ_INT(stat(path("a", "g"), &st), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&a->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						&ino), 0);
	EXPECT_EQ_INT(mkdir(path("a", "d"), 0755), 0);
	EXPECT_EQ_INT(stat(path("a", "d"), &st), 0);
	EXPECT_EQ_INT(renumber(ino, &st), 0);
	EXPECT(stat_shows_local(a, &st));
	pohm_cache_close(a);
}

/* The storage inode host a's index gives the local file rel: 0 when none. */
static uint64_t indexed(struct pohm_cache *a, const char *rel)
{
	struct stat st;
	uint64_t ino = 0;

	if (lstat(path("a", rel), &st) ||
	    pohm_journal_lookup_local(&a->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino))
		return 0;
	return ino;
}

/* Make rel without the shim (a directory, or a file holding data) on the
 * index entry of the local file old, removed without the shim first: its
 * record and entry name the new file's number, as the file system's reuse
 * of the number leaves them (renumber).  0 or -1. */
static int made_on_stale_entry(struct pohm_cache *a, const char *old, const char *rel,
			       const char *data)
{
	uint64_t ino = indexed(a, old);
	struct stat st;
	int fd;

	if (!ino || remove(path("a", old)))
		return -1;
	if (!data)
		return mkdir(path("a", rel), 0755) || stat(path("a", rel), &st) ||
			       renumber(ino, &st) ? -1 : 0;
	fd = open(path("a", rel), O_CREAT | O_WRONLY | O_EXCL, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data) || fstat(fd, &st) ||
	    renumber(ino, &st)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Does host b read rel as data (a regular file stored by host a)? */
static int reads_as(struct pohm_cache *b, const char *rel, const char *data)
{
	char buf[64];

	return !pohm_cache_materialize(b, rel, POHM_MAT_DATA) &&
	       read_file(path("b", rel), buf, sizeof(buf)) == (int)strlen(data) && !strcmp(buf, data);
}

/*
 * A name made without the shim whose local inode number a stale index
 * entry holds (the file system gave it the number of a file or directory
 * removed without the shim, which that entry was made for) is a new name:
 * pohm_cache_adopt and the reconcile take it to the storage (the index
 * alone said "known", and it never got there).  The stale entries are the
 * ones cache_index_stale tells: a directory's on a file, a file's on a
 * directory.
 */
TEST(a_name_on_a_stale_index_entry_is_adopted)
{
	struct pohm_cache *a, *b;
	int fd;

	setup();
	a = host("a");
	b = host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e1", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e2", 0755), 0);
	EXPECT_EQ_INT(write_file(a, "a", "g", "g"), 0);
	/* A program's own create that the shim did not see (mkstemp). */
	EXPECT_EQ_INT(made_on_stale_entry(a, "e1", "f1", "one"), 0);
	fd = open(path("a", "f1"), O_RDONLY);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(pohm_cache_adopt(a, "f1", fd), 0);
	EXPECT(pohm_cache_push_fd(a, fd) >= 0);
	close(fd);
	EXPECT(reads_as(b, "f1", "one"));
	/* Made without the shim: the reconcile's (a file, and a directory with a file in it). */
	EXPECT_EQ_INT(made_on_stale_entry(a, "e2", "f2", "two"), 0);
	EXPECT_EQ_INT(made_on_stale_entry(a, "g", "d", NULL), 0);
	fd = open(path("a", "d/h"), O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "three", 5), 5);
	close(fd);
	usleep(5300 * 1000);	/* cachescan.c SETTLE_NS, 5 s */
	EXPECT_EQ_INT(pohm_cache_reconcile(a), 3);
	EXPECT(reads_as(b, "f2", "two"));
	EXPECT(reads_as(b, "d/h", "three"));
	/* Known now: a second pass adopts nothing. */
	EXPECT(indexed(a, "f1") && indexed(a, "f2") && indexed(a, "d"));
	EXPECT_EQ_INT(pohm_cache_reconcile(a), 0);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/*
 * Issue 23: a stat of a name this process materialized within attr_timeout
 * is answered from the real call's own result when it found the local
 * file the table remembers (pohm_cache_stat_found), never when the name
 * holds another file now; a known storage inode is trusted only when its
 * record names the local inode.
 */
TEST(stat_found_answers_for_the_remembered_file_only)
{
	struct pohm_cache *a;
	struct stat st, fixed, other;
	uint64_t ino;
	char g[1024];

	setup();
	a = host("a");
	EXPECT(a);
	a->attr_timeout_ns = 30000000000ULL;
	EXPECT_EQ_INT(write_file(a, "a", "f", "one"), 0);
	EXPECT_EQ_INT(write_file(a, "a", "g", "two"), 0);
	EXPECT_EQ_INT(pohm_cache_stat_recent(a, "f", 0), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "f", 0), 0);
	EXPECT_EQ_INT(pohm_cache_stat_recent(a, "f", 0), 1);
	EXPECT_EQ_INT(pohm_cache_stat_recent(a, "f", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(stat(path("a", "f"), &fixed), 0);
	pohm_cache_stat_fix(a, &fixed);
	EXPECT_EQ_U64(fixed.st_dev, pohm_cache_dev(a));
	/* Twice: the first looks the inode up in the index, the second knows it. */
	EXPECT_EQ_INT(stat(path("a", "f"), &st), 0);
	EXPECT_EQ_INT(pohm_cache_stat_found(a, "f", 0, &st), 0);
	EXPECT_EQ_U64(st.st_ino, fixed.st_ino);
	EXPECT_EQ_U64(st.st_dev, fixed.st_dev);
	EXPECT_EQ_INT(stat(path("a", "f"), &st), 0);
	EXPECT_EQ_INT(pohm_cache_stat_found(a, "f", 0, &st), 0);
	EXPECT_EQ_U64(st.st_ino, fixed.st_ino);
	/* A known inode whose record names another local file: the index decides. */
	EXPECT_EQ_INT(stat(path("a", "g"), &other), 0);
	pohm_cache_stat_fix(a, &other);
	EXPECT(other.st_ino != fixed.st_ino);
	EXPECT_EQ_INT(stat(path("a", "f"), &st), 0);
	ino = (uint64_t)other.st_ino;
	cache_stat_fix_ino(a, &st, &ino);
	EXPECT_EQ_U64(ino, fixed.st_ino);
	EXPECT_EQ_U64(st.st_ino, fixed.st_ino);
	/* Another local file at the name: not answered, st as it was. */
	snprintf(g, sizeof(g), "%s", path("a", "g"));
	EXPECT_EQ_INT(rename(g, path("a", "f")), 0);
	EXPECT_EQ_INT(stat(path("a", "f"), &st), 0);
	other = st;
	EXPECT_EQ_INT(pohm_cache_stat_found(a, "f", 0, &st), -EAGAIN);
	EXPECT_EQ_U64(st.st_ino, other.st_ino);
	EXPECT_EQ_U64(st.st_dev, other.st_dev);
	/* attr_timeout 0: nothing is recent. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "f", 0), 0);
	a->attr_timeout_ns = 0;
	EXPECT_EQ_INT(pohm_cache_stat_recent(a, "f", 0), 0);
	pohm_cache_close(a);
}

TEST(listing_makes_stubs_with_true_attributes)
{
	struct pohm_cache *a, *b;
	struct stat st;
	char buf[64];

	setup();
	a = host("a");
	b = host("b");
	EXPECT_EQ_INT(write_file(a, "a", "x", "0123456789"), 0);
	EXPECT_EQ_INT(pohm_cache_symlink(a, "x", "lnk"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(lstat(path("b", "x"), &st), 0);
	EXPECT_EQ_INT(st.st_size, 0);			/* a stub locally */
	EXPECT_EQ_INT(st.st_mode & 07777, 0);
	EXPECT(S_ISSOCK(st.st_mode));			/* no open of it succeeds */
	EXPECT_EQ_INT(open(path("b", "x"), O_RDONLY), -1);
	pohm_cache_stat_fix(b, &st);
	EXPECT(S_ISREG(st.st_mode));
	EXPECT_EQ_INT(st.st_size, 10);			/* its true attributes */
	EXPECT_EQ_INT(st.st_mode & 07777, 0644);
	EXPECT_EQ_INT(readlink(path("b", "lnk"), buf, sizeof(buf)), 1);
	/* Opening through the symlink follows it inside the prefix. */
	EXPECT_EQ_INT(pohm_cache_materialize(b, "lnk", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "x"), buf, sizeof(buf)), 10);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(namespace_changes_travel)
{
	struct pohm_cache *a, *b;
	struct stat st;

	setup();
	a = host("a");
	b = host("b");
	EXPECT_EQ_INT(write_file(a, "a", "f", "data"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(pohm_cache_rename(a, "f", "g", 0), 0);
	EXPECT_EQ_INT(stat(path("a", "g"), &st), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	EXPECT(stat(path("b", "f"), &st) != 0);		/* gone on b too */
	EXPECT_EQ_INT(pohm_cache_materialize(b, "g", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(stat(path("b", "g"), &st), 0);
	EXPECT_EQ_INT(st.st_size, 4);
	EXPECT_EQ_INT(pohm_cache_link(a, "g", "h"), 0);
	EXPECT_EQ_INT(pohm_cache_unlink(a, "g"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "h", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(stat(path("b", "h"), &st), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0750), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0750), -EEXIST);
	EXPECT_EQ_INT(pohm_cache_rmdir(a, "d"), 0);
	EXPECT_EQ_INT(pohm_cache_unlink(a, "nope"), -ENOENT);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(concurrent_writers_keep_a_conflict_copy)
{
	struct pohm_cache *a, *b, *c;
	char buf[256];
	int fd;

	setup();
	a = host("a");
	b = host("b");
	EXPECT_EQ_INT(write_file(a, "a", "doc", "base"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "doc", POHM_MAT_DATA), 0);
	/* Both change it; a commits first. */
	EXPECT_EQ_INT(write_file(a, "a", "doc", "from a"), 0);
	fd = open(path("b", "doc"), O_RDWR | O_TRUNC);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "from b!", 7), 7);
	EXPECT_EQ_INT(pohm_cache_push_fd(b, fd), 0);	/* not pushed: a conflict copy */
	close(fd);
	/* The storage keeps a's version; b's is a conflict copy, read by a third host. */
	c = host("c");
	EXPECT_EQ_INT(pohm_cache_materialize(c, "doc", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("c", "doc"), buf, sizeof(buf)), 6);
	EXPECT_EQ_STR(buf, "from a");
	EXPECT_EQ_INT(pohm_cache_materialize(c, ".pohmelfs-conflicts/b", POHM_MAT_LIST), 0);
	{
		DIR *d = opendir(path("c", ".pohmelfs-conflicts/b"));
		struct dirent *de;
		int found = 0;

		while (d && (de = readdir(d))) {
			char rel[512];

			if (de->d_name[0] == '.')
				continue;
			snprintf(rel, sizeof(rel), ".pohmelfs-conflicts/b/%s", de->d_name);
			EXPECT_EQ_INT(pohm_cache_materialize(c, rel, POHM_MAT_DATA), 0);
			EXPECT_EQ_INT(read_file(path("c", rel), buf, sizeof(buf)), 7);
			EXPECT_EQ_STR(buf, "from b!");
			found++;
		}
		if (d)
			closedir(d);
		EXPECT_EQ_INT(found, 1);
	}
	pohm_cache_close(a);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

TEST(change_without_the_shim_is_pushed)
{
	struct pohm_cache *a, *b;
	char buf[64];
	FILE *f;

	setup();
	a = host("a");
	b = host("b");
	EXPECT_EQ_INT(write_file(a, "a", "f", "one"), 0);
	f = fopen(path("a", "f"), "w");		/* a program without the shim */
	fputs("written behind our back", f);
	fclose(f);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 1);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 0);	/* nothing left */
	EXPECT_EQ_INT(pohm_cache_materialize(b, "f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "f"), buf, sizeof(buf)), 23);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/* Count the conflict copies host h's cache c sees under .pohmelfs-conflicts/from. */
static int conflict_copies(struct pohm_cache *c, const char *h, const char *from,
			   const char *want)
{
	char rel[512], buf[256];
	struct dirent *de;
	DIR *d;
	int found = 0;

	snprintf(rel, sizeof(rel), ".pohmelfs-conflicts/%s", from);
	if (pohm_cache_materialize(c, rel, POHM_MAT_LIST))
		return 0;
	d = opendir(path(h, rel));
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), ".pohmelfs-conflicts/%s/%s", from, de->d_name);
		if (pohm_cache_materialize(c, rel, POHM_MAT_DATA) ||
		    read_file(path(h, rel), buf, sizeof(buf)) < 0 || strcmp(buf, want))
			return -1;
		found++;
	}
	if (d)
		closedir(d);
	return found;
}

TEST(unclean_shutdown_makes_conflict_copies_not_pushes)
{
	struct pohm_cache *a, *b;
	char buf[64];
	FILE *f;

	setup();
	setenv("POHMELFS_TEST_BOOT_ID", "boot-1", 1);
	a = host("a");
	EXPECT_EQ_INT(write_file(a, "a", "torn", "committed"), 0);
	EXPECT_EQ_INT(write_file(a, "a", "same", "unchanged"), 0);
	EXPECT_EQ_INT(write_file(a, "a", "later", "old"), 0);
	/* Written, not pushed, then the host goes down. */
	f = fopen(path("a", "torn"), "w");
	fputs("half-writ", f);
	fclose(f);
	f = fopen(path("a", "same"), "w");	/* rewritten with the same bytes */
	fputs("unchanged", f);
	fclose(f);
	pohm_cache_close(a);

	setenv("POHMELFS_TEST_BOOT_ID", "boot-2", 1);
	a = host("a");
	/* Changed in the new boot: an ordinary push.  "same" pushes its new mtime
	 * (equal bytes), "torn" becomes a conflict copy. */
	f = fopen(path("a", "later"), "w");
	fputs("new boot", f);
	fclose(f);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 2);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 0);

	b = host("b");
	EXPECT_EQ_INT(pohm_cache_materialize(b, "torn", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "torn"), buf, sizeof(buf)), 9);
	EXPECT_EQ_STR(buf, "committed");
	EXPECT_EQ_INT(pohm_cache_materialize(b, "later", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "later"), buf, sizeof(buf)), 8);
	EXPECT_EQ_STR(buf, "new boot");
	EXPECT_EQ_INT(conflict_copies(b, "b", "a", "half-writ"), 1);
	/* The suspect name shows the committed version again on host a. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "torn", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("a", "torn"), buf, sizeof(buf)), 9);
	EXPECT_EQ_STR(buf, "committed");
	pohm_cache_close(a);
	pohm_cache_close(b);

	/* Same boot again: a change is an ordinary push. */
	a = host("a");
	f = fopen(path("a", "same"), "w");
	fputs("same boot", f);
	fclose(f);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 1);
	pohm_cache_close(a);
	unsetenv("POHMELFS_TEST_BOOT_ID");
}

TEST(swapped_symlink_cannot_redirect_a_refresh)
{
	struct pohm_cache *a, *b;
	char outside[512], cmd[4000];
	struct stat st;

	setup();
	a = host("a");
	b = host("b");
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(write_file(a, "a", "d/f", "secret"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d", 0), 0);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && rmdir %s && ln -s %s %s", outside,
		 path("b", "d"), outside, path("b", "d"));
	EXPECT_EQ_INT(system(cmd), 0);
	pohm_cache_materialize(b, "d/f", POHM_MAT_DATA);
	snprintf(cmd, sizeof(cmd), "%s/f", outside);
	EXPECT(stat(cmd, &st) != 0);		/* nothing was written outside */
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(prefix_bound_to_one_fsid)
{
	struct pohm_cache_opts o = { 0 };
	struct pohm_cache *c = NULL, *a;
	char prefix[512], cdir[512], err[512];

	setup();
	a = host("a");
	snprintf(prefix, sizeof(prefix), "%s/a/prefix", root);
	snprintf(cdir, sizeof(cdir), "%s/a/state", root);
	o.prefix = prefix;
	o.cache_dir = cdir;
	o.fsid = "other";
	o.kv = &kv;
	EXPECT_EQ_INT(pohm_cache_open(&c, &o, err, sizeof(err)), -EEXIST);
	EXPECT(strstr(err, "bound to fsid") != NULL);
	o.prefix = "relative/path";
	EXPECT_EQ_INT(pohm_cache_open(&c, &o, err, sizeof(err)), -EINVAL);
	pohm_cache_close(a);
}

/* As the next process sees c's kept bases: this one's notes written (its
 * exit), its table empty (a new process's).  cache_base_drop frees what it
 * empties; a fork child's reset keeps the parent's copies allocated and
 * would leave them to LeakSanitizer here. */
static void as_next_process(struct pohm_cache *c)
{
	cache_base_drop(c);
}

/*
 * Decision 0048: a kept CAS base (k/<key> in cache_dir) comes back with its
 * bytes, stamp and checksum; a torn or changed file, a forgotten one or a
 * key that would leave k/ gives none.
 */
TEST(kept_bases_come_back_whole_or_not_at_all)
{
	struct pohm_cache *c;
	struct pohm_kv_val v = { 0 }, out;
	uint8_t sum[POHM_SHA512_LEN];
	char kp[1024];
	uint64_t age = 0;
	struct stat st;
	int fd;

	setup();
	c = host("a");
	EXPECT(c != NULL);
	v.data = (uint8_t *)"an inode's bytes";
	v.len = 16;
	v.ts_ns = 0x0102030405060708ULL;
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	memset(&out, 0, sizeof(out));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT_EQ_U64(out.len, 16);
	EXPECT(out.data && !memcmp(out.data, "an inode's bytes", 16));
	EXPECT_EQ_U64(out.ts_ns, 0x0102030405060708ULL);
	pohm_sha512("an inode's bytes", 16, sum);
	EXPECT(!memcmp(out.csum, sum, sizeof(sum)));
	EXPECT(age < 60000000000ULL);
	pohm_kv_val_free(&out);
	/* Torn: one byte short. */
	snprintf(kp, sizeof(kp), "%s/a/state/k/i:5", root);
	EXPECT_EQ_INT(stat(kp, &st), 0);
	EXPECT_EQ_INT(truncate(kp, st.st_size - 1), 0);
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), -ENOENT);
	/* Whole length, one byte changed. */
	unlink(kp);
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	fd = open(kp, O_WRONLY);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT((int)pwrite(fd, "A", 1, 0), 1);
	close(fd);
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), -ENOENT);
	/* Forgotten. */
	unlink(kp);
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	pohm_kv_val_free(&out);
	cache_base_note(c, "i:5", NULL);
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), -ENOENT);
	as_next_process(c);
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), -ENOENT);
	EXPECT(access(kp, F_OK) != 0);
	/* pohmelfsd's sweep removes those too old to be used, and only those. */
	cache_base_note(c, "i:6", &v);
	cache_base_note(c, "i:7", &v);
	as_next_process(c);
	snprintf(kp, sizeof(kp), "%s/a/state/k/i:6", root);
	{
		struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };

		EXPECT_EQ_INT(utimensat(AT_FDCWD, kp, old, 0), 0);
	}
	EXPECT_EQ_INT(cache_base_sweep(c, CACHE_BASE_MAX_NS), 1);
	EXPECT(access(kp, F_OK) != 0);
	EXPECT_EQ_INT(cache_base_load(c, "i:7", &out, &age), 0);
	pohm_kv_val_free(&out);
	/* Never outside k/. */
	cache_base_note(c, "b:../../x", &v);
	EXPECT_EQ_INT(cache_base_load(c, "b:../../x", &out, &age), -ENOENT);
	pohm_cache_close(c);
}

/* Is k/<key> of host a's cache there? */
static int kept_file(const char *key)
{
	char kp[1024];

	snprintf(kp, sizeof(kp), "%s/a/state/k/%s", root, key);
	return access(kp, F_OK) == 0;
}

/*
 * Decision 0048, written lazily: a note stays in the process's table (no
 * file call) until the flush at exit; the flush writes the newest bytes of
 * each key and removes the forgotten; a key pushed out of the table (64
 * newer keys) is not written; the age the next process sees counts from
 * the note, not the write; a file noted later by another process is kept.
 */
TEST(kept_bases_reach_the_disk_at_the_flush_only)
{
	struct pohm_cache *c;
	struct pohm_kv_val v = { 0 }, w = { 0 }, out = { 0 };
	char key[32], kp[1024];
	uint64_t age = ~0ULL;
	struct stat st;
	int i;

	setup();
	c = host("a");
	EXPECT(c != NULL);
	v.data = (uint8_t *)"old bytes";
	v.len = 9;
	v.ts_ns = 1;
	w.data = (uint8_t *)"newer bytes";
	w.len = 11;
	w.ts_ns = 2;
	/* Noted: the process itself is served, nothing on disk. */
	cache_base_note(c, "i:5", &v);
	cache_base_note(c, "i:5", &w);
	cache_base_note(c, "b:1", &v);
	EXPECT(!kept_file("i:5") && !kept_file("b:1"));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT(out.len == 11 && !memcmp(out.data, "newer bytes", 11));
	EXPECT_EQ_U64(out.ts_ns, 2);
	EXPECT(age < 1000000000ULL);
	pohm_kv_val_free(&out);
	usleep(300000);
	/* The flush: the newest of each key; the next process reads them,
	 * as old as the note. */
	as_next_process(c);
	EXPECT(kept_file("i:5") && kept_file("b:1"));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT(out.len == 11 && !memcmp(out.data, "newer bytes", 11));
	EXPECT_EQ_U64(out.ts_ns, 2);
	EXPECT(age >= 300000000ULL && age < 30000000000ULL);
	pohm_kv_val_free(&out);
	/* A longer file rewritten shorter (in place): the shorter bytes. */
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT(out.len == 9 && !memcmp(out.data, "old bytes", 9));
	pohm_kv_val_free(&out);
	/* A forget: the file stays until the flush, then goes. */
	cache_base_note(c, "b:1", NULL);
	EXPECT(kept_file("b:1"));
	EXPECT_EQ_INT(cache_base_load(c, "b:1", &out, &age), -ENOENT);
	as_next_process(c);
	EXPECT(!kept_file("b:1"));
	/* Pushed out by 64 newer keys: dropped, never written. */
	cache_base_note(c, "i:100", &v);
	for (i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "i:%d", 200 + i);
		cache_base_note(c, key, &v);
	}
	as_next_process(c);
	EXPECT(!kept_file("i:100"));
	EXPECT(kept_file("i:200") && kept_file("i:263"));
	/* Noted before another process wrote its later note of the key:
	 * the later file stays. */
	cache_base_note(c, "i:300", &v);
	usleep(20000);
	snprintf(kp, sizeof(kp), "%s/a/state/k/i:300", root);
	{
		FILE *f = fopen(kp, "w");

		EXPECT(f != NULL);
		fputs("another process's", f);
		fclose(f);
	}
	pohm_cache_kept_flush(c);
	EXPECT_EQ_INT(stat(kp, &st), 0);
	EXPECT_EQ_U64((uint64_t)st.st_size, 17);
	pohm_cache_close(c);
}

/* k/<key> of host a's cache: its stat, 0 or -1. */
static int kept_stat(const char *key, struct stat *st)
{
	char kp[1024];

	snprintf(kp, sizeof(kp), "%s/a/state/k/%s", root, key);
	return stat(kp, st);
}

/* Was the file (stat before) written since (its change time moved)? */
static int kept_rewritten(const char *key, const struct stat *before)
{
	struct stat st;

	return kept_stat(key, &st) || st.st_ctim.tv_sec != before->st_ctim.tv_sec ||
	       st.st_ctim.tv_nsec != before->st_ctim.tv_nsec ||
	       st.st_mtim.tv_nsec != before->st_mtim.tv_nsec;
}

/*
 * Session 14 (CI, shim_manners 6 under ASan): a process that read again
 * the version k/ holds (a validated open, a lookup) rewrote it at exit.
 * Only news is written: the same bytes and stamp, found in k/ at the flush
 * or known from this process's load, are left alone unless k/'s note of
 * them is older than half the base's window (then renewed); other bytes,
 * another stamp or a torn file are written.
 */
TEST(kept_bases_of_the_version_kept_are_not_written_again)
{
	struct pohm_cache *c;
	struct pohm_kv_val v = { 0 }, w = { 0 }, out = { 0 };
	struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	char kp[1024];
	uint64_t age;
	struct stat st;
	int fd;

	setup();
	c = host("a");
	EXPECT(c != NULL);
	snprintf(kp, sizeof(kp), "%s/a/state/k/i:5", root);
	v.data = (uint8_t *)"an inode's bytes";
	v.len = 16;
	v.ts_ns = 7;
	w.data = (uint8_t *)"an inode's BYTES";	/* the same length */
	w.len = 16;
	w.ts_ns = 8;
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	usleep(20000);
	/* The next process reads the same version: nothing written. */
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	EXPECT(!kept_rewritten("i:5", &st));
	/* Loaded, then read again: known from the load, k/ not looked at
	 * (the file's bytes replaced after the load stay as they are). */
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	pohm_kv_val_free(&out);
	fd = open(kp, O_WRONLY | O_TRUNC);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT((int)write(fd, "x", 1), 1);
	close(fd);
	EXPECT_EQ_INT(utimensat(AT_FDCWD, kp, old, 0), 0);
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	EXPECT(!kept_rewritten("i:5", &st));
	/* Torn (the same length, a byte changed): written whole again. */
	unlink(kp);
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	fd = open(kp, O_WRONLY);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT((int)pwrite(fd, "A", 1, 0), 1);
	close(fd);
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	usleep(20000);
	cache_base_note(c, "i:5", &v);
	as_next_process(c);
	EXPECT(kept_rewritten("i:5", &st));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT(out.len == 16 && !memcmp(out.data, "an inode's bytes", 16));
	pohm_kv_val_free(&out);
	as_next_process(c);
	/* Other bytes of the same length: written. */
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	usleep(20000);
	cache_base_note(c, "i:5", &w);
	as_next_process(c);
	EXPECT(kept_rewritten("i:5", &st));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT(out.len == 16 && !memcmp(out.data, "an inode's BYTES", 16));
	EXPECT_EQ_U64(out.ts_ns, 8);
	pohm_kv_val_free(&out);
	as_next_process(c);
	/* The same bytes under another stamp: written. */
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	usleep(20000);
	w.ts_ns = 9;
	cache_base_note(c, "i:5", &w);
	as_next_process(c);
	EXPECT(kept_rewritten("i:5", &st));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT_EQ_U64(out.ts_ns, 9);
	pohm_kv_val_free(&out);
	as_next_process(c);
	/* k/'s note older than half the window (attr_timeout 1 s here):
	 * renewed, so that it stays a base while it is the stored version;
	 * from a load as from k/ at the flush. */
	c->attr_timeout_ns = 1000000000ULL;
	cache_base_note(c, "i:5", &w);
	as_next_process(c);
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	cache_base_note(c, "i:5", &w);
	as_next_process(c);
	EXPECT(!kept_rewritten("i:5", &st));
	usleep(600000);
	cache_base_note(c, "i:5", &w);
	as_next_process(c);
	EXPECT(kept_rewritten("i:5", &st));
	EXPECT_EQ_INT(cache_base_load(c, "i:5", &out, &age), 0);
	EXPECT(age < 500000000ULL);
	pohm_kv_val_free(&out);
	EXPECT_EQ_INT(kept_stat("i:5", &st), 0);
	usleep(600000);
	cache_base_note(c, "i:5", &w);
	as_next_process(c);
	EXPECT(kept_rewritten("i:5", &st));
	pohm_cache_close(c);
}

/* Lines of file p that contain text. */
static int lines_with(const char *p, const char *text)
{
	char line[1024];
	FILE *f = fopen(p, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	fclose(f);
	return n;
}

/*
 * Per-user caches (core/mount/mount_user.c) share the prefix's local tree: a
 * directory the first user's cache made is unknown to the second's
 * journal.  The second user works in it (walks, listing, a new file that
 * reaches the first), hears about it once per process, not on every walk
 * (before: a warning per walk), and its reconcile leaves the first user's
 * file in it alone (a recorded directory would be scanned, and the other
 * cache's file taken for one made without the shim: a conflict copy, and
 * the local file unlinked).
 */
struct noter {
	struct pohm_cache *c;
	int id;
};

static void *note_many(void *arg)
{
	struct noter *n = arg;
	struct pohm_kv_val v = { 0 }, out;
	char key[32];
	uint64_t age;
	int i;

	v.data = (uint8_t *)"bytes";
	v.len = 5;
	for (i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "i:%d", n->id * 1000 + i % 20);	/* 60 keys: all kept */
		cache_base_note(n->c, key, i % 7 ? &v : NULL);
		if (!cache_base_load(n->c, key, &out, &age))
			pohm_kv_val_free(&out);
	}
	return NULL;
}

/* Threads noting and loading while another flushes (run under SAN=thread):
 * the table stays whole and the last notes reach the disk. */
TEST(kept_bases_noted_by_threads_during_a_flush)
{
	struct pohm_cache *c;
	struct noter n[3];
	pthread_t t[3];
	int i;

	setup();
	c = host("a");
	EXPECT(c != NULL);
	for (i = 0; i < 3; i++) {
		n[i].c = c;
		n[i].id = i + 1;
		EXPECT_EQ_INT(pthread_create(&t[i], NULL, note_many, &n[i]), 0);
	}
	for (i = 0; i < 20; i++)
		pohm_cache_kept_flush(c);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	as_next_process(c);
	/* Each thread's last note: i % 20 == 19 at i = 499, a note (499 % 7 != 0). */
	EXPECT(kept_file("i:1019") && kept_file("i:2019") && kept_file("i:3019"));
	pohm_cache_close(c);
}

TEST(directory_of_another_users_cache)
{
	struct pohm_cache *a, *u;
	char logp[256], buf[64], conflicts[600];
	struct stat st;
	int fd, i;

	setup();
	a = cache_in("a", "state", "a");
	u = cache_in("a", "state-u", "a.u");
	EXPECT(a && u);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "w", 0777), 0);
	EXPECT_EQ_INT(write_file(a, "a", "w/f", "first user's"), 0);
	snprintf(logp, sizeof(logp), "%s/u.log", root);
	fd = open(logp, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	EXPECT(fd >= 0);
	pohm_log_setup(POHM_LOG_WARN, fd);
	for (i = 0; i < 3; i++)
		EXPECT_EQ_INT(pohm_cache_materialize(u, "w/g", POHM_MAT_PARENT), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(u, "w", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(write_file(u, "a", "w/g", "second user's"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(u, "w/g", POHM_MAT_PARENT), 0);
	pohm_log_setup(POHM_LOG_ERROR, -1);
	close(fd);
	EXPECT_EQ_INT(lines_with(logp, ": w: "), 1);
	EXPECT_EQ_INT(lines_with(logp, "w: a local directory this cache did not make"), 1);
	/* The second user's file reached the storage (and the first user). */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "w/g", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("a", "w/g"), buf, sizeof(buf)), 13);
	/* Names older than reconcile's settling time (cachescan.c SETTLE_NS, 5 s). */
	usleep(5300 * 1000);
	EXPECT(pohm_cache_reconcile(u) >= 0);
	EXPECT_EQ_INT(read_file(path("a", "w/f"), buf, sizeof(buf)), 12);
	EXPECT_EQ_STR(buf, "first user's");
	snprintf(conflicts, sizeof(conflicts), "%s/.pohmelfs-conflicts", path("a", ""));
	EXPECT(stat(conflicts, &st) != 0);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 0);	/* a's file is still a's, clean */
	pohm_cache_close(u);
	pohm_cache_close(a);
}

/*
 * Root whose thread changes only its fsuid (setfsuid; the kernel drops the
 * file capabilities with it) cannot open its own 0700 cache_dir: the calls
 * fail with EACCES and the log says why once, naming the fsuid (before: the
 * effective uid still owned the cache_dir, and nothing was said).
 */
TEST(fsuid_change_is_named)
{
	struct pohm_cache *a;
	char logp[256];
	struct stat st;
	int fd, r1, r2;

	if (geteuid() != 0)
		SKIP("needs root (setfsuid to another user)");
	setup();
	a = host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0777), 0);	/* 65534 may create in d */
	snprintf(logp, sizeof(logp), "%s/fsuid.log", root);
	fd = open(logp, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	EXPECT(fd >= 0);
	pohm_log_setup(POHM_LOG_ERROR, fd);
	syscall(SYS_setfsuid, 65534);	/* this thread only */
	r1 = pohm_cache_create(a, "d/f", 0644, 0);
	r2 = pohm_cache_create(a, "d/g", 0644, 0);
	syscall(SYS_setfsuid, 0);
	pohm_log_setup(POHM_LOG_ERROR, -1);
	close(fd);
	EXPECT_EQ_INT(r1, -EACCES);
	EXPECT_EQ_INT(r2, -EACCES);
	EXPECT_EQ_INT(lines_with(logp, "belongs to uid 0 but files are opened as uid 65534"), 1);
	EXPECT_EQ_INT(lines_with(logp, "error:"), 1);
	/* Nothing stored by the refused creates: a listing brings no d/f. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d", POHM_MAT_LIST), 0);
	EXPECT(stat(path("a", "d/f"), &st) != 0 && errno == ENOENT);
	EXPECT_EQ_INT(pohm_cache_create(a, "d/f", 0644, 0) >= 0, 1);	/* as root again */
	pohm_cache_close(a);
}

TEST(normalize)
{
	char out[64];

	EXPECT_EQ_INT(pohm_cache_normalize("a/./b//c/../d/", out, sizeof(out)), 0);
	EXPECT_EQ_STR(out, "a/b/d");
	EXPECT_EQ_INT(pohm_cache_normalize("", out, sizeof(out)), 0);
	EXPECT_EQ_STR(out, "");
	EXPECT_EQ_INT(pohm_cache_normalize("a/../..", out, sizeof(out)), -EXDEV);
	EXPECT_EQ_INT(pohm_cache_normalize("..", out, sizeof(out)), -EXDEV);
}

/*
 * Two caches over one local tree (a cache per user, mount_user.c), the
 * second one's cache_dir owned by uid 65534 as a per-user one is.  The
 * first cache's files are unknown to the second's journal; its reconcile
 * must leave them in the tree (before: "made here without the shim while
 * the storage has the name", conflict copies, local names removed), while
 * a file of 65534's made without the shim is still adopted by it.
 */
TEST(reconcile_leaves_another_users_files)
{
	struct pohm_cache *a, *u;
	char buf[64], cdir[600];
	struct stat st;
	int fd;

	if (geteuid() != 0)
		SKIP("needs root (a cache_dir of another uid)");
	setup();
	a = cache_in("a", "state", "a");
	u = cache_in("a", "state-u", "a.u");
	EXPECT(a && u);
	snprintf(cdir, sizeof(cdir), "%s/a/state-u", root);
	EXPECT_EQ_INT(chown(cdir, 65534, 65534), 0);
	EXPECT_EQ_INT(write_file(a, "a", "rf", "first"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(u, "rf", POHM_MAT_PARENT), 0);	/* u records the root */
	EXPECT_EQ_INT(write_file(a, "a", "rf2", "second"), 0);
	/* rf2 changed after its push: no longer the stored file's size or mtime. */
	fd = open(path("a", "rf2"), O_WRONLY | O_APPEND);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, " more", 5), 5);
	close(fd);
	/* 65534's own file, made without the shim. */
	fd = open(path("a", "mine"), O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "u's", 3), 3);
	EXPECT_EQ_INT(fchown(fd, 65534, 65534), 0);
	close(fd);
	usleep(5300 * 1000);	/* cachescan.c SETTLE_NS, 5 s */
	EXPECT_EQ_INT(pohm_cache_reconcile(u), 1);
	EXPECT_EQ_INT(read_file(path("a", "rf"), buf, sizeof(buf)), 5);
	EXPECT_EQ_STR(buf, "first");
	EXPECT_EQ_INT(read_file(path("a", "rf2"), buf, sizeof(buf)), 11);
	EXPECT_EQ_STR(buf, "second more");
	EXPECT(stat(path("a", ".pohmelfs-conflicts"), &st) != 0);
	/* 65534's file reached the storage; a's reconcile leaves it alone too. */
	EXPECT_EQ_INT(pohm_cache_reconcile(a), 0);
	EXPECT_EQ_INT(read_file(path("a", "mine"), buf, sizeof(buf)), 3);
	pohm_cache_close(u);
	pohm_cache_close(a);
	u = host("b");
	EXPECT(u != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(u, "mine", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "mine"), buf, sizeof(buf)), 3);
	EXPECT_EQ_STR(buf, "u's");
	EXPECT_EQ_INT(pohm_cache_materialize(u, "rf2", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(read_file(path("b", "rf2"), buf, sizeof(buf)), 6);	/* not u's push */
	pohm_cache_close(u);
}

/*
 * Two caches of one uid over one tree (the reproduction of helper-coregaps'
 * report): the second one's reconcile finds the first one's pushed files,
 * copies of the stored files (same size and mtime), and leaves them; a file
 * made without the shim under a stored name is still a conflict.
 */
TEST(reconcile_leaves_copies_of_stored_files)
{
	struct pohm_cache *a, *u, *b;
	char buf[64];
	struct stat st;
	int fd;

	setup();
	a = cache_in("a", "state", "a");
	u = cache_in("a", "state-u", "a.u");
	b = host("b");
	EXPECT(a && u && b);
	EXPECT_EQ_INT(write_file(a, "a", "rf", "first"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(u, "rf", POHM_MAT_PARENT), 0);	/* u records the root */
	EXPECT_EQ_INT(write_file(a, "a", "rf2", "second"), 0);
	/* A stored name, and host b's local file of that name made without the shim. */
	EXPECT_EQ_INT(write_file(a, "a", "cf", "stored"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "rf", POHM_MAT_PARENT), 0);
	fd = open(path("b", "cf"), O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "local", 5), 5);
	close(fd);
	usleep(5300 * 1000);	/* cachescan.c SETTLE_NS, 5 s */
	EXPECT_EQ_INT(pohm_cache_reconcile(u), 0);
	EXPECT_EQ_INT(read_file(path("a", "rf"), buf, sizeof(buf)), 5);
	EXPECT_EQ_INT(read_file(path("a", "rf2"), buf, sizeof(buf)), 6);
	EXPECT_EQ_INT(read_file(path("a", "cf"), buf, sizeof(buf)), 6);
	EXPECT(stat(path("a", ".pohmelfs-conflicts"), &st) != 0);
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 0);
	/* b's file is not the stored one: still a conflict copy, out of the tree. */
	EXPECT_EQ_INT(pohm_cache_reconcile(b), 1);
	EXPECT(stat(path("b", "cf"), &st) != 0 && errno == ENOENT);
	pohm_cache_close(b);
	pohm_cache_close(u);
	pohm_cache_close(a);
}


/* Review s16 (gonefix): a listing's removal of a directory gone from the
 * storage (list_drop_gone: the lookup said ENOENT) races another process
 * of this host that makes the name again (its mkdir reuses the stale
 * local directory) and creates a file in it: the walk must leave them. */
TEST(a_gone_directory_made_again_here_meanwhile_keeps_its_new_entries)
{
	struct pohm_cache *a, *a2, *b;
	struct stat st;
	uint64_t old, now;
	int dfd;

	setup();
	a = host("a");
	a2 = host("a");		/* another process of a's cache */
	b = host("b");
	EXPECT(a && a2 && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(write_file(a, "a", "d/f", "old"), 0);
	EXPECT_EQ_INT(stat(path("a", "d"), &st), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&a->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						&old), 0);
	/* b removes d (rm -r). */
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_unlink(b, "d/f"), 0);
	EXPECT_EQ_INT(pohm_cache_rmdir(b, "d"), 0);
	/* a's listing found d gone (lookup ENOENT); before its walk, a2 makes
	 * d again and a file in it. */
	EXPECT_EQ_INT(pohm_cache_mkdir(a2, "d", 0755), 0);
	EXPECT_EQ_INT(write_file(a2, "a", "d/g", "new"), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&a->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						&now), 0);
	EXPECT(now != old);
	dfd = open(path("a", ""), O_RDONLY | O_DIRECTORY);
	EXPECT(dfd >= 0);
	EXPECT_EQ_INT(cache_drop_gone_dir(a, dfd, "d", "d", old), 0);
	close(dfd);
	EXPECT_EQ_INT(stat(path("a", "d/g"), &st), 0);
	EXPECT_EQ_INT(stat(path("a", "d"), &st), 0);
	pohm_cache_close(a);
	pohm_cache_close(a2);
	pohm_cache_close(b);
}

/* Review s16 (gonefix): a directory's chmod whose storage write answered
 * -EIO but landed (an unknown outcome) succeeds, and the local mode stays;
 * a chmod the storage did not take puts the local mode back only while it
 * is still the one the call found. */
TEST(a_directory_chmod_whose_outcome_was_unknown_is_settled_by_a_read)
{
	struct pohm_cache *a;
	struct stat st;

	setup();
	a = host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(chmod(path("a", "d"), 0750), 0);	/* the kernel's part */
	pohm_kvmem_fail_unsure(&kv, 0, 0);	/* the setattr's put lands, answers -EIO */
	EXPECT_EQ_INT(pohm_cache_push_chattr(a, -1, "d", 0), 1);
	pohm_kvmem_fail_unsure(&kv, -1, 0);
	EXPECT_EQ_INT(stat(path("a", "d"), &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0750);
	/* Refused for good: the local mode goes back to the stored one. */
	EXPECT_EQ_INT(chmod(path("a", "d"), 0700), 0);
	pohm_kvmem_fail_after(&kv, 0);
	EXPECT(pohm_cache_push_chattr(a, -1, "d", 0) < 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_INT(stat(path("a", "d"), &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0750);
	pohm_cache_close(a);
}

/*
 * Review 2 of session 17, finding 2: an lstat handed down with a stat
 * below a dirfd (pohm_cache_materialize_from's lst) was made through the
 * program's dirfd, tied to the walk's directory by identity only; an fd
 * closed and reused behind the shim's back makes it another directory's
 * file.  It answers from a fresh record only: when the storage is asked
 * (the record expired) and the name was replaced elsewhere, the decision
 * to replace the local file rests on the walk's own look.  Here d1/f is
 * changed locally (not pushed) and replaced on b; the lstat handed down
 * is d2/f's (clean, and of the same contents): d1/f's local change must
 * stay.
 */
static void handed_down_replacement(int named)
{
	struct pohm_cache *a, *b;
	struct pohm_walk_base base = { .fd = -1 };
	struct pohm_stat_seen seen;
	struct stat given, st;
	char buf[64];
	int fd;

	setup();
	a = host("a");
	b = host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d1", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d2", 0755), 0);
	EXPECT_EQ_INT(write_file(a, "a", "d1/f", "one"), 0);
	EXPECT_EQ_INT(write_file(a, "a", "d2/f", "two"), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d1/f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(pohm_cache_unlink(b, "d1/f"), 0);
	EXPECT_EQ_INT(write_file(b, "b", "d1/f", "new from b"), 0);
	/* a's own change to d1/f, not pushed yet: d2/f's contents (which
	 * a comparison against d2/f's record takes for unchanged). */
	fd = open(path("a", "d1/f"), O_WRONLY | O_TRUNC);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT((int)write(fd, "two", 3), 3);
	close(fd);
	a->attr_timeout_ns = 200000000ULL;
	usleep(300000);	/* the files' records expire */
	/* d1 walked now: the walk table holds it, fresh. */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d1", 0), 0);
	EXPECT_EQ_INT(stat(path("a", "d1"), &st), 0);
	if (named)
		base.named = 1;	/* checked by its name: no fd */
	else
		base.fd = open(path("a", "d1"), O_PATH | O_DIRECTORY);
	EXPECT(named || base.fd >= 0);
	base.dev = (uint64_t)st.st_dev;
	base.ino = (uint64_t)st.st_ino;
	EXPECT_EQ_INT(lstat(path("a", "d2/f"), &given), 0);
	EXPECT_EQ_INT(pohm_cache_materialize_from(a, "d1/f", POHM_MAT_NOFOLLOW, &seen, &base,
						  &given), 0);
	if (base.fd >= 0)
		close(base.fd);
	EXPECT_EQ_INT(read_file(path("a", "d1/f"), buf, sizeof(buf)), 3);
	EXPECT_EQ_STR(buf, "two");
	EXPECT_EQ_INT(read_file(path("a", "d2/f"), buf, sizeof(buf)), 3);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(a_handed_down_lstat_does_not_decide_a_replacement)
{
	handed_down_replacement(0);
}

/* The same below a base checked by its name (no fd, issue 23 session 18):
 * the record expired, the walk opens d1 itself and looks again. */
TEST(a_handed_down_lstat_below_a_named_base_does_not_decide_a_replacement)
{
	handed_down_replacement(1);
}

/* How many known entries below host a's rel (a chain of 40 "s", 5 files
 * f0..f4 at each level) have records not naming their paths. */
static int misnamed_below(struct pohm_cache *c, const char *top)
{
	char rel[256], name[300];
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int lvl, k, bad = 0;

	snprintf(rel, sizeof(rel), "%s", top);
	for (lvl = 0; lvl <= 40; lvl++) {
		for (k = lvl < 40 ? 0 : 5; k < 6; k++) {
			if (k < 5)
				snprintf(name, sizeof(name), "%s/f%d", rel, k);
			else
				snprintf(name, sizeof(name), "%s", rel);
			if (lstat(path("a", name), &st) ||
			    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino) ||
			    pohm_journal_get(&c->j, ino, &rec)) {
				bad++;
				continue;
			}
			bad += !!strcmp(rec.hint, name);
			pohm_jrec_clear(&rec);
		}
		strcat(rel, "/s");
	}
	return bad;
}

/* Every record below a directory renamed here names its new path, at any
 * depth and width (rehint.c's walk: iterative; past 16 levels the upper
 * fds are closed and opened again by "..", and each listing goes on after
 * its subdirectory's); and the repair walk of the whole tree
 * (cache_rehint_all) finds them after a move behind the journal's back. */
TEST(every_record_below_a_moved_directory_takes_its_new_path_at_any_depth)
{
	struct pohm_cache *a;
	char rel[256], name[300];
	int lvl, k;

	setup();
	a = host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	strcpy(rel, "d");
	for (lvl = 0; lvl < 40; lvl++) {
		for (k = 0; k < 5; k++) {
			snprintf(name, sizeof(name), "%s/f%d", rel, k);
			EXPECT_EQ_INT(write_file(a, "a", name, "x"), 0);
		}
		strcat(rel, "/s");
		EXPECT_EQ_INT(pohm_cache_mkdir(a, rel, 0755), 0);
	}
	EXPECT_EQ_INT(misnamed_below(a, "d"), 0);
	EXPECT_EQ_INT(pohm_cache_rename(a, "d", "d2", 0), 0);
	EXPECT_EQ_INT(misnamed_below(a, "d2"), 0);
	EXPECT_EQ_INT(rename(path("a", "d2/s"), path("a", "d2/t")), 0);
	EXPECT_EQ_INT(rename(path("a", "d2/t"), path("a", "d2/s")), 0);	/* same names: untouched */
	/* Moved behind the journal's back, under its own name (as a move of
	 * a directory above it: a record changes only under its last name). */
	EXPECT_EQ_INT(mkdir(path("a", "x"), 0755), 0);
	EXPECT_EQ_INT(rename(path("a", "d2"), path("a", "x/d2")), 0);
	EXPECT_EQ_INT(misnamed_below(a, "x/d2"), 41 * 6 - 5);
	EXPECT_EQ_INT(cache_rehint_all(a), 0);
	EXPECT_EQ_INT(misnamed_below(a, "x/d2"), 0);
	pohm_cache_close(a);
}

/* How many of host a's files old/f0..f31, moved to d/ behind the journal's
 * back, have records not naming d/fN. */
static int misnamed_moved(struct pohm_cache *c)
{
	char name[32];
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int k, bad = 0;

	for (k = 0; k < 32; k++) {
		snprintf(name, sizeof(name), "d/f%d", k);
		if (lstat(path("a", name), &st) ||
		    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino) ||
		    pohm_journal_get(&c->j, ino, &rec)) {
			bad++;
			continue;
		}
		bad += !!strcmp(rec.hint, name);
		pohm_jrec_clear(&rec);
	}
	return bad;
}

/* The repair's walk in a mount namespace of its own where d/loop0 and
 * d/loop1 are bind mounts of d: 0 (complete, and every record names its
 * file's path outside the binds), 1 (not), 77 (no such namespace here). */
static int rehint_all_over_bind_loops(struct pohm_cache *c)
{
	pid_t pid = fork();
	int status = 0, fd;

	if (pid == 0) {
		if (unshare(CLONE_NEWNS) && unshare(CLONE_NEWUSER | CLONE_NEWNS))
			_exit(77);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(path("a", "d"), path("a", "d/loop0"), NULL, MS_BIND, NULL) ||
		    mount(path("a", "d"), path("a", "d/loop1"), NULL, MS_BIND, NULL))
			_exit(77);
		/* The prefix's fd opened again here: the old one's walk sees the
		 * mounts of the namespace it was opened in. */
		fd = open(path("a", ""), O_RDONLY | O_DIRECTORY);
		if (fd < 0 || dup2(fd, c->pfd) < 0)
			_exit(1);
		close(fd);
		alarm(60);
		_exit(cache_rehint_all(c) || misnamed_moved(c) ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

/* A bind mount of a directory below itself: the repair's walk leaves it out
 * (the same directory as one of its levels), so a record takes the path
 * outside it, not one through it (which the listing order may put first),
 * and the walk does not go over the tree again through each bind. */
TEST(the_repair_walk_leaves_out_a_bind_mount_of_its_own_ancestor)
{
	struct pohm_cache *a;
	char name[32];
	int k, r;

	setup();
	a = host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "old", 0755), 0);
	for (k = 0; k < 32; k++) {
		snprintf(name, sizeof(name), "old/f%d", k);
		EXPECT_EQ_INT(write_file(a, "a", name, "x"), 0);
	}
	EXPECT_EQ_INT(rename(path("a", "old"), path("a", "d")), 0);
	EXPECT_EQ_INT(mkdir(path("a", "d/loop0"), 0755), 0);
	EXPECT_EQ_INT(mkdir(path("a", "d/loop1"), 0755), 0);
	EXPECT_EQ_INT(misnamed_moved(a), 32);
	r = rehint_all_over_bind_loops(a);
	pohm_cache_close(a);
	if (r == 77)
		SKIP("no mount namespace here");
	EXPECT_EQ_INT(r, 0);
}
