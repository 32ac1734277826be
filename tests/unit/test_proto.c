/* test_proto.c — pins every size and offset of PROTOCOL.md §1 and checks that
 * the decoders reject malformed input instead of reading past it. */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "harness.h"
#include "edge.h"
#include "buf.h"
#include "proto.h"

TEST(cmd_layout)
{
	struct pohm_cmd c = { 0 }, d;
	uint8_t raw[POHM_CMD_SIZE];

	memset(c.id.id, 0xAB, 64);
	c.id.group = 0x01020304;
	c.status = -77;
	c.cmd = POHM_CMD_WRITE;
	c.backend_id = 5;
	c.trace_id = 0x1112131415161718ULL;
	c.flags = POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT;
	c.trans = 0x2122232425262728ULL;
	c.size = 208 + 10;
	pohm_cmd_encode(raw, &c);
	EXPECT_EQ_INT(raw[63], 0xAB);
	EXPECT_EQ_INT(raw[64], 0x04);		/* group LE at 64 */
	EXPECT_EQ_INT(raw[67], 0x01);
	EXPECT_EQ_INT(raw[68] | raw[75], 0);	/* reserved */
	EXPECT_EQ_INT(pohm_le32(raw + 76), (uint32_t)-77);
	EXPECT_EQ_INT(pohm_le32(raw + 80), 4);
	EXPECT_EQ_INT(pohm_le32(raw + 84), 5);
	EXPECT_EQ_U64(pohm_le64(raw + 88), 0x1112131415161718ULL);
	EXPECT_EQ_U64(pohm_le64(raw + 96), 0x9);
	EXPECT_EQ_INT(raw[104], 0x28);
	EXPECT_EQ_U64(pohm_le64(raw + 112), 218);
	pohm_cmd_decode(&d, raw);
	EXPECT_EQ_INT(d.status, -77);
	EXPECT_EQ_U64(d.trans, c.trans);
	EXPECT_EQ_INT(d.id.group, c.id.group);
	EXPECT(!pohm_cmd_is_reply(&d));
	d.flags |= POHM_FLAG_REPLY;
	EXPECT(pohm_cmd_is_reply(&d));
}

TEST(handshake_version_bytes)
{
	/* PROTOCOL.md §8: id starts 03 00 00 00 | 00 00 00 00 | 00 00 00 00 | 01 00 00 00 */
	static const uint8_t want[16] = { 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 };
	int32_t v[4] = { 3, 0, 0, 1 }, back[4];
	uint8_t id[64] = { 0 };

	pohm_version_encode(id, v);
	EXPECT_MEM(id, want, 16);
	pohm_version_decode(back, id);
	EXPECT_EQ_INT(back[0], 3);
	EXPECT_EQ_INT(back[3], 1);
}

TEST(io_attr_layout)
{
	struct pohm_io_attr io = { 0 }, d;
	uint8_t raw[POHM_IO_ATTR_SIZE];

	memset(io.parent, 0x11, 64);
	memset(io.id, 0x22, 64);
	io.start = 1; io.num = 2;
	io.timestamp.tsec = 3; io.timestamp.tnsec = 4;
	io.user_flags = 5; io.total_size = 6; io.record_flags = 7;
	io.flags = POHM_IO_CAS | POHM_IO_CAS_TIMESTAMP;
	io.offset = 8; io.size = 9;
	pohm_io_attr_encode(raw, &io);
	EXPECT_EQ_INT(raw[0], 0x11);
	EXPECT_EQ_INT(raw[64], 0x22);
	EXPECT_EQ_U64(pohm_le64(raw + 128), 1);
	EXPECT_EQ_U64(pohm_le64(raw + 136), 2);
	EXPECT_EQ_U64(pohm_le64(raw + 144), 3);
	EXPECT_EQ_U64(pohm_le64(raw + 152), 4);
	EXPECT_EQ_U64(pohm_le64(raw + 160), 5);
	EXPECT_EQ_U64(pohm_le64(raw + 168), 6);
	EXPECT_EQ_U64(pohm_le64(raw + 176), 7);
	EXPECT_EQ_INT(pohm_le32(raw + 184), 0);
	EXPECT_EQ_INT(pohm_le32(raw + 188), 0xA000);
	EXPECT_EQ_U64(pohm_le64(raw + 192), 8);
	EXPECT_EQ_U64(pohm_le64(raw + 200), 9);
	pohm_io_attr_decode(&d, raw);
	EXPECT(!memcmp(&d.parent, io.parent, 64) && d.size == 9 && d.flags == io.flags);
}

