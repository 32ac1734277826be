/*
 * net.c — the client object and its transaction engine (see net.h for the
 * model and conn.h for the locking rules).
 *
 * Sections: helpers · open/close/nodes · transactions (hash, queue,
 * finish) · sending · failing a connection · dispatch · the leader round ·
 * run · fork · reports.  The callers' entry points (pohm_net_run,
 * pohm_net_window_send) are in run.c: they set connections up
 * (conn_setup.c) before the engine runs, and nothing here does.
 */
#include "conn.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t now_ns(void)
{
	return pohm_sys_mono_ns();
}

static void cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

/* Wait on cv until signalled or the monotonic deadline. */
static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *m, uint64_t deadline)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / 1000000000ULL),
		.tv_nsec = (long)(deadline % 1000000000ULL),
	};

	pthread_cond_timedwait(cv, m, &ts);
}

static struct pohm_conn *conn_of(struct pohm_net *net, int node)
{
	return node >= 0 && node < net->nconns ? net->conns[node] : NULL;
}

/* ---------------------------------------------------------------- open/close/nodes */

static void *rx_bind(void *arg, const struct pohm_cmd *cmd, uint8_t **dest, size_t *skip);

int pohm_net_node_add(struct pohm_net *net, const struct pohm_addr *a, int seed)
{
	struct pohm_conn *c;
	int i;

	for (i = 0; i < net->nconns; i++)
		if (pohm_addr_equal(&net->conns[i]->addr, a)) {
			net->conns[i]->seed |= seed;
			return i;
		}
	if (net->nconns >= POHM_MAX_NODES)
		return -ENOSPC;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->net = net;
	c->idx = net->nconns;
	c->addr = *a;
	c->rx.bind = rx_bind;
	c->rx.bind_arg = c;
	pohm_addr_format(a, c->name, sizeof(c->name));
	c->fd = -1;
	c->seed = seed;
	net->conns[net->nconns++] = c;
	return c->idx;
}

int pohm_net_open(struct pohm_net **out, const struct pohm_config *cfg)
{
	struct pohm_net *net = calloc(1, sizeof(*net));
	unsigned i;

	if (!net)
		return -ENOMEM;
	pthread_mutex_init(&net->lock, NULL);
	cond_init_mono(&net->txcv);
	cond_init_mono(&net->conncv);
	net->cfg = cfg;
	net->pid = pohm_sys_pid();
	net->next_trans = 1;
	net->evfd = -1;
	for (i = 0; i < cfg->nservers; i++) {
		int r = pohm_net_node_add(net, &cfg->servers[i], 1);

		if (r < 0) {
			pohm_net_close(net);
			return r;
		}
	}
	*out = net;
	return 0;
}

/* Unlink every queued request; orphans (copies we own) are freed.
 * keep_inflight: not the queue's first ones a flusher is writing right now
 * (tx_inflight, conn_flush), whose bytes it still reads. */
static void queue_clear(struct pohm_conn *c, int keep_inflight)
{
	struct pohm_req *r = c->sq_head, *keep = NULL, *last = NULL;
	int prefix = 1;

	while (r) {
		struct pohm_req *next = r->qnext;

		prefix = prefix && keep_inflight && r->tx_inflight;
		if (prefix) {
			if (!keep)
				keep = r;
			last = r;
		} else {
			r->queued = 0;
			r->qnext = NULL;
			if (r->orphan) {
				free((void *)r->p1);
				free(r);
			}
		}
		r = next;
	}
	c->sq_head = keep;
	c->sq_tail = last;
	if (last)
		last->qnext = NULL;
}

void pohm_net_close(struct pohm_net *net)
{
	int i;

	if (!net)
		return;
	for (i = 0; i < net->nconns; i++) {
		struct pohm_conn *c = net->conns[i];

		pohm_own_close(&c->fd);
		queue_clear(c, 0);
		pohm_rx_reset(&c->rx);
		pohm_req_release(&c->hs);
		free(c);
	}
	pohm_own_close(&net->evfd);
	pohm_route_free(&net->route);
	pthread_cond_destroy(&net->txcv);
	pthread_cond_destroy(&net->conncv);
	pthread_mutex_destroy(&net->lock);
	free(net);
}

/* ---------------------------------------------------------------- transactions */

void pohm_req_init(struct pohm_req *r, int node, int32_t cmd, uint64_t flags)
{
	memset(r, 0, sizeof(*r));
	r->node = node;
	r->cmd.cmd = cmd;
	r->cmd.flags = flags;
}

void pohm_req_release(struct pohm_req *r)
{
	pohm_pkt_free_list(r->replies);
	r->replies = NULL;
	r->rtail = NULL;
}

const struct pohm_pkt *pohm_req_final(const struct pohm_req *r)
{
	const struct pohm_pkt *p = r->replies;

	while (p && p->next)
		p = p->next;
	return p;
}

static void hash_add(struct pohm_conn *c, struct pohm_req *r)
{
	unsigned b = (unsigned)(r->cmd.trans % POHM_TRANS_BUCKETS);

	r->hnext = c->hash[b];
	c->hash[b] = r;
	r->hashed = 1;
	c->inflight++;
}

