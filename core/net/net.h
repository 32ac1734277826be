/*
 * Layer core/net — connections to nodes and transactions on them.  This
 * header is the layer's whole interface.
 *
 * What it does: the in-process Elliptics client below (no thread of its
 * own, batches of requests, the leader that polls), and the route table
 * that maps a key id to its node and backend per group (route.h).
 * Main types: struct pohm_net (opaque), struct pohm_req, struct pohm_pkt,
 * struct pohm_route.
 * Relies on: core/config, core/wire, core/sys.
 * Rules for callers: errors are negative errno; nothing here sets errno,
 * exits or prints; after fork the child reconnects lazily.
 *
 * Parts (include this header, not them, from outside core/net): route.h.
 * conn.h (connections, the batch machinery) is private to core/net.
 */
/*
 * net.h — the in-process Elliptics client: connections to nodes and
 * transactions on them (PROTOCOL.md §3, §4, §6, §10).
 *
 * Model.  The client has no thread of its own (DESIGN.md §5).  A caller
 * builds requests (struct pohm_req), each aimed at one node, and hands a
 * batch of them to pohm_net_run(), which sends them and waits until all
 * are answered, or until the caller's predicate says enough (a quorum), or
 * until the deadline.  Many host threads may run batches at once with many
 * requests in flight on one connection.  Whichever waiting thread finds the
 * "leader" role free polls every connection, reads whole packets and hands
 * each reply to its transaction by trans (replies come out of order,
 * §10.9); the other waiters sleep on their own condition variable.  The
 * leader role passes on when its holder's batch is done.  A transaction
 * ends on its first reply without MORE; MORE replies are collected.
 *
 * Connections: SOCK_CLOEXEC|SOCK_NONBLOCK, moved high, TCP keepalive and
 * NODELAY; connect with a timeout; version handshake (REVERSE_LOOKUP, no
 * NEED_ACK) whose EOF means "the server refused our protocol version";
 * optional AUTH; reconnect with exponential backoff; an idle connection
 * (keepalive_interval) is pinged with BACKEND_STATUS before use, never
 * STATUS.  Every other request carries NEED_ACK.  UPDATE_IDS pushes
 * update the route table.  Fork: a child never reads the parent's
 * sockets; it closes its copies and reconnects lazily (pid check on every
 * entry, or pohm_net_atfork_child()).
 *
 * Errors are negative errno values; nothing here sets errno, exits,
 * prints to stdout or installs signal handlers.
 */
#ifndef POHM_CORE_NET_H
#define POHM_CORE_NET_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "wire.h"
#include "route.h"

struct pohm_net;
struct pohm_batch;
struct pohm_conn;

/*
 * One reply packet; data is cmd.size bytes (NULL when 0), owned by the
 * request.  Except a split packet (a reply read straight into the
 * request's rdest): data holds its first cmd.size - ext_len bytes and ext
 * (the caller's memory, not owned) the ext_len bytes after them.
 */
struct pohm_pkt {
	struct pohm_pkt *next;
	struct pohm_cmd cmd;
	uint8_t *data;
	uint8_t *ext;
	size_t ext_len;
	int split;
};

/*
 * One request.  The caller fills node, cmd (cmd, id, flags, backend_id) and
 * the payload parts p1/p2 (kept alive until pohm_net_run returns); net sets
 * trans and size.  After the run: done, status (0, the server's negative
 * errno, or a local -ETIMEDOUT/-ECONNRESET/-ECANCELED/...), and every reply
 * packet in arrival order.  Release with pohm_req_release().
 */
struct pohm_req {
	int node;			/* index from pohm_net_owner() / pohm_net_node_* */
	struct pohm_cmd cmd;
	const void *p1; size_t n1;
	const void *p2; size_t n2;
	/*
	 * Optional: a final reply (status 0, no MORE) of rdest_skip + k bytes,
	 * k <= rdest_cap, is read with its last k bytes straight into rdest
	 * (a split packet, see struct pohm_pkt): no copy, no allocation.  The
	 * memory is written only until the call that hands r back returns.
	 */
	uint8_t *rdest;
	size_t rdest_cap, rdest_skip;

	int done;
	int status;
	struct pohm_pkt *replies;	/* first reply; the last one ended the transaction */
	uint64_t sent_ns, done_ns;	/* monotonic: queued, finished */

