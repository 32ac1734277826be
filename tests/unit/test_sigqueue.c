/*
 * test_sigqueue.c — core/cache/sigqueue.c: replaying the records signal
 * handlers left (issue 19 item 5), over the cache hosts' in-memory store.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "cache_hosts.h"
#include "cache_int.h"

/* Put the record "op a b" into host h's queue, as preload/sigsafe.c writes it. */
static int sq_put(const char *h, char op, const char *a, const char *b)
{
	static unsigned seq;
	char p[512], rec[256];
	size_t n;
	int fd, ok;

	snprintf(p, sizeof(p), "%s/%s/state/sq", ch_root, h);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/%s/state/sq/1-1-%u", ch_root, h, ++seq);
	n = (size_t)snprintf(rec, sizeof(rec), "%s%c", POHM_SQ_MAGIC, op) + 1;
	memcpy(rec + n, a, strlen(a) + 1);
	n += strlen(a) + 1;
	memcpy(rec + n, b, strlen(b) + 1);
	n += strlen(b) + 1;
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	ok = write(fd, rec, n) == (ssize_t)n;
	close(fd);
	return ok ? 0 : -1;
}

/*
 * The CI loop of shim_sigqueue.bats 1 (session 11): the process that
 * replayed a handler's rename in its drain died (its own handler's _exit)
 * after the storage had renamed the inode and before the journal learnt
 * the new name.  The next replay found the storage without the old name
 * ("to is treated as present") and left the file to sync_all, which looks
 * for it under the journal's name, the old one, gone locally: the data
 * written before the rename (sync_on_close=0, not pushed yet) was never
 * pushed, and a fresh host read an empty file under the new name.
 */
TEST(a_rename_replayed_after_the_storage_did_it_still_pushes_the_data)
{
	struct pohm_cache *a, *b, *c;
	char buf[64];
	ssize_t n;
	int fd;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	/* Host a makes r and writes into it; no push yet. */
	EXPECT_EQ_INT(pohm_cache_create(a, "r", 0644, 0), 0);
	fd = open(ch_path("a", "r"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	pohm_cache_opened(a, "r", fd);
	EXPECT_EQ_INT(write(fd, "data of r\n", 10), 10);
	close(fd);
	/* A handler renamed r to q locally; the storage rename is done (here
	 * by host b: what the dead replayer had done), a's journal knows
	 * nothing of it, and the record waits. */
	EXPECT_EQ_INT(rename(ch_path("a", "r"), ch_path("a", "q")), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_rename(b, "r", "q", 0), 0);
	EXPECT_EQ_INT(sq_put("a", POHM_SQ_RENAME, "r", "q"), 0);
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a, POHM_SQ_OPEN, NULL), 1);
	/* sync_all pushes q's data. */
	EXPECT_EQ_INT(pohm_cache_sync_all(a), 1);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(c, "q", POHM_MAT_DATA), 0);
	n = ch_read_all(ch_path("c", "q"), buf, sizeof(buf) - 1);
	EXPECT_EQ_INT(n, 10);
	buf[n > 0 ? n : 0] = '\0';
	EXPECT_EQ_STR(buf, "data of r\n");
	pohm_cache_close(a);
	pohm_cache_close(b);
	pohm_cache_close(c);
}

/*
 * A record being staged in sq.tmp/ is unlocked between its writer's O_EXCL
 * create and its lock.  A replay's clean-up removed every unlocked staged
 * file: the writer's rename into sq/ then failed and its record fell back
 * to the in-memory ring, lost with a host that ends in its handler.  A
 * young unlocked file stays; an old one (a writer that died there) goes.
 */
