/*
 * Layer core/sys — system calls, log, stats, the library's own fds.  This
 * header is the layer's whole interface.
 *
 * What it does: wraps the system calls core/ makes (below), writes the log
 * (log.h), counts calls, hits and bytes per process and per cache
 * (stats.h), decides access by mode bits and credentials for all of
 * core/ and preload/ (perm.h, the one permission checker), and keeps the
 * registry of the library's own long-lived fds that the host must not
 * close (ownfd.h).
 * Main types: struct pohm_stats; the fd slots of ownfd.h.
 * Relies on: the kernel (raw.h's inline trap) and libc; no other layer.
 * Rules for callers: functions return >= 0 or -errno and leave errno as
 * the host saw it; an fd the library keeps goes through pohm_own_set and
 * pohm_own_close only; the log never writes to stdout.
 *
 * Parts (include this header, not them, from outside core/sys):
 * log.h, ownfd.h, perm.h (the one permission checker), raw.h (one system
 * call straight to the kernel, errno untouched, and the wrappers that are
 * only that call), stats.h.
 */
/*
 * sys.h — wrapped system calls for the library's own files and sockets.
 *
 * Inside libpohmelfs.so, calling open/close/stat by name would land in our
 * own interposed wrappers, so everything here goes straight to the kernel
 * through raw.h's pohm_raw6 (an inline trap, not libc's syscall(2)).  All
 * functions retry EINTR and short transfers where that makes sense, return
 * >= 0 or -errno, and never read or write errno.  The wrappers here and in
 * raw.h are async-signal-safe and allocate nothing, except
 * pohm_sys_fd_path, pohm_sys_umask and pohm_sys_seed (snprintf, strstr,
 * clock_gettime) and the test hooks.  pohm_sys_open_high and
 * pohm_sys_move_high put an fd at POHM_FD_BASE or above, O_CLOEXEC, away
 * from the numbers programs expect to be free; pohm_sys_openat only adds
 * O_CLOEXEC.
 *
 * The only place that makes system calls (session 12): core/, preload/,
 * node/ and tools/ call these wrappers, never syscall(2); make check
 * (tests/rawsys.sh) fails on a call anywhere else.
 * (clock_gettime stays a libc call: it is the vDSO.)
 */
#ifndef POHM_CORE_SYS_H
#define POHM_CORE_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "log.h"
#include "ownfd.h"
#include "perm.h"
#include "raw.h"
#include "stats.h"

/* A zero-initialised variable that every process start reads or writes
 * (light init), or a shell's fork child before its exec: the library's
 * link puts them together on one page (preload/start.ld).  Elsewhere (core's tools and tests) a plain .bss
 * section of its own. */
#define POHM_START_BSS __attribute__((section(".bss.pohm_start")))

#define POHM_FD_BASE 700	/* internal fds live at or above this number */

/*
 * The longest name below the prefix the library handles, with its NUL
 * (issue 19 item 10): past PATH_MAX, which the kernel takes from any
 * directory, up to 64 KiB; a longer one fails ENAMETOOLONG.  Paths of
 * PATH_MAX bytes or more reach the local file system through raw.h's
 * long-path walk (longat.c).
 */
#define POHM_REL_CAP 65536

