/*
 * nsdata.c — file data as immutable chunk generations (DESIGN.md §3).
 *
 * A commit writes the changed chunks under fresh generation numbers
 * (d:<ino>:<chunk>:<gen>, never overwritten), then CASes the inode with the
 * new map: the inode CAS is the commit point, so a reader that follows a
 * committed map never sees a mix of old and new chunks, and a writer that
 * dies before it leaves only unreferenced chunks (reclaimed by fsck).
 * Every map entry carries the chunk's SHA-512; a read verifies it.  Where
 * the map lives (inline, or in map objects for large files) is nsmap.c's
 * business; the http_compat path copy is written after the commit point
 * (ns_http.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_http.h"
#include "nsmap.h"
#include "wire.h"

struct commit_ctx {
	struct pohm_ns *ns;
	uint64_t base_dversion;
	uint64_t size;
	const struct pohm_chunk_set *set;	/* sorted by index (set_sorted) */
	size_t n;
	const struct pohm_ts *mtime;
	const struct pohm_setattr *sa;		/* attributes carried by the commit, or NULL */
	unsigned shift;				/* the file's new chunk_shift, or 0 (decision 0072) */
	uint64_t hint_dir;			/* http_compat: the name the copy follows, */
	const char *hint_name;			/* or NULL */
};

/* Moved from ns_http.c (session 13, issue 20): called inside the commit's CAS. */
int ns_http_hint_set(struct pohm_inode *in, uint64_t dir, const char *name)
{
	char *p;

	if (!S_ISDIR(in->mode))
		in->hdr.parent = dir;	/* a directory's parent is the rename's business */
	if (in->pname && !strcmp(in->pname, name))
		return 0;
	p = malloc(strlen(name) + 1);
	if (!p)
		return -ENOMEM;
	strcpy(p, name);
	free(in->pname);
	in->pname = p;
	return 0;
}

/* Do the indexes of set (sorted by index) hold each of 0..need-1 and no
 * other (a chunk may come more than once)?  need 0 still wants chunk 0. */
static int set_covers(const struct pohm_chunk_set *set, size_t n, uint64_t need)
{
	uint64_t next = 0;	/* the index the walk wants next */
	size_t i;

	if (!need)
		need = 1;
	for (i = 0; i < n; i++) {
		if (set[i].index == next)
			next++;
		else if (!next || set[i].index != next - 1)
			return 0;	/* a gap, or past the map */
	}
	return next == need;
}

static int commit_fn(struct pohm_inode *in, void *arg)
{
	const struct commit_ctx *c = arg;
	int r;

	if (!S_ISREG(in->mode))
		return S_ISDIR(in->mode) ? -EISDIR : -EINVAL;
	if (in->dversion != c->base_dversion)
		return -ESTALE;		/* the data moved on since the writer's base */
	if (c->shift && c->shift != in->chunk_shift) {
		/* A new chunk size (decision 0072): only over a version of at
		 * most one chunk, every chunk of the new map in the set (its
		 * chunk 0 replaces the old one, as a rewrite's would). */
		if (in->nmaps || in->size > pohm_inode_chunk_size(in) || c->shift < 12 ||
		    c->shift > 30 ||
		    !set_covers(c->set, c->n, (c->size + (1ULL << c->shift) - 1) >> c->shift))
			return -EINVAL;
		in->chunk_shift = (uint8_t)c->shift;
	}
	/* Writes the map objects that change (external maps) before our CAS. */
	r = ns_map_apply(c->ns, in, c->size, c->set, c->n);
	if (r)
		return r;
	in->size = c->size;
	in->dversion++;
	if (c->mtime)
		in->mtime = *c->mtime;
	else
		ns_now_ts(&in->mtime);
	ns_now_ts(&in->ctime);
	/* The mode, owner and times the writer set, in the same CAS as
	 * setattr applies them (based times judged against what is stored
	 * now); "nothing left" (1) only means the data alone is written. */
	if (c->sa && (r = ns_setattr_apply(in, c->sa)) < 0)
		return r;
	if (c->hint_name)
		return ns_http_hint_set(in, c->hint_dir, c->hint_name);
	return 0;
}

