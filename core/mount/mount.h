/*
 * Layer core/mount — one prefix, opened.  This header is the layer's whole
 * interface.
 *
 * What it does: builds client, kv store and cache from a configuration,
 * per user where needed (below), and classifies paths against the prefix
 * lexically (pathclass.h).  For a host process (the shim): heavy init,
 * its mounts per effective uid and its call counters (proc.c,
 * pohm_proc_*), pohmelfsd's start as the owner, the full-disk callback
 * and the umask rule for new objects (host.c), and when its writes are
 * pushed: close, sync, mappings, exit (closepush.c); one call per
 * operation of the host, with the host's own call in the middle:
 * attribute changes (procattr.c), namespace changes (procns.c), stat
 * (procstat.c).
 * Main types: struct pohm_mount, struct pohm_pc_prefix, struct pohm_pc_pos.
 * Relies on: core/cache, core/store, core/net, core/config, core/sys.
 * Rules for callers: the preload layer (pohm_proc_mount), pohmelfsd and
 * the pohmelfs tool (pohm_mount_open) start here; functions return 0 or
 * -errno; pohm_proc_* and host.c are for host processes only.
 *
 * Parts (include this header, not them, from outside core/mount):
 * pathclass.h.
 */
/*
 * mount.h — everything one prefix needs, built from a configuration: the
 * client (core/io), the namespace store over it (core/kvio) and the cache
 * (core/cache).  The preload layer's heavy init, pohmelfsd and the
 * pohmelfs tool all start here.
 */
#ifndef POHM_CORE_MOUNT_H
#define POHM_CORE_MOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache.h"
#include "config.h"
#include "store.h"
#include "net.h"
#include "pathclass.h"
#include "sys.h"

struct pohm_mount {
	struct pohm_client *client;
	struct pohm_kv kv;
	struct pohm_cache *cache;
	char prefix[4096];
	char cache_dir[4096];		/* as opened (default resolved) */
	uint64_t sync_timeout_ns;	/* background push period */
	int sync_on_close;
	uid_t owner;			/* the effective uid it was opened for */
	int per_user;			/* cache_dir is the owner's per-user one (mount_user.c) */
	int root_said;			/* the root check's failure was logged; atomic */
	char fsid[256];			/* for that message */
	int bounded;			/* cache_size or cache_min_free is set */
	uint64_t spawn_ns;		/* host.c: this process's last pohmelfsd spawn
					 * for it (0: none, or again now); atomic */
};

/*
 * Open the prefix of cfg (prefix= must be set) for the calling process's
 * effective uid: the configured cache_dir, or that user's per-user one
 * when the configured one belongs to another user (pohm_mount_cache_dir);
 * a per-user cache names its conflict copies HOST.uidUID.  0, or -errno
 * with a one-line reason in err naming the key at fault (-EACCES: a
 * per-user directory another user made or planted a symlink at).
 */
int pohm_mount_open(struct pohm_mount *m, const struct pohm_config *cfg, char *err, size_t errlen);
/* The same, with the prefix reached through like's open prefix directory
 * (like may be NULL): a process that switched users keeps the handle it has. */
int pohm_mount_open_like(struct pohm_mount *m, const struct pohm_config *cfg,
			 const struct pohm_mount *like, char *err, size_t errlen);
/* 1 while the mount's store is offline (no group answers: core/store
 * pohm_client_offline), else 0. */
int pohm_mount_offline(const struct pohm_mount *m);
/* Start offline if another process of the cache found, within the last
 * offline window, that no group answers (cache_dir/offline, which every
 * mount keeps up to date).  For host processes, right after the open. */
void pohm_mount_offline_load(struct pohm_mount *m);
/* What the mount's client asked of the cluster so far (all zero when it has none). */
void pohm_mount_net_counts(const struct pohm_mount *m, struct pohm_net_counts *out);
/* Close what pohm_mount_open opened. */
void pohm_mount_close(struct pohm_mount *m);
/* In a fork child of a threaded process: the locks of the mount's cache and
 * namespace as new (the client resets itself by its pid check). */
