/*
 * crc32c.c — CRC-32C for record chunks.
 *
 * Why CRC-32C and not SHA-512 per record: every READ verifies the chunks it
 * touches, and the node must serve > 1 GiB/s on two cores; the SSE4.2
 * instruction does ~8 bytes a cycle, SHA-512 about 0.3.  SHA-512 is still
 * what clients see (CAS, LOOKUP and READ checksums) and is computed on
 * demand from the verified data.
 *
 * The crc32 instruction takes 3 cycles but can start one per cycle, so a
 * single chain uses a third of it.  Long buffers are cut into blocks of
 * three lanes of LANE bytes, each lane CRCed as its own chain, and the
 * lanes joined: the CRC register is linear, so crc(A·B) = shift(crc(A)) ^
 * crc0(B), where shift advances a register over LANE zero bytes (a 32×32
 * bit matrix, applied as four 256-entry tables built at start from the
 * instruction itself) and crc0 starts from 0.  node_crc32c_selftest checks
 * every path against the table and the standard check value.
 */
#include "crc32c.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLY 0x82f63b78u	/* reflected Castagnoli polynomial */
#define LANE 4096u		/* bytes per lane of the three-lane path */

/* Tables for the portable path and the lane shift; filled once under pthread_once. */
static uint32_t table[8][256];
static uint32_t shift_tab[4][256];	/* register advanced over LANE zero bytes */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static int have_hw;		/* written once under table_once */

#if defined(__x86_64__)
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n);
#endif
static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n);

/* shift_tab from the images of the 32 register bits after LANE zero bytes. */
static void shift_init(void)
{
	static const uint8_t zero[LANE];
	uint32_t img[32], k, b, j;

	for (k = 0; k < 32; k++) {
#if defined(__x86_64__)
		img[k] = have_hw ? crc_hw(1u << k, zero, LANE) : crc_sw(1u << k, zero, LANE);
#else
		img[k] = crc_sw(1u << k, zero, LANE);
#endif
	}
	for (k = 0; k < 4; k++)
		for (b = 0; b < 256; b++) {
			uint32_t v = 0;

			for (j = 0; j < 8; j++)
				if (b >> j & 1)
					v ^= img[8 * k + j];
			shift_tab[k][b] = v;
		}
}

/* The register c advanced over LANE zero bytes. */
static uint32_t shift_lane(uint32_t c)
{
	return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^
	       shift_tab[2][(c >> 16) & 0xff] ^ shift_tab[3][c >> 24];
}

static void table_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			table[j][i] = (table[j - 1][i] >> 8) ^ table[0][table[j - 1][i] & 0xff];
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_hw = __builtin_cpu_supports("sse4.2");
#endif
	shift_init();
}

/* Slicing-by-8 over the table (crc pre-inverted). */
static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t v;

		__builtin_memcpy(&v, p, 8);
		v ^= crc;
		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^
		      table[5][(v >> 16) & 0xff] ^ table[4][(v >> 24) & 0xff] ^
		      table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
		      table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
/* The SSE4.2 crc32 instruction, 8 bytes at a time (crc pre-inverted). */
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc;

	while (n >= 8) {
		uint64_t v;

		__builtin_memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}

__attribute__((target("sse4.2")))
/* Three lanes of LANE bytes at a time, joined by shift_lane; the rest by crc_hw. */
static uint32_t crc_hw3(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n >= 3 * LANE) {
		uint64_t a = crc, b = 0, c = 0;
		size_t i;

		for (i = 0; i < LANE; i += 8) {
			uint64_t va, vb, vc;

			__builtin_memcpy(&va, p + i, 8);
			__builtin_memcpy(&vb, p + LANE + i, 8);
			__builtin_memcpy(&vc, p + 2 * LANE + i, 8);
			a = __builtin_ia32_crc32di(a, va);
			b = __builtin_ia32_crc32di(b, vb);
			c = __builtin_ia32_crc32di(c, vc);
		}
		crc = shift_lane(shift_lane((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
		p += 3 * LANE;
		n -= 3 * LANE;
	}
	return crc_hw(crc, p, n);
}
#endif

/* Three lanes over the table path (the join without the instruction; for the self test). */
static uint32_t crc_sw3(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n >= 3 * LANE) {
		uint32_t a = crc_sw(crc, p, LANE), b = crc_sw(0, p + LANE, LANE);
		uint32_t c = crc_sw(0, p + 2 * LANE, LANE);

		crc = shift_lane(shift_lane(a) ^ b) ^ c;
		p += 3 * LANE;
		n -= 3 * LANE;
	}
	return crc_sw(crc, p, n);
}

/* See crc32c.h. */
uint32_t node_crc32c(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&table_once, table_init);
	crc = ~crc;
#if defined(__x86_64__)
	if (have_hw)
		return ~crc_hw3(crc, p, n);
#endif
	return ~crc_sw(crc, p, n);
}

/* See crc32c.h. */
uint32_t node_crc32c_zeros(uint32_t crc, uint64_t n)
{
	static const uint8_t zero[4096];

	while (n) {
		size_t k = n < sizeof(zero) ? (size_t)n : sizeof(zero);

		crc = node_crc32c(crc, zero, k);
		n -= k;
	}
	return crc;
}

/* See crc32c.h. */
int node_crc32c_selftest(char *msg, size_t len)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 9, 4095, 3 * LANE - 1, 3 * LANE, 3 * LANE + 1,
					65536, 65536 + 13, 200000 };
	size_t cap = 200000 + 16, i, k;
	uint8_t *buf = malloc(cap);
	uint32_t seed = 0x9e3779b9u;
	int bad = 0;

	if (!buf) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	pthread_once(&table_once, table_init);
	for (i = 0; i < cap; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	/* The standard check value of CRC-32C. */
	if (node_crc32c(0, "123456789", 9) != 0xe3069283u) {
		snprintf(msg, len, "crc32c(\"123456789\") = %08x, want e3069283",
			 node_crc32c(0, "123456789", 9));
		bad = 1;
	}
	for (k = 0; !bad && k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (i = 0; !bad && i < 4; i++) {
			const uint8_t *p = buf + i * 3;	/* unaligned starts too */
			size_t n = sizes[k];
			uint32_t ref = ~crc_sw(~0u, p, n), got = node_crc32c(0, p, n);
			uint32_t sw3 = ~crc_sw3(~0u, p, n);
			/* Continuing a CRC must equal one pass over both pieces. */
			uint32_t two = node_crc32c(node_crc32c(0, p, n / 3), p + n / 3, n - n / 3);

			if (got != ref || sw3 != ref || two != ref) {
				snprintf(msg, len, "%zu bytes at +%zu: table %08x, fast %08x, "
					 "three lanes (table) %08x, in two calls %08x", n, i * 3,
					 ref, got, sw3, two);
				bad = 1;
			}
		}
	if (!bad)
		snprintf(msg, len, "ok (%s)", have_hw ? "sse4.2, three lanes" : "table");
	free(buf);
	return bad ? -1 : 0;
}
