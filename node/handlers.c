/*
 * handlers.c — one request in, its replies out.
 *
 * Sections: reply helpers · dispatch (auth gate, faults, routing) ·
 * control commands (handshake, route list, join, auth, status) · key
 * commands (lookup, read, write, del, bulk read, iterator) · node_feed for
 * the fuzz target.
 *
 * Reply rules (PROTOCOL.md §4, §10.10): a reply echoes the request's
 * header (id, cmd, trans, trace) with flags = request flags − NEED_ACK +
 * REPLY; REVERSE_LOOKUP and ROUTE_LIST always answer 0x210.  A failing key
 * command always gets an error ack; a control command, -95 for a key this
 * node does not own, and a successful DEL only ack when NEED_ACK is set.
 * Nothing here touches sockets: replies go through node_conn_send.
 */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "sys.h"
#include "reqbody.h"
#include "ring.h"
#include "wire.h"
#include "node_store.h"

#define NODE_VERSION_PATCH_30	0
#define NODE_VERSION_BUILD_30	1
#define ITER_FLAG_DATA		1u
#define ITER_FLAG_KEY_RANGE	2u
#define ITER_FLAG_TS_RANGE	4u
#define SCRATCH_KEEP		(160u << 20)	/* larger read buffers are freed after use */
#define INLINE_MAX_BYTES	(128u << 10)	/* larger key requests go to the pool */

/* ---------------------------------------------------------------- helpers */

/* Per-thread read buffer, freed with the thread. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

/* Thread exit: release the thread's read buffer. */
static void scratch_destroy(void *p)
{
	struct node_rbuf *b = p;

	node_rbuf_release(b);
	pohm_buf_free(&b->buf);
	free(b);
}

/* The key of the per-thread read buffers. */
static void scratch_init(void)
{
	pthread_key_create(&scratch_key, scratch_destroy);
}

/* This thread's read buffer (NULL on ENOMEM). */
static struct node_rbuf *scratch_get(void)
{
	struct node_rbuf *b;

	pthread_once(&scratch_once, scratch_init);
	b = pthread_getspecific(scratch_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b)
			pthread_setspecific(scratch_key, b);
	}
	return b;
}

/* After a reply went out: drop the mapping, and a buffer grown too large. */
static void scratch_trim(struct node_rbuf *b)
{
	if (!b)
		return;
	node_rbuf_release(b);
	if (b->buf.cap > SCRATCH_KEEP)
		pohm_buf_free(&b->buf);
}

/* Request flags - NEED_ACK - MORE + REPLY (§4). */
static uint64_t reply_flags(const struct pohm_cmd *c)
{
	return (c->flags & ~(POHM_FLAG_NEED_ACK | POHM_FLAG_MORE)) | POHM_FLAG_REPLY;
}

/* Total bytes of an iovec array. */
static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;
	int i;

	for (i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Send a reply with the request's header, the given status, flags and payload. */
static int reply(struct node_req *r, int32_t status, uint64_t flags, const struct iovec *iov,
		 int iovcnt)
{
	struct pohm_cmd h = r->cmd;

	h.status = status;
	h.flags = flags;
	h.size = iov_total(iov, iovcnt);
	return node_conn_send(r->conn, &h, iov, iovcnt);
}

/* A header-only reply with status (sent whatever NEED_ACK says). */
static void ack(struct node_req *r, int32_t status)
{
	reply(r, status, reply_flags(&r->cmd), NULL, 0);
}

/* The ack only when the request asked for one. */
static void ack_if(struct node_req *r, int32_t status)
{
	if (r->cmd.flags & POHM_FLAG_NEED_ACK)
		ack(r, status);
}

/* Sleep, resuming after signals. */
static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0)
		;
}

/* The version this node announces (3.0.0.1 or 2.26.11.1). */
static void server_version(const struct node *n, int32_t v[4])
{
	v[0] = n->cfg.proto_major;
	v[1] = n->cfg.proto_minor;
	v[2] = n->cfg.proto_major == 2 ? 11 : NODE_VERSION_PATCH_30;
	v[3] = NODE_VERSION_BUILD_30;
}

