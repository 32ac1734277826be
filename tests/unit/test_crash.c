/*
 * test_crash.c — the per-inode state machine (ARCHITECTURE §8, decision
 * 0016) survives a crash between the steps of each transition.  Host b's
 * step runs in a forked child that opens its own cache and dies (_exit,
 * no cleanup: the kernel drops its OFD locks, as for SIGKILL) at a chosen
 * point: before or after a store write (cache_hosts.h's hooks) or before
 * a journal record put (linked with -Wl,--wrap=pohm_journal_put and
 * --wrap=pohm_journal_put_commit, Makefile), or at a kill point of the
 * crash-test hooks (--wrap=pohm_sys_test_kill).  What the child wrote to the
 * in-memory store up to there is handed to the parent (a dump of every
 * key), which then plays the restarted host: a fresh cache on the same
 * cache_dir.  After each crash: no acknowledged change is lost (a fresh
 * host c reads it, or it is in exactly one conflict copy), nothing is
 * reported dirty that is not, and the next change pushes without a
 * false conflict.
 *
 * Transitions and their crash points here:
 *   stub → clean (fetch): after a chunk read (before the rename); after
 *     the rename, before the record put.
 *   refresh (clean → clean, newer): the same two points.
 *   open-for-write → dirty: the writer dies without a close.
 *   dirty → pushing → clean: before the inode CAS (chunks stored); after
 *     the CAS, before the record put (commit and base in that put).
 *   pushing → conflict: before the record put that follows the conflict
 *     copy.
 *   eviction (clean → stub, `pohmelfs clean` and pohmelfsd): after the
 *     stub's exchange with the copy, before the record put.
 *   rename: between the storage rename and the local one (the intent
 *     file's case; also tests/bats/cache_hosts.bats, the kill loop); a
 *     directory's, there or in the re-hint of the records below it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "cache_hosts.h"
#include "cachetool.h"
#include "journal.h"
#include "log.h"
#include "sys.h"

int __real_pohm_journal_put(struct pohm_journal *j, const struct pohm_jrec *r);
int __wrap_pohm_journal_put(struct pohm_journal *j, const struct pohm_jrec *r);
void __wrap_pohm_sys_test_kill(enum pohm_test_switch s);
int __real_pohm_journal_put_commit(struct pohm_journal *j, const struct pohm_jrec *r);
int __wrap_pohm_journal_put_commit(struct pohm_journal *j, const struct pohm_jrec *r);

/* Where the child dies (set in the child only). */
enum { AT_NONE, AT_PUT_CLEAN, AT_PUT_ANY, AT_PUT_COMMIT, AT_IN_RENAME, AT_IN_REHINT };
static int crash_at;
static uint64_t crash_ino;	/* the record whose put kills */
static char dump_path[600];

static int dump_one(void *arg, const char *key, const void *data, size_t len)
{
	FILE *f = arg;
	uint32_t kl = (uint32_t)strlen(key);
	uint64_t dl = len;

	if (fwrite(&kl, sizeof(kl), 1, f) != 1 || fwrite(key, 1, kl, f) != kl ||
	    fwrite(&dl, sizeof(dl), 1, f) != 1 || (len && fwrite(data, 1, len, f) != len))
		return -EIO;
	return 0;
}

/* The crash: the store as the child left it goes to the parent; no cleanup. */
static void die_here(void)
{
	FILE *f = fopen(dump_path, "w");
	int r = f ? ch_mem.ops->scan(ch_mem.ctx, "", dump_one, f) : -EIO;

	if (!f || fclose(f) || r)
		_exit(3);
	_exit(42);
}

int __wrap_pohm_journal_put(struct pohm_journal *j, const struct pohm_jrec *r)
{
	if (r->ino == crash_ino &&
	    (crash_at == AT_PUT_ANY || (crash_at == AT_PUT_CLEAN && !(r->flags & POHM_J_STUB))))
		die_here();
	return __real_pohm_journal_put(j, r);
}

