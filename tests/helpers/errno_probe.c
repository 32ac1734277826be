/*
 * errno_probe.c — a battery of file calls, most of them failing, each
 * printed as "name r=RESULT ERRNO-NAME".  tests/bats/preload_errno.bats
 * runs it without the shim and with it (the directory under the prefix,
 * and outside it) and requires identical output: the shim must return
 * what libc returns and leave errno exactly as the kernel sets it, also
 * on success (errno is set to EDOM before every call).
 *
 *   errno_probe DIR abs|rel      DIR must be empty; rel: chdir(DIR) and
 *                                use relative names
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

extern char **environ;

static char base[PATH_MAX];
static char pbuf[8][PATH_MAX];
static int pnext;

/* The name of a fixture, absolute or relative as the mode says. */
static const char *P(const char *name)
{
	char *b = pbuf[pnext++ & 7];

	snprintf(b, PATH_MAX, "%s%s", base, name);
	return b;
}

static void show(const char *what, long r)
{
	const char *e = strerrorname_np(errno);

	printf("%-34s r=%ld %s\n", what, r, e ? e : "?");
}

/* Each CALL resets errno to a sentinel first, so success paths show it too. */
#define CALL(what, expr) do { long r_; errno = EDOM; r_ = (long)(expr); show(what, r_); } while (0)
#define CALLP(what, expr) do { void *p_; errno = EDOM; p_ = (void *)(expr); show(what, p_ != NULL); } while (0)

/*
 * The NULL cases go through pointers, so neither the compiler nor UBSan
 * holds glibc's nonnull declarations against this deliberate misuse.
 */
static int (*volatile open_p)(const char *, int, ...) = open;
static int (*volatile stat_p)(const char *, struct stat *) = stat;
static int (*volatile utimensat_p)(int, const char *, const struct timespec *, int) = utimensat;
static int (*volatile closedir_p)(DIR *) = closedir;
static char *(*volatile realpath_p)(const char *, char *) = realpath;

static int nop_ftw(const char *p, const struct stat *st, int t, struct FTW *f)
{
	(void)p, (void)st, (void)t, (void)f;
	return 0;
}

