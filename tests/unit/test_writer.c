/* test_writer.c — core/cache/writer.c: "open for write" and "pohmelfsd
 * runs" as OFD locks the kernel releases (decision 0016), on a cache over
 * an in-memory store.  Processes play the writers: a lock must outlive
 * nothing that holds it and survive nothing that does not. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_int.h"
#include "harness.h"
#include "kv.h"

static struct pohm_kv kv;
static const char *root;	/* th_scratch's directory */
static char cdir[512];

static struct pohm_cache *open_cache(void)
{
	struct pohm_cache_opts o = { 0 };
	struct pohm_cache *c = NULL;
	char prefix[512], err[512];
	int r;

	if (!root) {
		root = th_scratch("writer");
		pohm_kvmem_new(&kv);
	}
	snprintf(prefix, sizeof(prefix), "%s/prefix", root);
	snprintf(cdir, sizeof(cdir), "%s/state", root);
	o.prefix = prefix;
	o.cache_dir = cdir;
	o.fsid = "t";
	o.host_id = "a";
	o.kv = &kv;
	o.chunk_shift = 12;
	r = pohm_cache_open(&c, &o, err, sizeof(err));
	if (r)
		printf("# open: %d %s\n", r, err);
	return c;
}

/* A child that takes ino's writer lock (keep_on_exec as given), says so on
 * the pipe, then runs argv (exec) or sleeps; its pid. */
static pid_t child_writer(uint64_t ino, int keep, char *const *argv, int *ready)
{
	int p[2];
	pid_t pid;
	char b = 0;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct pohm_cache *c = open_cache();

		close(p[0]);
		if (!c || pohm_cache_writer_open(c, ino, 1, ino, keep))
			_exit(3);
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		if (argv)
			execv(argv[0], argv);
		for (;;)
			pause();
	}
	close(p[1]);
	*ready = read(p[0], &b, 1) == 1;
	close(p[0]);
	return pid;
}

static int held_none(void *arg, uint64_t ldev, uint64_t lino)
{
	return lino == *(uint64_t *)arg;
}

TEST(a_writer_lock_lives_as_long_as_the_writer)
{
	struct pohm_cache *c = open_cache();
	int ready, st;
	pid_t pid;

	EXPECT(c != NULL);
	EXPECT_EQ_INT(pohm_cache_writers_any(c), 0);
	pid = child_writer(0x1234, 0, NULL, &ready);
	EXPECT_EQ_INT(ready, 1);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x1234), 1);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x1235), 0);
	EXPECT_EQ_INT(pohm_cache_writers_any(c), 1);
	/* SIGKILL: no close, no destructor; the kernel drops the lock. */
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x1234), 0);
	EXPECT_EQ_INT(pohm_cache_writers_any(c), 0);
	pohm_cache_close(c);
}

TEST(close_drops_it_and_a_second_open_shares_it)
{
	struct pohm_cache *c = open_cache();

	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0x77, 5, 9, 0), 0);
	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0x77, 5, 9, 0), 0);
	EXPECT_EQ_INT(pohm_cache_writer_count(c), 1);
	/* Another open file description of this very process sees it: the
	 * daemon's question works from anywhere. */
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x77), 1);
	pohm_cache_writer_close(c, 5, 9);
	EXPECT_EQ_INT(pohm_cache_writer_count(c), 0);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x77), 0);
	pohm_cache_close(c);
}

TEST(a_writable_mapping_keeps_it_past_the_close)
{
	struct pohm_cache *c = open_cache();
	uint64_t none = 0;

	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0x66, 5, 11, 0), 0);
	pohm_cache_writer_mapped(c, 5, 11);
	pohm_cache_writer_close(c, 5, 11);
	EXPECT_EQ_INT(pohm_cache_writer_sweep(c, held_none, &none), 0);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x66), 1);
	pohm_cache_close(c);	/* the process's end */
	c = open_cache();
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x66), 0);
	pohm_cache_close(c);
}

