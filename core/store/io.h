/*
 * io.h — key operations on every configured group at once, with the
 * version and replica rules of DESIGN.md §3 "Versions and replicas".
 *
 * Keys live in the fsid namespace: id = sha512(fsid || 0 || key).  Each
 * group's copy goes to the node that owns the id in that group, with
 * DIRECT|NEED_ACK; a -95 answer refreshes the route and retries once.
 *
 *  write   stamps the object with a logical clock, max(now, last + 1 ns,
 *          caller's floor), optionally CAS_TIMESTAMP and data CAS; it is
 *          committed when successful_write_count groups acknowledge (default
 *          a majority; POHM_W_MAJORITY forces a majority at least).  Once
 *          committed it waits for the other groups only as long again as
 *          the quorum took (a hung group costs little).  Objects larger than
 *          POHM_IO_PACKET_MAX go as PREPARE / PLAIN_WRITE / COMMIT chunks
 *          of 8 MiB, 8 in flight per group, each answer waited for at most
 *          write_wait_timeout (PROTOCOL.md §10.6: the old object is hidden
 *          meanwhile).
 *  lookup  LOOKUP on all groups; the version is the newest one any
 *          answering group holds (pohm_quorum_pick, decision 0024), decided
 *          once n - w + 1 groups have answered (or all that will).
 *  read    lookup, then READ in pieces (POHM_IO_PIECE, 8 in flight in a
 *          sliding window) from a group holding that version,
 *          with IO CHECKSUM (unless noreadcsum) checked against the bytes
 *          received; checksum mismatch, -84, timeouts or errors fail over to
 *          the next holder.
 *  get     a whole object; with read_repair, stale, missing, corrupt or
 *          uncommitted-newer copies are rewritten with the committed content
 *          under a fresh logical timestamp on all groups (data CAS against
 *          what each holds where known; never an older stamp).
 *  del     DEL on all groups (per-group; absent counts as deleted).
 *
 *  cas_get / cas_put   objects changed only by compare-and-swap (inodes,
 *          buckets): see "compare-and-swap objects" below.  Their versions
 *          are not a linear chain per group (a lost CAS leaves a newer
 *          stamp on a minority until it is rolled back), so they are read
 *          by content, not by the timestamp rule of lookup/get.
 *
 * Every call fills a struct pohm_io_result: per-group outcome and a
 * message naming key, group and node for everything that went wrong or
 * was worked around.  Thread-safe; errors are negative errno.
 */
#ifndef POHM_CORE_IO_H
#define POHM_CORE_IO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "net.h"
#include "wire.h"

#define POHM_IO_PACKET_MAX	(32u << 20)	/* larger writes are chunked */
#define POHM_IO_PIECE		(4u << 20)	/* reads go in pieces of this size */

struct pohm_client;

struct pohm_group_reply {
	uint32_t group;
	int node;			/* node index, -1 when the group has no route */
	int status;			/* 0, the server's status or a local -errno */
	struct pohm_time ts;		/* record timestamp of this group's copy */
	uint64_t size;			/* object size this group reported */
	uint8_t csum[POHM_ID_SIZE];	/* sha512 of the data (lookup with checksum) */
	int has_csum;
	uint64_t record_flags;
	uint64_t rtt_ns;		/* answer time */
	int repair;			/* read repair: 0 none, 1 rewritten, <0 failed;
					 * cas_put: rollback or catch-up of this group */
	int applied;			/* cas_put: 1 holds our version, 0 not, -1 unknown
					 * (sent, no answer, and a LOOKUP could not tell) */
};

