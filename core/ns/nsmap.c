/*
 * nsmap.c — a file's chunk map, inline or in map objects (nsmap.h).
 *
 * Sections: cache (map objects are immutable: any copy read or written is
 * good for as long as its generation exists) · reading (fetch a map object,
 * one entry, the whole map) · committing (inline, back to inline, external).
 *
 * An external map is valid below min(map_end, size) only: past that every
 * chunk is a hole, and the chunk that straddles it is cut there.  So a
 * truncate (which only edits the inode) never has to rewrite map objects,
 * and the next commit rewrites just the object that holds the cut, if any.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nsmap.h"
#include "wire.h"

/* ---------------------------------------------------------------- cache */

#define MAP_CACHE_N	32	/* objects kept per handle (at most ~20 KiB each) */

struct ns_map_cache {
	pthread_mutex_t lock;	/* guards tick and ent */
	uint64_t tick;
	struct map_cache_ent {
		uint64_t ino, k, gen;
		uint64_t used;			/* LRU tick, 0 = empty */
		uint8_t csum[64];		/* of the encoded object */
		uint32_t n;
		struct pohm_chunkref *e;
	} ent[MAP_CACHE_N];
};

void ns_map_cache_atfork_child(struct ns_map_cache *c)
{
	if (c)
		pthread_mutex_init(&c->lock, NULL);
}

struct ns_map_cache *ns_map_cache_new(void)
{
	struct ns_map_cache *c = calloc(1, sizeof(*c));

	if (c)
		pthread_mutex_init(&c->lock, NULL);
	return c;
}

void ns_map_cache_free(struct ns_map_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < MAP_CACHE_N; i++)
		free(c->ent[i].e);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Copy the cached object (ino, k, gen) with checksum csum into m: 1 if found. */
static int cache_get(struct ns_map_cache *c, uint64_t ino, uint64_t k, uint64_t gen,
		     const uint8_t *csum, struct pohm_map *m)
{
	size_t i;
	int hit = 0;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < MAP_CACHE_N; i++) {
		struct map_cache_ent *x = &c->ent[i];

		if (!x->used || x->ino != ino || x->k != k || x->gen != gen ||
		    memcmp(x->csum, csum, 64))
			continue;
		memset(m, 0, sizeof(*m));
		m->e = malloc((x->n ? x->n : 1) * sizeof(*m->e));
		if (m->e) {
			memcpy(m->e, x->e, x->n * sizeof(*m->e));
			m->ino = ino;
			m->index = k;
			m->gen = gen;
			m->n = x->n;
			x->used = ++c->tick;
			hit = 1;
		}
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return hit;
}

