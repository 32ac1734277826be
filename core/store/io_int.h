/*
 * io_int.h — internals shared by the files of the group client (io.c:
 * write, lookup, read, get, delete; iocas.c: compare-and-swap objects).
 * Not for other modules.
 */
#ifndef POHM_CORE_IO_INT_H
#define POHM_CORE_IO_INT_H

#include <sys/types.h>

#include "io.h"

struct pohm_client {
	const struct pohm_config *cfg;
	struct pohm_net *net;
	uint64_t clock_last;		/* last stamp issued, ns; atomic (pohm_clock_next) */
	uint8_t marker_sum[POHM_ID_SIZE];	/* sha512 of pohm_io_absent_marker */
	/* Offline mode (offline.c): 0, or the monotonic ns until which no call
	 * reaches the network; and the length of the current window.  Relaxed
	 * atomics, any thread. */
	uint64_t offline_until_ns, offline_step_ns;
	/* Told of each change of offline mode (pohm_client_offline_hook); set
	 * before the client is used, then read-only. */
	void (*offline_fn)(void *arg, uint64_t until_ns, uint64_t step_ns);
	void *offline_arg;
	/* The deferred CAS puts whose outcome nobody processed yet
	 * (iocas_defer.c): a list pushed and taken whole by atomic
	 * exchange, no lock (a fork child tells its copy -ECANCELED). */
	struct io_deferred *deferred;
	/* The pid of the process one of whose threads is processing that list
	 * (pohm_io_cas_settle_deferred: one settler at a time, so a call that
	 * finds the list empty still waits for its outcomes), or 0; atomic.
	 * A fork child finding its parent's pid takes it over. */
	pid_t settler;
};

/* One operation on every group: its requests, their groups, the result. */
struct gop {
	struct pohm_client *c;
	struct pohm_io_result *res;
	uint8_t id[POHM_ID_SIZE];
	struct pohm_req reqs[POHM_MAX_GROUPS];
	struct pohm_req *ptrs[POHM_MAX_GROUPS];
	unsigned gi[POHM_MAX_GROUPS];	/* request k → group index */
	size_t n;
	unsigned w;			/* groups needed */
	uint64_t start, quorum_at;
	int wait_rest;			/* lookup: after the quorum, wait a grace for the rest */
	int wait_all;			/* lookup: wait for every group */
	unsigned pre_ok;		/* write: groups that acknowledged in an earlier step */
	int bad[POHM_MAX_GROUPS];	/* copy found corrupt while reading */
	int sink_failed;		/* read: the caller's sink refused the bytes */
	uint64_t piece_timeout;		/* read: non-zero = a fresh deadline per batch of pieces */
	int own_node;			/* CAS object: each group answers only from the key's
					 * own node (pohm_net_owner) */
};

/* Start op for key: res cleared, every group "not waited for". */
void io_op_init(struct gop *op, struct pohm_client *c, const void *key, size_t keylen,
		struct pohm_io_result *res);
/* Release the requests' replies (op->n = 0). */
void io_op_release(struct gop *op);
/* Append "; text" (or ": text" first) to the result message. */
void io_note(struct gop *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Note a group's failure: "group 2 node 127.0.0.1:1026: why[: node's last error]". */
void io_note_group(struct gop *op, unsigned gi, int st, const char *what);
/* Add a request for group index gi; a group without route gets -ENXIO and no request. */
struct pohm_req *io_op_add(struct gop *op, unsigned gi, int32_t cmd, uint64_t flags,
			   const void *p1, size_t n1, const void *p2, size_t n2);
/* Run the requests; those answered -95 are re-routed after a forced refresh and sent once more. */
void io_op_run(struct gop *op, uint64_t deadline, pohm_enough_fn enough);
/* io_op_run's second half, for requests run together with other ops' (a
 * multi-key CAS): those answered -95 are re-routed and sent once more. */
void io_op_reroute(struct gop *op, uint64_t deadline, pohm_enough_fn enough);
/* The end of op's grace for a quorum in at quorum_t: as long again as the
 * quorum took (at least 20 ms). */
