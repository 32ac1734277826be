/*
 * real.h — the table of real libc functions, resolved once.
 *
 * pohm_real.<name> points at the next definition of <name> after ours
 * (dlsym(RTLD_NEXT), or dlvsym with the base glibc version for symbols
 * that are compat-only in this libc).  pohm_real_init() fills it under
 * pthread_once, from light init; until an entry is resolved it holds a
 * raw-syscall fallback (open, stat, readlink, close families: what dlsym
 * or the allocator may need meanwhile) or a stub that fails with ENOSYS,
 * never NULL, so a wrapper can always call through it.  A symbol this libc
 * lacks keeps its ENOSYS stub (logged at debug level).
 */
#ifndef POHM_PRELOAD_REAL_H
#define POHM_PRELOAD_REAL_H

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <glob.h>
#include <linux/capability.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/types.h>
#include <threads.h>
#include <utime.h>

#define SYM(ret, name, args) ret (*name) args;
#define SYMV(ret, name, args) ret (*name) args;
#define SYMX(ret, name, args)
struct pohm_real {
#include "syms.def"
};
#undef SYM
#undef SYMV
#undef SYMX

/*
 * The library's own globals, declared hidden: the compiler then reaches
 * them directly (rip-relative), not through a GOT entry the linker relaxes
 * into an extra lea, which the hot wrappers paid on every call.
 */
#define POHM_HIDDEN __attribute__((visibility("hidden")))

/* Written by pohm_real_init() under pthread_once, read-only afterwards. */
extern POHM_HIDDEN struct pohm_real pohm_real;

/* Resolve every entry (idempotent, thread-safe).  0, or -ENOSYS if some
 * symbol is missing from this libc (its wrapper then fails with ENOSYS). */
int pohm_real_init(void);

/* Mark a symbol exported from the library (everything else is hidden). */
#define POHM_EXPORT __attribute__((visibility("default")))

/*
 * Declare every wrapper from the same list: the compiler checks each
 * signature against glibc's own declaration (where it has one) and the
 * internal __open_2-style names get the prototype they lack.
 */
#define SYM(ret, name, args) POHM_EXPORT ret name args;
#define SYMV SYM
#define SYMX SYM
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX

/* Raw-syscall stand-ins used while the table is being resolved (fallback.c). */
int pohm_fallback_open(const char *path, int flags, ...);
int pohm_fallback_openat(int dirfd, const char *path, int flags, ...);
int pohm_fallback_stat(const char *path, struct stat *st);
int pohm_fallback_lstat(const char *path, struct stat *st);
int pohm_fallback_fstat(int fd, struct stat *st);
int pohm_fallback_fstatat(int dirfd, const char *path, struct stat *st, int flags);
ssize_t pohm_fallback_readlink(const char *path, char *buf, size_t n);
ssize_t pohm_fallback_readlinkat(int dirfd, const char *path, char *buf, size_t n);
int pohm_fallback_close(int fd);

#endif
