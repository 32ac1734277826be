/*
 * test_sys.c — the core/sys wrappers added for issue 20 (sockets, eventfd,
 * xattrs, symlinkat, mknodat, linkat, renameat2, getdents64, close_range; fchmodat,
 * fchown, utimensat, sync_file_range, fallocate for core/cache): each returns
 * >= 0 or -errno and leaves errno exactly as it found it, failing or not;
 * and raw.h's single calls (pohm_raw6), including the raw clone, dup2 and
 * exit that daemonstart.c makes in its copies of the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sys.h"

#define SENTINEL 4242

/* Run expr with errno = SENTINEL; expect its value and errno untouched. */
#define EXPECT_RET(expr, want) do {					\
	long th_r;							\
	errno = SENTINEL;						\
	th_r = (long)(expr);						\
	EXPECT_EQ_INT(errno, SENTINEL);					\
	EXPECT_EQ_INT(th_r, (want));					\
} while (0)

static char dir[] = "/tmp/pohm-test-sys.XXXXXX";

static int tmpdir(void)
{
	if (!mkdtemp(dir))
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void rmtmp(int dfd)
{
	unlinkat(dfd, "l", 0);
	unlinkat(dfd, "m", 0);
	unlinkat(dfd, "f", 0);
	unlinkat(dfd, "p", 0);
	unlinkat(dfd, "g", 0);
	close(dfd);
	rmdir(dir);
}

TEST(failures_are_negative_errno)
{
	char buf[256];
	unsigned len = sizeof(int);
	int v = 1;

	EXPECT_RET(pohm_sys_symlinkat("x", AT_FDCWD, "/nonexistent-dir/l"), -ENOENT);
	EXPECT_RET(pohm_sys_renameat2(AT_FDCWD, "/nonexistent-a", AT_FDCWD, "/nonexistent-b", 0),
		   -ENOENT);
	EXPECT_RET(pohm_sys_getdents64(-1, buf, sizeof(buf)), -EBADF);
	EXPECT_RET(pohm_sys_close_range(5, 4, 0), -EINVAL);
	EXPECT_RET(pohm_sys_listxattr(-1, "/nonexistent", 0, buf, sizeof(buf)), -ENOENT);
	EXPECT_RET(pohm_sys_listxattr(-1, "/nonexistent", 1, buf, sizeof(buf)), -ENOENT);
	EXPECT_RET(pohm_sys_getxattr(-1, "/nonexistent", 0, "user.a", buf, sizeof(buf)), -ENOENT);
	EXPECT_RET(pohm_sys_setxattr(-1, "/nonexistent", 1, "user.a", "v", 1, 0), -ENOENT);
	EXPECT_RET(pohm_sys_removexattr(-1, "/nonexistent", 0, "user.a"), -ENOENT);
	EXPECT_RET(pohm_sys_getxattr(9999, NULL, 0, "user.a", buf, sizeof(buf)), -EBADF);
	EXPECT_RET(pohm_sys_socket(12345, SOCK_STREAM, 0), -EAFNOSUPPORT);
	EXPECT_RET(pohm_sys_connect(9999, buf, 16), -EBADF);
	EXPECT_RET(pohm_sys_setsockopt(9999, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), -EBADF);
	EXPECT_RET(pohm_sys_getsockopt(9999, SOL_SOCKET, SO_ERROR, &v, &len), -EBADF);
	EXPECT_RET(pohm_sys_sendmsg(9999, buf, 0), -EBADF);
	EXPECT_RET(pohm_sys_eventfd(0, -1), -EINVAL);
}

TEST(raw_calls)
{
	struct pohm_ksigaction old = { SIG_IGN, 0, NULL, 0 };
	struct statfs sfs;
	uint64_t mask;
	char buf[64];
	int fd, status = 0;
	pid_t pid;

	EXPECT_RET(pohm_sys_openat_inherit(AT_FDCWD, "/nonexistent", O_RDONLY, 0), -ENOENT);
	EXPECT_RET(pohm_sys_dup2(9999, 9998), -EBADF);
	EXPECT_RET(pohm_sys_faccessat(AT_FDCWD, "/nonexistent", X_OK), -ENOENT);
	EXPECT_RET(pohm_sys_fchmod(-1, 0), -EBADF);
	EXPECT_RET(pohm_sys_fchownat(AT_FDCWD, "/nonexistent", 0, 0, 0), -ENOENT);
	EXPECT_RET(pohm_sys_fchmodat(AT_FDCWD, "/nonexistent", 0), -ENOENT);
	EXPECT_RET(pohm_sys_fchown(-1, 0, 0), -EBADF);
	EXPECT_RET(pohm_sys_utimensat(AT_FDCWD, "/nonexistent", NULL, 0), -ENOENT);
	EXPECT_RET(pohm_sys_sync_file_range(-1, 0, 0, SYNC_FILE_RANGE_WRITE), -EBADF);
	EXPECT_RET(pohm_sys_fallocate(-1, 0, 0, 1), -EBADF);
	EXPECT_RET(pohm_sys_readlinkat(AT_FDCWD, "/nonexistent", buf, sizeof(buf)), -ENOENT);
	EXPECT_RET(pohm_sys_fstatfs(-1, &sfs), -EBADF);
	EXPECT_RET(pohm_sys_flock(-1, LOCK_EX), -EBADF);
	EXPECT_RET(pohm_sys_sigaction(SIGKILL, &old, NULL), -EINVAL);
	EXPECT_RET(pohm_sys_sigmask(12345, NULL, &mask), 0);	/* set NULL: how unused */
	EXPECT_RET(pohm_sys_wait4(-1, NULL, WNOHANG), -ECHILD);
	EXPECT_RET(pohm_sys_execve("/nonexistent", NULL, NULL), -ENOENT);
	EXPECT_RET(pohm_sys_gettid(), gettid());
	EXPECT_RET(pohm_sys_getegid(), getegid());
	EXPECT_RET(pohm_sys_getpid(), getpid());
	EXPECT_RET(pohm_sys_geteuid(), geteuid());
	EXPECT_RET(pohm_sys_sigaction(SIGUSR1, NULL, &old), 0);
	EXPECT(old.handler == SIG_DFL);
	/* An inherited fd, a dup2 (also onto itself) and a fstatfs. */
	fd = pohm_sys_openat_inherit(AT_FDCWD, "/dev/null", O_RDWR, 0);
	EXPECT(fd >= 0);
	EXPECT_RET(pohm_sys_fcntl(fd, F_GETFD, 0), 0);	/* no FD_CLOEXEC */
	EXPECT_RET(pohm_sys_dup2(fd, fd), fd);
	EXPECT_RET(pohm_sys_fstatfs(fd, &sfs), 0);
	EXPECT_RET(pohm_sys_flock(fd, LOCK_EX), 0);
	pohm_sys_close(fd);
	/* daemonstart's copy: clone without an exit signal, a new session and
	 * a thread exit there, reaped with __WCLONE. */
	errno = SENTINEL;
	pid = pohm_sys_clone_copy(0);
	if (pid == 0) {
		fd = pohm_sys_openat_inherit(AT_FDCWD, "/dev/null", O_RDWR, 0);
		pohm_sys_exit_thread(pohm_sys_setsid() > 0 && fd >= 0 &&
				     pohm_sys_dup2(fd, fd) == fd ? 7 : 1);
	}
	EXPECT(pid > 0);
	EXPECT_RET(pohm_sys_wait4(pid, &status, __WCLONE), pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 7);
}

TEST(raw_calls_for_preload)
{
	char cwd[4096], lc[4096], buf[8], b = 'x', got = 0;
	struct iovec l = { &got, 1 }, r = { &b, 1 }, w = { &b, 1 };
	struct statx sx;
	struct stat st;
	long m, m2;
	int fd;

	EXPECT_RET(pohm_sys_mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), -EINVAL);
	EXPECT_RET(pohm_sys_munmap((void *)1, 4096), -EINVAL);
	EXPECT_RET(pohm_sys_mprotect((void *)1, 4096, PROT_READ), -EINVAL);
	EXPECT_RET(pohm_sys_mremap((void *)1, 4096, 8192, 0, NULL), -EINVAL);
	EXPECT_RET(pohm_sys_getcwd(cwd, 1), -ERANGE);
	EXPECT_RET(pohm_sys_getrandom(buf, sizeof(buf), 0xdead0000), -EINVAL);
	EXPECT_RET(pohm_sys_writev(-1, &w, 1), -EBADF);
	EXPECT_RET(pohm_sys_statx(AT_FDCWD, "/nonexistent", 0, STATX_INO, &sx), -ENOENT);
	EXPECT_RET(pohm_sys_memfd_create("x", 0xdead0000), -EINVAL);
	/* Successes, against libc's view. */
	errno = SENTINEL;
	m = pohm_sys_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(m > 0);
	EXPECT_RET(pohm_sys_mprotect((void *)m, 4096, PROT_READ), 0);
	errno = SENTINEL;
	m2 = pohm_sys_mremap((void *)m, 4096, 8192, MREMAP_MAYMOVE, NULL);
	EXPECT_EQ_INT(errno, SENTINEL);
	EXPECT(m2 > 0);
	EXPECT_RET(pohm_sys_munmap((void *)(m2 > 0 ? m2 : m), m2 > 0 ? 8192 : 4096), 0);
	EXPECT(getcwd(lc, sizeof(lc)) != NULL);
	EXPECT_RET(pohm_sys_getcwd(cwd, sizeof(cwd)), (long)strlen(lc) + 1);
	EXPECT_EQ_STR(cwd, lc);
	EXPECT_RET(pohm_sys_getrandom(buf, sizeof(buf), 0), (long)sizeof(buf));
	EXPECT_RET(pohm_sys_process_vm_readv(getpid(), &l, 1, &r, 1), 1);
	EXPECT(got == 'x');
	EXPECT_RET(pohm_sys_statx(AT_FDCWD, "/", 0, STATX_INO, &sx), 0);
	EXPECT(stat("/", &st) == 0 && sx.stx_ino == st.st_ino);
	fd = pohm_sys_memfd_create("pohm-test", MFD_CLOEXEC);
	EXPECT(fd >= 0);
	EXPECT_RET(pohm_sys_writev(fd, &w, 1), 1);
	close(fd);
}

