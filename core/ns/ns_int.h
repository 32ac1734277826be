/*
 * ns_int.h — internals shared by the files of the namespace module.  Not
 * for other modules.  Their order, bottom to top (each calls only files
 * below it; tests/circles.sh, issue 20, session 13): ns.c (helpers,
 * inodes, xattrs), nslazy.c (the root check), nschunk.c (one chunk), nsmap.c,
 * nsdata.c, nsdir.c (buckets, entries, intents, the move commit), nsattr.c
 * (getattr, setattr, directory lookups), nsops.c, nsrepair.c, ns_http.c
 * (the http_compat hooks, called from below through ns->http: ns_http.h
 * says why), nsresolve.c, nsopen.c (open, close).
 */
#ifndef POHM_CORE_NS_INT_H
#define POHM_CORE_NS_INT_H

#include <pthread.h>

#include "ns.h"

#define POHM_NS_HINTS 256

struct pohm_ns {
	struct pohm_kv kv;		/* what ns calls: store itself, or nslazy.c's wrapper over it */
	struct pohm_kv store;		/* the store given to pohm_ns_open */
	struct pohm_kv_ops lazy_ops;	/* nslazy.c's wrapper (lazy_root), written at open */
	struct pohm_kv base_kv;		/* what nsbase.c's wrapper forwards to (set at open) */
	struct pohm_kv_ops base_ops;	/* nsbase.c's wrapper (base_note), written at open */
	void (*base_note)(void *arg, const char *key, const struct pohm_kv_val *v);
	int (*base_load)(void *arg, const char *key, struct pohm_kv_val *out, uint64_t *age_ns);
	void *base_arg;			/* pohm_ns_opts: all four set at open, then read only */
	uint64_t base_max_ns;
	pthread_mutex_t root_lock;	/* serializes the lazy root check (nslazy.c) */
	int root_ready;			/* root checked; atomic (acquire/release) */
	uint32_t root_uid, root_gid, root_mode;	/* for a root this client creates */
	void (*root_failed)(void *arg, int err);	/* pohm_ns_opts */
	void *root_failed_arg;
	char fsid[64];
	unsigned bucket_max;
	unsigned chunk_shift;
	uint64_t intent_timeout_ns;
	unsigned max_retries;
	int http_compat;		/* path copies of files (ns_http.c) */
	const struct ns_http_ops *http;	/* their hooks (ns_http.h), set at open */
	int no_inline;			/* pohm_ns_opts.no_inline (set at open) */
	struct ns_map_cache *map_cache;	/* map objects read or written (nsmap.c, own lock) */
	pthread_mutex_t rng_lock;	/* guards rng, rng_pid */
	uint64_t rng;			/* xorshift state */
	pid_t rng_pid;			/* process that seeded rng: a fork child reseeds */
	pthread_mutex_t hint_lock;	/* guards hint_dir, hint_depth, settled */
	uint64_t hint_dir[POHM_NS_HINTS];	/* directory whose depth is cached in the slot */
	uint8_t hint_depth[POHM_NS_HINTS];	/* its deepest bucket level seen */
	/* MOVE txids this handle knows settled at their source (decision
	 * 0067: its finish or a settle was acknowledged; a txid is never
	 * reused, so it stays true); lossy, direct-mapped by txid. */
	uint64_t settled[POHM_NS_HINTS];
	/* Refused deferred finishes not yet redone (ns_finish_owed): pushed
	 * by a settle's done, taken whole by atomic exchange, no lock. */
	struct ns_owed *owed;
};

/* A decoded bucket plus what is needed to CAS it back. */
struct ns_bucket_ref {
	struct pohm_bucket bk;
	char key[POHM_KEY_MAX];
	uint8_t csum[POHM_KV_CSUM];
	int absent;			/* not stored yet: CAS with POHM_KV_ABSENT */
};

/* nslazy.c: make the root inode if absent (CAS, once among clients): 0 or -errno. */
int ns_root_check(struct pohm_ns *ns);
/* nslazy.c: ns->kv over ns->store that runs ns_root_check before the
 * first storage call of the handle (pohm_ns_opts.lazy_root). */
