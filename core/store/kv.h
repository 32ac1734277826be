/*
 * kv.h — the storage as the namespace sees it: one replicated key-value
 * store with compare-and-swap on the data's SHA-512.
 *
 * core/ns is written against this interface only.  The production
 * implementation (core/store/kvio.c) maps it onto core/io: every key lives in the
 * fsid namespace on every group, a put is committed at the configured quorum
 * (a majority for CAS puts), a get returns the committed version.  The
 * in-memory implementation (core/store/kvmem.c) serves unit tests and fault
 * injection.  Semantics both must give, taken from Elliptics (DESIGN.md §3):
 *
 *   - get returns the whole value and its SHA-512;
 *   - put with expect == NULL writes unconditionally;
 *   - put with expect == a checksum writes only if the stored value hashes to
 *     it, or if the key is missing (Elliptics lets CAS through on a missing
 *     key); else -EAGAIN, nothing written;
 *   - put with expect == POHM_KV_ABSENT writes only if the key is missing
 *     (a CAS against a parent no data hashes to); else -EEXIST;
 *   - values are never empty (every object carries a header);
 *   - del takes no condition: core/ns only deletes immutable objects.
 */
#ifndef POHM_CORE_KV_H
#define POHM_CORE_KV_H

#include <stddef.h>
#include <stdint.h>

#define POHM_KV_CSUM 64
#define POHM_KV_GET_N 4		/* get_n batches up to this size are remembered (peek) */
#define POHM_KV_GET_N_ROUND 512	/* get_n keys per round trip (kvio.c: POHM_IO_CAS_MANY) */
#define POHM_KV_PUT_N 4		/* keys per put_n */
#define POHM_KV_PUT_MANY 128	/* keys per wait of put_many */

/* The expect value that means "only if the key does not exist". */
extern const uint8_t pohm_kv_absent[POHM_KV_CSUM];
#define POHM_KV_ABSENT pohm_kv_absent
/*
 * The same for a key the writer drew at random (a new inode number): no
 * other writer races for it, so a replicated store may write every copy
 * at once instead of arbitrating first (one round trip; decision 0017).
 * Answers as POHM_KV_ABSENT does (-EEXIST when the key exists).
 */
extern const uint8_t pohm_kv_new[POHM_KV_CSUM];
#define POHM_KV_NEW pohm_kv_new

struct pohm_kv_val {
	uint8_t *data;			/* malloc'ed by the store; free() it */
	size_t len;
	uint8_t csum[POHM_KV_CSUM];	/* sha512(data) */
	uint64_t ts_ns;			/* peek: the version's stamp (realtime ns), 0 unknown */
};

/* One CAS of put_many (kv.h pohm_kv_ops.put_many). */
struct pohm_kv_cas {
	const char *key;
	const void *data;
	size_t len;
	const uint8_t *expect;		/* a condition, as put's (not NULL) */
	const struct pohm_kv_val *base;	/* the value (bytes, stamp) whose checksum is
					 * expect, for undoing a partial write; NULL:
					 * what this thread kept, if anything */
	int st;				/* out: what put returns for key */
};

