/*
 * conn.c — sockets and packet framing for the client.
 *
 * Sections: packet assembly (pure: bytes in, packets out) · reading a
 * socket · socket calls.  The socket calls go through core/sys (sys.h):
 * inside libpohmelfs.so, connect/poll/... by name could reach our own
 * interposed wrappers (DESIGN.md §5).  errno is never touched.
 */
#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"

/* ---------------------------------------------------------------- packet assembly */

void pohm_pkt_free_list(struct pohm_pkt *p)
{
	while (p) {
		struct pohm_pkt *next = p->next;

		free(p->data);
		free(p);
		p = next;
	}
}

/* Forget the current packet's split. */
static void rx_split_clear(struct pohm_rx *rx)
{
	rx->split = 0;
	rx->bound = NULL;
	rx->dest = NULL;
	rx->skip = 0;
}

void pohm_rx_reset(struct pohm_rx *rx)
{
	pohm_pkt_free_list(rx->pkt);
	free(rx->stage);
	rx->pkt = NULL;
	rx->stage = NULL;
	rx->hgot = 0;
	rx->dgot = 0;
	rx_split_clear(rx);
}

void pohm_rx_unbind(struct pohm_rx *rx)
{
	rx->bound = NULL;
	rx->dest = NULL;
}

/* Header complete: validate the size and allocate the packet (split if bind says so). */
static int rx_start_packet(struct pohm_rx *rx)
{
	struct pohm_pkt *pkt = calloc(1, sizeof(*pkt));
	uint64_t max = rx->max ? rx->max : POHM_RX_MAX;
	size_t keep;

	if (!pkt)
		return -ENOMEM;
	pohm_cmd_decode(&pkt->cmd, rx->hdr);
	if (pkt->cmd.size > max) {
		free(pkt);
		return -EPROTO;
	}
	rx_split_clear(rx);
	keep = (size_t)pkt->cmd.size;
	if (keep && rx->bind) {
		uint8_t *dest = NULL;
		size_t skip = 0;
		void *tok = rx->bind(rx->bind_arg, &pkt->cmd, &dest, &skip);

		if (tok && dest && skip <= keep) {
			rx->split = 1;
			rx->bound = tok;
			rx->dest = dest;
			rx->skip = skip;
			keep = skip;
		}
	}
	if (keep) {
		pkt->data = malloc(keep);
		if (!pkt->data) {
			free(pkt);
			return -ENOMEM;
		}
	}
	rx->pkt = pkt;
	rx->dgot = 0;
	return 0;
}

static void rx_finish_packet(struct pohm_rx *rx, struct pohm_pkt ***tail)
{
	if (rx->split) {
		rx->pkt->split = 1;
		rx->pkt->ext = rx->dest;
		rx->pkt->ext_len = (size_t)rx->pkt->cmd.size - rx->skip;
	}
	rx_split_clear(rx);
	**tail = rx->pkt;
	*tail = &rx->pkt->next;
	rx->pkt = NULL;
	rx->hgot = 0;
	rx->dgot = 0;
}

/*
 * Where the current packet's next payload bytes go: *at (NULL = dropped:
 * the tail of an unbound split packet) and at most how many.
 */
static size_t rx_target(struct pohm_rx *rx, uint8_t **at)
{
	size_t size = (size_t)rx->pkt->cmd.size;

	if (!rx->split) {
		*at = rx->pkt->data + rx->dgot;
		return size - rx->dgot;
	}
	if (rx->dgot < rx->skip) {
		*at = rx->pkt->data + rx->dgot;
		return rx->skip - rx->dgot;
	}
	*at = rx->dest ? rx->dest + (rx->dgot - rx->skip) : NULL;
	return size - rx->dgot;
}

int pohm_rx_feed(struct pohm_rx *rx, const uint8_t *p, size_t n, struct pohm_pkt ***tail)
{
	int r;

	while (n) {
		if (!rx->pkt) {
			size_t take = POHM_CMD_SIZE - rx->hgot;

			if (take > n)
				take = n;
			memcpy(rx->hdr + rx->hgot, p, take);
			rx->hgot += take;
			p += take;
			n -= take;
			if (rx->hgot < POHM_CMD_SIZE)
				break;
			r = rx_start_packet(rx);
			if (r)
				return r;
		} else {
			uint8_t *at;
			size_t want = rx_target(rx, &at);
			size_t take = want < n ? want : n;

			if (at)
				memcpy(at, p, take);
			rx->dgot += take;
			p += take;
			n -= take;
		}
		if (rx->pkt && rx->dgot == rx->pkt->cmd.size)
			rx_finish_packet(rx, tail);
	}
	return 0;
}

