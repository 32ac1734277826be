/*
 * Layer core/cache — the local cache under the prefix.  This header is the
 * layer's whole interface.
 *
 * What it does: materialize, namespace changes, push and fetch, the stat
 * overlay (below); the journal of what this host knows of each storage
 * inode (journal.h); stubs, the local form of a file not fetched
 * (stub.h); the daemon control and the background writer; for host
 * processes, pohmelfsd's start (daemonstart.c), the process's dirty list
 * (dirty.c) and the full-disk wait (space.c).
 * Main types: struct pohm_cache (opaque), struct pohm_cache_opts, struct
 * pohm_jrec, struct pohm_journal.
 * Relies on: core/ns, core/store, core/config, core/wire, core/sys.
 * Rules for callers: paths are relative to the prefix and normalised;
 * 0 or -errno, never errno; no lock is held across network I/O.
 *
 * Parts (include this header, not them, from outside core/cache):
 * journal.h, stub.h.  cache_int.h is private to core/cache.
 */
/*
 * cache.h — the local cache: real files under the prefix that mirror the
 * storage (DESIGN.md §2).  The preload layer calls these around the real
 * libc call; tools and tests call them directly.
 *
 * Paths given here are relative to the prefix root, lexically normalised
 * (no ".", "..", empty or trailing components; "" is the root).  Every
 * function returns 0 (or a count) or a negative errno, never sets errno, and
 * never holds a lock across network I/O.
 *
 *   materialize   make a path ready for the real call: each existing
 *                 component present locally (directories as directories,
 *                 files as stubs (stub.h: no open succeeds without the
 *                 shim), true attributes in the journal), the last one fresh (one lookup per component,
 *                 skipped within attr_timeout) and, with DATA, its contents
 *                 fetched; with LIST, a directory listed whole.
 *   namespace     storage first, then the local change; a local failure
 *                 compensates the storage change.
 *   push          a file whose local copy changed since the last fetch or
 *                 push: changed chunks, then the inode CAS; a lost race
 *                 keeps the storage version and stores ours as a conflict
 *                 copy under .pohmelfs-conflicts/HOST/.
 *   stat overlay  storage inode numbers, one device per fsid, and a stub's
 *                 true attributes.
 */
#ifndef POHM_CORE_CACHE_H
#define POHM_CORE_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "store.h"
#include "journal.h"
#include "stub.h"

struct pohm_cache;
struct pohm_config;

struct pohm_cache_opts {
	const char *prefix;		/* absolute directory (created if missing) */
	const char *cache_dir;		/* journal and state; NULL = default per prefix */
	const char *fsid;
	const char *host_id;		/* names conflict copies */
	uint64_t attr_timeout_ns;	/* revalidation period (0 = every time) */
	const struct pohm_kv *kv;	/* the store (kvio over a client, or kvmem in tests) */
	unsigned bucket_max;		/* 0 = default */
	unsigned chunk_shift;		/* 0 = default */
	int http_compat;		/* also keep each file whole under its path key */
	int no_inline;			/* never write small files' data inline (decision 0023) */
	const int *prefix_fd;		/* non-NULL: the prefix is this directory fd (a
					 * copy is kept), not opened by its path again */
	/* Called when checking the root, at the first call that needs the
	 * storage, failed with -errno err (the reason is the caller's to say). */
	void (*root_failed)(void *arg, int err);
	void *root_failed_arg;
	/* 1 while the store is offline (no group answers; core/store
	 * pohm_client_offline), else 0; NULL: never.  Offline, clean copies
	 * are served with their last validated attributes (see OFFLINE in
	 * libpohmelfs(7)) and what needs the storage fails with -EIO. */
	int (*offline)(void *arg);
	void *offline_arg;
};

/* Open the cache for a prefix; err gets a one-line reason on failure. */
int pohm_cache_open(struct pohm_cache **out, const struct pohm_cache_opts *o, char *err,
		    size_t errlen);
void pohm_cache_close(struct pohm_cache *c);
/* In a fork child of a threaded process: every lock of c and of its
 * namespace handle as new (no allocation, no I/O). */
void pohm_cache_atfork_child(struct pohm_cache *c);
/* In the fork handlers of the parent (prepare and parent, every fork): a
 * fork child may share the lock files' descriptions opened so far, so they
 * are closed, never unlocked or lent again (no lock; a process that never
 * opened one writes nothing). */
void pohm_cache_fork_mark(void);
/* Write the CAS bases this process noted for c and not written yet to
 * cache_dir's k/ for the next process (decision 0048): at a normal exit and
 * at an exec that replaces the image.  One file call or a few per key, at
 * most 64 keys; nothing when there is nothing new. */
void pohm_cache_kept_flush(struct pohm_cache *c);
/* The prefix directory fd (held open, high, O_PATH). */
int pohm_cache_prefix_fd(const struct pohm_cache *c);
/* An open failed EMFILE or ENFILE: the kept look (a create's parent,
 * walkfresh.c) closed when no create uses it.  1: closed (retry once), 0. */
