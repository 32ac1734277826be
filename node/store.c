/*
 * store.c — records on disk.
 *
 * Layout of DIR:
 *   ids                 this node's ring ids, one hex id per line
 *   data/XX/<id-hex>    committed records (XX = first id byte)
 *   data/XX/<id-hex>.u  an uncommitted record (PREPARE … COMMIT, §10.6)
 *   data/XX/<id-hex>.t  a write in progress (removed at start)
 *
 * Record file: a 128-byte header, the data, then one CRC-32C per 64 KiB
 * chunk of data.  Header (little-endian):
 *   0 magic "PohmRec\1" · 8 version u32 · 12 header size u32 ·
 *   16 record flags u64 · 24 data size u64 · 32 tsec · 40 tnsec ·
 *   48 user_flags · 56 reserve u64 (PREPARE num) · 64 chunk size u32 ·
 *   120 CRC-32C of bytes 0..119.
 *
 * Why this shape (crash safety): a write builds the complete new record in
 * <id>.t and renames it over <id>, so a killed process leaves the old
 * record or the new one, never a mix; a leftover .t is deleted at start.
 * When the new record reaches the disk is the sync policy's business
 * (gcommit.h): by default every sync_interval seconds, with sync_interval 0
 * before the ack (one syncfs after the rename, shared by every concurrent
 * writer).  Should a host crash still hand back a torn record, the file
 * length no longer matches the header, or the header or a chunk fails its
 * CRC, and the record reads as -EILSEQ instead of being served.  Per-chunk
 * CRCs (not one checksum per record) let a 4 KiB read of a large object
 * verify only what it returns.  The cost is that a write at an offset
 * copies the kept prefix (and APPEND copies the object): fine for this
 * client, which writes objects whole.
 *
 * Uncommitted records are updated in place (PLAIN_WRITE), synced per
 * chunk by the policy; COMMIT computes the CRCs, writes the header and renames the .u
 * file over the committed name.
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "gcommit.h"
#include "log.h"
#include "sha512.h"
#include "sys.h"
#include "ucrc.h"

#define REC_MAGIC	"PohmRec\1"
#define REC_HDR		128u
#define REC_CHUNK	65536u
#define REC_STRIPES	1024u
#define REC_FLAGS	(POHM_RECORD_EXTHDR | POHM_RECORD_CHUNKED_CSUM)	/* 0x140 */
#define REC_SMALL	(16384u + REC_HDR)	/* first read: whole file if small */
#define REC_BOUNCE	(1u << 20)		/* copy/hash buffer */
#define REC_MAP_MIN	(1u << 20)		/* reads this large are served from a mapping */

struct node_store {
	int dirfd;			/* DIR */
	int subfd[256];			/* DIR/data/XX */
	int sync_interval;		/* gcommit.h: > 0 seconds, 0 every write, < 0 never */
	struct node_gcommit *gc;	/* the sync policy (its own lock) */
	uint64_t max_object;		/* larger objects get -EFBIG */
	pthread_mutex_t stripes[REC_STRIPES];	/* per-key locks, by id hash */
	struct node_ucrc *ucrc;		/* chunk CRCs noted while uncommitted records are
					 * written (ucrc.h; its own lock) */
};

/* A decoded record header. */
struct rec {
	uint64_t flags, size, tsec, tnsec, user_flags, reserve;
	uint32_t chunk;
};

/* ---------------------------------------------------------------- helpers */

static void id_hex(const uint8_t *id, char *out)
{
	static const char hx[] = "0123456789abcdef";
	int i;

	for (i = 0; i < POHM_ID_SIZE; i++) {
		out[2 * i] = hx[id[i] >> 4];
		out[2 * i + 1] = hx[id[i] & 15];
	}
	out[2 * POHM_ID_SIZE] = '\0';
}

/* The file name of a record: hex id plus suffix ("", ".u", ".t"). */
static void rec_name(const uint8_t *id, const char *suffix, char *out)
{
	id_hex(id, out);
	strcpy(out + 2 * POHM_ID_SIZE, suffix);
}

/* See store.h. */
void node_store_relpath(const uint8_t *id, char *out, size_t outlen)
{
	char hex[2 * POHM_ID_SIZE + 1];

	id_hex(id, hex);
	snprintf(out, outlen, "data/%.2s/%s", hex, hex);
}

/* The lock stripe of a key. */
static pthread_mutex_t *stripe(struct node_store *s, const uint8_t *id)
{
	/* Ids are hashes: any four bytes spread evenly. */
	return &s->stripes[pohm_le32(id + 4) % REC_STRIPES];
}

/* CRC of a whole chunk of zeros (a hole); computed once. */
static uint32_t zero_chunk_crc;
static pthread_once_t zero_chunk_once = PTHREAD_ONCE_INIT;

/* Fill zero_chunk_crc (pthread_once). */
static void zero_chunk_init(void)
{
	zero_chunk_crc = node_crc32c_zeros(0, REC_CHUNK);
}

/* Number of chunks covering size bytes. */
static uint64_t nchunks(uint64_t size, uint32_t chunk)
{
	return (size + chunk - 1) / chunk;
}

/* Encode a record header, its CRC last. */
static void hdr_encode(uint8_t *h, const struct rec *r)
{
	memset(h, 0, REC_HDR);
	memcpy(h, REC_MAGIC, 8);
	pohm_st32(h + 8, 1);
	pohm_st32(h + 12, REC_HDR);
	pohm_st64(h + 16, r->flags);
	pohm_st64(h + 24, r->size);
	pohm_st64(h + 32, r->tsec);
	pohm_st64(h + 40, r->tnsec);
	pohm_st64(h + 48, r->user_flags);
	pohm_st64(h + 56, r->reserve);
	pohm_st32(h + 64, r->chunk);
	pohm_st32(h + 120, node_crc32c(0, h, 120));
}

