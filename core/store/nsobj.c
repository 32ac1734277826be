/*
 * nsobj.c — encode and decode the namespace objects (see nsobj.h).
 *
 * Sections: cursor · keys · header · chunk map entries · inode · bucket ·
 * chunk · map object · lease · hash.
 * Decoding uses a cursor whose every read checks the remaining length and
 * latches an error; a decoder checks the error once at the end.
 */
#include "nsobj.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"

/* ---------------------------------------------------------------- cursor (buf.h pohm_rd) */

/* A length-prefixed string copied into a fresh NUL-terminated allocation. */
static char *rd_str(struct pohm_rd *r, size_t len, size_t max)
{
	const uint8_t *p;
	char *s;

	if (len > max) {
		r->err = -EPROTO;
		return NULL;
	}
	p = pohm_rd_take(r, len);
	if (!p)
		return NULL;
	if (memchr(p, '\0', len)) {
		r->err = -EPROTO;
		return NULL;
	}
	s = malloc(len + 1);
	if (!s) {
		r->err = -ENOMEM;
		return NULL;
	}
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

static void rd_ts(struct pohm_rd *r, struct pohm_ts *t)
{
	t->sec = (int64_t)pohm_rd_u64(r);
	t->nsec = pohm_rd_u32(r);
	if (t->nsec >= 1000000000u)
		r->err = r->err ? r->err : -EPROTO;
}

static int put_u8(struct pohm_buf *b, uint8_t v)
{
	return pohm_buf_put(b, &v, 1);
}

static int put_u16(struct pohm_buf *b, uint16_t v)
{
	uint8_t x[2];

	pohm_st16(x, v);
	return pohm_buf_put(b, x, 2);
}

static int put_ts(struct pohm_buf *b, const struct pohm_ts *t)
{
	return pohm_buf_put_u64(b, (uint64_t)t->sec) | pohm_buf_put_u32(b, t->nsec);
}

/* ---------------------------------------------------------------- keys */

/*
 * The keys by hand, not snprintf (issue 23: ~1 k instructions a key, a
 * dozen keys a created file): "T:" then the fields, ':' between them, in
 * lowercase hex without leading zeros (PRIx64), the bucket's depth in
 * decimal (%u).  The longest, a chunk's, is 53 bytes: never cut.
 */
static char *key_field(char *o, uint64_t x, int sep)
{
	if (sep)
		*o++ = ':';
	return pohm_put_hex(o, o + 16, x);
}

static char *key_dec(char *o, unsigned x)
{
	char tmp[10];
	int n = 0;

	*o++ = ':';
	do {
		tmp[n++] = (char)('0' + x % 10);
		x /= 10;
	} while (x);
	while (n)
		*o++ = tmp[--n];
	return o;
}

static void key3(char *out, char tag, uint64_t a, uint64_t b, uint64_t c)
{
	char *o = out;

	*o++ = tag;
	*o++ = ':';
	o = key_field(o, a, 0);
	o = key_field(o, b, 1);
	o = key_field(o, c, 1);
	*o = 0;
}

void pohm_key_inode(char *out, uint64_t ino)
{
	char *o = out;

	*o++ = 'i';
	*o++ = ':';
	o = key_field(o, ino, 0);
	*o = 0;
}

void pohm_key_bucket(char *out, uint64_t dir, unsigned depth, uint32_t index)
{
	char *o = out;

	*o++ = 'b';
	*o++ = ':';
	o = key_field(o, dir, 0);
	o = key_dec(o, depth);
	o = key_field(o, index, 1);
	*o = 0;
}

void pohm_key_chunk(char *out, uint64_t ino, uint64_t chunk, uint64_t gen)
{
	key3(out, 'd', ino, chunk, gen);
}

void pohm_key_map(char *out, uint64_t ino, uint64_t map, uint64_t gen)
{
	key3(out, 'm', ino, map, gen);
}

/* ---------------------------------------------------------------- header */

static int hdr_encode(struct pohm_buf *b, const struct pohm_obj_hdr *h)
{
	size_t fl = strnlen(h->fsid, sizeof(h->fsid) - 1), kl = strnlen(h->key, POHM_KEY_MAX - 1);
	int r = 0;

	r |= pohm_buf_put_u32(b, POHM_OBJ_MAGIC);
	r |= put_u8(b, POHM_OBJ_FORMAT);
	r |= put_u8(b, h->type);
	r |= put_u16(b, h->flags);
	r |= pohm_buf_put_u64(b, h->parent);
	r |= put_u16(b, (uint16_t)fl);
	r |= put_u16(b, (uint16_t)kl);
	r |= pohm_buf_put(b, h->fsid, fl);
	r |= pohm_buf_put(b, h->key, kl);
	return r ? -ENOMEM : 0;
}

static int hdr_decode(struct pohm_obj_hdr *h, struct pohm_rd *r)
{
	uint16_t fl, kl;
	const uint8_t *p;

	memset(h, 0, sizeof(*h));
	if (pohm_rd_u32(r) != POHM_OBJ_MAGIC)
		return r->err ? r->err : -EILSEQ;
	if (pohm_rd_u8(r) != POHM_OBJ_FORMAT)
		return r->err ? r->err : -EILSEQ;
	h->type = pohm_rd_u8(r);
	h->flags = pohm_rd_u16(r);
	h->parent = pohm_rd_u64(r);
	fl = pohm_rd_u16(r);
	kl = pohm_rd_u16(r);
	if (fl >= sizeof(h->fsid) || kl >= POHM_KEY_MAX)
		return -EPROTO;
	if ((p = pohm_rd_take(r, fl)))
		memcpy(h->fsid, p, fl);
	if ((p = pohm_rd_take(r, kl)))
		memcpy(h->key, p, kl);
	return r->err;
}

int pohm_obj_peek(struct pohm_obj_hdr *h, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);

	return hdr_decode(h, &r);
}

