/*
 * test_config.c — core/config: defaults, file syntax, environment
 * overrides, every kind of bad value producing one message that names the
 * key, the value and what is expected.
 */
#include "harness.h"

#include <errno.h>
#include <unistd.h>

#include "config.h"

static int set(struct pohm_config *c, const char *k, const char *v, char *err)
{
	err[0] = 0;
	return pohm_config_set(c, k, v, POHM_CFG_CALLER, err, POHM_CFG_ERRLEN);
}

TEST(defaults)
{
	struct pohm_config c;

	pohm_config_defaults(&c);
	EXPECT_EQ_STR(c.fsid, "pohmelfs");
	EXPECT_EQ_U64(c.read_wait_timeout_ns, 5000000000ULL);
	EXPECT_EQ_U64(c.write_wait_timeout_ns, 5000000000ULL);
	EXPECT_EQ_U64(c.keepalive_interval_ns, 10000000000ULL);
	EXPECT_EQ_INT(c.protocol, POHM_PROTO_3_0);
	EXPECT_EQ_INT(c.ngroups, 0);
	EXPECT_EQ_INT(c.nservers, 0);
	EXPECT(c.host_id[0] != 0);
	EXPECT_EQ_STR(pohm_config_raw(&c, "fsid"), "pohmelfs");
	EXPECT(pohm_config_raw(&c, "prefix") == NULL);
	pohm_config_free(&c);
}

TEST(seconds_parse)
{
	uint64_t ns = 0;

	EXPECT_EQ_INT(pohm_config_parse_seconds("5", &ns), 0);
	EXPECT_EQ_U64(ns, 5000000000ULL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("0.25", &ns), 0);
	EXPECT_EQ_U64(ns, 250000000ULL);
	EXPECT_EQ_INT(pohm_config_parse_seconds(".5", &ns), 0);
	EXPECT_EQ_U64(ns, 500000000ULL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("1.000000001", &ns), 0);
	EXPECT_EQ_U64(ns, 1000000001ULL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("", &ns), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("5s", &ns), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("-1", &ns), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("1,5", &ns), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_seconds("99999999999", &ns), -EINVAL);
}

TEST(bad_values_name_key_value_and_expectation)
{
	static const char *bad[][2] = {
		{ "read_wait_timeout", "abc" }, { "groups", "1:1" }, { "groups", "0:2" },
		{ "groups", "1:2:" }, { "groups", "" }, { "server", "nohost" },
		{ "server", "127.0.0.1:99999" }, { "server", "127.0.0.1:1025:7" },
		{ "protocol", "4.0" }, { "noreadcsum", "maybe" }, { "fsid", "a/b" },
		{ "fsid", "" }, { "log_level", "loud" }, { "successful_write_count", "x" },
		{ "prefix", "relative/dir" }, { "cache_size", "10Q" }, { "cache_min_free", "150%" },
		{ "auth_cookie", "0123456789012345678901234567890123" }, { "host_id", "a b" },
	};
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];
	size_t i;

	pohm_config_defaults(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ_INT(set(&c, bad[i][0], bad[i][1], err), -EINVAL);
		if (!strstr(err, bad[i][0]) || !strstr(err, bad[i][1]) || !strstr(err, "expected"))
			printf("# bad message for %s=%s: %s\n", bad[i][0], bad[i][1], err);
		EXPECT(strstr(err, bad[i][0]) && strstr(err, bad[i][1]) && strstr(err, "expected"));
	}
	EXPECT_EQ_INT(set(&c, "no_such_key", "1", err), -ENOENT);
	EXPECT(strstr(err, "no_such_key") != NULL);
	pohm_config_free(&c);
}