/* Decode and check a record header; 0 or -EILSEQ. */
static int hdr_decode(struct rec *r, const uint8_t *h)
{
	if (memcmp(h, REC_MAGIC, 8) || pohm_le32(h + 8) != 1 || pohm_le32(h + 12) != REC_HDR ||
	    pohm_le32(h + 120) != node_crc32c(0, h, 120))
		return -EILSEQ;
	r->flags = pohm_le64(h + 16);
	r->size = pohm_le64(h + 24);
	r->tsec = pohm_le64(h + 32);
	r->tnsec = pohm_le64(h + 40);
	r->user_flags = pohm_le64(h + 48);
	r->reserve = pohm_le64(h + 56);
	r->chunk = pohm_le32(h + 64);
	if (!r->chunk || r->size > NODE_STORE_MAX_OBJECT)
		return -EILSEQ;
	return 0;
}

/* What a header tells clients. */
static void rec_meta(const struct rec *r, struct node_meta *m)
{
	m->size = r->size;
	m->record_flags = r->flags;
	m->user_flags = r->user_flags;
	m->ts.tsec = r->tsec;
	m->ts.tnsec = r->tnsec;
	m->data_offset = REC_HDR;
}

/* Expected length of a committed record file. */
static uint64_t rec_file_len(const struct rec *r)
{
	return REC_HDR + r->size + 4 * nchunks(r->size, r->chunk);
}

/* Open a record file of the key; fd or -errno. */
static int rec_open(struct node_store *s, const uint8_t *id, const char *suffix, int flags)
{
	char name[2 * POHM_ID_SIZE + 8];
	int fd;

	rec_name(id, suffix, name);
	do
		fd = openat(s->subfd[id[0]], name, flags | O_CLOEXEC, 0644);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

/* Remove a record file of the key; 0 or -errno. */
static int rec_unlink(struct node_store *s, const uint8_t *id, const char *suffix)
{
	char name[2 * POHM_ID_SIZE + 8];

	rec_name(id, suffix, name);
	return unlinkat(s->subfd[id[0]], name, 0) < 0 ? -errno : 0;
}

/*
 * This write is in the page cache: make it as durable as the sync policy
 * asks before going on (gcommit.h: an interval, group commit, or never).
 * With group commit one syncfs covers the record files and directory
 * entries of every writer waiting at that moment.
 */
static int durable(struct node_store *s)
{
	return node_gcommit_wrote(s->gc);
}

/* The group sync: everything written under DIR (one file system). */
static int store_syncfs(void *arg)
{
	struct node_store *s = arg;

	return syncfs(s->dirfd) < 0 ? -errno : 0;
}

/*
 * Read and check the header of an open record.  committed = also check the
 * file length (a torn record is shorter or longer than its header says).
 */
static int rec_load(int fd, struct rec *r, int committed)
{
	uint8_t h[REC_HDR];
	struct stat st;
	ssize_t got = pohm_sys_pread_full(fd, h, REC_HDR, 0);

	if (got < 0)
		return (int)got;
	if (got != REC_HDR || hdr_decode(r, h))
		return -EILSEQ;
	if (committed) {
		if (fstat(fd, &st) < 0)
			return -errno;
		if ((uint64_t)st.st_size != rec_file_len(r))
			return -EILSEQ;
	}
	return 0;
}

/*
 * Walk the data [0, size) of an open record chunk by chunk, verifying each
 * chunk against the stored CRC table (verify) and feeding it to sha
 * (when not NULL).  0, -EILSEQ or -errno.
 */
static int rec_scan(int fd, const struct rec *r, int verify, struct pohm_sha512 *sha)
{
	uint64_t nc = nchunks(r->size, r->chunk), i, per, done;
	uint8_t *buf = NULL, *crcs = NULL;
	int ret = 0;

	if (!r->size)
		return 0;
	per = REC_BOUNCE / r->chunk ? REC_BOUNCE / r->chunk : 1;
	buf = malloc(per * r->chunk);
	crcs = malloc(per * 4);
	if (!buf || !crcs) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nc; i += done) {
		uint64_t off = i * r->chunk, k;
		uint64_t len = r->size - off < per * r->chunk ? r->size - off : per * r->chunk;
		ssize_t got;

		done = nchunks(len, r->chunk);
		got = pohm_sys_pread_full(fd, buf, len, (off_t)(REC_HDR + off));
		if (got < 0 || (uint64_t)got != len) {
			ret = got < 0 ? (int)got : -EILSEQ;
			goto out;
		}
		if (verify) {
			got = pohm_sys_pread_full(fd, crcs, done * 4,
						  (off_t)(REC_HDR + r->size + i * 4));
			if (got < 0 || (uint64_t)got != done * 4) {
				ret = got < 0 ? (int)got : -EILSEQ;
				goto out;
			}
			for (k = 0; k < done; k++) {
				uint64_t co = k * r->chunk;
				uint64_t cl = len - co < r->chunk ? len - co : r->chunk;

				if (node_crc32c(0, buf + co, cl) != pohm_le32(crcs + 4 * k)) {
					ret = -EILSEQ;
					goto out;
				}
			}
		}
		if (sha)
			pohm_sha512_update(sha, buf, len);
	}
out:
	free(buf);
	free(crcs);
	return ret;
}

/* sha512 of a record's data, verified; 64 zeros for an empty record (§10.5). */
static int rec_hash(int fd, const struct rec *r, uint8_t *out)
{
	struct pohm_sha512 sha;
	int ret;

	if (!r->size) {
		memset(out, 0, POHM_ID_SIZE);
		return 0;
	}
	pohm_sha512_init(&sha);
	ret = rec_scan(fd, r, 1, &sha);
	if (!ret)
		pohm_sha512_final(&sha, out);
	return ret;
}

/* ---------------------------------------------------------------- open */

static int mkdir_p(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Remove leftovers of interrupted writes (*.t) in one data subdirectory. */
static void sweep_temps(int subfd)
{
	int fd = dup(subfd);
	DIR *d;
	struct dirent *e;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l == 2 * POHM_ID_SIZE + 2 && !strcmp(e->d_name + l - 2, ".t")) {
			pohm_info("store: removing an interrupted write %s", e->d_name);
			unlinkat(subfd, e->d_name, 0);
		}
	}
	closedir(d);
}

