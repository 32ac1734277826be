/*
 * test_net.c — core/net and core/conn: packet framing, the handshake and
 * its failures, trans matching with replies out of order, timeouts against
 * a node that never answers, discovery via ROUTE_LIST, UPDATE_IDS, many
 * threads on one connection, fork safety; what goes on the wire (NEED_ACK
 * on every request but the handshake, the ping's payload) and the sockets'
 * settings (high fds, close-on-exec, keepalive); a send blocked on a full
 * socket buffer and a connect that never completes, both bounded by their
 * timeouts.  Nodes are fake_node.h threads on 127.0.0.1 ephemeral ports.
 */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "fake_node.h"

#include "config.h"
#include "conn.h"
#include "net.h"
#include "sys.h"

#define MS 1000000ULL

static void cfg_for(struct pohm_config *cfg, const uint16_t *ports, int n, const char *groups)
{
	char s[64];
	int i;

	pohm_config_defaults(cfg);
	for (i = 0; i < n; i++) {
		snprintf(s, sizeof(s), "127.0.0.1:%u", ports[i]);
		pohm_config_set(cfg, "server", s, POHM_CFG_CALLER, NULL, 0);
	}
	pohm_config_set(cfg, "groups", groups, POHM_CFG_CALLER, NULL, 0);
}

static uint64_t after(uint64_t ns)
{
	return pohm_sys_mono_ns() + ns;
}

/* ---------------------------------------------------------------- framing (pure) */

static void put_header(uint8_t *out, uint64_t trans, uint64_t size)
{
	struct pohm_cmd c;

	memset(&c, 0, sizeof(c));
	c.cmd = POHM_CMD_LOOKUP;
	c.flags = POHM_FLAG_REPLY;
	c.trans = trans;
	c.size = size;
	pohm_cmd_encode(out, &c);
}

TEST(rx_byte_by_byte_and_batched)
{
	uint8_t stream[2 * POHM_CMD_SIZE + 5];
	struct pohm_rx rx;
	struct pohm_pkt *list = NULL, **tail = &list;
	size_t i;

	memset(&rx, 0, sizeof(rx));
	put_header(stream, 7, 5);
	memcpy(stream + POHM_CMD_SIZE, "hello", 5);
	put_header(stream + POHM_CMD_SIZE + 5, 8, 0);
	for (i = 0; i < sizeof(stream); i++)
		EXPECT_EQ_INT(pohm_rx_feed(&rx, stream + i, 1, &tail), 0);
	EXPECT(list && list->next && !list->next->next);
	if (list && list->next) {
		EXPECT_EQ_U64(list->cmd.trans, 7);
		EXPECT_MEM(list->data, "hello", 5);
		EXPECT_EQ_U64(list->next->cmd.trans, 8);
		EXPECT(list->next->data == NULL);
	}
	pohm_pkt_free_list(list);
	list = NULL;
	tail = &list;
	EXPECT_EQ_INT(pohm_rx_feed(&rx, stream, sizeof(stream), &tail), 0);
	EXPECT(list && list->next && !list->next->next);
	pohm_pkt_free_list(list);
	pohm_rx_reset(&rx);
}

/*
 * pohm_rx_read stops at a short read (the socket drained): a second read
 * would only fail EAGAIN, 2 calls of every wait (issue 23).  Checked with
 * the writer gone after one packet: a second read would find the EOF
 * (-ECONNRESET) in the same call.
 */
TEST(rx_read_stops_at_a_short_read)
{
	uint8_t stream[POHM_CMD_SIZE + 5];
	struct pohm_rx rx;
	struct pohm_pkt *list = NULL, **tail = &list;
	int sv[2];

	memset(&rx, 0, sizeof(rx));
	EXPECT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	put_header(stream, 9, 5);
	memcpy(stream + POHM_CMD_SIZE, "hello", 5);
	EXPECT_EQ_INT((int)write(sv[1], stream, sizeof(stream)), (int)sizeof(stream));
	close(sv[1]);
	EXPECT_EQ_INT(pohm_rx_read(&rx, sv[0], &tail), 0);
	EXPECT(list && !list->next);
	if (list) {
		EXPECT_EQ_U64(list->cmd.trans, 9);
		EXPECT_MEM(list->data, "hello", 5);
	}
	/* The next call (the next poll round) finds the EOF. */
	EXPECT_EQ_INT(pohm_rx_read(&rx, sv[0], &tail), -ECONNRESET);
	pohm_pkt_free_list(list);
	pohm_rx_reset(&rx);
	close(sv[0]);
}

TEST(rx_absurd_size_rejected)
{
	uint8_t h[POHM_CMD_SIZE];
	struct pohm_rx rx;
	struct pohm_pkt *list = NULL, **tail = &list;

	memset(&rx, 0, sizeof(rx));
	put_header(h, 1, 1ULL << 40);
	EXPECT_EQ_INT(pohm_rx_feed(&rx, h, sizeof(h), &tail), -EPROTO);
	EXPECT(list == NULL);
	pohm_rx_reset(&rx);
}

/* bind for the split tests: packets with trans 7 go to the buffer in arg, 8 bytes kept. */
static void *bind_trans7(void *arg, const struct pohm_cmd *cmd, uint8_t **dest, size_t *skip)
{
	if (cmd->trans != 7)
		return NULL;
	*dest = arg;
	*skip = 8;
	return arg;
}

/* A split packet: header, 8 kept bytes, then n tail bytes (value i & 0xff). */
static size_t split_stream(uint8_t *out, uint64_t trans, size_t n)
{
	size_t i;

	put_header(out, trans, 8 + n);
	memcpy(out + POHM_CMD_SIZE, "ATTRIBS!", 8);
	for (i = 0; i < n; i++)
		out[POHM_CMD_SIZE + 8 + i] = (uint8_t)i;
	return POHM_CMD_SIZE + 8 + n;
}

TEST(rx_split_packet_lands_in_the_callers_memory)
{
	static uint8_t stream[2 * (POHM_CMD_SIZE + 8 + 1000)], dest[1000], want[1000];
	struct pohm_pkt *list = NULL, **tail = &list;
	struct pohm_rx rx;
	size_t n, i, step;

	for (i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)i;
	for (step = 1; step <= sizeof(stream); step *= 37) {
		memset(&rx, 0, sizeof(rx));
		memset(dest, 0, sizeof(dest));
		rx.bind = bind_trans7;
		rx.bind_arg = dest;
		n = split_stream(stream, 7, 1000);
		n += split_stream(stream + n, 9, 1000);	/* not bound: whole in data */
		for (i = 0; i < n; i += step)
			EXPECT_EQ_INT(pohm_rx_feed(&rx, stream + i, n - i < step ? n - i : step, &tail), 0);
		EXPECT(list && list->next && !list->next->next);
		if (list && list->next) {
			EXPECT(list->split && list->ext == dest);
			EXPECT_EQ_U64(list->ext_len, 1000);
			EXPECT_MEM(list->data, "ATTRIBS!", 8);
			EXPECT_MEM(dest, want, sizeof(want));
			EXPECT(!list->next->split && !list->next->ext);
			EXPECT_MEM(list->next->data + 8, want, sizeof(want));
		}
		pohm_pkt_free_list(list);
		list = NULL;
		tail = &list;
		pohm_rx_reset(&rx);
	}
}

