/*
 * walk_ftsapi.c — fts_open/fts_read/fts_children/fts_set/fts_close (+64):
 * a walk whose roots may meet the prefix is ours (walk_fts.c), any other
 * stays glibc's own.  An FTS made here is remembered in a list, so the
 * other calls know whose it is.  FTS/FTSENT and FTS64/FTSENT64 have one
 * layout on this ABI, so one walk serves both.
 *
 * Sections: handles; entry points.
 */
#include "shim.h"
#include "walk.h"

#include <fts.h>
#include <pthread.h>
#include <stdlib.h>

_Static_assert(sizeof(FTSENT) == sizeof(FTSENT64), "FTSENT and FTSENT64 differ");
_Static_assert(sizeof(FTS) == sizeof(FTS64), "FTS and FTS64 differ");

/* ------------------------------------------------------------ handles */

/* An FTS made here. */
struct ofts {
	FTS *sp;
	struct ofts *next;
};

/* Our open walks (fts_lock guards the list; nours is read without it). */
static pthread_mutex_t fts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ofts *fts_list;
static int nours;

static int is_ours(FTS *sp)
{
	struct ofts *o;

	if (!__atomic_load_n(&nours, __ATOMIC_ACQUIRE) || !pohm_given(sp))
		return 0;
	pthread_mutex_lock(&fts_lock);
	for (o = fts_list; o && o->sp != sp; o = o->next)
		;
	pthread_mutex_unlock(&fts_lock);
	return o != NULL;
}

/* Remember a new walk of ours: sp, or NULL (ENOMEM, the walk closed). */
static FTS *remember(FTS *sp)
{
	struct ofts *o;

	if (!sp)
		return NULL;
	if (!(o = malloc(sizeof(*o)))) {
		pohm_fts_close(sp);
		errno = ENOMEM;
		return NULL;
	}
	o->sp = sp;
	pthread_mutex_lock(&fts_lock);
	o->next = fts_list;
	fts_list = o;
	__atomic_add_fetch(&nours, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fts_lock);
	return sp;
}

/* Close a walk of ours and forget it. */
static int close_ours(FTS *sp)
{
	struct ofts **pp, *o = NULL;

	pthread_mutex_lock(&fts_lock);
	for (pp = &fts_list; *pp && (*pp)->sp != sp; pp = &(*pp)->next)
		;
	if (*pp) {
		o = *pp;
		*pp = o->next;
		__atomic_sub_fetch(&nours, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fts_lock);
	free(o);
	return pohm_fts_close(sp);
}

/* ------------------------------------------------------------ entry points */

/* 1 when some root may meet the prefix. */
static int roots_ours(char *const *roots)
{
	if (!pohm_active() || !pohm_given(roots))
		return 0;
	for (; *roots; roots++)
		if (pohm_walk_ours(AT_FDCWD, *roots))
			return 1;
	return 0;
}

/* glibc's walk moves the cwd behind our back unless FTS_NOCHDIR: volatile meanwhile. */
static void real_opened(int nochdir, int delta)
{
	int saved = errno;

	if (!nochdir && pohm_active())
		pohm_cwd_volatile(delta);
	errno = saved;
}

POHM_EXPORT FTS *fts_open(char *const *roots, int opts,
			  int (*cmp)(const FTSENT **, const FTSENT **))
{
	FTS *f;

	if (roots_ours(roots))
		return remember(pohm_fts_open(roots, opts, cmp));
	f = pohm_real.fts_open(roots, opts, cmp);
	if (f)
		real_opened(f->fts_options & FTS_NOCHDIR, 1);
	return f;
}

POHM_EXPORT FTS64 *fts64_open(char *const *roots, int opts,
			      int (*cmp)(const FTSENT64 **, const FTSENT64 **))
{
	FTS64 *f;

	if (roots_ours(roots))
		return (FTS64 *)remember(
			pohm_fts_open(roots, opts, (int (*)(const FTSENT **, const FTSENT **))cmp));
	f = pohm_real.fts64_open(roots, opts, cmp);
	if (f)
		real_opened(f->fts_options & FTS_NOCHDIR, 1);
	return f;
}

POHM_EXPORT FTSENT *fts_read(FTS *f)
{
	pohm_init();
	return is_ours(f) ? pohm_fts_read(f) : pohm_real.fts_read(f);
}

POHM_EXPORT FTSENT64 *fts64_read(FTS64 *f)
{
	pohm_init();
	return is_ours((FTS *)f) ? (FTSENT64 *)pohm_fts_read((FTS *)f) : pohm_real.fts64_read(f);
}

POHM_EXPORT FTSENT *fts_children(FTS *f, int opts)
{
	pohm_init();
	return is_ours(f) ? pohm_fts_children(f, opts) : pohm_real.fts_children(f, opts);
}

POHM_EXPORT FTSENT64 *fts64_children(FTS64 *f, int opts)
{
	pohm_init();
	return is_ours((FTS *)f) ? (FTSENT64 *)pohm_fts_children((FTS *)f, opts) :
				   pohm_real.fts64_children(f, opts);
}

POHM_EXPORT int fts_set(FTS *f, FTSENT *e, int instr)
{
	pohm_init();
	return is_ours(f) ? pohm_fts_set(e, instr) : pohm_real.fts_set(f, e, instr);
}

POHM_EXPORT int fts64_set(FTS64 *f, FTSENT64 *e, int instr)
{
	pohm_init();
	return is_ours((FTS *)f) ? pohm_fts_set((FTSENT *)e, instr) : pohm_real.fts64_set(f, e, instr);
}

POHM_EXPORT int fts_close(FTS *f)
{
	int nochdir, r;

	pohm_init();
	if (is_ours(f))
		return close_ours((FTS *)f);
	nochdir = !f || (f->fts_options & FTS_NOCHDIR);
	r = pohm_real.fts_close(f);
	real_opened(nochdir, -1);
	return r;
}

POHM_EXPORT int fts64_close(FTS64 *f)
{
	int nochdir, r;

	pohm_init();
	if (is_ours((FTS *)f))
		return close_ours((FTS *)f);
	nochdir = !f || (f->fts_options & FTS_NOCHDIR);
	r = pohm_real.fts64_close(f);
	real_opened(nochdir, -1);
	return r;
}