struct pohm_kv_ops {
	/* Read key: 0, -ENOENT, or another -errno. */
	int (*get)(void *ctx, const char *key, struct pohm_kv_val *out);
	/* Read len bytes at off of key into buf: bytes read (short at end), -ENOENT, -errno. */
	int (*read)(void *ctx, const char *key, uint64_t off, void *buf, size_t len);
	/* Write key (see the file comment for expect): 0, -EAGAIN, -EEXIST, -errno. */
	int (*put)(void *ctx, const char *key, const void *data, size_t len, const uint8_t *expect);
	/* Remove key: 0 or -ENOENT or -errno. */
	int (*del)(void *ctx, const char *key);
	/*
	 * Read immutable objects keys[0..n) whole (data chunks: written once,
	 * never changed), up to inflight at once, each handed to fn in key
	 * order.  The caller verifies the bytes against a checksum it holds:
	 * fn returns 0, -EBADMSG (not those bytes: another replica is tried,
	 * -EIO when none is left) or another -errno to stop.  max_len bounds a
	 * value (0: unknown).  0, -ENOENT (a key missing), -errno.  NULL in a
	 * store without it (callers then use get key by key).
	 */
	int (*get_many)(void *ctx, size_t n, const char *const *keys, unsigned inflight,
			size_t max_len,
			int (*fn)(void *arg, size_t i, const uint8_t *data, size_t len), void *arg);
	/*
	 * get of n keys at once (one round trip in the common case, per few
	 * hundred keys: pipelined): st[i] is what get returns for keys[i],
	 * out[i] filled when 0.  0, or -errno with nothing filled.  peek
	 * knows the values of a call of at most POHM_KV_GET_N keys only.
	 * NULL: callers get key by key.
	 */
	int (*get_n)(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out,
		     int *st);
	/*
	 * The value this thread last read (get, a small get_n) or wrote (a committed
	 * put) for key through this store, with no round trip: a base for an
	 * optimistic CAS (issue 23).  It may be stale; a put against a stale
	 * checksum fails with -EAGAIN and writes nothing.  *age_ns: how long
	 * ago it was read or written.  0 (out filled: free it), -ENOENT (none
	 * kept), -ENOMEM.  NULL in a store without it.
	 */
	int (*peek)(void *ctx, const char *key, struct pohm_kv_val *out, uint64_t *age_ns);
	/*
	 * Take v (data, csum, ts_ns) as the value this thread last read of
	 * key, as if a get had just returned it: the next peek gives it back
	 * and a put against v->csum can undo a partial write with it (issue
	 * 23, decision 0048: a base another process of the cache kept).  Only
	 * for bytes that were a committed version of key.  0 or -ENOMEM.
	 * NULL in a store that needs no such thing.
	 */
	int (*adopt)(void *ctx, const char *key, const struct pohm_kv_val *v);
	/*
	 * put of n <= POHM_KV_PUT_N different keys, every expect a condition
	 * (not NULL), sent together and waited for once (issue 23): st[i] is
	 * what put returns for keys[i].  Nothing orders them: a writer that
	 * dies meanwhile may leave any subset written, so the caller sends
	 * together only writes each of whose partial outcomes the namespace
	 * reads and repairs (decision 0022).  0, or -errno with nothing
	 * written.  NULL: callers put one by one.
	 */
	int (*put_n)(void *ctx, size_t n, const char *const *keys, const void *const *data,
		     const size_t *len, const uint8_t *const *expect, int *st);
	/*
	 * put of n different keys (any n), with the values they replace given
	 * by the caller (put_n's bases come from the thread's few kept
	 * values): up to POHM_KV_PUT_MANY first attempts sent together and
	 * waited for once, each key then settled as put settles it (issue 23:
	 * the pushes of an exit go out together).  p[i].st is what put
	 * returns for p[i].key.  Unordered as put_n: the caller sends together
	 * only writes each of whose partial outcomes is correct alone.  0, or
	 * -errno with nothing written.  NULL: callers put one by one.
	 */
	int (*put_many)(void *ctx, size_t n, struct pohm_kv_cas *p);
	/*
	 * put without a condition (expect NULL) of n different keys, sent
	 * together and waited for once (issue 23: a push's chunk
	 * generations): st[i] is what put returns for keys[i].  Unordered:
	 * any subset may land when one fails, so only objects no reader finds
	 * before a later commit names them go together.  0, or -errno with
	 * st[] unset.  NULL: callers put one by one.
	 */
	int (*write_n)(void *ctx, size_t n, const char *const *keys, const void *const *data,
		       const size_t *len, int *st);
	/*
	 * put (expect a condition, not NULL) whose outcome is processed later
	 * (issue 23: a write its caller need not wait for, every partial
	 * outcome of which the namespace reads and repairs): sent, not waited
	 * for.  0: sent, its outcome pending; -EAGAIN: this store cannot defer
	 * it now (a base it cannot undo a split with, a key just lost): put it
	 * with put; other -errno: nothing sent.  done(arg, st) (may be NULL)
	 * is called once with what put would have returned for it after one
	 * attempt (-EAGAIN/-EEXIST: lost, and undone where it had applied;
	 * -EIO: unknown, left to the readers), by settle or by the store's
	 * next call in this process (kvio.c: before each call), before any
	 * other write of this process goes out after that call.  done runs
	 * on whichever thread settles, while every other thread's store call
	 * waits for that settle: it must not block on anything a store
	 * caller may hold (a lock taken around a store call deadlocks).
	 * NULL in a store without it (callers put).
	 */
	int (*put_deferred)(void *ctx, const char *key, const void *data, size_t len,
			    const uint8_t *expect, void (*done)(void *arg, int st), void *arg);
	/*
	 * Process this process's pending put_deferred outcomes: wait for their
	 * replies until deadline_ns (monotonic, pohm_sys_mono_ns) at most,
	 * undo their partial copies, call their done; one not answered by
	 * then is left to the readers (done -EIO).  How many were processed
	 * (0 at once, no wait, when none is pending).  NULL with put_deferred.
	 */
	int (*settle)(void *ctx, uint64_t deadline_ns);
	/* Call fn for every key whose name starts with prefix (fsck; may be -ENOTSUP). */
	int (*scan)(void *ctx, const char *prefix,
		    int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg);
};

