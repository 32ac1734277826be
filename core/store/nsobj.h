/*
 * nsobj.h — the objects of the storage layout (DESIGN.md §3), encoded.
 *
 * Every object starts with a self-describing header (magic, format, type,
 * flags, parent inode, fsid, its own key) so that fsck can classify anything
 * the iterator returns, and no object is ever empty.  All integers are
 * little-endian.  Decoders check every length against the bytes present and
 * return -EPROTO (or -EILSEQ for a foreign magic) on malformed input.
 *
 *   i:<ino>                 inode (attributes, symlink target, xattrs, chunk map)
 *   b:<dir>:<depth>:<idx>   directory bucket (entries, split/seal state)
 *   d:<ino>:<chunk>:<gen>   immutable data chunk
 *   m:<ino>:<map>:<gen>     immutable chunk-map object of a large file
 *   l:<name>                lease (rename of directories across parents)
 *   /<path>                 http_compat copy of a file (raw content, no header)
 *
 * What refers to what (for fsck): the inode i:<ino> holds either its whole
 * chunk map inline (small files) or, above POHM_MAP_INLINE_MAX chunks, one
 * reference (generation + SHA-512 of the object) per POHM_MAP_SPAN chunks to
 * an m:<ino>:<map>:<gen> object, which holds the entries of chunks
 * [map × span, (map + 1) × span).  A chunk d:<ino>:<c>:<gen> is live only if
 * the committed map names it (inline, or in a map object the inode refers
 * to); a map object is live only if the inode refers to it.  Both kinds are
 * written before the inode CAS that commits them and never changed after, so
 * an unreferenced one is garbage of a lost commit or an old generation.
 * An inode with inline data (POHM_INLINE_MAX below) names no chunk at all.
 * Path copies (/<path>, only with http_compat) are not objects of this
 * layout: raw file bytes, convenience copies never read by core/ns.
 *
 * Keys are plain strings here; core/kvio hashes them into the fsid namespace.
 * Internal keys never start with '/', so no path copy can overwrite one.
 */
#ifndef POHM_CORE_NSOBJ_H
#define POHM_CORE_NSOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define POHM_OBJ_MAGIC	0x53464850u	/* "PHFS" */
#define POHM_OBJ_FORMAT	1

enum pohm_obj_type {
	POHM_OBJ_INODE  = 1,
	POHM_OBJ_BUCKET = 2,
	POHM_OBJ_CHUNK  = 3,
	POHM_OBJ_LEASE  = 4,
	POHM_OBJ_MAP    = 5,	/* m:<ino>:<map>:<gen>: chunk-map object (see above) */
};

#define POHM_OBJF_TOMBSTONE 0x1	/* a deleted object: readers treat it as absent */
/*
 * An inode whose last name an unlink removed in the same round trip
 * (decision 0049): live for every reader (a decoder that does not know
 * the bit ignores it); fsck removes it once no entry names it and it is
 * older than the garbage age, instead of linking it into /lost+found.
 * Cleared by what names it again: link (nlink + 1), a rename's ctime,
 * fsck's link count repair.
 */
#define POHM_OBJF_UNLINKED 0x2

#define POHM_NAME_MAX	255
#define POHM_KEY_MAX	96	/* longest key string we build, with NUL */

struct pohm_obj_hdr {
	uint8_t  type;		/* enum pohm_obj_type */
	uint16_t flags;		/* POHM_OBJF_* */
	uint64_t parent;	/* parent inode (dir of an inode, dir of a bucket, file of a chunk) */
	char fsid[64];		/* NUL-terminated, truncated if longer */
	char key[POHM_KEY_MAX];
};

struct pohm_ts {
	int64_t  sec;		/* signed: dates before 1970 and after 2038 */
	uint32_t nsec;
};

struct pohm_chunkref {
	uint64_t gen;			/* 0 = hole (no object) */
	uint8_t  csum[64];		/* sha512 of the chunk's data */
	uint32_t len;			/* data bytes in the chunk */
};

