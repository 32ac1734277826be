/*
 * hooks.h — where the storage side (preload/hooks_cache.c over core/mount
 * and core/cache) plugs into the interposition layer.
 *
 * hooks_cache.c holds no cache policy of its own (session 11, issue 18/20):
 * heavy init, the per-uid mounts and the counters are core/mount
 * (pohm_proc_*), pohmelfsd's start, the dirty list and the full-disk wait
 * core/cache (pohm_cache_daemon_start, pohm_dirty_*, pohm_cache_room) with
 * the mount glue in core/mount (pohm_mount_daemon_start,
 * pohm_mount_host_attach, the umask rule pohm_mount_new_mode), and every
 * access decision core/sys's one checker (pohm_perm_mode; access(2) of a
 * stub: pohm_cache_access).  When writes travel (close, sync, mappings,
 * exit) is core/mount closepush.c (pohm_proc_close, _sync, _mapped,
 * _unmapped, _exit_push; the dirty list in proc.c), an attribute change
 * core/mount procattr.c (pohm_proc_attr; POHM_AT_* map to enum
 * pohm_proc_attr), a namespace change and its storage cases core/mount
 * procns.c (pohm_proc_ns; POHM_NS_* map to enum pohm_proc_ns), an open
 * (create, materialize, the writer's early and open-for-write locks,
 * pohmelfsd's start, a create's undo) core/mount procopen.c
 * (pohm_proc_open; pohm_proc_mktemp for the mkstemp family), what a
 * read-only use of a name materializes core/mount proclookup.c
 * (pohm_proc_lookup; the wrappers name the use in core's own enum
 * pohm_proc_lookup).  What it
 * keeps is glue to preload's services: the fd table and write-only fds'
 * shadows (as core's struct pohm_host_fds), the signal-handler queue.
 *
 * One call per operation (issue 20): pohm_hook_open, pohm_hook_mktemp,
 * pohm_hook_ns, pohm_hook_attr, pohm_hook_stat and pohm_hook_statx get the wrapper's
 * own libc call (struct pohm_real_call) and return the caller's result;
 * core makes the real call between the storage's halves, so no state
 * passes between calls (no thread-locals).  The shim stays busy during
 * that real call (hooks_cache.c real_outside): a signal handler that
 * interrupts it is inside the shim, its calls noted (sigsafe.c).  The wrapper records the fd in
 * its table after the open hook returns (preload's by nature).
 *
 * preload/ decides *whether* a call concerns the prefix (classification,
 * cwd and dirfd tracking, the fd table, exec handoff); the hooks decide
 * *what the storage does* about it.  A hook is called only for calls under
 * the prefix (or on fds opened under it), never for anything else, never
 * while the shim is initialising, never inside a vfork child, and never
 * with a preload/ lock held.
 *
 * Contract of every hook that returns int:
 *   POHM_PASS   not handled: the wrapper goes on with the real libc call
 *               on the caller's own (dirfd, path) and arguments;
 *   >= 0        handled: the wrapper returns this result without calling
 *               libc;
 *   -errno      handled, failed: the wrapper sets errno and returns -1
 *               (or NULL/EOF, as the function does).
 * Hooks follow core/'s error convention: they return -errno and should
 * leave errno as they found it.  Their own system calls go through
 * core/sys (pohm_sys_*, never syscall(2)); a libc function called by name
 * (core/cache daemonstart.c: dladdr in pohmelfsd's start) is bracketed by pohm_hold()/pohm_unhold() so the wrappers pass it.
 * The one-call hooks
 * (open, mktemp, ns, attr, stat, statx) never return POHM_PASS: their result is
 * the caller's.
 *
 * Every hook has one definition: hooks_stack.c's (each runs hooks_cache.c's
 * pohm_hk_* of the same contract on the library's stack), or hooks_cache.c's
 * own for those that reach no storage call on the way (fork, exec_env,
 * statfs_fix).  There are no weak passthrough defaults any more (session
 * 11: hooks_pass.c went with the last before/after pair; both library
 * builds always link the storage side, so nothing used them).  At run
 * time POHMELFS_TEST_PASSTHROUGH=1 (in the test build only) makes the
 * hooks pass as if no storage were there: POHM_PASS, or the wrapper's
 * real call alone.  doc/ARCHITECTURE.md §4.4 has what the hooks do.
 *
 * Sections: paths; fds; the open family; stat; the namespace; attributes;
 * lookups; directories; fds in flight; processes; services for hooks.
 */
