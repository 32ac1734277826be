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
 * file) is still read; every write makes format 2.
 *
 * Where a record is (session 14): in its slot of cache_dir/j.slots
 * (jslots.c: the slot header, then these bytes) when it fits in
 * JS_REC_MAX bytes (a hint and checksums of up to about 760 bytes
 * together), else in the file cache_dir/j/<ino> with its slot saying so.
 * Earlier caches kept every record in j/<ino>: the first open moves them
 * into slots (migrate_files) and reads j/ for an inode with no slot until
 * that is done.  A record is written in place with one pwrite while the
 * writer holds the locks of its slot's bucket chain (jslots.c): no temp
 * file, no rename, no new inode.  A reader takes no lock; a record whose
 * check fails (a writer is in the middle of it, or a crash or kill tore
 * it) is read once more under a read lock, which waits for a writer, and
 * if it still fails it reads as -EIO: callers treat it as "unknown:
 * revalidate", never as data.  A record of a newer format reads as -EIO
 * with a warning naming the format.
 */
#include "journal.h"
#include "jindex.h"
#include "jslots.h"

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

static void migrate_files(struct pohm_journal *j);

int pohm_journal_open(struct pohm_journal *j, const char *cache_dir)
{
	int r, fd;

	j->dirfd = j->xfd = j->sfd = -1;
	memset(&j->smap, 0, sizeof(j->smap));
	memset(&j->xmap, 0, sizeof(j->xmap));
	j->owner = -1;
	j->legacy = 0;
	j->jfiles = 1;
	r = pohm_journal_mkdir_own(AT_FDCWD, cache_dir);
	if (r && r != -EEXIST)
		return r;
	fd = pohm_sys_open_high(AT_FDCWD, cache_dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	pohm_own_set(&j->dirfd, fd);	/* the host's close and dup2 leave it alone */
	j->owner = -1;
	{
		struct stat st;

		if (!pohm_sys_fstat(j->dirfd, &st))
			j->owner = (long)st.st_uid;
	}
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
	/* A cache_dir we may only read still opens (its puts then fail). */
	jslots_open(j);
	migrate_files(j);
	return jindex_open(j);
fail:
	pohm_own_close(&j->dirfd);
	return r;
}

void pohm_journal_close(struct pohm_journal *j)
{
	jslots_close(j);
	jindex_close(j);
	pohm_own_close(&j->dirfd);
}

void pohm_journal_atfork_child(void)
{
	jslots_atfork_child();
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

/* The check of the len record bytes at p (len >= JHDR2): the words of the
 * header but the check itself, then those of the rest; a tail of under 8
 * bytes is one word, big-endian, with its length.  The words are taken
 * from the cursor as one span (a hash, not fields: one bounds check, not
 * one a word, on every read of a record). */
static uint64_t jcheck(const uint8_t *p, size_t len)
{
	struct pohm_rd d = pohm_rd_make(p, len);
	uint64_t h = 0x6a09e667f3bcc908ULL ^ len, w = 0;
	const uint8_t *q;
	size_t i, n;

	h = jmix(h, pohm_rd_u64(&d));		/* magic and the low half of ino */
	h = jmix(h, pohm_rd_u64(&d));		/* the rest of ino and len */
	pohm_rd_take(&d, 8);			/* the check */
	n = d.left & ~(size_t)7;
	q = pohm_rd_take(&d, n);
	for (i = 0; q && i < n; i += 8)
		h = jmix(h, pohm_le64(q + i));
	n = d.left;
	q = pohm_rd_take(&d, n);
	for (i = 0; q && i < n; i++)
		w = (w << 8) | q[i];
	h = jmix(h, w ^ ((uint64_t)(len & 7) << 56));
	return jfmix1(h);
}

/* Set the length and check of the len format-2 bytes at p; the check. */
static uint64_t seal(uint8_t *p, size_t len)
{
	uint64_t check;

	pohm_st32(p + 12, (uint32_t)len);
	check = jcheck(p, len);
	pohm_st64(p + 16, check);
	return check;
}

void pohm_journal_seal(uint8_t *p, size_t len)
{
	if (len >= JHDR2)
		seal(p, len);
}

static uint64_t trail_check(uint64_t rec_check, uint64_t dversion, uint64_t lino)
{
	return jfmix1(jmix(jmix(jmix(0x510e527fade682d1ULL ^ XMAGIC, rec_check), dversion), lino));
}

/* A record file's header: format 1's magic and ino, format 2's magic, ino,
 * len and check (0 in format 1). */
struct jhdr {
	uint32_t magic;
	uint64_t ino;
	uint32_t len;
	uint64_t check;
};

/* Read the header at the cursor into h (and step past it); a short one
 * sets d->err. */
static void get_hdr(struct pohm_rd *d, struct jhdr *h)
{
	h->magic = pohm_rd_u32(d);
	h->ino = pohm_rd_u64(d);
	h->len = 0;
	h->check = 0;
	if (h->magic == JMAGIC2) {
		h->len = pohm_rd_u32(d);
		h->check = pohm_rd_u64(d);
	}
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
	uint64_t rec_check;
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
	rec_check = seal(b->p, b->len);
	if (r->commit_dversion || r->commit_lino) {
		pohm_buf_put_u32(b, XMAGIC);
		pohm_buf_put_u32(b, 0);
		pohm_buf_put_u64(b, r->commit_dversion);
		pohm_buf_put_u64(b, r->commit_lino);
		rc = pohm_buf_put_u64(b, trail_check(rec_check, r->commit_dversion, r->commit_lino));
	}
	return rc;
}

/* The commit trailer in the n bytes at p, after a record whose header is
 * h, if it is there and belongs to that record, into r. */
static void decode_trailer(struct pohm_jrec *r, const struct jhdr *h, const uint8_t *p, size_t n)
{
	struct pohm_rd t = pohm_rd_make(p, n);
	uint32_t magic;
	uint64_t dv, li, check;

	if (h->magic != JMAGIC2)
		return;
	magic = pohm_rd_u32(&t);
	pohm_rd_take(&t, 4);		/* 0 */
	dv = pohm_rd_u64(&t);
	li = pohm_rd_u64(&t);
	check = pohm_rd_u64(&t);
	if (t.err || magic != XMAGIC || check != trail_check(h->check, dv, li))
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
	/* POHM_J_CHGRP_SENT lives in memory only: a stored one is damage a
	 * put would drop, not a push's word (the fuzz target's round trip). */
	r->flags = pohm_rd_u32(d) & ~POHM_J_CHGRP_SENT;
	r->chunk_shift = pohm_rd_u8(d);
	if (r->chunk_shift && (r->chunk_shift < 12 || r->chunk_shift > 30))
		return -EIO;	/* chunks of 4 KiB to 1 GiB; anything else is damage */
	hl = pohm_rd_u16(d);
	if (hl >= sizeof(r->hint))
		return -EIO;
	pohm_rd_copy(d, r->hint, hl);
	r->nchunks = pohm_rd_u32(d);
	if (d->err || (uint64_t)r->nchunks * 64 != d->left)
		return -EIO;
	if (r->nchunks) {
		r->csum = malloc((size_t)r->nchunks * 64);
		if (!r->csum)
			return -ENOMEM;
		pohm_rd_copy(d, r->csum, (size_t)r->nchunks * 64);
	}
	return d->err ? -EIO : 0;
}

/*
 * Where the record in the n bytes at p ends: its length, 0 if the bytes are
 * not a whole, intact record, or -EIO for a foreign or newer file.
 * Format 2: the length field, when p holds that many bytes and the check
 * matches; format 1: n (it was renamed into place whole).
 */
static ssize_t record_len(const uint8_t *p, size_t n)
{
	struct pohm_rd d = pohm_rd_make(p, n);
	struct jhdr h;
	uint32_t magic;

	magic = pohm_rd_u32(&d);
	if (d.err)
		return 0;
	if (magic == JMAGIC1)
		return (ssize_t)n;	/* its fields are checked as they are decoded */
	if (magic != JMAGIC2) {
		if ((magic & 0xffffffu) == (JMAGIC1 & 0xffffffu) && (magic >> 24) > '2' &&
		    (magic >> 24) <= '9')
			pohm_warn("journal: a record of format %c (a newer libpohmelfs); "
				  "this one reads format 1 and 2", (int)(magic >> 24));
		return -EIO;
	}
	d = pohm_rd_make(p, n);
	get_hdr(&d, &h);
	if (d.err || h.len < JHDR2 || h.len > n || h.check != jcheck(p, h.len))
		return 0;
	return (ssize_t)h.len;
}

/* Decode the whole record of len bytes at p (record_len said it is one)
 * into r (cleared), its header into h. */
static int decode(struct pohm_jrec *r, struct jhdr *h, const uint8_t *p, size_t len)
{
	struct pohm_rd d = pohm_rd_make(p, len);
	int rc;

	get_hdr(&d, h);
	r->ino = h->ino;
	rc = decode_body(r, &d);
	if (rc)
		pohm_jrec_clear(r);
	return rc;
}

int pohm_journal_decode(const uint8_t *p, size_t n, uint64_t ino, struct pohm_jrec *r)
{
	ssize_t len = record_len(p, n);
	struct jhdr h;
	int rc;

	memset(r, 0, sizeof(*r));
	if (len <= 0)
		return len ? (int)len : -EAGAIN;
	rc = decode(r, &h, p, (size_t)len);
	if (!rc)
		decode_trailer(r, &h, p + len, n - (size_t)len);
	if (!rc && r->ino != ino) {
		pohm_jrec_clear(r);	/* a record under another inode's name: damage */
		rc = -EIO;
	}
	return rc;
}

/* ---------------------------------------------------------------- reading */

/*
 * Read the record file open as fd into *out (malloc'ed; free it): the
 * bytes it held (a format-2 record's length and trailer, or the whole
 * file), or -errno (-EIO: too large to be a record).  One pread for a
 * record up to JREAD0 bytes.
 */
static ssize_t read_record(int fd, uint8_t **out)
{
	size_t cap = JREAD0, have = 0;
	uint8_t *buf = NULL, *nb;
	struct pohm_rd d;
	struct jhdr h;
	ssize_t n, len;
	int f2;

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
		d = pohm_rd_make(buf, have);
		get_hdr(&d, &h);
		f2 = !d.err && h.magic == JMAGIC2;
		if (f2 && (size_t)h.len + JTRAIL <= have)
			break;
		if (f2 && h.len <= JMAX)
			cap = (size_t)h.len + JTRAIL;
		else if (cap < JMAX)
			cap *= 2;
		else {
			len = -EIO;
			goto out;
		}
	}
	len = (ssize_t)have;
out:
	if (len >= 0)
		*out = buf;
	else
		free(buf);
	return len;
}

static void record_name(char *out, size_t size, uint64_t ino)
{
	snprintf(out, size, "j/%" PRIx64, ino);
}

/* Read and decode ino's record from the file open as fd: 0, -EAGAIN (no
 * intact record now), -EIO, -ENOMEM.  *fsize: see read_record. */
static int get_from(int fd, uint64_t ino, struct pohm_jrec *r, size_t *fsize)
{
	uint8_t *buf = NULL;
	ssize_t n;
	int rc;

	*fsize = 0;
	n = read_record(fd, &buf);
	if (n < 0)
		return (int)n;
	*fsize = (size_t)n;
	rc = pohm_journal_decode(buf, (size_t)n, ino, r);
	free(buf);
	return rc;
}

/* ino's record from its file j/<ino> (too large for a slot, or of an
 * earlier cache): 0, -ENOENT, -EIO. */
static int file_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r)
{
	char name[64];
	size_t fsize;
	int fd, rc;

	memset(r, 0, sizeof(*r));
	record_name(name, sizeof(name), ino);
	fd = pohm_journal_open_own(j->dirfd, name, O_RDONLY);	/* says once if refused */
	if (fd < 0)
		return fd;
	rc = get_from(fd, ino, r, &fsize);
	if (rc == -EAGAIN) {
		/* A writer is in it, or it was torn: once more after any writer. */
		if (!jslots_rlock(j, ino)) {
			rc = get_from(fd, ino, r, &fsize);
			jslots_runlock(j, ino);
		}
		if (rc == -EAGAIN)
			rc = -EIO;
	}
	pohm_sys_close(fd);
	return rc;
}