int pohm_cache_kept_drop(struct pohm_cache *c);
/* How many local directories this thread's calls moved so far to follow
 * a rename made on another host (dirmove.c): a call whose walk moved one
 * on its own way may have looked for the old name. */
unsigned pohm_cache_dir_moves(void);
/* The device number reported for everything under the prefix. */
uint64_t pohm_cache_dev(const struct pohm_cache *c);

/* The hidden directory at the prefix root where fetches are built when
 * cache_dir is on another filesystem (cache.c): never listed, pushed,
 * adopted or re-hinted. */
#define POHM_STAGING_NAME ".pohmelfs-staging"

#define POHM_MAT_DATA     0x1	/* fetch the last component's contents */
#define POHM_MAT_LIST     0x2	/* list the last component (a directory) whole */
#define POHM_MAT_NOFOLLOW 0x4	/* a symlink as the last component is not followed */
#define POHM_MAT_PARENT   0x8	/* only the parent chain; the last name may not exist */
/* open(2): check the open mode's own bits on the last component (R for
 * O_RDONLY, W for O_WRONLY, both for O_RDWR, none for O_PATH), not the
 * listing's R_OK (issue 22 item 9: the kernel asks search on the parents and
 * the open mode's bits on the file, nothing more). */
#define POHM_MAT_OPEN     0x10
#define POHM_MAT_OPEN_R   0x20
#define POHM_MAT_OPEN_W   0x40

/* Make rel ready for the real call (see the file comment).  A missing last
 * component is not an error (the real call reports it); a missing parent is. */
int pohm_cache_materialize(struct pohm_cache *c, const char *rel, unsigned flags);

/* The stored attributes the stat overlay shows, as a record had them
 * (ok: filled), with the local inode the record named. */
struct pohm_stat_seen {
	int ok;
	uint64_t ino, lino;
	uint32_t flags, mode, uid, gid, nlink;
	uint64_t size;
	struct pohm_ts atime, mtime, ctime;
};
/* pohm_cache_materialize for a stat: *seen the last component's record as
 * the walk read it (ok 0 when it read none), for pohm_cache_stat_fix_seen
 * (issue 23: the record read once per stat, not twice). */
int pohm_cache_materialize_seen(struct pohm_cache *c, const char *rel, unsigned flags,
				struct pohm_stat_seen *seen);

/* A directory the caller opened and checked already (preload's classifier
 * for a name relative to a dirfd, issue 23): an O_PATH fd (-1: none)
 * opened from the prefix root by the path of rel's parent, with no
 * symlink on the way, and its local (dev, ino).  Handed down: the walk
 * takes the fd (sets it to -1) and either starts there (taken 1) or
 * closes it before it opens anything itself; the caller closes an fd
 * still >= 0 after the call (the walk never came to it).  Or, named 1 and
 * no fd: the caller's own dirfd is that directory by the kernel's name of
 * it (readlink of /proc/self/fd/N: rel's parent below the prefix root, no
 * symlink in a name the kernel gives); the walk answers the name from a
 * fresh record with the caller's lstat (lst) and no fd, and opens the
 * directory itself (as above) for anything more. */
struct pohm_walk_base {
	int fd;
	int taken;
	int named;
	uint64_t dev, ino;
};

/* pohm_cache_materialize_seen whose walk, when it starts at rel's parent
 * from the walk table, takes base (not NULL, fd >= 0) for its own open and
 * check of that directory when base is the directory the table holds; and
 * then lst (NULL: none), the lstat of rel's last name below base.fd the
 * caller made a moment ago, for its own (not for POHM_MAT_DATA or LIST). */
int pohm_cache_materialize_from(struct pohm_cache *c, const char *rel, unsigned flags,
				struct pohm_stat_seen *seen, struct pohm_walk_base *base,
				const struct stat *lst);

/*
 * 1 when a listing a POHM_MAT_LIST materialize asked for failed on this
 * thread since the last call, and that materialize returned 0 all the
 * same (the directory opens: savewd, fchdir); else 0.  Clears the mark.
 * A caller takes it before and after its materialize, and fails the
 * directory's reads of entries with EIO when set (DESIGN.md §0).  Not set
 * offline (the entries as last listed are the answer) nor for EACCES (the
 * kernel's own view of a directory this user may not fill).
 */
int pohm_cache_list_failed(void);

/*
 * The stat path's shortcut (issue 23: a stat within attr_timeout costs the
 * real call and one record read).  pohm_cache_stat_recent: 1 when this
 * process materialized rel with these POHM_MAT_* flags within attr_timeout
 * (by its table alone, no system call), else 0: then the caller may make
 * its real stat first and hand its result, not yet overlaid, to
 * pohm_cache_stat_found: when the local file it found is the one the
 * table remembers for rel, the permission check pohm_cache_materialize
 * would make and the overlay (pohm_cache_stat_fix, the storage inode
 * remembered from the last time: no index read), and 0; -EAGAIN when it
 * is another file or the entry went (st untouched: materialize, then the
 * real call again); -errno of the permission check.
 */
