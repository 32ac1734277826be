/*
 * conn.h — internals of the client shared by net.c (transactions, the
 * leader/follower engine), conn.c (sockets, packet framing),
 * conn_setup.c (connect, handshake, auth, ping, route refresh) and run.c
 * (the callers' entry: set up, then run; so net.c never calls set-up).
 * Nothing outside those files includes this header; users see net.h.
 *
 * Locking (one rule for everything here): net->lock guards every field of
 * struct pohm_net and struct pohm_conn except
 *   - conn->rx, touched only by the current leader (net->leader_active),
 *     outside the lock;
 *   - the bytes of the request at the head of a send queue while
 *     req->tx_inflight is set (a flusher writes them outside the lock).
 * A thread that uses conn->fd outside the lock holds a conn->users
 * reference; the fd is closed only when the last user lets go
 * (conn_release), so a failed connection is never closed under a reader
 * or a writer.  Condition variables: each waiting batch has its own
 * (batch->cv); net->txcv wakes threads waiting for a flusher to finish;
 * net->conncv wakes threads waiting for a connection being set up.
 */
#ifndef POHM_CORE_CONN_H
#define POHM_CORE_CONN_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "config.h"
#include "net.h"
#include "route.h"
#include "sys.h"

#define POHM_MAX_NODES		256
#define POHM_TRANS_BUCKETS	64
#define POHM_RX_STAGE		(64 * 1024)	/* staging buffer for small packets */
#define POHM_RX_MAX		((uint64_t)1 << 30) /* larger replies drop the connection */
#define POHM_BACKOFF_MIN_NS	100000000ULL	/* first reconnect delay: 100 ms */
#define POHM_BACKOFF_MAX_NS	2000000000ULL	/* at most 2 s between attempts */
#define POHM_STALL_LIMIT	3		/* consecutive timeouts → reset the connection */

enum conn_state {
	CONN_DOWN = 0,		/* no usable socket (maybe waiting out a backoff) */
	CONN_CONNECTING,	/* a thread is connecting/handshaking it */
	CONN_UP,		/* handshake done: open for requests */
};

/* Packet assembly from a byte stream (pure; fuzzed by tests/fuzz/fuzz_reply.c). */
struct pohm_rx {
	uint8_t hdr[POHM_CMD_SIZE];
	size_t hgot;			/* header bytes collected */
	struct pohm_pkt *pkt;		/* packet whose payload is being collected */
	size_t dgot;			/* payload bytes collected */
	uint64_t max;			/* largest payload accepted */
	uint8_t *stage;			/* POHM_RX_STAGE bytes, allocated on first read */
	/*
	 * Optional (NULL: every payload goes to pkt->data): asked when a
	 * header is complete; returns a token and sets *dest and *skip to read
	 * the payload's bytes from skip on straight into dest (a split packet).
	 */
	void *(*bind)(void *arg, const struct pohm_cmd *cmd, uint8_t **dest, size_t *skip);
	void *bind_arg;
	int split;			/* the packet being read is split */
	void *bound;			/* its token; NULL once unbound */
	uint8_t *dest;			/* its tail's memory; NULL once unbound (tail dropped) */
	size_t skip;			/* its bytes kept in pkt->data */
};

