/*
 * blob.h — the store's blob files: append-only logs of records, as eblob
 * keeps them (DIR/blob/data-0.N, N = 0, 1, ...).
 *
 * A record is a 192-byte header, the data, one CRC-32C per chunk of data,
 * and zero padding to a multiple of 8 bytes (disk_size in all).  Header,
 * little-endian:
 *   0 magic "PohmLog\1" · 8 version u32 (1) · 12 header size u32 (192) ·
 *   16 record flags u64 · 24 data size u64 · 32 tsec · 40 tnsec ·
 *   48 user_flags · 56 reserved u64 · 64 chunk size u32 · 68 reserved u32 ·
 *   72 disk_size u64 · 80 reserved u64 · 88 id (64 bytes) ·
 *   152 reserved (36 bytes, zero) · 188 CRC-32C of bytes 0..187.
 * A record with POHM_RECORD_REMOVE is a tombstone: a header alone
 * (disk_size 192) saying the id was deleted.
 *
 * Records are never modified once written (the corruption test tool
 * aside).  A writer reserves space at the end of the active blob, writes
 * the data and CRCs, then the header: a record whose header is not there
 * or does not check out was never acknowledged.
 */
#ifndef POHM_NODE_BLOB_H
#define POHM_NODE_BLOB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define BLOB_HDR	192u
#define BLOB_MAX_FILES	4096u			/* blob numbers 0..4095 */
#define BLOB_ROLL	(256ull << 20)		/* default: a new blob past 256 MiB */

/* A decoded blob record header. */
struct blob_hdr {
	uint8_t id[POHM_ID_SIZE];
	uint64_t flags, size, tsec, tnsec, user_flags, disk_size;
	uint32_t chunk;
};

/* disk_size of a record of size data bytes in chunks of chunk bytes. */
uint64_t blob_disk_size(uint64_t size, uint32_t chunk);

/* Encode h into 192 bytes (the CRC last). */
void blob_hdr_encode(uint8_t *out, const struct blob_hdr *h);

/*
 * Decode and check the first 192 of n bytes (a pohm_rd cursor: nothing is
 * read past in + n); 0 or -EILSEQ (also when n < 192).
 */
int blob_hdr_decode(struct blob_hdr *h, const uint8_t *in, size_t n);

/* One blob file. */
struct blob_file {
	int fd;				/* -1: no such blob */
	uint64_t len;			/* bytes in use: the append point of the active blob */
	uint64_t garbage;		/* bytes of replaced, removed or torn records */
	int dirty;			/* written since the last sync */
};

/* The blob files of a store. */
struct blob_set {
	int dirfd;			/* DIR/blob */
	int readonly;			/* a test tool beside a running node: never truncate */
	uint64_t roll;			/* start a new blob once the active one holds this much */
	pthread_mutex_t lock;		/* guards every field below and files[].len/garbage/dirty */
	struct blob_file files[BLOB_MAX_FILES];
	unsigned n;			/* files[0 .. n) may exist */
	unsigned active;		/* the blob appended to */
	int dir_dirty;			/* a blob was created since the last sync */
};

/*
 * Open DIR/blob (created unless readonly) and every data-0.N in it; the
 * active blob is the highest (created as data-0.0 when there is none and
 * not readonly).  Call blob_scan on each before appending.  0 or -errno.
 */
int blob_set_open(struct blob_set *b, int dirfd, int readonly);
void blob_set_close(struct blob_set *b);

/*
 * Walk blob n: call fn(arg, n, off, hdr) for each record whose header
 * checks out, in order.  Damaged stretches between good records are
 * skipped (counted as garbage, logged); a torn tail (no good record after
 * it) is cut off unless readonly.  Sets files[n].len.  0 or -errno (from
 * fn or I/O).
 */
int blob_scan(struct blob_set *b, unsigned n,
	      int (*fn)(void *arg, unsigned n, uint64_t off, const struct blob_hdr *h), void *arg);

/*
 * Reserve disk_size bytes at the end of the active blob (starting a new
 * blob past b->roll bytes).  *n and *off say where.  0, -ENOSPC (no blob
 * number left) or -errno.
 */
int blob_reserve(struct blob_set *b, uint64_t disk_size, unsigned *n, uint64_t *off);

/* Count bytes of blob n as garbage (a replaced or removed record). */
void blob_garbage(struct blob_set *b, unsigned n, uint64_t bytes);

/* Blob n was written: the next sync covers it. */
void blob_dirty(struct blob_set *b, unsigned n);

/* fdatasync every dirty blob (and the directory after a new blob). 0 or -errno. */
int blob_sync(struct blob_set *b);

/* The file descriptor of blob n (valid until blob_set_close). */
int blob_fd(struct blob_set *b, unsigned n);

/* Copy len bytes from (fd_in, off_in) to (fd_out, off_out) in the kernel where it can. */
int blob_copy(int fd_in, uint64_t off_in, int fd_out, uint64_t off_out, uint64_t len);

/* Total and garbage bytes over every blob. */
void blob_usage(struct blob_set *b, uint64_t *total, uint64_t *garbage);

/*
 * Start a new, empty active blob (compaction copies the live records into
 * it).  *first is its number.  0 or -errno.
 */
int blob_start_new(struct blob_set *b, unsigned *first);

/*
 * Delete blobs [0, first) and renumber first.. as 0.. (compaction's end;
 * the caller remaps its index).  0 or -errno.
 */
int blob_drop_before(struct blob_set *b, unsigned first);

#endif
