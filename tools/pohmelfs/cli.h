/*
 * cli.h — shared pieces of the `pohmelfs` tool: the opened client, output
 * helpers (cli.c) and the subcommand entry points (raw.c, status.c,
 * cache.c, fsck.c) that main.c's table calls.  The helpers call no
 * subcommand: main -> subcommands -> cli.c, no circle.
 */
#ifndef POHM_TOOLS_POHMELFS_CLI_H
#define POHM_TOOLS_POHMELFS_CLI_H

#include <stdio.h>

#include "config.h"
#include "store.h"

struct cli {
	struct pohm_config cfg;
	struct pohm_client *client;
	int json;			/* --json */
	int loaded;			/* cfg holds the loaded configuration */
};

/* Load the configuration and set up logging; 0 or prints the error and returns 2. */
int cli_load(struct cli *cli);
/* cli_load, then open the client; 0 or prints the error and returns 2. */
int cli_open(struct cli *cli);
/* Print s as a JSON string (with quotes) to f. */
void cli_json_str(FILE *f, const char *s);
/* "sec.nsec" of a timestamp into buf. */
void cli_fmt_time(const struct pohm_time *t, char *buf, size_t len);

int cmd_fsck_main(int argc, char **argv);	/* fsck.c: parses its own options */

int cmd_put(struct cli *cli, const char *key);
int cmd_get(struct cli *cli, const char *key);
int cmd_lookup(struct cli *cli, const char *key);
int cmd_del(struct cli *cli, const char *key);
int cmd_status(struct cli *cli);

/* cache.c: the prefix's cache (status's cache part, sync, stats, cache clean). */
void status_cache(struct cli *cli);
int cmd_sync(struct cli *cli);
int cmd_stats(struct cli *cli);
int cmd_cache_clean(struct cli *cli);

#endif
