/*
 * open.c — the open family: open/open64/openat/openat64, the fortified
 * __open_2 names, creat/creat64, and name_to_handle_at.
 *
 * Every open funnels into do_open: classify; outside the prefix call libc
 * and keep the fd table honest (forget a stale entry, or record an
 * ancestor of the prefix, which later *at calls may walk down from);
 * under it, the open hook with the real call inside and record the fd.
 * The mode argument is read whenever the flags need one (O_CREAT or
 * O_TMPFILE), and va_end is called on every path.
 */
#include "shim.h"

#include <stdarg.h>

static int needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static int open_outside_failed(int dirfd, const char *path, int flags, mode_t mode);

/* The wrapper's own open, for pohm_hook_open (hooks.h struct pohm_real_call). */
struct real_open {
	int dirfd;
	const char *path;
	int flags;
	mode_t mode;
	int fd;		/* what it opened, -1 if nothing */
};

static int real_open(void *v)
{
	struct real_open *x = v;

	return x->fd = pohm_sysret(pohm_real.openat(x->dirfd, x->path, x->flags, x->mode));
}

/* The same open by name in dirfd, more flags or'ed in (a new file's open
 * at its held parent: core/mount procopen.c). */
static int real_open_at(void *v, int dirfd, const char *name, int more)
{
	struct real_open *x = v;

	return x->fd = pohm_sysret(pohm_real.openat(dirfd, name, x->flags | more, x->mode));
}

/* Under the prefix, or needing the full classifier: the open hook around libc.
 * A path that resolved into the prefix (open_outside_failed) comes back with
 * retried set, so that it is never retried twice. */
__attribute__((noinline)) static int open_slow_at(int dirfd, const char *path, int flags,
						  mode_t mode, int retried)
{
	struct pohm_fd_info fi;
	struct real_open x;
	struct pohm_where w;
	struct pohm_path p;
	int fd, r;

	if (!needs_mode(flags))
		mode = 0;	/* not passed: the entry point's register is garbage */
	if (!pohm_active()) {	/* init just ran and found no prefix, or the shim's own call */
		fd = pohm_real.openat(dirfd, path, flags, mode);
		if (pohm_busy) {	/* a signal handler interrupted the shim: no table */
			if (fd >= 0 && (flags & (O_CREAT | O_TRUNC | O_ACCMODE)))
				pohm_sig_note_op('W', dirfd, path, AT_FDCWD, NULL);
			return fd;
		}
		if (pohm_fd_known(fd))
			pohm_fd_forget(fd);
		return fd;
	}
	if (pohm_locate(dirfd, path, 0, &p, &w) != POHM_PC_IN) {
		if ((fd = pohm_mounttab_open(path, flags)) >= 0)
			return fd;	/* a mount table, with the prefix's line */
		fd = pohm_real.openat(dirfd, path, flags, mode);
		if (fd < 0 && !retried)
			return open_outside_failed(dirfd, path, flags, mode);
		pohm_fd_opened(fd, &p, &w, NULL);
		return fd;
	}
	fi.cookie = 0;
	fi.flags = pohm_fd_flags_of(flags);
	x = (struct real_open){ dirfd, path, flags, mode, -1 };
	r = pohm_hook_open(&p, flags, mode, &fi,
			   &(struct pohm_real_call){ real_open, &x, real_open_at });
	if (r < 0 && x.fd >= 0)
		pohm_sys_close(x.fd);
	pohm_fd_opened(r, &p, &w, &fi);
	return pohm_ret(r);
}

static int open_slow(int dirfd, const char *path, int flags, mode_t mode)
{
	return open_slow_at(dirfd, path, flags, mode, 0);
}

/*
 * An open of a path outside the prefix failed.  EACCES (a user) or ENXIO
 * (root) may come from a stub (core/cache/stub.h: a mode-000 socket inode)
 * reached through a symlink outside the prefix that leads into it
 * (DESIGN.md §2 step 1: classification is lexical, so such a path is noticed
 * only now): the resolved path is retried as a prefix path.  Any other
 * failure, or a path that resolves outside, keeps libc's answer and errno.
 */
__attribute__((noinline, cold)) static int open_outside_failed(int dirfd, const char *path,
							      int flags, mode_t mode)
{
	char real[PATH_MAX];
	int e = errno, fd;

	if ((e == EMFILE || e == ENFILE) && pohm_state.on && !pohm_depth && pohm_proc_fds_relief()) {
		fd = pohm_real.openat(dirfd, path, flags, mode);	/* a kept fd given back */
		if (fd >= 0)
			return fd;
		e = errno;
	}
	if ((e == EACCES || e == ENXIO) && pohm_state.on && !pohm_depth && (dirfd == AT_FDCWD || path[0] == '/') &&
	    pohm_real.realpath(path, real) && !pohm_pass(AT_FDCWD, real))
		return open_slow_at(AT_FDCWD, real, flags, mode, 1);
	errno = e;
	return -1;
}

/*
 * After libc's open of a path outside the prefix, when the fd is not plain:
 * a failure (maybe EACCES through an outside symlink), or a number whose
 * stale entry (closed behind our back) must go.
 */
