/*
 * config.c — configuration keys, their parsers and the file/env loaders.
 *
 * Sections: value parsers · the key table · set/raw · file · environment ·
 * load and checks.  No libc call here allocates memory for us to free
 * (DESIGN.md §5): strings are copied with our own helper.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sys.h"

#define CFG_FILE_MAX (1u << 20)	/* a config file larger than 1 MiB is an error */

/* ---------------------------------------------------------------- parsers */

static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static char *dupstr(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}

/* Decimal unsigned integer, no sign, no spaces, no overflow. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Locale-independent: "5", "0.5", ".25", "10.000000001" (ns precision kept). */
int pohm_config_parse_seconds(const char *s, uint64_t *ns)
{
	uint64_t whole = 0, frac = 0, scale = 100000000ULL;
	int digits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		whole = whole * 10 + (uint64_t)(*s - '0');
		if (whole > 1000000000ULL)	/* > ~31 years: certainly a mistake */
			return -EINVAL;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			frac += (uint64_t)(*s - '0') * scale;
			scale /= 10;
		}
	}
	if (*s || !digits)
		return -EINVAL;
	*ns = whole * 1000000000ULL + frac;
	return 0;
}

/* What parse_bool accepts, for messages (and pohmelfs.conf(5)). */
#define BOOL_EXPECT	"1, yes, true or on; 0, no, false or off"

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on", "" };
	static const char *const no[] = { "0", "no", "false", "off" };
	unsigned i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(s, yes[i]))
			return *out = 1, 0;
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (!strcasecmp(s, no[i]))
			return *out = 0, 0;
	return -EINVAL;
}

int pohm_config_parse_bool(const char *s, int *out)
{
	return parse_bool(s, out);
}

int pohm_config_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int pohm_config_parse_protocol(const char *s, enum pohm_protocol *p)
{
	if (!strcmp(s, "3.0") || !strcmp(s, "3"))
		*p = POHM_PROTO_3_0;
	else if (!strcmp(s, "2.26"))
		*p = POHM_PROTO_2_26;
	else
		return -EINVAL;
	return 0;
}

int pohm_config_parse_size(const char *s, uint64_t *out, int *percent)
{
	char num[32];
	size_t n = strlen(s);
	uint64_t v, mul = 1;

	if (!n || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'k': case 'K': mul = 1ULL << 10; break;
	case 'm': case 'M': mul = 1ULL << 20; break;
	case 'g': case 'G': mul = 1ULL << 30; break;
	case 't': case 'T': mul = 1ULL << 40; break;
	case '%': mul = 0; break;
	default: break;
	}
	if (mul != 1 || num[n - 1] == '%')
		num[n - 1] = 0;
	if (parse_u64(num, &v))
		return -EINVAL;
	*percent = !mul;
	if (!mul)
		return v > 100 ? -EINVAL : (*out = v, 0);
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_groups(const char *s, uint32_t *g, unsigned *ng)
{
	unsigned n = 0, i;
	const char *p = s;

	while (*p) {
		char part[16];
		const char *e = strchr(p, ':');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		uint64_t v;

		if (!len || len >= sizeof(part) || n >= POHM_MAX_GROUPS)
			return -EINVAL;
		memcpy(part, p, len);
		part[len] = 0;
		if (parse_u64(part, &v) || v == 0 || v > UINT32_MAX)
			return -EINVAL;
		for (i = 0; i < n; i++)
			if (g[i] == v)
				return -EINVAL;
		g[n++] = (uint32_t)v;
		p += len;
		if (*p == ':' && !*++p)
			return -EINVAL;	/* trailing colon */
	}
	if (!n)
		return -EINVAL;
	*ng = n;
	return 0;
}

/* Printable, no spaces, no '/', 1..max-1 bytes. */
static int parse_name(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (!n || n >= max || !strcmp(s, ".") || !strcmp(s, ".."))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == 0x7f)
			return -EINVAL;
	return 0;
}

/* ---------------------------------------------------------------- the key table */