void ns_lazy_kv(struct pohm_ns *ns);
/* nsbase.c: ns->kv wrapped so that every inode and bucket value read or
 * written goes to base_note (pohm_ns_opts; decision 0048). */
void ns_base_kv(struct pohm_ns *ns);
/* A CAS base of key from base_load younger than base_max_ns (the fallback
 * of ns_peek): 0 (v filled, free it), -ENOENT. */
int ns_base_peek(struct pohm_ns *ns, const char *key, struct pohm_kv_val *v);
/* Non-zero random 64 bits, never the same stream in two processes: the
 * state is reseeded from getrandom when the pid differs from the seeder's
 * (a fork child), so siblings do not draw the same inode numbers, txids
 * and generations (issue 19). */
uint64_t ns_random(struct pohm_ns *ns);
void ns_backoff(struct pohm_ns *ns, unsigned attempt);	/* random sleep growing with attempt */
uint64_t ns_now_ns(void);
void ns_now_ts(struct pohm_ts *t);
void ns_hdr(struct pohm_ns *ns, struct pohm_obj_hdr *h, uint8_t type, uint64_t parent,
	    const char *key);
/* ns.c: inodes. */
/* Read an inode with its checksum; tombstones are -ENOENT unless want_tomb. */
int ns_inode_get(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *in, uint8_t *csum,
		 int want_tomb);
/*
 * Optimistic CAS (issue 23, decision 0017): the value of key this thread
 * read or wrote less than NS_PEEK_NS ago (kv.h peek), as the base of a CAS
 * that then needs no read.  It may be stale: only a CAS that succeeded
 * against it may act on it; anything else is decided on a fresh read.
 * 0 (v filled, free it), -ENOENT (none, too old, or no peek in the store).
 */
#define NS_PEEK_NS	2000000000ULL
int ns_peek(struct pohm_ns *ns, const char *key, struct pohm_kv_val *v);
/* Write an inode: expect NULL / csum / POHM_KV_ABSENT as in kv.h. */
int ns_inode_put(struct pohm_ns *ns, const struct pohm_inode *in, const uint8_t *expect);
/*
 * CAS loop on an inode: fn edits *in and returns 0 to write it, 1 to stop
 * without writing (success), or < 0 to fail.  On success *out (if given)
 * receives the stored inode.  The first attempt may run fn on the version
 * this thread last saw (ns_peek) and write it without a read; fn must
 * therefore be safe to run again (it already is for retries).
 */
int ns_inode_update(struct pohm_ns *ns, uint64_t ino,
		    int (*fn)(struct pohm_inode *in, void *arg), void *arg,
		    struct pohm_inode *out);
/*
 * setattr's change of *in by sa (nsattr.c), inside a CAS: 0 to write it,
 * 1 when sa is based and none of its bits is left to set (nothing
 * changed), -EISDIR/-EINVAL (a size change of a non-regular file).  Also
 * the attributes a commit carries (pohm_ns_commit_map).
 */
int ns_setattr_apply(struct pohm_inode *in, const struct pohm_setattr *sa);
/* Adjust nlink by delta; at 0 the inode becomes a tombstone. */
int ns_inode_nlink(struct pohm_ns *ns, uint64_t ino, int delta);
/* ns_inode_nlink telling the link count it left (0: the inode is a tombstone). */
int ns_inode_nlink_to(struct pohm_ns *ns, uint64_t ino, int delta, uint32_t *nlink);
/* nsattr.c: the directory lookups. */
/*
 * A create's first look (issue 23): dir's inode and name's bucket (the
 * depth hint's) in one round trip.  -ENOENT / -ENOTDIR / -errno when dir
 * is not a live directory (as check_dir); else the name in the plain case:
 * 0 with *e (an entry without intent, in a NORMAL bucket; clear it), or
 * NS_NAME_ABSENT (a NORMAL bucket without it, or no bucket at depth 0);
 * anything else (split, splitting or sealed bucket, an intent, a read
 * that failed) is NS_NAME_UNKNOWN: ns_entry_get decides.  The bucket read
 * also serves the insert that follows (ns_peek).
 */
