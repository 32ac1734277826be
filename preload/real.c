/*
 * real.c — resolve the real libc functions once (STYLE.md "one symbol list").
 *
 * dlsym may allocate and may even call back into an interposed function
 * (a wrapper hit during resolution must not recurse into pohm_real_init):
 * while resolving, pohm_real_resolving is set and wrappers use the raw
 * syscall fallback in preload/fallback.c.
 */
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "log.h"

struct pohm_real pohm_real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
/* Set by real_resolve() before any other code reads it; read-only later. */
static int real_missing;

static void real_resolve(void)
{
#define SYM(ret, name, args)						\
	pohm_real.name = (ret (*) args)dlsym(RTLD_NEXT, #name);		\
	if (!pohm_real.name) {						\
		real_missing++;						\
		pohm_err("libc has no %s; calls to it fail with ENOSYS", #name); \
	}
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
