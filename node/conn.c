/*
 * conn.c — inbound connections.
 *
 * Each accepted socket gets one reader thread that frames packets
 * (wire.c) and hands each request to n->handle, the transport's one upcall
 * (node.h; handlers.c's node_handle), which answers what is short on this
 * thread (the handshake, small READs, LOOKUPs, and WRITEs and DELs that
 * do not wait for a sync) and queues what can take long to the worker
 * pool, so the replies of the queued ones may be overtaken, exactly as
 * with real Elliptics (§10.9).  One thread per connection is also the
 * fairness: a flooding connection keeps its own thread busy, not the
 * others'.  conn.c is the transport: it calls nothing of the handlers,
 * peer.c or the pool.  Replies from any thread are serialised by the
 * connection's write lock.  A connection is freed when the reader and
 * every queued request have dropped their references; the fd is closed
 * only then, so a late reply can never land on a reused descriptor.
 *
 * Reply batching: while more requests are already buffered, the reader
 * collects its own small replies in an output buffer and sends them with
 * one syscall when it runs out of buffered requests (or the buffer holds
 * CONN_BATCH_BYTES or CONN_BATCH_REPLIES: the first reply of a long burst
 * does not wait for the whole burst).
 * A pipelining client then gets one wakeup per batch instead of one per
 * reply; a client with one request in flight sees no delay at all.
 */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys.h"
#include "node_wire.h"

#define CONN_BATCH_PACKET (64u << 10)	/* larger replies go out directly */
#define CONN_BATCH_BYTES (256u << 10)	/* flush the batch at this size */
#define CONN_BATCH_REPLIES 64u		/* or at this many replies */

struct node_conn {
	struct node *node;
	int fd;				/* -1 for a capture connection */
	struct pohm_buf *capture;	/* fuzz target: replies are appended here */
	pthread_mutex_t wlock;		/* serialises sends (and capture appends) */
	int refs;			/* atomic */
	int authed;			/* atomic: AUTH passed */
	int dead;			/* atomic: dropped or a send failed */
	pthread_t reader;		/* the reader thread (valid when has_reader) */
	int has_reader;			/* set before the reader starts */
	struct pohm_buf out;		/* the reader's batched replies; guarded by wlock */
	unsigned nout;			/* replies in out; guarded by wlock */
	struct node_conn *prev, *next;	/* node->conns; guarded by node->conns_lock */
	int listed;			/* guarded by node->conns_lock */
};

/* A connection with one reference (the caller's). */
static struct node_conn *conn_alloc(struct node *n, int fd)
{
	struct node_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->node = n;
	c->fd = fd;
	c->refs = 1;
	c->authed = !n->need_auth;
	pthread_mutex_init(&c->wlock, NULL);
	return c;
}

