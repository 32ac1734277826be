/* test_journal.c — core/journal: records written in place (format 2, and
 * the commit trailer a format-2 reader ignores), the old format still read, torn records refused, the index (and an
 * earlier cache's x/ links moved into it), the last commit kept by every
 * put but its own, several
 * processes writing and reading one record at once, and fuzz_journal's
 * findings (tests/RELIABILITY.md 7 and 8): a chunk_shift out of range and a
 * record under another inode's name read as -EIO and leave nothing allocated. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "harness.h"
#include "journal.h"
#include "jindex.h"
#include "jslots.h"
#include "sha512.h"

#define JOURNAL_DIR_NAME "journal-test"
#include "journal_dir.h"

/* A record whose fields all derive from (ino, k): nchunks and the hint's
 * length vary with k, so records of one inode differ in length. */
static void make_rec(struct pohm_jrec *r, uint64_t ino, unsigned k)
{
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->ino = ino;
	r->version = k;
	r->dversion = k * 3;
	r->mode = 0100644;
	r->size = (uint64_t)k * 4096;
	r->ldev = 7;
	r->lino = 1000 + k % 3;
	r->lsize = k;
	r->chunk_shift = 12;
	r->nchunks = k % 5 * 7;
	r->csum = r->nchunks ? calloc(r->nchunks, 64) : NULL;
	for (i = 0; i < r->nchunks; i++)
		memset(r->csum[i], (int)(k + i), 64);
	snprintf(r->hint, sizeof(r->hint), "d/%u/%.*s", k, (int)(k % 97), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
}

/* Is r exactly make_rec(ino, r->version)? */
static int rec_consistent(const struct pohm_jrec *r, uint64_t ino)
{
	struct pohm_jrec want;
	int ok;

	make_rec(&want, ino, (unsigned)r->version);
	ok = r->ino == want.ino && r->dversion == want.dversion && r->size == want.size &&
	     r->lino == want.lino && r->nchunks == want.nchunks && !strcmp(r->hint, want.hint) &&
	     (!want.nchunks || !memcmp(r->csum, want.csum, (size_t)want.nchunks * 64));
	pohm_jrec_clear(&want);
	return ok;
}

static void record_path(char *out, size_t len, uint64_t ino)
{
	snprintf(out, len, "%s/j/%" PRIx64, dir, ino);
}

TEST(put_get_in_place)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	struct stat st1, st2;
	char path[160];
	uint64_t ino = 0;

	fresh(&j);
	make_rec(&r, 0x42, 9);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x42, &back), 0);
	EXPECT(rec_consistent(&back, 0x42));
	pohm_jrec_clear(&back);
	/* 28 checksums do not fit a slot: the record is the file j/42. */
	record_path(path, sizeof(path), 0x42);
	EXPECT_EQ_INT(stat(path, &st1), 0);
	/* A shorter record over a longer one: into the slot, the file goes. */
	pohm_jrec_clear(&r);
	make_rec(&r, 0x42, 5);
	EXPECT(r.nchunks == 0);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(stat(path, &st2), -1);
	snprintf(path, sizeof(path), "%s/j.slots", dir);
	EXPECT_EQ_INT(stat(path, &st1), 0);
	/* Written in place: the slot file is the same inode after the next put. */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(stat(path, &st2), 0);
	EXPECT_EQ_INT(st1.st_ino, st2.st_ino);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x42, &back), 0);
	EXPECT_EQ_INT(back.version, 5);
	EXPECT(rec_consistent(&back, 0x42));
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, r.lino, &ino), 0);
	EXPECT_EQ_INT(ino, 0x42);
	pohm_jrec_clear(&r);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x43, &back), -ENOENT);
	done(&j);
}

/* pohm_journal_update_make's fn: a record of zeros (ino 0) when there is
 * none, which it fills from arg; the record there otherwise. */
static int make_fn(struct pohm_jrec *r, const void *arg)
{
	const struct pohm_jrec *base = arg;

	if (!r->ino) {
		r->version = base->version;
		r->mode = base->mode;
	}
	r->ldev = 7;
	r->lino = 2000;
	return 0;
}

static int keep_fn(struct pohm_jrec *r, const void *arg)
{
	(void)r;
	(void)arg;
	return 0;
}

TEST(update_make_writes_a_first_record_once)
{
	struct pohm_journal j;
	struct pohm_jrec base, back;
	uint64_t ino = 0;

	fresh(&j);
	memset(&base, 0, sizeof(base));
	base.version = 4;
	base.mode = 0100600;
	/* pohm_journal_update makes nothing; update_make does, with the index. */
	EXPECT_EQ_INT(pohm_journal_update(&j, 0x70, keep_fn, NULL), -ENOENT);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x70, &back), -ENOENT);
	EXPECT_EQ_INT(pohm_journal_update_make(&j, 0x70, make_fn, &base), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x70, &back), 0);
	EXPECT_EQ_INT(back.ino, 0x70);
	EXPECT_EQ_INT(back.version, 4);
	EXPECT_EQ_INT(back.mode, 0100600);
	EXPECT_EQ_INT(back.lino, 2000);
	pohm_jrec_clear(&back);
	/* The hint is this thread's last word on the local file... */
	EXPECT_EQ_INT(pohm_journal_local_hint(&j, 7, 2000, &ino), 0);
	EXPECT_EQ_INT(ino, 0x70);
	EXPECT_EQ_INT(pohm_journal_local_hint(&j, 7, 2001, &ino), -ENOENT);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 2000, &ino), 0);
	EXPECT_EQ_INT(ino, 0x70);
	/* ... an existing record is fn's as it is (its version stays) ... */
	base.version = 9;
	EXPECT_EQ_INT(pohm_journal_update_make(&j, 0x70, make_fn, &base), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x70, &back), 0);
	EXPECT_EQ_INT(back.version, 4);
	pohm_jrec_clear(&back);
	/* ... and a dropped entry is no hint. */
	pohm_journal_index_drop(&j, 7, 2000, 0x70);
	EXPECT_EQ_INT(pohm_journal_local_hint(&j, 7, 2000, &ino), -ENOENT);
	done(&j);
}

/* chattr.c's chgrp_flag_fn: the flag alone, on the record as it is now. */
static int chgrp_fn(struct pohm_jrec *r, const void *arg)
{
	(void)arg;
	r->flags |= POHM_J_CHGRP;
	return 0;
}

/*
 * Decision 0068's POHM_J_CHGRP (session 16 review 2, item 3): a push that
 * read the record before a program's fchown set the flag puts its copy
 * back after it; that put keeps the flag (before: it cleared it, and the
 * group was never sent).  The push that sent the group clears it knowingly
 * (POHM_J_CHGRP_SENT, never stored); a new local file drops it.
 */
