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