int pohm_cache_stat_recent(struct pohm_cache *c, const char *rel, unsigned flags);
int pohm_cache_stat_found(struct pohm_cache *c, const char *rel, unsigned flags, struct stat *st);
/*
 * The overlay after pohm_cache_materialize(rel, flags) and the real stat
 * (pohm_cache_stat_fix): when the walk left rel's local file and storage
 * inode in the table and st is that file, the record is read by that
 * inode (no index read; issue 23).  No permission check (materialize made it).
 */
void pohm_cache_stat_fix_rel(struct pohm_cache *c, const char *rel, unsigned flags,
			     struct stat *st);
/* pohm_cache_stat_fix_rel after pohm_cache_materialize_seen: the walk's
 * record when it names st's local inode (read microseconds before the real
 * stat, in the same call), else pohm_cache_stat_fix_rel. */
void pohm_cache_stat_fix_seen(struct pohm_cache *c, const char *rel, unsigned flags,
			      struct stat *st, const struct pohm_stat_seen *seen);

/*
 * Before reading user.* xattrs of rel (getxattr of a user.* name, or
 * listxattr), after pohm_cache_materialize: a stub carries none locally
 * (core/cache/stub.h), so when rel (followed unless flags has POHM_MAT_NOFOLLOW)
 * is a stub whose stored inode may have some, fetch it.  0 or -errno.
 */
int pohm_cache_xattr_ready(struct pohm_cache *c, const char *rel, unsigned flags);

/* Create rel in the storage before a real open(O_CREAT) (excl: O_EXCL).
 * Returns 1 if it existed already (and was materialized), 0 if created. */
int pohm_cache_create(struct pohm_cache *c, const char *rel, mode_t mode, int excl);
/* pohm_cache_create, and when it made a new inode (0) in the kept parent
 * (a high fd: walkfresh.c) that parent is held for the open
 * (pohm_cache_create_parent), which must end with
 * pohm_cache_create_parent_done in this thread before any other call. */
int pohm_cache_create_held(struct pohm_cache *c, const char *rel, mode_t mode, int excl);
/* The parent pohm_cache_create_held holds (an fd not to close) and *name,
 * rel's last component; -1 none. */
int pohm_cache_create_parent(struct pohm_cache *c, const char **name);
/* Done with it: opened_new, the open by it with O_EXCL made the file (its
 * pohm_cache_opened_as then needs no name check); else a stale local file
 * of the name is moved away now, as pohm_cache_create does, for the open
 * by path that follows.  No-op when nothing is held. */
void pohm_cache_create_parent_done(struct pohm_cache *c, int opened_new);
/* After the real open of a path under the prefix: learn its local identity. */
int pohm_cache_opened(struct pohm_cache *c, const char *rel, int fd);
/* pohm_cache_opened, and when it recorded the file (0): *st the fd's local
 * stat as recorded, *ino its storage inode (what pohm_cache_stat_fix
 * would read back: issue 23, no second look); *ino 0 when nothing was
 * recorded (another file than rel names, an error). */
int pohm_cache_opened_as(struct pohm_cache *c, const char *rel, int fd, struct stat *st,
			 uint64_t *ino);
/* A file created under the prefix without a prior pohm_cache_create (libc's
 * own mkstemp): make its storage entry now.  0 (also if known already, and
 * when the storage has the name with contents: not adopted, the push or the
 * reconcile scan keeps the file as a conflict copy). */
int pohm_cache_adopt(struct pohm_cache *c, const char *rel, int fd);
/* Undo a create whose real open failed. */
void pohm_cache_create_undo(struct pohm_cache *c, const char *rel);

int pohm_cache_mkdir(struct pohm_cache *c, const char *rel, mode_t mode);
int pohm_cache_unlink(struct pohm_cache *c, const char *rel);
int pohm_cache_rmdir(struct pohm_cache *c, const char *rel);
int pohm_cache_rename(struct pohm_cache *c, const char *from, const char *to, unsigned flags);
int pohm_cache_link(struct pohm_cache *c, const char *from, const char *to);
int pohm_cache_symlink(struct pohm_cache *c, const char *target, const char *rel);
/* A FIFO, device node or empty regular file (mode with S_IFMT, rdev for
 * devices), as mknod(2): in the storage as a typed inode, then locally.
 * Sockets: -EINVAL (they stay local). */
int pohm_cache_mknod(struct pohm_cache *c, const char *rel, mode_t mode, uint64_t rdev);

/*
 * Names the storage does not hold (localonly.c; a socket bind(2) made, a
 * file made without the shim).  After a namespace change failed in the
 * storage with -ENOENT, the kernel answers instead when:
 * pohm_cache_parent_refused — the kernel cannot walk to rel's parent
 * directory (a socket or file on the way, no search permission): 1, else 0;
 * pohm_cache_local_only — rel (not followed) exists locally, is not a
 * directory, and is not the local copy of a stored inode (unknown to the
 * journal, or a socket whose record is not a stub's): 1, else 0.
 */