TEST(a_put_read_before_the_chgrp_flag_keeps_it)
{
	struct pohm_journal j;
	struct pohm_jrec r, stale, back;

	fresh(&j);
	make_rec(&r, 0x77, 5);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &stale), 0);	/* the push's read */
	EXPECT_EQ_INT(pohm_journal_update(&j, 0x77, chgrp_fn, NULL), 0);	/* the fchown's */
	stale.lsize = 99;
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &stale), 0);	/* the push's put */
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &back), 0);
	EXPECT(back.flags & POHM_J_CHGRP);
	EXPECT_EQ_U64(back.lsize, 99);
	/* The push that saw the flag and sent the group clears it. */
	back.flags = (back.flags & ~(uint32_t)POHM_J_CHGRP) | POHM_J_CHGRP_SENT;
	EXPECT_EQ_INT(pohm_journal_put(&j, &back), 0);
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &back), 0);
	EXPECT_EQ_INT(back.flags & (POHM_J_CHGRP | POHM_J_CHGRP_SENT), 0);
	pohm_jrec_clear(&back);
	/* Over a new local file (a fetch renamed one in), the flag goes. */
	EXPECT_EQ_INT(pohm_journal_update(&j, 0x77, chgrp_fn, NULL), 0);
	stale.lino = 4242;
	EXPECT_EQ_INT(pohm_journal_put(&j, &stale), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &back), 0);
	EXPECT_EQ_INT(back.flags & POHM_J_CHGRP, 0);
	pohm_jrec_clear(&back);
	/* ... even from a copy that carries it (a conflict's restub of a
	 * record read after the fchown): it described the old file. */
	EXPECT_EQ_INT(pohm_journal_update(&j, 0x77, chgrp_fn, NULL), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &back), 0);
	EXPECT(back.flags & POHM_J_CHGRP);
	back.lino = 4343;
	EXPECT_EQ_INT(pohm_journal_put(&j, &back), 0);
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &back), 0);
	EXPECT_EQ_INT(back.flags & POHM_J_CHGRP, 0);
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&stale);
	pohm_jrec_clear(&r);
	done(&j);
}

static int rehint_fn(struct pohm_jrec *r, const void *arg)
{
	pohm_jrec_set_hint(r, arg);
	return 0;
}

/*
 * A push's put over the same local file keeps a hint a rename wrote after
 * the push read its copy (dirmove's re-hint of the records below a moved
 * directory; a file's own rename): the stale name put back would hide the
 * file from every later push by name (pushmany.c sync_one).  Over a new
 * local file the put's own hint is written.
 */
TEST(a_push_put_keeps_a_hint_renamed_meanwhile)
{
	struct pohm_journal j;
	struct pohm_jrec r, copy, back;

	fresh(&j);
	make_rec(&r, 0x78, 5);
	pohm_jrec_set_hint(&r, "d/sub/f");
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x78, &copy), 0);	/* the push's read */
	EXPECT_EQ_INT(pohm_journal_update(&j, 0x78, rehint_fn, "d2/sub/f"), 0);	/* mv d d2 */
	copy.lsize = 77;
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &copy), 0);	/* the push's put */
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x78, &back), 0);
	EXPECT_EQ_STR(back.hint, "d2/sub/f");
	EXPECT_EQ_U64(back.lsize, 77);
	pohm_jrec_clear(&back);
	/* Another local file (a fetch renamed one in): the put's name. */
	copy.lino = 4545;
	pohm_jrec_set_hint(&copy, "e/f");
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &copy), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x78, &back), 0);
	EXPECT_EQ_STR(back.hint, "e/f");
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&copy);
	pohm_jrec_clear(&r);
	done(&j);
}

/*
 * Level 0 of j.slots and of x.idx is read through a shared mapping
 * (jmap.c): a record and an index entry another process writes after the
 * mapping was made are read as written, by this process and by a fork
 * child on the inherited mapping; an x.idx too short to map at the first
 * read is mapped once this process grew it.  On a file system where a
 * read of a hole allocates (tmpfs: SIGBUS when full) nothing is mapped and
 * the same reads are preads.
 */
TEST(records_and_index_read_through_the_mapping)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	struct statfs sf;
	uint64_t ino = 0;
	pid_t kid;
	int status = -1, maps;

	fresh(&j);
	maps = !statfs(dir, &sf) && jmap_holes_read_free((long)sf.f_type);
	printf("# %s: %s\n", dir, maps ? "mapped" : "not mapped (pread)");
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 1001, &ino), -ENOENT);
	EXPECT(j.xmap.p == NULL);	/* x.idx was empty: read without a mapping */
	make_rec(&r, 0x51, 1);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_jrec_clear(&r);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x51, &back), 0);
	EXPECT_EQ_INT(back.version, 1);
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(j.smap.p != NULL, maps);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 1001, &ino), 0);
	EXPECT_EQ_INT(ino, 0x51);
	EXPECT_EQ_INT(j.xmap.p != NULL, maps);	/* grown by the put: mapped at the next read */

	kid = fork();
	if (kid == 0) {
		struct pohm_journal jj;
		int rc;

		if (pohm_journal_open(&jj, dir))
			_exit(2);
		make_rec(&r, 0x51, 2);
		rc = pohm_journal_put(&jj, &r);
		pohm_jrec_clear(&r);
		pohm_journal_close(&jj);
		_exit(rc ? 1 : 0);
	}
	EXPECT(kid > 0 && waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x51, &back), 0);
	EXPECT_EQ_INT(back.version, 2);
	EXPECT(rec_consistent(&back, 0x51));
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 1002, &ino), 0);
	EXPECT_EQ_INT(ino, 0x51);

	kid = fork();
	if (kid == 0) {
		int ok = !pohm_journal_get(&j, 0x51, &back) && back.version == 2 &&
			 !pohm_journal_lookup_local(&j, 7, 1002, &ino) && ino == 0x51;

		_exit(ok ? 0 : 1);
	}
	status = -1;
	EXPECT(kid > 0 && waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0);
	done(&j);
}

TEST(index_follows_the_local_file)
{
	struct pohm_journal j;
	struct pohm_jrec r;
	uint64_t ino = 0;

	fresh(&j);
	make_rec(&r, 0x50, 3);		/* lino 1000 */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 1000, &ino), 0);
	EXPECT_EQ_INT(ino, 0x50);
	r.lino = 2000;			/* a fetch renamed a new local file in */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 1000, &ino), -ENOENT);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 2000, &ino), 0);
	/* A stale entry (a deleted file's inode number came back) is replaced. */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_jrec_clear(&r);
	make_rec(&r, 0x51, 3);
	r.lino = 2000;
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 2000, &ino), 0);
	EXPECT_EQ_INT(ino, 0x51);
	EXPECT_EQ_INT(pohm_journal_del(&j, 0x51), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 2000, &ino), -ENOENT);
	pohm_jrec_clear(&r);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x51, &r), -ENOENT);
	done(&j);
}

/* Write bytes as the whole record file of ino. */
static void write_raw(uint64_t ino, const void *p, size_t n)
{
	char path[160];
	int fd;

	record_path(path, sizeof(path), ino);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	EXPECT(fd >= 0);
	if (fd >= 0) {
		EXPECT_EQ_INT(write(fd, p, n), (ssize_t)n);
		close(fd);
	}
}

/* Record files written by hand after the open, as an earlier library
 * wrote them: j reads j/<ino> for an inode with no slot, as a journal
 * does until its first open has moved them into slots. */
static void as_earlier_cache(struct pohm_journal *j)
{
	j->jfiles = 1;
}

static size_t read_raw(uint64_t ino, uint8_t *p, size_t cap)
{
	char path[160];
	ssize_t n = -1;
	int fd;

	record_path(path, sizeof(path), ino);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, p, cap);
		close(fd);
	}
	return n < 0 ? 0 : (size_t)n;
}