static struct pohm_req *hash_find(struct pohm_conn *c, uint64_t trans)
{
	struct pohm_req *r = c->hash[trans % POHM_TRANS_BUCKETS];

	while (r && r->cmd.trans != trans)
		r = r->hnext;
	return r;
}

static void hash_del(struct pohm_conn *c, struct pohm_req *r)
{
	struct pohm_req **pp = &c->hash[r->cmd.trans % POHM_TRANS_BUCKETS];

	while (*pp && *pp != r)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = r->hnext;
		c->inflight--;
	}
	r->hashed = 0;
	r->hnext = NULL;
}

static void queue_append(struct pohm_conn *c, struct pohm_req *r)
{
	r->qnext = NULL;
	if (c->sq_tail)
		c->sq_tail->qnext = r;
	else
		c->sq_head = r;
	c->sq_tail = r;
	r->queued = 1;
}

static void queue_remove(struct pohm_conn *c, struct pohm_req *r)
{
	struct pohm_req **pp = &c->sq_head, *prev = NULL;

	while (*pp && *pp != r) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (!*pp)
		return;
	*pp = r->qnext;
	if (c->sq_tail == r)
		c->sq_tail = prev;
	r->queued = 0;
	r->qnext = NULL;
}

/* Mark r done with status and wake its waiter. */
static void finish(struct pohm_req *r, int status)
{
	if (r->done)
		return;
	r->done = 1;
	r->status = status;
	r->done_ns = now_ns();
	if (r->batch) {
		r->batch->remaining--;
		pthread_cond_signal(&r->batch->cv);
	}
}

/* Add n to one of net's counters (struct pohm_net: relaxed atomics). */
static void count(uint64_t *field, uint64_t n)
{
	if (n)
		__atomic_add_fetch(field, n, __ATOMIC_RELAXED);
}

static uint64_t total_len(const struct pohm_req *r)
{
	return POHM_CMD_SIZE + (uint64_t)r->n1 + r->n2;
}

/* Put r on its connection (or fail it at once when the node is not usable). */
static void submit(struct pohm_net *net, struct pohm_req *r, struct pohm_batch *b, int handshake)
{
	struct pohm_conn *c = conn_of(net, r->node);

	r->batch = b;
	r->done = 0;
	r->status = 0;
	r->replies = NULL;
	r->rtail = &r->replies;
	r->txoff = 0;
	r->queued = r->tx_inflight = r->hashed = r->orphan = 0;
	r->sent_ns = now_ns();
	if (!c) {
		finish(r, -ENXIO);
		return;
	}
	if (c->fd < 0 || c->close_pending ||
	    !(c->state == CONN_UP || (handshake && c->state == CONN_CONNECTING))) {
		finish(r, c->last_err ? c->last_err : -ENOTCONN);
		return;
	}
	/* Never 0 (server pushes) and below 2^63 (early 2.26 reply bit). */
	r->cmd.trans = net->next_trans++ & ~POHM_TRANS_REPLY_BIT;
	if (!r->cmd.trans)
		r->cmd.trans = net->next_trans++;
	r->cmd.size = (uint64_t)r->n1 + r->n2;
	r->cmd.status = 0;
	pohm_cmd_encode(r->txhdr, &r->cmd);
	hash_add(c, r);
	queue_append(c, r);
}

/* ---------------------------------------------------------------- failing a connection */

static void close_now(struct pohm_conn *c)
{
	pohm_own_close(&c->fd);
	c->close_pending = 0;
	pohm_rx_reset(&c->rx);
}

void pohm_conn_release(struct pohm_net *net, struct pohm_conn *c)
{
	if (c->users)
		c->users--;
	if (!c->users && c->close_pending)
		close_now(c);
	(void)net;
}

static uint64_t backoff_ns(unsigned fails)
{
	uint64_t d = POHM_BACKOFF_MIN_NS;

	if (fails <= 1)
		return 0;	/* the first failure may be a restart: retry at once */
	while (fails-- > 2 && d < POHM_BACKOFF_MAX_NS)
		d *= 2;
	return d < POHM_BACKOFF_MAX_NS ? d : POHM_BACKOFF_MAX_NS;
}

void pohm_conn_fail(struct pohm_net *net, struct pohm_conn *c, int err, const char *msg)
{
	unsigned b;

	if (err >= 0)
		err = -EIO;
	if (err == -ECONNRESET && c->hs.hashed && !c->hs.replies)
		msg = "connection closed before the handshake's answer (a protocol version mismatch?)";
	if (c->state != CONN_DOWN || c->fd >= 0)
		pohm_warn("node %s: %s", c->name, msg ? msg : strerror(-err));
	c->state = CONN_DOWN;
	c->handshake_ok = 0;
	c->fails++;
	c->stalls = 0;
	c->last_err = err;
	if (msg)
		snprintf(c->last_msg, sizeof(c->last_msg), "%s", msg);
	else
		snprintf(c->last_msg, sizeof(c->last_msg), "%s", strerror(-err));
	c->retry_at_ns = now_ns() + backoff_ns(c->fails);
	net->refresh_due = 1;
	for (b = 0; b < POHM_TRANS_BUCKETS; b++) {
		struct pohm_req *r = c->hash[b];

		while (r) {
			struct pohm_req *next = r->hnext;

			r->hashed = 0;
			r->hnext = NULL;
			finish(r, err);
			r = next;
		}
		c->hash[b] = NULL;
	}
	c->inflight = 0;
	queue_clear(c, 1);
	if (c->fd >= 0) {
		if (c->users)
			c->close_pending = 1;
		else
			close_now(c);
	}
	pthread_cond_broadcast(&net->conncv);
}