void pohm_mount_atfork_child(struct pohm_mount *m);
/*
 * The cache_dir a configuration uses for its prefix (default resolved) in
 * a process with the caller's effective uid: the configured (or default)
 * one, unless pohm_mount_dir_foreign says it is another user's; then that
 * uid's per-user one (pohm_mount_user_dir).  Nothing is created.  0 or -errno.
 */
int pohm_mount_cache_dir(const struct pohm_config *cfg, char *out, size_t len);

/* host.c: a mount as a host process (the shim) uses it. */
/* After the open in a host process: the full-disk callback (room asked of
 * pohmelfsd, never evicting here) and the shared offline state. */
void pohm_mount_host_attach(struct pohm_mount *m);
/* Make sure pohmelfsd runs for m (pohm_cache_daemon_start, at most once a
 * second), only while the calling process runs as m's owner: the daemon
 * inherits the euid, and with it finds the same cache_dir. */
void pohm_mount_daemon_start(struct pohm_mount *m);
/* The mode a new object is stored with, as the kernel makes it locally:
 * the type bits kept, the permission bits less the process umask (read
 * without changing it, once and again after each umask(3):
 * pohm_sys_umask_kept). */
mode_t pohm_mount_new_mode(mode_t mode);

/*
 * proc.c: the mounts of one host process (the shim's per-process state):
 * heavy init on the first call under the prefix (configuration from the
 * environment, the log, the mount of the calling euid), one mount per
 * effective uid (a setuid or seteuid to another user opens that user's
 * on its first call, at most POHM_PROC_MOUNTS), and the process's call
 * counters.  Thread-safe; see proc.c for who guards what.
 */
#define POHM_PROC_MOUNTS 4
#define POHM_PROC_PASS	 1	/* passthrough test build: the storage side stays out */
/* What the caller (the shim) does for the mounts with its own services. */
struct pohm_proc_glue {
	/* Around core work that may call libc by name (config files, name
	 * lookups): those calls must pass straight through the wrappers. */
	void (*hold)(void);
	void (*unhold)(void);
	/* The configuration was loaded (loaded) or failed to load: set up the
	 * log before any line of core's. */
	void (*configured)(const struct pohm_config *cfg, int loaded);
	/* m was just opened (first: the process's first mount), held. */
	void (*opened)(struct pohm_mount *m, const struct pohm_config *cfg, int first);
};
/*
 * The mount for the calling thread's effective uid, running heavy init
 * (with g, the same every call) the first time.  NULL with *rc set:
 * -ENOTCONN (no server configured), -EACCES (a refused per-user cache_dir,
 * or too many users), -EIO (another open failure), POHM_PROC_PASS
 * (passthrough test build).  One geteuid per call after the first.
 */
struct pohm_mount *pohm_proc_mount(const struct pohm_proc_glue *g, int *rc);
/* The open mount of the current euid, or NULL; never opens one (exit paths). */
struct pohm_mount *pohm_proc_mount_now(void);
/* The open mount whose cache is c, or NULL. */
struct pohm_mount *pohm_proc_mount_of(const struct pohm_cache *c);
/* The process's first mount (the euid it started with) if it opened, or NULL. */
struct pohm_mount *pohm_proc_mount_first(void);
/* A host open failed EMFILE or ENFILE: every open mount's kept fd given
 * back (pohm_cache_kept_drop).  1 when one was closed (retry once), 0. */
int pohm_proc_fds_relief(void);
/* Read the outcomes of every open mount's writes sent without a wait (a
 * rename's finish, decision 0073), whatever euid made them, until deadline
 * (CLOCK_MONOTONIC ns); network only, no cache_dir is touched. */
void pohm_proc_settle_all(uint64_t deadline_ns);
/* Count one call of kind k with result r (an error when the storage or the
 * cache failed: -EIO, -ENOTCONN, -ENOSPC...; not ENOENT, EEXIST, which a
 * local disk answers too).  Returns r. */
