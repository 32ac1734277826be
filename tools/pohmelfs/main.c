/*
 * main.c — `pohmelfs`: command line entry and dispatch.
 *
 *   pohmelfs [--json] put KEY | get KEY | lookup KEY | del KEY
 *   pohmelfs [--json] status | sync | stats | cache clean
 *   pohmelfs fsck [--json] [-v] [--age=S] | repair [--json] [-v] [--dry-run] [--age=S]
 *   pohmelfs config suggest WORD
 *
 * Configured by the POHMELFS_* environment and the config file, like the
 * library (core/config/config.h).  Exit status: 0 success, 1 the operation
 * failed (the message names what), 2 usage or configuration; fsck and
 * repair have their own (fsck.c).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pohmelfs [--json] COMMAND [ARGS]\n"
		"raw storage (keys live in the fsid namespace):\n"
		"  put KEY       store standard input under KEY in every group\n"
		"  get KEY       write the committed content of KEY to standard output\n"
		"  lookup KEY    show each group's copy: size, timestamp, checksum, node\n"
		"  del KEY       delete KEY in every group\n"
		"cluster and cache:\n"
		"  status        nodes, groups, route table; with a prefix, the cache too:\n"
		"                dirty files, conflict copies, whether pohmelfsd runs\n"
		"  sync          push every dirty file of the prefix's cache now\n"
		"  stats         what the cache holds: files, stubs, bytes, journal\n"
		"  cache clean   replace clean, unopened cached files by stubs (frees space)\n"
		"  fsck, repair  check every group's copies and the namespace (fsck [-v]), or\n"
		"                fix what it finds and check again (repair [--dry-run]); exit 0\n"
		"                clean, 1 issues, 2 incomplete, 4 data lost; --age=SECONDS,\n"
		"                --json (fsck [--json] [-v] [--age=S], repair [--json] [-v]\n"
		"                [--dry-run] [--age=S])\n"
		"  config suggest WORD  the key of pohmelfs.conf(5) nearest to WORD (a typo)\n"
		"--json prints the report of status, sync, stats, cache clean, lookup, fsck\n"
		"and repair as JSON.  On a terminal, sync, cache clean, fsck and repair show\n"
		"their progress on standard error.\n"
		"configuration: POHMELFS_SERVERS, POHMELFS_GROUPS, POHMELFS_PREFIX, ... or\n"
		"the file named by POHMELFS_CONFIG (see pohmelfs(1), pohmelfs.conf(5)).\n");
}

int main(int argc, char **argv)
{
	struct cli cli;
	const char *pos[4];
	int npos = 0, i, r, dashdash = 0;

	memset(&cli, 0, sizeof(cli));
	/* Reply buffers of large reads come and go in 8 MiB pieces: keep them in
	 * the heap for reuse instead of an mmap (and its page faults) each time. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	for (i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++)
		;
	if (i < argc && (!strcmp(argv[i], "fsck") || !strcmp(argv[i], "repair")))
		return cmd_fsck_main(argc, argv);
	for (i = 1; i < argc; i++) {
		if (!dashdash && !strcmp(argv[i], "--")) {
			dashdash = 1;
		} else if (!dashdash && !strcmp(argv[i], "--json")) {
			cli.json = 1;
		} else if (!dashdash && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
			usage(stdout);
			return 0;
		} else if (!dashdash && argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "pohmelfs: unknown option %s\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (npos < (int)(sizeof(pos) / sizeof(pos[0]))) {
			pos[npos++] = argv[i];
		} else {
			fprintf(stderr, "pohmelfs: too many arguments\n");
			return 2;
		}
	}
	if (!npos) {
		usage(stderr);
		return 2;
	}
#define IS(name, nargs) (!strcmp(pos[0], name) && npos == (nargs) + 1)
	if (!strcmp(pos[0], "put") || !strcmp(pos[0], "get") || !strcmp(pos[0], "lookup") ||
	    !strcmp(pos[0], "del")) {
		if (npos != 2 || !pos[1][0]) {
			fprintf(stderr, "pohmelfs: %s needs exactly one KEY\n", pos[0]);
			return 2;
		}
	} else if (!strcmp(pos[0], "config")) {
		const char *hint;

		if (npos != 3 || strcmp(pos[1], "suggest")) {
			fprintf(stderr, "pohmelfs: config: the only config command is \"config "
				"suggest WORD\"\n");
			return 2;
		}
		/* pohmelfs-run's "did you mean": the same as the configuration's. */
		hint = pohm_config_suggest(pos[2]);
		if (!hint)
			return 1;
		printf("%s\n", hint);
		return 0;
	} else if (!strcmp(pos[0], "cache")) {
		if (npos != 2 || strcmp(pos[1], "clean")) {
			fprintf(stderr, "pohmelfs: cache: the only cache command is \"cache clean\"\n");
			return 2;
		}
	} else if (!IS("status", 0) && !IS("sync", 0) && !IS("stats", 0)) {
		if (!strcmp(pos[0], "status") || !strcmp(pos[0], "sync") ||
		    !strcmp(pos[0], "stats"))
			fprintf(stderr, "pohmelfs: %s takes no arguments\n", pos[0]);
		else
			fprintf(stderr, "pohmelfs: unknown command \"%s\"\n", pos[0]);
		usage(stderr);
		return 2;
	}
#undef IS
	/* The cache commands open what they need themselves. */
	if (!strcmp(pos[0], "sync")) {
		r = cmd_sync(&cli);
		goto out;
	} else if (!strcmp(pos[0], "stats")) {
		r = cmd_stats(&cli);
		goto out;
	} else if (!strcmp(pos[0], "cache")) {
		r = cmd_cache_clean(&cli);
		goto out;
	}
	r = cli_open(&cli);
	if (r)
		goto out;
	if (!strcmp(pos[0], "status"))
		r = cmd_status(&cli);
	else if (!strcmp(pos[0], "put"))
		r = cmd_put(&cli, pos[1]);
	else if (!strcmp(pos[0], "get"))
		r = cmd_get(&cli, pos[1]);
	else if (!strcmp(pos[0], "lookup"))
		r = cmd_lookup(&cli, pos[1]);
	else
		r = cmd_del(&cli, pos[1]);
out:
	if (cli.client)
		pohm_client_close(cli.client);
	pohm_config_free(&cli.cfg);
	return r;
}