struct pohm_io_result {
	unsigned ngroups;
	struct pohm_group_reply g[POHM_MAX_GROUPS];	/* in configured group order */
	int chosen;			/* index of the group data/version came from, -1 */
	struct pohm_time ts;		/* the version read or written */
	uint64_t size;			/* object size of that version */
	unsigned committed;		/* write/del: groups that acknowledged */
	unsigned split;			/* cas_put: attempts that applied on fewer than a
					 * majority and were rolled back (racing writers) */
	unsigned unknown;		/* cas_put -EIO: groups whose outcome was still
					 * unknown when it gave up (write_wait_timeout) */
	char msg[1024];			/* "key K" then ": note; note...", one line */
	unsigned notes;			/* notes in msg (problems met or worked around) */
	int has_csum;			/* cas_put, cas_put_n: csum is set */
	uint8_t csum[64];		/* SHA-512 of the bytes put, as the CAS computed
					 * it (its caller need not hash them again) */
};

#define POHM_W_CAS_TS		0x1	/* refuse if a group holds a newer stamp */
#define POHM_W_CAS_DATA		0x2	/* refuse unless sha512(current) == parent */
#define POHM_W_MAJORITY		0x4	/* commit needs a majority at least */

struct pohm_write_opts {
	unsigned flags;			/* POHM_W_* */
	uint8_t parent[POHM_ID_SIZE];	/* for POHM_W_CAS_DATA */
	uint64_t min_ts_ns;		/* clock floor (e.g. stored version + 1) */
	uint64_t user_flags;		/* stored with the record */
};

/* Open a client for cfg (checked; kept by reference). 0 or -EINVAL/-ENOMEM with a message. */
int pohm_client_open(struct pohm_client **out, const struct pohm_config *cfg, char *err,
		     size_t errlen);
/* Close the client and its connections. */
void pohm_client_close(struct pohm_client *c);
/*
 * Offline mode (offline.c, DESIGN §0.4).  When a call of the kv seam
 * (kvio.c) fails and no node sent anything since it started, no group
 * answers: for a window (1 s, doubling to 5 s while it lasts) every kv call
 * fails with -EIO at once, without a connect; the first call after the
 * window tries the storage again, and any answer ends offline mode.
 * 1 while in such a window, else 0.
 */
int pohm_client_offline(struct pohm_client *c);
/* Call fn(arg, until, step) when this client enters or extends offline
 * mode, and fn(arg, 0, 0) when it ends (other processes of a cache learn
 * it: core/mount).  Set before the client is used. */
void pohm_client_offline_hook(struct pohm_client *c,
			      void (*fn)(void *arg, uint64_t until_ns, uint64_t step_ns), void *arg);
/* Start offline until until_ns (pohm_sys_mono_ns clock), the window
 * another process found, step_ns its length; nothing when it is over. */
void pohm_client_offline_seed(struct pohm_client *c, uint64_t until_ns, uint64_t step_ns);
/* The client's connection layer (status reports, pings). */
struct pohm_net *pohm_client_net(struct pohm_client *c);

/* Write len bytes (len > 0) as the whole object key. 0 when committed, else -errno. */
int pohm_io_write(struct pohm_client *c, const void *key, size_t keylen, const void *data,
		  size_t len, const struct pohm_write_opts *opts, struct pohm_io_result *res);
/* One write of pohm_io_write_n. */
struct pohm_io_write_one {
	const void *key;
	size_t keylen;
	const void *data;
	size_t len;
	struct pohm_io_result res;
	int rc;				/* out: what pohm_io_write returned for it */
	int done;			/* internal */
};
/*
 * pohm_io_write (no options) of n different keys: every one of at most
 * POHM_IO_PACKET_MAX bytes sent to every group together and waited for
 * once (issue 23: a push's new chunk generations); the others, and any
 * the batch could not send, each alone.  Nothing orders them: any subset
 * may be committed when one fails, so callers send together only objects
 * no reader finds before a later commit names them (fresh chunk
 * generations).  Returns 0; w[i].rc and w[i].res say each key's outcome.
 */
int pohm_io_write_n(struct pohm_client *c, size_t n, struct pohm_io_write_one *w);
#define POHM_LOOKUP_CSUM	0x1	/* every group sends the sha512 of its copy */
#define POHM_LOOKUP_ALL		0x2	/* wait for every group (until the deadline), not the quorum */

