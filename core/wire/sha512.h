/*
 * sha512.h — FIPS 180-4 SHA-512, our own, so no crypto library is loaded
 * into host processes.  Used for Elliptics key ids (PROTOCOL.md §3.5) and
 * for the data checksums that CAS, LOOKUP and READ exchange.
 */
#ifndef POHM_CORE_SHA512_H
#define POHM_CORE_SHA512_H

#include <stddef.h>
#include <stdint.h>

#define POHM_SHA512_LEN 64

struct pohm_sha512 {
	uint64_t h[8];		/* chaining state */
	uint64_t nbytes;	/* total bytes absorbed (messages < 2^61 bytes) */
	uint8_t  buf[128];	/* pending partial block */
	size_t   nbuf;		/* bytes used in buf */
};

/* Start a new digest. */
void pohm_sha512_init(struct pohm_sha512 *s);
/* Absorb n bytes of p. */
void pohm_sha512_update(struct pohm_sha512 *s, const void *p, size_t n);
/* Finish and write the 64-byte digest; s must be re-initialised before reuse. */
void pohm_sha512_final(struct pohm_sha512 *s, uint8_t out[POHM_SHA512_LEN]);
/* One-shot digest of n bytes of p. */
void pohm_sha512(const void *p, size_t n, uint8_t out[POHM_SHA512_LEN]);
/* The 128-byte blocks the calling thread has compressed so far (a
 * counter for tests and profiles: issue 23's redundant hashes). */
uint64_t pohm_sha512_blocks(void);

#endif
