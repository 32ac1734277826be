/*
 * jslots.c — the journal's slot file cache_dir/j.slots (jslots.h): the
 * records of journal.c in fixed slots of one file, opened once per
 * process, instead of one file per inode.
 *
 * Layout (little-endian):
 *
 *   0     the file header, 4096 bytes, of which 24 are used: u32 magic
 *         "PHSF", u32 version 1, u32 flags (1: no record file j/<ino> of
 *         the earlier format is left to read), u32 0, u64 check.
 *   4096  levels of buckets.  Level L has 1024 << min(L, 8) buckets; a
 *         bucket is JS_PER = 4 slots of JS_SLOT = 1024 bytes (4 KiB,
 *         aligned: one pread).  An inode's bucket in level L is a hash of
 *         (ino, L).  The file is sparse: only slots ever written take
 *         blocks; writers keep it long enough to cover every level they
 *         wrote in, so a bucket is read whole with one pread.
 *   slot  u32 magic "PHS1", u32 kind, u64 ino, u64 check of the three
 *         (never 0), then for JS_REC the record as journal.c encodes it
 *         (format 2 with its own length and check, and the commit
 *         trailer): at most JS_REC_MAX bytes.  All zeros: empty (never
 *         used).  JS_FILE: ino's record is too large for a slot and is in
 *         j/<ino>.  JS_FREE (ino 0): a deleted record, reusable.
 *
 * An inode is in at most one slot: a writer scans the chain of its
 * buckets, level by level, up to the first bucket with an empty slot (a
 * bucket that was never full: no inode of it went further), and takes
 * the inode's slot if it has one, else the first free or empty slot it
 * passed.  A slot changes owner only through JS_FREE (pohm_journal_del).
 * Readers do the same scan without a lock: usually one bucket of level 0,
 * copied from the process's read-only mapping of that level (jmap.c,
 * decision 0069; a later level, or a file that cannot be mapped: one
 * pread).  Writers read the buckets they locked the same way.
 *
 * Locks: a writer (journal.c between jslots_wbegin and jslots_wend) holds
 * the process's writers' mutex (one for the process, every journal: the
 * record locks below belong to the process, so its threads must not meet
 * in them) and POSIX record write locks (F_SETLKW) on the 4 KiB of each
 * bucket of the chain it scans, taken on the fd opened once per process
 * and released together at wend (a batch of records,
 * pohm_journal_touch_many, takes all of level 0 at once first without
 * waiting: jslots_wlock_level0; when another process holds a bucket of
 * it, a section a record instead).  POSIX locks, not OFD: a fork child
 * shares the parent's open file description but not its POSIX locks, so
 * parent and child exclude each other with one fd; the price is that
 * closing any fd of j.slots drops them, and the library opens it once.
 * The kernel drops them when a writer dies.  A reader that meets a torn
 * slot (check or record check failing: a writer is in it, or a crash tore
 * it) reads the bucket again under a read lock (and the mutex), which
 * waits for the writer; still torn is damage: -EIO for the inode whose
 * slot it is, and for an inode whose chain ends there without finding it
 * (its owner cannot be known; a slot header lies within one 512-byte
 * sector, which a crash does not tear).  A slot's writes are one pwrite
 * of header and record.
 */
#include "jslots.h"
#include "jindex.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "sys.h"
#include "wire.h"

#define SMAGIC 0x31534850u	/* "PHS1": a slot */
#define FMAGIC 0x46534850u	/* "PHSF": the file header */
#define FVERSION 1u
#define F_MIGRATED 1u
#define JS_HEAD 4096		/* the file header's bytes */
#define JS_NB0 1024u		/* buckets of level 0 (4 MiB, 4096 slots) */
#define JS_LEVELS 24
#define JS_PAD 32		/* zeros written after a record: a trailer's bytes */
#define GROW_BYTE ((off_t)1 << 60)	/* locked by growers of the file */

/* Every journal writer of this process: see the top comment.  Guards the
 * POSIX record locks this process holds on j.slots. */
static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;
/* Does this thread hold writers?  (Its own: thread-local.) */
static __thread int holding;
/* The writer holding writers holds level 0's write lock whole
 * (jslots_wlock_level0): wlocate takes no lock of its own there.  Guarded
 * by writers (only its holder reads or changes it). */
static int level0_held;

int jslots_mutex_enter(void)
{
	if (holding)
		return 0;
	pthread_mutex_lock(&writers);
	holding = 1;
	return 1;
}

void jslots_mutex_exit(void)
{
	holding = 0;
	pthread_mutex_unlock(&writers);
}

static uint64_t level_nb(int level)
{
	return (uint64_t)JS_NB0 << (level < 8 ? level : 8);
}