TEST(io_payload_sizes)
{
	uint8_t pkt[POHM_IO_ATTR_SIZE + 5] = { 0 };
	struct pohm_io_attr io = { 0 };
	const uint8_t *data;
	size_t n;

	io.size = 5;
	pohm_io_attr_encode(pkt, &io);
	EXPECT_EQ_INT(pohm_io_payload_decode(&io, &data, &n, pkt, sizeof(pkt), 1), 0);
	EXPECT_EQ_INT(n, 5);
	EXPECT(data == pkt + 208);
	EXPECT_EQ_INT(pohm_io_payload_decode(&io, &data, &n, pkt, sizeof(pkt) - 1, 1), -EPROTO);
	EXPECT_EQ_INT(pohm_io_payload_decode(&io, &data, &n, pkt, 207, 0), -EPROTO);
}

TEST(addr_ipv4_is_raw_sockaddr_in)
{
	struct pohm_addr a, b;
	struct sockaddr_in sin;
	uint8_t raw[POHM_ADDR_SIZE];

	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1:1025:2"), 0);
	pohm_addr_encode(raw, &a);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(1025);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	EXPECT_MEM(raw, &sin, sizeof(sin));
	EXPECT_EQ_INT(pohm_le16(raw + 28), 16);
	EXPECT_EQ_INT(pohm_le16(raw + 30), 2);
	EXPECT_EQ_INT(pohm_addr_decode(&b, raw), 0);
	EXPECT(pohm_addr_equal(&a, &b));
	EXPECT_EQ_INT(b.port, 1025);
}

TEST(addr_ipv6)
{
	struct pohm_addr a, b;
	uint8_t raw[POHM_ADDR_SIZE];
	char s[64];

	EXPECT_EQ_INT(pohm_addr_parse(&a, "[::1]:2000"), 0);
	EXPECT_EQ_INT(a.family, AF_INET6);
	pohm_addr_encode(raw, &a);
	EXPECT_EQ_INT(pohm_le16(raw + 28), 28);
	EXPECT_EQ_INT(pohm_addr_decode(&b, raw), 0);
	EXPECT(pohm_addr_equal(&a, &b));
	pohm_addr_format(&b, s, sizeof(s));
	EXPECT_EQ_STR(s, "[::1]:2000");
	EXPECT_EQ_INT(pohm_addr_parse(&a, "::1:2000:10"), 0);
	EXPECT(pohm_addr_equal(&a, &b));
}

TEST(addr_parse_errors)
{
	struct pohm_addr a;
	char s[64];

	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1"), -EINVAL);
	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1:0"), -EINVAL);
	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1:70000"), -EINVAL);
	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1:12x"), -EINVAL);
	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1:12:7"), -EINVAL);
	EXPECT_EQ_INT(pohm_addr_parse(&a, "127.0.0.1:12:10"), -EINVAL);	/* v4 with family 10 */
	EXPECT_EQ_INT(pohm_addr_parse(&a, "nohost:12"), -EINVAL);
	EXPECT_EQ_INT(pohm_addr_parse(&a, "localhost:1025"), 0);
	pohm_addr_format(&a, s, sizeof(s));
	EXPECT_EQ_STR(s, "127.0.0.1:1025");
}

TEST(addr_decode_rejects)
{
	uint8_t raw[POHM_ADDR_SIZE] = { 0 };
	struct pohm_addr a;

	pohm_st16(raw + 28, 16);
	pohm_st16(raw + 30, AF_INET);
	EXPECT_EQ_INT(pohm_addr_decode(&a, raw), -EPROTO);	/* wildcard */
	raw[4] = 10;
	EXPECT_EQ_INT(pohm_addr_decode(&a, raw), 0);
	pohm_st16(raw + 28, 28);
	EXPECT_EQ_INT(pohm_addr_decode(&a, raw), -EPROTO);	/* v4 with v6 length */
	pohm_st16(raw + 30, 99);
	EXPECT_EQ_INT(pohm_addr_decode(&a, raw), -EPROTO);
}