#define NS_NAME_UNKNOWN	1
#define NS_NAME_ABSENT	2
int ns_dir_lookup(struct pohm_ns *ns, uint64_t dir, const char *name, struct pohm_dentry *e);
/* ns_dir_lookup that also reads the inode also (0: none) in the same round
 * trip, for a CAS of it right after (ns_peek, decision 0017); its content
 * is not looked at.  The caller's guess, e.g. the cache's record of the
 * name's inode: a wrong guess costs nothing but the read. */
int ns_dir_lookup_with(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t also,
		       struct pohm_dentry *e);
/* ns_dir_lookup of dir1/name1 and dir2/name2 (dir1 != dir2) in one round
 * trip: *r1, *r2 (and e1, e2) as ns_dir_lookup gives each.  0, 1 (not
 * done: no get_n, or one directory), or the get_n's -errno. */
int ns_dir_lookup_pair(struct pohm_ns *ns, uint64_t dir1, const char *name1,
		       struct pohm_dentry *e1, int *r1, uint64_t dir2, const char *name2,
		       struct pohm_dentry *e2, int *r2);
/* ns.c: helpers. */
/* Validate a single path component: 0, -EINVAL, -ENAMETOOLONG. */
int ns_check_name(const char *name);
/* DT_* for an inode mode. */
uint8_t ns_dtype(uint32_t mode);

/* nsops.c */
/*
 * Redo the finishes of this handle's renames whose deferred finish was
 * refused (finish_told queued them: a settle's done must not make store
 * calls, every other thread's call waits for it).  Called where no settle
 * is running on this thread: at close, at the start of a rename and of a
 * listing (ns_moved_settle does the finish it needs itself).  A no-op
 * when none is owed.
 */
void ns_finish_owed(struct pohm_ns *ns);

/* nsdir.c */
/* A reader's view of e (decision 0067): no intent, or only the MOVED_IN mark. */
#define NS_PLAIN(e)	((e)->intent == POHM_INTENT_NONE || (e)->intent == POHM_INTENT_MOVED_IN)
/* Remember that MOVE txid is settled at its source (its finish, or a
 * settle, was acknowledged). */
void ns_moved_note(struct pohm_ns *ns, uint64_t txid);
/*
 * Before a change of entry e of ddir that carries POHM_INTENT_MOVED_IN (decision
 * 0067): the source (e->i_dir, e->i_name) loses its MOVE intent e->i_txid
 * if it still has it (the rename's finish, as a resolver does it; CAS on
 * the source's bucket), unless this handle knows it settled.  Then the caller's write
 * drops the mark (ns_intent_drop).  0, -errno; a no-op for other entries.
 */
int ns_moved_settle(struct pohm_ns *ns, uint64_t ddir, const struct pohm_dentry *e);
/* Clear e's intent fields in memory (the next store drops them). */
void ns_intent_drop(struct pohm_dentry *e);
/* Put intent's fields (its name copied, its time now) on entry e: 0 or -ENOMEM. */
int ns_intent_copy(struct pohm_dentry *e, const struct pohm_dentry *intent);
/* Read the leaf bucket responsible for name in dir (may be absent root). */
int ns_bucket_locate(struct pohm_ns *ns, uint64_t dir, const char *name,
		     struct ns_bucket_ref *ref);
/* Read bucket (dir, depth, index) into ref: 0, -ENOENT, -EIO (fsck repairs). */
int ns_bucket_read_at(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index,
		      struct ns_bucket_ref *ref);
