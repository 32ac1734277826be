/*
 * fake_node.h — a tiny in-test Elliptics node on 127.0.0.1 for the client's
 * unit tests (test_net.c, test_io.c).  One thread per node; one backend
 * owning the whole ring of one group; objects kept in memory.  Faults are
 * switched by flags: never answer, EOF after the handshake (version
 * mismatch), malformed handshake, replies held back and sent in reverse
 * order, READ replies with a wrong checksum, -84 on READ, -95 on key
 * commands, a connection that is never read after the handshake (a full
 * socket buffer), two WRITEs applied in an order set by their data (racing
 * writers that split the groups between them); fn_stall stops a node for a
 * while at its next WRITE (a GC pause, a disk stall, SIGSTOP).  Every
 * request's header flags are recorded per command (fn_flags_all /
 * fn_flags_any / fn_seen) and the last BACKEND_STATUS
 * payload is kept (fn_ping_payload), so tests can check what the client
 * sends.  Not the real node (node/): just enough protocol to test the
 * client without a network dependency.
 */
#ifndef POHM_TESTS_FAKE_NODE_H
#define POHM_TESTS_FAKE_NODE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "proto.h"
#include "sha512.h"

#define FN_SILENT		0x01	/* accept, read, never answer */
#define FN_EOF_HANDSHAKE	0x02	/* close right after reading the handshake */
#define FN_BAD_HANDSHAKE	0x04	/* handshake reply with a truncated payload */
#define FN_REVERSE		0x08	/* hold replies to reverse_n requests, send them reversed */
#define FN_CORRUPT_READ		0x10	/* READ: flip a data byte after computing the checksum */
#define FN_EILSEQ		0x20	/* READ/LOOKUP: answer -84 */
#define FN_ENOTSUP		0x40	/* key commands: answer -95 */
#define FN_SILENT_KEYS		0x80	/* answer control commands, never key commands */
#define FN_V226			0x100	/* speak 2.26: EOF to a 3.0 handshake */
#define FN_PUSH_UPDATE		0x200	/* after the handshake, push UPDATE_IDS: backend 0 → group 7 */
#define FN_HUGE			0x400	/* answer BACKEND_STATUS with a 2^40-byte header */
#define FN_SLOW_LOOKUP		0x800	/* answer LOOKUP 30 ms late */
#define FN_NOREAD		0x1000	/* after the handshake, never read the connection again */
#define FN_PAIR_LOW		0x2000	/* hold a WRITE until a second comes, then apply the one
					 * with the smaller data first (once; then cleared) */
#define FN_PAIR_HIGH		0x4000	/* the same, the larger data first */
#define FN_SLOW_READ		0x8000	/* answer READ 150 ms late */
#define FN_APPLY_MUTE		0x10000	/* key commands: apply a WRITE, answer nothing (a node
					 * killed after applying, before its reply) */
#define FN_WRITE_LOST		0x20000	/* WRITE: neither applied nor answered (still on its
					 * way); other commands answered */
#define FN_HS_REFUSE		0x40000	/* answer the handshake with status -EPROTO */

#define FN_MAX_OBJS	64
#define FN_MAX_CONNS	16

struct fn_obj {
	int used;
	uint8_t id[POHM_ID_SIZE];
	uint8_t *data;
	size_t len;
	struct pohm_time ts;
};

struct fake_node {
	int lfd;
	uint16_t port;
	uint32_t group;
	int flags;			/* atomic: fn_flags / fn_set_flags */
	int reverse_n;
	uint16_t peers[8];		/* ports listed in ROUTE_LIST (self included by the test) */
	int npeers;
	pthread_t th;
	int stop;			/* atomic */
	pthread_mutex_t lock;		/* guards objs and counters */
	struct fn_obj objs[FN_MAX_OBJS];
	int requests[32];		/* per command number */
	uint64_t flags_all[32];		/* AND of the flags of every request, per command */
	uint64_t flags_any[32];		/* OR of the same */
	int seen[32];			/* requests received (answered or not), per command */
	int nonzero_status;		/* requests that came with cmd.status != 0 */
	uint8_t ping[64];		/* payload of the last BACKEND_STATUS */
	size_t ping_len;
	uint8_t id0;			/* first byte of the backend's one id (ring position) */
	int conns_seen;			/* atomic */
	int stall_ms;			/* atomic: fn_stall */
};

