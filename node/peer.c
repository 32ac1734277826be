/*
 * peer.c — links to the other nodes of the cluster.
 *
 * Every node keeps one outbound connection to every node it has heard of
 * (from --join, a JOIN it received, or a ROUTE_LIST reply).  A link does
 * what a client does — REVERSE_LOOKUP, (AUTH), then JOIN with our own
 * addresses and ids so that the other side dials us back, and ROUTE_LIST
 * every second (gossip) — and puts the peer's backends into the ring.
 * When the link breaks, the peer leaves the ring (its keys fall to its
 * ring neighbours, as in Elliptics) and is redialled every half second.
 *
 * Forwarding (§3.6): a request for a key another node owns, sent without
 * DIRECT, goes out on that node's link with a link-local trans (and
 * DIRECT|NEED_ACK, so tables that disagree can never bounce it around);
 * the replies come back on the link and are relayed to the client with its
 * own trans and flags REPLY(|MORE) (§10.10).
 *
 * Locking: peers.lock guards the peer array and each peer's fd, up flag,
 * trans counter and pending forwards.  peer.wlock serialises sends on the
 * link; it is taken before peers.lock, never after.  A link's fd is closed
 * only under its wlock after fd was set to -1, so a sender never writes to
 * a recycled descriptor.  Peers are never freed (a handful per cluster).
 */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"
#include "ring.h"
#include "node_wire.h"

#define PEER_MAX		1024
#define PEER_INTERNAL		(1ULL << 62)	/* trans of our own requests on a link */
#define PEER_T_HANDSHAKE	(PEER_INTERNAL | 1)
#define PEER_T_AUTH		(PEER_INTERNAL | 2)
#define PEER_T_JOIN		(PEER_INTERNAL | 3)
#define PEER_T_ROUTES		(PEER_INTERNAL | 4)
#define PEER_RETRY_NS		500000000ull
#define PEER_GOSSIP_NS		1000000000ull
#define PEER_FWD_TTL_NS		120000000000ull	/* forget a forward after 2 minutes */
#define PEER_HANDSHAKE_MS	5000

struct fwd {
	uint64_t ptrans;		/* trans on the link */
	struct node_conn *client;	/* holds a reference */
	uint64_t ctrans;		/* the client's trans */
	struct pohm_id id;		/* the request's id and cmd, for an error ack */
	int32_t cmd;
	int want_ack;			/* the client set NEED_ACK */
	uint64_t born;			/* mono ns */
	struct fwd *next;
};

struct peer {
	struct pohm_addr addr;		/* where we dial (the advertised address) */
	int fd;				/* -1 while down */
	int connecting;			/* a link thread is dialling */
	int up;				/* handshake done, in the ring */
	int is_self;			/* the address turned out to be us */
	uint64_t last_try;		/* mono ns of the last dial */
	uint64_t next_trans;
	struct fwd *fwd;		/* pending forwards */
	pthread_mutex_t wlock;		/* serialises sends on fd */
};

struct node_peers {
	struct node *n;
	pthread_mutex_t lock;		/* see the file comment */
	pthread_cond_t kick;
	struct peer *p[PEER_MAX];
	unsigned np;
	struct pohm_buf join;		/* our JOIN payload, built once */
};

struct link_arg {
	struct node_peers *ps;
	struct peer *p;
};

/* ---------------------------------------------------------------- helpers */

static struct peer *find_peer(struct node_peers *ps, const struct pohm_addr *a)
{
	unsigned i;

	for (i = 0; i < ps->np; i++)
		if (pohm_addr_equal(&ps->p[i]->addr, a))
			return ps->p[i];
	return NULL;
}

/* Send a header-only (or small) request on a link; wlock is taken here. */
static int link_send(struct node_peers *ps, struct peer *p, struct pohm_cmd *h,
		     const struct iovec *iov, int iovcnt)
{
	int fd, ret;

	pthread_mutex_lock(&p->wlock);
	pthread_mutex_lock(&ps->lock);
	fd = p->fd;
	pthread_mutex_unlock(&ps->lock);
	ret = fd < 0 ? -ENOTCONN : node_wire_send(fd, h, iov, iovcnt);
	pthread_mutex_unlock(&p->wlock);
	return ret;
}

/* A header-only request of our own on a link. */
static void request_hdr(struct pohm_cmd *h, int32_t cmd, uint64_t flags, uint64_t trans,
			uint64_t size)
{
	memset(h, 0, sizeof(*h));
	h->cmd = cmd;
	h->flags = flags;
	h->trans = trans;
	h->size = size;
}