TEST(files_and_xattrs)
{
	char buf[4096];
	int dfd = tmpdir(), fd;
	ssize_t n;

	EXPECT(dfd >= 0);
	if (dfd < 0)
		return;
	EXPECT_RET(pohm_sys_symlinkat("target", dfd, "l"), 0);
	EXPECT_RET(pohm_sys_symlinkat("target", dfd, "l"), -EEXIST);
	fd = openat(dfd, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	EXPECT(fd >= 0);
	EXPECT_RET(pohm_sys_renameat2(dfd, "l", dfd, "f", RENAME_NOREPLACE), -EEXIST);
	EXPECT_RET(pohm_sys_renameat2(dfd, "l", dfd, "m", RENAME_NOREPLACE), 0);
	EXPECT_RET(pohm_sys_mknodat(dfd, "p", S_IFIFO | 0600, 0), 0);
	EXPECT_RET(pohm_sys_mknodat(dfd, "p", S_IFIFO | 0600, 0), -EEXIST);
	EXPECT_RET(pohm_sys_linkat(dfd, "f", dfd, "g", 0), 0);
	EXPECT_RET(pohm_sys_linkat(dfd, "f", dfd, "g", 0), -EEXIST);
	/* The attribute calls the cache makes on its copies, checked by fstat. */
	{
		struct timespec tv[2] = { { 1000, 5 }, { 2000, 7 } };
		struct stat st;
		long r;

		EXPECT_RET(pohm_sys_fchmodat(dfd, "f", 0640), 0);
		EXPECT_RET(pohm_sys_fchown(fd, geteuid(), getegid()), 0);
		errno = SENTINEL;
		r = pohm_sys_fallocate(fd, 0, 0, 8192);	/* before the times: it sets mtime */
		EXPECT_EQ_INT(errno, SENTINEL);
		EXPECT(r == 0 || r == -EOPNOTSUPP);
		EXPECT_RET(pohm_sys_sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE), 0);
		EXPECT_RET(pohm_sys_utimensat(fd, NULL, tv, 0), 0);
		EXPECT_RET(pohm_sys_utimensat(dfd, "m", tv, AT_SYMLINK_NOFOLLOW), 0);
		EXPECT(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0640);
		EXPECT(st.st_mtim.tv_sec == 2000 && st.st_mtim.tv_nsec == 7);
		EXPECT(st.st_atim.tv_sec == 1000 && st.st_atim.tv_nsec == 5);
		EXPECT(r || st.st_size == 8192);
		EXPECT(fstatat(dfd, "m", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       st.st_mtim.tv_sec == 2000);
	}
	errno = SENTINEL;
	n = pohm_sys_getdents64(dfd, buf, sizeof(buf));
	EXPECT_EQ_INT(errno, SENTINEL);
	EXPECT(n > 0);
	/* user.* xattrs: where the file system has them, a round trip. */
	errno = SENTINEL;
	n = pohm_sys_setxattr(fd, NULL, 0, "user.t", "abc", 3, 0);
	EXPECT_EQ_INT(errno, SENTINEL);
	EXPECT(n == 0 || n == -ENOTSUP);
	if (n == 0) {
		EXPECT_RET(pohm_sys_getxattr(fd, NULL, 0, "user.t", buf, sizeof(buf)), 3);
		EXPECT(!memcmp(buf, "abc", 3));
		snprintf(buf, sizeof(buf), "%s/f", dir);
		EXPECT_RET(pohm_sys_listxattr(-1, buf, 1, NULL, 0), 7);	/* "user.t\0" */
		EXPECT_RET(pohm_sys_removexattr(-1, buf, 0, "user.t"), 0);
		EXPECT_RET(pohm_sys_removexattr(fd, NULL, 0, "user.t"), -ENODATA);
	}
	close(fd);
	rmtmp(dfd);
}

TEST(sockets_and_eventfd)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	struct pollfd p;
	struct timespec ts = { 0, 0 };
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s, efd, soerr = -1;
	unsigned len = sizeof(soerr);

	EXPECT(ls >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	EXPECT(!bind(ls, (struct sockaddr *)&a, sizeof(a)) && !listen(ls, 1) &&
	       !getsockname(ls, (struct sockaddr *)&a, &alen));
	errno = SENTINEL;
	s = pohm_sys_socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ_INT(errno, SENTINEL);
	EXPECT(s >= 0);
	EXPECT_RET(pohm_sys_connect(s, &a, sizeof(a)), 0);
	EXPECT_RET(pohm_sys_getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len), 0);
	EXPECT_EQ_INT(soerr, 0);
	p.fd = s;
	p.events = POLLOUT;
	EXPECT_RET(pohm_sys_ppoll(&p, 1, &ts), 1);
	errno = SENTINEL;
	efd = pohm_sys_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	EXPECT_EQ_INT(errno, SENTINEL);
	EXPECT(efd >= 0);
	p.fd = efd;
	p.events = POLLIN;
	EXPECT_RET(pohm_sys_ppoll(&p, 1, &ts), 0);
	EXPECT_EQ_INT(pohm_sys_geteuid(), geteuid());
	close(efd);
	close(s);
	close(ls);
}

