/*
 * sys.c — raw system calls for the library's own files and sockets.
 * See sys.h for why nothing here calls the libc wrappers by name.
 */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int pohm_sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int r = (int)POHM_RAW(SYS_openat, dirfd, path, flags | O_CLOEXEC, mode);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_openat, POHM_LD, POHM_LT, flags | O_CLOEXEC, mode));
	return r;
}

int pohm_sys_move_high(int fd)
{
	long nfd;

	if (fd < 0 || fd >= POHM_FD_BASE)
		return fd;
	nfd = POHM_RAW(SYS_fcntl, fd, F_DUPFD_CLOEXEC, POHM_FD_BASE);
	if (nfd < 0) {
		/* Out of high numbers (tight RLIMIT_NOFILE): keep the low fd, cloexec. */
		POHM_RAW(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
		return fd;
	}
	POHM_RAW(SYS_close, fd);
	return (int)nfd;
}

int pohm_sys_open_high(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd = pohm_sys_openat(dirfd, path, flags, mode);

	return fd < 0 ? fd : pohm_sys_move_high(fd);
}

int pohm_sys_close(int fd)
{
	return (int)POHM_RAW(SYS_close, fd);
}

ssize_t pohm_sys_read(int fd, void *buf, size_t n)
{
	long r;

	do
		r = POHM_RAW(SYS_read, fd, buf, n);
	while (r == -EINTR);
	return r;
}

ssize_t pohm_sys_write(int fd, const void *buf, size_t n)
{
	long r;

	do
		r = POHM_RAW(SYS_write, fd, buf, n);
	while (r == -EINTR);
	return r;
}

ssize_t pohm_sys_read_full(int fd, void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pohm_sys_read(fd, (char *)buf + done, n - done);

		if (r < 0)
			return r;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t pohm_sys_write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pohm_sys_write(fd, (const char *)buf + done, n - done);

		if (r < 0)
			return r;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

off_t pohm_sys_lseek(int fd, off_t off, int whence)
{
	return (off_t)POHM_RAW(SYS_lseek, fd, off, whence);
}

ssize_t pohm_sys_pread_full(int fd, void *buf, size_t n, off_t off)
{
	size_t done = 0;

	while (done < n) {
		long r = POHM_RAW(SYS_pread64, fd, (char *)buf + done, n - done, off + (off_t)done);

		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t pohm_sys_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	size_t done = 0;

	while (done < n) {
		long r = POHM_RAW(SYS_pwrite64, fd, (const char *)buf + done, n - done,
				  off + (off_t)done);

		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int pohm_sys_fstat(int fd, struct stat *st)
{
	return (int)POHM_RAW(SYS_fstat, fd, st);
}

int pohm_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	int r = (int)POHM_RAW(SYS_newfstatat, dirfd, path, st, flags);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_newfstatat, POHM_LD, POHM_LT, st, flags));
	return r;
}

int pohm_sys_fsync(int fd)
{
	return (int)POHM_RAW(SYS_fsync, fd);
}

int pohm_sys_ftruncate(int fd, off_t len)
{
	return (int)POHM_RAW(SYS_ftruncate, fd, len);
}

int pohm_sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	int r = (int)POHM_RAW(SYS_mkdirat, dirfd, path, mode);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_mkdirat, POHM_LD, POHM_LT, mode));
	return r;
}

int pohm_sys_unlinkat(int dirfd, const char *path, int flags)
{
	int r = (int)POHM_RAW(SYS_unlinkat, dirfd, path, flags);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_unlinkat, POHM_LD, POHM_LT, flags));
	return r;
}

int pohm_sys_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	int r = (int)POHM_RAW(SYS_renameat, olddirfd, oldpath, newdirfd, newpath);

	POHM_SYS_LONG(r, olddirfd, oldpath, (int)POHM_RAW(SYS_renameat, POHM_LD, POHM_LT, newdirfd, newpath));
	POHM_SYS_LONG(r, newdirfd, newpath, pohm_sys_renameat(olddirfd, oldpath, POHM_LD, POHM_LT));
	return r;
}

int pohm_sys_fcntl(int fd, int cmd, long arg)
{
	return (int)POHM_RAW(SYS_fcntl, fd, cmd, arg);
}