/* One write of a put_n (kv.h): key data len expect as for put; st its answer. */
struct ns_put {
	const char *key;
	const void *data;
	size_t len;
	const uint8_t *expect;
	int st;
};
/*
 * The first attempt of ns_entry_insert (the peeked bucket, plain case:
 * room, the name absent) sent in one round trip with the nalso <
 * POHM_KV_PUT_N other writes also[], through kv put_n (issue 23, decision
 * 0022: a new inode and its entry, a mkdir's parent count).  1: not tried
 * (no plain peeked bucket, no put_n in the store), nothing written; a
 * -errno with also[i].st untouched: failed before anything was sent.  Else
 * all were sent: also[i].st is each other write's answer, and the return
 * the bucket's: 0 inserted, -EAGAIN lost (nothing of it written:
 * ns_entry_insert reads), or -errno (its outcome may be unknown:
 * ns_entry_insert settles it by our txid).
 */
int ns_entry_insert_along(struct pohm_ns *ns, uint64_t dir, const struct pohm_dentry *e,
			  struct ns_put *also, size_t nalso);
/* The bucket of name in dir as this thread read or wrote it within
 * NS_PEEK_NS (ns_peek) is NORMAL, has room and lacks name, and the store
 * has put_n: a create may go straight to ns_entry_insert_along, whose CAS
 * succeeding proves all of that held at its commit (decision 0017). */
int ns_name_absent_peeked(struct pohm_ns *ns, uint64_t dir, const char *name);
/* The empty root bucket of the new directory dir (a fresh tag) encoded
 * into b, its key into key (POHM_KEY_MAX): a mkdir writes it with the
 * inode (decision 0079).  0 or -errno. */
int ns_bucket_new_root(struct pohm_ns *ns, uint64_t dir, struct pohm_buf *b, char *key);
/*
 * The first attempt of ns_inode_update without its write: fn run on the
 * version of ino this thread saw (ns_peek), version and txid moved on, the
 * bytes in *b (pohm_buf_free them) and the checksum they replace in csum,
 * for a put_n.  0, -ENOENT (no peeked copy), 1 (fn says stop), -errno.
 */
int ns_inode_change_peeked(struct pohm_ns *ns, uint64_t ino,
			   int (*fn)(struct pohm_inode *in, void *arg), void *arg,
			   struct pohm_buf *b, uint8_t *csum);
/* 1 when this thread read or wrote dir's inode within NS_PEEK_NS
 * (ns_peek) and it was a live directory then; else 0. */
int ns_dir_peeked(struct pohm_ns *ns, uint64_t dir);
/* 1 when this thread read or wrote inode ino within NS_PEEK_NS, live. */
int ns_inode_peeked(struct pohm_ns *ns, uint64_t ino);
/* nlink_fn of ns_inode_nlink, for ns_inode_change_peeked (arg: int delta). */
int ns_nlink_fn(struct pohm_inode *in, void *arg);
/* An rmdir's (or a replaced directory's) tombstone, for ns_inode_update and
 * ns_inode_change_peeked: nlink 0, POHM_OBJF_TOMBSTONE, ctime now. */
int ns_tomb_fn(struct pohm_inode *in, void *arg);
/* ns_bucket_store of a NORMAL bucket in one put_n with *also (also->st its
 * answer; decision 0022).  1: not sent (no put_n, or not a NORMAL bucket
 * already stored); else as ns_bucket_store. */
int ns_bucket_store_along(struct pohm_ns *ns, struct ns_bucket_ref *ref, struct ns_put *also);
/* ns_bucket_store of a NORMAL bucket already stored, sent through kv
 * put_deferred (decision 0073): 0 sent, done(arg, st) told later with
 * put's answer (-EAGAIN/-EEXIST lost, -EIO unknown); 1 not sent (no
 * put_deferred, not such a bucket, or the store would not defer it: store
 * it); -errno nothing sent. */
int ns_bucket_store_deferred(struct pohm_ns *ns, struct ns_bucket_ref *ref,
			     void (*done)(void *arg, int st), void *arg);
/* Write ref->bk back by CAS: 0, -EAGAIN (lost a race), -errno. */
int ns_bucket_store(struct pohm_ns *ns, struct ns_bucket_ref *ref);
void ns_bucket_release(struct ns_bucket_ref *ref);
/*
 * Make ref writable for an insert or change: completes splits, resolves
 * seals.  Returns 0 (ref usable), -EAGAIN (state changed: locate again),
 * -ENOENT (the directory was removed), -errno.
 */
