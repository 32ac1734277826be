/*
 * proto.h — the Elliptics wire format (PROTOCOL.md §1–§5, corrected by §10).
 *
 * Every structure is encoded and decoded byte by byte, little-endian, at the
 * offsets PROTOCOL.md gives; nothing is ever cast onto a buffer.  Decoders
 * validate every length and count against the bytes actually present and
 * return -EPROTO for a malformed packet: a hostile peer gets an error, never
 * an over-read.  Shared by the client (core/net, core/io) and the node.
 *
 * Sections: sizes and numbers · header · io_attr · addresses and the
 * handshake containers · file info · small control structs · ids · status.
 */
#ifndef POHM_CORE_PROTO_H
#define POHM_CORE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* ---------------------------------------------------------------- sizes */
#define POHM_ID_SIZE		64
#define POHM_CMD_SIZE		120	/* dnet_cmd header */
#define POHM_IO_ATTR_SIZE	208	/* dnet_io_attr */
#define POHM_ADDR_SIZE		32	/* dnet_addr */
#define POHM_FILE_INFO_SIZE	112	/* dnet_file_info, not packed (hole at 68) */
#define POHM_AUTH_SIZE		64	/* dnet_auth */
#define POHM_NODE_STATUS_SIZE	12	/* dnet_node_status */
#define POHM_BACKEND_STATUS_SIZE 96	/* dnet_backend_status */
#define POHM_AUTH_COOKIE_SIZE	32
#define POHM_MAX_PACKET		(1ULL << 32)	/* we refuse to allocate more */

/* ---------------------------------------------------------------- commands */
enum pohm_cmd_nr {
	POHM_CMD_LOOKUP		= 1,
	POHM_CMD_REVERSE_LOOKUP	= 2,	/* version handshake */
	POHM_CMD_JOIN		= 3,
	POHM_CMD_WRITE		= 4,
	POHM_CMD_READ		= 5,
	POHM_CMD_EXEC		= 7,	/* 2.26 only */
	POHM_CMD_ROUTE_LIST	= 8,
	POHM_CMD_DEL		= 11,
	POHM_CMD_STATUS		= 13,	/* never send: can stop a node */
	POHM_CMD_READ_RANGE	= 14,
	POHM_CMD_DEL_RANGE	= 15,
	POHM_CMD_AUTH		= 16,
	POHM_CMD_BULK_READ	= 17,
	POHM_CMD_ITERATOR	= 19,
	POHM_CMD_MONITOR_STAT	= 23,
	POHM_CMD_UPDATE_IDS	= 24,	/* server push, REPLY not set */
	POHM_CMD_BACKEND_CONTROL = 25,
	POHM_CMD_BACKEND_STATUS	= 26,	/* our keepalive ping */
	POHM_CMD_MAX		= 28,
};

/* cmd.flags (low 32 bits; DNET_ATTR_* live in the high 32) */
#define POHM_FLAG_NEED_ACK	0x001ULL
#define POHM_FLAG_MORE		0x002ULL
#define POHM_FLAG_DESTROY	0x004ULL
#define POHM_FLAG_DIRECT	0x008ULL
#define POHM_FLAG_NOLOCK	0x010ULL
#define POHM_FLAG_CHECKSUM	0x020ULL	/* LOOKUP/WRITE reply: fill file_info.checksum */
#define POHM_FLAG_NOCACHE	0x040ULL
#define POHM_FLAG_DIRECT_BACKEND 0x080ULL
#define POHM_FLAG_TRACE_BIT	0x100ULL
#define POHM_FLAG_REPLY		0x200ULL
#define POHM_TRANS_REPLY_BIT	(1ULL << 63)	/* early 2.26 reply marker */

/* io_attr.flags */
#define POHM_IO_APPEND		0x00002u
#define POHM_IO_PREPARE		0x00010u
#define POHM_IO_COMMIT		0x00020u
#define POHM_IO_NOCSUM		0x00100u
#define POHM_IO_PLAIN_WRITE	0x00200u
#define POHM_IO_CACHE		0x00400u
#define POHM_IO_CAS		0x02000u	/* write only if sha512(data) == io.parent */
#define POHM_IO_CHECKSUM	0x04000u	/* READ: sha512 of returned bytes in io.parent */
#define POHM_IO_WRITE_NO_FILE_INFO 0x04000u	/* WRITE: same bit, bare ack */
#define POHM_IO_CAS_TIMESTAMP	0x08000u	/* write only if stored ts <= io.timestamp */

/* record flags */
#define POHM_RECORD_REMOVE	0x001u
#define POHM_RECORD_NOCSUM	0x002u
#define POHM_RECORD_APPEND	0x010u
#define POHM_RECORD_EXTHDR	0x040u
#define POHM_RECORD_UNCOMMITTED	0x080u
#define POHM_RECORD_CHUNKED_CSUM 0x100u

