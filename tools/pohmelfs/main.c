/*
 * main.c — `pohmelfs`: command line entry and dispatch.
 *
 *   pohmelfs [--json] put KEY | get KEY | lookup KEY | del KEY | status
 *
 * Configured by the POHMELFS_* environment and the config file, like the
 * library (core/config.h).  Exit status: 0 success, 1 the operation
 * failed (the message names key, group and node), 2 usage or configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "sys.h"

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pohmelfs [--json] COMMAND [KEY]\n"
		"raw storage commands (keys live in the fsid namespace):\n"
		"  put KEY      store standard input under KEY in every group\n"
		"  get KEY      write the committed content of KEY to standard output\n"
		"  lookup KEY   show each group's copy: size, timestamp, checksum, node\n"
		"  del KEY      delete KEY in every group\n"
		"  status       nodes, groups, backends, route table and latency\n"
		"configuration: POHMELFS_SERVERS, POHMELFS_GROUPS, POHMELFS_FSID, ... or\n"
		"the file named by POHMELFS_CONFIG (see pohmelfs.conf(5)).\n");
}

int cli_open(struct cli *cli)
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
	r = pohm_client_open(&cli->client, &cli->cfg, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pohmelfs: %s\n", err[0] ? err : strerror(-r));
		return 2;
	}
	return 0;
}

void cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void cli_fmt_time(const struct pohm_time *t, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%09llu", (unsigned long long)t->tsec,
		 (unsigned long long)t->tnsec);
}

int main(int argc, char **argv)
{
	struct cli cli;
	const char *cmd;
	int i = 1, r;

	memset(&cli, 0, sizeof(cli));
	/* Reply buffers of large reads come and go in 8 MiB pieces: keep them in
	 * the heap for reuse instead of an mmap (and its page faults) each time. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--json")) {
			cli.json = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "pohmelfs: unknown option %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
		i++;
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[i++];
	/* --json may also follow the command. */
	if (i < argc && !strcmp(argv[i], "--json")) {
		cli.json = 1;
		i++;
	}
	if (!strcmp(cmd, "status")) {
		if (i != argc) {
			usage(stderr);
			return 2;
		}
	} else if (!strcmp(cmd, "put") || !strcmp(cmd, "get") || !strcmp(cmd, "lookup") ||
		   !strcmp(cmd, "del")) {
		if (i + 1 != argc || !argv[i][0]) {
			fprintf(stderr, "pohmelfs: %s needs exactly one KEY\n", cmd);
			return 2;
		}
	} else {
		fprintf(stderr, "pohmelfs: unknown command \"%s\"\n", cmd);
		usage(stderr);
		return 2;
	}
	r = cli_open(&cli);
	if (r)
		goto out;
	if (!strcmp(cmd, "status"))
		r = cmd_status(&cli);
	else if (!strcmp(cmd, "put"))
		r = cmd_put(&cli, argv[i]);
	else if (!strcmp(cmd, "get"))
		r = cmd_get(&cli, argv[i]);
	else if (!strcmp(cmd, "lookup"))
		r = cmd_lookup(&cli, argv[i]);
	else
		r = cmd_del(&cli, argv[i]);
out:
	pohm_client_close(cli.client);
	pohm_config_free(&cli.cfg);
	return r;
}
