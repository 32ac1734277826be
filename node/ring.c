/*
 * ring.c — route table and ring rule.
 *
 * The table is small (a node per test process); every change rebuilds one
 * array of (group, id, node, backend) entries sorted by group then id, so a
 * lookup is two binary searches under a read lock.
 */
#include "ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RING_MAX_NODES 4096

struct rbackend {
	int32_t backend_id;
	uint32_t group;
	uint32_t nids;
	uint8_t *ids;
};

struct rnode {
	struct pohm_addr addr;
	unsigned nbe;
	struct rbackend *be;
};

struct rentry {
	uint8_t id[POHM_ID_SIZE];
	uint32_t group;
	uint32_t node;			/* index into nodes */
	int32_t backend_id;
};

struct node_ring {
	pthread_rwlock_t lock;		/* guards everything below */
	struct rnode *nodes;		/* nodes[0] is this node */
	unsigned nnodes;
	struct rentry *ent;		/* sorted by (group, id) */
	size_t nent;
};

/* Order by group, then by id as a big-endian number. */
static int ent_cmp(const void *a, const void *b)
{
	const struct rentry *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return memcmp(x->id, y->id, POHM_ID_SIZE);
}

/* Free a node's backends and their ids. */
static void free_backends(struct rnode *n)
{
	unsigned i;

	for (i = 0; i < n->nbe; i++)
		free(n->be[i].ids);
	free(n->be);
	n->be = NULL;
	n->nbe = 0;
}

/* Rebuild the sorted entry array; called with the write lock held. */
static int rebuild(struct node_ring *r)
{
	size_t total = 0, k = 0;
	struct rentry *e;
	unsigned i, j, m;

	for (i = 0; i < r->nnodes; i++)
		for (j = 0; j < r->nodes[i].nbe; j++)
			total += r->nodes[i].be[j].nids;
	e = malloc(total ? total * sizeof(*e) : 1);
	if (!e)
		return -ENOMEM;
	for (i = 0; i < r->nnodes; i++)
		for (j = 0; j < r->nodes[i].nbe; j++) {
			const struct rbackend *b = &r->nodes[i].be[j];

			for (m = 0; m < b->nids; m++, k++) {
				memcpy(e[k].id, b->ids + (size_t)m * POHM_ID_SIZE, POHM_ID_SIZE);
				e[k].group = b->group;
				e[k].node = i;
				e[k].backend_id = b->backend_id;
			}
		}
	qsort(e, total, sizeof(*e), ent_cmp);
	free(r->ent);
	r->ent = e;
	r->nent = total;
	return 0;
}

/* See ring.h. */
struct node_ring *node_ring_new(const struct pohm_addr *self)
{
	struct node_ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->nodes = calloc(1, sizeof(*r->nodes));
	if (!r->nodes) {
		free(r);
		return NULL;
	}
	r->nodes[0].addr = *self;
	r->nnodes = 1;
	pthread_rwlock_init(&r->lock, NULL);
	return r;
}

/* See ring.h. */
void node_ring_free(struct node_ring *r)
{
	unsigned i;

	if (!r)
		return;
	for (i = 0; i < r->nnodes; i++)
		free_backends(&r->nodes[i]);
	free(r->nodes);
	free(r->ent);
	pthread_rwlock_destroy(&r->lock);
	free(r);
}

/* The index of the node with this address, or -1 (lock held). */
static int find_node(struct node_ring *r, const struct pohm_addr *addr)
{
	unsigned i;

	for (i = 0; i < r->nnodes; i++)
		if (pohm_addr_equal(&r->nodes[i].addr, addr))
			return (int)i;
	return -1;
}

/* Drop node i (never 0, this node); write lock held. */
static void drop_node(struct node_ring *r, unsigned i)
{
	free_backends(&r->nodes[i]);
	r->nodes[i] = r->nodes[r->nnodes - 1];
	r->nnodes--;
}

