/*
 * jlookup — does a cache's journal index know a local file?
 *
 *   jlookup CACHE_DIR DEV INO   DEV in hex (stat -c %D), INO in decimal
 *
 * Prints the storage inode (hex) and exits 0, or exits 1 when the index
 * has no entry (2 on bad use).  For tests that asked the x/ symlinks of
 * earlier caches (tests/long/rel_kill.bash).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "journal.h"

int main(int argc, char **argv)
{
	struct pohm_journal j;
	uint64_t ino;
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: jlookup CACHE_DIR DEV INO\n");
		return 2;
	}
	if (pohm_journal_open(&j, argv[1])) {
		fprintf(stderr, "jlookup: cannot open the journal in %s\n", argv[1]);
		return 2;
	}
	r = pohm_journal_lookup_local(&j, strtoull(argv[2], NULL, 16), strtoull(argv[3], NULL, 10),
				      &ino);
	if (!r)
		printf("%" PRIx64 "\n", ino);
	pohm_journal_close(&j);
	return r ? 1 : 0;
}