TEST(torn_records_read_as_damage)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t good[8192], bad[8192];
	size_t n, cut;

	fresh(&j);
	as_earlier_cache(&j);
	make_rec(&r, 0x60, 13);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_jrec_clear(&r);
	n = read_raw(0x60, good, sizeof(good));
	EXPECT(n > 24);
	/* Every prefix (a write cut short) and every flipped byte is refused. */
	for (cut = 0; cut < n; cut += 7) {
		write_raw(0x60, good, cut);
		EXPECT_EQ_INT(pohm_journal_get(&j, 0x60, &back), -EIO);
		pohm_jrec_clear(&back);
	}
	for (cut = 0; cut < n; cut += 5) {
		memcpy(bad, good, n);
		bad[cut] ^= 0x10;
		write_raw(0x60, bad, n);
		EXPECT_EQ_INT(pohm_journal_get(&j, 0x60, &back), -EIO);
		pohm_jrec_clear(&back);
	}
	/* A record under another inode's name. */
	write_raw(0x61, good, n);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x61, &back), -EIO);
	/* A newer format. */
	memcpy(bad, good, n);
	bad[3] = '3';
	write_raw(0x60, bad, n);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x60, &back), -EIO);
	/* Intact again, with a tail of an older, longer record after it. */
	memcpy(bad, good, n);
	memset(bad + n, 0xab, 300);
	write_raw(0x60, bad, n + 300);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x60, &back), 0);
	EXPECT(rec_consistent(&back, 0x60));
	pohm_jrec_clear(&back);
	/* A put over a torn record repairs it. */
	write_raw(0x60, good, n / 2);
	make_rec(&r, 0x60, 14);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_jrec_clear(&r);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x60, &back), 0);
	EXPECT_EQ_INT(back.version, 14);
	pohm_jrec_clear(&back);
	done(&j);
}

/* A format-1 record as the previous library wrote it: renamed into place. */
static size_t v1_bytes(uint8_t *p, const struct pohm_jrec *r)
{
	struct pohm_buf b = POHM_BUF_INIT;
	const struct pohm_ts *t[4] = { &r->atime, &r->mtime, &r->ctime, &r->lctime };
	size_t hl = strlen(r->hint), n;
	uint8_t x[2];
	int i;

	pohm_buf_put_u32(&b, 0x314a4850u);
	pohm_buf_put_u64(&b, r->ino);
	pohm_buf_put_u64(&b, r->version);
	pohm_buf_put_u64(&b, r->dversion);
	pohm_buf_put_u32(&b, r->mode);
	pohm_buf_put_u32(&b, r->uid);
	pohm_buf_put_u32(&b, r->gid);
	pohm_buf_put_u32(&b, r->nlink);
	pohm_buf_put_u64(&b, r->size);
	pohm_buf_put_u64(&b, r->rdev);
	for (i = 0; i < 3; i++) {
		pohm_buf_put_u64(&b, (uint64_t)t[i]->sec);
		pohm_buf_put_u32(&b, t[i]->nsec);
	}
	pohm_buf_put_u64(&b, r->ldev);
	pohm_buf_put_u64(&b, r->lino);
	pohm_buf_put_u64(&b, r->lsize);
	pohm_buf_put_u64(&b, (uint64_t)t[3]->sec);
	pohm_buf_put_u32(&b, t[3]->nsec);
	pohm_buf_put_u64(&b, r->recorded_ns);
	pohm_buf_put_u64(&b, r->validated_ns);
	pohm_buf_put_u64(&b, r->listed_ns);
	pohm_buf_put_u64(&b, r->boot);
	pohm_buf_put_u32(&b, r->flags);
	pohm_buf_put(&b, &r->chunk_shift, 1);
	pohm_st16(x, (uint16_t)hl);
	pohm_buf_put(&b, x, 2);
	pohm_buf_put(&b, r->hint, hl);
	pohm_buf_put_u32(&b, r->nchunks);
	pohm_buf_put(&b, r->csum, (size_t)r->nchunks * 64);
	n = b.len;
	memcpy(p, b.p, n);
	pohm_buf_free(&b);
	return n;
}

TEST(format_1_still_read)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t buf[8192];
	size_t n;

	fresh(&j);
	as_earlier_cache(&j);
	make_rec(&r, 0x70, 22);
	n = v1_bytes(buf, &r);
	write_raw(0x70, buf, n);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x70, &back), 0);
	EXPECT(rec_consistent(&back, 0x70));
	pohm_jrec_clear(&back);
	/* A format-1 file one byte short is damage (it was whole or nothing). */
	write_raw(0x70, buf, n - 1);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x70, &back), -EIO);
	/* Written back: format 2 from then on. */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT(read_raw(0x70, buf, sizeof(buf)) > 4);
	EXPECT_EQ_INT(buf[3], '2');
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x70, &back), 0);
	EXPECT(rec_consistent(&back, 0x70));
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&r);
	done(&j);
}

TEST(large_record)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	unsigned i;

	fresh(&j);
	make_rec(&r, 0x80, 1);
	free(r.csum);
	r.nchunks = 1024;	/* a 1 GiB file in 1 MiB chunks: 64 KiB of checksums */
	r.csum = malloc((size_t)r.nchunks * 64);
	for (i = 0; i < r.nchunks; i++)
		memset(r.csum[i], (int)i, 64);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x80, &back), 0);
	EXPECT_EQ_INT(back.nchunks, 1024);
	EXPECT(back.csum && !memcmp(back.csum, r.csum, (size_t)r.nchunks * 64));
	pohm_jrec_clear(&back);
	/* With a commit trailer past the first read's 4 KiB. */
	r.commit_dversion = 5;
	r.commit_lino = 6;
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x80, &back), 0);
	EXPECT_EQ_INT(back.nchunks, 1024);
	EXPECT_EQ_U64(back.commit_dversion, 5);
	EXPECT_EQ_U64(back.commit_lino, 6);
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&r);
	done(&j);
}

/* A longer record that cannot get its blocks (here: a file size limit, as a
 * full file system would): the put fails and the old record stays whole. */
TEST(no_room_keeps_the_old_record)
{
	struct pohm_journal j;
	pid_t kid;
	int status = -1;

	fresh(&j);
	kid = fork();
	if (kid == 0) {
		struct pohm_jrec r, back;
		struct rlimit rl = { 1024, 1024 };
		int bad = 0;

		make_rec(&r, 0xa0, 5);		/* short: no checksums */
		bad |= pohm_journal_put(&j, &r) != 0;
		pohm_jrec_clear(&r);
		signal(SIGXFSZ, SIG_IGN);
		bad |= setrlimit(RLIMIT_FSIZE, &rl) != 0;
		make_rec(&r, 0xa0, 9);		/* 28 checksums: 1.8 KiB */
		bad |= pohm_journal_put(&j, &r) != -EFBIG;
		pohm_jrec_clear(&r);
		bad |= pohm_journal_get(&j, 0xa0, &back) != 0;
		bad |= back.version != 5 || !rec_consistent(&back, 0xa0);
		pohm_jrec_clear(&back);
		_exit(bad);
	}
	EXPECT(kid > 0 && waitpid(kid, &status, 0) == kid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	done(&j);
}

/* Writers and readers of one record in several processes: every read is
 * one of the written records, whole (never -EIO, never a mix). */
/* The cache's own files never take the host's umask (0577 made them unusable). */
TEST(own_files_ignore_umask)
{
	static const char *const dirs[] = { "", "/j", "/p", "/tmp" };
	struct pohm_journal j;
	struct pohm_jrec r, back;
	char path[160];
	struct stat st;
	mode_t old = umask(0577);
	unsigned i;

	fresh(&j);
	make_rec(&r, 0x77, 3);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	umask(old);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, dirs[i]);
		EXPECT_EQ_INT(stat(path, &st), 0);
		EXPECT_EQ_INT(st.st_mode & 07777, 0700);
	}
	snprintf(path, sizeof(path), "%s/j.slots", dir);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0600);
	snprintf(path, sizeof(path), "%s/x.idx", dir);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0600);
	record_path(path, sizeof(path), 0x77);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0600);
	/* An existing file keeps its mode: no chmod on every open. */
	EXPECT_EQ_INT(chmod(path, 0640), 0);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0640);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x77, &back), 0);
	EXPECT(rec_consistent(&back, 0x77));
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&r);
	done(&j);
}

