/*
 * crc32c.h — CRC-32C (Castagnoli), the per-chunk checksum of stored
 * records.  Hardware (SSE4.2) when the CPU has it, else a table.
 */
#ifndef POHM_NODE_CRC32C_H
#define POHM_NODE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC-32C: start with crc = 0; returns the new value. */
uint32_t node_crc32c(uint32_t crc, const void *p, size_t n);
/* CRC-32C continued over n zero bytes (holes), without a buffer of zeros. */
uint32_t node_crc32c_zeros(uint32_t crc, uint64_t n);
/* Check the fast path against the table on many lengths and alignments and the
 * standard check value; 0, or -1 with what differed in msg ("ok (...)" else). */
int node_crc32c_selftest(char *msg, size_t len);

#endif