/* ---------------------------------------------------------------- sending */

/* Requests one sendmsg carries at most (conn_flush): 3 iovecs each. */
#define TX_BATCH 32

/* r's unsent bytes from its txoff on, as up to 3 iovecs at iov; the count. */
static int req_iov(const struct pohm_req *r, struct iovec *iov)
{
	uint64_t off = r->txoff;
	int cnt = 0;

	if (off < POHM_CMD_SIZE) {
		iov[cnt].iov_base = (uint8_t *)r->txhdr + off;
		iov[cnt++].iov_len = POHM_CMD_SIZE - (size_t)off;
		off = 0;
	} else {
		off -= POHM_CMD_SIZE;
	}
	if (off < r->n1) {
		iov[cnt].iov_base = (uint8_t *)r->p1 + off;
		iov[cnt++].iov_len = r->n1 - (size_t)off;
		off = 0;
	} else {
		off -= r->n1;
	}
	if (off < r->n2) {
		iov[cnt].iov_base = (uint8_t *)r->p2 + off;
		iov[cnt++].iov_len = r->n2 - (size_t)off;
	}
	return cnt;
}

/*
 * Write what the socket takes from the queue head on. Lock held; dropped
 * while writing.  Up to TX_BATCH queued requests go in one sendmsg (issue
 * 23: a listing's batch of inode reads was one system call per request on
 * both ends); each is marked tx_inflight while the lock is dropped, so they
 * are the queue's first ones, in order, and only the first not sent whole
 * has a txoff.
 */
static void conn_flush(struct pohm_net *net, struct pohm_conn *c)
{
	if (c->tx_busy || c->fd < 0 || c->close_pending)
		return;
	c->tx_busy = 1;
	c->users++;
	while (c->sq_head && c->state != CONN_DOWN && !c->close_pending) {
		struct pohm_req *r, *nx;
		struct iovec iov[3 * TX_BATCH];
		int cnt = 0, k = 0, fd = c->fd;
		ssize_t n;
		uint64_t left;

		for (r = c->sq_head; r && k < TX_BATCH; r = r->qnext, k++) {
			cnt += req_iov(r, iov + cnt);
			r->tx_inflight = 1;
		}
		pthread_mutex_unlock(&net->lock);
		n = cnt ? pohm_sock_sendv(fd, iov, cnt) : 0;
		pthread_mutex_lock(&net->lock);
		/* Still the queue's first k: a request stays queued while inflight. */
		for (r = c->sq_head; r && r->tx_inflight; r = r->qnext)
			r->tx_inflight = 0;
		pthread_cond_broadcast(&net->txcv);
		if (n == -EAGAIN)
			break;
		if (n < 0) {
			pohm_conn_fail(net, c, (int)n, "send failed");
			break;
		}
		c->last_tx_ns = now_ns();
		left = (uint64_t)n;
		for (r = c->sq_head; r && left; r = nx) {
			uint64_t want = total_len(r) - r->txoff;

			nx = r->qnext;
			if (left < want) {
				r->txoff += left;
				break;
			}
			left -= want;
			r->txoff = total_len(r);
			queue_remove(c, r);
			if (r == &c->hs)	/* sent ahead: answered within its budget */
				c->hs_deadline = c->last_tx_ns + c->hs_budget;
			if (r->orphan) {
				free((void *)r->p1);
				free(r);
			}
		}
	}
	if (c->state == CONN_DOWN)
		queue_clear(c, 0);
	c->tx_busy = 0;
	pohm_conn_release(net, c);
}

void pohm_net_poke(struct pohm_net *net)
{
	static const uint64_t one = 1;

	if (net->evfd >= 0)
		pohm_sys_write(net->evfd, &one, sizeof(one));
}

void pohm_conn_send_detached(struct pohm_net *net, struct pohm_conn *c, struct pohm_req *r,
			     uint64_t budget)
{
	/* Queued only: the first request on c takes it along in its sendmsg
	 * (conn_flush sends the queue's head first, and starts the clock). */
	count(&net->all_sent, 1);
	submit(net, r, NULL, 1);
	c->hs_budget = budget;
	c->hs_deadline = UINT64_MAX;
}

/*
 * Take r out of its connection's tables before its owner returns.  A
 * partly sent request is replaced by a copy of its unsent bytes, so the
 * stream stays whole while the caller's buffers go away.  Lock held.
 */