static int set_cmp(const void *a, const void *b)
{
	const struct pohm_chunk_set *x = *(const struct pohm_chunk_set * const *)a;
	const struct pohm_chunk_set *y = *(const struct pohm_chunk_set * const *)b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x < y ? -1 : x > y;	/* the later of two equal indexes wins */
}

/* A copy of set sorted by index, in which a later entry for the same chunk comes later. */
static struct pohm_chunk_set *set_sorted(const struct pohm_chunk_set *set, size_t n)
{
	const struct pohm_chunk_set **p = malloc((n ? n : 1) * sizeof(*p));
	struct pohm_chunk_set *out = malloc((n ? n : 1) * sizeof(*out));
	size_t i;

	if (!p || !out) {
		free(p);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++)
		p[i] = &set[i];
	qsort(p, n, sizeof(*p), set_cmp);
	for (i = 0; i < n; i++)
		out[i] = *p[i];
	free(p);
	return out;
}

int pohm_ns_commit_map(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion, uint64_t size,
		       const struct pohm_chunk_set *set, size_t n, const struct pohm_ts *mtime,
		       const struct pohm_setattr *sa, struct pohm_inode *out)
{
	return pohm_ns_commit_map_shift(ns, ino, base_dversion, size, 0, set, n, mtime, sa, out);
}

int pohm_ns_commit_map_shift(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion,
			     uint64_t size, unsigned shift, const struct pohm_chunk_set *set,
			     size_t n, const struct pohm_ts *mtime, const struct pohm_setattr *sa,
			     struct pohm_inode *out)
{
	struct commit_ctx c = { ns, base_dversion, size, NULL, n, mtime, sa, shift, 0, NULL };
	struct pohm_chunk_set *sorted;
	char hint[POHM_NAME_MAX + 1];
	struct pohm_inode in;
	int r;

	if (sa && (sa->mask & POHM_SET_SIZE))
		return -EINVAL;		/* the size is the commit's */
	sorted = set_sorted(set, n);
	if (!sorted)
		return -ENOMEM;
	c.set = sorted;
	/* http_compat: the name the path copy follows is recorded by this CAS. */
	if (ns_http_hint_find(ns, ino, &c.hint_dir, hint) == 0)
		c.hint_name = hint;
	r = ns_inode_update(ns, ino, commit_fn, &c, &in);
	free(sorted);
	if (r)
		return r;
	/* After the commit point: the path copy is a convenience, never the truth. */
	ns_http_commit(ns, &in);
	if (out) {
		/* Callers get the whole map (the cache keeps every chunk's checksum). */
		r = pohm_ns_map_load(ns, &in);
		if (r) {
			pohm_inode_clear(&in);
			return r;
		}
		*out = in;
	} else {
		pohm_inode_clear(&in);
	}
	return 0;
}

/* ---------------------------------------------------------------- many commits together */

/* One commit of pohm_ns_commit_map_n on its way. */
struct commit_one {
	struct commit_ctx c;
	char key[POHM_KEY_MAX];
	struct pohm_kv_val base;	/* the stored bytes its CAS replaces */
	struct pohm_inode in;		/* the new inode (state PUT) */
	struct pohm_buf b;		/* its bytes */
	int state;
};

enum { ONE_ALONE, ONE_READ, ONE_PUT, ONE_DONE };

/* cm's commit applied to base e->base (read fresh: fresh): ONE_PUT with
 * the new bytes, ONE_DONE with cm->rc (fresh bytes only: a peeked copy
 * may be stale), or ONE_READ / ONE_ALONE. */
static int one_apply(struct pohm_ns *ns, struct commit_one *e, struct pohm_ns_commit *cm,
		     int fresh)
{
	int r;

	if (pohm_inode_decode(&e->in, e->base.data, e->base.len))
		return fresh ? ONE_ALONE : ONE_READ;	/* alone: it says why */
	if (e->in.ino != cm->ino || (e->in.hdr.flags & POHM_OBJF_TOMBSTONE)) {
		pohm_inode_clear(&e->in);
		return fresh ? ONE_ALONE : ONE_READ;
	}
	r = commit_fn(&e->in, &e->c);
	if (r) {
		pohm_inode_clear(&e->in);
		if (!fresh)
			return ONE_READ;	/* maybe only the copy is old */
		cm->rc = r;			/* -ESTALE: the data moved on */
		return ONE_DONE;
	}
	e->in.version++;
	e->in.txid = ns_random(ns);
	if (pohm_inode_encode(&e->b, &e->in)) {
		pohm_inode_clear(&e->in);
		return ONE_ALONE;
	}
	return ONE_PUT;
}

