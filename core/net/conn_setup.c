/*
 * conn_setup.c — bringing nodes up and keeping the route table current:
 * parallel connect with a timeout, the version handshake (REVERSE_LOOKUP,
 * PROTOCOL.md §3.1, §10.1), optional AUTH, the BACKEND_STATUS keepalive
 * ping, ROUTE_LIST discovery and refresh, and a probe that names the
 * server's protocol line after a version mismatch.
 *
 * Sections: requests · handshake replies · connecting · ping · prepare ·
 * refresh · version probe.  Locking as in conn.h; every function here is
 * entered without net->lock unless it says otherwise.
 */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys.h"

#define SETUP_MIN_NS 100000000ULL	/* connect + handshake get at least 100 ms */

static const int32_t version_3_0[4] = { 3, 0, 0, 1 };
static const int32_t version_2_26[4] = { 2, 26, 11, 1 };

static int version_probe(const struct pohm_addr *a, const int32_t v[4], uint64_t deadline,
			 int32_t out[4]);

static const int32_t *our_version(const struct pohm_net *net)
{
	return net->cfg->protocol == POHM_PROTO_2_26 ? version_2_26 : version_3_0;
}

static struct pohm_conn *conn_of(struct pohm_net *net, int node)
{
	return node >= 0 && node < net->nconns ? net->conns[node] : NULL;
}

/* ---------------------------------------------------------------- requests */

static int apply_handshake(struct pohm_net *net, struct pohm_conn *c, const struct pohm_req *r,
			   struct pohm_route *into, char *msg, size_t len);

/* on_reply hook: take the handshake when it arrives, before any push behind it. */
static int handshake_hook(struct pohm_net *net, struct pohm_conn *c, struct pohm_req *r)
{
	char msg[sizeof(c->last_msg)];
	int rc = apply_handshake(net, c, r, &net->route, msg, sizeof(msg));

	if (rc)
		memcpy(c->last_msg, msg, sizeof(msg));	/* read back by the caller */
	return rc;
}

/* A digest of node's entries in r (their order is the table's). Lock held. */
static uint64_t node_routes_hash(const struct pohm_route *r, int node)
{
	uint64_t h = POHM_FNV_BASIS;
	size_t i, k;

	for (i = 0; i < r->n; i++) {
		const struct pohm_route_entry *e = &r->e[i];

		if (e->node != node)
			continue;
		for (k = 0; k < POHM_ID_SIZE; k++)
			h = pohm_fnv1a_step(h, e->id[k]);
		for (k = 0; k < 4; k++) {
			h = pohm_fnv1a_step(h, (uint8_t)(e->group >> (8 * k)));
			h = pohm_fnv1a_step(h, (uint8_t)((uint32_t)e->backend >> (8 * k)));
		}
	}
	return h;
}

/*
 * on_reply hook of a handshake nobody waits for (connect_nodes, detached):
 * the node is up already; its reply checks the version, or fails the
 * connection and every request sent behind it.  Its backends are compared
 * with the file's, not applied: a table half the file's and half the
 * nodes' could leave a group with no owner (-ENXIO, no request at all),
 * while a wrong whole table is only refused (-95, a full refresh and a
 * retry).  A difference makes the next refresh a full one, which writes
 * the file anew.
 */
static int handshake_detached_hook(struct pohm_net *net, struct pohm_conn *c, struct pohm_req *r)
{
	struct pohm_route theirs = POHM_ROUTE_INIT;
	char msg[sizeof(c->last_msg)];
	int rc = apply_handshake(net, c, r, &theirs, msg, sizeof(msg));

	if (rc) {
		pohm_route_free(&theirs);
		pohm_conn_fail(net, c, rc, msg);
		return rc;
	}
	if (node_routes_hash(&theirs, c->idx) != node_routes_hash(&net->route, c->idx)) {
		pohm_info("node %s: its backends differ from %s: a full refresh", c->name,
			  net->route_path);
		net->refresh_due = 1;
	}
	pohm_route_free(&theirs);
	c->handshake_ok = 1;
	pohm_info("node %s: connected, protocol %d.%d.%d.%d (handshake sent ahead)", c->name,
		  c->version[0], c->version[1], c->version[2], c->version[3]);
	return 0;
}

