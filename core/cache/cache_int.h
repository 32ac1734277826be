/*
 * cache_int.h — internals shared by the files of the cache model.  Their
 * order, bottom to top (each calls only files below it; tests/circles.sh):
 * cachebase.c (freshness marks, counters), cachestat.c (stat overlay),
 * createmark.c (create marks), cacheperm.c, cachexattr.c, push.c (pushes
 * and conflicts), pushmany.c (many pushes together, syncs), cache.c (open,
 * fetch, walk and materialize, listing),
 * mvintent.c (rename intents), cachens.c (namespace changes).
 */
#ifndef POHM_CORE_CACHE_INT_H
#define POHM_CORE_CACHE_INT_H

#include <pthread.h>
#include <string.h>

#include "cache.h"
#include "journal.h"
#include "ns.h"

#define POHM_VCACHE 4096
#define POHM_PCACHE 1024
#define POHM_SIBDIRS 16
#define POHM_DCACHE 256
#define POHM_LHINT 1024	/* local inodes the overlay looked up (cachestat.c) */
#define POHM_DCHAIN 16		/* deeper directories are not in the walk table: every
				 * create below one walks (cache.c parent_recent) */

/* A local inode's storage inode as the journal's index gave it (cachestat.c):
 * a hint, confirmed by the record naming that local inode. */
struct pohm_lhint {
	uint64_t dev, lino, ino;	/* ino 0 = empty */
	uint64_t mono_ns;		/* when the index gave it */
};

/* A directory whose expired entries this process revalidated (cachebase.c
 * cache_sib_batch): when one went alone, when the batch last ran. */
struct pohm_sibdir {
	uint64_t dino;			/* 0 = empty */
	uint64_t miss_ns, batch_ns;	/* monotonic ns, 0 = never */
};

/* A path materialized within attr_timeout, and the local file it found. */
struct pohm_pfresh {
	uint64_t hash;			/* of the path and the flags that matter (0 = empty) */
	uint64_t ldev, lino;
	uint64_t mono_ns;
	uint64_t ino;			/* its storage inode once a stat overlay looked it
					 * up (pohm_cache_stat_found), 0 until then */
};

/* walkfresh.c: the directories of a walked path, root's child first: each
 * one's storage inode and the validated_ns its record had (0: this
 * process's own check). */
struct cache_walk_chain {
	unsigned n;
	uint64_t ino[POHM_DCHAIN], vns[POHM_DCHAIN];
};

/* walkfresh.c: a directory a walk passed through (0 hash = empty). */
struct pohm_dfresh {
	uint64_t hash;			/* of its path below the prefix */
	uint64_t ldev, lino;		/* its local directory */
	struct cache_walk_chain chain;	/* it is chain.ino[chain.n - 1] */
};

struct pohm_cache {
	struct pohm_ns *ns;
	struct pohm_journal j;
	int pfd;			/* the prefix directory, O_PATH, high */
	int proot_len;			/* proot's length; 0 until first read, -1
					 * unusable (atomic: filled under vlock, then set) */
	char proot[4096];		/* the kernel's path of pfd, read once (cache_prefix_root) */
	int stage_fd;			/* where fetches build temp files (same filesystem) */
	int kdir;			/* the kept look (walkfresh.c): the last create's
					 * parent, O_PATH, high, registered as ownfd; -1 none */
	uint64_t kdir_dev, kdir_ino;	/* its local directory (vlock) */
	int kdir_users;			/* creates using it now (vlock) */
	uint64_t klast_dev, klast_ino;	/* the last create's parent from the walk table (vlock) */
	int klow;			/* 1: a move high failed (RLIMIT_NOFILE at or below
					 * POHM_FD_BASE): nothing kept, no move tried (vlock) */
	int cmark_fd;			/* c.lock, read-only, for cache_create_marked: opened
					 * at its first use (-1 until then; set by compare-
					 * and-swap, then registered as ownfd) */
	uint64_t pdev;			/* st_dev of the prefix's filesystem */
	uint64_t dev;			/* device number reported for the fsid */
	uint64_t attr_timeout_ns;
	char prefix[4096];
	char host[256];
	int is_root;			/* may chown: local files carry the stored owner */
	pthread_mutex_t vlock;		/* guards vino, vtime, pfresh, dfresh, lhint, sib, sibnext,
					 * stats, kdir_dev/ino/users, klast_dev/ino, klow */
	uint64_t vino[POHM_VCACHE];	/* validated inodes (direct-mapped) */
	uint64_t vtime[POHM_VCACHE];	/* monotonic ns of that validation */
	struct pohm_pfresh pfresh[POHM_PCACHE];	/* paths done recently (direct-mapped) */
	struct pohm_dfresh dfresh[POHM_DCACHE];	/* directories walked (walkfresh.c) */
	struct pohm_lhint lhint[POHM_LHINT];	/* index answers of the overlay (direct-mapped) */
	struct pohm_sibdir sib[POHM_SIBDIRS];	/* cache_sib_batch's directories (round robin) */
	unsigned sibnext;
	struct pohm_cache_stats stats;
	int (*space_fn)(void *arg, uint64_t need);	/* set once at init (see cache.h) */
	void *space_arg;
	int (*offline)(void *arg);	/* pohm_cache_opts.offline, set at open */
	void (*follow_fn)(struct pohm_cache *c, const char *rel);	/* set once (see cache.h) */
	int (*absent_fn)(struct pohm_cache *c, const char *rel);	/* set once (see cache.h) */
	unsigned sq_deferred;		/* atomic: the last bounded replay left records (sigqueue.c) */
	void *offline_arg;
	struct cache_writers *wr;	/* open-for-write locks of this process (writer.c) */
	struct cache_lockfds *lf;	/* lock files' descriptions kept between uses (lockfd.c) */
	unsigned boot_dirty;		/* files an earlier boot left dirty, found at open (cacheboot.c) */
};

