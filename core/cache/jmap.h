/*
 * jmap.h — a read-only shared mapping of the first bytes of one of the
 * journal's kept files (j.slots, x.idx; jmap.c), so that a lock-free
 * read of a bucket there is a copy from memory, not a pread.  Inside the
 * journal only; the files are still written with pwrite.
 */
#ifndef POHM_CORE_JMAP_H
#define POHM_CORE_JMAP_H

#include <stddef.h>
#include <sys/types.h>

/* One file's mapping: zero-initialized is "not tried yet". */
struct jmap {
	const unsigned char *p;	/* the mapping of [0, len), or NULL (atomic) */
	int failed;		/* this process will not map it (atomic) */
};

/*
 * Copy the n bytes at off of the file fd into b from the mapping of its
 * first len bytes, made at the first call (one fstat and one mmap; only
 * if the file is at least len bytes long then, else not in this process
 * until jmap_grown).  1 copied, 0 not (outside [0, len), or no mapping: the
 * caller preads).  The library never shrinks these files, so the mapped
 * range stays inside the file (see jmap.c for what that assumes).
 */
int jmap_read(struct jmap *m, int fd, size_t len, void *b, size_t n, off_t off);
/* Does a read fault on a hole of a file system of this f_type allocate
 * nothing in it (a known disk file system: mapped; else pread)?  1 or 0. */
int jmap_holes_read_free(long type);
/* The file was just grown to cover the mapping: a process that found it
 * too short tries again at its next read. */
void jmap_grown(struct jmap *m);
/* Unmap (the journal's close: no thread uses it any more). */
void jmap_close(struct jmap *m, size_t len);
#endif
