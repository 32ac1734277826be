/* test_jdecode.c — the journal's on-disk bytes through the byte cursor
 * (core/cache/journal.c, jindex.c; issue 20): a record file and an x.idx
 * slot written by the library before the cursor (hex fixtures, made by
 * pohm_journal_put_commit and pohm_journal_index_set of session 13's main
 * before the change) read the same and are written byte for byte the
 * same; every truncation and every flipped byte of a record, a format-1
 * record and a bucket, placed so that they end where an inaccessible page
 * begins (edge.h), is the same clear error as before, never a read past
 * the bytes. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "edge.h"
#include "harness.h"
#include "journal.h"
#include "jindex.h"
#include "jslots.h"

#define JOURNAL_DIR_NAME "jdecode-test"
#include "journal_dir.h"

/* Record file j/1234 as the library wrote it for fixture_rec() with its
 * last commit (dversion 6, lino 0x5678): 331 bytes of record, then the
 * 32-byte commit trailer. */
static const char *const old_record_hex[] = {
	"50484a3234120000000000004b010000e11c4cc6f7f096010500000000000000",
	"0600000000000000a0810000e9030000ea030000010000008813000000000000",
	"090800000000000001f15365000000000b00000002f153650000000016000000",
	"03f1536500000000210000000108000000000000785600000000000088130000",
	"0000000004f15365000000002c00000006f22f60ff9c9717088665d7ff9c9717",
	"090000000000000007b007b007b007b0100000000c10006469722f7375622f66",
	"696c652e7478740200000001080f161d242b323940474e555c636a71787f868d",
	"949ba2a9b0b7bec5ccd3dae1e8eff6fd040b121920272e353c434a51585f666d",
	"747b828990979ea5acb3bac1c8cfd6dde4ebf2f900070e151c232a31383f464d",
	"545b626970777e858c939aa1a8afb6bdc4cbd2d9e0e7eef5fc030a11181f262d",
	"343b424950575e656c737a504858310000000006000000000000007856000000",
	"0000004cdad5bcc55bbf5e",
	NULL
};
#define OLD_LEN	331	/* the record's len field */
#define OLD_N	363	/* with the trailer */

/* The x.idx slot of local file (0x801, 0x5678) → 0x1234, in its level-0
 * bucket at byte 45056 of x.idx. */
static const char old_slot_hex[] =
	"01080000000000007856000000000000341200000000000031a9f61822aed875";
#define OLD_BUCKET_OFF 45056

static size_t unhex(uint8_t *out, const char *const *lines)
{
	size_t n = 0;
	unsigned v;

	for (; *lines; lines++)
		for (const char *s = *lines; s[0] && s[1]; s += 2) {
			sscanf(s, "%2x", &v);
			out[n++] = (uint8_t)v;
		}
	return n;
}

static void fixture_rec(struct pohm_jrec *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->ino = 0x1234;
	r->version = 5;
	r->dversion = 6;
	r->mode = 0100640;
	r->uid = 1001;
	r->gid = 1002;
	r->nlink = 1;
	r->size = 5000;
	r->rdev = 0x0809;
	r->atime.sec = 1700000001;
	r->atime.nsec = 11;
	r->mtime.sec = 1700000002;
	r->mtime.nsec = 22;
	r->ctime.sec = 1700000003;
	r->ctime.nsec = 33;
	r->ldev = 0x801;
	r->lino = 0x5678;
	r->lsize = 5000;
	r->lctime.sec = 1700000004;
	r->lctime.nsec = 44;
	r->recorded_ns = 1700000005000000006ULL;
	r->validated_ns = 1700000007000000008ULL;
	r->listed_ns = 9;
	r->boot = 0xb007b007b007b007ULL;
	r->flags = 0x10;
	r->chunk_shift = 12;
	r->nchunks = 2;
	r->csum = calloc(2, 64);
	for (i = 0; i < 128; i++)
		((uint8_t *)r->csum)[i] = (uint8_t)(i * 7 + 1);
	r->commit_dversion = 6;
	r->commit_lino = 0x5678;
	strcpy(r->hint, "dir/sub/file.txt");
}

