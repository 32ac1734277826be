/*
 * journal.h — the cache's journal: what this host knows of each storage
 * inode it has materialized, shared by every process on the host.
 *
 * One slot per storage inode in the file cache_dir/j.slots (jslots.c),
 * opened once per process, written in place with one pwrite under record
 * locks on its bucket and carrying checks, so a reader sees the old or the
 * new record and a torn one reads as damage (journal.c has the record
 * format, jslots.c the slots); a record too large for a slot is a file
 * cache_dir/j/<ino>, as every record was before session 14 (such files of
 * an earlier cache are moved into slots at the first open); an
 * index, the fixed-slot file cache_dir/x.idx (jindex.c), maps a local
 * file (dev, ino) to it, so an fd is resolved with one fstat and one
 * pread.  Nothing is written on the open path; records change after a
 * fetch, a push or a namespace change.  No symlinks: the x/ links and
 * p/<ino> last-commit links of earlier caches are read (x/ is moved into
 * the index at open), never written.
 * Change detection compares the local (st_ino, size, ctime) with what the
 * record saw after the last fetch or push (journal_is_dirty).
 */
#ifndef POHM_CORE_JOURNAL_H
#define POHM_CORE_JOURNAL_H

#include <stdint.h>
#include <sys/stat.h>

#include "jmap.h"
#include "store.h"

#define POHM_J_STUB	0x1	/* local file is a stub (stub.h): data not fetched */
#define POHM_J_LISTED	0x2	/* directory: every entry exists locally as of listed_ns
				 * (decision 0062; cachebase.c) */
#define POHM_J_CONFLICT	0x4	/* a conflict copy was made for this inode */
#define POHM_J_TORN	0x8	/* dirty across an unclean shutdown: never pushed (cacheboot.c) */
#define POHM_J_NOXATTR	0x10	/* a stub whose stored inode has no user.* xattrs: reading
				 * them needs no fetch (a stub carries none: stub.h) */
#define POHM_J_CHGRP	0x20	/* a program of a non-root cache changed the group here;
				 * the next push sends the local group (decision 0068) */
/* In memory only, never stored: a put whose writer read POHM_J_CHGRP and
 * sent the group clears it; any other put keeps the flag of the record it
 * replaces (one set by a racing fchown) while the local file is the same. */
#define POHM_J_CHGRP_SENT	0x80000000u

struct pohm_jrec {
	uint64_t ino;			/* storage inode */
	uint64_t version, dversion;	/* storage versions this host last synced with */
	uint32_t mode, uid, gid, nlink;	/* the stored attributes (stat overlay) */
	uint64_t size, rdev;
	struct pohm_ts atime, mtime, ctime;
	uint64_t ldev, lino;		/* the local file */
	uint64_t lsize;			/* local size after the last fetch/push */
	struct pohm_ts lctime;		/* local ctime after the last fetch/push */
	uint64_t recorded_ns;		/* realtime when ldev..lctime were recorded */
	uint64_t validated_ns;		/* realtime of the last check against the storage */
	uint64_t listed_ns;		/* directories: realtime of the last listing
					 * (LISTED) or of its clearing (not) */
	uint64_t boot;			/* boot id hash when the local copy was last written by us */
	uint32_t flags;			/* POHM_J_* */
	uint8_t chunk_shift;
	uint32_t nchunks;		/* checksums of the synced version's chunks */
	uint8_t (*csum)[64];		/* malloc'ed, nchunks entries */
	/* The data version this host last committed, and from which local
	 * file (0: none known; the record file's commit trailer, journal.c).
	 * Written only by the push that made it (pohm_journal_put_commit);
	 * every other put keeps the record's. */
	uint64_t commit_dversion, commit_lino;
	char hint[4096];		/* one local name, relative to the prefix */
};

struct pohm_journal {
	int dirfd;			/* cache_dir, held open (high fd) */
	int xfd;			/* x.idx, held open for lookups and changes (high fd; -1 none) */
	int xrw;			/* xfd is open for writing: changes lock it (POSIX) */
	int sfd;			/* j.slots, the records (high fd; -1 none: j/ only) */
	struct jmap smap, xmap;		/* j.slots's and x.idx's level 0 mapped (jmap.h) */
	int legacy;			/* x/ of an earlier format seen, not yet moved */
	long owner;			/* uid owning cache_dir (-1 unknown) */
	int jfiles;			/* record files j/<ino> of an earlier format may be
					 * left: a record with no slot is looked for there */
};

/* Open (creating 0700) the journal under cache_dir. 0 or -errno.  Set
 * j->dirfd = j->xfd = j->sfd = -1 first if pohm_journal_close may run
 * without it. */
int pohm_journal_open(struct pohm_journal *j, const char *cache_dir);
/* openat(dirfd, name, flags); with O_CREAT a new file gets mode 0600 whatever
 * the process's umask (the cache's own files).  fd or -errno. */
