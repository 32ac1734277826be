/*
 * urec.h — the header of an uncommitted record (DIR/<hex id>.u, written by
 * PREPARE / PLAIN_WRITE, turned into a blob record by COMMIT): 128 bytes,
 * then the data at 128.  Little-endian:
 *   0 magic "PohmRec\1" · 8 version u32 (1) · 12 header size u32 (128) ·
 *   16 record flags u64 · 24 data size u64 · 32 tsec · 40 tnsec ·
 *   48 user_flags · 56 reserve u64 (PREPARE num) · 64 chunk size u32 ·
 *   68 reserved (52 bytes, zero) · 120 CRC-32C of bytes 0..119 ·
 *   124 reserved u32 (zero, not checked).
 */
#ifndef POHM_NODE_UREC_H
#define POHM_NODE_UREC_H

#include <stddef.h>
#include <stdint.h>

#define UREC_HDR	128u

/* A decoded .u header. */
struct urec_hdr {
	uint64_t flags, size, tsec, tnsec, user_flags, reserve;
	uint32_t chunk;
};

/* Encode h into UREC_HDR bytes at out (the CRC last). */
void urec_hdr_encode(uint8_t *out, const struct urec_hdr *h);
/*
 * Decode and check the first UREC_HDR of n bytes: magic, version, size,
 * CRC, a non-zero chunk, size <= max_size.  0 or -EILSEQ (also when n is
 * short); nothing is read past p + n.
 */
int urec_hdr_decode(struct urec_hdr *h, const uint8_t *p, size_t n, uint64_t max_size);

#endif