int pohm_journal_get(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r)
{
	int k = pohm_journal_may(j);

	if (k) {
		memset(r, 0, sizeof(*r));
		return k;
	}
	k = jslots_find(j, ino, r, pohm_journal_decode);

	if (k == JS_REC)
		return 0;
	if (k < 0)
		return k;
	if (k == JS_NONE && !j->jfiles && j->sfd >= 0)
		return -ENOENT;
	return file_get(j, ino, r);
}

/* ---------------------------------------------------------------- writing */

int pohm_journal_moved(const struct pohm_jrec *cur, const struct pohm_jrec *seen)
{
	return cur->version != seen->version || cur->dversion != seen->dversion ||
	       cur->ldev != seen->ldev || cur->lino != seen->lino || cur->lsize != seen->lsize ||
	       cur->lctime.sec != seen->lctime.sec || cur->lctime.nsec != seen->lctime.nsec ||
	       ((cur->flags ^ seen->flags) & ~POHM_J_LISTED);
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

/* A writer's view of one record, inside jslots_wbegin/_wend: its slot
 * and the record as it is now. */
struct jw {
	struct jsloc l;
	struct pohm_jrec prev;
	int had;		/* prev holds an intact record */
	int file;		/* j/<ino> exists */
	size_t fsize;		/* its record's bytes (had) */
};

/* Lock ino's slot chain and read its record (from the slot, else from
 * j/<ino> when the slot says so or an earlier cache's file may be there).
 * 0 or -errno; w->prev is cleared by w_done. */
static int w_read(struct pohm_journal *j, uint64_t ino, struct jw *w)
{
	char name[64];
	int fd, rc;

	memset(&w->prev, 0, sizeof(w->prev));
	w->had = w->file = 0;
	w->fsize = 0;
	rc = jslots_wlocate(j, ino, &w->l);
	if (rc && rc != -ENOENT)
		return rc;
	if (w->l.kind == JS_REC) {
		w->had = !pohm_journal_decode(w->l.slot + JS_HDR, JS_REC_MAX, ino, &w->prev);
		return 0;
	}
	if (w->l.kind != JS_FILE && !j->jfiles && j->sfd >= 0)
		return 0;
	record_name(name, sizeof(name), ino);
	fd = pohm_sys_openat(j->dirfd, name, O_RDONLY, 0);
	if (fd < 0)
		return 0;
	w->file = 1;
	w->had = !get_from(fd, ino, &w->prev, &w->fsize);
	pohm_sys_close(fd);
	return 0;
}

static void w_done(struct jw *w)
{
	pohm_jrec_clear(&w->prev);
}

/*
 * Write ino's record bytes b in place of what w_read found: into the slot
 * when they fit (then an older j/<ino> goes), else into j/<ino> (its
 * blocks first) with the slot saying so.  One pwrite in the common case.
 */
static int w_write(struct pohm_journal *j, uint64_t ino, struct jw *w, const struct pohm_buf *b)
{
	char name[64];
	ssize_t n;
	int fd, rc;

	record_name(name, sizeof(name), ino);
	if (b->len <= JS_REC_MAX && w->l.off >= 0) {
		rc = jslots_wstore(j, w->l.off, JS_REC, ino, b->p, b->len);
		if (!rc && w->file)
			pohm_sys_unlinkat(j->dirfd, name, 0);	/* the slot holds it now */
		return rc;
	}
	fd = pohm_journal_open_own(j->dirfd, name, O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	rc = w->file && w->had ? grow_first(fd, b->len, w->fsize) : 0;
	if (!rc) {
		n = pohm_sys_pwrite_full(fd, b->p, b->len, 0);
		/* Perhaps part of it went: the check makes that read as torn. */
		rc = n < 0 ? (int)n : 0;
	}
	pohm_sys_close(fd);
	if (!rc && w->l.off >= 0 && w->l.kind != JS_FILE)
		rc = jslots_wstore(j, w->l.off, JS_FILE, ino, NULL, 0);
	return rc;
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
	struct pohm_jrec wr;
	struct jw w;
	int rc;

	rc = pohm_journal_may(j);
	if (rc)
		return rc;
	jslots_wbegin(j);
	rc = w_read(j, r->ino, &w);
	if (rc)
		goto out;
	/* The record being replaced: which index entry it made (torn: none known). */
	if (seen && (!w.had || pohm_journal_moved(&w.prev, seen))) {
		rc = -ESTALE;	/* another writer's word came meanwhile: it stands */
		goto out;
	}
	wr = *r;		/* shares r's csum: never cleared */
	if (w.had && !own_commit) {
		wr.commit_dversion = w.prev.commit_dversion;
		wr.commit_lino = w.prev.commit_lino;
	}
	/* The listing mark (decision 0062) is the listings' and their
	 * clearers' (pohm_journal_update), and a new directory's first put:
	 * over a record, a put keeps the record's while the local directory
	 * is the same one, and drops it with a new one. */
	if (w.had) {
		wr.flags &= ~POHM_J_LISTED;
		wr.listed_ns = 0;
	}
	if (w.had && w.prev.ldev == r->ldev && w.prev.lino == r->lino) {
		/* The push's copy was read before its round trips; a rename of
		 * the file or of a directory above it re-hinted the record
		 * meanwhile: that newer name stays (the push never names). */
		if (own_commit)
			memcpy(wr.hint, w.prev.hint, sizeof(wr.hint));
		wr.flags |= w.prev.flags & POHM_J_LISTED;
		wr.listed_ns = w.prev.listed_ns;
		/* A chgrp's flag set after this copy was read stays (0068). */
		if (!(r->flags & POHM_J_CHGRP_SENT))
			wr.flags |= w.prev.flags & POHM_J_CHGRP;
	} else if (w.had) {
		/* Another local file (a fetch's, a conflict's fresh stub): a
		 * chgrp noted on the old one does not describe it, even in a
		 * copy read before; kept, a push with no change would send
		 * this user's group over the stored one. */
		wr.flags &= ~POHM_J_CHGRP;
	}
	wr.flags &= ~POHM_J_CHGRP_SENT;
	rc = encode(&b, &wr);
	if (rc)
		goto out;
	rc = w_write(j, r->ino, &w, &b);
	if (rc)
		goto out;
	if (w.had && w.prev.lino && (w.prev.lino != r->lino || w.prev.ldev != r->ldev))
		/* The local file was replaced (a fetch renames a new one in): drop its entry. */
		pohm_journal_index_drop(j, w.prev.ldev, w.prev.lino, r->ino);
	if (r->lino && !(w.had && w.prev.lino == r->lino && w.prev.ldev == r->ldev))
		pohm_journal_index_set(j, r->ldev, r->lino, r->ino);
out:
	w_done(&w);
	jslots_wend(j);
	pohm_buf_free(&b);
	return rc;
}

/*
 * pohm_journal_update (make: pohm_journal_update_make): the record as it
 * is now, under its lock; fn's edit is written in place, the index
 * follows a change of the local file, and the last commit stays (only
 * pohm_journal_put_commit writes it).
 */
static int update_in(struct pohm_journal *j, uint64_t ino,
		     int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg, int make)
{
	struct pohm_buf b = POHM_BUF_INIT;
	uint64_t ldev, lino, cdv, cli;
	struct jw w;
	int rc;

	rc = w_read(j, ino, &w);
	if (!rc && !w.had && !make)
		rc = -ENOENT;	/* none, or torn: nothing to change */
	if (rc)
		goto out;
	if (!w.had) {
		pohm_jrec_clear(&w.prev);
		memset(&w.prev, 0, sizeof(w.prev));	/* fn's to make: ino 0 says so */
	}
	ldev = w.prev.ldev;
	lino = w.prev.lino;
	cdv = w.prev.commit_dversion;
	cli = w.prev.commit_lino;
	rc = fn(&w.prev, arg);
	if (rc)
		goto out;
	w.prev.ino = ino;
	w.prev.commit_dversion = cdv;
	w.prev.commit_lino = cli;
	rc = encode(&b, &w.prev);
	if (!rc)
		rc = w_write(j, ino, &w, &b);
	if (rc || (ldev == w.prev.ldev && lino == w.prev.lino))
		goto out;
	if (lino)
		pohm_journal_index_drop(j, ldev, lino, ino);
	if (w.prev.lino)
		pohm_journal_index_set(j, w.prev.ldev, w.prev.lino, ino);
out:
	w_done(&w);
	pohm_buf_free(&b);
	return rc;
}

/* update_in in a writer's section of its own. */
static int update_rec(struct pohm_journal *j, uint64_t ino,
		      int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg, int make)
{
	int rc = pohm_journal_may(j);

	if (rc)
		return rc;
	jslots_wbegin(j);
	rc = update_in(j, ino, fn, arg, make);
	jslots_wend(j);
	return rc;
}

int pohm_journal_update(struct pohm_journal *j, uint64_t ino,
			int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg)
{
	return update_rec(j, ino, fn, arg, 0);
}

int pohm_journal_update_make(struct pohm_journal *j, uint64_t ino,
			     int (*fn)(struct pohm_jrec *r, const void *arg), const void *arg)
{
	return update_rec(j, ino, fn, arg, 1);
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

int pohm_journal_touch_many(struct pohm_journal *j, size_t n, const uint64_t *inos,
			    const uint64_t *versions, uint64_t validated_ns)
{
	size_t i;
	int rc = n ? pohm_journal_may(j) : 0, whole;

	if (rc || !n)
		return rc;
	/* Level 0 whole, not waiting for it (a writer of another process
	 * holding a bucket of it: no wait behind it, nor a wait that others'
	 * buckets could starve).  Without it, a section a record: one section
	 * holding the chains of several records while it waits for the next
	 * one's could deadlock with a writer of another process (its level-0
	 * bucket held, waiting for a later level's bucket this section
	 * holds). */
	jslots_wbegin(j);
	whole = n > 1 && !jslots_wlock_level0(j);
	if (!whole)
		jslots_wend(j);
	for (i = 0; i < n; i++) {
		struct touch_arg t = { versions[i], validated_ns };

		if (whole)
			update_in(j, inos[i], touch_fn, &t, 0);
		else
			update_rec(j, inos[i], touch_fn, &t, 0);
	}
	if (whole)
		jslots_wend(j);
	return 0;
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
	char name[64];
	struct jw w;
	int rc, gone = 0;

	rc = pohm_journal_may(j);
	if (rc)
		return rc;
	record_name(name, sizeof(name), ino);
	jslots_wbegin(j);
	rc = w_read(j, ino, &w);
	if (rc)
		goto out;
	if (w.had && w.prev.lino)
		pohm_journal_index_drop(j, w.prev.ldev, w.prev.lino, ino);
	if (w.l.kind != JS_NONE) {
		rc = jslots_wstore(j, w.l.off, JS_FREE, 0, NULL, 0);
		if (rc)
			goto out;
		gone = 1;
	}
	if (w.file || w.l.kind == JS_FILE)
		gone |= !pohm_sys_unlinkat(j->dirfd, name, 0);
	rc = gone ? 0 : -ENOENT;
out:
	w_done(&w);
	jslots_wend(j);
	return rc;
}

struct each_arg {
	struct pohm_journal *j;
	int (*fn)(void *arg, struct pohm_jrec *r);
	void *arg;
};

static int each_slot(void *arg, int kind, uint64_t ino, const uint8_t *slot)
{
	struct each_arg *e = arg;
	struct pohm_jrec r;
	int rc;

	rc = kind == JS_REC ? pohm_journal_decode(slot + JS_HDR, JS_REC_MAX, ino, &r) : -EAGAIN;
	if (rc == -EAGAIN)	/* in j/<ino>, or a writer is in the slot */
		rc = pohm_journal_get(e->j, ino, &r);
	if (rc)
		return 0;
	rc = e->fn(e->arg, &r);
	pohm_jrec_clear(&r);
	return rc;
}

/* Call fn for every file j/<ino> (the slot says JS_NONE only: one with a
 * slot was seen through it); with move, put what fits into slots instead
 * (the first open of an earlier cache).  fn's value, or 0; *left: files
 * that stay. */
static int each_file(struct pohm_journal *j, int (*fn)(void *arg, struct pohm_jrec *r), void *arg,
		     int move, int *left);

int pohm_journal_each(struct pohm_journal *j, int (*fn)(void *arg, struct pohm_jrec *r), void *arg)
{
	struct each_arg e = { j, fn, arg };
	int rc, left;

	rc = jslots_each(j, each_slot, &e);
	if (rc || (!j->jfiles && j->sfd >= 0))
		return rc;
	return each_file(j, fn, arg, 0, &left);
}

/* Move one record file of an earlier cache into a slot (under the
 * writers' section): 0 moved or no longer there, 1 it stays (too large,
 * damaged: its slot says JS_FILE; or no slot left). */
static int move_file(struct pohm_journal *j, uint64_t ino)
{
	struct pohm_buf b = POHM_BUF_INIT;
	struct jw w;
	int rc = 1;

	jslots_wbegin(j);
	if (w_read(j, ino, &w) || w.l.off < 0)
		goto out;
	if (w.l.kind == JS_REC) {
		/* The slot was written after the file: it holds the record. */
		char name[64];

		record_name(name, sizeof(name), ino);
		pohm_sys_unlinkat(j->dirfd, name, 0);
		rc = 0;
		goto out;
	}
	if (!w.file) {
		rc = 0;
		goto out;
	}
	if (w.had && !encode(&b, &w.prev) && b.len <= JS_REC_MAX) {
		rc = w_write(j, ino, &w, &b) ? 1 : 0;
		goto out;
	}
	/* Too large or damaged: it stays, read from j/ through its slot. */
	rc = w.l.kind == JS_FILE ? 0 : !!jslots_wstore(j, w.l.off, JS_FILE, ino, NULL, 0);
out:
	w_done(&w);
	jslots_wend(j);
	pohm_buf_free(&b);
	return rc;
}

static int each_file(struct pohm_journal *j, int (*fn)(void *arg, struct pohm_jrec *r), void *arg,
		     int move, int *left)
{
	char buf[8192];
	int fd, rc = 0;
	long n;

	*left = 0;
	fd = pohm_sys_openat(j->dirfd, "j", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return move ? fd : 0;
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
			if (*end)
				continue;
			if (move) {
				*left |= move_file(j, ino);
				continue;
			}
			if (jslots_find(j, ino, &r, pohm_journal_decode) != JS_NONE) {
				pohm_jrec_clear(&r);
				continue;	/* seen through its slot */
			}
			if (file_get(j, ino, &r))
				continue;
			rc = fn(arg, &r);
			pohm_jrec_clear(&r);
		}
	}
	pohm_sys_close(fd);
	return rc;
}

/* The first open of a cache with record files j/<ino> (an earlier
 * format's): move what fits into slots; once none is left to read, the
 * slot file's header says so and no later open looks. */
static void migrate_files(struct pohm_journal *j)
{
	int left = 0;

	if (j->sfd < 0 || !j->jfiles)
		return;
	if (each_file(j, NULL, NULL, 1, &left) || left)
		return;
	jslots_set_migrated(j);
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

struct settle_arg {
	const struct pohm_jrec *seen;
	const struct stat *st;
	uint64_t checked_ns;
};

/* Still the copy the caller hashed: the same local file and state, the same
 * data identity, and nobody recorded it again meanwhile. */
static int settle_fn(struct pohm_jrec *r, const void *arg)
{
	const struct settle_arg *a = arg;
	const struct pohm_jrec *s = a->seen;

	if (r->ldev != (uint64_t)a->st->st_dev || pohm_journal_is_dirty(r, a->st) != 2 ||
	    r->recorded_ns != s->recorded_ns || r->dversion != s->dversion || r->size != s->size ||
	    r->nchunks != s->nchunks || r->chunk_shift != s->chunk_shift)
		return -ESTALE;
	r->recorded_ns = a->checked_ns;
	return 0;
}

int pohm_journal_settle_racy(struct pohm_journal *j, const struct pohm_jrec *seen,
			     const struct stat *st, uint64_t checked_ns)
{
	struct settle_arg a = { seen, st, checked_ns };
	int64_t ct = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;

	/* A write after checked_ns moves the ctime past this tick (git's rule
	 * for a racily clean entry written again). */
	if ((int64_t)checked_ns - ct < RACY_NS)
		return -EAGAIN;
	return pohm_journal_update(j, seen->ino, settle_fn, &a);
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