/*
 * Whether a request runs on its connection's reader, which answers it
 * without a handoff (no queue, no wakeup of a worker and back), or goes to
 * the worker pool.  On the reader: the control commands, and every key
 * command that touches at most INLINE_MAX_BYTES and never waits for a sync
 * (a READ, LOOKUP, WRITE or DEL served from the page cache).  To the pool:
 * what can take long — a write that waits for its group commit
 * (sync_interval 0), large reads, writes and checksums, BULK_READ and the
 * iterator — so that the connection's next requests overtake it, as they
 * do with Elliptics (PROTOCOL.md §4, §10.9).  A malformed request runs
 * here: its error ack is immediate.
 */
static int runs_inline(struct node *n, const struct node_req *r)
{
	int write = r->cmd.cmd == POHM_CMD_WRITE;
	struct pohm_io_attr io;
	const uint8_t *data;
	size_t dlen;

	switch (r->cmd.cmd) {
	case POHM_CMD_REVERSE_LOOKUP:
	case POHM_CMD_ROUTE_LIST:
	case POHM_CMD_AUTH:
	case POHM_CMD_JOIN:
	case POHM_CMD_STATUS:
	case POHM_CMD_BACKEND_STATUS:
		return 1;
	case POHM_CMD_LOOKUP:
		return !(r->cmd.flags & POHM_FLAG_CHECKSUM) ||
		       node_store_cost(n->store, r->cmd.id.id, NULL, 0) <= INLINE_MAX_BYTES;
	case POHM_CMD_DEL:
		return !node_store_write_waits(n->store);
	case POHM_CMD_READ:
	case POHM_CMD_WRITE:
		if (pohm_io_payload_decode(&io, &data, &dlen, r->payload, r->len, write))
			return 1;
		if (write && node_store_write_waits(n->store))
			return 0;
		return node_store_cost(n->store, io.id, &io, write) <= INLINE_MAX_BYTES;
	default:
		return 0;
	}
}

/* ---------------------------------------------------------------- control */

/* REVERSE_LOOKUP: the version handshake (§3.1, §10.1). */
static void h_reverse_lookup(struct node *n, struct node_req *r)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_backend_ids be;
	struct pohm_cmd h = r->cmd;
	struct iovec iov;
	int32_t v[4], mine[4];

	pohm_version_decode(v, r->cmd.id.id);
	if (v[0] != n->cfg.proto_major || v[1] != n->cfg.proto_minor) {
		/* Real Elliptics shuts the socket: the client sees EOF, no bytes. */
		pohm_info("handshake: client version %d.%d.%d.%d, mine %d.%d: closing",
			  v[0], v[1], v[2], v[3], n->cfg.proto_major, n->cfg.proto_minor);
		node_conn_drop(r->conn);
		return;
	}
	memset(&be, 0, sizeof(be));
	be.backend_id = n->cfg.backend_id;
	be.group = n->cfg.group;
	be.ids_count = n->nids;
	be.ids = n->ids;
	if (pohm_addr_list_encode(&b, 1, &n->cfg.listen, 1) || pohm_backends_encode_count(&b, 1) ||
	    pohm_backends_encode_one(&b, &be))
		goto out;
	server_version(n, mine);
	memset(h.id.id, 0, sizeof(h.id.id));
	pohm_version_encode(h.id.id, mine);
	h.status = 0;
	h.flags = POHM_FLAG_NOLOCK | POHM_FLAG_REPLY;
	h.size = b.len;
	h.backend_id = n->cfg.backend_id;
	iov.iov_base = b.p;
	iov.iov_len = b.len;
	if (node_conn_send(r->conn, &h, &iov, 1))
		goto out;
	if (r->cmd.flags & POHM_FLAG_NEED_ACK) {
		h.size = 0;
		node_conn_send(r->conn, &h, NULL, 0);
	}
out:
	pohm_buf_free(&b);
}

/* ROUTE_LIST: every node this one knows, itself included (§3.2). */
static void h_route_list(struct node *n, struct node_req *r)
{
	struct pohm_addr *a = malloc(4096 * sizeof(*a));
	struct pohm_buf b = POHM_BUF_INIT;
	struct iovec iov;
	unsigned cnt;

	if (!a) {
		ack_if(r, -ENOMEM);
		return;
	}
	cnt = node_ring_nodes(n->ring, a, 4096);
	if (!pohm_addr_list_encode(&b, 1, a, cnt)) {
		iov.iov_base = b.p;
		iov.iov_len = b.len;
		reply(r, 0, POHM_FLAG_NOLOCK | POHM_FLAG_REPLY, &iov, 1);
	} else {
		ack_if(r, -ENOMEM);
	}
	pohm_buf_free(&b);
	free(a);
}