TEST(concurrent_processes)
{
	struct pohm_journal j;
	pid_t kids[4];
	int i, status, bad = 0;

	fresh(&j);
	for (i = 0; i < 4; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			struct pohm_journal jj;
			struct pohm_jrec r;
			time_t end = time(NULL) + 20;	/* bound, even on a loaded machine */
			int n, errs = 0, rc;

			if (pohm_journal_open(&jj, dir))
				_exit(2);
			for (n = 0; n < 1500 && time(NULL) < end; n++) {
				if (i < 2) {
					make_rec(&r, 0x90, (unsigned)(i * 100000 + n));
					rc = pohm_journal_put(&jj, &r);
				} else {
					rc = pohm_journal_get(&jj, 0x90, &r);
					if (rc == -ENOENT)
						rc = 0;
					else if (!rc && !rec_consistent(&r, 0x90))
						rc = -EBADMSG;
				}
				if (rc) {
					printf("# process %d, step %d: %d\n", i, n, rc);
					errs++;
				}
				pohm_jrec_clear(&r);
			}
			pohm_journal_close(&jj);
			_exit(errs ? 1 : 0);
		}
	}
	for (i = 0; i < 4; i++) {
		if (kids[i] < 0 || waitpid(kids[i], &status, 0) != kids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	EXPECT_EQ_INT(bad, 0);
	done(&j);
}

/*
 * RELIABILITY.md finding 8 (found by fuzz_journal): a record's chunk_shift
 * comes from the file, and content_differs computes 1 << chunk_shift.  A
 * shift the cache cannot have written (it writes 0 = default, or 12..30:
 * 4 KiB to 1 GiB chunks) must read as damage, -EIO, in both formats and
 * through pohm_journal_each, never reach a shift of 64 or more (undefined)
 * or a huge allocation.
 */
static int each_shift(void *arg, struct pohm_jrec *r)
{
	unsigned *seen = arg;

	if (r->chunk_shift && (r->chunk_shift < 12 || r->chunk_shift > 30))
		seen[1]++;	/* a shift out of range reached a caller */
	seen[0]++;
	return 0;
}

TEST(chunk_shift_out_of_range_reads_as_damage)
{
	static const unsigned bad[] = { 1, 11, 31, 32, 63, 64, 65, 200, 255 };
	static const unsigned good[] = { 0, 12, 20, 30 };
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t buf[8192];
	unsigned i, seen[2] = { 0, 0 };
	size_t n;

	fresh(&j);
	as_earlier_cache(&j);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make_rec(&r, 0x100 + i, 9);	/* 28 chunk checksums */
		r.chunk_shift = (uint8_t)bad[i];
		EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
		memset(&back, 0x5a, sizeof(back));
		EXPECT_EQ_INT(pohm_journal_get(&j, 0x100 + i, &back), -EIO);
		/* Nothing allocated is left behind for a caller that does not clear. */
		EXPECT(back.csum == NULL);
		EXPECT_EQ_INT(back.nchunks, 0);
		/* The first library's format is checked the same way. */
		n = v1_bytes(buf, &r);
		write_raw(0x200 + i, buf, n);
		EXPECT_EQ_INT(pohm_journal_get(&j, 0x200 + i, &back), -EIO);
		EXPECT(back.csum == NULL);
		pohm_jrec_clear(&r);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		make_rec(&r, 0x300 + i, 9);
		r.chunk_shift = (uint8_t)good[i];
		EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
		EXPECT_EQ_INT(pohm_journal_get(&j, 0x300 + i, &back), 0);
		EXPECT_EQ_INT(back.chunk_shift, good[i]);
		EXPECT(rec_consistent(&back, 0x300 + i));
		pohm_jrec_clear(&back);
		pohm_jrec_clear(&r);
	}
	/* A walk over all of them meets only the good ones. */
	EXPECT_EQ_INT(pohm_journal_each(&j, each_shift, seen), 0);
	EXPECT_EQ_INT(seen[0], sizeof(good) / sizeof(good[0]));
	EXPECT_EQ_INT(seen[1], 0);
	done(&j);
}

/* A record with the 12..30 shifts compares a local file chunk by chunk. */
TEST(content_differs_by_chunk_shift)
{
	static const unsigned shifts[] = { 12, 13, 20 };
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t *data;
	char path[160];
	size_t size = 10000, i;
	unsigned s;
	int fd;

	fresh(&j);
	data = malloc(size);
	for (i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 7 + i / 300);
	snprintf(path, sizeof(path), "%s/local", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, data, size), (ssize_t)size);
	for (s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++) {
		size_t cs = (size_t)1 << shifts[s];

		memset(&r, 0, sizeof(r));
		r.ino = 0x400 + s;
		r.mode = 0100644;
		r.size = size;
		r.chunk_shift = (uint8_t)shifts[s];
		r.nchunks = (uint32_t)((size + cs - 1) / cs);
		r.csum = calloc(r.nchunks, 64);
		for (i = 0; i < r.nchunks; i++)
			pohm_sha512(data + i * cs, i + 1 < r.nchunks ? cs : size - i * cs, r.csum[i]);
		EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
		EXPECT_EQ_INT(pohm_journal_get(&j, r.ino, &back), 0);
		EXPECT_EQ_INT(pohm_journal_content_differs(&back, fd, size), 0);
		/* One byte changed in the last chunk. */
		EXPECT_EQ_INT(pwrite(fd, "\xff", 1, (off_t)size - 1), 1);
		EXPECT_EQ_INT(pohm_journal_content_differs(&back, fd, size), 1);
		EXPECT_EQ_INT(pwrite(fd, data + size - 1, 1, (off_t)size - 1), 1);
		pohm_jrec_clear(&back);
		pohm_jrec_clear(&r);
	}
	close(fd);
	free(data);
	done(&j);
}

/*
 * A racy record (recorded within a tick of its file's ctime) found equal to
 * its file by a read a tick or more after that ctime takes the read's time
 * and stops being racy; too soon after the ctime, or over a record
 * another writer recorded again since it was read, nothing changes.
 */
TEST(a_racy_record_read_clean_later_is_settled)
{
	struct pohm_journal j;
	struct pohm_jrec r, seen, back;
	struct stat st;
	char path[160];
	uint64_t ct;
	int fd;

	fresh(&j);
	snprintf(path, sizeof(path), "%s/racy", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, "abc", 3), 3);
	EXPECT_EQ_INT(fstat(fd, &st), 0);
	close(fd);
	ct = (uint64_t)st.st_ctim.tv_sec * 1000000000ULL + (uint64_t)st.st_ctim.tv_nsec;
	memset(&r, 0, sizeof(r));
	r.ino = 0x510;
	r.mode = 0100644;
	r.size = 3;
	pohm_journal_note_local(&r, &st);
	r.recorded_ns = ct + 1000000;	/* a push at close: 1 ms after the write */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, r.ino, &seen), 0);
	EXPECT_EQ_INT(pohm_journal_is_dirty(&seen, &st), 2);
	/* Read within the tick: a later write may keep the ctime. */
	EXPECT_EQ_INT(pohm_journal_settle_racy(&j, &seen, &st, ct + 5000000), -EAGAIN);
	/* Recorded again meanwhile (another push): that writer's word stands. */
	r.recorded_ns = ct + 2000000;
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_settle_racy(&j, &seen, &st, ct + 30000000), -ESTALE);
	EXPECT_EQ_INT(pohm_journal_get(&j, r.ino, &back), 0);
	EXPECT_EQ_U64(back.recorded_ns, ct + 2000000);
	pohm_jrec_clear(&seen);
	/* As read: settled, no longer racy. */
	seen = back;
	EXPECT_EQ_INT(pohm_journal_settle_racy(&j, &seen, &st, ct + 30000000), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, r.ino, &back), 0);
	EXPECT_EQ_U64(back.recorded_ns, ct + 30000000);
	EXPECT_EQ_INT(pohm_journal_is_dirty(&back, &st), 0);
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&seen);
	pohm_jrec_clear(&r);
	done(&j);
}

