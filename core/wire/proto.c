/*
 * proto.c — encode and decode the Elliptics wire structures.
 *
 * Sections: header · io_attr · addresses · backend ids · file info ·
 * control structs · key ids · status table.
 *
 * Offsets are those of PROTOCOL.md §1 (checked there against the stock
 * headers and a live 3.0.0.1 server).  Every decoder takes (pointer, length)
 * and checks lengths before reading; nothing here allocates except through
 * the pohm_buf encoders.
 */
#include "proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sha512.h"

/* ---------------------------------------------------------------- header */

void pohm_cmd_encode(uint8_t out[POHM_CMD_SIZE], const struct pohm_cmd *c)
{
	memcpy(out, c->id.id, POHM_ID_SIZE);
	pohm_st32(out + 64, c->id.group);
	memset(out + 68, 0, 8);			/* dnet_id.reserved */
	pohm_st32(out + 76, (uint32_t)c->status);
	pohm_st32(out + 80, (uint32_t)c->cmd);
	pohm_st32(out + 84, (uint32_t)c->backend_id);
	pohm_st64(out + 88, c->trace_id);
	pohm_st64(out + 96, c->flags);
	pohm_st64(out + 104, c->trans);
	pohm_st64(out + 112, c->size);
}

void pohm_cmd_decode(struct pohm_cmd *c, const uint8_t in[POHM_CMD_SIZE])
{
	struct pohm_rd r = pohm_rd_make(in, POHM_CMD_SIZE);

	pohm_rd_copy(&r, c->id.id, POHM_ID_SIZE);
	c->id.group = pohm_rd_u32(&r);
	pohm_rd_take(&r, 8);			/* dnet_id.reserved */
	c->status = (int32_t)pohm_rd_u32(&r);
	c->cmd = (int32_t)pohm_rd_u32(&r);
	c->backend_id = (int32_t)pohm_rd_u32(&r);
	c->trace_id = pohm_rd_u64(&r);
	c->flags = pohm_rd_u64(&r);
	c->trans = pohm_rd_u64(&r);
	c->size = pohm_rd_u64(&r);
}

int pohm_cmd_is_reply(const struct pohm_cmd *c)
{
	return (c->flags & POHM_FLAG_REPLY) || (c->trans & POHM_TRANS_REPLY_BIT);
}

void pohm_version_encode(uint8_t id[POHM_ID_SIZE], const int32_t v[4])
{
	int i;

	for (i = 0; i < 4; i++)
		pohm_st32(id + 4 * i, (uint32_t)v[i]);
}

void pohm_version_decode(int32_t v[4], const uint8_t id[POHM_ID_SIZE])
{
	struct pohm_rd r = pohm_rd_make(id, POHM_ID_SIZE);
	int i;

	for (i = 0; i < 4; i++)
		v[i] = (int32_t)pohm_rd_u32(&r);
}

int pohm_time_cmp(const struct pohm_time *a, const struct pohm_time *b)
{
	if (a->tsec != b->tsec)
		return a->tsec < b->tsec ? -1 : 1;
	if (a->tnsec != b->tnsec)
		return a->tnsec < b->tnsec ? -1 : 1;
	return 0;
}

/* ---------------------------------------------------------------- io_attr */

void pohm_io_attr_encode(uint8_t out[POHM_IO_ATTR_SIZE], const struct pohm_io_attr *io)
{
	memcpy(out, io->parent, POHM_ID_SIZE);
	memcpy(out + 64, io->id, POHM_ID_SIZE);
	pohm_st64(out + 128, io->start);
	pohm_st64(out + 136, io->num);
	pohm_st64(out + 144, io->timestamp.tsec);
	pohm_st64(out + 152, io->timestamp.tnsec);
	pohm_st64(out + 160, io->user_flags);
	pohm_st64(out + 168, io->total_size);
	pohm_st64(out + 176, io->record_flags);
	pohm_st32(out + 184, 0);		/* reserved2 */
	pohm_st32(out + 188, io->flags);
	pohm_st64(out + 192, io->offset);
	pohm_st64(out + 200, io->size);
}

