/*
 * journal.c — per-inode journal records and the local index (journal.h).
 *
 * Sections: record format (encode, decode, check), reading a record file,
 * the per-record lock, writing in place.  The index is jindex.c.
 *
 * Record file cache_dir/j/<ino>, format 2 (little-endian):
 *
 *    0  u32  magic "PHJ2"
 *    4  u64  ino
 *   12  u32  len: bytes of the record from offset 0 (the file may be longer:
 *            a shorter record written over a longer one leaves a tail that
 *            is not part of it)
 *   16  u64  check: jcheck() of bytes [0, 16) and [24, len)
 *   24  the fields of struct pohm_jrec in struct order from version to
 *       chunk_shift, the hint (u16 length + bytes), nchunks, nchunks × 64
 *       bytes of checksums.
 *  len  the commit trailer, when the record has a last commit (32 bytes):
 *       u32 magic "PHX1", u32 0, u64 commit_dversion, u64 commit_lino,
 *       u64 a check of them and of the record's check.  Outside len, so a
 *       library of session 11 reads the record and ignores it (and its own
 *       writes drop it: the record's check changes, the trailer no longer
 *       matches); bound to the record by its check, so a tail left by an
 *       older, longer record never passes for one.
 *
 * Format 1 ("PHJ1": magic, ino, the same fields, exactly as long as the
 * file) is still read; every write makes format 2.  A record is written in
 * place with one pwrite while its lock is held (a write lock on byte <ino>
 * of cache_dir/j.lock, an OFD lock taken on a fresh open of that file, which
 * is never renamed): no temp file, no rename, no new inode on the host's
 * file system after the first write.  A reader takes no lock; a record
 * whose check fails (a writer is in the middle of it, or a crash or kill
 * tore it) is read once more under a read lock, which waits for a writer,
 * and if it still fails it reads as -EIO: callers treat it as "unknown:
 * revalidate", never as data.  A record of a newer format reads as -EIO
 * with a warning naming the format.
 */
#include "journal.h"
#include "jindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"
#include "sys.h"

#define JMAGIC1 0x314a4850u	/* "PHJ1": renamed into place (read only) */
#define JMAGIC2 0x324a4850u	/* "PHJ2": written in place, checked */
#define XMAGIC 0x31584850u	/* "PHX1": the commit trailer */
#define JTRAIL 32		/* its bytes */
#define JHDR2 24		/* magic, ino, len, check */
#define JREAD0 4096		/* first read of a record file: most records fit */
#define JMAX (64u << 20)	/* larger record files are damage */