static void handshake_req(struct pohm_req *r, int node, const int32_t v[4])
{
	/* No NEED_ACK: the reply has no MORE, an ack would trail it (§3.1). */
	pohm_req_init(r, node, POHM_CMD_REVERSE_LOOKUP, POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
	pohm_version_encode(r->cmd.id.id, v);
	r->on_reply = handshake_hook;
}

/* BACKEND_STATUS with the "change nothing" sentinels: a ping that cannot harm. */
static const uint8_t ping_payload[POHM_NODE_STATUS_SIZE] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

static void ping_req(struct pohm_req *r, int node)
{
	pohm_req_init(r, node, POHM_CMD_BACKEND_STATUS,
		      POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
	r->p1 = ping_payload;
	r->n1 = sizeof(ping_payload);
}

/* ---------------------------------------------------------------- handshake replies */

/*
 * Take a handshake reply for c: check the version, learn which of its
 * addresses we dialled, replace its route entries in into.  0 or -errno with a
 * message.  Lock held.
 */
static int apply_handshake(struct pohm_net *net, struct pohm_conn *c, const struct pohm_req *r,
			   struct pohm_route *into, char *msg, size_t len)
{
	const struct pohm_pkt *p = pohm_req_final(r);
	const int32_t *our = our_version(net);
	struct pohm_addr_list addrs;
	const uint8_t *ids;
	size_t idslen;
	int32_t v[4];
	uint32_t i;
	int rc;

	if (!p || p->cmd.cmd != POHM_CMD_REVERSE_LOOKUP) {
		snprintf(msg, len, "unexpected reply to the handshake");
		return -EPROTO;
	}
	pohm_version_decode(v, p->cmd.id.id);
	if (v[0] != our[0] || v[1] != our[1]) {
		snprintf(msg, len, "node speaks protocol %d.%d.%d.%d, we speak %d.%d (set protocol=%d.%d)",
			 v[0], v[1], v[2], v[3], our[0], our[1], v[0], v[1]);
		return -EPROTO;
	}
	rc = pohm_route_parse_handshake(p->data, (size_t)p->cmd.size, &addrs, &ids, &idslen);
	if (!rc) {
		for (i = 0; i < addrs.count; i++) {
			struct pohm_addr a;

			if (!pohm_addr_list_get(&addrs, i, &a) && pohm_addr_equal(&a, &c->addr)) {
				net->dial_idx = i;
				break;
			}
		}
		rc = pohm_route_apply_ids(into, c->idx, ids, idslen, 1);
	}
	if (rc) {
		snprintf(msg, len, "malformed handshake reply (%s)", strerror(-rc));
		return rc;
	}
	memcpy(c->version, v, sizeof(c->version));
	return 0;
}

/* ---------------------------------------------------------------- connecting */

static int any_connecting(struct pohm_net *net, const int *nodes, size_t k)
{
	size_t i;

	for (i = 0; i < k; i++) {
		struct pohm_conn *c = conn_of(net, nodes[i]);

		if (c && c->state == CONN_CONNECTING)
			return 1;
	}
	return 0;
}

/* TCP connect of every conn in cs at once, bounded by deadline. errs[i] = 0 or -errno. */
static void tcp_connect_all(struct pohm_conn **cs, int *fds, int *errs, size_t m, uint64_t deadline)
{
	struct pollfd pfd[POHM_MAX_NODES];
	size_t idx[POHM_MAX_NODES], i, np;

	for (i = 0; i < m; i++) {
		fds[i] = pohm_sock_connect_start(&cs[i]->addr);
		errs[i] = fds[i] < 0 ? fds[i] : 1;	/* 1 = still connecting */
	}
	for (;;) {
		uint64_t t = pohm_sys_mono_ns();

		for (i = 0, np = 0; i < m; i++)
			if (errs[i] == 1) {
				pfd[np].fd = fds[i];
				pfd[np].events = POLLOUT;
				pfd[np].revents = 0;
				idx[np++] = i;
			}
		if (!np)
			break;
		if (t >= deadline) {
			for (i = 0; i < np; i++)
				errs[idx[i]] = -ETIMEDOUT;
			break;
		}
		if (pohm_sock_poll(pfd, (unsigned)np, deadline - t) < 0)
			continue;
		for (i = 0; i < np; i++)
			if (pfd[i].revents)
				errs[idx[i]] = pohm_sock_connect_finish(fds[idx[i]]);
	}
}

/* c is open for requests, its failures forgotten. Lock held. */
static void mark_up(struct pohm_conn *c, int handshake_ok)
{
	c->state = CONN_UP;
	c->handshake_ok = handshake_ok;
	c->fails = 0;
	c->stalls = 0;
	c->last_err = 0;
	c->last_msg[0] = 0;
}

/*
 * The connected nodes of a detached connect: up at once, their handshake
 * sent and not waited for (handshake_detached_hook takes its reply; one
 * still unanswered budget ns after it went out fails its node,
 * lead_round).  Lock held.
 */
static void start_detached(struct pohm_net *net, struct pohm_conn **cs, const int *errs, size_t m,
			   uint64_t budget)
{
	size_t i;

	for (i = 0; i < m; i++) {
		struct pohm_conn *c = cs[i];

		if (errs[i] || c->state != CONN_CONNECTING || c->fd < 0)
			continue;
		pohm_req_release(&c->hs);
		handshake_req(&c->hs, c->idx, our_version(net));
		c->hs.on_reply = handshake_detached_hook;
		mark_up(c, 0);
		pohm_conn_send_detached(net, c, &c->hs, budget);
	}
}

/*
 * Connect and handshake (and authenticate) the given nodes in parallel:
 * those down whose backoff has expired.  On success they are CONN_UP with
 * their backends in the route table; on failure down with a message.
 * detached (a table from the route file, no auth_cookie): up once TCP
 * connected, the handshake sent ahead of the requests and not waited for
 * (decision 0074; Elliptics serves requests without it, PROTOCOL.md §3.1).
 */
static void connect_nodes(struct pohm_net *net, const int *nodes, size_t k, uint64_t deadline,
			  int detached)
{
	struct pohm_conn *cs[POHM_MAX_NODES];
	int fds[POHM_MAX_NODES], errs[POHM_MAX_NODES], mismatch[POHM_MAX_NODES];
	struct pohm_req *reqs = NULL, *ptrs[POHM_MAX_NODES];
	uint8_t auth[POHM_AUTH_SIZE];
	char msg[160];
	size_t m = 0, i, j, nr;
	uint64_t t = pohm_sys_mono_ns(), budget = net->cfg->read_wait_timeout_ns / 4;

	/* A node that accepts but never answers must not eat the caller's whole
	 * deadline: connect + handshake get a quarter of read_wait_timeout. */
	if (budget < SETUP_MIN_NS)
		budget = SETUP_MIN_NS;
	if (t + budget < deadline)
		deadline = t + budget;
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < k; i++) {
		struct pohm_conn *c = conn_of(net, nodes[i]);

		if (!c || c->state != CONN_DOWN || c->fd >= 0 || c->retry_at_ns > t)
			continue;
		for (j = 0; j < m && cs[j] != c; j++)
			;
		if (j == m) {
			c->state = CONN_CONNECTING;
			cs[m++] = c;
		}
	}
	pthread_mutex_unlock(&net->lock);
	if (!m)
		return;

	tcp_connect_all(cs, fds, errs, m, deadline);

	pthread_mutex_lock(&net->lock);
	for (i = 0; i < m; i++) {
		mismatch[i] = 0;
		if (errs[i]) {
			if (fds[i] >= 0)
				pohm_sys_close(fds[i]);
			snprintf(msg, sizeof(msg), "connect: %s", strerror(-errs[i]));
			pohm_conn_fail(net, cs[i], errs[i], msg);
			continue;
		}
		pohm_own_set(&cs[i]->fd, fds[i]);
		cs[i]->last_rx_ns = cs[i]->last_tx_ns = pohm_sys_mono_ns();
	}
	pohm_net_poke(net);
	if (detached) {
		/* Answered within the budget a waited-for handshake gets. */
		start_detached(net, cs, errs, m, budget);
		pthread_cond_broadcast(&net->conncv);
		pthread_mutex_unlock(&net->lock);
		return;
	}
	pthread_mutex_unlock(&net->lock);

	reqs = calloc(m, sizeof(*reqs));
	if (!reqs) {
		pthread_mutex_lock(&net->lock);
		for (i = 0; i < m; i++)
			if (!errs[i])
				pohm_conn_fail(net, cs[i], -ENOMEM, NULL);
		pthread_mutex_unlock(&net->lock);
		return;
	}

	/* Version handshake on every connected socket at once. */
	for (i = 0, nr = 0; i < m; i++)
		if (!errs[i]) {
			handshake_req(&reqs[i], cs[i]->idx, our_version(net));
			ptrs[nr++] = &reqs[i];
		}
	pohm_net_run_internal(net, ptrs, nr, deadline, NULL, NULL, 1);
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < m; i++) {
		struct pohm_req *r = &reqs[i];
		const int32_t *v = our_version(net);
		int rc;

		if (errs[i])
			continue;
		if (!r->status && cs[i]->state == CONN_CONNECTING)
			continue;
		if (r->status == -ECONNRESET && !r->replies) {
			/* EOF right after our version: the server refused it (§3.1, §10). */
			rc = -EPROTO;
			mismatch[i] = 1;
			snprintf(msg, sizeof(msg), "server refused protocol %d.%d (version mismatch)",
				 v[0], v[1]);
		} else if (r->status == -ETIMEDOUT) {
			rc = -ETIMEDOUT;
			snprintf(msg, sizeof(msg), "no answer to the version handshake in time");
		} else if (r->status == -EPROTO || r->status == -ENOMEM) {
			rc = r->status;
			memcpy(msg, cs[i]->last_msg, sizeof(msg));	/* from handshake_hook */
		} else {
			rc = r->status ? r->status : -ECONNRESET;
			snprintf(msg, sizeof(msg), "handshake failed: %s", strerror(-rc));
		}
		errs[i] = rc;
		if (cs[i]->state != CONN_DOWN) {
			pohm_conn_fail(net, cs[i], rc, msg);
		} else {
			/* Already failed by the reader (EOF): keep the better explanation. */
			cs[i]->last_err = rc;
			memcpy(cs[i]->last_msg, msg, sizeof(cs[i]->last_msg));
		}
	}
	pthread_mutex_unlock(&net->lock);
	for (i = 0; i < m; i++)
		pohm_req_release(&reqs[i]);

	/* Optional AUTH (real Elliptics never requires it; our node can). */
	if (net->cfg->auth_cookie[0]) {
		struct pohm_auth a;

		memset(&a, 0, sizeof(a));
		pohm_auth_cookie_from_string(a.cookie, net->cfg->auth_cookie);
		pohm_auth_encode(auth, &a);
		for (i = 0, nr = 0; i < m; i++)
			if (!errs[i]) {
				pohm_req_init(&reqs[i], cs[i]->idx, POHM_CMD_AUTH,
					      POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
				reqs[i].p1 = auth;
				reqs[i].n1 = sizeof(auth);
				ptrs[nr++] = &reqs[i];
			}
		pohm_net_run_internal(net, ptrs, nr, deadline, NULL, NULL, 1);
		pthread_mutex_lock(&net->lock);
		for (i = 0; i < m; i++) {
			if (errs[i] || cs[i]->state != CONN_CONNECTING)
				continue;
			if (reqs[i].status) {
				errs[i] = reqs[i].status;
				if (reqs[i].status == -EPERM)
					snprintf(msg, sizeof(msg), "auth_cookie rejected by the node");
				else
					snprintf(msg, sizeof(msg), "AUTH failed: %s",
						 strerror(-reqs[i].status));
				pohm_conn_fail(net, cs[i], reqs[i].status, msg);
			}
		}
		pthread_mutex_unlock(&net->lock);
		for (i = 0; i < m; i++)
			pohm_req_release(&reqs[i]);
	}

	pthread_mutex_lock(&net->lock);
	for (i = 0; i < m; i++) {
		struct pohm_conn *c = cs[i];

		if (errs[i] || c->state != CONN_CONNECTING || c->fd < 0)
			continue;
		mark_up(c, 1);
		pohm_info("node %s: connected, protocol %d.%d.%d.%d", c->name, c->version[0],
			  c->version[1], c->version[2], c->version[3]);
	}
	/* A node still marked connecting here lost its socket on the way. */
	for (i = 0; i < m; i++)
		if (cs[i]->state == CONN_CONNECTING)
			pohm_conn_fail(net, cs[i], errs[i] ? errs[i] : -ECONNRESET, NULL);
	pthread_cond_broadcast(&net->conncv);
	pthread_mutex_unlock(&net->lock);
	free(reqs);

	/* Name the server's protocol line after a refusal (a fresh connection each). */
	for (i = 0; i < m; i++) {
		const int32_t *other = net->cfg->protocol == POHM_PROTO_2_26 ? version_3_0 : version_2_26;
		int32_t got[4];
		uint64_t until = pohm_sys_mono_ns() + 1000000000ULL;

		if (!mismatch[i])
			continue;
		if (until > deadline)
			until = deadline;
		if (version_probe(&cs[i]->addr, other, until, got))
			continue;
		pthread_mutex_lock(&net->lock);
		snprintf(msg, sizeof(msg), "server refused protocol %d.%d (version mismatch): "
			 "the node speaks %d.%d.%d.%d, set protocol=%d.%d",
			 our_version(net)[0], our_version(net)[1], got[0], got[1], got[2], got[3],
			 got[0], got[1]);
		memcpy(cs[i]->last_msg, msg, sizeof(cs[i]->last_msg));
		pthread_mutex_unlock(&net->lock);
	}
}

/* ---------------------------------------------------------------- ping */

/* Ping nodes; a node that does not answer at all is failed. Count answered. */
static int ping_nodes(struct pohm_net *net, const int *nodes, size_t k, uint64_t deadline)
{
	struct pohm_req *reqs = calloc(k ? k : 1, sizeof(*reqs));
	struct pohm_req *ptrs[POHM_MAX_NODES];
	size_t i;
	int ok = 0;

	if (!reqs)
		return -ENOMEM;
	for (i = 0; i < k; i++) {
		ping_req(&reqs[i], nodes[i]);
		ptrs[i] = &reqs[i];
	}
	pohm_net_run_internal(net, ptrs, k, deadline, NULL, NULL, 0);
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < k; i++) {
		struct pohm_conn *c = conn_of(net, nodes[i]);

		if (reqs[i].replies) {
			ok++;
			if (c)
				c->rtt_ns = reqs[i].done_ns - reqs[i].sent_ns;
		} else if (c && c->state == CONN_UP) {
			pohm_conn_fail(net, c, reqs[i].status ? reqs[i].status : -EIO,
				       "no answer to the keepalive ping");
		}
		pohm_req_release(&reqs[i]);
	}
	pthread_mutex_unlock(&net->lock);
	free(reqs);
	return ok;
}