TEST(addr_list)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_addr a[4], got;
	struct pohm_addr_list l;
	size_t used;
	int i;

	for (i = 0; i < 4; i++) {
		char s[32];

		snprintf(s, sizeof(s), "127.0.0.%d:%d", i + 1, 1000 + i);
		EXPECT_EQ_INT(pohm_addr_parse(&a[i], s), 0);
	}
	EXPECT_EQ_INT(pohm_addr_list_encode(&b, 2, a, 4), 0);
	EXPECT_EQ_INT(b.len, 8 + 4 * 32);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, b.len), 0);
	EXPECT_EQ_INT(used, b.len);
	EXPECT_EQ_INT(l.per_node, 2);
	EXPECT_EQ_INT(pohm_addr_list_get(&l, 3, &got), 0);
	EXPECT(pohm_addr_equal(&got, &a[3]));
	EXPECT_EQ_INT(pohm_addr_list_get(&l, 4, &got), -ERANGE);
	/* Truncated, count not a multiple, zero per node, negative count. */
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, b.len - 1), -EPROTO);
	pohm_st32(b.p + 4, 3);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, b.len), -EPROTO);
	pohm_st32(b.p, 0);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, b.len), -EPROTO);
	pohm_st32(b.p, 1);
	pohm_st32(b.p + 4, 0x80000000u);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, b.len), -EPROTO);
	pohm_st32(b.p + 4, 0x7fffffffu);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, b.len), -EPROTO);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, b.p, 7), -EPROTO);
	pohm_buf_free(&b);
}

TEST(backend_ids)
{
	struct pohm_buf b = POHM_BUF_INIT;
	uint8_t ids[3 * 64];
	struct pohm_backend_ids be = { 7, 2, 0, 3, ids }, got;
	struct pohm_backend_iter it;

	memset(ids, 0x5A, sizeof(ids));
	EXPECT_EQ_INT(pohm_backends_encode_count(&b, 2), 0);
	EXPECT_EQ_INT(pohm_backends_encode_one(&b, &be), 0);
	be.backend_id = 8; be.ids_count = 0;
	EXPECT_EQ_INT(pohm_backends_encode_one(&b, &be), 0);
	EXPECT_EQ_INT(b.len, 4 + 16 + 192 + 16);
	EXPECT_EQ_INT(pohm_backends_begin(&it, b.p, b.len), 0);
	EXPECT_EQ_INT(pohm_backends_next(&it, &got), 1);
	EXPECT_EQ_INT(got.backend_id, 7);
	EXPECT_EQ_INT(got.group, 2);
	EXPECT_EQ_INT(got.ids_count, 3);
	EXPECT(got.ids == b.p + 20);
	EXPECT_EQ_INT(pohm_backends_next(&it, &got), 1);
	EXPECT_EQ_INT(got.backend_id, 8);
	EXPECT_EQ_INT(pohm_backends_next(&it, &got), 0);
	/* Not exactly consumed: one byte more, one less, absurd ids_count. */
	EXPECT_EQ_INT(pohm_backends_begin(&it, b.p, b.len - 1), -EPROTO);
	pohm_buf_put(&b, "", 1);
	EXPECT_EQ_INT(pohm_backends_begin(&it, b.p, b.len), -EPROTO);
	pohm_st32(b.p + 4 + 12, 0xFFFFFFFFu);
	EXPECT_EQ_INT(pohm_backends_begin(&it, b.p, b.len - 1), -EPROTO);
	pohm_buf_free(&b);
}