/* The one permission checker (perm.h), with hand-made credentials: no
 * groups and no capabilities read from the process, so the answers do
 * not depend on who runs the test. */
TEST(perm_mode_bits_and_root)
{
	struct pohm_cred u = { 1000, 100, 0 }, root = { 0, 0, POHM_CRED_ROOT },
			 plain0 = { 0, 0, 0 };

	/* owner bits, then group bits, then other bits: the first that applies decides */
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0600, 1000, 5, R_OK | W_OK, &u), 0);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0066, 1000, 100, R_OK, &u), -EACCES);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0040, 7, 100, R_OK, &u), 0);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0004, 7, 100, R_OK, &u), -EACCES);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0004, 7, 8, R_OK, &u), 0);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFDIR | 0300, 1000, 5, W_OK | X_OK, &u), 0);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFDIR | 0500, 1000, 5, W_OK | X_OK, &u), -EACCES);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0000, 7, 8, 0, &u), 0);
	/* uid 0's override: everything but executing a file with no x bit */
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0000, 7, 8, R_OK | W_OK, &root), 0);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0644, 7, 8, X_OK, &root), -EACCES);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0010, 7, 8, X_OK, &root), 0);
	EXPECT_EQ_INT(pohm_perm_mode(S_IFDIR | 0000, 7, 8, X_OK, &root), 0);
	/* id 0 without POHM_CRED_ROOT (or capabilities) is an ordinary user */
	EXPECT_EQ_INT(pohm_perm_mode(S_IFREG | 0000, 7, 8, R_OK, &plain0), -EACCES);
}