/* One dnet_io_attr from r (POHM_IO_ATTR_SIZE bytes); r->err on a short one. */
static void io_attr_read(struct pohm_io_attr *io, struct pohm_rd *r)
{
	pohm_rd_copy(r, io->parent, POHM_ID_SIZE);
	pohm_rd_copy(r, io->id, POHM_ID_SIZE);
	io->start = pohm_rd_u64(r);
	io->num = pohm_rd_u64(r);
	io->timestamp.tsec = pohm_rd_u64(r);
	io->timestamp.tnsec = pohm_rd_u64(r);
	io->user_flags = pohm_rd_u64(r);
	io->total_size = pohm_rd_u64(r);
	io->record_flags = pohm_rd_u64(r);
	pohm_rd_take(r, 4);			/* reserved2 */
	io->flags = pohm_rd_u32(r);
	io->offset = pohm_rd_u64(r);
	io->size = pohm_rd_u64(r);
}

void pohm_io_attr_decode(struct pohm_io_attr *io, const uint8_t in[POHM_IO_ATTR_SIZE])
{
	struct pohm_rd r = pohm_rd_make(in, POHM_IO_ATTR_SIZE);

	io_attr_read(io, &r);
}

int pohm_io_payload_decode(struct pohm_io_attr *io, const uint8_t **data, size_t *datalen,
			   const uint8_t *p, size_t n, int check_size)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);

	io_attr_read(io, &r);
	if (r.err)
		return -EPROTO;
	*data = r.p;
	*datalen = r.left;
	if (check_size && io->size != *datalen)
		return -EPROTO;
	return 0;
}

/* ---------------------------------------------------------------- addresses */

void pohm_addr_encode(uint8_t out[POHM_ADDR_SIZE], const struct pohm_addr *a)
{
	memset(out, 0, POHM_ADDR_SIZE);
	/* A raw Linux sockaddr: family in host (LE) order, port and IP in network order. */
	pohm_st16(out, a->family);
	out[2] = (uint8_t)(a->port >> 8);
	out[3] = (uint8_t)a->port;
	if (a->family == AF_INET6) {
		/* sockaddr_in6: flowinfo @4, addr @8, scope_id @24 */
		memcpy(out + 8, a->ip, 16);
		pohm_st32(out + 24, a->scope_id);
		pohm_st16(out + 28, (uint16_t)sizeof(struct sockaddr_in6));
	} else {
		memcpy(out + 4, a->ip, 4);
		pohm_st16(out + 28, (uint16_t)sizeof(struct sockaddr_in));
	}
	pohm_st16(out + 30, a->family);
}

/* One dnet_addr from r (POHM_ADDR_SIZE bytes): 0, or -EPROTO for a short
 * one, an unknown family or length, or the wildcard address. */
static int addr_read(struct pohm_addr *a, struct pohm_rd *r)
{
	static const uint8_t zero[16];
	const uint8_t *raw = pohm_rd_take(r, 28);	/* the raw sockaddr */
	uint16_t len = pohm_rd_u16(r), family = pohm_rd_u16(r), port;
	struct pohm_rd sa;

	memset(a, 0, sizeof(*a));
	if (r->err)
		return -EPROTO;
	sa = pohm_rd_make(raw, 28);
	pohm_rd_take(&sa, 2);			/* family again, host order */
	port = pohm_rd_u16(&sa);		/* network order */
	if (family == AF_INET && len == sizeof(struct sockaddr_in)) {
		pohm_rd_copy(&sa, a->ip, 4);
		if (!memcmp(a->ip, zero, 4))
			return -EPROTO;
	} else if (family == AF_INET6 && len == sizeof(struct sockaddr_in6)) {
		pohm_rd_take(&sa, 4);		/* flowinfo */
		pohm_rd_copy(&sa, a->ip, 16);
		a->scope_id = pohm_rd_u32(&sa);
		if (!memcmp(a->ip, zero, 16))
			return -EPROTO;
	} else {
		return -EPROTO;
	}
	a->family = family;
	a->port = (uint16_t)(port >> 8 | port << 8);
	return 0;
}