enum cfg_type {
	T_STR,		/* free text (fits the field) */
	T_NAME,		/* printable token, no '/' or spaces */
	T_BOOL,
	T_UINT,		/* unsigned, field is unsigned */
	T_SECONDS,	/* decimal seconds, field is uint64_t ns */
	T_SIZE,		/* bytes with K/M/G/T or a percentage; text only */
	T_GROUPS,
	T_SERVER,	/* addr:port[:family], repeatable */
	T_PROTOCOL,
	T_LOGLEVEL,
	T_PATH,		/* non-empty path */
	T_ABSPATH,	/* absolute path */
	T_COOKIE,	/* ≤ 31 bytes (Elliptics truncates longer) */
};

struct cfg_key {
	const char *name;
	enum cfg_type type;
	const char *dflt;	/* default text, applied by pohm_config_defaults; NULL = none */
	ptrdiff_t off;		/* typed field in struct pohm_config, -1 = text only */
	size_t size;		/* field size for strings */
	const char *expect;	/* what a good value looks like, for messages */
};

#define F(field) offsetof(struct pohm_config, field), sizeof(((struct pohm_config *)0)->field)
#define TEXT_ONLY -1, 0

static const struct cfg_key keys[] = {
	{ "server", T_SERVER, NULL, F(servers),
	  "addr:port[:family] with a numeric IPv4 or [IPv6] address (or localhost), family 2 or 10" },
	{ "fsid", T_NAME, "pohmelfs", F(fsid), "a name of 1-255 printable bytes without '/' or spaces" },
	{ "groups", T_GROUPS, NULL, F(groups), "group numbers 1..4294967295 separated by ':' (e.g. 1:2:3), no repeats" },
	{ "successful_write_count", T_UINT, NULL, F(successful_write_count),
	  "a number of groups from 1 to the number of groups" },
	{ "noreadcsum", T_BOOL, "0", F(noreadcsum), BOOL_EXPECT },
	{ "read_wait_timeout", T_SECONDS, "5", F(read_wait_timeout_ns), "seconds, e.g. 5 or 0.5" },
	{ "write_wait_timeout", T_SECONDS, "5", F(write_wait_timeout_ns), "seconds, e.g. 5 or 0.5" },
	{ "keepalive_interval", T_SECONDS, "10", F(keepalive_interval_ns), "seconds (0 = no idle ping)" },
	{ "read_repair", T_BOOL, "0", F(read_repair), BOOL_EXPECT },
	{ "auth_cookie", T_COOKIE, NULL, F(auth_cookie), "at most 31 bytes" },
	{ "protocol", T_PROTOCOL, "3.0", F(protocol), "3.0 or 2.26" },
	{ "log", T_PATH, NULL, F(log), "a file path" },
	{ "log_level", T_LOGLEVEL, "error", F(log_level), "error, warn, info or debug (or 0-3)" },
	{ "host_id", T_NAME, NULL, F(host_id), "a name of 1-255 printable bytes without '/' or spaces" },
	/* Keys of later issues: validated here, kept as text. */
	{ "sync_timeout", T_SECONDS, NULL, TEXT_ONLY, "seconds, e.g. 5 or 0.5" },
	{ "sync_on_close", T_BOOL, NULL, TEXT_ONLY, BOOL_EXPECT },
	{ "http_compat", T_BOOL, NULL, TEXT_ONLY, BOOL_EXPECT },
	{ "inline_data", T_BOOL, "1", TEXT_ONLY, BOOL_EXPECT },
	{ "prefix", T_ABSPATH, NULL, TEXT_ONLY, "an absolute directory path" },
	{ "cache_dir", T_ABSPATH, NULL, TEXT_ONLY, "an absolute directory path" },
	{ "cache_size", T_SIZE, NULL, TEXT_ONLY, "bytes with an optional K, M, G or T suffix, or N%" },
	{ "cache_min_free", T_SIZE, NULL, TEXT_ONLY, "bytes with an optional K, M, G or T suffix, or N%" },
	{ "attr_timeout", T_SECONDS, NULL, TEXT_ONLY, "seconds, e.g. 1 or 0.5" },
	{ "stats", T_BOOL, NULL, TEXT_ONLY, BOOL_EXPECT },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))
_Static_assert(NKEYS <= POHM_CFG_NKEYS, "raise POHM_CFG_NKEYS");

static int key_index(const char *name)
{
	unsigned i;

	for (i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, name))
			return (int)i;
	return -1;
}