TEST(good_values)
{
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(set(&c, "groups", "3:1:2", err), 0);
	EXPECT_EQ_INT(c.ngroups, 3);
	EXPECT_EQ_INT(c.groups[0], 3);
	EXPECT_EQ_INT(set(&c, "server", "127.0.0.1:1025:2", err), 0);
	EXPECT_EQ_INT(set(&c, "server", "[::1]:1026", err), 0);
	EXPECT_EQ_INT(c.nservers, 2);
	EXPECT_EQ_INT(c.servers[1].port, 1026);
	EXPECT_EQ_STR(pohm_config_raw(&c, "server"), "127.0.0.1:1025:2,[::1]:1026");
	EXPECT_EQ_INT(set(&c, "noreadcsum", "yes", err), 0);
	EXPECT_EQ_INT(c.noreadcsum, 1);
	EXPECT_EQ_INT(set(&c, "protocol", "2.26", err), 0);
	EXPECT_EQ_INT(c.protocol, POHM_PROTO_2_26);
	EXPECT_EQ_INT(set(&c, "log_level", "debug", err), 0);
	EXPECT_EQ_INT(c.log_level, 3);
	EXPECT_EQ_INT(set(&c, "cache_size", "10G", err), 0);
	EXPECT_EQ_STR(pohm_config_raw(&c, "cache_size"), "10G");
	EXPECT_EQ_INT(set(&c, "prefix", "/tmp/p", err), 0);
	EXPECT_EQ_STR(pohm_config_raw(&c, "prefix"), "/tmp/p");
	EXPECT_EQ_INT(pohm_config_write_quorum(&c), 2);
	EXPECT_EQ_INT(set(&c, "successful_write_count", "3", err), 0);
	EXPECT_EQ_INT(pohm_config_write_quorum(&c), 3);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), 0);
	EXPECT_EQ_INT(set(&c, "successful_write_count", "4", err), 0);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "successful_write_count=4") != NULL);
	pohm_config_free(&c);
}

TEST(file_syntax)
{
	static const char text[] =
		"# a comment\n"
		"\n"
		"  server = 127.0.0.1:1025  \n"
		"server=127.0.0.1:1026\r\n"
		"groups=1:2\n"
		"noreadcsum\n"
		"fsid=myfs\n";
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(pohm_config_parse_text(&c, text, sizeof(text) - 1, "t.conf", err, sizeof(err)), 0);
	EXPECT_EQ_INT(c.nservers, 2);
	EXPECT_EQ_INT(c.ngroups, 2);
	EXPECT_EQ_INT(c.noreadcsum, 1);
	EXPECT_EQ_STR(c.fsid, "myfs");
	pohm_config_free(&c);

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(pohm_config_parse_text(&c, "groups=1\nbogus=2\n", 17, "t.conf", err, sizeof(err)),
		      -EINVAL);
	EXPECT(strstr(err, "t.conf:2:") && strstr(err, "bogus"));
	EXPECT_EQ_INT(pohm_config_parse_text(&c, "fsid\n", 5, "t.conf", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "t.conf:1:") && strstr(err, "missing value"));
	EXPECT_EQ_INT(pohm_config_parse_text(&c, "read_wait_timeout=x\n", 20, "t.conf", err,
					     sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "t.conf:1: read_wait_timeout=x: invalid value, expected seconds") != NULL);
	pohm_config_free(&c);
}

TEST(env_overrides_file)
{
	char path[] = "/tmp/pohm-test-config-XXXXXX";
	static const char text[] = "server=127.0.0.1:1025\ngroups=1:2:3\nfsid=fromfile\n";
	char cfgvar[80];
	char *env[] = { cfgvar, "POHMELFS_SERVERS=127.0.0.1:2001,127.0.0.1:2002",
			"POHMELFS_FSID=fromenv", "POHMELFS_READ_WAIT_TIMEOUT=0.5",
			"POHMELFS_UNKNOWN_THING=1", "OTHER=1", NULL };
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];
	int fd = mkstemp(path);

	EXPECT(fd >= 0);
	EXPECT_EQ_INT(write(fd, text, sizeof(text) - 1), (int)sizeof(text) - 1);
	close(fd);
	snprintf(cfgvar, sizeof(cfgvar), "POHMELFS_CONFIG=%s", path);
	EXPECT_EQ_INT(pohm_config_load(&c, env, err, sizeof(err)), 0);
	EXPECT_EQ_INT(c.nservers, 2);
	EXPECT_EQ_INT(c.servers[0].port, 2001);
	EXPECT_EQ_INT(c.ngroups, 3);
	EXPECT_EQ_STR(c.fsid, "fromenv");
	EXPECT_EQ_U64(c.read_wait_timeout_ns, 500000000ULL);
	EXPECT_EQ_INT(c.origin[1], POHM_CFG_ENV);
	pohm_config_free(&c);

	env[3] = "POHMELFS_WRITE_WAIT_TIMEOUT=soon";
	EXPECT_EQ_INT(pohm_config_load(&c, env, err, sizeof(err)), -EINVAL);
	EXPECT_EQ_STR(err, "POHMELFS_WRITE_WAIT_TIMEOUT: write_wait_timeout=soon: invalid value, "
			   "expected seconds, e.g. 5 or 0.5");
	pohm_config_free(&c);
	unlink(path);

	EXPECT_EQ_INT(pohm_config_load(&c, env, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "no such file") && strstr(err, path));
	pohm_config_free(&c);
}