TEST(a_fork_child_shares_the_lock)
{
	struct pohm_cache *c = open_cache();
	int p[2], st;
	pid_t pid;
	char b;

	/* A lock fd given back before: the one below is a kept description. */
	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0x87, 5, 12, 0), 0);
	pohm_cache_writer_close(c, 5, 12);
	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0x88, 5, 10, 0), 0);
	EXPECT_EQ_INT(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		pohm_cache_atfork_child(c);	/* the shim's fork handler's part */
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		sleep(30);
		_exit(0);
	}
	close(p[1]);
	EXPECT_EQ_INT(read(p[0], &b, 1), 1);
	close(p[0]);
	/* The parent lets go (its description back to the keep, unlocked);
	 * the child, which inherited the writing fd too, still holds the
	 * inode open for write on a description of its own. */
	pohm_cache_writer_close(c, 5, 10);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x88), 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x88), 0);
	pohm_cache_close(c);
}

TEST(the_lock_follows_the_writing_fd_across_exec)
{
	struct pohm_cache *c = open_cache();
	char *sleep_argv[] = { "/bin/sleep", "30", NULL };
	int ready, st;
	pid_t pid;

	/* Inheritable writer (no O_CLOEXEC: `sh -c 'echo hi' > f`): held by the new image. */
	pid = child_writer(0x99, 1, sleep_argv, &ready);
	EXPECT_EQ_INT(ready, 1);
	usleep(200000);	/* past the exec */
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x99), 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x99), 0);
	/* O_CLOEXEC writer: its fd, and the lock, end at exec. */
	pid = child_writer(0x9a, 0, sleep_argv, &ready);
	EXPECT_EQ_INT(ready, 1);
	usleep(200000);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0x9a), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	pohm_cache_close(c);
}

TEST(a_sweep_drops_locks_of_files_no_fd_holds)
{
	struct pohm_cache *c = open_cache();
	uint64_t keep = 21;

	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0xa1, 5, 20, 0), 0);
	EXPECT_EQ_INT(pohm_cache_writer_open(c, 0xa2, 5, 21, 0), 0);
	EXPECT_EQ_INT(pohm_cache_writer_sweep(c, held_none, &keep), 1);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0xa1), 0);
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0xa2), 1);
	EXPECT_EQ_INT(pohm_cache_writer_count(c), 1);
	pohm_cache_close(c);	/* closing the cache lets go of the rest */
	c = open_cache();
	EXPECT_EQ_INT(pohm_cache_writer_alive(c, 0xa2), 0);
	pohm_cache_close(c);
}