int pohm_proc_count(enum pohm_stat k, int r);
/* The process's files written and not pushed yet (pushed at exit and
 * exec: pohm_proc_exit_push). */
struct pohm_dirty *pohm_proc_dirty(void);
/* In a fork child: the locks as new, the counters the parent's to report,
 * the dirty list empty (the parent's files are the parent's). */
void pohm_proc_atfork_child(void);
/* This image's counters (at exit, and at an exec that replaces it): added
 * to the cache_dir's totals (pohmelfs stats), and with stats=1 printed as
 * one table into the log= file, else into err_fd (-1: nowhere). */
void pohm_proc_flush_stats(int err_fd);

/*
 * closepush.c: when a host process's writes travel — the push decisions
 * at close, fsync/sync, msync, munmap, a writable mapping, exit and exec
 * (the rules are in closepush.c).  Called with the shim's hold held.
 * What only the host knows comes in as struct pohm_host_fds.
 */
#define POHM_HOST_FD_WRITE  1u	/* opened for writing */
#define POHM_HOST_FD_NODATA 2u	/* a directory or O_PATH fd: nothing to push */
#define POHM_HOST_FD_WRONLY 4u	/* opened O_WRONLY (as the host recorded it; without
				 * it, the access mode is asked of the kernel) */
/* Not a flag: a value of readable()'s fresh (below). */
#define POHM_HOST_FD_UNCHECKED 2
struct pohm_host_fds {
	/* The lowest fd >= from the host opened under the prefix, with its
	 * storage inode (*ino: 0 if never written) and POHM_HOST_FD_* flags;
	 * -1 when there is none. */
	int (*next)(int from, uint64_t *ino, unsigned *flags);
	/* A readable fd on the inode of write-only fd (the caller's to keep,
	 * never closed here), -EBADF if fd is no regular file, or -errno
	 * (-EACCES, -EPERM: the process may not read the file).  st: fd's
	 * stat when the caller has it (NULL: taken here); fresh: fd is the
	 * one the host's open just returned (1), or POHM_HOST_FD_UNCHECKED:
	 * the caller checks the readable fd against st itself before any use
	 * (a kept one is returned without its fstat) and asks again with 0
	 * when it is not st's file. */
	int (*readable)(int fd, const struct stat *st, int fresh);
	/* Immediately before the host's close of fd (st: its stat, or NULL;
	 * its readable fd goes when fd was the inode's last). */
	void (*closing)(int fd, const struct stat *st);
	/* Drop the readable fds of files no fd of the host has open any more
	 * (closed behind the host table's back: a raw SYS_close). */
	void (*sweep)(void);
	/* Write-only fd's file as its open recorded it with the readable fd
	 * it made then (dev, ino and S_IFREG in *st, no call): 0, or -ENOENT
	 * (not known: fstat fd).  NULL: never known. */
	int (*known)(int fd, struct stat *st);
};
/* 1 if the local file (dev, ino) is open through an fd the host opened
 * under the prefix (h: a struct pohm_host_fds; the shape of the held
 * callbacks of pohm_cache_sync_others and pohm_cache_writer_sweep). */
int pohm_proc_fd_held(void *h, uint64_t dev, uint64_t ino);
/* The host closes fd, a writing fd under the prefix whose storage inode
 * is ino (hfl: its POHM_HOST_FD_* flags): pushed now (sync_on_close, the
 * file's last writing fd of the process) or left dirty for exit and
 * pohmelfsd.  Counted as a close; 0, or -EIO when the push failed online. */
int pohm_proc_close(struct pohm_mount *m, const struct pohm_host_fds *h, int fd, uint64_t ino,
		    unsigned hfl);
/* fsync/fdatasync of fd (storage inode ino), or with fd < 0 sync/syncfs:
 * that file, or everything the process wrote, pushed now.  Counted as a
 * sync; 0 or -EIO. */
