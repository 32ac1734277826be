/*
 * iter.h — every object of the storage, listed over the wire and read copy
 * by copy: what fsck and the kv scan walk (keys on the wire are hashes, so
 * objects are recognised by their contents).
 *
 * Listing: one ITERATOR (PROTOCOL.md §1.9, type "network", no data, start)
 * per backend of a group, sent to the node that holds it with DIRECT and
 * DIRECT_BACKEND; each reply is matched by trans (core/net) and checked
 * (140-byte dnet_iterator_response, sizes consistent) before its key is
 * used.  The id space is cut into POHM_ITER_SLICES key ranges, one request
 * each, so no single transaction holds more than a slice of a backend's
 * keys and each is bounded by its own timeout: read_wait_timeout times
 * POHM_ITER_TIMEOUT_MUL (an iteration lists many keys per request).
 *
 * Reading: every distinct id any group listed is then READ from its owner
 * in every configured group (as a client reads it: the route table's owner,
 * DIRECT|NEED_ACK, a -95 answer refreshes the routes once), with the IO
 * CHECKSUM flag; the bytes are hashed and compared with the node's sum.
 * Objects larger than POHM_ITER_READ_MAX are read only up to that size
 * (enough to see a header) and flagged partial.
 *
 * Nothing here changes the storage.  Errors are negative errno.
 */
#ifndef POHM_CORE_ITER_H
#define POHM_CORE_ITER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "wire.h"

#define POHM_ITER_SLICES	16		/* key ranges per backend */
#define POHM_ITER_TIMEOUT_MUL	10		/* iterator timeout = read_wait_timeout × this */
#define POHM_ITER_READ_MAX	(8u << 20)	/* bigger objects: only their first 4 KiB */
#define POHM_ITER_PEEK		4096u

struct pohm_client;

/* One key as one backend listed it. */
struct pohm_iter_key {
	uint8_t id[POHM_ID_SIZE];
	uint32_t group;
	int node;			/* client node index */
	int32_t backend;
	int status;			/* the backend's status for this key (0, -84, ...) */
	struct pohm_time ts;		/* record timestamp */
	uint64_t size, user_flags, record_flags;
};

/* Per-group listing outcome. */
struct pohm_iter_group_stat {
	uint32_t group;
	unsigned backends;		/* backends iterated */
	unsigned failed;		/* backends that could not be iterated */
	uint64_t keys;			/* keys listed */
	int error;			/* first failure, 0 if none */
	char msg[200];			/* what failed, "" if nothing */
};

struct pohm_iter_stats {
	unsigned ngroups;
	struct pohm_iter_group_stat g[POHM_MAX_GROUPS];	/* configured group order */
	uint64_t objects;		/* distinct ids */
	uint64_t reads, read_errors;
};

/*
 * List every key of every backend of group (fn per key; non-zero from fn
 * stops and is returned).  0 when every backend answered, else the first
 * error with st->msg saying which backend (keys already given stay given).
 */
int pohm_iter_group(struct pohm_client *c, uint32_t group,
		    int (*fn)(void *arg, const struct pohm_iter_key *k), void *arg,
		    struct pohm_iter_group_stat *st);

/* One group's copy of an object. */
struct pohm_iter_copy {
	uint32_t group;
	int status;			/* 0; -ENOENT missing; -EILSEQ corrupt (the node said
					 * -84, or the bytes do not hash to its checksum);
					 * other -errno: no usable answer */
	int listed;			/* this group's iterator listed the id */
	struct pohm_time ts;		/* record timestamp (status 0) */
	uint64_t total_size;		/* object size (status 0) */
	const uint8_t *data;		/* the bytes read (status 0), valid during fn */
	size_t len;
	int partial;			/* only the first len bytes were read */
	uint8_t csum[POHM_ID_SIZE];	/* sha512(data) (whole objects only) */
};

struct pohm_iter_obj {
	uint8_t id[POHM_ID_SIZE];
	unsigned ncopies;		/* configured groups */
	struct pohm_iter_copy copy[POHM_MAX_GROUPS];	/* configured group order */
};

/*
 * Every distinct id listed by any backend of any configured group, with
 * each group's copy read, in id order (fn non-zero stops and is returned).
 * st (may be NULL) gets the listing outcome per group.  0 even when some
 * backends could not be listed (see st; their copies are still read from
 * the owners); -errno when nothing could be listed or memory ran out.
 */
int pohm_iter_all(struct pohm_client *c, int (*fn)(void *arg, const struct pohm_iter_obj *o),
		  void *arg, struct pohm_iter_stats *st);

/* DEL id (a raw key id: absent markers carry no key) on every group: 0 or -errno. */
int pohm_iter_del(struct pohm_client *c, const uint8_t id[POHM_ID_SIZE]);
/* 1 if key hashes to id in the client's fsid namespace (a header's claim checked). */
int pohm_iter_key_is(struct pohm_client *c, const uint8_t id[POHM_ID_SIZE], const char *key);

/* ---- pure helpers (unit-tested without a network) */

/* Encode a start request (network type, no data, one key range): 104 + 128 bytes. */
#define POHM_ITER_REQ_SIZE	104
#define POHM_ITER_RANGE_SIZE	128
#define POHM_ITER_RESP_SIZE	140
void pohm_iter_request_encode(uint8_t out[POHM_ITER_REQ_SIZE + POHM_ITER_RANGE_SIZE],
			      const uint8_t begin[POHM_ID_SIZE], const uint8_t end[POHM_ID_SIZE]);
/*
 * Decode one reply payload into k (id, status, ts, size, flags).  0, or
 * -EPROTO when it is not a dnet_iterator_response (too short, or carrying
 * data we did not ask for).
 */
int pohm_iter_response_decode(struct pohm_iter_key *k, const uint8_t *p, size_t n);
/* Bounds of slice i of n of the id space (big-endian numbers, inclusive). */
void pohm_iter_slice(unsigned i, unsigned n, uint8_t begin[POHM_ID_SIZE], uint8_t end[POHM_ID_SIZE]);

#endif