/* Every field of a equals b's (the commit only when with_commit, else 0). */
static int same_rec(const struct pohm_jrec *a, const struct pohm_jrec *b, int with_commit)
{
	return a->ino == b->ino && a->version == b->version && a->dversion == b->dversion &&
	       a->mode == b->mode && a->uid == b->uid && a->gid == b->gid && a->nlink == b->nlink &&
	       a->size == b->size && a->rdev == b->rdev && a->atime.sec == b->atime.sec &&
	       a->atime.nsec == b->atime.nsec && a->mtime.sec == b->mtime.sec &&
	       a->mtime.nsec == b->mtime.nsec && a->ctime.sec == b->ctime.sec &&
	       a->ctime.nsec == b->ctime.nsec && a->ldev == b->ldev && a->lino == b->lino &&
	       a->lsize == b->lsize && a->lctime.sec == b->lctime.sec &&
	       a->lctime.nsec == b->lctime.nsec && a->recorded_ns == b->recorded_ns &&
	       a->validated_ns == b->validated_ns && a->listed_ns == b->listed_ns &&
	       a->boot == b->boot && a->flags == b->flags && a->chunk_shift == b->chunk_shift &&
	       a->nchunks == b->nchunks && !memcmp(a->csum, b->csum, (size_t)a->nchunks * 64) &&
	       !strcmp(a->hint, b->hint) &&
	       a->commit_dversion == (with_commit ? b->commit_dversion : 0) &&
	       a->commit_lino == (with_commit ? b->commit_lino : 0);
}

/* The n bytes at p as the file dir/name (at offset off), or read back. */
static void put_file(const char *name, const void *p, size_t n, off_t off)
{
	char path[200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | (off ? 0 : O_TRUNC), 0600);
	EXPECT(fd >= 0);
	if (fd >= 0) {
		EXPECT_EQ_INT(pwrite(fd, p, n, off), (ssize_t)n);
		close(fd);
	}
}

static size_t get_file(const char *name, void *p, size_t n, off_t off)
{
	char path[200];
	ssize_t got = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		got = pread(fd, p, n, off);
		close(fd);
	}
	return got < 0 ? 0 : (size_t)got;
}

/* Where the slot of inode 0x1234 is in j.slots, and its header (magic
 * "PHS1", kind 1: a record, ino, check), as this code writes them. */
#define SLOT_OFF 2146304
static const uint8_t slot_hdr[JS_HDR] = {
	0x50, 0x48, 0x53, 0x31, 0x01, 0x00, 0x00, 0x00, 0x34, 0x12, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0xc1, 0xea, 0xb7, 0x74, 0xab, 0x09, 0x67, 0xa4
};

TEST(a_record_of_the_old_code_reads_and_writes_the_same)
{
	struct pohm_journal j;
	struct pohm_jrec want, got;
	uint8_t old[512], now[1024];
	size_t n = unhex(old, old_record_hex);

	EXPECT_EQ_INT(n, OLD_N);
	EXPECT_EQ_INT(pohm_le32(old + 12), OLD_LEN);
	fixture_rec(&want);
	/* Decoded from memory, ending at the guard page. */
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(old, n), n, 0x1234, &got), 0);
	EXPECT(same_rec(&got, &want, 1));
	pohm_jrec_clear(&got);
	/* Read from a cache directory, as an earlier library left it. */
	fresh(&j);
	j.jfiles = 1;
	put_file("j/1234", old, n, 0);
	EXPECT_EQ_INT(pohm_journal_get(&j, 0x1234, &got), 0);
	EXPECT(same_rec(&got, &want, 1));
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x1234, 6, 0x5678), 1);
	pohm_jrec_clear(&got);
	/* Written by this code: the same bytes. */
	EXPECT_EQ_INT(pohm_journal_del(&j, 0x1234), 0);
	/* Written by this code: the same bytes, in the first slot of its
	 * level-0 bucket of j.slots after the slot header (pinned: a change
	 * of the hash or the header makes every existing cache unreadable). */
	EXPECT_EQ_INT(pohm_journal_put_commit(&j, &want), 0);
	EXPECT_EQ_INT(jslots_bucket_off(0x1234, 0), SLOT_OFF);
	EXPECT_EQ_INT(get_file("j.slots", now, sizeof(now), SLOT_OFF), sizeof(now));
	EXPECT(!memcmp(now, slot_hdr, JS_HDR));
	EXPECT(!memcmp(now + JS_HDR, old, OLD_N));
	/* And without a commit: the record alone, the same len bytes, and no
	 * trailer (the one before is zeroed, not left to pass as this one's). */
	want.commit_dversion = want.commit_lino = 0;
	EXPECT_EQ_INT(pohm_journal_del(&j, 0x1234), 0);
	EXPECT_EQ_INT(pohm_journal_put(&j, &want), 0);
	EXPECT_EQ_INT(get_file("j.slots", now, sizeof(now), SLOT_OFF), sizeof(now));
	EXPECT(!memcmp(now + JS_HDR, old, OLD_LEN));
	EXPECT_EQ_INT(now[JS_HDR + OLD_LEN], 0);
	EXPECT_EQ_INT(pohm_journal_committed(&j, 0x1234, 6, 0x5678), 0);
	pohm_jrec_clear(&want);
	done(&j);
}