/* Relay one reply that came back on a link to the client of the forward. */
static void relay(struct node_peers *ps, struct peer *p, const struct pohm_cmd *c,
		  const uint8_t *payload)
{
	int final = !(c->flags & POHM_FLAG_MORE);
	struct fwd *f, **pp;
	struct pohm_cmd h;
	struct iovec iov;

	pthread_mutex_lock(&ps->lock);
	for (pp = &p->fwd; (f = *pp); pp = &f->next)
		if (f->ptrans == c->trans)
			break;
	if (f && final)
		*pp = f->next;
	pthread_mutex_unlock(&ps->lock);
	if (!f)
		return;			/* expired or unknown */
	h = *c;
	h.trans = f->ctrans;
	h.flags = POHM_FLAG_REPLY | (c->flags & POHM_FLAG_MORE);
	/* We forced NEED_ACK on the link; a client that did not ask gets no bare ack. */
	if (!(final && !f->want_ack && !c->size && !c->status)) {
		iov.iov_base = (void *)payload;
		iov.iov_len = (size_t)c->size;
		node_conn_send(f->client, &h, &iov, 1);
	}
	if (final) {
		node_conn_put(f->client);
		free(f);
	}
}

/* Fail every pending forward of a link that went down. */
static void fail_forwards(struct fwd *list)
{
	while (list) {
		struct fwd *f = list;
		struct pohm_cmd h;

		list = f->next;
		memset(&h, 0, sizeof(h));
		h.id = f->id;
		h.cmd = f->cmd;
		h.status = -ENXIO;
		h.trans = f->ctrans;
		h.flags = POHM_FLAG_REPLY;
		node_conn_send(f->client, &h, NULL, 0);
		node_conn_put(f->client);
		free(f);
	}
}

/* A ROUTE_LIST reply from a peer: dial every node we did not know. */
static void learn_routes(struct node *n, const uint8_t *p, size_t len)
{
	struct pohm_addr_list l;
	struct pohm_addr a;
	uint32_t i;

	if (pohm_addr_list_decode(&l, NULL, p, len))
		return;
	for (i = 0; i < l.count; i += l.per_node)
		if (!pohm_addr_list_get(&l, i, &a))
			node_peers_learn(n, &a);
}

/*
 * Parse a handshake reply into the ring.  Returns 0, 1 if the peer is
 * ourselves, or -EPROTO.
 */
static int take_handshake(struct node *n, struct peer *p, const struct pohm_cmd *c,
			  const uint8_t *payload)
{
	struct pohm_backend_ids be[64];
	struct pohm_backend_iter it;
	struct pohm_addr_list l;
	struct pohm_addr adv;
	unsigned nbe = 0;
	size_t used;

	if (c->status || c->cmd != POHM_CMD_REVERSE_LOOKUP || !(c->flags & POHM_FLAG_REPLY) ||
	    pohm_addr_list_decode(&l, &used, payload, (size_t)c->size) ||
	    pohm_addr_list_get(&l, 0, &adv) ||
	    pohm_backends_begin(&it, payload + used, (size_t)c->size - used))
		return -EPROTO;
	if (pohm_addr_equal(&adv, &n->cfg.listen))
		return 1;
	if (!pohm_addr_equal(&adv, &p->addr)) {
		char a1[64], a2[64];

		pohm_addr_format(&adv, a1, sizeof(a1));
		pohm_addr_format(&p->addr, a2, sizeof(a2));
		pohm_warn("peer: %s advertises %s; using the address dialled", a2, a1);
	}
	while (nbe < 64 && pohm_backends_next(&it, &be[nbe]))
		if (!(be[nbe].flags & 1))
			nbe++;
	return node_ring_set(n->ring, &p->addr, be, nbe) ? -ENOMEM : 0;
}

/* ---------------------------------------------------------------- link */

static void link_down(struct node_peers *ps, struct peer *p, int fd)
{
	struct fwd *list;

	pthread_mutex_lock(&ps->lock);
	p->fd = -1;
	p->up = 0;
	p->connecting = 0;
	list = p->fwd;
	p->fwd = NULL;
	pthread_mutex_unlock(&ps->lock);
	pthread_mutex_lock(&p->wlock);
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&p->wlock);
	node_ring_remove(ps->n->ring, &p->addr);
	fail_forwards(list);
}

