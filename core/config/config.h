/*
 * Layer core/config — the configuration of library, tools and daemon.  This
 * header is the layer's whole interface (the layer has no other part).
 *
 * What it does: defaults, the config file and the POHMELFS_* environment,
 * one table row per key, validated with one-line reasons.
 * Main types: struct pohm_config, enum pohm_protocol.
 * Relies on: core/wire (protocol numbers), core/sys.
 * Rules for callers: a loaded config is immutable and shared by threads;
 * pohm_config_free releases it; errors are -EINVAL with a message that
 * names the key.
 */
/*
 * config.h — the client's configuration: defaults, the config file and the
 * POHMELFS_* environment (env overrides file), names as in DESIGN.md §1.
 *
 * Every key is one row of the table in config.c (name, type, default,
 * where the parsed value goes, what is expected).  Keys this issue uses have
 * typed fields below; keys that later issues use (prefix, cache_dir, ...)
 * are validated by type and kept as text, read with pohm_config_raw().
 * Adding a key = adding one row (and, when it needs one, one field).
 *
 * Errors: every bad value yields -EINVAL and one line in the caller's
 * buffer that names the key (and the file and line, or the variable), the
 * value and what is expected.  Nothing here exits or prints.
 *
 * Memory: a config owns its strings; pohm_config_free() releases them.
 * A loaded config is immutable and may be read by many threads.
 */
#ifndef POHM_CORE_CONFIG_H
#define POHM_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define POHM_MAX_SERVERS	64
#define POHM_MAX_GROUPS		32
#define POHM_CFG_ERRLEN		512	/* enough for any message of this module */
#define POHM_CFG_NKEYS		32	/* rows the table may have */

enum pohm_protocol {
	POHM_PROTO_3_0 = 0,	/* Elliptics 3.0.x (default) */
	POHM_PROTO_2_26 = 1,	/* Elliptics 2.26.x */
};

enum pohm_cfg_origin {
	POHM_CFG_DEFAULT = 0,
	POHM_CFG_FILE,
	POHM_CFG_ENV,
	POHM_CFG_CALLER,	/* pohm_config_set() by a program (tests, tools) */
};

struct pohm_config {
	struct pohm_addr servers[POHM_MAX_SERVERS];	/* seeds: server= / POHMELFS_SERVERS */
	unsigned nservers;
	char fsid[256];				/* key namespace */
	uint32_t groups[POHM_MAX_GROUPS];	/* replica groups, in the given order */
	unsigned ngroups;
	unsigned successful_write_count;	/* 0 = majority of groups */
	int noreadcsum;				/* skip READ checksums */
	uint64_t read_wait_timeout_ns;
	uint64_t write_wait_timeout_ns;
	uint64_t keepalive_interval_ns;		/* idle time before a ping; 0 = never */
	int read_repair;			/* 1: a read waits a grace for the rest after its quorum; 2 (fsck's repair): for all, to its deadline */
	char auth_cookie[64];			/* "" = no AUTH after the handshake */
	enum pohm_protocol protocol;
	char log[4096];				/* "" = stderr */
	int log_level;				/* enum pohm_log_level */
	char host_id[256];			/* default: the host name */

	char *raw[POHM_CFG_NKEYS];		/* text each key was set from, NULL = default */
	unsigned char origin[POHM_CFG_NKEYS];	/* enum pohm_cfg_origin per row */
};

/* Fill c with the defaults (no file, no environment). Never fails. */
void pohm_config_defaults(struct pohm_config *c);

/*
 * Set one key from text, as a file line "key=value" would (server= appends).
 * 0, or -EINVAL with a message "key=value: expected ..." in err;
 * -ENOENT (and a message) for a name that is not a key.
 */
int pohm_config_set(struct pohm_config *c, const char *key, const char *value,
		    enum pohm_cfg_origin origin, char *err, size_t errlen);

/*
 * Parse config file text (key=value lines, '#' comment lines, blank lines;
 * a bare boolean key means 1).  name is used in messages ("FILE:LINE: ...").
 * 0 or -EINVAL.
 */
int pohm_config_parse_text(struct pohm_config *c, const char *text, size_t len,
			   const char *name, char *err, size_t errlen);

/* Read and parse a file: 0, -ENOENT if it does not exist, -EINVAL, other -errno. */
int pohm_config_load_file(struct pohm_config *c, const char *path, char *err, size_t errlen);

/*
 * Apply the POHMELFS_* variables of envp (NULL-terminated "NAME=value").
 * POHMELFS_SERVERS (comma list) replaces the file's servers; POHMELFS_CONFIG
 * and unknown POHMELFS_* names are ignored here.  0 or -EINVAL.
 */
int pohm_config_load_env(struct pohm_config *c, char *const *envp, char *err, size_t errlen);

