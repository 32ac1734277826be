/*
 * Layer core/ns — the POSIX namespace on the store.  This header is the
 * layer's whole interface.
 *
 * What it does: lookup, create, rename, unlink, setattr, directories,
 * chunked file data, intents and their completion, on the kv seam below.
 * Main types: struct pohm_ns (opaque), struct pohm_ns_opts, struct
 * pohm_setattr, struct pohm_chunk_write.
 * Relies on: core/store (kv.h seam, nsobj.h objects), core/wire, core/sys.
 * Rules for callers: see below (negative errno as a local filesystem gives
 * it, -EBUSY when a CAS loop ran out of retries; thread-safe).
 *
 * Parts: none public besides this header.  ns_int.h, nsmap.h and
 * ns_http.h are private to core/ns.
 */
/*
 * ns.h — a POSIX namespace on the storage (DESIGN.md §3), shared by many
 * processes and hosts at once.
 *
 * Every read-modify-write is a compare-and-swap loop with bounded retries
 * and random backoff; nothing another client may CAS is ever removed (deletes
 * are tombstones); multi-object changes leave an intent that any client
 * completes.  Directories are hashed buckets that split by doubling; a
 * lookup or create touches one bucket in the common case.
 *
 * Return values: 0 (or a count) on success, a negative errno as a local
 * filesystem would give it (-ENOENT, -EEXIST, -ENOTDIR, -EISDIR, -ENOTEMPTY,
 * -ENAMETOOLONG, -EINVAL, -EXDEV ...), -EIO when the storage fails, -EBUSY
 * when a CAS loop ran out of retries.
 *
 * Thread-safe: one struct pohm_ns may be used by many threads.
 */
#ifndef POHM_CORE_NS_H
#define POHM_CORE_NS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store.h"

#define POHM_ROOT_INO 1

struct pohm_ns;

struct pohm_ns_opts {
	const char *fsid;		/* namespace name, recorded in every object header */
	unsigned bucket_max;		/* entries per bucket before it splits (default 256) */
	unsigned chunk_shift;		/* chunk size of new files (default 20 = 1 MiB) */
	uint64_t intent_timeout_ms;	/* an intent older than this is completed by others (default 10000) */
	unsigned max_retries;		/* CAS retries before -EBUSY (default 600, ~5 s: outlasts the 3 s CAS age limit) */
	uint32_t root_uid, root_gid;	/* owner of the root when this client creates it */
	uint32_t root_mode;		/* permissions of a new root (default 0755) */
	int http_compat;		/* also keep path copies of files (core/ns/ns_http.h) */
	int no_inline;			/* never write a small file's data inline in its inode
					 * (decision 0023: while clients before it share the fsid) */
	int lazy_root;			/* check the root at the first storage call, not at open */
	void (*root_failed)(void *arg, int err);	/* lazy_root: a check failed (may be NULL) */
	void *root_failed_arg;
	/*
	 * CAS bases across processes (issue 23, decision 0048): base_note is
	 * handed every inode and bucket value this handle read (get, a get_n
	 * of at most POHM_KV_GET_N keys) or wrote (a put that succeeded), its
	 * data, len and ts_ns (csum unset; v NULL after a delete: forget it);
	 * base_load gives one back (0, out's data, len, csum and ts_ns filled,
	 * *age_ns since it was noted; or -ENOENT).  A namespace call whose thread has no copy of its own
	 * uses a loaded one younger than base_max_ns as the base of its first
	 * CAS (never for anything else; a stale one costs a read).  Keep
	 * base_max_ns far below the repair age (fsck deletes objects only
	 * older than that; a CAS on a deleted key passes).  Both NULL: none.
	 * Called from any thread: they must be thread-safe.
	 */
	void (*base_note)(void *arg, const char *key, const struct pohm_kv_val *v);
	int (*base_load)(void *arg, const char *key, struct pohm_kv_val *out, uint64_t *age_ns);
	void *base_arg;
	uint64_t base_max_ns;
};

/*
 * Open a namespace on kv, creating the root inode (once, by CAS) if absent:
 * now, or with o->lazy_root just before the handle's first storage call
 * (a process that never needs the storage never reaches it; a failed check
 * fails that call and is tried again by the next).  0 or -errno.
 */
