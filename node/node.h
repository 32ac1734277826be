/*
 * node.h — pohmelfs-node: an Elliptics-protocol storage node (issue 5).
 *
 * The node speaks the wire protocol of PROTOCOL.md (3.0 by default, 2.26
 * with --protocol 2.26), owns one backend with a few ids on the ring of its
 * group, persists records in --data DIR (store.c), learns the other nodes of
 * the cluster (peer.c, ring.c), forwards requests it does not own, and
 * injects faults on demand (fault.c).
 *
 * Module map (one concern per file):
 *   main.c      argv → server, probe, test client or offline tools
 *   config.c    options and the key=value config file
 *   server.c    node lifecycle: init (also used by the fuzz target), listen, signals
 *   conn.c      inbound connections: reader threads, reply sending
 *   pool.c      the worker thread pool
 *   handlers.c  one request → replies (socket-free: the fuzz target calls it)
 *   ring.c      the route table and the ring rule (§3.6)
 *   peer.c      outbound links to other nodes: join, gossip, forwarding
 *   store.c     records on disk: writes, reads, deletes, checksums
 *   blob.c      the blob files records are appended to; scan, torn tails
 *   index.c     the in-memory index id -> newest record
 *   gcommit.c   the sync policy: interval or group commit
 *   urec.c      the header of an uncommitted (.u) record
 *   crc32c.c    the per-chunk record checksum
 *   fault.c     the run-time fault file
 *   wire.c      packet framing on sockets (read, writev, connect, listen)
 *   reqbody.c   STATUS, ITERATOR and BULK_READ bodies (one pohm_rd cursor)
 *   client.c    --probe / --client: a raw test client for the bats tests
 *   bench.c     --bench: a load generator for the node alone
 *
 * Locking overview: each object documents its own guard.  Lock order:
 * node.conns_lock → conn.wlock; peers.lock → peer.wlock; the store's key
 * stripes are innermost and never held while sending.
 */
#ifndef POHM_NODE_NODE_H
#define POHM_NODE_NODE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "wire.h"

#define NODE_MAX_JOIN		64
#define NODE_DEFAULT_IDS	16
#define NODE_DEFAULT_THREADS	8
#define NODE_PATH_MAX		4096
#define NODE_DEFAULT_SYNC_INTERVAL 5	/* seconds (gcommit.h), as eblob's sync option */

/* Configuration: command line and config file (config.c). Read-only after start. */
struct node_config {
	struct pohm_addr listen;	/* the one advertised address */
	int have_listen;
	uint32_t group;
	int have_group;
	char data[NODE_PATH_MAX];	/* --data DIR */
	struct pohm_addr join[NODE_MAX_JOIN];
	unsigned njoin;
	unsigned ids;			/* ring ids created at first start */
	int nosync;			/* never fsync (benchmarks) */
	int sync_interval;		/* seconds between syncs; 0 = every write, group commit */
	uint64_t blob_size;		/* start a new blob file past this (0 = 256 MiB) */
	char auth_cookie[64];		/* "" = no authentication required */
	char log[NODE_PATH_MAX];	/* "" = stderr */
	int log_level;
	char pidfile[NODE_PATH_MAX];
	int proto_major, proto_minor;	/* 3.0 or 2.26 */
	unsigned threads;		/* worker pool size */
	uint64_t max_packet;		/* larger headers drop the connection */
	uint64_t max_object;		/* larger objects get -EFBIG (0 = 64 GiB) */
	int32_t backend_id;
	int watch_pid;			/* exit when this process is gone (0 = never) */
};

struct node_store;
struct node_ring;
struct node_faults;
struct node_pool;
struct node_peers;
struct node_conn;
struct node_req;

/* The node.  Fields are set by node_init and read-only afterwards unless noted. */
struct node {
	struct node_config cfg;
	struct node_store *store;
	struct node_ring *ring;
	struct node_faults *faults;
	struct node_pool *pool;		/* NULL in the fuzz target: everything inline */
	/*
	 * The transport's one upcall: conn.c's reader hands every request it
	 * frames to handle (ownership passes).  Set by node_init to
	 * handlers.c's node_handle, so that the transport (conn.c) and the
	 * pool (pool.c) sit below the handlers and import nothing of them.
	 */
	void (*handle)(struct node *n, struct node_req *req);
	struct node_peers *peers;	/* NULL in the fuzz target */
	uint8_t *ids;			/* this node's ring ids, nids × 64 */
	unsigned nids;
	uint8_t cookie[POHM_AUTH_COOKIE_SIZE];
	int need_auth;			/* --auth-cookie given */
	struct pohm_time started;
	int listen_fd;
	/* Runtime state changed by STATUS; accessed with __atomic builtins. */
	int read_only;
	int32_t nflags;
	uint32_t log_level;
	int stopping;
	/* Inbound connections; guarded by conns_lock. */
	pthread_mutex_t conns_lock;
	struct node_conn *conns;
	uint64_t iter_ids;		/* iterator id counter (atomic) */
	/* Requests run on their connection's reader / queued to the pool (atomic). */
	uint64_t served_inline, handed_off;
};

/* One request as read from a connection.  payload is malloc'ed and owned. */
struct node_req {
	struct pohm_cmd cmd;
	uint8_t *payload;
	size_t len;
	struct node_conn *conn;		/* holds a reference */
	struct node_req *next;		/* pool queue link */
};

