/*
 * real.h — the table of real libc functions, resolved once.
 *
 * pohm_real.<name> points at the next definition of <name> after ours
 * (dlsym(RTLD_NEXT)).  pohm_real_init() fills it under pthread_once; every
 * wrapper calls it before touching the table.  Entries never change after
 * that, except through pohm_real_set() in tests (fault injection), which is
 * not thread-safe and is meant for single-threaded test programs.
 */
#ifndef POHM_PRELOAD_REAL_H
#define POHM_PRELOAD_REAL_H

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The variadic open family is stored with an explicit mode argument. */
#define SYM(ret, name, args) ret (*name) args;
#define SYMV(ret, name, args) ret (*name) args;
#define SYMX(ret, name, args)
struct pohm_real {
#include "syms.def"
};
#undef SYM
#undef SYMV
#undef SYMX

/* Written once by pohm_real_init() under pthread_once, read-only afterwards. */
extern struct pohm_real pohm_real;

/* Resolve every entry (idempotent, thread-safe).  0, or -ENOSYS if a
 * symbol is missing (logged once; that wrapper then fails with ENOSYS). */
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

#endif
