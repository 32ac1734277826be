/*
 * jindex.c — the journal's index: local file (dev, ino) → storage inode
 * (journal.h), in the fixed-slot file cache_dir/x.idx.
 *
 * Replaces the x/<dev>.<ino> symlinks of earlier sessions (issue 18: no
 * symlinks as markers).  Layout: levels of XBUCKETS buckets, a bucket
 * XSLOTS slots of 32 bytes (dev, lino, ino, check; little-endian), so a
 * bucket is 512 bytes, aligned, never across a page.  A key's bucket in
 * level L is a hash of (dev, lino, L); the file is sparse: only buckets
 * ever written take blocks.
 *
 *   - A slot of all zeros is empty (never used).  A slot whose ino is 0
 *     is a dropped entry: its key stays, so a key is in at most one slot.
 *   - A key goes to the first level whose bucket has its key or a free
 *     slot; a bucket with an empty slot was never full, so no key of it
 *     went further: a lookup stops there.  Usually one bucket of level
 *     0, copied from the process's read-only mapping of that level
 *     (jmap.c, decision 0069), else one pread.
 *   - Writers lock the byte ranges of the buckets they read, level by
 *     level upwards, then one pwrite of a slot.  Since session 14 the
 *     locks are POSIX record locks on the journal's kept fd, under
 *     jslots.c's writers' mutex (as j.slots's: decision 0056), all
 *     dropped by one F_UNLCK; the kernel drops them with a dead writer,
 *     and they conflict with the OFD locks earlier libraries take on a
 *     fresh open (still the way when this process could open x.idx only
 *     read-only).  Readers take no lock; a slot whose check fails (a
 *     writer is in it) is read once more under a read lock on the kept fd
 *     (never a second fd: its close would drop the process's POSIX locks).
 *
 * One fd per journal, opened at pohm_journal_open.  A cache
 * made by the earlier format has the directory x/: it is moved into the
 * file at the first open that sees it (each link inserted unless the key
 * is there already, then removed), and lookups of that process fall back
 * to it meanwhile.
 */
#include "jindex.h"
#include "jslots.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "wire.h"

#define XSLOT 32
#define XSLOTS 16
#define XBUCKET (XSLOT * XSLOTS)
#define XBUCKETS 4096u			/* per level: 65536 slots, 2 MiB */
#define XLEVELS 64			/* 4 M local files at most */
#define XLEVEL ((off_t)XBUCKET * XBUCKETS)

struct slot {
	uint64_t dev, lino, ino;
};

static uint64_t slot_check(uint64_t dev, uint64_t lino, uint64_t ino)
{
	return jfmix(jfmix(jfmix(dev ^ 0x5851f42d4c957f2dULL) ^ lino) ^ ino) | 1;	/* never 0 */
}

off_t jindex_bucket_off(uint64_t dev, uint64_t lino, int level)
{
	uint64_t h = jfmix(jfmix(dev + 0x9e3779b97f4a7c15ULL * (uint64_t)(level + 1)) ^ lino);

	return (off_t)level * XLEVEL + (off_t)(h % XBUCKETS) * XBUCKET;
}

/* The slot at the cursor (and step past it): 1 empty, 0 a slot (in *s),
 * -1 torn (or cut short).  Taken whole (pohm_rd_sub: a lookup scans up to
 * 16 slots). */
static int get_slot(struct pohm_rd *d, struct slot *s)
{
	struct pohm_rd f = pohm_rd_sub(d, XSLOT);
	uint64_t ck;

	s->dev = pohm_rd_u64(&f);
	s->lino = pohm_rd_u64(&f);
	s->ino = pohm_rd_u64(&f);
	ck = pohm_rd_u64(&f);
	if (f.err)
		return -1;
	if (!ck && !s->dev && !s->lino && !s->ino)
		return 1;
	return ck == slot_check(s->dev, s->lino, s->ino) ? 0 : -1;
}