#ifndef POHM_PRELOAD_HOOKS_H
#define POHM_PRELOAD_HOOKS_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "mount.h"

/* "Not handled": any value below -4095 is never a valid -errno. */
#define POHM_PASS	(-0x10000)

/*
 * The wrapper's own libc call, for the hooks that make it themselves
 * between the storage's halves (one call per operation: open, stat,
 * statx, ns, attr):
 * call(arg) makes it with the wrapper's arguments and returns its result
 * (>= 0) or -errno.  A hook calls it at most once, on the stack it runs
 * on, with the shim neither held nor busy, as the wrapper would.
 */
struct pohm_real_call {
	int (*call)(void *arg);
	void *arg;
	/* An open's only (NULL: none): the same open by name in the
	 * directory dirfd, more or'ed into its flags; fd or -errno. */
	int (*at)(void *arg, int dirfd, const char *name, int more);
};

/* ------------------------------------------------------------ paths */

#define POHM_REL_MAX	4096	/* bytes of pohm_path.inl, with its NUL */

/*
 * A classified path under the prefix (DESIGN.md §2 step 1).  rel points
 * to inl, in the struct, for a name below the prefix shorter than
 * POHM_REL_MAX; a longer one (a deep cwd or dirfd and a relative path:
 * the kernel takes up to 4095 bytes from any depth) does not fit there
 * and is classified POHM_PATH_TRUNC.  The hooks get it whole all the
 * same (issue 19 item 10): hooks_stack.c classifies it again, on the
 * library's stack, into a heap buffer of up to POHM_REL_CAP bytes
 * (core/sys/sys.h: 64 KiB; longer fails ENAMETOOLONG) and hands the
 * storage a copy whose rel points there, POHM_PATH_TRUNC clear.  A copy
 * of the struct shares rel with its source.
 */
struct pohm_path {
	int dirfd;		/* the caller's dirfd, unchanged (AT_FDCWD or an fd) */
	const char *path;	/* the caller's path, unchanged: what libc gets */
	int spelling;		/* 0: under the prefix as configured, 1: under realpath(prefix) */
	unsigned flags;		/* POHM_PATH_* */
	size_t len;		/* strlen(rel) */
	char *rel;		/* normalised path below the prefix root: "" = the root,
				 * "a/b" otherwise; no leading or trailing slash */
	struct pohm_walk_base lent;	/* POHM_LOC_BASE: rel's parent, opened by
				 * the classifier (fd -1: not), or named
				 * (POHM_LOC_NAMED: the dirfd by its name) */
	struct pohm_walk_base *base;	/* &lent (NULL: none; a copy shares its
				 * source's): the walk takes lent.fd, the
				 * caller closes one left (stat.c base_done) */
	char inl[POHM_REL_MAX];	/* rel's usual storage */
};

#define POHM_PATH_SLASH	0x1	/* the path ended in "/" (or "/.", "/.."): a directory */
#define POHM_PATH_TRUNC	0x2	/* rel did not fit inl (cwd deep inside + long relative
				 * path): rel is "", use (dirfd, path); the hooks never
				 * see it (hooks_stack.c) */
#define POHM_PATH_PROCFD 0x4	/* named through /proc/self/fd/N or /dev/fd/N */
#define POHM_PATH_EMPTY	0x8	/* classified with POHM_LOC_EMPTY ("" names the dirfd) */

/* ------------------------------------------------------------ fds */

/* What the fd table records for an fd opened under the prefix. */
struct pohm_fd_info {
	uint64_t cookie;	/* the storage's handle for the file (set by the
				 * open and mktemp hooks; 0 = none): its storage inode */
	unsigned flags;		/* POHM_FD_* */
};

#define POHM_FD_WRITE	0x1	/* opened for writing (O_WRONLY, O_RDWR, fopen "w"/"a"/"+") */
#define POHM_FD_DIR	0x2	/* opened with O_DIRECTORY, or by opendir */
#define POHM_FD_PATH	0x4	/* O_PATH: no I/O through it */
#define POHM_FD_INHERITED 0x8	/* came from the previous image through exec */
#define POHM_FD_LONG	0x10	/* opened for writing by a name below the prefix of 4096
				 * bytes or more: the journal keeps no name for it, so
				 * its close pushes (hooks_cache.c hook_close) */
#define POHM_FD_WRONLY	0x40	/* opened O_WRONLY (F_SETFL cannot change an access mode):
				 * its push reads through its shadow (shadow.c) */