int pohm_addr_decode(struct pohm_addr *a, const uint8_t in[POHM_ADDR_SIZE])
{
	struct pohm_rd r = pohm_rd_make(in, POHM_ADDR_SIZE);

	return addr_read(a, &r);
}

int pohm_addr_equal(const struct pohm_addr *a, const struct pohm_addr *b)
{
	size_t iplen = a->family == AF_INET6 ? 16 : 4;

	return a->family == b->family && a->port == b->port && !memcmp(a->ip, b->ip, iplen) &&
	       (a->family != AF_INET6 || a->scope_id == b->scope_id);
}

int pohm_addr_parse(struct pohm_addr *a, const char *s)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port_s, *end;
	char *tail;
	unsigned long port, fam = 0;
	size_t hl;

	memset(a, 0, sizeof(*a));
	if (s[0] == '[') {				/* [v6]:port */
		end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		hl = (size_t)(end - s - 1);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		port_s = end + 2;
	} else {
		/* host:port[:family]; IPv6 without brackets only as host:port:family. */
		const char *last = strrchr(s, ':'), *colon1 = strchr(s, ':');

		if (!colon1)
			return -EINVAL;
		if (colon1 == last) {			/* a:p */
			end = colon1;
		} else {
			/* Either v4:port:family or a v6 address with :port:family. */
			const char *prev = last - 1;

			while (prev > s && *prev != ':')
				prev--;
			if (strchr(s, '.') && colon1 == prev) {
				end = colon1;		/* v4:port:family */
			} else {
				end = prev;		/* v6...:port:family */
			}
		}
		hl = (size_t)(end - s);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		port_s = end + 1;
	}
	host[hl] = '\0';
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	port = strtoul(port_s, &tail, 10);
	if (tail == port_s || port == 0 || port > 65535)
		return -EINVAL;
	if (*tail == ':') {
		const char *f = tail + 1;

		fam = strtoul(f, &tail, 10);
		if (tail == f || *tail || (fam != AF_INET && fam != AF_INET6))
			return -EINVAL;
	} else if (*tail) {
		return -EINVAL;
	}
	if (inet_pton(AF_INET, host, a->ip) == 1) {
		a->family = AF_INET;
	} else if (inet_pton(AF_INET6, host, a->ip) == 1) {
		a->family = AF_INET6;
	} else {
		return -EINVAL;
	}
	if (fam && fam != a->family)
		return -EINVAL;
	a->port = (uint16_t)port;
	return 0;
}

void pohm_addr_format(const struct pohm_addr *a, char *out, size_t outlen)
{
	char ip[INET6_ADDRSTRLEN];

	if (!inet_ntop(a->family == AF_INET6 ? AF_INET6 : AF_INET, a->ip, ip, sizeof(ip)))
		strcpy(ip, "?");
	if (a->family == AF_INET6)
		snprintf(out, outlen, "[%s]:%u", ip, a->port);
	else
		snprintf(out, outlen, "%s:%u", ip, a->port);
}

int pohm_addr_list_decode(struct pohm_addr_list *l, size_t *used, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);
	int32_t per_node = (int32_t)pohm_rd_u32(&r), count = (int32_t)pohm_rd_u32(&r);
	const uint8_t *raw;
	uint32_t i;

	if (r.err || per_node <= 0 || count <= 0 || count % per_node)
		return -EPROTO;
	raw = pohm_rd_take(&r, (size_t)count * POHM_ADDR_SIZE);
	if (!raw)
		return -EPROTO;
	l->per_node = (uint32_t)per_node;
	l->count = (uint32_t)count;
	l->raw = raw;
	/* Validate every address now so users of the list need not. */
	r = pohm_rd_make(raw, (size_t)count * POHM_ADDR_SIZE);
	for (i = 0; i < l->count; i++) {
		struct pohm_addr a;

		if (addr_read(&a, &r))
			return -EPROTO;
	}
	if (used)
		*used = 8 + (size_t)count * POHM_ADDR_SIZE;
	return 0;
}