TEST(an_index_slot_of_the_old_code_reads_and_writes_the_same)
{
	struct pohm_journal j;
	uint8_t old[32], now[64], zero[32];
	const char *lines[] = { old_slot_hex, NULL };
	uint64_t ino = 0;

	EXPECT_EQ_INT(unhex(old, lines), 32);
	memset(zero, 0, sizeof(zero));
	EXPECT_EQ_INT(jindex_bucket_off(0x801, 0x5678, 0), OLD_BUCKET_OFF);
	fresh(&j);
	/* Written by this code: the same slot, in the same place. */
	EXPECT_EQ_INT(pohm_journal_index_set(&j, 0x801, 0x5678, 0x1234), 0);
	EXPECT_EQ_INT(get_file(XINDEX, now, 64, OLD_BUCKET_OFF), 64);
	EXPECT(!memcmp(now, old, 32));
	EXPECT(!memcmp(now + 32, zero, 32));
	done(&j);
	/* Read: the old slot alone in a fresh index. */
	fresh(&j);
	put_file(XINDEX, old, 32, OLD_BUCKET_OFF);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 0x801, 0x5678, &ino), 0);
	EXPECT_EQ_U64(ino, 0x1234);
	EXPECT_EQ_INT(pohm_journal_lookup_local(&j, 0x801, 0x5679, &ino), -ENOENT);
	done(&j);
}

/* Every proper prefix of a format-2 record with its trailer, ending at the
 * guard page: no whole record (-EAGAIN: pohm_journal_get then asks once
 * more under the lock and says -EIO) up to its len; the record without
 * its commit while the trailer is cut; all of it with the trailer. */
TEST(records_cut_at_the_guard_page)
{
	struct pohm_jrec want, got;
	uint8_t old[512];
	size_t n = unhex(old, old_record_hex), cut;

	fixture_rec(&want);
	for (cut = 0; cut <= n; cut++) {
		int rc = pohm_journal_decode(th_at_edge(old, cut), cut, 0x1234, &got);

		if (cut < OLD_LEN) {
			EXPECT_EQ_INT(rc, -EAGAIN);
		} else {
			EXPECT_EQ_INT(rc, 0);
			EXPECT(same_rec(&got, &want, cut == n));
		}
		EXPECT(!got.csum || !rc);
		pohm_jrec_clear(&got);
	}
	pohm_jrec_clear(&want);
}

/* Every flipped byte: in the magic, a foreign file (-EIO); elsewhere in the
 * record, a check that fails (-EAGAIN); in the trailer, the record without
 * its commit, but for the trailer's 4 bytes of 0, which no check covers
 * and no reader looks at (as before the cursor). */