#define POHM_FD_UNLISTED 0x20	/* a directory whose listing failed when it was opened
				 * (the open succeeded: fchdir, savewd): its first read
				 * of entries lists again, else fails with EIO (dir.c) */

/* ------------------------------------------------------------ the open family */

/*
 * open/openat/creat (+64, fortified), fopen/freopen (flags derived from the
 * mode string), in one call: the storage's half (a create, or the name
 * materialized; a writer's open-for-write lock), the wrapper's own open
 * through real (it returns the fd, a stream's fileno, or -errno), and the
 * fd's side (the create recorded or undone, a writer's lock, storage inode
 * in fi->cookie; fi->flags is preset from the open flags).  Returns the
 * caller's result, the fd or -errno, never POHM_PASS; a negative result
 * after a successful real call is the wrapper's to close.  A successful fd
 * is then recorded in the fd table with *fi.
 */
int pohm_hook_open(const struct pohm_path *p, int flags, mode_t mode, struct pohm_fd_info *fi,
		   const struct pohm_real_call *real);

/*
 * The mkstemp family in one call (p: the template, flags the open flags,
 * O_CREAT included): the template's directory made local, the wrapper's
 * own libc call through real (glibc's loop: the fd or -errno; it fills in
 * the template, p->path, and the hook copies the name chosen into p->rel),
 * and on an fd the storage adopts the new file, as pohm_hook_open's fd
 * side (fi->cookie).  Returns the caller's result, the fd or -errno, never
 * POHM_PASS; a negative result after a successful real call is the
 * wrapper's to close.
 */
int pohm_hook_mktemp(const struct pohm_path *p, int flags, struct pohm_fd_info *fi,
		     const struct pohm_real_call *real);

/* ------------------------------------------------------------ stat */

/*
 * The stat family and statx by path, in one call: the name materialized,
 * the wrapper's own libc call through real (which fills *st or *stx),
 * and on success the storage's identity and stub attributes laid over
 * it.  flags are the fstatat flags (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH)
 * or statx's.  Returns the caller's result (0 or -errno), never POHM_PASS.
 */
int pohm_hook_stat(const struct pohm_path *p, int flags, struct stat *st,
		   const struct pohm_real_call *real);
int pohm_hook_statx(const struct pohm_path *p, int flags, unsigned mask, struct statx *stx,
		    const struct pohm_real_call *real);

/*
 * After a successful real fstat of a tracked fd (p NULL, fd >= 0):
 * overlay storage identity and stub attributes.
 */
void pohm_hook_stat_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi,
			struct stat *st);

/*
 * The device number stat reports under the prefix (one per fsid): 0 and
 * *dev, or POHM_PASS when there is none (no mount could be opened).  For
 * the mount tables (mounttab.c).
 */
int pohm_hook_mount_dev(uint64_t *dev);

/* statfs/statvfs (fd forms for tracked fds): after success, e.g. f_bavail. */
void pohm_hook_statfs_fix(const struct pohm_path *p, int fd, struct statfs *sf,
			  struct statvfs *sv);

/* ------------------------------------------------------------ the namespace */

enum pohm_ns_op {
	POHM_NS_MKDIR,		/* a: the new directory; arg.mode */
	POHM_NS_RMDIR,		/* a */
	POHM_NS_UNLINK,		/* a (unlinkat with AT_REMOVEDIR is RMDIR) */
	POHM_NS_REMOVE,		/* a: remove(3), unlink or rmdir */
	POHM_NS_RENAME,		/* a → b, both under the prefix; arg.flags (RENAME_*) */
	POHM_NS_LINK,		/* a → b, both under the prefix; arg.flags (AT_SYMLINK_FOLLOW) */
	POHM_NS_SYMLINK,	/* a: the new link; arg.target */
	POHM_NS_MKNOD,		/* a; arg.mode (with S_IFMT), arg.dev (mknod, mkfifo) */
};

struct pohm_ns_arg {
	mode_t mode;
	dev_t dev;
	unsigned flags;
	const char *target;	/* symlink contents */
};

/*
 * A namespace change under the prefix, in one call (rename and link
 * across the prefix boundary never get here: they fail EXDEV in
 * preload/): the storage's half, the wrapper's own libc call through
 * real when the kernel must answer, and what follows its result.
 * Returns the caller's result (0 or -errno), never POHM_PASS; or
 * POHM_PROC_AGAIN (mount.h): classify a and b again and call once more.
 */
