/*
 * sc_calls.c — one libc entry point per run, for tests/bats/shim_calls.bats,
 * which runs it under the shim against a cluster and checks from another
 * host (a second, empty cache) what reached the storage.  Each operation
 * prints what it saw; a failing call prints "ERR NAME" (the errno name)
 * and exits 1.
 *
 *   open64 P TEXT | creat P TEXT | creat64 P TEXT    create and write
 *   openat64 DIR NAME TEXT                           the same, by dirfd
 *   stat VARIANT P    VARIANT: stat lstat fstat fstatat statx and the
 *                     __xstat family (xstat lxstat fxstat fxstatat and
 *                     their 64 names), called directly; prints
 *                     "ino mode nlink uid gid size mtime"
 *   access P MODE | faccessat DIR NAME MODE | euidaccess P MODE |
 *   eaccess P MODE    MODE: letters r w x f; prints "ok"
 *   truncate P LEN | truncate64 P LEN | ftruncate P LEN | ftruncate64 P LEN
 *   chown P UID GID | lchown P UID GID | fchown P UID GID |
 *   fchownat DIR NAME UID GID [nofollow]
 *   futimens P SEC | futimes P SEC    on an fd opened read-only
 *   xattr OP P [NAME [VALUE]]   OP: set lset fset get lget fget list llist
 *                     flist remove lremove fremove (list prints sorted
 *                     user.* names)
 *   remove P | fdopendir DIR (sorted names; d_ino checked against lstat)
 *   freopen P TEXT | fdopen P TEXT
 *   fdatasync P TEXT HOLD [rw] | syncfs … | fsync … | sync_file_range …
 *                     write (through an O_WRONLY fd, O_RDWR with "rw"),
 *                     sync, print "synced", then keep the fd open until
 *                     the file HOLD exists (at most 60 s)
 *   copy_file_range SRC DST | sendfile SRC DST    DST is truncated first
 *   temps             mkstemp, mkostemp, mkstemps, mkdtemp (and a file in
 *                     it) from $TMPDIR, each written with its own name;
 *                     tmpfile written and read back; prints the names
 *                     relative to $TMPDIR
 *   statfs P          f_blocks and f_bavail in bytes from statfs,
 *                     statfs64, statvfs, statvfs64, fstatfs, fstatvfs
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* The __xstat family: compat names only since glibc 2.33, bound by version. */
int __xstat(int, const char *, struct stat *);
int __lxstat(int, const char *, struct stat *);
int __fxstat(int, int, struct stat *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstat64(int, int, struct stat64 *);
int __fxstatat64(int, int, const char *, struct stat64 *, int);
__asm__(".symver __xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver __lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver __fxstat,__fxstat@GLIBC_2.2.5");
__asm__(".symver __fxstatat,__fxstatat@GLIBC_2.4");
__asm__(".symver __xstat64,__xstat64@GLIBC_2.2.5");
__asm__(".symver __lxstat64,__lxstat64@GLIBC_2.2.5");
__asm__(".symver __fxstat64,__fxstat64@GLIBC_2.2.5");
__asm__(".symver __fxstatat64,__fxstatat64@GLIBC_2.4");
#define XSTAT_VER 1	/* _STAT_VER_LINUX on x86_64 */

static int fail(const char *what)
{
	const char *e = strerrorname_np(errno);

	printf("ERR %s\n", e ? e : "?");
	fprintf(stderr, "sc_calls: %s: %s\n", what, strerror(errno));
	return 1;
}

static int write_all(int fd, const char *text)
{
	size_t n = strlen(text);

	return write(fd, text, n) == (ssize_t)n ? 0 : -1;
}

/* Write TEXT to fd and close it; 0 or 1 (printed). */
static int write_close(int fd, const char *text, const char *what)
{
	if (fd < 0)
		return fail(what);
	if (write_all(fd, text) || close(fd))
		return fail("write");
	printf("ok\n");
	return 0;
}

static int dir_fd(const char *dir)
{
	return open(dir, O_RDONLY | O_DIRECTORY);
}

/* ------------------------------------------------------------ stat */

static void show_stat(const struct stat *st)
{
	printf("%llu %o %llu %u %u %lld %lld\n", (unsigned long long)st->st_ino,
	       (unsigned)st->st_mode, (unsigned long long)st->st_nlink, (unsigned)st->st_uid,
	       (unsigned)st->st_gid, (long long)st->st_size, (long long)st->st_mtim.tv_sec);
}

static void show_stat64(const struct stat64 *st)
{
	printf("%llu %o %llu %u %u %lld %lld\n", (unsigned long long)st->st_ino,
	       (unsigned)st->st_mode, (unsigned long long)st->st_nlink, (unsigned)st->st_uid,
	       (unsigned)st->st_gid, (long long)st->st_size, (long long)st->st_mtim.tv_sec);
}

static int do_stat(const char *v, const char *path)
{
	struct stat st;
	struct stat64 st64;
	struct statx sx;
	int r, fd = -1, is64 = strstr(v, "64") != NULL;

	if (!strcmp(v, "fstat") || !strcmp(v, "fxstat") || !strcmp(v, "fxstat64"))
		if ((fd = open(path, O_RDONLY)) < 0)
			return fail("open");
	if (!strcmp(v, "stat"))
		r = stat(path, &st);
	else if (!strcmp(v, "lstat"))
		r = lstat(path, &st);
	else if (!strcmp(v, "fstat"))
		r = fstat(fd, &st);
	else if (!strcmp(v, "fstatat"))
		r = fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
	else if (!strcmp(v, "xstat"))
		r = __xstat(XSTAT_VER, path, &st);
	else if (!strcmp(v, "lxstat"))
		r = __lxstat(XSTAT_VER, path, &st);
	else if (!strcmp(v, "fxstat"))
		r = __fxstat(XSTAT_VER, fd, &st);
	else if (!strcmp(v, "fxstatat"))
		r = __fxstatat(XSTAT_VER, AT_FDCWD, path, &st, 0);
	else if (!strcmp(v, "xstat64"))
		r = __xstat64(XSTAT_VER, path, &st64);
	else if (!strcmp(v, "lxstat64"))
		r = __lxstat64(XSTAT_VER, path, &st64);
	else if (!strcmp(v, "fxstat64"))
		r = __fxstat64(XSTAT_VER, fd, &st64);
	else if (!strcmp(v, "fxstatat64"))
		r = __fxstatat64(XSTAT_VER, AT_FDCWD, path, &st64, 0);
	else if (!strcmp(v, "statx")) {
		if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &sx))
			return fail("statx");
		printf("%llu %o %u %u %u %lld %lld\n", (unsigned long long)sx.stx_ino,
		       (unsigned)sx.stx_mode, sx.stx_nlink, sx.stx_uid, sx.stx_gid,
		       (long long)sx.stx_size, (long long)sx.stx_mtime.tv_sec);
		return 0;
	} else {
		fprintf(stderr, "sc_calls: no stat variant %s\n", v);
		return 2;
	}
	if (r)
		return fail(v);
	if (is64)
		show_stat64(&st64);
	else
		show_stat(&st);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ------------------------------------------------------------ access */