/* ------------------------------------------------------------ long paths */

#define LONG_DEPTH 45	/* 45 names of 200 bytes: 9044 bytes, three chunks */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* Component i of the long path: 200 bytes, "Dnn" then 'x's ('S' for the link). */
static void long_name(char *o, int i, char first)
{
	memset(o, 'x', 200);
	o[0] = first;
	o[1] = (char)('0' + i / 10);
	o[2] = (char)('0' + i % 10);
	o[200] = '\0';
}

/* The path of the first n components below the test directory (the 20th,
 * component 19, spelled through the symlink "S19..." when via is set). */
static void long_path(char *o, int n, int via)
{
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (i)
			o[len++] = '/';
		long_name(o + len, i, via && i == 19 ? 'S' : 'D');
		len += 200;
	}
	o[len] = '\0';
}

/*
 * pohm_sys_long_at and the *at wrappers on paths of 4096 bytes and more
 * (issue 19 item 10): the kernel refuses them; the wrappers walk them in
 * chunks and give the answer the kernel would give a whole path, follow
 * a symlink at a chunk's end as the kernel follows one in a path, leave
 * errno alone and keep no fd.
 */
TEST(long_paths_walk_in_chunks)
{
	static char path[LONG_DEPTH * 201 + 512], other[LONG_DEPTH * 201 + 512];
	char tmpl[] = "/tmp/pohm-test-long.XXXXXX", name[256], buf[64];
	const char *tail;
	struct timespec tv[2] = { { 1000, 5 }, { 2000, 7 } };
	struct stat st;
	int dfd, fd, i, fds;
	size_t len;

	EXPECT(mkdtemp(tmpl) != NULL);
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	EXPECT(dfd >= 0);
	if (dfd < 0)
		return;
	fds = count_fds();
	EXPECT_EQ_INT(pohm_sys_long_path("a/b"), 0);
	long_path(path, LONG_DEPTH, 0);
	EXPECT_EQ_INT(pohm_sys_long_path(path), 1);
	/* Build the tree with the wrapper itself: levels 21.. are >= 4096 bytes. */
	for (i = 1; i <= LONG_DEPTH; i++) {
		long_path(path, i, 0);
		EXPECT_RET(pohm_sys_mkdirat(dfd, path, 0755), 0);
	}
	EXPECT(mkdirat(dfd, path, 0755) < 0 && errno == ENAMETOOLONG);	/* the kernel alone */
	/* The chunk of a 9 KB path: cut at its 20th '/', a directory fd. */
	len = strlen(path);
	EXPECT(len > 9000);
	fd = pohm_sys_long_at(dfd, path, &tail);
	EXPECT(fd >= 0);
	EXPECT(strlen(tail) < 4096 && tail > path && tail[-1] == '/');
	EXPECT((size_t)(tail - path) % 201 == 0);
	if (fd >= 0) {
		EXPECT(fstat(fd, &st) == 0 && S_ISDIR(st.st_mode));
		EXPECT(fstatat(fd, tail, &st, 0) == 0 && S_ISDIR(st.st_mode));
		close(fd);
	}
	/* A file at the bottom: create, write, stat, rename, link, chmod, times. */
	len = strlen(path);
	memcpy(path + len, "/f", 3);
	fd = pohm_sys_openat(dfd, path, O_RDWR | O_CREAT | O_EXCL, 0600);
	EXPECT(fd >= 0);
	if (fd >= 0) {
		EXPECT(write(fd, "hello", 5) == 5);
		close(fd);
	}
	EXPECT_RET(pohm_sys_fstatat(dfd, path, &st, 0), 0);
	EXPECT_EQ_INT((int)st.st_size, 5);
	EXPECT_RET(pohm_sys_faccessat(dfd, path, R_OK), 0);
	EXPECT_RET(pohm_sys_fchmodat(dfd, path, 0640), 0);
	EXPECT_RET(pohm_sys_utimensat(dfd, path, tv, 0), 0);
	EXPECT_RET(pohm_sys_fstatat(dfd, path, &st, 0), 0);
	EXPECT((st.st_mode & 07777) == 0640 && st.st_mtim.tv_sec == 2000);
	memcpy(other, path, len);
	memcpy(other + len, "/g", 3);
	EXPECT_RET(pohm_sys_renameat(dfd, path, dfd, other), 0);
	EXPECT_RET(pohm_sys_fstatat(dfd, path, &st, 0), -ENOENT);
	EXPECT_RET(pohm_sys_linkat(dfd, other, dfd, path, 0), 0);
	EXPECT_RET(pohm_sys_renameat2(dfd, other, dfd, path, RENAME_NOREPLACE), -EEXIST);
	/* One long, one short: the short side stays as it was. */
	EXPECT_RET(pohm_sys_renameat(dfd, other, dfd, "top"), 0);
	EXPECT_RET(pohm_sys_renameat(dfd, "top", dfd, other), 0);
	EXPECT_RET(pohm_sys_unlinkat(dfd, other, 0), 0);
	/* Symlinks: made, read, and followed at a chunk's end as the kernel would. */
	memcpy(other + len, "/l", 3);
	EXPECT_RET(pohm_sys_symlinkat("f", dfd, other), 0);
	EXPECT_RET(pohm_sys_readlinkat(dfd, other, buf, sizeof(buf)), 1);
	EXPECT_RET(pohm_sys_fstatat(dfd, other, &st, 0), 0);
	EXPECT_EQ_INT((int)st.st_size, 5);
	EXPECT_RET(pohm_sys_unlinkat(dfd, other, 0), 0);
	long_path(other, 19, 0);
	long_name(name, 19, 'S');
	len = strlen(other);
	other[len] = '/';
	long_name(other + len + 1, 19, 'D');
	other[len] = '\0';
	{
		int pfd = pohm_sys_openat(dfd, other, O_PATH | O_DIRECTORY, 0);	/* < 4096 */

		EXPECT(pfd >= 0);
		EXPECT(symlinkat(other + len + 1, pfd, name) == 0);	/* S19 -> D19 */
		close(pfd);
	}
	long_path(other, LONG_DEPTH, 1);
	memcpy(other + strlen(other), "/f", 3);
	EXPECT_RET(pohm_sys_fstatat(dfd, other, &st, 0), 0);
	EXPECT_EQ_INT((int)st.st_size, 5);
	/* What the kernel would answer: a missing directory, a name too long. */
	path[201 * 30] = 'Q';
	EXPECT_RET(pohm_sys_fstatat(dfd, path, &st, 0), -ENOENT);
	path[201 * 30] = 'D';
	memset(other, 'y', 300);
	other[300] = '/';
	long_path(other + 301, LONG_DEPTH, 0);
	EXPECT_RET(pohm_sys_fstatat(dfd, other, &st, 0), -ENAMETOOLONG);
	memset(other, 'z', 5000);
	other[5000] = '\0';
	EXPECT_RET(pohm_sys_fstatat(dfd, other, &st, 0), -ENAMETOOLONG);
	/* Tear down with the wrappers: unlink, then rmdir from the bottom. */
	EXPECT_RET(pohm_sys_unlinkat(dfd, path, 0), 0);
	long_path(other, 19, 0);
	len = strlen(other);
	other[len] = '/';
	memcpy(other + len + 1, name, 201);	/* S19, 4019 bytes */
	EXPECT_RET(pohm_sys_unlinkat(dfd, other, 0), 0);
	for (i = LONG_DEPTH; i >= 1; i--) {
		long_path(path, i, 0);
		EXPECT_RET(pohm_sys_unlinkat(dfd, path, AT_REMOVEDIR), 0);
	}
	EXPECT_EQ_INT(count_fds(), fds);
	close(dfd);
	EXPECT(rmdir(tmpl) == 0);
}

