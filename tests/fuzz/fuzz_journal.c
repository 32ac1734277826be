/*
 * fuzz_journal.c — libFuzzer target for the journal reader (core/journal.c):
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
 * encoder and the decoder agree), then deleted.  The index entries
 * (x/<dev>.<ino> symlinks) get the input's first bytes as their target for
 * pohm_journal_lookup_local.  Hostile records must read as -EIO, never
 * crash, over-read or leak.
 *
 * Bugs this target found, both fixed in journal.c: pohm_journal_get leaked
 * the checksum array of a record whose inode differs from its file name,
 * and a record's chunk_shift was not checked (content_differs shifted by
 * it; the input is in the corpus as crash-chunk-shift; decode now refuses
 * shifts outside 12..30).  The target still clears the record after every
 * failed get and skips content_differs for a chunk_shift above 24 (a
 * 1 GiB buffer per run); -DFUZZ_JOURNAL_STRICT drops both.
 *
 * Build (tests/fuzz/run does this):
 *   clang -fsanitize=fuzzer,address -D_GNU_SOURCE -Icore tests/fuzz/fuzz_journal.c core/[all].c -pthread
 * Seeds in tests/fuzz/corpus/journal/: records written by pohm_journal_put
 * (plain, stub, directory, with 0-3 chunk checksums, long hint), and
 * truncated, over-long and wrong-magic variants, in format 1 (the first
 * library's) and format 2 (v2-*).
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

static void get_clear(uint64_t ino, struct pohm_jrec *r, int *rc)
{
	memset(r, 0, sizeof(*r));
	*rc = pohm_journal_get(&jr, ino, r);
#ifndef FUZZ_JOURNAL_STRICT
	if (*rc)
		pohm_jrec_clear(r);	/* the leak of a mismatched record, see above */
#endif
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
	int rc, fd;
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
			fd = open(local, O_RDONLY);
#ifndef FUZZ_JOURNAL_STRICT
			/* A record's chunk_shift is not checked when read: >= 64 is an
			 * undefined shift, 30-63 a malloc of up to 2^63 bytes (see above). */
			if (r.chunk_shift > 24 && fd >= 0) {
				close(fd);
				fd = -1;
			}
#endif
			if (fd >= 0) {
				pohm_journal_content_differs(&r, fd, (uint64_t)st.st_size);
				close(fd);
			}
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

	/* An index entry whose target is the input's first bytes. */
	if (size) {
		char target[33], link[96];

		k = size < 32 ? size : 32;
		memcpy(target, data, k);
		target[k] = '\0';
		snprintf(link, sizeof(link), "%s/x/1.2", dir);
		unlink(link);
		if (target[0] && !symlink(target, link))
			pohm_journal_lookup_local(&jr, 1, 2, &found);
		unlink(link);
	}
}
