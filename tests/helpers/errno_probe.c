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
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>
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

static int nop_ftw_old(const char *p, const struct stat *st, int t)
{
	(void)p, (void)st, (void)t;
	return 0;
}

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
	char tmpl[PATH_MAX], *(*mktemp_p)(char *);
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
	snprintf(tmpl, sizeof(tmpl), "%s", P("bad"));
	mktemp_p = (char *(*)(char *))dlsym(RTLD_DEFAULT, "mktemp");	/* no link warning */
	CALL("mktemp bad template", mktemp_p(tmpl)[0]);
	CALL("pathconf missing", pathconf(P("ne"), _PC_NAME_MAX));
	CALL("pathconf ok", pathconf(P("f"), _PC_NAME_MAX));
	CALL("ftok missing", ftok(P("ne"), 1));

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
	/* the shim's own mprotect/mremap (preload/mprot.c): -1/MAP_FAILED and errno */
	CALL("mprotect unaligned", mprotect((void *)1, 4096, PROT_READ));
	CALL("mremap unaligned", (long)mremap((void *)1, 4096, 8192, MREMAP_MAYMOVE));
	{
		char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CALL("mprotect ok", m == MAP_FAILED ? -2 : mprotect(m, 4096, PROT_READ));
		CALL("mremap shrink", m == MAP_FAILED ? -2 : (long)(mremap(m, 8192, 4096, 0) != m));
		if (m != MAP_FAILED)
			munmap(m, 4096);
	}
	CALL("msync unaligned", msync((void *)1, 1, MS_SYNC));
	CALL("copy_file_range bad fd", copy_file_range(-1, NULL, -1, NULL, 1, 0));
	CALL("sendfile bad fd", sendfile(-1, -1, NULL, 1));
	CALL("inotify_add_watch bad fd", inotify_add_watch(-1, P("f"), IN_MODIFY));

	/* ---- the other forms of each family: *at, l-, f-, 64, stream and walk variants */
	dfd = open(".", O_RDONLY | O_DIRECTORY);
	fd = open(P("f"), O_RDWR);
	CALL("readlinkat missing", readlinkat(AT_FDCWD, P("ne"), buf, sizeof(buf)));
	CALL("renameat missing", renameat(AT_FDCWD, P("ne"), AT_FDCWD, P("y")));
	CALL("linkat missing", linkat(AT_FDCWD, P("ne"), AT_FDCWD, P("y"), 0));
	CALL("symlinkat existing", symlinkat("f", AT_FDCWD, P("f")));
	CALL("mknodat existing", mknodat(AT_FDCWD, P("f"), S_IFIFO | 0600, 0));
	CALL("mkfifoat existing", mkfifoat(AT_FDCWD, P("f"), 0600));
	CALL("fchmodat missing", fchmodat(AT_FDCWD, P("ne"), 0600, 0));
	CALL("fchownat missing", fchownat(AT_FDCWD, P("ne"), 0, 0, 0));
	CALL("lchmod missing", lchmod(P("ne"), 0600));
	CALL("eaccess missing", eaccess(P("ne"), R_OK));
	CALL("lutimes missing", lutimes(P("ne"), NULL));
	CALL("futimesat missing", futimesat(AT_FDCWD, P("ne"), NULL));
	CALL("futimes ok", futimes(fd, NULL));
	CALL("futimens ok", futimens(fd, NULL));
	CALL("fchown bad fd", fchown(-1, 0, 0));
	CALL("lgetxattr missing", lgetxattr(P("ne"), "user.a", buf, sizeof(buf)));
	CALL("llistxattr missing", llistxattr(P("ne"), buf, sizeof(buf)));
	CALL("lsetxattr missing", lsetxattr(P("ne"), "user.a", "v", 1, 0));
	CALL("lremovexattr missing", lremovexattr(P("ne"), "user.a"));
	CALL("flistxattr bad fd", flistxattr(-1, buf, sizeof(buf)));
	CALL("fsetxattr bad fd", fsetxattr(-1, "user.a", "v", 1, 0));
	CALL("fremovexattr bad fd", fremovexattr(-1, "user.a"));
	CALL("fstatfs bad fd", fstatfs(-1, &sf));
	CALLP("fdopen bad fd", fdopen(-1, "r"));
	CALLP("fdopendir bad fd", fdopendir(-1));
	CALLP("freopen missing", freopen(P("ne"), "r", tmpfile()));
	CALLP("canonicalize_file_name missing", canonicalize_file_name(P("ne")));
	snprintf(tmpl, sizeof(tmpl), "%s", P("bad"));
	CALL("mkstemps bad template", mkstemps(tmpl, 0));
	CALL("mkostemps bad template", mkostemps(tmpl, 0, 0));
	CALL("scandirat missing", scandirat(dfd, P("ne"), &list, NULL, NULL));
	CALL("ftw missing", ftw(P("ne"), nop_ftw_old, 4));
	{
		char *roots[] = { (char *)P("d"), NULL };
		FTS *t = fts_open(roots, FTS_PHYSICAL, NULL);
		FTSENT *e;
		int n = 0;

		if (t && (e = fts_read(t)) && fts_children(t, 0))
			fts_set(t, e, FTS_AGAIN);
		while (t && (e = fts_read(t)))
			n += e->fts_info == FTS_F;
		show("fts files", n);
		CALL("fts_close", t ? fts_close(t) : -1);
	}
	{
		DIR *dp = opendir(P("d"));
		struct dirent ent, *res;
		int n = 0;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
		while (dp && readdir_r(dp, &ent, &res) == 0 && res)
			n++;
#pragma GCC diagnostic pop
		show("readdir_r entries", n);
		CALL("closedir", dp ? closedir(dp) : -1);
	}
	{
		struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
		int mount_id;

		h->handle_bytes = MAX_HANDLE_SZ;
		CALL("name_to_handle_at missing", name_to_handle_at(AT_FDCWD, P("ne"), h, &mount_id, 0));
		free(h);
	}
	CALL("fanotify_mark bad fd", fanotify_mark(-1, FAN_MARK_ADD, FAN_MODIFY, AT_FDCWD, P("f")));
	CALL("close f", close(fd));
	CALL("close .", close(dfd));
	sync();
	CALLP("tmpfile ok", tmpfile());

	/* ---- programs */
	CALL("execv missing", execv(P("ne"), args));
	CALL("execl missing", execl(P("ne"), "x", (char *)NULL));
	CALL("execle missing", execle(P("ne"), "x", (char *)NULL, environ));
	CALL("execlp missing", execlp("pohmelfs-no-such-program", "x", (char *)NULL));
	CALL("execvpe missing", execvpe("pohmelfs-no-such-program", args, environ));
	CALL("execveat missing", execveat(AT_FDCWD, P("ne"), args, environ, 0));
	CALL("fexecve bad fd", fexecve(-1, args, environ));
	errno = EDOM;
	show("posix_spawnp missing (result)",
	     posix_spawnp(&pid, "pohmelfs-no-such-program", NULL, NULL, args, environ));
	{
		posix_spawn_file_actions_t fa;

		posix_spawn_file_actions_init(&fa);
		CALL("spawn addopen", posix_spawn_file_actions_addopen(&fa, 3, P("f"), O_RDONLY, 0));
		posix_spawn_file_actions_destroy(&fa);
	}
	{
		FILE *pp = popen("exit 3", "r");

		show("popen", pp != NULL);
		show("pclose status", pp ? WEXITSTATUS(pclose(pp)) : -1);
		show("system status", WEXITSTATUS(system("exit 4")));
	}
	CALLP("dlmopen missing", dlmopen(LM_ID_NEWLM, "./pohmelfs-no-such.so", RTLD_NOW));
	CALL("execve missing", execve(P("ne"), args, environ));
	CALL("execve not executable", execve(P("f"), args, environ));
	CALL("execvp missing", execvp("pohmelfs-no-such-program", args));
	errno = EDOM;
	show("posix_spawn missing (result)", posix_spawn(&pid, P("ne"), NULL, NULL, args, environ));
	CALLP("dlopen missing", dlopen("./pohmelfs-no-such.so", RTLD_NOW));
	return 0;
}