int pohm_ns_open(struct pohm_ns **out, const struct pohm_kv *kv, const struct pohm_ns_opts *o);
/* Release the handle (the storage is untouched). */
void pohm_ns_close(struct pohm_ns *ns);
/* In a fork child of a threaded process: every lock of ns as new.  Only
 * what a fork child may call (no allocation, no I/O). */
void pohm_ns_atfork_child(struct pohm_ns *ns);

/* ---- attributes ---- */

/* Read the committed inode: 0, -ENOENT (missing or tombstone).  Clear with pohm_inode_clear. */
int pohm_ns_getattr(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out);
/*
 * pohm_ns_getattr of inos[0..n) together: the inodes read by the same
 * committed (majority) reads, pipelined, a few hundred per round trip (kv
 * get_n).  st[i] is what pohm_ns_getattr gives for inos[i], out[i] filled
 * when 0 (clear each).  head (NULL: none): where head[i], out[i] has only
 * the inode's fixed part (pohm_inode_decode_head: version, attributes; no
 * inline bytes, maps, xattrs or target).  0, or -errno with nothing filled.
 */
int pohm_ns_getattr_many(struct pohm_ns *ns, size_t n, const uint64_t *inos,
			 const uint8_t *head, struct pohm_inode *out, int *st);

/*
 * The inode ino as the base of this thread's next CAS of it holds it (what
 * this thread read or wrote within 2 s, else what a process of this cache
 * kept: pohm_ns_opts.base_load, decision 0048), with no round trip; a
 * large file's external map is not loaded.  It may be stale: decide on it
 * only what the CAS of the change that follows (pohm_ns_setattr, whose
 * first attempt is against exactly these bytes) makes true by succeeding,
 * or what its fresh retry would decide the same.  0, -ENOENT (none).
 */
int pohm_ns_getattr_base(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out);

#define POHM_SET_MODE	0x01
#define POHM_SET_UID	0x02
#define POHM_SET_GID	0x04
#define POHM_SET_SIZE	0x08
#define POHM_SET_ATIME	0x10
#define POHM_SET_MTIME	0x20
#define POHM_SET_CTIME	0x40

struct pohm_setattr {
	unsigned mask;			/* POHM_SET_* */
	uint32_t mode, uid, gid;	/* mode: permission bits only (type kept) */
	uint64_t size;			/* truncate/extend (chunks past the end dropped) */
	struct pohm_ts atime, mtime, ctime;
	/*
	 * Based times (issue 18): POHM_SET_ATIME / POHM_SET_MTIME bits whose
	 * new value is a change from base_atime / base_mtime, what the caller
	 * last knew stored.  Such a time is not set when the stored one moved
	 * since that base and is newer than the new value: a stale local time
	 * never moves a stored time another change made backwards.  When no
	 * bit of mask is left to set, nothing is written (0, out = stored).
	 */
	unsigned based;
	struct pohm_ts base_atime, base_mtime;
};

/*
 * pohm_ns_getattr of a directory (the caller knows it is one, e.g. from its
 * entry's type), with the directory's first bucket read along in the same
 * round trip: that copy then gives the next lookup in it a guess of the
 * name's inode (pohm_ns_lookup_guess, decision 0053).  Same answers.
 */
int pohm_ns_getattr_dir(struct pohm_ns *ns, uint64_t ino, struct pohm_inode *out);

/* Change attributes by CAS; ctime is set to now unless given.  out may be NULL. */
int pohm_ns_setattr(struct pohm_ns *ns, uint64_t ino, const struct pohm_setattr *sa,
		    struct pohm_inode *out);

/* ---- names ---- */

/*
 * Read inode ino along with the next directory lookup this thread makes
 * through ns (pohm_ns_lookup and the lookups inside create, unlink,
 * rename), in the same round trip: a CAS of it right after then needs no
 * read of its own (issue 23; e.g. the cache names a rename's source before
 * it looks up the target).  What is read is not looked at otherwise.  0
 * clears it; a lookup that has an inode of its own to read along ignores
 * it.  Per thread.
 */
void pohm_ns_read_along(struct pohm_ns *ns, uint64_t ino);