TEST(rx_unbound_split_packet_is_dropped_and_framing_holds)
{
	static uint8_t stream[2 * (POHM_CMD_SIZE + 8 + 1000)], dest[1000];
	struct pohm_pkt *list = NULL, **tail = &list;
	struct pohm_rx rx;
	size_t n, half, i;

	memset(&rx, 0, sizeof(rx));
	memset(dest, 0xee, sizeof(dest));
	rx.bind = bind_trans7;
	rx.bind_arg = dest;
	n = split_stream(stream, 7, 1000);
	n += split_stream(stream + n, 9, 1000);
	half = POHM_CMD_SIZE + 8 + 500;
	EXPECT_EQ_INT(pohm_rx_feed(&rx, stream, half, &tail), 0);
	EXPECT(rx.split && rx.bound == dest);
	pohm_rx_unbind(&rx);		/* the caller took its memory back */
	EXPECT_EQ_INT(pohm_rx_feed(&rx, stream + half, n - half, &tail), 0);
	for (i = 500; i < 1000; i++)
		if (dest[i] != 0xee)
			break;
	EXPECT_EQ_U64(i, 1000);		/* nothing written after the unbind */
	EXPECT(list && list->next && !list->next->next);
	if (list && list->next) {
		EXPECT(list->split && !list->ext);
		EXPECT_EQ_U64(list->next->cmd.trans, 9);
		EXPECT_EQ_U64(list->next->cmd.size, 1008);
	}
	pohm_pkt_free_list(list);
	pohm_rx_reset(&rx);
}

TEST(rx_read_large_split_payload_from_a_socket)
{
	size_t big = 3 * POHM_RX_STAGE + 123, n, off = 0;
	uint8_t *stream = malloc(POHM_CMD_SIZE + 8 + big), *dest = calloc(1, big);
	struct pohm_pkt *list = NULL, **tail = &list;
	struct pohm_rx rx;
	int sv[2], r = 0, spins = 0;

	EXPECT(stream && dest);
	EXPECT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	if (!stream || !dest) {
		free(stream);
		free(dest);
		return;
	}
	memset(&rx, 0, sizeof(rx));
	rx.bind = bind_trans7;
	rx.bind_arg = dest;
	n = split_stream(stream, 7, big);
	while (!list && r == 0 && spins++ < 100000) {
		if (off < n) {
			ssize_t w = write(sv[1], stream + off, n - off);

			if (w > 0)
				off += (size_t)w;
		}
		r = pohm_rx_read(&rx, sv[0], &tail);
	}
	EXPECT_EQ_INT(r, 0);
	EXPECT(list && list->split && list->ext == dest && list->ext_len == big);
	EXPECT_MEM(dest, stream + POHM_CMD_SIZE + 8, big);
	pohm_pkt_free_list(list);
	pohm_rx_reset(&rx);
	close(sv[0]);
	close(sv[1]);
	free(stream);
	free(dest);
}

/* ---------------------------------------------------------------- handshake */

TEST(handshake_learns_backends)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;
	uint8_t id[POHM_ID_SIZE];
	int node = -1;
	int32_t be = -1;

	EXPECT_EQ_INT(fn_start(&fn, 3, 0), 0);
	cfg_for(&cfg, &fn.port, 1, "3");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	pohm_key_id(id, "ns", 2, "k", 1);
	EXPECT_EQ_INT(pohm_net_owner(net, 3, id, 0, &node, &be), -ENXIO);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(pohm_net_owner(net, 3, id, 0, &node, &be), 0);
	EXPECT_EQ_INT(node, 0);
	EXPECT_EQ_INT(be, 0);
	EXPECT_EQ_INT(pohm_net_owner(net, 4, id, 0, &node, &be), -ENXIO);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(ni.up);
	EXPECT_EQ_INT(ni.version[0], 3);
	EXPECT_EQ_INT(ni.version[1], 0);
	EXPECT_EQ_INT(ni.ids, 1);
	EXPECT_EQ_INT(fn_count(&fn, POHM_CMD_ROUTE_LIST), 1);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

static void expect_refused(int flags, const char *needle)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;
	char err[256];

	EXPECT_EQ_INT(fn_start(&fn, 1, flags), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), -EHOSTUNREACH);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(!ni.up);
	if (!strstr(ni.last_msg, needle))
		printf("# last_msg \"%s\" lacks \"%s\"\n", ni.last_msg, needle);
	EXPECT(strstr(ni.last_msg, needle) != NULL);
	pohm_net_last_error(net, err, sizeof(err));
	EXPECT(strstr(err, "no node reachable") != NULL);
	EXPECT(strstr(err, needle) != NULL);
	/* Every handshake, the probe of the other protocol line too: DIRECT|NOLOCK, no NEED_ACK. */
	EXPECT_EQ_U64(fn_flags_any(&fn, POHM_CMD_REVERSE_LOOKUP), POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(eof_after_handshake_is_version_mismatch)
{
	expect_refused(FN_EOF_HANDSHAKE, "server refused protocol 3.0 (version mismatch)");
}

TEST(version_probe_names_the_other_line)
{
	expect_refused(FN_V226, "the node speaks 2.26.11.1, set protocol=2.26");
}

TEST(protocol_226_talks_to_226)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;

	EXPECT_EQ_INT(fn_start(&fn, 1, FN_V226), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	pohm_config_set(&cfg, "protocol", "2.26", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(ni.up);
	EXPECT_EQ_INT(ni.version[1], 26);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(malformed_handshake_rejected)
{
	expect_refused(FN_BAD_HANDSHAKE, "malformed handshake reply");
}

TEST(connect_refused_then_backoff)
{
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;
	uint16_t port;
	struct fake_node fn;

	/* A port that was just free: start and stop a node to learn one. */
	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	port = fn.port;
	fn_stop(&fn);
	cfg_for(&cfg, &port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(1000 * MS), 0), -EHOSTUNREACH);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(strstr(ni.last_msg, "connect: Connection refused") != NULL);
	EXPECT_EQ_INT(ni.fails, 1);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(1000 * MS), 1), -EHOSTUNREACH);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT_EQ_INT(ni.fails, 2);
	/* Now backing off (100 ms): a third attempt right away does not dial. */
	EXPECT_EQ_INT(pohm_net_refresh(net, after(1000 * MS), 1), -EHOSTUNREACH);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT_EQ_INT(ni.fails, 2);
	pohm_net_close(net);
	pohm_config_free(&cfg);
}