/*
 * JOIN (server to server, our own payload): the sender's address container
 * (and, after it, its id container, which we do not need: the link we open
 * back to it does a handshake and learns the ids there).
 */
static void h_join(struct node *n, struct node_req *r)
{
	struct pohm_addr_list l;
	struct pohm_addr a;
	uint32_t i;

	if (pohm_addr_list_decode(&l, NULL, r->payload, r->len)) {
		ack_if(r, -EINVAL);
		return;
	}
	for (i = 0; i < l.count; i += l.per_node)
		if (!pohm_addr_list_get(&l, i, &a) && n->peers)
			node_peers_learn(n, &a);
	ack_if(r, 0);
}

/* AUTH: the cookie check; with --auth-cookie it unlocks the connection. */
static void h_auth(struct node *n, struct node_req *r)
{
	struct pohm_auth a;

	if (pohm_auth_decode(&a, r->payload, r->len)) {
		ack_if(r, -EINVAL);
		return;
	}
	if (n->need_auth && memcmp(a.cookie, n->cookie, POHM_AUTH_COOKIE_SIZE)) {
		pohm_info("auth: wrong cookie");
		ack_if(r, -EPERM);
		return;
	}
	node_conn_set_authed(r->conn);
	ack_if(r, 0);
}

/* STATUS: query (all sentinels) or set node flags / RO / log level; EXIT is ignored. */
static void h_status(struct node *n, struct node_req *r)
{
	uint8_t st[POHM_NODE_STATUS_SIZE];
	struct iovec iov = { st, sizeof(st) };
	struct node_status_body b;
	uint64_t flags = reply_flags(&r->cmd);

	if (node_status_body_decode(&b, r->payload, r->len)) {
		ack_if(r, -EINVAL);
		return;
	}
	if (b.nflags != -1)
		__atomic_store_n(&n->nflags, b.nflags, __ATOMIC_RELAXED);
	if (b.status_flags != -1) {
		__atomic_store_n(&n->read_only, (b.status_flags & 2) ? 1 : 0, __ATOMIC_RELAXED);
		if (b.status_flags & 1)
			pohm_warn("status: EXIT requested by a client: ignored");
	}
	if (b.log_level != 0xFFFFFFFFu)
		__atomic_store_n(&n->log_level, b.log_level, __ATOMIC_RELAXED);
	pohm_st32(st, (uint32_t)__atomic_load_n(&n->nflags, __ATOMIC_RELAXED));
	pohm_st32(st + 4, __atomic_load_n(&n->read_only, __ATOMIC_RELAXED) ? 2u : 0u);
	pohm_st32(st + 8, __atomic_load_n(&n->log_level, __ATOMIC_RELAXED));
	if (r->cmd.flags & POHM_FLAG_NEED_ACK) {
		if (reply(r, 0, flags | POHM_FLAG_MORE, &iov, 1) == 0)
			ack(r, 0);
	} else {
		reply(r, 0, flags, &iov, 1);
	}
}

/* BACKEND_STATUS: the keepalive ping; one reply with our one backend. */
static void h_backend_status(struct node *n, struct node_req *r)
{
	struct pohm_backend_status s;
	struct pohm_buf b = POHM_BUF_INIT;
	struct iovec iov;

	memset(&s, 0, sizeof(s));
	s.backend_id = (uint32_t)n->cfg.backend_id;
	s.state = 1;
	s.last_start = n->started;
	s.read_only = (uint8_t)__atomic_load_n(&n->read_only, __ATOMIC_RELAXED);
	if (pohm_backend_status_encode(&b, &s, 1)) {
		ack_if(r, -ENOMEM);
		return;
	}
	iov.iov_base = b.p;
	iov.iov_len = b.len;
	reply(r, 0, reply_flags(&r->cmd), &iov, 1);
	pohm_buf_free(&b);
}

/* ---------------------------------------------------------------- key commands */

