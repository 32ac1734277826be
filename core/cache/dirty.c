/*
 * dirty.c — the files a process wrote and did not push yet (moved from
 * preload/hooks_cache.c, issue 18/20): a set of storage inode numbers,
 * pushed at the process's exit or exec (cache.h pohm_dirty_*).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

void pohm_dirty_note(struct pohm_dirty *d, uint64_t ino)
{
	size_t i;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->n && d->ino[i] != ino; i++)
		;
	if (i == d->n) {
		if (d->n == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 16;
			uint64_t *v = realloc(d->ino, cap * sizeof(*v));

			if (v) {
				d->ino = v;
				d->cap = cap;
			}
		}
		if (d->n < d->cap)
			d->ino[d->n++] = ino;
	}
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

void pohm_dirty_atfork_child(struct pohm_dirty *d)
{
	pthread_mutex_init(&d->lock, NULL);
	d->n = 0;
}
