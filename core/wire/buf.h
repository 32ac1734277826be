/*
 * buf.h — a growable byte buffer for building packets, and the
 * bounds-checked cursor (pohm_rd) that decoders read records with.
 * Memory comes from the library's allocator (the private jemalloc inside
 * libpohmelfs.so); never hand p to the host, never free host memory here.
 */
#ifndef POHM_CORE_BUF_H
#define POHM_CORE_BUF_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pohm_buf {
	uint8_t *p;	/* data, NULL while empty */
	size_t len;	/* bytes used */
	size_t cap;	/* bytes allocated */
};

#define POHM_BUF_INIT { NULL, 0, 0 }

/* Make room for n more bytes; 0 or -ENOMEM. */
int pohm_buf_reserve(struct pohm_buf *b, size_t n);
/* Append n bytes (p may be NULL: append zeros); 0 or -ENOMEM. */
int pohm_buf_put(struct pohm_buf *b, const void *p, size_t n);
/* Append little-endian integers; 0 or -ENOMEM. */
int pohm_buf_put_u32(struct pohm_buf *b, uint32_t v);
int pohm_buf_put_u64(struct pohm_buf *b, uint64_t v);
/* Release the memory and reset to empty. */
void pohm_buf_free(struct pohm_buf *b);

/* Little-endian loads and stores at a byte pointer (no alignment needed). */
static inline uint16_t pohm_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t pohm_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t pohm_le64(const uint8_t *p)
{
	return (uint64_t)pohm_le32(p) | (uint64_t)pohm_le32(p + 4) << 32;
}
static inline void pohm_st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void pohm_st32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void pohm_st64(uint8_t *p, uint64_t v)
{
	pohm_st32(p, (uint32_t)v);
	pohm_st32(p + 4, (uint32_t)(v >> 32));
}

/*
 * A bounds-checked reader over n bytes (the journal's records, the storage
 * objects of nsobj.h, the node's request bodies, the replies of proto.c
 * and the iterator's keys).  A read past the end returns NULL or 0 and sets err
 * to -EPROTO; err is sticky (the first error stays, every later read fails
 * too), so a decoder reads all its fields and checks err once.  A decoder
 * may set err itself (-ENOMEM, a bad value).  Nothing is allocated.
 */
struct pohm_rd {
	const uint8_t *p;	/* the next unread byte */
	size_t left;		/* bytes after p */
	int err;		/* 0, or the first error */
};

static inline struct pohm_rd pohm_rd_make(const void *p, size_t n)
{
	struct pohm_rd r = { (const uint8_t *)p, n, 0 };

	return r;
}
/* The next n bytes (and step past them), or NULL (err set). */
static inline const uint8_t *pohm_rd_take(struct pohm_rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->err || n > r->left) {
		if (!r->err)
			r->err = -EPROTO;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}
/* The next n bytes as a cursor of their own (and step past them), for a
 * part of fixed size read field by field: when n is a constant the
 * compiler drops the sub-cursor's per-field checks.  Short: err set in
 * r, and the sub-cursor is empty, so every read of it fails too. */
static inline struct pohm_rd pohm_rd_sub(struct pohm_rd *r, size_t n)
{
	const uint8_t *p = pohm_rd_take(r, n);
	struct pohm_rd s = { p, n, 0 };

	if (!p) {
		s.left = 0;
		s.err = r->err;
	}
	return s;
}
/* Copy the next n bytes to dst (and step past them); on a short read dst
 * is zeroed and err set. */
static inline void pohm_rd_copy(struct pohm_rd *r, void *dst, size_t n)
{
	const uint8_t *p = pohm_rd_take(r, n);

	if (p)
		memcpy(dst, p, n);
	else
		memset(dst, 0, n);
}
/* Little-endian integers; 0 once err is set. */
static inline uint8_t pohm_rd_u8(struct pohm_rd *r)
{
	const uint8_t *p = pohm_rd_take(r, 1);

	return p ? p[0] : 0;
}
static inline uint16_t pohm_rd_u16(struct pohm_rd *r)
{
	const uint8_t *p = pohm_rd_take(r, 2);

	return p ? pohm_le16(p) : 0;
}
static inline uint32_t pohm_rd_u32(struct pohm_rd *r)
{
	const uint8_t *p = pohm_rd_take(r, 4);

	return p ? pohm_le32(p) : 0;
}
static inline uint64_t pohm_rd_u64(struct pohm_rd *r)
{
	const uint8_t *p = pohm_rd_take(r, 8);

	return p ? pohm_le64(p) : 0;
}

#endif
