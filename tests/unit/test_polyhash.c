/* test_polyhash.c — core/wire/polyhash.c: the lazily reduced loop against
 * a plain evaluation modulo 2^61-1 at every length up to 300 and at
 * 1 MiB, every one-bit change of a message seen by both values, keys in
 * range, and its cost a byte against SHA-512's (printed, not asserted). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "polyhash.h"
#include "sha512.h"

#define P61 ((1ULL << 61) - 1)

/* The definition, plainly: 7-byte little-endian words, the last padded,
 * then the length; h = (h + w) r mod p, fully reduced at each step. */
static uint64_t plain(uint64_t r, const unsigned char *p, size_t n)
{
	unsigned __int128 h = 0;
	size_t i, k;

	for (i = 0; i < n; i += 7) {
		uint64_t w = 0;

		for (k = 0; k < 7 && i + k < n; k++)
			w |= (uint64_t)p[i + k] << (8 * k);
		h = (h + w) % P61 * r % P61;
	}
	h = (h + (n & ((1ULL << 56) - 1))) % P61 * r % P61;
	return (uint64_t)h;
}

static void fill_random(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	srand(seed);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rand();
}

TEST(the_loop_is_the_plain_polynomial)
{
	static unsigned char m[1 << 20];
	struct pohm_polykey k = { { pohm_polykey_of(0x123456789abcdefULL),
				    pohm_polykey_of(~0ULL - 5) } };
	uint64_t v[2];
	size_t n;

	fill_random(m, sizeof(m), 7);
	memset(m + 100, 0xff, 50);	/* words of all ones: the largest sums */
	for (n = 0; n <= 300; n++) {
		pohm_polyhash(&k, m + 100, n, v);
		EXPECT_EQ_U64(v[0], plain(k.r[0], m + 100, n));
		EXPECT_EQ_U64(v[1], plain(k.r[1], m + 100, n));
	}
	pohm_polyhash(&k, m, sizeof(m), v);
	EXPECT_EQ_U64(v[0], plain(k.r[0], m, sizeof(m)));
	EXPECT_EQ_U64(v[1], plain(k.r[1], m, sizeof(m)));
}

TEST(every_one_bit_change_changes_both_values)
{
	unsigned char m[97];
	struct pohm_polykey k = { { pohm_polykey_of(0xfeedfacecafeULL),
				    pohm_polykey_of(0x0123456789ULL) } };
	uint64_t v0[2], v[2];
	size_t i;
	int b;

	fill_random(m, sizeof(m), 11);
	pohm_polyhash(&k, m, sizeof(m), v0);
	for (i = 0; i < sizeof(m); i++)
		for (b = 0; b < 8; b++) {
			m[i] ^= (unsigned char)(1u << b);
			pohm_polyhash(&k, m, sizeof(m), v);
			EXPECT(v[0] != v0[0] && v[1] != v0[1]);
			m[i] ^= (unsigned char)(1u << b);
		}
	/* A leading zero word: another length, another value (the caller
	 * compares lengths anyway). */
	pohm_polyhash(&k, "\0\0\0\0\0\0\0abc", 10, v);
	pohm_polyhash(&k, "abc", 3, v0);
	EXPECT(v[0] != v0[0] || v[1] != v0[1]);
}

TEST(keys_are_never_zero_modulo_p)
{
	EXPECT_EQ_U64(pohm_polykey_of(0), 1);
	EXPECT_EQ_U64(pohm_polykey_of(P61), 1);
	EXPECT_EQ_U64(pohm_polykey_of(P61 + 2), 1);	/* low 61 bits: 1 */
	EXPECT_EQ_U64(pohm_polykey_of(~0ULL), 1);	/* low 61 bits all ones: p */
	EXPECT_EQ_U64(pohm_polykey_of(42), 42);
	EXPECT(pohm_polykey_of(~0ULL - 1) < P61);
}

TEST(costs_a_fraction_of_sha512)
{
	static unsigned char m[1 << 20];
	struct pohm_polykey k = { { 3, 5 } };
	uint8_t d[64];
	uint64_t v[2];
	clock_t t0, t1, t2;
	int i;

	fill_random(m, sizeof(m), 3);
	t0 = clock();
	for (i = 0; i < 8; i++)
		pohm_polyhash(&k, m, sizeof(m), v);
	t1 = clock();
	for (i = 0; i < 8; i++)
		pohm_sha512(m, sizeof(m), d);
	t2 = clock();
	printf("# 8 MiB: polyhash %.1f ms, sha512 %.1f ms\n", (t1 - t0) * 1e3 / CLOCKS_PER_SEC,
	       (t2 - t1) * 1e3 / CLOCKS_PER_SEC);
}
