/*
 * real.h — the table of real libc functions, resolved once.
 *
 * pohm_real.<name> points at the next definition of <name> after ours
 * (dlsym(RTLD_NEXT), or dlvsym with the base glibc version for symbols
 * that are compat-only in this libc), or at a stand-in that resolves the
 * entry at its first call and goes on to it (x86-64: real_lazy.c).
 * pohm_real_init() makes the table callable, under pohm_sys_once, from
 * light init; never NULL afterwards, so a wrapper can always call through
 * it.  A symbol this libc lacks gets a stub that fails with ENOSYS
 * (logged at debug level), or a raw-syscall fallback for the open, stat,
 * readlink and close families.
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

/* Filled by pohm_real_init() under pohm_sys_once; later an entry changes
 * only from its stand-in to the function it stands for (an atomic store). */
extern POHM_HIDDEN struct pohm_real pohm_real;

/* Make every entry callable (idempotent, thread-safe). */
void pohm_real_init(void);

/* Resolve every entry still a stand-in that the hash tables answer, no
 * dlsym (after pohm_real_init; idempotent, thread-safe; the first call
 * does the work).  Called from a fork's prepare handler: the
 * children inherit the resolved table instead of each resolving its exec
 * call anew on pages it must fault in (issue 23's shell loop). */
void pohm_real_bind_all(void);

/* Entries resolved at their first call: x86-64, not under ThreadSanitizer. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POHM_REAL_TSAN 1	/* clang's spelling of __SANITIZE_THREAD__ */
#endif
#endif
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(POHM_REAL_TSAN)
#define POHM_REAL_LAZY 1
#else
#define POHM_REAL_LAZY 0
#endif
#define POHM_REAL_STUB_SIZE 16	/* bytes per stand-in, real_lazy.c */
/* The stand-ins, one per entry in the table's order (real_lazy.c). */
extern POHM_HIDDEN const char pohm_real_lazy_stubs[];
/* Called by a stand-in with an address inside it: resolves, stores and
 * returns its entry.  Set by real.c before any stand-in is stored;
 * lock-free and async-signal-safe unless dlsym must answer. */
extern POHM_HIDDEN void (*(*pohm_real_lazy_resolver)(uintptr_t at))(void);

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
