/*
 * cachebase.c — the bottom of the cache model, used by every other file of
 * it: this process's freshness marks (which inodes were checked against the
 * storage within attr_timeout), the stats counters, and cache_cut.  Calls
 * nothing of the cache above the journal.  (Moved out of cache.c in session
 * 13, issue 20, so that perm, xattr and push sit below materialize.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

/* ---------------------------------------------------------------- helpers */

static unsigned vslot(uint64_t ino)
{
	return (unsigned)((ino * 0x9E3779B97F4A7C15ULL) >> 52) % POHM_VCACHE;
}

/* vtime of an inode this process saw change: not fresh, whatever its record says. */
#define VSTALE UINT64_MAX

static int fresh_at(struct pohm_cache *c, uint64_t ino, uint64_t validated_ns)
{
	return cache_fresh_at_count(c, ino, validated_ns, 1);
}

/* Under vlock: the monotonic ns until which ino stays fresh (mono: now),
 * 0 when it is not fresh. */
static uint64_t fresh_until_locked(struct pohm_cache *c, uint64_t ino, uint64_t validated_ns,
				   uint64_t mono)
{
	unsigned s = vslot(ino);

	if (c->vino[s] == ino) {
		if (c->vtime[s] == VSTALE || mono - c->vtime[s] >= c->attr_timeout_ns)
			return 0;
		return c->vtime[s] + c->attr_timeout_ns;
	}
	if (validated_ns) {
		uint64_t now = pohm_sys_real_ns();

		if (validated_ns <= now && now - validated_ns < c->attr_timeout_ns)
			return mono + (c->attr_timeout_ns - (now - validated_ns));
	}
	return 0;
}

int cache_fresh_at_count(struct pohm_cache *c, uint64_t ino, uint64_t validated_ns, int count)
{
	int fresh;

	if (!c->attr_timeout_ns)
		return 0;
	pthread_mutex_lock(&c->vlock);
	fresh = fresh_until_locked(c, ino, validated_ns, pohm_sys_mono_ns()) != 0;
	if (fresh && count)
		c->stats.validations_skipped++;
	pthread_mutex_unlock(&c->vlock);
	return fresh;
}

uint64_t cache_fresh_until(struct pohm_cache *c, uint64_t ino, uint64_t validated_ns)
{
	uint64_t until;

	if (!c->attr_timeout_ns)
		return 0;
	pthread_mutex_lock(&c->vlock);
	until = fresh_until_locked(c, ino, validated_ns, pohm_sys_mono_ns());
	pthread_mutex_unlock(&c->vlock);
	return until;
}

int cache_index_stale(const struct pohm_jrec *rec, const struct stat *lst)
{
	if (rec->lino == (uint64_t)lst->st_ino)
		return 0;
	return S_ISDIR(lst->st_mode) || rec->nlink <= 1;
}

int cache_fresh(struct pohm_cache *c, uint64_t ino)
{
	return fresh_at(c, ino, 0);
}

int cache_fresh_rec(struct pohm_cache *c, const struct pohm_jrec *rec)
{
	return fresh_at(c, rec->ino, rec->validated_ns);
}

int cache_offline(struct pohm_cache *c)
{
	return c->offline && c->offline(c->offline_arg);
}

void cache_mark_fresh(struct pohm_cache *c, uint64_t ino)
{
	unsigned s = vslot(ino);

	pthread_mutex_lock(&c->vlock);
	c->vino[s] = ino;
	c->vtime[s] = pohm_sys_mono_ns();
	pthread_mutex_unlock(&c->vlock);
}

void cache_mark_checked(struct pohm_cache *c, uint64_t ino, uint64_t version)
{
	cache_mark_fresh(c, ino);
	if (c->attr_timeout_ns)
		pohm_journal_touch(&c->j, ino, version, pohm_sys_real_ns());
}

void cache_mark_checked_at(struct pohm_cache *c, uint64_t ino, uint64_t version,
			   uint64_t mono_ns, uint64_t real_ns)
{
	unsigned s = vslot(ino);

	pthread_mutex_lock(&c->vlock);
	c->vino[s] = ino;
	c->vtime[s] = mono_ns;
	pthread_mutex_unlock(&c->vlock);
	if (c->attr_timeout_ns)
		pohm_journal_touch(&c->j, ino, version, real_ns);
}

void cache_unmark(struct pohm_cache *c, uint64_t ino)
{
	unsigned s = vslot(ino);

	pthread_mutex_lock(&c->vlock);
	c->vino[s] = ino;	/* this process's word: changed */
	c->vtime[s] = VSTALE;
	pthread_mutex_unlock(&c->vlock);
	/* And the other processes': a record not validated since (none: -ENOENT). */
	if (c->attr_timeout_ns)
		pohm_journal_touch(&c->j, ino, 0, 0);
}

void cache_mark_complete(struct pohm_cache *c, uint64_t dino, uint64_t mono_ns)
{
	unsigned s = vslot(COMPLETE(dino));

	pthread_mutex_lock(&c->vlock);
	c->vino[s] = COMPLETE(dino);
	c->vtime[s] = mono_ns;
	pthread_mutex_unlock(&c->vlock);
}

int cache_dir_complete(struct pohm_cache *c, uint64_t dino)
{
	/* The process's word only (validated_ns 0): a new process lists. */
	return cache_fresh_at_count(c, COMPLETE(dino), 0, 1) == 1;
}

void cache_dir_incomplete(struct pohm_cache *c, uint64_t dino)
{
	unsigned s = vslot(COMPLETE(dino));

	pthread_mutex_lock(&c->vlock);
	if (c->vino[s] == COMPLETE(dino))
		c->vtime[s] = VSTALE;	/* another key in the slot: not complete anyway */
	pthread_mutex_unlock(&c->vlock);
}

int cache_sib_batch(struct pohm_cache *c, uint64_t dino, int small)
{
	unsigned s = vslot(COMPLETE(dino)), i;
	uint64_t now = pohm_sys_mono_ns(), t = c->attr_timeout_ns;
	struct pohm_sibdir *d = NULL;
	int listed, batch = 0;

	if (!t || !dino)
		return 0;
	pthread_mutex_lock(&c->vlock);
	listed = c->vino[s] == COMPLETE(dino);	/* fresh, expired or dropped: listed */
	for (i = 0; i < POHM_SIBDIRS && !d; i++)
		if (c->sib[i].dino == dino)
			d = &c->sib[i];
	if (!d) {
		d = &c->sib[c->sibnext++ % POHM_SIBDIRS];
		memset(d, 0, sizeof(*d));
		d->dino = dino;
	}
	if (d->batch_ns && now - d->batch_ns < t) {
		batch = 0;	/* one batch a window */
	} else if ((listed && small) ||
		   ((listed || small) && d->miss_ns && now - d->miss_ns < t)) {
		/* A huge directory (not small) this process listed batches only
		 * at its second expired entry in a window, so one stat now and
		 * then costs one wait, not a re-listing (~200 at 100 000). */
		d->batch_ns = now;
		batch = 1;
	} else {
		d->miss_ns = now;
	}
	pthread_mutex_unlock(&c->vlock);
	return batch;
}

void cache_count(struct pohm_cache *c, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&c->vlock);
	*field += n;
	pthread_mutex_unlock(&c->vlock);
}

/* ---------------------------------------------------------------- names */

char *cache_cut(const char *s, size_t n, char *sbuf)
{
	char *p = n < 4096 ? sbuf : malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

void cache_cut_free(char *p, const char *sbuf)
{
	if (p != sbuf)
		free(p);
}
