/*
 * mount.c — open client, store and cache for one prefix (mount.h).
 */
#include "mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "sys.h"
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

/* The configured (or default) cache_dir, whoever may use it. */
static int configured_cache_dir(const struct pohm_config *cfg, char *out, size_t len)
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

/* pohm_mount_cache_dir; *per_user says whether it is the per-user one. */
static int cache_dir_for(const struct pohm_config *cfg, char *out, size_t len, int *per_user)
{
	uid_t euid = pohm_sys_geteuid();
	int r = configured_cache_dir(cfg, out, len);

	*per_user = 0;
	if (euid == 0 || (!r && !pohm_mount_dir_foreign(out, euid)))
		return r;
	if (r && r != -ENOENT)
		return r;	/* no HOME at all: a per-user cache still works */
	*per_user = 1;
	return pohm_mount_user_dir(pohm_config_raw(cfg, "prefix"), euid, out, len);
}

int pohm_mount_cache_dir(const struct pohm_config *cfg, char *out, size_t len)
{
	int per_user;

	return cache_dir_for(cfg, out, len, &per_user);
}

int pohm_mount_open(struct pohm_mount *m, const struct pohm_config *cfg, char *err, size_t errlen)
{
	return pohm_mount_open_like(m, cfg, NULL, err, errlen);
}

/*
 * The cache's root check failed (at the first call that needed the
 * storage, core/ns/nslazy.c): say why once, as a failed open said it.
 */
static void root_failed(void *arg, int err)
{
	struct pohm_mount *m = arg;
	char why[400];

	if (m->client && pohm_client_offline(m->client))
		return;		/* offline: core/store said so once, and the cached root serves */
	if (__atomic_exchange_n(&m->root_said, 1, __ATOMIC_RELAXED))
		return;
	why[0] = '\0';
	if (m->client)
		pohm_net_last_error(pohm_client_net(m->client), why, sizeof(why));
	pohm_err("fsid=%s: cannot open the root (%s)%s%s; calls that need the storage fail until "
		 "it answers", m->fsid, strerror(-err), why[0] ? ": " : "", why);
}

/*
 * Offline mode, shared by the processes of a cache: cache_dir/offline
 * holds "UNTIL STEP" (CLOCK_MONOTONIC ns, boot-wide) while some process
 * found that no group answers, "0 0" after one found it answering.  A
 * library's process reads it once, after it opens the mount
 * (pohm_mount_offline_load), so a program started during an outage
 * neither waits for a connect nor changes what it cannot push; it probes
 * again when the window is over, as the one that wrote it does.  The
 * tools do not read it (pohmelfs sync tries at once).  Written only when
 * the mode changes.
 */
static void offline_note(void *arg, uint64_t until_ns, uint64_t step_ns)
{
	struct pohm_mount *m = arg;
	char path[4200], line[64];
	int fd, n, saved = errno;

	snprintf(path, sizeof(path), "%s/offline", m->cache_dir);
	fd = pohm_sys_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto out;
	n = snprintf(line, sizeof(line), "%020llu %020llu\n", (unsigned long long)until_ns,
		     (unsigned long long)step_ns);
	pohm_sys_pwrite_full(fd, line, (size_t)n, 0);
	pohm_sys_close(fd);
out:
	errno = saved;
}

void pohm_mount_offline_load(struct pohm_mount *m)
{
	char path[4200], line[64];
	unsigned long long until, step;
	ssize_t n;
	int fd, saved = errno;

	snprintf(path, sizeof(path), "%s/offline", m->cache_dir);
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		goto out;
	n = pohm_sys_pread_full(fd, line, sizeof(line) - 1, 0);
	pohm_sys_close(fd);
	if (n <= 0)
		goto out;
	line[n] = '\0';
	if (sscanf(line, "%llu %llu", &until, &step) == 2)
		pohm_client_offline_seed(m->client, until, step);
out:
	errno = saved;
}

int pohm_mount_offline(const struct pohm_mount *m)
{
	return m->client && pohm_client_offline(m->client);
}

