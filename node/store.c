/*
 * store.c — records on disk: a log-structured store, as eblob keeps one.
 *
 * Layout of DIR:
 *   ids                 this node's ring ids, one hex id per line
 *   blob/data-0.N       blob files: committed records and tombstones,
 *                       appended one after another (blob.h has the format)
 *   data/XX/<id-hex>.u  an uncommitted record (PREPARE … COMMIT, §10.6)
 *
 * Every committed record is appended to the active blob: space is reserved
 * at its end (blob.c), the data and a CRC-32C per 64 KiB chunk are written,
 * then the header with its own CRC.  A record is never modified once
 * written, so a write that dies half way leaves the previous version in
 * place; the in-memory index (index.c) points every id at its newest
 * record and is rebuilt at start by reading the headers of every blob in
 * order (the last record of an id wins; a tombstone removes it).  A torn
 * tail — a record whose header never made it — is cut off at start; a
 * damaged stretch between good records is skipped.  Reads verify the
 * header and the chunks they return and report -EILSEQ (-84) on a
 * mismatch, exactly as eblob does.  Per-chunk CRCs let a 4 KiB read of a
 * large object verify only what it returns.  A write at an offset copies
 * the kept prefix into the new record (and APPEND copies the object):
 * fine for this client, which writes objects whole.
 *
 * When records reach the disk is the sync policy's business (gcommit.h):
 * by default the blobs are synced every sync_interval seconds; with
 * sync_interval 0 before the ack, one fdatasync covering every writer
 * that waits at that moment (group commit).
 *
 * Garbage (replaced records, tombstones, skipped bytes) is counted per
 * blob; at start, when it is more than half of the blobs and at least
 * COMPACT_MIN bytes, the live records are copied into new blobs and the
 * old ones deleted (compact()).  A running node does not compact: an
 * overwrite-heavy node grows until its next start.
 *
 * Uncommitted records are staged in their own .u file, updated in place
 * (PLAIN_WRITE) and invisible; COMMIT computes the CRCs, copies the data
 * into the blob as a committed record (copy_file_range: no trip through
 * user space) and removes the .u file.  PREPARE of a key that has a
 * committed record appends a tombstone first: the old object stays hidden
 * until COMMIT (§10.6), also across a restart.
 */
#include "node_store.h"

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
#include <sys/uio.h>
#include <unistd.h>

#include "crc32c.h"
#include "blob.h"
#include "gcommit.h"
#include "index.h"
#include "sys.h"
#include "wire.h"
#include "ucrc.h"
#include "urec.h"

#define REC_HDR		UREC_HDR
#define REC_CHUNK	65536u
#define REC_STRIPES	1024u
#define REC_FLAGS	(POHM_RECORD_EXTHDR | POHM_RECORD_CHUNKED_CSUM)	/* 0x140 */
#define REC_SMALL	(16384u + BLOB_HDR)	/* first read: whole record if small */
#define COMPACT_MIN	(1u << 20)		/* compact at start past this much garbage */
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
	struct node_index *idx;		/* id -> newest committed record (its own lock) */
	struct blob_set blobs;		/* the blob files (their own lock) */
	int staged_dirty;		/* a .u file changed since the last sync (atomic) */
	unsigned nstaged;		/* >= the number of .u files (atomic): 0 spares a
					 * plain write its unlink of <id>.u */
	int tool;			/* opened by a test tool beside a running node */
	int blobs_open;			/* blobs needs blob_set_close */
};

