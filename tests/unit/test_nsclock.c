/*
 * test_nsclock.c — the namespace's waits while the real-time clock steps
 * back (an NTP correction; session 16, doc/notes-s16-noticed.md item 5).
 *
 * A time that comes from elsewhere (another host's intent or seal stamp)
 * may be ahead of the reader's clock; session 15 made every age of one
 * count such a time as young (`t > now || now - t < timeout`).  A wait
 * measured on the writer's own real-time clock has the same wrap when the
 * clock steps back during it: `now - t0` is then near 2^64, and the wait
 * ended at once.  This file's clock_gettime stands in for libc's (the
 * core objects are linked into this binary, so pohm_sys_real_ns reads
 * it) and moves CLOCK_REALTIME back on request.  It also stands in for a
 * stall: the clocks that do not step (CLOCK_MONOTONIC, CLOCK_BOOTTIME)
 * move forward by stall_ns, CLOCK_REALTIME by stall_ns - back_ns.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kv.h"
#include "ns.h"
#include "nsobj.h"
#include "ns_int.h"
#include "sys.h"

/* ns subtracted from CLOCK_REALTIME; ns added to every clock (atomic). */
static int64_t back_ns, stall_ns;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t b = __atomic_load_n(&back_ns, __ATOMIC_RELAXED);
	int64_t s = __atomic_load_n(&stall_ns, __ATOMIC_RELAXED);
	long r = syscall(SYS_clock_gettime, id, ts);

	if (id != CLOCK_REALTIME && id != CLOCK_MONOTONIC && id != CLOCK_BOOTTIME)
		return (int)r;
	if (id != CLOCK_REALTIME)
		b = 0;
	if (r == 0 && (s || b)) {
		int64_t t = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + s - b;

		ts->tv_sec = t / 1000000000LL;
		ts->tv_nsec = t % 1000000000LL;
	}
	return (int)r;
}

static struct pohm_kv kv;

struct late {
	struct pohm_ns *ns;
	struct pohm_inode in;
};

/* The create waits for the inode (nsops.c dangling_settle): the clock
 * steps back 5 s, then the inode lands 300 ms later. */
static void *step_back_then_land(void *arg)
{
	struct late *l = arg;

	usleep(20000);
	__atomic_store_n(&back_ns, 5000000000LL, __ATOMIC_RELAXED);
	usleep(300000);
	ns_inode_put(l->ns, &l->in, NULL);
	return NULL;
}

/*
 * An entry whose inode has not landed yet (another host's create in
 * flight) is waited for up to the intent timeout (2 s here), then taken
 * out.  The clock steps back during the wait: the wait goes on, and the
 * create finds the inode when it lands (before: the wait ended at the
 * step, the live entry was taken out and a second file made under it).
 */
TEST(a_create_waiting_for_an_inode_in_flight_waits_on_when_the_clock_steps_back)
{
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = 2000, .chunk_shift = 12 };
	struct pohm_ns *ns = NULL;
	struct pohm_dentry e = { 0 };
	struct pohm_inode in;
	char key[POHM_KEY_MAX];
	struct late l;
	pthread_t t;
	uint64_t d = 0;
	uint8_t type;

	EXPECT_EQ_INT(pohm_kvmem_new(&kv), 0);
	EXPECT_EQ_INT(pohm_ns_open(&ns, &kv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, 1, "d", &d, &type), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "tmp", 0644, 0, 0, 0, 0, &l.in), 0);
	l.ns = ns;
	pohm_key_inode(key, l.in.ino);
	EXPECT_EQ_INT(kv.ops->del(kv.ctx, key), 0);	/* "not landed yet" */
	e.name = (char *)"f";
	e.ino = l.in.ino;
	e.type = DT_REG;
	e.txid = 77;
	EXPECT_EQ_INT(ns_entry_insert(ns, d, &e, NULL), 0);
	pthread_create(&t, NULL, step_back_then_land, &l);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "f", 0644, 0, 0, 0, 0, &in), 1);	/* exists */
	pthread_join(t, NULL);
	EXPECT_EQ_U64(in.ino, l.in.ino);
	pohm_inode_clear(&in);
	pohm_inode_clear(&l.in);
	__atomic_store_n(&back_ns, 0, __ATOMIC_RELAXED);
	pohm_ns_close(ns);
	pohm_kvmem_free(&kv);
}

/* Armed: the renamer stalls between its intent and its commit. */
static int stall_at_intent;

/* Strong over core/sys/sys.c's weak one (no test-kill hooks linked here). */
void pohm_sys_test_kill(enum pohm_test_switch s)
{
	if (s != POHM_TEST_KILL_AT_RENAME_INTENT || !stall_at_intent)
		return;
	stall_at_intent = 0;
	__atomic_add_fetch(&stall_ns, 1200000000LL, __ATOMIC_RELAXED);
	__atomic_add_fetch(&back_ns, 1200000000LL, __ATOMIC_RELAXED);
}

/*
 * Decision 0067: the renamer's commit starts no put later than half the
 * intent timeout (1 s here) after its intent, since a resolver on another
 * host fences the destination after the whole timeout and rolls the
 * intent back.  The renamer stalls 1.2 s between the two while its
 * real-time clock steps back 1.2 s (review LOW 4, session 16): the
 * deadline has passed, the rename answers EIO and its intent goes (before:
 * measured on the real-time clock, which showed no time passing, the
 * commit was sent after the deadline).
 */
TEST(a_rename_across_stalled_past_its_deadline_sends_no_commit_when_the_clock_steps_back)
{
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = 2000, .chunk_shift = 12 };
	struct pohm_ns *ns = NULL;
	struct pohm_inode in;
	uint64_t a = 0, b = 0, ino = 0;
	uint8_t type;

	EXPECT_EQ_INT(pohm_kvmem_new(&kv), 0);
	EXPECT_EQ_INT(pohm_ns_open(&ns, &kv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "a", 0755, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "b", 0755, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, 1, "a", &a, &type), 0);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, 1, "b", &b, &type), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, a, "f", 0644, 0, 0, 0, 0, &in), 0);
	stall_at_intent = 1;
	EXPECT_EQ_INT(pohm_ns_rename(ns, a, "f", b, "f", 0), -EIO);
	EXPECT_EQ_INT(stall_at_intent, 0);	/* the stall happened */
	EXPECT_EQ_INT(pohm_ns_lookup(ns, b, "f", &ino, &type), -ENOENT);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, a, "f", &ino, &type), 0);
	EXPECT_EQ_U64(ino, in.ino);
	/* The source stays whole: the next rename goes through. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, a, "f", b, "f", 0), 0);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, b, "f", &ino, &type), 0);
	EXPECT_EQ_U64(ino, in.ino);
	pohm_inode_clear(&in);
	pohm_ns_close(ns);
	pohm_kvmem_free(&kv);
	__atomic_store_n(&stall_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&back_ns, 0, __ATOMIC_RELAXED);
}