TEST(a_replay_leaves_a_record_being_staged_and_removes_a_dead_writers)
{
	struct pohm_cache *a;
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	char young[512], dead[512];
	int fd;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	snprintf(young, sizeof(young), "%s/a/state/sq.tmp", ch_root);
	mkdir(young, 0700);
	snprintf(young, sizeof(young), "%s/a/state/sq.tmp/1-1-2", ch_root);
	snprintf(dead, sizeof(dead), "%s/a/state/sq.tmp/1-1-3", ch_root);
	fd = open(young, O_WRONLY | O_CREAT | O_EXCL, 0600);
	EXPECT(fd >= 0);
	close(fd);
	fd = open(dead, O_WRONLY | O_CREAT | O_EXCL, 0600);
	EXPECT(fd >= 0);
	close(fd);
	EXPECT_EQ_INT(utimensat(AT_FDCWD, dead, old, 0), 0);
	/* An empty queue: the replay does nothing but clean sq.tmp/. */
	EXPECT_EQ_INT(sq_put("a", POHM_SQ_PATH, "gone", ""), 0);
	EXPECT(pohm_cache_sigq_replay(a, 0, NULL) >= 0);
	EXPECT_EQ_INT(access(young, F_OK), 0);
	EXPECT(access(dead, F_OK) != 0);
	pohm_cache_close(a);
}

/*
 * A file a signal handler created (its write record) on the local inode
 * number of a directory removed without the shim, whose index entry and
 * record still name that number (the file system reuses a freed number:
 * test_cache.c, a_name_on_a_stale_index_entry_is_adopted): a stale entry
 * (cache_index_stale), so the replay adopts the file and a fresh host
 * reads it.  Before, the index alone said "known", sync_all's to push it,
 * and it never reached the storage.
 */
TEST(a_handlers_file_on_a_stale_index_entry_is_adopted)
{
	struct pohm_cache *a, *c;
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	char buf[64];
	ssize_t n;
	int fd;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e", 0755), 0);
	EXPECT_EQ_INT(stat(ch_path("a", "e"), &st), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&a->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						&ino), 0);
	EXPECT_EQ_INT(rmdir(ch_path("a", "e")), 0);
	fd = open(ch_path("a", "w"), O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "handler's\n", 10), 10);
	EXPECT_EQ_INT(fstat(fd, &st), 0);
	close(fd);
	/* e's record and entry on w's number, as the reuse leaves them. */
	EXPECT_EQ_INT(pohm_journal_get(&a->j, ino, &rec), 0);
	rec.lino = (uint64_t)st.st_ino;
	EXPECT_EQ_INT(pohm_journal_put(&a->j, &rec), 0);
	pohm_jrec_clear(&rec);
	EXPECT_EQ_INT(sq_put("a", POHM_SQ_WRITE, "w", ""), 0);
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a, POHM_SQ_OPEN, NULL), 1);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(c, "w", POHM_MAT_DATA), 0);
	n = ch_read_all(ch_path("c", "w"), buf, sizeof(buf) - 1);
	EXPECT_EQ_INT(n, 10);
	buf[n > 0 ? n : 0] = '\0';
	EXPECT_EQ_STR(buf, "handler's\n");
	pohm_cache_close(a);
	pohm_cache_close(c);
}

/*
 * shim_procs 23 under UBSan (session 19): pohmelfsd replayed a handler's
 * create of pid-0 (its write record) and adopted the file: it found the
 * name locally and not in the storage, then created it in the storage.
 * Between the two the handler's next call removed pid-0: through the
 * hooks (the storage had no pid-0 yet: removed locally only) or straight
 * to libc with a record whose replay found no pid-0 in the storage.  The
 * adopt then made the storage's pid-0, and nothing ever removed it.
 * Here the removal runs just before the adopt writes its inode, by a
 * second cache of host a (the host process beside pohmelfsd).
 */
static struct pohm_cache *sq_other;	/* host a's other process */
static int sq_removed;

static void sq_remove_by_hook(void)
{
	sq_removed = pohm_cache_unlink(sq_other, "s/pid") == 0;
}

static void sq_remove_by_libc_and_record(void)
{
	sq_removed = unlink(ch_path("a", "s/pid")) == 0 &&
		     pohm_cache_sigq_gone(sq_other, "s/pid") == 0;
}

/* Host a's s/pid ("x"), made by a handler straight through libc, and its write record. */
static void handler_made_pid(struct pohm_cache *a)
{
	int fd;

	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	fd = open(ch_path("a", "s/pid"), O_CREAT | O_WRONLY | O_EXCL, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "x", 1), 1);
	close(fd);
	EXPECT_EQ_INT(sq_put("a", POHM_SQ_WRITE, "s/pid", ""), 0);
}

