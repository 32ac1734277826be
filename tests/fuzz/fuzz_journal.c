/*
 * fuzz_journal.c — libFuzzer target for the journal reader (core/cache/journal.c):
 * the input is the content of one record file, cache_dir/j/<ino>, in a
 * private temporary cache directory.  An input in format 2 ("PHJ2") is
 * tried twice: as it is (its check almost never matches a mutation: the
 * torn-record path) and sealed with pohm_journal_seal over its first
 * len bytes (bytes 12-15, clamped to the input), so mutations of the
 * fields reach the decoder.  It is read the ways the cache reads
 * records: pohm_journal_get under the inode its bytes name (bytes 4-11) and
 * under another one, pohm_journal_each over the directory; a record that
 * decodes is checked against a local file (is_dirty, content_differs),
 * written back with pohm_journal_put and must read back identical (the
 * encoder and the decoder agree), then deleted.  The index file's bucket
 * of local file (1, 2) (x.idx, jindex.c) gets the input's first 512 bytes
 * for pohm_journal_lookup_local.  Hostile records must read as -EIO, never
 * crash, over-read or leak.
 *
 * Bugs this target found, both fixed in journal.c (tests/RELIABILITY.md
 * findings 7 and 8): pohm_journal_get leaked the checksum array of a record
 * whose inode differs from its file name, and a record's chunk_shift was not
 * checked (content_differs shifted by it; the input is in the corpus as
 * crash-chunk-shift; decode now refuses shifts outside 12..30).  The target
 * no longer works around either: a failed get is not cleared after (a leak
 * fails the run under LeakSanitizer), and a record that decodes with a
 * chunk_shift outside 0 and 12..30 aborts.  test_journal.c has both as unit
 * tests.  The one guard left protects the harness: see content_check.
 *
 * Build (tests/fuzz/run does this):
 *   clang -fsanitize=fuzzer,address -D_GNU_SOURCE -Icore/<layer> (each) tests/fuzz/fuzz_journal.c core/<layer>/*.c -pthread
 * Seeds in tests/fuzz/corpus/journal/: records written by pohm_journal_put
 * (plain, stub, directory, with 0-3 chunk checksums, long hint), and
 * truncated, over-long and wrong-magic variants, in format 1 (the first
 * library's) and format 2 (v2-*); shift-N: a record of a 20-byte file with
 * chunk_shift N (0, 11, 12, 20, 24, 25, 30, 31, 63, 64, 255), those outside
 * 0 and 12..30 must read as -EIO.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jindex.h"
#include "journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];		/* the private cache_dir, made once */
static struct pohm_journal jr;	/* open on dir for the whole run */
static int ready;

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* At exit: the private cache_dir goes. */
static void cleanup(void)
{
	pohm_journal_close(&jr);
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	char local[96];
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/fuzz_journal.%d", (int)getpid());
	mkdir(dir, 0700);
	if (pohm_journal_open(&jr, dir))
		abort();
	jr.jfiles = 1;	/* the inputs are record files j/<ino>: read them as an earlier cache's */
	atexit(cleanup);
	snprintf(local, sizeof(local), "%s/local", dir);
	fd = open(local, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "local file contents\n", 20) != 20)
		abort();
	close(fd);
	ready = 1;
}

