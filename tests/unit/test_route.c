/*
 * test_route.c — core/route: the ring rule (largest id <= key, wrap-around
 * to the largest), per-group separation, backend updates and removal,
 * validation of handshake / ROUTE_LIST / id-container payloads.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>

#include "buf.h"
#include "route.h"

/* An id whose first byte is b (rest zero): easy to order by hand. */
static void mkid(uint8_t *id, uint8_t b)
{
	memset(id, 0, POHM_ID_SIZE);
	id[0] = b;
}

static void add(struct pohm_route *r, int node, int32_t backend, uint32_t group,
		const uint8_t *firsts, uint32_t n)
{
	uint8_t ids[8][POHM_ID_SIZE];
	struct pohm_backend_ids b;
	uint32_t i;

	for (i = 0; i < n; i++)
		mkid(ids[i], firsts[i]);
	b.backend_id = backend;
	b.group = group;
	b.flags = 0;
	b.ids_count = n;
	b.ids = &ids[0][0];
	EXPECT_EQ_INT(pohm_route_update_backend(r, node, &b), 0);
}

static int owner_node(const struct pohm_route *r, uint32_t group, uint8_t first, uint8_t second)
{
	uint8_t k[POHM_ID_SIZE];
	const struct pohm_route_entry *e;

	mkid(k, first);
	k[1] = second;
	e = pohm_route_owner(r, group, k);
	return e ? e->node * 100 + e->backend : -1;
}

TEST(ring_rule_and_wraparound)
{
	struct pohm_route r = POHM_ROUTE_INIT;
	static const uint8_t a[] = { 0x20, 0x80 }, b[] = { 0x50, 0xc0 };

	add(&r, 1, 0, 1, a, 2);		/* node 1 owns [0x20,0x50) and [0x80,0xc0) */
	add(&r, 2, 3, 1, b, 2);		/* node 2 owns [0x50,0x80) and [0xc0,..) + wrap */
	EXPECT_EQ_INT(owner_node(&r, 1, 0x20, 0), 100);	/* equal id: that entry */
	EXPECT_EQ_INT(owner_node(&r, 1, 0x4f, 0xff), 100);
	EXPECT_EQ_INT(owner_node(&r, 1, 0x50, 0), 203);
	EXPECT_EQ_INT(owner_node(&r, 1, 0x90, 0), 100);
	EXPECT_EQ_INT(owner_node(&r, 1, 0xff, 0xff), 203);
	/* Below every id: wrap to the largest (0xc0, node 2). */
	EXPECT_EQ_INT(owner_node(&r, 1, 0x10, 0), 203);
	EXPECT_EQ_INT(owner_node(&r, 1, 0x00, 0), 203);
	EXPECT_EQ_INT(owner_node(&r, 2, 0x20, 0), -1);
	EXPECT_EQ_INT(pohm_route_group_size(&r, 1), 4);
	pohm_route_free(&r);
}

TEST(groups_are_separate_rings)
{
	struct pohm_route r = POHM_ROUTE_INIT;
	static const uint8_t g1[] = { 0x10 }, g2[] = { 0x90 }, g3[] = { 0x40 };

	add(&r, 0, 0, 1, g1, 1);
	add(&r, 1, 0, 2, g2, 1);
	add(&r, 2, 0, 0xffffffffu, g3, 1);
	EXPECT_EQ_INT(owner_node(&r, 1, 0x95, 0), 0);
	EXPECT_EQ_INT(owner_node(&r, 2, 0x15, 0), 100);	/* wraps inside group 2 only */
	EXPECT_EQ_INT(owner_node(&r, 0xffffffffu, 0x00, 0), 200);
	EXPECT_EQ_INT(pohm_route_group_size(&r, 0xffffffffu), 1);
	pohm_route_free(&r);
}