/* The bases nobody kept, read together (get_n); each then applied. */
static void many_read(struct pohm_ns *ns, size_t n, struct commit_one *e,
		      struct pohm_ns_commit *cm)
{
	const char **keys = calloc(n, sizeof(*keys));
	struct pohm_kv_val *v = calloc(n, sizeof(*v));
	int *st = calloc(n, sizeof(*st));
	size_t *at = calloc(n, sizeof(*at));
	size_t i, k = 0;

	if (!keys || !v || !st || !at || !ns->kv.ops->get_n)
		goto out;
	for (i = 0; i < n; i++)
		if (e[i].state == ONE_READ) {
			at[k] = i;
			keys[k++] = e[i].key;
		}
	if (!k || ns->kv.ops->get_n(ns->kv.ctx, k, keys, v, st))
		goto out;	/* those still ONE_READ go alone */
	for (i = 0; i < k; i++) {
		struct commit_one *o = &e[at[i]];

		if (st[i]) {
			o->state = ONE_DONE;
			cm[at[i]].rc = st[i];	/* -ENOENT, -EIO: as the read of a commit alone */
			continue;
		}
		pohm_kv_val_free(&o->base);
		o->base = v[i];
		memset(&v[i], 0, sizeof(v[i]));
		o->state = one_apply(ns, o, &cm[at[i]], 1);
	}
out:
	for (i = 0; v && i < k; i++)
		pohm_kv_val_free(&v[i]);
	free(keys);
	free(v);
	free(st);
	free(at);
}

/* The CASes together (put_many), against each one's base. */
static void many_put(struct pohm_ns *ns, size_t n, struct commit_one *e, struct pohm_ns_commit *cm)
{
	struct pohm_kv_cas *p = calloc(n, sizeof(*p));
	size_t *at = calloc(n, sizeof(*at));
	size_t i, k = 0;

	if (!p || !at)
		goto out;
	for (i = 0; i < n; i++)
		if (e[i].state == ONE_PUT) {
			p[k].key = e[i].key;
			p[k].data = e[i].b.p;
			p[k].len = e[i].b.len;
			p[k].expect = e[i].base.csum;
			p[k].base = &e[i].base;
			at[k++] = i;
		}
	if (!k || ns->kv.ops->put_many(ns->kv.ctx, k, p))
		goto out;	/* not sent: each alone */
	for (i = 0; i < k; i++) {
		struct commit_one *o = &e[at[i]];
		struct pohm_ns_commit *c = &cm[at[i]];

		if (p[i].st == -EAGAIN)
			continue;	/* lost (an old base, a racing writer): alone, reading */
		o->state = ONE_DONE;
		c->rc = p[i].st;
		if (c->rc)
			continue;
		/* Callers get the whole map, as from pohm_ns_commit_map. */
		c->rc = pohm_ns_map_load(ns, &o->in);
		if (!c->rc) {
			c->out = o->in;
			memset(&o->in, 0, sizeof(o->in));
		}
	}
out:
	for (i = 0; i < n; i++)
		if (e[i].state == ONE_PUT) {
			pohm_inode_clear(&e[i].in);
			e[i].state = ONE_ALONE;
		}
	free(p);
	free(at);
}