int __wrap_pohm_journal_put_commit(struct pohm_journal *j, const struct pohm_jrec *r)
{
	if (r->ino == crash_ino && crash_at == AT_PUT_COMMIT)
		die_here();
	return __real_pohm_journal_put_commit(j, r);
}

void __wrap_pohm_sys_test_kill(enum pohm_test_switch s)
{
	if ((s == POHM_TEST_KILL_IN_RENAME && crash_at == AT_IN_RENAME) ||
	    (s == POHM_TEST_KILL_IN_REHINT && crash_at == AT_IN_REHINT))
		die_here();
}

/* The parent's store becomes the dump. */
static int load_dump(void)
{
	FILE *f = fopen(dump_path, "r");
	uint32_t kl;
	uint64_t dl;
	char key[512];
	void *data;
	int r = 0;

	if (!f)
		return -errno;
	pohm_kvmem_free(&ch_mem);
	pohm_kvmem_new(&ch_mem);
	while (!r && fread(&kl, sizeof(kl), 1, f) == 1) {
		if (kl >= sizeof(key) || fread(key, 1, kl, f) != kl || fread(&dl, sizeof(dl), 1, f) != 1) {
			r = -EIO;
			break;
		}
		key[kl] = '\0';
		data = malloc(dl ? dl : 1);
		if (!data || (dl && fread(data, 1, dl, f) != dl))
			r = -EIO;
		else
			r = ch_mem.ops->put(ch_mem.ctx, key, data, dl, NULL);
		free(data);
	}
	fclose(f);
	return r;
}

/* Run step(b) in a child on its own cache of host b, dying at `at` (or at a
 * store hook step arms itself).  1 when it died there (the parent's store
 * is then the child's), 0 when it returned, -1 on a harness failure. */
static int crash_b(int at, uint64_t ino, void (*step)(struct pohm_cache *b))
{
	int st;
	pid_t pid;

	snprintf(dump_path, sizeof(dump_path), "%s/dump", ch_root);
	unlink(dump_path);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct pohm_cache *b = ch_host("b");

		if (!b)
			_exit(2);
		crash_at = at;
		crash_ino = ino;
		step(b);
		_exit(0);	/* no crash point reached */
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	if (WEXITSTATUS(st) == 0)
		return 0;
	if (WEXITSTATUS(st) != 42 || load_dump())
		return -1;
	return 1;
}

/* The storage inode of rel on host h (cache c). */
static uint64_t sino(struct pohm_cache *c, const char *h, const char *rel)
{
	struct stat st;

	if (lstat(ch_path(h, rel), &st))
		return 0;
	pohm_cache_stat_fix(c, &st);
	return (uint64_t)st.st_ino;
}

/* rel as host h reads it after a fetch, NUL-terminated in buf. */
static const char *read_on(struct pohm_cache *c, const char *h, const char *rel, char *buf,
			   size_t len)
{
	ssize_t n;

	if (pohm_cache_materialize(c, rel, POHM_MAT_DATA))
		return "(materialize failed)";
	n = ch_read_all(ch_path(h, rel), buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* A fresh store; host a writes f = "x\n" (chunked when no_inline) and
 * host b fetches it: a's cache, b's in *b, both open. */
static struct pohm_cache *x_on_a_and_b(int no_inline, struct pohm_cache **b)
{
	struct pohm_cache *a;
	char buf[64];

	ch_setup();
	ch_no_inline = no_inline;
	a = ch_host("a");
	*b = ch_host("b");
	EXPECT(a && *b);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "x\n", 2), 0);
	EXPECT_EQ_STR(read_on(*b, "b", "f", buf, sizeof(buf)), "x\n");
	return a;
}



/* Overwrite host h's local copy of rel (a program writing it, not pushed). */
static void local_write(const char *h, const char *rel, const char *s)
{
	int fd = open(ch_path(h, rel), O_WRONLY | O_TRUNC);

	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, s, strlen(s)), (int)strlen(s));
	close(fd);
}

