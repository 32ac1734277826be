/*
 * fuzz_reply.c — libFuzzer target for the client's reply paths: the input
 * is a byte stream as a node would send it on one connection.  It is cut
 * into chunks (sizes taken from the input's first bytes) and fed to the
 * packet assembler (pohm_rx_feed); every complete packet goes to the parser
 * the client uses for its command — handshake (addresses + backends into a
 * route table), ROUTE_LIST, LOOKUP/WRITE file info, READ io_attr + data
 * with its checksum, BACKEND_STATUS, UPDATE_IDS, an ITERATOR key
 * (core/store/iter.c) — and the route table is then queried.  Hostile input must give errors, never a crash, an
 * over-read or a leak.
 *
 * Build (tests/fuzz/run does this):
 *   clang -fsanitize=fuzzer,address -D_GNU_SOURCE -Icore/<layer> (each) tests/fuzz/fuzz_reply.c core/<layer>/*.c -pthread
 * Input: byte 0 = number (0-7) of chunk sizes that follow (each + 1), then
 * the stream.  Seeds in tests/fuzz/corpus/reply/: valid replies of every
 * kind above (handshake, ROUTE_LIST, LOOKUP, WRITE, READ with checksum,
 * BACKEND_STATUS, UPDATE_IDS, an error ack, MORE + ack, ITERATOR keys and
 * their ack) and streams of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "io.h"
#include "iter.h"
#include "proto.h"
#include "route.h"
#include "sha512.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_packet(struct pohm_route *rt, const struct pohm_pkt *p)
{
	const uint8_t *d = p->data;
	size_t n = (size_t)p->cmd.size;
	struct pohm_addr_list l;
	struct pohm_addr a;
	struct pohm_file_info fi;
	struct pohm_io_attr io;
	struct pohm_backend_status bs;
	struct pohm_iter_key key;
	const uint8_t *ids, *payload;
	size_t idslen, plen;
	uint32_t i, nodes, count;
	int32_t v[4];
	uint8_t sum[POHM_SHA512_LEN];
	char name[64];

	pohm_cmd_is_reply(&p->cmd);
	pohm_status_errno(p->cmd.status);
	pohm_cmd_name(p->cmd.cmd);
	switch (p->cmd.cmd) {
	case POHM_CMD_REVERSE_LOOKUP:
		pohm_version_decode(v, p->cmd.id.id);
		if (!pohm_route_parse_handshake(d, n, &l, &ids, &idslen)) {
			for (i = 0; i < l.count; i++)
				if (!pohm_addr_list_get(&l, i, &a))
					pohm_addr_format(&a, name, sizeof(name));
			pohm_route_apply_ids(rt, (int)(p->cmd.trans & 7), ids, idslen, 1);
		}
		break;
	case POHM_CMD_ROUTE_LIST:
		if (!pohm_route_parse_list(d, n, &l, &nodes))
			for (i = 0; i < nodes; i++)
				if (!pohm_route_list_addr(&l, i, (uint32_t)p->cmd.backend_id, &a))
					pohm_addr_format(&a, name, sizeof(name));
		break;
	case POHM_CMD_LOOKUP:
	case POHM_CMD_WRITE:
		if (!pohm_lookup_reply_decode(&a, &fi, d, n))
			pohm_addr_format(&a, name, sizeof(name));
		break;
	case POHM_CMD_READ:
		if (!pohm_io_payload_decode(&io, &payload, &plen, d, n, 1))
			pohm_sha512(payload, plen, sum);
		break;
	case POHM_CMD_BACKEND_STATUS:
		if (!pohm_backend_status_count(&count, d, n))
			for (i = 0; i < count && i < 64; i++)
				pohm_backend_status_get(&bs, d, n, i);
		break;
	case POHM_CMD_UPDATE_IDS:
		pohm_route_apply_ids(rt, (int)(p->cmd.trans & 7), d, n, 0);
		break;
	case POHM_CMD_ITERATOR:
		pohm_iter_response_decode(&key, d, n);
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pohm_route rt = POHM_ROUTE_INIT;
	struct pohm_rx rx;
	struct pohm_pkt *list = NULL, **tail = &list, *p;
	uint8_t key[POHM_ID_SIZE];
	size_t pos, cuts;
	uint32_t g;
	int r = 0;

	if (size < 2)
		return 0;
	memset(&rx, 0, sizeof(rx));
	rx.max = 1u << 24;		/* keep allocations small under the fuzzer */
	/* First byte: how many bytes of chunk sizes follow. */
	cuts = data[0] % 8;
	pos = 1 + (cuts < size - 1 ? cuts : size - 1);
	for (size_t c = 0; pos < size && !r; c++) {
		size_t chunk = c < cuts ? (size_t)data[1 + c] + 1 : size - pos;

		if (chunk > size - pos)
			chunk = size - pos;
		r = pohm_rx_feed(&rx, data + pos, chunk, &tail);
		pos += chunk;
	}
	for (p = list; p; p = p->next)
		parse_packet(&rt, p);
	/* Query the table the packets built: the ring must hold for any key. */
	pohm_key_id(key, "fuzz", 4, data, size);
	for (g = 0; g < 4; g++) {
		const struct pohm_route_entry *e = pohm_route_owner(&rt, g, key);

		if (e && e->group != g)
			abort();
		pohm_route_group_size(&rt, g);
	}
	pohm_pkt_free_list(list);
	pohm_rx_reset(&rx);
	pohm_route_free(&rt);
	return 0;
}