int pohm_journal_open_own(int dirfd, const char *name, int flags);
/*
 * May this thread use the journal's held fds?  The kernel no longer asks
 * at each record (j.slots is opened once): a thread whose fsuid is not
 * the cache_dir's owner (setfsuid; root without CAP_DAC_OVERRIDE in
 * another user's cache_dir) is refused as an open of the cache_dir's
 * files would refuse it, and told why once.  0 or -EACCES.
 */
int pohm_journal_may(struct pohm_journal *j);
/* mkdirat(dirfd, name) with mode 0700 whatever the umask.  0, -EEXIST, -errno. */
int pohm_journal_mkdir_own(int dirfd, const char *name);
void pohm_journal_close(struct pohm_journal *j);
/* A fork child (pohm_cache_atfork_child): the journal writers' mutex as
 * new, whichever thread held it at the fork. */
void pohm_journal_atfork_child(void);
/* Read the record of ino: 0, -ENOENT, -EIO (malformed, torn, or a newer
 * format).  Free with pohm_jrec_clear (also after an error: harmless). */
int pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r);
/* Replace the record atomically (and the index entry for its local file).
 * Takes the record's lock for a few file calls.  The listing mark
 * (POHM_J_LISTED, listed_ns) is r's only where ino had no record (a new
 * directory); else it stays the record's while its local file is the
 * same, and goes with another (pohm_journal_update sets it). 0 or -errno. */
int pohm_journal_put(struct pohm_journal *j, const struct pohm_jrec *r);
/* pohm_journal_put that also sets the last commit (commit_dversion,
 * commit_lino) from r: the push turn's holder after its commit.  Over the
 * same local file the record's hint stays (a rename meanwhile re-hinted). */
int pohm_journal_put_commit(struct pohm_journal *j, const struct pohm_jrec *r);
/* Did this host commit ino's data version dversion from local file lino
 * (the record's last commit; a cache of the earlier format: its
 * p/<ino> link)?  1 or 0. */
int pohm_journal_committed(struct pohm_journal *j, uint64_t ino, uint64_t dversion, uint64_t lino);
/* Was a record rewritten since a caller read it as seen (its versions,
 * local state or flags other than the listing mark differ in cur)?  1 or 0. */
int pohm_journal_moved(const struct pohm_jrec *cur, const struct pohm_jrec *seen);
/* pohm_journal_put only if the record is still as the caller read it
 * (seen: the same versions, local state and flags), under its lock:
 * for a caller that read it, then asked the storage, and would otherwise
 * put back what another process changed meanwhile (a push's new base, a
 * newer stored mtime).  0, -ESTALE (moved, or gone: nothing written),
 * -errno. */
int pohm_journal_put_cas(struct pohm_journal *j, const struct pohm_jrec *r,
			 const struct pohm_jrec *seen);
/*
 * Change ino's record as it is now, under its lock: fn(r, arg) edits the
 * current record (0: it is written; else nothing is, and fn's error is
 * returned).  For a caller that read the record, did something slow (the
 * storage), and would otherwise put its older copy back over what another
 * process wrote meanwhile: fn re-checks what the caller decided on and
 * changes only its own fields.  The index follows a new local file; the
 * last commit is left as it is.  0, -ENOENT (no intact record), fn's
 * error, -errno.
 */
int pohm_journal_update(struct pohm_journal *j, uint64_t ino,
			int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg);
/* pohm_journal_update that also makes a record where ino has none (or a
 * torn one): fn then gets one of zeros, r->ino == 0, and fills it in (a
 * create's first record, written once with the local file it opened).
 * 0, fn's error, -errno. */
int pohm_journal_update_make(struct pohm_journal *j, uint64_t ino,
			     int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg);
/* Set the length and check fields of the len format-2 record bytes at p
 * (tests and the fuzz target build records by hand). */
void pohm_journal_seal(uint8_t *p, size_t len);
/* Decode the n bytes of a record file (what pohm_journal_get read from
 * cache_dir/j/<ino>) as ino's record into r, reading nothing outside them
 * (pohm_journal_get's decoder; tests feed it bytes by hand).  0, -EAGAIN
 * (no whole, intact record: torn, or a writer is in it), -EIO (malformed,
 * a newer format, another inode's record), -ENOMEM.  r is cleared first;
 * free it with pohm_jrec_clear. */
int pohm_journal_decode(const uint8_t *p, size_t n, uint64_t ino, struct pohm_jrec *r);
/*
 * Set ino's validated_ns (realtime of its last check against the storage,
 * read by other processes of the cache as "fresh within attr_timeout")
 * when the record's version is version (any when 0), under the record's
 * lock.  0, -ENOENT (no intact record), -ESTALE (another version), -errno.
 */
int pohm_journal_touch(struct pohm_journal *j, uint64_t ino, uint64_t version,
		       uint64_t validated_ns);
/* pohm_journal_touch of inos[i] with versions[i], each: in one writer's
 * section when the slot file's level 0 can be locked whole at once (one
 * lock for all, then a pwrite a record), else a section a record.  0, or
 * -errno with none touched (the journal is not writable); one record's
 * error (-ENOENT, -ESTALE, -EIO, ...) only leaves that one untouched and
 * is not returned: a touch is a hint. */