int pohm_journal_open(struct pohm_journal *j, const char *cache_dir)
{
	int r, fd;

	j->dirfd = j->xfd = -1;
	j->legacy = 0;
	r = pohm_journal_mkdir_own(AT_FDCWD, cache_dir);
	if (r && r != -EEXIST)
		return r;
	fd = pohm_sys_open_high(AT_FDCWD, cache_dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	pohm_own_set(&j->dirfd, fd);	/* the host's close and dup2 leave it alone */
	r = pohm_journal_mkdir_own(j->dirfd, "j");
	if (r && r != -EEXIST)
		goto fail;
	r = pohm_journal_mkdir_own(j->dirfd, "tmp");
	if (r && r != -EEXIST)
		goto fail;
	/* push.c's markers: made here too, so their mode never takes the umask. */
	r = pohm_journal_mkdir_own(j->dirfd, "p");
	if (r && r != -EEXIST)
		goto fail;
	/* Made now so that readers find it; a cache_dir we may only read still
	 * opens (its puts then fail, as they did before). */
	fd = pohm_journal_open_own(j->dirfd, "j.lock", O_RDWR | O_CREAT);
	if (fd >= 0)
		pohm_sys_close(fd);
	return jindex_open(j);
fail:
	pohm_own_close(&j->dirfd);
	return r;
}

void pohm_journal_close(struct pohm_journal *j)
{
	jindex_close(j);
	pohm_own_close(&j->dirfd);
}

void pohm_jrec_set_hint(struct pohm_jrec *r, const char *rel)
{
	size_t n = strnlen(rel, sizeof(r->hint));

	if (n >= sizeof(r->hint))
		n = 0;
	memcpy(r->hint, rel, n);
	r->hint[n] = '\0';
}

void pohm_jrec_clear(struct pohm_jrec *r)
{
	free(r->csum);
	r->csum = NULL;
	r->nchunks = 0;
}

/* ---------------------------------------------------------------- record format */

/*
 * The check of a format-2 record: a 64-bit multiply-xorshift hash over 8-byte
 * words.  Each step is a bijection of the state for a given word, so a record
 * that differs from the written one in any single word never passes; a torn
 * mix of two records passes with a chance of about 2^-64.  It guards against
 * torn and concurrent writes, not against an attacker (the journal is the
 * user's own, mode 0700).
 */
static uint64_t jmix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static uint64_t jcheck(const uint8_t *p, size_t len)
{
	uint64_t h = 0x6a09e667f3bcc908ULL ^ len, w;
	size_t i;

	h = jmix(h, pohm_le64(p));		/* magic and the low half of ino */
	h = jmix(h, pohm_le64(p + 8));		/* the rest of ino and len */
	for (i = JHDR2; i + 8 <= len; i += 8)
		h = jmix(h, pohm_le64(p + i));
	for (w = 0; i < len; i++)
		w = (w << 8) | p[i];
	h = jmix(h, w ^ ((uint64_t)(len & 7) << 56));
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

void pohm_journal_seal(uint8_t *p, size_t len)
{
	if (len < JHDR2)
		return;
	pohm_st32(p + 12, (uint32_t)len);
	pohm_st64(p + 16, jcheck(p, len));
}

static uint64_t trail_check(uint64_t rec_check, uint64_t dversion, uint64_t lino)
{
	uint64_t h = jmix(jmix(jmix(0x510e527fade682d1ULL ^ XMAGIC, rec_check), dversion), lino);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static void put_ts(struct pohm_buf *b, const struct pohm_ts *t)
{
	pohm_buf_put_u64(b, (uint64_t)t->sec);
	pohm_buf_put_u32(b, t->nsec);
}

/* The format-2 bytes of r, sealed. */
static int encode(struct pohm_buf *b, const struct pohm_jrec *r)
{
	size_t hl = strnlen(r->hint, sizeof(r->hint) - 1);
	uint8_t x[2];
	int rc;

	rc = pohm_buf_reserve(b, 256 + JTRAIL + hl + (size_t)r->nchunks * 64);
	if (rc)
		return rc;	/* then no put below can fail half-way */
	pohm_buf_put_u32(b, JMAGIC2);
	pohm_buf_put_u64(b, r->ino);
	pohm_buf_put_u32(b, 0);		/* len, set by the seal */
	pohm_buf_put_u64(b, 0);		/* check, likewise */
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
	rc = pohm_buf_put(b, r->csum, (size_t)r->nchunks * 64);
	if (rc)
		return rc;
	if (b->len > JMAX)
		return -EFBIG;
	pohm_journal_seal(b->p, b->len);
	if (r->commit_dversion || r->commit_lino) {
		uint64_t rec_check = pohm_le64(b->p + 16);

		pohm_buf_put_u32(b, XMAGIC);
		pohm_buf_put_u32(b, 0);
		pohm_buf_put_u64(b, r->commit_dversion);
		pohm_buf_put_u64(b, r->commit_lino);
		rc = pohm_buf_put_u64(b, trail_check(rec_check, r->commit_dversion, r->commit_lino));
	}
	return rc;
}

/* The commit trailer after the record of len bytes in the n bytes at p,
 * if it is there and belongs to that record, into r. */
static void decode_trailer(struct pohm_jrec *r, const uint8_t *p, size_t len, size_t n)
{
	const uint8_t *t = p + len;
	uint64_t dv, li;

	if (len < JHDR2 || pohm_le32(p) != JMAGIC2 || n < len + JTRAIL || pohm_le32(t) != XMAGIC)
		return;
	dv = pohm_le64(t + 8);
	li = pohm_le64(t + 16);
	if (pohm_le64(t + 24) != trail_check(pohm_le64(p + 16), dv, li))
		return;
	r->commit_dversion = dv;
	r->commit_lino = li;
}

static void ts(struct pohm_rd *d, struct pohm_ts *t)
{
	t->sec = (int64_t)pohm_rd_u64(d);
	t->nsec = pohm_rd_u32(d);
}

/* The fields both formats share, from version on (d is past the header). */
static int decode_body(struct pohm_jrec *r, struct pohm_rd *d)
{
	const uint8_t *q;
	uint16_t hl;

	r->version = pohm_rd_u64(d);
	r->dversion = pohm_rd_u64(d);
	r->mode = pohm_rd_u32(d);
	r->uid = pohm_rd_u32(d);
	r->gid = pohm_rd_u32(d);
	r->nlink = pohm_rd_u32(d);
	r->size = pohm_rd_u64(d);
	r->rdev = pohm_rd_u64(d);
	ts(d, &r->atime);
	ts(d, &r->mtime);
	ts(d, &r->ctime);
	r->ldev = pohm_rd_u64(d);
	r->lino = pohm_rd_u64(d);
	r->lsize = pohm_rd_u64(d);
	ts(d, &r->lctime);
	r->recorded_ns = pohm_rd_u64(d);
	r->validated_ns = pohm_rd_u64(d);
	r->listed_ns = pohm_rd_u64(d);
	r->boot = pohm_rd_u64(d);
	r->flags = pohm_rd_u32(d);
	r->chunk_shift = pohm_rd_u8(d);
	if (r->chunk_shift && (r->chunk_shift < 12 || r->chunk_shift > 30))
		return -EIO;	/* chunks of 4 KiB to 1 GiB; anything else is damage */
	hl = pohm_rd_u16(d);
	if (hl >= sizeof(r->hint))
		return -EIO;
	q = pohm_rd_take(d, hl);
	if (q)
		memcpy(r->hint, q, hl);
	r->nchunks = pohm_rd_u32(d);
	if (d->err || (uint64_t)r->nchunks * 64 != d->left)
		return -EIO;
	if (r->nchunks) {
		r->csum = malloc((size_t)r->nchunks * 64);
		if (!r->csum)
			return -ENOMEM;
		memcpy(r->csum, d->p, (size_t)r->nchunks * 64);
	}
	return 0;
}

/*
 * Where the record in the n bytes at p ends: its length, 0 if the bytes are
 * not a whole, intact record, or -EIO for a foreign or newer file.
 * Format 2: the length field, when p holds that many bytes and the check
 * matches; format 1: n (it was renamed into place whole).
 */
static ssize_t record_len(const uint8_t *p, size_t n)
{
	uint32_t magic, len;

	if (n < 4)
		return 0;
	magic = pohm_le32(p);
	if (magic == JMAGIC1)
		return (ssize_t)n;
	if (magic != JMAGIC2) {
		if ((magic & 0xffffffu) == (JMAGIC1 & 0xffffffu) && (magic >> 24) > '2' &&
		    (magic >> 24) <= '9')
			pohm_warn("journal: a record of format %c (a newer libpohmelfs); "
				  "this one reads format 1 and 2", (int)(magic >> 24));
		return -EIO;
	}
	if (n < JHDR2)
		return 0;
	len = pohm_le32(p + 12);
	if (len < JHDR2 || len > n || pohm_le64(p + 16) != jcheck(p, len))
		return 0;
	return (ssize_t)len;
}

/* Decode the whole record of len bytes at p (record_len said it is one). */
static int decode(struct pohm_jrec *r, const uint8_t *p, size_t len)
{
	struct pohm_rd d = pohm_rd_make(p, len);
	int rc;

	memset(r, 0, sizeof(*r));
	if (pohm_rd_u32(&d) == JMAGIC2) {
		r->ino = pohm_rd_u64(&d);
		pohm_rd_take(&d, JHDR2 - 12);
	} else {
		r->ino = pohm_rd_u64(&d);
	}
	rc = decode_body(r, &d);
	if (rc)
		pohm_jrec_clear(r);
	return rc;
}

/* ---------------------------------------------------------------- reading */

/*
 * Read the record file open as fd into *out (malloc'ed; free it): its
 * length, 0 if it holds no intact record (torn, or a writer is in it), or
 * -errno; *fsize gets the bytes the file held (what was read).  One pread
 * for a record up to JREAD0 bytes.
 */
static ssize_t read_record(int fd, uint8_t **out, size_t *fsize)
{
	size_t cap = JREAD0, have = 0;
	uint8_t *buf = NULL, *nb;
	ssize_t n, len;

	for (;;) {
		nb = realloc(buf, cap);
		if (!nb) {
			len = -ENOMEM;
			goto out;
		}
		buf = nb;
		n = pohm_sys_pread_full(fd, buf + have, cap - have, (off_t)have);
		if (n < 0) {
			len = n;
			goto out;
		}
		have += (size_t)n;
		if (have < cap)
			break;		/* the whole file */
		/* Format 2 names its length: read that much and a trailer, else double. */
		if (have >= JHDR2 && pohm_le32(buf) == JMAGIC2 &&
		    (size_t)pohm_le32(buf + 12) + JTRAIL <= have)
			break;
		if (have >= JHDR2 && pohm_le32(buf) == JMAGIC2 && pohm_le32(buf + 12) <= JMAX)
			cap = (size_t)pohm_le32(buf + 12) + JTRAIL;
		else if (cap < JMAX)
			cap *= 2;
		else {
			len = -EIO;
			goto out;
		}
	}
	len = record_len(buf, have);
	*fsize = have;
out:
	if (len > 0)
		*out = buf;
	else
		free(buf);
	return len;
}

static void record_name(char *out, size_t size, uint64_t ino)
{
	snprintf(out, size, "j/%" PRIx64, ino);
}

/* ---------------------------------------------------------------- the lock */

/*
 * Lock ino's byte of cache_dir/j.lock (F_WRLCK or F_RDLCK), waiting: the fd
 * that holds it (closing it unlocks), or -errno.  A fresh open each time:
 * OFD locks belong to the open file description, so threads of one process
 * and a fork child sharing one description would not exclude each other.
 * Never held across network I/O: only around a record's own file calls.
 */
static int jlock(struct pohm_journal *j, uint64_t ino, short type)
{
	struct flock fl;
	int fd, r;

	fd = pohm_journal_open_own(j->dirfd, "j.lock",
				   type == F_RDLCK ? O_RDONLY : O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(ino & 0x3fffffffffffffffULL);	/* two inodes may share a byte */
	fl.l_len = 1;
	do
		r = pohm_sys_fcntl(fd, F_OFD_SETLKW, (long)&fl);
	while (r == -EINTR);
	if (r) {
		pohm_sys_close(fd);
		return r;
	}
	return fd;
}

/* Read and decode ino's record from the file open as fd: 0, -EAGAIN (no
 * intact record now), -EIO, -ENOMEM.  *fsize: see read_record. */
static int get_from(int fd, uint64_t ino, struct pohm_jrec *r, size_t *fsize)
{
	uint8_t *buf = NULL;
	ssize_t len;
	int rc;

	*fsize = 0;
	len = read_record(fd, &buf, fsize);
	if (len <= 0)
		return len ? (int)len : -EAGAIN;
	rc = decode(r, buf, (size_t)len);
	if (!rc)
		decode_trailer(r, buf, (size_t)len, *fsize);
	free(buf);
	if (!rc && r->ino != ino) {
		pohm_jrec_clear(r);	/* a record under another inode's name: damage */
		rc = -EIO;
	}
	return rc;
}

int pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r)
{
	char name[64];
	size_t fsize;
	int fd, lfd, rc;

	memset(r, 0, sizeof(*r));
	record_name(name, sizeof(name), ino);
	fd = pohm_journal_open_own(j->dirfd, name, O_RDONLY);	/* says once if refused */
	if (fd < 0)
		return fd;
	rc = get_from(fd, ino, r, &fsize);
	if (rc == -EAGAIN) {
		/* A writer is in it, or it was torn: once more after any writer. */
		lfd = jlock(j, ino, F_RDLCK);
		rc = lfd < 0 ? -EIO : get_from(fd, ino, r, &fsize);
		if (lfd >= 0)
			pohm_sys_close(lfd);
		if (rc == -EAGAIN)
			rc = -EIO;
	}
	pohm_sys_close(fd);
	return rc;
}

/* ---------------------------------------------------------------- writing */

int pohm_journal_moved(const struct pohm_jrec *cur, const struct pohm_jrec *seen)
{
	return cur->version != seen->version || cur->dversion != seen->dversion ||
	       cur->ldev != seen->ldev || cur->lino != seen->lino || cur->lsize != seen->lsize ||
	       cur->lctime.sec != seen->lctime.sec || cur->lctime.nsec != seen->lctime.nsec ||
	       cur->flags != seen->flags;
}

/*
 * A longer record over an intact one of fsize bytes: get the blocks first,
 * so a full file system (or a file size limit) fails here with the old
 * record whole instead of half-way through the pwrite; a file system
 * without fallocate just goes on.  0 or -errno.
 */
static int grow_first(int fd, size_t len, size_t fsize)
{
	int rc;

	if (len <= fsize)
		return 0;
	rc = pohm_sys_fallocate(fd, 0, (off_t)0, (off_t)len);
	return rc == -EOPNOTSUPP || rc == -ENOSYS ? 0 : rc;
}

/*
 * pohm_journal_put, or pohm_journal_put_cas when seen is set.  The last
 * commit (commit_dversion, commit_lino) is r's only when own_commit (the
 * push that made it); every other put carries over the record's, so a
 * writer whose copy was read before a commit never takes it back.
 */
static int put_rec(struct pohm_journal *j, const struct pohm_jrec *r, const struct pohm_jrec *seen,
		   int own_commit)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_jrec prev, w;
	char name[64];
	int fd = -1, lfd = -1, rc, had;
	size_t fsize;
	ssize_t n;

	memset(&prev, 0, sizeof(prev));
	record_name(name, sizeof(name), r->ino);
	lfd = jlock(j, r->ino, F_WRLCK);
	if (lfd < 0) {
		rc = lfd;
		goto out;
	}
	fd = pohm_journal_open_own(j->dirfd, name, O_RDWR | O_CREAT);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	/* The record being replaced: which index entry it made (torn: none known). */
	had = !get_from(fd, r->ino, &prev, &fsize);
	if (seen && (!had || pohm_journal_moved(&prev, seen))) {
		rc = -ESTALE;	/* another writer's word came meanwhile: it stands */
		goto out;
	}
	w = *r;			/* shares r's csum: never cleared */
	if (had && !own_commit) {
		w.commit_dversion = prev.commit_dversion;
		w.commit_lino = prev.commit_lino;
	}
	rc = encode(&b, &w);
	if (rc)
		goto out;
	if (had) {
		rc = grow_first(fd, b.len, fsize);
		if (rc)
			goto out;
	}
	n = pohm_sys_pwrite_full(fd, b.p, b.len, 0);
	if (n < 0) {
		/* Perhaps part of it went: the check makes that read as torn. */
		rc = (int)n;
		goto out;
	}
	if (had && prev.lino && (prev.lino != r->lino || prev.ldev != r->ldev))
		/* The local file was replaced (a fetch renames a new one in): drop its entry. */
		pohm_journal_index_drop(j, prev.ldev, prev.lino, r->ino);
	if (r->lino && !(had && prev.lino == r->lino && prev.ldev == r->ldev))
		pohm_journal_index_set(j, r->ldev, r->lino, r->ino);
out:
	pohm_jrec_clear(&prev);
	if (fd >= 0)
		pohm_sys_close(fd);
	if (lfd >= 0)
		pohm_sys_close(lfd);
	pohm_buf_free(&b);
	return rc;
}

/*
 * pohm_journal_update: the record as it is now, under its lock; fn's
 * edit is written in place (a longer record gets its blocks first), the
 * index follows a change of the local file, and the last commit stays
 * (only pohm_journal_put_commit writes it).
 */
int pohm_journal_update(struct pohm_journal *j, uint64_t ino,
			int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_jrec r;
	uint64_t ldev, lino, cdv, cli;
	char name[64];
	size_t fsize;
	int fd = -1, lfd, rc;
	ssize_t n;

	memset(&r, 0, sizeof(r));
	record_name(name, sizeof(name), ino);
	lfd = jlock(j, ino, F_WRLCK);
	if (lfd < 0)
		return lfd;
	fd = pohm_sys_openat(j->dirfd, name, O_RDWR, 0);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	rc = get_from(fd, ino, &r, &fsize);
	if (rc == -EAGAIN)
		rc = -ENOENT;	/* torn: nothing to change */
	if (rc)
		goto out;
	ldev = r.ldev;
	lino = r.lino;
	cdv = r.commit_dversion;
	cli = r.commit_lino;
	rc = fn(&r, arg);
	if (rc)
		goto out;
	r.ino = ino;
	r.commit_dversion = cdv;
	r.commit_lino = cli;
	rc = encode(&b, &r);
	if (rc)
		goto out;
	rc = grow_first(fd, b.len, fsize);
	if (rc)
		goto out;
	n = pohm_sys_pwrite_full(fd, b.p, b.len, 0);
	rc = n < 0 ? (int)n : 0;
	if (rc || (ldev == r.ldev && lino == r.lino))
		goto out;
	if (lino)
		pohm_journal_index_drop(j, ldev, lino, ino);
	if (r.lino)
		pohm_journal_index_set(j, r.ldev, r.lino, ino);
out:
	pohm_jrec_clear(&r);
	if (fd >= 0)
		pohm_sys_close(fd);
	pohm_sys_close(lfd);
	pohm_buf_free(&b);
	return rc;
}

struct touch_arg {
	uint64_t version, validated_ns;
};

static int touch_fn(struct pohm_jrec *r, const void *arg)
{
	const struct touch_arg *t = arg;

	if (t->version && r->version != t->version)
		return -ESTALE;	/* rewritten since it was checked: its writer's word stands */
	r->validated_ns = t->validated_ns;
	return 0;
}

int pohm_journal_put(struct pohm_journal *j, const struct pohm_jrec *r)
{
	return put_rec(j, r, NULL, 0);
}

int pohm_journal_put_commit(struct pohm_journal *j, const struct pohm_jrec *r)
{
	return put_rec(j, r, NULL, 1);
}

int pohm_journal_put_cas(struct pohm_journal *j, const struct pohm_jrec *r,
			 const struct pohm_jrec *seen)
{
	return put_rec(j, r, seen, 0);
}

int pohm_journal_committed(struct pohm_journal *j, uint64_t ino, uint64_t dversion, uint64_t lino)
{
	struct pohm_jrec r;
	unsigned long long dv, li;
	char last[64], val[64];
	int got;
	long n;

	got = !pohm_journal_get(j, ino, &r) && r.commit_dversion;
	pohm_jrec_clear(&r);
	if (got)
		return r.commit_dversion == dversion && r.commit_lino == lino;
	/* A record of format 2: the p/<ino> link ("DVERSION.LINO") earlier
	 * libraries kept beside it. */
	snprintf(last, sizeof(last), "p/%" PRIx64, ino);
	n = pohm_sys_readlinkat(j->dirfd, last, val, sizeof(val) - 1);
	if (n <= 0)
		return 0;
	val[n] = '\0';
	return sscanf(val, "%llx.%llx", &dv, &li) == 2 && dv == dversion && li == lino;
}

int pohm_journal_touch(struct pohm_journal *j, uint64_t ino, uint64_t version,
		       uint64_t validated_ns)
{
	struct touch_arg t = { version, validated_ns };

	return pohm_journal_update(j, ino, touch_fn, &t);
}

static int relocal_fn(struct pohm_jrec *r, const void *arg)
{
	const struct stat *st = arg;

	if (r->lino != (uint64_t)st->st_ino || r->ldev != (uint64_t)st->st_dev)
		return -ESTALE;	/* another local file now: its recorder's word stands */
	pohm_journal_note_local(r, st);
	return 0;
}

int pohm_journal_relocal(struct pohm_journal *j, uint64_t ino, const struct stat *st)
{
	return pohm_journal_update(j, ino, relocal_fn, st);
}

static int stored_fn(struct pohm_jrec *r, const void *arg)
{
	const struct pohm_inode *in = arg;

	if (r->version > in->version)
		return -ESTALE;	/* a newer stored version was recorded meanwhile */
	pohm_journal_note_inode(r, in);
	return 0;
}

int pohm_journal_note_stored(struct pohm_journal *j, const struct pohm_inode *in)
{
	return pohm_journal_update(j, in->ino, stored_fn, in);
}

int pohm_journal_del(struct pohm_journal *j, uint64_t ino)
{
	struct pohm_jrec r;
	char name[64];
	int fd, lfd, rc;

	memset(&r, 0, sizeof(r));
	record_name(name, sizeof(name), ino);
	lfd = jlock(j, ino, F_WRLCK);
	if (lfd < 0)
		return lfd;
	fd = pohm_sys_openat(j->dirfd, name, O_RDONLY, 0);
	if (fd >= 0) {
		size_t fsize;

		if (!get_from(fd, ino, &r, &fsize) && r.lino)
			pohm_journal_index_drop(j, r.ldev, r.lino, ino);
		pohm_jrec_clear(&r);
		pohm_sys_close(fd);
	}
	rc = pohm_sys_unlinkat(j->dirfd, name, 0);
	pohm_sys_close(lfd);
	return rc;
}

int pohm_journal_each(struct pohm_journal *j, int (*fn)(void *arg, struct pohm_jrec *r), void *arg)
{
	char buf[8192];
	int fd, rc = 0;
	long n;

	fd = pohm_sys_openat(j->dirfd, "j", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	while (!rc && (n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
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
	r->ino = in->ino;
	r->version = in->version;
	r->rdev = in->rdev;
	r->atime = in->atime;
	r->mtime = in->mtime;
	pohm_journal_note_attrs(r, in);
	pohm_journal_note_data(r, in);
}

void pohm_journal_note_attrs(struct pohm_jrec *r, const struct pohm_inode *in)
{
	r->mode = in->mode;
	r->uid = in->uid;
	r->gid = in->gid;
	r->nlink = in->nlink;
	r->ctime = in->ctime;
}

void pohm_journal_note_data(struct pohm_jrec *r, const struct pohm_inode *in)
{
	uint32_t i;

	r->dversion = in->dversion;
	r->size = in->size;
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