TEST(pohmelfsd_liveness_is_its_lock)
{
	struct pohm_cache *c = open_cache();
	char p[600], line[32];
	int fd, lk, st;
	pid_t pid;

	EXPECT_EQ_INT(pohm_cache_daemon_running(c), 0);
	EXPECT_EQ_INT(pohm_cache_daemon_alive(cdir), 0);
	/* A pid file naming a live process is not enough. */
	snprintf(p, sizeof(p), "%s/pohmelfsd.pid", cdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	snprintf(line, sizeof(line), "%d\n", (int)getpid());
	EXPECT_EQ_INT(write(fd, line, strlen(line)), (int)strlen(line));
	close(fd);
	EXPECT_EQ_INT(pohm_cache_daemon_pid(cdir), 0);
	/* A "daemon" child holds the lock: running, and the pid file counts. */
	pid = fork();
	if (pid == 0) {
		if (pohm_cache_daemon_lock(cdir) < 0)
			_exit(3);
		for (;;)
			pause();
	}
	for (st = 0; st < 100 && !pohm_cache_daemon_running(c); st++)
		usleep(10000);
	EXPECT_EQ_INT(pohm_cache_daemon_running(c), 1);
	EXPECT_EQ_INT(pohm_cache_daemon_pid(cdir), (int)getpid());
	lk = pohm_cache_daemon_lock(cdir);
	EXPECT_EQ_INT(lk, -EAGAIN);	/* only one */
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	EXPECT_EQ_INT(pohm_cache_daemon_running(c), 0);
	EXPECT_EQ_INT(pohm_cache_daemon_pid(cdir), 0);
	lk = pohm_cache_daemon_lock(cdir);
	EXPECT(lk >= 0);
	close(lk);
	pohm_cache_close(c);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

TEST(a_request_for_room_goes_through_the_wake_fifo_not_a_pid)
{
	struct pohm_cache *c = open_cache();
	char buf[32];
	int wfd;

	EXPECT_EQ_INT(pohm_cache_daemon_ask_room(c, 7), -ESRCH);	/* no FIFO */
	wfd = pohm_cache_daemon_wake_open(cdir);
	EXPECT(wfd >= 0);
	EXPECT_EQ_INT(pohm_cache_daemon_ask_room(c, 7), 0);
	EXPECT_EQ_INT(pohm_cache_daemon_ask_room(c, 12), 0);
	EXPECT_EQ_INT(read(wfd, buf, sizeof(buf)), 5);
	EXPECT_MEM(buf, "7\n12\n", 5);
	close(wfd);
	/* The daemon gone: nobody reads, the asker hears so at once. */
	EXPECT_EQ_INT(pohm_cache_daemon_ask_room(c, 7), -ESRCH);
	pohm_cache_close(c);
}

TEST(a_push_turn_is_waited_for_and_dies_with_its_holder)
{
	struct pohm_cache *c = open_cache();
	int p[2], st;
	pid_t holder, killer;
	uint64_t t0;
	char b;

	EXPECT_EQ_INT(pipe(p), 0);
	holder = fork();
	if (holder == 0) {
		struct pohm_cache *hc = open_cache();

		if (!hc || cache_push_turn_take(hc, 0x4242) != 1)
			_exit(3);
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	EXPECT_EQ_INT(read(p[0], &b, 1), 1);
	close(p[0]);
	/* Another inode's turn is free meanwhile. */
	EXPECT_EQ_INT(cache_push_turn_take(c, 0x4243), 1);
	cache_push_turn_drop(c, 0x4243);
	killer = fork();
	if (killer == 0) {
		usleep(300000);
		kill(holder, SIGKILL);
		_exit(0);
	}
	/* Waits for the holder (not the 30 s give-up), then gets it when the
	 * holder dies mid-push: no marker to break, nothing left behind. */
	t0 = now_ms();
	EXPECT_EQ_INT(cache_push_turn_take(c, 0x4242), 1);
	EXPECT(now_ms() - t0 >= 250);
	EXPECT(now_ms() - t0 < 10000);
	/* This thread holds it: a nested take does not wait for itself. */
	EXPECT_EQ_INT(cache_push_turn_take(c, 0x4242), 0);
	cache_push_turn_drop(c, 0x4242);
	waitpid(holder, &st, 0);
	waitpid(killer, &st, 0);
	pohm_cache_close(c);
}

TEST(a_fork_child_s_push_turn_is_its_own)
{
	struct pohm_cache *c = open_cache();
	int p[2], st;
	pid_t holder, killer;
	uint64_t t0;
	char b;

	/* A turn taken and given back: its description is kept for the next. */
	EXPECT_EQ_INT(cache_push_turn_take(c, 0x5151), 1);
	cache_push_turn_drop(c, 0x5151);
	EXPECT_EQ_INT(pipe(p), 0);
	holder = fork();
	if (holder == 0) {
		/* The shim's fork handler: the kept descriptions are the
		 * parent's too, the child's turns must be its own. */
		pohm_cache_atfork_child(c);
		if (cache_push_turn_take(c, 0x5252) != 1)
			_exit(3);
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	EXPECT_EQ_INT(read(p[0], &b, 1), 1);
	close(p[0]);
	killer = fork();
	if (killer == 0) {
		usleep(300000);
		kill(holder, SIGKILL);
		_exit(0);
	}
	/* The child holds the turn: the parent waits for it (on a shared
	 * description it would have been granted at once). */
	t0 = now_ms();
	EXPECT_EQ_INT(cache_push_turn_take(c, 0x5252), 1);
	EXPECT(now_ms() - t0 >= 250);
	cache_push_turn_drop(c, 0x5252);
	waitpid(holder, &st, 0);
	waitpid(killer, &st, 0);
	pohm_cache_close(c);
}

TEST(a_create_in_flight_is_marked_until_its_creator_dies)
{
	struct pohm_cache *c = open_cache();
	int p[2], st;
	pid_t pid;
	char b;

	EXPECT_EQ_INT(cache_create_marked(c, 1, "made"), 0);
	EXPECT_EQ_INT(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		struct pohm_cache *cc = open_cache();

		/* The storage insert done, the local open not yet: killed here. */
		if (!cc || pohm_cache_create(cc, "made", 0644, 1) < 0)
			_exit(3);
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	EXPECT_EQ_INT(read(p[0], &b, 1), 1);
	close(p[0]);
	EXPECT_EQ_INT(cache_create_marked(c, 1, "made"), 1);
	EXPECT_EQ_INT(cache_create_marked(c, 1, "other"), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	/* No pid to check, no age to wait for: the next listing makes the name. */
	EXPECT_EQ_INT(cache_create_marked(c, 1, "made"), 0);
	pohm_cache_close(c);
}

TEST(a_reused_pid_keeps_no_create_marked)
{
	struct pohm_cache *c = open_cache();
	const char *n = "ghost";
	uint64_t h = 0xcbf29ce484222325ULL;
	char path[700], line[32];
	int fd;

	/* A creator killed after writing a mark of the earlier format, its
	 * pid since reused by a live process (here: ours). */
	for (; *n; n++)
		h = (h ^ (uint8_t)*n) * 0x100000001b3ULL;
	snprintf(path, sizeof(path), "%s/p", cdir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/p/1.c%016llx", cdir, (unsigned long long)h);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	snprintf(line, sizeof(line), "%d\n", (int)getpid());
	EXPECT_EQ_INT(write(fd, line, strlen(line)), (int)strlen(line));
	close(fd);
	EXPECT_EQ_INT(cache_create_marked(c, 1, "ghost"), 0);
	pohm_cache_close(c);
}


/* A description lent across a fork (another thread forked, or a signal
 * handler did, while this one held a push turn or create mark) is the
 * child's too: the child closes only the kept ones.  Given back after the
 * fork, it must be closed, not kept and lent again, or every later lock on
 * it would be the child's copy's too (decision 0065, review 2). */
TEST(a_description_lent_across_a_fork_is_not_lent_again)
{
	struct pohm_cache *c = open_cache();
	struct flock fl;
	unsigned gen;
	int fd, copy;

	fd = cache_lockfd_take(c, CACHE_LF_P, &gen);
	EXPECT(fd >= 0);
	copy = dup(fd);	/* the fork child's copy of the lent description */
	EXPECT(copy >= 0);
	pohm_cache_fork_mark();	/* the fork handlers' count, while it is lent */
	cache_lockfd_give(c, CACHE_LF_P, fd, gen);
	fd = cache_lockfd_take(c, CACHE_LF_P, &gen);
	EXPECT(fd >= 0);
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 77;
	fl.l_len = 1;
	EXPECT_EQ_INT(fcntl(fd, F_OFD_SETLK, &fl), 0);
	/* The child's copy must not share the new holder's lock. */
	EXPECT_EQ_INT(fcntl(copy, F_OFD_SETLK, &fl), -1);
	EXPECT_EQ_INT(errno, EAGAIN);
	cache_lockfd_give(c, CACHE_LF_P, fd, gen);
	close(copy);
	pohm_cache_close(c);
}
