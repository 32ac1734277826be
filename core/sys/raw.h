/*
 * raw.h — part of core/sys (include sys.h): one system call straight to
 * the kernel, and the wrappers that need nothing more than that.
 *
 * pohm_raw6 traps into the kernel with the architecture's instruction and
 * hands back the kernel's answer as it is: >= 0, or -errno (-4095..-1).
 * It does not go through libc's syscall(), so errno is never read or
 * written (not even saved and restored), nothing is allocated, and no
 * lock, PLT entry or TLS access is involved: every function in this file
 * may be called from a signal handler, in a vfork child, and in the copy
 * a raw clone makes of a multi-threaded host.  An architecture without
 * the inline trap below falls back to syscall(2) with errno saved and
 * restored (still invisible to the host, no longer free of TLS); so does
 * a build with -DPOHM_RAW_LIBC (to test that path on x86-64).
 *
 * The wrappers below are the calls whose only work is the call itself;
 * those that retry, loop or choose (EINTR, short transfers, fd numbers)
 * live in sys.c.
 */
#ifndef POHM_CORE_SYS_RAW_H
#define POHM_CORE_SYS_RAW_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>

#include <errno.h>	/* the E* constants; errno itself is not used */
#if (!defined(__x86_64__) && !defined(__aarch64__)) || defined(POHM_RAW_LIBC)
#include <unistd.h>
#endif

/* The system call nr with six arguments (unused ones: pass 0): >= 0 or -errno. */
static inline long pohm_raw6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__) && !defined(POHM_RAW_LIBC)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__) && !defined(POHM_RAW_LIBC)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
#else
	int saved = errno;
	long r = syscall(nr, a, b, c, d, e, f);

	if (r < 0)
		r = -errno;
	errno = saved;
	return r;
#endif
}

/* POHM_RAW(nr, args...): pohm_raw6 with up to six arguments of any integer
 * or pointer type, the missing ones 0. */
#define POHM_RAW_(nr, a, b, c, d, e, f, ...) \
	pohm_raw6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
#define POHM_RAW(...) POHM_RAW_(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)

/*
 * Paths of PATH_MAX bytes or more (longat.c; issue 19 item 10).  The
 * kernel refuses them with ENAMETOOLONG; the *at wrappers then walk
 * them: pohm_sys_long_path(path) says path is that long;
 * pohm_sys_long_at(dirfd, path, &tail) opens the directory holding
 * path's last part, shorter than PATH_MAX (the parts before it opened in
 * turn, each shorter than PATH_MAX, from dirfd, following symlinks as
 * the kernel would in a whole path), and returns that O_PATH fd for the
 * caller to close, with *tail pointing into path; -errno (-ENAMETOOLONG
 * when no '/' cuts it short enough).  Both allocate nothing and touch no
 * errno; pohm_sys_long_at has a PATH_MAX frame (not for a signal handler
 * on a small stack: their paths are shorter).
 *
 * POHM_SYS_LONG(r, dirfd, path, expr): when the call just made returned
 * r == -ENAMETOOLONG for a path that long, r = expr made again with
 * (POHM_LD, POHM_LT) for (dirfd, path).  Shorter paths never go further
 * than the comparison.
 */
int pohm_sys_long_path(const char *path);
int pohm_sys_long_at(int dirfd, const char *path, const char **tail);

#define POHM_SYS_LONG(r, dirfd, path, expr) do {				\
	if ((r) == -ENAMETOOLONG && pohm_sys_long_path(path)) {			\
		const char *POHM_LT;						\
		int POHM_LD = pohm_sys_long_at((dirfd), (path), &POHM_LT);	\
									\
		if (POHM_LD < 0) {						\
			(r) = POHM_LD;						\
		} else {							\
			(r) = (expr);						\
			POHM_RAW(SYS_close, POHM_LD);				\
		}								\
	}									\
} while (0)

/* The kernel's struct sigaction for rt_sigaction(2) (x86-64 and arm64:
 * handler, flags, restorer, a 64-bit mask). */
struct pohm_ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* openat(2) with flags as given (no O_CLOEXEC added; for an fd meant to
 * cross an exec, such as a child's /dev/null): fd or -errno. */
static inline int pohm_sys_openat_inherit(int dirfd, const char *path, int flags, mode_t mode)
{
	return (int)POHM_RAW(SYS_openat, dirfd, path, flags, mode);
}

/* dup2(2): newfd (also when oldfd == newfd and open) or -errno. */
static inline int pohm_sys_dup2(int oldfd, int newfd)
{
#ifdef SYS_dup2
	return (int)POHM_RAW(SYS_dup2, oldfd, newfd);
#else
	if (oldfd == newfd) {
		long r = POHM_RAW(SYS_fcntl, oldfd, 1 /* F_GETFD */);

		return r < 0 ? (int)r : newfd;
	}
	return (int)POHM_RAW(SYS_dup3, oldfd, newfd);
#endif
}

/* faccessat(2) without flags (the real ids, as access(2)): 0 or -errno. */
static inline int pohm_sys_faccessat(int dirfd, const char *path, int mode)
{
	int r = (int)POHM_RAW(SYS_faccessat, dirfd, path, mode);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_faccessat, POHM_LD, POHM_LT, mode));
	return r;
}