/* ---------------------------------------------------------------- chunk map entries */

/* n entries: gen, len, and the checksum of non-holes. */
static int put_chunkrefs(struct pohm_buf *b, const struct pohm_chunkref *c, uint32_t n)
{
	uint32_t i;
	int r = 0;

	for (i = 0; i < n; i++) {
		r |= pohm_buf_put_u64(b, c[i].gen);
		r |= pohm_buf_put_u32(b, c[i].len);
		if (c[i].gen)
			r |= pohm_buf_put(b, c[i].csum, 64);
	}
	return r;
}

/* Read cnt entries of at most max bytes each into a fresh array (*out; NULL if cnt is 0). */
static void rd_chunkrefs(struct pohm_rd *r, uint32_t cnt, uint64_t max, struct pohm_chunkref **out)
{
	uint32_t i;

	*out = NULL;
	if (r->err || (size_t)cnt * 12 > r->left) {
		r->err = r->err ? r->err : -EPROTO;
		return;
	}
	if (cnt && !(*out = calloc(cnt, sizeof(**out)))) {
		r->err = -ENOMEM;
		return;
	}
	for (i = 0; i < cnt && !r->err; i++) {
		const uint8_t *c;

		(*out)[i].gen = pohm_rd_u64(r);
		(*out)[i].len = pohm_rd_u32(r);
		if ((*out)[i].len > max)
			r->err = -EPROTO;
		if ((*out)[i].gen && (c = pohm_rd_take(r, 64)))
			memcpy((*out)[i].csum, c, 64);
	}
}

/* ---------------------------------------------------------------- inode */

/* Optional trailing section of an inode (absent in older objects). */
#define INODE_EXT_MAPS	0x1	/* external map */
#define INODE_EXT_PNAME	0x2	/* http_compat name hint */
#define INODE_EXT_INLINE 0x4	/* inline data (decision 0023; not in POHM_INODE_EXT_V1) */

int pohm_inode_is_inline(const struct pohm_inode *in)
{
	return !in->nmaps && in->nchunks == 1 && in->chunks[0].gen == POHM_GEN_INLINE;
}