/* The cache's pohm_cache_opts.offline. */
static int mount_offline(void *arg)
{
	return pohm_mount_offline(arg);
}

int pohm_mount_open_like(struct pohm_mount *m, const struct pohm_config *cfg,
			 const struct pohm_mount *like, char *err, size_t errlen)
{
	struct pohm_cache_opts o = { 0 };
	const char *prefix = pohm_config_raw(cfg, "prefix");
	char host[256];
	int r, pfd = -1;

	memset(m, 0, sizeof(*m));
	if (!prefix || prefix[0] != '/') {
		snprintf(err, errlen, "prefix=%s: expected an absolute directory path",
			 prefix ? prefix : "(unset)");
		return -EINVAL;
	}
	snprintf(m->prefix, sizeof(m->prefix), "%s", prefix);
	m->owner = pohm_sys_geteuid();
	m->bounded = pohm_config_raw(cfg, "cache_size") || pohm_config_raw(cfg, "cache_min_free");
	r = cache_dir_for(cfg, m->cache_dir, sizeof(m->cache_dir), &m->per_user);
	if (r) {
		snprintf(err, errlen, "cache_dir: cannot derive it (set cache_dir= or HOME)");
		return r;
	}
	if (m->per_user) {
		/* Another user's cache_dir (a setuid or seteuid after start, or
		 * its HOME): this user's own cache, checked before any use. */
		r = pohm_mount_user_dir_make(m->cache_dir, m->owner, err, errlen);
		if (r)
			return r;
		pohm_info("uid %u cannot use the configured cache_dir (another user's): its "
			  "cache is %s", (unsigned)m->owner, m->cache_dir);
	}
	r = pohm_config_check_client(cfg, err, errlen);
	if (r)
		return r;
	r = pohm_client_open(&m->client, cfg, err, errlen);
	if (r)
		return r;
	/* The cache's processes share the route table the last one saw (0074). */
	pohm_net_route_file(pohm_client_net(m->client), m->cache_dir);	/* too long: none */
	pohm_kvio_init(&m->kv, m->client);
	if (cfg->host_id[0])
		snprintf(host, sizeof(host), "%s", cfg->host_id);
	else if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "host");
	if (m->per_user) {
		/* Its own identity: conflict copies of two caches of one host apart. */
		size_t n = strnlen(host, sizeof(host) - 16);

		snprintf(host + n, sizeof(host) - n, ".uid%u", (unsigned)m->owner);
	}
	o.prefix = m->prefix;
	o.cache_dir = m->cache_dir;
	if (like && like->cache && !strcmp(like->prefix, m->prefix)) {
		pfd = pohm_cache_prefix_fd(like->cache);
		o.prefix_fd = &pfd;
	}
	o.fsid = cfg->fsid;
	snprintf(m->fsid, sizeof(m->fsid), "%s", cfg->fsid);
	o.root_failed = root_failed;
	o.root_failed_arg = m;
	o.offline = mount_offline;
	o.offline_arg = m;
	o.host_id = host;
	o.attr_timeout_ns = seconds_key(cfg, "attr_timeout", 1000000000ULL);
	o.kv = &m->kv;
	m->sync_timeout_ns = seconds_key(cfg, "sync_timeout", 5000000000ULL);
	m->sync_on_close = pohm_config_bool(cfg, "sync_on_close");
	o.http_compat = pohm_config_bool(cfg, "http_compat");
	o.no_inline = !pohm_config_bool(cfg, "inline_data");
	r = pohm_cache_open(&m->cache, &o, err, errlen);
	if (!r)
		pohm_client_offline_hook(m->client, offline_note, m);
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

void pohm_mount_net_counts(const struct pohm_mount *m, struct pohm_net_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (m->client)
		pohm_net_counts(pohm_client_net(m->client), out);
}

void pohm_mount_atfork_child(struct pohm_mount *m)
{
	pohm_cache_atfork_child(m->cache);
}

void pohm_mount_close(struct pohm_mount *m)
{
	pohm_cache_close(m->cache);
	if (m->client)
		pohm_client_close(m->client);
	memset(m, 0, sizeof(*m));
}