/* writer.c: hold ino's byte of w.lock exclusively, not waiting: no
 * process of this host has ino open for write (with the library) while it
 * is held, and a new writer waits for it (pohm_cache_writer_open).  For a
 * refresh's re-check and rename only: local file calls, never network
 * I/O, never a writer lock of this thread's meanwhile.  The lock's fd (give
 * it to cache_writer_include), -EAGAIN when a writer holds the byte, or
 * -errno. */
int cache_writer_exclude(struct pohm_cache *c, uint64_t ino);
void cache_writer_include(int fd);

/* writer.c: 1 if this process mapped the local file (ldev, lino) writable
 * and shared (pohm_cache_writer_mapped; until the process ends), else 0. */
int cache_writer_mapped_here(struct pohm_cache *c, uint64_t ldev, uint64_t lino);

/* cachestat.c: pohm_cache_stat_fix with the storage inode *ino when the
 * caller knows it (non-zero: trusted only when its record names st's local
 * inode; else the index is asked).  *ino: the inode the overlay used, 0
 * when it left st as it was. */
void cache_stat_fix_ino(struct pohm_cache *c, struct stat *st, uint64_t *ino);
/* cachestat.c (issue 23: readdir's overlay of d_ino, then the stat of the
 * same name): 0 with *ino and *rec (clear it) when the overlay looked lst's
 * local inode up in the index within attr_timeout and that inode's record
 * still names lst's local file; else -ENOENT (ask the index). */
int cache_lhint_rec(struct pohm_cache *c, const struct stat *lst, uint64_t *ino,
		    struct pohm_jrec *rec);
/* cachestat.c: rec's overlay fields into *seen (ok set). */
void cache_stat_seen_of(struct pohm_stat_seen *seen, const struct pohm_jrec *rec);
/* cachestat.c: the overlay of st from seen (ok, and its lino st's local
 * inode on the cache's device: the caller checked). */
void cache_stat_apply(struct pohm_cache *c, struct stat *st, const struct pohm_stat_seen *seen);

/*
 * walkfresh.c (issue 23): cache_walk_note remembers that the walk found
 * directory rel (below the prefix, as spelled, no symlink followed) at local
 * (ldev, lino) with every directory of its path in ch fresh.
 * cache_walk_start: while each of them is still fresh (cache_fresh_at_count)
 * and rel still opens to that local directory, that directory opened
 * O_PATH (the caller closes it) and *ch; else -ENOENT (walk from the
 * root).  base (NULL or fd -1: none): the caller's own open of rel with no
 * symlink on the way, taken instead of opening rel again when it is the
 * table's local directory; its fd is this function's (base->fd -1 after):
 * returned, or closed before anything else is opened.
 */
void cache_walk_note(struct pohm_cache *c, const char *rel, const struct cache_walk_chain *ch,
		     uint64_t ldev, uint64_t lino);
int cache_walk_start(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
		     struct pohm_walk_base *base);
/* cache_walk_start's answer when base is named (no fd) and the table's
 * directory: *ch filled, base->taken 1, no fd; the walk opens rel by
 * cache_walk_open when it needs the directory itself. */
#define CACHE_WALK_NOFD (-EBADF)
/* rel's local directory opened from the prefix root with no symlink on the
 * way (O_PATH), when it is (ldev, lino): the fd, or -ENOENT. */
