/*
 * cli.c — the `pohmelfs` tool's shared helpers: load the configuration,
 * open the client, JSON and time output.  Used by main.c and by every
 * subcommand (raw.c, status.c, cache.c, fsck.c); it calls none of them, so
 * the tool's imports run one way: main -> subcommands -> cli.c.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sys.h"

extern char **environ;

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
