/*
 * nsdata.c — file data as immutable chunk generations (DESIGN.md §3).
 *
 * A commit writes the changed chunks under fresh generation numbers
 * (d:<ino>:<chunk>:<gen>, never overwritten), then CASes the inode with the
 * new map: the inode CAS is the commit point, so a reader that follows a
 * committed map never sees a mix of old and new chunks, and a writer that
 * dies before it leaves only unreferenced chunks (reclaimed by fsck).
 * Every map entry carries the chunk's SHA-512; a read verifies it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_int.h"
#include "sha512.h"

struct commit_ctx {
	uint64_t base_dversion;
	uint64_t size;
	const struct pohm_chunk_set *set;
	size_t n;
	const struct pohm_ts *mtime;
};

static int commit_fn(struct pohm_inode *in, void *arg)
{
	const struct commit_ctx *c = arg;
	uint64_t cs = pohm_inode_chunk_size(in), need;
	size_t i;

	if (!S_ISREG(in->mode))
		return S_ISDIR(in->mode) ? -EISDIR : -EINVAL;
	if (in->dversion != c->base_dversion)
		return -ESTALE;		/* the data moved on since the writer's base */
	need = (c->size + cs - 1) / cs;
	if (need > in->nchunks) {
		struct pohm_chunkref *m = realloc(in->chunks, need * sizeof(*m));

		if (!m)
			return -ENOMEM;
		memset(m + in->nchunks, 0, (need - in->nchunks) * sizeof(*m));
		in->chunks = m;
	}
	in->nchunks = (uint32_t)need;
	for (i = 0; i < c->n; i++) {
		struct pohm_chunkref *ref;

		if (c->set[i].index >= need)
			continue;	/* wholly past the new end */
		ref = &in->chunks[c->set[i].index];
		ref->gen = c->set[i].gen;
		ref->len = c->set[i].len;
		memcpy(ref->csum, c->set[i].csum, 64);
	}
	/* A kept last chunk that reaches past the new size is cut on read. */
	if (need && in->chunks[need - 1].len > c->size - (need - 1) * cs)
		in->chunks[need - 1].len = (uint32_t)(c->size - (need - 1) * cs);
	in->size = c->size;
	in->dversion++;
	if (c->mtime)
		in->mtime = *c->mtime;
	else
		ns_now_ts(&in->mtime);
	ns_now_ts(&in->ctime);
	return 0;
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
	struct commit_ctx c = { base_dversion, size, set, n, mtime };

	return ns_inode_update(ns, ino, commit_fn, &c, out);
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

	if (off >= in->size)
		return 0;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	while (done < len) {
		uint64_t pos = off + done, index = pos / cs, in_chunk = pos % cs;
		size_t n = (size_t)(cs - in_chunk);
		const struct pohm_chunkref *ref;

		if (n > len - done)
			n = (size_t)(len - done);
		ref = index < in->nchunks ? &in->chunks[index] : NULL;
		if (!ref || !ref->gen || in_chunk >= ref->len) {
			memset((char *)buf + done, 0, n);	/* a hole */
		} else {
			struct pohm_kv_val v = { 0 };
			const uint8_t *data;
			size_t dlen, have;
			int r = chunk_fetch(ns, in->ino, index, ref, &v, &data, &dlen);

			if (r) {
				pohm_kv_val_free(&v);
				return r;
			}
			have = ref->len - in_chunk;
			if (have > n)
				have = n;
			memcpy((char *)buf + done, data + in_chunk, have);
			if (have < n)
				memset((char *)buf + done + have, 0, n - have);
			pohm_kv_val_free(&v);
		}
		done += n;
	}
	return (ssize_t)done;
}