TEST(file_info_hole_and_flen)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_file_info fi = { 0 }, got;
	struct pohm_addr a, ga;
	const uint8_t *f;

	pohm_addr_parse(&a, "10.0.0.1:1025");
	memset(fi.checksum, 0xCC, 64);
	fi.record_flags = 0x40;
	fi.size = 12345;
	fi.offset = 99;
	fi.mtime.tsec = 1700000000;
	fi.mtime.tnsec = 42;
	EXPECT_EQ_INT(pohm_lookup_reply_encode(&b, &a, &fi, "/data/blob-0"), 0);
	EXPECT_EQ_INT(b.len, 32 + 112 + 13);
	f = b.p + 32;
	EXPECT_EQ_INT(pohm_le32(f), 13);
	EXPECT_EQ_INT(f[4], 0xCC);
	EXPECT_EQ_INT(pohm_le32(f + 68), 0);	/* the hole */
	EXPECT_EQ_U64(pohm_le64(f + 72), 0x40);
	EXPECT_EQ_U64(pohm_le64(f + 80), 12345);
	EXPECT_EQ_U64(pohm_le64(f + 96), 1700000000);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(&ga, &got, b.p, b.len), 0);
	EXPECT(pohm_addr_equal(&a, &ga));
	EXPECT_EQ_U64(got.size, 12345);
	EXPECT_EQ_U64(got.mtime.tnsec, 42);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &got, b.p, b.len - 1), -EPROTO);
	pohm_st32(b.p + 32, (uint32_t)-1);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &got, b.p, b.len), -EPROTO);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &got, b.p, 100), -EPROTO);
	pohm_buf_free(&b);
	/* Served from cache: flen 0 then one zero byte. */
	EXPECT_EQ_INT(pohm_lookup_reply_encode(&b, &a, &fi, NULL), 0);
	EXPECT_EQ_INT(b.len, 32 + 112 + 1);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &got, b.p, b.len), 0);
	EXPECT_EQ_INT(got.flen, 0);
	pohm_buf_free(&b);
}

TEST(auth_and_backend_status)
{
	struct pohm_auth a = { { 0 }, 0 }, d;
	struct pohm_backend_status s[2] = { { 0 } }, g;
	struct pohm_buf b = POHM_BUF_INIT;
	uint8_t raw[POHM_AUTH_SIZE];
	uint32_t c;

	pohm_auth_cookie_from_string(a.cookie, "0123456789abcdef0123456789abcdefXYZ");
	EXPECT_EQ_INT(a.cookie[30], 'e');
	EXPECT_EQ_INT(a.cookie[31], 0);		/* ≤ 31 characters */
	pohm_auth_encode(raw, &a);
	EXPECT_EQ_INT(pohm_auth_decode(&d, raw, sizeof(raw)), 0);
	EXPECT_MEM(d.cookie, a.cookie, 32);
	EXPECT_EQ_INT(pohm_auth_decode(&d, raw, 63), -EINVAL);

	s[0].backend_id = 1; s[0].state = 1; s[1].backend_id = 2; s[1].read_only = 1;
	EXPECT_EQ_INT(pohm_backend_status_encode(&b, s, 2), 0);
	EXPECT_EQ_INT(b.len, 4 + 2 * 96);
	pohm_buf_put(&b, NULL, 96);	/* zeroed slack is allowed */
	EXPECT_EQ_INT(pohm_backend_status_count(&c, b.p, b.len), 0);
	EXPECT_EQ_INT(c, 2);
	EXPECT_EQ_INT(pohm_backend_status_get(&g, b.p, b.len, 1), 0);
	EXPECT_EQ_INT(g.backend_id, 2);
	EXPECT_EQ_INT(g.read_only, 1);
	EXPECT_EQ_INT(pohm_backend_status_get(&g, b.p, b.len, 2), -EPROTO);
	pohm_st32(b.p, 5);
	EXPECT_EQ_INT(pohm_backend_status_count(&c, b.p, b.len), -EPROTO);
	pohm_buf_free(&b);
}

/* ---------------------------------------------------------------- replies at the edge */

/*
 * Every reply decoder, given every proper prefix of a valid reply placed
 * against the guard page (edge.h): a clear error, never a read past the
 * end (which would crash here).  The whole reply at the edge decodes.
 */