/*
 * prefix= and cache_dir= name directories: one that exists must be one
 * (prefix= is created on first use when missing, DESIGN.md §1), and the
 * prefix cannot be "/" (the shim would take over the whole tree).  NULL if
 * fine, else what is wrong, for the message.
 */
static const char *check_dir(const struct cfg_key *k, const char *v)
{
	struct stat st;
	const char *p = v;

	while (*p == '/')
		p++;
	if (!*p && !strcmp(k->name, "prefix"))
		return "is the root directory itself";
	if (!pohm_sys_fstatat(AT_FDCWD, v, &st, 0) && !S_ISDIR(st.st_mode))
		return "exists and is not a directory";
	return NULL;
}

/* Parse text into the typed field (if any); 0 or -EINVAL (*why may say why). */
static int apply(struct pohm_config *c, const struct cfg_key *k, const char *v, const char **why)
{
	char *field = k->off >= 0 ? (char *)c + k->off : NULL;
	uint64_t u;
	int b, r, pct;

	switch (k->type) {
	case T_STR:
	case T_PATH:
	case T_ABSPATH:
	case T_COOKIE:
		if (!*v || strlen(v) >= (k->type == T_COOKIE ? 32 : (field ? k->size : 4096)))
			return -EINVAL;
		if (k->type == T_ABSPATH && v[0] != '/')
			return -EINVAL;
		if (k->type == T_ABSPATH && why && (*why = check_dir(k, v)))
			return -EINVAL;
		break;
	case T_NAME:
		if (parse_name(v, field ? k->size : 256))
			return -EINVAL;
		break;
	case T_BOOL:
		if (parse_bool(v, &b))
			return -EINVAL;
		if (field)
			memcpy(field, &b, sizeof(int));
		return 0;
	case T_UINT:
		if (parse_u64(v, &u) || u > 1000000)
			return -EINVAL;
		if (field) {
			unsigned x = (unsigned)u;

			memcpy(field, &x, sizeof(x));
		}
		return 0;
	case T_SECONDS:
		if (pohm_config_parse_seconds(v, &u))
			return -EINVAL;
		if (field)
			memcpy(field, &u, sizeof(u));
		return 0;
	case T_SIZE:
		return pohm_config_parse_size(v, &u, &pct);
	case T_GROUPS:
		return parse_groups(v, c->groups, &c->ngroups);
	case T_SERVER:
		if (c->nservers >= POHM_MAX_SERVERS)
			return -EINVAL;
		if (pohm_addr_parse(&c->servers[c->nservers], v))
			return -EINVAL;
		c->nservers++;
		return 0;
	case T_PROTOCOL:
		return pohm_config_parse_protocol(v, &c->protocol);
	case T_LOGLEVEL:
		r = pohm_log_parse_level(v);
		if (r < 0)
			return -EINVAL;
		c->log_level = r;
		return 0;
	}
	if (field) {
		memset(field, 0, k->size);
		memcpy(field, v, strlen(v));
	}
	return 0;
}

/* ---------------------------------------------------------------- set / raw */

static int set_idx(struct pohm_config *c, unsigned i, const char *value,
		   enum pohm_cfg_origin origin, const char *where, char *err, size_t errlen)
{
	const struct cfg_key *k = &keys[i];
	const char *why = NULL;
	char *copy;

	if (apply(c, k, value, &why)) {
		if (k->type == T_SERVER && c->nservers >= POHM_MAX_SERVERS)
			errf(err, errlen, "%s%s=%s: too many servers (at most %d)", where, k->name,
			     value, POHM_MAX_SERVERS);
		else
			pohm_config_bad_value(err, errlen, where, k->name, value, why, k->expect);
		return -EINVAL;
	}
	if (k->type == T_SERVER && c->raw[i]) {
		/* Keep every server's text: "a,b,c". */
		size_t a = strlen(c->raw[i]), b = strlen(value);

		copy = malloc(a + b + 2);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, c->raw[i], a);
		copy[a] = ',';
		memcpy(copy + a + 1, value, b + 1);
	} else {
		copy = dupstr(value);
		if (!copy)
			return -ENOMEM;
	}
	free(c->raw[i]);
	c->raw[i] = copy;
	c->origin[i] = (unsigned char)origin;
	return 0;
}

