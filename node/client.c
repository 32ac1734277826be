/*
 * client.c — the node binary's small tool modes, used by the bats tests and
 * tools/pohmelfs-cluster:
 *
 *   --probe ADDR [--expect-nodes N] [--protocol V] [--auth C] [--timeout S]
 *   --client ADDR [options] COMMAND [ARGS]   a raw Elliptics client
 *   --free-ports N                           N bindable loopback ports
 *   --corrupt-disk DIR HEX                   flip a stored byte (offline)
 *   --records DIR                            list the stored records (offline)
 *
 * The client speaks the protocol byte for byte with its own framing
 * (wire.c) and core/proto, independent of the node's request handlers, so
 * the tests check the server against the documented wire format.  Exit
 * status: 0, the negated reply status (2 = ENOENT, 84 = EILSEQ, 95 =
 * EOPNOTSUPP…), 100 when the node closed the connection, 124 on a timeout,
 * 125 for local errors.
 */
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "reqbody.h"
#include "wire.h"
#include "node_store.h"
#include "sys.h"
#include "node_wire.h"

#define EX_CLOSED	100
#define EX_TIMEOUT	124
#define EX_LOCAL	125

struct cl {
	struct pohm_addr addr;
	uint32_t group;
	const char *ns;
	int hex_keys;
	uint64_t cflags;
	uint32_t ioflags;
	int32_t backend_id;
	uint64_t offset, size, num, user_flags, start;
	struct pohm_time ts;
	int have_ts;
	uint8_t parent[POHM_ID_SIZE];
	const char *out;
	const char *auth;
	int32_t ver[4];
	int no_handshake;
	int ack_handshake;
	int timeout;
	int verbose;
	int fd;
	struct node_rd rd;
	uint64_t trans;
};

/* Print the usage; the local-error exit status. */
static int usage(void)
{
	fprintf(stderr,
		"usage: pohmelfs-node --client HOST:PORT [options] COMMAND [ARGS]\n"
		"commands: handshake | routes | put KEY [FILE] | get KEY | get-many KEY... |\n"
		"          lookup KEY | del KEY |\n"
		"          keyid KEY | status | ping | bulk-get KEY... | iterate | cmd NUMBER |\n"
		"          send-file FILE | header-size N\n"
		"options:  --group G --ns NS --hex --nodirect --noack --direct-backend B\n"
		"          --offset N --size N --num N --ts SEC[.NSEC] --user-flags N\n"
		"          --ioflags N --cflags N --append --prepare --plain --commit --cas\n"
		"          --cas-ts --no-file-info --csum --checksum --nolock --nocsum\n"
		"          --parent HEX|--parent-of FILE --out FILE --auth COOKIE\n"
		"          --protocol 3.0|2.26|A.B.C.D --no-handshake --ack-handshake\n"
		"          --timeout S --verbose\n");
	return EX_LOCAL;
}

