/*
 * test_reallazy.c — preload/real.c and real_lazy.c: the real-function
 * table is callable after pohm_real_init, and on x86-64 an entry is looked
 * up only at its first call (issue 23: resolving all ~200 at every start
 * was 44 000 instructions of /bin/true's).  The first call through a
 * stand-in must reach the real function with the caller's arguments
 * intact (a variadic one's mode, six integer arguments), from many threads
 * at once and from a signal handler, and leave the entry pointing at the
 * function dlsym(RTLD_NEXT) names.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "harness.h"
#include "real.h"

typedef void (*real_fn)(void);
#define N_ENTRIES (sizeof(struct pohm_real) / sizeof(real_fn))

static real_fn entry(size_t i)
{
	return __atomic_load_n((real_fn *)(void *)&pohm_real + i, __ATOMIC_RELAXED);
}

/* Is f one of the stand-ins? */
static int is_stand_in(real_fn f)
{
#if POHM_REAL_LAZY
	uintptr_t a = (uintptr_t)(void *)f, s = (uintptr_t)pohm_real_lazy_stubs;

	return a >= s && a < s + N_ENTRIES * POHM_REAL_STUB_SIZE;
#else
	(void)f;
	return 0;
#endif
}

static size_t stand_ins(void)
{
	size_t i, n = 0;

	for (i = 0; i < N_ENTRIES; i++)
		n += is_stand_in(entry(i));
	return n;
}

static char dir[] = "/tmp/test_reallazy.XXXXXX";

TEST(init_resolves_nothing_on_x86_64)
{
	EXPECT(mkdtemp(dir) != NULL);
	pohm_real_init();
	pohm_real_init();	/* idempotent */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(POHM_REAL_TSAN)
	EXPECT(POHM_REAL_LAZY);
	EXPECT_EQ_INT(stand_ins(), N_ENTRIES);
#else
	EXPECT_EQ_INT(stand_ins(), 0);
	SKIP("entries resolved at init on this build");
#endif
}

TEST(a_first_call_passes_its_arguments_and_binds_the_entry)
{
	char p[64];
	struct stat st;
	size_t before = stand_ins();
	int fd;

	snprintf(p, sizeof(p), "%s/f", dir);
	umask(0);
	/* Variadic: the mode is the fourth argument (and %al counts vector
	 * registers, which the stand-in must keep). */
	fd = pohm_real.openat(AT_FDCWD, p, O_CREAT | O_WRONLY | O_EXCL, 0641);
	EXPECT(fd >= 0);
	EXPECT((void *)pohm_real.openat == dlsym(RTLD_NEXT, "openat"));
	EXPECT_EQ_INT(pohm_real.fstat(fd, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0641);
	EXPECT_EQ_INT(pohm_real.close(fd), 0);
	EXPECT_EQ_INT(pohm_real.close(fd), -1);	/* the real close's errno */
	EXPECT_EQ_INT(errno, EBADF);
	if (POHM_REAL_LAZY)
		EXPECT_EQ_INT(stand_ins(), before - 3);
}

TEST(six_integer_arguments_reach_the_function)
{
	void *m;

	/* mmap: six arguments, the last in %r9. */
	m = pohm_real.mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(m != MAP_FAILED);
	if (m != MAP_FAILED) {
		((char *)m)[8191] = 1;
		EXPECT_EQ_INT(munmap(m, 8192), 0);
	}
	EXPECT((void *)pohm_real.mmap == dlsym(RTLD_NEXT, "mmap"));
}

/* Threads that make the same entry's first call together. */
static pthread_barrier_t go;

static void *stat_thread(void *arg)
{
	struct stat st;
	long ok = 0;
	int i;

	(void)arg;
	pthread_barrier_wait(&go);
	for (i = 0; i < 100; i++)
		ok += pohm_real.lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	return (void *)ok;
}

TEST(threads_race_to_the_same_first_call)
{
	pthread_t t[8];
	void *ok;
	int i;

	pthread_barrier_init(&go, NULL, 8);
	for (i = 0; i < 8; i++)
		EXPECT_EQ_INT(pthread_create(&t[i], NULL, stat_thread, NULL), 0);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ_INT(pthread_join(t[i], &ok), 0);
		EXPECT_EQ_INT((long)ok, 100);
	}
	pthread_barrier_destroy(&go);
	EXPECT((void *)pohm_real.lstat == dlsym(RTLD_NEXT, "lstat"));
}

static volatile sig_atomic_t handler_said;

static void on_usr1(int sig)
{
	(void)sig;
	handler_said = pohm_real.access(dir, F_OK) == 0 ? 1 : 2;
}

TEST(a_first_call_from_a_signal_handler)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	EXPECT_EQ_INT(sigaction(SIGUSR1, &sa, NULL), 0);
	EXPECT_EQ_INT(raise(SIGUSR1), 0);
	EXPECT_EQ_INT(handler_said, 1);
	EXPECT((void *)pohm_real.access == dlsym(RTLD_NEXT, "access"));
}

TEST(cleanup)
{
	char p[64];

	snprintf(p, sizeof(p), "%s/f", dir);
	EXPECT_EQ_INT(unlink(p), 0);
	EXPECT_EQ_INT(rmdir(dir), 0);
}