void pohm_config_bad_value(char *err, size_t errlen, const char *where, const char *key,
			   const char *value, const char *why, const char *expect)
{
	if (!value)
		errf(err, errlen, "%s%s: missing value, expected %s=%s", where, key, key, expect);
	else
		errf(err, errlen, "%s%s=%s: %s, expected %s", where, key, value,
		     why ? why : "invalid value", expect);
}

unsigned pohm_config_distance(const char *a, const char *b)
{
	unsigned row[64], i, j, diag, up;
	size_t la = strlen(a), lb = strlen(b);

	if (la >= 64 || lb >= 64)
		return 99;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			up = row[j];
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* "unknown configuration key" message: the key, the line, a suggestion. */
const char *pohm_config_suggest(const char *word)
{
	unsigned i, best = 3, d;
	const char *hint = NULL;

	for (i = 0; i < NKEYS; i++) {
		d = pohm_config_distance(word, keys[i].name);
		if (d < best) {
			best = d;
			hint = keys[i].name;
		}
	}
	return hint;
}

void pohm_config_unknown_key(char *err, size_t errlen, const char *where, const char *key,
			     const char *value, const char *doc, const char *hint)
{
	if (hint)
		errf(err, errlen, "%sunknown configuration key \"%s\" in %s%s%s: expected a key "
		     "of %s; did you mean \"%s\"?", where, key, key, value ? "=" : "",
		     value ? value : "", doc, hint);
	else
		errf(err, errlen, "%sunknown configuration key \"%s\" in %s%s%s: expected a key "
		     "of %s", where, key, key, value ? "=" : "", value ? value : "", doc);
}

static void unknown_key(char *err, size_t errlen, const char *where, const char *key,
			const char *value)
{
	pohm_config_unknown_key(err, errlen, where, key, value, "pohmelfs.conf(5)",
				pohm_config_suggest(key));
}

int pohm_config_set(struct pohm_config *c, const char *key, const char *value,
		    enum pohm_cfg_origin origin, char *err, size_t errlen)
{
	int i = key_index(key);

	if (i < 0) {
		unknown_key(err, errlen, "", key, value);
		return -ENOENT;
	}
	return set_idx(c, (unsigned)i, value, origin, "", err, errlen);
}

int pohm_config_bool(const struct pohm_config *c, const char *key)
{
	const char *v = pohm_config_raw(c, key);
	int b;

	if (!v)
		return 0;
	return !*v || (!parse_bool(v, &b) && b);	/* a bare "key" line in the file means yes */
}

const char *pohm_config_raw(const struct pohm_config *c, const char *key)
{
	int i = key_index(key);

	if (i < 0)
		return NULL;
	return c->raw[i] ? c->raw[i] : keys[i].dflt;
}

void pohm_config_defaults(struct pohm_config *c)
{
	unsigned i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NKEYS; i++)
		if (keys[i].dflt)
			apply(c, &keys[i], keys[i].dflt, NULL);	/* valid by construction */
	if (gethostname(c->host_id, sizeof(c->host_id) - 1) || parse_name(c->host_id, 256))
		memcpy(c->host_id, "localhost", sizeof("localhost"));
}

void pohm_config_free(struct pohm_config *c)
{
	unsigned i;

	for (i = 0; i < POHM_CFG_NKEYS; i++) {
		free(c->raw[i]);
		c->raw[i] = NULL;
	}
}

unsigned pohm_config_write_quorum(const struct pohm_config *c)
{
	if (c->successful_write_count)
		return c->successful_write_count;
	return c->ngroups / 2 + 1;
}

/* ---------------------------------------------------------------- file */

static void trim(char **s, char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t' || **s == '\r'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
		(*e)--;
}