int main(int argc, char **argv)
{
	static char longname[300], buf[PATH_MAX], *volatile nullp;
	struct stat st;
	struct statx stx;
	struct statfs sf;
	struct statvfs sv;
	struct dirent **list;
	glob_t g;
	pid_t pid;
	char *args[] = { "x", NULL };
	char tmpl[PATH_MAX];
	int fd, dfd;
	FILE *f;

	if (argc < 3)
		return 2;
	if (!strcmp(argv[2], "rel")) {
		if (chdir(argv[1]) < 0)
			return 1;
	} else {
		snprintf(base, sizeof(base), "%s/", argv[1]);
	}
	memset(longname, 'n', sizeof(longname) - 1);

	/* fixtures: f (file), d/ with d/x, l -> f, ne (missing) */
	fd = open(P("f"), O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "data\n", 5) != 5 || close(fd) < 0 || mkdir(P("d"), 0755) < 0 ||
	    close(open(P("d/x"), O_CREAT | O_WRONLY, 0644)) < 0 || symlink("f", P("l")) < 0)
		return 1;

	/* ---- open family */
	CALL("open missing", open(P("ne"), O_RDONLY));
	CALL("open dir for writing", open(P("d"), O_WRONLY));
	CALL("open O_EXCL existing", open(P("f"), O_CREAT | O_EXCL | O_WRONLY, 0644));
	CALL("open through a file", open(P("f/x"), O_RDONLY));
	CALL("open long name", open(longname, O_RDONLY));
	CALL("open O_DIRECTORY on file", open(P("f"), O_RDONLY | O_DIRECTORY));
	CALL("open NULL", open_p(nullp, O_RDONLY));
	CALL("openat bad dirfd", openat(-5, "f", O_RDONLY));
	CALL("creat on dir", creat(P("d"), 0644));
	CALL("open empty", open("", O_RDONLY));
	fd = open(P("f"), O_RDONLY);
	CALL("openat file as dirfd", openat(fd, "x", O_RDONLY));
	CALL("fstatat empty path", fstatat(fd, "", &st, AT_EMPTY_PATH));
	CALL("close ok", close(fd));

	/* ---- stat family */
	CALL("stat missing", stat(P("ne"), &st));
	CALL("lstat missing", lstat(P("ne"), &st));
	CALL("stat NULL", stat_p(nullp, &st));
	CALL("stat empty", stat("", &st));
	CALL("fstatat bad flags", fstatat(AT_FDCWD, P("f"), &st, 0xffff));
	CALL("fstat bad fd", fstat(-1, &st));
	CALL("statx missing", statx(AT_FDCWD, P("ne"), 0, STATX_ALL, &stx));
	CALL("statx ok", statx(AT_FDCWD, P("f"), 0, STATX_ALL, &stx));
	CALL("stat ok", stat(P("l"), &st));
	CALL("lstat ok", lstat(P("l"), &st));

	/* ---- access, readlink */
	CALL("access missing", access(P("ne"), R_OK));
	CALL("access ok", access(P("f"), R_OK));
	CALL("faccessat bad flags", faccessat(AT_FDCWD, P("f"), R_OK, 0x4000));
	CALL("euidaccess missing", euidaccess(P("ne"), F_OK));
	CALL("readlink not a link", readlink(P("f"), buf, sizeof(buf)));
	CALL("readlink missing", readlink(P("ne"), buf, sizeof(buf)));
	CALL("readlink ok", readlink(P("l"), buf, sizeof(buf)));

	/* ---- namespace */
	CALL("mkdir existing", mkdir(P("d"), 0755));
	CALL("mkdir under missing", mkdir(P("ne/x"), 0755));
	CALL("mkdirat bad dirfd", mkdirat(-5, "x", 0755));
	CALL("rmdir not empty", rmdir(P("d")));
	CALL("rmdir file", rmdir(P("f")));
	CALL("rmdir missing", rmdir(P("ne")));
	CALL("rmdir dot", rmdir("."));
	CALL("unlink dir", unlink(P("d")));
	CALL("unlink missing", unlink(P("ne")));
	CALL("unlinkat bad flags", unlinkat(AT_FDCWD, P("f"), 0x1234));
	CALL("rename missing", rename(P("ne"), P("y")));
	CALL("rename into itself", rename(P("d"), P("d/sub")));
	CALL("renameat2 bad flags", renameat2(AT_FDCWD, P("f"), AT_FDCWD, P("y"), 0xff));
	CALL("link missing", link(P("ne"), P("y")));
	CALL("link onto existing", link(P("f"), P("d")));
	CALL("link a directory", link(P("d"), P("z")));
	CALL("symlink existing", symlink("f", P("f")));
	CALL("mknod existing", mknod(P("f"), S_IFIFO | 0600, 0));
	CALL("mkfifo existing", mkfifo(P("f"), 0600));
	CALL("remove missing", remove(P("ne")));
	CALL("remove non-empty dir", remove(P("d")));
	CALL("rename ok", rename(P("d/x"), P("d/x2")));
	CALL("link ok", link(P("d/x2"), P("d/x3")));
	CALL("unlink ok", unlink(P("d/x3")));

	/* ---- attributes */
	CALL("chmod missing", chmod(P("ne"), 0644));
	CALL("chown missing", chown(P("ne"), 0, 0));
	CALL("lchown missing", lchown(P("ne"), 0, 0));
	CALL("fchmod bad fd", fchmod(-1, 0644));
	CALL("truncate dir", truncate(P("d"), 0));
	CALL("truncate negative", truncate(P("f"), -1));
	CALL("ftruncate bad fd", ftruncate(-1, 0));
	CALL("utimensat missing", utimensat(AT_FDCWD, P("ne"), NULL, 0));
	CALL("utimensat NULL path bad fd", utimensat_p(-1, nullp, NULL, 0));
	CALL("utimes missing", utimes(P("ne"), NULL));
	CALL("utime missing", utime(P("ne"), NULL));
	CALL("chmod ok", chmod(P("f"), 0640));
	CALL("utimensat ok", utimensat(AT_FDCWD, P("f"), NULL, 0));

	/* ---- xattrs */
	CALL("getxattr absent", getxattr(P("f"), "user.nope", buf, sizeof(buf)));
	CALL("getxattr missing file", getxattr(P("ne"), "user.nope", buf, sizeof(buf)));
	CALL("setxattr missing file", setxattr(P("ne"), "user.a", "v", 1, 0));
	CALL("listxattr missing file", listxattr(P("ne"), buf, sizeof(buf)));
	CALL("removexattr absent", removexattr(P("f"), "user.nope"));
	CALL("fgetxattr bad fd", fgetxattr(-1, "user.a", buf, sizeof(buf)));

	/* ---- directories and walks */
	CALLP("opendir missing", opendir(P("ne")));
	CALLP("opendir file", opendir(P("f")));
	CALL("closedir NULL", closedir_p((DIR *)nullp));
	CALL("scandir missing", scandir(P("ne"), &list, NULL, NULL));
	CALL("nftw missing", nftw(P("ne"), nop_ftw, 4, FTW_PHYS));
	CALL("glob no match", glob(P("ne*"), 0, NULL, &g));
	CALL("nftw ok", nftw(P("d"), nop_ftw, 4, FTW_PHYS | FTW_CHDIR));
	CALL("stat after nftw chdir", stat(P("f"), &st));

	/* ---- stdio, temporaries, realpath */
	CALLP("fopen missing", fopen(P("ne"), "r"));
	CALLP("fopen bad mode", fopen(P("f"), "z"));
	CALLP("fopen dir for writing", fopen(P("d"), "w"));
	f = fopen(P("f"), "r");
	CALL("fclose ok", fclose(f));
	CALLP("realpath missing", realpath(P("ne"), buf));
	CALLP("realpath NULL", realpath_p(nullp, buf));
	snprintf(tmpl, sizeof(tmpl), "%s", P("bad"));
	CALL("mkstemp bad template", mkstemp(tmpl));
	CALLP("mkdtemp bad template", mkdtemp(tmpl));
	snprintf(tmpl, sizeof(tmpl), "%s", P("tXXXXXX"));
	fd = mkostemp(tmpl, O_CLOEXEC);
	show("mkostemp ok", fd >= 0);
	CALL("close mkostemp fd", close(fd));

	/* ---- file systems, cwd, sync */
	CALL("statfs missing", statfs(P("ne"), &sf));
	CALL("statvfs missing", statvfs(P("ne"), &sv));
	CALL("fstatvfs bad fd", fstatvfs(-1, &sv));
	CALL("chdir missing", chdir(P("ne")));
	CALL("chdir file", chdir(P("f")));
	CALL("fchdir bad fd", fchdir(-1));
	CALLP("getcwd too small", getcwd(buf, 1));
	CALL("fsync bad fd", fsync(-1));
	CALL("fdatasync bad fd", fdatasync(-1));
	CALL("syncfs bad fd", syncfs(-1));
	CALL("sync_file_range bad fd", sync_file_range(-1, 0, 0, 0));

	/* ---- fds */
	CALL("close bad fd", close(-1));
	CALL("close unopened", close(999));
	CALL("close_range inverted", close_range(5, 3, 0));
	CALL("dup bad fd", dup(-1));
	CALL("dup2 bad fd", dup2(-1, 5));
	CALL("dup3 same fd", dup3(1, 1, 0));
	CALL("fcntl bad cmd", fcntl(1, 9999));
	dfd = open(P("d"), O_RDONLY | O_DIRECTORY);
	CALL("openat via dirfd missing", openat(dfd, "ne", O_RDONLY));
	CALL("fstatat via dirfd ok", fstatat(dfd, "x2", &st, 0));
	CALL("dup2 onto 50", dup2(dfd, 50));
	CALL("fstatat via dup2 fd", fstatat(50, "x2", &st, 0));
	CALL("fcntl F_DUPFD", fcntl(dfd, F_DUPFD, 60));
	CALL("close dup", close(60));
	CALL("close 50", close(50));
	CALL("close dfd", close(dfd));

	/* ---- mappings, copies, handles, watches */
	CALLP("mmap bad fd", mmap(NULL, 4096, PROT_READ, MAP_SHARED, -1, 0) != MAP_FAILED ?
	      (void *)1 : NULL);
	CALL("munmap unaligned", munmap((void *)1, 4096));
	CALL("msync unaligned", msync((void *)1, 1, MS_SYNC));
	CALL("copy_file_range bad fd", copy_file_range(-1, NULL, -1, NULL, 1, 0));
	CALL("sendfile bad fd", sendfile(-1, -1, NULL, 1));
	CALL("inotify_add_watch bad fd", inotify_add_watch(-1, P("f"), IN_MODIFY));

	/* ---- programs */
	CALL("execve missing", execve(P("ne"), args, environ));
	CALL("execve not executable", execve(P("f"), args, environ));
	CALL("execvp missing", execvp("pohmelfs-no-such-program", args));
	errno = EDOM;
	show("posix_spawn missing (result)", posix_spawn(&pid, P("ne"), NULL, NULL, args, environ));
	CALLP("dlopen missing", dlopen("./pohmelfs-no-such.so", RTLD_NOW));
	return 0;
}