/*
 * After the crash: restarted b has nothing false to push, a fresh host c
 * reads want, and a change on b pushes without a conflict copy (its base
 * is right) and reaches c.
 */
static void after_crash_all_is_well(const char *want, int b_pushes)
{
	struct pohm_cache *b, *c;
	char buf[64];

	if (getenv("CRASH_DEBUG"))
		pohm_log_setup(POHM_LOG_DEBUG, 2);
	b = ch_host("b");
	EXPECT(b != NULL);
	ch_puts_of('i');
	EXPECT_EQ_INT(pohm_cache_sync_all(b), b_pushes);
	if (!b_pushes)
		EXPECT_EQ_INT(ch_puts_of('i'), 0);	/* nothing stored either */
	EXPECT_EQ_INT(pohm_cache_sync_all(b), 0);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_STR(read_on(c, "c", "f", buf, sizeof(buf)), want);
	EXPECT_EQ_STR(read_on(b, "b", "f", buf, sizeof(buf)), want);
	local_write("b", "f", "next\n");
	EXPECT_EQ_INT(pohm_cache_sync_all(b), 1);
	EXPECT_EQ_STR(read_on(c, "c", "f", buf, sizeof(buf)), "next\n");
	EXPECT_EQ_INT(ch_conflict_copies(c, "c", "b", ""), 0);
	EXPECT_EQ_INT(ch_conflict_copies(c, "c", "a", ""), 0);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

static void step_fetch(struct pohm_cache *b)
{
	pohm_cache_materialize(b, "f", POHM_MAT_DATA);
}

static void arm_chunk_crash(struct pohm_cache *b)
{
	ch_after_chunk_get = die_here;
	step_fetch(b);
}

/* stub → clean: a fetch dies before its rename, or after it before the
 * record says clean. */
TEST(a_fetch_that_dies_between_its_steps_leaves_a_stub_or_a_clean_copy)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct pohm_cache *a;
		uint64_t ino;

		ch_setup();
		ch_no_inline = k == 0;	/* the crash is hooked at a chunk read */
		a = ch_host("a");
		EXPECT(a != NULL);
		EXPECT_EQ_INT(ch_write(a, "a", "f", "x\n", 2), 0);
		ino = sino(a, "a", "f");
		pohm_cache_close(a);
		if (k == 0)
			EXPECT_EQ_INT(crash_b(AT_NONE, ino, arm_chunk_crash), 1);
		else
			EXPECT_EQ_INT(crash_b(AT_PUT_CLEAN, ino, step_fetch), 1);
		after_crash_all_is_well("x\n", 0);
	}
}

static void step_chunk_refresh(struct pohm_cache *b)
{
	ch_after_chunk_get = die_here;
	pohm_cache_materialize(b, "f", POHM_MAT_DATA);
}

/* refresh: b holds a clean "x", a commits "y"; b's refresh dies before its
 * rename, or after it before its record put. */
TEST(a_refresh_that_dies_between_its_steps_leaves_the_old_or_the_new_copy_clean)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct pohm_cache *a, *b;
		uint64_t ino;

		/* k == 0: the crash is hooked at a chunk read */
		a = x_on_a_and_b(k == 0, &b);
		pohm_cache_close(b);
		EXPECT_EQ_INT(ch_write(a, "a", "f", "y\n", 2), 0);
		ino = sino(a, "a", "f");
		pohm_cache_close(a);
		if (k == 0)
			EXPECT_EQ_INT(crash_b(AT_NONE, ino, step_chunk_refresh), 1);
		else
			EXPECT_EQ_INT(crash_b(AT_PUT_CLEAN, ino, step_fetch), 1);
		after_crash_all_is_well("y\n", 0);
	}
}