/* Reference from an inode to one of its map objects. */
struct pohm_mapref {
	uint64_t gen;			/* 0 = every chunk of the range is a hole (no object) */
	uint8_t  csum[64];		/* sha512 of the whole encoded map object */
};

#define POHM_MAP_SPAN		256	/* chunk entries per map object */

/*
 * Inline data (decision 0023): a file whose data is at most POHM_INLINE_MAX
 * bytes may carry them inside its inode object instead of a chunk object.
 * In memory such an inode has exactly one map entry, chunk 0, whose gen is
 * POHM_GEN_INLINE (never a chunk generation: pohm_ns_put_chunk skips it),
 * whose len is the byte count and whose csum the SHA-512 of exactly those
 * len bytes (a truncate that cuts them rehashes; the encoder relies on it),
 * and idata holds the bytes.  On storage: no map entries and the trailing
 * section's INLINE part (length, SHA-512, bytes); the decoder checks the
 * SHA-512.  A decoder of object format 1 without that part (before session
 * 12) refuses such an inode with -EPROTO, which its callers give as -EIO.
 */
#define POHM_INLINE_MAX		4096
#define POHM_GEN_INLINE		UINT64_MAX
#define POHM_MAP_INLINE_MAX	256	/* more chunks than this: the map lives in map objects */

struct pohm_xattr {
	char *name;
	uint8_t *value;
	uint32_t len;
};

struct pohm_inode {
	struct pohm_obj_hdr hdr;
	uint64_t ino;
	uint32_t mode;			/* S_IFMT type bits and permissions */
	uint32_t uid, gid, nlink;
	uint64_t size, rdev;
	struct pohm_ts atime, mtime, ctime, btime;
	uint64_t version;		/* +1 on every committed change */
	uint64_t dversion;		/* +1 on every change of size or data */
	uint64_t txid;			/* the operation that wrote this version (idempotent retries) */
	uint8_t  chunk_shift;		/* chunk size = 1 << chunk_shift */
	uint8_t  depth_hint;		/* directories: deepest bucket level seen */
	char    *target;		/* symlink target, malloc'ed, or NULL */
	uint32_t nxattr;
	struct pohm_xattr *xattr;	/* malloc'ed array */
	uint32_t nchunks;
	struct pohm_chunkref *chunks;	/* malloc'ed array, nchunks entries */
	/*
	 * External map (nmaps > 0): the entries live in map objects; chunks is
	 * then either not loaded (NULL, nchunks 0) or a copy of the whole map
	 * (map_loaded, pohm_ns_map_load) that encoding ignores.  The objects are
	 * valid below map_end only: a truncate lowers map_end (encoding clamps it
	 * to size) instead of rewriting them; bytes at or past it read as zeros.
	 */
	uint32_t nmaps;
	uint32_t map_span;		/* chunk entries per map object */
	uint64_t map_end;		/* bytes the map objects are valid for */
	uint8_t  map_trimmed;		/* map_end was lowered since the objects were written */
	uint8_t  map_loaded;		/* chunks holds the whole external map (not stored) */
	struct pohm_mapref *maps;	/* malloc'ed array, nmaps entries */
	char    *pname;			/* http_compat: name of the entry in hdr.parent the
					 * path copy follows (malloc'ed), or NULL */
	uint8_t *idata;			/* inline data (chunks[0].gen == POHM_GEN_INLINE):
					 * chunks[0].len bytes, malloc'ed, or NULL */
};

/* A map object: the entries of chunks [index × span, index × span + n). */
struct pohm_map {
	struct pohm_obj_hdr hdr;
	uint64_t ino, index, gen;
	uint32_t n;
	struct pohm_chunkref *e;	/* malloc'ed by decode, n entries */
};