struct pohm_conn {
	struct pohm_net *net;
	int idx;			/* node index == position in net->conns */
	struct pohm_addr addr;
	char name[64];			/* "ip:port" for messages */
	int fd;				/* -1 when closed */
	enum conn_state state;
	int handshake_ok;		/* requests other than the handshake allowed */
	int32_t version[4];		/* the server's, from the handshake */
	uint64_t last_rx_ns, last_tx_ns;
	uint64_t retry_at_ns;		/* backoff: no connect attempt before this */
	unsigned fails;			/* consecutive failures (connect or socket) */
	unsigned stalls;		/* consecutive batches with a timeout here and no
					 * packet from the node while they waited */
	const void *stall_batch;	/* last batch counted in stalls */
	int last_err;			/* -errno of the last failure, 0 if none */
	char last_msg[160];		/* human text of the last failure */
	int seed;			/* configured server */
	int listed;			/* in the last ROUTE_LIST */
	unsigned users;			/* threads using fd outside the lock */
	int close_pending;		/* close fd when users drops to 0 */
	struct pohm_req *hash[POHM_TRANS_BUCKETS];	/* in-flight transactions by trans */
	size_t inflight;
	struct pohm_req *sq_head, *sq_tail;		/* send queue */
	int tx_busy;			/* a flusher owns the queue head */
	struct pohm_rx rx;		/* leader only */
	uint64_t rtt_ns;		/* last ping round trip */
	/* The handshake sent ahead of the first requests, not waited for
	 * (a table from the route file, conn_setup.c); its reply is taken
	 * by its on_reply hook whenever a waiter reads it. */
	struct pohm_req hs;
	uint64_t hs_budget;		/* ns hs may take, from when it went out */
	uint64_t hs_deadline;		/* hs unanswered then: c fails (lead_round);
					 * UINT64_MAX until it went out */
};

struct pohm_batch {
	pthread_cond_t cv;
	struct pohm_batch *next;	/* in net->waiters while waiting */
	int waiting;
	size_t remaining;		/* requests not done */
};

struct pohm_net {
	pthread_mutex_t lock;
	pthread_cond_t txcv, conncv;
	const struct pohm_config *cfg;	/* owned by the caller, outlives net */
	pid_t pid;			/* process that opened the sockets */
	uint64_t next_trans;
	struct pohm_conn *conns[POHM_MAX_NODES];
	int nconns;
	struct pohm_route route;
	int leader_active;		/* some thread is polling the sockets */
	int rx_reading;			/* the leader reads sockets outside the lock */
	unsigned rx_waiters;		/* threads waiting for rx_reading to end (txcv) */
	struct pohm_batch *waiters;	/* followers, oldest first */
	int evfd;			/* wakes the leader's poll; -1 until needed */
	int bootstrapped;		/* seeds tried and ROUTE_LIST done once */
	int refreshing;			/* a thread is refreshing the route */
	int refresh_due;		/* a node failed since the last refresh */
	uint64_t last_refresh_ns;
	uint32_t dial_idx;		/* which of a node's addresses we dial */
	char route_path[4096];		/* cache_dir/routes, "" = none (routefile.c) */
	int routes_cached;		/* the table came from route_path: no full
					 * refresh yet, nor a node failure since */
	char last_msg[256];		/* last cluster-level error text */
	/* Counters (pohm_net_counts), relaxed atomics, any thread; zeroed in a
	 * fork child.  all_*: every batch run, setup included; run_*: the
	 * callers' pohm_net_run batches; win_*: window sends and waits. */
	uint64_t all_waits, all_sent, run_waits, run_sent, win_waits, win_sent;
	/* Monotonic ns of the last packet any node sent us (pohm_net_last_rx_ns);
	 * relaxed atomic, written by the leader in dispatch. */
	uint64_t last_rx_ns;
};

/* ---- net.c */
/* Fail every transaction of c with err, mark it down (backoff) and close it
 * when unused; msg (may be NULL) is kept for reports. Lock held. */
void pohm_conn_fail(struct pohm_net *net, struct pohm_conn *c, int err, const char *msg);
/* Drop one fd user; closes the fd if a close is pending. Lock held. */
void pohm_conn_release(struct pohm_net *net, struct pohm_conn *c);
/* Run a batch; handshake != 0 allows connections still CONNECTING.  The
 * engine's own entry: it never sets connections up (pohm_net_prepare), so
 * conn_setup.c's handshakes and pings run through it. */
int pohm_net_run_internal(struct pohm_net *net, struct pohm_req **reqs, size_t n,
			  uint64_t deadline, pohm_enough_fn enough, void *arg, int handshake);