static void cancel(struct pohm_net *net, struct pohm_req *r, int err)
{
	struct pohm_conn *c = conn_of(net, r->node);

	if (c && r->hashed)
		hash_del(c, r);
	while (c && r->queued && r->tx_inflight)
		pthread_cond_wait(&net->txcv, &net->lock);
	if (c && r->queued) {
		if (!r->txoff) {
			queue_remove(c, r);
		} else {
			uint64_t left = total_len(r) - r->txoff;
			struct pohm_req *o = calloc(1, sizeof(*o));
			uint8_t *copy = o ? malloc(left ? (size_t)left : 1) : NULL;

			if (!copy) {
				free(o);
				queue_remove(c, r);
				pohm_conn_fail(net, c, -ENOMEM, "out of memory while cancelling a request");
			} else {
				/* Gather the unsent tail of header + p1 + p2. */
				uint64_t off = r->txoff, pos = 0;
				const uint8_t *parts[3] = { r->txhdr, r->p1, r->p2 };
				uint64_t lens[3] = { POHM_CMD_SIZE, r->n1, r->n2 };
				int i;

				for (i = 0; i < 3; i++) {
					if (off >= lens[i]) {
						off -= lens[i];
						continue;
					}
					memcpy(copy + pos, parts[i] + off, (size_t)(lens[i] - off));
					pos += lens[i] - off;
					off = 0;
				}
				o->orphan = 1;
				o->node = r->node;
				o->p1 = copy;
				o->n1 = (size_t)left;
				o->txoff = POHM_CMD_SIZE;
				o->queued = 1;
				o->qnext = r->qnext;
				c->sq_head = o;		/* a partly sent request is always the head */
				if (c->sq_tail == r)
					c->sq_tail = o;
				r->queued = 0;
				r->qnext = NULL;
			}
		}
	}
	finish(r, err);
}

/* ---------------------------------------------------------------- replies into the caller's memory */

/*
 * rx's bind (called by the leader outside the lock, when a header is in):
 * a final reply to a request with rdest that fits is read into rdest.
 * r->rx_busy stays set until the packet is dispatched or rx_release()
 * takes the memory back, so no request whose memory a leader may still
 * write is ever handed back to its caller.
 */
static void *rx_bind(void *arg, const struct pohm_cmd *cmd, uint8_t **dest, size_t *skip)
{
	struct pohm_conn *c = arg;
	struct pohm_net *net = c->net;
	struct pohm_req *r;

	if (!pohm_cmd_is_reply(cmd) || (cmd->flags & POHM_FLAG_MORE) || cmd->status)
		return NULL;
	pthread_mutex_lock(&net->lock);
	r = hash_find(c, cmd->trans & ~POHM_TRANS_REPLY_BIT);
	if (r && r->rdest && !r->rx_busy && cmd->size >= r->rdest_skip &&
	    cmd->size - r->rdest_skip <= r->rdest_cap) {
		r->rx_busy = 1;
		*dest = r->rdest;
		*skip = r->rdest_skip;
	} else {
		r = NULL;
	}
	pthread_mutex_unlock(&net->lock);
	return r;
}

/*
 * Before r goes back to its caller: wait until no leader is reading (it
 * might be writing r->rdest; the wait is short: the leader's poll is woken
 * and its reads do not block), then unbind a split packet still meant for
 * r (its tail is dropped).  Lock held.
 */
static void rx_release(struct pohm_net *net, struct pohm_req *r)
{
	struct pohm_conn *c;

	if (!r->rx_busy)
		return;
	net->rx_waiters++;
	if (net->rx_reading)
		pohm_net_poke(net);	/* the leader may be in a long poll: end it */
	while (net->rx_reading)
		pthread_cond_wait(&net->txcv, &net->lock);
	net->rx_waiters--;
	c = conn_of(net, r->node);
	if (c && c->rx.split && c->rx.bound == r)
		pohm_rx_unbind(&c->rx);
	r->rx_busy = 0;
}

/* ---------------------------------------------------------------- dispatch */

static void dispatch(struct pohm_net *net, struct pohm_conn *c, struct pohm_pkt *pkt)
{
	struct pohm_req *r;
	int rc;

	c->last_rx_ns = now_ns();
	__atomic_store_n(&net->last_rx_ns, c->last_rx_ns, __ATOMIC_RELAXED);
	if (!pohm_cmd_is_reply(&pkt->cmd)) {
		if (pkt->cmd.cmd == POHM_CMD_UPDATE_IDS) {
			rc = pohm_route_apply_ids(&net->route, c->idx, pkt->data, (size_t)pkt->cmd.size, 0);
			if (rc)
				pohm_warn("node %s: bad UPDATE_IDS packet ignored: %s", c->name,
					  strerror(-rc));
		}
		pohm_pkt_free_list(pkt);
		return;
	}
	r = hash_find(c, pkt->cmd.trans & ~POHM_TRANS_REPLY_BIT);
	if (r && pkt->split) {
		/* Read into r->rdest (or dropped, if r gave its memory back meanwhile). */
		r->rx_busy = 0;
		if (!pkt->ext)
			r = NULL;
	}
	if (!r) {
		pohm_debug("node %s: reply to unknown trans %llu dropped", c->name,
			   (unsigned long long)pkt->cmd.trans);
		pohm_pkt_free_list(pkt);
		return;
	}
	pkt->next = NULL;
	*r->rtail = pkt;
	r->rtail = &pkt->next;
	if (!(pkt->cmd.flags & POHM_FLAG_MORE)) {
		hash_del(c, r);
		c->stalls = 0;
		rc = pohm_status_errno(pkt->cmd.status);
		if (!rc && r->on_reply)
			rc = r->on_reply(net, c, r);
		else if (rc && r == &c->hs) {
			/* A handshake sent ahead and refused: what went behind it
			 * cannot be trusted, the node is not ours to use. */
			char msg[96];

			snprintf(msg, sizeof(msg), "the handshake sent ahead was refused (status %d)",
				 rc);
			pohm_conn_fail(net, c, rc, msg);
		}
		finish(r, rc);
	}
}

