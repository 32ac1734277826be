/*
 * badptr.c — path calls with pointers the kernel refuses (EFAULT), each in
 * a child process, so that a crash is a line of output and not the end of
 * the run:
 *
 *   badptr DIR
 *
 * For each bad pointer (NULL, 1, the NULL page, the top of the NULL area,
 * a kernel address, a non-canonical one, ~0; then inside the user range:
 * a PROT_NONE page, a page mapped and unmapped again, a relative and an
 * absolute string that run from a good page into a PROT_NONE one, and a
 * good path whose page a path call has just read and the program then
 * unmaps, makes PROT_NONE or moves with mremap) and each call, prints
 * "call ptr: OK", "call ptr: ERRNAME" or "call ptr: signal N".  Calls with
 * two names take one good name under DIR (an existing file DIR/f, or a new
 * name DIR/new) and the bad pointer, both ways round.  The output is the
 * same natively and under the shim (tests/bats/posix_names.bats).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *dir;
static char f[4096], fresh[4096];

/* Kinds of the pointers made at run time (addr 0 in the table). */
enum { FIXED, PROT_NONE_PAGE, UNMAPPED, CROSS_REL, CROSS_ABS, STALE_UNMAP, STALE_PROT,
       STALE_REMAP };

static struct {
	const char *name;
	uintptr_t addr;
	int kind;
} bad[] = {
	{ "null", 0, FIXED },
	{ "one", 1, FIXED },
	{ "page0", 0x10, FIXED },
	{ "low", 0xfff8, FIXED },
	{ "kernel", (uintptr_t)0xffff888000000000ull, FIXED },
	{ "noncanon", (uintptr_t)0x0000900000000000ull, FIXED },
	{ "ones", ~(uintptr_t)0, FIXED },
	{ "protnone", 0, PROT_NONE_PAGE },
	{ "unmapped", 0, UNMAPPED },
	{ "cross-rel", 0, CROSS_REL },
	{ "cross-abs", 0, CROSS_ABS },
	{ "stale-unmap", 0, STALE_UNMAP },
	{ "stale-prot", 0, STALE_PROT },
	{ "stale-remap", 0, STALE_REMAP },
};

/* A page, or two with the second PROT_NONE, exiting on failure. */
static char *pages(int two)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (m == MAP_FAILED || mprotect(m + pg, (size_t)pg, PROT_NONE) ||
	    (!two && munmap(m + pg, (size_t)pg))) {
		perror("badptr: mmap");
		exit(2);
	}
	return m;
}

/* The pointers of the run-time kinds, made once before the calls. */
static void make_pointers(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t i;
	char *m;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		switch (bad[i].kind) {
		case PROT_NONE_PAGE:
			m = pages(1);
			bad[i].addr = (uintptr_t)(m + pg);
			break;
		case CROSS_REL:
		case CROSS_ABS:
			/* 64 name bytes at the end of a good page, no NUL before
			 * the PROT_NONE page: the kernel faults on its copy */
			m = pages(1) + pg - 64;
			memset(m, 'a', 64);
			if (bad[i].kind == CROSS_ABS)
				m[0] = '/';
			bad[i].addr = (uintptr_t)m;
			break;
		default:
			break;
		}
	}
}

/* In the child: a page unmapped just before the call (made earlier, a
 * later mapping could take its place); or a good path (f) on a fresh page
 * that a path call reads (a shim caches it as readable), then unmapped,
 * made PROT_NONE or moved away by mremap. */
static const char *in_child(int kind)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = pages(0);
	struct stat st;

	if (kind == UNMAPPED) {
		munmap(m, (size_t)pg);
		return m;
	}
	strcpy(m, f);
	stat(m, &st);
	if (kind == STALE_UNMAP)
		munmap(m, (size_t)pg);
	else if (kind == STALE_PROT)
		mprotect(m, (size_t)pg, PROT_NONE);
	else if (mremap(m, (size_t)pg, (size_t)pg, MREMAP_MAYMOVE | MREMAP_FIXED,
			pages(1) + pg) == MAP_FAILED)	/* moved away: m is unmapped */
		exit(2);
	return m;
}