static int access_mode(const char *s)
{
	int m = 0;

	m |= strchr(s, 'r') ? R_OK : 0;
	m |= strchr(s, 'w') ? W_OK : 0;
	m |= strchr(s, 'x') ? X_OK : 0;
	return m;
}

static int done(int r, const char *what)
{
	if (r)
		return fail(what);
	printf("ok\n");
	return 0;
}

/* ------------------------------------------------------------ xattr */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int print_names(const char *list, ssize_t n)
{
	const char *v[256];
	size_t k = 0, i;
	const char *s;

	for (s = list; s < list + n && k < 256; s += strlen(s) + 1)
		if (!strncmp(s, "user.", 5))
			v[k++] = s;
	qsort(v, k, sizeof(*v), cmp_str);
	for (i = 0; i < k; i++)
		printf("%s\n", v[i]);
	printf("(%zu)\n", k);
	return 0;
}

static int do_xattr(int argc, char **argv)
{
	const char *op = argv[2], *p = argv[3], *name = argc > 4 ? argv[4] : "";
	const char *val = argc > 5 ? argv[5] : "";
	char buf[4096];
	ssize_t n;
	int fd = -1, r;

	if (op[0] == 'f' && (fd = open(p, O_RDONLY)) < 0)
		return fail("open");
	if (!strcmp(op, "set"))
		return done(setxattr(p, name, val, strlen(val), 0), op);
	if (!strcmp(op, "lset"))
		return done(lsetxattr(p, name, val, strlen(val), 0), op);
	if (!strcmp(op, "fset")) {
		r = fsetxattr(fd, name, val, strlen(val), 0);
		close(fd);
		return done(r, op);
	}
	if (!strcmp(op, "remove"))
		return done(removexattr(p, name), op);
	if (!strcmp(op, "lremove"))
		return done(lremovexattr(p, name), op);
	if (!strcmp(op, "fremove")) {
		r = fremovexattr(fd, name);
		close(fd);
		return done(r, op);
	}
	if (!strcmp(op, "get"))
		n = getxattr(p, name, buf, sizeof(buf) - 1);
	else if (!strcmp(op, "lget"))
		n = lgetxattr(p, name, buf, sizeof(buf) - 1);
	else if (!strcmp(op, "fget"))
		n = fgetxattr(fd, name, buf, sizeof(buf) - 1);
	else if (!strcmp(op, "list"))
		n = listxattr(p, buf, sizeof(buf));
	else if (!strcmp(op, "llist"))
		n = llistxattr(p, buf, sizeof(buf));
	else if (!strcmp(op, "flist"))
		n = flistxattr(fd, buf, sizeof(buf));
	else {
		fprintf(stderr, "sc_calls: no xattr op %s\n", op);
		return 2;
	}
	if (n < 0)
		return fail(op);
	if (strstr(op, "list"))
		return print_names(buf, n);
	buf[n] = 0;
	printf("%s\n", buf);
	return 0;
}