int pohm_cache_parent_refused(struct pohm_cache *c, const char *rel);
int pohm_cache_local_only(struct pohm_cache *c, const char *rel);
/*
 * After the kernel renamed a local-only name over rel: remove rel's stored
 * entry (a non-directory), leaving the local name alone.  0 (also when the
 * storage has no such name) or -errno.
 */
int pohm_cache_drop_stored(struct pohm_cache *c, const char *rel);

/*
 * The kernel's owner checks of an attribute change, on the STORED owner of
 * the object open as fd (fd >= 0) or named rel (followed when follow): a
 * non-root cache's local copies carry the user's own uid whoever owns the
 * file, so the kernel's check on them passes for anyone (issue 22).
 *   POHM_PERM_FOWNER: chmod, or explicit times — the owner or CAP_FOWNER;
 *   POHM_PERM_CHOWN:  a chown that sets a uid or gid — the owner or CAP_CHOWN
 *                     (what the owner may set, the local kernel judges);
 *   POHM_PERM_TOUCH:  times set to now — the owner, CAP_FOWNER, or write
 *                     permission by the stored mode (else -EACCES).
 * 0 also when the storage has no record of the object (the kernel's check
 * on the local owner stands); -EPERM or -EACCES as the kernel answers.
 */
/*
 * access(2) of rel (followed) answered from its STORED attributes while
 * the local file is still a stub (mode 000: nothing fetched yet), by the
 * one checker (core/sys pohm_perm_mode) with access(2)'s credential: the
 * real ids, or the effective ones when effective (AT_EACCESS).  want:
 * R_OK|W_OK|X_OK.  0 allowed, -EACCES refused, 1 when the local file
 * answers for itself (fetched, missing, or nothing asked).
 */
int pohm_cache_access(struct pohm_cache *c, const char *rel, int want, int effective);
enum pohm_perm_owner { POHM_PERM_FOWNER, POHM_PERM_CHOWN, POHM_PERM_TOUCH };
int pohm_cache_perm_owner(struct pohm_cache *c, int fd, const char *rel, int follow,
			  enum pohm_perm_owner how);
/* Push the file open as fd if its local copy changed: 1 pushed, 0 unchanged, -errno. */
int pohm_cache_push_fd(struct pohm_cache *c, int fd);
/* pohm_cache_push_fd, st the stat of fd's file as the caller just took it
 * (through fd or another fd on the same file: its device, inode and type;
 * issue 23, no fstat of its own before the push turn).  -EBADFD, nothing
 * read or pushed, when fd turns out closed or on another file (the push's
 * own fstat in its turn: a shadow fd the caller did not check). */
int pohm_cache_push_fd_as(struct pohm_cache *c, int fd, const struct stat *st);
/* pohm_cache_push_fd of a write-only fd (the caller knows its access
 * mode): -EBADF at once, without the push turn, when the push would have
 * to read the file's bytes (changed data, times or mode; not a stub's or
 * a torn push), where pohm_cache_push_fd fails EBADF after the turn, the
 * record and the first pread (issue 23: tar's fchown, fchmod and
 * futimens of the file it is writing); otherwise the same. */
int pohm_cache_push_wronly(struct pohm_cache *c, int fd);
/*
 * pohm_cache_push_fd of every fds[i] (readable fds, each kept open by the
 * caller), res[i] its answer, with the commits of the files that need
 * only their inode's CAS sent together (pohm_ns_commit_map_n: issue 23,
 * an exit's pushes): every push's rules hold (its turn, its CAS against
 * the version this host recorded, conflict copies, a failure leaves the
 * file dirty).  A file another pusher of this host holds, a second fd of
 * one inode, a directory, a push that must retry: after the others, one
 * by one.  Returns 0.
 */
int pohm_cache_push_fds(struct pohm_cache *c, size_t n, const int *fds, int *res);
/* Push rel (a file changed by a program without the shim, or by a path call): as push_fd. */
int pohm_cache_push_path(struct pohm_cache *c, const char *rel);
/*
 * After a chmod (owner 0) or chown (owner 1) the kernel accepted on the
 * local object open as fd (fd >= 0) or named rel (not followed), and after
 * the ordinary push: store the local mode, and for a chown the local group
 * (any owner: a non-root owner may only pick a group of its own) and, for
 * root, the owner, where they differ from the stored ones — also on a
 * directory this cache has no record of (another user's cache made it).
 * Stubs, sockets and symlinks: nothing.  1 stored, 0 nothing to do (or
 * not stored but carried by the object's next push: a regular file's
 * mode, a root cache's owner), -errno when the storage did not take what
 * no later push sends (a directory's mode, whose local form then goes
 * back to the stored one's; a non-root cache's group): the call fails.
 */