/* A fresh host sees the storage: s without pid. */
static void storage_lacks_pid(void)
{
	struct pohm_cache *c = ch_host("c");

	EXPECT(c != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(c, "s", POHM_MAT_LIST), 0);
	EXPECT(access(ch_path("c", "s/pid"), F_OK) != 0);
	pohm_cache_close(c);
}

static void adopt_raced_by_removal(void (*remove)(void))
{
	struct pohm_cache *a;

	ch_setup();
	a = ch_host("a");
	sq_other = ch_host("a");
	EXPECT(a && sq_other);
	handler_made_pid(a);
	sq_removed = 0;
	snprintf(ch_before_put_prefix, sizeof(ch_before_put_prefix), "i:");
	ch_before_put = remove;
	EXPECT(pohm_cache_sigq_replay(a, POHM_SQ_OPEN, NULL) >= 0);
	EXPECT(ch_before_put == NULL);
	EXPECT(sq_removed);
	EXPECT(access(ch_path("a", "s/pid"), F_OK) != 0);
	storage_lacks_pid();
	pohm_cache_close(a);
	pohm_cache_close(sq_other);
}

TEST(a_handlers_file_removed_through_the_hooks_while_adopted_leaves_the_storage)
{
	adopt_raced_by_removal(sq_remove_by_hook);
}

TEST(a_handlers_file_removed_by_libc_and_replayed_while_adopted_leaves_the_storage)
{
	adopt_raced_by_removal(sq_remove_by_libc_and_record);
}

/* Linked with --wrap=pohm_sys_unlinkat (Makefile): before the next local
 * unlink of a name sq_unlink_name, sq_before_unlink runs (one-shot). */
int __real_pohm_sys_unlinkat(int dirfd, const char *path, int flags);
int __wrap_pohm_sys_unlinkat(int dirfd, const char *path, int flags);
static const char *sq_unlink_name;
static void (*sq_before_unlink)(void);

int __wrap_pohm_sys_unlinkat(int dirfd, const char *path, int flags)
{
	if (sq_before_unlink && !strcmp(path, sq_unlink_name)) {
		void (*fn)(void) = sq_before_unlink;

		sq_before_unlink = NULL;
		fn();
	}
	return __real_pohm_sys_unlinkat(dirfd, path, flags);
}

static struct pohm_cache *sq_replayer;	/* host a's pohmelfsd */
static int sq_replayed;

static void sq_replay_now(void)
{
	sq_replayed = pohm_cache_sigq_replay(sq_replayer, POHM_SQ_OPEN, NULL);
}

/*
 * The hooks' side of the same race: the host's unlink found no s/pid in
 * the storage (made behind its back) and removes it locally only; the
 * whole adopt — the storage's create, the journal's record, the push and
 * the adopt's second look, which still sees s/pid — falls between that
 * look and the local unlink.  The unlink then finds the journal's record
 * of the file it removed and removes the adopt's name.
 */
TEST(a_handlers_file_adopted_between_the_hooks_look_and_its_local_unlink_leaves_the_storage)
{
	struct pohm_cache *a;

	ch_setup();
	sq_replayer = ch_host("a");
	a = ch_host("a");
	EXPECT(a && sq_replayer);
	handler_made_pid(a);
	sq_replayed = -1;
	sq_unlink_name = "pid";
	sq_before_unlink = sq_replay_now;
	EXPECT_EQ_INT(pohm_cache_unlink(a, "s/pid"), 0);
	EXPECT(sq_before_unlink == NULL);
	EXPECT_EQ_INT(sq_replayed, 1);	/* adopted, the record done */
	EXPECT(access(ch_path("a", "s/pid"), F_OK) != 0);
	storage_lacks_pid();
	pohm_cache_close(a);
	pohm_cache_close(sq_replayer);
}

/*
 * The bounded replay of a hook's drain (pohm_cache_sigq_replay_for): a
 * handler whose records cost more round trips than its period allows kept
 * the thread in its drains for good (shim_procs 23 under TSan).  Session
 * 18's bound (tag proto-s18-sigcap) let the call run before a removal it
 * named was replayed: the call fetched the name back.  Each record below
 * is a name of host a that was in the storage and that a handler removed
 * straight through libc.
 */
