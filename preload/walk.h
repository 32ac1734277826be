/*
 * walk.h — what the tree walks of preload/ share (walk_ftw.c, walk_fts.c,
 * walk_scan.c, realpath.c).
 *
 * glibc's nftw, fts, scandir, glob and realpath reach the kernel through
 * internal calls that no wrapper sees, so under the prefix they would read
 * stubs (core/cache/stub.h: mode-000 sockets) and miss entries of directories not listed yet.
 * Our versions of them do every step through our own wrappers (opendir,
 * readdir, fstatat, readlink, chdir...), which materialize and overlay as
 * any program's calls do.  Outside the prefix the wrappers hand off to
 * glibc's own functions, so behaviour there is identical.
 */
#ifndef POHM_PRELOAD_WALK_H
#define POHM_PRELOAD_WALK_H

#include <fts.h>
#include <stddef.h>

/*
 * 1 when a walk rooted at (dirfd, path) may meet the prefix: the root is
 * under it, or is one of its ancestors ("/", or the prefix's parent).
 * 0 for anything else, and when the shim is not active.
 */
int pohm_walk_ours(int dirfd, const char *path);

/*
 * The host's allocator, for memory the caller frees with its own free()
 * (scandir's list, realpath(p, NULL)): our own malloc is the private one.
 * Resolved on first use.  NULL/ENOMEM as malloc does.
 */
void *pohm_host_malloc(size_t n);
void *pohm_host_realloc(void *p, size_t n);
void pohm_host_free(void *p);

/*
 * The fts walk of walk_fts.c, on our wrappers; walk_ftsapi.c exports it.
 * Each behaves as glibc's function of the same name (errno included).
 */
FTS *pohm_fts_open(char *const *roots, int opts, int (*cmp)(const FTSENT **, const FTSENT **));
FTSENT *pohm_fts_read(FTS *sp);
FTSENT *pohm_fts_children(FTS *sp, int instr);
int pohm_fts_set(FTSENT *e, int instr);
int pohm_fts_close(FTS *sp);

#endif