int ns_bucket_prepare(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref);
/* Split ref's bucket if it is full: 1 if a split was started (locate again). */
int ns_bucket_maybe_split(struct pohm_ns *ns, struct ns_bucket_ref *ref);
/*
 * Resolve the intent on entry i of ref (MOVE or RMDIR): completes it if it
 * committed or is stale.  Returns 1 if the entry still stands (intent in
 * progress), 0 if the caller must locate again, -errno.
 */
int ns_intent_resolve(struct pohm_ns *ns, uint64_t dir, struct ns_bucket_ref *ref, int i);
/*
 * rmdir's first looks, with no read (decision 0055).  ns_entry_peek_dir: 0
 * and *e (clear it) when the kept copy of dir's bucket maps name plainly to
 * the directory ino (whose inode copy is kept too), else 1.
 * ns_seal_first: seal dir's root bucket for txid in one write, on its kept
 * copy when that is an empty NORMAL root (nothing split below), or created
 * sealed when no copy is kept (no root bucket: an empty directory): 0
 * sealed, 1 not tried or lost (nothing written: walk with reads), else the
 * put's -errno.
 */
int ns_entry_peek_dir(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
		      struct pohm_dentry *e);
int ns_seal_first(struct pohm_ns *ns, uint64_t dir, uint64_t txid, uint64_t parent,
		  const char *name);
/*
 * rmdir in two waits (decision 0058).  ns_rmdir_begin_along: the
 * POHM_INTENT_RMDIR_SEALED intent (intent's fields; i_txid) on name in the
 * peeked NORMAL bucket of pdir, which must map it plainly to the directory
 * dino, and dino's root bucket sealed POHM_BUCKET_SEALED_WITH on its kept
 * copy when that is an empty NORMAL root, or created so when none is kept:
 * one put_n.  0 sent, *st_intent and *st_seal each put's answer (0 written,
 * -EAGAIN lost: nothing written, else unknown); 1 not sent (no such
 * copies, no put_n); else -errno with nothing written.  Both written: the
 * rmdir is committed (a stale one is completed by whoever meets it).
 */
int ns_rmdir_begin_along(struct pohm_ns *ns, uint64_t pdir, const char *name, uint64_t dino,
			 const struct pohm_dentry *intent, int *st_intent, int *st_seal);
/*
 * After ns_rmdir_begin_along wrote both: the entry's removal on the bucket
 * as it wrote it (ns_peek) in one put_n with the nalso < POHM_KV_PUT_N
 * writes also[] (the tombstone, the parent's count; also[k].st their
 * answers).  The entry's answer as ns_bucket_store's; 1 not sent (no such
 * copy with our intent, no put_n).
 */
int ns_rmdir_finish_along(struct pohm_ns *ns, uint64_t pdir, const char *name, uint64_t txid,
			  struct ns_put *also, size_t nalso);
/* dino's root bucket back to NORMAL if it is still SEALED_WITH txid (an
 * rmdir whose intent lost): 0, -errno. */
int ns_unseal_with(struct pohm_ns *ns, uint64_t dino, uint64_t txid);
/* Visit every leaf bucket of dir (depth-first); fn returning non-zero stops. */
int ns_bucket_walk(struct pohm_ns *ns, uint64_t dir,
		   int (*fn)(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg), void *arg);
/*
 * ns_bucket_walk for a walk that only reads (readdir): each level's buckets
 * are read together (kv get_n: one round trip per level, not per bucket),
 * leaves visited level by level.  Its reads are not kept for a CAS base
 * (kv.h peek), so fn must not store the buckets it is given.  check: dir's
 * inode is read with the first level and must be a live directory (else
 * -ENOENT / -ENOTDIR / -errno before fn is called), as a check first would.
 * along (NULL: none): inodes read with the levels, the first level's
 * round first (ns.h pohm_ns_readdir_along; every along->st[i] set).
 */
int ns_bucket_walk_read(struct pohm_ns *ns, uint64_t dir, int check,
			int (*fn)(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg),
			void *arg, struct pohm_ns_along *along);