TEST(client_check_messages)
{
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "no server configured") != NULL);
	set(&c, "server", "127.0.0.1:1", err);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "no groups configured") != NULL);
	set(&c, "groups", "1", err);
	set(&c, "successful_write_count", "0", err);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	pohm_config_free(&c);
}

/* ---- one test per class of configuration error (issue 9) ---- */

/* err is one line that names every string of want[] (NULL-terminated). */
static int one_line_naming(const char *err, const char *const *want)
{
	if (!err[0] || strchr(err, '\n')) {
		printf("# not one line: \"%s\"\n", err);
		return 0;
	}
	for (; *want; want++)
		if (!strstr(err, *want)) {
			printf("# \"%s\" does not name \"%s\"\n", err, *want);
			return 0;
		}
	return 1;
}

static int parse(struct pohm_config *c, const char *text, char *err)
{
	err[0] = 0;
	return pohm_config_parse_text(c, text, strlen(text), "f.conf", err, POHM_CFG_ERRLEN);
}

TEST(error_unknown_key)
{
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(parse(&c, "groups=1\ngrups=1:2\n", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "f.conf:2:", "unknown configuration key "
			       "\"grups\"", "grups=1:2", "expected a key of pohmelfs.conf(5)",
			       "did you mean \"groups\"", NULL }));
	EXPECT_EQ_INT(parse(&c, "zzzzzzzzzz = 7\n", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "f.conf:1:", "\"zzzzzzzzzz\"", "zzzzzzzzzz=7",
			       "expected a key", NULL }));
	EXPECT(strstr(err, "did you mean") == NULL);
	EXPECT_EQ_INT(parse(&c, "bogus\n", err), -EINVAL);	/* a bare word */
	EXPECT(one_line_naming(err, (const char *[]){ "f.conf:1:", "\"bogus\"", NULL }));
	/* Environment names that are not keys are not errors (POHMELFS_CONFIG, test-only ones). */
	EXPECT_EQ_INT(pohm_config_load_env(&c, (char *[]){ "POHMELFS_NOT_A_KEY=1", NULL }, err,
					   sizeof(err)), 0);
	pohm_config_free(&c);
}

TEST(error_bad_number)
{
	static const char *bad[][3] = {
		/* key, value, a word of the expectation */
		{ "sync_timeout", "5s", "seconds" }, { "attr_timeout", "-1", "seconds" },
		{ "read_wait_timeout", "1e3", "seconds" }, { "keepalive_interval", "", "seconds" },
		{ "successful_write_count", "two", "number" },
		{ "successful_write_count", "-1", "number" },
		{ "cache_size", "1.5G", "bytes" }, { "cache_size", "G", "bytes" },
		{ "cache_min_free", "101%", "N%" }, { "cache_size", "99999999999999999999", "bytes" },
		{ "sync_on_close", "2", "yes, true or on; 0, no, false or off" },
		{ "stats", "enable", "1, yes, true or on" },
	};
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN], line[128];
	size_t i;

	pohm_config_defaults(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s=%s", bad[i][0], bad[i][1]);
		EXPECT_EQ_INT(set(&c, bad[i][0], bad[i][1], err), -EINVAL);
		EXPECT(one_line_naming(err, (const char *[]){ line, "expected", bad[i][2], NULL }));
	}
	/* The same from a file names the line, from the environment the variable. */
	EXPECT_EQ_INT(parse(&c, "\n\nsync_timeout = soon\n", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "f.conf:3:", "sync_timeout=soon",
			       "expected seconds", NULL }));
	EXPECT_EQ_INT(pohm_config_load_env(&c, (char *[]){ "POHMELFS_CACHE_SIZE=lots", NULL }, err,
					   sizeof(err)), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "POHMELFS_CACHE_SIZE:", "cache_size=lots",
			       "expected bytes", NULL }));
	pohm_config_free(&c);
}