/* One call: its result as 0 or -errno (the child's exit code carries it). */
static int call(const char *op, const char *b)
{
	struct stat st;
	struct statfs sf;
	struct statx stx;
	char buf[64];
	int r = 0;

#define IS(s) (!strcmp(op, s))
	if (IS("open"))
		r = open(b, O_RDONLY);
	else if (IS("openat"))
		r = openat(AT_FDCWD, b, O_WRONLY | O_CREAT, 0600);
	else if (IS("creat"))
		r = creat(b, 0600);
	else if (IS("stat"))
		r = stat(b, &st);
	else if (IS("lstat"))
		r = lstat(b, &st);
	else if (IS("fstatat"))
		r = fstatat(AT_FDCWD, b, &st, 0);
	else if (IS("access"))
		r = access(b, R_OK);
	else if (IS("mkdir"))
		r = mkdir(b, 0700);
	else if (IS("rmdir"))
		r = rmdir(b);
	else if (IS("unlink"))
		r = unlink(b);
	else if (IS("unlinkat"))
		r = unlinkat(AT_FDCWD, b, AT_REMOVEDIR);
	else if (IS("rename-from"))
		r = rename(b, fresh);
	else if (IS("rename-to"))
		r = rename(f, b);
	else if (IS("link-from"))
		r = link(b, fresh);
	else if (IS("link-to"))
		r = link(f, b);
	else if (IS("symlink-target"))
		r = symlink(b, fresh);
	else if (IS("symlink-name"))
		r = symlink("t", b);
	else if (IS("readlink"))
		r = (int)readlink(b, buf, sizeof(buf));
	else if (IS("chmod"))
		r = chmod(b, 0600);
	else if (IS("chown"))
		r = chown(b, 0, 0);
	else if (IS("truncate"))
		r = truncate(b, 0);
	else if (IS("utimensat"))
		r = utimensat(AT_FDCWD, b, NULL, 0);
	else if (IS("mkfifo"))
		r = mkfifo(b, 0600);
	else if (IS("mknod"))
		r = mknod(b, S_IFREG | 0600, 0);
	else if (IS("statfs"))
		r = statfs(b, &sf);
	else if (IS("chdir"))
		r = chdir(b);
	else if (IS("statx"))
		r = statx(AT_FDCWD, b, 0, STATX_BASIC_STATS, &stx);
	else if (IS("execve"))
		r = execve(b, (char *[]){ "x", NULL }, (char *[]){ NULL });
	else if (IS("fopen"))
		r = fopen(b, "r") ? 0 : -1;
	else if (IS("fopen-w"))
		r = fopen(b, "w") ? 0 : -1;
	else if (IS("lchown"))
		r = lchown(b, 0, 0);
	else if (IS("faccessat"))
		r = faccessat(AT_FDCWD, b, W_OK, AT_EACCESS);
	else if (IS("readlinkat"))
		r = (int)readlinkat(AT_FDCWD, b, buf, sizeof(buf));
	else if (IS("renameat2"))
		r = renameat2(AT_FDCWD, b, AT_FDCWD, fresh, RENAME_NOREPLACE);
	else if (IS("linkat"))
		r = linkat(AT_FDCWD, f, AT_FDCWD, b, 0);
	else if (IS("setxattr"))
		r = setxattr(b, "user.x", "v", 1, 0);
	else if (IS("getxattr"))
		r = (int)getxattr(b, "user.x", buf, sizeof(buf));
	else {
		fprintf(stderr, "badptr: unknown call %s\n", op);
		exit(2);
	}
#undef IS
	return r < 0 ? -errno : 0;
}

static const char *const calls[] = {
	"open", "openat", "creat", "stat", "lstat", "fstatat", "access", "mkdir", "rmdir",
	"unlink", "unlinkat", "rename-from", "rename-to", "link-from", "link-to",
	"symlink-target", "symlink-name", "readlink", "chmod", "chown", "truncate", "utimensat",
	"mkfifo", "mknod", "statfs", "chdir", "getxattr", "statx", "execve", "fopen", "fopen-w",
	"lchown", "faccessat", "readlinkat", "renameat2", "linkat", "setxattr",
};

int main(int argc, char **argv)
{
	size_t i, j;
	int st;

	if (argc != 2) {
		fprintf(stderr, "usage: badptr DIR\n");
		return 2;
	}
	dir = argv[1];
	snprintf(f, sizeof(f), "%s/f", dir);
	snprintf(fresh, sizeof(fresh), "%s/new", dir);
	close(open(f, O_WRONLY | O_CREAT, 0600));
	make_pointers();
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			pid_t pid;

			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				const char *b = (const char *)bad[j].addr;

				if (bad[j].kind >= UNMAPPED && bad[j].kind != CROSS_REL &&
				    bad[j].kind != CROSS_ABS)
					b = in_child(bad[j].kind);
				_exit(-call(calls[i], b) & 0xff);
			}
			if (pid < 0 || waitpid(pid, &st, 0) != pid)
				return 1;
			printf("%s %s: ", calls[i], bad[j].name);
			if (WIFSIGNALED(st))
				printf("signal %d\n", WTERMSIG(st));
			else if (WEXITSTATUS(st) == 0)
				printf("OK\n");
			else
				printf("%s\n", strerrorname_np(WEXITSTATUS(st)) ?
					       strerrorname_np(WEXITSTATUS(st)) : "?");
		}
	return 0;
}