/* Remember entries e[0..n) of object (ino, k, gen) (best effort). */
static void cache_put(struct ns_map_cache *c, uint64_t ino, uint64_t k, uint64_t gen,
		      const uint8_t *csum, const struct pohm_chunkref *e, uint32_t n)
{
	struct pohm_chunkref *copy;
	struct map_cache_ent *x;
	size_t i;

	if (!c || !(copy = malloc((n ? n : 1) * sizeof(*copy))))
		return;
	memcpy(copy, e, n * sizeof(*copy));
	pthread_mutex_lock(&c->lock);
	x = &c->ent[0];
	for (i = 1; i < MAP_CACHE_N; i++)
		if (c->ent[i].used < x->used)
			x = &c->ent[i];
	free(x->e);
	x->ino = ino;
	x->k = k;
	x->gen = gen;
	memcpy(x->csum, csum, 64);
	x->n = n;
	x->e = copy;
	x->used = ++c->tick;
	pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------------------- reading */

/* Bytes the external map of in is valid for. */
static uint64_t ext_end(const struct pohm_inode *in)
{
	return in->map_end < in->size ? in->map_end : in->size;
}

/* Read map object k of in and check it against the inode's reference. */
static int map_fetch(struct pohm_ns *ns, const struct pohm_inode *in, uint64_t k,
		     struct pohm_map *m)
{
	const struct pohm_mapref *ref = &in->maps[k];
	struct pohm_kv_val v = { 0 };
	char key[POHM_KEY_MAX];
	int r;

	if (cache_get(ns->map_cache, in->ino, k, ref->gen, ref->csum, m))
		return 0;
	pohm_key_map(key, in->ino, k, ref->gen);
	r = ns->kv.ops->get(ns->kv.ctx, key, &v);
	if (r) {
		pohm_kv_val_free(&v);
		return r == -ENOENT ? -EIO : r;	/* a committed inode never names nothing */
	}
	if (memcmp(v.csum, ref->csum, 64)) {
		r = -EIO;
		goto out;
	}
	r = pohm_map_decode(m, v.data, v.len);
	if (r) {
		r = r == -ENOMEM ? r : -EIO;
		goto out;
	}
	if (m->ino != in->ino || m->index != k || m->gen != ref->gen || m->n > in->map_span) {
		pohm_map_clear(m);
		r = -EIO;
		goto out;
	}
	cache_put(ns->map_cache, in->ino, k, ref->gen, ref->csum, m->e, m->n);
out:
	pohm_kv_val_free(&v);
	return r;
}

void ns_map_cursor_init(struct ns_map_cursor *c, const struct pohm_inode *in)
{
	memset(c, 0, sizeof(*c));
	c->in = in;
}

void ns_map_cursor_release(struct ns_map_cursor *c)
{
	if (c->have)
		pohm_map_clear(&c->m);
	c->have = 0;
}

int ns_map_entry(struct pohm_ns *ns, struct ns_map_cursor *c, uint64_t i,
		 struct pohm_chunkref *out)
{
	const struct pohm_inode *in = c->in;
	uint64_t cs = pohm_inode_chunk_size(in), end, k, j;
	int r;

	memset(out, 0, sizeof(*out));
	if (!in->nmaps || in->map_loaded) {
		if (i < in->nchunks)
			*out = in->chunks[i];
		return 0;
	}
	end = ext_end(in);
	if (i >= (end + cs - 1) / cs)
		return 0;
	k = i / in->map_span;
	if (k >= in->nmaps || !in->maps[k].gen)
		return 0;
	if (!c->have || c->k != k) {
		ns_map_cursor_release(c);
		r = map_fetch(ns, in, k, &c->m);
		if (r)
			return r;
		c->k = k;
		c->have = 1;
	}
	j = i - k * in->map_span;
	if (j >= c->m.n)
		return 0;
	*out = c->m.e[j];
	if (!out->gen)
		memset(out, 0, sizeof(*out));
	else if (out->len > end - i * cs)
		out->len = (uint32_t)(end - i * cs);
	return 0;
}

int pohm_ns_map_load(struct pohm_ns *ns, struct pohm_inode *in)
{
	uint64_t cs = pohm_inode_chunk_size(in), need = (in->size + cs - 1) / cs, i;
	struct pohm_chunkref *arr;
	struct ns_map_cursor c;
	int r = 0;

	if (!in->nmaps || in->map_loaded)
		return 0;
	if (need > UINT32_MAX)
		return -EFBIG;
	arr = calloc(need ? need : 1, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	ns_map_cursor_init(&c, in);
	for (i = 0; i < need && !r; i++)
		r = ns_map_entry(ns, &c, i, &arr[i]);
	ns_map_cursor_release(&c);
	if (r) {
		free(arr);
		return r;
	}
	free(in->chunks);
	in->chunks = arr;
	in->nchunks = (uint32_t)need;
	in->map_loaded = 1;
	return 0;
}

/* ---------------------------------------------------------------- committing */

/* A small inline map stays inline: edit the entries in place. */
static int inline_apply(struct pohm_inode *in, uint64_t size, uint64_t need,
			const struct pohm_chunk_set *set, size_t n)
{
	uint64_t cs = pohm_inode_chunk_size(in);
	size_t i;

	if (need > in->nchunks) {
		struct pohm_chunkref *m = realloc(in->chunks, need * sizeof(*m));

		if (!m)
			return -ENOMEM;
		memset(m + in->nchunks, 0, (need - in->nchunks) * sizeof(*m));
		in->chunks = m;
	}
	in->nchunks = (uint32_t)need;
	for (i = 0; i < n; i++) {
		struct pohm_chunkref *ref;

		if (set[i].index >= need)
			continue;	/* wholly past the new end */
		ref = &in->chunks[set[i].index];
		if (set[i].gen == POHM_GEN_INLINE) {
			uint8_t *d = malloc(set[i].len ? set[i].len : 1);

			if (!d)
				return -ENOMEM;
			memcpy(d, set[i].data, set[i].len);
			free(in->idata);
			in->idata = d;
		}
		ref->gen = set[i].gen;
		ref->len = set[i].len;
		memcpy(ref->csum, set[i].csum, 64);
	}
	/* A kept last chunk that reaches past the new size is cut on read. */
	if (need && in->chunks[need - 1].len > size - (need - 1) * cs) {
		in->chunks[need - 1].len = (uint32_t)(size - (need - 1) * cs);
		/* Inline data's checksum is of the bytes it keeps (decision 0023). */
		if (pohm_inode_is_inline(in) && in->idata)
			pohm_sha512(in->idata, in->chunks[0].len, in->chunks[0].csum);
	}
	return 0;
}

struct build {
	struct pohm_ns *ns;
	struct ns_map_cursor cur;	/* the old map */
	uint64_t cs, cut, size, need;
	const struct pohm_chunk_set *set;
	size_t n, si;			/* set entries, next one to place */
};

/*
 * The new entries of chunks [lo, hi): the old ones valid below cut, then
 * the set's, then the last chunk cut at the new size.
 */
static int build_range(struct build *b, uint64_t lo, uint64_t hi, struct pohm_chunkref *e)
{
	uint64_t i;
	int r;

	for (i = lo; i < hi; i++) {
		struct pohm_chunkref *x = &e[i - lo];

		memset(x, 0, sizeof(*x));
		if (i * b->cs >= b->cut)
			continue;
		r = ns_map_entry(b->ns, &b->cur, i, x);
		if (r)
			return r;
		if (x->gen && x->len > b->cut - i * b->cs)
			x->len = (uint32_t)(b->cut - i * b->cs);
	}
	for (; b->si < b->n && b->set[b->si].index < hi; b->si++) {
		const struct pohm_chunk_set *s = &b->set[b->si];

		if (s->index < lo)
			continue;
		e[s->index - lo].gen = s->gen;
		e[s->index - lo].len = s->len;
		memcpy(e[s->index - lo].csum, s->csum, 64);
	}
	if (hi == b->need && hi > lo) {
		struct pohm_chunkref *last = &e[hi - 1 - lo];

		if (last->len > b->size - (hi - 1) * b->cs)
			last->len = (uint32_t)(b->size - (hi - 1) * b->cs);
	}
	return 0;
}

/* Write entries e[0..n) as map object k of ino (a fresh generation); its reference in *ref. */
static int map_write(struct pohm_ns *ns, uint64_t ino, uint64_t k, struct pohm_chunkref *e,
		     uint32_t n, struct pohm_mapref *ref)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_map m = { .ino = ino, .index = k, .n = n, .e = e };
	char key[POHM_KEY_MAX];
	int r;

	m.gen = ns_random(ns);
	pohm_key_map(key, ino, k, m.gen);
	ns_hdr(ns, &m.hdr, POHM_OBJ_MAP, ino, key);
	r = pohm_map_encode(&b, &m);
	if (!r)
		r = ns->kv.ops->put(ns->kv.ctx, key, b.p, b.len, NULL);
	if (!r) {
		ref->gen = m.gen;
		pohm_sha512(b.p, b.len, ref->csum);
		cache_put(ns->map_cache, ino, k, m.gen, ref->csum, e, n);
	}
	pohm_buf_free(&b);
	return r;
}

/* Old map's valid end: an inline map is valid up to the size. */
static uint64_t old_end(const struct pohm_inode *in)
{
	return in->nmaps ? ext_end(in) : in->size;
}

/* An external map that shrank to POHM_MAP_INLINE_MAX chunks or fewer goes back inline. */
static int to_inline(struct build *b, struct pohm_inode *in)
{
	struct pohm_chunkref *arr = calloc(b->need ? b->need : 1, sizeof(*arr));
	int r;

	if (!arr)
		return -ENOMEM;
	r = build_range(b, 0, b->need, arr);
	if (r) {
		free(arr);
		return r;
	}
	free(in->maps);
	free(in->chunks);
	in->maps = NULL;
	in->nmaps = in->map_span = 0;
	in->map_end = 0;
	in->map_trimmed = in->map_loaded = 0;
	in->chunks = arr;
	in->nchunks = (uint32_t)b->need;
	return 0;
}

/* Can map object k of the old external map stay as it is? */
static int map_keeps(const struct build *b, const struct pohm_inode *in, uint64_t k)
{
	uint64_t span = in->map_span, E = ext_end(in);

	if (!in->nmaps || k >= in->nmaps)
		return 0;
	if (!in->maps[k].gen)
		return 1;		/* all holes, before and after */
	if ((k + 1) * span <= b->cut / b->cs)
		return 1;		/* wholly below any cut */
	/* Objects hold nothing past the size they were written for. */
	return !in->map_trimmed && b->size >= E;
}

static int ext_apply(struct build *b, struct pohm_inode *in)
{
	uint64_t span = in->nmaps ? in->map_span : POHM_MAP_SPAN;
	uint64_t nm = (b->need + span - 1) / span, k;
	struct pohm_mapref *refs = calloc(nm, sizeof(*refs));
	struct pohm_chunkref *e = calloc(span, sizeof(*e));
	int r = 0;

	if (!refs || !e) {
		r = -ENOMEM;
		goto out;
	}
	for (k = 0; k < nm; k++) {
		uint64_t lo = k * span, hi = lo + span < b->need ? lo + span : b->need;
		uint32_t used = 0, i;
		int touched;

		while (b->si < b->n && b->set[b->si].index < lo)
			b->si++;
		touched = b->si < b->n && b->set[b->si].index < hi;
		if (!touched && map_keeps(b, in, k)) {
			refs[k] = in->maps[k];
			continue;
		}
		r = build_range(b, lo, hi, e);
		if (r)
			goto out;
		for (i = 0; i < hi - lo; i++)
			if (e[i].gen)
				used = i + 1;
		if (used)
			r = map_write(b->ns, in->ino, k, e, used, &refs[k]);
		if (r)
			goto out;
	}
	free(in->maps);
	free(in->chunks);
	in->maps = refs;
	refs = NULL;
	in->nmaps = (uint32_t)nm;
	in->map_span = (uint32_t)span;
	in->map_end = b->size;
	in->map_trimmed = 0;
	in->chunks = NULL;
	in->nchunks = 0;
	in->map_loaded = 0;
out:
	free(refs);
	free(e);
	return r;
}

/*
 * Inline data (decision 0023) before the map changes: an inline entry of
 * the set must be chunk 0 of a file that may be inline; inline data the set
 * keeps in a file growing past one chunk is written out as a chunk first
 * (a file growing past the threshold goes back to chunks; the commit is
 * still the inode CAS, so a lost one leaves only that unreferenced chunk).
 */
static int inline_prepare(struct pohm_ns *ns, struct pohm_inode *in, uint64_t size,
			  uint64_t need, const struct pohm_chunk_set *set, size_t n)
{
	size_t i;
	int keeps0 = 1, r;

	for (i = 0; i < n; i++) {
		if (set[i].gen == POHM_GEN_INLINE &&
		    (set[i].index || need > 1 || !pohm_ns_inline_ok(ns, size) || !set[i].data ||
		     set[i].len > size))
			return -EINVAL;
		if (set[i].index == 0)
			keeps0 = 0;
	}
	if (!pohm_inode_is_inline(in) || !keeps0 || need <= 1)
		return 0;
	r = pohm_ns_put_chunk(ns, in->ino, 0, in->idata, in->chunks[0].len, &in->chunks[0].gen);
	if (r)
		return r;
	free(in->idata);
	in->idata = NULL;
	return 0;
}

int ns_map_apply(struct pohm_ns *ns, struct pohm_inode *in, uint64_t size,
		 const struct pohm_chunk_set *set, size_t n)
{
	uint64_t cs = pohm_inode_chunk_size(in), need = (size + cs - 1) / cs, end;
	struct build b;
	int r;

	if (need > UINT32_MAX)
		return -EFBIG;
	r = inline_prepare(ns, in, size, need, set, n);
	if (r)
		return r;
	if (!in->nmaps && need <= POHM_MAP_INLINE_MAX) {
		r = inline_apply(in, size, need, set, n);
		if (!r && !pohm_inode_is_inline(in)) {
			free(in->idata);	/* chunk 0 replaced by a chunk, or cut */
			in->idata = NULL;
		}
		return r;
	}
	end = old_end(in);
	memset(&b, 0, sizeof(b));
	b.ns = ns;
	b.cs = cs;
	b.size = size;
	b.need = need;
	b.cut = end < size ? end : size;
	b.set = set;
	b.n = n;
	/* The cursor reads the old map; *in is replaced only at the end. */
	ns_map_cursor_init(&b.cur, in);
	if (need <= POHM_MAP_INLINE_MAX)
		r = to_inline(&b, in);
	else
		r = ext_apply(&b, in);
	ns_map_cursor_release(&b.cur);
	return r;
}