/* openat(2) with O_CLOEXEC added; the fd is not moved. fd or -errno. */
int pohm_sys_openat(int dirfd, const char *path, int flags, mode_t mode);
/* Like pohm_sys_openat, then moved to >= POHM_FD_BASE. fd or -errno. */
int pohm_sys_open_high(int dirfd, const char *path, int flags, mode_t mode);
/* Move fd to >= POHM_FD_BASE with O_CLOEXEC (closes the old number). fd or -errno. */
int pohm_sys_move_high(int fd);
/* close(2) without EINTR retry (Linux closes the fd anyway). 0 or -errno. */
int pohm_sys_close(int fd);
/* Read exactly n bytes unless EOF: bytes read (< n only at EOF) or -errno. */
ssize_t pohm_sys_read_full(int fd, void *buf, size_t n);
/* Write all n bytes: n or -errno. */
ssize_t pohm_sys_write_full(int fd, const void *buf, size_t n);
/* pread/pwrite of exactly n bytes (pread: short only at EOF): bytes or -errno. */
ssize_t pohm_sys_pread_full(int fd, void *buf, size_t n, off_t off);
ssize_t pohm_sys_pwrite_full(int fd, const void *buf, size_t n, off_t off);
/* lseek(2) (SEEK_DATA, SEEK_HOLE too): the new offset or -errno (-ENXIO: no data past off). */
off_t pohm_sys_lseek(int fd, off_t off, int whence);
/* One read(2)/write(2) with EINTR retry: bytes or -errno (-EAGAIN passes through). */
ssize_t pohm_sys_read(int fd, void *buf, size_t n);
ssize_t pohm_sys_write(int fd, const void *buf, size_t n);
/* fstat/fstatat/fsync/ftruncate/mkdirat/unlinkat/renameat/fcntl: 0 (or value) or -errno. */
int pohm_sys_fstat(int fd, struct stat *st);
int pohm_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags);
int pohm_sys_fsync(int fd);
int pohm_sys_ftruncate(int fd, off_t len);
int pohm_sys_mkdirat(int dirfd, const char *path, mode_t mode);
int pohm_sys_unlinkat(int dirfd, const char *path, int flags);
int pohm_sys_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int pohm_sys_fcntl(int fd, int cmd, long arg);
/* Lock (F_WRLCK, F_RDLCK: waiting, EINTR retried) or unlock (F_UNLCK) len bytes
 * at off of fd; POSIX record locks, or OFD locks with ofd.  0 or -errno. */
int pohm_sys_lock_range(int fd, off_t off, off_t len, short type, int ofd);
/* pohm_sys_lock_range's POSIX record lock without waiting: 0, -EAGAIN
 * (another process holds a conflicting lock), or -errno. */
int pohm_sys_trylock_range(int fd, off_t off, off_t len, short type);
/* The birth time of dirfd/path (not followed) into *ns when the file
 * system keeps one and the name is still the local inode ino: 1, else 0. */
int pohm_sys_birth_ns(int dirfd, const char *path, uint64_t ino, uint64_t *ns);
/* The kernel's path of fd in the calling thread's table (readlink of
 * /proc/thread-self/fd/N) into buf, NUL-terminated: its length, or -errno
 * (-ENAMETOOLONG if it does not fit). */
int pohm_sys_fd_path(int fd, char *buf, size_t len);
/* The parent of rel under pfd, one O_NOFOLLOW component at a time: an O_PATH
 * fd (close it) and *name, its last component; -errno (-EINVAL for "" or "a/"). */
int pohm_sys_open_parent(int pfd, const char *rel, const char **name);
/* The directory path under dirfd opened O_PATH in one openat2 that
 * follows no symlink on the way nor at the end (RESOLVE_NO_SYMLINKS): the
 * fd (not moved; close it) or -errno (-ELOOP for a symlink, -ENOSYS or
 * -EPERM where openat2 is missing or filtered: walk instead). */
int pohm_sys_open_dir_nolinks(int dirfd, const char *path);
/* Monotonic and real clocks in nanoseconds. */
uint64_t pohm_sys_mono_ns(void);
uint64_t pohm_sys_real_ns(void);
/* CLOCK_BOOTTIME in nanoseconds: never steps, and counts a suspend. */
uint64_t pohm_sys_boot_ns(void);
/* Current pid without the glibc cache (correct after vfork/clone). */
pid_t pohm_sys_getpid(void);
/*
 * The current pid, asked of the kernel once per process: kept in a page
 * the kernel zeroes in the child of every fork (MADV_WIPEONFORK), so a
 * child made by fork(), _Fork(), or a raw clone without CLONE_VM asks
 * again at its first call, atfork handlers or not.  A child sharing the
 * memory (vfork, clone with CLONE_VM) reads its parent's pid: the shim
 * makes vfork a fork when a prefix is configured (decision 0029), and
 * the callers (the fork checks of core/net and the generators' reseed)
 * must not reset the parent's shared state from such a child anyway.
 * Where the kernel lacks MADV_WIPEONFORK (before 4.14): getpid(2) every
 * call.  Lock-free; async-signal-safe.
 */