static void step_write_and_die(struct pohm_cache *b)
{
	struct stat st;
	uint64_t ldev, lino;
	int fd;

	pohm_cache_materialize(b, "f", POHM_MAT_DATA | POHM_MAT_OPEN_W);
	fd = open(ch_path("b", "f"), O_WRONLY | O_APPEND);
	if (fd < 0 || fstat(fd, &st))
		_exit(2);
	ldev = (uint64_t)st.st_dev;
	lino = (uint64_t)st.st_ino;
	pohm_cache_stat_fix(b, &st);
	if (pohm_cache_writer_open(b, (uint64_t)st.st_ino, ldev, lino, 0) ||
	    !pohm_cache_writer_alive(b, (uint64_t)st.st_ino) || write(fd, "b\n", 2) != 2)
		_exit(2);
	die_here();		/* no close, no push */
}

/* clean → open-for-write → dirty: the writer dies without a close; the
 * kernel drops its lock, the file is dirty, the next round pushes it. */
TEST(a_writer_that_dies_without_a_close_leaves_a_dirty_file_that_is_pushed)
{
	struct pohm_cache *a, *b;

	a = x_on_a_and_b(0, &b);
	pohm_cache_close(b);
	EXPECT_EQ_INT(crash_b(AT_NONE, 0, step_write_and_die), 1);
	b = ch_host("b");
	EXPECT(b != NULL);
	EXPECT_EQ_INT(pohm_cache_writer_alive(b, sino(b, "b", "f")), 0);
	pohm_cache_close(b);
	after_crash_all_is_well("x\nb\n", 1);
	pohm_cache_close(a);
}

static void step_push(struct pohm_cache *b)
{
	pohm_cache_sync_all(b);
}

static void step_push_die_before_cas(struct pohm_cache *b)
{
	ch_before_inode_cas = die_here;
	pohm_cache_sync_all(b);
}

/* dirty → pushing → clean: b's push of "b" dies with its chunks stored but
 * no commit, or after its commit (the inode CAS) before the record put
 * that notes it.  The restarted b pushes once more (the first case) or
 * finds the stored version byte-identical (the second): no conflict copy
 * either way, and the next change's base is right. */
TEST(a_push_that_dies_between_its_steps_is_finished_without_a_conflict)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct pohm_cache *a, *b;
		uint64_t ino;

		/* k == 0: the crash is hooked at a chunk read */
		a = x_on_a_and_b(k == 0, &b);
		ino = sino(b, "b", "f");
		pohm_cache_close(b);
		pohm_cache_close(a);
		local_write("b", "f", "b\n");
		if (k == 0)
			EXPECT_EQ_INT(crash_b(AT_NONE, ino, step_push_die_before_cas), 1);
		else
			EXPECT_EQ_INT(crash_b(AT_PUT_COMMIT, ino, step_push), 1);
		after_crash_all_is_well("b\n", 1);
	}
}

/* pushing → conflict: a commits "a" while b's "b" is dirty on the old
 * base; b's push loses the CAS, stores its conflict copy and dies before
 * the record put.  After the restart: the name shows a's version, b's
 * bytes are in exactly one conflict copy, and b's next change pushes. */