int pohm_cache_push_chattr(struct pohm_cache *c, int fd, const char *rel, int owner);
/* A non-root cache's chown of fd's file, a write-only fd whose close pushes
 * (pohm_cache_push_wronly's -EBADF): the file's next push, by this process
 * or pohmelfsd, sends the local group (its journal record notes it,
 * POHM_J_CHGRP), as pohm_cache_push_chattr would have stored it.  Nothing
 * for a root cache (its pushes send the owner). */
void pohm_cache_chgrp_later(struct pohm_cache *c, int fd);
/*
 * Where a symlink rel leads, as the kernel follows it: 0 and the prefix-
 * relative path in out; 1 when rel is not a symlink (or missing); 2 when it
 * leads out of the prefix; -errno.
 */
int pohm_cache_follow(struct pohm_cache *c, const char *rel, char *out, size_t len);
/*
 * Before a chmod, chown (owner 1), truncate, utimes or xattr change of rel
 * (followed unless flags has POHM_MAT_NOFOLLOW), or of the local object
 * open as fd when rel is NULL: 0 when it may go on, -EIO when the store is
 * offline and the change could not be pushed later (anything but a cached
 * regular file, or any owner change; cacheoffline.c).
 */
int pohm_cache_attr_offline(struct pohm_cache *c, const char *rel, int fd, unsigned flags,
			    int owner);
/* Push every dirty file this host holds (pohmelfs sync, pohmelfsd): count
 * pushed or -errno.  A file not at its record's name is looked for in the
 * whole local tree by identity (a directory move's re-hint cut short). */
int pohm_cache_sync_all(struct pohm_cache *c);
/* As sync_all, but skip local files held(arg, st_dev, st_ino) says the caller
 * has open: those are pushed through the caller's own fds (an fd the cache
 * opened and closed would release the caller's POSIX locks on the file).
 * For host processes: no look for files not at their names (pohmelfsd's). */
int pohm_cache_sync_others(struct pohm_cache *c, int (*held)(void *arg, uint64_t dev, uint64_t ino),
			   void *arg);
/* As sync_others, but only the files of the storage inodes inos[0..n) (a
 * process's own dirty list at its exit or exec: no walk of the journal;
 * other processes' leftovers are pohmelfsd's).  Count pushed or -errno. */
int pohm_cache_sync_inos(struct pohm_cache *c, size_t n, const uint64_t *inos,
			 int (*held)(void *arg, uint64_t dev, uint64_t ino), void *arg);
/* What pohmelfsd's rounds left to live writers, and since when (its own
 * memory across rounds: one per daemon, no lock). */
struct pohm_sync_defer {
	uint64_t round;			/* rounds so far */
	struct {
		uint64_t ino, since_ns;	/* ino 0: free */
		uint64_t round;		/* the last round that left it */
	} e[64];
	/* The files the last round found not at their hints, each as a
	 * 64-bit hash of its (ino, hint, local inode) (pushmany.c stale_key):
	 * a repair walks only for one seen so
	 * twice in a row (not a fetch between its rename and its record). */
	uint64_t seen[64];
	uint32_t nseen;			/* more than 64: every file counts as seen */
};
/* pohmelfsd's timed round: as sync_all, but a file some process still has
 * open for write (writer.c) is left to it while its ctime is younger than
 * quiet_ns, for at most 4 * quiet_ns in a row (a steady writer is still
 * pushed); d remembers across rounds.  Count pushed or -errno. */
int pohm_cache_sync_round(struct pohm_cache *c, uint64_t quiet_ns, struct pohm_sync_defer *d);

/*
 * Who makes room in the cache (a host process: core/mount host.c, which
 * asks pohmelfsd).  fn(arg, 0)
 * after each fetch (the cache grew: start the evictor if bounds are set);
 * fn(arg, need) when a fetch found the filesystem full: make need bytes
 * free if possible, return 0 to have the fetch tried once more.  Set once,
 * before the cache is used by several threads.
 */
void pohm_cache_set_space_fn(struct pohm_cache *c, int (*fn)(void *arg, uint64_t need), void *arg);
/* fn(c, rel) runs before a walk follows a symlink to rel (relative to the
 * prefix), before anything of rel is looked up (pohm_cache_sigq_follow).
 * Set once, before the cache is used by several threads. */
void pohm_cache_set_follow_fn(struct pohm_cache *c, void (*fn)(struct pohm_cache *c, const char *rel));
/* fn(c, rel) runs before a walk asks the storage for a name rel it lacks
 * locally, or lists the directory rel from the storage, and when a create
 * finds rel stored but not here (the name may come back here from the
 * storage); never on a call answered locally nor on a create of a new
 * name.  It returns how many changes it made (pohm_cache_sigq_absent).
 * Set once, as above. */
void pohm_cache_set_absent_fn(struct pohm_cache *c, int (*fn)(struct pohm_cache *c, const char *rel));

/* Adopt names made under the prefix without the shim (pohmelfsd, pohmelfs
 * sync only: it opens and closes files).  Count adopted, or -errno. */