/* fchmod(2): 0 or -errno. */
static inline int pohm_sys_fchmod(int fd, mode_t mode)
{
	return (int)POHM_RAW(SYS_fchmod, fd, mode);
}

/* fchownat(2) (flags: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH): 0 or -errno. */
static inline int pohm_sys_fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	int r = (int)POHM_RAW(SYS_fchownat, dirfd, path, uid, gid, flags);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_fchownat, POHM_LD, POHM_LT, uid, gid, flags));
	return r;
}

/* fchmodat(2) (no flags: a final symlink is followed): 0 or -errno. */
static inline int pohm_sys_fchmodat(int dirfd, const char *path, mode_t mode)
{
	int r = (int)POHM_RAW(SYS_fchmodat, dirfd, path, mode);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_fchmodat, POHM_LD, POHM_LT, mode));
	return r;
}

/* fchown(2): 0 or -errno. */
static inline int pohm_sys_fchown(int fd, uid_t uid, gid_t gid)
{
	return (int)POHM_RAW(SYS_fchown, fd, uid, gid);
}

/* utimensat(2) (tv: struct timespec[2]; path NULL: the file of dirfd
 * itself; flags: AT_SYMLINK_NOFOLLOW): 0 or -errno. */
static inline int pohm_sys_utimensat(int dirfd, const char *path, const struct timespec *tv,
				     int flags)
{
	int r = (int)POHM_RAW(SYS_utimensat, dirfd, path, tv, flags);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_utimensat, POHM_LD, POHM_LT, tv, flags));
	return r;
}

/* sync_file_range(2) of n bytes at off (flags: SYNC_FILE_RANGE_*): 0 or -errno. */
static inline int pohm_sys_sync_file_range(int fd, off_t off, off_t n, unsigned flags)
{
	return (int)POHM_RAW(SYS_sync_file_range, fd, off, n, flags);
}

/* fallocate(2) of len bytes at off (mode: 0 or FALLOC_FL_*): 0 or -errno
 * (-EOPNOTSUPP where the file system has none). */
static inline int pohm_sys_fallocate(int fd, int mode, off_t off, off_t len)
{
	return (int)POHM_RAW(SYS_fallocate, fd, mode, off, len);
}

/* readlinkat(2) into buf, not NUL-terminated: the target's length (n:
 * possibly cut) or -errno. */
static inline ssize_t pohm_sys_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	ssize_t r = (ssize_t)POHM_RAW(SYS_readlinkat, dirfd, path, buf, n);

	POHM_SYS_LONG(r, dirfd, path, (ssize_t)POHM_RAW(SYS_readlinkat, POHM_LD, POHM_LT, buf, n));
	return r;
}

/* fstatfs(2): 0 or -errno. */
static inline int pohm_sys_fstatfs(int fd, struct statfs *sfs)
{
	return (int)POHM_RAW(SYS_fstatfs, fd, sfs);
}

/* One flock(2) (a blocking one may return -EINTR): 0 or -errno. */
static inline int pohm_sys_flock(int fd, int op)
{
	return (int)POHM_RAW(SYS_flock, fd, op);
}

/* One nanosleep(2) of ns nanoseconds; a signal may end it early. */
static inline void pohm_sys_nap_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	(void)POHM_RAW(SYS_nanosleep, &ts);
}

/* gettid(2), getegid(2) (never fail). */
static inline pid_t pohm_sys_gettid(void)
{
	return (pid_t)POHM_RAW(SYS_gettid);
}

static inline gid_t pohm_sys_getegid(void)
{
	return (gid_t)POHM_RAW(SYS_getegid);
}

/* setsid(2): the new session id or -errno. */
static inline pid_t pohm_sys_setsid(void)
{
	return (pid_t)POHM_RAW(SYS_setsid);
}

/* rt_sigaction(2) with the kernel's struct (act or old may be NULL): 0 or -errno. */
static inline int pohm_sys_sigaction(int sig, const struct pohm_ksigaction *act,
				     struct pohm_ksigaction *old)
{
	return (int)POHM_RAW(SYS_rt_sigaction, sig, act, old, sizeof(uint64_t));
}