/* ------------------------------------------------------------ directories */

static int do_fdopendir(const char *dir)
{
	char *v[1024];
	size_t k = 0, i;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd = dir_fd(dir);

	if (fd < 0)
		return fail("open");
	if (!(d = fdopendir(fd)))
		return fail("fdopendir");
	while ((e = readdir(d)) && k < 1024) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			return fail("fstatat");
		if (st.st_ino != e->d_ino)
			printf("d_ino %s %llu != st_ino %llu\n", e->d_name,
			       (unsigned long long)e->d_ino, (unsigned long long)st.st_ino);
		v[k++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(v, k, sizeof(*v), cmp_str);
	for (i = 0; i < k; i++)
		printf("%s\n", v[i]);
	return 0;
}

/* ------------------------------------------------------------ streams */

static int do_freopen(const char *p, const char *text)
{
	FILE *f = fopen("/dev/null", "r");

	if (!f)
		return fail("fopen");
	if (!(f = freopen(p, "w", f)))
		return fail("freopen");
	fputs(text, f);
	return done(fclose(f), "fclose");
}

static int do_fdopen(const char *p, const char *text)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	FILE *f;

	if (fd < 0)
		return fail("open");
	if (!(f = fdopen(fd, "w")))
		return fail("fdopen");
	fputs(text, f);
	return done(fclose(f), "fclose");
}

/* ------------------------------------------------------------ sync */

static void wait_for(const char *hold)
{
	struct timespec ts = { 0, 20000000 };
	int i;

	for (i = 0; i < 3000 && access(hold, F_OK); i++)
		nanosleep(&ts, NULL);
}

static int do_sync(const char *how, const char *p, const char *text, const char *hold, int rw)
{
	int fd = open(p, (rw ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC, 0644), r;

	if (fd < 0)
		return fail("open");
	if (write_all(fd, text))
		return fail("write");
	if (!strcmp(how, "fdatasync"))
		r = fdatasync(fd);
	else if (!strcmp(how, "syncfs"))
		r = syncfs(fd);
	else if (!strcmp(how, "sync_file_range"))
		r = sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					      SYNC_FILE_RANGE_WAIT_AFTER);
	else
		r = fsync(fd);
	if (r)
		return fail(how);
	printf("synced\n");
	fflush(stdout);
	wait_for(hold);
	return done(close(fd), "close");
}

/* ------------------------------------------------------------ copies */