int pohm_cache_reconcile(struct pohm_cache *c);

/*
 * The durable queue of namespace changes made by signal handlers that
 * interrupted the shim (sigqueue.c; preload/sigsafe.c writes it with raw
 * system calls).  A record is cache_dir/sq/NAME: POHM_SQ_MAGIC, the
 * operation (one POHM_SQ_* letter), a NUL, then one or two paths relative
 * to the prefix, each ended by a NUL.  Its writer stages it in
 * cache_dir/sq.tmp holding an exclusive OFD lock on it, renames it into
 * sq/, and keeps the lock until its call is done (its next hook, or exit).
 */
#define POHM_SQ_MAGIC	"pohm-sq1 "
#define POHM_SQ_PATH	'P'	/* one path; unlink, rmdir, mkdir, symlink, mknod... */
#define POHM_SQ_WRITE	'W'	/* one path opened for writing (create, truncate) */
#define POHM_SQ_RENAME	'R'	/* from, to */
#define POHM_SQ_LINK	'L'	/* from, to (a new name of from) */
#define POHM_SQ_OPEN	0x1	/* replay may open local files (pohmelfsd, pohmelfs sync) */
/* How many files an earlier boot left dirty, found (and marked torn) by this
 * open: pohmelfsd should push them, a reading process would not start it. */
unsigned pohm_cache_boot_dirty(const struct pohm_cache *c);
/* Open (making them) sq/ and sq.tmp/ of the cache: 0 with two O_DIRECTORY fds, or -errno. */
int pohm_cache_sigq_dirs(struct pohm_cache *c, int *qfd, int *tfd);
/* Apply each unlocked record to the storage as the local state says, then remove it;
 * without POHM_SQ_OPEN a record that needs a local file opened stays.  Count applied or
 * -errno; *left (if not NULL): how many records stay (locked, failed or needing an open). */
int pohm_cache_sigq_replay(struct pohm_cache *c, unsigned flags, int *left);
/* A call about to run: its paths (relative to the prefix, NULL when fewer)
 * and how many records beyond those it needs a replay may apply, until when
 * (pohm_sys_mono_ns; 0: no time limit); deferred is set by the replay:
 * records it left unapplied or found locked by another (the caller's next
 * call must replay again before it runs). */
struct pohm_sigq_bound {
	const char *rel[2];
	unsigned budget;
	uint64_t until_ns;
	unsigned deferred;
};
/* pohm_cache_sigq_replay without POHM_SQ_OPEN, bounded for the call bd: applies
 * every unlocked record that names one of its paths, a path above or below one,
 * or that it may reach through a symlink, and at most bd->budget others
 * (records left for an open not counted); the rest stay for a later replay. */
int pohm_cache_sigq_replay_for(struct pohm_cache *c, struct pohm_sigq_bound *bd,
			       int *left);
/* A record (POHM_SQ_PATH) of rel, a name a signal handler changed whose call is
 * done, replayable at once (a name the handler could not record: its ring's).
 * 0 or -errno. */
int pohm_cache_sigq_put(struct pohm_cache *c, const char *rel);
/* A walk is about to follow a symlink to rel: while a bounded replay of this
 * cache left records, apply those rel needs (as pohm_cache_sigq_replay_for
 * with rel as the call's path and no budget).  Not inside a replay. */
void pohm_cache_sigq_follow(struct pohm_cache *c, const char *rel);
/* A walk is about to ask the storage for rel, absent locally: while any
 * process of the host left records in the queue, apply those rel needs
 * (as pohm_cache_sigq_follow), so that a name whose removal or rename a
 * handler made does not come back from the storage.  Not inside a replay.
 * Records applied (0: none, or the replay failed: logged). */
int pohm_cache_sigq_absent(struct pohm_cache *c, const char *rel);
/* rel is gone locally: remove it from the storage if this cache knew its inode,
 * without touching the local tree (directories: rmdir).  0 or -errno. */
int pohm_cache_sigq_gone(struct pohm_cache *c, const char *rel);

/*
 * Where the kernel finds the parent directory of rel, when the storage
 * could not resolve it (-EXDEV: a symlink on the way has an absolute
 * target, or climbs above the prefix root).  0 and out = rel's last
 * component under its parent's real path below the prefix ("x/name");
 * 1 when that parent lies outside the prefix (the call is not the
 * storage's: the real call does it); -errno (-ENOENT, -ENOTDIR: the
 * parent does not resolve locally, -EINVAL: rel has no parent below the
 * root, -ENAMETOOLONG).
 */
int pohm_cache_parent_real(struct pohm_cache *c, const char *rel, char *out, size_t len);

/* Rewrite a local stat of something under the prefix (stat overlay). */
void pohm_cache_stat_fix(struct pohm_cache *c, struct stat *st);

/*
 * Normalise a path relative to the prefix lexically: "a/./b//c/../d" →
 * "a/b/d".  -EXDEV if ".." climbs above the prefix root, -ENAMETOOLONG.
 */
