/*
 * dirty.c — the files a process wrote and did not push yet (moved from
 * preload/hooks_cache.c, issue 18/20): a set of storage inode numbers,
 * pushed at the process's exit or exec (cache.h pohm_dirty_*).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

static int ino_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort d's inodes and drop the repeats (d->lock held). */
static void dedup(struct pohm_dirty *d)
{
	size_t i, k = 0;

	if (d->n < 2)
		return;		/* also an empty set's NULL array: never to qsort */
	qsort(d->ino, d->n, sizeof(*d->ino), ino_cmp);
	for (i = 0; i < d->n; i++)
		if (!k || d->ino[k - 1] != d->ino[i])
			d->ino[k++] = d->ino[i];
	d->n = k;
}

/*
 * Appended, a repeat of the last one aside: a tar of 5000 files notes
 * 5000 closes, which a scan of the set for each made quadratic (issue
 * 23).  A full array is sorted and made unique before it grows, so
 * repeats never take more than half of it.
 */
void pohm_dirty_note(struct pohm_dirty *d, uint64_t ino)
{
	pthread_mutex_lock(&d->lock);
	if (d->n && d->ino[d->n - 1] == ino)
		goto out;
	if (d->n == d->cap)
		dedup(d);
	if (d->n * 2 >= d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		uint64_t *v = realloc(d->ino, cap * sizeof(*v));

		if (v) {
			d->ino = v;
			d->cap = cap;
		}
	}
	if (d->n < d->cap)
		d->ino[d->n++] = ino;
out:
	pthread_mutex_unlock(&d->lock);
}

size_t pohm_dirty_take(struct pohm_dirty *d)
{
	size_t n;

	pthread_mutex_lock(&d->lock);
	n = d->n;
	d->n = 0;
	pthread_mutex_unlock(&d->lock);
	return n;
}

size_t pohm_dirty_take_list(struct pohm_dirty *d, uint64_t **inos)
{
	size_t n;

	pthread_mutex_lock(&d->lock);
	dedup(d);
	n = d->n;
	*inos = n ? d->ino : NULL;
	if (n) {
		d->ino = NULL;
		d->cap = 0;
	}
	d->n = 0;
	pthread_mutex_unlock(&d->lock);
	return n;
}

void pohm_dirty_atfork_child(struct pohm_dirty *d)
{
	pthread_mutex_init(&d->lock, NULL);
	d->n = 0;
}
