/*
 * test_node_decode.c — the node's decoders of request bodies (reqbody.h),
 * on-disk record headers (blob.h, urec.h) and the packet stream (node_feed)
 * on short, long and malformed input.  Every input is copied to the end of
 * a page followed by an inaccessible one (edge.h), so a decoder that reads
 * one byte past what it was given crashes the test even without a sanitizer.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "edge.h"
#include "blob.h"
#include "crc32c.h"
#include "node.h"
#include "reqbody.h"
#include "urec.h"

/* ---------------------------------------------------------------- STATUS */

TEST(status_body)
{
	uint8_t b[13];
	struct node_status_body s;
	size_t n;

	pohm_st32(b, (uint32_t)-1);
	pohm_st32(b + 4, 2);
	pohm_st32(b + 8, 7);
	b[12] = 0;
	EXPECT_EQ_INT(node_status_body_decode(&s, th_at_edge(b, 12), 12), 0);
	EXPECT_EQ_INT(s.nflags, -1);
	EXPECT_EQ_INT(s.status_flags, 2);
	EXPECT_EQ_INT(s.log_level, 7);
	for (n = 0; n < 12; n++)
		EXPECT_EQ_INT(node_status_body_decode(&s, th_at_edge(b, n), n), -EINVAL);
	EXPECT_EQ_INT(node_status_body_decode(&s, th_at_edge(b, 13), 13), -EINVAL);
}

/* ---------------------------------------------------------------- ITERATOR */

/* An iterator request with nr ranges and ng groups into out; its length. */
static size_t iter_req(uint8_t *out, uint64_t nr, uint32_t ng)
{
	size_t len = NODE_ITER_REQ_SIZE + nr * NODE_ITER_RANGE_SIZE + ng * 4u, i;

	memset(out, 0, len);
	pohm_st64(out, 42);
	pohm_st32(out + 8, 1);
	pohm_st64(out + 12, nr);
	pohm_st64(out + 20, 100);
	pohm_st64(out + 36, 200);
	pohm_st32(out + 52, 2);
	pohm_st64(out + 56, 6);
	pohm_st32(out + 64, ng);
	for (i = NODE_ITER_REQ_SIZE; i < len; i++)
		out[i] = (uint8_t)i;
	return len;
}

TEST(iter_req_ok)
{
	uint8_t b[1024];
	size_t len = iter_req(b, 2, 3);
	const uint8_t *p = th_at_edge(b, len);
	struct node_iter_req q;

	EXPECT_EQ_INT(node_iter_req_decode(&q, p, len), 0);
	EXPECT_EQ_U64(q.id, 42);
	EXPECT_EQ_INT(q.action, 1);
	EXPECT_EQ_U64(q.range_num, 2);
	EXPECT_EQ_U64(q.tb.tsec, 100);
	EXPECT_EQ_U64(q.te.tsec, 200);
	EXPECT_EQ_INT(q.itype, 2);
	EXPECT_EQ_U64(q.flags, 6);
	EXPECT_EQ_INT(q.group_num, 3);
	EXPECT(q.ranges == p + NODE_ITER_REQ_SIZE);
}

TEST(iter_req_truncated_and_long)
{
	uint8_t b[1024];
	size_t len = iter_req(b, 2, 3), n;
	struct node_iter_req q;

	for (n = 0; n < len; n++)
		EXPECT_EQ_INT(node_iter_req_decode(&q, th_at_edge(b, n), n), -EINVAL);
	b[len] = 0;
	EXPECT_EQ_INT(node_iter_req_decode(&q, th_at_edge(b, len + 1), len + 1), -EINVAL);
}

TEST(iter_req_hostile_counts)
{
	uint8_t b[1024];
	size_t len = iter_req(b, 2, 3);
	struct node_iter_req q;

	/* Counts whose byte size overflows 64 bits to something small. */
	pohm_st64(b + 12, UINT64_MAX);
	EXPECT_EQ_INT(node_iter_req_decode(&q, th_at_edge(b, len), len), -EINVAL);
	pohm_st64(b + 12, 1ull << 57);	/* · 128 = 2^64 = 0 */
	EXPECT_EQ_INT(node_iter_req_decode(&q, th_at_edge(b, len), len), -EINVAL);
	pohm_st64(b + 12, 2);
	pohm_st32(b + 64, 0xFFFFFFFFu);
	EXPECT_EQ_INT(node_iter_req_decode(&q, th_at_edge(b, len), len), -EINVAL);
	/* Ranges and groups trading bytes: 3 ranges, 3 - 32 groups. */
	pohm_st64(b + 12, 3);
	pohm_st32(b + 64, 3);
	EXPECT_EQ_INT(node_iter_req_decode(&q, th_at_edge(b, len), len), -EINVAL);
}