static void handler_removed_noted(struct pohm_cache *a, const char *rel, int ring)
{
	EXPECT_EQ_INT(ch_write(a, "a", rel, "x", 1), 0);
	EXPECT_EQ_INT(unlink(ch_path("a", rel)), 0);
	/* ring: no record entry was free, the drain writes the ring's name */
	EXPECT_EQ_INT(ring ? pohm_cache_sigq_put(a, rel) : sq_put("a", POHM_SQ_PATH, rel, ""), 0);
}

static void handler_removed(struct pohm_cache *a, const char *rel)
{
	handler_removed_noted(a, rel, 0);
}

/* How many of rels a fresh host h finds in the storage. */
static int stored(const char *h, const char *const *rels, int n)
{
	struct pohm_cache *c = ch_host(h);
	int found = 0;

	EXPECT(c != NULL);
	for (int i = 0; i < n; i++)
		found += !pohm_cache_materialize(c, rels[i], 0) && !access(ch_path(h, rels[i]), F_OK);
	pohm_cache_close(c);
	return found;
}

static const char *const sq_four[] = { "s/p0", "s/p1", "s/p2", "s/p3" };

TEST(a_bounded_replay_applies_its_budget_of_records_no_call_needs_and_defers_the_rest)
{
	struct pohm_sigq_bound bd = { { "m-0", NULL }, 1, 0, 0 };
	struct pohm_cache *a;
	int left;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	for (int i = 0; i < 4; i++)
		handler_removed(a, sq_four[i]);
	EXPECT_EQ_INT(pohm_cache_sigq_replay_for(a, &bd, &left), 1);
	EXPECT_EQ_INT(left, 3);
	EXPECT_EQ_INT(bd.deferred, 3);
	EXPECT_EQ_INT(stored("c", sq_four, 4), 3);
	/* pohmelfsd's replay (or a later drain's) takes the rest. */
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a, POHM_SQ_OPEN, &left), 3);
	EXPECT_EQ_INT(left, 0);
	EXPECT_EQ_INT(stored("d", sq_four, 4), 0);
	pohm_cache_close(a);
}

/* A replay for the call paths p, q with no budget: count applied (EXPECTed
 * to be want, what deferred is returned). */
static unsigned replay_for(struct pohm_cache *a, const char *p, const char *q, int want)
{
	struct pohm_sigq_bound bd = { { p, q }, 0, 0, 0 };

	EXPECT_EQ_INT(pohm_cache_sigq_replay_for(a, &bd, NULL), want);
	return bd.deferred;
}

TEST(a_bounded_replay_applies_past_its_budget_the_records_on_the_calls_paths)
{
	static const char *const other[] = { "u/z" };
	static const char *const gone[] = { "s/q", "t/r", "v/o" };
	struct pohm_cache *a;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "t", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "u", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "v", 0755), 0);
	handler_removed(a, "u/z");		/* no call below needs it */
	/* The call's own name: a cat of s/q must not fetch it back (the
	 * review's HIGH on session 18's bound). */
	handler_removed(a, "s/q");
	EXPECT_EQ_INT(replay_for(a, "s/q", NULL, 1), 1);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "s/q", POHM_MAT_DATA), 0);
	EXPECT(access(ch_path("a", "s/q"), F_OK) != 0);
	/* A directory above the call's path (a handler's chmod of d, then a
	 * create in d; a d removed would make the call's path not plain: every
	 * record applied). */
	EXPECT_EQ_INT(chmod(ch_path("a", "d"), 0700), 0);
	EXPECT_EQ_INT(sq_put("a", POHM_SQ_PATH, "d", ""), 0);
	EXPECT_EQ_INT(replay_for(a, "d/y", NULL, 1), 1);
	/* A name below the call's path (a listing of t). */
	handler_removed(a, "t/r");
	EXPECT_EQ_INT(replay_for(a, "t", NULL, 1), 1);
	/* The second path of a two-path call (a rename onto v/o). */
	handler_removed(a, "v/o");
	EXPECT_EQ_INT(replay_for(a, "m-1", "v/o", 1), 1);
	EXPECT_EQ_INT(stored("c", gone, 3), 0);
	EXPECT_EQ_INT(stored("d", other, 1), 1);
	pohm_cache_close(a);
}