TEST(replies_truncated_at_the_guard_page)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_addr a[2], ga;
	struct pohm_addr_list l;
	struct pohm_file_info fi = { 0 }, gfi;
	struct pohm_io_attr io = { 0 }, gio;
	struct pohm_backend_status st[2] = { { 0 } }, gst;
	struct pohm_backend_iter it;
	struct pohm_backend_ids be, gbe;
	struct pohm_auth au = { { 0 }, 7 }, gau;
	uint8_t ids[2 * 64], raw[POHM_IO_ATTR_SIZE + 5];
	const uint8_t *data;
	size_t k, dlen, used;
	uint32_t c;

	EXPECT_EQ_INT(pohm_addr_parse(&a[0], "10.0.0.1:1025"), 0);
	EXPECT_EQ_INT(pohm_addr_parse(&a[1], "[fe80::1]:1026"), 0);
	a[1].scope_id = 3;
	/* io_attr + data */
	io.size = 5;
	pohm_io_attr_encode(raw, &io);
	memcpy(raw + POHM_IO_ATTR_SIZE, "hello", 5);
	EXPECT_EQ_INT(pohm_io_payload_decode(&gio, &data, &dlen, th_at_edge(raw, sizeof(raw)),
					     sizeof(raw), 1), 0);
	EXPECT_EQ_INT(dlen, 5);
	for (k = 0; k < sizeof(raw); k++)
		EXPECT_EQ_INT(pohm_io_payload_decode(&gio, &data, &dlen, th_at_edge(raw, k), k, 1),
			      -EPROTO);
	/* Without the size check a bare io_attr is a reply with no data. */
	EXPECT_EQ_INT(pohm_io_payload_decode(&gio, &data, &dlen, th_at_edge(raw, POHM_IO_ATTR_SIZE),
					     POHM_IO_ATTR_SIZE, 0), 0);
	EXPECT_EQ_INT(dlen, 0);
	EXPECT_EQ_INT(pohm_io_payload_decode(&gio, &data, &dlen, th_at_edge(raw, 207), 207, 0),
		      -EPROTO);

	/* address list */
	EXPECT_EQ_INT(pohm_addr_list_encode(&b, 1, a, 2), 0);
	EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, th_at_edge(b.p, b.len), b.len), 0);
	EXPECT_EQ_INT(used, b.len);
	EXPECT_EQ_INT(pohm_addr_list_get(&l, 1, &ga), 0);
	EXPECT(pohm_addr_equal(&ga, &a[1]));
	for (k = 0; k < b.len; k++)
		EXPECT_EQ_INT(pohm_addr_list_decode(&l, &used, th_at_edge(b.p, k), k), -EPROTO);
	pohm_buf_free(&b);

	/* backend id container */
	memset(ids, 0x11, sizeof(ids));
	be = (struct pohm_backend_ids){ 3, 4, 0, 2, ids };
	pohm_backends_encode_count(&b, 1);
	pohm_backends_encode_one(&b, &be);
	EXPECT_EQ_INT(pohm_backends_begin(&it, th_at_edge(b.p, b.len), b.len), 0);
	EXPECT_EQ_INT(pohm_backends_next(&it, &gbe), 1);
	EXPECT_EQ_INT(gbe.ids_count, 2);
	EXPECT_EQ_INT(gbe.ids[127], 0x11);
	EXPECT_EQ_INT(pohm_backends_next(&it, &gbe), 0);
	for (k = 0; k < b.len; k++)
		EXPECT_EQ_INT(pohm_backends_begin(&it, th_at_edge(b.p, k), k), -EPROTO);
	pohm_buf_free(&b);

	/* LOOKUP/WRITE reply: address, file info, path */
	EXPECT_EQ_INT(pohm_lookup_reply_encode(&b, &a[1], &fi, "/p"), 0);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(&ga, &gfi, th_at_edge(b.p, b.len), b.len), 0);
	EXPECT(pohm_addr_equal(&ga, &a[1]));
	EXPECT_EQ_INT(gfi.flen, 3);
	for (k = 0; k < b.len; k++)
		EXPECT_EQ_INT(pohm_lookup_reply_decode(&ga, &gfi, th_at_edge(b.p, k), k), -EPROTO);
	pohm_buf_free(&b);

	/* BACKEND_STATUS */
	st[1].backend_id = 9;
	pohm_backend_status_encode(&b, st, 2);
	EXPECT_EQ_INT(pohm_backend_status_get(&gst, th_at_edge(b.p, b.len), b.len, 1), 0);
	EXPECT_EQ_INT(gst.backend_id, 9);
	for (k = 0; k < b.len; k++) {
		EXPECT(pohm_backend_status_count(&c, th_at_edge(b.p, k), k) == -EPROTO || c < 2);
		EXPECT_EQ_INT(pohm_backend_status_get(&gst, th_at_edge(b.p, k), k, 1), -EPROTO);
	}
	pohm_buf_free(&b);

	/* AUTH (the server's own error for a bad body is -EINVAL) */
	pohm_auth_encode(raw, &au);
	EXPECT_EQ_INT(pohm_auth_decode(&gau, th_at_edge(raw, POHM_AUTH_SIZE), POHM_AUTH_SIZE), 0);
	EXPECT_EQ_U64(gau.flags, 7);
	for (k = 0; k < POHM_AUTH_SIZE; k++)
		EXPECT_EQ_INT(pohm_auth_decode(&gau, th_at_edge(raw, k), k), -EINVAL);
}