int pohm_proc_sync(struct pohm_mount *m, const struct pohm_host_fds *h, int fd, uint64_t ino);
/* A writable shared mapping of fd (ino: its storage inode, NULL if fd is
 * not in the table): dirty until exit, open for write until the process ends. */
void pohm_proc_mapped(struct pohm_mount *m, const struct pohm_host_fds *h, int fd,
		       const uint64_t *ino);
/* A mapping ended (munmap: sync 0, pushes what no writing fd of the
 * process still holds; 0) or msync(MS_SYNC) (sync 1: everything now; 0
 * or -EIO). */
int pohm_proc_unmapped(struct pohm_mount *m, const struct pohm_host_fds *h, int sync);
/* At exit and at an exec that replaces the image: everything on the dirty
 * list pushed through the mount of the current euid (if it is open); with
 * settle, its deferred writes' outcomes briefly waited for (0: a caller
 * that may hold the net's lock, a signal handler's exit: the readers
 * settle them). */
void pohm_proc_exit_push(const struct pohm_host_fds *h, int settle);

/*
 * The host's own call of an operation (the shim's real libc call), made
 * by a pohm_proc_* function between the storage's before and after: its
 * result, >= 0 or -errno.  call runs with whatever the caller of the
 * pohm_proc_* function set up undone (the shim: its hold released).
 */
struct pohm_proc_real {
	int (*call)(void *arg);
	void *arg;
	/* The same open made by name in the directory dirfd with more flags
	 * or'ed in (an open's only; NULL: none): fd or -errno. */
	int (*at)(void *arg, int dirfd, const char *name, int more);
};

/*
 * procattr.c: an attribute change by a host process, of the object named
 * rel (NULL: none, or a name too long for the caller to resolve) or open
 * as fd (-1: none).  Called with the shim's hold held.
 */
enum pohm_proc_attr {
	POHM_PA_MODE,	/* chmod family */
	POHM_PA_OWNER,	/* chown family */
	POHM_PA_SIZE,	/* truncate family */
	POHM_PA_TIMES,	/* utime family */
	POHM_PA_XATTR,	/* setxattr, removexattr families */
};
#define POHM_PAF_NOFOLLOW 1u	/* the l-form: a symlink itself */
#define POHM_PAF_SET	  2u	/* a chown with a uid or gid other than -1; times given */
#define POHM_PAF_TOUCH	  4u	/* times set to now */
/* One call: before the kernel changes the local copy, a real copy, not a
 * stub; when offline, only a change that can travel later; the kernel's
 * owner checks on the stored owner (issue 22); counted.  Then the host's
 * own call (real; not made when a check failed).  When it succeeded, the
 * change travels now (a path's change, unless a file of the host's open
 * fds, which pushes at close or sync; a truncation through an fd travels
 * with that fd's next push; failures are logged: the change stays for a
 * later push, but what no push sends fails the call: chattr.c).  Returns
 * the caller's result: the real call's, or the check's or that -errno. */
int pohm_proc_attr(struct pohm_cache *c, const struct pohm_host_fds *h, enum pohm_proc_attr op,
		   const char *rel, int fd, unsigned flags, const struct pohm_proc_real *real);

/*
 * procns.c: a namespace change by a host process under the prefix, in
 * one call: the storage's half, then the real call when the kernel must
 * answer (a symlink out of the prefix on the way, a name only the kernel
 * holds: a socket, a parent the kernel cannot walk, a trailing slash on a
 * non-directory), then what its result needs (a stored name a local-only
 * rename replaced is dropped).  Rename and link across the prefix never
 * get here.  Called with the shim's hold held.
 */