int pohm_cache_normalize(const char *path, char *out, size_t len);

/* Counters for status and stats. */
struct pohm_cache_stats {
	uint64_t fetches, fetched_bytes, pushes, pushed_chunks, pushed_bytes, conflicts;
	uint64_t lookups, validations_skipped;
	uint64_t retries;		/* pushes tried again after a lost race */
};
void pohm_cache_get_stats(const struct pohm_cache *c, struct pohm_cache_stats *s);

/* The pid of the pohmelfsd of cache_dir if one runs (its lock on
 * pohmelfsd.lock is held; the number from pohmelfsd.pid), else 0. */
int pohm_cache_daemon_pid(const char *cache_dir);

/*
 * Open for write (writer.c; the state machine: decision 0016).  A process
 * that opened the local file (ldev, lino) of storage inode ino for writing
 * holds a shared OFD lock on ino's byte of cache_dir/w.lock until its last
 * writing fd on that file closes (pohm_cache_writer_close), or the kernel
 * drops it (exit, _exit, SIGKILL).  keep_on_exec: the writing fd was not
 * O_CLOEXEC, so the lock survives exec with it.  A second open of the
 * same file in the process reuses the lock (no syscall).  A refresh holds
 * the byte exclusively for its re-check and rename (cache_int.h): a new
 * lock waits that out (at most 2 s), then checks that the journal still
 * records lino as ino's copy.  0 or -errno (-ENOSPC: too many held; the
 * file is still pushed, by pohmelfsd's rounds; -ESTALE: held, but the
 * copy was replaced by a refresh between the caller's open and this lock,
 * so the caller's fd writes a file no name shows: open it again).
 */
int pohm_cache_writer_open(struct pohm_cache *c, uint64_t ino, uint64_t ldev, uint64_t lino,
			   int keep_on_exec);
/*
 * The shim's writer takes its lock BEFORE its open (issue 18): else a
 * refresh may rename a fetched copy over the name between the open and
 * pohm_cache_writer_open, and the fd writes a file no name shows.  For an
 * open of rel (relative to the prefix) with open(2) flags that writes
 * (O_WRONLY/O_RDWR, not O_PATH), an existing regular file whose copy the
 * journal records: hold its inode's byte now (or note that this process
 * holds it already), into *pl.  A refresh then leaves the name alone until
 * the open is done.  Returns 1 (held: the caller opens, then gives pl to
 * pohm_cache_writer_open_pre, or to pohm_cache_writer_prelock_drop if the
 * open failed), 0 (nothing to hold: a reader, no such file, not recorded;
 * pl is still valid to pass on), -errno (no lock; pl valid, holds none).
 * Waits for a refresh's exclusive byte as pohm_cache_writer_open does.
 */
enum { POHM_WPRE_NONE, POHM_WPRE_HELD, POHM_WPRE_TAKEN };
struct pohm_wprelock {
	uint64_t ino, ldev, lino;	/* the file held, as the name showed it */
	int state;			/* POHM_WPRE_*: nothing, held already, taken here */
};
int pohm_cache_writer_prelock(struct pohm_cache *c, const char *rel, int flags,
			      struct pohm_wprelock *pl);
/* After the open of a pohm_cache_writer_prelock: the fd is on local file
 * (ldev, lino) of storage inode ino.  The same file as held: the lock is
 * its open-for-write lock (no copy check needed: nothing renamed over the
 * name while it was held); another one (the name moved between the stat
 * and the lock), or none held: pohm_cache_writer_open, and the lock taken
 * before is dropped unless held(arg, ldev, lino) says another fd of the
 * process still writes that file (held NULL: drop).  The fd on the file
 * held but ino another (a refresh replaced the copy after the open, so the
 * caller's pohm_cache_stat_fix no longer maps it): the copy is checked
 * under the inode held before the open (-ESTALE).  Returns what
 * pohm_cache_writer_open would (0, -ESTALE, -ENOSPC, -errno). */
int pohm_cache_writer_open_pre(struct pohm_cache *c, struct pohm_wprelock *pl, uint64_t ino,
			       uint64_t ldev, uint64_t lino, int keep_on_exec,
			       int (*held)(void *arg, uint64_t ldev, uint64_t lino), void *arg);
/* The open after pohm_cache_writer_prelock failed (or is not going to be
 * a writer's): drop a lock taken for it, unless held(arg, ldev, lino) says
 * another fd of the process writes that file.  pl holds nothing after. */
void pohm_cache_writer_prelock_drop(struct pohm_cache *c, struct pohm_wprelock *pl,
				    int (*held)(void *arg, uint64_t ldev, uint64_t lino), void *arg);
/* The process's last fd writing local file (ldev, lino) is closing: drop its
 * lock (not if the file is mapped writable: see pohm_cache_writer_mapped). */
void pohm_cache_writer_close(struct pohm_cache *c, uint64_t ldev, uint64_t lino);
/* (ldev, lino), held open for write, got a writable shared mapping, which
 * outlives its fds: the lock is then held until the process ends. */
