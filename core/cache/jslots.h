/*
 * jslots.h — the journal's slot file cache_dir/j.slots (jslots.c), inside
 * the journal only: journal.c keeps each inode's record in a slot of it
 * (one pread to read, one pwrite to write) and only records too large for
 * a slot in a file j/<ino>.
 */
#ifndef POHM_CORE_JSLOTS_H
#define POHM_CORE_JSLOTS_H

#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

#define JSLOTS "j.slots"
#define JS_SLOT 1024			/* bytes of a slot */
#define JS_HDR 24			/* its header: magic, kind, ino, check */
#define JS_REC_MAX (JS_SLOT - JS_HDR)	/* the longest record (and trailer) a slot holds */
#define JS_PER 4			/* slots of a bucket */
#define JS_BUCKET (JS_SLOT * JS_PER)	/* 4096: one pread */

/* What a slot says of an inode (jslots_find, struct jsloc). */
enum { JS_NONE = 0, JS_REC = 1, JS_FILE = 2, JS_FREE = 3 };

/* A writer's view of ino's slot (jslots_wlocate). */
struct jsloc {
	off_t off;		/* ino's slot, else a free one to take; -1: none left */
	int kind;		/* JS_REC or JS_FILE: the slot at off is ino's; JS_NONE: it is free */
	uint8_t slot[JS_SLOT];	/* the bytes of ino's slot (kind != JS_NONE) */
};

/* Open (creating) j.slots into j->sfd and read its header; move an
 * earlier format's record files j/<ino> into slots when the header says
 * it was not done yet.  0 (a slot file that cannot be opened reads as
 * empty: every record is then read from, and written to, j/<ino>). */
int jslots_open(struct pohm_journal *j);
/* Write the file header saying no record file of the earlier format is
 * left (journal.c after moving them into slots): j->jfiles = 0.  0 or
 * -errno. */
int jslots_set_migrated(struct pohm_journal *j);
void jslots_close(struct pohm_journal *j);
/* A fork child: the writers' mutex as new (another thread may have held it). */
void jslots_atfork_child(void);
/* journal.c's record decoder (pohm_journal_decode), passed in: the slot
 * file does not call the journal (no circle: tests/circles.sh). */
typedef int (*jslots_decode_fn)(const uint8_t *p, size_t n, uint64_t ino, struct pohm_jrec *r);

/*
 * ino's record from its slot (its bytes decoded by decode), without a lock (a torn slot is read once
 * more under a read lock): JS_REC (decoded into r, free with
 * pohm_jrec_clear), JS_FILE (the record is in j/<ino>), JS_NONE (no slot:
 * no record, or one of an earlier format in j/<ino> while j->jfiles),
 * -EIO (torn or damaged), -ENOMEM.
 */
int jslots_find(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r, jslots_decode_fn decode);
/* The process's writers' mutex for the index's changes and torn reads
 * (jindex.c: POSIX locks on the kept x.idx fd, which the process's
 * threads share): 1 if this thread took it (then jslots_mutex_exit), 0
 * if it holds it already (inside a writer's section). */
int jslots_mutex_enter(void);
void jslots_mutex_exit(void);
/* A writer's section: the process's writers' mutex; jslots_wend drops it
 * and every record lock this process took on j.slots. */
void jslots_wbegin(struct pohm_journal *j);
void jslots_wend(struct pohm_journal *j);
/* Inside a writer's section, before any other lock of it: one write lock
 * on every bucket of level 0 without waiting (a batch of records: one
 * fcntl, not one per record; other writers wait for the whole batch),
 * which wlocate then takes as held.  0, -EAGAIN (another process holds a
 * bucket of it), or -errno; on failure nothing is held and wlocate locks
 * as before. */
int jslots_wlock_level0(struct pohm_journal *j);
/* Inside a writer's section: lock the buckets of ino's chain, level by
 * level, and say where its slot is (l).  0, -ENOENT (no slot file),
 * -errno. */
int jslots_wlocate(struct pohm_journal *j, uint64_t ino, struct jsloc *l);
/* Write the slot at off (a locked one of wlocate): kind with ino, and for
 * JS_REC the len record bytes at rec (len <= JS_REC_MAX).  One pwrite.
 * 0 or -errno. */
int jslots_wstore(struct pohm_journal *j, off_t off, int kind, uint64_t ino, const uint8_t *rec,
		  size_t len);
/* Wait for a writer of ino (the read lock of its first bucket, and the
 * mutex), for a reader of j/<ino> that met a torn record: 0 (then
 * jslots_runlock) or -errno (nothing held). */
int jslots_rlock(struct pohm_journal *j, uint64_t ino);
void jslots_runlock(struct pohm_journal *j, uint64_t ino);
/* Call fn(arg, kind, ino, slot bytes) for every used slot of the file, in
 * file order; fn != 0 stops (its value returned). */
int jslots_each(struct pohm_journal *j,
		int (*fn)(void *arg, int kind, uint64_t ino, const uint8_t *slot), void *arg);
/* Where level's bucket of ino is (tests, fuzzing). */
off_t jslots_bucket_off(uint64_t ino, int level);
/* Decode the slot header in the JS_HDR bytes at p: its kind (JS_NONE:
 * empty) and *ino, or -1 (torn or damaged), -2 (a newer format). */
int jslots_slot_hdr(const uint8_t *p, uint64_t *ino);
#endif