int cache_walk_open(struct pohm_cache *c, const char *rel, uint64_t ldev, uint64_t lino);
/* How a create's parent fd was had (cache_walk_parent_direct): kept, the
 * kept look (c->kdir, not to close); else ldev/lino non-zero when it is
 * the walk table's directory (it may be kept). */
struct cache_look {
	int kept;
	uint64_t ldev, lino;
};
/* cache_walk_start for a create's parent: the kept look when it is the
 * table's directory and its kernel's path is still the prefix's and rel
 * (look->kept 1; give it back with cache_walk_look_done), else as
 * cache_walk_start (look->ldev/lino the table's directory). */
int cache_walk_start_look(struct pohm_cache *c, const char *rel, struct cache_walk_chain *ch,
			  struct cache_look *look);
/* Done with a create's parent fd: the kept look given back; a walk table
 * directory's fd kept instead of the one kept before (when no create uses
 * that one); any other closed. */
void cache_walk_look_done(struct pohm_cache *c, int dfd, const struct cache_look *look);
/* The length of the kernel's path of the prefix directory (c->proot,
 * read once), or <= 0 (unusable). */
int cache_prefix_root(struct pohm_cache *c);
/* cachens.c: is the kernel's path of fd (the calling thread's table) the
 * prefix's own (cache_prefix_root) and rel, a rel the kernel's
 * " (deleted)" mark cannot fake?  1 or 0 (also when the root is unknown). */
int cache_fd_is_rel(struct pohm_cache *c, int fd, const char *rel);

/* Is the store offline (no group answers) right now?  1 or 0. */
int cache_offline(struct pohm_cache *c);

/* lockfd.c: descriptions of cache_dir's lock files kept between uses (own mutex). */
enum cache_lockfile { CACHE_LF_W, CACHE_LF_P, CACHE_LF_C, CACHE_LF_N };
int cache_lockfds_init(struct pohm_cache *c);
void cache_lockfds_close(struct pohm_cache *c);
/* In a fork child: close the kept ones (they are the parent's too). */
void cache_lockfds_atfork_child(struct pohm_cache *c);
/* An fd on lock file f, an open file description no other holder uses,
 * holding no lock, >= POHM_FD_BASE and close-on-exec: a kept one or a new
 * open; *gen: cache_fork_gen() at the take, for cache_lockfd_give.  -errno. */
int cache_lockfd_take(struct pohm_cache *c, enum cache_lockfile f, unsigned *gen);
/* Forks this process made so far (pohm_cache_fork_mark): a description
 * opened or kept before the count changed may be a fork child's too. */
unsigned cache_fork_gen(void);
/* Release every lock of fd (from cache_lockfd_take, which set gen) and keep
 * it for the next taker (or close it; closed, never unlocked, if a fork
 * came after the take); fd < 0: nothing. */
void cache_lockfd_give(struct pohm_cache *c, enum cache_lockfile f, int fd, unsigned gen);

/* writer.c: the table of this process's open-for-write locks (own mutex). */
int cache_writers_init(struct pohm_cache *c);
void cache_writers_close(struct pohm_cache *c);
void cache_writers_atfork_child(struct pohm_cache *c);

/* The host's boot id hashed (POHMELFS_TEST_BOOT_ID in test builds); 0 if unknown. */
uint64_t cache_boot_id(void);
/* First open of the cache in a new boot: mark files left dirty POHM_J_TORN. 0 or -errno. */
int cache_boot_check(struct pohm_cache *c);

/*
 * cachebase.c: is rec, which the index names for the local file lst, the
 * record of another local file?  1 when its local inode is not lst's (a
 * stale index entry: the file system reused the number of a file the
 * entry was made for), except for a hardlinked file (nlink > 1), whose
 * other names may be other local copies; 0 when it is lst's.  Also 1 when
 * one is a directory and the other not, whatever the numbers say (a
 * directory removed without the shim, its number given to a new file:
 * test_cache.c, a_directory_record_never_describes_a_file_of_its_local_
 * inode_number).  A directory has no other names: it is never excepted
 * (a stale entry of one made the walk answer with another directory's
 * inode, and names created in the one landed in the other:
 * test_dirindex.c).
 */
int cache_index_stale(const struct pohm_jrec *rec, const struct stat *lst);
/*
 * cachebase.c: the storage inode whose record describes the local file
 * lst (*ino): the index's entry for it, confirmed by its record
 * (cache_index_stale).  0; -ENOENT when the index has none, or one with no
 * record, or a stale one (a file made without the shim on the reused
 * number of one removed without it: adopt it, never take it as known);
 * another -errno when the record cannot be read (callers that adopt leave
 * the file then, as known).
 */