/* ---------------------------------------------------------------- the leader round */

static int make_eventfd(void)
{
	int fd = pohm_sys_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	return fd < 0 ? -1 : pohm_sys_move_high(fd);
}

/*
 * One round of the leader: poll every open connection (and the wake-up
 * eventfd) until something happens or the deadline; read whole packets
 * outside the lock, then dispatch them.  Lock held on entry and exit.
 */
static void lead_round(struct pohm_net *net, uint64_t deadline)
{
	struct pollfd fds[POHM_MAX_NODES + 1];
	struct pohm_conn *who[POHM_MAX_NODES];
	struct pohm_pkt *got[POHM_MAX_NODES], **tail[POHM_MAX_NODES];
	int err[POHM_MAX_NODES];
	unsigned n = 0, i;
	uint64_t t = now_ns();
	int i2;

	if (net->evfd < 0)
		pohm_own_set(&net->evfd, make_eventfd());
	for (i2 = 0; i2 < net->nconns; i2++) {
		struct pohm_conn *c = net->conns[i2];

		if (c->fd < 0 || c->close_pending || c->state == CONN_DOWN)
			continue;
		if (c->hs.hashed && c->hs_deadline < deadline)
			deadline = c->hs_deadline > t ? c->hs_deadline : t;
		fds[n].fd = c->fd;
		fds[n].events = POLLIN | (c->sq_head && !c->tx_busy ? POLLOUT : 0);
		fds[n].revents = 0;
		who[n] = c;
		got[n] = NULL;
		tail[n] = &got[n];
		err[n] = 0;
		c->users++;
		n++;
	}
	fds[n].fd = net->evfd;
	fds[n].events = POLLIN;
	fds[n].revents = 0;
	net->rx_reading = 1;
	pthread_mutex_unlock(&net->lock);

	if (pohm_sock_poll(fds, n + 1, deadline > t ? deadline - t : 0) > 0) {
		for (i = 0; i < n; i++)
			if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
				err[i] = pohm_rx_read(&who[i]->rx, fds[i].fd, &tail[i]);
		if (fds[n].revents & POLLIN) {
			uint64_t v;

			pohm_sys_read(net->evfd, &v, sizeof(v));
		}
	}

	pthread_mutex_lock(&net->lock);
	net->rx_reading = 0;
	if (net->rx_waiters)
		pthread_cond_broadcast(&net->txcv);
	for (i = 0; i < n; i++) {
		struct pohm_conn *c = who[i];
		struct pohm_pkt *p = got[i];

		while (p) {
			struct pohm_pkt *next = p->next;

			p->next = NULL;
			if (c->state != CONN_DOWN)
				dispatch(net, c, p);
			else
				pohm_pkt_free_list(p);
			p = next;
		}
		if (err[i] && c->state != CONN_DOWN)
			pohm_conn_fail(net, c, err[i] == -EPROTO ? -EPROTO : err[i],
				       err[i] == -ECONNRESET ? "connection closed by the node" :
				       err[i] == -EPROTO ? "malformed packet from the node" : NULL);
		if ((fds[i].revents & POLLOUT) && c->state != CONN_DOWN)
			conn_flush(net, c);
		/* A handshake sent ahead and unanswered in its time: the node is
		 * hung, as a waited-for handshake would have found (connect_nodes). */
		if (c->state != CONN_DOWN && c->hs.hashed && now_ns() >= c->hs_deadline)
			pohm_conn_fail(net, c, -ETIMEDOUT, "no answer to the version handshake in time");
		pohm_conn_release(net, c);
	}
}

/* ---------------------------------------------------------------- run */

static void waiter_add(struct pohm_net *net, struct pohm_batch *b)
{
	struct pohm_batch **pp = &net->waiters;

	while (*pp)
		pp = &(*pp)->next;
	*pp = b;
	b->next = NULL;
	b->waiting = 1;
}

static void waiter_remove(struct pohm_net *net, struct pohm_batch *b)
{
	struct pohm_batch **pp = &net->waiters;

	while (*pp && *pp != b)
		pp = &(*pp)->next;
	if (*pp)
		*pp = b->next;
	b->next = NULL;
	b->waiting = 0;
}

/* 0: all done, 1: enough (or a deadline the predicate lowered), -ETIMEDOUT.  Lock held. */
static int wait_loop(struct pohm_net *net, struct pohm_batch *b, struct pohm_req **reqs,
		     size_t n, uint64_t deadline, pohm_enough_fn enough, void *arg)
{
	uint64_t dl = deadline;
	int late_round = 0;

	for (;;) {
		if (!b->remaining)
			return 0;
		if (enough && enough(arg, reqs, n, &dl))
			return 1;
		if (now_ns() >= dl) {
			if (dl < deadline)
				return 1;
			/* Before a timeout, the replies already in the sockets
			 * (nobody read them since they came: no leader ran, as
			 * when a window is waited for after its deadline): one
			 * round that does not block (poll with timeout 0). */
			if (late_round || net->leader_active)
				return -ETIMEDOUT;
			late_round = 1;
		}
		if (!net->leader_active) {
			if (b->waiting)
				waiter_remove(net, b);
			net->leader_active = 1;
			lead_round(net, dl);
			net->leader_active = 0;
			continue;
		}
		if (!b->waiting)
			waiter_add(net, b);
		cond_wait_until(&b->cv, &net->lock, dl);
	}
}

