/*
 * shim.h — what every wrapper in preload/ needs: the real table, light
 * initialisation, path classification and the one place errno is set.
 *
 * A wrapper is a handful of lines: pohm_enter(); classify; hand off to
 * core/ (under the prefix) or call pohm_real.<name> (everything else).
 */
#ifndef POHM_PRELOAD_SHIM_H
#define POHM_PRELOAD_SHIM_H

#include <errno.h>

#include "real.h"

/* Per-thread nesting depth: > 0 while the shim itself runs (its own file
 * calls, symbol resolution).  Thread-local, so no lock. */
extern __thread int pohm_depth;

/* Light init (real table, config, prefix): idempotent, cheap after the
 * first call.  Returns 0, or < 0 when this thread is inside the shim's own
 * initialisation; the wrapper must then use pohm_fallback_* or fail. */
int pohm_enter(void);

/* 1 if (dirfd, path) names something under the configured prefix, else 0.
 * Lexical, no syscall and no allocation for absolute paths outside it. */
int pohm_classify(int dirfd, const char *path);

/* The preload boundary: r < 0 → errno = -r, return -1; else return r. */
static inline int pohm_ret(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

/* Raw-syscall versions used only while the real table is being resolved. */
int pohm_fallback_openat(int dirfd, const char *path, int flags, mode_t mode);
int pohm_fallback_fstatat(int dirfd, const char *path, struct stat *st, int flags);

#endif
