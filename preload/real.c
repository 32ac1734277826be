/*
 * real.c — the table of real libc functions (STYLE.md "one symbol list").
 *
 * Each entry is looked up in the GNU hash tables of the objects after ours
 * (elfsym.c: a tenth of dlsym's cost), and with dlsym(RTLD_NEXT) where
 * that finds no plain default-version function; a symbol that exists only
 * as a compat version in this libc (the __xstat family since glibc 2.33
 * on some builds) is found with dlvsym and the architecture's base
 * version.
 *
 * When: on x86-64 each entry is resolved at its first call (real_lazy.c's
 * stand-ins, the way the PLT binds a call), so a program that calls few of
 * the ~200 wrappers pays for few lookups: /bin/true under the shim paid
 * ~44 000 instructions for all of them at every start (issue 23).
 * Elsewhere, and under ThreadSanitizer (whose runtime would see the lazy
 * store race with the wrappers' plain loads), every entry is resolved at
 * light init, as before.
 *
 * While an entry's dlsym runs, a call it makes through the table that the
 * hash tables cannot answer gets a stand-in: the raw-syscall fallbacks of
 * fallback.c for the open, stat, readlink and close families, a typed
 * ENOSYS stub for everything else; nothing is stored for it.
 */
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "elfsym.h"
#include "shim.h"
#include "sys.h"

/* Written whole at light init: after the small POHM_START_BSS words, then
 * real_scope's first objects (preload/start.ld). */
__attribute__((section(".bss.pohm_start.table"))) struct pohm_real pohm_real;

/* The first glibc version of the architecture: where compat symbols live. */
#if defined(__x86_64__)
#define GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GLIBC_BASE "GLIBC_2.17"
#elif defined(__i386__)
#define GLIBC_BASE "GLIBC_2.0"
#else
#define GLIBC_BASE "GLIBC_2.0"
#endif

typedef void (*real_fn)(void);

/* The table as an array: every member is a function pointer. */
#define REAL_N (sizeof(struct pohm_real) / sizeof(real_fn))
_Static_assert(sizeof(struct pohm_real) % sizeof(real_fn) == 0, "pohm_real: pointers only");

/* pohm_sys_once's word (no futex wake at the end of a lone start). */
static POHM_START_BSS int real_once;

/* Set on a thread while it runs dlsym for an entry (see the top). */
static POHM_TLS int real_in_dlsym;

/* Stand-ins for a symbol this libc lacks: fail with ENOSYS in the right type. */
static int stub_int(void)
{
	errno = ENOSYS;
	return -1;
}

static long stub_long(void)
{
	errno = ENOSYS;
	return -1;
}

static void stub_void(void)
{
}

static void *stub_ptr(void)
{
	errno = ENOSYS;
	return NULL;
}

enum { STUB_INT, STUB_LONG, STUB_VOID, STUB_PTR };

/* The stub kind of an entry, by its return type. */
#define STUB_KIND(ret) _Generic((ret *)0, int *: STUB_INT, long *: STUB_LONG,	\
				void *: STUB_VOID, default: STUB_PTR)

/*
 * What the lookups need per entry, in the table's order, as constants:
 * the names as one block of characters and their offsets (no pointers, so
 * nothing here is relocated or written at load), the GNU hash of each name
 * (elfsym.h POHM_ELF_HASH, folded at compile time), the stub kind.
 */
