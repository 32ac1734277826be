/*
 * chunkmemo.h — the SHA-512 of a chunk this process pushed, remembered
 * with a keyed hash of its bytes (issue 23: every push hashed every chunk
 * of a file again, sqlite's whole database at each commit).
 *
 * Content, not knowledge of writes: the next push reads the chunk as
 * before and takes what it remembers (the sum, or the SHA-512 state up to
 * a segment) only where the keyed hash of the bytes it read equals the
 * one remembered with them (polyhash.h: two different contents of one
 * length agree with probability below 2^-88, whatever wrote them: this
 * process, another one, a mapping, a child).
 * So a push never needs to know who wrote what; a process that
 * remembers nothing (pohmelfsd, a later process) hashes everything.
 */
#ifndef POHM_CACHE_CHUNKMEMO_H
#define POHM_CACHE_CHUNKMEMO_H

#include <stddef.h>
#include <stdint.h>

/*
 * out = the SHA-512 of the n bytes at p, chunk `index` of storage inode
 * ino.  When this process remembers that chunk at this length, only the
 * part from the first segment whose keyed hash differs is hashed, from
 * the SHA-512 state remembered there (answer 1: less than the whole
 * hashed, or nothing when no segment differs); else all (0).  keep:
 * remember the chunk for the next push (a file of more than one chunk;
 * a chunk already remembered is always updated).
 */
int pohm_chunk_memo_sum(uint64_t ino, uint64_t index, const void *p, size_t n, int keep,
			uint8_t out[64]);

#endif