int pohm_addr_list_get(const struct pohm_addr_list *l, uint32_t i, struct pohm_addr *out)
{
	if (i >= l->count)
		return -ERANGE;
	return pohm_addr_decode(out, l->raw + (size_t)i * POHM_ADDR_SIZE);
}

int pohm_addr_list_encode(struct pohm_buf *b, uint32_t per_node, const struct pohm_addr *a,
			  uint32_t count)
{
	uint8_t raw[POHM_ADDR_SIZE];
	uint32_t i;
	int r;

	if (!per_node || count % per_node)
		return -EINVAL;
	r = pohm_buf_reserve(b, 8 + (size_t)count * POHM_ADDR_SIZE);
	if (r)
		return r;
	pohm_buf_put_u32(b, per_node);
	pohm_buf_put_u32(b, count);
	for (i = 0; i < count; i++) {
		pohm_addr_encode(raw, &a[i]);
		pohm_buf_put(b, raw, sizeof(raw));
	}
	return 0;
}

/* ---------------------------------------------------------------- backend ids */

int pohm_backends_begin(struct pohm_backend_iter *it, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);
	uint32_t count = pohm_rd_u32(&r), i;

	if (r.err || (int32_t)count < 0)
		return -EPROTO;
	it->rd = r;
	/* The entries must consume the container exactly (PROTOCOL.md §1.5). */
	for (i = 0; i < count && !r.err; i++) {
		pohm_rd_take(&r, 12);		/* backend_id, group, flags */
		pohm_rd_take(&r, (size_t)pohm_rd_u32(&r) * POHM_ID_SIZE);
	}
	if (r.err || r.left)
		return -EPROTO;
	it->remaining = count;
	return 0;
}

int pohm_backends_next(struct pohm_backend_iter *it, struct pohm_backend_ids *b)
{
	struct pohm_rd r = it->rd;

	if (!it->remaining)
		return 0;
	b->backend_id = (int32_t)pohm_rd_u32(&r);
	b->group = pohm_rd_u32(&r);
	b->flags = pohm_rd_u32(&r);
	b->ids_count = pohm_rd_u32(&r);
	b->ids = pohm_rd_take(&r, (size_t)b->ids_count * POHM_ID_SIZE);
	if (r.err)		/* cannot happen after _begin; belt and braces */
		return 0;
	it->rd = r;
	it->remaining--;
	return 1;
}

int pohm_backends_encode_count(struct pohm_buf *b, uint32_t count)
{
	return pohm_buf_put_u32(b, count);
}

int pohm_backends_encode_one(struct pohm_buf *b, const struct pohm_backend_ids *be)
{
	int r = pohm_buf_reserve(b, 16 + (size_t)be->ids_count * POHM_ID_SIZE);

	if (r)
		return r;
	pohm_buf_put_u32(b, (uint32_t)be->backend_id);
	pohm_buf_put_u32(b, be->group);
	pohm_buf_put_u32(b, be->flags);
	pohm_buf_put_u32(b, be->ids_count);
	return pohm_buf_put(b, be->ids, (size_t)be->ids_count * POHM_ID_SIZE);
}

/* ---------------------------------------------------------------- file info */

int pohm_lookup_reply_decode(struct pohm_addr *addr, struct pohm_file_info *fi,
			     const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0), f;
	const uint8_t *fixed = pohm_rd_take(&r, POHM_ADDR_SIZE + POHM_FILE_INFO_SIZE);
	struct pohm_addr tmp;

	if (!fixed)
		return -EPROTO;
	f = pohm_rd_make(fixed, POHM_ADDR_SIZE + POHM_FILE_INFO_SIZE);
	if (addr_read(addr ? addr : &tmp, &f))
		return -EPROTO;
	fi->flen = (int32_t)pohm_rd_u32(&f);
	pohm_rd_copy(&f, fi->checksum, POHM_ID_SIZE);
	pohm_rd_take(&f, 4);	/* 68..71: the alignment hole of the unpacked struct */
	fi->record_flags = pohm_rd_u64(&f);
	fi->size = pohm_rd_u64(&f);
	fi->offset = pohm_rd_u64(&f);
	fi->mtime.tsec = pohm_rd_u64(&f);
	fi->mtime.tnsec = pohm_rd_u64(&f);
	/* The path (flen bytes) follows; more may follow it. */
	if (fi->flen < 0 || (size_t)fi->flen > r.left)
		return -EPROTO;
	return 0;
}