int cache_index_known(struct pohm_cache *c, const struct stat *lst, uint64_t *ino);

/* cachebase.c: freshness marks and counters (vlock). */
/* Was ino checked against the storage within attr_timeout by this process? */
int cache_fresh(struct pohm_cache *c, uint64_t ino);
/* Fresh by this process's word (1 or 0), or -1 when it has none; validated_ns
 * (realtime, 0: unknown) answers then.  count: a fresh answer counts as a
 * validation skipped. */
int cache_fresh_at_count(struct pohm_cache *c, uint64_t ino, uint64_t validated_ns, int count);
/* The same test's deadline: the monotonic ns (pohm_sys_mono_ns) until which
 * ino stays fresh, 0 when it is not fresh now. */
uint64_t cache_fresh_until(struct pohm_cache *c, uint64_t ino, uint64_t validated_ns);
/* The same, and when this process has no word on ino (a new process):
 * by any process of the cache, as its record's validated_ns says. */
int cache_fresh_rec(struct pohm_cache *c, const struct pohm_jrec *rec);
/* Remember that ino was just checked. */
void cache_mark_fresh(struct pohm_cache *c, uint64_t ino);
/* ino, whose record holds version, was just checked against the storage
 * and found unchanged: cache_mark_fresh, and its validated_ns is now (the
 * other processes of the cache see it fresh too). */
void cache_mark_checked(struct pohm_cache *c, uint64_t ino, uint64_t version);
/* cache_mark_checked as of an earlier moment (mono_ns, real_ns): when the
 * reads that checked ino began, so a check never outlives attr_timeout
 * counted from them. */
void cache_mark_checked_at(struct pohm_cache *c, uint64_t ino, uint64_t version,
			   uint64_t mono_ns, uint64_t real_ns);
/* cache_mark_checked_at of inos[i] with versions[i], each: the records'
 * validated_ns in one journal pass (pohm_journal_touch_many). */
void cache_mark_checked_many(struct pohm_cache *c, size_t n, const uint64_t *inos,
			     const uint64_t *versions, uint64_t mono_ns, uint64_t real_ns);
/* Forget that (after a local or remote change), here and in ino's record. */
void cache_unmark(struct pohm_cache *c, uint64_t ino);
/*
 * Issue 23 (negative lookups, decision 0047; across processes, 0062): the
 * validation table also remembers complete directories, under a salted
 * key.  COMPLETE(dino) fresh means: this process holds every entry of
 * directory dino locally, as of a listing (cache.c list_dir) or its own
 * mkdir (a new directory is complete and empty), begun within
 * attr_timeout, and every local change since kept it so.  A listing also
 * leaves it in dino's record (POHM_J_LISTED, listed_ns) for the other
 * processes of the cache: every namespace change of this host makes its
 * local name before its call returns.  A name missing locally in it is
 * absent, no round trip (cache.c ensure_entry), and a new process's
 * opendir does not list it again.  Whatever might leave a stored name
 * missing locally (a failed half of a create, a cross-directory rename,
 * a listing that left a name to a creator) drops it, here and in the
 * record: cache_dir_incomplete.
 */
#define COMPLETE(ino) ((ino) ^ 0x4c49535445440000ULL)
/* Directory dino is complete here as of mono_ns (CLOCK_MONOTONIC, ns). */
void cache_mark_complete(struct pohm_cache *c, uint64_t dino, uint64_t mono_ns);
/* cache_mark_complete, and in dino's record for the other processes as of
 * real_ns (the listing's start, CLOCK_REALTIME) unless a newer listing or
 * a clear after real_ns is there.  No error: a mark not written lists again. */
void cache_mark_listed(struct pohm_cache *c, uint64_t dino, uint64_t mono_ns, uint64_t real_ns);
/* Is it (this process's word, else its record's: one record read), within
 * attr_timeout?  1 or 0. */
int cache_dir_complete(struct pohm_cache *c, uint64_t dino);
/* It may not be any more: this process's word, and the record's (a read;
 * a write when it is set). */
void cache_dir_incomplete(struct pohm_cache *c, uint64_t dino);
/*
 * Issue 23 (find -ls, du -a, stat of many names): an expired entry of
 * directory dino is about to be revalidated.  1: revalidate its siblings
 * with it, in one listing and batch (cache.c sib_batch), now — this
 * process listed dino (its COMPLETE key, however old) and dino is small
 * (the caller's word that it is not huge, so a batch stays bounded), or
 * it listed dino or dino is small and another expired entry of it went
 * alone within attr_timeout — and no batch of
 * dino ran within attr_timeout (one a window: entries the batch could not
 * confirm go one by one).  The batch is noted as begun now.  0: alone;
 * noted as a miss, so that the next expired entry of dino batches.
 */