TEST(error_bad_address)
{
	static const char *bad[] = {
		"example.org:1025", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:1025:3", "256.0.0.1:1025", "[::1:1025", "127.0.0.1:1025:2:x", "",
	};
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN], line[128];
	size_t i;

	pohm_config_defaults(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "server=%s:", bad[i]);
		EXPECT_EQ_INT(set(&c, "server", bad[i], err), -EINVAL);
		EXPECT(one_line_naming(err, (const char *[]){ line, "expected addr:port", NULL }));
	}
	EXPECT_EQ_INT(c.nservers, 0);
	/* One bad item of the comma list is named alone. */
	EXPECT_EQ_INT(pohm_config_load_env(&c, (char *[]){
		"POHMELFS_SERVERS=127.0.0.1:1025,nohost:1,127.0.0.1:1026", NULL }, err, sizeof(err)),
		-EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "POHMELFS_SERVERS:", "server=nohost:1:",
			       "numeric IPv4", NULL }));
	pohm_config_free(&c);
}

TEST(error_prefix_relative_or_not_a_directory)
{
	char file[] = "/tmp/pohm-test-prefix-XXXXXX", dir[] = "/tmp/pohm-test-prefixd-XXXXXX";
	char missing[64], under[64], line[128];
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];
	int fd = mkstemp(file);

	EXPECT(fd >= 0);
	close(fd);
	EXPECT(mkdtemp(dir) != NULL);
	pohm_config_defaults(&c);
	EXPECT_EQ_INT(set(&c, "prefix", "relative/dir", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "prefix=relative/dir:",
			       "expected an absolute directory path", NULL }));
	EXPECT_EQ_INT(set(&c, "prefix", "./p", err), -EINVAL);
	EXPECT_EQ_INT(set(&c, "prefix", "", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "prefix=:", "expected an absolute", NULL }));
	snprintf(line, sizeof(line), "prefix=%s: exists and is not a directory", file);
	EXPECT_EQ_INT(set(&c, "prefix", file, err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ line, "expected an absolute directory path",
			       NULL }));
	EXPECT_EQ_INT(set(&c, "prefix", "/", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "prefix=/:", "root directory", NULL }));
	EXPECT_EQ_INT(set(&c, "prefix", "//", err), -EINVAL);
	/* A path below a file cannot become a directory either: that is the mount's error
	 * (ENOTDIR at first use); a missing one is created then, so it is fine here. */
	snprintf(under, sizeof(under), "%s/sub", file);
	EXPECT_EQ_INT(set(&c, "prefix", under, err), 0);
	snprintf(missing, sizeof(missing), "%s/not/yet", dir);
	EXPECT_EQ_INT(set(&c, "prefix", missing, err), 0);
	EXPECT_EQ_INT(set(&c, "prefix", dir, err), 0);
	EXPECT_EQ_STR(pohm_config_raw(&c, "prefix"), dir);
	/* cache_dir follows the same rule. */
	EXPECT_EQ_INT(set(&c, "cache_dir", file, err), -EINVAL);
	EXPECT(strstr(err, "cache_dir=") && strstr(err, "not a directory"));
	EXPECT_EQ_INT(set(&c, "cache_dir", "state", err), -EINVAL);
	/* From the environment: the variable is named too. */
	EXPECT_EQ_INT(pohm_config_load_env(&c, (char *[]){ "POHMELFS_PREFIX=relative", NULL }, err,
					   sizeof(err)), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "POHMELFS_PREFIX:", "prefix=relative:",
			       "expected an absolute directory path", NULL }));
	pohm_config_free(&c);
	unlink(file);
	rmdir(dir);
}

TEST(error_groups_empty)
{
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(set(&c, "groups", "", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "groups=:", "expected group numbers", NULL }));
	EXPECT_EQ_INT(set(&c, "groups", ":", err), -EINVAL);
	EXPECT_EQ_INT(set(&c, "groups", "1::2", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "groups=1::2:", "expected", NULL }));
	EXPECT_EQ_INT(parse(&c, "groups =\n", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "f.conf:1:", "groups=:", "expected", NULL }));
	EXPECT_EQ_INT(parse(&c, "groups\n", err), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "f.conf:1:", "groups", "missing value",
			       NULL }));
	EXPECT_EQ_INT(pohm_config_load_env(&c, (char *[]){ "POHMELFS_GROUPS=", NULL }, err,
					   sizeof(err)), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "POHMELFS_GROUPS:", "groups=:", NULL }));
	/* Never set at all: the client check says which key is missing and how to set it. */
	EXPECT_EQ_INT(set(&c, "server", "127.0.0.1:1025", err), 0);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "no groups configured", "POHMELFS_GROUPS=",
			       "groups=", NULL }));
	pohm_config_free(&c);
}