TEST(a_conflicting_push_that_dies_before_its_record_keeps_one_conflict_copy)
{
	struct pohm_cache *a, *b, *c;
	char buf[64];
	uint64_t ino;
	int r;

	a = x_on_a_and_b(0, &b);
	ino = sino(b, "b", "f");
	pohm_cache_close(b);
	EXPECT_EQ_INT(ch_write(a, "a", "f", "a\n", 2), 0);
	pohm_cache_close(a);
	local_write("b", "f", "b\n");
	EXPECT_EQ_INT(crash_b(AT_PUT_ANY, ino, step_push), 1);
	b = ch_host("b");
	EXPECT(b != NULL);
	r = pohm_cache_sync_all(b);
	EXPECT(r >= 0);
	EXPECT_EQ_INT(pohm_cache_sync_all(b), 0);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_STR(read_on(c, "c", "f", buf, sizeof(buf)), "a\n");
	EXPECT_EQ_INT(ch_conflict_copies(c, "c", "b", "b\n"), 1);
	EXPECT_EQ_STR(read_on(b, "b", "f", buf, sizeof(buf)), "a\n");
	local_write("b", "f", "next\n");
	EXPECT_EQ_INT(pohm_cache_sync_all(b), 1);
	EXPECT_EQ_STR(read_on(c, "c", "f", buf, sizeof(buf)), "next\n");
	EXPECT_EQ_INT(ch_conflict_copies(c, "c", "b", "b\n"), 1);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

static void step_evict(struct pohm_cache *b)
{
	char prefix[512], cdir[512], err[512];
	struct pohm_ct_clean res;
	struct pohm_ct t;

	snprintf(prefix, sizeof(prefix), "%s/b/prefix", ch_root);
	snprintf(cdir, sizeof(cdir), "%s/b/state", ch_root);
	if (pohm_ct_open(&t, prefix, cdir, err, sizeof(err)))
		_exit(2);
	pohm_ct_clean(&t, &res, NULL, NULL);
	pohm_ct_close(&t);
}

/* clean → stub (eviction): the stub took the copy's place (exchange), the
 * evictor dies before the record says stub.  The name still reads the
 * stored bytes after the restart, and nothing is pushed. */
TEST(an_eviction_that_dies_before_its_record_leaves_a_readable_name)
{
	struct pohm_cache *a, *b;
	uint64_t ino;

	a = x_on_a_and_b(0, &b);
	ino = sino(b, "b", "f");
	pohm_cache_close(b);
	pohm_cache_close(a);
	EXPECT_EQ_INT(crash_b(AT_PUT_ANY, ino, step_evict), 1);
	after_crash_all_is_well("x\n", 0);
}

/* A create dies after its storage insert: before the local open (k 0),
 * or after it, before the one record that names the local file (k 1,
 * decision 0063: no record is written before the open). */
static int create_dies_after_open;

static void step_create(struct pohm_cache *b)
{
	int fd;

	if (pohm_cache_create(b, "n", 0644, 1))
		_exit(2);
	if (create_dies_after_open) {
		fd = open(ch_path("b", "n"), O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			_exit(2);
	}
	die_here();
}

/* After either crash the name is there, empty, on the restarted host and
 * on a fresh one; nothing false is pushed; a write on the restarted host
 * reaches the fresh one without a conflict copy. */
TEST(a_create_that_dies_before_its_record_leaves_an_empty_file)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct pohm_cache *a, *b, *c;
		char buf[64];

		ch_setup();
		a = ch_host("a");
		EXPECT(a != NULL);
		EXPECT_EQ_INT(ch_write(a, "a", "f", "x\n", 2), 0);
		pohm_cache_close(a);
		create_dies_after_open = k;
		EXPECT_EQ_INT(crash_b(AT_NONE, 0, step_create), 1);
		b = ch_host("b");
		c = ch_host("c");
		EXPECT(b && c);
		EXPECT_EQ_INT(pohm_cache_sync_all(b), 0);
		EXPECT_EQ_STR(read_on(c, "c", "n", buf, sizeof(buf)), "");
		EXPECT_EQ_STR(read_on(b, "b", "n", buf, sizeof(buf)), "");
		EXPECT_EQ_INT(ch_write(b, "b", "n", "y\n", 2), 0);
		EXPECT_EQ_STR(read_on(c, "c", "n", buf, sizeof(buf)), "y\n");
		EXPECT_EQ_INT(ch_conflict_copies(c, "c", "b", ""), 0);
		pohm_cache_close(b);
		pohm_cache_close(c);
	}
}

static void step_rename(struct pohm_cache *b)
{
	pohm_cache_rename(b, "f", "g", 0);
}