int pohm_inode_set_inline(struct pohm_inode *in, const void *p, size_t len)
{
	struct pohm_chunkref *c = NULL;
	uint8_t *d = NULL;

	if (len > POHM_INLINE_MAX)
		return -EINVAL;
	if (len && (!(c = calloc(1, sizeof(*c))) || !(d = malloc(len)))) {
		free(c);
		return -ENOMEM;
	}
	if (len) {
		memcpy(d, p, len);
		c->gen = POHM_GEN_INLINE;
		c->len = (uint32_t)len;
		pohm_sha512(d, len, c->csum);
	}
	free(in->chunks);
	free(in->maps);
	free(in->idata);
	in->chunks = c;
	in->nchunks = len ? 1 : 0;
	in->idata = d;
	in->maps = NULL;
	in->nmaps = 0;
	in->map_span = 0;
	in->map_end = 0;
	in->map_trimmed = 0;
	in->map_loaded = 0;
	return 0;
}

/* The external map as stored: map_end clamped to size, refs past it dropped. */
static void inode_map_stored(const struct pohm_inode *in, uint64_t *end, uint32_t *nmaps,
			     uint8_t *trimmed)
{
	uint64_t cs = 1ULL << in->chunk_shift, span = in->map_span ? in->map_span : 1;
	uint64_t keep;

	*end = in->map_end < in->size ? in->map_end : in->size;
	*trimmed = in->map_trimmed || *end < in->map_end;
	keep = ((*end + cs - 1) / cs + span - 1) / span;
	*nmaps = keep < in->nmaps ? (uint32_t)keep : in->nmaps;
}

int pohm_inode_encode(struct pohm_buf *b, const struct pohm_inode *in)
{
	size_t tl = in->target ? strlen(in->target) : 0;
	int inl = pohm_inode_is_inline(in);
	uint32_t i;
	int r;

	if (inl && (!in->idata || in->chunks[0].len > POHM_INLINE_MAX))
		return -EINVAL;
	r = hdr_encode(b, &in->hdr);
	if (r)
		return r;
	r |= pohm_buf_put_u64(b, in->ino);
	r |= pohm_buf_put_u32(b, in->mode);
	r |= pohm_buf_put_u32(b, in->uid);
	r |= pohm_buf_put_u32(b, in->gid);
	r |= pohm_buf_put_u32(b, in->nlink);
	r |= pohm_buf_put_u64(b, in->size);
	r |= pohm_buf_put_u64(b, in->rdev);
	r |= put_ts(b, &in->atime);
	r |= put_ts(b, &in->mtime);
	r |= put_ts(b, &in->ctime);
	r |= put_ts(b, &in->btime);
	r |= pohm_buf_put_u64(b, in->version);
	r |= pohm_buf_put_u64(b, in->dversion);
	r |= pohm_buf_put_u64(b, in->txid);
	r |= put_u8(b, in->chunk_shift);
	r |= put_u8(b, in->depth_hint);
	r |= pohm_buf_put_u32(b, (uint32_t)tl);
	r |= pohm_buf_put(b, in->target, tl);
	r |= pohm_buf_put_u32(b, in->nxattr);
	for (i = 0; i < in->nxattr; i++) {
		size_t nl = strlen(in->xattr[i].name);

		r |= put_u16(b, (uint16_t)nl);
		r |= pohm_buf_put(b, in->xattr[i].name, nl);
		r |= pohm_buf_put_u32(b, in->xattr[i].len);
		r |= pohm_buf_put(b, in->xattr[i].value, in->xattr[i].len);
	}
	if (in->nmaps) {
		uint64_t end;
		uint32_t nmaps;
		uint8_t trimmed, ext = in->pname ? INODE_EXT_PNAME : 0;

		inode_map_stored(in, &end, &nmaps, &trimmed);
		r |= pohm_buf_put_u32(b, 0);	/* no inline entries */
		if (nmaps)
			ext |= INODE_EXT_MAPS;
		if (ext)
			r |= put_u8(b, ext);
		if (ext & INODE_EXT_MAPS) {
			r |= pohm_buf_put_u64(b, end);
			r |= put_u8(b, trimmed);
			r |= pohm_buf_put_u32(b, in->map_span);
			r |= pohm_buf_put_u32(b, nmaps);
			for (i = 0; i < nmaps; i++) {
				r |= pohm_buf_put_u64(b, in->maps[i].gen);
				if (in->maps[i].gen)
					r |= pohm_buf_put(b, in->maps[i].csum, 64);
			}
		}
	} else if (inl) {
		r |= pohm_buf_put_u32(b, 0);	/* no map entries: the data follows */
		r |= put_u8(b, INODE_EXT_INLINE | (in->pname ? INODE_EXT_PNAME : 0));
	} else {
		r |= pohm_buf_put_u32(b, in->nchunks);
		r |= put_chunkrefs(b, in->chunks, in->nchunks);
		if (in->pname)
			r |= put_u8(b, INODE_EXT_PNAME);
	}
	if (in->pname) {
		size_t nl = strlen(in->pname);

		r |= put_u16(b, (uint16_t)nl);
		r |= pohm_buf_put(b, in->pname, nl);
	}
	if (inl) {
		/*
		 * The checksum of the bytes as stored: chunk 0's, which is of
		 * exactly its len bytes of idata (decision 0023: every cut of
		 * inline data rehashes it), so not hashed again here (issue 23:
		 * a small file's bytes were hashed once more per commit).
		 */
		r |= pohm_buf_put_u32(b, in->chunks[0].len);
		r |= pohm_buf_put(b, in->chunks[0].csum, 64);
		r |= pohm_buf_put(b, in->idata, in->chunks[0].len);
	}
	return r ? -ENOMEM : 0;
}

