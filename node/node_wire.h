/*
 * node_wire.h — packet framing on TCP sockets (node/wire.c), shared by the
 * server side (conn.c), the links to other nodes (peer.c) and the test
 * client.  Named apart from core/wire/wire.h, which node/ also includes.
 */
#ifndef POHM_NODE_WIRE_H
#define POHM_NODE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "wire.h"

/* A read-ahead buffer: small packets are parsed out of one recv(). */
struct node_rd {
	uint8_t buf[65536];
	size_t start, end;	/* unread bytes are buf[start..end) */
};

/*
 * Read one packet from fd.  *payload gets a malloc'ed buffer of cmd->size
 * bytes (NULL when 0).  The payload buffer grows as bytes arrive, so a
 * header that lies about its size costs no memory until data comes.
 * Returns 1, 0 on a clean EOF between packets, -EMSGSIZE when
 * cmd->size > max (drop the connection), -EPROTO on EOF inside a packet,
 * -ENOMEM or another -errno.
 */
int node_wire_read(int fd, struct node_rd *rd, uint64_t max, struct pohm_cmd *cmd,
		   uint8_t **payload);
/*
 * Send header + iov with sendmsg(MSG_NOSIGNAL), looping over short writes.
 * hdr->size is sent as given.  0 or -errno.
 */
int node_wire_send(int fd, const struct pohm_cmd *hdr, const struct iovec *iov, int iovcnt);
/* Send n bytes as they are (MSG_NOSIGNAL, looping). 0 or -errno. */
int node_wire_send_raw(int fd, const void *p, size_t n);
/* 1 if rd holds a whole packet (header and payload): reading it will not block. */
int node_rd_ready(const struct node_rd *rd);
/* Fill a sockaddr from a pohm_addr; returns its length. */
socklen_t node_wire_sockaddr(const struct pohm_addr *a, struct sockaddr_storage *ss);
/* Blocking TCP connect with a timeout (ms); fd (O_CLOEXEC, TCP_NODELAY) or -errno. */
int node_wire_connect(const struct pohm_addr *a, int timeout_ms);
/* Listening socket bound to a (SO_REUSEADDR). fd or -errno. */
int node_wire_listen(const struct pohm_addr *a);
/* Socket options of a data connection: TCP_NODELAY, keepalive, big buffers. */
void node_wire_tune(int fd);

#endif