TEST(error_write_count_above_groups)
{
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];

	pohm_config_defaults(&c);
	EXPECT_EQ_INT(parse(&c, "server=127.0.0.1:1025\ngroups=1:2\nsuccessful_write_count=3\n",
			    err), 0);		/* the file alone is well-formed... */
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);	/* ...not usable */
	EXPECT(one_line_naming(err, (const char *[]){ "successful_write_count=3", "2 groups",
			       "groups=1:2", "expected 1 to 2", NULL }));
	EXPECT(strstr(err, "POHMELFS_") == NULL);
	EXPECT_EQ_INT(pohm_config_load_env(&c, (char *[]){ "POHMELFS_SUCCESSFUL_WRITE_COUNT=5",
					   "POHMELFS_GROUPS=7", NULL }, err, sizeof(err)), 0);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "POHMELFS_SUCCESSFUL_WRITE_COUNT:",
			       "successful_write_count=5", "1 group ", "groups=7", "expected 1 to 1",
			       NULL }));
	EXPECT_EQ_INT(set(&c, "successful_write_count", "0", err), 0);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), -EINVAL);
	EXPECT(one_line_naming(err, (const char *[]){ "successful_write_count=0", "expected 1 to 1",
			       NULL }));
	EXPECT_EQ_INT(set(&c, "successful_write_count", "1", err), 0);
	EXPECT_EQ_INT(pohm_config_check_client(&c, err, sizeof(err)), 0);
	pohm_config_free(&c);
}

TEST(every_key_of_the_design_is_known)
{
	/* DESIGN.md §1 and the man page pohmelfs.conf(5) list exactly these. */
	static const char *names[] = {
		"server", "fsid", "groups", "sync_timeout", "sync_on_close", "successful_write_count",
		"noreadcsum", "http_compat", "read_wait_timeout", "write_wait_timeout",
		"keepalive_interval", "prefix", "cache_dir", "cache_size", "cache_min_free",
		"attr_timeout", "read_repair", "auth_cookie", "protocol", "host_id", "log",
		"log_level", "stats",
	};
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];
	size_t i;

	pohm_config_defaults(&c);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int r = set(&c, names[i], "", err);

		if (r == -ENOENT)
			printf("# %s is not a key\n", names[i]);
		EXPECT(r != -ENOENT);
	}
	pohm_config_free(&c);
}

/* ---------------------------------------------------------------- the shared reader */

struct seen {
	char text[1024];	/* "where|key|value;" per setting, value "(bare)" for NULL */
	int stop_at;		/* fail on this setting (1-based), 0 = never */
	int n;
};

static int collect(void *arg, const char *key, const char *value, const char *where, char *err,
		   size_t errlen)
{
	struct seen *s = arg;
	size_t l = strlen(s->text);

	snprintf(s->text + l, sizeof(s->text) - l, "%s|%s|%s;", where, key,
		 value ? value : "(bare)");
	if (++s->n == s->stop_at) {
		snprintf(err, errlen, "%sstop", where);
		return -EDOM;
	}
	return 0;
}