int cache_sib_batch(struct pohm_cache *c, uint64_t dino, int small);
/* A directory's stored mtime lags its last entry change by at most this
 * (cachedirtime.c, decision 0015). */
#define POHM_DIR_TIME_LAG_NS 1000000000ULL
/* The lag in force: POHM_DIR_TIME_LAG_NS, or a test build's (cachedirtime.c). */
uint64_t cache_dir_time_lag_ns(void);
/* An entry of directory dino was just added or removed in the storage: move
 * its stored mtime and ctime to now, unless the stored mtime this journal
 * knows is younger than POHM_DIR_TIME_LAG_NS (then nothing: at most one
 * setattr per directory and window).  Errors are logged, never returned;
 * errno preserved.  No lock held. */
void cache_dir_changed(struct pohm_cache *c, uint64_t dino);
/* Add to a counter under vlock. */
void cache_count(struct pohm_cache *c, uint64_t *field, uint64_t n);

/* The first n bytes of s, NUL-terminated: in sbuf (4096 bytes) when they
 * fit, else on the heap (a name below the prefix of 4096 bytes or more,
 * issue 19 item 10); NULL without memory.  cache_cut_free frees a heap copy. */
char *cache_cut(const char *s, size_t n, char *sbuf);
void cache_cut_free(char *p, const char *sbuf);
/*
 * Walk rel's parent chain (materializing it): *dfd gets an O_PATH fd of the
 * parent directory (close it), *dino its storage inode, *name points at the
 * last component inside rel.  -ENOENT/-ENOTDIR if the chain does not exist.
 */
int cache_walk_parent(struct pohm_cache *c, const char *rel, int *dfd, uint64_t *dino,
		      const char **name);
/* cache_walk_parent, and -EXDEV when the walk to the parent followed a
 * symlink: the caller goes by the parent's real path (pohm_cache_create:
 * its rel must name the new file without a symlink, as pohm_cache_opened
 * checks it; else the file is never recorded, never pushed).  *dfd may be
 * the kept look: the caller ends with cache_walk_look_done(c, *dfd, look),
 * never closes it itself. */
int cache_walk_parent_direct(struct pohm_cache *c, const char *rel, int *dfd, uint64_t *dino,
			     const char **name, struct cache_look *look);
/* Make dfd/name exist locally as a copy (or stub) of storage inode ino. */
int cache_make_local(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		     const struct pohm_inode *in);
/* cache_make_local whose record says validated at validated_ns (realtime;
 * 0: now), e.g. when the listing that read in began. */
int cache_make_local_at(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			const struct pohm_inode *in, uint64_t validated_ns);
/* What a refresh decided to fetch over: the name's local file and its
 * journal record at that moment (the fetch's base). */
struct cache_fetch_base {
	uint64_t lino;			/* the name's local inode then */
	int has_rec;			/* a record existed; then: */
	uint32_t flags;
	uint64_t version, dversion, rlino, lsize;
	struct pohm_ts lctime;
};
/* Note dfd/name's local file (lst) and its record (rec, or NULL) as a base. */
void cache_fetch_base_of(struct cache_fetch_base *b, const struct stat *lst,
			 const struct pohm_jrec *rec);
/*
 * Fetch in's data into a temp file, then install it over dfd/name (rename;
 * rec updated and stored) only if, under ino's w.lock byte held exclusively
 * (cache_writer_exclude), nothing moved since base: no writer of this host
 * holds the inode open, the record is base's (no other refresh, push or
 * restub came between: never an older version over a newer one), and the
 * name still holds base's local file, unchanged.  0 (installed, or left
 * alone because something moved: the local copy wins, the next open looks
 * again), or -errno.
 */
int cache_fetch(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		const struct pohm_inode *in, const struct cache_fetch_base *base);
/* Fetch in's data into dfd/name unless the local copy is current or dirty. */
int pohm_cache_refresh(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		       const struct pohm_inode *in);
/* Store fd's contents (rec->hint names it) as a new file under
 * /.pohmelfs-conflicts/HOST/, and log why.  0 or -errno. */
int cache_conflict_copy(struct pohm_cache *c, int fd, const struct pohm_jrec *rec,
			const struct stat *st, const char *why);
