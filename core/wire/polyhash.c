/*
 * polyhash.c — the keyed polynomial hash of polyhash.h: the message is cut
 * into 7-byte little-endian words w_1..w_m (the last one zero-padded),
 * followed by the length; each value is h = (...((w_1 r + w_2) r + ...) r
 * evaluated modulo p = 2^61-1 with lazy reduction (h stays below 2^61+8,
 * h + w below 2^62, so (h + w) r fits 123 bits).  Both keys run in the
 * same loop, so their multiplications overlap.
 */
#include "polyhash.h"

#include <string.h>

#define P61	((1ULL << 61) - 1)
#define W56	((1ULL << 56) - 1)

/* a r mod p, partly reduced (below 2^61 + 8), for a < 2^62 and r < 2^61. */
static inline uint64_t mulmod(uint64_t a, uint64_t r)
{
	unsigned __int128 m = (unsigned __int128)a * r;
	uint64_t h = ((uint64_t)m & P61) + (uint64_t)(m >> 61);

	return (h & P61) + (h >> 61);
}

/* The 8 bytes loaded into w, read as little-endian. */
static inline uint64_t le(uint64_t w)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(w);
#else
	return w;
#endif
}

uint64_t pohm_polykey_of(uint64_t x)
{
	x &= P61;
	return x == 0 || x == P61 ? 1 : x;	/* 0 (and p, which is 0) hashes all alike */
}

void pohm_polyhash(const struct pohm_polykey *k, const void *p, size_t n, uint64_t out[2])
{
	const unsigned char *b = p;
	uint64_t h0 = 0, h1 = 0, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 7) {
		memcpy(&w, b + i, 8);
		w = le(w) & W56;
		h0 = mulmod(h0 + w, k->r[0]);
		h1 = mulmod(h1 + w, k->r[1]);
	}
	if (i < n) {
		w = 0;
		memcpy(&w, b + i, n - i);	/* 1 to 7 bytes */
		w = le(w);
		h0 = mulmod(h0 + w, k->r[0]);
		h1 = mulmod(h1 + w, k->r[1]);
	}
	w = (uint64_t)n & W56;
	h0 = mulmod(h0 + w, k->r[0]);
	h1 = mulmod(h1 + w, k->r[1]);
	out[0] = h0 >= P61 ? h0 - P61 : h0;
	out[1] = h1 >= P61 ? h1 - P61 : h1;
}
