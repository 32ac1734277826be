/*
 * buf.c — the growable packet buffer of buf.h.  Doubling growth, memory
 * from the library's own allocator (never handed to the host).
 */
#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pohm_buf_reserve(struct pohm_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (n > SIZE_MAX - b->len)
		return -ENOMEM;
	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int pohm_buf_put(struct pohm_buf *b, const void *p, size_t n)
{
	int r;

	if (!n)
		return 0;
	r = pohm_buf_reserve(b, n);
	if (r)
		return r;
	if (p)
		memcpy(b->p + b->len, p, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
	return 0;
}

int pohm_buf_put_u32(struct pohm_buf *b, uint32_t v)
{
	uint8_t t[4];

	pohm_st32(t, v);
	return pohm_buf_put(b, t, sizeof(t));
}

int pohm_buf_put_u64(struct pohm_buf *b, uint64_t v)
{
	uint8_t t[8];

	pohm_st64(t, v);
	return pohm_buf_put(b, t, sizeof(t));
}

void pohm_buf_free(struct pohm_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}