static int do_copy(const char *how, const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct stat st;
	ssize_t n;
	off_t left;

	if (in < 0 || out < 0 || fstat(in, &st))
		return fail("open");
	for (left = st.st_size; left > 0; left -= n) {
		if (!strcmp(how, "sendfile"))
			n = sendfile(out, in, NULL, left);
		else
			n = copy_file_range(in, NULL, out, NULL, left, 0);
		if (n <= 0)
			return fail(how);
	}
	close(in);
	return done(close(out), "close");
}

/* ------------------------------------------------------------ temporary files */

static const char *tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/* Write NAME (relative to TMPDIR) into fd, made by WHAT, and close it. */
static int write_name(int fd, const char *path, const char *what)
{
	const char *rel = path + strlen(tmpdir()) + 1;

	if (fd < 0)
		return fail(what);
	printf("%s\n", rel);
	return write_close(fd, rel, "write") ? 1 : 0;
}

static int do_temps(void)
{
	char a[4096], b[4096], c[4096], d[4096], e[4200], got[64];
	FILE *f;
	int r = 0;

	snprintf(a, sizeof(a), "%s/stemp.XXXXXX", tmpdir());
	snprintf(b, sizeof(b), "%s/otemp.XXXXXX", tmpdir());
	snprintf(c, sizeof(c), "%s/stemps.XXXXXX.sfx", tmpdir());
	snprintf(d, sizeof(d), "%s/dtemp.XXXXXX", tmpdir());
	r |= write_name(mkstemp(a), a, "mkstemp");
	r |= write_name(mkostemp(b, O_CLOEXEC), b, "mkostemp");
	r |= write_name(mkstemps(c, 4), c, "mkstemps");
	if (!mkdtemp(d))
		return fail("mkdtemp");
	printf("%s/\n", d + strlen(tmpdir()) + 1);
	snprintf(e, sizeof(e), "%s/inside", d);
	r |= write_name(open(e, O_WRONLY | O_CREAT | O_EXCL, 0644), e, "open in the mkdtemp directory");
	if (!(f = tmpfile()))
		return fail("tmpfile");
	fputs("unnamed", f);
	rewind(f);
	if (!fgets(got, sizeof(got), f) || strcmp(got, "unnamed"))
		return fail("tmpfile read back");
	fclose(f);
	printf("tmpfile ok\n");
	return r;
}

/* ------------------------------------------------------------ statfs */