pid_t pohm_sys_pid(void);
/*
 * Run fn once per process, as pthread_once does, for a word that starts
 * as 0: later calls return at once; a thread that finds fn running on
 * another thread waits (futex) until it ends.  Unlike glibc's
 * pthread_once, the end wakes only when a thread is waiting: no futex
 * call in a start that has one thread (issue 23).  Must not be entered
 * again by fn's own thread (it would wait for itself; the callers guard
 * that).  No cancellation, no fork generation: while fn runs, no other
 * thread may fork — its child would find the word taken by a thread it
 * does not have and wait forever (pthread_once restarts fn there).  The
 * library's init runs before the program's threads could fork in any
 * start we know of (session 20 review: a library constructor's thread
 * forking in those tens of µs is the case left).
 */
void pohm_sys_once(int *once, void (*fn)(void));
/* geteuid(2) (never fails); kept per process after pohm_sys_keep_attrs.
 * Defined in perm.c beside the kept credentials (pohm_perm_euid), so that
 * sys.c stays below perm.c (tests/circles.sh). */
uid_t pohm_sys_geteuid(void);
/* symlinkat(2): 0 or -errno. */
int pohm_sys_symlinkat(const char *target, int dirfd, const char *path);
/* mknodat(2): 0 or -errno. */
int pohm_sys_mknodat(int dirfd, const char *path, mode_t mode, dev_t dev);
/* linkat(2): 0 or -errno. */
int pohm_sys_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
		    int flags);
/* renameat2(2) with flags (RENAME_EXCHANGE, ...): 0 or -errno (-EINVAL or
 * -ENOSYS where the file system or kernel lacks the flag). */
int pohm_sys_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
		       unsigned flags);
/* One getdents64(2) into buf: bytes (0 at the end) or -errno. */
ssize_t pohm_sys_getdents64(int fd, void *buf, size_t n);
/* close_range(2): 0 or -errno. */
int pohm_sys_close_range(unsigned first, unsigned last, unsigned flags);
/*
 * Extended attributes of fd when fd >= 0, else of path (follow = 1 follows
 * a final symlink, 0 does not: the l*xattr calls).  list: the NUL-separated
 * names (n = 0: the size needed); get: the value's length; set, remove: 0.
 * -errno on failure (-ENOTSUP, -ENODATA pass through).
 */
ssize_t pohm_sys_listxattr(int fd, const char *path, int follow, char *buf, size_t n);
ssize_t pohm_sys_getxattr(int fd, const char *path, int follow, const char *name, void *buf,
			  size_t n);
int pohm_sys_setxattr(int fd, const char *path, int follow, const char *name, const void *value,
		      size_t len, int flags);
int pohm_sys_removexattr(int fd, const char *path, int follow, const char *name);
/* socket(2): fd (not moved high) or -errno. */
int pohm_sys_socket(int domain, int type, int protocol);
/* connect(2): 0 or -errno (-EINPROGRESS on a non-blocking socket). */
int pohm_sys_connect(int fd, const void *addr, unsigned addrlen);
/* setsockopt(2) / getsockopt(2) (*len in and out): 0 or -errno. */
int pohm_sys_setsockopt(int fd, int level, int name, const void *val, unsigned len);
int pohm_sys_getsockopt(int fd, int level, int name, void *val, unsigned *len);
/* One ppoll(2) with no signal mask (fds: struct pollfd[n]; ts NULL waits
 * forever): ready count or -errno (-EINTR passes through). */
int pohm_sys_ppoll(void *fds, unsigned long n, const struct timespec *ts);
/* One sendmsg(2) (msg: struct msghdr): bytes or -errno (-EINTR, -EAGAIN pass through). */
ssize_t pohm_sys_sendmsg(int fd, const void *msg, int flags);
/* eventfd2(2): fd (not moved high) or -errno. */
int pohm_sys_eventfd(unsigned initval, int flags);
/*
 * Test switches.  Each is a POHMELFS_TEST_* environment variable that only a
 * test build reads: the test programs (tests/progs/), the unit tests and
 * build/test/ (a copy of the library, pohmelfs and pohmelfsd for the bats
 * tests that need a switch) link tests/progs/hooks/test_switch.c, whose
 * strong pohm_sys_test_switch() replaces the weak one here.  The shipped
 * library, tools and node carry the weak one, which returns NULL: they hold
 * no test variable's name and read none.
 */
