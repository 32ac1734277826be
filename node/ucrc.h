/*
 * ucrc.h — chunk CRCs of uncommitted records, noted while their pieces
 * are written (PREPARE / PLAIN_WRITE), so that COMMIT need not read the
 * whole record back to checksum it.
 *
 * A cache, nothing more: a chunk whose CRC was not noted, or was noted for
 * other bytes than COMMIT finds in the record (a shorter or longer tail, a
 * piece that started inside the chunk), is computed from the file as
 * before.  Entries live in memory only (a restarted node computes
 * everything), a few at a time (the least recently used one is dropped).
 * Every call for a key is made under that key's store lock; the table's
 * own lock only guards which entries exist.
 */
#ifndef POHM_NODE_UCRC_H
#define POHM_NODE_UCRC_H

#include <stddef.h>
#include <stdint.h>

struct node_ucrc;
struct node_ucrc_entry;

/* A new, empty table for records of chunk-byte chunks. NULL on ENOMEM. */
struct node_ucrc *node_ucrc_new(uint32_t chunk);
void node_ucrc_free(struct node_ucrc *t);

/*
 * Piece [off, off + len) of id's uncommitted record now holds data: note
 * the CRC of every chunk the piece starts (whole, or up to the piece's end),
 * forget the chunk it enters in the middle.  fresh = the record was just
 * created (PREPARE): everything noted before is forgotten.  Out of memory
 * only means less is noted.
 */
void node_ucrc_note(struct node_ucrc *t, const uint8_t *id, int fresh, uint64_t off,
		    const uint8_t *data, size_t len);
/* Forget id (its uncommitted record is gone, or was changed without a note). */
void node_ucrc_drop(struct node_ucrc *t, const uint8_t *id);
/* Take id's entry out of the table for a COMMIT (NULL if none). */
struct node_ucrc_entry *node_ucrc_take(struct node_ucrc *t, const uint8_t *id);
/* 1 and *crc when chunk i's CRC was noted over exactly len bytes, else 0 (e may be NULL). */
int node_ucrc_get(const struct node_ucrc_entry *e, uint64_t i, uint64_t len, uint32_t *crc);
/* Free a taken entry (NULL is fine). */
void node_ucrc_entry_free(struct node_ucrc_entry *e);

#endif