int pohm_journal_touch_many(struct pohm_journal *j, size_t n, const uint64_t *inos,
			    const uint64_t *versions, uint64_t validated_ns);
/*
 * Note st as ino's local state (pohm_journal_note_local) in the record as
 * it is now, under its lock, leaving every other field as the last writer
 * left it: for a caller whose copy of the record may be older than a
 * change of the stored attributes meanwhile (a directory scan: a put of
 * its copy would take the record's mtime back).  0, -ENOENT, -ESTALE (the
 * record names another local file), -errno.
 */
int pohm_journal_relocal(struct pohm_journal *j, uint64_t ino, const struct stat *st);
/*
 * Note the stored inode in (pohm_journal_note_inode) in its record as it
 * is now, under its lock, unless the record holds a newer version: for a
 * caller whose setattr answered in after it read the record (another
 * process may have written it since: a listing's LISTED, a newer
 * version).  0, -ENOENT, -ESTALE (newer), -errno.
 */
int pohm_journal_note_stored(struct pohm_journal *j, const struct pohm_inode *in);
/* Forget ino (and its index entry). */
int pohm_journal_del(struct pohm_journal *j, uint64_t ino);
/* Storage inode of a local file: 0 and *ino, or -ENOENT. */
int pohm_journal_lookup_local(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t *ino);
/*
 * The storage inode this thread last recorded in, or found in, the index
 * for local file (dev, lino), from memory (no call): 0 and *ino, or
 * -ENOENT.  A hint, not an answer: the caller confirms it from ino's
 * record (it names (dev, lino): a record names its one local file, and
 * the index follows the records), else asks pohm_journal_lookup_local.
 */
int pohm_journal_local_hint(const struct pohm_journal *j, uint64_t dev, uint64_t lino,
			    uint64_t *ino);
/* Make the index entry of local file (dev, lino) name ino, under the
 * index's bucket locks (pohm_journal_put does it for the record's local
 * file; `pohmelfs clean` ahead of the record).  0 or -errno. */
int pohm_journal_index_set(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t ino);
/* Drop the index entry of (dev, lino) if it names ino. */
void pohm_journal_index_drop(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t ino);
/* Call fn for every record (pohmelfsd, status); fn != 0 stops. */
int pohm_journal_each(struct pohm_journal *j, int (*fn)(void *arg, struct pohm_jrec *r), void *arg);
void pohm_jrec_clear(struct pohm_jrec *r);
/* r->hint = rel when it fits, else "" (issue 19 item 10: a name below the
 * prefix of 4096 bytes or more).  The hint is one local name, a shortcut;
 * the record is found by its local file through x.idx all the same. */
void pohm_jrec_set_hint(struct pohm_jrec *r, const char *rel);
/* Does the local file (st) differ from what the record saw?  0 no, 1 yes,
 * 2 cannot tell from the metadata (a racy ctime): compare the contents. */
int pohm_journal_is_dirty(const struct pohm_jrec *r, const struct stat *st);
/*
 * A racy record (is_dirty 2 against st) whose local file's bytes were
 * found equal to its checksums by a read begun at realtime checked_ns: when
 * checked_ns is a tick or more after st's ctime, any later write moves the
 * ctime, so the record takes checked_ns as its recorded_ns and is no longer
 * racy (the next scan need not read the file again), under its lock and
 * only if it is still seen (same local state, data identity, recorded_ns).
 * 0, -EAGAIN (too soon after the ctime), -ESTALE, -ENOENT, -errno.
 */
int pohm_journal_settle_racy(struct pohm_journal *j, const struct pohm_jrec *seen,
			     const struct stat *st, uint64_t checked_ns);
/* 1 if the file open as fd differs from the record's chunk checksums, 0 if not, -errno. */
int pohm_journal_content_differs(const struct pohm_jrec *r, int fd, uint64_t size);
/* Record st as the local state after a fetch or push. */
void pohm_journal_note_local(struct pohm_jrec *r, const struct stat *st);
/* Fill the stored attributes of r from an inode. */
void pohm_journal_note_inode(struct pohm_jrec *r, const struct pohm_inode *in);
/* Only the data identity (dversion, size, chunk size and checksums) of r
 * from an inode: the base version the local copy holds the bytes of.  The
 * attributes (mode, owner, times, version) stay as they were. */
void pohm_journal_note_data(struct pohm_jrec *r, const struct pohm_inode *in);
/* Only the stored mode, owner, link count and ctime of r from an inode,
 * keeping its data identity, atime, mtime and version: after a setattr
 * whose answer carries a data version the local copy does not hold
 * (another host committed it meanwhile), so that the next open fetches it
 * and the next push of a local change is based on what the copy holds. */
void pohm_journal_note_attrs(struct pohm_jrec *r, const struct pohm_inode *in);

#endif