static int read_only(struct node *n, const struct node_fault_state *fs)
{
	return fs->refuse_writes || __atomic_load_n(&n->read_only, __ATOMIC_RELAXED);
}

/* Send addr + file_info + path: the LOOKUP and WRITE reply body (§1.7). */
static void send_file_info(struct node *n, struct node_req *r, const struct node_meta *m,
			   uint64_t size, const uint8_t *csum, const uint8_t *id)
{
	struct pohm_file_info fi;
	struct pohm_buf b = POHM_BUF_INIT;
	struct iovec iov;
	char path[200];

	memset(&fi, 0, sizeof(fi));
	if (csum)
		memcpy(fi.checksum, csum, POHM_ID_SIZE);
	fi.record_flags = m->record_flags;
	fi.size = size;
	fi.offset = m->data_offset;
	fi.mtime = m->ts;
	node_store_relpath(m, path, sizeof(path));
	if (pohm_lookup_reply_encode(&b, &n->cfg.listen, &fi, path)) {
		ack(r, -ENOMEM);
		goto out;
	}
	iov.iov_base = b.p;
	iov.iov_len = b.len;
	reply(r, 0, reply_flags(&r->cmd), &iov, 1);
out:
	pohm_buf_free(&b);
}

/* LOOKUP (§5.4): file info; -2 for missing, empty or uncommitted; CHECKSUM verifies. */
static void h_lookup(struct node *n, struct node_req *r)
{
	int want = !!(r->cmd.flags & POHM_FLAG_CHECKSUM);
	uint8_t csum[POHM_ID_SIZE];
	struct node_meta m;
	int ret;

	ret = node_store_lookup(n->store, r->cmd.id.id, !(r->cmd.flags & POHM_FLAG_NOLOCK), &m,
				want ? csum : NULL);
	if (!ret && !m.size)
		ret = -ENOENT;		/* §5.4: a zero-length object looks missing */
	if (ret) {
		ack(r, ret);
		return;
	}
	send_file_info(n, r, &m, m.size, want ? csum : NULL, r->cmd.id.id);
}

/*
 * Read one key for READ or BULK_READ and send the READ-shaped reply with
 * extra flags (MORE for bulk).  Returns 0 or the error (not yet sent).
 */
static int read_one(struct node *n, struct node_req *r, const struct pohm_io_attr *req_io,
		    uint64_t extra_flags)
{
	uint8_t hdr_io[POHM_IO_ATTR_SIZE];
	struct node_rbuf *scratch = scratch_get();
	struct pohm_io_attr io = *req_io;
	struct pohm_cmd h = r->cmd;
	const uint8_t *data;
	struct node_meta m;
	struct iovec iov[2];
	uint8_t *flipped = NULL;
	size_t cnt;
	int ret;

	if (!scratch)
		return -ENOMEM;
	ret = node_store_read(n->store, io.id, io.offset, io.size,
			      n->cfg.max_packet - POHM_IO_ATTR_SIZE, !(io.flags & POHM_IO_NOCSUM),
			      !(r->cmd.flags & POHM_FLAG_NOLOCK), scratch, &m, &data, &cnt);
	if (ret)
		goto out;
	if (!cnt && (io.flags & POHM_IO_CHECKSUM)) {
		ret = -ESPIPE;		/* §10.5: checksum of an empty object */
		goto out;
	}
	io.size = cnt;
	io.total_size = m.size;
	io.timestamp = m.ts;
	io.user_flags = m.user_flags;
	io.record_flags = m.record_flags;
	if (io.flags & POHM_IO_CHECKSUM)
		pohm_sha512(data, cnt, io.parent);
	if (cnt && node_faults_corrupts(n->faults, io.id)) {
		/* The fault: flip the bytes sent, not the checksum of the true data. */
		uint8_t *p = malloc(cnt);
		size_t i;

		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = 0; i < cnt; i++)
			p[i] = data[i] ^ 0xff;
		data = flipped = p;
	}
	pohm_io_attr_encode(hdr_io, &io);
	memcpy(h.id.id, io.id, POHM_ID_SIZE);
	h.status = 0;
	h.flags = reply_flags(&r->cmd) | extra_flags;
	h.size = POHM_IO_ATTR_SIZE + cnt;
	h.backend_id = n->cfg.backend_id;
	iov[0].iov_base = hdr_io;
	iov[0].iov_len = POHM_IO_ATTR_SIZE;
	iov[1].iov_base = (void *)data;
	iov[1].iov_len = cnt;
	node_conn_send(r->conn, &h, iov, 2);