/* The bytes of a slot, in the order get_slot reads them; 0 or -ENOMEM. */
static int put_slot(struct pohm_buf *b, uint64_t dev, uint64_t lino, uint64_t ino)
{
	int rc = pohm_buf_reserve(b, XSLOT);

	if (rc)
		return rc;	/* then no put below can fail */
	pohm_buf_put_u64(b, dev);
	pohm_buf_put_u64(b, lino);
	pohm_buf_put_u64(b, ino);
	return pohm_buf_put_u64(b, slot_check(dev, lino, ino));
}

/* Lock (type) or unlock a bucket: POSIX record locks on the journal's own
 * x.idx fd (posix: under jslots' writers' mutex, as j.slots's), else OFD
 * locks on a fresh open (a cache whose x.idx this process could only open
 * read-only). */
static int lock_bucket(int fd, off_t off, short type, int posix)
{
	return pohm_sys_lock_range(fd, off, XBUCKET, type, !posix);
}

/* Read the bucket at off of fd into b (past the end of the file: empty):
 * level 0 of the kept fd from its mapping (jmap.c, made only when the
 * file covers the level), else a pread.  0, 1 when the file ended before
 * the bucket did, or -errno. */
static int read_bucket(struct pohm_journal *j, int fd, off_t off, uint8_t *b)
{
	ssize_t n;

	if (fd == j->xfd && jmap_read(&j->xmap, fd, (size_t)XLEVEL, b, XBUCKET, off))
		return 0;
	n = pohm_sys_pread_full(fd, b, XBUCKET, off);

	if (n < 0)
		return (int)n;
	memset(b + n, 0, XBUCKET - (size_t)n);
	return n < XBUCKET;
}

/*
 * The file covers every level up to the one at off, whole (sparse): a
 * bucket never straddles the end of the file, so a lookup is one pread
 * (a short one would be retried).  Growers serialize on a lock of the
 * byte past the last level, so none shrinks what another grew.
 */
static void cover_level(int fd, off_t off, int posix)
{
	off_t want = (off / XLEVEL + 1) * XLEVEL, grow = (off_t)XLEVELS * XLEVEL;
	struct stat st;

	if (pohm_sys_lock_range(fd, grow, 1, F_WRLCK, !posix))
		return;
	if (!pohm_sys_fstat(fd, &st) && st.st_size < want)
		pohm_sys_ftruncate(fd, want);
	pohm_sys_lock_range(fd, grow, 1, F_UNLCK, !posix);
}

int jindex_bucket_find(const uint8_t *b, size_t n, uint64_t dev, uint64_t lino, uint64_t *ino,
		       int *free_i, int *has_empty)
{
	struct pohm_rd d = pohm_rd_make(b, n);
	struct slot s;
	int i, k, torn = 0;

	*free_i = -1;
	*has_empty = 0;
	*ino = 0;
	for (i = 0; i < XSLOTS; i++) {
		k = get_slot(&d, &s);
		if (k < 0) {
			torn = 1;
			continue;
		}
		if (k == 1) {
			*has_empty = 1;
			if (*free_i < 0)
				*free_i = i;
			continue;
		}
		if (s.dev == dev && s.lino == lino) {
			*ino = s.ino;
			return i;
		}
		if (!s.ino && *free_i < 0)
			*free_i = i;
	}
	return torn ? -2 : -1;
}

/*
 * The entry this thread last wrote or found (pohm_journal_local_hint): a
 * hint, never an answer; its users confirm it from the record, which
 * names its one local file.  Thread-local: no lock.
 */
static __thread struct {
	const struct pohm_journal *j;
	uint64_t dev, lino, ino;
} last;

static void hint_set(const struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t ino)
{
	last.j = j;
	last.dev = dev;
	last.lino = lino;
	last.ino = ino;
}