int pohm_net_run_internal(struct pohm_net *net, struct pohm_req **reqs, size_t n,
			  uint64_t deadline, pohm_enough_fn enough, void *arg, int handshake)
{
	struct pohm_batch b;
	uint64_t t0 = now_ns();
	size_t i;
	int why, ok = 0;

	memset(&b, 0, sizeof(b));
	cond_init_mono(&b.cv);
	count(&net->all_waits, n ? 1 : 0);
	count(&net->all_sent, n);
	pthread_mutex_lock(&net->lock);
	b.remaining = n;
	for (i = 0; i < n; i++)
		submit(net, reqs[i], &b, handshake);
	/* Send right away from this thread; what the socket refuses waits for the leader. */
	for (i = 0; i < n; i++) {
		struct pohm_conn *c = conn_of(net, reqs[i]->node);

		if (c && c->sq_head)
			conn_flush(net, c);
	}
	for (i = 0; i < n; i++) {
		struct pohm_conn *c = conn_of(net, reqs[i]->node);

		if (c && c->sq_head && net->leader_active) {
			pohm_net_poke(net);
			break;
		}
	}
	why = wait_loop(net, &b, reqs, n, deadline, enough, arg);
	if (b.waiting)
		waiter_remove(net, &b);
	for (i = 0; i < n; i++) {
		struct pohm_req *r = reqs[i];
		struct pohm_conn *c = conn_of(net, r->node);

		rx_release(net, r);
		if (r->done && !r->queued)
			continue;
		/*
		 * A stall only when the node sent nothing at all during this
		 * batch: a node that answers, but late (a backlog behind its
		 * one reader per connection, a loaded host), is alive, and a
		 * reset would fail every request in flight on it (finding 17).
		 */
		if (!r->done && why == -ETIMEDOUT && c && c->state == CONN_UP &&
		    c->last_rx_ns < t0 && c->stall_batch != &b &&
		    (c->stall_batch = &b, ++c->stalls >= POHM_STALL_LIMIT)) {
			char msg[96];

			snprintf(msg, sizeof(msg), "no answer to %u requests in a row: connection reset",
				 c->stalls);
			pohm_conn_fail(net, c, -ETIMEDOUT, msg);
		}
		cancel(net, r, why == -ETIMEDOUT ? -ETIMEDOUT : -ECANCELED);
	}
	for (i = 0; i < n; i++) {
		struct pohm_conn *c = conn_of(net, reqs[i]->node);

		if (c && c->stall_batch == &b)
			c->stall_batch = NULL;	/* b lives on this stack frame */
	}
	/* Hand the leader role to a thread that still waits. */
	if (!net->leader_active && net->waiters)
		pthread_cond_signal(&net->waiters->cv);
	pthread_mutex_unlock(&net->lock);
	pthread_cond_destroy(&b.cv);
	for (i = 0; i < n; i++)
		ok += reqs[i]->status == 0;
	return ok;
}

int pohm_net_run_prepared(struct pohm_net *net, struct pohm_req **reqs, size_t n,
			  uint64_t deadline, pohm_enough_fn enough, void *arg)
{
	/* After prepare: the connection setup it did is counted as setup. */
	count(&net->run_waits, n ? 1 : 0);
	count(&net->run_sent, n);
	return pohm_net_run_internal(net, reqs, n, deadline, enough, arg, 0);
}

uint64_t pohm_net_last_rx_ns(struct pohm_net *net)
{
	return __atomic_load_n(&net->last_rx_ns, __ATOMIC_RELAXED);
}

void pohm_net_counts(struct pohm_net *net, struct pohm_net_counts *out)
{
	uint64_t all_w, all_s, run_w, run_s;

	/* A fork child's net before its first use holds the parent's counters,
	 * which that use zeroes (pohm_net_fork_check): none is the child's yet.
	 * The reset stores the pid last, with release. */
	memset(out, 0, sizeof(*out));
	if (__atomic_load_n(&net->pid, __ATOMIC_ACQUIRE) != pohm_sys_pid())
		return;
	all_w = __atomic_load_n(&net->all_waits, __ATOMIC_RELAXED);
	all_s = __atomic_load_n(&net->all_sent, __ATOMIC_RELAXED);
	run_w = __atomic_load_n(&net->run_waits, __ATOMIC_RELAXED);
	run_s = __atomic_load_n(&net->run_sent, __ATOMIC_RELAXED);
	out->waits = run_w + __atomic_load_n(&net->win_waits, __ATOMIC_RELAXED);
	out->requests = run_s + __atomic_load_n(&net->win_sent, __ATOMIC_RELAXED);
	out->setup_waits = all_w > run_w ? all_w - run_w : 0;
	out->setup_requests = all_s > run_s ? all_s - run_s : 0;
}

/* ---------------------------------------------------------------- windows */