out:
	free(flipped);
	scratch_trim(scratch);
	return ret;
}

/* READ (§5.3): one READ-shaped reply or an error ack. */
static void h_read(struct node *n, struct node_req *r)
{
	struct pohm_io_attr io;
	const uint8_t *data;
	size_t dlen;
	int ret;

	if (pohm_io_payload_decode(&io, &data, &dlen, r->payload, r->len, 0)) {
		ack(r, -EINVAL);
		return;
	}
	ret = read_one(n, r, &io, 0);
	if (ret)
		ack(r, ret);
}

/* WRITE (§5.2, §10.2-10.6): file info, a bare ack (NO_FILE_INFO) or an error ack. */
static void h_write(struct node *n, struct node_req *r, const struct node_fault_state *fs)
{
	struct pohm_io_attr io;
	struct node_wreq w;
	struct node_wres res;
	const uint8_t *data;
	size_t dlen;
	int ret;

	if (pohm_io_payload_decode(&io, &data, &dlen, r->payload, r->len, 1)) {
		ack(r, -EINVAL);
		return;
	}
	if (read_only(n, fs)) {
		ack(r, -EROFS);
		return;
	}
	memset(&w, 0, sizeof(w));
	w.id = io.id;
	w.io = &io;
	w.data = data;
	w.want_csum = !!(r->cmd.flags & POHM_FLAG_CHECKSUM);
	ret = node_store_write(n->store, &w, &res);
	if (ret) {
		ack(r, ret);
		return;
	}
	if (io.flags & POHM_IO_WRITE_NO_FILE_INFO)
		ack_if(r, 0);
	else
		send_file_info(n, r, &res.meta, res.reply_size, w.want_csum ? res.csum : NULL, io.id);
	/* Freeing the replaced record's pages is not on the client's path. */
	if (res.release_fd >= 0)
		close(res.release_fd);
}

/* DEL (§5.5): addressed by cmd.id; an ack (errors always, success with NEED_ACK). */
static void h_del(struct node *n, struct node_req *r, const struct node_fault_state *fs)
{
	int ret;

	if (r->len < POHM_IO_ATTR_SIZE) {
		ack(r, -EINVAL);
		return;
	}
	if (read_only(n, fs)) {
		ack(r, -EROFS);
		return;
	}
	ret = node_store_del(n->store, r->cmd.id.id);
	if (ret)
		ack(r, ret);
	else
		ack_if(r, 0);
}

/* BULK_READ: io_attr (size = N·208) + N io_attrs; per key a reply with MORE. */
static void h_bulk_read(struct node *n, struct node_req *r)
{
	struct node_bulk_body b;
	struct pohm_io_attr io;
	struct pohm_cmd save = r->cmd;
	int ret;

	if (node_bulk_body_decode(&b, r->payload, r->len)) {
		ack(r, -EINVAL);
		return;
	}
	while (!node_conn_dead(r->conn) && node_bulk_body_next(&b, &io)) {
		ret = read_one(n, r, &io, POHM_FLAG_MORE);
		if (ret) {
			memcpy(r->cmd.id.id, io.id, POHM_ID_SIZE);
			reply(r, ret, reply_flags(&save) | POHM_FLAG_MORE, NULL, 0);
			r->cmd = save;
		}
	}
	ack(r, 0);
}

/* ITERATOR (§1.9): disk iteration of this node's backend, one reply per key. */

/* 1 if the key passes the request's key and time ranges. */
static int iter_wants(const struct node_iter_req *q, const uint8_t *id, const struct node_meta *m)
{
	uint64_t i;

	if (q->flags & ITER_FLAG_TS_RANGE)
		if (pohm_time_cmp(&m->ts, &q->tb) < 0 || pohm_time_cmp(&m->ts, &q->te) > 0)
			return 0;
	if (!(q->flags & ITER_FLAG_KEY_RANGE) || !q->range_num)
		return 1;
	for (i = 0; i < q->range_num; i++) {
		const uint8_t *rg = q->ranges + i * NODE_ITER_RANGE_SIZE;

		if (memcmp(id, rg, POHM_ID_SIZE) >= 0 && memcmp(id, rg + POHM_ID_SIZE, POHM_ID_SIZE) <= 0)
			return 1;
	}
	return 0;
}