/*
 * The whole sequence: defaults, then the file (POHMELFS_CONFIG, which must
 * exist, else /etc/pohmelfs.conf and then $XDG_CONFIG_HOME/pohmelfs.conf,
 * $HOME/.config when XDG_CONFIG_HOME is unset, each if present), then envp.
 * 0 or -EINVAL (message in err).  c must be freed even on error.
 */
int pohm_config_load(struct pohm_config *c, char *const *envp, char *err, size_t errlen);

/*
 * Check what a client needs: at least one server and one group, and
 * successful_write_count <= groups.  0 or -EINVAL with a message.
 */
int pohm_config_check_client(const struct pohm_config *c, char *err, size_t errlen);

/* The text a key was set from, or its default text, or NULL. */
const char *pohm_config_raw(const struct pohm_config *c, const char *key);
/* A boolean key: 1 if set to yes (1, yes, true, on, or bare), else 0. */
int pohm_config_bool(const struct pohm_config *c, const char *key);

/* The key of pohmelfs.conf(5) nearest to word (a typo: edit distance under 3,
 * as the "did you mean" of the configuration errors), or NULL. */
const char *pohm_config_suggest(const char *word);

/* Write quorum in effect: successful_write_count, or the majority of groups. */
unsigned pohm_config_write_quorum(const struct pohm_config *c);

/* Release the strings a config owns (safe on defaults and twice). */
void pohm_config_free(struct pohm_config *c);

/* ---------------------------------------------------------------- the shared reader
 *
 * The file format and the value rules of every configuration in the tree:
 * the client's keys above, and pohmelfs-node's (node/config.c), which has
 * its own keys but reads its file and its values only through these.
 */

#define POHM_CFG_LINE_MAX	4200	/* a longer line is an error */

/*
 * Called for each setting line: key and value trimmed of blanks, value NULL
 * for a bare "key" line (no '='); where is "FILE:LINE: " for messages.
 * Returns 0, or a negative errno with a message in err, which stops the
 * reading.
 */
typedef int (*pohm_config_line_fn)(void *arg, const char *key, const char *value,
				   const char *where, char *err, size_t errlen);

/*
 * Split config file text into settings: "key = value" lines, '#' comment
 * lines and blank lines; name is the file name of the messages.  Returns 0,
 * -EINVAL for a line over POHM_CFG_LINE_MAX ("FILE:LINE: line too long"),
 * or the first non-zero return of fn.
 */
int pohm_config_read_lines(const char *text, size_t len, const char *name,
			   pohm_config_line_fn fn, void *arg, char *err, size_t errlen);

/*
 * Read the file at path (a regular file of at most 1 MiB; /dev/null reads as
 * empty) and pass its settings to fn.  0, -ENOENT without a message when it
 * does not exist, -EINVAL or another -errno with a message, or fn's error.
 */
int pohm_config_read_file(const char *path, pohm_config_line_fn fn, void *arg, char *err,
			  size_t errlen);

/*
 * The one message of a bad value: "WHERE key=value: WHY, expected EXPECT"
 * (WHY defaults to "invalid value"), or for value NULL (a bare key that needs
 * one) "WHERE key: missing value, expected key=EXPECT".  WHERE is "" or ends
 * in ": " ("FILE:LINE: ", "POHMELFS_X: ", "--option: ").
 */
void pohm_config_bad_value(char *err, size_t errlen, const char *where, const char *key,
			   const char *value, const char *why, const char *expect);

/*
 * The one message of an unknown key: "WHERE unknown configuration key "key"
 * in key=value: expected a key of DOC; did you mean "HINT"?" (no hint part
 * when hint is NULL; no "=value" when value is NULL).
 */
void pohm_config_unknown_key(char *err, size_t errlen, const char *where, const char *key,
			     const char *value, const char *doc, const char *hint);

/* Edit distance of a and b (99 for words of 64 bytes or more): a typo is < 3. */
unsigned pohm_config_distance(const char *a, const char *b);

/* Decimal digits only (no sign, no spaces), at most max: 0 or -EINVAL. */
int pohm_config_parse_uint(const char *s, uint64_t max, uint64_t *out);
/* 1, yes, true, on or "" → 1; 0, no, false, off → 0 (any case): 0 or -EINVAL. */
int pohm_config_parse_bool(const char *s, int *out);
/* "3.0" (or "3") or "2.26": 0 and *p, or -EINVAL. */
int pohm_config_parse_protocol(const char *s, enum pohm_protocol *p);
/* Parse "5", "0.25", "1.5s"-free decimal seconds into ns: 0 or -EINVAL. */
int pohm_config_parse_seconds(const char *s, uint64_t *ns);
/* "1024", "64K", "10M", "2G", "1T" (binary units), or "N%" (*percent set, N ≤ 100). 0 or -EINVAL. */
int pohm_config_parse_size(const char *s, uint64_t *out, int *percent);

#endif