enum pohm_bucket_state {
	POHM_BUCKET_NORMAL    = 0,
	POHM_BUCKET_SPLITTING = 1,	/* sealed for inserts; children being written */
	POHM_BUCKET_SPLIT     = 2,	/* entries live in the two children at depth+1 */
	POHM_BUCKET_SEALED    = 3,	/* sealed empty by rmdir txid */
	/*
	 * The root bucket of a directory with no other bucket, sealed empty
	 * by rmdir txid in the same put_n as its POHM_INTENT_RMDIR_SEALED
	 * intent (decision 0058): while young (stamp) and without its intent
	 * it is a seal in flight, waited for; with its intent it is the
	 * rmdir's commit.  Same fields as SEALED; decoders before decision
	 * 0058 refuse it (-EPROTO), so they never unseal it.
	 */
	POHM_BUCKET_SEALED_WITH = 4,
};

enum pohm_intent {
	POHM_INTENT_NONE = 0,
	POHM_INTENT_MOVE = 1,		/* rename: this entry moves to (i_dir, i_name) */
	POHM_INTENT_RMDIR = 2,		/* rmdir of this entry's directory in progress */
	/*
	 * rmdir whose seal went with it (decision 0058): committed once the
	 * directory's root bucket is POHM_BUCKET_SEALED_WITH this i_txid, so a
	 * stale one is completed then, rolled back otherwise.  Decoders
	 * before decision 0058 refuse a bucket holding it (-EPROTO), so they
	 * never roll back a committed one.
	 */
	POHM_INTENT_RMDIR_SEALED = 3,
	/*
	 * Not an operation in progress but a mark (decision 0067): this entry
	 * was moved in by rename i_txid from (i_dir, i_name), whose source
	 * entry may still carry its MOVE intent.  Whoever changes or removes
	 * the entry first settles that source (removes it if it still
	 * carries i_txid), then writes its change, which drops the mark.
	 * Readers see a plain entry.  Decoders before decision 0067 refuse
	 * a bucket holding it (-EPROTO), so they never change such an entry
	 * unsettled.
	 */
	POHM_INTENT_MOVED_IN = 4,
};
/* In a MOVE intent's i_flags (decision 0067): its commit writes the
 * destination with POHM_INTENT_MOVED_IN, so a stale intent whose
 * destination lacks its txid never committed and is rolled back. */
#define POHM_MOVE_MARKED	0x100

struct pohm_dentry {
	char    *name;			/* malloc'ed */
	uint64_t ino;
	uint8_t  type;			/* DT_* */
	uint64_t txid;			/* transaction that created this entry, or 0 */
	uint8_t  intent;		/* enum pohm_intent */
	uint64_t i_txid;
	uint64_t i_dir;			/* MOVE: destination directory */
	char    *i_name;		/* MOVE: destination name, malloc'ed */
	uint64_t i_time;		/* when the intent was written (realtime ns) */
	uint64_t i_replaced;		/* MOVE: inode the destination held then, or 0 */
	uint32_t i_flags;		/* MOVE: rename flags */
};

struct pohm_bucket {
	struct pohm_obj_hdr hdr;
	uint64_t dir;
	uint8_t  depth;
	uint32_t index;
	uint8_t  state;			/* enum pohm_bucket_state */
	uint64_t txid;			/* SEALED/SPLITTING: who; NORMAL: a fresh tag per
				 * write, so no two versions have the same bytes */
	uint64_t stamp;			/* when the state was set (realtime ns) */
	uint64_t seal_parent;		/* SEALED: the rmdir's parent directory */
	char    *seal_name;		/* SEALED: the rmdir's entry name, malloc'ed */
	uint32_t n, cap;
	struct pohm_dentry *e;		/* malloc'ed array */
};

struct pohm_lease {
	struct pohm_obj_hdr hdr;
	uint64_t txid;			/* holder, 0 = free */
	uint64_t expires;		/* realtime ns */
};

/* Key builders: write the key string into out (POHM_KEY_MAX bytes). */
void pohm_key_inode(char *out, uint64_t ino);
void pohm_key_bucket(char *out, uint64_t dir, unsigned depth, uint32_t index);
void pohm_key_chunk(char *out, uint64_t ino, uint64_t chunk, uint64_t gen);
void pohm_key_map(char *out, uint64_t ino, uint64_t map, uint64_t gen);

/* Peek at any object's header: 0, -EILSEQ (not ours), -EPROTO (malformed). */
int pohm_obj_peek(struct pohm_obj_hdr *h, const uint8_t *p, size_t n);