static int do_statfs(const char *p)
{
	struct statfs sf;
	struct statfs64 sf64;
	struct statvfs sv;
	struct statvfs64 sv64;
	int fd;

	if (statfs(p, &sf))
		return fail("statfs");
	printf("statfs %llu %llu\n", (unsigned long long)sf.f_blocks * sf.f_bsize,
	       (unsigned long long)sf.f_bavail * sf.f_bsize);
	if (statfs64(p, &sf64))
		return fail("statfs64");
	printf("statfs64 %llu %llu\n", (unsigned long long)sf64.f_blocks * sf64.f_bsize,
	       (unsigned long long)sf64.f_bavail * sf64.f_bsize);
	if (statvfs(p, &sv))
		return fail("statvfs");
	printf("statvfs %llu %llu\n", (unsigned long long)sv.f_blocks * sv.f_frsize,
	       (unsigned long long)sv.f_bavail * sv.f_frsize);
	if (statvfs64(p, &sv64))
		return fail("statvfs64");
	printf("statvfs64 %llu %llu\n", (unsigned long long)sv64.f_blocks * sv64.f_frsize,
	       (unsigned long long)sv64.f_bavail * sv64.f_frsize);
	if ((fd = open(p, O_RDONLY)) < 0)
		return fail("open");
	if (fstatfs(fd, &sf))
		return fail("fstatfs");
	printf("fstatfs %llu %llu\n", (unsigned long long)sf.f_blocks * sf.f_bsize,
	       (unsigned long long)sf.f_bavail * sf.f_bsize);
	if (fstatvfs(fd, &sv))
		return fail("fstatvfs");
	printf("fstatvfs %llu %llu\n", (unsigned long long)sv.f_blocks * sv.f_frsize,
	       (unsigned long long)sv.f_bavail * sv.f_frsize);
	close(fd);
	return 0;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "", *b = argc > 3 ? argv[3] : "";
	const char *c = argc > 4 ? argv[4] : "";
	struct timeval tv[2];
	struct timespec ts[2];
	int fd, r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(op, "open64"))
		return write_close(open64(a, O_WRONLY | O_CREAT | O_TRUNC, 0644), b, op);
	if (!strcmp(op, "openat64")) {
		if ((fd = dir_fd(a)) < 0)
			return fail("open dir");
		return write_close(openat64(fd, b, O_WRONLY | O_CREAT | O_TRUNC, 0644), c, op);
	}
	if (!strcmp(op, "creat"))
		return write_close(creat(a, 0644), b, op);
	if (!strcmp(op, "creat64"))
		return write_close(creat64(a, 0644), b, op);
	if (!strcmp(op, "stat"))
		return do_stat(a, b);
	if (!strcmp(op, "access"))
		return done(access(a, access_mode(b)), op);
	if (!strcmp(op, "euidaccess"))
		return done(euidaccess(a, access_mode(b)), op);
	if (!strcmp(op, "eaccess"))
		return done(eaccess(a, access_mode(b)), op);
	if (!strcmp(op, "faccessat")) {
		if ((fd = dir_fd(a)) < 0)
			return fail("open dir");
		return done(faccessat(fd, b, access_mode(c), 0), op);
	}
	if (!strcmp(op, "truncate"))
		return done(truncate(a, atoll(b)), op);
	if (!strcmp(op, "truncate64"))
		return done(truncate64(a, atoll(b)), op);
	if (!strcmp(op, "ftruncate") || !strcmp(op, "ftruncate64")) {
		if ((fd = open(a, O_WRONLY)) < 0)
			return fail("open");
		r = op[9] ? ftruncate64(fd, atoll(b)) : ftruncate(fd, atoll(b));
		if (r)
			return fail(op);
		return done(close(fd), "close");
	}
	if (!strcmp(op, "chown"))
		return done(chown(a, atoi(b), atoi(c)), op);
	if (!strcmp(op, "lchown"))
		return done(lchown(a, atoi(b), atoi(c)), op);
	if (!strcmp(op, "fchown")) {
		if ((fd = open(a, O_RDONLY)) < 0)
			return fail("open");
		if (fchown(fd, atoi(b), atoi(c)))
			return fail(op);
		return done(close(fd), "close");
	}
	if (!strcmp(op, "fchownat")) {
		if ((fd = dir_fd(a)) < 0)
			return fail("open dir");
		return done(fchownat(fd, b, atoi(c), atoi(argc > 5 ? argv[5] : "0"),
				     argc > 6 ? AT_SYMLINK_NOFOLLOW : 0), op);
	}
	if (!strcmp(op, "futimens") || !strcmp(op, "futimes")) {
		if ((fd = open(a, O_RDONLY)) < 0)
			return fail("open");
		ts[0].tv_sec = ts[1].tv_sec = tv[0].tv_sec = tv[1].tv_sec = atoll(b);
		ts[0].tv_nsec = ts[1].tv_nsec = tv[0].tv_usec = tv[1].tv_usec = 0;
		r = op[4] == 'm' ? futimens(fd, ts) : futimes(fd, tv);
		if (r)
			return fail(op);
		return done(close(fd), "close");
	}
	if (!strcmp(op, "xattr") && argc > 3)
		return do_xattr(argc, argv);
	if (!strcmp(op, "remove"))
		return done(remove(a), op);
	if (!strcmp(op, "fdopendir"))
		return do_fdopendir(a);
	if (!strcmp(op, "freopen"))
		return do_freopen(a, b);
	if (!strcmp(op, "fdopen"))
		return do_fdopen(a, b);
	if ((!strcmp(op, "fdatasync") || !strcmp(op, "syncfs") || !strcmp(op, "fsync") ||
	     !strcmp(op, "sync_file_range")) && argc > 4)
		return do_sync(op, a, b, c, argc > 5 && !strcmp(argv[5], "rw"));
	if (!strcmp(op, "copy_file_range") || !strcmp(op, "sendfile"))
		return do_copy(op, a, b);
	if (!strcmp(op, "temps"))
		return do_temps();
	if (!strcmp(op, "statfs"))
		return do_statfs(a);
	fprintf(stderr, "usage: see the comment at the top of sc_calls.c\n");
	return 2;
}
