/*
 * stdio.c — streams and names libc makes itself: fopen/fopen64, freopen
 * (+64), fdopen, fclose, tmpfile (+64), the mkstemp family, mkdtemp, mktemp.
 * (realpath is in realpath.c.)
 *
 * fopen, freopen, fclose, mkstemp and mkdtemp open and close fds inside
 * glibc, with no interposable call, so these wrappers do what the open
 * and close wrappers would: the open hooks around fopen (with the open
 * flags its mode string means), the close hook before fclose (after
 * flushing the stream, so the push sees its last bytes), and for mkstemp
 * the mktemp hook, which makes glibc's loop itself and adopts the name it
 * chose.  mkdtemp is our own loop on top of the mkdir wrapper.
 *
 * Sections: fopen family; fclose; temporary files.
 */
#include "shim.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"

/* ------------------------------------------------------------ fopen family */

/* The open(2) flags of an fopen mode string, as glibc reads it. */
static int mode_flags(const char *mode)
{
	int f;

	switch (*mode) {
	case 'w':
		f = O_WRONLY | O_CREAT | O_TRUNC;
		break;
	case 'a':
		f = O_WRONLY | O_CREAT | O_APPEND;
		break;
	default:
		f = O_RDONLY;
		break;
	}
	for (mode++; *mode && *mode != ','; mode++) {
		if (*mode == '+')
			f = (f & ~O_ACCMODE) | O_RDWR;
		else if (*mode == 'x')
			f |= O_EXCL;
		else if (*mode == 'e')
			f |= O_CLOEXEC;
	}
	return f;
}

/* fopen/fopen64 (which = 0/1), freopen/freopen64 (2/3, reopening old). */
static FILE *real_fopen(int which, const char *path, const char *mode, FILE *old)
{
	switch (which) {
	case 0:
		return pohm_real.fopen(path, mode);
	case 1:
		return pohm_real.fopen64(path, mode);
	case 2:
		return pohm_real.freopen(path, mode, old);
	default:
		return pohm_real.freopen64(path, mode, old);
	}
}

/* The wrapper's own fopen or freopen, for pohm_hook_open: its fd, or -errno. */
struct real_fopen_arg {
	int which;
	const char *path, *mode;
	FILE *old;
	FILE *f;	/* what it opened, NULL if nothing */
};

static int real_fopen_call(void *v)
{
	struct real_fopen_arg *x = v;

	x->f = real_fopen(x->which, x->path, x->mode, x->old);
	return x->f ? fileno(x->f) : -errno;
}

/* The open hook around fopen and freopen. */
static FILE *do_fopen(int which, const char *path, const char *mode, FILE *old)
{
	struct pohm_fd_info fi = { 0, 0 };
	struct real_fopen_arg x = { which, path, mode, old, NULL };
	struct pohm_where w;
	struct pohm_path p;
	FILE *f = NULL;
	int flags, fd = -1, r;

	if (pohm_locate(AT_FDCWD, path, 0, &p, &w) != POHM_PC_IN) {
		/* A mount table, with the prefix's line (mounttab.c): fopen only. */
		if (which < 2 && (fd = pohm_mounttab_open(path, mode_flags(mode))) >= 0) {
			if ((f = pohm_real.fdopen(fd, mode)))
				return f;
			pohm_sys_close(fd);
		}
		f = real_fopen(which, path, mode, old);
		if (f)
			pohm_fd_opened(fileno(f), &p, &w, NULL);
		return f;
	}
	flags = mode_flags(mode);
	fi.flags = pohm_fd_flags_of(flags);
	r = pohm_hook_open(&p, flags, 0666, &fi, &(struct pohm_real_call){ real_fopen_call, &x, NULL });
	f = x.f;
	if (r < 0 && f) {
		pohm_real.fclose(f);
		f = NULL;
	}
	pohm_fd_opened(r, &p, &w, &fi);
	if (!f)
		errno = -r;
	return f;
}

/* A path certainly outside: libc's fopen, and a stale entry of the new fd dropped. */
static FILE *fopen_outside(FILE *f)
{
	if (f)
		pohm_fd_opened_outside(fileno(f));
	return f;
}

POHM_EXPORT FILE *fopen(const char *path, const char *mode)
{
	if (pohm_pass(AT_FDCWD, path))
		return fopen_outside(pohm_real.fopen(path, mode));
	if (!pohm_active())
		return pohm_real.fopen(path, mode);
	return do_fopen(0, path, mode, NULL);
}