TEST(iter_resp)
{
	struct node_iter_resp r, d;
	uint8_t b[NODE_ITER_RESP_SIZE + 5];
	size_t n;

	memset(&r, 0, sizeof(r));
	r.iter_id = 9;
	memset(r.id, 0xab, POHM_ID_SIZE);
	r.status = -2;
	r.ts.tsec = 5;
	r.ts.tnsec = 6;
	r.user_flags = 7;
	r.size = 8;
	r.iterated = 1;
	r.total = 3;
	r.record_flags = 0x140;
	node_iter_resp_encode(b, &r);
	memcpy(b + NODE_ITER_RESP_SIZE, "data!", 5);
	EXPECT_EQ_INT(node_iter_resp_decode(&d, th_at_edge(b, sizeof(b)), sizeof(b)), 0);
	EXPECT(!memcmp(&r, &d, sizeof(r)));
	for (n = 0; n < NODE_ITER_RESP_SIZE; n++)
		EXPECT_EQ_INT(node_iter_resp_decode(&d, th_at_edge(b, n), n), -EINVAL);
}

/* ---------------------------------------------------------------- BULK_READ */

TEST(bulk_body)
{
	uint8_t b[4 * POHM_IO_ATTR_SIZE + 1];
	struct pohm_io_attr io;
	struct node_bulk_body bb;
	size_t len = 4 * POHM_IO_ATTR_SIZE, n;
	int i, got = 0;

	memset(&io, 0, sizeof(io));
	io.size = 3 * POHM_IO_ATTR_SIZE;
	pohm_io_attr_encode(b, &io);
	for (i = 1; i < 4; i++) {
		memset(&io, 0, sizeof(io));
		io.id[0] = (uint8_t)i;
		io.size = (uint64_t)i;
		pohm_io_attr_encode(b + i * POHM_IO_ATTR_SIZE, &io);
	}
	EXPECT_EQ_INT(node_bulk_body_decode(&bb, th_at_edge(b, len), len), 0);
	EXPECT_EQ_INT(bb.count, 3);
	while (node_bulk_body_next(&bb, &io)) {
		got++;
		EXPECT_EQ_INT(io.id[0], got);
		EXPECT_EQ_U64(io.size, got);
	}
	EXPECT_EQ_INT(got, 3);
	EXPECT_EQ_INT(node_bulk_body_next(&bb, &io), 0);
	/* Every other length: short head, a partial io_attr, the head's count off. */
	for (n = 0; n <= len + 1; n++)
		if (n != len)
			EXPECT_EQ_INT(node_bulk_body_decode(&bb, th_at_edge(b, n), n), -EINVAL);
	memset(&io, 0, sizeof(io));
	io.size = 2 * POHM_IO_ATTR_SIZE;
	pohm_io_attr_encode(b, &io);
	EXPECT_EQ_INT(node_bulk_body_decode(&bb, th_at_edge(b, len), len), -EINVAL);
}

/* ---------------------------------------------------------------- blob header */

static void blob_sample(uint8_t *out)
{
	struct blob_hdr h;

	memset(&h, 0, sizeof(h));
	memset(h.id, 0x5a, POHM_ID_SIZE);
	h.flags = 0x140;
	h.size = 100000;
	h.tsec = 11;
	h.chunk = 65536;
	h.disk_size = blob_disk_size(h.size, h.chunk);
	blob_hdr_encode(out, &h);
}