TEST(a_bounded_replay_applies_every_record_a_symlink_may_lead_to)
{
	static const char *const gone[] = { "s/v" };
	struct pohm_cache *a;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	EXPECT_EQ_INT(symlink("s", ch_path("a", "l")), 0);
	/* The call reaches s/v through l. */
	handler_removed(a, "s/v");
	EXPECT_EQ_INT(replay_for(a, "l/v", NULL, 1), 0);
	EXPECT_EQ_INT(stored("c", gone, 1), 0);
	/* The handler's path went through l. */
	EXPECT_EQ_INT(ch_write(a, "a", "s/w", "x", 1), 0);
	EXPECT_EQ_INT(unlink(ch_path("a", "l/w")), 0);
	EXPECT_EQ_INT(sq_put("a", POHM_SQ_PATH, "l/w", ""), 0);
	EXPECT_EQ_INT(replay_for(a, "s/w", NULL, 1), 0);
	pohm_cache_close(a);
}

/* A name a handler could not record (its ring's: no record entry free)
 * becomes a record the bounded replay treats as the others: deferred while
 * no call needs it, applied for the call that does. */
TEST(a_ring_name_put_as_a_record_is_deferred_then_applied_for_its_call)
{
	static const char *const gone[] = { "s/k" };
	struct pohm_cache *a;
	int left;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	handler_removed_noted(a, "s/k", 1);
	EXPECT_EQ_INT(replay_for(a, "m-2", NULL, 0), 1);
	EXPECT_EQ_INT(stored("c", gone, 1), 1);
	EXPECT_EQ_INT(replay_for(a, "s/k", NULL, 1), 0);
	EXPECT_EQ_INT(stored("d", gone, 1), 0);
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a, POHM_SQ_OPEN, &left), 0);
	EXPECT_EQ_INT(left, 0);
	pohm_cache_close(a);
}

/*
 * The bound's lexical relation sees only what the local tree shows: a
 * call's last component absent here (a create's new name) counts as plain.
 * Another host made it a symlink in the storage: the walk follows it to a
 * name the call never spelled, whose record the bound deferred, and
 * fetched that name back (the review of session 19's bound).  The walk
 * now has the records of a symlink's target applied before it follows.
 */
TEST(a_walk_through_a_stored_symlink_has_its_targets_records_applied_first)
{
	static const char *const gone[] = { "s/t" };
	struct pohm_cache *a, *b;

	ch_setup();
	a = ch_host("a");
	b = ch_host("b");
	EXPECT(a && b);
	pohm_cache_set_follow_fn(a, pohm_cache_sigq_follow);	/* as core/mount/host.c */
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	handler_removed(a, "s/t");
	EXPECT_EQ_INT(pohm_cache_materialize(b, "s", POHM_MAT_LIST), 0);
	EXPECT_EQ_INT(pohm_cache_symlink(b, "t", "s/l"), 0);
	/* The call: a stat of s/l, absent here. */
	EXPECT_EQ_INT(replay_for(a, "s/l", NULL, 0), 1);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "s/l", 0), 0);
	EXPECT_EQ_INT(readlink(ch_path("a", "s/l"), (char[8]){ 0 }, 8), 1);	/* the walk saw it */
	EXPECT(access(ch_path("a", "s/t"), F_OK) != 0);
	EXPECT_EQ_INT(stored("c", gone, 1), 0);
	pohm_cache_close(a);
	pohm_cache_close(b);
}

/*
 * shim_procs 23's one TSan failure (session 19: "the handler's call failed
 * (2)", the unlink's file still there).  The handler makes pid-K, then
 * removes pid-K-1, every 10 ms.  pohmelfsd adopted pid-0 (its record on
 * local number N); the handler removed pid-0 through libc (a record the
 * bound deferred) and its next create, pid-2, got N again (ext4 hands a
 * freed number out at once).  The handler's unlink of pid-2, through the
 * hooks, took pid-0's inode for pid-2's (the index by local number), the
 * storage has no pid-2 under it: ENOENT, and the local file stayed.  A name
 * the storage lacks is removed here alone, whatever the index guessed.
 */