/* pohm_ns_getattr_many's judgement of the values v[0..n) its get_n read
 * for inos (st[i] 0 on entry: read; else left): out[i] decoded (its head
 * only where head[i]), st[i] 0, -EIO, -ENOENT (tombstone) or the map's. */
void ns_inodes_take(struct pohm_ns *ns, size_t n, const uint64_t *inos, const uint8_t *head,
		    const struct pohm_kv_val *v, struct pohm_inode *out, int *st);
/*
 * A bucket put whose outcome is unknown (-EIO: a group took it, then went
 * silent) is settled by reading again, at most this many times per call:
 * an insert finds its own entry (txid) or inserts again; a remove finds
 * the name still there or gone.
 */
#define NS_UNSURE_RETRIES	3
/* A put whose outcome is unknown: the group's answer, or the lack of one. */
#define NS_UNSURE(r)		((r) == -EIO || (r) == -ETIMEDOUT)
/*
 * What ns_entry_insert returns when a put of its own may have committed and
 * no read settled it: the entry may be there.  The caller must keep what
 * the entry would point to (an orphan inode is garbage fsck collects; a
 * name without its inode is a broken name) and report -EIO.
 */
#define NS_EMAYBE		EREMOTEIO
/* Insert e into dir: 0, -EEXIST (then *existing gets the entry if given), -ENOENT,
 * -NS_EMAYBE, -errno. */
int ns_entry_insert(struct pohm_ns *ns, uint64_t dir, const struct pohm_dentry *e,
		    struct pohm_dentry *existing);
/*
 * Remove name from dir if it maps to ino (0 = any): 0, -ENOENT, -ESTALE
 * (gone after a put of ours whose outcome was unknown: maybe by us), -errno.
 */
int ns_entry_remove(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino);
/*
 * ns_entry_rename_ready across directories: 1 when the kept copies (ns_peek)
 * map sdir/sname plainly to sino, not a directory, ddir's bucket for dname
 * lacks it, and sino's inode copy is kept; then *src (may be NULL; clear
 * it) is the source entry as kept.  0 says nothing.  A hint only: the
 * rename's CASes decide (decision 0054).
 */
int ns_entry_move_ready(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t sino,
			uint64_t ddir, const char *dname, struct pohm_dentry *src);
/*
 * Would ns_entry_rename_peeked try its CAS without a read?  1 when the
 * bucket this thread or the cache kept (ns_peek) holds sname as sino
 * (plain, no intent) and dname's slot in the same NORMAL bucket is empty
 * (no entry, no intent), and sino's inode copy is kept too (the ctime
 * sent along).  A hint only: the CAS decides (decision 0052).
 */
int ns_entry_rename_ready(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			  const char *dname);
/*
 * A rename inside dir with no read at all (issue 23): when this thread
 * read dir's bucket of sname within NS_PEEK_NS (ns_peek; the cache's
 * lookup of the target just did) and it shows the plain case -- sname
 * without intent, dname in the same NORMAL bucket, absent or a
 * non-directory of another inode without intent (and no NOREPLACE), sname
 * not a directory if dname is there, no EXCHANGE -- the one-bucket CAS
 * against that copy.  Its success proves the copy was the committed
 * bucket (so the name, the target and the live, unsealed directory were
 * as read).  0: done, *src the moved entry (clear it), *replaced /
 * *replaced_type the name it replaced (0: none); 1: not tried, or the CAS
 * lost (nothing written): decide on reads; an unknown outcome
 * (NS_UNSURE) leaves *src and *replaced set for ns_entry_rename_local
 * with the same txid to settle; else -errno.  also (may be NULL): a write
 * sent in the same put_n as the bucket's CAS when sname is also_ino (the
 * source's ctime, decision 0022); also->st is then its answer, else it
 * stays 1 (not sent).
 */
int ns_entry_rename_peeked(struct pohm_ns *ns, uint64_t dir, const char *sname,
			   const char *dname, unsigned flags, uint64_t txid, struct pohm_dentry *src,
			   uint64_t *replaced, uint8_t *replaced_type, struct ns_put *also,
			   uint64_t also_ino);
