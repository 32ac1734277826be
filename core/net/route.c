/*
 * route.c — the sorted per-group ring of route.h and the parsers of the
 * handshake and ROUTE_LIST payloads.
 *
 * Sections: ordering · edits · lookup · payload parsers.
 */
#include "route.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ROUTE_MAX_IDS (1u << 20)	/* refuse absurd tables from a hostile node */

/* ---------------------------------------------------------------- ordering */

static int entry_cmp(const void *a, const void *b)
{
	const struct pohm_route_entry *x = a, *y = b;
	int c;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	c = memcmp(x->id, y->id, POHM_ID_SIZE);
	if (c)
		return c;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->backend < y->backend ? -1 : x->backend > y->backend;
}

/* ---------------------------------------------------------------- edits */

void pohm_route_free(struct pohm_route *r)
{
	free(r->e);
	r->e = NULL;
	r->n = r->cap = 0;
}

static void drop_where(struct pohm_route *r, int node, int all_backends, int32_t backend)
{
	size_t i, j = 0;

	for (i = 0; i < r->n; i++) {
		if (r->e[i].node == node && (all_backends || r->e[i].backend == backend))
			continue;
		r->e[j++] = r->e[i];
	}
	r->n = j;
}

void pohm_route_drop_node(struct pohm_route *r, int node)
{
	drop_where(r, node, 1, 0);
}

static int reserve(struct pohm_route *r, size_t more)
{
	size_t cap = r->cap ? r->cap : 64;
	struct pohm_route_entry *e;

	if (r->n + more <= r->cap)
		return 0;
	if (r->n + more > ROUTE_MAX_IDS)
		return -ENOMEM;
	while (cap < r->n + more)
		cap *= 2;
	e = realloc(r->e, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	r->e = e;
	r->cap = cap;
	return 0;
}

/* Append b's ids without sorting. */
static int append(struct pohm_route *r, int node, const struct pohm_backend_ids *b)
{
	uint32_t i;
	int rc;

	if (b->flags & 1)
		return 0;
	rc = reserve(r, b->ids_count);
	if (rc)
		return rc;
	for (i = 0; i < b->ids_count; i++) {
		struct pohm_route_entry *e = &r->e[r->n++];

		memcpy(e->id, b->ids + (size_t)i * POHM_ID_SIZE, POHM_ID_SIZE);
		e->group = b->group;
		e->backend = b->backend_id;
		e->node = node;
	}
	return 0;
}

int pohm_route_update_backend(struct pohm_route *r, int node, const struct pohm_backend_ids *b)
{
	int rc;

	drop_where(r, node, 0, b->backend_id);
	rc = append(r, node, b);
	if (r->n)
		qsort(r->e, r->n, sizeof(*r->e), entry_cmp);
	return rc;
}

int pohm_route_apply_ids(struct pohm_route *r, int node, const uint8_t *p, size_t n,
			 int replace_all)
{
	struct pohm_backend_iter it;
	struct pohm_backend_ids b;
	size_t total = 0;
	int rc;

	/* Validate everything first, so a malformed container changes nothing. */
	rc = pohm_backends_begin(&it, p, n);
	if (rc)
		return rc;
	while (pohm_backends_next(&it, &b))
		total += b.ids_count;
	rc = reserve(r, total);
	if (rc)
		return rc;
	if (replace_all)
		pohm_route_drop_node(r, node);
	pohm_backends_begin(&it, p, n);
	while (pohm_backends_next(&it, &b)) {
		drop_where(r, node, 0, b.backend_id);
		append(r, node, &b);	/* cannot fail: reserved above */
	}
	if (r->n)
		qsort(r->e, r->n, sizeof(*r->e), entry_cmp);
	return 0;
}

/* ---------------------------------------------------------------- lookup */

/* First index whose group is >= g. */
static size_t group_lower(const struct pohm_route *r, uint32_t g)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->e[mid].group < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t pohm_route_group_size(const struct pohm_route *r, uint32_t group)
{
	size_t lo = group_lower(r, group);

	if (group == UINT32_MAX)
		return r->n - lo;
	return group_lower(r, group + 1) - lo;
}

const struct pohm_route_entry *pohm_route_owner(const struct pohm_route *r, uint32_t group,
						const uint8_t id[POHM_ID_SIZE])
{
	size_t start = group_lower(r, group), end, lo, hi;

	end = start + pohm_route_group_size(r, group);
	if (start == end)
		return NULL;
	/* lo = first entry with id > K; the owner is the one before it. */
	lo = start;
	hi = end;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (memcmp(r->e[mid].id, id, POHM_ID_SIZE) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == start ? &r->e[end - 1] : &r->e[lo - 1];
}

const struct pohm_route_entry *pohm_route_owner_among(const struct pohm_route *r, uint32_t group,
						      const uint8_t id[POHM_ID_SIZE],
						      int (*usable)(void *arg, int node), void *arg)
{
	const struct pohm_route_entry *e = pohm_route_owner(r, group, id);
	size_t start, n, at, i;

	if (!e)
		return NULL;
	start = group_lower(r, group);
	n = pohm_route_group_size(r, group);
	at = (size_t)(e - r->e) - start;
	/* Walk down the ring from the owner (wrapping to the top) to the first usable entry. */
	for (i = 0; i < n; i++) {
		const struct pohm_route_entry *x = &r->e[start + (at + n - i) % n];

		if (usable(arg, x->node))
			return x;
	}
	return NULL;
}

/* ---------------------------------------------------------------- payload parsers */

int pohm_route_parse_handshake(const uint8_t *p, size_t n, struct pohm_addr_list *addrs,
			       const uint8_t **ids, size_t *idslen)
{
	size_t used = 0;
	int rc = pohm_addr_list_decode(addrs, &used, p, n);

	if (rc)
		return rc;
	if (used > n || addrs->count == 0)
		return -EPROTO;
	*ids = p + used;
	*idslen = n - used;
	return 0;
}

int pohm_route_parse_list(const uint8_t *p, size_t n, struct pohm_addr_list *l, uint32_t *nodes)
{
	size_t used = 0;
	int rc = pohm_addr_list_decode(l, &used, p, n);

	if (rc)
		return rc;
	if (used != n || !l->per_node || l->count % l->per_node)
		return -EPROTO;
	*nodes = l->count / l->per_node;
	return 0;
}

int pohm_route_list_addr(const struct pohm_addr_list *l, uint32_t i, uint32_t idx,
			 struct pohm_addr *out)
{
	if (!l->per_node || i >= l->count / l->per_node)
		return -EPROTO;
	if (idx >= l->per_node)
		idx = 0;
	return pohm_addr_list_get(l, i * l->per_node + idx, out);
}