/* The inline part: length, SHA-512, bytes; into chunk 0 and idata. */
static void inline_decode(struct pohm_inode *in, struct pohm_rd *r)
{
	const uint8_t *sum, *d;
	uint8_t chk[64];
	uint32_t len = pohm_rd_u32(r);

	sum = pohm_rd_take(r, 64);
	if (r->err || !len || len > POHM_INLINE_MAX || in->nchunks || in->nmaps ||
	    !(d = pohm_rd_take(r, len))) {
		r->err = r->err ? r->err : -EPROTO;
		return;
	}
	pohm_sha512(d, len, chk);
	if (memcmp(chk, sum, 64)) {
		r->err = -EPROTO;	/* damaged bytes: the caller's -EIO */
		return;
	}
	if (!(in->chunks = calloc(1, sizeof(*in->chunks))) || !(in->idata = malloc(len))) {
		r->err = -ENOMEM;
		return;
	}
	memcpy(in->idata, d, len);
	in->chunks[0].gen = POHM_GEN_INLINE;
	in->chunks[0].len = len;
	memcpy(in->chunks[0].csum, sum, 64);
	in->nchunks = 1;
}

/* The trailing section: external map references, the name hint, inline data. */
static void inode_ext_decode(struct pohm_inode *in, struct pohm_rd *r, uint8_t known)
{
	uint8_t ext;
	uint32_t i;

	if (r->err || !r->left)
		return;
	ext = pohm_rd_u8(r);
	if (ext & ~known) {
		r->err = -EPROTO;
		return;
	}
	if (ext & INODE_EXT_MAPS) {
		in->map_end = pohm_rd_u64(r);
		in->map_trimmed = pohm_rd_u8(r);
		in->map_span = pohm_rd_u32(r);
		in->nmaps = pohm_rd_u32(r);
		if (r->err || !in->nmaps || in->nchunks || !in->map_span ||
		    in->map_span > 65536 || (size_t)in->nmaps * 8 > r->left ||
		    in->map_end > in->size) {
			r->err = r->err ? r->err : -EPROTO;
			in->nmaps = 0;
			return;
		}
		if (!(in->maps = calloc(in->nmaps, sizeof(*in->maps)))) {
			r->err = -ENOMEM;
			in->nmaps = 0;
			return;
		}
		for (i = 0; i < in->nmaps && !r->err; i++) {
			const uint8_t *c;

			in->maps[i].gen = pohm_rd_u64(r);
			if (in->maps[i].gen && (c = pohm_rd_take(r, 64)))
				memcpy(in->maps[i].csum, c, 64);
		}
	}
	if (ext & INODE_EXT_PNAME) {
		uint16_t nl = pohm_rd_u16(r);

		if (!nl)
			r->err = r->err ? r->err : -EPROTO;
		else
			in->pname = rd_str(r, nl, POHM_NAME_MAX);
	}
	if (ext & INODE_EXT_INLINE)
		inline_decode(in, r);
}