int pohm_net_ping_all(struct pohm_net *net, uint64_t deadline)
{
	int nodes[POHM_MAX_NODES];
	size_t k = 0;
	int i;

	pohm_net_fork_check(net);
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < net->nconns; i++)
		if (net->conns[i]->state == CONN_UP)
			nodes[k++] = i;
	pthread_mutex_unlock(&net->lock);
	return k ? ping_nodes(net, nodes, k, deadline) : 0;
}

/* ---------------------------------------------------------------- prepare */

void pohm_net_prepare(struct pohm_net *net, struct pohm_req **reqs, size_t n, uint64_t deadline)
{
	int conn_list[POHM_MAX_NODES], ping_list[POHM_MAX_NODES], wait_list[POHM_MAX_NODES];
	unsigned char seen[POHM_MAX_NODES];
	size_t nc = 0, np = 0, nw = 0, i;
	uint64_t ka = net->cfg->keepalive_interval_ns, t = pohm_sys_mono_ns();

	memset(seen, 0, sizeof(seen));
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < n; i++) {
		int node = reqs[i]->node;
		struct pohm_conn *c = conn_of(net, node);
		uint64_t last;

		if (!c || seen[node])
			continue;
		seen[node] = 1;
		last = c->last_rx_ns > c->last_tx_ns ? c->last_rx_ns : c->last_tx_ns;
		if (c->state == CONN_DOWN && c->fd < 0 && c->retry_at_ns <= t)
			conn_list[nc++] = node;
		else if (c->state == CONN_UP && ka && !c->inflight && t - last >= ka)
			ping_list[np++] = node;
		else if (c->state == CONN_CONNECTING)
			wait_list[nw++] = node;
	}
	pthread_mutex_unlock(&net->lock);
	if (np) {
		ping_nodes(net, ping_list, np, deadline);
		/* A dead idle connection is replaced now rather than failing the request. */
		pthread_mutex_lock(&net->lock);
		for (i = 0; i < np; i++) {
			struct pohm_conn *c = conn_of(net, ping_list[i]);

			if (c->state == CONN_DOWN)
				conn_list[nc++] = ping_list[i];
		}
		pthread_mutex_unlock(&net->lock);
	}
	if (nc)
		connect_nodes(net, conn_list, nc, deadline, 0);
	if (nw) {
		pthread_mutex_lock(&net->lock);
		while (any_connecting(net, wait_list, nw) && pohm_sys_mono_ns() < deadline)
			pthread_cond_timedwait(&net->conncv, &net->lock, &(struct timespec){
				.tv_sec = (time_t)(deadline / 1000000000ULL),
				.tv_nsec = (long)(deadline % 1000000000ULL) });
		pthread_mutex_unlock(&net->lock);
	}
}