/* See store.h. */
int node_store_open(struct node_store **out, const char *dir, int sync_interval,
		    uint64_t max_object)
{
	struct node_store *s = calloc(1, sizeof(*s));
	int ret = 0, datafd = -1, i;
	char name[4];

	if (!s)
		return -ENOMEM;
	s->dirfd = -1;
	for (i = 0; i < 256; i++)
		s->subfd[i] = -1;
	for (i = 0; i < (int)REC_STRIPES; i++)
		pthread_mutex_init(&s->stripes[i], NULL);
	s->sync_interval = sync_interval;
	s->ucrc = node_ucrc_new(REC_CHUNK);
	if (!s->ucrc) {
		ret = -ENOMEM;
		goto out;
	}
	s->max_object = max_object && max_object < NODE_STORE_MAX_OBJECT ? max_object
									 : NODE_STORE_MAX_OBJECT;
	ret = mkdir_p(AT_FDCWD, dir);
	if (ret)
		goto out;
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		ret = -errno;
		goto out;
	}
	ret = mkdir_p(s->dirfd, "data");
	if (ret)
		goto out;
	datafd = openat(s->dirfd, "data", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (datafd < 0) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < 256; i++) {
		snprintf(name, sizeof(name), "%02x", i);
		ret = mkdir_p(datafd, name);
		if (ret)
			goto out;
		s->subfd[i] = openat(datafd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->subfd[i] < 0) {
			ret = -errno;
			goto out;
		}
		sweep_temps(s->subfd[i]);
	}
	if (sync_interval >= 0)
		fsync(datafd);
	s->gc = node_gcommit_new(sync_interval, store_syncfs, s);
	if (!s->gc)
		ret = -ENOMEM;
out:
	if (datafd >= 0)
		close(datafd);
	if (ret) {
		node_store_close(s);
		return ret;
	}
	*out = s;
	return 0;
}

/* See store.h. */
void node_store_close(struct node_store *s)
{
	int i;

	if (!s)
		return;
	node_gcommit_free(s->gc);	/* the last sync needs dirfd */
	for (i = 0; i < 256; i++)
		if (s->subfd[i] >= 0)
			close(s->subfd[i]);
	if (s->dirfd >= 0)
		close(s->dirfd);
	for (i = 0; i < (int)REC_STRIPES; i++)
		pthread_mutex_destroy(&s->stripes[i]);
	node_ucrc_free(s->ucrc);
	free(s);
}

/* See store.h. */
int node_store_flush(struct node_store *s, uint64_t *writes, uint64_t *syncs)
{
	int ret = node_gcommit_flush(s->gc);

	node_gcommit_stats(s->gc, writes, syncs);
	return ret;
}

/* ---------------------------------------------------------------- ids */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Read DIR/ids; 0, -ENOENT, or -EILSEQ for a damaged file. */
static int ids_read(struct node_store *s, uint8_t **ids, unsigned *n)
{
	int fd = openat(s->dirfd, "ids", O_RDONLY | O_CLOEXEC);
	char line[256];
	FILE *f;
	uint8_t *v = NULL, *nv;
	unsigned cnt = 0, i;
	int ret = 0;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (strlen(line) < 2 * POHM_ID_SIZE || cnt >= NODE_STORE_MAX_IDS) {
			ret = -EILSEQ;
			goto out;
		}
		nv = realloc(v, (size_t)(cnt + 1) * POHM_ID_SIZE);
		if (!nv) {
			ret = -ENOMEM;
			goto out;
		}
		v = nv;
		for (i = 0; i < POHM_ID_SIZE; i++) {
			int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);

			if (hi < 0 || lo < 0) {
				ret = -EILSEQ;
				goto out;
			}
			v[(size_t)cnt * POHM_ID_SIZE + i] = (uint8_t)(hi << 4 | lo);
		}
		cnt++;
	}
	if (!cnt)
		ret = -EILSEQ;
out:
	fclose(f);
	if (ret) {
		free(v);
		return ret;
	}
	*ids = v;
	*n = cnt;
	return 0;
}

/* Write DIR/ids durably (temp file, fsync, rename, fsync). */
static int ids_write(struct node_store *s, const uint8_t *ids, unsigned n)
{
	char hex[2 * POHM_ID_SIZE + 2];
	unsigned i;
	int fd, ret = 0;

	fd = openat(s->dirfd, "ids.t", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (i = 0; i < n && !ret; i++) {
		id_hex(ids + (size_t)i * POHM_ID_SIZE, hex);
		hex[2 * POHM_ID_SIZE] = '\n';
		if (pohm_sys_write_full(fd, hex, 2 * POHM_ID_SIZE + 1) < 0)
			ret = -EIO;
	}
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && renameat(s->dirfd, "ids.t", s->dirfd, "ids") < 0)
		ret = -errno;
	if (!ret)
		fsync(s->dirfd);
	return ret;
}

/* See store.h. */
int node_store_ids(struct node_store *s, unsigned want, uint8_t **ids, unsigned *n)
{
	uint8_t *v;
	int ret = ids_read(s, ids, n);
	size_t len, got = 0;

	if (ret != -ENOENT)
		return ret;
	if (!want || want > NODE_STORE_MAX_IDS)
		return -EINVAL;
	len = (size_t)want * POHM_ID_SIZE;
	v = malloc(len);
	if (!v)
		return -ENOMEM;
	while (got < len) {
		ssize_t r = getrandom(v + got, len - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(v);
			return -errno;
		}
		got += (size_t)r;
	}
	ret = ids_write(s, v, want);
	if (ret) {
		free(v);
		return ret;
	}
	*ids = v;
	*n = want;
	return 0;
}

/* ---------------------------------------------------------------- lookup, read */