/* rt_sigprocmask(2) of the calling thread with a 64-bit mask (set or old
 * may be NULL): 0 or -errno. */
static inline int pohm_sys_sigmask(int how, const uint64_t *set, uint64_t *old)
{
	return (int)POHM_RAW(SYS_rt_sigprocmask, how, set, old, sizeof(uint64_t));
}

/*
 * clone(2) without CLONE_VM and with exit signal sig (0: none): a copy of
 * the process like fork(), but with no atfork handlers and no libc state
 * updated (the copy may make only system calls: this file's and sys.c's
 * plain ones).  0 in the copy, the copy's pid in the caller, or -errno.
 */
static inline pid_t pohm_sys_clone_copy(int sig)
{
	return (pid_t)POHM_RAW(SYS_clone, (unsigned long)sig);
}

/* execve(2): returns only on failure, -errno. */
static inline int pohm_sys_execve(const char *path, char *const argv[], char *const envp[])
{
	return (int)POHM_RAW(SYS_execve, path, argv, envp);
}

/* exit(2) of the calling thread only (the copy of pohm_sys_clone_copy has
 * one): no atexit handlers, no stdio flush. */
static inline __attribute__((noreturn)) void pohm_sys_exit_thread(int code)
{
	for (;;)
		(void)POHM_RAW(SYS_exit, code);
}

/* ------------------------------------------------------------ for preload/
 * (issue 20: the calls preload/ still makes with syscall(2), wrapped here so
 * that moving them is mechanical; doc/notes-s12-rawsys.md lists the sites).
 * Memory: a user-space address is below 2^52 on x86-64 and arm64, so a
 * long result < 0 is always -errno. */

/* mmap(2): the address as a long, or -errno. */
static inline long pohm_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return POHM_RAW(SYS_mmap, addr, len, prot, flags, fd, off);
}

/* munmap(2), mprotect(2): 0 or -errno. */
static inline int pohm_sys_munmap(void *addr, size_t len)
{
	return (int)POHM_RAW(SYS_munmap, addr, len);
}

static inline int pohm_sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)POHM_RAW(SYS_mprotect, addr, len, prot);
}

/* mremap(2) (new_addr used with MREMAP_FIXED / MREMAP_DONTUNMAP): the new
 * address as a long, or -errno. */
static inline long pohm_sys_mremap(void *old, size_t old_len, size_t new_len, int flags,
				   void *new_addr)
{
	return POHM_RAW(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

/* getcwd(2), the kernel's: the length with the NUL, or -errno (-ENOENT for
 * a removed cwd; a cwd outside the root reads "(unreachable)/...", so check
 * buf[0] == '/'). */
static inline long pohm_sys_getcwd(char *buf, size_t n)
{
	return POHM_RAW(SYS_getcwd, buf, n);
}

/* One getrandom(2) (flags: GRND_NONBLOCK, ...): bytes or -errno. */
static inline ssize_t pohm_sys_getrandom(void *buf, size_t n, unsigned flags)
{
	return (ssize_t)POHM_RAW(SYS_getrandom, buf, n, flags);
}

/* process_vm_readv(2) (struct iovec arrays): bytes or -errno. */
static inline ssize_t pohm_sys_process_vm_readv(pid_t pid, const void *local, unsigned long nl,
						const void *remote, unsigned long nr)
{
	return (ssize_t)POHM_RAW(SYS_process_vm_readv, pid, local, nl, remote, nr, 0);
}

/* One writev(2) (struct iovec array), no EINTR retry: bytes or -errno. */
static inline ssize_t pohm_sys_writev(int fd, const void *iov, int n)
{
	return (ssize_t)POHM_RAW(SYS_writev, fd, iov, n);
}

/* statx(2) into *sx (a struct statx): 0 or -errno. */
static inline int pohm_sys_statx(int dirfd, const char *path, int flags, unsigned mask, void *sx)
{
	int r = (int)POHM_RAW(SYS_statx, dirfd, path, flags, mask, sx);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_statx, POHM_LD, POHM_LT, flags, mask, sx));
	return r;
}

/* memfd_create(2) (flags: MFD_CLOEXEC, ...): fd (not moved high) or -errno. */
static inline int pohm_sys_memfd_create(const char *name, unsigned flags)
{
	return (int)POHM_RAW(SYS_memfd_create, name, flags);
}

/* wait4(2) with options (__WCLONE, WNOHANG, ...), retrying EINTR; status may
 * be NULL: the pid reaped (0 with WNOHANG and none ready) or -errno. */
static inline pid_t pohm_sys_wait4(pid_t pid, int *status, int options)
{
	long r;

	do
		r = POHM_RAW(SYS_wait4, pid, status, options);
	while (r == -EINTR);
	return (pid_t)r;
}

#endif