/*
 * RELIABILITY.md finding 7 (found by fuzz_journal): a record file under
 * another inode's name (j/43 holding inode 0x42's record) decoded its
 * checksums, then get returned -EIO without freeing them; callers do not
 * clear after an error, pohm_journal_each neither.  Now nothing stays
 * allocated and a walk skips the stray file.
 */
static int each_ino(void *arg, struct pohm_jrec *r)
{
	uint64_t *inos = arg;

	inos[inos[0] < 7 ? ++inos[0] : 7] = r->ino;
	return 0;
}

TEST(record_under_another_inode_leaves_nothing_allocated)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t buf[8192];
	uint64_t inos[8] = { 0 };
	size_t n;

	fresh(&j);
	as_earlier_cache(&j);
	make_rec(&r, 0x42, 9);
	EXPECT(r.nchunks > 0);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	n = read_raw(0x42, buf, sizeof(buf));
	EXPECT(n > 24);
	write_raw(0x43, buf, n);
	memset(&back, 0x5a, sizeof(back));
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x43, &back), -EIO);
	EXPECT(back.csum == NULL);
	EXPECT_EQ_INT(back.nchunks, 0);
	/* The same in format 1. */
	n = v1_bytes(buf, &r);
	write_raw(0x44, buf, n);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x44, &back), -EIO);
	EXPECT(back.csum == NULL);
	/* A walk meets 0x42 once and neither stray. */
	EXPECT_EQ_INT(pohm_journal_each(&j, each_ino, inos), 0);
	EXPECT_EQ_INT(inos[0], 1);
	EXPECT_EQ_U64(inos[1], 0x42);
	/* The owner's record is intact. */
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x42, &back), 0);
	EXPECT(rec_consistent(&back, 0x42));
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&r);
	done(&j);
}

/* Only the push that made it writes the last commit: a put of a copy read
 * before it (the record goes back a version) keeps it (issue 18: it was a
 * p/<ino> symlink because of that). */
TEST(last_commit_survives_a_stale_put)
{
	struct pohm_journal j;
	struct pohm_jrec r, old, back;

	fresh(&j);
	make_rec(&r, 0x90, 4);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x90, &old), 0);	/* a reader's copy */
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x90, r.dversion, r.lino), 0);
	r.dversion = 77;
	r.commit_dversion = 77;
	r.commit_lino = r.lino;
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x90, 77, r.lino), 1);
	EXPECT_EQ_INT(pohm_journal_put(&j, &old), 0);		/* put back, older */
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x90, &back), 0);
	EXPECT_EQ_U64(back.dversion, old.dversion);
	EXPECT_EQ_U64(back.commit_dversion, 77);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x90, 77, r.lino), 1);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x90, 77, r.lino + 1), 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x90, 78, r.lino), 0);
	/* An in-place change (a touch) keeps it too. */
	EXPECT_EQ_INT(pohm_journal_touch(&j, 0x90, 0, 123), 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x90, 77, r.lino), 1);
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&old);
	pohm_jrec_clear(&r);
	done(&j);
}

/* May another process write-lock the slot file's first bytes of level 0
 * now?  1, 0 (held), -1 (no child). */
static int level0_free(const char *path)
{
	pid_t kid = fork();
	int status;

	if (kid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 4096,
				    .l_len = 4 << 20 };
		int fd = open(path, O_RDWR);

		_exit(fd >= 0 && !fcntl(fd, F_SETLK, &fl) ? 0 : 1);
	}
	if (kid < 0 || waitpid(kid, &status, 0) != kid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) == 0;
}

/* pohm_journal_touch_many (session 20: a listing's checked entries in one
 * writer's section, one lock of level 0): each record touched as
 * pohm_journal_touch would (another version or no record: left), the
 * lock given back after, and a later write locks as before. */
TEST(touch_many_touches_each_and_gives_the_lock_back)
{
	struct pohm_journal j;
	struct pohm_jrec r;
	uint64_t inos[20], vers[20];
	char path[200];
	unsigned i;

	fresh(&j);
	for (i = 0; i < 20; i++) {
		make_rec(&r, 0x300 + i, i + 1);
		if (i < 18)
			EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
		pohm_jrec_clear(&r);
		inos[i] = 0x300 + i;
		vers[i] = i == 17 ? 99 : i + 1;	/* 17: another version; 18, 19: none */
	}
	EXPECT_EQ_INT(pohm_journal_touch_many(&j, 20, inos, vers, 4242), 0);
	for (i = 0; i < 18; i++) {
		EXPECT_EQ_INT(pohm_journal_get(&j, inos[i], &r), 0);
		EXPECT_EQ_U64(r.validated_ns, i == 17 ? 0 : 4242);
		EXPECT(rec_consistent(&r, inos[i]));
		pohm_jrec_clear(&r);
	}
	EXPECT_EQ_INT(pohm_journal_get(&j, inos[18], &r), -ENOENT);
	pohm_jrec_clear(&r);
	snprintf(path, sizeof(path), "%s/%s", dir, JSLOTS);
	EXPECT_EQ_INT(level0_free(path), 1);
	/* A later put works (that it locks its bucket itself: the fork child
	 * test below). */
	make_rec(&r, 0x300, 50);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_jrec_clear(&r);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x300, &r), 0);
	EXPECT_EQ_U64(r.version, 50);
	pohm_jrec_clear(&r);
	done(&j);
}

/* Does a process hold a write lock on the bucket at off of the slot file
 * at path (F_GETLK from this process, which holds none on it)? */
static int bucket_locked(const char *path, off_t off)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = off,
			    .l_len = JS_BUCKET };
	int fd = open(path, O_RDWR), rc;

	rc = fd >= 0 && !fcntl(fd, F_GETLK, &fl) && fl.l_type != F_UNLCK;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ino's validated_ns as a reader sees it now (0: none, or no record). */
static uint64_t validated(struct pohm_journal *j, uint64_t ino)
{
	struct pohm_jrec r;
	uint64_t v = 0;

	if (!pohm_journal_get(j, ino, &r))
		v = r.validated_ns;
	pohm_jrec_clear(&r);
	return v;
}

/* Review fix (M1, L6): when another process holds a bucket of level 0,
 * touch_many does not wait for the level whole; it touches the records
 * one writer's section each: the first record's bucket is given back
 * before it waits for the second's (one section holding both could
 * deadlock with a writer of another process). */