/*
 * pohm_sys_pid (issue 23: no getpid per call): the pid asked once, and
 * asked again in every fork child, also one that no atfork handler saw:
 * glibc's fork, _Fork (no handlers), and a raw clone with SIGCHLD.
 */
static int pid_child_ok(void)
{
	return pohm_sys_pid() == (pid_t)syscall(SYS_getpid) ? 0 : 1;
}

TEST(sys_pid_per_process)
{
	pid_t me = getpid(), pid;
	int st, how;

	EXPECT_EQ_INT((int)pohm_sys_pid(), (int)me);
	EXPECT_EQ_INT((int)pohm_sys_pid(), (int)me);	/* the cached answer */
	for (how = 0; how < 3; how++) {
		if (how == 0)
			pid = fork();
		else if (how == 1)
			pid = _Fork();
		else
			pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		if (pid == 0)
			_exit(pid_child_ok());
		EXPECT(pid > 0);
		EXPECT(waitpid(pid, &st, 0) == pid);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	EXPECT_EQ_INT((int)pohm_sys_pid(), (int)me);
}

/*
 * pohm_sys_once (light init's and the real table's once, issue 23): the
 * function runs once; threads that arrive while it runs return only after
 * it ended (they wait on the futex, and its end wakes them); later calls
 * return at once.  Run under SAN=thread too.
 */
static int once_word, once_runs, once_done;

static void once_slow(void)
{
	__atomic_add_fetch(&once_runs, 1, __ATOMIC_RELAXED);
	usleep(50000);	/* the other threads arrive meanwhile */
	__atomic_store_n(&once_done, 1, __ATOMIC_RELAXED);
}

static void *once_caller(void *arg)
{
	int *saw_done = arg;

	pohm_sys_once(&once_word, once_slow);
	*saw_done = __atomic_load_n(&once_done, __ATOMIC_RELAXED);
	return NULL;
}

TEST(once_runs_once_and_others_wait_for_it)
{
	pthread_t t[8];
	int saw[8], i;

	for (i = 0; i < 8; i++)
		EXPECT_EQ_INT(pthread_create(&t[i], NULL, once_caller, &saw[i]), 0);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ_INT(pthread_join(t[i], NULL), 0);
		EXPECT_EQ_INT(saw[i], 1);
	}
	EXPECT_EQ_INT(once_runs, 1);
	pohm_sys_once(&once_word, once_slow);	/* done: returns at once */
	EXPECT_EQ_INT(once_runs, 1);
}