struct pohm_batch *pohm_net_window_open(struct pohm_net *net)
{
	struct pohm_batch *w = calloc(1, sizeof(*w));

	(void)net;
	if (w)
		cond_init_mono(&w->cv);
	return w;
}

void pohm_net_window_submit(struct pohm_net *net, struct pohm_batch *w, struct pohm_req **reqs,
			    size_t n)
{
	size_t i;

	count(&net->win_sent, n);
	pthread_mutex_lock(&net->lock);
	w->remaining += n;
	for (i = 0; i < n; i++)
		submit(net, reqs[i], w, 0);
	for (i = 0; i < n; i++) {
		struct pohm_conn *c = conn_of(net, reqs[i]->node);

		if (c && c->sq_head)
			conn_flush(net, c);
	}
	for (i = 0; i < n; i++) {
		struct pohm_conn *c = conn_of(net, reqs[i]->node);

		if (c && c->sq_head && net->leader_active) {
			pohm_net_poke(net);
			break;
		}
	}
	pthread_mutex_unlock(&net->lock);
}

/* enough() for a window wait: the one request is done. */
static int req_done(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl)
{
	(void)reqs;
	(void)n;
	(void)dl;
	return ((struct pohm_req *)arg)->done;
}

/* Before a window wait, which counts only when it must block (decision
 * 0073): the replies already on the connections, read without blocking (a
 * round whose poll has timeout 0), unless a leader is reading them.  1 read,
 * 0 not (a leader is active).  Lock held. */
static int lead_round_now(struct pohm_net *net)
{
	if (net->leader_active)
		return 0;
	net->leader_active = 1;
	lead_round(net, 0);
	net->leader_active = 0;
	return 1;
}

int pohm_net_window_wait(struct pohm_net *net, struct pohm_batch *w, struct pohm_req *r,
			 uint64_t deadline)
{
	struct pohm_req *one = r;
	int why;

	pthread_mutex_lock(&net->lock);
	if (!r->done)
		lead_round_now(net);
	count(&net->win_waits, !r->done);
	why = r->done ? 0 : wait_loop(net, w, &one, 1, deadline, req_done, r);
	if (w->waiting)
		waiter_remove(net, w);
	rx_release(net, r);
	if (!r->done || r->queued)
		cancel(net, r, why == -ETIMEDOUT ? -ETIMEDOUT : -ECANCELED);
	if (!net->leader_active && net->waiters)
		pthread_cond_signal(&net->waiters->cv);
	pthread_mutex_unlock(&net->lock);
	return r->status;
}

/* Is w enough now: every request done, or enough() says so (or lowered
 * its deadline to a time already past, as wait_loop reads it)?  Lock held. */
static int window_enough(struct pohm_batch *w, pohm_enough_fn enough, void *arg,
			 uint64_t deadline)
{
	uint64_t dl = deadline;

	if (!w->remaining || enough(arg, NULL, 0, &dl))
		return 1;
	return dl < deadline && now_ns() >= dl;
}

int pohm_net_window_wait_enough(struct pohm_net *net, struct pohm_batch *w,
				pohm_enough_fn enough, void *arg, uint64_t deadline)
{
	int done, why = 0;

	pthread_mutex_lock(&net->lock);
	/* Counted as pohm_net_window_wait counts (decision 0073). */
	done = window_enough(w, enough, arg, deadline);
	if (!done && lead_round_now(net))
		done = window_enough(w, enough, arg, deadline);
	count(&net->win_waits, !done);
	if (!done)
		why = wait_loop(net, w, NULL, 0, deadline, enough, arg);
	if (w->waiting)
		waiter_remove(net, w);
	if (!net->leader_active && net->waiters)
		pthread_cond_signal(&net->waiters->cv);
	pthread_mutex_unlock(&net->lock);
	return why < 0 ? why : 0;
}

void pohm_net_window_close(struct pohm_net *net, struct pohm_batch *w, struct pohm_req **reqs,
			   size_t n)
{
	size_t i;

	if (!w)
		return;
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < n; i++) {
		if (reqs[i]->batch != w)
			continue;
		rx_release(net, reqs[i]);
		if (!reqs[i]->done || reqs[i]->queued)
			cancel(net, reqs[i], -ECANCELED);
	}
	if (w->waiting)
		waiter_remove(net, w);
	if (!net->leader_active && net->waiters)
		pthread_cond_signal(&net->waiters->cv);
	pthread_mutex_unlock(&net->lock);
	pthread_cond_destroy(&w->cv);
	free(w);
}

/* ---------------------------------------------------------------- fork */

/*
 * Reset the child's copy: close inherited sockets without reading them,
 * forget transactions (they belong to threads of the parent), keep the
 * route table (still true) and reconnect lazily.
 */