static inline int fn_flags(struct fake_node *fn)
{
	return __atomic_load_n(&fn->flags, __ATOMIC_ACQUIRE);
}

static inline void fn_set_flags(struct fake_node *fn, int f)
{
	__atomic_store_n(&fn->flags, f, __ATOMIC_RELEASE);
}

/*
 * The next WRITE stops the node for ms before it is handled, as SIGSTOP
 * would: nothing the node serves is read or answered meanwhile, and what
 * came in is handled in order afterwards.  Once.
 */
static inline void fn_stall(struct fake_node *fn, int ms)
{
	__atomic_store_n(&fn->stall_ms, ms, __ATOMIC_RELEASE);
}

/* Ports listed by ROUTE_LIST. */
static inline void fn_set_peers(struct fake_node *fn, const uint16_t *ports, int n)
{
	pthread_mutex_lock(&fn->lock);
	memcpy(fn->peers, ports, sizeof(uint16_t) * (size_t)n);
	fn->npeers = n;
	pthread_mutex_unlock(&fn->lock);
}


static inline void fn_addr(struct pohm_addr *a, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->ip[0] = 127;
	a->ip[3] = 1;
}

static inline void fn_send(int fd, struct pohm_cmd *c, const void *p, size_t n)
{
	uint8_t h[POHM_CMD_SIZE];

	c->size = n;
	pohm_cmd_encode(h, c);
	(void)!send(fd, h, sizeof(h), MSG_NOSIGNAL);
	if (n)
		(void)!send(fd, p, n, MSG_NOSIGNAL);
}