/*
 * A guess of dir/name's inode from copies kept from before (the bucket this
 * thread or another process of the cache read or wrote, decision 0048),
 * with no round trip: 0 and *ino (and *type, DT_*) when such a copy maps name plainly (no
 * intent), else -ENOENT (no copy, or not in it: says nothing).  Only a
 * guess: confirm it with pohm_ns_lookup_check, whose fresh bucket decides
 * (decision 0053).
 */
int pohm_ns_lookup_guess(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
			 uint8_t *type);

/*
 * Is dir/name absent, by a copy of its bucket noted less than max_age_ns
 * ago (this thread's, or one another process of the cache kept, decision
 * 0048), with no round trip?  1 when the copy of the name's bucket (found
 * as the lookup finds it, through split buckets' copies) is NORMAL and
 * lacks the name; 0 when there is no such copy or it says anything else.
 * The storage's word as of the copy: a name inserted since is missed, as
 * a positive entry's change is, for up to max_age_ns (the caller's
 * attr_timeout; decision 0061).
 */
int pohm_ns_lookup_absent(struct pohm_ns *ns, uint64_t dir, const char *name,
			  uint64_t max_age_ns);

/* Look name up in dir: 0 and *ino (and *type, DT_*), -ENOENT, -ENOTDIR. */
int pohm_ns_lookup(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
		   uint8_t *type);

/*
 * Revalidate a name whose inode the caller believes is ino: the name's
 * bucket and the inode read together (one round trip).  0 with *out as
 * pohm_ns_getattr gives it when the bucket plainly maps name to ino;
 * -ESTALE when it does not say so plainly (another inode, no such name, a
 * split or intent, an unknown bucket depth): then use pohm_ns_lookup and
 * pohm_ns_getattr.  Other -errno as they give.
 */
int pohm_ns_lookup_check(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			 struct pohm_inode *out);

/* pohm_ns_lookup_check of a name the caller believes is a directory: its
 * first bucket is read along, as pohm_ns_getattr_dir does. */
int pohm_ns_lookup_check_dir(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino,
			     struct pohm_inode *out);

#define POHM_CREATE_EXCL 0x1	/* fail with -EEXIST if the name exists */

/*
 * Create a regular file, FIFO, socket or device (mode carries S_IFMT; rdev
 * for devices) named name in dir.  Without EXCL an existing name is returned
 * in *out with 1 (not created); a new one with 0.
 */
int pohm_ns_create(struct pohm_ns *ns, uint64_t dir, const char *name, uint32_t mode,
		   uint32_t uid, uint32_t gid, uint64_t rdev, unsigned flags,
		   struct pohm_inode *out);
/* Create a directory. */
int pohm_ns_mkdir(struct pohm_ns *ns, uint64_t dir, const char *name, uint32_t mode,
		  uint32_t uid, uint32_t gid, struct pohm_inode *out);
/* Create a symlink holding target. */
int pohm_ns_symlink(struct pohm_ns *ns, uint64_t dir, const char *name, const char *target,
		    uint32_t uid, uint32_t gid, struct pohm_inode *out);
/* Add a hard link to ino (not a directory) as dir/name. */
int pohm_ns_link(struct pohm_ns *ns, uint64_t ino, uint64_t dir, const char *name,
		 struct pohm_inode *out);
/* Remove a non-directory name; the inode goes when its last name does. */
int pohm_ns_unlink(struct pohm_ns *ns, uint64_t dir, const char *name);
/*
 * pohm_ns_unlink for a caller that knows the name's inode: *ino is its
 * guess (0: none), read along with the lookup so the link count's update
 * needs no read of its own; on return *ino is the inode the name had.  On
 * 0, *gone is 1 when that inode's last name went (it is a tombstone now),
 * 0 when it keeps another, -1 when this call cannot tell (the name or the
 * inode was already gone, or an outcome was unknown): read it to know.
 */
int pohm_ns_unlink_ino(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
		       int *gone);
/* Remove an empty directory (-ENOTEMPTY otherwise).  On copies of the
 * entry and of an empty one-bucket directory (kept, or the lookup's): two
 * waits, the intent with the seal, then the removal with the tombstone and
 * the parent's count (decision 0058).  -EIO: the outcome is unknown (what
 * was written is completed or rolled back by whoever meets it). */