/* ---------------------------------------------------------------- refresh */

/* Ask every up node (not just connected) for its backends again. */
static void rehandshake(struct pohm_net *net, const int *nodes, size_t k, uint64_t deadline)
{
	struct pohm_req *reqs = calloc(k ? k : 1, sizeof(*reqs)), *ptrs[POHM_MAX_NODES];
	char msg[160];
	size_t i;

	if (!reqs)
		return;
	for (i = 0; i < k; i++) {
		handshake_req(&reqs[i], nodes[i], our_version(net));
		ptrs[i] = &reqs[i];
	}
	pohm_net_run_internal(net, ptrs, k, deadline, NULL, NULL, 0);
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < k; i++) {
		struct pohm_conn *c = conn_of(net, nodes[i]);

		if ((reqs[i].status == -EPROTO || reqs[i].status == -ENOMEM) && c->state == CONN_UP) {
			memcpy(msg, c->last_msg, sizeof(msg));
			pohm_conn_fail(net, c, reqs[i].status, msg);
		}
		pohm_req_release(&reqs[i]);
	}
	pthread_mutex_unlock(&net->lock);
	free(reqs);
}

/* ROUTE_LIST from one up node; new nodes are added and connected. */
static void route_list(struct pohm_net *net, uint64_t deadline)
{
	int tries = 0, i, nnew = 0, fresh[POHM_MAX_NODES];

	for (i = 0; tries < 3; i++) {
		struct pohm_req r, *rp = &r;
		const struct pohm_pkt *p;
		struct pohm_addr_list l;
		uint32_t nodes, b;
		int node = -1, j;

		pthread_mutex_lock(&net->lock);
		/* Seeds first, then any node, skipping the ones already tried. */
		for (j = 0; j < net->nconns && node < 0; j++)
			if (net->conns[j]->state == CONN_UP && net->conns[j]->seed && j >= i)
				node = j;
		for (j = i; j < net->nconns && node < 0; j++)
			if (net->conns[j]->state == CONN_UP)
				node = j;
		pthread_mutex_unlock(&net->lock);
		if (node < 0)
			break;
		i = node;
		tries++;
		pohm_req_init(&r, node, POHM_CMD_ROUTE_LIST,
			      POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK);
		pohm_net_run_internal(net, &rp, 1, deadline, NULL, NULL, 0);
		for (p = r.replies; p && !p->cmd.size; p = p->next)
			;
		if (r.status || !p || pohm_route_parse_list(p->data, (size_t)p->cmd.size, &l, &nodes)) {
			pohm_warn("ROUTE_LIST from node %d failed: %s", node,
				  r.status ? strerror(-r.status) : "malformed reply");
			pohm_req_release(&r);
			continue;
		}
		pthread_mutex_lock(&net->lock);
		for (j = 0; j < net->nconns; j++)
			net->conns[j]->listed = 0;
		for (b = 0; b < nodes; b++) {
			struct pohm_addr a;
			int before = net->nconns, idx;

			if (pohm_route_list_addr(&l, b, net->dial_idx, &a))
				continue;
			idx = pohm_net_node_add(net, &a, 0);
			if (idx < 0)
				continue;
			net->conns[idx]->listed = 1;
			if (idx >= before)
				fresh[nnew++] = idx;
		}
		pthread_mutex_unlock(&net->lock);
		pohm_req_release(&r);
		break;
	}
	if (nnew)
		connect_nodes(net, fresh, (size_t)nnew, deadline, 0);
}