/* See node.h. */
void node_conn_get(struct node_conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

/* See node.h: the last reference closes the fd and frees. */
void node_conn_put(struct node_conn *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->fd >= 0)
		close(c->fd);
	pohm_buf_free(&c->out);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

/* See node.h: once; shutdown() wakes the reader, close waits for the refs. */
void node_conn_drop(struct node_conn *c)
{
	if (__atomic_exchange_n(&c->dead, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
}

/* See node.h. */
int node_conn_dead(struct node_conn *c)
{
	return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE);
}

/* See node.h. */
int node_conn_authed(struct node_conn *c)
{
	return __atomic_load_n(&c->authed, __ATOMIC_ACQUIRE);
}

/* See node.h. */
void node_conn_set_authed(struct node_conn *c)
{
	__atomic_store_n(&c->authed, 1, __ATOMIC_RELEASE);
}

/* See node.h. */
struct node_conn *node_conn_new_capture(struct node *n, struct pohm_buf *out)
{
	struct node_conn *c = conn_alloc(n, -1);

	if (c)
		c->capture = out;
	return c;
}

/* Append one packet to a buffer. 0 or -ENOMEM. */
static int put_packet(struct pohm_buf *b, const struct pohm_cmd *hdr, const struct iovec *iov,
		      int iovcnt)
{
	uint8_t h[POHM_CMD_SIZE];
	int i, ret;

	pohm_cmd_encode(h, hdr);
	ret = pohm_buf_put(b, h, sizeof(h));
	for (i = 0; i < iovcnt && !ret; i++)
		ret = pohm_buf_put(b, iov[i].iov_base, iov[i].iov_len);
	return ret;
}

/* Send the batched replies (wlock held). */
static int flush_locked(struct node_conn *c)
{
	int ret = 0;

	if (c->out.len) {
		ret = node_wire_send_raw(c->fd, c->out.p, c->out.len);
		c->out.len = 0;
		c->nout = 0;
	}
	return ret;
}

/* Send what the reader batched; called before the reader may block. */
static void conn_flush(struct node_conn *c)
{
	int ret;

	pthread_mutex_lock(&c->wlock);
	ret = flush_locked(c);
	pthread_mutex_unlock(&c->wlock);
	if (ret)
		node_conn_drop(c);
}

/* See node.h: capture, batch (the reader's small replies) or send now. */
int node_conn_send(struct node_conn *c, const struct pohm_cmd *hdr, const struct iovec *iov,
		   int iovcnt)
{
	int ret = 0;

	if (node_conn_dead(c))
		return -EPIPE;
	pthread_mutex_lock(&c->wlock);
	if (c->capture) {
		ret = put_packet(c->capture, hdr, iov, iovcnt);
	} else if (c->has_reader && hdr->size <= CONN_BATCH_PACKET &&
		   pthread_equal(c->reader, pthread_self())) {
		ret = put_packet(&c->out, hdr, iov, iovcnt);
		if (!ret && (c->out.len >= CONN_BATCH_BYTES || ++c->nout >= CONN_BATCH_REPLIES))
			ret = flush_locked(c);
	} else {
		ret = flush_locked(c);
		if (!ret)
			ret = node_wire_send(c->fd, hdr, iov, iovcnt);
	}
	pthread_mutex_unlock(&c->wlock);
	if (ret && c->fd >= 0) {
		pohm_debug("conn: send failed (%d), dropping the connection", ret);
		node_conn_drop(c);
	}
	return ret;
}

/* Link c into node->conns. */
static void list_add(struct node *n, struct node_conn *c)
{
	pthread_mutex_lock(&n->conns_lock);
	c->next = n->conns;
	if (n->conns)
		n->conns->prev = c;
	n->conns = c;
	c->listed = 1;
	pthread_mutex_unlock(&n->conns_lock);
}

/* Unlink c from node->conns (idempotent). */
static void list_del(struct node *n, struct node_conn *c)
{
	pthread_mutex_lock(&n->conns_lock);
	if (c->listed) {
		if (c->prev)
			c->prev->next = c->next;
		else
			n->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		c->listed = 0;
	}
	pthread_mutex_unlock(&n->conns_lock);
}

/* See node.h. */
void node_req_free(struct node_req *req)
{
	if (!req)
		return;
	free(req->payload);
	if (req->conn)
		node_conn_put(req->conn);
	free(req);
}

/* See node.h. */
void node_conn_drop_all(struct node *n)
{
	struct node_conn *c;

	pthread_mutex_lock(&n->conns_lock);
	for (c = n->conns; c; c = c->next)
		node_conn_drop(c);
	pthread_mutex_unlock(&n->conns_lock);
}

/* The reader thread of one inbound connection. */
static void *conn_reader(void *arg)
{
	struct node_conn *c = arg;
	struct node *n = c->node;
	struct node_rd *rd = malloc(sizeof(*rd));
	struct pohm_cmd cmd;
	uint8_t *payload;
	int r = -ENOMEM;

	if (!rd)
		goto out;
	rd->start = rd->end = 0;
	while (!node_conn_dead(c)) {
		struct node_req *req;

		if (!node_rd_ready(rd))
			conn_flush(c);
		r = node_wire_read(c->fd, rd, n->cfg.max_packet, &cmd, &payload);
		if (r <= 0) {
			if (r == -EMSGSIZE)
				pohm_warn("conn: %s header announces %llu bytes (max %llu): dropping",
					  pohm_cmd_name(cmd.cmd), (unsigned long long)cmd.size,
					  (unsigned long long)n->cfg.max_packet);
			else if (r < 0)
				pohm_debug("conn: read failed: %d", r);
			break;
		}
		req = calloc(1, sizeof(*req));
		if (!req) {
			free(payload);
			r = -ENOMEM;
			break;
		}
		req->cmd = cmd;
		req->payload = payload;
		req->len = (size_t)cmd.size;
		req->conn = c;
		node_conn_get(c);
		n->handle(n, req);	/* the one upcall (node.h): inline or pool */
	}
out:
	free(rd);
	/* Last flush; from now on nothing may be batched (a new thread could reuse our id). */
	pthread_mutex_lock(&c->wlock);
	if (flush_locked(c))
		r = -EPIPE;
	c->has_reader = 0;
	pthread_mutex_unlock(&c->wlock);
	/*
	 * On EOF (even inside a packet) requests already queued still answer:
	 * a client may half-close after sending.  The fd closes with the last
	 * reference.  An absurd size or a read error drops the link at once.
	 */
	if (r != 0 && r != -EPROTO)
		node_conn_drop(c);
	list_del(n, c);
	node_conn_put(c);
	return NULL;
}

/* See node.h. */
int node_conn_serve(struct node *n, int fd)
{
	struct node_conn *c = conn_alloc(n, fd);
	pthread_attr_t at;
	pthread_t t;
	int r;

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	node_wire_tune(fd);
	list_add(n, c);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* The reader learns its identity under wlock before batching starts. */
	pthread_mutex_lock(&c->wlock);
	r = pthread_create(&t, &at, conn_reader, c);
	if (!r) {
		c->reader = t;
		c->has_reader = 1;
	}
	pthread_mutex_unlock(&c->wlock);
	pthread_attr_destroy(&at);
	if (r) {
		list_del(n, c);
		node_conn_put(c);
		return -r;
	}
	return 0;
}