/* Malformed counts and lengths the edge walk above does not reach. */
TEST(replies_malformed)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_addr a;
	struct pohm_file_info fi = { 0 }, gfi;
	struct pohm_backend_status st = { 0 }, gst;
	struct pohm_backend_iter it;
	struct pohm_backend_ids gbe;
	uint8_t c4[4];
	uint32_t c;

	/* A backend count that is negative, or far more than the bytes hold. */
	pohm_st32(c4, 0x80000000u);
	EXPECT_EQ_INT(pohm_backends_begin(&it, th_at_edge(c4, 4), 4), -EPROTO);
	pohm_st32(c4, 0x7fffffffu);
	EXPECT_EQ_INT(pohm_backends_begin(&it, th_at_edge(c4, 4), 4), -EPROTO);
	/* Zero backends: valid, and the iterator is empty. */
	pohm_st32(c4, 0);
	EXPECT_EQ_INT(pohm_backends_begin(&it, th_at_edge(c4, 4), 4), 0);
	EXPECT_EQ_INT(pohm_backends_next(&it, &gbe), 0);
	EXPECT_EQ_INT(pohm_backends_begin(&it, NULL, 4), -EPROTO);
	/* A status count whose entries would overflow 32 bits. */
	pohm_st32(c4, 0xffffffffu);
	EXPECT_EQ_INT(pohm_backend_status_count(&c, th_at_edge(c4, 4), 4), -EPROTO);
	EXPECT_EQ_INT(pohm_backend_status_count(&c, NULL, 4), -EPROTO);
	/* Every field of a status entry where PROTOCOL.md puts it. */
	st.backend_id = 0x01020304; st.state = -2; st.defrag_state = 6;
	st.last_start.tsec = 1700000000; st.last_start.tnsec = 8; st.last_start_err = -5;
	st.read_only = 1; st.delay = 250;
	pohm_backend_status_encode(&b, &st, 1);
	EXPECT_EQ_INT(pohm_backend_status_get(&gst, th_at_edge(b.p, b.len), b.len, 0), 0);
	EXPECT_EQ_INT(gst.backend_id, 0x01020304);
	EXPECT_EQ_INT(gst.state, -2);
	EXPECT_EQ_INT(gst.defrag_state, 6);
	EXPECT_EQ_U64(gst.last_start.tsec, 1700000000);
	EXPECT_EQ_U64(gst.last_start.tnsec, 8);
	EXPECT_EQ_INT(gst.last_start_err, -5);
	EXPECT_EQ_INT(gst.read_only, 1);
	EXPECT_EQ_INT(gst.delay, 250);
	pohm_buf_free(&b);
	/* A path length that is the bytes left (accepted) or one more (refused). */
	pohm_addr_parse(&a, "10.0.0.1:1025");
	EXPECT_EQ_INT(pohm_lookup_reply_encode(&b, &a, &fi, "/abc"), 0);
	pohm_st32(b.p + 32, 5);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &gfi, th_at_edge(b.p, b.len), b.len), 0);
	pohm_st32(b.p + 32, 6);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &gfi, th_at_edge(b.p, b.len), b.len), -EPROTO);
	pohm_st32(b.p + 32, 0x7fffffffu);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &gfi, th_at_edge(b.p, b.len), b.len), -EPROTO);
	/* A wildcard address in the reply. */
	pohm_st32(b.p + 32, 5);
	memset(b.p + 4, 0, 4);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &gfi, th_at_edge(b.p, b.len), b.len), -EPROTO);
	pohm_buf_free(&b);
	EXPECT_EQ_INT(pohm_lookup_reply_decode(NULL, &gfi, NULL, 200), -EPROTO);
}