/*
 * Encode/decode an inode; decode allocates (free with pohm_inode_clear).
 * An inline inode's stored SHA-512 is chunks[0].csum as it is, not hashed
 * again: whoever sets or cuts inline data keeps that the checksum of
 * exactly chunks[0].len bytes of idata (decision 0023).
 */
int pohm_inode_encode(struct pohm_buf *b, const struct pohm_inode *in);
int pohm_inode_decode(struct pohm_inode *in, const uint8_t *p, size_t n);
/* The trailing-section parts a format-1 decoder of session 11 knew (maps,
 * name hint): pohm_inode_decode_known with it decodes as that client did,
 * refusing inline data with -EPROTO (the tests' "old client"). */
#define POHM_INODE_EXT_V1	0x3
int pohm_inode_decode_known(struct pohm_inode *in, const uint8_t *p, size_t n, uint8_t known);
/* Only the fixed part (header, ino, attributes, versions, chunk_shift):
 * no target, xattrs, chunks, maps, hint or inline bytes (not hashed), so
 * nothing to clear.  For a caller that wants the version alone.  0 or -errno. */
int pohm_inode_decode_head(struct pohm_inode *in, const uint8_t *p, size_t n);
/* Does in carry its data inline (chunk 0 of POHM_GEN_INLINE)? */
int pohm_inode_is_inline(const struct pohm_inode *in);
/* Make in's data the len ≤ POHM_INLINE_MAX bytes at p, inline (len 0: no
 * data, no map entry).  The map and any external map are replaced.  0 or -errno. */
int pohm_inode_set_inline(struct pohm_inode *in, const void *p, size_t len);
/* Release what an inode owns and zero it. */
void pohm_inode_clear(struct pohm_inode *in);
/* Deep copy src into dst (dst is overwritten, not freed): 0 or -ENOMEM. */
int pohm_inode_copy(struct pohm_inode *dst, const struct pohm_inode *src);

/* Encode/decode a bucket; decode allocates (free with pohm_bucket_clear). */
int pohm_bucket_encode(struct pohm_buf *b, const struct pohm_bucket *bk);
int pohm_bucket_decode(struct pohm_bucket *bk, const uint8_t *p, size_t n);
void pohm_bucket_clear(struct pohm_bucket *bk);
/* Index of the entry called name, or -1. */
int pohm_bucket_find(const struct pohm_bucket *bk, const char *name);
/* Append a copy of e (name strings duplicated): 0 or -ENOMEM. */
int pohm_bucket_add(struct pohm_bucket *bk, const struct pohm_dentry *e);
/* Remove entry i (frees its strings). */
void pohm_bucket_remove(struct pohm_bucket *bk, uint32_t i);
/* Release one entry's strings. */
void pohm_dentry_clear(struct pohm_dentry *e);

/* Chunk object: header + fixed fields + data.  Decode points data into p. */
int pohm_chunk_encode(struct pohm_buf *b, const char *fsid, uint64_t ino, uint64_t chunk,
		      uint64_t gen, const void *data, size_t len);
int pohm_chunk_decode(uint64_t *ino, uint64_t *chunk, uint64_t *gen, const uint8_t **data,
		      size_t *len, const uint8_t *p, size_t n);
/* Byte offset of the data inside an encoded chunk object for this fsid and key. */
size_t pohm_chunk_data_offset(const char *fsid, const char *key);

/* Encode/decode a map object; decode allocates e (free with pohm_map_clear). */
int pohm_map_encode(struct pohm_buf *b, const struct pohm_map *m);
int pohm_map_decode(struct pohm_map *m, const uint8_t *p, size_t n);
void pohm_map_clear(struct pohm_map *m);

int pohm_lease_encode(struct pohm_buf *b, const struct pohm_lease *l);
int pohm_lease_decode(struct pohm_lease *l, const uint8_t *p, size_t n);

/* Stable 64-bit hash of a name (FNV-1a): picks the bucket. */
uint64_t pohm_name_hash(const char *name);

#endif