TEST(records_flipped_at_the_guard_page)
{
	struct pohm_jrec want, got;
	uint8_t old[512], bad[512];
	size_t n = unhex(old, old_record_hex), i;

	fixture_rec(&want);
	for (i = 0; i < n; i++) {
		int rc;

		memcpy(bad, old, n);
		bad[i] ^= 0x10;
		rc = pohm_journal_decode(th_at_edge(bad, n), n, 0x1234, &got);
		if (i < 4)
			EXPECT_EQ_INT(rc, -EIO);
		else if (i < OLD_LEN)
			EXPECT_EQ_INT(rc, -EAGAIN);
		else {
			EXPECT_EQ_INT(rc, 0);
			EXPECT(same_rec(&got, &want, i >= OLD_LEN + 4 && i < OLD_LEN + 8));
		}
		pohm_jrec_clear(&got);
	}
	/* Under another inode's name: damage, nothing left allocated. */
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(old, n), n, 0x1235, &got), -EIO);
	EXPECT(!got.csum && !got.nchunks);
	pohm_jrec_clear(&want);
}

/*
 * Records whose check passes (sealed after the change) but whose fields do
 * not fit the bytes: a len of the header alone or past the bytes, a hint
 * longer than what is left or than a hint may be, a chunk count too large
 * or small by one or near 2^32, a chunk_shift out of range.  Each ends at
 * the guard page.
 */
TEST(sealed_records_that_lie_at_the_guard_page)
{
	struct pohm_jrec got;
	uint8_t old[512], bad[512];
	size_t n = unhex(old, old_record_hex), len = OLD_LEN;
	const size_t hint_at = 24 + 8 * 2 + 4 * 4 + 8 * 2 + 12 * 3 + 8 * 3 + 12 + 8 * 4 + 4 + 1;
	const size_t nch_at = hint_at + 2 + 16;
	const uint32_t nch[] = { 0, 1, 3, 0xffffffffu, 0x04000000u, 0x80000000u };
	const uint16_t hl[] = { 17, 200, 307, 4095, 4096, 0xffff };
	size_t k;

	EXPECT_EQ_INT(pohm_le16(old + hint_at), 16);
	EXPECT_EQ_INT(pohm_le32(old + nch_at), 2);
	/* The header alone, sealed: the body is missing. */
	memcpy(bad, old, n);
	pohm_journal_seal(bad, 24);
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, 24), 24, 0x1234, &got), -EIO);
	pohm_jrec_clear(&got);
	/* A len past the bytes given. */
	memcpy(bad, old, n);
	pohm_st32(bad + 12, (uint32_t)len + 1);
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, len), len, 0x1234, &got), -EAGAIN);
	pohm_st32(bad + 12, 0xffffffffu);
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, len), len, 0x1234, &got), -EAGAIN);
	pohm_st32(bad + 12, 23);
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, len), len, 0x1234, &got), -EAGAIN);
	/* Every cut of the body, sealed at the cut. */
	for (k = 24; k < len; k++) {
		memcpy(bad, old, k);
		pohm_journal_seal(bad, k);
		EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, k), k, 0x1234, &got), -EIO);
		EXPECT(!got.csum);
		pohm_jrec_clear(&got);
	}
	for (k = 0; k < sizeof(nch) / sizeof(nch[0]); k++) {
		memcpy(bad, old, len);
		pohm_st32(bad + nch_at, nch[k]);
		pohm_journal_seal(bad, len);
		EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, len), len, 0x1234, &got), -EIO);
		EXPECT(!got.csum);
		pohm_jrec_clear(&got);
	}
	for (k = 0; k < sizeof(hl) / sizeof(hl[0]); k++) {
		memcpy(bad, old, len);
		pohm_st16(bad + hint_at, hl[k]);
		pohm_journal_seal(bad, len);
		EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, len), len, 0x1234, &got), -EIO);
		pohm_jrec_clear(&got);
	}
	memcpy(bad, old, len);
	bad[hint_at - 1] = 31;				/* chunk_shift */
	pohm_journal_seal(bad, len);
	EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(bad, len), len, 0x1234, &got), -EIO);
	pohm_jrec_clear(&got);
	/* A trailer whose magic is right but which is cut at the page: no commit. */
	for (k = len + 4; k < n; k++) {
		EXPECT_EQ_INT(pohm_journal_decode(th_at_edge(old, k), k, 0x1234, &got), 0);
		EXPECT_EQ_U64(got.commit_dversion, 0);
		pohm_jrec_clear(&got);
	}
}