int pohm_ns_commit_map_n(struct pohm_ns *ns, size_t n, struct pohm_ns_commit *cm)
{
	struct commit_one *e = calloc(n ? n : 1, sizeof(*e));
	char hint[POHM_NAME_MAX + 1];
	uint64_t hdir;
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&cm[i].out, 0, sizeof(cm[i].out));
		cm[i].rc = 0;
	}
	if (!e || !ns->kv.ops->put_many)
		goto alone;
	for (i = 0; i < n; i++) {
		struct commit_one *o = &e[i];
		struct pohm_ns_commit *c = &cm[i];

		o->state = ONE_ALONE;
		/* http_compat's path copy follows the commit: alone. */
		if ((c->sa && (c->sa->mask & POHM_SET_SIZE)) ||
		    ns_http_hint_find(ns, c->ino, &hdir, hint) == 0)
			continue;
		o->c.ns = ns;
		o->c.base_dversion = c->base_dversion;
		o->c.size = c->size;
		o->c.n = c->n;
		o->c.mtime = c->mtime;
		o->c.sa = c->sa;
		o->c.set = set_sorted(c->set, c->n);
		if (!o->c.set)
			continue;
		pohm_key_inode(o->key, c->ino);
		/* The version this process (or another of the cache) kept: no read. */
		o->state = ns_peek(ns, o->key, &o->base) ? ONE_READ : one_apply(ns, o, c, 0);
	}
	many_read(ns, n, e, cm);
	many_put(ns, n, e, cm);
alone:
	for (i = 0; i < n; i++) {
		if (e && e[i].state == ONE_DONE)
			continue;
		cm[i].rc = pohm_ns_commit_map(ns, cm[i].ino, cm[i].base_dversion, cm[i].size,
					      cm[i].set, cm[i].n, cm[i].mtime, cm[i].sa, &cm[i].out);
	}
	for (i = 0; e && i < n; i++) {
		free((void *)e[i].c.set);
		pohm_kv_val_free(&e[i].base);
		pohm_buf_free(&e[i].b);
	}
	free(e);
	return 0;
}

int pohm_ns_commit(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion, uint64_t size,
		   const struct pohm_chunk_write *w, size_t nw, const struct pohm_ts *mtime,
		   struct pohm_inode *out)
{
	struct pohm_chunk_set *set = NULL;
	struct pohm_inode in;
	uint64_t cs;
	size_t i, n = 0;
	int r;

	/* The chunk size is the inode's. */
	r = ns_inode_get(ns, ino, &in, NULL, 0);
	if (r)
		return r;
	cs = pohm_inode_chunk_size(&in);
	pohm_inode_clear(&in);
	if (nw && !(set = calloc(nw, sizeof(*set))))
		return -ENOMEM;
	for (i = 0; i < nw; i++) {
		if (w[i].len > cs || (w[i].len == 0 && w[i].index * cs < size)) {
			r = -EINVAL;
			goto out;
		}
		if (w[i].index * cs >= size)
			continue;
		set[n].index = w[i].index;
		set[n].len = (uint32_t)w[i].len;
		pohm_sha512(w[i].data, w[i].len, set[n].csum);
		if (w[i].index == 0 && pohm_ns_inline_ok(ns, size)) {
			set[n].gen = POHM_GEN_INLINE;	/* carried by the commit */
			set[n].data = w[i].data;
			n++;
			continue;
		}
		r = pohm_ns_put_chunk(ns, ino, w[i].index, w[i].data, w[i].len, &set[n].gen);
		if (r)
			goto out;
		n++;
	}
	r = pohm_ns_commit_map(ns, ino, base_dversion, size, set, n, mtime, NULL, out);
out:
	free(set);
	return r;
}

/*
 * What guarantees a chunk's bytes: its map entry's SHA-512 (DESIGN.md §3),
 * recorded by the writer in the committed inode or map object, which the
 * reader got by a checked CAS read.  That check is end to end: it catches
 * a corrupt disk, a bad transfer and a wrong or stale object alike, with or
 * without noreadcsum.  The io layer's read checksum (the node's SHA-512 of
 * the stored object, header included, checked by the client) would only
 * repeat it for the transfer, at the price of a hash on the node and a
 * second on the client; so chunks are read through the kv get_many op,
 * which asks for none, and hashed here once.  A copy that fails is
 * refused with -EBADMSG and the next replica is read.
 */