static int lock_cmd(int fd, int cmd, off_t off, off_t len, short type)
{
	struct flock fl;
	int r;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = off;
	fl.l_len = len;
	do
		r = pohm_sys_fcntl(fd, cmd, (long)&fl);
	while (r == -EINTR);
	return r;
}

int pohm_sys_lock_range(int fd, off_t off, off_t len, short type, int ofd)
{
	int cmd;

	if (type == F_UNLCK)
		cmd = ofd ? F_OFD_SETLK : F_SETLK;
	else
		cmd = ofd ? F_OFD_SETLKW : F_SETLKW;
	return lock_cmd(fd, cmd, off, len, type);
}

int pohm_sys_trylock_range(int fd, off_t off, off_t len, short type)
{
	int r = lock_cmd(fd, F_SETLK, off, len, type);

	return r == -EACCES ? -EAGAIN : r;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts = { 0, 0 };

	/* clock_gettime is vDSO, not interposed by us, and fails for none of
	 * these ids on any kernel we run on; if one did, 0 (never a garbage
	 * deadline: a boot-clock deadline then never trips, the real one does). */
	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* pohm_sys_once's word: not run, running, running with a waiter, done. */
enum { ONCE_NEW, ONCE_RUNNING, ONCE_WAITED, ONCE_DONE };

void pohm_sys_once(int *once, void (*fn)(void))
{
	int s = __atomic_load_n(once, __ATOMIC_ACQUIRE);

	if (s == ONCE_DONE)
		return;
	if (s == ONCE_NEW &&
	    __atomic_compare_exchange_n(once, &s, ONCE_RUNNING, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		fn();
		if (__atomic_exchange_n(once, ONCE_DONE, __ATOMIC_RELEASE) == ONCE_WAITED)
			POHM_RAW(SYS_futex, once, FUTEX_WAKE_PRIVATE, INT_MAX);
		return;
	}
	/* s: the value the load or the failed exchange saw */
	while (s != ONCE_DONE) {
		if (s == ONCE_RUNNING &&
		    !__atomic_compare_exchange_n(once, &s, ONCE_WAITED, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_ACQUIRE))
			continue;	/* s is the new value */
		/* returns at once (EAGAIN) when the word is no longer WAITED */
		POHM_RAW(SYS_futex, once, FUTEX_WAIT_PRIVATE, ONCE_WAITED, 0);
		s = __atomic_load_n(once, __ATOMIC_ACQUIRE);
	}
}

uint64_t pohm_sys_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t pohm_sys_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t pohm_sys_boot_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

pid_t pohm_sys_getpid(void)
{
	return (pid_t)POHM_RAW(SYS_getpid);
}

/*
 * pohm_sys_pid's page: NULL until the first call maps it, PID_NO_WIPE
 * where the kernel refused MADV_WIPEONFORK.  Set once by the first caller
 * (a compare-and-swap; a loser unmaps its own page); the pid word in the
 * page is written with relaxed atomics by whichever thread finds it 0
 * (they all write the same value).  A fork child inherits the pointer
 * and a zeroed page.
 */
#define PID_NO_WIPE ((pid_t *)1)
static pid_t *pid_page;

static __attribute__((noinline, cold)) pid_t *pid_page_map(void)
{
	long p = POHM_RAW(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t *page = PID_NO_WIPE, *expect = NULL;

	if (p < 0 && p > -4096)
		goto out;
	if (POHM_RAW(SYS_madvise, p, 4096, MADV_WIPEONFORK)) {
		POHM_RAW(SYS_munmap, p, 4096);
		goto out;
	}
	page = (pid_t *)p;
out:
	if (!__atomic_compare_exchange_n(&pid_page, &expect, page, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (page != PID_NO_WIPE)
			POHM_RAW(SYS_munmap, page, 4096);
		page = expect;
	}
	return page;
}

pid_t pohm_sys_pid(void)
{
	pid_t *page = __atomic_load_n(&pid_page, __ATOMIC_ACQUIRE), pid;

	if (__builtin_expect(!page, 0))
		page = pid_page_map();
	if (page == PID_NO_WIPE)
		return pohm_sys_getpid();
	pid = __atomic_load_n(page, __ATOMIC_RELAXED);
	if (__builtin_expect(!pid, 0)) {
		pid = pohm_sys_getpid();
		__atomic_store_n(page, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

/* Weak no-op: only the test programs link the one that kills
 * (tests/progs/hooks/test_kill.c), so no host process can be killed through
 * its environment and the library pays no getenv on these paths. */
__attribute__((weak)) void pohm_sys_test_kill(enum pohm_test_switch s)
{
	(void)s;
}

/* Weak: no switch is on outside a test build (tests/progs/hooks/test_switch.c). */
__attribute__((weak)) const char *pohm_sys_test_switch(enum pohm_test_switch s)
{
	(void)s;
	return NULL;
}

mode_t pohm_sys_umask(void)
{
	char buf[512], *p;
	ssize_t n;
	mode_t um = 0;
	int fd, i;

	fd = pohm_sys_openat(AT_FDCWD, "/proc/self/status", O_RDONLY, 0);
	if (fd >= 0) {
		/* "Name:\t<comm>\nUmask:\t0022\n…": the line is near the top. */
		n = pohm_sys_read_full(fd, buf, sizeof(buf) - 1);
		pohm_sys_close(fd);
		buf[n > 0 ? n : 0] = 0;
		p = strstr(buf, "\nUmask:\t");
		if (p) {
			p += 8;
			for (i = 0; i < 4 && *p >= '0' && *p <= '7'; i++, p++)
				um = (mode_t)(um * 8 + (mode_t)(*p - '0'));
			if (i && *p == '\n')
				return um & 0777;
		}
	}
	/* No /proc (or a kernel before 4.7): set and restore, racing host threads. */
	um = (mode_t)POHM_RAW(SYS_umask, 022);
	POHM_RAW(SYS_umask, um);
	return um & 0777;
}

/*
 * pohm_sys_umask_kept's state: umask_gen counts umask(3) calls (bumped
 * after each real call returns); umask_kept is (generation << 32) |
 * UMASK_VALID | mode, the value read at that generation.  A reader loads
 * the generation before it reads /proc, so a value read before a
 * concurrent umask(3) is tagged with the older generation and never used.
 * Both relaxed/acquire atomics; no lock (a signal handler may call umask).
 */
#define UMASK_VALID 0x80000000u
static uint32_t umask_gen;
static uint64_t umask_kept;
/* pohm_sys_keep_attrs: 0, then 1 for good (relaxed atomics). */
static POHM_START_BSS int keep_attrs;

void pohm_sys_keep_attrs(void)
{
	__atomic_store_n(&keep_attrs, 1, __ATOMIC_RELAXED);
}

int pohm_sys_keeps_attrs(void)
{
	return __atomic_load_n(&keep_attrs, __ATOMIC_RELAXED);
}

mode_t pohm_sys_umask_kept(void)
{
	uint32_t g = __atomic_load_n(&umask_gen, __ATOMIC_ACQUIRE);
	uint64_t k = __atomic_load_n(&umask_kept, __ATOMIC_ACQUIRE);
	mode_t um;

	if (!pohm_sys_keeps_attrs())
		return pohm_sys_umask();
	if ((k & UMASK_VALID) && (uint32_t)(k >> 32) == g)
		return (mode_t)(k & 0777);
	um = pohm_sys_umask();
	__atomic_store_n(&umask_kept, ((uint64_t)g << 32) | UMASK_VALID | um, __ATOMIC_RELEASE);
	return um;
}

void pohm_sys_umask_changed(void)
{
	__atomic_add_fetch(&umask_gen, 1, __ATOMIC_RELEASE);
}

uint64_t pohm_sys_seed(void)
{
	uint64_t x = 0, z;

	if (POHM_RAW(SYS_getrandom, &x, sizeof(x), 1 /* GRND_NONBLOCK */) != (long)sizeof(x))
		x = 0;
	/* Mixed with what differs between processes and threads either way
	 * (splitmix64's finaliser): a failed getrandom still gives each
	 * process its own stream. */
	z = x ^ pohm_sys_real_ns() ^ ((uint64_t)pohm_sys_getpid() << 32) ^
	    ((uint64_t)pohm_sys_gettid() << 48) ^ (uintptr_t)&x;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	return z ? z : 0x9E3779B97F4A7C15ULL;
}

int pohm_sys_birth_ns(int dirfd, const char *path, uint64_t ino, uint64_t *ns)
{
	struct statx sx;

	if (pohm_sys_statx(dirfd, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME | STATX_INO, &sx) ||
	    !(sx.stx_mask & STATX_BTIME) || sx.stx_ino != ino)
		return 0;
	*ns = (uint64_t)sx.stx_btime.tv_sec * 1000000000ULL + sx.stx_btime.tv_nsec;
	return 1;
}

int pohm_sys_fd_path(int fd, char *buf, size_t len)
{
	char link[48];
	long n;

	/* The calling thread's table: a thread that did unshare(CLONE_FILES)
	 * has its own, and /proc/self is the main thread's.  /proc/self/fd
	 * only where thread-self itself is missing (before Linux 3.17), not
	 * when fd is just not open in this thread's table. */
	snprintf(link, sizeof(link), "/proc/thread-self/fd/%d", fd);
	n = pohm_sys_readlinkat(AT_FDCWD, link, buf, len - 1);
	if (n == -ENOENT && pohm_sys_readlinkat(AT_FDCWD, "/proc/thread-self", link, 1) == -ENOENT) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = pohm_sys_readlinkat(AT_FDCWD, link, buf, len - 1);
	}
	if (n < 0)
		return (int)n;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return (int)n;
}

int pohm_sys_open_dir_nolinks(int dirfd, const char *path)
{
#ifdef SYS_openat2
	struct open_how how;

	memset(&how, 0, sizeof(how));
	how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_NO_SYMLINKS;
	return (int)POHM_RAW(SYS_openat2, dirfd, path, &how, sizeof(how));
#else
	return -ENOSYS;
#endif
}

/* One openat2 for rel's parent when each component is one the walk below
 * takes (none empty or over 255 bytes) and no symlink is on the way:
 * the fd, or -1 when the walk must decide (its errors are the contract). */
static int open_parent_at_once(int pfd, const char *rel, const char *last)
{
	char dir[4096];
	const char *p = rel, *slash;
	size_t n = (size_t)(last - rel);
	int fd;

	if (n < 2 || n > sizeof(dir))
		return -1;
	for (; (slash = strchr(p, '/')) && slash < last; p = slash + 1)
		if (slash == p || slash - p >= 256)
			return -1;
	memcpy(dir, rel, n - 1);
	dir[n - 1] = '\0';
	fd = pohm_sys_open_dir_nolinks(pfd, dir);
	return fd >= 0 ? fd : -1;
}

int pohm_sys_open_parent(int pfd, const char *rel, const char **name)
{
	char comp[256];
	const char *p = rel, *slash;
	int dfd = -1, nfd;

	/* Two or more components: one openat2 with no symlink allowed
	 * instead of an openat and a close per component (issue 23); the
	 * component walk when it fails, for its errors. */
	slash = strrchr(rel, '/');
	if (slash && slash[1] && strchr(rel, '/') != slash &&
	    (dfd = open_parent_at_once(pfd, rel, slash + 1)) >= 0) {
		*name = slash + 1;
		return dfd;
	}
	dfd = -1;

	/* The first component straight from pfd, no copy of pfd first
	 * (issue 23: two calls fewer per use); pfd itself only for a name
	 * directly under it. */
	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);

		if (!n || n >= sizeof(comp)) {
			if (dfd >= 0)
				pohm_sys_close(dfd);
			return -EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = pohm_sys_openat(dfd >= 0 ? dfd : pfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
		if (dfd >= 0)
			pohm_sys_close(dfd);
		dfd = nfd;
		p = slash + 1;
		if (dfd < 0) {
			*name = p;
			return dfd;
		}
	}
	*name = p;
	if (!*p) {
		if (dfd >= 0)
			pohm_sys_close(dfd);
		return -EINVAL;
	}
	return dfd >= 0 ? dfd : pohm_sys_openat(pfd, ".", O_PATH | O_DIRECTORY, 0);
}

char *pohm_put_hex(char *o, char *lim, uint64_t x)
{
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[x & 15];
		x >>= 4;
	} while (x);
	while (n && o < lim)
		*o++ = tmp[--n];
	return o;
}

/* ---------------------------------------------------------------- more calls (issue 20) */

int pohm_sys_symlinkat(const char *target, int dirfd, const char *path)
{
	int r = (int)POHM_RAW(SYS_symlinkat, target, dirfd, path);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_symlinkat, target, POHM_LD, POHM_LT));
	return r;
}

int pohm_sys_mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	int r = (int)POHM_RAW(SYS_mknodat, dirfd, path, mode, dev);

	POHM_SYS_LONG(r, dirfd, path, (int)POHM_RAW(SYS_mknodat, POHM_LD, POHM_LT, mode, dev));
	return r;
}

int pohm_sys_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
		    int flags)
{
	int r = (int)POHM_RAW(SYS_linkat, olddirfd, oldpath, newdirfd, newpath, flags);

	POHM_SYS_LONG(r, olddirfd, oldpath, (int)POHM_RAW(SYS_linkat, POHM_LD, POHM_LT, newdirfd, newpath, flags));
	POHM_SYS_LONG(r, newdirfd, newpath, pohm_sys_linkat(olddirfd, oldpath, POHM_LD, POHM_LT, flags));
	return r;
}

int pohm_sys_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
		       unsigned flags)
{
	int r = (int)POHM_RAW(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);

	POHM_SYS_LONG(r, olddirfd, oldpath, (int)POHM_RAW(SYS_renameat2, POHM_LD, POHM_LT, newdirfd, newpath, flags));
	POHM_SYS_LONG(r, newdirfd, newpath, pohm_sys_renameat2(olddirfd, oldpath, POHM_LD, POHM_LT, flags));
	return r;
}