/*
 * The kept credentials (core/sys perm.c, issue 23): after
 * pohm_sys_keep_attrs, asked once and again only after
 * pohm_sys_creds_changed; a change nobody reports (a raw system call) is
 * not seen, which is why the shim wraps every libc way to make one.
 * Threads read while another reports changes: every answer is the
 * process's (run under SAN=thread too).  Last in this file: it turns the
 * keeping on for the rest of the process.
 */
struct creds_reader {
	uid_t euid;
	int bad;
};

static void *creds_read_loop(void *arg)
{
	struct creds_reader *r = arg;
	struct pohm_cred cr;
	int i;

	for (i = 0; i < 20000; i++) {
		pohm_cred_access(&cr, 1);
		if (cr.uid != r->euid || pohm_perm_euid() != r->euid || pohm_perm_fsuid() != r->euid)
			r->bad++;
	}
	return NULL;
}

TEST(creds_kept_until_reported)
{
	struct creds_reader rd[3];
	pthread_t t[3];
	uid_t me = geteuid();
	int i;

	pohm_sys_keep_attrs();
	EXPECT_EQ_INT((int)pohm_perm_euid(), (int)me);
	for (i = 0; i < 3; i++) {
		rd[i].euid = me;
		rd[i].bad = 0;
		EXPECT(pthread_create(&t[i], NULL, creds_read_loop, &rd[i]) == 0);
	}
	for (i = 0; i < 2000; i++)
		pohm_sys_creds_changed();
	for (i = 0; i < 3; i++) {
		EXPECT(pthread_join(t[i], NULL) == 0);
		EXPECT_EQ_INT(rd[i].bad, 0);
	}
	if (me != 0)
		return;	/* the rest switches ids */
	/* Kept now (the readers may have ended before the last report)... */
	EXPECT_EQ_INT((int)pohm_perm_euid(), 0);
	/* ...so a raw change of this thread's euid, not reported, is not seen... */
	EXPECT(syscall(SYS_setresuid, -1, 65534, -1) == 0);
	EXPECT_EQ_INT((int)pohm_perm_euid(), 0);
	/* ...until reported. */
	pohm_sys_creds_changed();
	EXPECT_EQ_INT((int)pohm_perm_euid(), 65534);
	EXPECT_EQ_INT((int)pohm_perm_fsuid(), 65534);
	EXPECT_EQ_INT(pohm_perm_has_cap(CAP_DAC_OVERRIDE), 0);
	EXPECT(syscall(SYS_setresuid, -1, 0, -1) == 0);
	pohm_sys_creds_changed();
	EXPECT_EQ_INT((int)pohm_perm_euid(), 0);
	EXPECT_EQ_INT(pohm_perm_has_cap(CAP_DAC_OVERRIDE), 1);
	/* A thread's own change turns the keeping off: the kernel is asked. */
	pohm_sys_creds_per_thread();
	EXPECT(syscall(SYS_setfsuid, 65534) >= 0);
	EXPECT_EQ_INT((int)pohm_perm_fsuid(), 65534);
	EXPECT(syscall(SYS_setfsuid, 0) >= 0);
	EXPECT_EQ_INT((int)pohm_perm_fsuid(), 0);
}

