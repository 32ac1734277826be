/*
 * config.c — pohmelfs-node options: its keys and what each takes.  The file
 * format, the value rules (numbers, sizes, booleans) and the messages are
 * core/config's (config.h "the shared reader"), the same as the client's.
 *
 * Every option has a config-file form: "key = value" lines, '#' comments,
 * keys spelled like the long options with '-' or '_' (auth_cookie ==
 * auth-cookie), "join" repeatable, flags ("nosync") bare or with a boolean
 * value.  The file (--config FILE) is read first; command-line options
 * override it.  See conf/node.conf and pohmelfs-node(8).
 */
#include "node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "sys.h"

/* Format a message that is not about one value; always -EINVAL. */
static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	return -EINVAL;
}

/* See node.h. */
int node_parse_size(const char *s, uint64_t *out)
{
	int percent;

	if (pohm_config_parse_size(s, out, &percent) || percent)
		return -EINVAL;
	return 0;
}

#define ADDR_EXPECT	"host:port with a numeric IPv4 or [IPv6] address (or localhost)"

enum node_key {
	K_LISTEN, K_GROUP, K_DATA, K_JOIN, K_IDS, K_NOSYNC, K_SYNC_INTERVAL, K_AUTH_COOKIE,
	K_LOG, K_LOG_LEVEL, K_PIDFILE, K_PROTOCOL, K_THREADS, K_MAX_PACKET, K_MAX_OBJECT,
	K_BLOB_SIZE, K_WATCH_PID, K_BACKEND_ID, K_NKEYS
};

/* Every key of pohmelfs-node(8) and what a good value looks like. */
static const struct {
	const char *name;
	const char *expect;
} keys[K_NKEYS] = {
	[K_LISTEN] = { "listen", ADDR_EXPECT },
	[K_GROUP] = { "group", "a group number 1..4294967295" },
	[K_DATA] = { "data", "a directory path" },
	[K_JOIN] = { "join", ADDR_EXPECT },
	[K_IDS] = { "ids", "a count 1..1024" },
	[K_NOSYNC] = { "nosync", "1, yes, true or on; 0, no, false or off" },
	[K_SYNC_INTERVAL] = { "sync_interval", "seconds between syncs, 0..86400" },
	[K_AUTH_COOKIE] = { "auth_cookie", "at most 63 bytes" },
	[K_LOG] = { "log", "a file path" },
	[K_LOG_LEVEL] = { "log_level", "error, warn, info or debug (or 0-3)" },
	[K_PIDFILE] = { "pidfile", "a file path" },
	[K_PROTOCOL] = { "protocol", "3.0 or 2.26" },
	[K_THREADS] = { "threads", "a thread count 1..256" },
	[K_MAX_PACKET] = { "max_packet", "a size between 4K and 4G (K, M, G or T suffix)" },
	[K_MAX_OBJECT] = { "max_object", "a size between 1M and 64G (K, M, G or T suffix)" },
	[K_BLOB_SIZE] = { "blob_size", "a size between 1M and 1T (K, M, G or T suffix)" },
	[K_WATCH_PID] = { "watch_pid", "a pid" },
	[K_BACKEND_ID] = { "backend_id", "a backend id 0..2147483647" },
};

/* Copy a string option, refusing one that does not fit. */
static int copy_str(char *dst, size_t dstlen, const char *val, const char **why)
{
	if (strlen(val) >= dstlen) {
		*why = "too long";
		return -EINVAL;
	}
	strcpy(dst, val);
	return 0;
}

/* A size in [lo, hi]; 0 or -EINVAL. */
static int size_in(const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
	return node_parse_size(val, out) || *out < lo || *out > hi ? -EINVAL : 0;
}

/* Parse val into key k's field; 0 or -EINVAL (*why may say why). */
static int apply(struct node_config *c, enum node_key k, const char *val, const char **why)
{
	enum pohm_protocol proto;
	uint64_t v;
	int b;

	switch (k) {
	case K_LISTEN:
		if (pohm_addr_parse(&c->listen, val))
			return -EINVAL;
		c->have_listen = 1;
		return 0;
	case K_GROUP:
		if (pohm_config_parse_uint(val, 0xFFFFFFFFu, &v) || !v)
			return -EINVAL;
		c->group = (uint32_t)v;
		c->have_group = 1;
		return 0;
	case K_DATA:
		return copy_str(c->data, sizeof(c->data), val, why);
	case K_JOIN:
		if (c->njoin >= NODE_MAX_JOIN) {
			*why = "too many join lines (at most 64)";
			return -EINVAL;
		}
		if (pohm_addr_parse(&c->join[c->njoin], val))
			return -EINVAL;
		c->njoin++;
		return 0;
	case K_IDS:
		if (pohm_config_parse_uint(val, 1024, &v) || !v)
			return -EINVAL;
		c->ids = (unsigned)v;
		return 0;
	case K_NOSYNC:
		if (pohm_config_parse_bool(val, &b))
			return -EINVAL;
		c->nosync = b;
		return 0;
	case K_SYNC_INTERVAL:
		if (pohm_config_parse_uint(val, 86400, &v))
			return -EINVAL;
		c->sync_interval = (int)v;
		return 0;
	case K_AUTH_COOKIE:
		return copy_str(c->auth_cookie, sizeof(c->auth_cookie), val, why);
	case K_LOG:
		return copy_str(c->log, sizeof(c->log), val, why);
	case K_LOG_LEVEL:
		b = pohm_log_parse_level(val);
		if (b < 0)
			return -EINVAL;
		c->log_level = b;
		return 0;
	case K_PIDFILE:
		return copy_str(c->pidfile, sizeof(c->pidfile), val, why);
	case K_PROTOCOL:
		if (pohm_config_parse_protocol(val, &proto))
			return -EINVAL;
		c->proto_major = proto == POHM_PROTO_2_26 ? 2 : 3;
		c->proto_minor = proto == POHM_PROTO_2_26 ? 26 : 0;
		return 0;
	case K_THREADS:
		if (pohm_config_parse_uint(val, 256, &v) || !v)
			return -EINVAL;
		c->threads = (unsigned)v;
		return 0;
	case K_MAX_PACKET:
		return size_in(val, 4096, POHM_MAX_PACKET, &c->max_packet);
	case K_MAX_OBJECT:
		return size_in(val, 1u << 20, 1ULL << 36, &c->max_object);
	case K_BLOB_SIZE:
		return size_in(val, 1u << 20, 1ULL << 40, &c->blob_size);
	case K_WATCH_PID:
		if (pohm_config_parse_uint(val, 0x7FFFFFFF, &v))
			return -EINVAL;
		c->watch_pid = (int)v;
		return 0;
	case K_BACKEND_ID:
		if (pohm_config_parse_uint(val, 0x7FFFFFFF, &v))
			return -EINVAL;
		c->backend_id = (int32_t)v;
		return 0;
	case K_NKEYS:
		break;
	}
	return -EINVAL;
}