enum pohm_proc_ns {
	POHM_PN_MKDIR,		/* a: the new directory; arg->mode */
	POHM_PN_RMDIR,		/* a */
	POHM_PN_UNLINK,		/* a */
	POHM_PN_REMOVE,		/* a: remove(3), unlink or rmdir */
	POHM_PN_RENAME,		/* a -> b; arg->flags (RENAME_*) */
	POHM_PN_LINK,		/* a -> b */
	POHM_PN_SYMLINK,	/* a: the new link; arg->target */
	POHM_PN_MKNOD,		/* a; arg->mode (with S_IFMT), arg->dev */
};
#define POHM_PROC_REL_MAX 4096	/* bytes of a name below the prefix, with its NUL */
struct pohm_proc_ns_arg {
	mode_t mode;
	uint64_t dev;
	unsigned flags;
	const char *target;	/* symlink contents */
	int slash;		/* a name ended in "/": a directory is meant */
};
/* a, b: names below the prefix ("" the root; b NULL but for rename and
 * link).  Counted when the storage answers; returns the caller's result:
 * 0 or -errno (the real call's when the kernel answered), or
 * POHM_PROC_AGAIN: the storage found no such name because the walk itself
 * moved a local directory on the way (another host's rename applied here,
 * pohm_cache_dir_moves): nothing was changed; the caller names a and b
 * again from their bases (a dirfd or the cwd follows the move) and calls
 * once more. */
#define POHM_PROC_AGAIN (-0x10001)
int pohm_proc_ns(struct pohm_cache *c, enum pohm_proc_ns op, const char *a, const char *b,
		 const struct pohm_proc_ns_arg *arg, const struct pohm_proc_real *real);

/*
 * procstat.c: a stat (st) or statx (stx; the other NULL) by a host process
 * of rel under the prefix (flags: POHM_PAF_NOFOLLOW for lstat and
 * AT_SYMLINK_NOFOLLOW), in one call: rel materialized (counted), the
 * host's own call (real, which fills st or stx; not made when that
 * failed), and on success the storage's identity and a stub's stored
 * attributes laid over the result.  Returns the caller's result.  Called
 * with the shim's hold held.  base: NULL, or rel's parent as the caller
 * opened and checked it (pohm_cache_materialize_from: the walk takes its
 * fd; the caller closes one left >= 0), or checked by its name (named,
 * no fd).
 */
struct statx;
int pohm_proc_stat(struct pohm_cache *c, const char *rel, unsigned flags,
		   struct pohm_walk_base *base, struct stat *st, struct statx *stx,
		   const struct pohm_proc_real *real);

/*
 * procopen.c: an open by a host process of rel under the prefix, in one
 * call (open, openat, creat, fopen, freopen: flags are the open flags, a
 * stream's derived from its mode string).  The storage's half first: with
 * O_CREAT the file created in the storage (mode by the umask rule; through
 * a symlink out of the storage's reach, by its real path, or the kernel's
 * alone when that is outside the prefix), else rel materialized with the
 * open mode's own permission checks; counted (a create or an open).  A
 * writer's open of an existing file then takes its open-for-write lock
 * (pohm_cache_writer_prelock), and the host's own open runs (real: the fd
 * or -errno).  After it: a failed open undoes this open's create and drops
 * the lock; an fd gets the created file recorded on it, and when it writes
 * a regular file its open-for-write lock (pohm_cache_writer_open_pre; a
 * sweep of locks the host's fds no longer hold now and then: h->sweep),
 * pohmelfsd started, *ino its storage inode (untouched for a reader); a
 * write-only fd gets its readable fd (h->readable).  pflags:
 * POHM_POF_DIRNAME when the name is a directory's (the root, a trailing
 * slash, "." or ".."): a create is then the kernel's alone.  Returns the
 * caller's result: the fd, or -errno (the storage's, or the real open's).
 * Called with the shim's hold held.
 */
#define POHM_POF_DIRNAME 1u
int pohm_proc_open(struct pohm_cache *c, const struct pohm_host_fds *h, const char *rel,
		   unsigned pflags, int flags, mode_t mode, uint64_t *ino,
		   const struct pohm_proc_real *real);
