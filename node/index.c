/*
 * index.c — id → record location: an open-addressing hash table with
 * linear probing and backward-shift deletion (no tombstones), grown at
 * 3/4 load.  Ids are SHA-512 hashes, so their first 8 bytes spread evenly.
 */
#include "index.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	int used;
	struct node_ient e;
};

struct node_index {
	pthread_mutex_t lock;		/* guards everything below */
	struct slot *s;
	size_t cap;			/* a power of two */
	size_t n;
};

/* Home slot of an id. */
static size_t home(const struct node_index *x, const uint8_t *id)
{
	return (size_t)pohm_le64(id) & (x->cap - 1);
}

/* Slot holding id, or the free slot where it would go; lock held. */
static size_t find(const struct node_index *x, const uint8_t *id)
{
	size_t i = home(x, id);

	while (x->s[i].used && memcmp(x->s[i].e.id, id, POHM_ID_SIZE))
		i = (i + 1) & (x->cap - 1);
	return i;
}

/* Double the table; lock held.  0 or -ENOMEM. */
static int grow(struct node_index *x)
{
	size_t ncap = x->cap * 2, i, j;
	struct slot *ns = calloc(ncap, sizeof(*ns)), *os = x->s;
	size_t ocap = x->cap;

	if (!ns)
		return -ENOMEM;
	x->s = ns;
	x->cap = ncap;
	for (i = 0; i < ocap; i++) {
		if (!os[i].used)
			continue;
		j = find(x, os[i].e.id);
		ns[j] = os[i];
	}
	free(os);
	return 0;
}

/* See index.h. */
struct node_index *node_index_new(void)
{
	struct node_index *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->cap = 1024;
	x->s = calloc(x->cap, sizeof(*x->s));
	if (!x->s) {
		free(x);
		return NULL;
	}
	pthread_mutex_init(&x->lock, NULL);
	return x;
}

/* See index.h. */
void node_index_free(struct node_index *x)
{
	if (!x)
		return;
	pthread_mutex_destroy(&x->lock);
	free(x->s);
	free(x);
}

/* See index.h. */
int node_index_get(struct node_index *x, const uint8_t *id, struct node_ient *e)
{
	size_t i;
	int ret = -ENOENT;

	pthread_mutex_lock(&x->lock);
	i = find(x, id);
	if (x->s[i].used) {
		*e = x->s[i].e;
		ret = 0;
	}
	pthread_mutex_unlock(&x->lock);
	return ret;
}

/* See index.h. */
int node_index_put(struct node_index *x, const struct node_ient *e, struct node_ient *old)
{
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&x->lock);
	if ((x->n + 1) * 4 > x->cap * 3 && grow(x)) {
		ret = -ENOMEM;
		goto out;
	}
	i = find(x, e->id);
	if (x->s[i].used) {
		if (old)
			*old = x->s[i].e;
		ret = 1;
	} else {
		x->s[i].used = 1;
		x->n++;
	}
	x->s[i].e = *e;
out:
	pthread_mutex_unlock(&x->lock);
	return ret;
}

/* See index.h. */
int node_index_del(struct node_index *x, const uint8_t *id, struct node_ient *old)
{
	size_t i, j, k, mask;

	pthread_mutex_lock(&x->lock);
	mask = x->cap - 1;
	i = find(x, id);
	if (!x->s[i].used) {
		pthread_mutex_unlock(&x->lock);
		return -ENOENT;
	}
	if (old)
		*old = x->s[i].e;
	x->s[i].used = 0;
	x->n--;
	/* Backward shift: move later members of the cluster into the hole. */
	for (j = (i + 1) & mask; x->s[j].used; j = (j + 1) & mask) {
		k = home(x, x->s[j].e.id);
		/* Move j to i unless its home lies cyclically in (i, j]. */
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			x->s[i] = x->s[j];
			x->s[j].used = 0;
			i = j;
		}
	}
	pthread_mutex_unlock(&x->lock);
	return 0;
}

/* See index.h. */
int node_index_all(struct node_index *x, struct node_ient **out, size_t *n)
{
	struct node_ient *v;
	size_t i, c = 0;

	pthread_mutex_lock(&x->lock);
	v = malloc((x->n ? x->n : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&x->lock);
		return -ENOMEM;
	}
	for (i = 0; i < x->cap; i++)
		if (x->s[i].used)
			v[c++] = x->s[i].e;
	pthread_mutex_unlock(&x->lock);
	*out = v;
	*n = c;
	return 0;
}

/* See index.h. */
size_t node_index_count(struct node_index *x)
{
	size_t n;

	pthread_mutex_lock(&x->lock);
	n = x->n;
	pthread_mutex_unlock(&x->lock);
	return n;
}

/* See index.h. */
int node_index_selftest(void)
{
	enum { KEYS = 3000, OPS = 200000 };
	struct node_index *x = node_index_new();
	uint64_t *val = calloc(KEYS, sizeof(*val)), seed = 88172645463325252ull;
	uint8_t id[POHM_ID_SIZE];
	struct node_ient e, got;
	size_t live = 0, i;
	int ret = 0;

	if (!x || !val) {
		ret = -1;
		goto out;
	}
	for (i = 0; i < OPS && !ret; i++) {
		unsigned k, op;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		k = (unsigned)(seed % KEYS);
		op = (unsigned)(seed >> 40) % 3;
		/* Few distinct home slots: long clusters that wrap around. */
		memset(id, 0, sizeof(id));
		pohm_st64(id, (uint64_t)(k % 97) * 1021 + (k & 1 ? ~0ull - 5 : 0));
		pohm_st32(id + 8, k);
		if (op == 0) {
			memset(&e, 0, sizeof(e));
			memcpy(e.id, id, POHM_ID_SIZE);
			e.off = i + 1;
			if (node_index_put(x, &e, NULL) != (val[k] ? 1 : 0))
				ret = -1;
			if (!val[k])
				live++;
			val[k] = i + 1;
		} else if (op == 1) {
			if (node_index_del(x, id, NULL) != (val[k] ? 0 : -ENOENT))
				ret = -1;
			if (val[k])
				live--;
			val[k] = 0;
		} else {
			int r = node_index_get(x, id, &got);

			if (val[k] ? r || got.off != val[k] : r != -ENOENT)
				ret = -1;
		}
		if (node_index_count(x) != live)
			ret = -1;
	}
	for (i = 0; i < KEYS && !ret; i++) {
		memset(id, 0, sizeof(id));
		pohm_st64(id, (uint64_t)(i % 97) * 1021 + (i & 1 ? ~0ull - 5 : 0));
		pohm_st32(id + 8, (uint32_t)i);
		if (val[i] ? node_index_get(x, id, &got) || got.off != val[i]
			   : node_index_get(x, id, &got) != -ENOENT)
			ret = -1;
	}
	if (ret)
		fprintf(stderr, "index self-test: put, get, del or count disagreed with the reference\n");
out:
	node_index_free(x);
	free(val);
	return ret;
}
