/*
 * thread.c — pthread_create, thrd_create: the library's allocator is
 * initialised before the process first becomes multi-threaded (issue 8,
 * doc/NOTES.md).
 *
 * The private jemalloc is linked without its constructor (Makefile,
 * jemalloc_lazy.a) and initialises on the library's first allocation.  A
 * fork by one thread while another runs that initialisation leaves the
 * child with jemalloc's init lock held by a thread that does not exist
 * there: the child's first allocation through the library (an open under
 * the prefix records the fd) waits for ever.  jemalloc registers its own
 * fork handlers during that same initialisation, so they cannot cover it.
 * Warming the allocator here, in the thread that calls pthread_create and
 * before the new thread exists, leaves no second thread to race with it.
 *
 * Cost: no prefix configured, one load and a tail call (nothing
 * allocated); a prefix, one malloc and free at the first pthread_create.
 * A single-threaded program pays nothing.  In a sanitizer build the
 * library allocates with the sanitizer's malloc, which is warmed the same
 * way (harmless: it initialised at start).  Threads that glibc creates
 * without calling pthread_create through the PLT (SIGEV_THREAD
 * timers and mq_notify, aio, getaddrinfo_a) bypass this (libpohmelfs(7)
 * LIMITS); thrd_create, which calls glibc's internal pthread_create, has
 * its own wrapper here.
 */
#include "shim.h"

#include <pthread.h>
#include <threads.h>
#include <stdlib.h>

/*
 * 1 once this file has warmed the allocator.  Written once per process
 * (relaxed store) by the first thread that warms; two threads that race
 * there (possible only when threads exist already) both warm, which is
 * harmless, so no lock guards it.
 */
static int alloc_warm;

/* One allocation and free through the library's allocator, errno kept
 * (jemalloc's first run looks for /etc/malloc.conf and fails ENOENT). */
static __attribute__((noinline, cold)) void alloc_warm_up(void)
{
	int saved = errno;
	void *p = malloc(1);

	__asm__ volatile("" : : "r"(p) : "memory");	/* keep the pair */
	free(p);
	__atomic_store_n(&alloc_warm, 1, __ATOMIC_RELAXED);
	errno = saved;
}

/* Before a thread is created: warm the allocator if the shim is on. */
static inline void before_thread(void)
{
	pohm_init();
	if (__builtin_expect(pohm_state.on && !__atomic_load_n(&alloc_warm, __ATOMIC_RELAXED), 0))
		alloc_warm_up();
}

POHM_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			       void *(*start)(void *), void *arg)
{
	before_thread();
	return pohm_real.pthread_create(thread, attr, start, arg);
}

/* C11 threads: glibc's thrd_create calls its internal pthread_create, not ours. */
POHM_EXPORT int thrd_create(thrd_t *thr, thrd_start_t func, void *arg)
{
	before_thread();
	return pohm_real.thrd_create(thr, func, arg);
}
