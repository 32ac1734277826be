/*
 * journal.c — per-inode journal records and the local index (journal.h).
 *
 * Record file format (little-endian): magic "PHJ1", then the fixed fields in
 * struct order, the hint path (u16 length + bytes), then nchunks × 64-byte
 * checksums.  A torn or foreign file reads as -EIO and is treated by callers
 * as "unknown: revalidate".  Writes go to a unique temp name and are renamed
 * into place, so readers see the old or the new record, never a mix.
 */
#include "journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "sha512.h"
#include "sys.h"

#define JMAGIC 0x314a4850u	/* "PHJ1" */

int pohm_journal_open(struct pohm_journal *j, const char *cache_dir)
{
	int r;

	j->dirfd = -1;
	r = pohm_sys_mkdirat(AT_FDCWD, cache_dir, 0700);
	if (r && r != -EEXIST)
		return r;
	j->dirfd = pohm_sys_open_high(AT_FDCWD, cache_dir, O_RDONLY | O_DIRECTORY, 0);
	if (j->dirfd < 0)
		return j->dirfd;
	r = pohm_sys_mkdirat(j->dirfd, "j", 0700);
	if (r && r != -EEXIST)
		goto fail;
	r = pohm_sys_mkdirat(j->dirfd, "x", 0700);
	if (r && r != -EEXIST)
		goto fail;
	r = pohm_sys_mkdirat(j->dirfd, "tmp", 0700);
	if (r && r != -EEXIST)
		goto fail;
	return 0;
fail:
	pohm_sys_close(j->dirfd);
	j->dirfd = -1;
	return r;
}

void pohm_journal_close(struct pohm_journal *j)
{
	if (j->dirfd >= 0)
		pohm_sys_close(j->dirfd);
	j->dirfd = -1;
}

void pohm_jrec_clear(struct pohm_jrec *r)
{
	free(r->csum);
	r->csum = NULL;
	r->nchunks = 0;
}

static void put_ts(struct pohm_buf *b, const struct pohm_ts *t)
{
	pohm_buf_put_u64(b, (uint64_t)t->sec);
	pohm_buf_put_u32(b, t->nsec);
}

static int encode(struct pohm_buf *b, const struct pohm_jrec *r)
{
	size_t hl = strnlen(r->hint, sizeof(r->hint) - 1);
	uint8_t x[2];

	pohm_buf_put_u32(b, JMAGIC);
	pohm_buf_put_u64(b, r->ino);
	pohm_buf_put_u64(b, r->version);
	pohm_buf_put_u64(b, r->dversion);
	pohm_buf_put_u32(b, r->mode);
	pohm_buf_put_u32(b, r->uid);
	pohm_buf_put_u32(b, r->gid);
	pohm_buf_put_u32(b, r->nlink);
	pohm_buf_put_u64(b, r->size);
	pohm_buf_put_u64(b, r->rdev);
	put_ts(b, &r->atime);
	put_ts(b, &r->mtime);
	put_ts(b, &r->ctime);
	pohm_buf_put_u64(b, r->ldev);
	pohm_buf_put_u64(b, r->lino);
	pohm_buf_put_u64(b, r->lsize);
	put_ts(b, &r->lctime);
	pohm_buf_put_u64(b, r->recorded_ns);
	pohm_buf_put_u64(b, r->validated_ns);
	pohm_buf_put_u64(b, r->listed_ns);
	pohm_buf_put_u64(b, r->boot);
	pohm_buf_put_u32(b, r->flags);
	pohm_buf_put(b, &r->chunk_shift, 1);
	pohm_st16(x, (uint16_t)hl);
	pohm_buf_put(b, x, 2);
	pohm_buf_put(b, r->hint, hl);
	pohm_buf_put_u32(b, r->nchunks);
	return pohm_buf_put(b, r->csum, (size_t)r->nchunks * 64);
}

/* Bounds-checked reader over the record bytes. */
struct jrd {
	const uint8_t *p;
	size_t left;
	int bad;
};

static const uint8_t *take(struct jrd *d, size_t n)
{
	const uint8_t *p = d->p;

	if (d->bad || n > d->left) {
		d->bad = 1;
		return NULL;
	}
	d->p += n;
	d->left -= n;
	return p;
}

static uint64_t u64(struct jrd *d)
{
	const uint8_t *p = take(d, 8);

	return p ? pohm_le64(p) : 0;
}

static uint32_t u32(struct jrd *d)
{
	const uint8_t *p = take(d, 4);

	return p ? pohm_le32(p) : 0;
}

static void ts(struct jrd *d, struct pohm_ts *t)
{
	t->sec = (int64_t)u64(d);
	t->nsec = u32(d);
}

