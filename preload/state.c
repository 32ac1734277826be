/*
 * state.c — the shim's process state, the bottom of preload/ (session 13,
 * issue 20: it broke the preload circle).  The global state (struct
 * pohm_state, shim.h), the per-thread depth and busy counts, hold/unhold,
 * and the words light init writes once for the code above it (vfork's
 * choice, the open-for-write locks the previous image handed over), and
 * in a SAN=thread build the test whether the thread is inside the
 * sanitizer runtime (pohm_san_inside).  It calls no other file: every
 * other file of preload/ reads or writes these, and init.c fills them.
 * The file order, bottom to top, is in doc/ARCHITECTURE.md §4.6.
 */
#include "shim.h"

/* Written by light init (init.c) under pohm_sys_once; shim.h says the rules. */
struct pohm_state pohm_state = { .test_ifd = -1, .utop = POHM_UADDR_HI };
POHM_TLS int pohm_depth;
POHM_TLS int pohm_busy;		/* shim.h */

#if defined(__SANITIZE_THREAD__)
/* The sanitizer runtime's allocator interface (libtsan exports it). */
int __sanitizer_get_ownership(const volatile void *p);

/*
 * shim.h.  ThreadSanitizer marks its symbolizer's thread state only
 * inside itself (ThreadState::in_symbolizer, no interface reads it); what
 * that state changes for us is where malloc goes, so ask exactly that: a
 * malloc(1) the user allocator does not own came from TSan's internal
 * one.  ~80 ns under TSan; called only where the shim would do work of
 * its own (pohm_active's last test, pohm_fd_forget).
 */
int pohm_san_inside(void)
{
	int saved = errno, r;
	void *p = malloc(1);

	r = p && !__sanitizer_get_ownership(p);
	free(p);
	errno = saved;
	return r;
}
#endif

void pohm_hold(void)
{
	pohm_depth++;
}

void pohm_unhold(void)
{
	pohm_depth--;
}

/* 1 once light init found a prefix: vfork is then fork (exec.c says why). */
POHM_HIDDEN int pohm_vfork_forks;

/* Written by light init (handoff.c's pohm_fd_adopt_env), read by the
 * storage hooks (hooks_cache.c) when the cache opens; shim.h. */
struct pohm_wlock_in pohm_wlocks_in[POHM_WLOCK_MAX];
int pohm_nwlocks_in;