TEST(touch_many_with_a_level0_bucket_busy_takes_a_section_a_record)
{
	struct pohm_journal j;
	struct pohm_jrec r;
	uint64_t inos[2] = { 0x700, 0x701 }, vers[2] = { 1, 2 };
	char path[200], c = 0;
	int ready[2], go[2], status, i, freed = 0, b_waits = 0;
	pid_t holder, batch;
	off_t a_off, b_off;

	fresh(&j);
	while (jslots_bucket_off(inos[1], 0) == jslots_bucket_off(inos[0], 0))
		inos[1]++;
	a_off = jslots_bucket_off(inos[0], 0);
	b_off = jslots_bucket_off(inos[1], 0);
	for (i = 0; i < 2; i++) {
		make_rec(&r, inos[i], (unsigned)vers[i]);
		EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
		pohm_jrec_clear(&r);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, JSLOTS);
	EXPECT_EQ_INT(pipe(ready), 0);
	EXPECT_EQ_INT(pipe(go), 0);
	holder = fork();
	if (holder == 0) {	/* another process's writer in the second's bucket */
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = b_off,
				    .l_len = JS_BUCKET };
		int fd = open(path, O_RDWR);

		if (fd < 0 || fcntl(fd, F_SETLK, &fl))
			_exit(1);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	EXPECT_EQ_INT((int)read(ready[0], &c, 1), 1);
	batch = fork();
	if (batch == 0)
		_exit(pohm_journal_touch_many(&j, 2, inos, vers, 4242) ? 2 : 0);
	/* The first is touched although level 0 is not free whole ... */
	for (i = 0; i < 500 && validated(&j, inos[0]) != 4242; i++)
		usleep(10000);
	EXPECT_EQ_U64(validated(&j, inos[0]), 4242);
	/* ... and its bucket is given back while the batch waits for the
	 * second's. */
	for (i = 0; i < 200 && !freed; i++) {
		freed = !bucket_locked(path, a_off);
		if (!freed)
			usleep(10000);
	}
	b_waits = validated(&j, inos[1]) == 0;
	EXPECT(freed);
	EXPECT(b_waits);
	EXPECT_EQ_INT((int)write(go[1], "g", 1), 1);
	EXPECT_EQ_INT(waitpid(holder, &status, 0), holder);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ_INT(waitpid(batch, &status, 0), batch);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ_U64(validated(&j, inos[1]), 4242);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	done(&j);
}

/* A cache of the earlier format: x/<dev>.<ino> and p/<ino> symlinks and a
 * format-2 record.  The x/ links move into the index at open (one that
 * would replace a newer entry does not), x/ goes, p/<ino> is still read
 * until a commit is recorded, and nothing makes a symlink any more. */
TEST(a_cache_of_the_earlier_format_still_works)
{
	struct pohm_journal j;
	struct pohm_jrec r;
	char path[200];
	uint8_t buf[8192];
	uint64_t ino = 0;
	struct stat st;

	fresh(&j);
	make_rec(&r, 0xa1, 3);				/* lino 1000 */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_journal_close(&j);
	/* As the earlier library wrote it: no commit trailer. */
	EXPECT_EQ_U64(read_raw(0xa1, buf, sizeof(buf)), pohm_le32(buf + 12));
	snprintf(path, sizeof(path), "%s/x", dir);
	EXPECT_EQ_INT(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/x/7.3e8", dir);		/* (7, 1000) */
	EXPECT_EQ_INT(symlink("a1", path), 0);
	snprintf(path, sizeof(path), "%s/x/7.7d0", dir);		/* (7, 2000) */
	EXPECT_EQ_INT(symlink("a2", path), 0);
	snprintf(path, sizeof(path), "%s/x/7.bb8", dir);		/* (7, 3000) */
	EXPECT_EQ_INT(symlink("a3", path), 0);
	snprintf(path, sizeof(path), "%s/p/a1", dir);
	EXPECT_EQ_INT(symlink("9.3e8", path), 0);
	/* (7, 3000) was indexed anew by a newer library meanwhile. */
	EXPECT_EQ_INT(pohm_journal_open(&j, dir), 0);
	pohm_jrec_clear(&r);
	make_rec(&r, 0xa4, 3);
	r.lino = 3000;
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_journal_close(&j);
	snprintf(path, sizeof(path), "%s/x", dir);
	EXPECT_EQ_INT(lstat(path, &st), -1);			/* moved, removed */
	EXPECT_EQ_INT(mkdir(path, 0700), 0);			/* an old writer again */
	snprintf(path, sizeof(path), "%s/x/7.bb8", dir);
	EXPECT_EQ_INT(symlink("a3", path), 0);
	EXPECT_EQ_INT(pohm_journal_open(&j, dir), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 1000, &ino), 0);
	EXPECT_EQ_U64(ino, 0xa1);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 2000, &ino), 0);
	EXPECT_EQ_U64(ino, 0xa2);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 3000, &ino), 0);
	EXPECT_EQ_U64(ino, 0xa4);
	snprintf(path, sizeof(path), "%s/x", dir);
	EXPECT_EQ_INT(lstat(path, &st), -1);			/* moved, removed */
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xa1, 9, 1000), 1);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xa1, 9, 1001), 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xa2, 9, 1000), 0);
	/* A put of the format-2 record keeps its (absent) commit; a commit
	 * recorded wins over the old link. */
	pohm_jrec_clear(&r);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0xa1, &r), 0);
	EXPECT_EQ_U64(r.commit_dversion, 0);
	r.commit_dversion = 12;
	r.commit_lino = 1000;
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xa1, 9, 1000), 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xa1, 12, 1000), 1);
	pohm_jrec_clear(&r);
	done(&j);
}

/* The index file takes many local files (more than one level's buckets
 * hold), finds each with its own entry, and drops one only for its inode. */
TEST(index_holds_many_files)
{
	struct pohm_journal j;
	uint64_t i, ino, n = 40000, bad = 0;

	fresh(&j);
	for (i = 1; i <= n; i++)
		if (pohm_journal_index_set(&j, 7, i * 13, 0x10000 + i))
			bad++;
	EXPECT_EQ_U64(bad, 0);
	for (i = 1; i <= n; i++)
		if (pohm_journal_lookup_local(&j, 7, i * 13, &ino) || ino != 0x10000 + i)
			bad++;
	EXPECT_EQ_U64(bad, 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 5, &ino), -ENOENT);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 8, 13, &ino), -ENOENT);
	for (i = 1; i <= n; i += 2) {
		pohm_journal_index_drop(&j, 7, i * 13, 0x10000 + i + 1);	/* another inode's: stays */
		pohm_journal_index_drop(&j, 7, i * 13, 0x10000 + i);
	}
	for (i = 1; i <= n; i++) {
		int r = pohm_journal_lookup_local(&j, 7, i * 13, &ino);

		if (i % 2 ? r != -ENOENT : (r || ino != 0x10000 + i))
			bad++;
	}
	EXPECT_EQ_U64(bad, 0);
	/* A dropped key comes back in its own slot. */
	EXPECT_EQ_INT(pohm_journal_index_set(&j, 7, 13, 0x55), 0);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 7, 13, &ino), 0);
	EXPECT_EQ_U64(ino, 0x55);
	done(&j);
}

static int each_count(void *arg, struct pohm_jrec *r)
{
	uint64_t *n = arg;

	n[0]++;
	n[1] ^= r->ino * 0x9E3779B97F4A7C15ULL;
	return 0;
}

/* A walk skips the slot file's holes (SEEK_DATA) yet meets every record,
 * also those that went to deeper levels (level 0 has 4096 slots). */
TEST(walk_meets_every_record_past_the_holes)
{
	struct pohm_journal j;
	struct pohm_jrec r;
	uint64_t i, n = 12000, bad = 0, want = 0, got[2] = { 0, 0 };

	fresh(&j);
	for (i = 1; i <= n; i++) {
		make_rec(&r, i * 0x1000193ULL, 1);
		if (pohm_journal_put(&j, &r))
			bad++;
		want ^= i * 0x1000193ULL * 0x9E3779B97F4A7C15ULL;
		pohm_jrec_clear(&r);
	}
	EXPECT_EQ_U64(bad, 0);
	EXPECT_EQ_INT(pohm_journal_each(&j, each_count, got), 0);
	EXPECT_EQ_U64(got[0], n);
	EXPECT_EQ_U64(got[1], want);
	done(&j);
}