static int chunk_verify(uint64_t ino, uint64_t index, const struct pohm_chunkref *ref,
			const uint8_t *obj, size_t olen, const uint8_t **data, size_t *len)
{
	struct pohm_sha512 h, prefix;
	uint64_t cino, cidx, cgen;
	uint8_t sum[64];

	if (pohm_chunk_decode(&cino, &cidx, &cgen, data, len, obj, olen) || cino != ino ||
	    cidx != index || cgen != ref->gen || *len < ref->len)
		return -EBADMSG;
	/*
	 * The map's checksum covers the bytes the chunk was written with, or,
	 * after a truncate shortened the entry, its first ref->len bytes: one
	 * pass hashes the prefix and goes on to the whole.
	 */
	pohm_sha512_init(&h);
	pohm_sha512_update(&h, *data, ref->len);
	prefix = h;
	pohm_sha512_final(&prefix, sum);
	if (!memcmp(sum, ref->csum, 64))
		return 0;
	if (*len == ref->len)
		return -EBADMSG;
	pohm_sha512_update(&h, *data + ref->len, *len - ref->len);
	pohm_sha512_final(&h, sum);
	return memcmp(sum, ref->csum, 64) ? -EBADMSG : 0;
}

/* A batch of chunks to read: their keys and map entries. */
#define STREAM_BATCH 64
struct chunk_batch {
	struct pohm_ns *ns;
	uint64_t ino, size, cs;
	size_t n;
	uint64_t index[STREAM_BATCH];
	struct pohm_chunkref ref[STREAM_BATCH];
	char key[STREAM_BATCH][POHM_KEY_MAX];
	const char *keys[STREAM_BATCH];
	int (*sink)(void *arg, uint64_t off, const uint8_t *p, size_t n);
	void *arg;
};

/* get_many's consumer: verify chunk i, hand its bytes within the file to the sink. */
static int batch_take(void *arg, size_t i, const uint8_t *obj, size_t olen)
{
	struct chunk_batch *b = arg;
	uint64_t off = b->index[i] * b->cs;
	const uint8_t *data;
	size_t len;
	int r = chunk_verify(b->ino, b->index[i], &b->ref[i], obj, olen, &data, &len);

	if (r)
		return r;
	len = b->ref[i].len;
	if (len > b->size - off)
		len = (size_t)(b->size - off);
	return b->sink(b->arg, off, data, len);
}

/* Read the batch's chunks, several in flight, to its sink in order. */
static int batch_run(struct chunk_batch *b)
{
	const struct pohm_kv *kv = &b->ns->kv;
	size_t i, max_len;
	unsigned inflight;
	int r = 0;

	if (!b->n)
		return 0;
	if (!kv->ops->get_many) {
		for (i = 0; i < b->n && !r; i++) {
			struct pohm_kv_val v = { 0 };

			r = kv->ops->get(kv->ctx, b->keys[i], &v);
			if (!r)
				r = batch_take(b, i, v.data, v.len);
			pohm_kv_val_free(&v);
		}
	} else {
		/* The header's size varies with the key's digits: some slack. */
		max_len = (size_t)b->cs + pohm_chunk_data_offset(b->ns->fsid, b->keys[0]) + 64;
		/* 8 in flight, at most 64 MiB of answers. */
		inflight = (unsigned)((64u << 20) / max_len);
		if (inflight > 8)
			inflight = 8;
		r = kv->ops->get_many(kv->ctx, b->n, b->keys, inflight ? inflight : 1, max_len,
				      batch_take, b);
	}
	b->n = 0;
	if (r == -ENOENT || r == -EBADMSG)
		return -EIO;	/* a committed map never points at nothing */
	return r;
}

/* Add chunk index (entry ref) to the batch, reading it when full. */
static int batch_add(struct chunk_batch *b, uint64_t index, const struct pohm_chunkref *ref)
{
	b->index[b->n] = index;
	b->ref[b->n] = *ref;
	pohm_key_chunk(b->key[b->n], b->ino, index, ref->gen);
	b->keys[b->n] = b->key[b->n];
	if (++b->n < STREAM_BATCH)
		return 0;
	return batch_run(b);
}

/* Inline data (decision 0023): the inode's own bytes, checked by its decoder. */
static int inline_take(struct chunk_batch *b, const struct pohm_inode *in,
		       const struct pohm_chunkref *ref)
{
	size_t len = ref->len;

	if (!in->idata)
		return -EIO;
	if (len > b->size)
		len = (size_t)b->size;
	return len ? b->sink(b->arg, 0, in->idata, len) : 0;
}

