/*
 * blob.c — blob files: record headers, open, scan with torn-tail recovery,
 * space reservation, sync, compaction support (see blob.h).
 */
#include "blob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "sys.h"

#define BLOB_MAGIC	"PohmLog\1"
#define RESYNC_WIN	65536u

/* See blob.h. */
uint64_t blob_disk_size(uint64_t size, uint32_t chunk)
{
	uint64_t nc = size ? (size + chunk - 1) / chunk : 0;

	return (BLOB_HDR + size + 4 * nc + 7) & ~(uint64_t)7;
}

/* See blob.h. */
void blob_hdr_encode(uint8_t *out, const struct blob_hdr *h)
{
	memset(out, 0, BLOB_HDR);
	memcpy(out, BLOB_MAGIC, 8);
	pohm_st32(out + 8, 1);
	pohm_st32(out + 12, BLOB_HDR);
	pohm_st64(out + 16, h->flags);
	pohm_st64(out + 24, h->size);
	pohm_st64(out + 32, h->tsec);
	pohm_st64(out + 40, h->tnsec);
	pohm_st64(out + 48, h->user_flags);
	pohm_st32(out + 64, h->chunk);
	pohm_st64(out + 72, h->disk_size);
	memcpy(out + 88, h->id, POHM_ID_SIZE);
	pohm_st32(out + 188, node_crc32c(0, out, 188));
}

/* See blob.h. */
int blob_hdr_decode(struct blob_hdr *h, const uint8_t *in, size_t n)
{
	struct pohm_rd r = pohm_rd_make(in, n);
	const uint8_t *magic = pohm_rd_take(&r, 8), *id;
	uint32_t version = pohm_rd_u32(&r), hsize = pohm_rd_u32(&r);

	memset(h, 0, sizeof(*h));
	h->flags = pohm_rd_u64(&r);
	h->size = pohm_rd_u64(&r);
	h->tsec = pohm_rd_u64(&r);
	h->tnsec = pohm_rd_u64(&r);
	h->user_flags = pohm_rd_u64(&r);
	pohm_rd_take(&r, 8);			/* 56 reserved */
	h->chunk = pohm_rd_u32(&r);
	pohm_rd_take(&r, 4);			/* 68 reserved */
	h->disk_size = pohm_rd_u64(&r);
	pohm_rd_take(&r, 8);			/* 80 reserved */
	id = pohm_rd_take(&r, POHM_ID_SIZE);
	pohm_rd_take(&r, 188 - 152);		/* 152 reserved */
	if (r.err || memcmp(magic, BLOB_MAGIC, 8) || version != 1 || hsize != BLOB_HDR ||
	    pohm_rd_u32(&r) != node_crc32c(0, in, 188) || r.err)
		return -EILSEQ;
	memcpy(h->id, id, POHM_ID_SIZE);
	if (!h->chunk || h->size > (1ULL << 40) ||
	    h->disk_size != blob_disk_size(h->size, h->chunk))
		return -EILSEQ;
	return 0;
}

/* "data-0.N" */
static void blob_name(unsigned n, char *out, size_t len)
{
	snprintf(out, len, "data-0.%u", n);
}

