/*
 * jindex.h — the journal's index file (jindex.c), inside the journal only:
 * journal.c keeps it in step with the records; pohm_journal_lookup_local
 * (journal.h) reads it.
 */
#ifndef POHM_CORE_JINDEX_H
#define POHM_CORE_JINDEX_H

#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

#define XINDEX "x.idx"

/* Open j's index (j->dirfd is open): j->xfd, and move an earlier
 * format's x/ links into it.  0 (an index that cannot be opened reads as
 * empty: every lookup -ENOENT). */
int jindex_open(struct pohm_journal *j);
void jindex_close(struct pohm_journal *j);
/* Where the bucket of (dev, lino) in level is in x.idx (tests, fuzzing). */
off_t jindex_bucket_off(uint64_t dev, uint64_t lino, int level);
#endif