void pohm_cache_writer_mapped(struct pohm_cache *c, uint64_t ldev, uint64_t lino);
/* Drop the lock of every file held(arg, ldev, lino) says no fd of the
 * process has open any more (closed behind the library's back: a raw
 * SYS_close, closefrom before the shim knew).  Returns how many went. */
int pohm_cache_writer_sweep(struct pohm_cache *c, int (*held)(void *arg, uint64_t ldev,
							       uint64_t lino), void *arg);
/* Across exec: the locks that survive it (their writing fd was not
 * O_CLOEXEC) as "fd:ino:ldev:lino;" entries in hex, into buf (no NUL);
 * the bytes written.  The new image gives each to pohm_cache_writer_adopt,
 * so that its own close of the inherited writing fd drops the lock and
 * its closefrom keeps it.  0, -EBADF (fd is not on this cache's w.lock),
 * -EEXIST (known already, or the table is full). */
size_t pohm_cache_writer_export(struct pohm_cache *c, char *buf, size_t size);
int pohm_cache_writer_adopt(struct pohm_cache *c, int fd, uint64_t ino, uint64_t ldev,
			    uint64_t lino);
/* Open-for-write locks this process holds. */
int pohm_cache_writer_count(struct pohm_cache *c);
/* Does any live process hold ino open for write?  1, 0, -errno. */
int pohm_cache_writer_alive(struct pohm_cache *c, uint64_t ino);
/* Does any live process hold any inode of the cache open for write?  1, 0, -errno. */
int pohm_cache_writers_any(struct pohm_cache *c);

/* Is pohmelfsd running for c (its lock is held)?  One fcntl on an fd kept open. */
int pohm_cache_daemon_running(struct pohm_cache *c);
/* The same by cache_dir, for tools (opens the lock file each time). */
int pohm_cache_daemon_alive(const char *cache_dir);
/* Ask the running pohmelfsd for mib MiB of room now: one line into its
 * wake FIFO (cache_dir/pohmelfsd.wake; no pid, no signal).  0, -ESRCH (no
 * pohmelfsd has it open), -errno. */
int pohm_cache_daemon_ask_room(struct pohm_cache *c, unsigned mib);
/*
 * daemonstart.c: make sure pohmelfsd runs for c, from a host process:
 * nothing when its lock is held, else spawn the pohmelfsd installed next
 * to the library (LIB/pohmelfsd, else LIB/../bin/pohmelfsd), detached (no
 * SIGCHLD, no child the host's wait calls see, the host's fds and signal
 * handlers left behind), with the host's environment minus LD_PRELOAD.
 * At most once a second per *last_ns (the caller's, one per cache: its
 * last spawn, 0 = never or "again now"; compared and set atomically).
 * The daemon inherits the euid: call it only as the cache's owner.
 * errno untouched; nothing to report (the next call tries again).
 */
void pohm_cache_daemon_start(struct pohm_cache *c, uint64_t *last_ns);
/*
 * space.c: the disk under c is full and need more bytes are wanted (a
 * host process's fetch or write): ask pohmelfsd for the room through its
 * wake FIFO, starting it (pohm_cache_daemon_start with last_ns) when it
 * does not run and last_ns is not NULL, and wait up to 2 s for it to
 * listen and 5 s for the room.  Never evicts itself.  0 when the room is
 * there, -ENOSPC otherwise.
 */
int pohm_cache_room(struct pohm_cache *c, uint64_t need, uint64_t *last_ns);
/* pohmelfsd: make (if missing) and open its wake FIFO, nonblocking: fd or -errno. */
int pohm_cache_daemon_wake_open(const char *cache_dir);
/* pohmelfsd: take cache_dir's daemon lock, held for its lifetime (the kernel
 * drops it when the process ends).  The fd, -EAGAIN (another runs), -errno. */
int pohm_cache_daemon_lock(const char *cache_dir);

/*
 * dirty.c: the files a process wrote and did not push yet (storage inode
 * numbers; pushed at its exit or exec).  Thread-safe by its own lock; a
 * zeroed struct with POHM_DIRTY_INIT's lock is empty.
 */
struct pohm_dirty {
	pthread_mutex_t lock;	/* guards the rest */
	uint64_t *ino;
	size_t n, cap;
};
#define POHM_DIRTY_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }
/* Add ino (once; dropped silently when memory runs out). */
void pohm_dirty_note(struct pohm_dirty *d, uint64_t ino);
/* Empty the set: how many it held. */
size_t pohm_dirty_take(struct pohm_dirty *d);
/* Empty the set, handing its inodes over (*inos: free() it; NULL when
 * empty), each once: how many. */
size_t pohm_dirty_take_list(struct pohm_dirty *d, uint64_t **inos);
/* In a fork child: a new lock, and the parent's files are the parent's. */
void pohm_dirty_atfork_child(struct pohm_dirty *d);

#endif
