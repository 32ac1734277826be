/*
 * config.c — pohmelfs-node options.
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
#include <strings.h>

#include "log.h"

/* Format an error message; always -EINVAL. */
static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	return -EINVAL;
}

/* See node.h. */
int node_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end && strcasecmp(end, "b") && strcasecmp(end, "ib"))
		return -EINVAL;
	if (shift && v > (~0ULL >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* A decimal number <= max; 0 or -EINVAL. */
static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* 1, 0, or -1 when s is not a boolean (empty counts as true). */
static int parse_bool(const char *s)
{
	if (!s || !*s || !strcasecmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true") ||
	    !strcasecmp(s, "on"))
		return 1;
	if (!strcasecmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false") ||
	    !strcasecmp(s, "off"))
		return 0;
	return -1;
}

/* Copy a string option, refusing one that does not fit. */
static int copy_str(char *dst, size_t dstlen, const char *key, const char *val, char *err,
		    size_t errlen)
{
	if (strlen(val) >= dstlen)
		return fail(err, errlen, "%s: value too long: %s", key, val);
	strcpy(dst, val);
	return 0;
}

/* Canonical key: lower case, '_' for '-'. */
static void canon(char *dst, size_t dstlen, const char *key)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < dstlen; i++)
		dst[i] = key[i] == '-' ? '_' : key[i];
	dst[i] = '\0';
}

/* See node.h. */
int node_config_set(struct node_config *c, const char *key, const char *val, char *err,
		    size_t errlen)
{
	char k[64];
	uint64_t v;

	canon(k, sizeof(k), key);
	if (!val)
		val = "";
	if (!strcmp(k, "listen")) {
		if (pohm_addr_parse(&c->listen, val))
			return fail(err, errlen, "%s: not an address (host:port): %s", key, val);
		c->have_listen = 1;
	} else if (!strcmp(k, "group")) {
		if (parse_uint(val, 0xFFFFFFFFu, &v) || !v)
			return fail(err, errlen, "%s: not a group number (1..2^32-1): %s", key, val);
		c->group = (uint32_t)v;
		c->have_group = 1;
	} else if (!strcmp(k, "data")) {
		return copy_str(c->data, sizeof(c->data), key, val, err, errlen);
	} else if (!strcmp(k, "join")) {
		if (c->njoin >= NODE_MAX_JOIN)
			return fail(err, errlen, "%s: too many (max 64): %s", key, val);
		if (pohm_addr_parse(&c->join[c->njoin], val))
			return fail(err, errlen, "%s: not an address (host:port): %s", key, val);
		c->njoin++;
	} else if (!strcmp(k, "ids")) {
		if (parse_uint(val, 1024, &v) || !v)
			return fail(err, errlen, "%s: not a count (1..1024): %s", key, val);
		c->ids = (unsigned)v;
	} else if (!strcmp(k, "nosync")) {
		int b = parse_bool(val);

		if (b < 0)
			return fail(err, errlen, "%s: not a boolean: %s", key, val);
		c->nosync = b;
	} else if (!strcmp(k, "sync_interval")) {
		if (parse_uint(val, 86400, &v))
			return fail(err, errlen, "%s: seconds between syncs (0..86400): %s", key, val);
		c->sync_interval = (int)v;
	} else if (!strcmp(k, "auth_cookie")) {
		return copy_str(c->auth_cookie, sizeof(c->auth_cookie), key, val, err, errlen);
	} else if (!strcmp(k, "log")) {
		return copy_str(c->log, sizeof(c->log), key, val, err, errlen);
	} else if (!strcmp(k, "log_level")) {
		int l = pohm_log_parse_level(val);

		if (l < 0)
			return fail(err, errlen, "%s: not a level (error|warn|info|debug): %s", key,
				    val);
		c->log_level = l;
	} else if (!strcmp(k, "pidfile")) {
		return copy_str(c->pidfile, sizeof(c->pidfile), key, val, err, errlen);
	} else if (!strcmp(k, "protocol")) {
		if (!strcmp(val, "3.0") || !strcmp(val, "3")) {
			c->proto_major = 3;
			c->proto_minor = 0;
		} else if (!strcmp(val, "2.26")) {
			c->proto_major = 2;
			c->proto_minor = 26;
		} else {
			return fail(err, errlen, "%s: 3.0 or 2.26, not %s", key, val);
		}
	} else if (!strcmp(k, "threads")) {
		if (parse_uint(val, 256, &v) || !v)
			return fail(err, errlen, "%s: not a thread count (1..256): %s", key, val);
		c->threads = (unsigned)v;
	} else if (!strcmp(k, "max_packet")) {
		if (node_parse_size(val, &v) || v < 4096 || v > POHM_MAX_PACKET)
			return fail(err, errlen, "%s: a size between 4K and 4G, not %s", key, val);
		c->max_packet = v;
	} else if (!strcmp(k, "max_object")) {
		if (node_parse_size(val, &v) || v < (1u << 20) || v > (1ULL << 36))
			return fail(err, errlen, "%s: a size between 1M and 64G, not %s", key, val);
		c->max_object = v;
	} else if (!strcmp(k, "blob_size")) {
		if (node_parse_size(val, &v) || v < (1u << 20) || v > (1ULL << 40))
			return fail(err, errlen, "%s: a size between 1M and 1T, not %s", key, val);
		c->blob_size = v;
	} else if (!strcmp(k, "watch_pid")) {
		if (parse_uint(val, 0x7FFFFFFF, &v))
			return fail(err, errlen, "%s: not a pid: %s", key, val);
		c->watch_pid = (int)v;
	} else if (!strcmp(k, "backend_id")) {
		if (parse_uint(val, 0x7FFFFFFF, &v))
			return fail(err, errlen, "%s: not a backend id: %s", key, val);
		c->backend_id = (int32_t)v;
	} else {
		return fail(err, errlen, "unknown option '%s'%s", key, "");
	}
	return 0;
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

/* Strip blanks and the line end on both sides (in place). */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Apply every key = value line of path; errors name file:line. */
static int load_file(struct node_config *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[NODE_PATH_MAX + 128], where[NODE_PATH_MAX + 32];
	int lineno = 0, ret = 0;

	if (!f)
		return fail(err, errlen, "cannot read config %s: %s", path, strerror(errno));
	while (!ret && fgets(line, sizeof(line), f)) {
		char *s = trim(line), *eq, *key, *val = NULL;

		lineno++;
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (eq) {
			*eq = '\0';
			val = trim(eq + 1);
		}
		key = trim(s);
		ret = node_config_set(c, key, val, err, errlen);
		if (ret) {
			snprintf(where, sizeof(where), "%s:%d: ", path, lineno);
			if (strlen(where) + strlen(err) < errlen) {
				memmove(err + strlen(where), err, strlen(err) + 1);
				memcpy(err, where, strlen(where));
			}
		}
	}
	fclose(f);
	return ret;
}

/* See node.h. */
int node_config_parse(struct node_config *c, int argc, char **argv, char *err, size_t errlen)
{
	int i, ret;

	defaults(c);
	err[0] = '\0';
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			ret = load_file(c, argv[i + 1], err, errlen);
			if (ret)
				return ret;
		}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char key[64];
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
		if (!val && strcmp(key, "nosync")) {
			if (i + 1 >= argc)
				return fail(err, errlen, "--%s needs a value%s", a, "");
			val = argv[++i];
		}
		ret = node_config_set(c, key, val, err, errlen);
		if (ret)
			return ret;
	}
	if (!c->have_listen || !c->have_group || !c->data[0])
		return fail(err, errlen, "--listen, --group and --data are required%s%s", "", "");
	return 0;
}