/* pohmelfsd of host a replays the deferred P s/pid-0 (pid-0's inode goes,
 * and its record: the reused number's guess with it), then adopts s/pid-2
 * as its write record's replay would. */
static void sq_adopt_pid2(void)
{
	int fd = open(ch_path("a", "s/pid-2"), O_RDONLY);

	EXPECT_EQ_INT(pohm_cache_sigq_replay(sq_replayer, 0, NULL), 1);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(pohm_cache_adopt(sq_replayer, "s/pid-2", fd), 0);
	EXPECT(pohm_cache_push_fd(sq_replayer, fd) >= 0);
	close(fd);
	sq_replayed = 1;
}

enum { REUSE_PLAIN, REUSE_REHINTED, REUSE_ADOPTED };

static void unlink_on_a_reused_number(int how)
{
	static const char *const gone[] = { "s/pid-0", "s/pid-2" };
	struct pohm_cache *a;
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int fd;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	handler_removed(a, "s/pid-0");	/* stored, removed by libc, its record waits */
	usleep(20000);	/* the handler's period: pid-2 born past the coarse clock's tick */
	fd = open(ch_path("a", "s/pid-2"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "x", 1), 1);
	EXPECT_EQ_INT(fstat(fd, &st), 0);
	close(fd);
	/* pid-0's record on pid-2's number, as the reuse leaves it (ext4
	 * gives the same number; another file system may not). */
	EXPECT_EQ_INT(pohm_ns_resolve(a->ns, "s/pid-0", 0, &ino), 0);
	EXPECT_EQ_INT(pohm_journal_get(&a->j, ino, &rec), 0);
	rec.lino = (uint64_t)st.st_ino;
	if (how == REUSE_REHINTED)	/* pohmelfsd replayed pid-2's write record (sq_known_name) */
		pohm_jrec_set_hint(&rec, "s/pid-2");
	EXPECT_EQ_INT(pohm_journal_put(&a->j, &rec), 0);
	pohm_jrec_clear(&rec);
	sq_replayed = 0;
	if (how == REUSE_ADOPTED) {	/* between the unlink's look and its local unlink */
		sq_replayer = ch_host("a");
		sq_unlink_name = "pid-2";
		sq_before_unlink = sq_adopt_pid2;
	}
	EXPECT_EQ_INT(pohm_cache_unlink(a, "s/pid-2"), 0);
	EXPECT(access(ch_path("a", "s/pid-2"), F_OK) != 0);
	EXPECT_EQ_INT(sq_replayed, how == REUSE_ADOPTED);
	if (how == REUSE_ADOPTED)
		pohm_cache_close(sq_replayer);
	/* The deferred record still removes pid-0 from the storage. */
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a, 0, NULL), how == REUSE_ADOPTED ? 0 : 1);
	EXPECT_EQ_INT(stored("c", gone, 2), 0);
	pohm_cache_close(a);
}

TEST(an_unlink_of_a_new_file_on_a_deferred_removals_local_number_removes_it)
{
	unlink_on_a_reused_number(REUSE_PLAIN);
}

/* The same, after pohmelfsd's replay of pid-2's write record re-hinted the
 * reused number's record to pid-2: pid-2 is born after the record saw its
 * file, so not the inode's own copy (cachens.c own_copy_unpushed). */
TEST(an_unlink_of_a_new_file_on_a_rehinted_reused_number_removes_it)
{
	unlink_on_a_reused_number(REUSE_REHINTED);
}

/* The same, with pid-2 adopted (a stored pid-2, a record on its number)
 * between the unlink's look in the storage and its local unlink: the
 * unlink's drop_if_adopted removes the adopted name although the index
 * had guessed pid-0's inode (review of s20-sigcap2: it was skipped then). */
TEST(an_unlink_of_a_file_on_a_reused_number_adopted_meanwhile_leaves_the_storage)
{
	unlink_on_a_reused_number(REUSE_ADOPTED);
}