/* rename: the storage says g, the local tree still f, when the renamer
 * dies.  The restarted host completes it from the intent (its m.lock byte
 * is free): g holds the bytes on b and on a fresh c, f is gone, and a
 * change of g pushes without a conflict copy. */
TEST(a_rename_that_dies_between_its_halves_is_completed)
{
	struct pohm_cache *a, *b, *c;
	char buf[64];
	struct stat st;

	a = x_on_a_and_b(0, &b);
	pohm_cache_close(b);
	pohm_cache_close(a);
	EXPECT_EQ_INT(crash_b(AT_IN_RENAME, 0, step_rename), 1);
	EXPECT_EQ_INT(lstat(ch_path("b", "f"), &st), 0);	/* the local half was not done */
	b = ch_host("b");
	EXPECT(b != NULL);
	EXPECT(pohm_cache_reconcile(b) >= 0);
	EXPECT_EQ_INT(lstat(ch_path("b", "f"), &st), -1);
	EXPECT_EQ_STR(read_on(b, "b", "g", buf, sizeof(buf)), "x\n");
	ch_puts_of('i');
	EXPECT_EQ_INT(pohm_cache_sync_all(b), 0);	/* the completion moved only a ctime */
	EXPECT_EQ_INT(ch_puts_of('i'), 0);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_STR(read_on(c, "c", "g", buf, sizeof(buf)), "x\n");
	EXPECT_EQ_INT(pohm_cache_materialize(c, "f", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(lstat(ch_path("c", "f"), &st), -1);
	local_write("b", "g", "next\n");
	EXPECT_EQ_INT(pohm_cache_sync_all(b), 1);
	EXPECT_EQ_STR(read_on(c, "c", "g", buf, sizeof(buf)), "next\n");
	EXPECT_EQ_INT(ch_conflict_copies(c, "c", "b", ""), 0);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

static void step_rename_dir(struct pohm_cache *b)
{
	pohm_cache_rename(b, "d", "d2", 0);
}

/* A directory's rename dies between its halves (AT_IN_RENAME) or after its
 * local half, in the re-hint of the records below it (AT_IN_REHINT).  The
 * completion leaves d/sub/f's record naming d2/sub/f: a push that finds a
 * file by its record's name alone (a process's exit, sync_inos: no repair
 * walk) pushes its next change, and a fresh host reads it. */
static void a_directory_rename_dies(int at)
{
	struct pohm_cache *a, *b, *c;
	char buf[64];
	struct stat st;
	uint64_t ino;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d/sub", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "d/sub/f", "x\n", 2), 0);
	EXPECT_EQ_STR(read_on(b, "b", "d/sub/f", buf, sizeof(buf)), "x\n");
	pohm_cache_close(b);
	pohm_cache_close(a);
	EXPECT_EQ_INT(crash_b(at, 0, step_rename_dir), 1);
	EXPECT_EQ_INT(lstat(ch_path("b", "d2/sub/f"), &st), at == AT_IN_RENAME ? -1 : 0);
	b = ch_host("b");
	EXPECT(b != NULL);
	EXPECT(pohm_cache_reconcile(b) >= 0);
	EXPECT_EQ_INT(lstat(ch_path("b", "d"), &st), -1);
	ino = sino(b, "b", "d2/sub/f");
	EXPECT(ino != 0);
	local_write("b", "d2/sub/f", "next\n");
	EXPECT_EQ_INT(pohm_cache_sync_inos(b, 1, &ino, NULL, NULL), 1);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_STR(read_on(c, "c", "d2/sub/f", buf, sizeof(buf)), "next\n");
	EXPECT_EQ_INT(ch_conflict_copies(c, "c", "b", ""), 0);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

TEST(a_directory_rename_that_dies_between_its_halves_leaves_the_records_below_pushable)
{
	a_directory_rename_dies(AT_IN_RENAME);
}

TEST(a_directory_rename_that_dies_in_its_rehint_leaves_the_records_below_pushable)
{
	a_directory_rename_dies(AT_IN_REHINT);
}