static off_t level_off(int level)
{
	off_t off = JS_HEAD;
	int k;

	for (k = 0; k < level; k++)
		off += (off_t)(level_nb(k) * JS_BUCKET);
	return off;
}

off_t jslots_bucket_off(uint64_t ino, int level)
{
	uint64_t h = jfmix(ino + 0x9e3779b97f4a7c15ULL * (uint64_t)(level + 1));

	return level_off(level) + (off_t)((h % level_nb(level)) * JS_BUCKET);
}

static uint64_t hdr_check(uint32_t magic, uint32_t kind, uint64_t ino)
{
	return jfmix(jfmix(((uint64_t)kind << 32 | magic) ^ 0x243f6a8885a308d3ULL) ^ ino) | 1;
}

int jslots_slot_hdr(const uint8_t *p, uint64_t *ino)
{
	struct pohm_rd d = pohm_rd_make(p, JS_HDR);
	uint32_t magic, kind;
	uint64_t ck;

	magic = pohm_rd_u32(&d);
	kind = pohm_rd_u32(&d);
	*ino = pohm_rd_u64(&d);
	ck = pohm_rd_u64(&d);
	if (d.err)
		return -1;
	if (!magic && !kind && !*ino && !ck)
		return JS_NONE;
	if (magic != SMAGIC) {
		if ((magic & 0xffffffu) == (SMAGIC & 0xffffffu) && (magic >> 24) > '1' &&
		    (magic >> 24) <= '9')
			return -2;
		return -1;
	}
	if (ck != hdr_check(magic, kind, *ino) || kind < JS_REC || kind > JS_FREE)
		return -1;
	return (int)kind;
}

/* Read the bucket at off into b, whole (past the end: empty): level 0
 * from the mapping (jmap.c), a later level with a pread. */
static int read_bucket(struct pohm_journal *j, off_t off, uint8_t *b)
{
	ssize_t n;

	if (jmap_read(&j->smap, j->sfd, (size_t)level_off(1), b, JS_BUCKET, off))
		return 0;
	n = pohm_sys_pread_full(j->sfd, b, JS_BUCKET, off);

	if (n < 0)
		return (int)n;
	memset(b + n, 0, JS_BUCKET - (size_t)n);
	return 0;
}

/* Make the file at least want bytes long (sparse), under the grow lock
 * (growers never shrink what another grew).  The caller holds the mutex. */
static void cover(int fd, off_t want)
{
	struct stat st;

	if (pohm_sys_lock_range(fd, GROW_BYTE, 1, F_WRLCK, 0))
		return;
	if (!pohm_sys_fstat(fd, &st) && st.st_size < want)
		pohm_sys_ftruncate(fd, want);
	pohm_sys_lock_range(fd, GROW_BYTE, 1, F_UNLCK, 0);
}

static void put_hdr(uint8_t *p, uint32_t magic, uint32_t kind, uint64_t ino)
{
	pohm_st32(p, magic);
	pohm_st32(p + 4, kind);
	pohm_st64(p + 8, ino);
	pohm_st64(p + 16, hdr_check(magic, kind, ino));
}

int jslots_open(struct pohm_journal *j)
{
	uint8_t h[24];
	struct pohm_rd d;
	struct stat st;
	ssize_t n;
	int fd;

	j->jfiles = 1;
	fd = pohm_journal_open_own(j->dirfd, JSLOTS, O_RDWR | O_CREAT);
	if (fd < 0)
		fd = pohm_journal_open_own(j->dirfd, JSLOTS, O_RDONLY);	/* a cache we may only read */
	if (fd < 0)
		return 0;
	fd = pohm_sys_move_high(fd);
	if (fd < 0 || pohm_own_set(&j->sfd, fd) < 0)
		return 0;
	n = pohm_sys_pread_full(j->sfd, h, sizeof(h), 0);
	if (n == (ssize_t)sizeof(h)) {
		d = pohm_rd_make(h, sizeof(h));
		uint32_t magic = pohm_rd_u32(&d), version = pohm_rd_u32(&d);
		uint32_t flags = pohm_rd_u32(&d);

		pohm_rd_u32(&d);
		if (magic == FMAGIC && version > FVERSION) {
			pohm_warn("journal: %s of format %u (a newer libpohmelfs); this one reads "
				  "format %u", JSLOTS, version, FVERSION);
			pohm_own_close(&j->sfd);
			return 0;
		}
		if (magic == FMAGIC && pohm_rd_u64(&d) == jfmix(((uint64_t)flags << 32) ^ FMAGIC) &&
		    (flags & F_MIGRATED)) {
			j->jfiles = 0;
			return 0;
		}
	}
	/* A new file (or one whose header was never written): cover level 0. */
	if (!pohm_sys_fstat(j->sfd, &st) && st.st_size < level_off(1)) {
		int took = jslots_mutex_enter();

		cover(j->sfd, level_off(1));
		if (took)
			jslots_mutex_exit();
	}
	return 0;
}