	/* private to net */
	struct pohm_req *hnext, *qnext;
	struct pohm_batch *batch;
	uint8_t txhdr[POHM_CMD_SIZE];
	uint64_t txoff;			/* bytes of header+payload sent */
	int queued, tx_inflight, hashed, orphan;
	int rx_busy;			/* a leader reads a reply into rdest (net.lock) */
	struct pohm_pkt **rtail;
	/* Run under the lock when the final reply arrives with status 0, so its
	 * effect is ordered with later pushes on the connection; returns the status. */
	int (*on_reply)(struct pohm_net *net, struct pohm_conn *c, struct pohm_req *r);
};

/*
 * Predicate for early return, called under the client's lock after each
 * completion (be quick): non-zero when the batch has what it needs.  It may
 * also lower *deadline (e.g. "the quorum is in; wait a little for the
 * rest"): reaching a lowered deadline then counts as enough, not a timeout.
 */
typedef int (*pohm_enough_fn)(void *arg, struct pohm_req **reqs, size_t n, uint64_t *deadline);

/* Create a client for cfg (kept by reference, must outlive it); no network yet. 0 or -errno. */
int pohm_net_open(struct pohm_net **out, const struct pohm_config *cfg);
/* Close every connection and free the client; no request may be running. */
void pohm_net_close(struct pohm_net *net);

/* Prepare r for node with command cmd and flags; payload empty. */
void pohm_req_init(struct pohm_req *r, int node, int32_t cmd, uint64_t flags);
/* Free r's replies (r itself is the caller's). */
void pohm_req_release(struct pohm_req *r);
/* The reply that ended the transaction, or NULL. */
const struct pohm_pkt *pohm_req_final(const struct pohm_req *r);

/*
 * Send reqs and wait until every one is done, or enough() returns non-zero,
 * or deadline (pohm_sys_mono_ns clock) passes.  Requests to a node that is
 * down are connected first (bounded by the deadline) or fail at once while
 * the node backs off.  On return every request is done: unfinished ones
 * get -ETIMEDOUT (deadline) or -ECANCELED (enough) and their late replies
 * are dropped.  Returns the number of requests that completed with status 0.
 */
int pohm_net_run(struct pohm_net *net, struct pohm_req **reqs, size_t n, uint64_t deadline,
		 pohm_enough_fn enough, void *arg);

/*
 * A window: requests kept in flight across calls, so a caller can work on
 * one answer (verify it, hand it on) while later ones are still coming
 * (a streamed read).  open → send (any number of times) → wait for one
 * request at a time → close.  Requests progress only while some thread of
 * the client waits (in a wait or a run).  Every request sent must stay
 * alive, with its payload, until it was waited for or the window closed.
 */
/* A new window, or NULL (out of memory). */
struct pohm_batch *pohm_net_window_open(struct pohm_net *net);
/* Send reqs now (connecting their nodes first, bounded by deadline); no waiting. */
void pohm_net_window_send(struct pohm_net *net, struct pohm_batch *w, struct pohm_req **reqs,
			  size_t n, uint64_t deadline);
/* Wait until r (sent in w) is done, or fail it with -ETIMEDOUT at deadline. r->status.
 * Counted a wait (pohm_net_counts) only when its reply was not in after a
 * read of the connections that does not block. */
int pohm_net_window_wait(struct pohm_net *net, struct pohm_batch *w, struct pohm_req *r,
			 uint64_t deadline);
/* Wait until every request sent in w is done or enough(arg, NULL, 0, &dl)
 * says w has what it needs (it may lower dl, as for pohm_net_run); 0, or
 * -ETIMEDOUT at deadline.  Nothing is cancelled (pohm_net_window_close
 * does).  Counted a wait as pohm_net_window_wait is. */
int pohm_net_window_wait_enough(struct pohm_net *net, struct pohm_batch *w,
				pohm_enough_fn enough, void *arg, uint64_t deadline);
/* Cancel what of reqs (every request sent in w) is not done (-ECANCELED), free w. */
void pohm_net_window_close(struct pohm_net *net, struct pohm_batch *w, struct pohm_req **reqs,
			   size_t n);

