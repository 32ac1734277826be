/*
 * test_sys.c — the core/sys wrappers added for issue 20 (sockets, eventfd,
 * xattrs, symlinkat, mknodat, linkat, renameat2, getdents64, close_range): each returns
 * >= 0 or -errno and leaves errno exactly as it found it, failing or not.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
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