/* The last commit rides after the record's len: a format-2 reader of
 * session 11 reads the record and ignores it; once such a library writes
 * the record (its check changes), a trailer left behind reads as none. */
TEST(commit_trailer_is_outside_the_record_and_bound_to_it)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t buf[8192];
	size_t n, len;

	fresh(&j);
	make_rec(&r, 0xb1, 4);
	r.commit_dversion = 77;
	r.commit_lino = 1001;
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &r), 0);
	n = read_raw(0xb1, buf, sizeof(buf));
	len = pohm_le32(buf + 12);
	EXPECT_EQ_U64(n, len + 32);
	EXPECT_EQ_INT(buf[3], '2');
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xb1, 77, 1001), 1);
	/* Only the record (as the earlier library reads it): intact, no commit. */
	write_raw(0xb1, buf, len);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0xb1, &back), 0);
	EXPECT(rec_consistent(&back, 0xb1));
	EXPECT_EQ_U64(back.commit_dversion, 0);
	pohm_jrec_clear(&back);
	/* The earlier library rewrites the record in place, same length: the
	 * trailer stays in the file but belongs to the record before. */
	buf[24] ^= 1;				/* version */
	pohm_journal_seal(buf, len);
	write_raw(0xb1, buf, n);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0xb1, &back), 0);
	EXPECT_EQ_U64(back.commit_dversion, 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0xb1, 77, 1001), 0);
	pohm_jrec_clear(&back);
	/* A damaged trailer is no commit, and the record still reads. */
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &r), 0);
	n = read_raw(0xb1, buf, sizeof(buf));
	buf[n - 1] ^= 0x40;
	write_raw(0xb1, buf, n);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0xb1, &back), 0);
	EXPECT_EQ_U64(back.commit_dversion, 0);
	pohm_jrec_clear(&back);
	pohm_jrec_clear(&r);
	done(&j);
}

/* Where ino's slot is in j.slots (level 0 or later), or -1. */
static off_t slot_of(uint64_t ino)
{
	char path[160];
	uint8_t s[JS_HDR];
	uint64_t got;
	off_t off = -1;
	int fd, level, i;

	snprintf(path, sizeof(path), "%s/j.slots", dir);
	fd = open(path, O_RDONLY);
	for (level = 0; fd >= 0 && off < 0 && level < 4; level++)
		for (i = 0; i < JS_PER; i++) {
			off_t o = jslots_bucket_off(ino, level) + (off_t)i * JS_SLOT;

			if (pread(fd, s, sizeof(s), o) == (ssize_t)sizeof(s) &&
			    jslots_slot_hdr(s, &got) > 0 && got == ino) {
				off = o;
				break;
			}
		}
	if (fd >= 0)
		close(fd);
	return off;
}

static void flip_byte(off_t off)
{
	char path[160];
	uint8_t c = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/j.slots", dir);
	fd = open(path, O_RDWR);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(pread(fd, &c, 1, off), 1);
	c ^= 0x10;
	EXPECT_EQ_INT(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/* A record in a slot: one pread reads it; a torn slot (its record's check
 * fails, or its header's) reads as damage, never as another record or as
 * "none"; a put makes the inode readable again. */
TEST(slot_records_and_torn_slots)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	char path[160];
	struct stat st;
	off_t off;

	fresh(&j);
	make_rec(&r, 0x5100, 5);	/* no checksums: fits a slot */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	record_path(path, sizeof(path), 0x5100);
	EXPECT_EQ_INT(stat(path, &st), -1);	/* no record file, no new inode */
	off = slot_of(0x5100);
	EXPECT(off > 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5100, &back), 0);
	EXPECT(rec_consistent(&back, 0x5100));
	pohm_jrec_clear(&back);
	/* The record's bytes torn. */
	flip_byte(off + JS_HDR + 40);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5100, &back), -EIO);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5100, &back), 0);
	pohm_jrec_clear(&back);
	/* The header torn: whose slot it was cannot be known, so the inode
	 * reads as damage, not as absent. */
	flip_byte(off + 9);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5100, &back), -EIO);
	/* A put writes another slot of the chain; the record reads again. */
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5100, &back), 0);
	EXPECT(rec_consistent(&back, 0x5100));
	pohm_jrec_clear(&back);
	EXPECT(slot_of(0x5100) != off);
	/* Deleted: its slot is free; an inode whose chain passes the
	 * damaged header still reads as damage (it may have been its slot). */
	EXPECT_EQ_INT(pohm_journal_del(&j, 0x5100), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5100, &back), -EIO);
	EXPECT_EQ_INT(pohm_journal_del(&j, 0x5100), -ENOENT);
	/* Without damage in the chain, a deleted record is absent. */
	make_rec(&r, 0x5101, 5);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	EXPECT_EQ_INT(pohm_journal_del(&j, 0x5101), 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5101, &back), -ENOENT);
	pohm_jrec_clear(&r);
	pohm_jrec_clear(&r);
	done(&j);
}

/* A slot file of a newer format is not read as this one's. */
TEST(slot_file_of_a_newer_format_is_not_used)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	char path[160];
	uint8_t v = 2;
	int fd;

	fresh(&j);
	make_rec(&r, 0x5200, 5);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_journal_close(&j);
	snprintf(path, sizeof(path), "%s/j.slots", dir);
	fd = open(path, O_RDWR);
	EXPECT(fd >= 0);
	EXPECT_EQ_INT(pwrite(fd, &v, 1, 4), 1);	/* the header's version */
	close(fd);
	EXPECT_EQ_INT(pohm_journal_open(&j, dir), 0);
	EXPECT(j.sfd < 0);
	EXPECT(pohm_journal_get(&j, 0x5200, &back) < 0);
	pohm_jrec_clear(&r);
	done(&j);
}

/* A cache of the earlier format (every record a file j/<ino>): its first
 * open moves the records that fit into slots (their files go), leaves a
 * large one and a damaged one in j/ behind slots that say so, reads all
 * as before, and says in the slot file's header that no later open needs
 * to look at j/. */
TEST(an_earlier_cache_moves_into_slots)
{
	struct pohm_journal j;
	struct pohm_jrec r, back;
	uint8_t buf[8192];
	char path[160];
	struct stat st;
	size_t n;
	uint64_t inos[8] = { 0 };

	fresh(&j);
	as_earlier_cache(&j);
	/* Records as the earlier library wrote them: by hand as files. */
	make_rec(&r, 0x5300, 5);		/* small */
	n = v1_bytes(buf, &r);
	pohm_jrec_clear(&r);
	pohm_journal_close(&j);
	write_raw(0x5300, buf, n);
	make_rec(&r, 0x5301, 9);		/* 28 checksums: too large for a slot */
	n = v1_bytes(buf, &r);
	pohm_jrec_clear(&r);
	write_raw(0x5301, buf, n);
	write_raw(0x5302, buf, n / 2);	/* damaged */
	snprintf(path, sizeof(path), "%s/j.slots", dir);
	EXPECT_EQ_INT(unlink(path), 0);	/* as if no library of this session had opened it */
	EXPECT_EQ_INT(pohm_journal_open(&j, dir), 0);
	EXPECT_EQ_INT(j.jfiles, 0);
	record_path(path, sizeof(path), 0x5300);
	EXPECT_EQ_INT(stat(path, &st), -1);
	record_path(path, sizeof(path), 0x5301);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT(slot_of(0x5300) > 0 && slot_of(0x5301) > 0 && slot_of(0x5302) > 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5300, &back), 0);
	EXPECT(rec_consistent(&back, 0x5300));
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5301, &back), 0);
	EXPECT(rec_consistent(&back, 0x5301));
	pohm_jrec_clear(&back);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5302, &back), -EIO);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5303, &back), -ENOENT);
	/* A walk meets both intact records once. */
	EXPECT_EQ_INT(pohm_journal_each(&j, each_ino, inos), 0);
	EXPECT_EQ_INT(inos[0], 2);
	/* The next open trusts the header. */
	pohm_journal_close(&j);
	EXPECT_EQ_INT(pohm_journal_open(&j, dir), 0);
	EXPECT_EQ_INT(j.jfiles, 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x5300, &back), 0);
	pohm_jrec_clear(&back);
	done(&j);
}