/* ---------------------------------------------------------------- transactions */

static void lookup_req(struct pohm_req *r, int node, uint32_t group, const char *key)
{
	pohm_req_init(r, node, POHM_CMD_LOOKUP, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
	pohm_key_id(r->cmd.id.id, NULL, 0, key, strlen(key));
	r->cmd.id.group = group;
}

static void store(struct fake_node *fn, const char *key, const char *data, uint64_t tsec)
{
	uint8_t id[POHM_ID_SIZE];
	struct fn_obj *o;

	pohm_key_id(id, NULL, 0, key, strlen(key));
	pthread_mutex_lock(&fn->lock);
	o = fn_find(fn, id, 1);
	o->data = malloc(strlen(data) + 1);
	memcpy(o->data, data, strlen(data));
	o->len = strlen(data);
	o->ts.tsec = tsec;
	pthread_mutex_unlock(&fn->lock);
}

TEST(replies_out_of_order_matched_by_trans)
{
	static const char *keys[4] = { "a", "missing-1", "b", "missing-2" };
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r[4], *p[4];
	int i;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	store(&fn, "a", "A", 1);
	store(&fn, "b", "B", 2);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	__atomic_store_n(&fn.reverse_n, 4, __ATOMIC_RELEASE);
	fn_set_flags(&fn, FN_REVERSE);
	for (i = 0; i < 4; i++) {
		lookup_req(&r[i], 0, 1, keys[i]);
		p[i] = &r[i];
	}
	EXPECT_EQ_INT(pohm_net_run(net, p, 4, after(2000 * MS), NULL, NULL), 2);
	for (i = 0; i < 4; i++) {
		const struct pohm_pkt *f = pohm_req_final(&r[i]);

		EXPECT(r[i].done);
		EXPECT_EQ_INT(r[i].status, i % 2 ? -ENOENT : 0);
		EXPECT(f && f->cmd.trans == r[i].cmd.trans);
		EXPECT(!memcmp(r[i].cmd.id.id, f ? f->cmd.id.id : r[i].cmd.id.id, 1));
		pohm_req_release(&r[i]);
	}
	/* The last reply came first: the 4th request finished before the 1st. */
	EXPECT(r[3].done_ns <= r[0].done_ns);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(window_waits_in_order_while_replies_come_reversed)
{
	static const char *keys[4] = { "a", "missing-1", "b", "missing-2" };
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_batch *w;
	struct pohm_req r[4], *p[4];
	int i;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	store(&fn, "a", "A", 1);
	store(&fn, "b", "B", 2);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	__atomic_store_n(&fn.reverse_n, 4, __ATOMIC_RELEASE);
	fn_set_flags(&fn, FN_REVERSE);
	w = pohm_net_window_open(net);
	EXPECT(w != NULL);
	for (i = 0; i < 4; i++) {
		lookup_req(&r[i], 0, 1, keys[i]);
		p[i] = &r[i];
	}
	/* Two sends: the node holds all four, then answers the last first. */
	pohm_net_window_send(net, w, p, 2, after(2000 * MS));
	pohm_net_window_send(net, w, p + 2, 2, after(2000 * MS));
	for (i = 0; i < 4; i++) {
		const struct pohm_pkt *f;

		EXPECT_EQ_INT(pohm_net_window_wait(net, w, &r[i], after(2000 * MS)), i % 2 ? -ENOENT : 0);
		f = pohm_req_final(&r[i]);
		EXPECT(r[i].done);
		EXPECT(f && f->cmd.trans == r[i].cmd.trans);
	}
	EXPECT(r[3].done_ns <= r[0].done_ns);
	pohm_net_window_close(net, w, p, 4);
	for (i = 0; i < 4; i++)
		pohm_req_release(&r[i]);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(window_wait_times_out_and_close_cancels_the_rest)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_batch *w;
	struct pohm_req r[2], *p[2] = { &r[0], &r[1] };
	uint64_t t0, dt;

	EXPECT_EQ_INT(fn_start(&fn, 1, FN_SILENT_KEYS), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	w = pohm_net_window_open(net);
	EXPECT(w != NULL);
	lookup_req(&r[0], 0, 1, "k1");
	lookup_req(&r[1], 0, 1, "k2");
	pohm_net_window_send(net, w, p, 2, after(2000 * MS));
	t0 = pohm_sys_mono_ns();
	EXPECT_EQ_INT(pohm_net_window_wait(net, w, &r[0], t0 + 100 * MS), -ETIMEDOUT);
	dt = pohm_sys_mono_ns() - t0;
	EXPECT(dt >= 99 * MS);
	EXPECT(dt < 1000 * MS);
	EXPECT(!r[1].done);
	pohm_net_window_close(net, w, p, 2);
	EXPECT(r[1].done);
	EXPECT_EQ_INT(r[1].status, -ECANCELED);
	pohm_req_release(&r[0]);
	pohm_req_release(&r[1]);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(cancelled_read_never_writes_the_callers_memory_after_return)
{
	size_t big = 8u << 20, bad = 0, split_ok = 0, round;
	char *obj = malloc(big + 1);
	uint8_t *buf = malloc(big), *snap = malloc(big), io[POHM_IO_ATTR_SIZE];
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;

	EXPECT(obj && buf && snap);
	if (!obj || !buf || !snap)
		goto out;
	memset(obj, 'x', big);
	obj[big] = '\0';
	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	store(&fn, "big", obj, 1);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	/*
	 * Deadlines from 0 to ~4 ms: many rounds give up while the 8 MiB reply
	 * streams in; the last one waits as long as it takes.
	 */
	for (round = 0; round <= 20; round++) {
		struct pohm_req r, l, *pr = &r, *pl = &l;
		struct pohm_io_attr a;
		struct pohm_batch *w = pohm_net_window_open(net);
		const struct pohm_pkt *f;

		memset(buf, 0, big);
		memset(&a, 0, sizeof(a));
		pohm_req_init(&r, 0, POHM_CMD_READ, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
		pohm_key_id(r.cmd.id.id, NULL, 0, "big", 3);
		r.cmd.id.group = 1;
		memcpy(a.id, r.cmd.id.id, POHM_ID_SIZE);
		a.size = big;
		pohm_io_attr_encode(io, &a);
		r.p1 = io;
		r.n1 = sizeof(io);
		r.rdest = buf;
		r.rdest_cap = big;
		r.rdest_skip = POHM_IO_ATTR_SIZE;
		pohm_net_window_send(net, w, &pr, 1, after(2000 * MS));
		pohm_net_window_wait(net, w, &r, after(round < 20 ? round * 200000ULL : 5000 * MS));
		pohm_net_window_close(net, w, &pr, 1);
		f = pohm_req_final(&r);
		if (!r.status && f && f->split && f->ext == buf && !memcmp(buf, obj, big))
			split_ok++;
		/* From here on buf is ours: nothing may land in it any more. */
		memcpy(snap, buf, big);
		lookup_req(&l, 0, 1, "big");	/* the leader reads on (the dropped tail, then this) */
		EXPECT_EQ_INT(pohm_net_run(net, &pl, 1, after(2000 * MS), NULL, NULL), 1);
		bad += memcmp(snap, buf, big) != 0;
		pohm_req_release(&l);
		pohm_req_release(&r);
	}
	EXPECT_EQ_U64(bad, 0);
	EXPECT(split_ok > 0);		/* at least the last round finished, straight into buf */
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
out:
	free(obj);
	free(buf);
	free(snap);
}

TEST(timeout_against_silent_node)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;
	uint64_t t0, dt;

	EXPECT_EQ_INT(fn_start(&fn, 1, FN_SILENT_KEYS), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	lookup_req(&r, 0, 1, "k");
	t0 = pohm_sys_mono_ns();
	EXPECT_EQ_INT(pohm_net_run(net, &p, 1, t0 + 200 * MS, NULL, NULL), 0);
	dt = pohm_sys_mono_ns() - t0;
	EXPECT_EQ_INT(r.status, -ETIMEDOUT);
	EXPECT(r.done);
	EXPECT(dt >= 199 * MS);
	EXPECT(dt < 1000 * MS);
	pohm_req_release(&r);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(silent_connection_reset_after_stalls)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;
	struct pohm_node_info ni;
	int i;

	EXPECT_EQ_INT(fn_start(&fn, 1, FN_SILENT_KEYS), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	for (i = 0; i < POHM_STALL_LIMIT; i++) {
		lookup_req(&r, 0, 1, "k");
		pohm_net_run(net, &p, 1, after(50 * MS), NULL, NULL);
		pohm_req_release(&r);
	}
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(!ni.up);
	EXPECT(strstr(ni.last_msg, "no answer") != NULL);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

struct stall_arg {
	struct pohm_net *net;
	uint64_t deadline;
};

/* One batch: a lookup the node never answers, until the shared deadline. */
static void *silent_lookup_thread(void *p)
{
	struct stall_arg *a = p;
	struct pohm_req r, *pr = &r;

	lookup_req(&r, 0, 1, "k");
	pohm_net_run(a->net, &pr, 1, a->deadline, NULL, NULL);
	pohm_req_release(&r);
	return NULL;
}

/*
 * Finding 17 (tests/RELIABILITY.md): threads whose requests time out
 * together on a node that keeps answering other requests during their
 * wait (a backlog, a loaded host) must not count as "no answer in a row":
 * the reset failed every request in flight on the connection with EIO.
 * Here POHM_STALL_LIMIT threads wait 400 ms for key requests the node never
 * answers, while pings on the same connection are answered for the first
 * 200 ms; their timeouts come together with no reply between them.
 */
TEST(timeouts_on_a_node_that_answers_meanwhile_keep_the_connection)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;
	struct stall_arg a;
	pthread_t th[POHM_STALL_LIMIT];
	uint64_t t0;
	int i;

	EXPECT_EQ_INT(fn_start(&fn, 1, FN_SILENT_KEYS), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	t0 = pohm_sys_mono_ns();
	a.net = net;
	a.deadline = t0 + 400 * MS;
	for (i = 0; i < POHM_STALL_LIMIT; i++)
		EXPECT_EQ_INT(pthread_create(&th[i], NULL, silent_lookup_thread, &a), 0);
	while (pohm_sys_mono_ns() < t0 + 200 * MS)
		EXPECT_EQ_INT(pohm_net_ping_all(net, after(150 * MS)), 1);
	for (i = 0; i < POHM_STALL_LIMIT; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(ni.up);
	EXPECT(strstr(ni.last_msg, "no answer") == NULL);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(absurd_reply_size_drops_connection)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	fn_set_flags(&fn, FN_HUGE);
	EXPECT_EQ_INT(pohm_net_ping_all(net, after(1000 * MS)), 0);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(!ni.up);
	EXPECT(strstr(ni.last_msg, "malformed packet") != NULL);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(route_list_discovers_nodes)
{
	struct fake_node a, b;
	struct pohm_config cfg;
	struct pohm_net *net;
	uint8_t id[POHM_ID_SIZE] = { 1 };
	int node;
	int32_t be;

	EXPECT_EQ_INT(fn_start(&a, 1, 0), 0);
	EXPECT_EQ_INT(fn_start(&b, 2, 0), 0);
	fn_set_peers(&a, (uint16_t[]){ a.port, b.port }, 2);
	cfg_for(&cfg, &a.port, 1, "1:2");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(pohm_net_nodes(net), 2);
	EXPECT_EQ_INT(pohm_net_owner(net, 2, id, 0, &node, &be), 0);
	EXPECT_EQ_INT(node, 1);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&a);
	fn_stop(&b);
}

TEST(update_ids_push_moves_backend)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	uint8_t id[POHM_ID_SIZE] = { 9 };
	int node;
	int32_t be;

	EXPECT_EQ_INT(fn_start(&fn, 1, FN_PUSH_UPDATE), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	/* The push travels behind the handshake reply; a ping round trip flushes it. */
	EXPECT_EQ_INT(pohm_net_ping_all(net, after(1000 * MS)), 1);
	EXPECT_EQ_INT(pohm_net_owner(net, 7, id, 0, &node, &be), 0);
	EXPECT_EQ_INT(pohm_net_owner(net, 1, id, 0, &node, &be), -ENXIO);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

struct thr_arg {
	struct pohm_net *net;
	int bad;
};

static void *lookup_thread(void *p)
{
	struct thr_arg *a = p;
	int i, j;

	for (i = 0; i < 100; i++) {
		struct pohm_req r[4], *pr[4];

		for (j = 0; j < 4; j++) {
			lookup_req(&r[j], 0, 1, j % 2 ? "nope" : "a");
			pr[j] = &r[j];
		}
		if (pohm_net_run(a->net, pr, 4, after(5000 * MS), NULL, NULL) != 2)
			a->bad++;
		for (j = 0; j < 4; j++) {
			if (r[j].status != (j % 2 ? -ENOENT : 0))
				a->bad++;
			pohm_req_release(&r[j]);
		}
	}
	return NULL;
}

TEST(many_threads_share_one_connection)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	pthread_t th[8];
	struct thr_arg arg[8];
	int i, bad = 0;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	store(&fn, "a", "A", 1);
	cfg_for(&cfg, &fn.port, 1, "1");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	for (i = 0; i < 8; i++) {
		arg[i].net = net;
		arg[i].bad = 0;
		pthread_create(&th[i], NULL, lookup_thread, &arg[i]);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		bad += arg[i].bad;
	}
	EXPECT_EQ_INT(bad, 0);
	EXPECT_EQ_INT(__atomic_load_n(&fn.conns_seen, __ATOMIC_ACQUIRE), 1);
	EXPECT_EQ_INT(fn_count(&fn, POHM_CMD_LOOKUP), 8 * 100 * 4);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(fork_child_reconnects)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;
	int status = -1;
	pid_t pid;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	store(&fn, "a", "A", 1);
	cfg_for(&cfg, &fn.port, 1, "1");
	pohm_config_set(&cfg, "keepalive_interval", "0", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(__atomic_load_n(&fn.conns_seen, __ATOMIC_ACQUIRE), 1);
	pid = fork();
	if (pid == 0) {
		/* No atfork hook: the pid check must notice and reconnect. */
		lookup_req(&r, 0, 1, "a");
		pohm_net_run(net, &p, 1, after(2000 * MS), NULL, NULL);
		_exit(r.status == 0 ? 0 : 1);
	}
	EXPECT(pid > 0);
	waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ_INT(__atomic_load_n(&fn.conns_seen, __ATOMIC_ACQUIRE), 2);
	/* The parent's connection is untouched. */
	lookup_req(&r, 0, 1, "a");
	EXPECT_EQ_INT(pohm_net_run(net, &p, 1, after(2000 * MS), NULL, NULL), 1);
	pohm_req_release(&r);
	EXPECT_EQ_INT(__atomic_load_n(&fn.conns_seen, __ATOMIC_ACQUIRE), 2);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

/* The ping is BACKEND_STATUS with 12 bytes of 0xff ("change nothing", §6), never STATUS. */
static void expect_ff_ping(struct fake_node *fn)
{
	uint8_t got[64], want[POHM_NODE_STATUS_SIZE];
	size_t n = fn_ping_payload(fn, got, sizeof(got));

	memset(want, 0xff, sizeof(want));
	EXPECT_EQ_U64(n, POHM_NODE_STATUS_SIZE);
	EXPECT_EQ_INT(POHM_NODE_STATUS_SIZE, 12);
	EXPECT_MEM(got, want, sizeof(want));
	EXPECT_EQ_INT(fn_seen(fn, POHM_CMD_STATUS), 0);
}

TEST(idle_connection_pinged_before_use)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	pohm_config_set(&cfg, "keepalive_interval", "0.05", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(fn_count(&fn, POHM_CMD_BACKEND_STATUS), 0);
	usleep(80000);
	lookup_req(&r, 0, 1, "a");
	pohm_net_run(net, &p, 1, after(2000 * MS), NULL, NULL);
	EXPECT_EQ_INT(r.status, -ENOENT);
	pohm_req_release(&r);
	EXPECT_EQ_INT(fn_count(&fn, POHM_CMD_BACKEND_STATUS), 1);
	EXPECT_EQ_INT(fn_count(&fn, 13 /* STATUS: never */), 0);
	/* The idle connection's ping, before the lookup: the no-change payload. */
	EXPECT_EQ_INT(fn_seen(&fn, POHM_CMD_BACKEND_STATUS), 1);
	expect_ff_ping(&fn);
	/* pohmelfs status pings the same way. */
	EXPECT_EQ_INT(pohm_net_ping_all(net, after(1000 * MS)), 1);
	EXPECT_EQ_INT(fn_seen(&fn, POHM_CMD_BACKEND_STATUS), 2);
	expect_ff_ping(&fn);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(node_restart_reconnects)
{
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;
	uint16_t port;
	int lfd;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	pohm_config_set(&cfg, "keepalive_interval", "0", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	/* Kill the node (its connections close), restart it on the same port. */
	port = fn.port;
	fn_stop(&fn);
	lookup_req(&r, 0, 1, "a");
	pohm_net_run(net, &p, 1, after(500 * MS), NULL, NULL);
	EXPECT(r.status != 0);
	pohm_req_release(&r);
	{
		struct sockaddr_in sa;
		int one = 1;

		memset(&fn, 0, sizeof(fn));
		fn.group = 1;
		pthread_mutex_init(&fn.lock, NULL);
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons(port);
		EXPECT_EQ_INT(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		listen(lfd, 16);
		fn.lfd = lfd;
		fn.port = port;
		fn.peers[0] = port;
		fn.npeers = 1;
		pthread_create(&fn.th, NULL, fn_thread, &fn);
	}
	usleep(250000);	/* past the backoff */
	lookup_req(&r, 0, 1, "a");
	pohm_net_run(net, &p, 1, after(2000 * MS), NULL, NULL);
	EXPECT_EQ_INT(r.status, -ENOENT);
	pohm_req_release(&r);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

/* ---------------------------------------------------------------- what goes on the wire */

/* Flags no request may carry (PROTOCOL.md §9): reply, more, destroy, trace. */
#define NEVER_ON_REQUESTS (POHM_FLAG_REPLY | POHM_FLAG_MORE | POHM_FLAG_DESTROY | POHM_FLAG_TRACE_BIT)

TEST(every_request_but_the_handshake_carries_need_ack)
{
	static const int acked[] = { POHM_CMD_AUTH, POHM_CMD_ROUTE_LIST, POHM_CMD_BACKEND_STATUS,
				     POHM_CMD_LOOKUP };
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;
	size_t i;
	int c;

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	pohm_config_set(&cfg, "auth_cookie", "sesame", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	/* connect + handshake + AUTH + ROUTE_LIST; a forced refresh handshakes again. */
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 1), 0);
	EXPECT_EQ_INT(pohm_net_ping_all(net, after(1000 * MS)), 1);
	lookup_req(&r, 0, 1, "k");
	pohm_net_run(net, &p, 1, after(2000 * MS), NULL, NULL);
	EXPECT_EQ_INT(r.status, -ENOENT);
	pohm_req_release(&r);

	/* The handshake: DIRECT|NOLOCK exactly, never NEED_ACK (§3.1). */
	EXPECT(fn_seen(&fn, POHM_CMD_REVERSE_LOOKUP) >= 2);
	EXPECT_EQ_U64(fn_flags_any(&fn, POHM_CMD_REVERSE_LOOKUP), POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
	EXPECT_EQ_U64(fn_flags_all(&fn, POHM_CMD_REVERSE_LOOKUP), POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
	/* Everything else: NEED_ACK and DIRECT on every single request. */
	for (i = 0; i < sizeof(acked) / sizeof(acked[0]); i++) {
		uint64_t all = fn_flags_all(&fn, acked[i]);

		if (!fn_seen(&fn, acked[i]) || (all & (POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT)) !=
						   (POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT))
			printf("# command %d: %d seen, flags in all 0x%llx\n", acked[i],
			       fn_seen(&fn, acked[i]), (unsigned long long)all);
		EXPECT(fn_seen(&fn, acked[i]) > 0);
		EXPECT_EQ_U64(all & (POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT),
			      POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
	}
	for (c = 0; c < 32; c++)
		EXPECT_EQ_U64(fn_flags_any(&fn, c) & NEVER_ON_REQUESTS, 0);
	EXPECT_EQ_INT(fn.nonzero_status, 0);
	EXPECT_EQ_INT(fn_seen(&fn, POHM_CMD_STATUS), 0);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

/* ---------------------------------------------------------------- the client's fds */

static int sockopt_int(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, level, name, &v, &len))
		return -1;
	return v;
}

/* 1 if fd is a TCP socket connected to 127.0.0.1:port. */
static int peer_is(int fd, uint16_t port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	if (getpeername(fd, (struct sockaddr *)&sa, &len) || sa.sin_family != AF_INET)
		return 0;
	return ntohs(sa.sin_port) == port && ntohl(sa.sin_addr.s_addr) == INADDR_LOOPBACK;
}

TEST(client_fds_are_high_cloexec_nonblocking_with_keepalive)
{
	struct fake_node a, b;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_req r, *p = &r;
	struct dirent *de;
	DIR *d;
	int socks = 0, evfds = 0;

	EXPECT_EQ_INT(fn_start(&a, 1, 0), 0);
	EXPECT_EQ_INT(fn_start(&b, 2, 0), 0);
	fn_set_peers(&a, (uint16_t[]){ a.port, b.port }, 2);
	cfg_for(&cfg, &a.port, 1, "1:2");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(pohm_net_nodes(net), 2);
	lookup_req(&r, 1, 2, "k");	/* a run: the leader's eventfd exists from here on */
	pohm_net_run(net, &p, 1, after(2000 * MS), NULL, NULL);
	EXPECT_EQ_INT(r.status, -ENOENT);
	pohm_req_release(&r);

	d = opendir("/proc/self/fd");
	EXPECT(d != NULL);
	while (d && (de = readdir(d))) {
		char path[64], link[128];
		ssize_t n;
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strncmp(link, "socket:", 7) && (peer_is(fd, a.port) || peer_is(fd, b.port))) {
			/* One of the client's connections (the nodes' own ends peer elsewhere). */
			socks++;
			if (fd < POHM_FD_BASE || !(fcntl(fd, F_GETFD) & FD_CLOEXEC) ||
			    !(fcntl(fd, F_GETFL) & O_NONBLOCK))
				printf("# client socket fd %d: fd flags 0x%x, status flags 0x%x\n", fd,
				       fcntl(fd, F_GETFD), fcntl(fd, F_GETFL));
			EXPECT(fd >= POHM_FD_BASE);
			EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
			EXPECT(fcntl(fd, F_GETFL) & O_NONBLOCK);
			EXPECT_EQ_INT(sockopt_int(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
			EXPECT_EQ_INT(sockopt_int(fd, IPPROTO_TCP, TCP_KEEPIDLE), 10);
			EXPECT_EQ_INT(sockopt_int(fd, IPPROTO_TCP, TCP_KEEPINTVL), 10);
			EXPECT_EQ_INT(sockopt_int(fd, IPPROTO_TCP, TCP_KEEPCNT), 3);
			EXPECT_EQ_INT(sockopt_int(fd, IPPROTO_TCP, TCP_NODELAY), 1);
		} else if (!strcmp(link, "anon_inode:[eventfd]")) {
			/* The test itself makes none: every eventfd here is the client's. */
			evfds++;
			EXPECT(fd >= POHM_FD_BASE);
			EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		}
	}
	if (d)
		closedir(d);
	EXPECT_EQ_INT(socks, 2);
	EXPECT_EQ_INT(evfds, 1);
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&a);
	fn_stop(&b);
}

/* ---------------------------------------------------------------- blocked sends and connects */

/*
 * A payload that cannot fit the loopback's buffers while the peer never
 * reads: four times the sender's largest buffer (tcp_wmem's maximum; the
 * sender's buffer grows to it, the receiver's stays at its initial size
 * since nothing is read) plus the receiver's initial one.  48 MiB when
 * /proc does not say.  Not more: cancelling the blocked request copies
 * its unsent bytes (net.c cancel), a cost the test must keep small.
 */
static size_t unsendable_size(void)
{
	unsigned long w[3], r[3];
	size_t n = 48u << 20;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r"), *g = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");

	if (f && g && fscanf(f, "%lu %lu %lu", &w[0], &w[1], &w[2]) == 3 &&
	    fscanf(g, "%lu %lu %lu", &r[0], &r[1], &r[2]) == 3)
		n = 4 * (w[2] + r[1]);
	if (f)
		fclose(f);
	if (g)
		fclose(g);
	return n;
}

/* How long this machine, now, takes to copy n bytes into fresh memory (as
 * net.c's cancel does with a partly sent request's unsent bytes). */
static uint64_t copy_ns(const uint8_t *src, size_t n)
{
	uint64_t t0 = pohm_sys_mono_ns(), dt;
	uint8_t *b = malloc(n);

	if (b) {
		memcpy(b, src, n);
		__asm__ volatile("" : : "r"(b) : "memory");
	}
	dt = pohm_sys_mono_ns() - t0;
	free(b);
	return dt;
}

/*
 * The deadline ends a blocked send: not before it, and after it only by
 * the cancel's copy of the unsent bytes (measured here on the same
 * machine, under the same build: ThreadSanitizer's memcpy of ~45 MB took
 * 0.4-1.9 s on a loaded CI machine: session 13 measured failures at
 * 2.09 and 2.42 s) plus a fixed slack of 1.5 s.
 */
TEST(send_blocked_on_a_full_socket_buffer_ends_at_the_deadline)
{
	size_t big = unsendable_size();
	uint8_t *payload = malloc(big), io[POHM_IO_ATTR_SIZE];
	struct fake_node fn;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_io_attr a;
	struct pohm_req r, *p = &r;
	uint64_t t0, dt, copy;

	EXPECT(payload != NULL);
	if (!payload)
		return;
	memset(payload, 'w', big);
	copy = copy_ns(payload, big);
	alarm(30);		/* a send that blocks for good ends the test binary (a failure) */
	/* The node answers the handshake, then never reads again: the send fills the buffers. */
	EXPECT_EQ_INT(fn_start(&fn, 1, FN_NOREAD), 0);
	cfg_for(&cfg, &fn.port, 1, "1");
	pohm_config_set(&cfg, "write_wait_timeout", "0.5", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	memset(&a, 0, sizeof(a));
	pohm_req_init(&r, 0, POHM_CMD_WRITE, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
	pohm_key_id(r.cmd.id.id, NULL, 0, "big", 3);
	r.cmd.id.group = 1;
	memcpy(a.id, r.cmd.id.id, POHM_ID_SIZE);
	a.size = big;
	pohm_io_attr_encode(io, &a);
	r.p1 = io;
	r.n1 = sizeof(io);
	r.p2 = payload;
	r.n2 = big;
	t0 = pohm_sys_mono_ns();
	EXPECT_EQ_INT(pohm_net_run(net, &p, 1, t0 + cfg.write_wait_timeout_ns, NULL, NULL), 0);
	dt = pohm_sys_mono_ns() - t0;
	EXPECT_EQ_INT(r.status, -ETIMEDOUT);
	EXPECT(r.txoff < POHM_CMD_SIZE + sizeof(io) + big);	/* it really was blocked */
	printf("# blocked send returned after %.3f s, %llu of %zu bytes sent; copying the payload took %.3f s\n",
	       dt / 1e9, (unsigned long long)r.txoff, big, copy / 1e9);
	EXPECT(dt >= 499 * MS);
	EXPECT(dt < 2000 * MS + 2 * copy);
	pohm_req_release(&r);
	memset(payload, 0, big);	/* the caller's memory is its own again */
	pohm_net_close(net);
	pohm_config_free(&cfg);
	fn_stop(&fn);
	free(payload);
	alarm(0);
}

/*
 * A listening socket whose accept queue is full: the kernel drops further
 * SYNs, so a connect to it stays in progress (loopback only, no routing
 * tricks).  Returns the listener; fillers[] get the connections that fill
 * the queue (-1 where unused).
 */
static int full_listener(uint16_t *port, int *fillers, int nf)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), i;

	for (i = 0; i < nf; i++)
		fillers[i] = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 0) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		return -1;
	*port = ntohs(sa.sin_port);
	for (i = 0; i < nf; i++) {
		struct pollfd pfd;

		fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (connect(fillers[i], (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS)
			break;
		pfd.fd = fillers[i];
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, 200) == 0)
			return lfd;	/* this one hangs: the queue is full */
	}
	close(lfd);
	return -1;
}

TEST(connect_that_never_completes_times_out)
{
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_node_info ni;
	uint16_t port = 0;
	uint64_t t0, dt, budget;
	int fillers[8], lfd, i;

	alarm(30);		/* a connect that blocks for good ends the test binary (a failure) */
	lfd = full_listener(&port, fillers, 8);
	EXPECT(lfd >= 0);
	if (lfd < 0)
		goto out;
	cfg_for(&cfg, &port, 1, "1");
	pohm_config_set(&cfg, "read_wait_timeout", "2", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	/* connect + handshake get a quarter of read_wait_timeout (conn_setup.c). */
	budget = cfg.read_wait_timeout_ns / 4;
	t0 = pohm_sys_mono_ns();
	EXPECT_EQ_INT(pohm_net_refresh(net, t0 + 10000 * MS, 0), -EHOSTUNREACH);
	dt = pohm_sys_mono_ns() - t0;
	printf("# connect gave up after %.3f s\n", dt / 1e9);
	EXPECT(dt >= budget - MS);
	EXPECT(dt < budget + 1000 * MS);
	EXPECT_EQ_INT(pohm_net_node_info(net, 0, &ni), 0);
	EXPECT(!ni.up);
	if (!strstr(ni.last_msg, "connect: Connection timed out"))
		printf("# last_msg: %s\n", ni.last_msg);
	EXPECT(strstr(ni.last_msg, "connect: Connection timed out") != NULL);
	/* A shorter deadline of the caller wins over the budget. */
	usleep(250000);		/* past the first backoff */
	t0 = pohm_sys_mono_ns();
	EXPECT_EQ_INT(pohm_net_refresh(net, t0 + 150 * MS, 1), -EHOSTUNREACH);
	dt = pohm_sys_mono_ns() - t0;
	EXPECT(dt < 150 * MS + 1000 * MS);
	pohm_net_close(net);
	pohm_config_free(&cfg);
out:
	for (i = 0; i < 8; i++)
		if (fillers[i] >= 0)
			close(fillers[i]);
	if (lfd >= 0)
		close(lfd);
	alarm(0);
}

/* ---------------------------------------------------------------- owners among live nodes */

static int all_but_node1(void *arg, int node)
{
	(void)arg;
	return node != 1;
}

static int none_usable(void *arg, int node)
{
	(void)arg;
	(void)node;
	return 0;
}

TEST(ring_rule_over_live_nodes_wraps_around)
{
	struct pohm_route rt = POHM_ROUTE_INIT;
	struct pohm_buf b = POHM_BUF_INIT;
	uint8_t ids[3][POHM_ID_SIZE] = { { 0x10 }, { 0x50 }, { 0xa0 } }, k[POHM_ID_SIZE] = { 0x60 };
	const struct pohm_route_entry *e;
	int node;

	/* Group 1: node 0 at 0x10, node 1 at 0x50, node 2 at 0xa0. */
	for (node = 0; node < 3; node++) {
		struct pohm_backend_ids be = { 0, 1, 0, 1, ids[node] };

		b.len = 0;
		pohm_backends_encode_count(&b, 1);
		pohm_backends_encode_one(&b, &be);
		EXPECT_EQ_INT(pohm_route_apply_ids(&rt, node, b.p, b.len, 1), 0);
	}
	e = pohm_route_owner(&rt, 1, k);
	EXPECT(e && e->node == 1);
	/* Node 1 failed: 0x60 falls to the next lower live id, node 0 at 0x10. */
	e = pohm_route_owner_among(&rt, 1, k, all_but_node1, NULL);
	EXPECT(e && e->node == 0);
	/* Below every id: wrap to the largest live one (node 2), also when it skips. */
	memset(k, 0, sizeof(k));
	k[0] = 0x05;
	e = pohm_route_owner_among(&rt, 1, k, all_but_node1, NULL);
	EXPECT(e && e->node == 2);
	k[0] = 0xb0;
	e = pohm_route_owner_among(&rt, 1, k, all_but_node1, NULL);
	EXPECT(e && e->node == 2);
	EXPECT(pohm_route_owner_among(&rt, 1, k, none_usable, NULL) == NULL);
	EXPECT(pohm_route_owner_among(&rt, 2, k, all_but_node1, NULL) == NULL);
	pohm_buf_free(&b);
	pohm_route_free(&rt);
}

/* ---------------------------------------------------------------- the route file (0074) */

/* A LOOKUP of id in group on its owner: the request's status. */
static int lookup_status(struct pohm_net *net, uint32_t group, const uint8_t *id)
{
	struct pohm_req r, *rp = &r;
	int node = -1, st;
	int32_t be = 0;

	if (pohm_net_owner(net, group, id, 0, &node, &be))
		return -ENXIO;
	pohm_req_init(&r, node, POHM_CMD_LOOKUP, POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT);
	memcpy(r.cmd.id.id, id, POHM_ID_SIZE);
	r.cmd.id.group = group;
	pohm_net_run(net, &rp, 1, after(2000 * MS), NULL, NULL);
	st = r.status;
	pohm_req_release(&r);
	return st;
}

/* A cache_dir for a route file test (dir: 64 bytes): made 0700 with its
 * tmp/ (the temporary's place), like the cache's own.  0 or -1. */
static int rt_dir_make(char *dir)
{
	char tmp[96];

	snprintf(dir, 64, "/tmp/pohm-routefile.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	return mkdir(tmp, 0700);
}

/* Remove what rt_dir_make made and the table written in it. */
static void rt_dir_remove(const char *dir)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/routes", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tmp", dir);
	rmdir(path);
	rmdir(dir);
}

TEST(route_file_spares_a_second_client_its_setup_waits)
{
	struct fake_node a, b;
	struct pohm_config cfg;
	struct pohm_net *net;
	struct pohm_net_counts nc;
	uint8_t id[POHM_ID_SIZE] = { 1 }, *bytes;
	char dir[64], path[96];
	int node, fd;
	int32_t be;
	ssize_t len, cut;

	EXPECT_EQ_INT(rt_dir_make(dir), 0);
	snprintf(path, sizeof(path), "%s/routes", dir);
	EXPECT_EQ_INT(fn_start(&a, 1, 0), 0);
	EXPECT_EQ_INT(fn_start(&b, 2, 0), 0);
	fn_set_peers(&a, (uint16_t[]){ a.port, b.port }, 2);
	cfg_for(&cfg, &a.port, 1, "1:2");

	/* The first client: handshakes and ROUTE_LIST, waited for; writes the file. */
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	pohm_net_counts(net, &nc);
	EXPECT(nc.setup_waits >= 2);
	pohm_net_close(net);
	EXPECT_EQ_INT(fn_count(&a, POHM_CMD_ROUTE_LIST), 1);

	/* The second: no ROUTE_LIST, no setup wait; its request is its first wait. */
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(pohm_net_owner(net, 2, id, 0, &node, &be), 0);
	EXPECT_EQ_INT(node, 1);
	EXPECT_EQ_INT(lookup_status(net, 2, id), -ENOENT);	/* answered: the key is absent */
	pohm_net_counts(net, &nc);
	EXPECT_EQ_U64(nc.setup_waits, 0);
	EXPECT_EQ_U64(nc.waits, 1);
	EXPECT_EQ_INT(fn_count(&a, POHM_CMD_ROUTE_LIST), 1);
	EXPECT_EQ_INT(fn_count(&b, POHM_CMD_REVERSE_LOOKUP), 2);	/* sent ahead, still sent */
	pohm_net_close(net);

	/* Every truncation of the file and a flipped byte anywhere: not taken. */
	fd = open(path, O_RDONLY);
	bytes = malloc(65536);
	len = read(fd, bytes, 65536);
	close(fd);
	EXPECT(len > 100);
	for (cut = 0; cut <= len; cut++) {
		int whole = cut == len;

		EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
		EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
		if (whole)
			bytes[cut / 2] ^= 0x40;
		fd = open(path, O_WRONLY | O_TRUNC);
		EXPECT_EQ_INT((int)write(fd, bytes, (size_t)cut), (int)cut);
		close(fd);
		EXPECT(pohm_routefile_load(net, (const int32_t[]){ 3, 0, 0, 1 }) != 0);
		EXPECT_EQ_INT(pohm_net_nodes(net), 1);		/* the seed only */
		pohm_net_close(net);
	}
	free(bytes);
	rt_dir_remove(dir);
	pohm_config_free(&cfg);
	fn_stop(&a);
	fn_stop(&b);
}

/* A configured server that was down when the file was written (its group
 * still covered by another node) is not in the file: the file is not
 * taken, the full refresh uses that server again (review M2). */
TEST(route_file_without_a_seed_is_not_taken)
{
	struct fake_node a, b, c;
	struct pohm_config cfg;
	struct pohm_net *net;
	char dir[64], path[96];
	int hs;

	EXPECT_EQ_INT(rt_dir_make(dir), 0);
	EXPECT_EQ_INT(fn_start_id(&a, 1, 0, 0), 0);
	EXPECT_EQ_INT(fn_start(&b, 2, 0), 0);
	EXPECT_EQ_INT(fn_start_id(&c, 1, FN_EOF_HANDSHAKE, 0x80), 0);	/* "down" */
	fn_set_peers(&a, (uint16_t[]){ a.port, b.port, c.port }, 3);
	cfg_for(&cfg, (uint16_t[]){ a.port, b.port, c.port }, 3, "1:2");

	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	pohm_net_close(net);
	snprintf(path, sizeof(path), "%s/routes", dir);
	EXPECT_EQ_INT(access(path, F_OK), 0);	/* a and b: both groups covered */

	fn_set_flags(&c, 0);	/* back */
	hs = fn_count(&c, POHM_CMD_REVERSE_LOOKUP);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_routefile_load(net, (const int32_t[]){ 3, 0, 0, 1 }), -ESTALE);
	pohm_net_close(net);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	EXPECT_EQ_INT(fn_count(&c, POHM_CMD_REVERSE_LOOKUP), hs + 1);	/* c used again */
	pohm_net_close(net);

	rt_dir_remove(dir);
	pohm_config_free(&cfg);
	fn_stop(&a);
	fn_stop(&b);
	fn_stop(&c);
}

/* A handshake sent ahead (a table from the file) answered with an error
 * status: the connection fails, the request behind it is not taken as
 * answered (review L1). */
TEST(route_file_refused_handshake_fails_the_node)
{
	struct fake_node a, b;
	struct pohm_config cfg;
	struct pohm_net *net;
	uint8_t id[POHM_ID_SIZE] = { 1 };
	char dir[64];

	EXPECT_EQ_INT(rt_dir_make(dir), 0);
	EXPECT_EQ_INT(fn_start(&a, 1, 0), 0);
	EXPECT_EQ_INT(fn_start(&b, 2, 0), 0);
	fn_set_peers(&a, (uint16_t[]){ a.port, b.port }, 2);
	cfg_for(&cfg, &a.port, 1, "1:2");
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);
	pohm_net_close(net);

	fn_set_flags(&b, FN_HS_REFUSE);
	EXPECT_EQ_INT(pohm_net_open(&net, &cfg), 0);
	EXPECT_EQ_INT(pohm_net_route_file(net, dir), 0);
	EXPECT_EQ_INT(pohm_net_refresh(net, after(2000 * MS), 0), 0);	/* the file's */
	EXPECT(lookup_status(net, 2, id) != -ENOENT);	/* b's answer not taken */
	EXPECT_EQ_INT(fn_count(&b, POHM_CMD_LOOKUP), 1);	/* sent behind the handshake */
	pohm_net_close(net);

	rt_dir_remove(dir);
	pohm_config_free(&cfg);
	fn_stop(&a);
	fn_stop(&b);
}