struct real_names {
#define SYM(ret, name, args) char name[sizeof(#name)];
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

static const struct real_names real_names = {
#define SYM(ret, name, args) #name,
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};
_Static_assert(sizeof(struct real_names) <= UINT16_MAX, "real_name_off: 16 bits");

static const uint16_t real_name_off[REAL_N] = {
#define SYM(ret, name, args) offsetof(struct real_names, name),
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

static const uint32_t real_hash[REAL_N] = {
#define SYM(ret, name, args) POHM_ELF_HASH(#name),
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

static const uint8_t real_kind[REAL_N] = {
#define SYM(ret, name, args) STUB_KIND(ret),
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

/* The objects after ours: filled once by pohm_real_init() before any entry
 * is resolved; read-only afterwards.  Each lookup runs pinned (elfsym.h:
 * the loader's list lock, recursive, and refused once an object was
 * unloaded since). */
static __attribute__((section(".bss.pohm_start.scope"))) struct pohm_elf_scope real_scope;

static real_fn *slot(size_t i)
{
	return (real_fn *)(void *)&pohm_real + i;
}

/* Entry i's answer while it cannot be looked up (see the top). */
static real_fn stand_in(size_t i)
{
	static const real_fn stubs[] = {
		[STUB_INT] = (real_fn)stub_int, [STUB_LONG] = (real_fn)stub_long,
		[STUB_VOID] = stub_void, [STUB_PTR] = (real_fn)stub_ptr,
	};
	size_t off = i * sizeof(real_fn);

#define FB(name, fn) if (off == offsetof(struct pohm_real, name)) return (real_fn)fn;
	FB(open, pohm_fallback_open) FB(open64, pohm_fallback_open)
	FB(openat, pohm_fallback_openat) FB(openat64, pohm_fallback_openat)
	FB(stat, pohm_fallback_stat) FB(stat64, pohm_fallback_stat)
	FB(lstat, pohm_fallback_lstat) FB(lstat64, pohm_fallback_lstat)
	FB(fstat, pohm_fallback_fstat) FB(fstat64, pohm_fallback_fstat)
	FB(fstatat, pohm_fallback_fstatat) FB(fstatat64, pohm_fallback_fstatat)
	FB(readlink, pohm_fallback_readlink) FB(readlinkat, pohm_fallback_readlinkat)
	FB(close, pohm_fallback_close)
#undef FB
	return stubs[real_kind[i]];
}

/* One hash-table lookup of entry i, run pinned (elfsym.h). */
struct lookup {
	size_t i;
	void *f;
};

static void lookup_pinned(void *arg)
{
	struct lookup *l = arg;

	l->f = pohm_elf_find_h(&real_scope, (const char *)&real_names + real_name_off[l->i],
			       real_hash[l->i]);
}

/* Entry i resolved and stored: the hash tables (the scope pinned, so an
 * object dlclosed since light init is never read), else dlsym. */
static real_fn resolve(size_t i)
{
	const char *name = (const char *)&real_names + real_name_off[i];
	struct lookup l = { i, NULL };
	void *f;

	pohm_elf_pinned(&real_scope, lookup_pinned, &l);
	f = l.f;
	if (!f) {
		if (real_in_dlsym)
			return stand_in(i);
		real_in_dlsym = 1;
		f = dlsym(RTLD_NEXT, name);
		if (!f)
			f = dlvsym(RTLD_NEXT, name, GLIBC_BASE);
		real_in_dlsym = 0;
	}
	if (!f) {
		pohm_debug("libc has no %s; calls to it fail with ENOSYS", name);
		f = (void *)stand_in(i);
	}
	/* Every thread that gets here stores the same answer. */
	__atomic_store_n(slot(i), (real_fn)f, __ATOMIC_RELAXED);
	return (real_fn)f;
}

#if POHM_REAL_LAZY
static real_fn lazy_entry(uintptr_t at)
{
	return resolve((at - (uintptr_t)pohm_real_lazy_stubs) / POHM_REAL_STUB_SIZE);
}
#endif

#if POHM_REAL_LAZY
static int is_stand_in(real_fn f)
{
	uintptr_t a = (uintptr_t)(void *)f, s = (uintptr_t)pohm_real_lazy_stubs;

	return a - s < REAL_N * POHM_REAL_STUB_SIZE;
}
#endif

static void real_setup(void)
{
	size_t i;

#if POHM_REAL_LAZY
	/* The scope first: a stand-in may be called as soon as it is stored
	 * (the scope's own lookups call nothing of ours). */
	pohm_elf_scope_init(&real_scope, (const void *)&pohm_real);
	pohm_real_lazy_resolver = lazy_entry;
	for (i = 0; i < REAL_N; i++)
		*slot(i) = (real_fn)(void *)(pohm_real_lazy_stubs + i * POHM_REAL_STUB_SIZE);
#else
	for (i = 0; i < REAL_N; i++)
		*slot(i) = stand_in(i);
	pohm_elf_scope_init(&real_scope, (const void *)&pohm_real);
	for (i = 0; i < REAL_N; i++)
		resolve(i);
#endif
}

#if POHM_REAL_LAZY
/* Set once every entry is resolved (relaxed atomic). */
static int real_all_bound;
#endif

#if POHM_REAL_LAZY
/* Every entry still a stand-in that the hash tables answer, stored; no
 * dlsym: it may malloc and takes the loader's lock, which a fork's prepare
 * handler must not (a host allocator's own prepare handler may already
 * hold its arenas). */
static void bind_all_pinned(void *arg)
{
	size_t i;

	(void)arg;
	for (i = 0; i < REAL_N; i++) {
		struct lookup l = { i, NULL };

		if (!is_stand_in(__atomic_load_n(slot(i), __ATOMIC_RELAXED)))
			continue;
		lookup_pinned(&l);
		if (l.f)
			__atomic_store_n(slot(i), (real_fn)l.f, __ATOMIC_RELAXED);
	}
}
#endif

void pohm_real_bind_all(void)
{
#if POHM_REAL_LAZY
	if (__atomic_load_n(&real_all_bound, __ATOMIC_RELAXED))
		return;
	/* One pinning for all (a miss stays lazy: its dlsym at first call). */
	pohm_elf_pinned(&real_scope, bind_all_pinned, NULL);
	__atomic_store_n(&real_all_bound, 1, __ATOMIC_RELAXED);
#endif
}

void pohm_real_init(void)
{
	pohm_sys_once(&real_once, real_setup);
}
