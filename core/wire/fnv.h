/*
 * fnv.h — part of core/wire (include wire.h): FNV-1a, 64-bit, the one
 * string hash of the project (bucket placement on disk, the cache's path
 * tables and create marks, fsck's and kvmem's tables).
 *
 * Two offset bases are in use and both are formats: POHM_FNV_BASIS is
 * FNV's own; POHM_NAME_BASIS is the one pohm_name_hash (core/store
 * nsobj.c) has placed every directory entry with since session 1 — a
 * digit short of FNV's — so it stays, or every bucket entry would move.
 */
#ifndef POHM_CORE_WIRE_FNV_H
#define POHM_CORE_WIRE_FNV_H

#include <stdint.h>

#define POHM_FNV_BASIS	0xcbf29ce484222325ULL
#define POHM_NAME_BASIS	1469598103934665603ULL
#define POHM_FNV_PRIME	0x100000001b3ULL

/* One FNV-1a step: h with byte b mixed in. */
static inline uint64_t pohm_fnv1a_step(uint64_t h, uint8_t b)
{
	return (h ^ b) * POHM_FNV_PRIME;
}

/* FNV-1a of the NUL-terminated string s from offset basis h. */
static inline uint64_t pohm_fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = pohm_fnv1a_step(h, (uint8_t)*s);
	return h;
}

#endif