/* ---------------------------------------------------------------- header */
struct pohm_id {
	uint8_t  id[POHM_ID_SIZE];	/* sha512 key id; handshake: version ints */
	uint32_t group;			/* replica group */
};

struct pohm_time {
	uint64_t tsec;
	uint64_t tnsec;
};

struct pohm_cmd {
	struct pohm_id id;
	int32_t  status;	/* 0 in requests; negative errno in replies */
	int32_t  cmd;		/* enum pohm_cmd_nr */
	int32_t  backend_id;
	uint64_t trace_id;
	uint64_t flags;		/* POHM_FLAG_* */
	uint64_t trans;		/* echoed in every reply */
	uint64_t size;		/* payload bytes after the header */
};

/* Encode c into exactly POHM_CMD_SIZE bytes. */
void pohm_cmd_encode(uint8_t out[POHM_CMD_SIZE], const struct pohm_cmd *c);
/* Decode a 120-byte header (no validation beyond the fixed layout). */
void pohm_cmd_decode(struct pohm_cmd *c, const uint8_t in[POHM_CMD_SIZE]);
/* True when the header is a reply: REPLY flag, or the early-2.26 trans bit. */
int pohm_cmd_is_reply(const struct pohm_cmd *c);

/* Version in id bytes 0..15 (REVERSE_LOOKUP): four LE i32. */
void pohm_version_encode(uint8_t id[POHM_ID_SIZE], const int32_t v[4]);
void pohm_version_decode(int32_t v[4], const uint8_t id[POHM_ID_SIZE]);

/* Order two timestamps: <0, 0, >0 like memcmp. */
int pohm_time_cmp(const struct pohm_time *a, const struct pohm_time *b);

/* ---------------------------------------------------------------- io_attr */
struct pohm_io_attr {
	uint8_t  parent[POHM_ID_SIZE];	/* CAS: expected sha512; READ reply: checksum */
	uint8_t  id[POHM_ID_SIZE];	/* key id the backend uses */
	uint64_t start;
	uint64_t num;			/* PREPARE: reserve; COMMIT: final size */
	struct pohm_time timestamp;	/* stored with the record, returned on READ */
	uint64_t user_flags;
	uint64_t total_size;		/* reply: full object size */
	uint64_t record_flags;		/* reply: POHM_RECORD_* */
	uint32_t flags;			/* POHM_IO_* */
	uint64_t offset;
	uint64_t size;			/* bytes to write/read; reply: bytes returned */
};

void pohm_io_attr_encode(uint8_t out[POHM_IO_ATTR_SIZE], const struct pohm_io_attr *io);
void pohm_io_attr_decode(struct pohm_io_attr *io, const uint8_t in[POHM_IO_ATTR_SIZE]);

/*
 * Split a READ/WRITE-shaped payload (io_attr + data).  Returns 0 and sets
 * data and datalen (datalen = n - 208, and for a READ reply it must equal
 * io->size), or -EPROTO if n < 208 or the sizes disagree (check_size != 0).
 */
int pohm_io_payload_decode(struct pohm_io_attr *io, const uint8_t **data, size_t *datalen,
			   const uint8_t *p, size_t n, int check_size);

/* ---------------------------------------------------------------- addresses */
struct pohm_addr {
	uint16_t family;	/* AF_INET or AF_INET6 */
	uint16_t port;		/* host order */
	uint8_t  ip[16];	/* network order; first 4 bytes for IPv4 */
	uint32_t scope_id;	/* IPv6 only */
};

/* Encode as a 32-byte dnet_addr (raw sockaddr, addr_len, family). */
void pohm_addr_encode(uint8_t out[POHM_ADDR_SIZE], const struct pohm_addr *a);
/* Decode a dnet_addr; -EPROTO on an unknown family, a bad length or a wildcard. */
int pohm_addr_decode(struct pohm_addr *a, const uint8_t in[POHM_ADDR_SIZE]);
/* Equal as Elliptics compares them (family, length, address bytes, port). */
int pohm_addr_equal(const struct pohm_addr *a, const struct pohm_addr *b);
/* Parse "host:port[:family]" (host numeric IPv4/IPv6, [v6]:port also accepted). */
int pohm_addr_parse(struct pohm_addr *a, const char *s);
/* Format as "ip:port" (IPv6 as "[ip]:port") into out (at least 64 bytes). */
void pohm_addr_format(const struct pohm_addr *a, char *out, size_t outlen);

/*
 * dnet_addr_container: node_addr_num (addresses per node), addr_num (total),
 * then addr_num × dnet_addr.  The decoder checks addr_num % per_node == 0,
 * per_node > 0 and that the bytes are present; *used gets the bytes consumed.
 * Addresses are read on demand with pohm_addr_list_get().
 */