__attribute__((noinline)) static int open_outside_done(int fd, int dirfd, const char *path,
						       int flags, mode_t mode)
{
	if (fd < 0)
		return open_outside_failed(dirfd, path, flags, mode);
	if (pohm_fd_known(fd))
		pohm_fd_forget(fd);
	return fd;
}

/* Every open funnels here; the common case (outside) stays in the wrapper's
 * frame, inlined into each: one compare after libc's call covers both a
 * failure and a number the table may know. */
static inline __attribute__((always_inline)) int do_open(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd;

	if (!pohm_pass(dirfd, path))
		return open_slow(dirfd, path, flags, mode);
	fd = pohm_real.openat(dirfd, path, flags, mode);
	if (__builtin_expect(pohm_fd_plain(fd), 1))
		return fd;
	return open_outside_done(fd, dirfd, path, flags, mode);
}

#if defined(__x86_64__) || defined(__aarch64__)
/*
 * glibc declares open and openat variadic.  On x86-64 and aarch64 a
 * variadic call passes its third (fourth) argument exactly where a named
 * one goes, so these entry points take the mode as a named parameter under
 * their assembler names: no va_list frame on the hot path (about 15
 * instructions a call).  Without O_CREAT or O_TMPFILE the register holds
 * whatever the caller left there: libc and the kernel ignore it then, and
 * open_slow_at sets it to 0 before the shim looks at it.
 */
#define OPEN_ENTRY(name, c_name, lfs)                                                   \
	POHM_EXPORT int c_name(const char *path, int flags, mode_t mode) __asm__(#name); \
	POHM_EXPORT int c_name(const char *path, int flags, mode_t mode)                 \
	{                                                                                \
		return do_open(AT_FDCWD, path, flags | (lfs), mode);                     \
	}
#define OPENAT_ENTRY(name, c_name, lfs)                                                          \
	POHM_EXPORT int c_name(int dirfd, const char *path, int flags, mode_t mode) __asm__(#name); \
	POHM_EXPORT int c_name(int dirfd, const char *path, int flags, mode_t mode)                 \
	{                                                                                           \
		return do_open(dirfd, path, flags | (lfs), mode);                                   \
	}
#else
/* Elsewhere the portable way: va_arg only when the flags say there is one
 * (last: the parameter before the "..."). */
#define VA_MODE(flags, last)                         \
	({                                           \
		mode_t mode_ = 0;                    \
		va_list ap_;                         \
                                                     \
		if (needs_mode(flags)) {             \
			va_start(ap_, last);         \
			mode_ = va_arg(ap_, mode_t); \
			va_end(ap_);                 \
		}                                    \
		mode_;                               \
	})
#define OPEN_ENTRY(name, c_name, lfs)                                                 \
	POHM_EXPORT int name(const char *path, int flags, ...)                        \
	{                                                                             \
		return do_open(AT_FDCWD, path, flags | (lfs), VA_MODE(flags, flags)); \
	}
#define OPENAT_ENTRY(name, c_name, lfs)                                            \
	POHM_EXPORT int name(int dirfd, const char *path, int flags, ...)          \
	{                                                                          \
		return do_open(dirfd, path, flags | (lfs), VA_MODE(flags, flags)); \
	}
#endif

OPEN_ENTRY(open, pohm_open_entry, 0)
OPEN_ENTRY(open64, pohm_open64_entry, O_LARGEFILE)
OPENAT_ENTRY(openat, pohm_openat_entry, 0)
OPENAT_ENTRY(openat64, pohm_openat64_entry, O_LARGEFILE)

/*
 * _FORTIFY_SOURCE entry points, called when the compiler saw no mode: a
 * call that needs one goes to libc, which aborts as it would without us.
 */
POHM_EXPORT int __open_2(const char *path, int flags)
{
	pohm_init();
	if (needs_mode(flags))
		return pohm_real.__open_2(path, flags);
	return do_open(AT_FDCWD, path, flags, 0);
}

POHM_EXPORT int __open64_2(const char *path, int flags)
{
	pohm_init();
	if (needs_mode(flags))
		return pohm_real.__open64_2(path, flags);
	return do_open(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}

POHM_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	pohm_init();
	if (needs_mode(flags))
		return pohm_real.__openat_2(dirfd, path, flags);
	return do_open(dirfd, path, flags, 0);
}

POHM_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	pohm_init();
	if (needs_mode(flags))
		return pohm_real.__openat64_2(dirfd, path, flags);
	return do_open(dirfd, path, flags | O_LARGEFILE, 0);
}

POHM_EXPORT int creat(const char *path, mode_t mode)
{
	return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

POHM_EXPORT int creat64(const char *path, mode_t mode)
{
	return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}

POHM_EXPORT int name_to_handle_at(int dirfd, const char *path, struct file_handle *h,
				  int *mount_id, int flags)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at_ro(dirfd, path, flags, &p))
		return pohm_real.name_to_handle_at(dirfd, path, h, mount_id, flags);
	r = pohm_hook_lookup(POHM_PL_HANDLE, &p, flags);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.name_to_handle_at(dirfd, path, h, mount_id, flags));
	return pohm_ret(r);
}
