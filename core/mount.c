/*
 * mount.c — open client, store and cache for one prefix (mount.h).
 */
#include "mount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "net.h"

/* Seconds key as ns, or def when unset. */
static uint64_t seconds_key(const struct pohm_config *cfg, const char *key, uint64_t def)
{
	const char *v = pohm_config_raw(cfg, key);
	uint64_t ns;

	if (v && !pohm_config_parse_seconds(v, &ns))
		return ns;
	return def;
}

int pohm_mount_cache_dir(const struct pohm_config *cfg, char *out, size_t len)
{
	const char *cd = pohm_config_raw(cfg, "cache_dir"), *prefix = pohm_config_raw(cfg, "prefix");
	const char *base = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char esc[1024];
	size_t i;
	int n;

	if (cd && *cd) {
		n = snprintf(out, len, "%s", cd);
		return n < (int)len ? 0 : -ENAMETOOLONG;
	}
	if (!prefix || strlen(prefix) >= sizeof(esc))
		return -EINVAL;
	for (i = 0; prefix[i]; i++)
		esc[i] = prefix[i] == '/' ? '_' : prefix[i];
	esc[i] = '\0';
	if (base && *base)
		n = snprintf(out, len, "%.2048s/pohmelfs/%s", base, esc);
	else if (home && *home)
		n = snprintf(out, len, "%.2048s/.local/state/pohmelfs/%s", home, esc);
	else
		return -ENOENT;
	return n < (int)len ? 0 : -ENAMETOOLONG;
}

int pohm_mount_open(struct pohm_mount *m, const struct pohm_config *cfg, char *err, size_t errlen)
{
	struct pohm_cache_opts o = { 0 };
	const char *prefix = pohm_config_raw(cfg, "prefix");
	char host[256];
	int r;

	memset(m, 0, sizeof(*m));
	if (!prefix || prefix[0] != '/') {
		snprintf(err, errlen, "prefix=%s: expected an absolute directory path",
			 prefix ? prefix : "(unset)");
		return -EINVAL;
	}
	snprintf(m->prefix, sizeof(m->prefix), "%s", prefix);
	r = pohm_mount_cache_dir(cfg, m->cache_dir, sizeof(m->cache_dir));
	if (r) {
		snprintf(err, errlen, "cache_dir: cannot derive it (set cache_dir= or HOME)");
		return r;
	}
	r = pohm_config_check_client(cfg, err, errlen);
	if (r)
		return r;
	r = pohm_client_open(&m->client, cfg, err, errlen);
	if (r)
		return r;
	pohm_kvio_init(&m->kv, m->client);
	if (cfg->host_id[0])
		snprintf(host, sizeof(host), "%s", cfg->host_id);
	else if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "host");
	o.prefix = m->prefix;
	o.cache_dir = m->cache_dir;
	o.fsid = cfg->fsid;
	o.host_id = host;
	o.attr_timeout_ns = seconds_key(cfg, "attr_timeout", 1000000000ULL);
	o.kv = &m->kv;
	m->sync_timeout_ns = seconds_key(cfg, "sync_timeout", 5000000000ULL);
	m->sync_on_close = pohm_config_bool(cfg, "sync_on_close");
	o.http_compat = pohm_config_bool(cfg, "http_compat");
	r = pohm_cache_open(&m->cache, &o, err, errlen);
	if (r == -EHOSTUNREACH || r == -ETIMEDOUT || r == -ENOTCONN || r == -EPERM) {
		/* Say why no node answered (a refused auth_cookie, a version mismatch...). */
		char why[400];
		size_t n = strlen(err);

		pohm_net_last_error(pohm_client_net(m->client), why, sizeof(why));
		if (why[0] && n < errlen)
			snprintf(err + n, errlen - n, ": %s", why);
	}
	if (r) {
		pohm_client_close(m->client);
		m->client = NULL;
	}
	return r;
}

void pohm_mount_close(struct pohm_mount *m)
{
	pohm_cache_close(m->cache);
	if (m->client)
		pohm_client_close(m->client);
	memset(m, 0, sizeof(*m));
}
