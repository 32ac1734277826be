/*
 * ucrc.c — chunk CRCs of uncommitted records (see ucrc.h).
 *
 * An entry holds, per chunk, the CRC-32C and the byte count it covers
 * (0 = not known).  The CRCs of a piece are computed from the caller's
 * buffer before the table lock is taken, so different keys never wait for
 * each other's checksumming; the lock covers only the merge.
 */
#include "ucrc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "wire.h"

#define UCRC_SLOTS	8		/* records being uploaded at once that are remembered */
#define UCRC_MAX_CHUNKS	(1u << 20)	/* 64 GiB of 64 KiB chunks: the largest object */

struct node_ucrc_entry {
	uint8_t id[POHM_ID_SIZE];
	uint64_t n;			/* chunks the arrays cover */
	uint32_t *crc;
	uint32_t *len;			/* bytes crc[i] covers; 0 = unknown */
	uint64_t used;			/* LRU stamp */
};

struct node_ucrc {
	uint32_t chunk;
	pthread_mutex_t lock;		/* guards slot[] and tick (not the contents of an
					 * entry of a key, which only that key's lock holder uses) */
	struct node_ucrc_entry *slot[UCRC_SLOTS];
	uint64_t tick;
};

/* See ucrc.h. */
struct node_ucrc *node_ucrc_new(uint32_t chunk)
{
	struct node_ucrc *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->chunk = chunk;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

/* See ucrc.h. */
void node_ucrc_entry_free(struct node_ucrc_entry *e)
{
	if (!e)
		return;
	free(e->crc);
	free(e->len);
	free(e);
}

/* See ucrc.h. */
void node_ucrc_free(struct node_ucrc *t)
{
	unsigned i;

	if (!t)
		return;
	for (i = 0; i < UCRC_SLOTS; i++)
		node_ucrc_entry_free(t->slot[i]);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* The slot index of id, or -1 (lock held). */
static int find(struct node_ucrc *t, const uint8_t *id)
{
	unsigned i;

	for (i = 0; i < UCRC_SLOTS; i++)
		if (t->slot[i] && !memcmp(t->slot[i]->id, id, POHM_ID_SIZE))
			return (int)i;
	return -1;
}

/* Make e cover n chunks (new ones unknown). 0 or -1 (out of memory). */
static int grow(struct node_ucrc_entry *e, uint64_t n)
{
	uint32_t *c, *l;

	if (n <= e->n)
		return 0;
	c = realloc(e->crc, (size_t)n * sizeof(*c));
	if (!c)
		return -1;
	e->crc = c;
	l = realloc(e->len, (size_t)n * sizeof(*l));
	if (!l)
		return -1;
	e->len = l;
	memset(e->len + e->n, 0, (size_t)(n - e->n) * sizeof(*l));
	e->n = n;
	return 0;
}

/* id's entry, made (evicting the least recently used) if needed; NULL on ENOMEM. Lock held. */
static struct node_ucrc_entry *get_entry(struct node_ucrc *t, const uint8_t *id)
{
	int i = find(t, id);
	unsigned k, victim = 0;
	struct node_ucrc_entry *e;

	if (i >= 0) {
		e = t->slot[i];
		e->used = ++t->tick;
		return e;
	}
	for (k = 0; k < UCRC_SLOTS; k++) {
		if (!t->slot[k]) {
			victim = k;
			break;
		}
		if (t->slot[k]->used < t->slot[victim]->used)
			victim = k;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(e->id, id, POHM_ID_SIZE);
	e->used = ++t->tick;
	node_ucrc_entry_free(t->slot[victim]);
	t->slot[victim] = e;
	return e;
}

/* See ucrc.h. */
void node_ucrc_drop(struct node_ucrc *t, const uint8_t *id)
{
	int i;

	pthread_mutex_lock(&t->lock);
	i = find(t, id);
	if (i >= 0) {
		node_ucrc_entry_free(t->slot[i]);
		t->slot[i] = NULL;
	}
	pthread_mutex_unlock(&t->lock);
}

/* See ucrc.h. */
void node_ucrc_note(struct node_ucrc *t, const uint8_t *id, int fresh, uint64_t off,
		    const uint8_t *data, size_t len)
{
	uint64_t ch = t->chunk, end = off + len, c0, c1, i;
	uint32_t *crc = NULL, *cl = NULL;
	struct node_ucrc_entry *e;

	if (fresh)
		node_ucrc_drop(t, id);
	if (!len)
		return;
	/* Chunks [c0, c1) start inside the piece; chunk off/ch is entered mid-way if off % ch. */
	c0 = (off + ch - 1) / ch;
	c1 = (end + ch - 1) / ch;
	if (c1 > UCRC_MAX_CHUNKS) {
		node_ucrc_drop(t, id);
		return;
	}
	if (c1 > c0) {
		crc = malloc((size_t)(c1 - c0) * sizeof(*crc));
		cl = malloc((size_t)(c1 - c0) * sizeof(*cl));
		if (!crc || !cl) {
			node_ucrc_drop(t, id);
			goto out;
		}
		for (i = c0; i < c1; i++) {
			uint64_t a = i * ch, b = a + ch < end ? a + ch : end;

			crc[i - c0] = node_crc32c(0, data + (a - off), (size_t)(b - a));
			cl[i - c0] = (uint32_t)(b - a);
		}
	}
	pthread_mutex_lock(&t->lock);
	e = get_entry(t, id);
	if (!e || grow(e, c1)) {
		int k = find(t, id);

		if (k >= 0) {
			node_ucrc_entry_free(t->slot[k]);
			t->slot[k] = NULL;
		}
	} else {
		if (off % ch)
			e->len[off / ch] = 0;	/* entered mid-chunk: its CRC is unknown now */
		for (i = c0; i < c1; i++) {
			e->crc[i] = crc[i - c0];
			e->len[i] = cl[i - c0];
		}
	}
	pthread_mutex_unlock(&t->lock);
out:
	free(crc);
	free(cl);
}

/* See ucrc.h. */
struct node_ucrc_entry *node_ucrc_take(struct node_ucrc *t, const uint8_t *id)
{
	struct node_ucrc_entry *e = NULL;
	int i;

	pthread_mutex_lock(&t->lock);
	i = find(t, id);
	if (i >= 0) {
		e = t->slot[i];
		t->slot[i] = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return e;
}

/* See ucrc.h. */
int node_ucrc_get(const struct node_ucrc_entry *e, uint64_t i, uint64_t len, uint32_t *crc)
{
	if (!e || i >= e->n || !len || e->len[i] != len)
		return 0;
	*crc = e->crc[i];
	return 1;
}