/* Committed version of key (res->ts, res->size), flags POHM_LOOKUP_*.
 * 0, -ENOENT (absent), or -errno when no group answered. */
int pohm_io_lookup(struct pohm_client *c, const void *key, size_t keylen, unsigned flags,
		   struct pohm_io_result *res);
/* Read up to len bytes at off of the committed version into buf; *got = bytes read. */
int pohm_io_read(struct pohm_client *c, const void *key, size_t keylen, uint64_t off, void *buf,
		 size_t len, size_t *got, struct pohm_io_result *res);
/* Read the whole committed object into *data (free with free()); read repair if enabled. */
int pohm_io_get(struct pohm_client *c, const void *key, size_t keylen, uint8_t **data,
		size_t *len, struct pohm_io_result *res);
/* Consumer of a streamed read: n bytes at object offset off, in order, each
 * piece verified first.  0 to go on, or -errno to stop the read with it. */
typedef int (*pohm_io_sink_fn)(void *arg, const uint8_t *p, size_t n, uint64_t off);
/*
 * The whole committed object to sink, piece by piece in order, without
 * holding it in memory (*total = bytes delivered).  A group that fails
 * part-way is followed by another from the first byte not delivered; each
 * batch of pieces gets its own read_wait_timeout.  With read_repair, an
 * object up to POHM_IO_PACKET_MAX is read whole and repaired as by
 * pohm_io_get, then delivered in one call.  0 or -errno (sink's included).
 */
int pohm_io_get_stream(struct pohm_client *c, const void *key, size_t keylen,
		       pohm_io_sink_fn sink, void *arg, uint64_t *total,
		       struct pohm_io_result *res);
/* Consumer of pohm_io_get_many: object i whole (valid during the call).  0 to go
 * on; -EBADMSG: not the bytes the caller expects (another group's copy is
 * tried); another -errno stops the call with it. */
typedef int (*pohm_io_many_fn)(void *arg, size_t i, const uint8_t *data, size_t len);
/*
 * Whole immutable objects keys[0..n) (NUL-terminated; written once under a
 * fresh key and never changed, e.g. data chunks) to fn in key order, up to
 * inflight keys at once through one net window.  One READ per key and no
 * LOOKUP, no version rule and no IO CHECKSUM: any group's copy is the
 * object, and the caller verifies it against a checksum it already holds
 * (fn's -EBADMSG), which also covers what the read checksum would (the
 * node does not hash, the client hashes once).  A missing, failing or
 * refused copy is followed by the next group's.  max_len (0: unknown)
 * bounds an object's size, so answers are read into reused buffers.
 * 0, -ENOENT (a key absent on every group), -EIO (no good copy), fn's -errno.
 */
int pohm_io_get_many(struct pohm_client *c, size_t n, const char *const *keys, unsigned inflight,
		     size_t max_len, pohm_io_many_fn fn, void *arg, struct pohm_io_result *res);
/* Delete key on every group. 0, -ENOENT (absent everywhere) or -errno. */
int pohm_io_del(struct pohm_client *c, const void *key, size_t keylen,
		struct pohm_io_result *res);