TEST(status_table)
{
	EXPECT_EQ_INT(pohm_status_errno(0), 0);
	EXPECT_EQ_INT(pohm_status_errno(-ENOENT), -ENOENT);
	EXPECT_EQ_INT(pohm_status_errno(-EBADFD), -EBADFD);
	EXPECT_EQ_INT(pohm_status_errno(-EILSEQ), -EILSEQ);
	EXPECT_EQ_INT(pohm_status_errno(-EOPNOTSUPP), -EOPNOTSUPP);
	EXPECT_EQ_INT(pohm_status_errno(-4242), -EIO);
	EXPECT_EQ_INT(pohm_status_errno(-2147483647 - 1), -EIO);
	EXPECT_EQ_STR(pohm_cmd_name(POHM_CMD_BACKEND_STATUS), "BACKEND_STATUS");
	EXPECT_EQ_STR(pohm_cmd_name(6), "cmd#?");
	EXPECT_EQ_STR(pohm_cmd_name(-1), "cmd#?");
}

TEST(time_order)
{
	struct pohm_time a = { 5, 9 }, b = { 6, 0 }, c = { 5, 10 };

	EXPECT(pohm_time_cmp(&a, &b) < 0);
	EXPECT(pohm_time_cmp(&b, &a) > 0);
	EXPECT(pohm_time_cmp(&a, &c) < 0);
	EXPECT_EQ_INT(pohm_time_cmp(&a, &a), 0);
}

/* buf.h's cursor, which the journal and the storage objects decode with. */
TEST(rd_cursor_reads_little_endian_and_stops_at_the_end)
{
	static const uint8_t b[] = { 1, 0x02, 0x01, 4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1, 0xAA };
	struct pohm_rd r = pohm_rd_make(b, sizeof(b));

	EXPECT_EQ_INT(pohm_rd_u8(&r), 1);
	EXPECT_EQ_INT(pohm_rd_u16(&r), 0x0102);
	EXPECT_EQ_U64(pohm_rd_u32(&r), 0x01020304u);
	EXPECT_EQ_U64(pohm_rd_u64(&r), 0x0102030405060708ULL);
	EXPECT_EQ_INT(r.err, 0);
	EXPECT_EQ_U64(r.left, 1);
	/* Past the end: 0, err -EPROTO, and nothing consumed. */
	EXPECT_EQ_U64(pohm_rd_u16(&r), 0);
	EXPECT_EQ_INT(r.err, -EPROTO);
	EXPECT_EQ_U64(r.left, 1);
	/* Sticky: even a read that would fit fails now. */
	EXPECT(pohm_rd_take(&r, 1) == NULL);
	EXPECT_EQ_INT(pohm_rd_u8(&r), 0);
	/* The first error stays (a decoder's own -ENOMEM is not turned into -EPROTO). */
	r = pohm_rd_make(b, 2);
	r.err = -ENOMEM;
	EXPECT(pohm_rd_take(&r, 1) == NULL);
	EXPECT_EQ_INT(r.err, -ENOMEM);
	r = pohm_rd_make(b, 2);
	EXPECT(pohm_rd_take(&r, 2) == b);
	EXPECT(pohm_rd_take(&r, 0) == b + 2);
	EXPECT_EQ_INT(r.err, 0);
}