/* ---------------------------------------------------------------- reading a socket */

int pohm_rx_read(struct pohm_rx *rx, int fd, struct pohm_pkt ***tail)
{
	int rounds;

	/* Bounded so one busy socket cannot starve the others or the dispatch. */
	for (rounds = 0; rounds < 64; rounds++) {
		uint8_t *at = NULL;
		size_t want = rx->pkt ? rx_target(rx, &at) : 0;
		ssize_t got;
		int r;

		if (at && want >= POHM_RX_STAGE) {
			/* A large payload goes straight into its packet (or the caller's memory). */
			got = pohm_sys_read(fd, at, want);
			if (got > 0) {
				rx->dgot += (size_t)got;
				if (rx->dgot == rx->pkt->cmd.size)
					rx_finish_packet(rx, tail);
				if ((size_t)got < want)
					return 0;	/* drained: no read that fails EAGAIN */
				continue;
			}
		} else {
			if (!rx->stage) {
				rx->stage = malloc(POHM_RX_STAGE);
				if (!rx->stage)
					return -ENOMEM;
			}
			got = pohm_sys_read(fd, rx->stage, POHM_RX_STAGE);
			if (got > 0) {
				r = pohm_rx_feed(rx, rx->stage, (size_t)got, tail);
				if (r)
					return r;
				/* A short read emptied the socket: the next read would
				 * only fail EAGAIN (issue 23: 2 calls of every wait).
				 * The caller's poll is level-triggered: what arrives
				 * later wakes it again. */
				if ((size_t)got < POHM_RX_STAGE)
					return 0;
				continue;
			}
		}
		if (got == 0)
			return -ECONNRESET;	/* EOF */
		if (got == -EAGAIN)
			return 0;
		return (int)got;
	}
	return 0;
}

/* ---------------------------------------------------------------- socket calls */

int pohm_sock_connect_start(const struct pohm_addr *a)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, r;

	memset(&ss, 0, sizeof(ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		memcpy(&s6->sin6_addr, a->ip, 16);
		s6->sin6_scope_id = a->scope_id;
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		memcpy(&s4->sin_addr, a->ip, 4);
		len = sizeof(*s4);
	}
	fd = pohm_sys_socket((int)ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	fd = pohm_sys_move_high(fd);
	r = pohm_sys_connect(fd, &ss, len);
	if (r < 0 && r != -EINPROGRESS) {
		pohm_sys_close(fd);
		return r;
	}
	return fd;
}

static void setopt(int fd, int level, int name, int v)
{
	pohm_sys_setsockopt(fd, level, name, &v, (unsigned)sizeof(v));
}

int pohm_sock_connect_finish(int fd)
{
	int soerr = 0, r;
	unsigned len = sizeof(soerr);

	r = pohm_sys_getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
	if (r < 0)
		return r;
	if (soerr)
		return -soerr;
	/* As the stock client (PROTOCOL.md §6): keepalive 10 s idle, 10 s interval, 3 probes. */
	setopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	setopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, 10);
	setopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, 10);
	setopt(fd, IPPROTO_TCP, TCP_KEEPCNT, 3);
	setopt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	return 0;
}

int pohm_sock_poll(struct pollfd *fds, unsigned n, uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000ULL),
		.tv_nsec = (long)(timeout_ns % 1000000000ULL),
	};
	int r;

	do
		r = pohm_sys_ppoll(fds, n, &ts);
	while (r == -EINTR);
	return r;
}

ssize_t pohm_sock_sendv(int fd, const struct iovec *iov, int iovcnt)
{
	struct msghdr m;
	ssize_t r;

	memset(&m, 0, sizeof(m));
	m.msg_iov = (struct iovec *)iov;
	m.msg_iovlen = (size_t)iovcnt;
	do
		r = pohm_sys_sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r == -EINTR);
	if (r == -EWOULDBLOCK)
		r = -EAGAIN;
	return r;
}