int pohm_inode_decode(struct pohm_inode *in, const uint8_t *p, size_t n)
{
	return pohm_inode_decode_known(in, p, n, INODE_EXT_MAPS | INODE_EXT_PNAME | INODE_EXT_INLINE);
}

/* The fixed part: header, attributes, versions, chunk_shift, depth hint. */
static int inode_head_decode(struct pohm_inode *in, struct pohm_rd *r)
{
	int err;

	memset(in, 0, sizeof(*in));
	err = hdr_decode(&in->hdr, r);
	if (err)
		return err;
	if (in->hdr.type != POHM_OBJ_INODE)
		return -EPROTO;
	in->ino = pohm_rd_u64(r);
	in->mode = pohm_rd_u32(r);
	in->uid = pohm_rd_u32(r);
	in->gid = pohm_rd_u32(r);
	in->nlink = pohm_rd_u32(r);
	in->size = pohm_rd_u64(r);
	in->rdev = pohm_rd_u64(r);
	rd_ts(r, &in->atime);
	rd_ts(r, &in->mtime);
	rd_ts(r, &in->ctime);
	rd_ts(r, &in->btime);
	in->version = pohm_rd_u64(r);
	in->dversion = pohm_rd_u64(r);
	in->txid = pohm_rd_u64(r);
	in->chunk_shift = pohm_rd_u8(r);
	in->depth_hint = pohm_rd_u8(r);
	if (in->chunk_shift < 12 || in->chunk_shift > 30)
		r->err = r->err ? r->err : -EPROTO;
	return r->err;
}

int pohm_inode_decode_head(struct pohm_inode *in, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	int err = inode_head_decode(in, &r);

	if (err)
		memset(in, 0, sizeof(*in));
	return err;
}

int pohm_inode_decode_known(struct pohm_inode *in, const uint8_t *p, size_t n, uint8_t known)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	uint32_t i, tl, cnt;
	int err;

	err = inode_head_decode(in, &r);
	if (err)
		goto fail;
	tl = pohm_rd_u32(&r);
	if (tl)
		in->target = rd_str(&r, tl, 4095);
	cnt = pohm_rd_u32(&r);
	if (r.err || cnt > 4096 || (size_t)cnt * 6 > r.left) {
		err = r.err ? r.err : -EPROTO;
		goto fail;
	}
	if (cnt && !(in->xattr = calloc(cnt, sizeof(*in->xattr)))) {
		err = -ENOMEM;
		goto fail;
	}
	in->nxattr = cnt;
	for (i = 0; i < cnt && !r.err; i++) {
		const uint8_t *v;

		in->xattr[i].name = rd_str(&r, pohm_rd_u16(&r), POHM_NAME_MAX);
		in->xattr[i].len = pohm_rd_u32(&r);
		if (in->xattr[i].len > 65536) {
			r.err = -EPROTO;
			break;
		}
		v = pohm_rd_take(&r, in->xattr[i].len);
		if (v && (in->xattr[i].value = malloc(in->xattr[i].len + 1)))
			memcpy(in->xattr[i].value, v, in->xattr[i].len);
		else if (v)
			r.err = -ENOMEM;
	}
	cnt = pohm_rd_u32(&r);
	rd_chunkrefs(&r, cnt, 1ULL << in->chunk_shift, &in->chunks);
	if (!r.err)
		in->nchunks = cnt;
	inode_ext_decode(in, &r, known);
	if (r.err) {
		err = r.err;
		goto fail;
	}
	return 0;
fail:
	pohm_inode_clear(in);
	return err;
}