int pohm_config_read_lines(const char *text, size_t len, const char *name,
			   pohm_config_line_fn fn, void *arg, char *err, size_t errlen)
{
	char line[POHM_CFG_LINE_MAX], where[300];
	size_t pos = 0;
	unsigned lineno = 0;
	int r = 0;

	while (pos < len && !r) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char *s, *e, *eq, *ks, *ke;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u: ", name, lineno);
		if (n >= sizeof(line)) {
			errf(err, errlen, "%sline too long (at most %zu bytes)", where, sizeof(line) - 1);
			return -EINVAL;
		}
		memcpy(line, text + pos, n);
		line[n] = 0;
		pos += n + 1;
		s = line;
		e = line + n;
		trim(&s, &e);
		*e = 0;
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		ks = s;
		ke = eq ? eq : e;
		trim(&ks, &ke);
		*ke = 0;
		if (eq) {
			s = eq + 1;
			trim(&s, &e);
			*e = 0;
		}
		r = fn(arg, ks, eq ? s : NULL, where, err, errlen);
	}
	return r;
}

/* The line callback of the client's keys (pohm_config_parse_text). */
static int client_line(void *arg, const char *key, const char *value, const char *where,
		       char *err, size_t errlen)
{
	struct pohm_config *c = arg;
	int i = key_index(key);

	if (i < 0) {
		unknown_key(err, errlen, where, key, value);
		return -EINVAL;
	}
	if (!value) {
		if (keys[i].type != T_BOOL) {
			pohm_config_bad_value(err, errlen, where, key, NULL, NULL, keys[i].expect);
			return -EINVAL;
		}
		value = "1";
	}
	return set_idx(c, (unsigned)i, value, POHM_CFG_FILE, where, err, errlen);
}

int pohm_config_parse_text(struct pohm_config *c, const char *text, size_t len,
			   const char *name, char *err, size_t errlen)
{
	return pohm_config_read_lines(text, len, name, client_line, c, err, errlen);
}

/* Whether DIR (the HOME or XDG_CONFIG_HOME a default file was looked for
 * under) belongs to this process's effective user. */
static int own_config_home(const char *dir)
{
	struct stat st;

	return pohm_sys_fstatat(AT_FDCWD, dir, &st, 0) == 0 &&
	       st.st_uid == pohm_sys_geteuid();
}

int pohm_config_read_file(const char *path, pohm_config_line_fn fn, void *arg, char *err,
			  size_t errlen)
{
	char *text = NULL;
	struct stat st;
	ssize_t n;
	int fd, r;

	fd = pohm_sys_open_high(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0) {
		if (fd != -ENOENT)
			errf(err, errlen, "%s: cannot open the configuration file: %s", path,
			     strerror(-fd));
		return fd;
	}
	r = pohm_sys_fstat(fd, &st);
	if (r)
		goto out;
	if (S_ISCHR(st.st_mode) && !st.st_size) {
		r = 0;		/* /dev/null: "no configuration file" */
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > CFG_FILE_MAX) {
		errf(err, errlen, "%s: not a regular file of at most 1 MiB", path);
		r = -EINVAL;
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		r = -ENOMEM;
		goto out;
	}
	n = pohm_sys_read_full(fd, text, (size_t)st.st_size);
	if (n < 0) {
		r = (int)n;
		errf(err, errlen, "%s: cannot read the configuration file: %s", path, strerror(-r));
		goto out;
	}
	r = pohm_config_read_lines(text, (size_t)n, path, fn, arg, err, errlen);
out:
	free(text);
	pohm_sys_close(fd);
	return r;
}

int pohm_config_load_file(struct pohm_config *c, const char *path, char *err, size_t errlen)
{
	return pohm_config_read_file(path, client_line, c, err, errlen);
}

/* ---------------------------------------------------------------- environment */

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