/* ---- compare-and-swap objects (DESIGN.md §3 "Versions and replicas")
 *
 * A version is its bytes.  It is committed once a majority of all
 * configured groups hold it (the same SHA-512; every copy of a version
 * carries the version's stamp, but that is not what decides).  A CAS write
 * is a data CAS against the content it replaces, sent to every group at
 * once (one round trip); it is committed when a majority applied it.
 * Writers racing from one version may split the groups so that none has a
 * majority: each undoes its copies (below), and the one the key's first
 * answering group (in a per-key order) applied tries once more the arbiter
 * first (that group alone, then the others, so racing writers meet there
 * one at a time and the loser writes nothing).  A key the writer lost
 * recently, or one with a group behind, goes the arbiter way at once.
 * One that applied on fewer is undone by its writer
 * on exactly the groups that applied it, by a data CAS against ours (a
 * group that moved on is left alone): to the content a majority holds now
 * if any, else to what it replaced; a create to the absent marker, a
 * 16-byte object that reads as absent (Elliptics has no conditional delete
 * and a missing key passes any CAS, so "create if absent" is a CAS against
 * the marker's checksum: it passes where the key is missing or holds the
 * marker).  Read repair never spreads a version a majority does not hold;
 * it rewrites a differing copy only with a data CAS against that copy, and
 * only once the copy is older than a writer may count it (a CAS write
 * counts acks for POHM_CAS_ACK_WINDOW, at most write_wait_timeout; plus
 * POHM_CAS_CLOCK_SKEW): until then it may be a write in flight, which only
 * its writer may undo.  Missing copies are created at once.  A group
 * speaks for a CAS object only through the key's own node: while it is
 * down the group is silent for the key, never answered by a ring
 * neighbour, which never held the key and would let any CAS pass.
 */

#define POHM_IO_MARKER_LEN	16
#define POHM_CAS_ACK_WINDOW	2000000000ULL	/* acks later than this (ns) do not count */
#define POHM_CAS_CLOCK_SKEW	1000000000ULL	/* hosts' clocks agree within this (ns) */
extern const uint8_t pohm_io_absent_marker[POHM_IO_MARKER_LEN];

struct pohm_cas_old {
	const uint8_t *csum;		/* sha512 of the committed content replaced; NULL: create */
	const void *data;		/* that content, for a rollback (NULL: unknown) */
	size_t len;
	uint64_t min_ts_ns;		/* stamp floor (the version read + 1) */
	uint32_t behind;		/* groups (bit = index in the configured order) whose
					 * copy was older than csum when it was read: not
					 * to be the arbiter */
	int fresh;			/* a create of a key this writer drew at random: no
					 * other writer races for it: every group at once and
					 * no second attempt (decision 0017) */
	int arbiter;			/* contended (the writer just lost this key to a
					 * racing writer): the arbiter first, no
					 * parallel attempt */
};

/*
 * Read the committed content of a CAS object: READ of every group (whole
 * object, with checksum); the answer is the content a majority of all
 * groups holds, as soon as a majority agrees.  While the answers split (a
 * write in flight, or a lost one not yet rolled back) it reads again with a
 * growing random pause; a split whose copies are all older than a writer
 * can take is settled by pohm_cas_fallback and written back, unless a
 * group that gave no usable answer could hold another committed version
 * (then it reads again until the read's time is up: -EIO).  With
 * read_repair, missing copies get the committed content and old differing
 * ones are replaced (data CAS against each); with or without read_repair,
 * an old copy stamped after the committed version (a dead writer's lost
 * write) is undone.  Fills res->ts (the newest
 * stamp among the holders) and csum (sha512 of *data).  0, -ENOENT, -EIO /
 * -ETIMEDOUT (fewer than a majority answered, or the split outlived the
 * read), -EFBIG, -ENOMEM.
 */
int pohm_io_cas_get(struct pohm_client *c, const void *key, size_t keylen, uint8_t **data,
		    size_t *len, uint8_t csum[POHM_ID_SIZE], struct pohm_io_result *res);