static inline int fn_read_full(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static inline struct fn_obj *fn_find(struct fake_node *fn, const uint8_t *id, int create)
{
	int i;

	for (i = 0; i < FN_MAX_OBJS; i++)
		if (fn->objs[i].used && !memcmp(fn->objs[i].id, id, POHM_ID_SIZE))
			return &fn->objs[i];
	if (!create)
		return NULL;
	for (i = 0; i < FN_MAX_OBJS; i++)
		if (!fn->objs[i].used) {
			fn->objs[i].used = 1;
			memcpy(fn->objs[i].id, id, POHM_ID_SIZE);
			return &fn->objs[i];
		}
	return NULL;
}

/* Note a request's flags (and a ping's payload) for the tests' checks. */
static inline void fn_record(struct fake_node *fn, const struct pohm_cmd *q, const uint8_t *p)
{
	unsigned k = (unsigned)q->cmd & 31;

	pthread_mutex_lock(&fn->lock);
	fn->flags_all[k] = fn->seen[k] ? fn->flags_all[k] & q->flags : q->flags;
	fn->flags_any[k] |= q->flags;
	fn->seen[k]++;
	fn->nonzero_status += q->status != 0;
	if (q->cmd == POHM_CMD_BACKEND_STATUS) {
		fn->ping_len = (size_t)q->size;
		memset(fn->ping, 0, sizeof(fn->ping));
		if (p)
			memcpy(fn->ping, p, fn->ping_len < sizeof(fn->ping) ? fn->ping_len : sizeof(fn->ping));
	}
	pthread_mutex_unlock(&fn->lock);
}

/* Build the reply for one request into (rc, rb). Returns 0 to send, -1 to stay silent. */
static inline int fn_handle(struct fake_node *fn, const struct pohm_cmd *q, const uint8_t *p,
			    struct pohm_cmd *rc, struct pohm_buf *rb)
{
	struct pohm_addr self;
	struct fn_obj *o;
	struct pohm_io_attr io;
	int32_t v[4];
	int key_cmd = q->cmd == POHM_CMD_LOOKUP || q->cmd == POHM_CMD_READ ||
		      q->cmd == POHM_CMD_WRITE || q->cmd == POHM_CMD_DEL;

	*rc = *q;
	rc->flags = (q->flags & ~POHM_FLAG_NEED_ACK) | POHM_FLAG_REPLY;
	rc->status = 0;
	fn_addr(&self, fn->port);
	if ((fn_flags(fn) & FN_SILENT) || (key_cmd && (fn_flags(fn) & FN_SILENT_KEYS)))
		return -1;
	if (key_cmd && q->cmd != POHM_CMD_WRITE && (fn_flags(fn) & FN_APPLY_MUTE))
		return -1;
	if (q->cmd == POHM_CMD_WRITE && (fn_flags(fn) & FN_WRITE_LOST))
		return -1;
	if (key_cmd && (fn_flags(fn) & FN_ENOTSUP)) {
		rc->status = -EOPNOTSUPP;
		return 0;
	}
	pthread_mutex_lock(&fn->lock);
	fn->requests[q->cmd & 31]++;
	pthread_mutex_unlock(&fn->lock);
	switch (q->cmd) {
	case POHM_CMD_REVERSE_LOOKUP: {
		uint8_t one_id[POHM_ID_SIZE] = { fn->id0 };
		struct pohm_backend_ids b = { 0, fn->group, 0, 1, one_id };

		rc->flags = POHM_FLAG_NOLOCK | POHM_FLAG_REPLY;
		if (fn_flags(fn) & FN_HS_REFUSE) {
			rc->status = -EPROTO;
			return 0;
		}
		pohm_version_decode(v, q->id.id);
		pohm_version_encode(rc->id.id, v);
		pohm_addr_list_encode(rb, 1, &self, 1);
		if (fn_flags(fn) & FN_BAD_HANDSHAKE) {
			pohm_buf_put_u32(rb, 5);	/* claims 5 backends, has none */
			return 0;
		}
		pohm_backends_encode_count(rb, 1);
		pohm_backends_encode_one(rb, &b);
		return 0;
	}
	case POHM_CMD_ROUTE_LIST: {
		struct pohm_addr a[8];
		int i;

		rc->flags = POHM_FLAG_NOLOCK | POHM_FLAG_REPLY;
		pthread_mutex_lock(&fn->lock);
		for (i = 0; i < fn->npeers; i++)
			fn_addr(&a[i], fn->peers[i]);
		i = fn->npeers;
		pthread_mutex_unlock(&fn->lock);
		pohm_addr_list_encode(rb, 1, a, (uint32_t)i);
		return 0;
	}
	case POHM_CMD_BACKEND_STATUS: {
		struct pohm_backend_status s;

		memset(&s, 0, sizeof(s));
		s.state = 1;
		pohm_backend_status_encode(rb, &s, 1);
		return 0;
	}
	case POHM_CMD_AUTH:
		return 0;
	case POHM_CMD_LOOKUP: {
		struct pohm_file_info fi;

		if (fn_flags(fn) & FN_EILSEQ) {
			rc->status = -EILSEQ;
			return 0;
		}
		if (fn_flags(fn) & FN_SLOW_LOOKUP)
			usleep(30000);
		pthread_mutex_lock(&fn->lock);
		o = fn_find(fn, q->id.id, 0);
		if (!o) {
			pthread_mutex_unlock(&fn->lock);
			rc->status = -ENOENT;
			return 0;
		}
		memset(&fi, 0, sizeof(fi));
		fi.size = o->len;
		fi.mtime = o->ts;
		fi.record_flags = POHM_RECORD_EXTHDR;
		if (q->flags & POHM_FLAG_CHECKSUM)
			pohm_sha512(o->data, o->len, fi.checksum);
		pthread_mutex_unlock(&fn->lock);
		pohm_lookup_reply_encode(rb, &self, &fi, "/fake/blob");
		return 0;
	}
	case POHM_CMD_WRITE: {
		struct pohm_file_info fi;
		uint8_t sum[POHM_ID_SIZE];

		pohm_io_attr_decode(&io, p);
		pthread_mutex_lock(&fn->lock);
		o = fn_find(fn, io.id, 0);
		if ((io.flags & POHM_IO_CAS_TIMESTAMP) && o && pohm_time_cmp(&o->ts, &io.timestamp) > 0)
			rc->status = -EBADFD;
		if (!rc->status && (io.flags & POHM_IO_CAS) && o) {
			pohm_sha512(o->data, o->len, sum);
			if (memcmp(sum, io.parent, sizeof(sum)))
				rc->status = -EBADFD;
		}
		if (!rc->status) {
			o = fn_find(fn, io.id, 1);
			free(o->data);
			o->data = malloc(io.size ? io.size : 1);
			memcpy(o->data, p + POHM_IO_ATTR_SIZE, io.size);
			o->len = io.size;
			o->ts = io.timestamp;
			memset(&fi, 0, sizeof(fi));
			fi.size = o->len;
			fi.mtime = o->ts;
		}
		pthread_mutex_unlock(&fn->lock);
		if (fn_flags(fn) & FN_APPLY_MUTE)
			return -1;
		if (!rc->status)
			pohm_lookup_reply_encode(rb, &self, &fi, "/fake/blob");
		return 0;
	}
	case POHM_CMD_READ: {
		size_t off, n;

		if (fn_flags(fn) & FN_EILSEQ) {
			rc->status = -EILSEQ;
			return 0;
		}
		if (fn_flags(fn) & FN_SLOW_READ)
			usleep(150000);
		pohm_io_attr_decode(&io, p);
		pthread_mutex_lock(&fn->lock);
		o = fn_find(fn, io.id, 0);
		if (!o || io.offset >= o->len) {
			pthread_mutex_unlock(&fn->lock);
			rc->status = o ? -E2BIG : -ENOENT;
			return 0;
		}
		off = (size_t)io.offset;
		n = o->len - off;
		if (io.size && io.size < n)
			n = (size_t)io.size;
		io.size = n;
		io.total_size = o->len;
		io.timestamp = o->ts;
		if (io.flags & POHM_IO_CHECKSUM)
			pohm_sha512(o->data + off, n, io.parent);
		{
			uint8_t raw[POHM_IO_ATTR_SIZE];

			pohm_io_attr_encode(raw, &io);
			pohm_buf_put(rb, raw, sizeof(raw));
			pohm_buf_put(rb, o->data + off, n);
		}
		pthread_mutex_unlock(&fn->lock);
		if ((fn_flags(fn) & FN_CORRUPT_READ) && n)
			rb->p[POHM_IO_ATTR_SIZE] ^= 0x5a;
		return 0;
	}
	case POHM_CMD_DEL:
		pthread_mutex_lock(&fn->lock);
		o = fn_find(fn, q->id.id, 0);
		if (o) {
			free(o->data);
			memset(o, 0, sizeof(*o));
		} else {
			rc->status = -ENOENT;
		}
		pthread_mutex_unlock(&fn->lock);
		return 0;
	default:
		rc->status = -EOPNOTSUPP;
		return 0;
	}
}

struct fn_held {
	int fd;
	struct pohm_cmd c;
	struct pohm_buf b;
};

/* Handle one request and send its reply at once (FN_PAIR_*). */
static inline void fn_handle_send(struct fake_node *fn, int fd, const struct pohm_cmd *q,
				  const uint8_t *p)
{
	struct pohm_cmd rc;
	struct pohm_buf rb = POHM_BUF_INIT;

	if (fn_handle(fn, q, p, &rc, &rb) == 0)
		fn_send(fd, &rc, rb.p, rb.len);
	pohm_buf_free(&rb);
}

/*
 * FN_PAIR_*: keep the first WRITE (*held, its payload *held_p); at the
 * second, apply both in the order of their data and clear the flag.
 * 1 when the request was kept or handled here (p then belongs to this).
 */
static inline int fn_pair(struct fake_node *fn, int fd, const struct pohm_cmd *q, uint8_t *p,
			  struct fn_held *held, uint8_t **held_p)
{
	int f = fn_flags(fn), low = f & FN_PAIR_LOW, c;
	size_t n1, n2;

	if (!(f & (FN_PAIR_LOW | FN_PAIR_HIGH)) || q->cmd != POHM_CMD_WRITE ||
	    q->size < POHM_IO_ATTR_SIZE)
		return 0;
	if (!*held_p) {
		held->fd = fd;
		held->c = *q;
		*held_p = p;
		return 1;
	}
	n1 = (size_t)q->size - POHM_IO_ATTR_SIZE;
	n2 = (size_t)held->c.size - POHM_IO_ATTR_SIZE;
	c = memcmp(p + POHM_IO_ATTR_SIZE, *held_p + POHM_IO_ATTR_SIZE, n1 < n2 ? n1 : n2);
	if (!c)
		c = n1 < n2 ? -1 : n1 > n2;
	if ((c < 0) == !!low) {
		fn_handle_send(fn, fd, q, p);
		fn_handle_send(fn, held->fd, &held->c, *held_p);
	} else {
		fn_handle_send(fn, held->fd, &held->c, *held_p);
		fn_handle_send(fn, fd, q, p);
	}
	fn_set_flags(fn, f & ~(FN_PAIR_LOW | FN_PAIR_HIGH));
	free(*held_p);
	*held_p = NULL;
	free(p);
	return 1;
}

static inline void *fn_thread(void *arg)
{
	struct fake_node *fn = arg;
	struct pollfd pfd[FN_MAX_CONNS + 1];
	struct fn_held held[64], pair;
	uint8_t *pair_p = NULL;
	int nheld = 0, n = 0, i, j;

	pfd[0].fd = fn->lfd;
	pfd[0].events = POLLIN;
	while (!__atomic_load_n(&fn->stop, __ATOMIC_ACQUIRE)) {
		if (poll(pfd, (nfds_t)(n + 1), 50) <= 0)
			continue;
		if ((pfd[0].revents & POLLIN) && n < FN_MAX_CONNS) {
			int cfd = accept(fn->lfd, NULL, NULL);

			if (cfd >= 0) {
				pfd[++n].fd = cfd;
				pfd[n].events = POLLIN;
				pfd[n].revents = 0;
				__atomic_fetch_add(&fn->conns_seen, 1, __ATOMIC_ACQ_REL);
			}
		}
		for (i = 1; i <= n; i++) {
			uint8_t h[POHM_CMD_SIZE], *p = NULL;
			struct pohm_cmd q, rc;
			struct pohm_buf rb = POHM_BUF_INIT;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			pfd[i].revents = 0;
			if (fn_read_full(pfd[i].fd, h, sizeof(h)))
				goto drop;
			pohm_cmd_decode(&q, h);
			if (q.size > (64u << 20))
				goto drop;
			if (q.size) {
				p = malloc((size_t)q.size);
				if (fn_read_full(pfd[i].fd, p, (size_t)q.size)) {
					free(p);
					goto drop;
				}
			}
			fn_record(fn, &q, p);
			if (q.cmd == POHM_CMD_WRITE) {
				int ms = __atomic_exchange_n(&fn->stall_ms, 0, __ATOMIC_ACQ_REL);

				if (ms > 0)
					usleep((useconds_t)ms * 1000);
			}
			if (fn_pair(fn, pfd[i].fd, &q, p, &pair, &pair_p))
				continue;
			if (q.cmd == POHM_CMD_REVERSE_LOOKUP && (fn_flags(fn) & FN_NOREAD))
				pfd[i].events = 0;	/* what the client sends from now on piles up */
			if (q.cmd == POHM_CMD_REVERSE_LOOKUP) {
				int32_t v[4];

				pohm_version_decode(v, q.id.id);
				if ((fn_flags(fn) & FN_EOF_HANDSHAKE) ||
				    ((fn_flags(fn) & FN_V226) ? v[1] != 26 : v[1] != 0)) {
					free(p);
					goto drop;
				}
			}
			if (fn_handle(fn, &q, p, &rc, &rb) == 0) {
				if ((fn_flags(fn) & FN_REVERSE) && nheld < 64 && q.cmd != POHM_CMD_REVERSE_LOOKUP) {
					held[nheld].fd = pfd[i].fd;
					held[nheld].c = rc;
					held[nheld++].b = rb;
					rb.p = NULL;
					if (nheld >= __atomic_load_n(&fn->reverse_n, __ATOMIC_ACQUIRE)) {
						for (j = nheld - 1; j >= 0; j--) {
							fn_send(held[j].fd, &held[j].c, held[j].b.p, held[j].b.len);
							pohm_buf_free(&held[j].b);
						}
						nheld = 0;
					}
				} else if ((fn_flags(fn) & FN_HUGE) && q.cmd == POHM_CMD_BACKEND_STATUS) {
					uint8_t hh[POHM_CMD_SIZE];

					rc.size = 1ULL << 40;
					pohm_cmd_encode(hh, &rc);
					(void)!send(pfd[i].fd, hh, sizeof(hh), MSG_NOSIGNAL);
				} else {
					fn_send(pfd[i].fd, &rc, rb.p, rb.len);
				}
				if ((fn_flags(fn) & FN_PUSH_UPDATE) && q.cmd == POHM_CMD_REVERSE_LOOKUP) {
					static const uint8_t zid[POHM_ID_SIZE];
					struct pohm_backend_ids b = { 0, 7, 0, 1, zid };
					struct pohm_buf ub = POHM_BUF_INIT;
					struct pohm_cmd uc;

					memset(&uc, 0, sizeof(uc));
					uc.cmd = POHM_CMD_UPDATE_IDS;
					uc.flags = POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK;
					pohm_backends_encode_count(&ub, 1);
					pohm_backends_encode_one(&ub, &b);
					fn_send(pfd[i].fd, &uc, ub.p, ub.len);
					pohm_buf_free(&ub);
				}
			}
			pohm_buf_free(&rb);
			free(p);
			continue;
drop:
			close(pfd[i].fd);
			pfd[i] = pfd[n--];
			i--;
		}
	}
	for (i = 1; i <= n; i++)
		close(pfd[i].fd);
	for (j = 0; j < nheld; j++)
		pohm_buf_free(&held[j].b);
	free(pair_p);
	return NULL;
}

/*
 * Start a node serving group on an ephemeral port; its backend's one id
 * starts with byte id0 (the rest zero), so two nodes of a group split the
 * ring at id0.  0 or -1.
 */
static inline int fn_start_id(struct fake_node *fn, uint32_t group, int flags, uint8_t id0)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int one = 1;

	memset(fn, 0, sizeof(*fn));
	fn->id0 = id0;
	fn->group = group;
	fn->flags = flags;
	fn->reverse_n = 4;
	pthread_mutex_init(&fn->lock, NULL);
	fn->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fn->lfd < 0)
		return -1;
	setsockopt(fn->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fn->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fn->lfd, 16) ||
	    getsockname(fn->lfd, (struct sockaddr *)&sa, &len))
		return -1;
	fn->port = ntohs(sa.sin_port);
	fn->peers[0] = fn->port;
	fn->npeers = 1;
	return pthread_create(&fn->th, NULL, fn_thread, fn) ? -1 : 0;
}