/* pohm_sys_open_parent: one O_NOFOLLOW component at a time from pfd, with
 * no copy of pfd first (issue 23): the right directory, *name, the errors,
 * and no fd left open in any case. */
TEST(open_parent_walks_from_the_base)
{
	const char *root = th_scratch("sysparent");
	char p[512];
	const char *name;
	struct stat a, b;
	int pfd, fd, before, after;

	snprintf(p, sizeof(p), "%s/a", root);
	EXPECT_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/b", root);
	EXPECT_EQ_INT(mkdir(p, 0755), 0);
	pfd = open(root, O_PATH | O_DIRECTORY);
	EXPECT(pfd >= 0);
	EXPECT_EQ_INT(symlinkat("a", pfd, "l"), 0);
	before = dup(0);
	close(before);
	fd = pohm_sys_open_parent(pfd, "a/b/c", &name);
	EXPECT(fd >= 0);
	EXPECT_EQ_STR(name, "c");
	EXPECT_EQ_INT(fstat(fd, &a), 0);
	EXPECT_EQ_INT(fstatat(pfd, "a/b", &b, 0), 0);
	EXPECT_EQ_U64(a.st_ino, b.st_ino);
	close(fd);
	fd = pohm_sys_open_parent(pfd, "x", &name);
	EXPECT(fd >= 0 && fd != pfd);
	EXPECT_EQ_STR(name, "x");
	EXPECT_EQ_INT(fstat(fd, &a), 0);
	EXPECT_EQ_INT(fstat(pfd, &b), 0);
	EXPECT_EQ_U64(a.st_ino, b.st_ino);
	close(fd);
	EXPECT_EQ_INT(pohm_sys_open_parent(pfd, "", &name), -EINVAL);
	EXPECT_EQ_INT(pohm_sys_open_parent(pfd, "a/", &name), -EINVAL);
	EXPECT_EQ_INT(pohm_sys_open_parent(pfd, "a//c", &name), -EINVAL);
	EXPECT(pohm_sys_open_parent(pfd, "l/c", &name) < 0);	/* a symlink on the way */
	EXPECT(pohm_sys_open_parent(pfd, "a/l/c", &name) < 0);	/* missing */
	/* A parent of two or more components is one openat2 that follows no
	 * symlink (session 15): a link first, last, or an empty component
	 * still fails as the walk's. */
	EXPECT_EQ_INT(symlinkat("b", pfd, "a/lb"), 0);
	EXPECT(pohm_sys_open_parent(pfd, "l/b/c", &name) < 0);
	EXPECT(pohm_sys_open_parent(pfd, "a/lb/c", &name) < 0);
	EXPECT_EQ_INT(pohm_sys_open_parent(pfd, "a//b/c", &name), -EINVAL);
	fd = pohm_sys_open_dir_nolinks(pfd, "a/b");
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(fstat(fd, &a), 0);
	EXPECT_EQ_INT(fstatat(pfd, "a/b", &b, 0), 0);
	EXPECT_EQ_U64(a.st_ino, b.st_ino);
	close(fd);
	EXPECT_EQ_INT(pohm_sys_open_dir_nolinks(pfd, "l/b"), -ELOOP);
	after = dup(0);
	close(after);
	EXPECT_EQ_INT(after, before);	/* nothing left open */
	close(pfd);
}

