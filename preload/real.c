/*
 * real.c — resolve the real libc functions once (STYLE.md "one symbol list").
 *
 * Before anything is resolved every entry gets a stand-in: the raw-syscall
 * fallbacks of fallback.c for the calls dlsym or an allocator may make
 * while we resolve (their wrappers run with pohm_depth > 0 and go straight
 * to the table), and a typed ENOSYS stub for everything else.  Then each
 * entry is looked up in the GNU hash tables of the objects after ours
 * (elfsym.c: a tenth of dlsym's cost, which was half of a process start
 * under the shim), and with dlsym(RTLD_NEXT) where that finds no plain
 * default-version function; a symbol that exists only as a
 * compat version in this libc (the __xstat family since glibc 2.33 on some
 * builds) is found with dlvsym and the architecture's base version.
 */
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "elfsym.h"
#include "sys.h"

struct pohm_real pohm_real;

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

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
/* Written by real_resolve() before pthread_once returns; read-only later. */
static int real_missing;

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

/* Pick the stub by the entry's return type. */
#define STUB(ret) _Generic((ret *)0,				\
	int *: (void (*)(void))stub_int,			\
	long *: (void (*)(void))stub_long,			\
	void *: (void (*)(void))stub_void,			\
	default: (void (*)(void))stub_ptr)

/* The objects after ours: filled by real_resolve() before its lookups,
 * under pthread_once; not used afterwards. */
static struct pohm_elf_scope real_scope;

/* name's default-version function after ours; h: its GNU hash (elfsym.h
 * POHM_ELF_HASH, folded at compile time: a fifth of the lookups' cost). */
static void *lookup(const char *name, uint32_t h)
{
	void *f = pohm_elf_find_h(&real_scope, name, h);

	if (!f)
		f = dlsym(RTLD_NEXT, name);
	if (!f)
		f = dlvsym(RTLD_NEXT, name, GLIBC_BASE);
	if (!f) {
		real_missing++;
		pohm_debug("libc has no %s; calls to it fail with ENOSYS", name);
	}
	return f;
}

static void real_resolve(void)
{
	void *f;

#define SYM(ret, name, args) pohm_real.name = (ret (*) args)STUB(ret);
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
	pohm_real.open = pohm_fallback_open;
	pohm_real.open64 = pohm_fallback_open;
	pohm_real.openat = pohm_fallback_openat;
	pohm_real.openat64 = pohm_fallback_openat;
	pohm_real.stat = pohm_fallback_stat;
	pohm_real.lstat = pohm_fallback_lstat;
	pohm_real.fstat = pohm_fallback_fstat;
	pohm_real.fstatat = pohm_fallback_fstatat;
	pohm_real.stat64 = (int (*)(const char *, struct stat64 *))(void (*)(void))pohm_fallback_stat;
	pohm_real.lstat64 = (int (*)(const char *, struct stat64 *))(void (*)(void))pohm_fallback_lstat;
	pohm_real.fstat64 = (int (*)(int, struct stat64 *))(void (*)(void))pohm_fallback_fstat;
	pohm_real.fstatat64 = (int (*)(int, const char *, struct stat64 *, int))
		(void (*)(void))pohm_fallback_fstatat;
	pohm_real.readlink = pohm_fallback_readlink;
	pohm_real.readlinkat = pohm_fallback_readlinkat;
	pohm_real.close = pohm_fallback_close;

	pohm_elf_scope_init(&real_scope, (const void *)&pohm_real);
#define SYM(ret, name, args)						\
	if ((f = lookup(#name, POHM_ELF_HASH(#name))))			\
		pohm_real.name = (ret (*) args)f;
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
}

int pohm_real_init(void)
{
	pthread_once(&real_once, real_resolve);
	return real_missing ? -ENOSYS : 0;
}