/* Keys sorted by id, each a reply with MORE (and data with DATA), then an ack. */
static void h_iterator(struct node *n, struct node_req *r)
{
	uint8_t resp[NODE_ITER_RESP_SIZE];
	struct node_rbuf *scratch = scratch_get();
	uint8_t *ids = NULL;
	struct node_iter_req q;
	size_t nkeys = 0, i;
	uint64_t iter_id;
	int ret;

	ret = node_iter_req_decode(&q, r->payload, r->len);
	if (ret) {
		ack(r, ret);
		return;
	}
	if (q.action != 1) {
		/* Our iterations run to completion at once: nothing to pause or cancel. */
		ack(r, q.action == 4 ? 0 : -ENOENT);
		return;
	}
	if (q.itype != 1 && q.itype != 2) {
		ack(r, -EOPNOTSUPP);
		return;
	}
	if (!scratch || (ret = node_store_list(n->store, &ids, &nkeys))) {
		ack(r, scratch ? ret : -ENOMEM);
		return;
	}
	iter_id = q.id ? q.id : __atomic_add_fetch(&n->iter_ids, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nkeys && !node_conn_dead(r->conn); i++) {
		const uint8_t *id = ids + i * POHM_ID_SIZE, *data = NULL;
		struct node_iter_resp rs;
		struct node_meta m;
		struct iovec iov[2];
		size_t cnt = 0;
		int32_t status;

		status = node_store_lookup(n->store, id, 1, &m, NULL);
		if (status == -ENOENT)
			continue;	/* deleted meanwhile */
		if (status) {
			memset(&m, 0, sizeof(m));
		} else if (!iter_wants(&q, id, &m)) {
			continue;
		} else if ((q.flags & ITER_FLAG_DATA) && m.size) {
			status = node_store_read(n->store, id, 0, 0, n->cfg.max_packet - NODE_ITER_RESP_SIZE,
						 1, 1, scratch, &m, &data, &cnt);
		}
		rs.iter_id = iter_id;
		memcpy(rs.id, id, POHM_ID_SIZE);
		rs.status = status;
		rs.ts = m.ts;
		rs.user_flags = m.user_flags;
		rs.size = m.size;
		rs.iterated = i + 1;
		rs.total = nkeys;
		rs.record_flags = m.record_flags;
		node_iter_resp_encode(resp, &rs);
		iov[0].iov_base = resp;
		iov[0].iov_len = sizeof(resp);
		iov[1].iov_base = (void *)data;
		iov[1].iov_len = status ? 0 : cnt;
		reply(r, 0, reply_flags(&r->cmd) | POHM_FLAG_MORE, iov, 2);
		scratch_trim(scratch);
	}
	free(ids);
	ack(r, 0);
}

/* ---------------------------------------------------------------- dispatch */

static int is_key_cmd(int32_t cmd)
{
	return cmd == POHM_CMD_LOOKUP || cmd == POHM_CMD_READ || cmd == POHM_CMD_WRITE ||
	       cmd == POHM_CMD_DEL || cmd == POHM_CMD_BULK_READ || cmd == POHM_CMD_ITERATOR;
}

/*
 * Decide where a key command runs (§3.6, §10.7, §10.8).  Returns 1 to run
 * it here; 0 when it was answered (-95) or forwarded.
 */
static int route(struct node *n, struct node_req *r)
{
	struct node_owner o;

	if (r->cmd.flags & POHM_FLAG_DIRECT_BACKEND) {
		if (r->cmd.backend_id == n->cfg.backend_id && r->cmd.id.group == n->cfg.group)
			return 1;
		ack_if(r, -EOPNOTSUPP);
		return 0;
	}
	if (node_ring_owner(n->ring, r->cmd.id.group, r->cmd.id.id, &o)) {
		ack_if(r, -EOPNOTSUPP);	/* unknown group, or its nodes are all gone */
		return 0;
	}
	if (o.self)
		return 1;
	if (r->cmd.flags & POHM_FLAG_DIRECT) {
		ack_if(r, -EOPNOTSUPP);
		return 0;
	}
	if (!n->peers || node_peers_forward(n, &o.addr, r)) {
		/* The owner's link just went away: the client retries elsewhere. */
		ack(r, -ENXIO);
	}
	return 0;
}