/* One link: dial, handshake, then relay replies until it breaks. */
static void *link_thread(void *arg)
{
	struct link_arg *la = arg;
	struct node_peers *ps = la->ps;
	struct peer *p = la->p;
	struct node *n = ps->n;
	struct node_rd *rd = NULL;
	struct timeval tv = { PEER_HANDSHAKE_MS / 1000, 0 };
	struct pohm_cmd h, c;
	uint8_t *payload = NULL;
	struct iovec iov;
	char name[64];
	int32_t v[4];
	int fd, r;

	free(la);
	pohm_addr_format(&p->addr, name, sizeof(name));
	fd = node_wire_connect(&p->addr, 1000);
	if (fd < 0) {
		link_down(ps, p, -1);
		return NULL;
	}
	rd = malloc(sizeof(*rd));
	if (!rd)
		goto down;
	rd->start = rd->end = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	request_hdr(&h, POHM_CMD_REVERSE_LOOKUP, POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK,
		    PEER_T_HANDSHAKE, 0);
	v[0] = n->cfg.proto_major;
	v[1] = n->cfg.proto_minor;
	v[2] = 0;
	v[3] = 1;
	pohm_version_encode(h.id.id, v);
	if (node_wire_send(fd, &h, NULL, 0))
		goto down;
	r = node_wire_read(fd, rd, n->cfg.max_packet, &c, &payload);
	if (r <= 0)
		goto down;
	r = take_handshake(n, p, &c, payload);
	free(payload);
	payload = NULL;
	if (r == 1) {
		pohm_info("peer: %s is this node; not linking", name);
		pthread_mutex_lock(&ps->lock);
		p->is_self = 1;
		pthread_mutex_unlock(&ps->lock);
		goto down;
	}
	if (r)
		goto down;
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (n->need_auth) {
		uint8_t a[POHM_AUTH_SIZE];
		struct pohm_auth au;

		memset(&au, 0, sizeof(au));
		memcpy(au.cookie, n->cookie, sizeof(au.cookie));
		pohm_auth_encode(a, &au);
		request_hdr(&h, POHM_CMD_AUTH, POHM_FLAG_DIRECT | POHM_FLAG_NEED_ACK, PEER_T_AUTH,
			    sizeof(a));
		iov.iov_base = a;
		iov.iov_len = sizeof(a);
		if (node_wire_send(fd, &h, &iov, 1))
			goto down;
	}
	request_hdr(&h, POHM_CMD_JOIN, POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK, PEER_T_JOIN,
		    ps->join.len);
	iov.iov_base = ps->join.p;
	iov.iov_len = ps->join.len;
	if (node_wire_send(fd, &h, &iov, 1))
		goto down;
	request_hdr(&h, POHM_CMD_ROUTE_LIST,
		    POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK | POHM_FLAG_NEED_ACK, PEER_T_ROUTES, 0);
	if (node_wire_send(fd, &h, NULL, 0))
		goto down;
	pthread_mutex_lock(&ps->lock);
	p->fd = fd;
	p->up = 1;
	p->connecting = 0;
	pthread_mutex_unlock(&ps->lock);
	pohm_info("peer: linked to %s", name);
	for (;;) {
		r = node_wire_read(fd, rd, n->cfg.max_packet, &c, &payload);
		if (r <= 0)
			break;
		if (c.trans & PEER_INTERNAL) {
			if (c.trans == PEER_T_ROUTES && !c.status)
				learn_routes(n, payload, (size_t)c.size);
			else if (c.status)
				pohm_warn("peer: %s answered %s with %d", name, pohm_cmd_name(c.cmd),
					  c.status);
		} else if (pohm_cmd_is_reply(&c)) {
			relay(ps, p, &c, payload);
		}
		free(payload);
		payload = NULL;
	}
	pohm_info("peer: link to %s went down (%d)", name, r);
	free(rd);
	link_down(ps, p, fd);
	return NULL;
down:
	free(payload);
	free(rd);
	link_down(ps, p, fd);		/* fd was never published: ours to close */
	return NULL;
}

/* Dial p on a detached link thread (peers.lock held). */
static void start_link(struct node_peers *ps, struct peer *p)
{
	struct link_arg *la = malloc(sizeof(*la));
	pthread_attr_t at;
	pthread_t t;

	if (!la)
		return;
	la->ps = ps;
	la->p = p;
	p->connecting = 1;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, link_thread, la)) {
		p->connecting = 0;
		free(la);
	}
	pthread_attr_destroy(&at);
}

/* ---------------------------------------------------------------- manager */

/* Drop forwards that never completed (their client gets nothing more). */
static void expire_forwards(struct peer *p, uint64_t now)
{
	struct fwd *f, **pp = &p->fwd;

	while ((f = *pp)) {
		if (now - f->born > PEER_FWD_TTL_NS) {
			*pp = f->next;
			node_conn_put(f->client);
			free(f);
		} else {
			pp = &f->next;
		}
	}
}