static void write_file(const char *name, const uint8_t *data, size_t size)
{
	char path[160];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

static void unlink_file(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

/* A get must leave nothing allocated when it fails (finding 7). */
static void get_clear(uint64_t ino, struct pohm_jrec *r, int *rc)
{
	memset(r, 0, sizeof(*r));
	*rc = pohm_journal_get(&jr, ino, r);
	if (*rc && (r->csum || r->nchunks))
		abort();
}

/*
 * A record that decodes names a chunk size the cache can have written
 * (finding 8): 0 (the default) or 4 KiB..1 GiB.  content_differs then
 * allocates one chunk, up to 1 GiB; under ASan a 1 GiB chunk costs about a
 * second and 160 MB of shadow per run (measured with the shift-30 seed; 150
 * s once on a loaded machine), and mutations of such a seed keep its shift,
 * so above 16 MiB (shift 24) the contents are compared only when the record
 * cannot match the local file anyway (its size or chunk count differ: no
 * allocation).  A guard for the harness's time and memory, not a workaround.
 */
static void content_check(const struct pohm_jrec *r, const char *local, const struct stat *st)
{
	uint64_t cs;
	int fd;

	if (r->chunk_shift && (r->chunk_shift < 12 || r->chunk_shift > 30))
		abort();
	cs = 1ULL << (r->chunk_shift ? r->chunk_shift : 20);
	if (r->chunk_shift > 24 && r->size == (uint64_t)st->st_size &&
	    r->nchunks == ((uint64_t)st->st_size + cs - 1) / cs)
		return;
	fd = open(local, O_RDONLY);
	if (fd >= 0) {
		pohm_journal_content_differs(r, fd, (uint64_t)st->st_size);
		close(fd);
	}
}

static int count_each(void *arg, struct pohm_jrec *r)
{
	(*(unsigned *)arg)++;
	(void)strnlen(r->hint, sizeof(r->hint));
	return 0;
}

/* Records must survive put + get unchanged. */
static void roundtrip(struct pohm_jrec *r)
{
	struct pohm_jrec back;
	int rc;

	if (!r->ino)
		return;
	r->hint[sizeof(r->hint) - 1] = '\0';
	if (pohm_journal_put(&jr, r))
		return;			/* e.g. an index entry it cannot make: fine */
	get_clear(r->ino, &back, &rc);
	if (rc)
		abort();		/* we just wrote it */
	if (back.ino != r->ino || back.version != r->version || back.dversion != r->dversion ||
	    back.mode != r->mode || back.size != r->size || back.lino != r->lino ||
	    back.flags != r->flags || back.nchunks != r->nchunks ||
	    strcmp(back.hint, r->hint) ||
	    (r->nchunks && memcmp(back.csum, r->csum, (size_t)r->nchunks * 64)))
		abort();
	pohm_jrec_clear(&back);
	pohm_journal_del(&jr, r->ino);
}

static void one_input(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *sealed;
	size_t len;

	one_input(data, size);
	if (size < 24 || memcmp(data, "PHJ2", 4))
		return 0;
	len = (size_t)data[12] | (size_t)data[13] << 8 | (size_t)data[14] << 16 |
	      (size_t)data[15] << 24;
	if (len < 24 || len > size)
		len = size;
	sealed = malloc(size);
	if (!sealed)
		return 0;
	memcpy(sealed, data, size);
	pohm_journal_seal(sealed, len);
	one_input(sealed, size);
	free(sealed);
	return 0;
}

static void one_input(const uint8_t *data, size_t size)
{
	struct pohm_jrec r;
	struct stat st;
	char name[64], local[96];
	uint64_t ino = 0, found;
	unsigned n = 0;
	int rc;
	size_t k;

	if (!ready)
		setup();
	for (k = 0; k < 8 && 4 + k < size; k++)
		ino |= (uint64_t)data[4 + k] << (8 * k);
	snprintf(name, sizeof(name), "j/%" PRIx64, ino);
	write_file(name, data, size);

	get_clear(ino, &r, &rc);
	if (!rc) {
		snprintf(local, sizeof(local), "%s/local", dir);
		if (!stat(local, &st)) {
			pohm_journal_is_dirty(&r, &st);
			content_check(&r, local, &st);
		}
		roundtrip(&r);
		pohm_jrec_clear(&r);
		write_file(name, data, size);
	}
	/* The same bytes under another inode's name: a foreign record. */
	write_file("j/ffffffffffffffff", data, size);
	get_clear(UINT64_MAX, &r, &rc);
	if (!rc)
		pohm_jrec_clear(&r);
	unlink_file("j/ffffffffffffffff");
	pohm_journal_each(&jr, count_each, &n);
	unlink_file(name);

	/* The index bucket of (1, 2) holds the input's first bytes. */
	if (size) {
		char idx[96];
		int xfd;

		k = size < 512 ? size : 512;
		snprintf(idx, sizeof(idx), "%s/x.idx", dir);
		xfd = open(idx, O_WRONLY);
		if (xfd >= 0 && pwrite(xfd, data, k, jindex_bucket_off(1, 2, 0)) == (ssize_t)k)
			pohm_journal_lookup_local(&jr, 1, 2, &found);
		if (xfd >= 0) {
			if (ftruncate(xfd, 0))
				abort();
			close(xfd);
		}
	}
}