int pohm_hook_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b,
		 const struct pohm_ns_arg *arg, const struct pohm_real_call *real);

/* ------------------------------------------------------------ attributes */

enum pohm_attr_op {
	POHM_AT_CHMOD,		/* chmod family */
	POHM_AT_CHOWN,		/* chown family */
	POHM_AT_TRUNCATE,	/* truncate, ftruncate (+64) */
	POHM_AT_UTIMES,		/* utime family */
	POHM_AT_XATTR_SET,	/* setxattr family */
	POHM_AT_XATTR_REMOVE,	/* removexattr family */
};

/*
 * An attribute change of a file under the prefix, in one call: by path
 * (p, fd -1) or on a tracked fd (p NULL, fd, fi).  flags: AT_SYMLINK_NOFOLLOW
 * for the l-forms, and what the call sets, for the owner checks the kernel
 * makes: POHM_ATTR_SET (a chown with a uid or gid other than -1, times
 * given explicitly), POHM_ATTR_TOUCH (times set to now).  The storage's
 * checks, the wrapper's own libc call through real unless one failed, and
 * the change's push after a success.  Returns the caller's result (the
 * real call's, or -errno), never POHM_PASS.
 */
#define POHM_ATTR_SET	0x40000000
#define POHM_ATTR_TOUCH	0x20000000
int pohm_hook_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
		   const struct pohm_fd_info *fi, int flags, const struct pohm_real_call *real);

/* ------------------------------------------------------------ lookups */

/* Why a name must be materialized (read-only uses of a path): core/mount's
 * enum pohm_proc_lookup (mount.h), POHM_PL_*. */

/*
 * Before the real call.  flags: the call's own flags, when it has some.
 * POHM_PASS (materialized, or nothing to do: go on), or -errno to fail
 * the call.  For calls that return an int status (access, chdir,
 * readlink, ...) a result >= 0 answers without libc; for the others
 * (opendir, the walks, realpath, exec, dlopen) it means POHM_PASS.
 */
int pohm_hook_lookup(enum pohm_proc_lookup why, const struct pohm_path *p, int flags);
/* POHM_PL_OPENDIR: go on, but the directory's listing failed (the stream's
 * reads must list again or fail: POHM_FD_UNLISTED). */
#define POHM_LOOKUP_UNLISTED	1
/* POHM_PL_ACCESS: flags are the access mode, plus this for the effective ids. */
#define POHM_ACCESS_EFFECTIVE	0x1000
/* POHM_PL_XATTR_GET: flags are AT_SYMLINK_NOFOLLOW for the l-forms, plus this
 * when the call may return user.* xattrs (getxattr of a user.* name,
 * listxattr): a stub, which carries none locally, is fetched first. */
#define POHM_XATTR_USER		0x1

/* ------------------------------------------------------------ directories */

/*
 * An entry read from a directory stream opened under the prefix (readdir,
 * readdir64, readdir_r family): fix d_ino, or return 1 to hide it (the
 * staging directory), 0 to return it.
 */
int pohm_hook_readdir(DIR *dir, int fd, struct dirent64 *ent);

/* ------------------------------------------------------------ fds in flight */

/*
 * Before the real close of a tracked fd (close, close_range, closefrom,
 * dup2/dup3 onto it, fclose, freopen, closedir): push what was written.
 * 0 or -errno; an error is reported by close after the fd is closed (as
 * NFS does).
 */
int pohm_hook_close(int fd, const struct pohm_fd_info *fi);

enum pohm_sync_op {
	POHM_SYNC_FSYNC,	/* fsync */
	POHM_SYNC_FDATASYNC,	/* fdatasync */
	POHM_SYNC_RANGE,	/* sync_file_range with SYNC_FILE_RANGE_WAIT_AFTER */
	POHM_SYNC_FS,		/* syncfs(fd) on an fd under the prefix */
	POHM_SYNC_ALL,		/* sync(): fd is -1, fi NULL */
};

/* After a successful real sync call: commit to the storage.  0 or -errno. */
int pohm_hook_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi);

enum pohm_fd_event {
	POHM_EV_MAP_WRITE,	/* mmap MAP_SHARED|PROT_WRITE of a tracked fd: addr, len
				 * (a writer until unmapped) */
	POHM_EV_UNMAP,		/* munmap since such a mapping was made: addr, len (fd -1) */
	POHM_EV_MSYNC,		/* msync(MS_SYNC) since such a mapping was made: addr,
				 * len (fd -1); the result is msync's (commit, as fsync) */
	POHM_EV_WRITTEN,	/* copy_file_range/sendfile wrote into a tracked fd */
};