/* Redial links that are down, gossip ROUTE_LIST, expire forwards. */
static void *manager(void *arg)
{
	struct node_peers *ps = arg;
	uint64_t last_gossip = 0;

	pthread_mutex_lock(&ps->lock);
	for (;;) {
		struct timespec ts;
		uint64_t now;
		unsigned i;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ps->kick, &ps->lock, &ts);
		now = pohm_sys_mono_ns();
		for (i = 0; i < ps->np; i++) {
			struct peer *p = ps->p[i];

			if (p->is_self || p->connecting || p->fd >= 0)
				continue;
			if (p->last_try && now - p->last_try < PEER_RETRY_NS)
				continue;
			p->last_try = now;
			start_link(ps, p);
		}
		if (now - last_gossip >= PEER_GOSSIP_NS) {
			last_gossip = now;
			for (i = 0; i < ps->np; i++) {
				struct peer *p = ps->p[i];
				struct pohm_cmd h;

				expire_forwards(p, now);
				if (!p->up)
					continue;
				request_hdr(&h, POHM_CMD_ROUTE_LIST,
					    POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK | POHM_FLAG_NEED_ACK,
					    PEER_T_ROUTES, 0);
				/* link_send takes wlock then our lock: release ours meanwhile. */
				pthread_mutex_unlock(&ps->lock);
				link_send(ps, p, &h, NULL, 0);
				pthread_mutex_lock(&ps->lock);
			}
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- API */

int node_peers_start(struct node *n)
{
	struct node_peers *ps = calloc(1, sizeof(*ps));
	struct pohm_backend_ids be;
	pthread_attr_t at;
	pthread_t t;
	unsigned i;
	int r;

	if (!ps)
		return -ENOMEM;
	ps->n = n;
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->kick, NULL);
	memset(&be, 0, sizeof(be));
	be.backend_id = n->cfg.backend_id;
	be.group = n->cfg.group;
	be.ids_count = n->nids;
	be.ids = n->ids;
	if (pohm_addr_list_encode(&ps->join, 1, &n->cfg.listen, 1) ||
	    pohm_backends_encode_count(&ps->join, 1) || pohm_backends_encode_one(&ps->join, &be)) {
		free(ps);
		return -ENOMEM;
	}
	n->peers = ps;
	for (i = 0; i < n->cfg.njoin; i++)
		node_peers_learn(n, &n->cfg.join[i]);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &at, manager, ps);
	pthread_attr_destroy(&at);
	return -r;
}

/* See node.h: a new peer is dialled at once (the manager is kicked). */
void node_peers_learn(struct node *n, const struct pohm_addr *a)
{
	struct node_peers *ps = n->peers;
	struct peer *p;

	if (!ps || pohm_addr_equal(a, &n->cfg.listen))
		return;
	pthread_mutex_lock(&ps->lock);
	if (find_peer(ps, a) || ps->np >= PEER_MAX)
		goto out;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out;
	p->addr = *a;
	p->fd = -1;
	p->next_trans = 1;
	pthread_mutex_init(&p->wlock, NULL);
	ps->p[ps->np++] = p;
	pthread_cond_signal(&ps->kick);
out:
	pthread_mutex_unlock(&ps->lock);
}

/* See node.h: the forward is recorded before the send, so no reply can beat it. */
int node_peers_forward(struct node *n, const struct pohm_addr *owner, struct node_req *req)
{
	struct node_peers *ps = n->peers;
	struct fwd *f, **pp;
	struct pohm_cmd h;
	struct iovec iov;
	struct peer *p;
	int fd, ret;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&ps->lock);
	p = find_peer(ps, owner);
	pthread_mutex_unlock(&ps->lock);
	if (!p) {
		free(f);
		return -ENOTCONN;
	}
	pthread_mutex_lock(&p->wlock);
	pthread_mutex_lock(&ps->lock);
	fd = p->up ? p->fd : -1;
	if (fd >= 0) {
		f->ptrans = p->next_trans++;
		f->client = req->conn;
		f->ctrans = req->cmd.trans;
		f->id = req->cmd.id;
		f->cmd = req->cmd.cmd;
		f->want_ack = !!(req->cmd.flags & POHM_FLAG_NEED_ACK);
		f->born = pohm_sys_mono_ns();
		node_conn_get(f->client);
		f->next = p->fwd;
		p->fwd = f;
	}
	pthread_mutex_unlock(&ps->lock);
	if (fd < 0) {
		pthread_mutex_unlock(&p->wlock);
		free(f);
		return -ENOTCONN;
	}
	h = req->cmd;
	h.trans = f->ptrans;
	h.flags |= POHM_FLAG_DIRECT | POHM_FLAG_NEED_ACK;
	iov.iov_base = req->payload;
	iov.iov_len = req->len;
	ret = node_wire_send(fd, &h, &iov, 1);
	pthread_mutex_unlock(&p->wlock);
	if (ret) {
		/* Take the forward back unless the link's failure path already did. */
		pthread_mutex_lock(&ps->lock);
		for (pp = &p->fwd; *pp; pp = &(*pp)->next)
			if (*pp == f) {
				*pp = f->next;
				node_conn_put(f->client);
				free(f);
				break;
			}
		pthread_mutex_unlock(&ps->lock);
		return ret;
	}
	return 0;
}