static int count_up(struct pohm_net *net)
{
	int i, up = 0;

	for (i = 0; i < net->nconns; i++)
		up += net->conns[i]->state == CONN_UP;
	return up;
}

/* "no node reachable: a: why; b: why". Lock held. */
static void note_unreachable(struct pohm_net *net)
{
	size_t off;
	int i;

	off = (size_t)snprintf(net->last_msg, sizeof(net->last_msg), "no node reachable");
	for (i = 0; i < net->nconns && off < sizeof(net->last_msg); i++)
		off += (size_t)snprintf(net->last_msg + off, sizeof(net->last_msg) - off, "%s %s: %s",
					i ? ";" : ":", net->conns[i]->name,
					net->conns[i]->last_msg[0] ? net->conns[i]->last_msg :
					"not tried yet (backing off)");
}

/*
 * A first refresh from the route file (decision 0074): its nodes connected
 * in parallel, their handshakes sent ahead and not waited for, no
 * ROUTE_LIST.  Taken only when every node of the file connects; else its
 * routes are dropped and the caller goes on with a full refresh, which
 * asks the nodes connected here for their backends again.  1 when taken,
 * -1 when read but not taken, 0 when there is no fresh file.  Lock not held.
 */
static int refresh_from_file(struct pohm_net *net, uint64_t deadline)
{
	int nodes[POHM_MAX_NODES] = { 0 };
	size_t k = 0;
	int i, ok;

	if (net->cfg->auth_cookie[0] || pohm_routefile_load(net, our_version(net)))
		return 0;
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < net->nconns; i++)
		if (net->conns[i]->listed)
			nodes[k++] = i;
	net->refresh_due = 0;
	pthread_mutex_unlock(&net->lock);
	connect_nodes(net, nodes, k, deadline, 1);
	pthread_mutex_lock(&net->lock);
	ok = !net->refresh_due;
	for (i = 0; i < (int)k && ok; i++)
		ok = net->conns[nodes[i]]->state == CONN_UP;
	if (!ok) {
		pohm_route_free(&net->route);	/* empty before the file's */
		for (i = 0; i < net->nconns; i++)
			net->conns[i]->listed = 0;
	}
	pthread_mutex_unlock(&net->lock);
	return ok ? 1 : -1;
}