int pohm_ns_rmdir(struct pohm_ns *ns, uint64_t dir, const char *name);
/* pohm_ns_rmdir for a caller that guesses the directory's inode (*ino, 0:
 * none; read along with the lookup, as pohm_ns_unlink_ino); on return *ino
 * is the inode the name had, and on 0 *gone is 1 when this call wrote its
 * tombstone, -1 when it cannot tell (read it to know). */
int pohm_ns_rmdir_ino(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t *ino,
		      int *gone);

#define POHM_RENAME_NOREPLACE 0x1	/* as renameat2 RENAME_NOREPLACE */
#define POHM_RENAME_EXCHANGE  0x2	/* as renameat2 RENAME_EXCHANGE */

/* Rename sdir/sname to ddir/dname, replacing an existing target atomically. */
int pohm_ns_rename(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t ddir,
		   const char *dname, unsigned flags);
/* pohm_ns_rename for a caller that guesses sname's inode (0: none): it is
 * read along with the source's lookup, for the ctime update's CAS.  Returns
 * POHM_NS_RENAME_SAME (> 0) when dname already names sname's inode (a hard
 * link, maybe made by another host): nothing was done, both names stay, as
 * rename(2) says; the caller's local copy must keep both too. */
#define POHM_NS_RENAME_SAME 1
int pohm_ns_rename_ino(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t ddir,
		       const char *dname, unsigned flags, uint64_t guess);

/*
 * A rename of sname (whose inode the caller guesses is sino) to dname in
 * the same directory dir, sent on copies kept from before (this thread's
 * or the cache's, decision 0048) with no read: 1 when those copies say
 * dname is absent and sname is sino, so pohm_ns_rename_ino's first
 * attempt is one put_n (the bucket's CAS, the source's ctime).  The copies
 * may be stale: the caller may skip its own lookup of dname on 1, as the
 * CAS decides and a lost one reads (decision 0052); 0 says nothing.
 */
int pohm_ns_rename_ready(struct pohm_ns *ns, uint64_t dir, const char *sname, uint64_t sino,
			 const char *dname);

/*
 * pohm_ns_rename_ready for a file moving from sdir to another directory
 * ddir: 1 when the kept copies say sname is sino (not a directory) and
 * dname is absent; pohm_ns_rename_ino then sets its intent with no lookup
 * first (decision 0054).  0 says nothing.
 */
int pohm_ns_move_ready(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t sino,
		       uint64_t ddir, const char *dname);

/* Call fn(arg, name, ino, type) for every entry of dir exactly once; fn != 0 stops. */
int pohm_ns_readdir(struct pohm_ns *ns, uint64_t dir,
		    int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type),
		    void *arg);

#define POHM_NS_DENT_INTENT 0x1	/* the entry has an intent (a rename in flight) */

/*
 * pohm_ns_readdir, with each entry's flags (POHM_NS_DENT_*).  An entry
 * without flags was plain in the bucket the listing read it from: that
 * read (a committed bucket, as every lookup reads it) says name is ino as
 * plainly as pohm_ns_lookup_check's does, as of the call's start.
 */
int pohm_ns_readdir_flags(struct pohm_ns *ns, uint64_t dir,
			  int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type,
				    unsigned flags),
			  void *arg);

/* Inodes read along with a listing (pohm_ns_readdir_along). */
struct pohm_ns_along {
	size_t n;
	const uint64_t *inos;		/* the inodes to read */
	struct pohm_inode *out;		/* out[i]: inos[i]'s fixed part when st[i] is 0 (clear each) */
	int *st;			/* st[i]: what pohm_ns_getattr_many gives for a head entry */
};

/*
 * pohm_ns_readdir_flags, with along->inos read as pohm_ns_getattr_many
 * reads them with head set (the committed reads, the fixed part only), in
 * the same round trip as the listing's first bucket level (issue 23: an
 * unchanged directory's listing and its known entries' inodes, one wait);
 * past a get_n round (POHM_KV_GET_N_ROUND keys) the rest go with the
 * next levels' reads, and what they leave in rounds of their own after.
 * Every st[i] is set, also when the listing fails (-errno where the
 * read did not happen).  The reads are made after the call's start, as
 * the listing's are.  along NULL or along->n 0: pohm_ns_readdir_flags.
 */