/*
 * Make sure the cluster is known: connect the configured servers, ask one
 * for ROUTE_LIST and connect and handshake every node it lists.  Cheap once
 * done; again when a node failed (at most once a second) or when force is set
 * (after a -95: every live node is asked for its backends again).
 * 0 when at least one node is up, else -errno with a message in
 * pohm_net_last_error().
 */
int pohm_net_refresh(struct pohm_net *net, uint64_t deadline, int force);

/*
 * Keep the route table in cache_dir/routes (decision 0074): a first
 * refresh takes it when it is fresh and the euid's alone (no ROUTE_LIST,
 * the handshakes sent ahead of the first requests, not waited for); every
 * full refresh writes it through cache_dir/tmp/, only in a cache_dir the
 * euid owns.  Call before the first refresh.  0 or -ENAMETOOLONG.
 */
int pohm_net_route_file(struct pohm_net *net, const char *cache_dir);

/*
 * Owner of key id in group: node index and backend, by the ring rule over
 * the group's nodes that have not failed (a failed node's keys fall to its
 * live neighbours, as in Elliptics); the plain owner when all have failed,
 * or always with own_node (compare-and-swap objects: the neighbour never
 * held the key, and a CAS passes where the key is missing, so its answer
 * would stand for a group it cannot speak for).  0 or -ENXIO (group unknown).
 */
int pohm_net_owner(struct pohm_net *net, uint32_t group, const uint8_t id[POHM_ID_SIZE],
		   int own_node, int *node, int32_t *backend);

/* Node count, and a node's "ip:port" (always a string, "?" if out of range). */
int pohm_net_nodes(struct pohm_net *net);
void pohm_net_node_name(struct pohm_net *net, int node, char *buf, size_t len);

struct pohm_node_info {
	struct pohm_addr addr;
	char name[64];
	int up;				/* handshake done and connected */
	int32_t version[4];
	unsigned fails;
	int last_err;
	char last_msg[160];
	uint64_t rtt_ns;		/* last ping, 0 if never */
	size_t ids;			/* route entries of this node */
};
/* Snapshot of one node. 0 or -ENOENT. */
int pohm_net_node_info(struct pohm_net *net, int node, struct pohm_node_info *out);
/* Copy of the route table (free with pohm_route_free). 0 or -ENOMEM. */
struct pohm_route;
int pohm_net_route_copy(struct pohm_net *net, struct pohm_route *out);
/* Ping every up node with BACKEND_STATUS; rtt_ns of each is updated. Count answered. */
int pohm_net_ping_all(struct pohm_net *net, uint64_t deadline);

/* What this process's client asked of the cluster (issue 23's budget). */
struct pohm_net_counts {
	uint64_t waits;		/* times a caller waited for replies: every pohm_net_run (its
				 * requests leave in it), a window wait only when its reply
				 * was not on the connections yet (decision 0073) */
	uint64_t requests;	/* requests those callers sent */
	uint64_t setup_waits;	/* waits of connection setup: handshake, ping, route list */
	uint64_t setup_requests;	/* requests of connection setup */
};
/* When (pohm_sys_mono_ns) a node last sent this client a packet, any
 * packet (a reply, a handshake, a route update); 0 if none ever did.  A
 * call that failed while this stayed below its start heard from no node
 * (core/store/kvio.c: the offline decision). */
uint64_t pohm_net_last_rx_ns(struct pohm_net *net);
/* The counts since the client opened, or since this process forked: zero
 * in a fork child until its first use of net (which zeroes the parent's). */
void pohm_net_counts(struct pohm_net *net, struct pohm_net_counts *out);

/* Text of the last cluster-level failure ("" if none), copied into buf. */
void pohm_net_last_error(struct pohm_net *net, char *buf, size_t len);

/* Detect a fork (pid change) and reset the child's copy (every request of
 * the parent unlinked: its memory may go); no-op in the same process.  Lock
 * not held.  Every send calls it; also before freeing requests a fork child
 * inherited (core/store/iocas_defer.c). */
void pohm_net_fork_check(struct pohm_net *net);
/* pthread_atfork hooks (preload registers them): lock / unlock / reset in the child. */
void pohm_net_atfork_prepare(struct pohm_net *net);
void pohm_net_atfork_parent(struct pohm_net *net);
void pohm_net_atfork_child(struct pohm_net *net);

#endif