/* Wait for this host's turn to push ino (push.c: one pusher per inode and
 * host; an OFD lock on byte <ino> of p.lock, dropped by the kernel if the
 * holder dies).  1 if taken (give it back with cache_push_turn_drop, from
 * the same thread), 0 if waiting gave up.  No journal or storage change
 * of this host's pushes happens to ino while the turn is held. */
int cache_push_turn_take(struct pohm_cache *c, uint64_t ino);
void cache_push_turn_drop(struct pohm_cache *c, uint64_t ino);
/* Complete the local half of renames whose process died between the storage
 * rename and the local one (mvintent.c; run by reconcile), and drop
 * earlier-format create marks past their age.  0 or -errno. */
int cache_rename_recover(struct pohm_cache *c);
/* Before a storage rename of rec's file from -> to: write its intent and
 * hold this thread's renamer lock.  0, or -errno (no intent written). */
int cache_intent_write(struct pohm_cache *c, const struct pohm_jrec *rec, const char *from,
		       const char *to);
/* After the local rename is recorded: remove ino's intent, release the lock. */
void cache_intent_drop(struct pohm_cache *c, uint64_t ino);
/* If p/name (dfd: p/, len: its length) is an earlier-format create mark:
 * remove it once old enough and return 1; else 0 (createmark.c). */
int cache_old_mark_expire(int dfd, const char *name, size_t len);
/*
 * A push of a batch (pohm_cache_push_fds) stops at its commit point
 * (PREP: what the commit would send is kept here, ready set) and goes on
 * from there once the batch's commits are answered (FINISH: rc and in
 * are its commit's answer), so that the commits of many files go out
 * together and everything before and after them is the one push's code.
 */
enum { STASH_PREP = 1, STASH_FINISH };
struct push_stash {
	int phase;
	int ready;			/* PREP: stopped at the commit point */
	struct pohm_chunk_set *set;	/* what the commit sends (owned here until FINISH) */
	uint8_t (*sums)[64];
	size_t n;
	struct pohm_setattr sa;
	struct pohm_ts mt;
	int rc;				/* FINISH: the commit's answer */
	struct pohm_inode in;
};

/* push.c: push fd (whose storage inode the journal knows, rec read in
 * its turn before st) if its local copy changed: 1 pushed, 0 nothing,
 * -EAGAIN (retry: the file changed size, the journal lagged), -ENOENT
 * (cache_push_drop_gone decides), -errno.  ps: NULL, or a batch's phase
 * (struct push_stash: PREP returns 0 with ps->ready at the commit point). */
int cache_push_known(struct pohm_cache *c, int fd, struct pohm_jrec *rec, const struct stat *st,
		     struct push_stash *ps);
/* chattr.c: after a push's put that cleared POHM_J_CHGRP, having sent
 * the group `sent` (journal.h POHM_J_CHGRP_SENT): the flag again when fd's
 * file's group is no longer `sent` (a second chgrp during the push found
 * the flag still set and wrote nothing, decision 0068). */
void cache_chgrp_again(struct pohm_cache *c, int fd, uint32_t sent);
/* push.c: a push failed -ENOENT: 0 when the storage no longer has ino (the
 * journal forgets it), -ENOENT when it does, or -errno. */
int cache_push_drop_gone(struct pohm_cache *c, uint64_t ino);
/* push.c: open rel's local file for its push: *fd readable (the caller's
 * to close) or -1 (nothing to push); 1 when rel is no regular file (push
 * it by path), 0, or -errno. */
int cache_push_open(struct pohm_cache *c, const char *rel, int *fd);
/* Forget what push.c remembers of ino (this host's last commit of it): ino is gone. */
void cache_push_forget(struct pohm_cache *c, uint64_t ino);
/* createmark.c: create marks (the comment above cache_create_mark there). */
/* FNV-1a of a string (a create mark's byte; cachens.c's created_hash). */
uint64_t cache_rel_hash(const char *rel);
/* on: hold this thread's create mark on (dino, name), dropping the one it
 * held; 0: drop it.  Best effort: nothing is returned. */
void cache_create_mark(struct pohm_cache *c, uint64_t dino, const char *name, int on);
/* Is (dino, name) being created by a process of this host (its create
 * mark's byte is locked)?  A listing leaves it alone. */
int cache_create_marked(struct pohm_cache *c, uint64_t dino, const char *name);

/* push.c: put a fresh stub over rec's local name (its contents are saved elsewhere);
 * rec becomes a stub record and is stored.  0 or -errno. */
int cache_restub(struct pohm_cache *c, struct pohm_jrec *rec);
/* Has dfd/name (described by st) changed since rec's fetch or push?  1, 0. */
int cache_local_changed(struct pohm_cache *c, const struct pohm_jrec *rec, int dfd,
			const char *name, const struct stat *st);
