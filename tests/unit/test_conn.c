/*
 * test_conn.c — core/net/conn.c's socket calls (the packet assembler
 * pohm_rx_* is in test_net.c): a non-blocking connect that completes, or
 * fails with the peer's errno at finish; fds moved high and close-on-exec;
 * sendv that never blocks (-EAGAIN on a full socket) and never raises
 * SIGPIPE (-EPIPE); poll that times out; errno kept by each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "conn.h"
#include "sys.h"

/* A listening loopback socket; its address in *a. */
static int listener(struct pohm_addr *a)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(s);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&s, len) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&s, &len))
		return -1;
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = ntohs(s.sin_port);
	memcpy(a->ip, &s.sin_addr, 4);
	return fd;
}

/* Wait for fd to be writable (a connect done), at most 5 s: ready count. */
static int wait_out(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return pohm_sock_poll(&p, 1, 5000000000ULL);
}

TEST(connect_completes_high_cloexec_and_tuned)
{
	struct pohm_addr a;
	int l = listener(&a), fd, v = 0;
	socklen_t len = sizeof(v);

	EXPECT(l >= 0);
	errno = 1234;
	fd = pohm_sock_connect_start(&a);
	EXPECT_EQ_INT(errno, 1234);
	EXPECT(fd >= POHM_FD_BASE);
	EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT(fcntl(fd, F_GETFL) & O_NONBLOCK);
	EXPECT_EQ_INT(wait_out(fd), 1);
	EXPECT_EQ_INT(pohm_sock_connect_finish(fd), 0);
	EXPECT_EQ_INT(errno, 1234);
	EXPECT_EQ_INT(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	EXPECT_EQ_INT(v, 1);
	EXPECT_EQ_INT(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
	EXPECT_EQ_INT(v, 1);
	close(fd);
	close(l);
}

TEST(a_refused_connect_fails_at_finish_with_the_peers_errno)
{
	struct pohm_addr a;
	int l = listener(&a), fd, r;

	EXPECT(l >= 0);
	close(l);			/* nobody listens on that port now */
	fd = pohm_sock_connect_start(&a);
	if (fd < 0) {
		EXPECT_EQ_INT(fd, -ECONNREFUSED);	/* refused at once: also right */
		return;
	}
	EXPECT_EQ_INT(wait_out(fd), 1);
	r = pohm_sock_connect_finish(fd);
	EXPECT_EQ_INT(r, -ECONNREFUSED);
	close(fd);
}

TEST(sendv_never_blocks_nor_raises_sigpipe)
{
	static char big[1 << 16];
	struct iovec iov = { big, sizeof(big) };
	struct sigaction old, dfl = { .sa_handler = SIG_DFL };
	ssize_t r = 0;
	int sv[2], i;

	EXPECT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* Nobody reads sv[1]: the socket fills and sendv says -EAGAIN. */
	for (i = 0; i < 1000 && r >= 0; i++)
		r = pohm_sock_sendv(sv[0], &iov, 1);
	EXPECT_EQ_INT(r, -EAGAIN);
	/* The reader gone: -EPIPE, and the process is not killed by SIGPIPE. */
	close(sv[1]);
	sigaction(SIGPIPE, &dfl, &old);
	errno = 77;
	EXPECT_EQ_INT(pohm_sock_sendv(sv[0], &iov, 1), -EPIPE);
	EXPECT_EQ_INT(errno, 77);
	sigaction(SIGPIPE, &old, NULL);
	close(sv[0]);
}

TEST(poll_times_out)
{
	struct pollfd p;
	uint64_t t0;
	int sv[2];

	EXPECT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	p.fd = sv[0];
	p.events = POLLIN;
	t0 = pohm_sys_mono_ns();
	EXPECT_EQ_INT(pohm_sock_poll(&p, 1, 50000000ULL), 0);
	EXPECT(pohm_sys_mono_ns() - t0 >= 45000000ULL);
	EXPECT_EQ_INT(write(sv[1], "x", 1), 1);
	EXPECT_EQ_INT(pohm_sock_poll(&p, 1, 5000000000ULL), 1);
	EXPECT(p.revents & POLLIN);
	close(sv[0]);
	close(sv[1]);
}