ssize_t pohm_sys_getdents64(int fd, void *buf, size_t n)
{
	return POHM_RAW(SYS_getdents64, fd, buf, n);
}

int pohm_sys_close_range(unsigned first, unsigned last, unsigned flags)
{
	return (int)POHM_RAW(SYS_close_range, first, last, flags);
}

ssize_t pohm_sys_listxattr(int fd, const char *path, int follow, char *buf, size_t n)
{
	long r;

	if (fd >= 0)
		r = POHM_RAW(SYS_flistxattr, fd, buf, n);
	else
		r = POHM_RAW(follow ? SYS_listxattr : SYS_llistxattr, path, buf, n);
	return r;
}

ssize_t pohm_sys_getxattr(int fd, const char *path, int follow, const char *name, void *buf,
			  size_t n)
{
	long r;

	if (fd >= 0)
		r = POHM_RAW(SYS_fgetxattr, fd, name, buf, n);
	else
		r = POHM_RAW(follow ? SYS_getxattr : SYS_lgetxattr, path, name, buf, n);
	return r;
}

int pohm_sys_setxattr(int fd, const char *path, int follow, const char *name, const void *value,
		      size_t len, int flags)
{
	long r;

	if (fd >= 0)
		r = POHM_RAW(SYS_fsetxattr, fd, name, value, len, flags);
	else
		r = POHM_RAW(follow ? SYS_setxattr : SYS_lsetxattr, path, name, value, len, flags);
	return (int)r;
}