/* fd_path_thread: in a thread with its own table (unshare(CLONE_FILES)),
 * pohm_sys_fd_path of fd 900 (open only there) and of fd 901 (open only in
 * the main thread's table). */
struct fd_path_res {
	int unshared, n900, n901;
	char p900[256];
};

static void *fd_path_thread(void *arg)
{
	struct fd_path_res *r = arg;
	char buf[256];
	int fd;

	r->unshared = !unshare(CLONE_FILES);
	if (!r->unshared)
		return NULL;
	close(901);
	fd = open("/", O_PATH | O_DIRECTORY);
	if (fd >= 0 && dup3(fd, 900, O_CLOEXEC) == 900) {
		r->n900 = pohm_sys_fd_path(900, r->p900, sizeof(r->p900));
		close(900);
	}
	if (fd >= 0)
		close(fd);
	r->n901 = pohm_sys_fd_path(901, buf, sizeof(buf));
	return NULL;
}

/* The kernel's path of an fd is read in the calling thread's table
 * (/proc/thread-self/fd): a thread that did unshare(CLONE_FILES) has its
 * own, which /proc/self/fd (the main thread's) does not show. */
TEST(fd_path_reads_the_callers_table)
{
	struct fd_path_res r = { 0, -1, -1, "" };
	char buf[64];
	pthread_t t;

	EXPECT_EQ_INT(dup2(0, 901), 901);
	EXPECT_EQ_INT(pohm_sys_fd_path(901, buf, sizeof(buf)) > 0, 1);
	EXPECT_EQ_INT(pthread_create(&t, NULL, fd_path_thread, &r), 0);
	EXPECT_EQ_INT(pthread_join(t, NULL), 0);
	close(901);
	if (!r.unshared)
		SKIP("unshare(CLONE_FILES) is refused here");
	EXPECT_EQ_INT(r.n900, 1);
	EXPECT_EQ_STR(r.p900, "/");
	EXPECT_EQ_INT(r.n901, -ENOENT);
}