/* Canonical key: '_' for '-'. */
static void canon(char *dst, size_t dstlen, const char *key)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < dstlen; i++)
		dst[i] = key[i] == '-' ? '_' : key[i];
	dst[i] = '\0';
}

/*
 * Apply key=val (val NULL: a bare key, a flag); messages begin with where,
 * in core/config's one format (pohm_config_bad_value, pohm_config_unknown_key).
 */
static int set_key(struct node_config *c, const char *key, const char *val, const char *where,
		   char *err, size_t errlen)
{
	const char *why = NULL, *hint = NULL;
	unsigned i, best = 3, d;
	char k[64];

	canon(k, sizeof(k), key);
	for (i = 0; i < K_NKEYS; i++)
		if (!strcmp(k, keys[i].name))
			break;
	if (i == K_NKEYS) {
		for (i = 0; i < K_NKEYS; i++) {
			d = pohm_config_distance(k, keys[i].name);
			if (d < best) {
				best = d;
				hint = keys[i].name;
			}
		}
		pohm_config_unknown_key(err, errlen, where, key, val, "pohmelfs-node(8)", hint);
		return -EINVAL;
	}
	if (!val && i != K_NOSYNC) {
		pohm_config_bad_value(err, errlen, where, keys[i].name, NULL, NULL, keys[i].expect);
		return -EINVAL;
	}
	if (apply(c, (enum node_key)i, val ? val : "", &why)) {
		pohm_config_bad_value(err, errlen, where, keys[i].name, val, why, keys[i].expect);
		return -EINVAL;
	}
	return 0;
}

/* See node.h. */
int node_config_set(struct node_config *c, const char *key, const char *val, char *err,
		    size_t errlen)
{
	return set_key(c, key, val, "", err, errlen);
}

/* Every option's default. */
static void defaults(struct node_config *c)
{
	memset(c, 0, sizeof(*c));
	c->ids = NODE_DEFAULT_IDS;
	c->log_level = POHM_LOG_INFO;
	c->proto_major = 3;
	c->proto_minor = 0;
	c->threads = NODE_DEFAULT_THREADS;
	c->max_packet = POHM_MAX_PACKET;
	c->max_object = 1ULL << 36;
	c->backend_id = 0;
	c->sync_interval = NODE_DEFAULT_SYNC_INTERVAL;
}

/* The line callback of the --config file (pohm_config_read_file). */
static int file_line(void *arg, const char *key, const char *val, const char *where, char *err,
		     size_t errlen)
{
	return set_key(arg, key, val, where, err, errlen);
}

/* Apply every key = value line of path; errors name FILE:LINE. */
static int load_file(struct node_config *c, const char *path, char *err, size_t errlen)
{
	int r = pohm_config_read_file(path, file_line, c, err, errlen);

	if (r == -ENOENT)
		snprintf(err, errlen, "%s: cannot open the configuration file: %s", path,
			 strerror(ENOENT));
	return r ? -EINVAL : 0;
}

/* See node.h. */
int node_config_parse(struct node_config *c, int argc, char **argv, char *err, size_t errlen)
{
	int i, ret;

	defaults(c);
	err[0] = '\0';
	for (i = 1; i < argc; i++) {
		const char *f = !strcmp(argv[i], "--config") && i + 1 < argc ? argv[i + 1] :
				!strncmp(argv[i], "--config=", 9) ? argv[i] + 9 : NULL;

		if (f && (ret = load_file(c, f, err, errlen)))
			return ret;
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char key[64], where[80];
		const char *eq;

		if (strncmp(a, "--", 2))
			return fail(err, errlen, "unexpected argument '%s'%s", a, "");
		a += 2;
		eq = strchr(a, '=');
		if (eq) {
			snprintf(key, sizeof(key), "%.*s", (int)(eq - a), a);
			val = eq + 1;
		} else {
			snprintf(key, sizeof(key), "%s", a);
		}
		canon(key, sizeof(key), key);
		if (!strcmp(key, "config")) {
			if (!val)
				i++;
			continue;
		}
		snprintf(where, sizeof(where), "--%.*s: ", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
		if (!val && strcmp(key, "nosync") && i + 1 < argc)
			val = argv[++i];
		ret = set_key(c, key, val, where, err, errlen);
		if (ret)
			return ret;
	}
	if (!c->have_listen || !c->have_group || !c->data[0])
		return fail(err, errlen, "--listen, --group and --data are required%s%s", "", "");
	return 0;
}