int pohm_sys_removexattr(int fd, const char *path, int follow, const char *name)
{
	long r;

	if (fd >= 0)
		r = POHM_RAW(SYS_fremovexattr, fd, name);
	else
		r = POHM_RAW(follow ? SYS_removexattr : SYS_lremovexattr, path, name);
	return (int)r;
}

int pohm_sys_socket(int domain, int type, int protocol)
{
	return (int)POHM_RAW(SYS_socket, domain, type, protocol);
}

int pohm_sys_connect(int fd, const void *addr, unsigned addrlen)
{
	return (int)POHM_RAW(SYS_connect, fd, addr, addrlen);
}

int pohm_sys_setsockopt(int fd, int level, int name, const void *val, unsigned len)
{
	return (int)POHM_RAW(SYS_setsockopt, fd, level, name, val, len);
}

int pohm_sys_getsockopt(int fd, int level, int name, void *val, unsigned *len)
{
	return (int)POHM_RAW(SYS_getsockopt, fd, level, name, val, len);
}

int pohm_sys_ppoll(void *fds, unsigned long n, const struct timespec *ts)
{
	/* 8: the kernel's sigset size (the mask is NULL, but the size is checked). */
	return (int)POHM_RAW(SYS_ppoll, fds, n, ts, NULL, (size_t)8);
}

ssize_t pohm_sys_sendmsg(int fd, const void *msg, int flags)
{
	return POHM_RAW(SYS_sendmsg, fd, msg, flags);
}

int pohm_sys_eventfd(unsigned initval, int flags)
{
	return (int)POHM_RAW(SYS_eventfd2, initval, flags);
}