enum pohm_test_switch {
	POHM_TEST_PASSTHROUGH,		/* preload: the storage side stays out */
	POHM_TEST_REGULAR_STUBS,	/* core/cache/stub.c: "1" = stubs as regular files */
	POHM_TEST_INTERNAL_FD,		/* preload/init.c: hold FILE open as an internal fd */
	POHM_TEST_BOOT_ID,		/* core/cache/cacheboot.c: this text is the boot id */
	POHM_TEST_KILL_AT_RENAME_INTENT,	/* core/ns/nsops.c, see pohm_sys_test_kill */
	POHM_TEST_KILL_IN_RENAME,	/* core/cache/cachens.c, see pohm_sys_test_kill */
	POHM_TEST_KILL_IN_REHINT,	/* core/cache/rehint.c, see pohm_sys_test_kill */
	POHM_TEST_KILL_AT_RMDIR_SEALED,	/* core/ns/nsops.c, see pohm_sys_test_kill */
	POHM_TEST_DIR_TIME_LAG,		/* core/cache/cachedirtime.c: the lag, in seconds */
	POHM_TEST_REFRESH_IN_OPEN,	/* preload: a write-open's refresh runs between its
					 * real open and its open-for-write step */
	POHM_TEST_LIST_FAIL,		/* core/cache/cache.c: an open's listing of the
					 * directory named so (its path in the prefix, ""
					 * the root) fails with EIO; its entries' own
					 * reads and writes do not (a bucket read failing
					 * under load, doc/notes-s15-conc.md) */
};
/* The switch's value in a test build (NULL when its variable is unset);
 * NULL everywhere else. */
const char *pohm_sys_test_switch(enum pohm_test_switch s);
/* Test hook: in the test programs (tests/progs/, which link
 * tests/progs/hooks/test_kill.c), SIGKILL the calling process here when the
 * switch's variable is set; a crash test names the point it kills at
 * instead of racing a kill against the clock.  Everywhere else (the library,
 * its test build, the tools, the node) a no-op. */
void pohm_sys_test_kill(enum pohm_test_switch s);
/*
 * The process umask, read from /proc/self/status without changing it (a
 * set-and-restore would give a host thread creating meanwhile 022, and
 * undo a host umask() in the window).  Falls back to set-and-restore only
 * when /proc has no Umask: line.  About 12 us; not for a passthrough path.
 */
mode_t pohm_sys_umask(void);
/*
 * The process umask without a system call (after pohm_sys_keep_attrs;
 * before it, pohm_sys_umask() every call): pohm_sys_umask() read once and
 * kept until pohm_sys_umask_changed() (the shim's umask(3) wrapper, after
 * the real call) says it may have moved; the next call reads it again.  A
 * umask changed by a raw system call (syscall(SYS_umask), a statically
 * linked helper in the same process) is not seen: libpohmelfs(7) LIMITS.
 * Lock-free (a generation and the value in one 64-bit word).
 */
mode_t pohm_sys_umask_kept(void);
void pohm_sys_umask_changed(void);
/*
 * Keep the process's attributes (the umask above, the credentials of
 * perm.h) instead of asking the kernel at every call.  Only for a process
 * whose every change of them goes through wrappers that report it: the
 * shim turns it on at light init (preload/creds.c reports); the tools and
 * the unit tests, which change them with plain libc or raw calls, ask the
 * kernel every time.  Once on, stays on.
 */
void pohm_sys_keep_attrs(void);
int pohm_sys_keeps_attrs(void);
/* The credentials may have changed for every thread (setuid, setgid and
 * their variants, which glibc applies to all threads): the next question
 * of perm.h reads them again.  Call after the change.  (perm.c) */
void pohm_sys_creds_changed(void);
/* One thread changed its own credentials (setfsuid, setfsgid, capset):
 * keep none from now on; every question asks the kernel.  Call before the
 * change.  (perm.c) */
void pohm_sys_creds_per_thread(void);
/*
 * 64 non-zero bits for seeding a generator: getrandom(2), mixed with the
 * clock, pid and tid (the only source when getrandom fails).  A generator
 * seeded once is copied by fork: whoever needs ids unique across processes
 * reseeds when pohm_sys_pid() changes (ns_random, cas_pause).
 */
uint64_t pohm_sys_seed(void);

/* Append x in lowercase hex at o, never past lim; the new end (no NUL). */
char *pohm_put_hex(char *o, char *lim, uint64_t x);

#endif
