/*
 * walk.c — what the tree walks share (walk.h): "may this walk meet the
 * prefix?" and the host's allocator.
 */
#include "shim.h"
#include "walk.h"

#include <dlfcn.h>

int pohm_walk_ours(int dirfd, const char *path)
{
	struct pohm_path p;
	enum pohm_pc_class c;

	if (!pohm_active() || !pohm_given(path))
		return 0;
	c = pohm_locate(dirfd, path, 0, &p, NULL);
	return c == POHM_PC_IN || c == POHM_PC_ANCESTOR;
}

/*
 * The host's malloc family, found by name in the global scope (this
 * library exports no allocator, so that is the program's or libc's).
 * Written once (atomically, the same value by every racing thread).
 */
static void *(*host_malloc)(size_t);
static void *(*host_realloc)(void *, size_t);
static void (*host_free)(void *);

static void host_resolve(void)
{
	void *m = dlsym(RTLD_DEFAULT, "malloc"), *r = dlsym(RTLD_DEFAULT, "realloc"),
	     *f = dlsym(RTLD_DEFAULT, "free");

	__atomic_store_n(&host_realloc, (void *(*)(void *, size_t))r, __ATOMIC_RELAXED);
	__atomic_store_n(&host_free, (void (*)(void *))f, __ATOMIC_RELAXED);
	__atomic_store_n(&host_malloc, (void *(*)(size_t))m, __ATOMIC_RELEASE);
}

static int host_ready(void)
{
	if (!__atomic_load_n(&host_malloc, __ATOMIC_ACQUIRE))
		host_resolve();
	return host_malloc && host_realloc && host_free;
}

void *pohm_host_malloc(size_t n)
{
	if (!host_ready()) {
		errno = ENOMEM;
		return NULL;
	}
	return host_malloc(n);
}

void *pohm_host_realloc(void *p, size_t n)
{
	if (!host_ready()) {
		errno = ENOMEM;
		return NULL;
	}
	return host_realloc(p, n);
}

void pohm_host_free(void *p)
{
	if (p && host_ready())
		host_free(p);
}
