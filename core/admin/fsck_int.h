/*
 * fsck_int.h — internals shared by fsck.c (driver, object table, replica
 * checks) and fsck_ns.c (the namespace checks).  Not for other modules.
 */
#ifndef POHM_CORE_FSCK_INT_H
#define POHM_CORE_FSCK_INT_H

#include "fsck.h"
#include "wire.h"

#define FK_ALT	4		/* distinct good contents kept per chunk */

struct fk_inode {
	struct pohm_inode in;		/* decoded committed version */
	uint64_t ts_ns;			/* record stamp (0 unknown) */
	uint32_t names;			/* entries naming it (live directories' leaves) */
	uint32_t subdirs;		/* directories: entries of type DT_DIR in it */
	uint32_t entries;		/* directories: entries in it */
	uint64_t name_dir;		/* the directory of (one of) its names */
	int busy;			/* part of an unfinished operation: counts not checked */
};

struct fk_bucket {
	struct pohm_bucket bk;
	uint64_t ts_ns;
	int reached;			/* a live directory's walk got here */
};

struct fk_chunk {
	char key[POHM_KEY_MAX];
	uint64_t ino, idx, gen;
	uint64_t ts_ns;
	uint32_t len;			/* data bytes */
	unsigned nalt;
	uint8_t csum[FK_ALT][64];	/* sha512 of the data of the good copies */
};

struct fk_map {
	char key[POHM_KEY_MAX];
	struct pohm_map m;		/* decoded (entries owned) */
	uint64_t ts_ns;
	unsigned nalt;
	uint8_t csum[FK_ALT][64];	/* sha512 of the whole object, per good content */
};

/* The committed view: every object by key. */
struct fk_slot {
	char *key;			/* NULL = empty */
	uint8_t type;			/* POHM_OBJ_* */
	uint32_t idx;			/* into the array of that type */
};

struct fsck {
	struct pohm_ns *ns;
	const struct pohm_kv *kv;
	struct pohm_client *c;
	const struct pohm_fsck_opts *o;
	struct pohm_fsck_result *res;
	int verify;			/* this pass checks what a repair left */
	int repair;			/* act (not dry) */
	uint64_t now;			/* real time, ns */
	uint64_t age;			/* reclaim age, ns */

	struct fk_slot *slot;
	size_t nslot, used;
	struct fk_inode *ino;
	size_t nino, cino;
	struct fk_bucket *bk;
	size_t nbk, cbk;
	struct fk_chunk *ch;
	size_t nch, cch;
	struct fk_map *map;
	size_t nmap, cmap;
	struct pohm_lease lease;
	int have_lease;
	uint64_t lease_ts;
	uint64_t lost_found;		/* inode of /lost+found once known */
	uint64_t unknown;		/* objects of a kind this fsck does not know */
	uint64_t names_unsure;		/* buckets (or inodes: a directory's) whose entries
					 * this pass cannot read: an inode without a
					 * counted name may still have one there */
	uint64_t read_bytes;		/* bytes of copies read in this pass (progress) */
};

/* Tell o->progress (if any) how far this pass got. */
void fk_progress(struct fsck *f, int repairing, uint64_t done, uint64_t total);

/* Report one issue (counts it, sets status bits, calls the callback). */
void fk_issue(struct fsck *f, enum pohm_fsck_class cls, enum pohm_fsck_sev sev, const char *key,
	      uint64_t ino, int action, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* The outcome of a repair step as an action code (1 done, 2 dry run, -errno). */
int fk_act(struct fsck *f, int rc);
/* Add one committed object to the view (key, bytes, stamp); 0 or -ENOMEM. */
int fk_add(struct fsck *f, const char *key, const uint8_t *data, size_t len, uint64_t ts_ns);
/* Add another good content of a chunk or map object already in the view. */
void fk_chunk_alt(struct fsck *f, const char *key, const uint8_t *data, size_t len);
/* Slot of key, or NULL. */
const struct fk_slot *fk_find(const struct fsck *f, const char *key);
struct fk_inode *fk_inode(struct fsck *f, uint64_t ino);
struct fk_bucket *fk_bucket(struct fsck *f, uint64_t dir, unsigned depth, uint32_t index);
struct fk_map *fk_map(struct fsck *f, uint64_t ino, uint64_t index, uint64_t gen);
/* "age" as text: "3.2 s", "2 h". */
void fk_age(char *buf, size_t len, uint64_t ns);
/* Room for element n of *arr (element size sz, capacity *cap, doubled from
 * 256 as needed).  0 or -ENOMEM (*arr unchanged). */
int fk_grow(void **arr, size_t n, size_t *cap, size_t sz);

/* fsck_ns.c: does a committed live inode name the chunk or chunk-map object
 * key (1), or not (0)?  Other keys: 1.  Valid once the view is complete. */
int fk_immutable_named(struct fsck *f, const char *key);
/* fsck_ns.c: the namespace checks on the committed view (and their repairs). */
void fk_check_namespace(struct fsck *f);

#endif
