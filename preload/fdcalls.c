/*
 * fdcalls.c — calls that create or destroy fd numbers: close, close_range,
 * closefrom, dup, dup2, dup3, fcntl(F_DUPFD*).  They keep the fd table
 * right, give the storage its push at close (pohm_hook_close, before the
 * real close, while the fd still reads), and keep the library's internal
 * fds alive in hosts that close or dup2 onto fds they never opened:
 * close of one fails EBADF as if it were not open, close_range and
 * closefrom close around them (and around core's unregistered ones,
 * fdkeep.c), dup2/dup3 onto one move it aside first.
 */
#include "shim.h"
#include "fdkeep.h"

#include <stdarg.h>

/* An fd that may be internal or in the table. */
__attribute__((noinline)) static int close_slow(int fd)
{
	struct pohm_fdsnap snap;
	struct pohm_fd_info fi;
	int r, hr = 0;

	pohm_init();
	if (__builtin_expect(pohm_ifd_maybe(fd), 0) && !pohm_depth && pohm_ifd_is(fd))
		return pohm_ret(-EBADF);
	if (!pohm_active() || !pohm_fd_known(fd))
		return pohm_real.close(fd);
	if (pohm_fd_take(fd, &snap, &fi))
		hr = pohm_hook_close(fd, &fi);
	r = pohm_real.close(fd);
	pohm_fd_release(&snap);
	if (r == 0 && hr < 0)
		return pohm_ret(hr);
	return r;
}

/* The common case (an fd of the program's, not in the table) tail-calls libc. */
POHM_EXPORT int close(int fd)
{
	if (__builtin_expect(pohm_fd_plain(fd), 1))
		return pohm_real.close(fd);
	return close_slow(fd);
}

#define KEEP_MAX 256

/*
 * close_range [lo, hi] around the library's fds (fdkeep.c).  open_end:
 * the range is "everything from lo" (closefrom), whose last piece goes to
 * libc's closefrom (it has a fallback where close_range is missing).
 */
static int close_around(unsigned lo, unsigned hi, int flags, int open_end)
{
	int keep[KEEP_MAX], n, i, r;

	n = pohm_fdkeep_collect(lo, hi, keep, KEEP_MAX);
	for (i = 0; i < n; i++) {
		if ((unsigned)keep[i] > lo &&
		    (r = pohm_real.close_range(lo, (unsigned)keep[i] - 1, flags)) < 0)
			return r;
		if ((unsigned)keep[i] == hi)
			return 0;
		lo = (unsigned)keep[i] + 1;
	}
	if (open_end) {
		pohm_real.closefrom((int)lo);
		return 0;
	}
	return pohm_real.close_range(lo, hi, flags);
}

/* Before a close_range: the close hook of every fd under the prefix in
 * [lo, hi] (shim.h).  Here, not in fd.c: the table sits below the hooks. */
void pohm_fd_close_hooks(unsigned lo, unsigned hi)
{
	int max = __atomic_load_n(&pohm_fdt_max, __ATOMIC_RELAXED), fd;
	struct pohm_fd_info fi;

	if (max < 0 || lo > (unsigned)max)
		return;
	if (hi > (unsigned)max)
		hi = (unsigned)max;
	for (fd = (int)lo; fd <= (int)hi; fd++)
		if (pohm_fd_lookup(fd, &fi))
			pohm_hook_close(fd, &fi);
}

POHM_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
	int r;

	pohm_init();
	if (pohm_depth || lo > hi || (flags & ~(CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE)))
		return pohm_real.close_range(lo, hi, flags);
	if (flags & CLOSE_RANGE_CLOEXEC)	/* ours are close-on-exec already */
		return pohm_real.close_range(lo, hi, flags);
	if (pohm_active())
		pohm_fd_close_hooks(lo, hi);
	r = close_around(lo, hi, flags, 0);
	if (r == 0)
		pohm_fd_forget_range(lo, hi);
	return r;
}

POHM_EXPORT void closefrom(int lo)
{
	unsigned from = lo < 0 ? 0 : (unsigned)lo;

	pohm_init();
	if (pohm_depth) {
		pohm_real.closefrom(lo);
		return;
	}
	if (pohm_active())
		pohm_fd_close_hooks(from, ~0u);
	close_around(from, ~0u, 0, 1);
	pohm_fd_forget_range(from, ~0u);
}

POHM_EXPORT int dup(int fd)
{
	int r;

	pohm_init();
	if (!pohm_depth && pohm_ifd_is(fd))
		return pohm_ret(-EBADF);
	r = pohm_real.dup(fd);
	if (r >= 0 && pohm_active())
		pohm_fd_dup(fd, r);
	return r;
}

/* dup2 and dup3 onto newfd: the close hook of what newfd was, internal fds aside. */
static int dup_onto(int oldfd, int newfd, int flags, int three)
{
	struct pohm_fdsnap snap;
	struct pohm_fd_info fi;
	int r, saved, moved = 0;

	if (pohm_depth || oldfd == newfd || newfd < 0)
		goto real;
	if (pohm_ifd_is(oldfd))
		return pohm_ret(-EBADF);
	if (pohm_ifd_is(newfd) && (moved = pohm_ifd_evict(newfd)) < 0)
		return pohm_ret(moved);
	if (!pohm_active())
		goto moved_real;
	if (pohm_fd_take(newfd, &snap, &fi))
		pohm_hook_close(newfd, &fi);
	r = three ? pohm_real.dup3(oldfd, newfd, flags) : pohm_real.dup2(oldfd, newfd);
	if (r < 0) {
		saved = errno;
		pohm_fd_put(newfd, &snap);	/* nothing was replaced */
		if (moved)
			pohm_sys_close(newfd);
		errno = saved;
		return r;
	}
	pohm_fd_release(&snap);
	pohm_fd_dup(oldfd, newfd);
	return r;
moved_real:
	r = three ? pohm_real.dup3(oldfd, newfd, flags) : pohm_real.dup2(oldfd, newfd);
	if (r < 0 && moved) {
		/* Ours moved away; the host must not find the old number open. */
		saved = errno;
		pohm_sys_close(newfd);
		errno = saved;
	}
	return r;
real:
	return three ? pohm_real.dup3(oldfd, newfd, flags) : pohm_real.dup2(oldfd, newfd);
}

POHM_EXPORT int dup2(int oldfd, int newfd)
{
	return dup_onto(oldfd, newfd, 0, 0);
}

POHM_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	return dup_onto(oldfd, newfd, flags, 1);
}

/* The argument is read as glibc reads it: one pointer-sized word. */
POHM_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	int r;

	pohm_init();
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	r = pohm_real.fcntl(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && pohm_active())
		pohm_fd_dup(fd, r);
	return r;
}

POHM_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	int r;

	pohm_init();
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	r = pohm_real.fcntl64(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && pohm_active())
		pohm_fd_dup(fd, r);
	return r;
}
