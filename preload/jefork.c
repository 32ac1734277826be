/*
 * jefork.c — the private jemalloc's fork handlers run only when the
 * process may have another thread (issue 23: the /bin/true loop).
 *
 * jemalloc registers pthread_atfork handlers when it initialises: before
 * a fork they lock every mutex it has (each arena's bins, extents, decay,
 * base, ctl, prof ...), after it the parent unlocks them all and the child
 * makes them new.  That keeps a child from inheriting a lock another
 * thread held at the fork.  A shell that touched the prefix (a configure
 * script in a directory under it) has jemalloc initialised, and each of
 * its forks then wrote to some thirty pages of jemalloc's mutexes in the
 * parent and the child alike: ~50 page faults per fork, most of what a
 * shell under the shim added to starting a program.
 *
 * When the forking process is single-threaded (glibc's
 * __libc_single_threaded: false from the first thread it created, glibc's
 * own SIGEV_THREAD, aio and getaddrinfo_a threads included) no other
 * thread can hold one of those locks, and locking them all protects
 * nothing; the forking thread itself holds none outside a call into
 * jemalloc, and the library does not fork from there.  So the library
 * links jemalloc with its call to pthread_atfork renamed to
 * pohm_je_atfork (Makefile, jemalloc_lazy.a), which registers jemalloc's
 * handlers behind a test, at the same point and in the same order as
 * jemalloc did.  A thread made with a raw clone, which glibc does not
 * count, is not seen (libpohmelfs(7) LIMITS already says such threads are
 * outside the allocator's warm-up, preload/thread.c).
 *
 * Not used in a sanitizer build (no private jemalloc).
 */
#include "shim.h"

#include <pthread.h>
#include <sys/single_threaded.h>

int pohm_je_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/*
 * jemalloc's handlers: written once, by jemalloc's initialisation (under
 * its init lock) before it registers the three below; read only by them.
 */
static void (*je_prepare)(void), (*je_parent)(void), (*je_child)(void);

/* 1 while this thread forks with jemalloc's locks taken: set by the
 * prepare handler, read after the fork by the same thread (parent or
 * child).  Per thread: two threads may fork at once. */
static POHM_TLS int je_locked;

static void prepare(void)
{
	je_locked = !__libc_single_threaded;
	if (je_locked)
		je_prepare();
}

/* je_locked is written back only when it was set: a single-threaded
 * process's fork child writes no page of its thread-locals here. */
static void parent(void)
{
	if (je_locked) {
		je_parent();
		je_locked = 0;
	}
}

static void child(void)
{
	if (je_locked) {
		je_child();
		je_locked = 0;
	}
}

int pohm_je_atfork(void (*p)(void), void (*pa)(void), void (*c)(void))
{
	je_prepare = p;
	je_parent = pa;
	je_child = c;
	return pthread_atfork(prepare, parent, child);
}