/* ---------------------------------------------------------------- config.c */
/*
 * Fill c from defaults, then the --config FILE (if any), then argv (which
 * overrides the file).  argv[0] is skipped.  0 or -EINVAL with a message
 * in err.  Server mode needs --listen, --group and --data.
 */
int node_config_parse(struct node_config *c, int argc, char **argv, char *err, size_t errlen);
/* Apply one key=value setting (the file form; keys as the long options). */
int node_config_set(struct node_config *c, const char *key, const char *val, char *err,
		    size_t errlen);
/* Parse a size with an optional K/M/G/T suffix; 0 or -EINVAL. */
int node_parse_size(const char *s, uint64_t *out);

/* ---------------------------------------------------------------- server.c */
/*
 * Set up everything but sockets: store, ids, ring, faults.  Used by the
 * server and by the fuzz target.  0 or -errno (logged).
 */
int node_init(struct node *n, const struct node_config *cfg);
/* Release what node_init set up (after every thread is gone). */
void node_fini(struct node *n);
/* Run the server until SIGTERM/SIGINT: listen, join, accept.  Exit status. */
int node_run(const struct node_config *cfg);

/* ---------------------------------------------------------------- conn.c */
/*
 * Send one packet (hdr->size must equal the iov total) on c, under c's
 * write lock, with one sendmsg where possible.  0 or -errno; a failed send
 * marks the connection dead.  On a capture connection the bytes are
 * appended to its buffer instead.
 */
int node_conn_send(struct node_conn *c, const struct pohm_cmd *hdr, const struct iovec *iov,
		   int iovcnt);
/* Take / drop a reference; the last put frees the connection. */
void node_conn_get(struct node_conn *c);
void node_conn_put(struct node_conn *c);
/* Close the connection now (no more bytes are sent; the reader sees EOF). */
void node_conn_drop(struct node_conn *c);
/* 1 if the connection passed AUTH (or none is required). */
int node_conn_authed(struct node_conn *c);
void node_conn_set_authed(struct node_conn *c);
/* A socket-less connection whose replies are appended to out (fuzz target). */
struct node_conn *node_conn_new_capture(struct node *n, struct pohm_buf *out);
/* 1 once node_conn_drop ran or a send failed. */
int node_conn_dead(struct node_conn *c);
/* Serve a freshly accepted socket on its own reader thread. 0 or -errno. */
int node_conn_serve(struct node *n, int fd);
/* Shut every inbound connection down (at exit). */
void node_conn_drop_all(struct node *n);
/* Free a request (NULL is fine) and drop its connection reference. */
void node_req_free(struct node_req *req);

/* ---------------------------------------------------------------- handlers.c */
/*
 * Handle one request: auth gate, faults, routing (local, forward or -95),
 * then the command.  Replies go to req->conn.  Does not free req.
 */
void node_dispatch(struct node *n, struct node_req *req);
/* node_dispatch, then node_req_free: the pool's job (node_pool_start). */
void node_run_req(struct node *n, struct node_req *req);
/*
 * n->handle (node_init sets it): take a request off a connection's reader.
 * What is short and never waits for a sync runs here on the reader
 * thread, with no handoff; what can take long (group commit, large
 * requests, BULK_READ, the iterator, everything under the delay fault)
 * goes to the pool.  Counts both in n.  Takes req.
 */
void node_handle(struct node *n, struct node_req *req);
/*
 * Feed raw bytes (one or more packets) as if they came from conn, handling
 * each packet synchronously.  Returns 0, or -EMSGSIZE / -EPROTO when a
 * socket would have been dropped (absurd size, truncated packet).
 */
int node_feed(struct node *n, struct node_conn *conn, const uint8_t *p, size_t len);

/* ---------------------------------------------------------------- pool.c */
/*
 * Start threads workers that take requests off the queue and run each
 * through run (node_run_req, which owns and frees it).  NULL on failure.
 */
struct node_pool *node_pool_start(struct node *n, unsigned threads,
				  void (*run)(struct node *n, struct node_req *req));
/* Queue a request (ownership passes to the pool). */
void node_pool_push(struct node_pool *p, struct node_req *req);

/* ---------------------------------------------------------------- peer.c */
/* Start the peer manager (joins cfg.join, gossips). 0 or -errno. */
int node_peers_start(struct node *n);
/* Remember an address to connect to (from JOIN or a route list). */
void node_peers_learn(struct node *n, const struct pohm_addr *a);
/*
 * Forward req to the node at owner (its advertised address) and relay the
 * replies to req->conn with the client's trans.  0 or -errno (not connected).
 */
int node_peers_forward(struct node *n, const struct pohm_addr *owner, struct node_req *req);

/* ---------------------------------------------------------------- client.c */
/* --probe ADDR [--expect-nodes N]: handshake (and route list); exit status. */
int node_probe_main(int argc, char **argv);
/* --client ADDR [opts] CMD ...: the raw test client; exit status. */
int node_client_main(int argc, char **argv);
/* --free-ports N: print N currently bindable loopback ports; exit status. */
int node_free_ports_main(int argc, char **argv);
/* --corrupt-disk DIR ID-HEX: flip a data byte of a stored record; exit status. */
int node_corrupt_main(int argc, char **argv);
/* --records DIR: list the records of a store (running node or not); exit status. */
int node_records_main(int argc, char **argv);

/* ---------------------------------------------------------------- bench.c */
/* --bench ADDR read|write [...]: load generator; prints req/s and MiB/s. */
int node_bench_main(int argc, char **argv);

#endif