int node_store_lookup(struct node_store *s, const uint8_t *id, int lock, struct node_meta *m,
		      uint8_t *csum)
{
	pthread_mutex_t *mx = lock ? stripe(s, id) : NULL;
	struct rec r;
	int fd = -1, ret;

	if (mx)
		pthread_mutex_lock(mx);
	fd = rec_open(s, id, "", O_RDONLY);
	if (fd < 0) {
		ret = fd == -ENOENT ? -ENOENT : fd;
		goto out;
	}
	ret = rec_load(fd, &r, 1);
	if (ret)
		goto out;
	rec_meta(&r, m);
	if (csum)
		ret = rec_hash(fd, &r, csum);
out:
	if (fd >= 0)
		close(fd);
	if (mx)
		pthread_mutex_unlock(mx);
	return ret;
}

/* Verify the chunks [c0, c0 + k) held in data against crcs. */
static int check_chunks(const struct rec *r, uint64_t c0, uint64_t k, const uint8_t *data,
			const uint8_t *crcs)
{
	uint64_t i;

	for (i = 0; i < k; i++) {
		uint64_t off = (c0 + i) * r->chunk;
		uint64_t len = r->size - off < r->chunk ? r->size - off : r->chunk;

		if (node_crc32c(0, data + i * r->chunk, len) != pohm_le32(crcs + 4 * i))
			return -EILSEQ;
	}
	return 0;
}

/* See store.h. */
void node_rbuf_release(struct node_rbuf *b)
{
	if (b->map)
		munmap(b->map, b->maplen);
	b->map = NULL;
	b->maplen = 0;
}

/*
 * Map [REC_HDR + a, REC_HDR + b) of fd read-only and populated; returns
 * the address of byte a, or NULL (then the caller falls back to pread).
 */
static uint8_t *map_range(int fd, uint64_t a, uint64_t b, struct node_rbuf *rb)
{
	uint64_t start = (REC_HDR + a) & ~(uint64_t)4095, end = REC_HDR + b;
	void *p = mmap(NULL, (size_t)(end - start), PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
		       (off_t)start);

	if (p == MAP_FAILED)
		return NULL;
	rb->map = p;
	rb->maplen = (size_t)(end - start);
	return (uint8_t *)p + (REC_HDR + a - start);
}

/* See store.h. */
int node_store_read(struct node_store *s, const uint8_t *id, uint64_t off, uint64_t size,
		    uint64_t max, int verify, int lock, struct node_rbuf *rb,
		    struct node_meta *m, const uint8_t **data, size_t *n)
{
	struct pohm_buf *scratch = &rb->buf;
	pthread_mutex_t *mx = lock ? stripe(s, id) : NULL;
	uint8_t crcbuf[4 * 64], *base;
	uint64_t flen, c0, c1, a, b, ncr;
	uint8_t *crcs = NULL;
	struct rec r;
	struct stat st;
	ssize_t got;
	int fd = -1, ret = 0;

	*n = 0;
	*data = NULL;
	if (mx)
		pthread_mutex_lock(mx);
	fd = rec_open(s, id, "", O_RDONLY);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	/* One read brings a small record whole: header, data and CRCs. */
	ret = pohm_buf_reserve(scratch, REC_SMALL);
	if (ret)
		goto out;
	scratch->len = 0;
	/* One pread, not a _full loop: that would cost a second call to see EOF. */
	do
		got = pread(fd, scratch->p, REC_SMALL, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		ret = -errno;
		goto out;
	}
	if (got < REC_HDR || hdr_decode(&r, scratch->p)) {
		ret = -EILSEQ;
		goto out;
	}
	flen = (uint64_t)got;
	if (got == REC_SMALL || flen != rec_file_len(&r)) {
		/* Large, or a short read that is not the end: ask the file system. */
		if (fstat(fd, &st) < 0) {
			ret = -errno;
			goto out;
		}
		flen = (uint64_t)st.st_size;
		if (flen > REC_SMALL || flen != (uint64_t)got)
			got = REC_SMALL + 1;	/* not all in the buffer */
	}
	if (flen != rec_file_len(&r)) {
		ret = -EILSEQ;		/* torn: never serve it */
		goto out;
	}
	rec_meta(&r, m);
	if (off >= r.size) {
		ret = off == 0 && r.size == 0 ? 0 : -E2BIG;
		goto out;
	}
	if (!size || size > r.size - off)
		size = r.size - off;
	if (size > max) {
		ret = -EFBIG;
		goto out;
	}
	/* The chunks that cover [off, off + size). */
	c0 = off / r.chunk;
	c1 = (off + size - 1) / r.chunk;
	ncr = c1 - c0 + 1;
	a = c0 * r.chunk;
	b = (c1 + 1) * r.chunk < r.size ? (c1 + 1) * r.chunk : r.size;
	if (!verify) {
		a = off;
		b = off + size;
	}
	if ((uint64_t)got == flen) {
		*data = scratch->p + REC_HDR + off;
		if (verify)
			ret = check_chunks(&r, c0, ncr, scratch->p + REC_HDR + a,
					   scratch->p + REC_HDR + r.size + 4 * c0);
		*n = (size_t)size;
		goto out;
	}
	/*
	 * Large ranges come from a mapping of the page cache: the bytes are
	 * checked and sent from there, one copy fewer than pread.  The file is
	 * never truncated in place (writes rename a new file over it), so the
	 * mapping cannot fault.
	 */
	base = NULL;
	if (b - a >= REC_MAP_MIN)
		base = map_range(fd, a, b, rb);
	if (!base) {
		ret = pohm_buf_reserve(scratch, (size_t)(b - a));
		if (ret)
			goto out;
		base = scratch->p;
		got = pohm_sys_pread_full(fd, base, (size_t)(b - a), (off_t)(REC_HDR + a));
		if (got < 0 || (uint64_t)got != b - a) {
			ret = got < 0 ? (int)got : -EILSEQ;
			goto out;
		}
	}
	if (verify) {
		crcs = ncr <= sizeof(crcbuf) / 4 ? crcbuf : malloc(4 * ncr);
		if (!crcs) {
			ret = -ENOMEM;
			goto out;
		}
		got = pohm_sys_pread_full(fd, crcs, 4 * ncr, (off_t)(REC_HDR + r.size + 4 * c0));
		if (got < 0 || (uint64_t)got != 4 * ncr)
			ret = got < 0 ? (int)got : -EILSEQ;
		else
			ret = check_chunks(&r, c0, ncr, base, crcs);
		if (crcs != crcbuf)
			free(crcs);
		if (ret)
			goto out;
	}
	*data = base + (off - a);
	*n = (size_t)size;
out:
	if (fd >= 0)
		close(fd);
	if (mx)
		pthread_mutex_unlock(mx);
	if (ret) {
		node_rbuf_release(rb);
		*data = NULL;
		*n = 0;
	}
	return ret;
}