/*
 * CAS data over old (see struct pohm_cas_old) on every group.  First every
 * group at once (unless old->arbiter, old->behind, or old->csum without
 * old->data): committed when a majority applied it, one round trip.  If
 * fewer did, it is rolled back where it applied; when that left nothing of
 * ours anywhere, the key did not move on and the tie group (the first in
 * the key's order that answered) applied ours, it is sent once more the
 * arbiter first: the first group in that order that is not behind and can
 * be reached; if it refuses, the write has lost and went nowhere else.
 * Only acks within POHM_CAS_ACK_WINDOW count.  When the window ends with
 * groups unanswered, no group refused and ours could still reach a
 * majority, it is settled by LOOKUPs of every group until
 * write_wait_timeout from the attempt's start: committed once two rounds
 * in a row (one with 1 or 2 groups) find our bytes on every group; else
 * what they found goes to the rollback (which keeps our bytes where a
 * majority holds them).
 * With old->fresh there is no second attempt (nobody to race with).  After
 * a commit, a group that refused is brought up to it where that cannot
 * undo a write that may still win (it holds old, misses the key, or its
 * copy is stamped before old).  res->g[].applied tells exactly where it
 * landed.  0: committed (a majority applied it).
 * -EBADFD: lost (refused somewhere) and not committed; where it had applied
 * it was rolled back, and it can no longer become committed.  -EIO with
 * "outcome unknown" in res->msg and res->unknown > 0: groups that did not
 * answer (or a rollback that did not) could still make it committed.
 * Other -errno as for write.
 */
int pohm_io_cas_put(struct pohm_client *c, const void *key, size_t keylen, const void *data,
		    size_t len, const struct pohm_cas_old *old, struct pohm_io_result *res);

/*
 * The first attempt of pohm_io_cas_put, every group at once, sent without
 * waiting (issue 23: a write whose outcome its caller does not need before
 * returning, and whose every partial outcome the readers settle).  0: sent,
 * the outcome pending in c; -EAGAIN: old does not allow a parallel attempt
 * (put it with pohm_io_cas_put); other -errno: nothing sent.  done(arg,
 * rc, res) (may be NULL) is called once, by pohm_io_cas_settle_deferred,
 * with what pohm_io_cas_put would have returned for that one attempt
 * (never a second one: lost is -EBADFD, undone where it had applied);
 * -ECANCELED (res->unknown set) when this process does not process it:
 * c closed first, or, in a fork child, the parent's entry (the parent
 * processes it).
 */
int pohm_io_cas_put_deferred(struct pohm_client *c, const void *key, size_t keylen,
			     const void *data, size_t len, const struct pohm_cas_old *old,
			     void (*done)(void *arg, int rc, const struct pohm_io_result *res),
			     void *arg);
/*
 * Process every deferred put of c sent by this process: wait for its
 * replies (until deadline at most, and never past its ack window), then
 * confirm, catch up or roll back as pohm_io_cas_put does, and call its
 * done.  One whose replies are not all in by a deadline before its window
 * ends is left to the readers (done with -EIO, res->unknown set).  One
 * thread settles at a time: a call while another thread settles waits for
 * it (until deadline), so every put sent before the call is processed when
 * it returns; a call from a done (nested) returns 0 at once.  Returns how
 * many this call processed (0 at once, no wait, when none is pending).
 */
int pohm_io_cas_settle_deferred(struct pohm_client *c, uint64_t deadline);

#define POHM_IO_CAS_PUT_N	128	/* keys per pohm_io_cas_put_n (an exit push's batch) */

/* One key of pohm_io_cas_put_n: the arguments of pohm_io_cas_put, and its answer. */
struct pohm_io_cas_put {
	const void *key;
	size_t keylen;
	const void *data;
	size_t len;
	struct pohm_cas_old old;
	struct pohm_io_result res;
	int rc;				/* out: what pohm_io_cas_put returned for it */
	int done;			/* internal; 0 on entry */
};

/*
 * pohm_io_cas_put of n <= POHM_IO_CAS_PUT_N different keys, their first
 * attempts (every group at once) sent together and waited for once (issue
 * 23: independent writes of one operation).  Nothing orders them: any
 * subset may land, in any order, and a client that dies meanwhile may leave
 * any subset committed; callers send together only writes each of whose
 * partial outcomes is a state the namespace reads and repairs.  Each key
 * then goes on alone exactly as pohm_io_cas_put would (confirm, rollback,
 * catch-up, the arbiter retry); a key that would not go to every group at
 * once first (cas_parallel_first) is put alone after the others.  p[i].rc
 * and p[i].res are that call's.  0, or -EINVAL (n too large).
 */