/* A decoded record header (a blob record or a .u file). */
struct rec {
	uint64_t flags, size, tsec, tnsec, user_flags, reserve;
	uint32_t chunk;
	int fd;				/* the file it lives in */
	uint64_t base;			/* where its data starts in fd */
	unsigned blob;			/* blob records: blob number, header offset, disk size */
	uint64_t off, disk_size;
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

/* See node_store.h. */
void node_store_relpath(const struct node_meta *m, char *out, size_t outlen)
{
	snprintf(out, outlen, "blob/data-0.%u", m->blob);
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

/* Encode the header of a .u file (urec.h). */
static void hdr_encode(uint8_t *h, const struct rec *r)
{
	struct urec_hdr u = { r->flags, r->size, r->tsec, r->tnsec, r->user_flags, r->reserve,
			      r->chunk };

	urec_hdr_encode(h, &u);
}

/* Decode and check the header of a .u file (n bytes at h); 0 or -EILSEQ. */
static int hdr_decode(struct rec *r, const uint8_t *h, size_t n)
{
	struct urec_hdr u;

	if (urec_hdr_decode(&u, h, n, NODE_STORE_MAX_OBJECT))
		return -EILSEQ;
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->flags = u.flags;
	r->size = u.size;
	r->tsec = u.tsec;
	r->tnsec = u.tnsec;
	r->user_flags = u.user_flags;
	r->reserve = u.reserve;
	r->chunk = u.chunk;
	r->base = REC_HDR;
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
	m->data_offset = r->base;
	m->blob = r->blob;
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

/* Remove id's uncommitted record, if any; 0 or -ENOENT / -errno. */
static int unstage(struct node_store *s, const uint8_t *id)
{
	int ret;

	if (!__atomic_load_n(&s->nstaged, __ATOMIC_ACQUIRE))
		return -ENOENT;
	ret = rec_unlink(s, id, ".u");
	if (!ret)
		__atomic_fetch_sub(&s->nstaged, 1, __ATOMIC_ACQ_REL);
	return ret;
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

/* A blob record was written: blob n joins the next sync. */
static int blob_durable(struct node_store *s, unsigned n)
{
	blob_dirty(&s->blobs, n);
	return durable(s);
}

/* A .u file (or its directory) changed: the next sync includes a syncfs. */
static int staged_durable(struct node_store *s)
{
	__atomic_store_n(&s->staged_dirty, 1, __ATOMIC_RELEASE);
	return durable(s);
}

/*
 * The group sync (gcommit.h): fdatasync of every blob written since the
 * last one; a syncfs when uncommitted records changed (rare: chunked
 * writes of large objects).
 */
static int store_sync(void *arg)
{
	struct node_store *s = arg;
	int ret = blob_sync(&s->blobs);

	if (__atomic_exchange_n(&s->staged_dirty, 0, __ATOMIC_ACQ_REL) && syncfs(s->dirfd) < 0 &&
	    !ret)
		ret = -errno;
	return ret;
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
	if (hdr_decode(r, h, (size_t)got))
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
		got = pohm_sys_pread_full(fd, buf, len, (off_t)(r->base + off));
		if (got < 0 || (uint64_t)got != len) {
			ret = got < 0 ? (int)got : -EILSEQ;
			goto out;
		}
		if (verify) {
			got = pohm_sys_pread_full(fd, crcs, done * 4,
						  (off_t)(r->base + r->size + i * 4));
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

/*
 * Remove leftovers of the one-file-per-key format's interrupted writes
 * (*.t) in one data subdirectory and count its uncommitted records into
 * *staged; returns how many committed records of the old format (files
 * named by a bare id) it holds: they are not read.
 */
static unsigned sweep_temps(int subfd, unsigned *staged)
{
	int fd = dup(subfd);
	unsigned old = 0;
	DIR *d;
	struct dirent *e;

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l == 2 * POHM_ID_SIZE + 2 && !strcmp(e->d_name + l - 2, ".t")) {
			pohm_info("store: removing an interrupted write %s", e->d_name);
			unlinkat(subfd, e->d_name, 0);
		} else if (l == 2 * POHM_ID_SIZE) {
			old++;
		} else if (l == 2 * POHM_ID_SIZE + 2 && !strcmp(e->d_name + l - 2, ".u")) {
			(*staged)++;
		}
	}
	closedir(d);
	return old;
}

/* Put the record at (n, off) into the index (a tombstone removes its key); count what
 * it replaces as garbage.  0 or -errno. */
static int index_record(struct node_store *s, const uint8_t *id, const struct blob_hdr *h,
			unsigned n, uint64_t off)
{
	struct node_ient e, old;
	int ret;

	if (h->flags & POHM_RECORD_REMOVE) {
		if (node_index_del(s->idx, id, &old) == 0)
			blob_garbage(&s->blobs, old.blob, old.disk_size);
		blob_garbage(&s->blobs, n, h->disk_size);
		return 0;
	}
	memset(&e, 0, sizeof(e));
	memcpy(e.id, id, POHM_ID_SIZE);
	e.blob = n;
	e.off = off;
	e.disk_size = h->disk_size;
	e.size = h->size;
	e.flags = h->flags;
	e.chunk = h->chunk;
	e.tsec = h->tsec;
	e.tnsec = h->tnsec;
	e.user_flags = h->user_flags;
	ret = node_index_put(s->idx, &e, &old);
	if (ret == 1)
		blob_garbage(&s->blobs, old.blob, old.disk_size);
	return ret < 0 ? ret : 0;
}

/* Index one record found by the scan (blob_scan's callback). */
static int scan_apply(void *arg, unsigned n, uint64_t off, const struct blob_hdr *h)
{
	return index_record(arg, h->id, h, n, off);
}

/* Order of records in the blobs. */
static int ient_pos_cmp(const void *a, const void *b)
{
	const struct node_ient *x = a, *y = b;

	if (x->blob != y->blob)
		return x->blob < y->blob ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Copy every live record into new blobs and delete the old ones (at start,
 * nothing else running).  A crash part way leaves the old blobs whole and
 * copies of their live records after them, which the next scan reads as
 * the same records again.  0 or -errno.
 */
static int compact(struct node_store *s)
{
	struct node_ient *v = NULL;
	size_t n = 0, i;
	unsigned first;
	int ret;

	ret = node_index_all(s->idx, &v, &n);
	if (ret)
		return ret;
	qsort(v, n, sizeof(*v), ient_pos_cmp);
	ret = blob_start_new(&s->blobs, &first);
	for (i = 0; i < n && !ret; i++) {
		unsigned nb;
		uint64_t off;

		ret = blob_reserve(&s->blobs, v[i].disk_size, &nb, &off);
		if (!ret)
			ret = blob_copy(blob_fd(&s->blobs, v[i].blob), v[i].off, blob_fd(&s->blobs, nb),
					off, v[i].disk_size);
		v[i].blob = nb;
		v[i].off = off;
		if (!ret)
			blob_dirty(&s->blobs, nb);
	}
	if (!ret && s->sync_interval >= 0)
		ret = blob_sync(&s->blobs);
	if (!ret)
		ret = blob_drop_before(&s->blobs, first);
	for (i = 0; i < n && !ret; i++) {
		v[i].blob -= first;
		ret = node_index_put(s->idx, &v[i], NULL) < 0 ? -ENOMEM : 0;
	}
	free(v);
	return ret;
}

/* Scan every blob into the index; compact when garbage dominates. 0 or -errno. */
static int load_blobs(struct node_store *s)
{
	uint64_t total, garbage;
	unsigned i;
	int ret = 0;

	for (i = 0; i < s->blobs.n && !ret; i++)
		ret = blob_scan(&s->blobs, i, scan_apply, s);
	if (ret || s->tool)
		return ret;
	blob_usage(&s->blobs, &total, &garbage);
	pohm_info("store: %zu records in %u blob(s), %llu bytes, %llu of them garbage",
		  node_index_count(s->idx), s->blobs.n, (unsigned long long)total,
		  (unsigned long long)garbage);
	if (garbage >= COMPACT_MIN && garbage * 2 > total) {
		ret = compact(s);
		blob_usage(&s->blobs, &total, &garbage);
		pohm_info("store: compacted to %llu bytes in %u blob(s)%s", (unsigned long long)total,
			  s->blobs.n, ret ? " (failed)" : "");
	}
	return ret;
}

/* Open the store; tool = a test tool beside a running node (no changes but its own). */
static int store_open(struct node_store **out, const char *dir, int sync_interval,
		      uint64_t max_object, uint64_t blob_size, int tool)
{
	struct node_store *s = calloc(1, sizeof(*s));
	int ret = 0, datafd = -1, i;
	unsigned old_format = 0;
	char name[4];

	if (!s)
		return -ENOMEM;
	s->dirfd = -1;
	for (i = 0; i < 256; i++)
		s->subfd[i] = -1;
	for (i = 0; i < (int)REC_STRIPES; i++)
		pthread_mutex_init(&s->stripes[i], NULL);
	s->sync_interval = sync_interval;
	s->tool = tool;
	s->ucrc = node_ucrc_new(REC_CHUNK);
	s->idx = node_index_new();
	if (!s->ucrc || !s->idx) {
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
		if (!tool)
			old_format += sweep_temps(s->subfd[i], &s->nstaged);
	}
	if (old_format)
		pohm_warn("store: %u records of the one-file-per-key format under %s/data are not "
			  "read by this version (blobs since issue 23)", old_format, dir);
	ret = blob_set_open(&s->blobs, s->dirfd, tool);
	s->blobs_open = 1;
	if (blob_size)
		s->blobs.roll = blob_size;
	if (!ret)
		ret = load_blobs(s);
	if (ret)
		goto out;
	if (sync_interval >= 0 && !tool) {
		fsync(datafd);
		ret = blob_sync(&s->blobs);	/* a new blob directory and blob */
		if (ret)
			goto out;
	}
	s->gc = node_gcommit_new(tool ? -1 : sync_interval, store_sync, s);
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

/* See node_store.h. */
int node_store_open(struct node_store **out, const char *dir, int sync_interval,
		    uint64_t max_object, uint64_t blob_size)
{
	return store_open(out, dir, sync_interval, max_object, blob_size, 0);
}

/* See node_store.h. */
int node_store_open_tool(struct node_store **out, const char *dir)
{
	return store_open(out, dir, -1, 0, 0, 1);
}

/* See node_store.h. */
void node_store_close(struct node_store *s)
{
	int i;

	if (!s)
		return;
	node_gcommit_free(s->gc);	/* the last sync needs the blobs */
	if (s->blobs_open)
		blob_set_close(&s->blobs);
	for (i = 0; i < 256; i++)
		if (s->subfd[i] >= 0)
			close(s->subfd[i]);
	if (s->dirfd >= 0)
		close(s->dirfd);
	for (i = 0; i < (int)REC_STRIPES; i++)
		pthread_mutex_destroy(&s->stripes[i]);
	node_ucrc_free(s->ucrc);
	node_index_free(s->idx);
	free(s);
}

/* See node_store.h. */
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

/* See node_store.h. */
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

/*
 * The committed record of id: its index entry, checked against its header
 * on disk (a damaged header reads as -EILSEQ).  raw (may be NULL) receives
 * the first rawlen bytes of the record (at least the header) and *got how
 * many were read.  0, -ENOENT, -EILSEQ or -errno.
 */
static int rec_find(struct node_store *s, const uint8_t *id, struct rec *r, uint8_t *raw,
		    size_t rawlen, size_t *got)
{
	uint8_t hbuf[BLOB_HDR];
	struct node_ient e;
	struct blob_hdr h;
	ssize_t n;
	int ret = node_index_get(s->idx, id, &e);

	if (ret)
		return ret;
	if (!raw || rawlen < BLOB_HDR) {
		raw = hbuf;
		rawlen = BLOB_HDR;
	}
	if (rawlen > e.disk_size)
		rawlen = (size_t)e.disk_size;
	memset(r, 0, sizeof(*r));
	r->fd = blob_fd(&s->blobs, e.blob);
	/* One pread, not a _full loop: a short read here means a torn record. */
	do
		n = pread(r->fd, raw, rawlen, (off_t)e.off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != rawlen || blob_hdr_decode(&h, raw, (size_t)n) ||
	    memcmp(h.id, id, POHM_ID_SIZE) ||
	    h.size != e.size || h.disk_size != e.disk_size)
		return -EILSEQ;
	r->flags = h.flags;
	r->size = h.size;
	r->tsec = h.tsec;
	r->tnsec = h.tnsec;
	r->user_flags = h.user_flags;
	r->chunk = h.chunk;
	r->blob = e.blob;
	r->off = e.off;
	r->disk_size = e.disk_size;
	r->base = e.off + BLOB_HDR;
	if (got)
		*got = (size_t)n;
	return 0;
}

/* See node_store.h. */
int node_store_lookup(struct node_store *s, const uint8_t *id, int lock, struct node_meta *m,
		      uint8_t *csum)
{
	pthread_mutex_t *mx = lock ? stripe(s, id) : NULL;
	struct rec r;
	int ret;

	if (mx)
		pthread_mutex_lock(mx);
	ret = rec_find(s, id, &r, NULL, 0, NULL);
	if (ret)
		goto out;
	rec_meta(&r, m);
	if (csum)
		ret = rec_hash(r.fd, &r, csum);
out:
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

/* See node_store.h. */
void node_rbuf_release(struct node_rbuf *b)
{
	if (b->map)
		munmap(b->map, b->maplen);
	b->map = NULL;
	b->maplen = 0;
}

/*
 * Map [base + a, base + b) of fd read-only and populated; returns the
 * address of byte a, or NULL (then the caller falls back to pread).
 */
static uint8_t *map_range(int fd, uint64_t base, uint64_t a, uint64_t b, struct node_rbuf *rb)
{
	uint64_t start = (base + a) & ~(uint64_t)4095, end = base + b;
	void *p = mmap(NULL, (size_t)(end - start), PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
		       (off_t)start);

	if (p == MAP_FAILED)
		return NULL;
	rb->map = p;
	rb->maplen = (size_t)(end - start);
	return (uint8_t *)p + (base + a - start);
}

/* See node_store.h. */
int node_store_read(struct node_store *s, const uint8_t *id, uint64_t off, uint64_t size,
		    uint64_t max, int verify, int lock, struct node_rbuf *rb,
		    struct node_meta *m, const uint8_t **data, size_t *n)
{
	struct pohm_buf *scratch = &rb->buf;
	pthread_mutex_t *mx = lock ? stripe(s, id) : NULL;
	uint8_t crcbuf[4 * 64], *base;
	uint64_t c0, c1, a, b, ncr;
	uint8_t *crcs = NULL;
	struct rec r;
	size_t got = 0;
	ssize_t rd;
	int ret = 0, whole;

	*n = 0;
	*data = NULL;
	if (mx)
		pthread_mutex_lock(mx);
	/* One read brings a small record whole: header, data and CRCs. */
	ret = pohm_buf_reserve(scratch, REC_SMALL);
	if (ret)
		goto out;
	scratch->len = 0;
	ret = rec_find(s, id, &r, scratch->p, REC_SMALL, &got);
	if (ret)
		goto out;
	whole = got == r.disk_size;
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
	if (whole) {
		*data = scratch->p + BLOB_HDR + off;
		if (verify)
			ret = check_chunks(&r, c0, ncr, scratch->p + BLOB_HDR + a,
					   scratch->p + BLOB_HDR + r.size + 4 * c0);
		*n = (size_t)size;
		goto out;
	}
	/*
	 * Large ranges come from a mapping of the page cache: the bytes are
	 * checked and sent from there, one copy fewer than pread.  Blobs are
	 * never truncated while the node runs, so the mapping cannot fault.
	 */
	base = NULL;
	if (b - a >= REC_MAP_MIN)
		base = map_range(r.fd, r.base, a, b, rb);
	if (!base) {
		ret = pohm_buf_reserve(scratch, (size_t)(b - a));
		if (ret)
			goto out;
		base = scratch->p;
		rd = pohm_sys_pread_full(r.fd, base, (size_t)(b - a), (off_t)(r.base + a));
		if (rd < 0 || (uint64_t)rd != b - a) {
			ret = rd < 0 ? (int)rd : -EILSEQ;
			goto out;
		}
	}
	if (verify) {
		crcs = ncr <= sizeof(crcbuf) / 4 ? crcbuf : malloc(4 * ncr);
		if (!crcs) {
			ret = -ENOMEM;
			goto out;
		}
		rd = pohm_sys_pread_full(r.fd, crcs, 4 * ncr, (off_t)(r.base + r.size + 4 * c0));
		if (rd < 0 || (uint64_t)rd != 4 * ncr)
			ret = rd < 0 ? (int)rd : -EILSEQ;
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
 * Write the data region, CRC table and padding (up to disk_size - header)
 * of a new record into fd at base, verifying the old chunks it copies and
 * feeding sha (may be NULL).  The region is fresh space: a gap left
 * unwritten reads as zeros.
 */
static int write_body(int fd, uint64_t base, uint64_t disk_size, const struct layout *l,
		      struct pohm_sha512 *sha)
{
	uint64_t nc = nchunks(l->size, REC_CHUNK), i;
	uint64_t tail = disk_size - BLOB_HDR - l->size;	/* CRC table and padding */
	uint8_t *crcs = NULL, *bounce = NULL;
	struct rec oldc;
	ssize_t w;
	int ret = 0;

	memset(&oldc, 0, sizeof(oldc));

	crcs = calloc(1, tail ? tail : 1);
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
			got = pohm_sys_pread_full(l->oldfd, bounce, ob - oa, (off_t)(oldc.base + oa));
			if (got < 0 || (uint64_t)got != ob - oa) {
				ret = got < 0 ? (int)got : -EILSEQ;
				goto out;
			}
			got = pohm_sys_pread_full(l->oldfd, ocrc, 4,
						  (off_t)(oldc.base + oldc.size + 4 * oc));
			if (got != 4 || node_crc32c(0, bounce, ob - oa) != pohm_le32(ocrc)) {
				ret = got < 0 ? (int)got : -EILSEQ;
				goto out;
			}
			crc = node_crc32c(crc, bounce + (p - oa), e - p);
			if (sha)
				pohm_sha512_update(sha, bounce + (p - oa), e - p);
			w = pohm_sys_pwrite_full(fd, bounce + (p - oa), e - p, (off_t)(base + p));
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
	/* The new data, the CRC table and the padding are contiguous: one call. */
	{
		struct iovec iov[2] = { { (void *)l->data, (size_t)l->len }, { crcs, (size_t)tail } };
		int k = l->len ? 0 : 1;
		uint64_t at = l->len ? base + l->data_off : base + l->size;

		while (k < 2) {
			ssize_t n = pwritev(fd, iov + k, 2 - k, (off_t)at);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				ret = n < 0 ? -errno : -EIO;
				goto out;
			}
			at += (uint64_t)n;
			while (k < 2 && (size_t)n >= iov[k].iov_len) {
				n -= (ssize_t)iov[k].iov_len;
				k++;
			}
			if (k < 2) {
				iov[k].iov_base = (uint8_t *)iov[k].iov_base + n;
				iov[k].iov_len -= (size_t)n;
			}
		}
	}
out:
	free(crcs);
	free(bounce);
	return ret;
}

/*
 * Append one record of id to the blobs: body(arg, fd, base, disk_size)
 * writes the data, CRC table and padding at base (NULL: a tombstone), then
 * the header goes last.  Indexed on success; on failure the reserved space
 * is garbage.  *n is the blob written.  0 or -errno.
 */
static int append_record(struct node_store *s, const uint8_t *id, struct blob_hdr *h,
			 int (*body)(void *arg, int fd, uint64_t base, uint64_t disk_size),
			 void *arg, unsigned *n, uint64_t *offp)
{
	uint8_t raw[BLOB_HDR];
	uint64_t off;
	int fd, ret;

	memcpy(h->id, id, POHM_ID_SIZE);
	h->disk_size = blob_disk_size(h->size, h->chunk);
	ret = blob_reserve(&s->blobs, h->disk_size, n, &off);
	if (ret)
		return ret;
	fd = blob_fd(&s->blobs, *n);
	if (body)
		ret = body(arg, fd, off + BLOB_HDR, h->disk_size);
	if (!ret) {
		blob_hdr_encode(raw, h);
		if (pohm_sys_pwrite_full(fd, raw, BLOB_HDR, (off_t)off) < 0)
			ret = -EIO;
	}
	if (!ret)
		ret = index_record(s, id, h, *n, off);
	if (ret)
		blob_garbage(&s->blobs, *n, h->disk_size);
	if (offp)
		*offp = off;
	return ret;
}

/* A tombstone for id (delete, or PREPARE hiding the old object).  0 or -errno. */
static int append_tombstone(struct node_store *s, const uint8_t *id, unsigned *n)
{
	struct blob_hdr h;

	memset(&h, 0, sizeof(h));
	h.flags = POHM_RECORD_REMOVE;
	h.chunk = REC_CHUNK;
	return append_record(s, id, &h, NULL, NULL, n, NULL);
}

struct plain_body {
	const struct layout *l;
	struct pohm_sha512 *sha;
};

/* append_record's body for a plain write. */
static int plain_body(void *arg, int fd, uint64_t base, uint64_t disk_size)
{
	struct plain_body *pb = arg;

	return write_body(fd, base, disk_size, pb->l, pb->sha);
}

/* The CAS and CAS_TIMESTAMP checks against the committed record (if any). */
static int check_conditions(const struct rec *old, int old_err, const struct pohm_io_attr *io)
{
	uint8_t cur[POHM_ID_SIZE];
	int ret;

	if (!(io->flags & (POHM_IO_CAS | POHM_IO_CAS_TIMESTAMP)) || old_err == -ENOENT)
		return 0;		/* a missing key passes both (§5.2) */
	if (old_err)
		return old_err;
	if (io->flags & POHM_IO_CAS_TIMESTAMP) {
		struct pohm_time t = { old->tsec, old->tnsec };

		if (pohm_time_cmp(&t, &io->timestamp) > 0)
			return -EBADFD;
	}
	if (io->flags & POHM_IO_CAS) {
		ret = rec_hash(old->fd, old, cur);
		if (ret)
			return ret;
		if (memcmp(cur, io->parent, POHM_ID_SIZE))
			return -EBADFD;
	}
	return 0;
}

/* Plain write or APPEND: a new committed record.  old_err: -ENOENT = no old record. */
static int write_plain(struct node_store *s, const struct node_wreq *w, const struct rec *old,
		       int old_err, struct node_wres *res)
{
	const struct pohm_io_attr *io = w->io;
	int have_old = old_err != -ENOENT;
	struct pohm_sha512 sha;
	struct plain_body pb;
	struct blob_hdr h;
	struct layout l;
	struct rec nr;
	unsigned nb;
	uint64_t off;
	int ret;

	if (!io->size) {
		/* §10.4: a zero-size write creates nothing and changes nothing. */
		if (!have_old)
			return -ENOENT;
		if (old_err)
			return old_err;
		rec_meta(old, &res->meta);
		res->reply_size = old->size;
		if (w->want_csum)
			return rec_hash(old->fd, old, res->csum);
		return 0;
	}
	if (io->offset > s->max_object || io->size > s->max_object)
		return -EFBIG;		/* also keeps old size + offset from wrapping */
	memset(&l, 0, sizeof(l));
	l.oldfd = -1;
	l.data = w->data;
	l.len = io->size;
	if (have_old && !old_err) {
		l.oldfd = old->fd;
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
		if (have_old && (io->offset || (io->flags & POHM_IO_APPEND)))
			return old_err;		/* cannot keep a prefix of a corrupt record */
	}
	if (l.data_off > s->max_object || l.len > s->max_object - l.data_off)
		return -EFBIG;
	l.size = l.data_off + l.len;
	if (w->want_csum)
		pohm_sha512_init(&sha);
	memset(&h, 0, sizeof(h));
	h.flags = REC_FLAGS;
	h.size = l.size;
	h.tsec = io->timestamp.tsec;
	h.tnsec = io->timestamp.tnsec;
	h.user_flags = io->user_flags;
	h.chunk = REC_CHUNK;
	pb.l = &l;
	pb.sha = w->want_csum ? &sha : NULL;
	ret = append_record(s, w->id, &h, plain_body, &pb, &nb, &off);
	if (ret)
		return ret;
	/* A plain write replaces an uncommitted record too. */
	node_ucrc_drop(s->ucrc, w->id);
	if (unstage(s, w->id) == 0)
		pohm_debug("store: plain write dropped an uncommitted record");
	ret = blob_durable(s, nb);
	if (ret)
		return ret;
	memset(&nr, 0, sizeof(nr));
	nr.flags = REC_FLAGS;
	nr.size = l.size;
	nr.tsec = io->timestamp.tsec;
	nr.tnsec = io->timestamp.tnsec;
	nr.user_flags = io->user_flags;
	nr.blob = nb;
	nr.base = off + BLOB_HDR;
	rec_meta(&nr, &res->meta);
	res->reply_size = (io->flags & POHM_IO_APPEND) && have_old ? io->offset + io->size
								   : l.size;
	if (w->want_csum)
		pohm_sha512_final(&sha, res->csum);
	return 0;
}

struct commit_body {
	int ufd;			/* the .u file */
	uint64_t size;			/* its data bytes */
	const uint8_t *tail;		/* CRC table and padding */
	uint64_t tail_len;
};

/* append_record's body for a COMMIT: the staged data, then the CRCs. */
static int commit_body(void *arg, int fd, uint64_t base, uint64_t disk_size)
{
	struct commit_body *cb = arg;
	int ret = blob_copy(cb->ufd, REC_HDR, fd, base, cb->size);

	if (!ret && cb->tail_len &&
	    pohm_sys_pwrite_full(fd, cb->tail, cb->tail_len, (off_t)(base + cb->size)) < 0)
		ret = -EIO;
	return ret;
}

/* Finish an uncommitted record of final bytes: CRCs, then a committed record in the blob. */
static int commit_uncommitted(struct node_store *s, const uint8_t *id, int fd, struct rec *u,
			      uint64_t final, const struct node_wreq *w, struct node_wres *res)
{
	uint64_t nc = nchunks(final, REC_CHUNK), i, missing = 0;
	uint64_t tail = blob_disk_size(final, REC_CHUNK) - BLOB_HDR - final;
	uint8_t *buf = NULL, *crcs = NULL, *map = NULL;
	struct node_ucrc_entry *noted = node_ucrc_take(s->ucrc, id);
	struct commit_body cb;
	struct pohm_sha512 sha;
	struct blob_hdr h;
	unsigned nb;
	uint64_t off;
	uint32_t crc;
	int ret = 0;

	buf = malloc(REC_CHUNK);
	crcs = calloc(1, tail ? tail : 1);
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
	/* The record goes into the blob whole; the .u file is gone after that. */
	memset(&h, 0, sizeof(h));
	h.flags = REC_FLAGS;
	h.size = final;
	h.tsec = w->io->timestamp.tsec;
	h.tnsec = w->io->timestamp.tnsec;
	h.user_flags = w->io->user_flags;
	h.chunk = REC_CHUNK;
	cb.ufd = fd;
	cb.size = final;
	cb.tail = crcs;
	cb.tail_len = tail;
	ret = append_record(s, id, &h, commit_body, &cb, &nb, &off);
	if (ret)
		goto out;
	unstage(s, id);
	ret = blob_durable(s, nb);
	if (ret)
		goto out;
	u->flags = REC_FLAGS;
	u->size = final;
	u->reserve = 0;
	u->tsec = h.tsec;
	u->tnsec = h.tnsec;
	u->user_flags = h.user_flags;
	u->chunk = REC_CHUNK;
	u->blob = nb;
	u->base = off + BLOB_HDR;
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

/* PREPARE / PLAIN_WRITE / COMMIT (§5.2, §10.6).  have_old: a committed record exists. */
static int write_staged(struct node_store *s, const struct node_wreq *w, int have_old,
			struct node_wres *res)
{
	const struct pohm_io_attr *io = w->io;
	uint8_t h[REC_HDR];
	struct rec u;
	uint64_t end;
	unsigned nb;
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
		__atomic_fetch_add(&s->nstaged, 1, __ATOMIC_ACQ_REL);	/* may count it twice */
		memset(&u, 0, sizeof(u));
		u.reserve = io->num;
		u.size = 0;
		u.base = REC_HDR;
		if (ftruncate(fd, (off_t)(REC_HDR + (io->num > end ? io->num : end))) < 0) {
			ret = -errno;
			goto fail_new;
		}
	} else {
		fd = rec_open(s, w->id, ".u", O_RDWR);
		if (fd < 0) {
			/* PLAIN_WRITE is refused on a committed record (§5.2). */
			if (fd == -ENOENT && have_old)
				return -EPERM;
			return fd;
		}
		ret = rec_load(fd, &u, 0);
		if (ret)
			goto out;
	}
	u.fd = fd;
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
	if (!ret && (io->flags & POHM_IO_PREPARE) && have_old) {
		/* §10.6: PREPARE hides the old object until COMMIT (a tombstone: also
		 * after a restart). */
		ret = append_tombstone(s, w->id, &nb);
		if (!ret)
			blob_dirty(&s->blobs, nb);
	}
	{
		int r2 = staged_durable(s);

		if (r2 && !ret)
			ret = r2;
	}
	if (!ret)
		uncommitted_reply(&u, res);
	goto out;
fail_new:
	if (io->flags & POHM_IO_PREPARE)
		unstage(s, w->id);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* A plain write of a whole object: it needs nothing of the old record. */
static int replaces_whole(const struct pohm_io_attr *io)
{
	return io->size && !io->offset &&
	       !(io->flags & (POHM_IO_CAS | POHM_IO_CAS_TIMESTAMP | POHM_IO_APPEND |
			      POHM_IO_PREPARE | POHM_IO_PLAIN_WRITE | POHM_IO_COMMIT));
}

/* See node_store.h: conditions are checked against the committed record first. */
int node_store_write(struct node_store *s, const struct node_wreq *w, struct node_wres *res)
{
	const struct pohm_io_attr *io = w->io;
	pthread_mutex_t *mx = stripe(s, w->id);
	struct rec old;
	int old_err, ret;

	memset(res, 0, sizeof(*res));
	res->release_fd = -1;
	pthread_mutex_lock(mx);
	old_err = replaces_whole(io) ? -ENOENT : rec_find(s, w->id, &old, NULL, 0, NULL);
	if (old_err && old_err != -ENOENT && old_err != -EILSEQ) {
		ret = old_err;
		goto out;
	}
	ret = check_conditions(&old, old_err, io);
	if (ret)
		goto out;
	if (io->flags & (POHM_IO_PREPARE | POHM_IO_PLAIN_WRITE | POHM_IO_COMMIT))
		ret = write_staged(s, w, old_err != -ENOENT, res);
	else
		ret = write_plain(s, w, &old, old_err, res);
out:
	pthread_mutex_unlock(mx);
	return ret;
}

/* See node_store.h. */
int node_store_write_waits(const struct node_store *s)
{
	return s->sync_interval == 0 && !s->tool;
}

/* See node_store.h: mirrors what node_store_read and node_store_write touch. */
uint64_t node_store_cost(struct node_store *s, const uint8_t *id, const struct pohm_io_attr *io,
			 int write)
{
	struct node_ient e;
	uint64_t old;

	if (io && !write && io->size)
		return io->size;
	if (io && write && (io->flags & (POHM_IO_PREPARE | POHM_IO_PLAIN_WRITE | POHM_IO_COMMIT))) {
		/* Staged: the chunk, and at COMMIT a copy of the whole record. */
		if (!(io->flags & POHM_IO_COMMIT))
			return io->size;
		return io->size + (io->num > io->offset + io->size ? io->num
								    : io->offset + io->size);
	}
	if (io && write && replaces_whole(io))
		return io->size;
	/* The rest reads, copies or hashes the committed record too. */
	old = node_index_get(s->idx, id, &e) ? 0 : e.size;
	if (!io)
		return old;
	if (!write)
		return old > io->offset ? old - io->offset : 0;
	return io->size + old;
}

/* ---------------------------------------------------------------- del, list */

/* See node_store.h. */
int node_store_del(struct node_store *s, const uint8_t *id)
{
	pthread_mutex_t *mx = stripe(s, id);
	struct node_ient e;
	unsigned nb;
	int r1 = -ENOENT, r2, ret = 0;

	pthread_mutex_lock(mx);
	if (node_index_get(s->idx, id, &e) == 0) {
		r1 = append_tombstone(s, id, &nb);
		if (!r1)
			blob_dirty(&s->blobs, nb);
	}
	r2 = unstage(s, id);
	node_ucrc_drop(s->ucrc, id);
	if (r1 && r2)
		ret = r1 == -ENOENT ? (r2 == -ENOENT ? -ENOENT : r2) : r1;
	else if (!r2)
		ret = staged_durable(s);
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

/* See node_store.h. */
int node_store_list(struct node_store *s, uint8_t **ids, size_t *n)
{
	struct node_ient *v = NULL;
	uint8_t *out;
	size_t cnt = 0, i;
	int ret = node_index_all(s->idx, &v, &cnt);

	if (ret)
		return ret;
	out = malloc(cnt ? cnt * POHM_ID_SIZE : 1);
	if (!out) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < cnt; i++)
		memcpy(out + i * POHM_ID_SIZE, v[i].id, POHM_ID_SIZE);
	free(v);
	if (cnt)
		qsort(out, cnt, POHM_ID_SIZE, id_cmp);
	*ids = out;
	*n = cnt;
	return 0;
}

/* See node_store.h. */
int node_store_dump(struct node_store *s, FILE *f)
{
	struct node_ient *v = NULL;
	char hex[2 * POHM_ID_SIZE + 1];
	size_t cnt = 0, i;
	int ret = node_index_all(s->idx, &v, &cnt);

	if (ret)
		return ret;
	qsort(v, cnt, sizeof(*v), ient_pos_cmp);
	for (i = 0; i < cnt; i++) {
		id_hex(v[i].id, hex);
		fprintf(f, "%s size=%llu blob=%u offset=%llu\n", hex, (unsigned long long)v[i].size,
			v[i].blob, (unsigned long long)v[i].off);
	}
	free(v);
	return 0;
}

/* See node_store.h. */
int node_store_corrupt(struct node_store *s, const uint8_t *id)
{
	pthread_mutex_t *mx = stripe(s, id);
	struct rec r;
	int ret;
	uint8_t b;
	uint64_t pos;

	pthread_mutex_lock(mx);
	ret = rec_find(s, id, &r, NULL, 0, NULL);
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
	ret = rec_scan(r.fd, &r, 1, NULL);
	if (ret == -EILSEQ) {
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	pos = r.base + r.size / 2;
	if (pohm_sys_pread_full(r.fd, &b, 1, (off_t)pos) != 1) {
		ret = -EIO;
		goto out;
	}
	b ^= 0x5a;
	if (pohm_sys_pwrite_full(r.fd, &b, 1, (off_t)pos) != 1)
		ret = -EIO;
	else if (s->tool || s->sync_interval >= 0)
		fdatasync(r.fd);
out:
	pthread_mutex_unlock(mx);
	return ret;
}