POHM_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	if (pohm_pass(AT_FDCWD, path))
		return fopen_outside(pohm_real.fopen64(path, mode));
	if (!pohm_active())
		return pohm_real.fopen64(path, mode);
	return do_fopen(1, path, mode, NULL);
}

/* Before glibc closes the stream's old fd: flush, then the close hook. */
static void stream_closing(FILE *f)
{
	struct pohm_fdsnap snap;
	struct pohm_fd_info fi;
	int fd = fileno(f), saved = errno;

	if (fd >= 0 && pohm_fd_take(fd, &snap, &fi)) {
		fflush(f);
		pohm_hook_close(fd, &fi);
	}
	pohm_fd_release(&snap);
	errno = saved;
}

/* freopen(NULL, mode, f) changes the mode of the same fd: nothing to track. */
POHM_EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
	if (!pohm_active() || !pohm_launder(path) || !f)
		return pohm_real.freopen(path, mode, f);
	stream_closing(f);
	return do_fopen(2, path, mode, f);
}

POHM_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	if (!pohm_active() || !pohm_launder(path) || !f)
		return pohm_real.freopen64(path, mode, f);
	stream_closing(f);
	return do_fopen(3, path, mode, f);
}

POHM_EXPORT FILE *fdopen(int fd, const char *mode)
{
	pohm_init();
	return pohm_real.fdopen(fd, mode);
}

/* ------------------------------------------------------------ fclose */

POHM_EXPORT int fclose(FILE *f)
{
	struct pohm_fdsnap snap;
	struct pohm_fd_info fi;
	int fd, r, ferr = 0, hr = 0;

	if (!pohm_active() || !f)
		return pohm_real.fclose(f);
	fd = fileno(f);
	if (fd < 0 || !pohm_fd_take(fd, &snap, &fi)) {
		pohm_fd_release(&snap);
		return pohm_real.fclose(f);
	}
	if (fflush(f) == EOF)
		ferr = errno;
	hr = pohm_hook_close(fd, &fi);
	r = pohm_real.fclose(f);
	pohm_fd_release(&snap);
	if (r == 0 && ferr)
		return errno = ferr, EOF;
	if (r == 0 && hr < 0)
		return errno = -hr, EOF;
	return r;
}

/* ------------------------------------------------------------ temporary files */

/* tmpfile uses O_TMPFILE or an unlinked name in P_tmpdir: never a name in the storage. */
POHM_EXPORT FILE *tmpfile(void)
{
	FILE *f;

	pohm_init();
	f = pohm_real.tmpfile();
	if (f && pohm_active())
		pohm_fd_forget(fileno(f));
	return f;
}

POHM_EXPORT FILE *tmpfile64(void)
{
	FILE *f;

	pohm_init();
	f = pohm_real.tmpfile64();
	if (f && pohm_active())
		pohm_fd_forget(fileno(f));
	return f;
}

/*
 * The mkstemp family's own libc call: which 0 mkstemp, 1 mkostemp,
 * 2 mkstemps, 3 mkostemps (64 or not).  The fd, or -1 and errno.
 */
struct real_mkstemp_arg {
	int which, is64;
	char *tmpl;
	int suffix, flags;
	int fd;		/* what it opened, -1 if nothing */
};

static int real_mkstemp(const struct real_mkstemp_arg *x)
{
	switch (x->which) {
	case 0:
		return x->is64 ? pohm_real.mkstemp64(x->tmpl) : pohm_real.mkstemp(x->tmpl);
	case 1:
		return x->is64 ? pohm_real.mkostemp64(x->tmpl, x->flags) :
				 pohm_real.mkostemp(x->tmpl, x->flags);
	case 2:
		return x->is64 ? pohm_real.mkstemps64(x->tmpl, x->suffix) :
				 pohm_real.mkstemps(x->tmpl, x->suffix);
	default:
		return x->is64 ? pohm_real.mkostemps64(x->tmpl, x->suffix, x->flags) :
				 pohm_real.mkostemps(x->tmpl, x->suffix, x->flags);
	}
}

/* The same for pohm_hook_mktemp (hooks.h struct pohm_real_call): the fd or -errno. */
static int real_mkstemp_call(void *v)
{
	struct real_mkstemp_arg *x = v;

	x->fd = real_mkstemp(x);
	return x->fd >= 0 ? x->fd : -errno;
}