int jslots_set_migrated(struct pohm_journal *j)
{
	uint8_t h[24];
	ssize_t n;

	if (j->sfd < 0)
		return -ENOENT;
	pohm_st32(h, FMAGIC);
	pohm_st32(h + 4, FVERSION);
	pohm_st32(h + 8, F_MIGRATED);
	pohm_st32(h + 12, 0);
	pohm_st64(h + 16, jfmix(((uint64_t)F_MIGRATED << 32) ^ FMAGIC));
	n = pohm_sys_pwrite_full(j->sfd, h, sizeof(h), 0);
	if (n < 0)
		return (int)n;
	j->jfiles = 0;
	return 0;
}

void jslots_close(struct pohm_journal *j)
{
	if (j->sfd >= 0)
		jmap_close(&j->smap, (size_t)level_off(1));
	pohm_own_close(&j->sfd);
}

void jslots_atfork_child(void)
{
	pthread_mutex_init(&writers, NULL);
	holding = 0;
	level0_held = 0;	/* the parent's locks are not the child's */
}

/*
 * Scan the bucket b for ino: the slot index and its kind (*kind), -1 not
 * there.  *free_i: the first empty or free slot; *has_empty; *torn: a
 * slot whose header fails its check (or is of a newer format: *newer).
 */
static int scan_bucket(const uint8_t *b, uint64_t ino, int *kind, int *free_i, int *has_empty,
		       int *torn)
{
	uint64_t got;
	int i, k;

	*free_i = -1;
	*has_empty = *torn = 0;
	for (i = 0; i < JS_PER; i++) {
		k = jslots_slot_hdr(b + i * JS_SLOT, &got);
		if (k < 0) {
			*torn = 1;
			continue;
		}
		if (k == JS_NONE || k == JS_FREE) {
			*has_empty |= k == JS_NONE;
			if (*free_i < 0)
				*free_i = i;
			continue;
		}
		if (got == ino) {
			*kind = k;
			return i;
		}
	}
	return -1;
}

#define GO_ON 100

/* The outcome of one bucket for a reader: ino's slot decoded (JS_REC,
 * JS_FILE), JS_NONE (the chain ends here), GO_ON, -EAGAIN (torn). */
static int look(const uint8_t *b, uint64_t ino, struct pohm_jrec *r, jslots_decode_fn decode)
{
	int i, kind = 0, free_i, has_empty, torn, rc;

	i = scan_bucket(b, ino, &kind, &free_i, &has_empty, &torn);
	if (i >= 0) {
		if (kind != JS_REC)
			return kind;
		rc = decode(b + i * JS_SLOT + JS_HDR, JS_REC_MAX, ino, r);
		return rc ? rc : JS_REC;
	}
	if (torn)
		return -EAGAIN;
	return has_empty ? JS_NONE : GO_ON;
}

int jslots_find(struct pohm_journal *j, uint64_t ino, struct pohm_jrec *r, jslots_decode_fn decode)
{
	uint8_t b[JS_BUCKET];
	int level, rc;

	memset(r, 0, sizeof(*r));
	if (j->sfd < 0)
		return JS_NONE;
	for (level = 0; level < JS_LEVELS; level++) {
		off_t off = jslots_bucket_off(ino, level);

		rc = read_bucket(j, off, b);
		if (rc)
			return rc;
		rc = look(b, ino, r, decode);
		if (rc == -EAGAIN) {
			/* A writer is in it, or it was torn: once more after any writer. */
			int took = jslots_mutex_enter();

			rc = pohm_sys_lock_range(j->sfd, off, JS_BUCKET, F_RDLCK, 0);
			if (!rc)
				rc = read_bucket(j, off, b);
			if (!rc)
				rc = look(b, ino, r, decode);
			pohm_sys_lock_range(j->sfd, off, JS_BUCKET, F_UNLCK, 0);
			if (took)
				jslots_mutex_exit();
			if (rc == -EAGAIN)
				rc = -EIO;
		}
		if (rc != GO_ON)
			return rc;
	}
	return JS_NONE;
}

void jslots_wbegin(struct pohm_journal *j)
{
	(void)j;
	jslots_mutex_enter();
}

int jslots_wlock_level0(struct pohm_journal *j)
{
	int rc;

	if (j->sfd < 0)
		return -ENOENT;
	rc = pohm_sys_trylock_range(j->sfd, level_off(0), level_off(1) - level_off(0), F_WRLCK);
	if (!rc)
		level0_held = 1;
	return rc;
}

