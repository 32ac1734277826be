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
#include "sha512.h"

struct commit_ctx {
	struct pohm_ns *ns;
	uint64_t base_dversion;
	uint64_t size;
	const struct pohm_chunk_set *set;	/* sorted by index (set_sorted) */
	size_t n;
	const struct pohm_ts *mtime;
	uint64_t hint_dir;			/* http_compat: the name the copy follows, */
	const char *hint_name;			/* or NULL */
};

static int commit_fn(struct pohm_inode *in, void *arg)
{
	const struct commit_ctx *c = arg;
	int r;

	if (!S_ISREG(in->mode))
		return S_ISDIR(in->mode) ? -EISDIR : -EINVAL;
	if (in->dversion != c->base_dversion)
		return -ESTALE;		/* the data moved on since the writer's base */
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

int pohm_ns_put_chunk(struct pohm_ns *ns, uint64_t ino, uint64_t index, const void *data,
		      size_t len, uint64_t *gen)
{
	struct pohm_buf b = POHM_BUF_INIT;
	char key[POHM_KEY_MAX];
	int r;

	if (!len)
		return -EINVAL;
	*gen = ns_random(ns);
	pohm_key_chunk(key, ino, index, *gen);
	r = pohm_chunk_encode(&b, ns->fsid, ino, index, *gen, data, len);
	if (!r)
		r = ns->kv.ops->put(ns->kv.ctx, key, b.p, b.len, NULL);
	pohm_buf_free(&b);
	return r;
}

int pohm_ns_commit_map(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion, uint64_t size,
		       const struct pohm_chunk_set *set, size_t n, const struct pohm_ts *mtime,
		       struct pohm_inode *out)
{
	struct commit_ctx c = { ns, base_dversion, size, NULL, n, mtime, 0, NULL };
	struct pohm_chunk_set *sorted = set_sorted(set, n);
	char hint[POHM_NAME_MAX + 1];
	struct pohm_inode in;
	int r;

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
		r = pohm_ns_put_chunk(ns, ino, w[i].index, w[i].data, w[i].len, &set[n].gen);
		if (r)
			goto out;
		n++;
	}
	r = pohm_ns_commit_map(ns, ino, base_dversion, size, set, n, mtime, out);
out:
	free(set);
	return r;
}

/* Read one chunk whole and verify it against its map entry. */
static int chunk_fetch(struct pohm_ns *ns, uint64_t ino, uint64_t index,
		       const struct pohm_chunkref *ref, struct pohm_kv_val *v,
		       const uint8_t **data, size_t *len)
{
	uint64_t cino, cidx, cgen;
	char key[POHM_KEY_MAX];
	uint8_t sum[64];
	int r;

	pohm_key_chunk(key, ino, index, ref->gen);
	r = ns->kv.ops->get(ns->kv.ctx, key, v);
	if (r)
		return r == -ENOENT ? -EIO : r;	/* a committed map never points at nothing */
	r = pohm_chunk_decode(&cino, &cidx, &cgen, data, len, v->data, v->len);
	if (r || cino != ino || cidx != index || cgen != ref->gen || *len < ref->len)
		return -EIO;
	pohm_sha512(*data, *len, sum);
	/* The map's checksum covers the bytes the chunk was written with. */
	if (memcmp(sum, ref->csum, 64)) {
		/* A truncate may have shortened the map entry: check the prefix too. */
		pohm_sha512(*data, ref->len, sum);
		if (memcmp(sum, ref->csum, 64))
			return -EIO;
	}
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
		} else {
			struct pohm_kv_val v = { 0 };
			const uint8_t *data;
			size_t dlen, have;

			r = chunk_fetch(ns, in->ino, index, &ref, &v, &data, &dlen);
			if (r) {
				pohm_kv_val_free(&v);
				ret = r;
				goto out;
			}
			have = ref.len - in_chunk;
			if (have > n)
				have = n;
			memcpy((char *)buf + done, data + in_chunk, have);
			if (have < n)
				memset((char *)buf + done + have, 0, n - have);
			pohm_kv_val_free(&v);
		}
		done += n;
	}
	ret = (ssize_t)done;
out:
	ns_map_cursor_release(&cur);
	return ret;
}