uint64_t io_grace_end(const struct gop *op, uint64_t quorum_t);
/* The quorum is in: lower *dl to a grace as long as the quorum took (at least 20 ms). */
void io_set_grace(struct gop *op, uint64_t *dl);
/* io_set_grace for a read's repair, except with read_repair 2 (fsck's
 * repair): then *dl stays, every group's answer is waited for. */
void io_set_read_grace(struct gop *op, uint64_t *dl);
/* Enough for a write: op->w acknowledged (with op->pre_ok), then the rest for a grace. */
int io_write_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl);
/* Several keys' writes run together (a multi-key CAS, a batch of chunks):
 * op[i] (NULL: not sent) with its own deadline dl[i]. */
struct io_many {
	size_t n;
	struct gop **op;
	uint64_t *dl;
};
/* Enough for io_many (arg): every key's write enough (io_write_enough, its
 * own grace once it has its quorum); once all have their quorum, *dl
 * lowered to the longest of their graces. */
int io_many_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl);
/* A plain write's quorum (successful_write_count; a majority at least with
 * POHM_W_MAJORITY in flags). */
unsigned io_write_quorum(struct pohm_client *c, unsigned flags);
/* A plain write that ok groups committed (fewer than op->w): its message
 * noted; -EBADFD (a CAS lost), -ETIMEDOUT (only timeouts) or -EIO. */
int io_write_error(struct gop *op, unsigned ok);
/* Per-group outcomes of the requests into res->g; returns how many succeeded. */
unsigned io_write_collect(struct gop *op);
/* Group answer r to a whole-object READ of a CAS object as a vote (iocas.c):
 * pending 1, the marker -ENOENT, else its content's checksum (taken from the
 * node, or hashed and checked when verify); data and dlen point into r's reply. */
void io_cas_vote_read(const struct gop *op, const struct pohm_req *r, struct pohm_cas_vote *v,
		      const uint8_t **data, size_t *dlen, int verify);

/* iocas.c, for the deferred put (iocas_defer.c). */
/* Acks later than this after a CAS attempt's start do not count (ns). */
uint64_t io_cas_ack_window(const struct pohm_client *c);
/* A WRITE's outcome: 1 applied, 0 not (refused, failed, never sent), -1 unknown. */
int io_cas_write_outcome(const struct pohm_req *r);
/* An attempt's start: outcomes cleared, stamped now, its WRITE attributes in io. */
void io_cas_attempt_start(struct gop *op, size_t len, const struct pohm_cas_old *old,
			  uint8_t io[POHM_IO_ATTR_SIZE]);
/* The rest of an attempt once its writes were answered (res->g[].applied
 * set): confirm unknown outcomes, catch up or roll back; what
 * pohm_io_cas_put returns, *retry as there. */
int io_cas_attempt_end(struct gop *op, const void *data, size_t len, const uint8_t *sum,
		       const struct pohm_cas_old *old, int parallel, int *retry);
/* Whether a first attempt over old goes to every group at once. */
int io_cas_parallel_first(const struct pohm_cas_old *old);
/* Drop every deferred put unprocessed (client close): each done told
 * -ECANCELED, outcome unknown (res->unknown). */
void io_cas_deferred_drop(struct pohm_client *c);

/* offline.c: the offline decision of the kv seam (kvio.c). */
/* Before a call: -EIO while offline (no network touched), else 0 with *t0
 * its start.  When the window is over, one caller (the first) probes. */
int io_offline_gate(struct pohm_client *c, uint64_t *t0);
/* After the call started at t0 returned r: a failure while no node sent
 * anything since t0 starts (or extends) offline mode; an answer ends it.
 * Returns r with every network errno as -EIO (io_net_errno). */
int io_offline_settle(struct pohm_client *c, uint64_t t0, int r);
/* r, or -EIO when r is an errno of the network (EHOSTUNREACH, ECONNREFUSED,
 * ETIMEDOUT, ENOTCONN, ECONNRESET, EPIPE, ...) that no file call returns. */
int io_net_errno(int r);

#endif