/*
 * A bounded replay (the exit's, no paths) deferred P s/x; another process
 * of host a, past its first drain (it never replays again), opens s/x: its
 * walk asked the storage for the name the handler removed here and fetched
 * it back; the later replay found s/x present locally and still stored,
 * took it for the local truth and dropped the record: the removal lost for
 * good (review of s20-sigcap2, HIGH 2).  A walk that asks the storage for
 * a name it lacks locally first applies the queue's records that name
 * needs, whichever process left them (pohm_cache_sigq_absent).
 */
static void deferred_removal_then_another_process(const char *rel, unsigned flags)
{
	static const char *const gone[] = { "s/x" };
	struct pohm_sigq_bound bd = { { NULL, NULL }, 0, 0, 0 };
	struct pohm_cache *a, *a3;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	handler_removed(a, "s/x");
	EXPECT_EQ_INT(pohm_cache_sigq_replay_for(a, &bd, NULL), 0);	/* the exit's: deferred */
	EXPECT_EQ_INT(bd.deferred, 1);
	pohm_cache_close(a);
	a3 = ch_host("a");	/* another process, no replay of its own */
	EXPECT(a3 != NULL);
	pohm_cache_set_absent_fn(a3, pohm_cache_sigq_absent);	/* as core/mount/host.c */
	EXPECT_EQ_INT(pohm_cache_materialize(a3, rel, flags), 0);
	EXPECT(access(ch_path("a", "s/x"), F_OK) != 0);
	EXPECT_EQ_INT(stored("c", gone, 1), 0);
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a3, 0, NULL), 0);	/* nothing left */
	pohm_cache_close(a3);
}

TEST(a_deferred_removal_is_applied_before_another_process_asks_the_storage_for_the_name)
{
	deferred_removal_then_another_process("s/x", POHM_MAT_DATA);
}

/* The same through a listing of s (ls, a glob): x must not come back as a stub. */
TEST(a_deferred_removal_is_applied_before_another_process_lists_its_directory)
{
	deferred_removal_then_another_process("s", POHM_MAT_LIST);
}

/*
 * The same through a create (the shell's `echo >> s/x` after the program
 * whose handler removed s/x): the storage's create found the old s/x and
 * the create fetched it back to be appended to.  A create that finds a
 * stored name absent here applies its queued records and asks again: a
 * new, empty s/x (O_EXCL: made, not EEXIST).
 */
static void deferred_removal_then_create(int excl)
{
	struct pohm_sigq_bound bd = { { NULL, NULL }, 0, 0, 0 };
	struct pohm_cache *a, *a3, *c;
	struct stat st;

	ch_setup();
	a = ch_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "s", 0755), 0);
	handler_removed(a, "s/x");	/* stored with "x" */
	EXPECT_EQ_INT(pohm_cache_sigq_replay_for(a, &bd, NULL), 0);
	EXPECT_EQ_INT(bd.deferred, 1);
	pohm_cache_close(a);
	a3 = ch_host("a");
	EXPECT(a3 != NULL);
	pohm_cache_set_absent_fn(a3, pohm_cache_sigq_absent);	/* as core/mount/host.c */
	EXPECT_EQ_INT(pohm_cache_create(a3, "s/x", 0644, excl), 0);	/* made, not found */
	EXPECT(stat(ch_path("a", "s/x"), &st) != 0 || st.st_size == 0);
	EXPECT_EQ_INT(pohm_cache_sigq_replay(a3, 0, NULL), 0);	/* nothing left */
	pohm_cache_close(a3);
	c = ch_host("c");
	EXPECT(c != NULL);
	EXPECT_EQ_INT(pohm_cache_materialize(c, "s/x", POHM_MAT_DATA), 0);
	EXPECT_EQ_INT(stat(ch_path("c", "s/x"), &st), 0);
	EXPECT_EQ_INT((int)st.st_size, 0);	/* the new file, not the removed one */
	pohm_cache_close(c);
}

TEST(a_deferred_removal_is_applied_before_another_process_creates_the_name)
{
	deferred_removal_then_create(0);
}

TEST(a_deferred_removal_is_applied_before_another_process_creates_the_name_exclusively)
{
	deferred_removal_then_create(1);
}