int pohm_config_load_env(struct pohm_config *c, char *const *envp, char *err, size_t errlen)
{
	static const char pfx[] = "POHMELFS_";
	char name[64], where[80], item[300];
	unsigned i;
	int r;

	for (i = 0; i < NKEYS; i++) {
		const char *v;
		size_t j;

		if (keys[i].type == T_SERVER)
			continue;
		snprintf(name, sizeof(name), "%s%s", pfx, keys[i].name);
		for (j = sizeof(pfx) - 1; name[j]; j++)
			if (name[j] >= 'a' && name[j] <= 'z')
				name[j] = (char)(name[j] - 'a' + 'A');
		v = env_get(envp, name);
		if (!v)
			continue;
		snprintf(where, sizeof(where), "%s: ", name);
		r = set_idx(c, i, v, POHM_CFG_ENV, where, err, errlen);
		if (r)
			return r;
	}
	{
		const char *v = env_get(envp, "POHMELFS_SERVERS");
		int si = key_index("server");

		if (!v)
			return 0;
		/* The environment replaces the file's list. */
		c->nservers = 0;
		free(c->raw[si]);
		c->raw[si] = NULL;
		while (*v) {
			const char *e = strchr(v, ',');
			size_t n = e ? (size_t)(e - v) : strlen(v);

			if (n >= sizeof(item)) {
				errf(err, errlen, "POHMELFS_SERVERS: server address too long");
				return -EINVAL;
			}
			memcpy(item, v, n);
			item[n] = 0;
			if (n) {
				r = set_idx(c, (unsigned)si, item, POHM_CFG_ENV, "POHMELFS_SERVERS: ",
					    err, errlen);
				if (r)
					return r;
			}
			v += n;
			if (*v == ',')
				v++;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- load and checks */

int pohm_config_load(struct pohm_config *c, char *const *envp, char *err, size_t errlen)
{
	const char *path = env_get(envp, "POHMELFS_CONFIG");
	char xdg[4200];
	int r;

	pohm_config_defaults(c);
	if (path && *path) {
		r = pohm_config_load_file(c, path, err, errlen);
		if (r == -ENOENT)
			errf(err, errlen, "POHMELFS_CONFIG=%s: no such file", path);
		if (r)
			return r == -ENOMEM ? r : -EINVAL;
	} else {
		r = pohm_config_load_file(c, "/etc/pohmelfs.conf", err, errlen);
		if (r && r != -ENOENT)
			return r == -ENOMEM ? r : -EINVAL;
		path = env_get(envp, "XDG_CONFIG_HOME");
		if (path && *path)
			snprintf(xdg, sizeof(xdg), "%s/pohmelfs.conf", path);
		else if ((path = env_get(envp, "HOME")) && *path)
			snprintf(xdg, sizeof(xdg), "%s/.config/pohmelfs.conf", path);
		else
			xdg[0] = 0;
		if (xdg[0]) {
			r = pohm_config_load_file(c, xdg, err, errlen);
			if (r == -EACCES && !own_config_home(path)) {
				/* Another user's HOME (a program after setuid, or setpriv
				 * keeping HOME): their file is not this user's configuration. */
				pohm_info("%s: not readable by uid %ld and not in its own "
					 "directory: ignored", xdg, (long)pohm_sys_geteuid());
				err[0] = 0;
				r = 0;
			}
			if (r && r != -ENOENT)
				return r == -ENOMEM ? r : -EINVAL;
		}
	}
	r = pohm_config_load_env(c, envp, err, errlen);
	return r;
}

int pohm_config_check_client(const struct pohm_config *c, char *err, size_t errlen)
{
	int i;

	if (!c->nservers) {
		errf(err, errlen, "no server configured: set POHMELFS_SERVERS=addr:port[,...] "
			     "or server=addr:port in the configuration file");
		return -EINVAL;
	}
	if (!c->ngroups) {
		errf(err, errlen, "no groups configured: set POHMELFS_GROUPS=1:2:3 "
			     "or groups=1:2:3 in the configuration file");
		return -EINVAL;
	}
	i = key_index("successful_write_count");
	if (c->successful_write_count > c->ngroups || (c->raw[i] && !c->successful_write_count)) {
		errf(err, errlen, "%ssuccessful_write_count=%u: more than the %u group%s of groups=%s, "
		     "expected 1 to %u", c->origin[i] == POHM_CFG_ENV ?
		     "POHMELFS_SUCCESSFUL_WRITE_COUNT: " : "", c->successful_write_count, c->ngroups,
		     c->ngroups == 1 ? "" : "s", pohm_config_raw(c, "groups"), c->ngroups);
		if (!c->successful_write_count)
			errf(err, errlen, "%ssuccessful_write_count=0: expected 1 to %u (the number "
			     "of groups)", c->origin[i] == POHM_CFG_ENV ?
			     "POHMELFS_SUCCESSFUL_WRITE_COUNT: " : "", c->ngroups);
		return -EINVAL;
	}
	return 0;
}