void pohm_net_atfork_child(struct pohm_net *net)
{
	int i;

	pthread_mutex_init(&net->lock, NULL);
	cond_init_mono(&net->txcv);
	cond_init_mono(&net->conncv);
	/* The parent's waits are the parent's (its own stats count them). */
	net->all_waits = net->all_sent = net->run_waits = net->run_sent = 0;
	net->win_waits = net->win_sent = 0;
	for (i = 0; i < net->nconns; i++) {
		struct pohm_conn *c = net->conns[i];

		pohm_own_close(&c->fd);
		c->state = CONN_DOWN;
		c->handshake_ok = 0;
		c->users = 0;
		c->close_pending = 0;
		c->tx_busy = 0;
		memset(c->hash, 0, sizeof(c->hash));
		c->hs.hashed = 0;
		pohm_req_release(&c->hs);
		c->inflight = 0;
		for (struct pohm_req *q = c->sq_head; q; q = q->qnext)
			q->tx_inflight = 0;
		queue_clear(c, 0);
		pohm_rx_reset(&c->rx);
		c->fails = 0;
		c->stalls = 0;
		c->retry_at_ns = 0;
	}
	net->leader_active = 0;
	net->waiters = NULL;
	net->refreshing = 0;
	pohm_own_close(&net->evfd);
	__atomic_store_n(&net->pid, pohm_sys_pid(), __ATOMIC_RELEASE);
}

void pohm_net_atfork_prepare(struct pohm_net *net)
{
	pthread_mutex_lock(&net->lock);
}

void pohm_net_atfork_parent(struct pohm_net *net)
{
	pthread_mutex_unlock(&net->lock);
}

/* Guards the pid-change reset when no atfork hook ran (see pohm_net_fork_check). */
static int fork_resetting;

void pohm_net_fork_check(struct pohm_net *net)
{
	pid_t pid = pohm_sys_pid();
	int expect = 0;

	if (__atomic_load_n(&net->pid, __ATOMIC_ACQUIRE) == pid)
		return;
	/* A forked child without the atfork hook: one thread resets, others wait. */
	if (__atomic_compare_exchange_n(&fork_resetting, &expect, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&net->pid, __ATOMIC_ACQUIRE) != pid)
			pohm_net_atfork_child(net);
		__atomic_store_n(&fork_resetting, 0, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&net->pid, __ATOMIC_ACQUIRE) != pid)
		sched_yield();
}

/* ---------------------------------------------------------------- reports */

/* A node that may own keys: not one that failed and is still down (lock held). */
static int node_usable(void *arg, int node)
{
	struct pohm_conn *c = conn_of(arg, node);

	return c && !(c->state == CONN_DOWN && c->fails);
}

int pohm_net_owner(struct pohm_net *net, uint32_t group, const uint8_t id[POHM_ID_SIZE],
		   int own_node, int *node, int32_t *backend)
{
	const struct pohm_route_entry *e = NULL;
	int r = -ENXIO;

	pthread_mutex_lock(&net->lock);
	/*
	 * A failed node's keys go to the live nodes of its group (its entries
	 * stay, so a reconnect by the next refresh gives them back).  When the
	 * whole group is down, or own_node, the plain owner: the request then
	 * names that node and reconnects it once its backoff has passed.
	 */
	if (!own_node)
		e = pohm_route_owner_among(&net->route, group, id, node_usable, net);
	if (!e)
		e = pohm_route_owner(&net->route, group, id);
	if (e) {
		*node = e->node;
		*backend = e->backend;
		r = 0;
	}
	pthread_mutex_unlock(&net->lock);
	return r;
}

int pohm_net_nodes(struct pohm_net *net)
{
	int n;

	pthread_mutex_lock(&net->lock);
	n = net->nconns;
	pthread_mutex_unlock(&net->lock);
	return n;
}

void pohm_net_node_name(struct pohm_net *net, int node, char *buf, size_t len)
{
	struct pohm_conn *c;

	pthread_mutex_lock(&net->lock);
	c = conn_of(net, node);
	snprintf(buf, len, "%s", c ? c->name : "?");
	pthread_mutex_unlock(&net->lock);
}

int pohm_net_node_info(struct pohm_net *net, int node, struct pohm_node_info *out)
{
	struct pohm_conn *c;
	size_t i;

	pthread_mutex_lock(&net->lock);
	c = conn_of(net, node);
	if (!c) {
		pthread_mutex_unlock(&net->lock);
		return -ENOENT;
	}
	memset(out, 0, sizeof(*out));
	out->addr = c->addr;
	memcpy(out->name, c->name, sizeof(out->name));
	out->up = c->state == CONN_UP;
	memcpy(out->version, c->version, sizeof(out->version));
	out->fails = c->fails;
	out->last_err = c->last_err;
	memcpy(out->last_msg, c->last_msg, sizeof(out->last_msg));
	out->rtt_ns = c->rtt_ns;
	for (i = 0; i < net->route.n; i++)
		out->ids += net->route.e[i].node == node;
	pthread_mutex_unlock(&net->lock);
	return 0;
}

int pohm_net_route_copy(struct pohm_net *net, struct pohm_route *out)
{
	int r = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&net->lock);
	if (net->route.n) {
		out->e = malloc(net->route.n * sizeof(*out->e));
		if (out->e) {
			memcpy(out->e, net->route.e, net->route.n * sizeof(*out->e));
			out->n = out->cap = net->route.n;
		} else {
			r = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&net->lock);
	return r;
}

void pohm_net_last_error(struct pohm_net *net, char *buf, size_t len)
{
	pthread_mutex_lock(&net->lock);
	snprintf(buf, len, "%s", net->last_msg);
	pthread_mutex_unlock(&net->lock);
}