/* Exactly 2*outlen hex digits into out; 0 or -EINVAL. */
static int unhex(uint8_t *out, size_t outlen, const char *s)
{
	size_t i;

	if (strlen(s) != 2 * outlen)
		return -EINVAL;
	for (i = 0; i < outlen; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* n bytes as lower-case hex. */
static void print_hex(FILE *f, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

/* KEY as given: a 128-hex id with --hex, else sha512(ns, key). */
static int key_id(const struct cl *c, const char *key, uint8_t *id)
{
	if (c->hex_keys)
		return unhex(id, POHM_ID_SIZE, key);
	pohm_key_id(id, c->ns, c->ns ? strlen(c->ns) : 0, key, strlen(key));
	return 0;
}

/* A whole file ("-" = stdin) into a malloc'ed buffer; 0 or -errno. */
static int read_file(const char *path, uint8_t **data, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	size_t cap = 65536, n = 0;
	uint8_t *p = malloc(cap), *np;

	if (fd < 0 || !p) {
		free(p);
		return -errno;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			np = realloc(p, cap * 2);
			if (!np) {
				free(p);
				return -ENOMEM;
			}
			p = np;
			cap *= 2;
		}
		r = read(fd, p + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(p);
			return -errno;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	*data = p;
	*len = n;
	return 0;
}

/* The exit status for a local socket error. */
static int exit_for(int err)
{
	if (err == -EAGAIN || err == -EWOULDBLOCK || err == -ETIMEDOUT)
		return EX_TIMEOUT;
	if (err == 0 || err == -EPROTO || err == -ECONNRESET || err == -EPIPE)
		return EX_CLOSED;
	return EX_LOCAL;
}

/* Read the next packet; 1, or an exit status. */
static int next_packet(struct cl *c, struct pohm_cmd *h, uint8_t **payload)
{
	int r = node_wire_read(c->fd, &c->rd, POHM_MAX_PACKET, h, payload);

	if (r == 1) {
		if (c->verbose)
			fprintf(stderr, "reply cmd=%d status=%d flags=0x%" PRIx64 " trans=%" PRIu64
				" size=%" PRIu64 " group=%u backend=%d\n", h->cmd, h->status,
				h->flags, h->trans, h->size, h->id.group, h->backend_id);
		return 1;
	}
	if (r == 0 || r == -EPROTO || r == -ECONNRESET)
		fprintf(stderr, "eof\n");
	else if (r == -EAGAIN || r == -EWOULDBLOCK)
		fprintf(stderr, "timeout\n");
	else
		fprintf(stderr, "read: %s\n", strerror(-r));
	return exit_for(r);
}

/* The exit status for a reply status (printed when an error). */
static int status_exit(int32_t st)
{
	if (st >= 0)
		return 0;
	fprintf(stderr, "status %d\n", st);
	return (-st) & 0xff ? (-st) & 0xff : 1;
}

/* A request header with the next trans and the options' group and flags. */
static void hdr(struct cl *c, struct pohm_cmd *h, int32_t cmd, const uint8_t *id, uint64_t size)
{
	memset(h, 0, sizeof(*h));
	if (id)
		memcpy(h->id.id, id, POHM_ID_SIZE);
	h->id.group = c->group;
	h->cmd = cmd;
	h->flags = c->cflags;
	h->backend_id = c->backend_id;
	h->trans = ++c->trans;
	h->size = size;
}

/* Send a header with up to two payload pieces; 0 or an exit status. */
static int send_pkt(struct cl *c, struct pohm_cmd *h, const void *p1, size_t n1, const void *p2,
		    size_t n2)
{
	struct iovec iov[2] = { { (void *)p1, n1 }, { (void *)p2, n2 } };
	int r = node_wire_send(c->fd, h, iov, 2);

	if (r)
		fprintf(stderr, "send: %s\n", strerror(-r));
	return r ? exit_for(r) : 0;
}

/* Handshake on the open socket; prints it with print. 0 or an exit status. */
static int do_handshake(struct cl *c, int print)
{
	struct pohm_backend_iter it;
	struct pohm_backend_ids be;
	struct pohm_addr_list l;
	struct pohm_cmd h, r;
	uint8_t *p = NULL;
	size_t used;
	int32_t v[4];
	uint32_t i;
	int ex;

	memset(&h, 0, sizeof(h));
	h.cmd = POHM_CMD_REVERSE_LOOKUP;
	h.flags = POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK | (c->ack_handshake ? POHM_FLAG_NEED_ACK : 0);
	h.id.group = c->group;
	h.trans = ++c->trans;
	pohm_version_encode(h.id.id, c->ver);
	ex = send_pkt(c, &h, NULL, 0, NULL, 0);
	if (ex)
		return ex;
	ex = next_packet(c, &r, &p);
	if (ex != 1)
		return ex;
	ex = 0;
	if (r.status) {
		ex = status_exit(r.status);
		goto out;
	}
	if (pohm_addr_list_decode(&l, &used, p, (size_t)r.size) ||
	    pohm_backends_begin(&it, p + used, (size_t)r.size - used)) {
		fprintf(stderr, "malformed handshake reply\n");
		ex = EX_LOCAL;
		goto out;
	}
	if (print) {
		pohm_version_decode(v, r.id.id);
		printf("flags 0x%" PRIx64 "\ncmd %d\ntrans %" PRIu64 "\ngroup %u\nversion %d.%d.%d.%d\n",
		       r.flags, r.cmd, r.trans, r.id.group, v[0], v[1], v[2], v[3]);
		printf("addresses %u per-node %u\n", l.count, l.per_node);
		for (i = 0; i < l.count; i++) {
			struct pohm_addr a;
			char s[64];

			pohm_addr_list_get(&l, i, &a);
			pohm_addr_format(&a, s, sizeof(s));
			printf("addr %s\n", s);
		}
		while (pohm_backends_next(&it, &be)) {
			printf("backend %d group %u flags %u ids %u\n", be.backend_id, be.group,
			       be.flags, be.ids_count);
			for (i = 0; i < be.ids_count; i++) {
				printf("id ");
				print_hex(stdout, be.ids + (size_t)i * POHM_ID_SIZE, POHM_ID_SIZE);
				printf("\n");
			}
		}
	}
	if (c->ack_handshake) {
		free(p);
		p = NULL;
		ex = next_packet(c, &r, &p);
		if (ex != 1)
			goto out;
		ex = 0;
		if (print)
			printf("ack status %d flags 0x%" PRIx64 " size %" PRIu64 "\n", r.status, r.flags,
			       r.size);
	}
out:
	free(p);
	return ex;
}

/* AUTH with --auth; 0 or an exit status. */
static int do_auth(struct cl *c)
{
	uint8_t a[POHM_AUTH_SIZE];
	struct pohm_auth au;
	struct pohm_cmd h, r;
	uint8_t *p = NULL;
	int ex;

	memset(&au, 0, sizeof(au));
	pohm_auth_cookie_from_string(au.cookie, c->auth);
	pohm_auth_encode(a, &au);
	hdr(c, &h, POHM_CMD_AUTH, NULL, sizeof(a));
	h.flags = POHM_FLAG_DIRECT | POHM_FLAG_NEED_ACK;
	ex = send_pkt(c, &h, a, sizeof(a), NULL, 0);
	if (ex)
		return ex;
	ex = next_packet(c, &r, &p);
	free(p);
	if (ex != 1)
		return ex;
	return status_exit(r.status);
}

/* Wait for the final reply of trans; 1 with h and p filled, or an exit status. */
static int wait_reply(struct cl *c, uint64_t trans, struct pohm_cmd *h, uint8_t **p)
{
	for (;;) {
		int ex = next_packet(c, h, p);

		if (ex != 1)
			return ex;
		if (h->trans == trans)
			return 1;
		free(*p);
		*p = NULL;
	}
}

/* An io_attr from the options (timestamp: --ts, else now). */
static void fill_io(struct cl *c, struct pohm_io_attr *io, const uint8_t *id, uint64_t size)
{
	memset(io, 0, sizeof(*io));
	memcpy(io->id, id, POHM_ID_SIZE);
	memcpy(io->parent, c->parent, POHM_ID_SIZE);
	io->flags = c->ioflags;
	io->offset = c->offset;
	io->size = size;
	io->num = c->num;
	io->start = c->start;
	io->user_flags = c->user_flags;
	if (c->have_ts) {
		io->timestamp = c->ts;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		io->timestamp.tsec = (uint64_t)ts.tv_sec;
		io->timestamp.tnsec = (uint64_t)ts.tv_nsec;
	}
}

/* Print a LOOKUP/WRITE reply body as key=value fields. */
static void print_file_info(const uint8_t *p, size_t n)
{
	struct pohm_file_info fi;
	struct pohm_addr a;
	char s[64];

	if (pohm_lookup_reply_decode(&a, &fi, p, n)) {
		printf("malformed file info (%zu bytes)\n", n);
		return;
	}
	pohm_addr_format(&a, s, sizeof(s));
	printf("addr=%s size=%" PRIu64 " ts=%" PRIu64 ".%09" PRIu64 " record_flags=0x%" PRIx64
	       " offset=%" PRIu64 " csum=", s, fi.size, fi.mtime.tsec, fi.mtime.tnsec,
	       fi.record_flags, fi.offset);
	print_hex(stdout, fi.checksum, POHM_ID_SIZE);
	printf(" path=%.*s\n", fi.flen > 0 ? fi.flen - 1 : 0,
	       (const char *)p + POHM_ADDR_SIZE + POHM_FILE_INFO_SIZE);
}

/* WRITE KEY with FILE (or nothing) as data; prints the file info. */
static int cmd_put(struct cl *c, const char *key, const char *file)
{
	uint8_t id[POHM_ID_SIZE], io_raw[POHM_IO_ATTR_SIZE], *data = NULL, *p = NULL;
	struct pohm_io_attr io;
	struct pohm_cmd h, r;
	size_t len = 0;
	int ex;

	if (key_id(c, key, id))
		return usage();
	if (file && read_file(file, &data, &len)) {
		fprintf(stderr, "cannot read %s\n", file);
		return EX_LOCAL;
	}
	fill_io(c, &io, id, len);
	pohm_io_attr_encode(io_raw, &io);
	hdr(c, &h, POHM_CMD_WRITE, id, sizeof(io_raw) + len);
	ex = send_pkt(c, &h, io_raw, sizeof(io_raw), data, len);
	free(data);
	if (ex)
		return ex;
	ex = wait_reply(c, h.trans, &r, &p);
	if (ex != 1)
		return ex;
	ex = status_exit(r.status);
	if (!ex && r.size)
		print_file_info(p, (size_t)r.size);
	else if (!ex)
		printf("ack\n");
	free(p);
	return ex;
}

/* Data to --out or stdout; 0 or the local-error status. */
static int write_out(struct cl *c, const uint8_t *d, size_t n)
{
	int fd = c->out ? open(c->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 1;
	int r;

	if (fd < 0)
		return EX_LOCAL;
	r = pohm_sys_write_full(fd, d, n) < 0;
	if (c->out)
		close(fd);
	return r ? EX_LOCAL : 0;
}

/* Print a READ reply's io_attr. */
static void print_io(FILE *f, const struct pohm_io_attr *io)
{
	fprintf(f, "size=%" PRIu64 " offset=%" PRIu64 " total_size=%" PRIu64 " ts=%" PRIu64
		".%09" PRIu64 " user_flags=0x%" PRIx64 " record_flags=0x%" PRIx64 " parent=",
		io->size, io->offset, io->total_size, io->timestamp.tsec, io->timestamp.tnsec,
		io->user_flags, io->record_flags);
	print_hex(f, io->parent, POHM_ID_SIZE);
	fprintf(f, "\n");
}

/* READ KEY; data to stdout, the io_attr to stderr; --csum checks io.parent. */
static int cmd_get(struct cl *c, const char *key)
{
	uint8_t id[POHM_ID_SIZE], io_raw[POHM_IO_ATTR_SIZE], *p = NULL, sum[POHM_ID_SIZE];
	struct pohm_io_attr io;
	struct pohm_cmd h, r;
	const uint8_t *data;
	size_t dlen;
	int ex;

	if (key_id(c, key, id))
		return usage();
	fill_io(c, &io, id, c->size);
	memcpy(io.parent, id, POHM_ID_SIZE);
	pohm_io_attr_encode(io_raw, &io);
	hdr(c, &h, POHM_CMD_READ, id, sizeof(io_raw));
	ex = send_pkt(c, &h, io_raw, sizeof(io_raw), NULL, 0);
	if (ex)
		return ex;
	ex = wait_reply(c, h.trans, &r, &p);
	if (ex != 1)
		return ex;
	ex = status_exit(r.status);
	if (ex)
		goto out;
	if (pohm_io_payload_decode(&io, &data, &dlen, p, (size_t)r.size, 1)) {
		fprintf(stderr, "malformed READ reply\n");
		ex = EX_LOCAL;
		goto out;
	}
	fprintf(stderr, "io ");
	print_io(stderr, &io);
	if (c->ioflags & POHM_IO_CHECKSUM) {
		pohm_sha512(data, dlen, sum);
		if (memcmp(sum, io.parent, POHM_ID_SIZE)) {
			fprintf(stderr, "checksum mismatch\n");
			write_out(c, data, dlen);
			ex = 84;
			goto out;
		}
		fprintf(stderr, "checksum ok\n");
	}
	ex = write_out(c, data, dlen);
out:
	free(p);
	return ex;
}

/*
 * READ every KEY on the one connection without waiting in between, then
 * print "reply KEY status=S size=N" per reply in the order they arrive
 * (replies may overtake each other, §10.9).  0, or the first error's status.
 */
static int cmd_get_many(struct cl *c, int nkeys, char **keys)
{
	uint8_t id[POHM_ID_SIZE], io_raw[POHM_IO_ATTR_SIZE], *p = NULL;
	uint64_t first = c->trans + 1;
	struct pohm_io_attr io;
	struct pohm_cmd h, r;
	int i, ex, worst = 0;

	for (i = 0; i < nkeys; i++) {
		if (key_id(c, keys[i], id))
			return usage();
		fill_io(c, &io, id, c->size);
		pohm_io_attr_encode(io_raw, &io);
		hdr(c, &h, POHM_CMD_READ, id, sizeof(io_raw));
		ex = send_pkt(c, &h, io_raw, sizeof(io_raw), NULL, 0);
		if (ex)
			return ex;
	}
	for (i = 0; i < nkeys; i++) {
		ex = next_packet(c, &r, &p);
		if (ex != 1)
			return ex;
		if (r.trans < first || r.trans >= first + (uint64_t)nkeys) {
			i--;		/* not one of ours */
		} else {
			printf("reply %s status=%d size=%" PRIu64 "\n", keys[r.trans - first],
			       r.status, r.size >= POHM_IO_ATTR_SIZE ? r.size - POHM_IO_ATTR_SIZE : 0);
			if (!worst)
				worst = status_exit(r.status);
		}
		free(p);
		p = NULL;
	}
	return worst;
}

/* LOOKUP or DEL of KEY (DEL without NEED_ACK waits a second for an error). */
static int cmd_simple(struct cl *c, int32_t cmd, const char *key)
{
	uint8_t id[POHM_ID_SIZE], io_raw[POHM_IO_ATTR_SIZE], *p = NULL;
	struct pohm_io_attr io;
	struct pohm_cmd h, r;
	int ex;

	if (key_id(c, key, id))
		return usage();
	fill_io(c, &io, id, 0);
	memcpy(io.parent, id, POHM_ID_SIZE);
	pohm_io_attr_encode(io_raw, &io);
	hdr(c, &h, cmd, id, cmd == POHM_CMD_DEL ? sizeof(io_raw) : 0);
	ex = send_pkt(c, &h, io_raw, cmd == POHM_CMD_DEL ? sizeof(io_raw) : 0, NULL, 0);
	if (ex)
		return ex;
	if (cmd == POHM_CMD_DEL && !(c->cflags & POHM_FLAG_NEED_ACK)) {
		/* Nothing comes back on success: wait a moment for an error ack. */
		struct timeval tv = { 1, 0 };

		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ex = wait_reply(c, h.trans, &r, &p);
		if (ex == EX_TIMEOUT)
			return 0;
	} else {
		ex = wait_reply(c, h.trans, &r, &p);
	}
	if (ex != 1)
		return ex;
	ex = status_exit(r.status);
	if (!ex && cmd == POHM_CMD_LOOKUP)
		print_file_info(p, (size_t)r.size);
	else if (!ex)
		printf("ok flags=0x%" PRIx64 "\n", r.flags);
	free(p);
	return ex;
}

/* ROUTE_LIST: the flags and every address. */
static int cmd_routes(struct cl *c)
{
	struct pohm_addr_list l;
	struct pohm_cmd h, r;
	uint8_t *p = NULL;
	uint32_t i;
	int ex;

	hdr(c, &h, POHM_CMD_ROUTE_LIST, NULL, 0);
	h.flags = c->cflags | POHM_FLAG_NOLOCK;
	ex = send_pkt(c, &h, NULL, 0, NULL, 0);
	if (ex)
		return ex;
	ex = wait_reply(c, h.trans, &r, &p);
	if (ex != 1)
		return ex;
	ex = status_exit(r.status);
	if (ex)
		goto out;
	if (pohm_addr_list_decode(&l, NULL, p, (size_t)r.size) ||
	    (size_t)r.size != 8 + (size_t)l.count * POHM_ADDR_SIZE) {
		fprintf(stderr, "malformed route list\n");
		ex = EX_LOCAL;
		goto out;
	}
	printf("flags 0x%" PRIx64 "\nnodes %u per-node %u\n", r.flags, l.count / l.per_node,
	       l.per_node);
	for (i = 0; i < l.count; i++) {
		struct pohm_addr a;
		char s[64];

		pohm_addr_list_get(&l, i, &a);
		pohm_addr_format(&a, s, sizeof(s));
		printf("addr %s\n", s);
	}
out:
	free(p);
	return ex;
}

/* Send a command with an optional payload from stdin; print every reply until the last. */
static int cmd_generic(struct cl *c, int32_t cmd, const uint8_t *payload, size_t len)
{
	struct node_status_body st;
	struct node_iter_resp it;
	struct pohm_cmd h, r;
	uint8_t *p = NULL;
	int ex;

	hdr(c, &h, cmd, NULL, len);
	ex = send_pkt(c, &h, payload, len, NULL, 0);
	if (ex)
		return ex;
	for (;;) {
		ex = next_packet(c, &r, &p);
		if (ex != 1)
			return ex;
		if (r.trans == h.trans) {
			printf("reply cmd=%d status=%d flags=0x%" PRIx64 " size=%" PRIu64 "\n", r.cmd,
			       r.status, r.flags, r.size);
			if (cmd == POHM_CMD_STATUS && !node_status_body_decode(&st, p, (size_t)r.size))
				printf("nflags=%d status_flags=%d log_level=%u\n", st.nflags,
				       st.status_flags, st.log_level);
			if (cmd == POHM_CMD_ITERATOR && !node_iter_resp_decode(&it, p, (size_t)r.size)) {
				printf("key ");
				print_hex(stdout, it.id, POHM_ID_SIZE);
				printf(" status=%d size=%" PRIu64 " ts=%" PRIu64 " iterated=%" PRIu64
				       " total=%" PRIu64 " data=%" PRIu64 "\n",
				       it.status, it.size, it.ts.tsec, it.iterated, it.total,
				       r.size - NODE_ITER_RESP_SIZE);
			}
			if (!(r.flags & POHM_FLAG_MORE)) {
				free(p);
				return status_exit(r.status);
			}
		}
		free(p);
		p = NULL;
	}
}

/* BULK_READ of the keys: one line per reply. */
static int cmd_bulk(struct cl *c, int nkeys, char **keys)
{
	uint8_t *payload, id[POHM_ID_SIZE], *p = NULL;
	struct pohm_io_attr io;
	struct pohm_cmd h, r;
	size_t len = POHM_IO_ATTR_SIZE * (size_t)(nkeys + 1);
	int i, ex;

	payload = calloc(1, len);
	if (!payload)
		return EX_LOCAL;
	memset(&io, 0, sizeof(io));
	io.size = (uint64_t)nkeys * POHM_IO_ATTR_SIZE;
	pohm_io_attr_encode(payload, &io);
	for (i = 0; i < nkeys; i++) {
		if (key_id(c, keys[i], id)) {
			free(payload);
			return usage();
		}
		fill_io(c, &io, id, c->size);
		pohm_io_attr_encode(payload + POHM_IO_ATTR_SIZE * (size_t)(i + 1), &io);
	}
	if (key_id(c, keys[0], id)) {
		free(payload);
		return usage();
	}
	hdr(c, &h, POHM_CMD_BULK_READ, id, len);
	ex = send_pkt(c, &h, payload, len, NULL, 0);
	free(payload);
	if (ex)
		return ex;
	for (;;) {
		ex = next_packet(c, &r, &p);
		if (ex != 1)
			return ex;
		if (r.trans == h.trans) {
			printf("reply status=%d flags=0x%" PRIx64 " id=", r.status, r.flags);
			print_hex(stdout, r.id.id, 8);
			if (r.size >= POHM_IO_ATTR_SIZE)
				printf(" size=%" PRIu64 " data=%.*s", r.size - POHM_IO_ATTR_SIZE,
				       (int)(r.size - POHM_IO_ATTR_SIZE > 64 ? 64 : r.size - POHM_IO_ATTR_SIZE),
				       (const char *)p + POHM_IO_ATTR_SIZE);
			printf("\n");
			if (!(r.flags & POHM_FLAG_MORE)) {
				free(p);
				return status_exit(r.status);
			}
		}
		free(p);
		p = NULL;
	}
}

/* Send raw bytes, then report what comes back until EOF or the timeout. */
static int cmd_send_raw(struct cl *c, const uint8_t *d, size_t n)
{
	struct pohm_cmd r;
	uint8_t *p = NULL;
	ssize_t w = 0;
	int ex;

	while (n) {
		w = send(c->fd, d, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		d += w;
		n -= (size_t)w;
	}
	shutdown(c->fd, SHUT_WR);
	for (;;) {
		ex = next_packet(c, &r, &p);
		free(p);
		p = NULL;
		if (ex != 1)
			return ex == EX_CLOSED ? 0 : ex;
		printf("reply cmd=%d status=%d flags=0x%" PRIx64 " size=%" PRIu64 "\n", r.cmd, r.status,
		       r.flags, r.size);
	}
}

/* A decimal or 0x number; 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *e;

	errno = 0;
	*v = strtoull(s, &e, 0);
	return errno || *e ? -EINVAL : 0;
}

/* A.B[.C.D] into four ints (2.26 defaults to 2.26.11.1). */
static int parse_version(const char *s, int32_t v[4])
{
	int a = 0, b = 0, cc = 0, d = 0, k = sscanf(s, "%d.%d.%d.%d", &a, &b, &cc, &d);

	if (k < 2)
		return -EINVAL;
	v[0] = a;
	v[1] = b;
	v[2] = k > 2 ? cc : 0;
	v[3] = k > 3 ? d : (a == 2 ? 1 : 1);
	if (a == 2 && k == 2)
		v[2] = 11;
	return 0;
}

/* See node.h: options, connect, handshake (and AUTH), then the command. */
int node_client_main(int argc, char **argv)
{
	struct cl *c = calloc(1, sizeof(*c));
	struct timeval tv;
	uint64_t v;
	int i, ex = EX_LOCAL;
	const char *cmd;

	if (!c || argc < 2)
		goto usage;
	if (pohm_addr_parse(&c->addr, argv[0])) {
		fprintf(stderr, "not an address: %s\n", argv[0]);
		goto usage;
	}
	c->group = 1;
	c->cflags = POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT;
	c->ver[0] = 3;
	c->ver[3] = 1;
	c->timeout = 10;
	c->fd = -1;
	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		const char *o = argv[i] + 2, *a = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;

		if (!strcmp(o, "group") && a && !parse_u64(a, &v))
			c->group = (uint32_t)v;
		else if (!strcmp(o, "ns") && a)
			c->ns = a;
		else if (!strcmp(o, "offset") && a && !parse_u64(a, &v))
			c->offset = v;
		else if (!strcmp(o, "size") && a && !parse_u64(a, &v))
			c->size = v;
		else if (!strcmp(o, "num") && a && !parse_u64(a, &v))
			c->num = v;
		else if (!strcmp(o, "start") && a && !parse_u64(a, &v))
			c->start = v;
		else if (!strcmp(o, "user-flags") && a && !parse_u64(a, &v))
			c->user_flags = v;
		else if (!strcmp(o, "ioflags") && a && !parse_u64(a, &v))
			c->ioflags |= (uint32_t)v;
		else if (!strcmp(o, "cflags") && a && !parse_u64(a, &v))
			c->cflags |= v;
		else if (!strcmp(o, "set-cflags") && a && !parse_u64(a, &v))
			c->cflags = v;
		else if (!strcmp(o, "direct-backend") && a && !parse_u64(a, &v)) {
			c->backend_id = (int32_t)v;
			c->cflags |= POHM_FLAG_DIRECT_BACKEND;
		} else if (!strcmp(o, "ts") && a) {
			unsigned long long s = 0, ns = 0;

			if (sscanf(a, "%llu.%llu", &s, &ns) < 1)
				goto usage;
			c->ts.tsec = s;
			c->ts.tnsec = ns;
			c->have_ts = 1;
		} else if (!strcmp(o, "parent") && a) {
			if (unhex(c->parent, POHM_ID_SIZE, a))
				goto usage;
		} else if (!strcmp(o, "parent-of") && a) {
			uint8_t *d;
			size_t n;

			if (read_file(a, &d, &n))
				goto usage;
			pohm_sha512(d, n, c->parent);
			free(d);
		} else if (!strcmp(o, "out") && a)
			c->out = a;
		else if (!strcmp(o, "auth") && a)
			c->auth = a;
		else if (!strcmp(o, "protocol") && a) {
			if (parse_version(a, c->ver))
				goto usage;
		} else if (!strcmp(o, "timeout") && a && !parse_u64(a, &v))
			c->timeout = (int)v;
		else {
			takes = 0;
			if (!strcmp(o, "hex"))
				c->hex_keys = 1;
			else if (!strcmp(o, "nodirect"))
				c->cflags &= ~POHM_FLAG_DIRECT;
			else if (!strcmp(o, "noack"))
				c->cflags &= ~POHM_FLAG_NEED_ACK;
			else if (!strcmp(o, "nolock"))
				c->cflags |= POHM_FLAG_NOLOCK;
			else if (!strcmp(o, "checksum"))
				c->cflags |= POHM_FLAG_CHECKSUM;
			else if (!strcmp(o, "csum"))
				c->ioflags |= POHM_IO_CHECKSUM;
			else if (!strcmp(o, "no-file-info"))
				c->ioflags |= POHM_IO_WRITE_NO_FILE_INFO;
			else if (!strcmp(o, "nocsum"))
				c->ioflags |= POHM_IO_NOCSUM;
			else if (!strcmp(o, "append"))
				c->ioflags |= POHM_IO_APPEND;
			else if (!strcmp(o, "prepare"))
				c->ioflags |= POHM_IO_PREPARE;
			else if (!strcmp(o, "plain"))
				c->ioflags |= POHM_IO_PLAIN_WRITE;
			else if (!strcmp(o, "commit"))
				c->ioflags |= POHM_IO_COMMIT;
			else if (!strcmp(o, "cas"))
				c->ioflags |= POHM_IO_CAS;
			else if (!strcmp(o, "cas-ts"))
				c->ioflags |= POHM_IO_CAS_TIMESTAMP;
			else if (!strcmp(o, "no-handshake"))
				c->no_handshake = 1;
			else if (!strcmp(o, "ack-handshake"))
				c->ack_handshake = 1;
			else if (!strcmp(o, "verbose"))
				c->verbose = 1;
			else
				goto usage;
		}
		i += takes;
	}
	if (i >= argc)
		goto usage;
	cmd = argv[i++];
	if (!strcmp(cmd, "keyid") && i < argc) {
		uint8_t id[POHM_ID_SIZE];

		if (key_id(c, argv[i], id))
			goto usage;
		print_hex(stdout, id, POHM_ID_SIZE);
		printf("\n");
		ex = 0;
		goto out;
	}
	c->fd = node_wire_connect(&c->addr, c->timeout * 1000);
	if (c->fd < 0) {
		fprintf(stderr, "connect: %s\n", strerror(-c->fd));
		ex = EX_LOCAL;
		goto out;
	}
	tv.tv_sec = c->timeout;
	tv.tv_usec = 0;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!strcmp(cmd, "send-file") && i < argc) {
		uint8_t *d;
		size_t n;

		if (read_file(argv[i], &d, &n))
			goto usage;
		ex = cmd_send_raw(c, d, n);
		free(d);
		goto out;
	}
	if (!strcmp(cmd, "header-size") && i < argc) {
		struct pohm_cmd h;

		if (parse_u64(argv[i], &v))
			goto usage;
		hdr(c, &h, POHM_CMD_WRITE, NULL, v);
		if (node_wire_send(c->fd, &h, NULL, 0)) {
			ex = EX_CLOSED;
			goto out;
		}
		ex = cmd_send_raw(c, NULL, 0);
		goto out;
	}
	if (!strcmp(cmd, "handshake")) {
		ex = do_handshake(c, 1);
		goto out;
	}
	if (!c->no_handshake) {
		ex = do_handshake(c, 0);
		if (ex)
			goto out;
	}
	if (c->auth) {
		ex = do_auth(c);
		if (ex)
			goto out;
	}
	if (!strcmp(cmd, "routes"))
		ex = cmd_routes(c);
	else if (!strcmp(cmd, "put") && i < argc)
		ex = cmd_put(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
	else if (!strcmp(cmd, "get-many") && i < argc)
		ex = cmd_get_many(c, argc - i, argv + i);
	else if (!strcmp(cmd, "get") && i < argc)
		ex = cmd_get(c, argv[i]);
	else if (!strcmp(cmd, "lookup") && i < argc)
		ex = cmd_simple(c, POHM_CMD_LOOKUP, argv[i]);
	else if (!strcmp(cmd, "del") && i < argc)
		ex = cmd_simple(c, POHM_CMD_DEL, argv[i]);
	else if (!strcmp(cmd, "bulk-get") && i < argc)
		ex = cmd_bulk(c, argc - i, argv + i);
	else if (!strcmp(cmd, "status")) {
		uint8_t st[POHM_NODE_STATUS_SIZE];

		memset(st, 0xff, sizeof(st));
		ex = cmd_generic(c, POHM_CMD_STATUS, st, sizeof(st));
	} else if (!strcmp(cmd, "ping")) {
		ex = cmd_generic(c, POHM_CMD_BACKEND_STATUS, NULL, 0);
	} else if (!strcmp(cmd, "iterate")) {
		uint8_t rq[NODE_ITER_REQ_SIZE];

		memset(rq, 0, sizeof(rq));
		pohm_st32(rq + 8, 1);			/* start */
		pohm_st32(rq + 52, 2);			/* network */
		pohm_st64(rq + 56, c->ioflags);		/* iterator flags */
		ex = cmd_generic(c, POHM_CMD_ITERATOR, rq, sizeof(rq));
	} else if (!strcmp(cmd, "cmd") && i < argc && !parse_u64(argv[i], &v)) {
		uint8_t *d = NULL;
		size_t n = 0;

		if (i + 1 < argc && read_file(argv[i + 1], &d, &n))
			goto usage;
		ex = cmd_generic(c, (int32_t)v, d, n);
		free(d);
	} else {
		goto usage;
	}
	goto out;
usage:
	ex = usage();
out:
	if (c && c->fd >= 0)
		close(c->fd);
	free(c);
	return ex;
}

/* ---------------------------------------------------------------- probe */

int node_probe_main(int argc, char **argv)
{
	struct cl *c = calloc(1, sizeof(*c));
	struct pohm_addr_list l;
	struct pohm_cmd h, r;
	struct timeval tv;
	uint8_t *p = NULL;
	uint64_t expect = 0, v;
	int i, ex = EX_LOCAL;

	if (!c || argc < 1 || pohm_addr_parse(&c->addr, argv[0])) {
		fprintf(stderr, "usage: pohmelfs-node --probe HOST:PORT [--expect-nodes N] "
				"[--protocol V] [--auth C] [--timeout S]\n");
		goto out;
	}
	c->ver[0] = 3;
	c->ver[3] = 1;
	c->timeout = 5;
	c->fd = -1;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--expect-nodes") && !parse_u64(argv[i + 1], &v))
			expect = v;
		else if (!strcmp(argv[i], "--protocol") && !parse_version(argv[i + 1], c->ver))
			;
		else if (!strcmp(argv[i], "--auth"))
			c->auth = argv[i + 1];
		else if (!strcmp(argv[i], "--timeout") && !parse_u64(argv[i + 1], &v))
			c->timeout = (int)v;
		else
			goto out;
	}
	c->fd = node_wire_connect(&c->addr, c->timeout * 1000);
	if (c->fd < 0)
		goto out;
	tv.tv_sec = c->timeout;
	tv.tv_usec = 0;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ex = do_handshake(c, 0);
	if (ex || (c->auth && (ex = do_auth(c))))
		goto out;
	if (!expect)
		goto out;
	hdr(c, &h, POHM_CMD_ROUTE_LIST, NULL, 0);
	h.flags = POHM_FLAG_NEED_ACK | POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK;
	ex = send_pkt(c, &h, NULL, 0, NULL, 0);
	if (ex)
		goto out;
	ex = wait_reply(c, h.trans, &r, &p);
	if (ex != 1)
		goto out;
	ex = 1;
	if (!r.status && !pohm_addr_list_decode(&l, NULL, p, (size_t)r.size)) {
		printf("nodes %u\n", l.count / l.per_node);
		ex = l.count / l.per_node == expect ? 0 : 1;
	}
out:
	free(p);
	if (c && c->fd >= 0)
		close(c->fd);
	free(c);
	return ex;
}

/* ---------------------------------------------------------------- free ports */

int node_free_ports_main(int argc, char **argv)
{
	uint64_t want, found = 0;
	unsigned port, tries;
	struct timespec ts;

	if (argc < 1 || parse_u64(argv[0], &want) || !want || want > 1000) {
		fprintf(stderr, "usage: pohmelfs-node --free-ports N\n");
		return EX_LOCAL;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* Below the kernel's ephemeral range, so no client socket holds them. */
	port = 20000 + (unsigned)((ts.tv_nsec / 1000 + getpid() * 7919) % 12000);
	for (tries = 0; tries < 12000 && found < want; tries++, port++) {
		struct pohm_addr a;
		int fd;

		if (port >= 32000)
			port = 20000;
		memset(&a, 0, sizeof(a));
		a.family = AF_INET;
		a.ip[0] = 127;
		a.ip[3] = 1;
		a.port = (uint16_t)port;
		fd = node_wire_listen(&a);
		if (fd < 0)
			continue;
		close(fd);
		printf("%u\n", port);
		found++;
	}
	return found == want ? 0 : 1;
}

/* ---------------------------------------------------------------- corrupt */

int node_corrupt_main(int argc, char **argv)
{
	struct node_store *s = NULL;
	uint8_t id[POHM_ID_SIZE];
	int r;

	if (argc < 2 || unhex(id, POHM_ID_SIZE, argv[1])) {
		fprintf(stderr, "usage: pohmelfs-node --corrupt-disk DIR ID-HEX (128 hex digits)\n");
		return EX_LOCAL;
	}
	r = node_store_open_tool(&s, argv[0]);
	if (r) {
		fprintf(stderr, "%s: %s\n", argv[0], strerror(-r));
		return EX_LOCAL;
	}
	r = node_store_corrupt(s, id);
	node_store_close(s);
	if (r) {
		fprintf(stderr, "corrupt: %s\n", strerror(-r));
		return r == -ENOENT ? 2 : EX_LOCAL;
	}
	return 0;
}

/* ---------------------------------------------------------------- records */

int node_records_main(int argc, char **argv)
{
	struct node_store *s = NULL;
	int r;

	if (argc < 1) {
		fprintf(stderr, "usage: pohmelfs-node --records DIR\n");
		return EX_LOCAL;
	}
	r = node_store_open_tool(&s, argv[0]);
	if (r) {
		fprintf(stderr, "%s: %s\n", argv[0], strerror(-r));
		return EX_LOCAL;
	}
	r = node_store_dump(s, stdout);
	node_store_close(s);
	if (r) {
		fprintf(stderr, "records: %s\n", strerror(-r));
		return EX_LOCAL;
	}
	return 0;
}