/* listgone.c: the local directory dfd/name (rel), whose stored directory
 * ino is gone, goes with its entries: clean copies are removed, files
 * changed here (or unknown to the journal) kept as conflict copies first;
 * what cannot be (a rename of this host in flight, a file open for write
 * here, a failed copy) stays, and the directories above it; nothing goes
 * once its record no longer names ino (made again here meanwhile).
 * 1 gone, 0 (part) kept. */
int cache_drop_gone_dir(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			uint64_t ino);
/* listgone.c: may this host's rmdir drop every entry of the local
 * directory dfd/name (journal ino) once the storage removed it?  1 when
 * each is a stale copy the journal knows (none made without the shim or
 * not adopted yet, no socket or fifo of this host only, nothing open for
 * write here or being renamed, no conflict-marked file); nothing changes. */
int cache_rmdir_only_stale(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			   uint64_t ino);
/* listgone.c: after the storage removed the stored directory ino, drop
 * the local dfd/name's stale copies the journal knows (a changed file
 * kept as a conflict copy first), and the directory.  1 gone, 0 kept. */
int cache_rmdir_drop_stale(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			   uint64_t ino);
/* dirmove.c: rename the local directory odfd/oname to dfd/name, never
 * over a name that exists (counted: pohm_cache_dir_moves).  0 or -errno. */
int cache_dir_rename_local(int odfd, const char *oname, int dfd, const char *name);
/* dirmove.c: count a local directory moved another way (a listing's
 * rename within its directory). */
void cache_dir_moved(void);
/* dirmove.c: the stored directory ino is now dfd/name, rel (another host
 * moved it): the local directory the journal records for ino, checked by
 * identity, moves there (not while a rename of this host moves ino), the
 * records below it re-hinted (cache_dir_rehint_below).  0 moved (the
 * caller records the directory itself), else -errno (nothing done). */
int cache_dir_move_in(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		      uint64_t ino);
/* dirmove.c: does a rename of this host in flight move ino (cachens.c's
 * p/<ino>.mv intent)?  1 or 0. */
int cache_dir_moving(struct pohm_cache *c, uint64_t ino);
/* Is name, an entry of a local directory (at_root: the prefix root), one
 * of the cache's own (".", "..", POHM_STAGING_NAME), which no walk of the
 * tree takes (cachescan.c, rehint.c)?  1 or 0.  Inline: the two files are
 * otherwise no unit (tests/circles.sh). */
static inline int cache_name_ours(int at_root, const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..") ||
	       (at_root && !strcmp(name, POHM_STAGING_NAME));
}
/* rehint.c: the local directory dfd/name was moved to rel: every record
 * of an entry below it (any depth) whose hint no longer names its local
 * file takes the entry's new path, so that the push, which finds a file by
 * its hint, finds it (DESIGN §2).  Best effort: an entry it may have
 * missed is logged, and the sync's repair (cache_rehint_all) finds it. */
void cache_dir_rehint_below(struct pohm_cache *c, int dfd, const char *name, const char *rel);
/* rehintmiss.c: the files a complete repair walk did not find (records
 * of files removed without the shim), cache_dir/rehint.miss: each as its
 * storage inode, its stale_key (pushmany.c), its hint's parent directory's
 * state then, and when. */
struct cache_miss_ent {
	uint64_t ino, key;
	uint64_t pdev, pino, pmt_sec, pmt_nsec, pct_sec, pct_nsec;	/* all 0: none */
	uint64_t at_ns;
};
struct cache_miss {
	struct cache_miss_ent *e;
	size_t n, cap;
};
/* Read the file into m, sorted for cache_miss_holds (empty when none, torn
 * or of another format).  0 or -ENOMEM.  Free with cache_miss_free. */
int cache_miss_load(struct pohm_cache *c, struct cache_miss *m);
/* m's entry (m as cache_miss_load made it) for rec (whose stale_key is key)
 * while it still holds: its hint's parent as it was, younger than a day.
 * The entry or NULL. */
const struct cache_miss_ent *cache_miss_holds(struct pohm_cache *c, const struct cache_miss *m,
					      const struct pohm_jrec *rec, uint64_t key);
/* Add to m old (an entry kept) or, NULL, rec's entry as of now.  0 or -ENOMEM. */
int cache_miss_add(struct pohm_cache *c, struct cache_miss *m, const struct pohm_jrec *rec,
		   uint64_t key, const struct cache_miss_ent *old);