void jslots_wend(struct pohm_journal *j)
{
	level0_held = 0;
	if (j->sfd >= 0)
		pohm_sys_lock_range(j->sfd, 0, 0, F_UNLCK, 0);	/* every bucket this writer locked */
	jslots_mutex_exit();
}

int jslots_wlocate(struct pohm_journal *j, uint64_t ino, struct jsloc *l)
{
	uint8_t b[JS_BUCKET];
	int level, i, kind = 0, free_i, has_empty, torn, rc;

	l->off = -1;
	l->kind = JS_NONE;
	if (j->sfd < 0)
		return -ENOENT;
	for (level = 0; level < JS_LEVELS; level++) {
		off_t off = jslots_bucket_off(ino, level);

		rc = level || !level0_held ? pohm_sys_lock_range(j->sfd, off, JS_BUCKET, F_WRLCK, 0) : 0;
		if (!rc)
			rc = read_bucket(j, off, b);
		if (rc)
			return rc;
		i = scan_bucket(b, ino, &kind, &free_i, &has_empty, &torn);
		if (i >= 0) {
			l->off = off + (off_t)i * JS_SLOT;
			l->kind = kind;
			memcpy(l->slot, b + i * JS_SLOT, JS_SLOT);
			return 0;
		}
		if (free_i >= 0 && l->off < 0) {
			l->off = off + (off_t)free_i * JS_SLOT;
			if (level > 0)
				cover(j->sfd, level_off(level + 1));
		}
		if (has_empty)
			return 0;	/* never full: ino is in no later level */
	}
	if (l->off < 0)
		pohm_warn("journal: %s is full (%d levels); records go to j/", JSLOTS, JS_LEVELS);
	return 0;
}

int jslots_wstore(struct pohm_journal *j, off_t off, int kind, uint64_t ino, const uint8_t *rec,
		  size_t len)
{
	uint8_t s[JS_SLOT];
	size_t pad;
	ssize_t n;

	if (len > JS_REC_MAX)
		return -EFBIG;
	put_hdr(s, SMAGIC, (uint32_t)kind, kind == JS_FREE ? 0 : ino);
	if (len)
		memcpy(s + JS_HDR, rec, len);
	/* Zeros where a commit trailer would be: one left by an earlier record
	 * of the slot must not pass for this one's (a freed slot taken again by
	 * the same record: its check, to which a trailer is bound, is equal). */
	pad = JS_SLOT - JS_HDR - len < JS_PAD ? JS_SLOT - JS_HDR - len : JS_PAD;
	memset(s + JS_HDR + len, 0, pad);
	n = pohm_sys_pwrite_full(j->sfd, s, JS_HDR + len + pad, off);
	return n < 0 ? (int)n : 0;
}

int jslots_each(struct pohm_journal *j,
		int (*fn)(void *arg, int kind, uint64_t ino, const uint8_t *slot), void *arg)
{
	enum { CHUNK = 64 * JS_BUCKET };
	uint8_t *buf;
	off_t off = JS_HEAD;
	ssize_t n, i;
	uint64_t ino;
	int k, rc = 0;

	if (j->sfd < 0)
		return 0;
	buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		/* The file is sparse (levels of 4 MiB and more, few slots
		 * used): read only where there is data.  A file system without
		 * SEEK_DATA says the whole file is data. */
		off_t d = pohm_sys_lseek(j->sfd, off, SEEK_DATA);

		if (d == -ENXIO)
			break;		/* no data past off */
		if (d > off)
			off = d & ~(off_t)(JS_BUCKET - 1);
		if (rc || (n = pohm_sys_pread_full(j->sfd, buf, CHUNK, off)) <= 0)
			break;
		for (i = 0; !rc && i + JS_SLOT <= n; i += JS_SLOT) {
			k = jslots_slot_hdr(buf + i, &ino);
			if (k == JS_REC || k == JS_FILE)
				rc = fn(arg, k, ino, buf + i);
		}
		off += n;
		if (n < CHUNK)
			break;
	}
	free(buf);
	return rc;
}

int jslots_rlock(struct pohm_journal *j, uint64_t ino)
{
	int rc;

	if (j->sfd < 0)
		return -ENOENT;
	if (!jslots_mutex_enter())
		return -EDEADLK;	/* inside a writer's section: never waits for itself */
	rc = pohm_sys_lock_range(j->sfd, jslots_bucket_off(ino, 0), JS_BUCKET, F_RDLCK, 0);
	if (rc)
		jslots_mutex_exit();
	return rc;
}

void jslots_runlock(struct pohm_journal *j, uint64_t ino)
{
	pohm_sys_lock_range(j->sfd, jslots_bucket_off(ino, 0), JS_BUCKET, F_UNLCK, 0);
	jslots_mutex_exit();
}