static int decode(struct pohm_jrec *r, const uint8_t *p, size_t n)
{
	struct jrd d = { p, n, 0 };
	const uint8_t *q;
	uint16_t hl;

	memset(r, 0, sizeof(*r));
	if (u32(&d) != JMAGIC)
		return -EIO;
	r->ino = u64(&d);
	r->version = u64(&d);
	r->dversion = u64(&d);
	r->mode = u32(&d);
	r->uid = u32(&d);
	r->gid = u32(&d);
	r->nlink = u32(&d);
	r->size = u64(&d);
	r->rdev = u64(&d);
	ts(&d, &r->atime);
	ts(&d, &r->mtime);
	ts(&d, &r->ctime);
	r->ldev = u64(&d);
	r->lino = u64(&d);
	r->lsize = u64(&d);
	ts(&d, &r->lctime);
	r->recorded_ns = u64(&d);
	r->validated_ns = u64(&d);
	r->listed_ns = u64(&d);
	r->boot = u64(&d);
	r->flags = u32(&d);
	q = take(&d, 1);
	r->chunk_shift = q ? q[0] : 0;
	if (r->chunk_shift && (r->chunk_shift < 12 || r->chunk_shift > 30))
		return -EIO;	/* chunks of 4 KiB to 1 GiB; anything else is damage */
	q = take(&d, 2);
	hl = q ? pohm_le16(q) : 0;
	if (hl >= sizeof(r->hint))
		return -EIO;
	q = take(&d, hl);
	if (q)
		memcpy(r->hint, q, hl);
	r->nchunks = u32(&d);
	if (d.bad || (uint64_t)r->nchunks * 64 != d.left)
		return -EIO;
	if (r->nchunks) {
		r->csum = malloc((size_t)r->nchunks * 64);
		if (!r->csum)
			return -ENOMEM;
		memcpy(r->csum, d.p, (size_t)r->nchunks * 64);
	}
	return 0;
}

int pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r)
{
	char name[64];
	uint8_t *buf = NULL;
	struct stat st;
	ssize_t n;
	int fd, rc;

	snprintf(name, sizeof(name), "j/%" PRIx64, ino);
	fd = pohm_sys_openat(j->dirfd, name, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	rc = pohm_sys_fstat(fd, &st);
	if (rc)
		goto out;
	if (st.st_size > (64 << 20)) {
		rc = -EIO;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	n = pohm_sys_read_full(fd, buf, (size_t)st.st_size);
	rc = n < 0 ? (int)n : decode(r, buf, (size_t)n);
	if (!rc && r->ino != ino) {
		pohm_jrec_clear(r);	/* a record under another inode's name: damage */
		rc = -EIO;
	}
out:
	free(buf);
	pohm_sys_close(fd);
	return rc;
}

static void index_name(char *out, size_t len, uint64_t dev, uint64_t lino)
{
	snprintf(out, len, "x/%" PRIx64 ".%" PRIx64, dev, lino);
}

int pohm_journal_put(struct pohm_journal *j, const struct pohm_jrec *r)
{
	struct pohm_buf b = POHM_BUF_INIT;
	char tmp[96], name[64], idx[96], target[32];
	static unsigned long seq;	/* temp-name uniqueness within a process; races only widen names */
	uint64_t old_ldev = 0, old_lino = 0;
	int fd, rc;

	rc = encode(&b, r);
	if (rc)
		goto out;
	{
		struct pohm_jrec prev;

		if (!pohm_journal_get(j, r->ino, &prev)) {
			old_ldev = prev.ldev;
			old_lino = prev.lino;
			pohm_jrec_clear(&prev);
		}
	}
	snprintf(tmp, sizeof(tmp), "tmp/j.%d.%lu.%" PRIx64, (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED), r->ino);
	snprintf(name, sizeof(name), "j/%" PRIx64, r->ino);
	fd = pohm_sys_openat(j->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	rc = (int)pohm_sys_write_full(fd, b.p, b.len);
	pohm_sys_close(fd);
	if (rc >= 0)
		rc = pohm_sys_renameat(j->dirfd, tmp, j->dirfd, name);
	if (rc < 0) {
		pohm_sys_unlinkat(j->dirfd, tmp, 0);
		goto out;
	}
	rc = 0;
	if (old_lino && (old_lino != r->lino || old_ldev != r->ldev)) {
		/* The local file was replaced (a fetch renames a new one in): drop its index entry. */
		index_name(idx, sizeof(idx), old_ldev, old_lino);
		pohm_sys_unlinkat(j->dirfd, idx, 0);
	}
	if (r->lino) {
		index_name(idx, sizeof(idx), r->ldev, r->lino);
		snprintf(target, sizeof(target), "%" PRIx64, r->ino);
		snprintf(tmp, sizeof(tmp), "tmp/x.%d.%lu", (int)pohm_sys_getpid(),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		if (!syscall(SYS_symlinkat, target, j->dirfd, tmp))
			pohm_sys_renameat(j->dirfd, tmp, j->dirfd, idx);
	}
out:
	pohm_buf_free(&b);
	return rc;
}

int pohm_journal_del(struct pohm_journal *j, uint64_t ino)
{
	struct pohm_jrec r;
	char name[64], idx[96];

	if (!pohm_journal_get(j, ino, &r)) {
		if (r.lino) {
			index_name(idx, sizeof(idx), r.ldev, r.lino);
			pohm_sys_unlinkat(j->dirfd, idx, 0);
		}
		pohm_jrec_clear(&r);
	}
	snprintf(name, sizeof(name), "j/%" PRIx64, ino);
	return pohm_sys_unlinkat(j->dirfd, name, 0);
}

int pohm_journal_lookup_local(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t *ino)
{
	char idx[96], target[32];
	long n;
	char *end;

	index_name(idx, sizeof(idx), dev, lino);
	n = syscall(SYS_readlinkat, j->dirfd, idx, target, sizeof(target) - 1);
	if (n <= 0)
		return -ENOENT;
	target[n] = '\0';
	*ino = strtoull(target, &end, 16);
	return *end || !*ino ? -ENOENT : 0;
}

int pohm_journal_each(struct pohm_journal *j, int (*fn)(void *arg, struct pohm_jrec *r), void *arg)
{
	char buf[8192];
	int fd, rc = 0;
	long n;

	fd = pohm_sys_openat(j->dirfd, "j", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	while (!rc && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n && !rc) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			struct pohm_jrec r;
			uint64_t ino;
			char *end;

			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			ino = strtoull(de->d_name, &end, 16);
			if (*end || pohm_journal_get(j, ino, &r))
				continue;
			rc = fn(arg, &r);
			pohm_jrec_clear(&r);
		}
	}
	pohm_sys_close(fd);
	return rc;
}

/* One clock tick of a filesystem timestamp: be generous (git's racy rule). */
#define RACY_NS 20000000LL

int pohm_journal_is_dirty(const struct pohm_jrec *r, const struct stat *st)
{
	int64_t ct;

	if ((uint64_t)st->st_ino != r->lino || (uint64_t)st->st_size != r->lsize)
		return 1;
	if (st->st_ctim.tv_sec != r->lctime.sec || (uint32_t)st->st_ctim.tv_nsec != r->lctime.nsec)
		return 1;
	/*
	 * Same ctime, but recorded within a clock tick of it: a write later in
	 * that tick would leave ctime unchanged, so we cannot tell.  Treat it as
	 * dirty; the push finds no changed chunk and records again.
	 */
	ct = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
	return (int64_t)r->recorded_ns - ct < RACY_NS ? 2 : 0;
}

int pohm_journal_content_differs(const struct pohm_jrec *r, int fd, uint64_t size)
{
	uint64_t cs = 1ULL << (r->chunk_shift ? r->chunk_shift : 20), nch = (size + cs - 1) / cs, i;
	uint8_t *buf, sum[64];
	int differs = 0;

	if (size != r->size || nch != r->nchunks)
		return 1;
	buf = malloc(cs);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < nch && !differs; i++) {
		size_t want = (size_t)(i + 1 < nch ? cs : size - i * cs);
		ssize_t got = pohm_sys_pread_full(fd, buf, want, (off_t)(i * cs));

		if (got != (ssize_t)want) {
			differs = got < 0 ? (int)got : 1;
			break;
		}
		pohm_sha512(buf, want, sum);
		differs = memcmp(sum, r->csum[i], 64) != 0;
	}
	free(buf);
	return differs;
}

void pohm_journal_note_local(struct pohm_jrec *r, const struct stat *st)
{
	r->ldev = (uint64_t)st->st_dev;
	r->lino = (uint64_t)st->st_ino;
	r->lsize = (uint64_t)st->st_size;
	r->lctime.sec = st->st_ctim.tv_sec;
	r->lctime.nsec = (uint32_t)st->st_ctim.tv_nsec;
	r->recorded_ns = pohm_sys_real_ns();
}

void pohm_journal_note_inode(struct pohm_jrec *r, const struct pohm_inode *in)
{
	uint32_t i;

	r->ino = in->ino;
	r->version = in->version;
	r->dversion = in->dversion;
	r->mode = in->mode;
	r->uid = in->uid;
	r->gid = in->gid;
	r->nlink = in->nlink;
	r->size = in->size;
	r->rdev = in->rdev;
	r->atime = in->atime;
	r->mtime = in->mtime;
	r->ctime = in->ctime;
	r->chunk_shift = in->chunk_shift;
	free(r->csum);
	r->csum = NULL;
	r->nchunks = 0;
	if (in->nchunks && (r->csum = malloc((size_t)in->nchunks * 64))) {
		for (i = 0; i < in->nchunks; i++) {
			if (in->chunks[i].gen)
				memcpy(r->csum[i], in->chunks[i].csum, 64);
			else
				memset(r->csum[i], 0, 64);
		}
		r->nchunks = in->nchunks;
	}
}
