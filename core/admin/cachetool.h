/*
 * cachetool.h — whole-cache views and maintenance for the `pohmelfs` tool
 * (status, stats, sync's list of work, cache clean), built on the journal
 * and the local files only: nothing here talks to the storage, so status
 * and stats work while the cluster is down, and nothing here creates a
 * cache that does not exist yet.
 *
 * A record's local file is classified as the cache itself would see it
 * (DESIGN.md §2 "Change detection"): (st_ino, size, ctime) against the
 * record, a racy ctime settled by comparing the contents chunk by chunk.
 *
 * Like the rest of core/, this makes its system calls through core/sys and
 * never touches errno; functions return >= 0 or -errno.
 */
#ifndef POHM_CORE_CACHETOOL_H
#define POHM_CORE_CACHETOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cache.h"

/* A cache opened for inspection. */
struct pohm_ct {
	struct pohm_journal j;
	int pfd;			/* the prefix directory (O_PATH), -1 if it does not exist */
	char prefix[4096];
	char cache_dir[4096];
	char fsid[256];			/* the fsid the cache is bound to ("" if unknown) */
};

/*
 * Open the cache of prefix kept in cache_dir.  -ENOENT (and a message) if
 * cache_dir holds no journal yet: nothing is created.
 */
int pohm_ct_open(struct pohm_ct *t, const char *prefix, const char *cache_dir, char *err,
		 size_t errlen);
void pohm_ct_close(struct pohm_ct *t);

/* What a journal record's local file is now. */
enum pohm_ct_state {
	POHM_CT_DIR = 0,	/* a directory */
	POHM_CT_OTHER,		/* a symlink, FIFO, device or socket */
	POHM_CT_CLEAN,		/* a regular file whose local copy is the synced version */
	POHM_CT_DIRTY,		/* a regular file changed locally, not yet pushed */
	POHM_CT_STUB,		/* listed, data not fetched (a stub: stub.h) */
	POHM_CT_STUB_CHANGED,	/* a regular stub written without the shim: becomes a conflict copy */
	POHM_CT_MISSING,	/* the recorded name is gone or holds another file */
};

/* Short name of a state ("clean", "dirty", ...). */
const char *pohm_ct_state_name(enum pohm_ct_state s);

/* Classify r; st gets the local stat when there is a local file. */
enum pohm_ct_state pohm_ct_classify(struct pohm_ct *t, const struct pohm_jrec *r,
				    struct stat *st);

/* Totals over the journal. */
struct pohm_ct_summary {
	uint64_t records;			/* journal records */
	uint64_t dirs, files, others;		/* by stored type (files = regular) */
	uint64_t clean, dirty, stubs, stubs_changed, missing;	/* regular files by state */
	uint64_t conflicts;			/* records with POHM_J_CONFLICT */
	uint64_t cached_bytes;			/* size of fetched files (clean + dirty) */
	uint64_t cached_disk;			/* their allocated blocks, in bytes */
	uint64_t dirty_bytes;			/* size of dirty files */
	uint64_t stub_bytes;			/* stored size of files present only as stubs */
	uint64_t last_ns;			/* latest fetch or push (realtime ns), 0 = none */
	uint64_t state_disk;			/* bytes allocated under cache_dir */
};

/*
 * Walk every record; fn (may be NULL) sees each record with its state and
 * the local stat (zeroed when there is no local file); fn != 0 stops.
 */
int pohm_ct_scan(struct pohm_ct *t, struct pohm_ct_summary *s,
		 int (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_state st,
			   const struct stat *lst),
		 void *arg);

/* What cache clean did (files and bytes). */
struct pohm_ct_clean {
	uint64_t stubbed, freed;	/* files replaced by stubs, bytes their blocks held */
	uint64_t dirty;			/* kept: changed locally */
	uint64_t busy;			/* kept: open in some process (or not checkable) */
	uint64_t linked;		/* kept: more than one local name */
	uint64_t failed;		/* kept: an error (logged) */
};

/* cache clean's verdicts, for the callback. */
enum pohm_ct_verdict {
	POHM_CT_STUBBED = 0,
	POHM_CT_KEPT_DIRTY,
	POHM_CT_KEPT_BUSY,
	POHM_CT_KEPT_LINKED,
	POHM_CT_FAILED,
};

/*
 * Replace every clean, unopened, fetched regular file by a stub (stub.h:
 * a mode-000 socket inode, POHM_J_STUB in its record), so its data is fetched again at
 * the next open through the shim.  Dirty files, files open in any process
 * (checked with a write lease: the caller must ignore SIGIO) and files with
 * several local names are kept.  fn (may be NULL) hears each file's verdict.
 * 0 or -errno (a failure to walk the journal; per-file failures are counted).
 */
int pohm_ct_clean(struct pohm_ct *t, struct pohm_ct_clean *res,
		  void (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_verdict v,
			     uint64_t bytes),
		  void *arg);

/* Bounds of a cache (0 = no bound). */
struct pohm_ct_limits {
	uint64_t max_bytes;		/* cache_size: bytes held by fetched files */
	uint64_t min_free;		/* cache_min_free: free bytes on the prefix's filesystem */
};

/*
 * Evict as pohm_ct_clean replaces (clean, unopened, single-named files
 * only; the caller ignores SIGIO), least recently used first (local atime
 * or the cache's last check, whichever is later), until the cache is
 * within lim.  Files counted toward the size include dirty ones, which are
 * never evicted.  res and fn as pohm_ct_clean.  0 or -errno.
 */
int pohm_ct_evict(struct pohm_ct *t, const struct pohm_ct_limits *lim, struct pohm_ct_clean *res,
		  void (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_verdict v,
			     uint64_t bytes),
		  void *arg);
/* A cache_size/cache_min_free value ("10G", "5%" of fs_size) in bytes; "" or NULL is 0. */
int pohm_ct_size_value(const char *v, uint64_t fs_size, uint64_t *out);

#endif