/* Open blob n (creating it when create); fd or -errno. */
static int open_blob(struct blob_set *b, unsigned n, int create)
{
	char name[32];
	int fd;

	blob_name(n, name, sizeof(name));
	fd = openat(b->dirfd, name,
		    (b->readonly ? O_RDWR : O_RDWR | (create ? O_CREAT : 0)) | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

/* See blob.h. */
int blob_set_open(struct blob_set *b, int dirfd, int readonly)
{
	DIR *d = NULL;
	struct dirent *e;
	unsigned i;
	int fd, ret = 0;

	memset(b, 0, sizeof(*b));
	b->readonly = readonly;
	b->roll = BLOB_ROLL;
	for (i = 0; i < BLOB_MAX_FILES; i++)
		b->files[i].fd = -1;
	pthread_mutex_init(&b->lock, NULL);
	if (!readonly && mkdirat(dirfd, "blob", 0755) < 0 && errno != EEXIST)
		return -errno;
	b->dirfd = openat(dirfd, "blob", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->dirfd < 0)
		return readonly && errno == ENOENT ? 0 : -errno;
	fd = dup(b->dirfd);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		unsigned n;
		char tail;

		if (sscanf(e->d_name, "data-0.%u%c", &n, &tail) != 1 || n >= BLOB_MAX_FILES)
			continue;
		b->files[n].fd = open_blob(b, n, 0);
		if (b->files[n].fd < 0) {
			ret = b->files[n].fd;
			goto out;
		}
		if (n + 1 > b->n)
			b->n = n + 1;
	}
	if (!b->n && !readonly) {
		b->files[0].fd = open_blob(b, 0, 1);
		if (b->files[0].fd < 0) {
			ret = b->files[0].fd;
			goto out;
		}
		b->n = 1;
		b->dir_dirty = 1;
	}
	b->active = b->n ? b->n - 1 : 0;
out:
	closedir(d);
	return ret;
}

/* See blob.h. */
void blob_set_close(struct blob_set *b)
{
	unsigned i;

	for (i = 0; i < b->n; i++)
		if (b->files[i].fd >= 0)
			close(b->files[i].fd);
	if (b->dirfd > 0)
		close(b->dirfd);
	pthread_mutex_destroy(&b->lock);
}

/*
 * The next offset >= from (8-aligned) holding a good header whose record
 * fits in flen, or -1.
 */
static int64_t resync(int fd, uint64_t from, uint64_t flen)
{
	uint8_t *buf = malloc(RESYNC_WIN + BLOB_HDR);
	struct blob_hdr h;
	uint64_t pos = (from + 7) & ~(uint64_t)7;
	int64_t found = -1;

	if (!buf)
		return -1;
	while (found < 0 && pos + BLOB_HDR <= flen) {
		uint64_t want = flen - pos < RESYNC_WIN + BLOB_HDR ? flen - pos : RESYNC_WIN + BLOB_HDR;
		ssize_t got = pohm_sys_pread_full(fd, buf, want, (off_t)pos);
		uint64_t i;

		if (got < BLOB_HDR)
			break;
		for (i = 0; i + BLOB_HDR <= (uint64_t)got && i < RESYNC_WIN; i += 8) {
			if (memcmp(buf + i, BLOB_MAGIC, 8) || blob_hdr_decode(&h, buf + i, BLOB_HDR))
				continue;
			if (pos + i + h.disk_size <= flen) {
				found = (int64_t)(pos + i);
				break;
			}
		}
		pos += RESYNC_WIN;
	}
	free(buf);
	return found;
}

/* See blob.h. */
int blob_scan(struct blob_set *b, unsigned n,
	      int (*fn)(void *arg, unsigned n, uint64_t off, const struct blob_hdr *h), void *arg)
{
	struct blob_file *f = &b->files[n];
	uint8_t raw[BLOB_HDR];
	struct blob_hdr h;
	struct stat st;
	uint64_t off = 0, flen;
	int ret;

	if (f->fd < 0)
		return 0;
	if (fstat(f->fd, &st) < 0)
		return -errno;
	flen = (uint64_t)st.st_size;
	while (off + BLOB_HDR <= flen) {
		ssize_t got = pohm_sys_pread_full(f->fd, raw, BLOB_HDR, (off_t)off);
		int64_t next;

		if (got < 0)
			return (int)got;
		if (!blob_hdr_decode(&h, raw, (size_t)got) && off + h.disk_size <= flen) {
			ret = fn(arg, n, off, &h);
			if (ret)
				return ret;
			off += h.disk_size;
			continue;
		}
		next = resync(f->fd, off + 8, flen);
		if (next < 0)
			break;
		pohm_warn("store: blob %u: skipping %llu damaged bytes at %llu", n,
			  (unsigned long long)((uint64_t)next - off), (unsigned long long)off);
		f->garbage += (uint64_t)next - off;
		off = (uint64_t)next;
	}
	if (off < flen) {
		/* A torn tail: a record whose write never finished (never acknowledged). */
		pohm_warn("store: blob %u: %s a torn tail of %llu bytes at %llu", n,
			  b->readonly ? "ignoring" : "cutting off",
			  (unsigned long long)(flen - off), (unsigned long long)off);
		if (!b->readonly && ftruncate(f->fd, (off_t)off) < 0)
			return -errno;
	}
	f->len = off;
	return 0;
}

/* Create blob n and make it the active one; lock held.  0 or -errno. */
static int add_blob(struct blob_set *b, unsigned n)
{
	int fd;

	if (n >= BLOB_MAX_FILES)
		return -ENOSPC;
	fd = open_blob(b, n, 1);
	if (fd < 0)
		return fd;
	if (ftruncate(fd, 0) < 0) {
		close(fd);
		return -errno;
	}
	b->files[n].fd = fd;
	b->files[n].len = 0;
	b->files[n].garbage = 0;
	b->files[n].dirty = 0;
	if (n + 1 > b->n)
		b->n = n + 1;
	b->active = n;
	b->dir_dirty = 1;
	return 0;
}

/* See blob.h. */
int blob_reserve(struct blob_set *b, uint64_t disk_size, unsigned *n, uint64_t *off)
{
	struct blob_file *f;
	int ret = 0;

	pthread_mutex_lock(&b->lock);
	f = &b->files[b->active];
	if (f->fd < 0 || (f->len && f->len + disk_size > b->roll)) {
		ret = add_blob(b, b->n);
		if (ret)
			goto out;
		f = &b->files[b->active];
	}
	*n = b->active;
	*off = f->len;
	f->len += disk_size;
out:
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/* See blob.h. */
void blob_garbage(struct blob_set *b, unsigned n, uint64_t bytes)
{
	pthread_mutex_lock(&b->lock);
	b->files[n].garbage += bytes;
	pthread_mutex_unlock(&b->lock);
}

/* See blob.h. */
void blob_dirty(struct blob_set *b, unsigned n)
{
	pthread_mutex_lock(&b->lock);
	b->files[n].dirty = 1;
	pthread_mutex_unlock(&b->lock);
}

/* See blob.h. */
int blob_sync(struct blob_set *b)
{
	int fds[16], nfd = 0, i, dir, ret = 0;
	unsigned k;

	pthread_mutex_lock(&b->lock);
	for (k = 0; k < b->n && nfd < 16; k++) {
		if (b->files[k].dirty && b->files[k].fd >= 0) {
			b->files[k].dirty = 0;
			fds[nfd++] = b->files[k].fd;
		}
	}
	for (; k < b->n; k++)
		if (b->files[k].dirty)
			b->dir_dirty = 1;	/* more than 16: sync the rest next time */
	dir = b->dir_dirty;
	b->dir_dirty = 0;
	pthread_mutex_unlock(&b->lock);
	/* A written blob stays open until close: the fds cannot go away. */
	for (i = 0; i < nfd; i++)
		if (fdatasync(fds[i]) < 0 && !ret)
			ret = -errno;
	if (dir && fsync(b->dirfd) < 0 && !ret)
		ret = -errno;
	return ret;
}

/* See blob.h. */
int blob_fd(struct blob_set *b, unsigned n)
{
	return n < BLOB_MAX_FILES ? b->files[n].fd : -1;
}

/* See blob.h. */
int blob_copy(int fd_in, uint64_t off_in, int fd_out, uint64_t off_out, uint64_t len)
{
	loff_t oi = (loff_t)off_in, oo = (loff_t)off_out;
	uint8_t *buf = NULL;
	int ret = 0;

	while (len) {
		ssize_t n = copy_file_range(fd_in, &oi, fd_out, &oo, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;		/* not supported here: copy by hand */
		len -= (uint64_t)n;
	}
	while (len && !ret) {
		size_t k = len < (1u << 20) ? (size_t)len : (1u << 20);
		ssize_t got;

		if (!buf && !(buf = malloc(1u << 20)))
			return -ENOMEM;
		got = pohm_sys_pread_full(fd_in, buf, k, (off_t)oi);
		if (got != (ssize_t)k)
			ret = got < 0 ? (int)got : -EIO;
		else if (pohm_sys_pwrite_full(fd_out, buf, k, (off_t)oo) < 0)
			ret = -EIO;
		oi += (loff_t)k;
		oo += (loff_t)k;
		len -= k;
	}
	free(buf);
	return ret;
}

/* See blob.h. */
void blob_usage(struct blob_set *b, uint64_t *total, uint64_t *garbage)
{
	unsigned i;

	*total = *garbage = 0;
	pthread_mutex_lock(&b->lock);
	for (i = 0; i < b->n; i++) {
		*total += b->files[i].len;
		*garbage += b->files[i].garbage;
	}
	pthread_mutex_unlock(&b->lock);
}

/* See blob.h. */
int blob_start_new(struct blob_set *b, unsigned *first)
{
	int ret;

	pthread_mutex_lock(&b->lock);
	*first = b->n;
	ret = add_blob(b, b->n);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/* See blob.h. */
int blob_drop_before(struct blob_set *b, unsigned first)
{
	char from[32], to[32];
	unsigned i;
	int ret = 0;

	pthread_mutex_lock(&b->lock);
	/* Oldest first, so that a crash part way never lets an older record win. */
	for (i = 0; i < first; i++) {
		if (b->files[i].fd < 0)
			continue;
		blob_name(i, from, sizeof(from));
		if (unlinkat(b->dirfd, from, 0) < 0) {
			ret = -errno;
			goto out;
		}
		close(b->files[i].fd);
		b->files[i].fd = -1;
	}
	if (fsync(b->dirfd) < 0) {
		ret = -errno;
		goto out;
	}
	for (i = first; i < b->n; i++) {
		blob_name(i, from, sizeof(from));
		blob_name(i - first, to, sizeof(to));
		if (renameat(b->dirfd, from, b->dirfd, to) < 0) {
			ret = -errno;
			goto out;
		}
		b->files[i - first] = b->files[i];
		b->files[i].fd = -1;
		b->files[i].len = b->files[i].garbage = 0;
	}
	b->n -= first;
	b->active -= first;
	if (fsync(b->dirfd) < 0)
		ret = -errno;
out:
	pthread_mutex_unlock(&b->lock);
	return ret;
}