TEST(update_replaces_and_disable_removes)
{
	struct pohm_route r = POHM_ROUTE_INIT;
	static const uint8_t x[] = { 0x10, 0x20 }, y[] = { 0x30 }, z[] = { 0x70 };
	struct pohm_backend_ids off = { 5, 1, 1, 0, NULL };

	add(&r, 0, 5, 1, x, 2);
	add(&r, 1, 1, 1, z, 1);
	add(&r, 0, 5, 1, y, 1);		/* backend 5 of node 0 now has only 0x30 */
	EXPECT_EQ_INT(pohm_route_group_size(&r, 1), 2);
	EXPECT_EQ_INT(owner_node(&r, 1, 0x25, 0), 101);	/* 0x10/0x20 gone: wraps to 0x70 */
	EXPECT_EQ_INT(owner_node(&r, 1, 0x35, 0), 5);
	EXPECT_EQ_INT(pohm_route_update_backend(&r, 0, &off), 0);
	EXPECT_EQ_INT(pohm_route_group_size(&r, 1), 1);
	pohm_route_drop_node(&r, 1);
	EXPECT_EQ_INT(pohm_route_group_size(&r, 1), 0);
	pohm_route_free(&r);
}

TEST(apply_ids_validates_before_changing)
{
	struct pohm_route r = POHM_ROUTE_INIT;
	struct pohm_buf b = POHM_BUF_INIT;
	uint8_t ids[2][POHM_ID_SIZE];
	struct pohm_backend_ids be = { 0, 4, 0, 2, &ids[0][0] };
	static const uint8_t keep[] = { 0x99 };

	mkid(ids[0], 0x40);
	mkid(ids[1], 0x60);
	add(&r, 3, 0, 4, keep, 1);
	pohm_backends_encode_count(&b, 1);
	pohm_backends_encode_one(&b, &be);
	/* Truncated by one byte: rejected, table unchanged. */
	EXPECT_EQ_INT(pohm_route_apply_ids(&r, 3, b.p, b.len - 1, 1), -EPROTO);
	EXPECT_EQ_INT(pohm_route_group_size(&r, 4), 1);
	/* One byte too many: the container must be consumed exactly. */
	pohm_buf_put(&b, "x", 1);
	EXPECT_EQ_INT(pohm_route_apply_ids(&r, 3, b.p, b.len, 1), -EPROTO);
	EXPECT_EQ_INT(pohm_route_apply_ids(&r, 3, b.p, b.len - 1, 1), 0);
	EXPECT_EQ_INT(pohm_route_group_size(&r, 4), 2);	/* replace_all dropped 0x99 */
	EXPECT_EQ_INT(owner_node(&r, 4, 0x50, 0), 300);
	pohm_buf_free(&b);
	pohm_route_free(&r);
}

static void addr(struct pohm_addr *a, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->ip[0] = 10;
	a->ip[3] = 7;
}

TEST(route_list_parse)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_addr a[4], got;
	struct pohm_addr_list l;
	uint32_t nodes = 0;

	addr(&a[0], 1);
	addr(&a[1], 2);
	addr(&a[2], 3);
	addr(&a[3], 4);
	EXPECT_EQ_INT(pohm_addr_list_encode(&b, 2, a, 4), 0);
	EXPECT_EQ_INT(pohm_route_parse_list(b.p, b.len, &l, &nodes), 0);
	EXPECT_EQ_INT(nodes, 2);
	EXPECT_EQ_INT(pohm_route_list_addr(&l, 1, 1, &got), 0);
	EXPECT_EQ_INT(got.port, 4);
	EXPECT_EQ_INT(pohm_route_list_addr(&l, 1, 9, &got), 0);	/* idx clamped to 0 */
	EXPECT_EQ_INT(got.port, 3);
	EXPECT_EQ_INT(pohm_route_list_addr(&l, 2, 0, &got), -EPROTO);
	EXPECT_EQ_INT(pohm_route_parse_list(b.p, b.len - 1, &l, &nodes), -EPROTO);
	pohm_buf_put(&b, "", 1);
	EXPECT_EQ_INT(pohm_route_parse_list(b.p, b.len, &l, &nodes), -EPROTO);
	pohm_buf_free(&b);
}

TEST(handshake_parse)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_addr a;
	struct pohm_addr_list l;
	const uint8_t *ids;
	size_t idslen;

	addr(&a, 1025);
	pohm_addr_list_encode(&b, 1, &a, 1);
	pohm_backends_encode_count(&b, 0);
	EXPECT_EQ_INT(pohm_route_parse_handshake(b.p, b.len, &l, &ids, &idslen), 0);
	EXPECT_EQ_INT(idslen, 4);
	EXPECT_EQ_INT(l.count, 1);
	EXPECT_EQ_INT(pohm_route_parse_handshake(b.p, 7, &l, &ids, &idslen), -EPROTO);
	pohm_buf_free(&b);
}