TEST(read_lines_splits_trims_and_numbers_lines)
{
	static const char text[] = "# comment\n  a = 1 \n\nflag\r\n\tb=x = y\n  # indented\nc =\nlast=9";
	struct seen s = { .stop_at = 0 };
	char err[POHM_CFG_ERRLEN] = "";

	EXPECT_EQ_INT(pohm_config_read_lines(text, sizeof(text) - 1, "f.conf", collect, &s, err,
					     sizeof(err)), 0);
	EXPECT_EQ_STR(s.text, "f.conf:2: |a|1;f.conf:4: |flag|(bare);f.conf:5: |b|x = y;"
			      "f.conf:7: |c|;f.conf:8: |last|9;");
	/* The callback's error stops the reading and is returned as is. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	EXPECT_EQ_INT(pohm_config_read_lines(text, sizeof(text) - 1, "f.conf", collect, &s, err,
					     sizeof(err)), -EDOM);
	EXPECT_EQ_INT(s.n, 2);
	EXPECT_EQ_STR(err, "f.conf:4: stop");
}

TEST(read_lines_refuses_a_long_line_with_its_number)
{
	char text[POHM_CFG_LINE_MAX + 20], err[POHM_CFG_ERRLEN] = "";
	struct seen s = { .stop_at = 0 };

	memcpy(text, "a=1\nb=", 6);
	memset(text + 6, 'x', sizeof(text) - 6);
	EXPECT_EQ_INT(pohm_config_read_lines(text, sizeof(text), "f", collect, &s, err, sizeof(err)),
		      -EINVAL);
	EXPECT_EQ_INT(s.n, 1);
	EXPECT(strncmp(err, "f:2: line too long", 18) == 0);
}

TEST(read_file_passes_settings_and_reports_missing_files)
{
	char path[] = "/tmp/pohm-test-config-XXXXXX", err[POHM_CFG_ERRLEN] = "";
	struct seen s = { .stop_at = 0 };
	int fd = mkstemp(path);

	EXPECT(fd >= 0);
	if (fd < 0)
		return;
	EXPECT_EQ_INT((int)write(fd, "k = v\n", 6), 6);
	close(fd);
	EXPECT_EQ_INT(pohm_config_read_file(path, collect, &s, err, sizeof(err)), 0);
	EXPECT(strstr(s.text, ":1: |k|v;") != NULL);
	unlink(path);
	EXPECT_EQ_INT(pohm_config_read_file(path, collect, &s, err, sizeof(err)), -ENOENT);
	EXPECT_EQ_INT(s.n, 1);
	memset(&s, 0, sizeof(s));
	EXPECT_EQ_INT(pohm_config_read_file("/dev/null", collect, &s, err, sizeof(err)), 0);
	EXPECT_EQ_INT(s.n, 0);
}

TEST(shared_value_rules)
{
	uint64_t v = 7;
	int b = 7;

	EXPECT_EQ_INT(pohm_config_parse_uint("42", 42, &v), 0);
	EXPECT_EQ_U64(v, 42);
	EXPECT_EQ_INT(pohm_config_parse_uint("43", 42, &v), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_uint("-1", 42, &v), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_uint("0x10", 100, &v), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_uint(" 1", 100, &v), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_uint("", 100, &v), -EINVAL);
	EXPECT_EQ_INT(pohm_config_parse_uint("18446744073709551616", UINT64_MAX, &v), -EINVAL);
	EXPECT_EQ_U64(v, 42);
	EXPECT_EQ_INT(pohm_config_parse_bool("On", &b), 0);
	EXPECT_EQ_INT(b, 1);
	EXPECT_EQ_INT(pohm_config_parse_bool("", &b), 0);
	EXPECT_EQ_INT(b, 1);
	EXPECT_EQ_INT(pohm_config_parse_bool("off", &b), 0);
	EXPECT_EQ_INT(b, 0);
	EXPECT_EQ_INT(pohm_config_parse_bool("maybe", &b), -EINVAL);
	EXPECT_EQ_INT(pohm_config_distance("grups", "groups"), 1);
	EXPECT_EQ_INT(pohm_config_distance("abc", "abc"), 0);
}

TEST(one_message_format)
{
	char err[POHM_CFG_ERRLEN];

	pohm_config_bad_value(err, sizeof(err), "f:3: ", "group", "0", NULL, "a group");
	EXPECT_EQ_STR(err, "f:3: group=0: invalid value, expected a group");
	pohm_config_bad_value(err, sizeof(err), "--data: ", "data", "x", "too long", "a path");
	EXPECT_EQ_STR(err, "--data: data=x: too long, expected a path");
	pohm_config_bad_value(err, sizeof(err), "", "listen", NULL, NULL, "host:port");
	EXPECT_EQ_STR(err, "listen: missing value, expected listen=host:port");
	pohm_config_unknown_key(err, sizeof(err), "f:1: ", "grup", "3", "doc(8)", "group");
	EXPECT_EQ_STR(err, "f:1: unknown configuration key \"grup\" in grup=3: expected a key of "
			   "doc(8); did you mean \"group\"?");
	pohm_config_unknown_key(err, sizeof(err), "", "zzz", NULL, "doc(8)", NULL);
	EXPECT_EQ_STR(err, "unknown configuration key \"zzz\" in zzz: expected a key of doc(8)");
}