/* Replace the file by m's entries (removed when none).  0 or -errno. */
int cache_miss_save(struct pohm_cache *c, const struct cache_miss *m);
/* Free m's entries; m is empty again. */
void cache_miss_free(struct cache_miss *m);
/* rehint.c: cache_dir_rehint_below's walk of the whole local tree (the
 * prefix root): the repair of hints a cut-short walk left stale
 * (pushmany.c); an entry takes a record only when born before the
 * record's local state was recorded (or, with no birth time, of its
 * recorded ctime).  0 when complete, or -errno (-ENAMETOOLONG: only
 * paths no hint can hold were left out). */
int cache_rehint_all(struct pohm_cache *c);
/* dirmove.c: the path (relative to the prefix) of the stored directory
 * ino, whose inode in was just read, found up its hdr.parent chain to the
 * root or a directory the journal places here: a listing of each parent
 * on the way and an inode read of each above the first.  0, -ENOENT (not
 * in the parent it names: moved again meanwhile), -ELOOP (deeper than 16
 * levels), or the storage's -errno. */
int cache_dir_stored_path(struct pohm_cache *c, uint64_t ino, const struct pohm_inode *in,
			  char *rel, size_t len);
/* Journal record for a local file just made from in (no data state change). */
int cache_record(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		 const struct pohm_inode *in, uint32_t flags);
/* The same with its validated_ns (realtime; 0: now); with POHM_J_LISTED
 * in flags (a new directory) its listed_ns is validated_ns too. */
int cache_record_at(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		    const struct pohm_inode *in, uint32_t flags, uint64_t validated_ns);

/* cacheperm.c: checks from the stored attributes (the journal's records),
 * with the caller's fsuid, fsgid, groups and capabilities; the mode check
 * itself is core/sys's one checker (pohm_perm_mode). */
/* The calling thread's fsuid (core/sys pohm_perm_fsuid). */
uint32_t cache_fsuid(void);
/* Search on every directory below the prefix root above rel, and want on rel
 * itself (0: nothing more).  Unrecorded objects pass.  0 or -EACCES. */
int cache_perm_path(struct pohm_cache *c, const char *rel, int want);
/* cache_perm_path of rel's parent directory: W_OK|X_OK to add or remove
 * the name rel, X_OK to look it up.  0 or -EACCES. */
int cache_perm_parent(struct pohm_cache *c, const char *rel, int want);
/* Sticky-bit rule for removing or replacing dfd/name: 0 or -EPERM. */
int cache_perm_sticky(struct pohm_cache *c, int dfd, const char *name);
/* 1 when cache_perm_sticky could refuse a name in dfd (a sticky directory
 * the caller neither owns nor has CAP_FOWNER over, or unknown), 0 when no
 * name's owner matters there. */
int cache_perm_sticky_matters(struct pohm_cache *c, int dfd);
/* fs.protected_hardlinks for a link to dfd/name by another user: 0 or -EPERM. */
int cache_perm_hardlink(struct pohm_cache *c, int dfd, const char *name);

/* cachexattr.c: user.* xattrs.  Make in's stored set equal to the local
 * object's (fd, or path without following when fd < 0): 1 changed, 0, -errno. */
int cache_xattr_push(struct pohm_cache *c, int fd, const char *path, const struct pohm_inode *in);
/* Put in's stored user.* xattrs on the local file fd (a fetch's new copy).  0 or -errno. */
int cache_xattr_apply(int fd, const struct pohm_inode *in);
/* Make the user.* xattrs of the clean local copy dfd/name equal to in's
 * stored set (an attribute change from another host).  0 or -errno. */
int cache_xattr_pull(int dfd, const char *name, const struct pohm_inode *in);

/* How old a kept CAS base may be at most (and attr_timeout when shorter). */
#define CACHE_BASE_MAX_NS 60000000000ULL
/* cachekept.c: pohm_ns_opts.base_note / base_load (arg: the cache; decision
 * 0048): a note goes to the process's table of the last 64 keys, written
 * to cache_dir's k/ at pohm_cache_kept_flush; a load asks the table, then k/. */
void cache_base_note(void *arg, const char *key, const struct pohm_kv_val *v);
int cache_base_load(void *arg, const char *key, struct pohm_kv_val *out, uint64_t *age_ns);
/* Write c's notes not written yet and forget them (the cache closes). */
void cache_base_drop(struct pohm_cache *c);
/* In a fork child: the table empty and its lock new (no allocation, no I/O). */
void cache_base_atfork_child(void);
/* Remove the kept bases older than max_age_ns (no longer used): the number
 * removed, or -errno.  pohmelfsd's round (pohm_cache_reconcile). */
int cache_base_sweep(struct pohm_cache *c, uint64_t max_age_ns);

#endif
