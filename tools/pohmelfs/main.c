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
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sys.h"

extern char **environ;

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

int cli_load(struct cli *cli)
{
	char err[POHM_CFG_ERRLEN];
	int r, logfd = -1;

	err[0] = 0;
	r = pohm_config_load(&cli->cfg, environ, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pohmelfs: %s\n", err[0] ? err : strerror(-r));
		return 2;
	}
	if (cli->cfg.log[0]) {
		logfd = pohm_sys_open_high(AT_FDCWD, cli->cfg.log,
					   O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (logfd < 0) {
			fprintf(stderr, "pohmelfs: log=%s: %s\n", cli->cfg.log, strerror(-logfd));
			return 2;
		}
	}
	pohm_log_setup((enum pohm_log_level)cli->cfg.log_level, logfd);
	cli->loaded = 1;
	return 0;
}

int cli_open(struct cli *cli)
{
	char err[POHM_CFG_ERRLEN];
	int r;

	if (!cli->loaded && (r = cli_load(cli)))
		return r;
	err[0] = 0;
	r = pohm_client_open(&cli->client, &cli->cfg, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pohmelfs: %s\n", err[0] ? err : strerror(-r));
		return 2;
	}
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
	int n, i;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;	/* overlong, out of range or a surrogate */
	return n;
}

void cli_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		int n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else if (n)
			fwrite(p, 1, (size_t)n, f);
		else
			fputs("\\ufffd", f);	/* a file name need not be UTF-8; JSON must */
		p += n ? n : 1;
	}
	fputc('"', f);
}

void cli_fmt_time(const struct pohm_time *t, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%09llu", (unsigned long long)t->tsec,
		 (unsigned long long)t->tnsec);
}

int cmd_fsck_main(int argc, char **argv);	/* fsck.c: parses its own options */

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