int pohm_lookup_reply_encode(struct pohm_buf *b, const struct pohm_addr *addr,
			     const struct pohm_file_info *fi, const char *path)
{
	uint8_t raw[POHM_ADDR_SIZE + POHM_FILE_INFO_SIZE];
	size_t plen = path && *path ? strlen(path) + 1 : 0;
	uint8_t *f = raw + POHM_ADDR_SIZE;
	int r;

	pohm_addr_encode(raw, addr);
	memset(f, 0, POHM_FILE_INFO_SIZE);
	pohm_st32(f, (uint32_t)plen);
	memcpy(f + 4, fi->checksum, POHM_ID_SIZE);
	pohm_st64(f + 72, fi->record_flags);
	pohm_st64(f + 80, fi->size);
	pohm_st64(f + 88, fi->offset);
	pohm_st64(f + 96, fi->mtime.tsec);
	pohm_st64(f + 104, fi->mtime.tnsec);
	r = pohm_buf_put(b, raw, sizeof(raw));
	if (r)
		return r;
	/* Served from cache, Elliptics sends flen 0 followed by one zero byte. */
	return plen ? pohm_buf_put(b, path, plen) : pohm_buf_put(b, NULL, 1);
}

/* ---------------------------------------------------------------- control */

void pohm_auth_encode(uint8_t out[POHM_AUTH_SIZE], const struct pohm_auth *a)
{
	memset(out, 0, POHM_AUTH_SIZE);
	memcpy(out, a->cookie, POHM_AUTH_COOKIE_SIZE);
	pohm_st64(out + 32, a->flags);
}

int pohm_auth_decode(struct pohm_auth *a, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);

	if (!p || n != POHM_AUTH_SIZE)
		return -EINVAL;		/* the server answers -EINVAL, not -EPROTO */
	pohm_rd_copy(&r, a->cookie, POHM_AUTH_COOKIE_SIZE);
	a->flags = pohm_rd_u64(&r);
	return 0;
}

void pohm_auth_cookie_from_string(uint8_t cookie[POHM_AUTH_COOKIE_SIZE], const char *s)
{
	size_t n = strlen(s);

	memset(cookie, 0, POHM_AUTH_COOKIE_SIZE);
	memcpy(cookie, s, n < POHM_AUTH_COOKIE_SIZE - 1 ? n : POHM_AUTH_COOKIE_SIZE - 1);
}

int pohm_backend_status_count(uint32_t *count, const uint8_t *p, size_t n)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);
	uint32_t c = pohm_rd_u32(&r);

	/* The reply may be longer than 4 + c·96 (zeroed slack), never shorter. */
	if (r.err || (uint64_t)c * POHM_BACKEND_STATUS_SIZE > r.left)
		return -EPROTO;
	*count = c;
	return 0;
}

int pohm_backend_status_get(struct pohm_backend_status *s, const uint8_t *p, size_t n, uint32_t i)
{
	struct pohm_rd r = pohm_rd_make(p, p ? n : 0);
	uint32_t c;

	if (pohm_backend_status_count(&c, p, n) || i >= c)
		return -EPROTO;
	pohm_rd_take(&r, 4 + (size_t)i * POHM_BACKEND_STATUS_SIZE);
	s->backend_id = pohm_rd_u32(&r);
	s->state = (int32_t)pohm_rd_u32(&r);
	s->defrag_state = pohm_rd_u32(&r);
	s->last_start.tsec = pohm_rd_u64(&r);
	s->last_start.tnsec = pohm_rd_u64(&r);
	s->last_start_err = (int32_t)pohm_rd_u32(&r);
	s->read_only = pohm_rd_u8(&r);
	pohm_rd_take(&r, 7);			/* padding */
	s->delay = pohm_rd_u32(&r);
	return r.err ? -EPROTO : 0;
}

