/*
 * sha512.c — SHA-512 (FIPS 180-4 §6.4), portable C.
 *
 * The compression function is the hot loop of every checksummed read and
 * write (issue 23: half of tar -x's instructions), so its 80 rounds are
 * unrolled by macro: the message schedule is computed in place in a
 * 16-word ring and the working variables are renamed, not shifted.
 */
#include "sha512.h"

#include <string.h>

static const uint64_t K[80] = {
	0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
	0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
	0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
	0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
	0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
	0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
	0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
	0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
	0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
	0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
	0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
	0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
	0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
	0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
	0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
	0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
	0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
	0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
	0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
	0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL,
};

/*
 * Blocks this thread has compressed: what pohm_sha512_blocks reports.  A
 * thread-local, so no lock (each thread counts its own); tests read it to
 * check that a path does not hash what it already has a checksum of.
 */
static __thread uint64_t blocks_done;

static inline uint64_t ror(uint64_t x, unsigned n)
{
	return (x >> n) | (x << (64 - n));
}

static inline uint64_t load_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return __builtin_bswap64(v);
}

static inline void store_be64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/*
 * FIPS 180-4 §4.1.3 functions; CH in its two-operation form (MAJ: RND).
 * The big sigmas as nested rotations (ror(a,39) ^ ror(a,34) ^ ror(a,28) =
 * ror(ror(ror(a,5) ^ a, 6) ^ a, 28)): one chain, fewer register copies
 * where the rotate instruction overwrites its operand (x86-64 without BMI2).
 */
#define BSIG0(x) ror(ror(ror(x, 5) ^ (x), 6) ^ (x), 28)
#define BSIG1(x) ror(ror(ror(x, 23) ^ (x), 4) ^ (x), 14)
#define SSIG0(x) (ror(x, 1) ^ ror(x, 8) ^ ((x) >> 7))
#define SSIG1(x) (ror(x, 19) ^ ror(x, 61) ^ ((x) >> 6))
#define CH(x, y, z)  ((z) ^ ((x) & ((y) ^ (z))))

/*
 * One round with the working variables renamed instead of shifted: only d
 * and h change (d += t1; h = t1 + t2); the caller rotates the names.
 * MAJ(a, b, c) as b ^ ((a ^ b) & (b ^ c)): this round's a ^ b (into x) is
 * the next round's b ^ c (its y), so each round makes one of the two.
 */
#define RND(a, b, c, d, e, f, g, h, k, wj, x, y) do {				\
	uint64_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + (k) + (wj);		\
	(d) += t1_;								\
	(x) = (a) ^ (b);							\
	(h) = t1_ + BSIG0(a) + ((b) ^ ((x) & (y)));				\
} while (0)

/* Word j (0..15) of the current 16 rounds: loaded, or scheduled in place. */
#define WLOAD(j)  (w[j] = load_be64(block + 8 * (j)))
#define WSCHED(j) (w[j] += SSIG1(w[((j) + 14) & 15]) + w[((j) + 9) & 15] +	\
			   SSIG0(w[((j) + 1) & 15]))

/* Sixteen rounds from round i, the words given by W (WLOAD or WSCHED). */
#define R16(i, W) do {								\
	RND(a, b, c, d, e, f, g, hh, K[(i) + 0], W(0), ab, bc);			\
	RND(hh, a, b, c, d, e, f, g, K[(i) + 1], W(1), bc, ab);			\
	RND(g, hh, a, b, c, d, e, f, K[(i) + 2], W(2), ab, bc);			\
	RND(f, g, hh, a, b, c, d, e, K[(i) + 3], W(3), bc, ab);			\
	RND(e, f, g, hh, a, b, c, d, K[(i) + 4], W(4), ab, bc);			\
	RND(d, e, f, g, hh, a, b, c, K[(i) + 5], W(5), bc, ab);			\
	RND(c, d, e, f, g, hh, a, b, K[(i) + 6], W(6), ab, bc);			\
	RND(b, c, d, e, f, g, hh, a, K[(i) + 7], W(7), bc, ab);			\
	RND(a, b, c, d, e, f, g, hh, K[(i) + 8], W(8), ab, bc);			\
	RND(hh, a, b, c, d, e, f, g, K[(i) + 9], W(9), bc, ab);			\
	RND(g, hh, a, b, c, d, e, f, K[(i) + 10], W(10), ab, bc);		\
	RND(f, g, hh, a, b, c, d, e, K[(i) + 11], W(11), bc, ab);		\
	RND(e, f, g, hh, a, b, c, d, K[(i) + 12], W(12), ab, bc);		\
	RND(d, e, f, g, hh, a, b, c, K[(i) + 13], W(13), bc, ab);		\
	RND(c, d, e, f, g, hh, a, b, K[(i) + 14], W(14), ab, bc);		\
	RND(b, c, d, e, f, g, hh, a, K[(i) + 15], W(15), bc, ab);		\
} while (0)

/*
 * The 80 rounds fully unrolled: the message schedule lives in a 16-word
 * ring updated in place with constant indices, and the eight working
 * variables are renamed per round rather than copied, so the whole block
 * stays in registers.
 */
static void compress(uint64_t h[8], const uint8_t *block)
{
	uint64_t w[16], a, b, c, d, e, f, g, hh, ab, bc;

	blocks_done++;
	a = h[0]; b = h[1]; c = h[2]; d = h[3];
	e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	bc = b ^ c;
	R16(0, WLOAD);
	R16(16, WSCHED);
	R16(32, WSCHED);
	R16(48, WSCHED);
	R16(64, WSCHED);
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void pohm_sha512_init(struct pohm_sha512 *s)
{
	static const uint64_t iv[8] = {
		0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
		0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
		0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->nbytes = 0;
	s->nbuf = 0;
}

void pohm_sha512_update(struct pohm_sha512 *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	s->nbytes += n;
	if (s->nbuf) {
		size_t take = 128 - s->nbuf;

		if (take > n)
			take = n;
		memcpy(s->buf + s->nbuf, p, take);
		s->nbuf += take;
		p += take;
		n -= take;
		if (s->nbuf < 128)
			return;
		compress(s->h, s->buf);
		s->nbuf = 0;
	}
	for (; n >= 128; p += 128, n -= 128)
		compress(s->h, p);
	if (n) {
		memcpy(s->buf, p, n);
		s->nbuf = n;
	}
}

void pohm_sha512_final(struct pohm_sha512 *s, uint8_t out[POHM_SHA512_LEN])
{
	uint64_t bits = s->nbytes << 3;
	int i;

	s->buf[s->nbuf++] = 0x80;
	if (s->nbuf > 112) {
		memset(s->buf + s->nbuf, 0, 128 - s->nbuf);
		compress(s->h, s->buf);
		s->nbuf = 0;
	}
	memset(s->buf + s->nbuf, 0, 120 - s->nbuf);	/* high 64 bits of the length: 0 */
	store_be64(s->buf + 120, bits);
	compress(s->h, s->buf);
	for (i = 0; i < 8; i++)
		store_be64(out + 8 * i, s->h[i]);
}

void pohm_sha512(const void *p, size_t n, uint8_t out[POHM_SHA512_LEN])
{
	struct pohm_sha512 s;

	pohm_sha512_init(&s);
	pohm_sha512_update(&s, p, n);
	pohm_sha512_final(&s, out);
}

uint64_t pohm_sha512_blocks(void)
{
	return blocks_done;
}