/* Format 1 (magic, ino, the fields; exactly the file): the fixture's body
 * behind the old header.  A proper prefix is damage (-EIO) once the magic
 * is there, the whole reads. */
TEST(format_1_records_cut_at_the_guard_page)
{
	struct pohm_jrec want, got;
	uint8_t old[512], v1[512];
	size_t n, cut;

	unhex(old, old_record_hex);
	pohm_st32(v1, 0x314a4850u);
	memcpy(v1 + 4, old + 4, 8);			/* ino */
	memcpy(v1 + 12, old + 24, OLD_LEN - 24);	/* the body */
	n = 12 + OLD_LEN - 24;
	fixture_rec(&want);
	for (cut = 0; cut <= n; cut++) {
		int rc = pohm_journal_decode(th_at_edge(v1, cut), cut, 0x1234, &got);

		if (cut < 4)
			EXPECT_EQ_INT(rc, -EAGAIN);
		else if (cut < n)
			EXPECT_EQ_INT(rc, -EIO);
		else {
			EXPECT_EQ_INT(rc, 0);
			EXPECT(same_rec(&got, &want, 0));
		}
		pohm_jrec_clear(&got);
	}
	pohm_jrec_clear(&want);
}

/*
 * A bucket (16 slots of 32 bytes) holding the fixture's slot first, ending
 * at the guard page.  Cut short, the key in slot 0 is still found once its
 * 32 bytes are there, and any other key is "torn, ask again" (-2), never a
 * read past the end; whole, the other key is not there and the bucket has
 * room.  Every flipped byte of the slot makes it torn.
 */
TEST(bucket_slots_at_the_guard_page)
{
	uint8_t b[512], bad[512];
	const char *lines[] = { old_slot_hex, NULL };
	uint64_t ino;
	int free_i, has_empty;
	size_t n, i;

	memset(b, 0, sizeof(b));
	unhex(b, lines);
	for (n = 0; n <= sizeof(b); n++) {
		const uint8_t *e = th_at_edge(b, n);

		EXPECT_EQ_INT(jindex_bucket_find(e, n, 0x801, 0x5678, &ino, &free_i, &has_empty),
			      n < 32 ? -2 : 0);
		EXPECT_EQ_U64(ino, n < 32 ? 0 : 0x1234);
		EXPECT_EQ_INT(jindex_bucket_find(e, n, 0x801, 0x5679, &ino, &free_i, &has_empty),
			      n < sizeof(b) ? -2 : -1);
		EXPECT_EQ_INT(has_empty, n >= 64);
		EXPECT_EQ_INT(free_i, n >= 64 ? 1 : -1);
	}
	for (i = 0; i < 32; i++) {
		memcpy(bad, b, sizeof(b));
		bad[i] ^= 0x01;
		EXPECT_EQ_INT(jindex_bucket_find(th_at_edge(bad, sizeof(bad)), sizeof(bad), 0x801,
						 0x5678, &ino, &free_i, &has_empty), -2);
	}
	/* A dropped entry (ino 0, its check): found, naming no inode. */
	memset(bad, 0, sizeof(bad));
	{
		uint8_t ref[32];
		struct pohm_journal j;

		fresh(&j);
		EXPECT_EQ_INT(pohm_journal_index_set(&j, 0x801, 0x5678, 0x1234), 0);
		pohm_journal_index_drop(&j, 0x801, 0x5678, 0x1234);
		EXPECT_EQ_INT(get_file(XINDEX, ref, 32, OLD_BUCKET_OFF), 32);
		done(&j);
		EXPECT(!memcmp(ref, b, 16));
		EXPECT_EQ_U64(pohm_le64(ref + 16), 0);
		memcpy(bad, ref, 32);
	}
	EXPECT_EQ_INT(jindex_bucket_find(th_at_edge(bad, sizeof(bad)), sizeof(bad), 0x801, 0x5678,
					 &ino, &free_i, &has_empty), 0);
	EXPECT_EQ_U64(ino, 0);
}