void pohm_inode_clear(struct pohm_inode *in)
{
	uint32_t i;

	free(in->target);
	for (i = 0; i < in->nxattr && in->xattr; i++) {
		free(in->xattr[i].name);
		free(in->xattr[i].value);
	}
	free(in->xattr);
	free(in->chunks);
	free(in->maps);
	free(in->pname);
	free(in->idata);
	memset(in, 0, sizeof(*in));
}

int pohm_inode_copy(struct pohm_inode *dst, const struct pohm_inode *src)
{
	struct pohm_buf b = POHM_BUF_INIT;
	int r = pohm_inode_encode(&b, src);

	if (!r)
		r = pohm_inode_decode(dst, b.p, b.len);
	pohm_buf_free(&b);
	/* A loaded external map is not part of the encoding: copy it too. */
	if (!r && src->nmaps && src->map_loaded && dst->nmaps) {
		dst->chunks = malloc(((size_t)src->nchunks ? src->nchunks : 1) * sizeof(*dst->chunks));
		if (!dst->chunks) {
			pohm_inode_clear(dst);
			return -ENOMEM;
		}
		memcpy(dst->chunks, src->chunks, (size_t)src->nchunks * sizeof(*dst->chunks));
		dst->nchunks = src->nchunks;
		dst->map_loaded = 1;
	}
	return r;
}

/* ---------------------------------------------------------------- bucket */

int pohm_bucket_encode(struct pohm_buf *b, const struct pohm_bucket *bk)
{
	uint32_t i;
	int r = hdr_encode(b, &bk->hdr);

	if (r)
		return r;
	r |= pohm_buf_put_u64(b, bk->dir);
	r |= put_u8(b, bk->depth);
	r |= put_u8(b, bk->state);
	r |= pohm_buf_put_u32(b, bk->index);
	r |= pohm_buf_put_u64(b, bk->txid);
	r |= pohm_buf_put_u64(b, bk->stamp);
	if (bk->state == POHM_BUCKET_SEALED || bk->state == POHM_BUCKET_SEALED_WITH) {
		size_t sl = bk->seal_name ? strlen(bk->seal_name) : 0;

		r |= pohm_buf_put_u64(b, bk->seal_parent);
		r |= put_u16(b, (uint16_t)sl);
		r |= pohm_buf_put(b, bk->seal_name, sl);
	}
	r |= pohm_buf_put_u32(b, bk->n);
	for (i = 0; i < bk->n; i++) {
		const struct pohm_dentry *e = &bk->e[i];
		size_t nl = strlen(e->name);

		r |= put_u16(b, (uint16_t)nl);
		r |= pohm_buf_put(b, e->name, nl);
		r |= pohm_buf_put_u64(b, e->ino);
		r |= put_u8(b, e->type);
		r |= pohm_buf_put_u64(b, e->txid);
		r |= put_u8(b, e->intent);
		if (e->intent) {
			size_t il = e->i_name ? strlen(e->i_name) : 0;

			r |= pohm_buf_put_u64(b, e->i_txid);
			r |= pohm_buf_put_u64(b, e->i_dir);
			r |= put_u16(b, (uint16_t)il);
			r |= pohm_buf_put(b, e->i_name, il);
			r |= pohm_buf_put_u64(b, e->i_time);
			r |= pohm_buf_put_u64(b, e->i_replaced);
			r |= pohm_buf_put_u32(b, e->i_flags);
		}
	}
	return r ? -ENOMEM : 0;
}