/* One journal (one j.slots fd) shared by the threads of a process and by
 * a fork child that inherited it: writers of one record, in a slot and in
 * j/ by turns, and readers; every read is one of the written records,
 * whole (the process's mutex orders its threads; POSIX locks, which a
 * fork child does not inherit, order the two processes on one open file
 * description, where OFD locks would not). */
struct mt_arg {
	struct pohm_journal *j;
	unsigned id;
	int errs;
};

static void *mt_run(void *p)
{
	struct mt_arg *a = p;
	struct pohm_jrec r;
	time_t end = time(NULL) + 15;
	unsigned n;
	int rc;

	for (n = 0; n < 800 && time(NULL) < end; n++) {
		if (a->id % 2 == 0) {
			make_rec(&r, 0x91, a->id * 100000 + n);	/* k % 5: slot or j/ */
			rc = pohm_journal_put(a->j, &r);
		} else {
			rc = pohm_journal_get(a->j, 0x91, &r);
			if (rc == -ENOENT)
				rc = 0;
			else if (!rc && !rec_consistent(&r, 0x91))
				rc = -EBADMSG;
		}
		if (rc) {
			printf("# thread %u of %d, step %u: %d\n", a->id, (int)getpid(), n, rc);
			a->errs++;
		}
		pohm_jrec_clear(&r);
	}
	return NULL;
}

static int mt_threads(struct pohm_journal *j, unsigned base)
{
	pthread_t t[3];
	struct mt_arg a[3];
	int i, errs = 0;

	for (i = 0; i < 3; i++) {
		a[i].j = j;
		a[i].id = base + (unsigned)i;
		a[i].errs = 0;
		if (pthread_create(&t[i], NULL, mt_run, &a[i]))
			return 1;
	}
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		errs += a[i].errs;
	}
	return errs;
}

TEST(threads_and_a_fork_child_on_one_fd)
{
	struct pohm_journal j;
	struct pohm_jrec back;
	pid_t kid;
	int status = -1, errs;

	fresh(&j);
	kid = fork();
	if (kid == 0) {
		pohm_journal_atfork_child();
		_exit(mt_threads(&j, 10) ? 1 : 0);
	}
	errs = mt_threads(&j, 0);
	EXPECT_EQ_INT(errs, 0);
	EXPECT(kid > 0 && waitpid(kid, &status, 0) == kid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x91, &back), 0);
	EXPECT(rec_consistent(&back, 0x91));
	pohm_jrec_clear(&back);
	done(&j);
}

/* Inserts of distinct inodes that share their buckets, by two threads and
 * a fork child on one fd at once, each deleting its inode again: each put
 * takes a slot of its own, and its record is there when it returns
 * (without the process's mutex two threads took the same free slot and
 * one record was lost). */
#define SHARED_N 8
static uint64_t shared_inos[3][SHARED_N];

struct ins_arg {
	struct pohm_journal *j;
	int row, errs;
};

static void *ins_run(void *p)
{
	struct ins_arg *a = p;
	struct pohm_jrec r, back;
	time_t end = time(NULL) + 8;
	int k, n;

	for (n = 0; n < 3000 && time(NULL) < end; n++) {
		k = n % SHARED_N;
		make_rec(&r, shared_inos[a->row][k], 5);
		a->errs += pohm_journal_put(a->j, &r) != 0;
		pohm_jrec_clear(&r);
		if (pohm_journal_get(a->j, shared_inos[a->row][k], &back) ||
		    !rec_consistent(&back, shared_inos[a->row][k]))
			a->errs++;
		pohm_jrec_clear(&back);
		if (k == SHARED_N - 1)
			for (k = 0; k < SHARED_N; k++)
				a->errs += pohm_journal_del(a->j, shared_inos[a->row][k]) != 0;
	}
	return NULL;
}

TEST(inserts_sharing_buckets_from_threads_and_a_fork_child)
{
	struct pohm_journal j;
	struct ins_arg a[2];
	pthread_t t[2];
	off_t want = jslots_bucket_off(1, 0);
	uint64_t ino;
	int n = 0, k, status = -1;
	pid_t kid;

	/* Inodes whose level-0 bucket is inode 1's (4 slots for 24 of them:
	 * the chain goes on into later levels). */
	for (ino = 2; n < 3 * SHARED_N; ino++)
		if (jslots_bucket_off(ino, 0) == want) {
			shared_inos[n / SHARED_N][n % SHARED_N] = ino;
			n++;
		}
	fresh(&j);
	kid = fork();
	if (kid == 0) {
		struct ins_arg c = { &j, 2, 0 };

		pohm_journal_atfork_child();
		ins_run(&c);
		_exit(c.errs ? 1 : 0);
	}
	for (k = 0; k < 2; k++) {
		a[k].j = &j;
		a[k].row = k;
		a[k].errs = 0;
		EXPECT_EQ_INT(pthread_create(&t[k], NULL, ins_run, &a[k]), 0);
	}
	for (k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		EXPECT_EQ_INT(a[k].errs, 0);
	}
	EXPECT(kid > 0 && waitpid(kid, &status, 0) == kid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	done(&j);
}

/* Review fix (M3): a batch's level-0 lock (jslots_wlock_level0) is held
 * whole while its section lasts and given back at wend; a fork child of
 * the writer (which does not inherit the parent's POSIX locks, nor its
 * level0_held) takes its own bucket lock and so waits for the parent's
 * section. */
TEST(level0_lock_is_held_for_the_section_and_a_fork_child_waits_for_it)
{
	struct pohm_journal j;
	struct pohm_jrec r;
	char path[200];
	pid_t kid;
	int status, early;

	fresh(&j);
	snprintf(path, sizeof(path), "%s/%s", dir, JSLOTS);
	make_rec(&r, 0x555, 1);
	EXPECT_EQ_INT(pohm_journal_put(&j, &r), 0);
	pohm_jrec_clear(&r);
	jslots_wbegin(&j);
	EXPECT_EQ_INT(jslots_wlock_level0(&j), 0);
	EXPECT_EQ_INT(level0_free(path), 0);
	kid = fork();
	if (kid == 0) {
		struct pohm_jrec k;

		pohm_journal_atfork_child();
		make_rec(&k, 0x555, 2);
		_exit(pohm_journal_put(&j, &k) ? 2 : 0);
	}
	usleep(300000);
	early = waitpid(kid, &status, WNOHANG) == kid;
	jslots_wend(&j);
	if (!early)
		EXPECT_EQ_INT(waitpid(kid, &status, 0), kid);
	EXPECT(!early);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ_INT(level0_free(path), 1);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x555, &r), 0);
	EXPECT_EQ_U64(r.version, 2);
	pohm_jrec_clear(&r);
	done(&j);
}