/* ---------------------------------------------------------------- write */

/*
 * The bytes of the new object, as three pieces: [0, keep) from the old
 * record, zeros up to data_off, then the new data.
 */
struct layout {
	int oldfd;			/* -1: no prefix */
	const struct rec *old;
	uint64_t keep;
	uint64_t data_off;
	const uint8_t *data;
	uint64_t len;
	uint64_t size;			/* data_off + len */
};

/*
 * Write the data region and CRC table of a new record into fd at REC_HDR,
 * verifying the old chunks it copies and feeding sha (may be NULL).
 */
static int write_body(int fd, const struct layout *l, struct pohm_sha512 *sha)
{
	uint64_t nc = nchunks(l->size, REC_CHUNK), i;
	uint8_t *crcs = NULL, *bounce = NULL;
	struct rec oldc;
	ssize_t w;
	int ret = 0;

	memset(&oldc, 0, sizeof(oldc));

	crcs = malloc(nc ? nc * 4 : 1);
	if (!crcs)
		return -ENOMEM;
	if (l->keep) {
		bounce = malloc(REC_CHUNK);
		if (!bounce) {
			ret = -ENOMEM;
			goto out;
		}
		oldc = *l->old;
	}
	for (i = 0; i < nc; i++) {
		uint64_t a = i * REC_CHUNK;
		uint64_t b = a + REC_CHUNK < l->size ? a + REC_CHUNK : l->size;
		uint32_t crc = 0;
		uint64_t p = a;

		/* Piece 1: kept prefix, copied chunk by chunk from the old record. */
		if (p < l->keep) {
			uint64_t e = b < l->keep ? b : l->keep;
			uint64_t oc = p / oldc.chunk;
			uint64_t oa = oc * oldc.chunk;
			uint64_t ob = oa + oldc.chunk < oldc.size ? oa + oldc.chunk : oldc.size;
			uint8_t ocrc[4];
			ssize_t got;

			/* Both records use REC_CHUNK unless the old one was written
			 * with another chunk size: then verify each old chunk whole. */
			if (oldc.chunk != REC_CHUNK || e - p > ob - oa) {
				ret = -EILSEQ;
				goto out;
			}
			got = pohm_sys_pread_full(l->oldfd, bounce, ob - oa, (off_t)(REC_HDR + oa));
			if (got < 0 || (uint64_t)got != ob - oa) {
				ret = got < 0 ? (int)got : -EILSEQ;
				goto out;
			}
			got = pohm_sys_pread_full(l->oldfd, ocrc, 4,
						  (off_t)(REC_HDR + oldc.size + 4 * oc));
			if (got != 4 || node_crc32c(0, bounce, ob - oa) != pohm_le32(ocrc)) {
				ret = got < 0 ? (int)got : -EILSEQ;
				goto out;
			}
			crc = node_crc32c(crc, bounce + (p - oa), e - p);
			if (sha)
				pohm_sha512_update(sha, bounce + (p - oa), e - p);
			w = pohm_sys_pwrite_full(fd, bounce + (p - oa), e - p, (off_t)(REC_HDR + p));
			if (w < 0) {
				ret = (int)w;
				goto out;
			}
			p = e;
		}
		/* Piece 2: the gap, a hole in the new file (reads as zeros). */
		if (p < b && p < l->data_off) {
			uint64_t e = b < l->data_off ? b : l->data_off;

			if (p == a && e - p == REC_CHUNK) {
				/* A whole chunk of hole: a far offset costs no CRC work. */
				pthread_once(&zero_chunk_once, zero_chunk_init);
				crc = zero_chunk_crc;
			} else {
				crc = node_crc32c_zeros(crc, e - p);
			}
			if (sha) {
				static const uint8_t zero[4096];
				uint64_t z = e - p;

				while (z) {
					size_t k = z < sizeof(zero) ? (size_t)z : sizeof(zero);

					pohm_sha512_update(sha, zero, k);
					z -= k;
				}
			}
			p = e;
		}
		/* Piece 3: the new data (written in one go below). */
		if (p < b) {
			crc = node_crc32c(crc, l->data + (p - l->data_off), b - p);
			if (sha)
				pohm_sha512_update(sha, l->data + (p - l->data_off), b - p);
		}
		pohm_st32(crcs + 4 * i, crc);
	}
	if (l->len) {
		w = pohm_sys_pwrite_full(fd, l->data, l->len, (off_t)(REC_HDR + l->data_off));
		if (w < 0) {
			ret = (int)w;
			goto out;
		}
	}
	/* The file ends exactly after the CRC table (ftruncate covers a hole at the end). */
	if (ftruncate(fd, (off_t)(REC_HDR + l->size + 4 * nc)) < 0) {
		ret = -errno;
		goto out;
	}
	if (nc) {
		w = pohm_sys_pwrite_full(fd, crcs, nc * 4, (off_t)(REC_HDR + l->size));
		if (w < 0)
			ret = (int)w;
	}
out:
	free(crcs);
	free(bounce);
	return ret;
}