int pohm_journal_local_hint(const struct pohm_journal *j, uint64_t dev, uint64_t lino,
			    uint64_t *ino)
{
	if (last.j != j || !last.ino || last.dev != dev || last.lino != lino)
		return -ENOENT;
	*ino = last.ino;
	return 0;
}

/* Legacy x/<dev>.<ino> symlink: 0 and *ino, or -ENOENT. */
static int legacy_get(struct pohm_journal *j, const char *name, uint64_t *ino)
{
	char target[32], *end;
	ssize_t n = pohm_sys_readlinkat(j->dirfd, name, target, sizeof(target) - 1);

	if (n <= 0)
		return -ENOENT;
	target[n] = '\0';
	*ino = strtoull(target, &end, 16);
	return *end || !*ino ? -ENOENT : 0;
}

int pohm_journal_lookup_local(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t *ino)
{
	uint8_t b[XBUCKET];
	uint64_t got;
	int level, i, free_i, has_empty, took;
	char name[96];

	for (level = 0; j->xfd >= 0 && level < XLEVELS; level++) {
		off_t off = jindex_bucket_off(dev, lino, level);

		if (read_bucket(j, j->xfd, off, b) < 0)
			break;
		i = jindex_bucket_find(b, XBUCKET, dev, lino, &got, &free_i, &has_empty);
		if (i == -2) {
			/* A writer is in this bucket: once more after it, under a
			 * read lock on the kept fd (a second fd's close would drop
			 * this process's POSIX locks on x.idx). */
			took = jslots_mutex_enter();
			if (!lock_bucket(j->xfd, off, F_RDLCK, 1) && read_bucket(j, j->xfd, off, b) >= 0)
				i = jindex_bucket_find(b, XBUCKET, dev, lino, &got, &free_i, &has_empty);
			lock_bucket(j->xfd, off, F_UNLCK, 1);
			if (took)
				jslots_mutex_exit();
		}
		if (i >= 0) {
			*ino = got;
			hint_set(j, dev, lino, got);
			return got ? 0 : -ENOENT;
		}
		if (has_empty || i == -2)
			break;
	}
	if (!j->legacy)
		return -ENOENT;
	snprintf(name, sizeof(name), "x/%" PRIx64 ".%" PRIx64, dev, lino);
	return legacy_get(j, name, ino);
}

/* Write slot i of the bucket at off. */
static int write_slot(int fd, off_t off, int i, uint64_t dev, uint64_t lino, uint64_t ino)
{
	struct pohm_buf b = POHM_BUF_INIT;
	ssize_t n;
	int rc;

	rc = put_slot(&b, dev, lino, ino);
	if (rc)
		goto out;
	n = pohm_sys_pwrite_full(fd, b.p, b.len, off + (off_t)i * XSLOT);
	rc = n < 0 ? (int)n : 0;
out:
	pohm_buf_free(&b);
	return rc;
}

/*
 * Change the entry of (dev, lino) under the buckets' locks.  mode SET:
 * make it ino; ADD: make it ino unless the key is there, even dropped (a
 * migrated old link never replaces a newer word); DROP: drop it if it is
 * ino.
 */
enum { XSET, XADD, XDROP };

