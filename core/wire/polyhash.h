/*
 * polyhash.h — a keyed polynomial hash modulo 2^61-1, two keys at once:
 * a cheap test that a chunk's bytes are still the ones whose SHA-512 this
 * process computed (core/cache/chunkmemo.c), ~10 times fewer instructions
 * a byte than SHA-512.  Not a checksum anything stores or sends.
 *
 * For two different messages of the SAME length n and keys drawn
 * uniformly from [1, 2^61-2] independently of the messages, the two
 * values are equal with probability at most ((n/7+2) / (2^61-2))^2
 * (each value is a polynomial in its key of degree n/7+2 with no
 * constant term; their difference has at most that many roots): for a
 * 1 MiB chunk below 2^-88.  Messages of different lengths are not
 * covered: the caller compares the lengths itself.
 */
#ifndef POHM_CORE_POLYHASH_H
#define POHM_CORE_POLYHASH_H

#include <stddef.h>
#include <stdint.h>

struct pohm_polykey {
	uint64_t r[2];		/* each in [1, 2^61-2] */
};

/* A key from 64 random bits: in [1, 2^61-2] (x's low 61 bits; 1 for
 * the two values that are 0 modulo 2^61-1). */
uint64_t pohm_polykey_of(uint64_t x);
/* The two values of the n bytes at p under k (each below 2^61-1). */
void pohm_polyhash(const struct pohm_polykey *k, const void *p, size_t n, uint64_t out[2]);

#endif