int pohm_ns_read_stream(struct pohm_ns *ns, const struct pohm_inode *in,
			int (*sink)(void *arg, uint64_t off, const uint8_t *p, size_t n),
			void *arg)
{
	struct chunk_batch *b = malloc(sizeof(*b));
	struct ns_map_cursor cur;
	uint64_t index, end;
	int r = 0;

	if (!b)
		return -ENOMEM;
	b->ns = ns;
	b->ino = in->ino;
	b->size = in->size;
	b->cs = pohm_inode_chunk_size(in);
	b->n = 0;
	b->sink = sink;
	b->arg = arg;
	end = (in->size + b->cs - 1) / b->cs;
	ns_map_cursor_init(&cur, in);
	for (index = 0; index < end && !r; index++) {
		struct pohm_chunkref ref;

		r = ns_map_entry(ns, &cur, index, &ref);
		if (!r && ref.gen == POHM_GEN_INLINE)
			r = inline_take(b, in, &ref);	/* no chunk object */
		else if (!r && ref.gen && ref.len)
			r = batch_add(b, index, &ref);	/* holes are not delivered */
	}
	if (!r)
		r = batch_run(b);
	ns_map_cursor_release(&cur);
	free(b);
	return r;
}

/* pohm_ns_read's sink: the bytes of [lo, hi) of the file into buf. */
struct read_range {
	uint8_t *buf;
	uint64_t lo, hi;
};

static int range_take(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct read_range *rr = arg;
	uint64_t a = off > rr->lo ? off : rr->lo, e = off + n < rr->hi ? off + n : rr->hi;

	if (a < e)
		memcpy(rr->buf + (a - rr->lo), p + (a - off), (size_t)(e - a));
	return 0;
}

ssize_t pohm_ns_read(struct pohm_ns *ns, const struct pohm_inode *in, uint64_t off, void *buf,
		     size_t len)
{
	uint64_t cs = pohm_inode_chunk_size(in), done = 0;
	struct ns_map_cursor cur;
	ssize_t ret;

	if (off >= in->size)
		return 0;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	ns_map_cursor_init(&cur, in);
	while (done < len) {
		uint64_t pos = off + done, index = pos / cs, in_chunk = pos % cs;
		size_t n = (size_t)(cs - in_chunk);
		struct pohm_chunkref ref;
		int r;

		if (n > len - done)
			n = (size_t)(len - done);
		r = ns_map_entry(ns, &cur, index, &ref);
		if (r) {
			ret = r;
			goto out;
		}
		if (!ref.gen || in_chunk >= ref.len) {
			memset((char *)buf + done, 0, n);	/* a hole */
		} else if (ref.gen == POHM_GEN_INLINE) {
			/* Inline data (decision 0023): from the inode, zeros past it. */
			size_t have = ref.len - in_chunk;

			if (!in->idata) {
				ret = -EIO;
				goto out;
			}
			memcpy((char *)buf + done, in->idata + in_chunk, have < n ? have : n);
			if (have < n)
				memset((char *)buf + done + have, 0, n - have);
		} else {
			/* Zeros past the chunk's bytes, then its bytes in range over them. */
			struct chunk_batch *b = malloc(sizeof(*b));
			struct read_range rr = { (uint8_t *)buf + done, pos, pos + n };
			size_t have = ref.len - in_chunk;

			if (have < n)
				memset((char *)buf + done + have, 0, n - have);
			if (!b) {
				ret = -ENOMEM;
				goto out;
			}
			b->ns = ns;
			b->ino = in->ino;
			b->size = in->size;
			b->cs = cs;
			b->n = 0;
			b->sink = range_take;
			b->arg = &rr;
			r = batch_add(b, index, &ref);
			if (!r)
				r = batch_run(b);
			free(b);
			if (r) {
				ret = r;
				goto out;
			}
		}
		done += n;
	}
	ret = (ssize_t)done;
out:
	ns_map_cursor_release(&cur);
	return ret;
}