/* See ring.h: the copies are made before the write lock is taken. */
int node_ring_set(struct node_ring *r, const struct pohm_addr *addr,
		  const struct pohm_backend_ids *be, unsigned nbe)
{
	struct rbackend *nb = NULL;
	struct rnode *nn;
	unsigned i;
	int idx, ret = 0;

	if (nbe) {
		nb = calloc(nbe, sizeof(*nb));
		if (!nb)
			return -ENOMEM;
	}
	for (i = 0; i < nbe; i++) {
		size_t len = (size_t)be[i].ids_count * POHM_ID_SIZE;

		nb[i].backend_id = be[i].backend_id;
		nb[i].group = be[i].group;
		nb[i].nids = be[i].ids_count;
		nb[i].ids = malloc(len ? len : 1);
		if (!nb[i].ids) {
			ret = -ENOMEM;
			goto fail;
		}
		if (len)
			memcpy(nb[i].ids, be[i].ids, len);
	}
	pthread_rwlock_wrlock(&r->lock);
	idx = find_node(r, addr);
	if (idx < 0 && !nbe)
		goto unlock;
	if (idx > 0 && !nbe) {
		drop_node(r, (unsigned)idx);
		ret = rebuild(r);
		goto unlock;
	}
	if (idx < 0) {
		if (r->nnodes >= RING_MAX_NODES) {
			ret = -E2BIG;
			goto unlock;
		}
		nn = realloc(r->nodes, (r->nnodes + 1) * sizeof(*nn));
		if (!nn) {
			ret = -ENOMEM;
			goto unlock;
		}
		r->nodes = nn;
		idx = (int)r->nnodes++;
		memset(&r->nodes[idx], 0, sizeof(r->nodes[idx]));
		r->nodes[idx].addr = *addr;
	}
	free_backends(&r->nodes[idx]);
	r->nodes[idx].be = nb;
	r->nodes[idx].nbe = nbe;
	nb = NULL;
	nbe = 0;
	ret = rebuild(r);
unlock:
	pthread_rwlock_unlock(&r->lock);
fail:
	for (i = 0; nb && i < nbe; i++)
		free(nb[i].ids);
	free(nb);
	return ret;
}

/* See ring.h: this node itself (index 0) is never removed. */
void node_ring_remove(struct node_ring *r, const struct pohm_addr *addr)
{
	int idx;

	pthread_rwlock_wrlock(&r->lock);
	idx = find_node(r, addr);
	if (idx > 0) {
		drop_node(r, (unsigned)idx);
		rebuild(r);	/* on ENOMEM the old entries stay: stale, not unsafe */
	}
	pthread_rwlock_unlock(&r->lock);
}

/* See ring.h. */
int node_ring_owner(struct node_ring *r, uint32_t group, const uint8_t *id, struct node_owner *o)
{
	size_t lo, hi, first, end, mid;
	const struct rentry *e;
	int ret = 0;

	pthread_rwlock_rdlock(&r->lock);
	/* [first, end) = the entries of the group. */
	lo = 0;
	hi = r->nent;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (r->ent[mid].group < group)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	hi = r->nent;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (r->ent[mid].group <= group)
			lo = mid + 1;
		else
			hi = mid;
	}
	end = lo;
	if (first == end) {
		ret = -ENOENT;
		goto out;
	}
	/* The first entry with id > key; the owner is the one before (or the last). */
	lo = first;
	hi = end;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (memcmp(r->ent[mid].id, id, POHM_ID_SIZE) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	e = lo == first ? &r->ent[end - 1] : &r->ent[lo - 1];
	o->addr = r->nodes[e->node].addr;
	o->backend_id = e->backend_id;
	o->self = e->node == 0;
out:
	pthread_rwlock_unlock(&r->lock);
	return ret;
}

/* See ring.h. */
unsigned node_ring_nodes(struct node_ring *r, struct pohm_addr *out, unsigned max)
{
	unsigned i, n = 0;

	pthread_rwlock_rdlock(&r->lock);
	for (i = 0; i < r->nnodes && n < max; i++)
		out[n++] = r->nodes[i].addr;
	pthread_rwlock_unlock(&r->lock);
	return n;
}

/* See ring.h. */
int node_ring_has(struct node_ring *r, const struct pohm_addr *addr)
{
	int found;

	pthread_rwlock_rdlock(&r->lock);
	found = find_node(r, addr) >= 0;
	pthread_rwlock_unlock(&r->lock);
	return found;
}
