/*
 * state.c — the shim's process state, the bottom of preload/ (session 13,
 * issue 20: it broke the preload circle).  The global state (struct
 * pohm_state, shim.h), the per-thread depth and busy counts, hold/unhold,
 * and the words light init writes once for the code above it (vfork's
 * choice, the open-for-write locks the previous image handed over).  It
 * calls nothing: every other file of preload/ reads or writes these, and
 * init.c fills them.  The file order, bottom to top, is in
 * doc/ARCHITECTURE.md §4.6.
 */
#include "shim.h"

/* Written by light init (init.c) under pthread_once; shim.h says the rules. */
struct pohm_state pohm_state = { .test_ifd = -1 };
POHM_TLS int pohm_depth;
POHM_TLS int pohm_busy;		/* shim.h */

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