TEST(blob_hdr)
{
	uint8_t b[BLOB_HDR + 8];
	struct blob_hdr h;
	size_t n;

	blob_sample(b);
	EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, BLOB_HDR), BLOB_HDR), 0);
	EXPECT_EQ_U64(h.size, 100000);
	EXPECT_EQ_INT(h.chunk, 65536);
	EXPECT_EQ_INT(h.id[63], 0x5a);
	EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, sizeof(b)), sizeof(b)), 0);
	for (n = 0; n < BLOB_HDR; n++)
		EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, n), n), -EILSEQ);
	/* Any one damaged byte: magic, fields or CRC. */
	for (n = 0; n < BLOB_HDR; n++) {
		blob_sample(b);
		b[n] ^= 0x10;
		EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, BLOB_HDR), BLOB_HDR), -EILSEQ);
	}
	/* A correct CRC over a wrong version, a zero chunk, a wrong disk_size. */
	blob_sample(b);
	pohm_st32(b + 8, 2);
	pohm_st32(b + 188, node_crc32c(0, b, 188));
	EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, BLOB_HDR), BLOB_HDR), -EILSEQ);
	blob_sample(b);
	pohm_st32(b + 64, 0);
	pohm_st32(b + 188, node_crc32c(0, b, 188));
	EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, BLOB_HDR), BLOB_HDR), -EILSEQ);
	blob_sample(b);
	pohm_st64(b + 72, 8);
	pohm_st32(b + 188, node_crc32c(0, b, 188));
	EXPECT_EQ_INT(blob_hdr_decode(&h, th_at_edge(b, BLOB_HDR), BLOB_HDR), -EILSEQ);
}

/* ---------------------------------------------------------------- .u header */

static void urec_sample(uint8_t *out)
{
	struct urec_hdr u = { 0x140, 5000, 1, 2, 3, 4096, 65536 };

	urec_hdr_encode(out, &u);
}

TEST(urec_hdr)
{
	uint8_t b[UREC_HDR];
	struct urec_hdr u;
	size_t n;

	urec_sample(b);
	EXPECT_EQ_INT(urec_hdr_decode(&u, th_at_edge(b, UREC_HDR), UREC_HDR, 1 << 20), 0);
	EXPECT_EQ_U64(u.size, 5000);
	EXPECT_EQ_U64(u.reserve, 4096);
	EXPECT_EQ_INT(u.chunk, 65536);
	for (n = 0; n < UREC_HDR; n++)
		EXPECT_EQ_INT(urec_hdr_decode(&u, th_at_edge(b, n), n, 1 << 20), -EILSEQ);
	for (n = 0; n < 124; n++) {	/* 124..127: reserved, outside the CRC */
		urec_sample(b);
		b[n] ^= 1;
		EXPECT_EQ_INT(urec_hdr_decode(&u, th_at_edge(b, UREC_HDR), UREC_HDR, 1 << 20),
			      -EILSEQ);
	}
	urec_sample(b);
	EXPECT_EQ_INT(urec_hdr_decode(&u, th_at_edge(b, UREC_HDR), UREC_HDR, 4999), -EILSEQ);
	pohm_st32(b + 64, 0);
	pohm_st32(b + 120, node_crc32c(0, b, 120));
	EXPECT_EQ_INT(urec_hdr_decode(&u, th_at_edge(b, UREC_HDR), UREC_HDR, 1 << 20), -EILSEQ);
}

/* ---------------------------------------------------------------- node_feed */

/* A stream cut inside the first header or payload is refused before dispatch. */
TEST(feed_truncated)
{
	struct node n;
	struct pohm_buf out = POHM_BUF_INIT;
	struct node_conn *c;
	struct pohm_cmd cmd;
	uint8_t b[POHM_CMD_SIZE + 64];
	size_t k;

	memset(&n, 0, sizeof(n));
	n.cfg.max_packet = 1 << 20;
	c = node_conn_new_capture(&n, &out);
	EXPECT(c != NULL);
	if (!c)
		return;
	memset(&cmd, 0, sizeof(cmd));
	cmd.cmd = POHM_CMD_STATUS;
	cmd.size = 64;
	pohm_cmd_encode(b, &cmd);
	memset(b + POHM_CMD_SIZE, 0xff, 64);
	for (k = 1; k < sizeof(b); k++)
		EXPECT_EQ_INT(node_feed(&n, c, th_at_edge(b, k), k), -EPROTO);
	cmd.size = (1 << 20) + 1;
	pohm_cmd_encode(b, &cmd);
	EXPECT_EQ_INT(node_feed(&n, c, th_at_edge(b, POHM_CMD_SIZE), POHM_CMD_SIZE), -EMSGSIZE);
	EXPECT_EQ_INT(node_feed(&n, c, th_at_edge(b, 0), 0), 0);
	EXPECT_EQ_INT(out.len, 0);		/* nothing was dispatched */
	node_conn_put(c);
	pohm_buf_free(&out);
}