/* Start a node serving group (its id: all zero) on an ephemeral port. 0 or -1. */
static inline int fn_start(struct fake_node *fn, uint32_t group, int flags)
{
	return fn_start_id(fn, group, flags, 0);
}

static inline void fn_stop(struct fake_node *fn)
{
	int i;

	__atomic_store_n(&fn->stop, 1, __ATOMIC_RELEASE);
	pthread_join(fn->th, NULL);
	close(fn->lfd);
	for (i = 0; i < FN_MAX_OBJS; i++)
		free(fn->objs[i].data);
	pthread_mutex_destroy(&fn->lock);
}

/* Flags every request of cmd carried (AND), any of them carried (OR), how many came. */
static inline uint64_t fn_flags_all(struct fake_node *fn, int cmd)
{
	uint64_t f;

	pthread_mutex_lock(&fn->lock);
	f = fn->flags_all[cmd & 31];
	pthread_mutex_unlock(&fn->lock);
	return f;
}

static inline uint64_t fn_flags_any(struct fake_node *fn, int cmd)
{
	uint64_t f;

	pthread_mutex_lock(&fn->lock);
	f = fn->flags_any[cmd & 31];
	pthread_mutex_unlock(&fn->lock);
	return f;
}

static inline int fn_seen(struct fake_node *fn, int cmd)
{
	int n;

	pthread_mutex_lock(&fn->lock);
	n = fn->seen[cmd & 31];
	pthread_mutex_unlock(&fn->lock);
	return n;
}

/* The last BACKEND_STATUS payload (up to cap bytes) and its full length. */
static inline size_t fn_ping_payload(struct fake_node *fn, uint8_t *out, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&fn->lock);
	n = fn->ping_len;
	memcpy(out, fn->ping, cap < sizeof(fn->ping) ? cap : sizeof(fn->ping));
	pthread_mutex_unlock(&fn->lock);
	return n;
}

static inline int fn_count(struct fake_node *fn, int cmd)
{
	int n;

	pthread_mutex_lock(&fn->lock);
	n = fn->requests[cmd & 31];
	pthread_mutex_unlock(&fn->lock);
	return n;
}

#endif