int pohm_net_refresh(struct pohm_net *net, uint64_t deadline, int force)
{
	int all[POHM_MAX_NODES] = { 0 }, up[POHM_MAX_NODES] = { 0 };
	size_t nall = 0, nup = 0;
	uint64_t t;
	int i, r, first, from_file = 0, ask;

	pohm_net_fork_check(net);
	pthread_mutex_lock(&net->lock);
	while (net->refreshing && pohm_sys_mono_ns() < deadline)
		pthread_cond_timedwait(&net->conncv, &net->lock, &(struct timespec){
			.tv_sec = (time_t)(deadline / 1000000000ULL),
			.tv_nsec = (long)(deadline % 1000000000ULL) });
	t = pohm_sys_mono_ns();
	/* A node failed since a table from the file was taken: the file may be
	 * what is wrong, so the full refresh comes at once, not a second later. */
	if (net->refreshing ||
	    (net->bootstrapped && !force && count_up(net) &&
	     !(net->refresh_due && (net->routes_cached || t - net->last_refresh_ns >= 1000000000ULL)))) {
		r = count_up(net) ? 0 : -ETIMEDOUT;
		pthread_mutex_unlock(&net->lock);
		return r;
	}
	net->refreshing = 1;
	first = !net->bootstrapped && !force && !net->route.n;
	pthread_mutex_unlock(&net->lock);

	if (first && net->route_path[0])
		from_file = refresh_from_file(net, deadline);
	if (from_file > 0) {
		pthread_mutex_lock(&net->lock);
		net->routes_cached = 1;
		goto done;
	}

	pthread_mutex_lock(&net->lock);
	net->refresh_due = 0;
	/* Backends the nodes never told this process (the file's) are asked for. */
	ask = force || from_file < 0 || net->routes_cached;
	for (i = 0; i < net->nconns; i++) {
		all[nall++] = i;
		if (net->conns[i]->state == CONN_UP)
			up[nup++] = i;
	}
	pthread_mutex_unlock(&net->lock);

	connect_nodes(net, all, nall, deadline, 0);
	if (ask && nup)
		rehandshake(net, up, nup, deadline);
	route_list(net, deadline);
	pohm_routefile_save(net);

	pthread_mutex_lock(&net->lock);
	net->routes_cached = 0;
done:
	net->bootstrapped = 1;
	net->last_refresh_ns = pohm_sys_mono_ns();
	net->refreshing = 0;
	pthread_cond_broadcast(&net->conncv);
	if (count_up(net)) {
		net->last_msg[0] = 0;
		r = 0;
	} else {
		note_unreachable(net);
		r = -EHOSTUNREACH;
	}
	pthread_mutex_unlock(&net->lock);
	return r;
}