int pohm_ns_readdir_along(struct pohm_ns *ns, uint64_t dir,
			  int (*fn)(void *arg, const char *name, uint64_t ino, uint8_t type,
				    unsigned flags),
			  void *arg, struct pohm_ns_along *along);

/*
 * Resolve a path relative to the fsid root ("/a/b" or "a/b"), following
 * symlinks inside the fsid when follow is set for the last component
 * (intermediate ones always).  0 and *ino, or -ENOENT/-ENOTDIR/-ELOOP/-EXDEV
 * (a symlink that leaves the fsid).
 */
int pohm_ns_resolve(struct pohm_ns *ns, const char *path, int follow, uint64_t *ino);

/* ---- extended attributes (user.* and others, small values) ---- */

#define POHM_XATTR_CREATE  1	/* as XATTR_CREATE */
#define POHM_XATTR_REPLACE 2	/* as XATTR_REPLACE */

int pohm_ns_setxattr(struct pohm_ns *ns, uint64_t ino, const char *name, const void *value,
		     size_t len, int flags);
/* Copy the value into buf (size 0: just return the length): length, -ENODATA, -ERANGE. */
int pohm_ns_getxattr(struct pohm_ns *ns, uint64_t ino, const char *name, void *buf,
		     size_t size);
/* NUL-separated names into buf (size 0: length): length or -ERANGE. */
int pohm_ns_listxattr(struct pohm_ns *ns, uint64_t ino, char *buf, size_t size);
int pohm_ns_removexattr(struct pohm_ns *ns, uint64_t ino, const char *name);

/* ---- data ---- */

struct pohm_chunk_write {
	uint64_t index;			/* chunk number */
	const void *data;		/* the chunk's whole new content */
	size_t len;			/* ≤ chunk size; the last chunk may be short */
};

/*
 * Commit new data for a regular file: write the given chunks as new
 * immutable generations, then CAS the inode (the commit point) with the new
 * map and size.  base_dversion is the data version the writer started from:
 * if the stored file's data moved on meanwhile, nothing is committed and
 * -ESTALE is returned (the caller keeps its copy as a conflict).  Chunks
 * wholly beyond size are dropped.  mtime, if given, is stored.  out may be NULL.
 */
int pohm_ns_commit(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion, uint64_t size,
		   const struct pohm_chunk_write *w, size_t nw, const struct pohm_ts *mtime,
		   struct pohm_inode *out);
/* Write one chunk as a new immutable generation: 0 and *gen, or -errno.
 * Nothing refers to it until pohm_ns_commit_map names it. */
int pohm_ns_put_chunk(struct pohm_ns *ns, uint64_t ino, uint64_t index, const void *data,
		      size_t len, uint64_t *gen);
/* pohm_ns_put_chunk of chunks index[i] (data[i], len[i] bytes) of ino,
 * i < n, sent together and waited for once (issue 23; each alone in a
 * store without kv write_n): 0 with every gen[i] written, or -errno (the
 * first failure; generations written meanwhile are garbage nothing names,
 * as a failed push's always were). */
int pohm_ns_put_chunks(struct pohm_ns *ns, uint64_t ino, size_t n, const uint64_t *index,
		       const void *const *data, const size_t *len, uint64_t *gen);
/* May a file of size bytes be committed with its data inline by this handle
 * (decision 0023: 1 to POHM_INLINE_MAX bytes, and not opened no_inline)? */
int pohm_ns_inline_ok(const struct pohm_ns *ns, uint64_t size);

struct pohm_chunk_set {
	uint64_t index;			/* chunk number */
	uint64_t gen;			/* generation written by pohm_ns_put_chunk, or
					 * POHM_GEN_INLINE: data carried in the inode */
	uint32_t len;
	uint8_t csum[64];		/* sha512 of its data */
	const uint8_t *data;		/* POHM_GEN_INLINE: the len bytes (the caller's) */
};