int pohm_io_cas_put_n(struct pohm_client *c, size_t n, struct pohm_io_cas_put *p);

#define POHM_IO_CAS_MANY	512	/* keys per pohm_io_cas_get_many */

struct pohm_io_cas_val {
	int status;			/* what pohm_io_cas_get returned for the key */
	uint8_t *data;			/* when 0: the committed content (free()) */
	size_t len;
	uint8_t csum[POHM_ID_SIZE];	/* sha512 of data */
};

/*
 * pohm_io_cas_get of n <= POHM_IO_CAS_MANY keys at once: every group's READ
 * of every key in one round trip (pipelined on the connections), back as
 * soon as each key's content is decided.  A key whose answers leave anything to settle or repair (a
 * split, too few answers, a stale route; with read_repair any differing or
 * missing copy) is then read alone by pohm_io_cas_get, so each out[i] and
 * res[i] is what that call gives.  0 (per-key outcomes in out[i].status),
 * -EINVAL (n too large), -ENOMEM.
 */
int pohm_io_cas_get_many(struct pohm_client *c, size_t n, const char *const *keys,
			 struct pohm_io_cas_val *out, struct pohm_io_result *res);

/* ---- pure helpers (unit-tested without a network) */

struct pohm_cas_vote {
	int status;			/* 0 holds csum; -ENOENT absent (or the marker); 1 pending;
					 * other: no usable answer */
	uint8_t csum[POHM_ID_SIZE];
	struct pohm_time ts;
};

#define POHM_CAS_UNDECIDED	(-EINPROGRESS)	/* pending answers may still decide */
#define POHM_CAS_SPLIT		(-EAGAIN)	/* no content can reach a majority */
#define POHM_CAS_NOQUORUM	(-ENODATA)	/* fewer than a majority can answer */

/*
 * The committed content of a CAS object from per-group answers: the index
 * of a group holding the content that a majority of all n groups holds,
 * -ENOENT when a majority is absent, else one of the POHM_CAS_* codes
 * (UNDECIDED only when not final).
 */
int pohm_cas_pick(const struct pohm_cas_vote *v, size_t n, int final);
/*
 * Settle a split nobody will settle any more (every copy older than a
 * writer can take): the content the most groups hold, ties to a present
 * copy with the newest stamp.  Index of a holder, or -ENOENT (absent), or
 * POHM_CAS_NOQUORUM when no group answered.
 */
int pohm_cas_fallback(const struct pohm_cas_vote *v, size_t n);

struct pohm_vote {
	int status;			/* 0 holds ts; -ENOENT absent; 1 pending; other: no answer */
	struct pohm_time ts;
};

/*
 * Pick the version to read from per-group answers (DESIGN.md §0.2: reads
 * never go back in time): the newest version any answering group holds.  A
 * version acknowledged by w groups is on at least one of any n - w + 1
 * groups, so before the final call it decides only once that many have
 * answered.  Plain objects are never rolled back, so a newer copy is either
 * an acknowledged write whose other copies are down or stale, or a failed
 * write that Elliptics would serve too; CAS objects have their own rules
 * (pohm_cas_pick).  Returns 1 with *ts set (*absent = 1 when no answering
 * group holds the key) and *held = the groups holding exactly *ts (held may
 * be NULL); 0 when undecided; -ENODATA when final and no group answered.
 */
int pohm_quorum_pick(const struct pohm_vote *v, size_t n, unsigned w, int final,
		     struct pohm_time *ts, int *absent, unsigned *held);

/* Logical clock: max(now, *last + 1, floor) in ns since the epoch, stored in *last (atomic). */
uint64_t pohm_clock_next(uint64_t *last, uint64_t now_ns, uint64_t floor_ns);
/* ns since the epoch <-> dnet_time. */
struct pohm_time pohm_time_from_ns(uint64_t ns);
uint64_t pohm_time_to_ns(const struct pohm_time *t);

#endif