/*
 * Something happened (after the real call succeeded) that changes a
 * tracked file's data.  0 or -errno (used by POHM_EV_MSYNC only).
 */
int pohm_hook_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi,
		       void *addr, size_t len);

/*
 * An fd handed over by the previous image through exec: called from light
 * init (the one hook that is), before the program's main.  May adjust *fi.
 */
void pohm_hook_fd_inherited(int fd, struct pohm_fd_info *fi);

/* ------------------------------------------------------------ processes */

/* pthread_atfork phases: prepare (parent, before), parent, child; and the
 * prepare and child phases of a fork from a single-threaded process
 * (init.c takes no lock then, nor runs the parent phase): no lock to take
 * or make new, and core/mount's resets only marked due, run at the child's
 * first use (decision 0066).  Every prepare phase and the parent phase
 * count the fork (core/cache pohm_cache_fork_mark: the child may share
 * every lock file description opened so far, so the parent never unlocks
 * nor lends one again; no lock, and no write in a process that never
 * opened one: decisions 0065, 0066, corrections). */
enum pohm_fork_phase { POHM_FORK_PREPARE, POHM_FORK_PARENT, POHM_FORK_CHILD,
		       POHM_FORK_CHILD_NOLOCK, POHM_FORK_PREPARE_NOLOCK };
void pohm_hook_fork(enum pohm_fork_phase phase);

/*
 * Before an exec (replacing = 1: this image ends, act as at exit and push
 * what it wrote) or a posix_spawn (replacing = 0), never in a vfork
 * child: optionally add environment strings for the new image, written
 * into buf as "NAME=value\0" strings (at most size bytes, at most size/2
 * strings); returns the bytes used (0 = none).
 */
size_t pohm_hook_exec_env(char *buf, size_t size, int replacing);

/* At the end of the process (library destructor): push what it wrote. */
void pohm_hook_exit(void);

/*
 * 1 while the storage side has nothing of this process to push or count:
 * no call reached the storage since the process started or was forked
 * (a fork child's dirty list, counters and kept bases start empty) and no
 * signal handler's record waits.  pohm_hook_exit would then do nothing,
 * and pohm_hook_exec_env would add nothing unless fds under the prefix
 * go to the new image (their open-for-write locks), so exit and exec skip
 * them: a /bin/true under the shim maps no hook stack at exit, a shell's
 * fork child maps nothing before its exec.  Async-signal-safe.
 */
int pohm_storage_idle(void);

/* ------------------------------------------------------------ services for hooks */

/*
 * Internal fds (sockets, journal, locks) must be registered so that a host
 * that closes or dup2()s fds it did not open cannot break them: close and
 * close_range skip them (close reports EBADF, as if the fd were not open),
 * dup2/dup3 onto one move it aside first.  Register an fd >= POHM_FD_BASE
 * and always read its current number back through the handle.  Today only
 * two are registered (hooks_cache.c's copy of stderr for stats=1, init.c's
 * POHMELFS_TEST_INTERNAL_FD of the test build): core/ opens its sockets, journal
 * and directory fds with raw calls and keeps their numbers, so those are
 * not protected from close or dup2 (only close_range/closefrom keep them,
 * preload/fdkeep.c).
 */
int pohm_ifd_register(int fd);		/* handle >= 0, or -ENOSPC / -EINVAL */
int pohm_ifd_fd(int handle);		/* the fd's current number, or -EBADF */
void pohm_ifd_unregister(int handle);	/* before closing it with pohm_sys_close */

/*
 * log= of a configuration (c->log, or POHMELFS_LOG when the load failed
 * before reading the environment; loaded: the load succeeded, and
 * log_level= applies too).  With a log file, no line of the library goes
 * to the host's stderr from here on; the file's fd is registered above.
 * preload/logcfg.c.
 */
struct pohm_config;
void pohm_log_configure(const struct pohm_config *c, int loaded);

/*
 * Code of a hook that calls libc functions by name (which may be
 * interposed) brackets them with these, so the shim passes them through.
 * preload/state.c (pohm_depth).
 */
void pohm_hold(void);
void pohm_unhold(void);

/* The fd table entry of fd: 1 and *fi if it was opened under the prefix. */
int pohm_fd_lookup(int fd, struct pohm_fd_info *fi);

#endif
