/*
 * fuzz_config.c — libFuzzer target for the configuration parser
 * (core/config/config.c): the input is split at its first 0xff byte into the text
 * of a configuration file and an environment.  The file text goes to
 * pohm_config_parse_text; the environment part is cut at newlines into
 * "NAME=value" strings for pohm_config_load_env (applied on top of the
 * file, as pohm_config_load does); then the client check, the raw text of
 * every key, the quorum, and the seconds and size parsers on each value.
 * Hostile input must give -EINVAL with a message, never a crash, an
 * over-read, a leak or an unterminated message.
 *
 * Build (tests/fuzz/run does this):
 *   clang -fsanitize=fuzzer,address -D_GNU_SOURCE -Icore/<layer> (each) tests/fuzz/fuzz_config.c core/<layer>/*.c -pthread
 * Seeds in tests/fuzz/corpus/config/: the sample configuration, every key
 * with good and bad values, environment-only inputs, comments, bare
 * booleans, long lines, size and seconds forms.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ENV 64

static const char *const keys[] = {
	"server", "fsid", "groups", "successful_write_count", "noreadcsum", "read_wait_timeout",
	"write_wait_timeout", "keepalive_interval", "read_repair", "auth_cookie", "protocol", "log",
	"log_level", "host_id", "prefix", "cache_dir", "cache_size", "cache_min_free",
	"sync_timeout", "sync_on_close", "attr_timeout", "http_compat", "stats", "nosuchkey",
};

/* The message must be a terminated string within the buffer. */
static void check_err(const char *err, size_t len)
{
	if (!memchr(err, '\0', len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t flen = cut ? (size_t)(cut - data) : size;
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN], *envbuf = NULL, *envp[MAX_ENV + 1];
	unsigned i, n = 0;
	uint64_t ns, sz;
	int pct;

	pohm_config_defaults(&c);
	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	if (pohm_config_parse_text(&c, (const char *)data, flen, "fuzz.conf", err, sizeof(err)))
		check_err(err, sizeof(err));
	if (cut) {
		size_t elen = size - flen - 1;
		char *p;

		envbuf = malloc(elen + 1);
		if (!envbuf)
			goto out;
		memcpy(envbuf, cut + 1, elen);
		envbuf[elen] = '\0';
		for (p = envbuf; n < MAX_ENV && *p;) {
			char *nl = strchr(p, '\n');

			envp[n++] = p;
			if (!nl)
				break;
			*nl = '\0';
			p = nl + 1;
		}
		envp[n] = NULL;
		if (pohm_config_load_env(&c, envp, err, sizeof(err)))
			check_err(err, sizeof(err));
	}
	if (pohm_config_check_client(&c, err, sizeof(err)))
		check_err(err, sizeof(err));
	pohm_config_write_quorum(&c);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = pohm_config_raw(&c, keys[i]);

		pohm_config_bool(&c, keys[i]);
		if (v) {
			(void)strlen(v);
			pohm_config_parse_seconds(v, &ns);
			pohm_config_parse_size(v, &sz, &pct);
		}
	}
	/* Setting every key again from the same values must be accepted. */
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = pohm_config_raw(&c, keys[i]);
		char *copy;

		if (!v || !strcmp(keys[i], "server"))
			continue;
		copy = strdup(v);
		if (!copy)
			break;
		if (pohm_config_set(&c, keys[i], copy, POHM_CFG_CALLER, err, sizeof(err)))
			check_err(err, sizeof(err));
		free(copy);
	}
out:
	free(envbuf);
	pohm_config_free(&c);
	pohm_config_free(&c);	/* documented: safe twice */
	return 0;
}