/*
 * The commit point of pohm_ns_commit for chunks already written (streaming
 * pushes).  An entry of POHM_GEN_INLINE (chunk 0 of a file of at most
 * POHM_INLINE_MAX bytes: pohm_ns_inline_ok) goes into the inode itself, so
 * the commit is the whole push (decision 0023); inline data that a commit
 * leaves behind in a file growing past one chunk is first written out as a
 * chunk.  -EINVAL for an inline entry the size does not allow.
 *
 * sa (may be NULL): attribute changes carried by the same inode CAS,
 * applied after the data as pohm_ns_setattr applies them (based times
 * judged against the stored inode of each attempt; ctime now unless
 * given), so a writer that changed mode, owner or times as well as the
 * data commits them in one write (issue 23).  No POHM_SET_SIZE (-EINVAL:
 * the size is the commit's); a POHM_SET_MTIME there overrides mtime.
 * No permission check: the caller's, as for pohm_ns_setattr.
 */
int pohm_ns_commit_map(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion, uint64_t size,
		       const struct pohm_chunk_set *set, size_t n, const struct pohm_ts *mtime,
		       const struct pohm_setattr *sa, struct pohm_inode *out);

/*
 * pohm_ns_commit_map that also sets the file's chunk size to 1 << shift
 * (decision 0072; 0 keeps the stored one): allowed only over a stored
 * version of at most one chunk and no map objects, with every chunk of
 * the new map in set and no other (-EINVAL otherwise); set's indexes are
 * in the new size.
 */
int pohm_ns_commit_map_shift(struct pohm_ns *ns, uint64_t ino, uint64_t base_dversion,
			     uint64_t size, unsigned shift, const struct pohm_chunk_set *set,
			     size_t n, const struct pohm_ts *mtime, const struct pohm_setattr *sa,
			     struct pohm_inode *out);

/* One commit of pohm_ns_commit_map_n: pohm_ns_commit_map's arguments and answer. */
struct pohm_ns_commit {
	uint64_t ino;
	uint64_t base_dversion;
	uint64_t size;
	const struct pohm_chunk_set *set;
	size_t n;
	const struct pohm_ts *mtime;	/* may be NULL */
	const struct pohm_setattr *sa;	/* may be NULL */
	int rc;				/* out: what pohm_ns_commit_map returns for it */
	struct pohm_inode out;		/* out, when rc is 0 (pohm_inode_clear it) */
};

/*
 * pohm_ns_commit_map of n different inodes, their inode CASes sent
 * together (issue 23: the pushes of a process's exit): each based on the
 * copy this process or another of the cache kept (ns_peek), else on one
 * read of all the others together (get_n), then every CAS in put_many
 * (POHM_KV_PUT_MANY a wait).  The chunks of each (set) are written
 * already.  Each commit is independent of the others: any subset may land
 * (a crash leaves the rest uncommitted, their chunks unreferenced); one
 * whose CAS is lost (a stale copy, a racing writer), whose read does not
 * decode, or that needs what a batch does not do (http_compat's path
 * copy) is then committed alone by pohm_ns_commit_map, so cm[i].rc and
 * cm[i].out are always what that call gives (-ESTALE: the data moved on).
 * Returns 0.
 */
int pohm_ns_commit_map_n(struct pohm_ns *ns, size_t n, struct pohm_ns_commit *cm);

/*
 * Load an external chunk map (large files, nsobj.h) into in->chunks, so
 * that in->chunks/nchunks list every chunk; a no-op for inline maps.
 * pohm_ns_getattr and the out inode of a commit come loaded.  0 or -errno.
 */
int pohm_ns_map_load(struct pohm_ns *ns, struct pohm_inode *in);

/* Read len bytes at off of a committed inode into buf: bytes read (short at EOF), -EIO on a bad checksum. */
ssize_t pohm_ns_read(struct pohm_ns *ns, const struct pohm_inode *in, uint64_t off, void *buf,
		     size_t len);

/*
 * Read a committed regular file's data to sink in file order, several
 * chunks in flight: sink(arg, off, p, n) gets each chunk's bytes within
 * size once, verified against the map (0 to go on, -errno to stop with
 * it).  Holes (and a chunk's zeros past its bytes) are not delivered.
 * 0, -EIO (a chunk missing or failing its checksum on every replica), -errno.
 */
int pohm_ns_read_stream(struct pohm_ns *ns, const struct pohm_inode *in,
			int (*sink)(void *arg, uint64_t off, const uint8_t *p, size_t n),
			void *arg);

