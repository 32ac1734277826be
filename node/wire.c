/*
 * wire.c — packet framing on TCP sockets.
 *
 * Reads go through a 64 KiB read-ahead buffer so a burst of small
 * pipelined requests costs one recv(); large payloads are read straight
 * into their own buffer.  Sends gather the 120-byte header and the payload
 * pieces into one sendmsg, so no payload is ever copied to join it to its
 * header.
 */
#include "node_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WIRE_FIRST_ALLOC (16u << 20)	/* payload buffer before data proves the size */

/* Fill rd with at least one more byte; 1, 0 on EOF or -errno. */
static int rd_fill(int fd, struct node_rd *rd)
{
	ssize_t r;

	if (rd->start == rd->end)
		rd->start = rd->end = 0;
	if (rd->end == sizeof(rd->buf)) {
		memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
		rd->end -= rd->start;
		rd->start = 0;
	}
	do
		r = recv(fd, rd->buf + rd->end, sizeof(rd->buf) - rd->end, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	rd->end += (size_t)r;
	return 1;
}

/* Read the payload of size bytes into a growing buffer. 0 or -errno. */
static int read_payload(int fd, struct node_rd *rd, uint64_t size, uint8_t **out)
{
	size_t cap = size < WIRE_FIRST_ALLOC ? (size_t)size : WIRE_FIRST_ALLOC;
	size_t have = 0;
	uint8_t *p = malloc(cap ? cap : 1), *np;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	while (have < size) {
		size_t want, avail = rd->end - rd->start;
		ssize_t r;

		if (have == cap) {
			/* The peer proved it sends this much: grow (mremap for big blocks). */
			size_t ncap = cap * 2 < size ? cap * 2 : (size_t)size;

			np = realloc(p, ncap);
			if (!np) {
				ret = -ENOMEM;
				goto out;
			}
			p = np;
			cap = ncap;
		}
		want = cap - have;
		if (avail) {
			size_t n = avail < want ? avail : want;

			memcpy(p + have, rd->buf + rd->start, n);
			rd->start += n;
			have += n;
			continue;
		}
		if (want < sizeof(rd->buf)) {
			/* A small tail: read ahead into rd so the next header comes too. */
			r = rd_fill(fd, rd);
			if (r <= 0) {
				ret = r < 0 ? (int)r : -EPROTO;
				goto out;
			}
			continue;
		}
		do
			r = recv(fd, p + have, want, 0);
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			ret = -errno;
			goto out;
		}
		if (r == 0) {
			ret = -EPROTO;
			goto out;
		}
		have += (size_t)r;
	}
out:
	if (ret) {
		free(p);
		return ret;
	}
	*out = p;
	return 0;
}

/* See node_wire.h. */
int node_wire_read(int fd, struct node_rd *rd, uint64_t max, struct pohm_cmd *cmd,
		   uint8_t **payload)
{
	int r;

	*payload = NULL;
	while (rd->end - rd->start < POHM_CMD_SIZE) {
		size_t had = rd->end - rd->start;

		r = rd_fill(fd, rd);
		if (r < 0)
			return r;
		if (r == 0)
			return had ? -EPROTO : 0;
	}
	pohm_cmd_decode(cmd, rd->buf + rd->start);
	rd->start += POHM_CMD_SIZE;
	if (cmd->size > max)
		return -EMSGSIZE;
	if (!cmd->size)
		return 1;
	r = read_payload(fd, rd, cmd->size, payload);
	return r ? r : 1;
}

/* See node_wire.h. */
int node_wire_send(int fd, const struct pohm_cmd *hdr, const struct iovec *iov, int iovcnt)
{
	uint8_t h[POHM_CMD_SIZE];
	struct iovec v[16];
	struct msghdr m;
	int i, n = 0;

	if (iovcnt > 15)
		return -EINVAL;
	pohm_cmd_encode(h, hdr);
	v[n].iov_base = h;
	v[n++].iov_len = sizeof(h);
	for (i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			v[n++] = iov[i];
	memset(&m, 0, sizeof(m));
	m.msg_iov = v;
	m.msg_iovlen = (size_t)n;
	while (m.msg_iovlen) {
		ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* Skip what went out; resume in the middle of a piece. */
		while (m.msg_iovlen && (size_t)r >= m.msg_iov[0].iov_len) {
			r -= (ssize_t)m.msg_iov[0].iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov[0].iov_base = (uint8_t *)m.msg_iov[0].iov_base + r;
			m.msg_iov[0].iov_len -= (size_t)r;
		}
	}
	return 0;
}

/* See node_wire.h. */
int node_wire_send_raw(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* See node_wire.h. */
int node_rd_ready(const struct node_rd *rd)
{
	size_t have = rd->end - rd->start;

	return have >= POHM_CMD_SIZE &&
	       pohm_le64(rd->buf + rd->start + 112) <= have - POHM_CMD_SIZE;
}

/* See node_wire.h. */
socklen_t node_wire_sockaddr(const struct pohm_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		memcpy(&s6->sin6_addr, a->ip, 16);
		s6->sin6_scope_id = a->scope_id;
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		memcpy(&s4->sin_addr, a->ip, 4);
		return sizeof(*s4);
	}
}

/* See node_wire.h. */
void node_wire_tune(int fd)
{
	int one = 1, idle = 10, cnt = 3;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* See node_wire.h: non-blocking connect, poll, then back to blocking. */
int node_wire_connect(const struct pohm_addr *a, int timeout_ms)
{
	struct sockaddr_storage ss;
	socklen_t len = node_wire_sockaddr(a, &ss);
	struct pollfd pfd;
	int fd, r, err = 0, flags;
	socklen_t elen = sizeof(err);

	fd = socket(a->family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	r = connect(fd, (struct sockaddr *)&ss, len);
	if (r < 0 && errno != EINPROGRESS) {
		err = errno;
		goto fail;
	}
	if (r < 0) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		do
			r = poll(&pfd, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			err = ETIMEDOUT;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			err = errno;
		if (err)
			goto fail;
	}
	fcntl(fd, F_SETFL, flags);
	node_wire_tune(fd);
	return fd;
fail:
	close(fd);
	return -err;
}

/* See node_wire.h. */
int node_wire_listen(const struct pohm_addr *a)
{
	struct sockaddr_storage ss;
	socklen_t len = node_wire_sockaddr(a, &ss);
	int fd, one = 1, err;

	fd = socket(a->family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 1024) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}