/*
 * A rename inside one bucket of dir (issue 23): sname and dname in the
 * same NORMAL leaf bucket, neither with an intent, sname still sino and
 * dname still dino (0: absent).  One CAS moves the entry (its txid becomes
 * txid) and drops the one it replaces: a change of one object, so it
 * needs no intent.  0 with *replaced (0: none) and its type; 1 when the
 * case does not hold on a fresh read (nothing written: the intent path);
 * -errno.  A put whose outcome is unknown is settled by reading again (our
 * txid at dname), as ns_entry_insert does; unsettled, -EIO.
 */
int ns_entry_rename_local(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			  const char *dname, uint64_t dino, uint64_t txid, uint64_t *replaced,
			  uint8_t *replaced_type);
/* ns_entry_rename_local after a put of txid (dname was dino of type dtype,
 * 0: absent) whose outcome was unknown (ns_entry_rename_peeked): 0 with
 * *replaced once a read shows it committed, or after doing it now; -EIO
 * when it cannot be settled; -errno. */
int ns_entry_rename_settle(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			   const char *dname, uint64_t dino, uint8_t dtype, uint64_t txid,
			   uint64_t *replaced, uint8_t *replaced_type);
/*
 * The bucket of name at dir's depth hint as this thread read or wrote it
 * within NS_PEEK_NS (ns_peek), when it decodes as that bucket and is
 * NORMAL: 0 with ref (release it), else -ENOENT.  A base for a CAS only
 * (decision 0017): any conclusion but a CAS that succeeded is made again
 * on a read.
 */
int ns_bucket_peek(struct pohm_ns *ns, uint64_t dir, const char *name, struct ns_bucket_ref *ref);
/* Look name up, resolving intents: 0 and a copy of the entry (clear it), -ENOENT. */
int ns_entry_get(struct pohm_ns *ns, uint64_t dir, const char *name, struct pohm_dentry *out);
/* Copy an entry (strings duplicated): 0 or -ENOMEM. */
int ns_entry_copy(struct pohm_dentry *out, const struct pohm_dentry *e);

/* nsdir.c (moved from nsops.c) */
/*
 * Commit a MOVE intent at its destination: set e->i_name in e->i_dir to
 * e->ino with txid e->i_txid (idempotent).  *replaced gets the inode it
 * displaced (0 if none) and its type.  -EEXIST under NOREPLACE, -ENOENT if
 * the destination directory is gone, -EISDIR/-ENOTDIR on a type clash.
 */
int ns_move_commit(struct pohm_ns *ns, const struct pohm_dentry *e, uint64_t *replaced,
		   uint8_t *replaced_type);
/* A renamer's commit deadline (decision 0067), past once either clock
 * reaches its time: CLOCK_BOOTTIME's (pohm_sys_boot_ns: this process's
 * own measure of the time since its intent; it never steps) or the
 * real-time clock's (ns_now_ns, the clock that stamped the intent's
 * i_time, which another host's resolver ages). */
struct ns_deadline {
	uint64_t boot_ns;
	uint64_t real_ns;
};
/* The renamer's ns_move_commit: with POHM_MOVE_MARKED in e->i_flags the
 * entry gets the MOVED_IN mark naming (sdir, e->name); no put starts once
 * until has passed (NULL: none; -ETIME then, nothing written), so a
 * resolver that fences the destination after the intent's timeout
 * (decision 0067) cannot be overtaken by this commit.  also (may be NULL,
 * st 1 on entry): a write sent in one put_n with the first attempt's CAS
 * on the peeked bucket (ns_bucket_store_along; also->st its answer, left
 * 1 when not sent), one that may land alone (decision 0073: the source's
 * ctime). */
int ns_move_commit_from(struct pohm_ns *ns, uint64_t sdir, const struct pohm_dentry *e,
			const struct ns_deadline *until, uint64_t *replaced,
			uint8_t *replaced_type, struct ns_put *also);

#endif