/* pohm_net_run's second half (run.c): a callers' batch whose nodes
 * pohm_net_prepare has set up, counted as a run.  Lock not held. */
int pohm_net_run_prepared(struct pohm_net *net, struct pohm_req **reqs, size_t n,
			  uint64_t deadline, pohm_enough_fn enough, void *arg);
/* pohm_net_window_send's second half (run.c): submit and flush reqs in
 * window w once pohm_net_prepare has set their nodes up.  Lock not held. */
void pohm_net_window_submit(struct pohm_net *net, struct pohm_batch *w, struct pohm_req **reqs,
			    size_t n);
/* Find or add the node with this address. Index or -ENOSPC/-ENOMEM. Lock held. */
int pohm_net_node_add(struct pohm_net *net, const struct pohm_addr *a, int seed);
/* Wake the leader's poll (new fd or queued output). Lock held. */
void pohm_net_poke(struct pohm_net *net);

/* Queue r (a handshake) on c, which is connecting, with no batch: nobody
 * waits for it, the next flush of c sends it ahead of what follows, and
 * r->on_reply takes its reply.  A leader's round that finds it unanswered
 * budget ns after it went out fails c.  Counted a setup request, no wait.
 * Lock held. */
void pohm_conn_send_detached(struct pohm_net *net, struct pohm_conn *c, struct pohm_req *r,
			     uint64_t budget);

/* ---- routefile.c (decision 0074) */
/* Put the table of route_path into net (nodes added, their backends and
 * protocol versions, dial_idx) if the file is fresh, for this
 * configuration and protocol line our, lists every configured server and
 * covers every configured group.
 * Lock not held; net's table must be empty.  0, or -errno (nothing taken). */
int pohm_routefile_load(struct pohm_net *net, const int32_t our[4]);
/* Save the table of the nodes that are up to route_path (atomically: a
 * temporary file renamed over it); failures are ignored.  Lock not held. */
void pohm_routefile_save(struct pohm_net *net);

/* ---- conn_setup.c */
/* Bring up the nodes of reqs before a run: connect the down ones whose
 * backoff expired, ping the idle ones, wait for ones being set up.  Lock not held. */
void pohm_net_prepare(struct pohm_net *net, struct pohm_req **reqs, size_t n, uint64_t deadline);

/* ---- conn.c */
/* Feed n bytes to rx; complete packets are appended at **tail. 0 or -EPROTO/-ENOMEM. */
int pohm_rx_feed(struct pohm_rx *rx, const uint8_t *p, size_t n, struct pohm_pkt ***tail);
/* Read what fd has (non-blocking) into rx, until a read comes back short
 * (the socket drained; no read that fails EAGAIN after it): 0, or -errno
 * (-ECONNRESET on EOF). */
int pohm_rx_read(struct pohm_rx *rx, int fd, struct pohm_pkt ***tail);
/* Free rx's partial packet and staging buffer (bind is kept). */
void pohm_rx_reset(struct pohm_rx *rx);
/* Stop writing the current split packet's tail into its memory (dropped instead). */
void pohm_rx_unbind(struct pohm_rx *rx);
/* Free a list of packets. */
void pohm_pkt_free_list(struct pohm_pkt *p);
/* Socket, non-blocking connect started; fd (moved high) or -errno. */
int pohm_sock_connect_start(const struct pohm_addr *a);
/* After POLLOUT: 0 if connected, else -errno (SO_ERROR). Sets keepalive and nodelay. */
int pohm_sock_connect_finish(int fd);
/* poll(2) via ppoll with a nanosecond timeout; ready count or -errno. */
int pohm_sock_poll(struct pollfd *fds, unsigned n, uint64_t timeout_ns);
/* One non-blocking sendmsg with MSG_NOSIGNAL: bytes or -errno (-EAGAIN). */
ssize_t pohm_sock_sendv(int fd, const struct iovec *iov, int iovcnt);

#endif