int pohm_backend_status_encode(struct pohm_buf *b, const struct pohm_backend_status *s,
			       uint32_t count)
{
	uint8_t e[POHM_BACKEND_STATUS_SIZE];
	uint32_t i;
	int r;

	r = pohm_buf_reserve(b, 4 + (size_t)count * sizeof(e));
	if (r)
		return r;
	pohm_buf_put_u32(b, count);
	for (i = 0; i < count; i++) {
		memset(e, 0, sizeof(e));
		pohm_st32(e, s[i].backend_id);
		pohm_st32(e + 4, (uint32_t)s[i].state);
		pohm_st32(e + 8, s[i].defrag_state);
		pohm_st64(e + 12, s[i].last_start.tsec);
		pohm_st64(e + 20, s[i].last_start.tnsec);
		pohm_st32(e + 28, (uint32_t)s[i].last_start_err);
		e[32] = s[i].read_only;
		pohm_st32(e + 40, s[i].delay);
		pohm_buf_put(b, e, sizeof(e));
	}
	return 0;
}

/* ---------------------------------------------------------------- ids */

void pohm_key_id(uint8_t out[POHM_ID_SIZE], const void *ns, size_t nslen,
		 const void *key, size_t keylen)
{
	struct pohm_sha512 s;

	pohm_sha512_init(&s);
	if (nslen) {
		pohm_sha512_update(&s, ns, nslen);
		pohm_sha512_update(&s, "", 1);	/* the 0x00 separator */
	}
	pohm_sha512_update(&s, key, keylen);
	pohm_sha512_final(&s, out);
}

/* ---------------------------------------------------------------- status */

int pohm_status_errno(int32_t status)
{
	/* Statuses Elliptics sends (PROTOCOL.md §2.6) plus what a node may report. */
	static const int known[] = {
		EPERM, ENOENT, EIO, ENXIO, E2BIG, EAGAIN, ENOMEM, EACCES, EBUSY, EEXIST,
		EINVAL, ENOSPC, ESPIPE, EROFS, EPROTO, EBADFD, EILSEQ, EOPNOTSUPP,
		ETIMEDOUT, ECONNREFUSED, ECONNRESET, EBADF, EFBIG, ENAMETOOLONG, ENOTDIR,
		EISDIR, ENOTEMPTY, ELOOP, EMSGSIZE, ENODATA, EOVERFLOW, ECANCELED,
	};
	size_t i;

	if (status >= 0)
		return 0;
	if (status < -4095)		/* beyond any errno; also keeps -INT_MIN away */
		return -EIO;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (-status == known[i])
			return status;
	return -EIO;
}

const char *pohm_cmd_name(int32_t cmd)
{
	static const char *const names[POHM_CMD_MAX + 1] = {
		[POHM_CMD_LOOKUP] = "LOOKUP", [POHM_CMD_REVERSE_LOOKUP] = "REVERSE_LOOKUP",
		[POHM_CMD_JOIN] = "JOIN", [POHM_CMD_WRITE] = "WRITE", [POHM_CMD_READ] = "READ",
		[POHM_CMD_EXEC] = "EXEC", [POHM_CMD_ROUTE_LIST] = "ROUTE_LIST",
		[POHM_CMD_DEL] = "DEL", [POHM_CMD_STATUS] = "STATUS",
		[POHM_CMD_READ_RANGE] = "READ_RANGE", [POHM_CMD_DEL_RANGE] = "DEL_RANGE",
		[POHM_CMD_AUTH] = "AUTH", [POHM_CMD_BULK_READ] = "BULK_READ",
		[POHM_CMD_ITERATOR] = "ITERATOR", [POHM_CMD_MONITOR_STAT] = "MONITOR_STAT",
		[POHM_CMD_UPDATE_IDS] = "UPDATE_IDS", [POHM_CMD_BACKEND_CONTROL] = "BACKEND_CONTROL",
		[POHM_CMD_BACKEND_STATUS] = "BACKEND_STATUS",
	};

	if (cmd > 0 && cmd <= POHM_CMD_MAX && names[cmd])
		return names[cmd];
	return "cmd#?";
}