/*
 * The mkstemp family: under the prefix one hook call, pohm_hook_mktemp,
 * which makes glibc's own loop itself between the storage's halves (the
 * template's directory made local; the file it made adopted).
 */
static int do_mkstemp(int which, int is64, char *tmpl, int suffix, int flags)
{
	struct real_mkstemp_arg x = { which, is64, tmpl, suffix, flags, -1 };
	struct pohm_fd_info fi = { 0, POHM_FD_WRITE };
	struct pohm_where w;
	struct pohm_path p;
	int fd, r;

	if (!pohm_active() || pohm_locate(AT_FDCWD, tmpl, 0, &p, &w) != POHM_PC_IN) {
		fd = real_mkstemp(&x);
		if (fd >= 0 && pohm_active())
			pohm_fd_forget(fd);
		return fd;
	}
	r = pohm_hook_mktemp(&p, O_RDWR | O_CREAT | O_EXCL | flags, &fi,
			     &(struct pohm_real_call){ real_mkstemp_call, &x, NULL });
	if (r < 0 && x.fd >= 0)
		pohm_real.close(x.fd);
	if (r >= 0)
		pohm_locate(AT_FDCWD, tmpl, 0, &p, &w);	/* the name glibc chose */
	pohm_fd_opened(r, &p, &w, &fi);
	return pohm_ret(r);
}

POHM_EXPORT int mkstemp(char *t)
{
	return do_mkstemp(0, 0, t, 0, 0);
}

POHM_EXPORT int mkstemp64(char *t)
{
	return do_mkstemp(0, 1, t, 0, 0);
}

POHM_EXPORT int mkostemp(char *t, int flags)
{
	return do_mkstemp(1, 0, t, 0, flags);
}

POHM_EXPORT int mkostemp64(char *t, int flags)
{
	return do_mkstemp(1, 1, t, 0, flags);
}

POHM_EXPORT int mkstemps(char *t, int suffix)
{
	return do_mkstemp(2, 0, t, suffix, 0);
}

POHM_EXPORT int mkstemps64(char *t, int suffix)
{
	return do_mkstemp(2, 1, t, suffix, 0);
}

POHM_EXPORT int mkostemps(char *t, int suffix, int flags)
{
	return do_mkstemp(3, 0, t, suffix, flags);
}

POHM_EXPORT int mkostemps64(char *t, int suffix, int flags)
{
	return do_mkstemp(3, 1, t, suffix, flags);
}

/*
 * mkdtemp under the prefix: our own loop over names on top of our mkdir
 * wrapper, so that the directory is made in the storage as any mkdir is
 * (glibc's mkdtemp calls mkdir inside libc, out of the shim's sight).
 */
POHM_EXPORT char *mkdtemp(char *tmpl)
{
	static const char set[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct pohm_path p;
	uint64_t v;
	size_t len;
	int i, k, saved = errno;

	if (!pohm_claim(AT_FDCWD, tmpl, &p))
		return pohm_real.mkdtemp(tmpl);
	len = strlen(tmpl);
	if (len < 6 || strcmp(tmpl + len - 6, "XXXXXX")) {
		errno = EINVAL;
		return NULL;
	}
	v = pohm_sys_mono_ns() ^ ((uint64_t)pohm_sys_getpid() << 32) ^ (uintptr_t)tmpl;
	for (i = 0; i < 238328; i++) {	/* 62^3, as glibc tries */
		if (pohm_sys_getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
			v = v * 6364136223846793005ULL + 1442695040888963407ULL;
		for (k = 0; k < 6; k++, v /= 62)
			tmpl[len - 6 + k] = set[v % 62];
		if (mkdir(tmpl, 0700) == 0) {
			errno = saved;
			return tmpl;
		}
		if (errno != EEXIST)
			return NULL;
	}
	errno = EEXIST;
	return NULL;
}

/* mktemp only finds a free name (lstat inside glibc): the directory must be listed. */
POHM_EXPORT char *mktemp(char *tmpl)
{
	struct pohm_path p;
	int r;

	if (pohm_claim_ro(AT_FDCWD, tmpl, &p) &&
	    (r = pohm_hook_lookup(POHM_PL_TEMPDIR, &p, 0)) != POHM_PASS && r < 0) {
		tmpl[0] = '\0';	/* as glibc reports failure */
		errno = -r;
		return tmpl;
	}
	return pohm_real.mktemp(tmpl);
}