static int index_change(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t ino, int mode)
{
	uint8_t b[XBUCKET];
	uint64_t got;
	off_t free_off = -1;
	int fd, level, i, free_i, free_at = -1, has_empty, r = 0, posix = j->xrw, took = 0;

	if (posix) {
		fd = j->xfd;
		took = jslots_mutex_enter();
	} else {
		fd = pohm_journal_open_own(j->dirfd, XINDEX, O_RDWR | O_CREAT);
		if (fd < 0)
			return fd;
	}
	for (level = 0; level < XLEVELS; level++) {
		off_t off = jindex_bucket_off(dev, lino, level);

		r = lock_bucket(fd, off, F_WRLCK, posix);
		if (!r)
			r = read_bucket(j, fd, off, b);
		if (r < 0)
			goto out;
		if (r && mode != XDROP) {
			cover_level(fd, off, posix);
			if (fd == j->xfd)
				jmap_grown(&j->xmap);
		}
		r = 0;
		i = jindex_bucket_find(b, XBUCKET, dev, lino, &got, &free_i, &has_empty);
		if (i >= 0) {
			if (mode == XADD || (mode == XDROP && got != ino) ||
			    (mode == XSET && got == ino))
				goto out;
			r = write_slot(fd, off, i, dev, lino, mode == XDROP ? 0 : ino);
			goto out;
		}
		if (free_i >= 0 && free_off < 0) {
			free_off = off;
			free_at = free_i;
		}
		if (has_empty)
			break;	/* never full: the key is in no later level */
	}
	if (mode == XDROP)
		goto out;
	if (free_off < 0) {
		pohm_warn("journal: the index %s is full (%d levels); a local file is not indexed",
			  XINDEX, XLEVELS);
		r = -ENOSPC;
		goto out;
	}
	r = write_slot(fd, free_off, free_at, dev, lino, ino);
out:
	if (posix) {
		pohm_sys_lock_range(fd, 0, 0, F_UNLCK, 0);	/* every bucket lock */
		if (took)
			jslots_mutex_exit();
	} else {
		pohm_sys_close(fd);	/* drops every bucket lock */
	}
	return r;
}

int pohm_journal_index_set(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t ino)
{
	int r = index_change(j, dev, lino, ino, XSET);

	hint_set(j, dev, lino, r ? 0 : ino);
	return r;
}

void pohm_journal_index_drop(struct pohm_journal *j, uint64_t dev, uint64_t lino, uint64_t ino)
{
	index_change(j, dev, lino, ino, XDROP);
	if (last.j == j && last.dev == dev && last.lino == lino)
		hint_set(j, dev, lino, 0);
}

/* Move the links of an earlier format's x/ into the file; remove x/ once empty. */
static void migrate(struct pohm_journal *j, int xdir)
{
	char buf[8192], name[300];
	unsigned long long dev, lino;
	uint64_t ino;
	ssize_t n;
	int left = 0;

	while ((n = pohm_sys_getdents64(xdir, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			char tail;

			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			snprintf(name, sizeof(name), "x/%s", de->d_name);
			if (sscanf(de->d_name, "%llx.%llx%c", &dev, &lino, &tail) != 2 ||
			    legacy_get(j, name, &ino) ||
			    index_change(j, dev, lino, ino, XADD) ||
			    pohm_sys_unlinkat(j->dirfd, name, 0))
				left = 1;
		}
	}
	if (!left && !pohm_sys_unlinkat(j->dirfd, "x", AT_REMOVEDIR))
		j->legacy = 0;
}

int jindex_open(struct pohm_journal *j)
{
	int fd, xdir;

	j->legacy = 0;
	j->xrw = 0;
	fd = pohm_journal_open_own(j->dirfd, XINDEX, O_RDWR | O_CREAT);
	if (fd >= 0)
		j->xrw = 1;
	else
		fd = pohm_journal_open_own(j->dirfd, XINDEX, O_RDONLY);	/* a cache we may only read */
	if (fd >= 0) {
		fd = pohm_sys_move_high(fd);
		if (fd >= 0)
			pohm_own_set(&j->xfd, fd);
		else
			j->xrw = 0;
	}
	xdir = pohm_sys_openat(j->dirfd, "x", O_RDONLY | O_DIRECTORY, 0);
	if (xdir < 0)
		return 0;	/* no earlier format here: the common case */
	j->legacy = 1;
	migrate(j, xdir);
	pohm_sys_close(xdir);
	return 0;
}

void jindex_close(struct pohm_journal *j)
{
	if (j->xfd >= 0)
		jmap_close(&j->xmap, (size_t)XLEVEL);
	pohm_own_close(&j->xfd);
}
