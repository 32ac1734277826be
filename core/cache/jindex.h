/*
 * jindex.h — the journal's index file (jindex.c), inside the journal only:
 * journal.c keeps it in step with the records; pohm_journal_lookup_local
 * (journal.h) reads it.  Also the one 64-bit mixer both files' on-disk
 * checks and the index's bucket hash end with.
 */
#ifndef POHM_CORE_JINDEX_H
#define POHM_CORE_JINDEX_H

#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

#define XINDEX "x.idx"

/*
 * MurmurHash3's 64-bit finaliser (fmix64): jfmix1 is its first round, with
 * which a record's check and its commit trailer's end (journal.c); jfmix
 * is both rounds, the index's slot check and bucket hash (jindex.c).
 * Both are on disk: changing either makes every existing cache read as
 * damage.  (core/sys's pohm_sys_seed uses splitmix64's finaliser, other
 * constants and shifts: not this one.)
 */
static inline uint64_t jfmix1(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static inline uint64_t jfmix(uint64_t h)
{
	h = jfmix1(h) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

/* Open j's index (j->dirfd is open): j->xfd, and move an earlier
 * format's x/ links into it.  0 (an index that cannot be opened reads as
 * empty: every lookup -ENOENT). */
int jindex_open(struct pohm_journal *j);
void jindex_close(struct pohm_journal *j);
/* Where the bucket of (dev, lino) in level is in x.idx (tests, fuzzing). */
off_t jindex_bucket_off(uint64_t dev, uint64_t lino, int level);
/*
 * Find (dev, lino) among the slots of the bucket bytes b[0..n) (n is a
 * whole bucket, 512, as read from x.idx; a slot that does not fit in n
 * reads as torn, nothing outside is read): its slot index and *ino (0: a
 * dropped entry), -1 not there, -2 not there but a torn slot was seen (a
 * writer is in the bucket).  *free_i: the first empty or dropped slot
 * (-1 none); *has_empty: whether an empty one is there.
 */
int jindex_bucket_find(const uint8_t *b, size_t n, uint64_t dev, uint64_t lino, uint64_t *ino,
		       int *free_i, int *has_empty);
#endif