int pohm_bucket_decode(struct pohm_bucket *bk, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	uint32_t i, cnt;
	int err;

	memset(bk, 0, sizeof(*bk));
	err = hdr_decode(&bk->hdr, &r);
	if (err)
		return err;
	if (bk->hdr.type != POHM_OBJ_BUCKET)
		return -EPROTO;
	bk->dir = pohm_rd_u64(&r);
	bk->depth = pohm_rd_u8(&r);
	bk->state = pohm_rd_u8(&r);
	bk->index = pohm_rd_u32(&r);
	bk->txid = pohm_rd_u64(&r);
	bk->stamp = pohm_rd_u64(&r);
	if (bk->state == POHM_BUCKET_SEALED || bk->state == POHM_BUCKET_SEALED_WITH) {
		uint16_t sl;

		bk->seal_parent = pohm_rd_u64(&r);
		sl = pohm_rd_u16(&r);
		if (sl)
			bk->seal_name = rd_str(&r, sl, POHM_NAME_MAX);
	}
	cnt = pohm_rd_u32(&r);
	if (r.err || bk->depth > 40 || bk->state > POHM_BUCKET_SEALED_WITH ||
	    (size_t)cnt * 20 > r.left) {
		err = r.err ? r.err : -EPROTO;
		pohm_bucket_clear(bk);
		return err;
	}
	if (cnt && !(bk->e = calloc(cnt, sizeof(*bk->e)))) {
		pohm_bucket_clear(bk);
		return -ENOMEM;
	}
	bk->n = bk->cap = cnt;
	for (i = 0; i < cnt && !r.err; i++) {
		struct pohm_dentry *e = &bk->e[i];
		uint16_t nl = pohm_rd_u16(&r);

		if (!nl)
			r.err = -EPROTO;
		e->name = rd_str(&r, nl, POHM_NAME_MAX);
		e->ino = pohm_rd_u64(&r);
		e->type = pohm_rd_u8(&r);
		e->txid = pohm_rd_u64(&r);
		e->intent = pohm_rd_u8(&r);
		if (e->intent > POHM_INTENT_MOVED_IN)
			r.err = -EPROTO;
		if (e->intent && !r.err) {
			uint16_t il;

			e->i_txid = pohm_rd_u64(&r);
			e->i_dir = pohm_rd_u64(&r);
			il = pohm_rd_u16(&r);
			if (il)
				e->i_name = rd_str(&r, il, POHM_NAME_MAX);
			e->i_time = pohm_rd_u64(&r);
			e->i_replaced = pohm_rd_u64(&r);
			e->i_flags = pohm_rd_u32(&r);
		}
	}
	if (r.err) {
		err = r.err;
		pohm_bucket_clear(bk);
		return err;
	}
	return 0;
}

void pohm_dentry_clear(struct pohm_dentry *e)
{
	free(e->name);
	free(e->i_name);
	e->name = e->i_name = NULL;
}

void pohm_bucket_clear(struct pohm_bucket *bk)
{
	uint32_t i;

	for (i = 0; i < bk->n; i++)
		pohm_dentry_clear(&bk->e[i]);
	free(bk->e);
	free(bk->seal_name);
	memset(bk, 0, sizeof(*bk));
}

int pohm_bucket_find(const struct pohm_bucket *bk, const char *name)
{
	uint32_t i;

	for (i = 0; i < bk->n; i++)
		if (!strcmp(bk->e[i].name, name))
			return (int)i;
	return -1;
}

static char *dup_str(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = malloc(strlen(s) + 1);
	if (d)
		strcpy(d, s);
	return d;
}