/* ---- repair entry points (core/ns/nsrepair.c, for fsck): each does what the
 * next client meeting the state would do, or the smallest fix fsck needs.
 * Return 0 when done (or nothing was left to do), -errno otherwise. */

/* How old an intent must be before others complete it, in ns. */
uint64_t pohm_ns_intent_timeout_ns(const struct pohm_ns *ns);
/*
 * Resolve the intent on dir/name as the next client would: complete a
 * committed or stale MOVE, roll back what cannot complete, clear a stale
 * RMDIR.  -EINPROGRESS while the intent is younger than the timeout.
 */
int pohm_ns_settle_entry(struct pohm_ns *ns, uint64_t dir, const char *name);
/*
 * Settle bucket (dir, depth, index): finish a split in progress, resolve a
 * seal (unseal an aborted rmdir's bucket; complete a committed rmdir whose
 * seal went with its intent, decision 0058).  0 also when the seal's rmdir
 * has committed (the seal stays with its removed directory); -ENOENT: the
 * bucket is gone.
 */
int pohm_ns_settle_bucket(struct pohm_ns *ns, uint64_t dir, unsigned depth, uint32_t index);
/* Free the per-fsid rename lease if its holder's time ran out (1 if freed). */
int pohm_ns_clear_stale_lease(struct pohm_ns *ns);
/* Remove the entry dir/name if it still maps to ino (a dangling name). */
int pohm_ns_drop_entry(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino);
/*
 * Give the existing inode ino a name dir/name without touching its nlink
 * (an orphan moved to lost+found); a directory also gets dir as parent.
 * -EEXIST when the name is taken.
 */
int pohm_ns_relink(struct pohm_ns *ns, uint64_t ino, uint64_t dir, const char *name);
/* Set ino's nlink (and, if parent != 0, its parent) to what the names say. */
int pohm_ns_fix_links(struct pohm_ns *ns, uint64_t ino, uint32_t nlink, uint64_t parent);
/* Make ino a tombstone (an orphan with nothing in it). */
int pohm_ns_tombstone(struct pohm_ns *ns, uint64_t ino);

/* Longest http_compat path key, with its NUL (core/ns/ns_http.h). */
#define POHM_NS_HTTP_PATH	4096
/* Whether the handle keeps http_compat path copies (opened so, or set). */
int pohm_ns_http_compat(const struct pohm_ns *ns);
/*
 * fsck, single-threaded on its own handle: from now on keep path copies as
 * an http_compat client does (fsck found the fsid uses them).
 */
void pohm_ns_set_http_compat(struct pohm_ns *ns, int on);
/*
 * The http_compat path key of regular file in (the name its copy follows,
 * core/ns/ns_http.h) into path (POHM_NS_HTTP_PATH bytes), whether or not the
 * handle has http_compat; *want = 1 if the key should hold the file's whole
 * content, 0 if it must not exist (empty, or over the size limit).  0,
 * -ENOENT (not a regular file, or no name), -errno.
 */
int pohm_ns_http_key(struct pohm_ns *ns, const struct pohm_inode *in, char *path, int *want);
/*
 * The path key of in's recorded name (where its copy was last written),
 * without looking the name up.  0, -ENOENT (none recorded), -errno.
 */
int pohm_ns_http_hint_key(struct pohm_ns *ns, const struct pohm_inode *in, char *path);
/*
 * The path key the copy of in was last written under (its recorded name,
 * core/ns/ns_http.h) if that name is gone from its directory: a copy there was
 * left behind by a rename that did not finish moving it.  0, -ENOENT (no
 * such key: not moved, or the name belongs to another file now), -errno.
 */
int pohm_ns_http_old_key(struct pohm_ns *ns, const struct pohm_inode *in, char *path);
/*
 * Bring regular file ino's path copy in line with its committed content
 * now (write it whole, or remove it if the file must have none; remove one
 * left at its old name and record the current one), whether or not the
 * handle has http_compat.  0 or -errno.
 */
int pohm_ns_http_restore(struct pohm_ns *ns, uint64_t ino);

/* Chunk size of an inode, in bytes. */
static inline uint64_t pohm_inode_chunk_size(const struct pohm_inode *in)
{
	return 1ULL << in->chunk_shift;
}

#endif
