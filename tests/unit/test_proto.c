/* test_proto.c — pins every size and offset of PROTOCOL.md §1 and checks that
 * the decoders reject malformed input instead of reading past it. */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "harness.h"
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