int pohm_bucket_add(struct pohm_bucket *bk, const struct pohm_dentry *e)
{
	struct pohm_dentry *ne;

	if (bk->n == bk->cap) {
		uint32_t cap = bk->cap ? bk->cap * 2 : 8;
		struct pohm_dentry *a = realloc(bk->e, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		bk->e = a;
		bk->cap = cap;
	}
	ne = &bk->e[bk->n];
	*ne = *e;
	ne->name = dup_str(e->name);
	ne->i_name = dup_str(e->i_name);
	if (!ne->name || (e->i_name && !ne->i_name)) {
		pohm_dentry_clear(ne);
		return -ENOMEM;
	}
	bk->n++;
	return 0;
}

void pohm_bucket_remove(struct pohm_bucket *bk, uint32_t i)
{
	if (i >= bk->n)
		return;
	pohm_dentry_clear(&bk->e[i]);
	memmove(&bk->e[i], &bk->e[i + 1], (bk->n - i - 1) * sizeof(bk->e[0]));
	bk->n--;
}

/* ---------------------------------------------------------------- chunk */

int pohm_chunk_encode(struct pohm_buf *b, const char *fsid, uint64_t ino, uint64_t chunk,
		      uint64_t gen, const void *data, size_t len)
{
	struct pohm_obj_hdr h = { .type = POHM_OBJ_CHUNK, .parent = ino };
	int r;

	snprintf(h.fsid, sizeof(h.fsid), "%s", fsid);
	pohm_key_chunk(h.key, ino, chunk, gen);
	r = pohm_buf_reserve(b, 64 + strlen(h.key) + sizeof(h.fsid) + 24 + len);
	if (r)
		return r;
	r = hdr_encode(b, &h);
	r |= pohm_buf_put_u64(b, ino);
	r |= pohm_buf_put_u64(b, chunk);
	r |= pohm_buf_put_u64(b, gen);
	r |= pohm_buf_put(b, data, len);
	return r ? -ENOMEM : 0;
}

int pohm_chunk_decode(uint64_t *ino, uint64_t *chunk, uint64_t *gen, const uint8_t **data,
		      size_t *len, const uint8_t *p, size_t n)
{
	struct pohm_obj_hdr h;
	struct pohm_rd r = pohm_rd_make(p, n);
	int err = hdr_decode(&h, &r);

	if (err)
		return err;
	if (h.type != POHM_OBJ_CHUNK)
		return -EPROTO;
	*ino = pohm_rd_u64(&r);
	*chunk = pohm_rd_u64(&r);
	*gen = pohm_rd_u64(&r);
	if (r.err)
		return r.err;
	*data = r.p;
	*len = r.left;
	return 0;
}

size_t pohm_chunk_data_offset(const char *fsid, const char *key)
{
	size_t fl = strlen(fsid), kl = strlen(key);

	if (fl > 63)
		fl = 63;
	return 4 + 1 + 1 + 2 + 8 + 2 + 2 + fl + kl + 24;
}

/* ---------------------------------------------------------------- map object */

int pohm_map_encode(struct pohm_buf *b, const struct pohm_map *m)
{
	int r = hdr_encode(b, &m->hdr);

	if (r)
		return r;
	r |= pohm_buf_put_u64(b, m->ino);
	r |= pohm_buf_put_u64(b, m->index);
	r |= pohm_buf_put_u64(b, m->gen);
	r |= pohm_buf_put_u32(b, m->n);
	r |= put_chunkrefs(b, m->e, m->n);
	return r ? -ENOMEM : 0;
}

int pohm_map_decode(struct pohm_map *m, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	int err;

	memset(m, 0, sizeof(*m));
	err = hdr_decode(&m->hdr, &r);
	if (err)
		return err;
	if (m->hdr.type != POHM_OBJ_MAP)
		return -EPROTO;
	m->ino = pohm_rd_u64(&r);
	m->index = pohm_rd_u64(&r);
	m->gen = pohm_rd_u64(&r);
	m->n = pohm_rd_u32(&r);
	if (!r.err && m->n > 65536)
		r.err = -EPROTO;
	rd_chunkrefs(&r, m->n, 1u << 30, &m->e);
	if (r.err) {
		err = r.err;
		pohm_map_clear(m);
		return err;
	}
	return 0;
}

void pohm_map_clear(struct pohm_map *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------- lease */

int pohm_lease_encode(struct pohm_buf *b, const struct pohm_lease *l)
{
	int r = hdr_encode(b, &l->hdr);

	if (r)
		return r;
	r |= pohm_buf_put_u64(b, l->txid);
	r |= pohm_buf_put_u64(b, l->expires);
	return r ? -ENOMEM : 0;
}

int pohm_lease_decode(struct pohm_lease *l, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	int err = hdr_decode(&l->hdr, &r);

	if (err)
		return err;
	if (l->hdr.type != POHM_OBJ_LEASE)
		return -EPROTO;
	l->txid = pohm_rd_u64(&r);
	l->expires = pohm_rd_u64(&r);
	return r.err;
}

/* ---------------------------------------------------------------- hash */

uint64_t pohm_name_hash(const char *name)
{
	uint64_t h = pohm_fnv1a(POHM_NAME_BASIS, name);

	/* FNV's low bits are weak for short names: fold the high half in. */
	return h ^ (h >> 29) ^ (h >> 47);
}
