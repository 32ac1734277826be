/*
 * cachebase.c — the bottom of the cache model, used by every other file of
 * it: this process's freshness marks (which inodes were checked against the
 * storage within attr_timeout), the complete marks of directories (shared
 * through their journal records, decision 0062), the stats counters,
 * cache_cut and cache_local_changed.  Calls nothing of the cache above the
 * journal.  (Moved out of cache.c in session
 * 13, issue 20, so that perm, xattr and push sit below materialize.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "stub.h"
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
	if (!S_ISDIR(rec->mode) != !S_ISDIR(lst->st_mode))
		return 1;	/* the number went from a directory to a file, or back */
	if (rec->lino == (uint64_t)lst->st_ino)
		return 0;
	return S_ISDIR(lst->st_mode) || rec->nlink <= 1;
}

int cache_index_known(struct pohm_cache *c, const struct stat *lst, uint64_t *ino)
{
	struct pohm_jrec rec;
	int r;

	r = pohm_journal_lookup_local(&c->j, (uint64_t)lst->st_dev, (uint64_t)lst->st_ino, ino);
	if (r)
		return r;
	r = pohm_journal_get(&c->j, *ino, &rec);
	if (!r && cache_index_stale(&rec, lst))
		r = -ENOENT;
	pohm_jrec_clear(&rec);
	return r;
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

void cache_mark_checked_many(struct pohm_cache *c, size_t n, const uint64_t *inos,
			     const uint64_t *versions, uint64_t mono_ns, uint64_t real_ns)
{
	size_t i;

	pthread_mutex_lock(&c->vlock);
	for (i = 0; i < n; i++) {
		unsigned s = vslot(inos[i]);

		c->vino[s] = inos[i];
		c->vtime[s] = mono_ns;
	}
	pthread_mutex_unlock(&c->vlock);
	if (c->attr_timeout_ns)
		pohm_journal_touch_many(&c->j, n, inos, versions, real_ns);
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

/*
 * The shared word (decision 0062): dino's record says LISTED as of
 * listed_ns (realtime of a listing's start in some process of this cache);
 * a record without LISTED whose listed_ns is set was cleared then.  arg:
 * the listing's start, or 0 to clear (as of now).
 */
static int listed_edit(struct pohm_jrec *r, const void *arg)
{
	uint64_t t = *(const uint64_t *)arg;

	if (!t) {
		if (!(r->flags & POHM_J_LISTED))
			return -EALREADY;	/* nothing to clear: no write */
		r->flags &= ~POHM_J_LISTED;
		r->listed_ns = pohm_sys_real_ns();
		return 0;
	}
	/* A newer listing's mark, or a clear after this listing began (a
	 * name it may not have seen has no local file): it stands. */
	if (r->listed_ns >= t)
		return -EALREADY;
	r->flags |= POHM_J_LISTED;
	r->listed_ns = t;
	return 0;
}

void cache_mark_listed(struct pohm_cache *c, uint64_t dino, uint64_t mono_ns, uint64_t real_ns)
{
	cache_mark_complete(c, dino, mono_ns);
	if (c->attr_timeout_ns && real_ns)
		pohm_journal_update(&c->j, dino, listed_edit, &real_ns);
}

int cache_dir_complete(struct pohm_cache *c, uint64_t dino)
{
	unsigned s = vslot(COMPLETE(dino));
	uint64_t t = c->attr_timeout_ns, now, mono, listed = 0;
	struct pohm_jrec rec;
	int mine;

	if (!t)
		return 0;
	pthread_mutex_lock(&c->vlock);
	mine = c->vino[s] == COMPLETE(dino);
	if (mine && c->vtime[s] != VSTALE && pohm_sys_mono_ns() - c->vtime[s] < t) {
		c->stats.validations_skipped++;
		pthread_mutex_unlock(&c->vlock);
		return 1;
	}
	pthread_mutex_unlock(&c->vlock);
	if (mine && c->vtime[s] == VSTALE)
		return 0;	/* this process dropped it: it lists again */
	/* Another process's listing (decision 0062): one record read. */
	if (!pohm_journal_get(&c->j, dino, &rec) && (rec.flags & POHM_J_LISTED))
		listed = rec.listed_ns;
	pohm_jrec_clear(&rec);
	now = pohm_sys_real_ns();
	if (!listed || listed > now || now - listed >= t)
		return 0;
	/* This process's word from now on, as old as the listing. */
	mono = pohm_sys_mono_ns();
	cache_mark_complete(c, dino, mono - (now - listed));
	pthread_mutex_lock(&c->vlock);
	c->stats.validations_skipped++;
	pthread_mutex_unlock(&c->vlock);
	return 1;
}

void cache_dir_incomplete(struct pohm_cache *c, uint64_t dino)
{
	unsigned s = vslot(COMPLETE(dino));
	uint64_t none = 0;
	struct pohm_jrec rec;
	int listed;

	pthread_mutex_lock(&c->vlock);
	if (c->vino[s] == COMPLETE(dino))
		c->vtime[s] = VSTALE;	/* another key in the slot: not complete anyway */
	pthread_mutex_unlock(&c->vlock);
	if (!c->attr_timeout_ns)
		return;
	/* And the other processes' word: a read, a write only when it is set. */
	listed = !pohm_journal_get(&c->j, dino, &rec) && (rec.flags & POHM_J_LISTED);
	pohm_jrec_clear(&rec);
	if (listed)
		pohm_journal_update(&c->j, dino, listed_edit, &none);
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

/* Below listgone.c and cache.c, which both ask it (moved from cache.c in
 * session 16, body unchanged). */
int cache_local_changed(struct pohm_cache *c, const struct pohm_jrec *rec, int dfd,
			const char *name, const struct stat *st)
{
	int d, fd;

	if ((rec->flags & POHM_J_STUB) && S_ISSOCK(st->st_mode) && (uint64_t)st->st_ino == rec->lino)
		return 0;	/* a socket stub holds no data (a chmod of it loses nothing) */
	d = pohm_journal_is_dirty(rec, st);
	if (d != 2)
		return d;
	if (!S_ISREG(st->st_mode))
		return 0;
	if (rec->flags & POHM_J_STUB)	/* a stub has no contents to compare: still its shape? */
		return !pohm_stub_shape(st);
	/* Racy timestamps: only the contents can tell. */
	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return 1;	/* cannot read it (mode 000?): assume changed, never lose it */
	d = pohm_journal_content_differs(rec, fd, (uint64_t)st->st_size);
	pohm_sys_close(fd);
	return d != 0;
}