/* The mkstemp family in one call (issue 20: was a lookup before libc's
 * loop and pohm_proc_opened after it): rel, the template's name, looked up
 * as POHM_PL_TEMPDIR (its directory made local; counted as a lookup; on
 * -errno the host's call is not made), then the host's own call (real:
 * the fd or -errno; on success it has rewritten rel's bytes in place to
 * the name libc chose, same length), then on an fd the storage adopts the
 * new file and the rest is as pohm_proc_open after its real open (flags:
 * the open flags, O_CREAT included).  Returns the caller's result: the fd
 * or -errno; a negative result after a successful real call is the
 * caller's to close.  Called with the shim's hold held. */
int pohm_proc_mktemp(struct pohm_cache *c, const struct pohm_host_fds *h, const char *rel,
		     int flags, uint64_t *ino, const struct pohm_proc_real *real);

/*
 * proclookup.c: a read-only use of rel by a host process, before its own
 * call: rel materialized as the use needs (readlink: the link itself;
 * opendir: the entries; exec, dlopen, a spawn's open: the data; the others
 * the name), for getxattr of user.* names (POHM_PLF_USER_XATTR) a stub's
 * xattrs fetched, for access(2) a stub answered from its stored attributes
 * (amode: R_OK|W_OK|X_OK; POHM_PLF_EFFECTIVE: the effective ids).  Counted
 * (opendir as a readdir).  Returns POHM_PROC_PASS (the host's own call
 * answers), 0 (access: allowed without it) or -errno.  Called with the
 * shim's hold held.
 */
enum pohm_proc_lookup {
	POHM_PL_ACCESS,		/* access family */
	POHM_PL_READLINK,	/* readlink family */
	POHM_PL_XATTR_GET,	/* getxattr/listxattr families */
	POHM_PL_CHDIR,		/* chdir */
	POHM_PL_OPENDIR,	/* opendir, scandir*, nftw, ftw, fts_open, glob: the
				 * directory (or the glob pattern's fixed part) */
	POHM_PL_REALPATH,	/* realpath, canonicalize_file_name: every component */
	POHM_PL_STATFS,		/* statfs, statvfs */
	POHM_PL_EXEC,		/* exec*, posix_spawn: the binary, its #! interpreter
				 * and DT_NEEDED libraries in the prefix */
	POHM_PL_DLOPEN,		/* dlopen, dlmopen with a path */
	POHM_PL_TEMPDIR,	/* mkstemp family, mkdtemp: the template's directory */
	POHM_PL_HANDLE,		/* name_to_handle_at */
	POHM_PL_WATCH,		/* inotify_add_watch */
	POHM_PL_SPAWN_OPEN,	/* posix_spawn_file_actions_addopen */
};
#define POHM_PLF_NOFOLLOW	1u	/* getxattr's l-forms: the symlink itself */
#define POHM_PLF_USER_XATTR	2u	/* the call may return user.* xattrs */
#define POHM_PLF_EFFECTIVE	4u	/* access with the effective ids */
int pohm_proc_lookup(struct pohm_cache *c, enum pohm_proc_lookup why, const char *rel,
		     int amode, unsigned flags);

/* mount_user.c: a cache_dir for a user who cannot use the configured one. */
/* 1 if a process of effective uid euid cannot own dir as its cache_dir (it
 * exists and is another user's, cannot be looked at, or cannot be made
 * below its nearest existing ancestor); 0 otherwise, always for root. */
int pohm_mount_dir_foreign(const char *dir, uid_t euid);
/* uid's per-user cache_dir for prefix, not created: BASE/pohmelfs-UID/<prefix,
 * '/' as '_'>, BASE = $TMPDIR when uid may use it safely, else /var/tmp.  0 or -errno. */
int pohm_mount_user_dir(const char *prefix, uid_t uid, char *out, size_t len);
/* Make (or check) such a path: its last two levels real directories of uid,
 * mode 0700.  0, or -errno with the reason in err; -EACCES when either is a
 * symlink, not a directory, or another user's (never used then). */
int pohm_mount_user_dir_make(const char *path, uid_t uid, char *err, size_t errlen);

#endif