/* See node.h: faults, stray replies, the auth gate, routing, then the command. */
void node_dispatch(struct node *n, struct node_req *r)
{
	struct node_fault_state fs;
	int32_t cmd = r->cmd.cmd;

	node_faults_get(n->faults, &fs);
	if (fs.drop) {
		node_conn_drop(r->conn);
		return;
	}
	if (fs.hang)
		return;
	if (fs.delay_ms)
		sleep_ms(fs.delay_ms);
	if (pohm_cmd_is_reply(&r->cmd))
		return;			/* a stray reply: nothing to answer */
	if (!node_conn_authed(r->conn) && cmd != POHM_CMD_REVERSE_LOOKUP && cmd != POHM_CMD_AUTH) {
		/* --auth-cookie: refuse everything until AUTH passed (always acked). */
		ack(r, -EPERM);
		return;
	}
	if (is_key_cmd(cmd) && !route(n, r))
		return;
	switch (cmd) {
	case POHM_CMD_REVERSE_LOOKUP:
		h_reverse_lookup(n, r);
		break;
	case POHM_CMD_ROUTE_LIST:
		h_route_list(n, r);
		break;
	case POHM_CMD_JOIN:
		h_join(n, r);
		break;
	case POHM_CMD_AUTH:
		h_auth(n, r);
		break;
	case POHM_CMD_STATUS:
		h_status(n, r);
		break;
	case POHM_CMD_BACKEND_STATUS:
		h_backend_status(n, r);
		break;
	case POHM_CMD_LOOKUP:
		h_lookup(n, r);
		break;
	case POHM_CMD_READ:
		h_read(n, r);
		break;
	case POHM_CMD_WRITE:
		h_write(n, r, &fs);
		break;
	case POHM_CMD_DEL:
		h_del(n, r, &fs);
		break;
	case POHM_CMD_BULK_READ:
		h_bulk_read(n, r);
		break;
	case POHM_CMD_ITERATOR:
		h_iterator(n, r);
		break;
	default:
		ack_if(r, -EOPNOTSUPP);
		break;
	}
}

/* See node.h. */
void node_run_req(struct node *n, struct node_req *req)
{
	node_dispatch(n, req);
	node_req_free(req);
}

/* See node.h. */
void node_handle(struct node *n, struct node_req *req)
{
	struct node_fault_state fs;

	node_faults_get(n->faults, &fs);
	if (!n->pool || (!fs.delay_ms && runs_inline(n, req))) {
		__atomic_add_fetch(&n->served_inline, 1, __ATOMIC_RELAXED);
		node_run_req(n, req);
	} else {
		__atomic_add_fetch(&n->handed_off, 1, __ATOMIC_RELAXED);
		node_pool_push(n->pool, req);
	}
}

/* ---------------------------------------------------------------- feed */

int node_feed(struct node *n, struct node_conn *conn, const uint8_t *p, size_t len)
{
	struct pohm_rd rd = pohm_rd_make(p, len);

	while (rd.left && !node_conn_dead(conn)) {
		const uint8_t *hdr = pohm_rd_take(&rd, POHM_CMD_SIZE), *body;
		struct node_req *req;
		struct pohm_cmd cmd;

		if (!hdr)
			return -EPROTO;
		pohm_cmd_decode(&cmd, hdr);
		if (cmd.size > n->cfg.max_packet)
			return -EMSGSIZE;
		body = pohm_rd_take(&rd, (size_t)cmd.size);
		if (!body)
			return -EPROTO;		/* truncated: never applied */
		req = calloc(1, sizeof(*req));
		if (!req)
			return -ENOMEM;
		req->cmd = cmd;
		req->len = (size_t)cmd.size;
		req->payload = malloc(req->len ? req->len : 1);
		if (!req->payload) {
			free(req);
			return -ENOMEM;
		}
		memcpy(req->payload, body, req->len);
		req->conn = conn;
		node_conn_get(conn);
		node_run_req(n, req);
	}
	return 0;
}