struct pohm_kv {
	const struct pohm_kv_ops *ops;
	void *ctx;
};

/* Release a value returned by get. */
void pohm_kv_val_free(struct pohm_kv_val *v);

/* ---- in-memory store (core/store/kvmem.c), thread-safe ---- */

/* Create an empty in-memory store: 0 or -ENOMEM. */
int pohm_kvmem_new(struct pohm_kv *kv);
/* Destroy it and every value in it. */
void pohm_kvmem_free(struct pohm_kv *kv);
/*
 * Fault injection: after `puts_left` more successful puts, every put and del
 * fails with -EIO (simulates a client that died between two writes).
 * A negative value disables the fault.
 */
void pohm_kvmem_fail_after(struct pohm_kv *kv, long puts_left);
/* Number of puts performed so far (to enumerate crash points). */
long pohm_kvmem_puts(const struct pohm_kv *kv);
/* Fault: after puts_left more puts, the next one applies but answers -EIO
 * (an outcome unknown to the writer), and the then_failing gets after it
 * fail -EIO (the reads that would settle it; other keys' writes go on);
 * puts_left < 0 clears it. */
void pohm_kvmem_fail_unsure(struct pohm_kv *kv, long puts_left, int then_failing);
/* Fault: the puts of a put_n applied last key first (0: in order), so
 * that a fault between them leaves either one alone. */
void pohm_kvmem_put_n_reverse(struct pohm_kv *kv, int on);
/* Number of put_n calls so far (each one wait in a replicated store). */
long pohm_kvmem_put_n_calls(const struct pohm_kv *kv);
/* Number of write_n calls so far (each one wait in a replicated store). */
long pohm_kvmem_write_n_calls(const struct pohm_kv *kv);
/* Number of keys stored. */
size_t pohm_kvmem_count(const struct pohm_kv *kv);
/* Fault: put_deferred's writes never reach the store (a writer killed
 * before they left, or lost everywhere): their done says -EIO, nothing
 * is written (0: they apply when sent, as the common case does). */
void pohm_kvmem_defer_lose(struct pohm_kv *kv, int on);
/* Number of put_deferred outcomes still pending (not settled). */
long pohm_kvmem_deferred(const struct pohm_kv *kv);

/* ---- the replicated store (core/store/kvio.c) ---- */

struct pohm_client;
/* Make kv use client (core/io) for every operation; client must outlive kv. */
void pohm_kvio_init(struct pohm_kv *kv, struct pohm_client *client);

#endif