/* ---------------------------------------------------------------- version probe */

/* Read exactly n bytes from a non-blocking fd before deadline. 0 or -errno. */
static int read_until(int fd, uint8_t *p, size_t n, uint64_t deadline)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t t = pohm_sys_mono_ns();
		ssize_t r;

		if (t >= deadline)
			return -ETIMEDOUT;
		if (pohm_sock_poll(&pfd, 1, deadline - t) <= 0)
			continue;
		r = pohm_sys_read(fd, p + got, n - got);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0 && r != -EAGAIN)
			return (int)r;
		if (r > 0)
			got += (size_t)r;
	}
	return 0;
}

/* Handshake once with version v on a fresh socket; the server's version in out. 0 or -errno. */
static int version_probe(const struct pohm_addr *a, const int32_t v[4], uint64_t deadline,
			 int32_t out[4])
{
	struct pohm_conn tmp, *cs = &tmp;
	uint8_t hdr[POHM_CMD_SIZE];
	struct pohm_cmd c;
	struct iovec iov;
	int fd, err, r;

	memset(&tmp, 0, sizeof(tmp));
	tmp.addr = *a;
	tcp_connect_all(&cs, &fd, &err, 1, deadline);
	if (err) {
		if (fd >= 0)
			pohm_sys_close(fd);
		return err;
	}
	memset(&c, 0, sizeof(c));
	c.cmd = POHM_CMD_REVERSE_LOOKUP;
	c.flags = POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK;
	c.trans = 1;
	pohm_version_encode(c.id.id, v);
	pohm_cmd_encode(hdr, &c);
	iov.iov_base = hdr;
	iov.iov_len = sizeof(hdr);
	r = pohm_sock_sendv(fd, &iov, 1) == (ssize_t)sizeof(hdr) ? 0 : -EIO;
	if (!r)
		r = read_until(fd, hdr, sizeof(hdr), deadline);
	if (!r) {
		pohm_cmd_decode(&c, hdr);
		if (pohm_cmd_is_reply(&c) && c.cmd == POHM_CMD_REVERSE_LOOKUP && !c.status)
			pohm_version_decode(out, c.id.id);
		else
			r = -EPROTO;
	}
	pohm_sys_close(fd);
	return r;
}
