/*
 * fsck.h — check and repair a namespace on the storage (DESIGN.md §3).
 *
 * The check reads every object: with a client, every copy of every key in
 * every group (core/iter: ITERATOR + READ); without one, the store's own
 * scan (kv.h, e.g. the in-memory store of the unit tests).  Objects are
 * classified by their self-describing header; the committed version of a
 * key is the content a majority of the groups holds (immutable chunks: the
 * content most groups hold).  Then the namespace is checked on the
 * committed versions: entries against inodes, link counts against names,
 * intents, chunk maps against chunks.
 *
 * Repair fixes each class from the committed copy and through the code
 * paths a client takes (core/ns repair entry points, the replicated CAS of
 * core/io):
 *   divergent / checksum  pohm_io_cas_get (CAS objects) or pohm_io_get
 *                         (chunks) with read repair: the committed content
 *                         under a fresh stamp, data CAS against each copy;
 *                         a copy younger than a writer may still count is
 *                         left to its writer (reported, retry later);
 *   intents               completed or rolled back as the next client would
 *                         (only once older than the intent timeout);
 *   dangling entries      removed (after re-reading the inode);
 *   nlink / parent        set to what the names say;
 *   orphans               with data (a non-empty file, a directory with
 *                         entries, a symlink), older than the intent
 *                         timeout: linked into /lost+found as "#<ino>" (made
 *                         if needed); without data, older than opts.age_ns
 *                         (creates that lost a race leave them): tombstoned;
 *   garbage / tombstones  deleted once older than opts.age_ns: chunk
 *                         generations and chunk-map objects no committed
 *                         inode names (the chunk GC), inode tombstones no entry refers to, buckets
 *                         of removed directories, absent markers.
 * Destructive repairs (deletes, drops, tombstones) run only when every
 * group could be read completely.  Run it on a quiet namespace: a change
 * racing the scan can look like an orphan or a wrong count for a moment.
 */
#ifndef POHM_CORE_FSCK_H
#define POHM_CORE_FSCK_H

#include <stdint.h>

#include "store.h"
#include "ns.h"

struct pohm_client;

enum pohm_fsck_class {
	POHM_FSCK_DANGLING = 0,		/* an entry names a missing or deleted inode */
	POHM_FSCK_ORPHAN,		/* a live inode no name refers to */
	POHM_FSCK_NLINK,		/* nlink or a directory's parent disagrees with the names */
	POHM_FSCK_INTENT,		/* unfinished rename/rmdir intent, split, seal, rename lease */
	POHM_FSCK_DIVERGENT,		/* the groups' copies of a key differ or are missing */
	POHM_FSCK_CHECKSUM,		/* a copy is corrupt (-84, or bytes not matching) */
	POHM_FSCK_GARBAGE,		/* chunk generations / buckets nothing refers to */
	POHM_FSCK_TOMBSTONE,		/* tombstones and absent markers past their age */
	POHM_FSCK_LOST,			/* data lost: no good copy, or a chunk a map names is gone */
	POHM_FSCK_UNCHECKED,		/* a group or object could not be read */
	POHM_FSCK_NCLASSES
};

/* Exit-status bits (OR'ed, as fsck(8) does). */
#define POHM_FSCK_OK		0
#define POHM_FSCK_FOUND		1	/* repairable issues found (or left) */
#define POHM_FSCK_ERROR		2	/* the check could not be completed */
#define POHM_FSCK_DATALOSS	4	/* data lost: every copy corrupt or missing */

enum pohm_fsck_sev {
	POHM_FSCK_INFO = 0,		/* in progress or young: not an issue yet */
	POHM_FSCK_FIX = POHM_FSCK_FOUND,
	POHM_FSCK_ERR = POHM_FSCK_ERROR,
	POHM_FSCK_LOSS = POHM_FSCK_DATALOSS,
};

struct pohm_fsck_issue {
	enum pohm_fsck_class cls;
	enum pohm_fsck_sev sev;
	char key[POHM_KEY_MAX];		/* the object concerned ("" if none) */
	uint64_t ino;			/* the inode concerned, 0 if none */
	int action;			/* repair: 0 not tried, 1 done, 2 would do (dry run), <0 -errno */
	int verify;			/* found by the check that follows a repair: left over */
	char what[320];			/* one line saying what is wrong (and what was done) */
};

struct pohm_fsck_opts {
	int repair;			/* fix what can be fixed */
	int dry_run;			/* with repair: say what would be done, change nothing */
	uint64_t age_ns;		/* reclaim garbage/tombstones/markers older than this
					 * (0 = POHM_FSCK_DEFAULT_AGE) */
	/* Each issue as it is found (and, with repair, handled); may be NULL. */
	void (*report)(void *arg, const struct pohm_fsck_issue *is);
	/* Progress (may be NULL; same arg): phase 0 reading the objects, 1
	 * repairing copies, 2 reading them again after a repair; done of total
	 * (0 = unknown) items, bytes read so far in the phase. */
	void (*progress)(void *arg, int phase, uint64_t done, uint64_t total, uint64_t bytes);
	void *arg;
};

#define POHM_FSCK_DEFAULT_AGE	(3600ULL * 1000000000ULL)

struct pohm_fsck_result {
	uint64_t objects;		/* distinct keys seen */
	uint64_t inodes, tombstones, buckets, chunks, maps, leases, markers, foreign;
	uint64_t found[POHM_FSCK_NCLASSES];	/* issues (severity > INFO) per class */
	uint64_t info[POHM_FSCK_NCLASSES];	/* INFO notes per class */
	uint64_t fixed, failed;		/* repairs done / that failed */
	uint64_t young;			/* unreferenced objects younger than the age: left
					 * alone (INFO), not an issue (replaced versions, writes
					 * in progress or stopped mid-way; reclaimed once old) */
	int status;			/* POHM_FSCK_* bits of what was found */
	int complete;			/* every group and object could be read */
};

/* Name of a class ("dangling", "orphan", ...). */
const char *pohm_fsck_class_name(enum pohm_fsck_class c);

/*
 * Check (and with o->repair, repair) the namespace ns stored in kv.  With
 * client (the one under kv) every group's copies are compared too;
 * repairing them needs the client opened with read_repair = 1.  Fills res;
 * returns res->status, or -errno when the check could not start.
 */
int pohm_fsck_run(struct pohm_ns *ns, const struct pohm_kv *kv, struct pohm_client *client,
		  const struct pohm_fsck_opts *o, struct pohm_fsck_result *res);

#endif