struct pohm_addr_list {
	uint32_t per_node;
	uint32_t count;
	const uint8_t *raw;	/* points into the decoded packet */
};
int pohm_addr_list_decode(struct pohm_addr_list *l, size_t *used, const uint8_t *p, size_t n);
int pohm_addr_list_get(const struct pohm_addr_list *l, uint32_t i, struct pohm_addr *out);
/* Append a container of count addresses (per_node each node) to b. */
int pohm_addr_list_encode(struct pohm_buf *b, uint32_t per_node, const struct pohm_addr *a,
			  uint32_t count);

/*
 * dnet_id_container + dnet_backend_ids entries, as in the handshake reply and
 * UPDATE_IDS.  _begin checks that the entries consume the bytes exactly
 * (as the stock code does); _next yields one backend at a time, its ids
 * pointing into the packet.
 */
struct pohm_backend_ids {
	int32_t  backend_id;
	uint32_t group;
	uint32_t flags;		/* 1 = disable: remove this backend */
	uint32_t ids_count;
	const uint8_t *ids;	/* ids_count × 64 bytes, inside the packet */
};
struct pohm_backend_iter {
	struct pohm_rd rd;	/* the entries not yet returned */
	uint32_t remaining;
};
int pohm_backends_begin(struct pohm_backend_iter *it, const uint8_t *p, size_t n);
/* Returns 1 and fills *b, or 0 at the end. */
int pohm_backends_next(struct pohm_backend_iter *it, struct pohm_backend_ids *b);
/* Append an id container header for count backends. */
int pohm_backends_encode_count(struct pohm_buf *b, uint32_t count);
/* Append one backend entry (ids: ids_count × 64 bytes). */
int pohm_backends_encode_one(struct pohm_buf *b, const struct pohm_backend_ids *be);

/* ---------------------------------------------------------------- file info */
struct pohm_file_info {
	int32_t  flen;			/* path bytes that follow, incl. NUL */
	uint8_t  checksum[POHM_ID_SIZE];	/* only with POHM_FLAG_CHECKSUM */
	uint64_t record_flags;
	uint64_t size;			/* object data size */
	uint64_t offset;		/* in the server's blob; useless */
	struct pohm_time mtime;		/* the writer's timestamp */
};

/*
 * LOOKUP / WRITE reply: dnet_addr + dnet_file_info + flen bytes of path.
 * Validates flen against the bytes present; addr may be NULL.
 */
int pohm_lookup_reply_decode(struct pohm_addr *addr, struct pohm_file_info *fi,
			     const uint8_t *p, size_t n);
/* Append addr + file info + path (path NULL or "" → flen 0 and one zero byte). */
int pohm_lookup_reply_encode(struct pohm_buf *b, const struct pohm_addr *addr,
			     const struct pohm_file_info *fi, const char *path);

/* ---------------------------------------------------------------- control */
struct pohm_auth {
	uint8_t  cookie[POHM_AUTH_COOKIE_SIZE];
	uint64_t flags;
};
void pohm_auth_encode(uint8_t out[POHM_AUTH_SIZE], const struct pohm_auth *a);
int pohm_auth_decode(struct pohm_auth *a, const uint8_t *p, size_t n);
/* Fill a cookie from a string as Elliptics does (≤ 31 chars, zero padded). */
void pohm_auth_cookie_from_string(uint8_t cookie[POHM_AUTH_COOKIE_SIZE], const char *s);

struct pohm_backend_status {
	uint32_t backend_id;
	int32_t  state;			/* 1 = enabled */
	uint32_t defrag_state;
	struct pohm_time last_start;
	int32_t  last_start_err;
	uint8_t  read_only;
	uint32_t delay;
};
/* BACKEND_STATUS reply: count + entries; the trailing zero slack is allowed. */
int pohm_backend_status_count(uint32_t *count, const uint8_t *p, size_t n);
int pohm_backend_status_get(struct pohm_backend_status *s, const uint8_t *p, size_t n, uint32_t i);
int pohm_backend_status_encode(struct pohm_buf *b, const struct pohm_backend_status *s,
			       uint32_t count);

/* ---------------------------------------------------------------- ids */
/*
 * Elliptics key id: sha512(ns || 0x00 || key), or sha512(key) when nslen is 0
 * (PROTOCOL.md §3.5).
 */
void pohm_key_id(uint8_t out[POHM_ID_SIZE], const void *ns, size_t nslen,
		 const void *key, size_t keylen);

/* ---------------------------------------------------------------- status */
/*
 * Map a reply status (negative errno as sent by the server) to the negative
 * errno our callers see: known values pass through, unknown ones are -EIO.
 * The one table of server statuses.
 */
int pohm_status_errno(int32_t status);
/* Short name of a command number for logs ("WRITE"; "cmd#?" if unknown); never NULL. */
const char *pohm_cmd_name(int32_t cmd);

#endif