/* Build <id>.t from layout, make it durable and rename it over <id>. */
static int write_committed(struct node_store *s, const uint8_t *id, const struct layout *l,
			   const struct pohm_io_attr *io, struct pohm_sha512 *sha)
{
	char tname[2 * POHM_ID_SIZE + 8], name[2 * POHM_ID_SIZE + 8];
	uint8_t h[REC_HDR];
	struct rec r;
	int fd, ret;

	rec_name(id, ".t", tname);
	rec_name(id, "", name);
	fd = openat(s->subfd[id[0]], tname, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = write_body(fd, l, sha);
	if (ret)
		goto fail;
	memset(&r, 0, sizeof(r));
	r.flags = REC_FLAGS;
	r.size = l->size;
	r.tsec = io->timestamp.tsec;
	r.tnsec = io->timestamp.tnsec;
	r.user_flags = io->user_flags;
	r.chunk = REC_CHUNK;
	hdr_encode(h, &r);
	if (pohm_sys_pwrite_full(fd, h, REC_HDR, 0) < 0) {
		ret = -EIO;
		goto fail;
	}
	/* No sync here: the caller's one sync after the rename covers both. */
	close(fd);
	fd = -1;
	if (renameat(s->subfd[id[0]], tname, s->subfd[id[0]], name) < 0) {
		ret = -errno;
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(s->subfd[id[0]], tname, 0);
	return ret;
}

/* The CAS and CAS_TIMESTAMP checks against the committed record (if any). */
static int check_conditions(int oldfd, const struct rec *old, int old_err,
			    const struct pohm_io_attr *io)
{
	uint8_t cur[POHM_ID_SIZE];
	int ret;

	if (!(io->flags & (POHM_IO_CAS | POHM_IO_CAS_TIMESTAMP)) || oldfd < 0)
		return 0;		/* a missing key passes both (§5.2) */
	if (old_err)
		return old_err;
	if (io->flags & POHM_IO_CAS_TIMESTAMP) {
		struct pohm_time t = { old->tsec, old->tnsec };

		if (pohm_time_cmp(&t, &io->timestamp) > 0)
			return -EBADFD;
	}
	if (io->flags & POHM_IO_CAS) {
		ret = rec_hash(oldfd, old, cur);
		if (ret)
			return ret;
		if (memcmp(cur, io->parent, POHM_ID_SIZE))
			return -EBADFD;
	}
	return 0;
}

/* Plain write or APPEND: a new committed record. */
static int write_plain(struct node_store *s, const struct node_wreq *w, int oldfd,
		       const struct rec *old, int old_err, struct node_wres *res)
{
	const struct pohm_io_attr *io = w->io;
	struct pohm_sha512 sha;
	struct layout l;
	struct rec nr;
	int ret;

	if (!io->size) {
		/* §10.4: a zero-size write creates nothing and changes nothing. */
		if (oldfd < 0)
			return -ENOENT;
		if (old_err)
			return old_err;
		rec_meta(old, &res->meta);
		res->reply_size = old->size;
		if (w->want_csum)
			return rec_hash(oldfd, old, res->csum);
		return 0;
	}
	if (io->offset > s->max_object || io->size > s->max_object)
		return -EFBIG;		/* also keeps old size + offset from wrapping */
	memset(&l, 0, sizeof(l));
	l.oldfd = -1;
	l.data = w->data;
	l.len = io->size;
	if (oldfd >= 0 && !old_err) {
		l.oldfd = oldfd;
		l.old = old;
		if (io->flags & POHM_IO_APPEND) {
			l.keep = old->size;
			l.data_off = old->size + io->offset;	/* §10.3: from the end */
		} else {
			l.keep = io->offset < old->size ? io->offset : old->size;
			l.data_off = io->offset;
		}
	} else {
		l.data_off = io->offset;
		if (old_err && (io->offset || (io->flags & POHM_IO_APPEND)))
			return old_err;		/* cannot keep a prefix of a corrupt record */
	}
	if (l.data_off > s->max_object || l.len > s->max_object - l.data_off)
		return -EFBIG;
	l.size = l.data_off + l.len;
	if (w->want_csum)
		pohm_sha512_init(&sha);
	ret = write_committed(s, w->id, &l, io, w->want_csum ? &sha : NULL);
	if (ret)
		return ret;
	/* A plain write replaces an uncommitted record too. */
	node_ucrc_drop(s->ucrc, w->id);
	if (rec_unlink(s, w->id, ".u") == 0)
		pohm_debug("store: plain write dropped an uncommitted record");
	ret = durable(s);
	if (ret)
		return ret;
	memset(&nr, 0, sizeof(nr));
	nr.flags = REC_FLAGS;
	nr.size = l.size;
	nr.tsec = io->timestamp.tsec;
	nr.tnsec = io->timestamp.tnsec;
	nr.user_flags = io->user_flags;
	rec_meta(&nr, &res->meta);
	res->reply_size = (io->flags & POHM_IO_APPEND) && oldfd >= 0 ? io->offset + io->size
								  : l.size;
	if (w->want_csum)
		pohm_sha512_final(&sha, res->csum);
	return 0;
}

/* Finish an uncommitted record of final bytes: CRCs, header, rename. */
static int commit_uncommitted(struct node_store *s, const uint8_t *id, int fd, struct rec *u,
			      uint64_t final, const struct node_wreq *w, struct node_wres *res)
{
	char uname[2 * POHM_ID_SIZE + 8], name[2 * POHM_ID_SIZE + 8];
	uint64_t nc = nchunks(final, REC_CHUNK), i, missing = 0;
	uint8_t *buf = NULL, *crcs = NULL, *map = NULL, h[REC_HDR];
	struct node_ucrc_entry *noted = node_ucrc_take(s->ucrc, id);
	struct pohm_sha512 sha;
	uint32_t crc;
	int ret = 0;

	buf = malloc(REC_CHUNK);
	crcs = malloc(nc ? nc * 4 : 1);
	if (!buf || !crcs) {
		ret = -ENOMEM;
		goto out;
	}
	/* Bytes past the high-water mark were never written: make them zeros. */
	if (ftruncate(fd, (off_t)(REC_HDR + (final < u->size ? final : u->size))) < 0 ||
	    ftruncate(fd, (off_t)(REC_HDR + final)) < 0) {
		ret = -errno;
		goto out;
	}
	if (w->want_csum)
		pohm_sha512_init(&sha);
	/* Chunks whose CRC was noted as their piece was written need no reading. */
	for (i = 0; i < nc; i++) {
		uint64_t a = i * REC_CHUNK, len = final - a < REC_CHUNK ? final - a : REC_CHUNK;

		if (node_ucrc_get(noted, i, len, &crc))
			pohm_st32(crcs + 4 * i, crc);
		else
			missing++;
	}
	/*
	 * The other chunks (all of them for a SHA-512) are checksummed where
	 * they lie in the page cache (a mapping: no copy, no call per chunk).
	 * The file cannot shrink under it: every change of a .u file holds
	 * the key lock.  pread if the mapping fails.
	 */
	if ((missing || w->want_csum) && final >= REC_MAP_MIN) {
		map = mmap(NULL, (size_t)(REC_HDR + final), PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
		if (map == MAP_FAILED)
			map = NULL;
	}
	for (i = 0; i < nc && (missing || w->want_csum); i++) {
		uint64_t a = i * REC_CHUNK, len = final - a < REC_CHUNK ? final - a : REC_CHUNK;
		const uint8_t *src = buf;
		int known = node_ucrc_get(noted, i, len, &crc);

		if (known && !w->want_csum)
			continue;
		if (map) {
			src = map + REC_HDR + a;
		} else {
			ssize_t got = pohm_sys_pread_full(fd, buf, len, (off_t)(REC_HDR + a));

			if (got < 0 || (uint64_t)got != len) {
				ret = got < 0 ? (int)got : -EIO;
				goto out;
			}
		}
		if (!known)
			pohm_st32(crcs + 4 * i, node_crc32c(0, src, len));
		if (w->want_csum)
			pohm_sha512_update(&sha, src, len);
	}
	if (nc && pohm_sys_pwrite_full(fd, crcs, nc * 4, (off_t)(REC_HDR + final)) < 0) {
		ret = -EIO;
		goto out;
	}
	u->flags = REC_FLAGS;
	u->size = final;
	u->reserve = 0;
	u->tsec = w->io->timestamp.tsec;
	u->tnsec = w->io->timestamp.tnsec;
	u->user_flags = w->io->user_flags;
	u->chunk = REC_CHUNK;
	hdr_encode(h, u);
	if (pohm_sys_pwrite_full(fd, h, REC_HDR, 0) < 0) {
		ret = -EIO;
		goto out;
	}
	rec_name(id, ".u", uname);
	rec_name(id, "", name);
	if (renameat(s->subfd[id[0]], uname, s->subfd[id[0]], name) < 0) {
		ret = -errno;
		goto out;
	}
	ret = durable(s);
	if (ret)
		goto out;
	rec_meta(u, &res->meta);
	res->reply_size = final;
	if (w->want_csum) {
		if (final)
			pohm_sha512_final(&sha, res->csum);
		else
			memset(res->csum, 0, POHM_ID_SIZE);
	}
out:
	if (map)
		munmap(map, (size_t)(REC_HDR + final));
	node_ucrc_entry_free(noted);
	free(buf);
	free(crcs);
	return ret;
}

/* The file info of an uncommitted chunk: size 0, flags 0x1c0 (§10.6). */
static void uncommitted_reply(const struct rec *u, struct node_wres *res)
{
	rec_meta(u, &res->meta);
	res->meta.size = 0;
	res->meta.record_flags = REC_FLAGS | POHM_RECORD_UNCOMMITTED;	/* 0x1c0 */
	res->reply_size = 0;
	memset(res->csum, 0, POHM_ID_SIZE);
}

/* PREPARE / PLAIN_WRITE / COMMIT (§5.2, §10.6). */
static int write_staged(struct node_store *s, const struct node_wreq *w, int oldfd,
			const struct rec *old, struct node_wres *res)
{
	const struct pohm_io_attr *io = w->io;
	uint8_t h[REC_HDR];
	struct rec u;
	uint64_t end;
	int fd = -1, ret = 0;

	if (io->offset > s->max_object || io->size > s->max_object - io->offset ||
	    io->num > s->max_object)
		return -EFBIG;
	end = io->offset + io->size;
	if (io->flags & POHM_IO_PREPARE) {
		fd = rec_open(s, w->id, ".u", O_RDWR | O_CREAT | O_TRUNC);
		node_ucrc_drop(s->ucrc, w->id);	/* a new uncommitted record */
		if (fd < 0)
			return fd;
		memset(&u, 0, sizeof(u));
		u.reserve = io->num;
		u.size = 0;
		if (ftruncate(fd, (off_t)(REC_HDR + (io->num > end ? io->num : end))) < 0) {
			ret = -errno;
			goto fail_new;
		}
	} else {
		fd = rec_open(s, w->id, ".u", O_RDWR);
		if (fd < 0) {
			/* PLAIN_WRITE is refused on a committed record (§5.2). */
			if (fd == -ENOENT && oldfd >= 0)
				return -EPERM;
			return fd;
		}
		ret = rec_load(fd, &u, 0);
		if (ret)
			goto out;
	}
	if (io->size && pohm_sys_pwrite_full(fd, w->data, io->size,
					     (off_t)(REC_HDR + io->offset)) < 0) {
		node_ucrc_drop(s->ucrc, w->id);	/* the record's bytes are unknown now */
		ret = -EIO;
		goto fail_new;
	}
	node_ucrc_note(s->ucrc, w->id, !!(io->flags & POHM_IO_PREPARE), io->offset, w->data,
		       (size_t)io->size);
	if (end > u.size)
		u.size = end;
	if (io->flags & POHM_IO_COMMIT) {
		uint64_t final = io->flags & POHM_IO_PREPARE ? end : io->num;

		if (!(io->flags & POHM_IO_PREPARE) && final > u.reserve && final > u.size) {
			ret = -E2BIG;	/* §10.6: beyond the reservation, stays invisible */
			goto keep;
		}
		ret = commit_uncommitted(s, w->id, fd, &u, final, w, res);
		if (ret && (io->flags & POHM_IO_PREPARE))
			goto fail_new;
		goto out;
	}
keep:
	u.flags = REC_FLAGS | POHM_RECORD_UNCOMMITTED;
	u.tsec = io->timestamp.tsec;
	u.tnsec = io->timestamp.tnsec;
	u.user_flags = io->user_flags;
	u.chunk = REC_CHUNK;
	hdr_encode(h, &u);
	if (pohm_sys_pwrite_full(fd, h, REC_HDR, 0) < 0) {
		ret = -EIO;
		goto out;
	}
	{
		int r2 = durable(s);

		if (r2 && !ret)
			ret = r2;
	}
	if (!ret && (io->flags & POHM_IO_PREPARE) && oldfd >= 0) {
		/* §10.6: PREPARE hides the old object until COMMIT. */
		rec_unlink(s, w->id, "");
	}
	if (io->flags & POHM_IO_PREPARE) {
		int r2 = durable(s);

		if (r2 && !ret)
			ret = r2;
	}
	if (!ret)
		uncommitted_reply(&u, res);
	goto out;
fail_new:
	if (io->flags & POHM_IO_PREPARE)
		rec_unlink(s, w->id, ".u");
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* See store.h: conditions are checked against the committed record first. */
int node_store_write(struct node_store *s, const struct node_wreq *w, struct node_wres *res)
{
	const struct pohm_io_attr *io = w->io;
	pthread_mutex_t *mx = stripe(s, w->id);
	struct rec old;
	int oldfd, old_err = 0, ret;

	memset(res, 0, sizeof(*res));
	res->release_fd = -1;
	pthread_mutex_lock(mx);
	oldfd = rec_open(s, w->id, "", O_RDONLY);
	if (oldfd < 0 && oldfd != -ENOENT) {
		ret = oldfd;
		goto out;
	}
	if (oldfd >= 0)
		old_err = rec_load(oldfd, &old, 1);
	ret = check_conditions(oldfd, &old, old_err, io);
	if (ret)
		goto out;
	if (io->flags & (POHM_IO_PREPARE | POHM_IO_PLAIN_WRITE | POHM_IO_COMMIT))
		ret = write_staged(s, w, oldfd, &old, res);
	else
		ret = write_plain(s, w, oldfd, &old, old_err, res);
out:
	/* A replaced record's pages are freed by the last close: the caller's, after its reply. */
	if (oldfd >= 0 && !ret)
		res->release_fd = oldfd;
	else if (oldfd >= 0)
		close(oldfd);
	pthread_mutex_unlock(mx);
	return ret;
}

/* ---------------------------------------------------------------- del, list */

int node_store_del(struct node_store *s, const uint8_t *id)
{
	pthread_mutex_t *mx = stripe(s, id);
	int r1, r2, ret;

	pthread_mutex_lock(mx);
	r1 = rec_unlink(s, id, "");
	r2 = rec_unlink(s, id, ".u");
	node_ucrc_drop(s->ucrc, id);
	if (r1 && r2)
		ret = r1 == -ENOENT ? (r2 == -ENOENT ? -ENOENT : r2) : r1;
	else
		ret = durable(s);
	pthread_mutex_unlock(mx);
	return ret;
}

/* memcmp order of 64-byte ids. */
static int id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, POHM_ID_SIZE);
}

/* See store.h. */
int node_store_list(struct node_store *s, uint8_t **ids, size_t *n)
{
	uint8_t *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	int i, ret = 0;

	for (i = 0; i < 256 && !ret; i++) {
		int fd = dup(s->subfd[i]);
		struct dirent *e;
		DIR *d;

		if (fd < 0) {
			ret = -errno;
			break;
		}
		d = fdopendir(fd);
		if (!d) {
			ret = -errno;
			close(fd);
			break;
		}
		rewinddir(d);
		while ((e = readdir(d))) {
			const char *nm = e->d_name;
			int j, ok = strlen(nm) == 2 * POHM_ID_SIZE;

			for (j = 0; ok && j < 2 * POHM_ID_SIZE; j++)
				ok = hexval(nm[j]) >= 0;
			if (!ok)
				continue;
			if (cnt == cap) {
				cap = cap ? cap * 2 : 256;
				nv = realloc(v, cap * POHM_ID_SIZE);
				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				v = nv;
			}
			for (j = 0; j < POHM_ID_SIZE; j++)
				v[cnt * POHM_ID_SIZE + (size_t)j] =
					(uint8_t)(hexval(nm[2 * j]) << 4 | hexval(nm[2 * j + 1]));
			cnt++;
		}
		closedir(d);
	}
	if (ret) {
		free(v);
		return ret;
	}
	if (cnt)
		qsort(v, cnt, POHM_ID_SIZE, id_cmp);
	*ids = v;
	*n = cnt;
	return 0;
}

/* See store.h. */
int node_store_corrupt(struct node_store *s, const uint8_t *id)
{
	pthread_mutex_t *mx = stripe(s, id);
	struct rec r;
	int fd, ret;
	uint8_t b;
	uint64_t pos;

	pthread_mutex_lock(mx);
	fd = rec_open(s, id, "", O_RDWR);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	ret = rec_load(fd, &r, 1);
	if (ret == -EILSEQ) {
		ret = 0;		/* already reads as corrupt */
		goto out;
	}
	if (ret)
		goto out;
	if (!r.size) {
		ret = -EINVAL;
		goto out;
	}
	ret = rec_scan(fd, &r, 1, NULL);
	if (ret == -EILSEQ) {
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	pos = REC_HDR + r.size / 2;
	if (pohm_sys_pread_full(fd, &b, 1, (off_t)pos) != 1) {
		ret = -EIO;
		goto out;
	}
	b ^= 0x5a;
	if (pohm_sys_pwrite_full(fd, &b, 1, (off_t)pos) != 1)
		ret = -EIO;
	else if (s->sync_interval >= 0)
		fsync(fd);
out:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(mx);
	return ret;
}
