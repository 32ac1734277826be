/*
 * test_mountopen.c — core/mount mount.c's pohm_mount_open: what it makes
 * of a configuration (the prefix, the configured cache_dir, the push
 * keys, the cache it opens over a client), which cache_dir it takes for a
 * user who cannot use the configured one (the per-user one, made 0700 as
 * that user; refused when a symlink was planted there; run in a child as
 * another user), and its error paths (no prefix, the client's keys), each
 * with a one-line reason naming the key.  The client talks to a fake node
 * (fake_node.h); per-user cases need root (CI runs as root).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "fake_node.h"
#include "config.h"
#include "mount.h"

#define OTHER	65534u	/* the tests' unprivileged user */

static const char *root;	/* th_scratch's directory */

/* A fresh scratch directory (root), every level readable by others. */
static void scratch(void)
{
	root = th_scratch("mountopen");
	if (mkdir(th_at("p"), 0755) || chmod(th_at("p"), 0755))
		printf("# scratch p failed\n");
}

static int set(struct pohm_config *cfg, const char *key, const char *val)
{
	char err[512];
	int r = pohm_config_set(cfg, key, val, POHM_CFG_CALLER, err, sizeof(err));

	if (r)
		printf("# %s=%s: %s\n", key, val, err);
	return r;
}

/* A client configuration: prefix and cache_dir in the scratch directory,
 * the fake node fn's group 1. */
static void client_cfg(struct pohm_config *cfg, const struct fake_node *fn)
{
	char s[64];

	snprintf(s, sizeof(s), "127.0.0.1:%u", fn->port);
	pohm_config_defaults(cfg);
	set(cfg, "prefix", th_at("p"));
	set(cfg, "server", s);
	set(cfg, "groups", "1");
	set(cfg, "host_id", "h1");
}

TEST(a_configuration_opens_its_cache_with_its_keys)
{
	struct pohm_config cfg;
	struct pohm_mount m;
	struct fake_node fn;
	struct stat st;
	char err[512] = "";

	scratch();
	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	client_cfg(&cfg, &fn);
	EXPECT_EQ_INT(set(&cfg, "cache_dir", th_at("cd")), 0);
	EXPECT_EQ_INT(set(&cfg, "sync_timeout", "7"), 0);
	EXPECT_EQ_INT(set(&cfg, "sync_on_close", "yes"), 0);
	EXPECT_EQ_INT(pohm_mount_open(&m, &cfg, err, sizeof(err)), 0);
	if (err[0])
		printf("# %s\n", err);
	EXPECT(m.client != NULL && m.cache != NULL);
	EXPECT_EQ_STR(m.prefix, th_at("p"));
	EXPECT_EQ_STR(m.cache_dir, th_at("cd"));
	EXPECT_EQ_INT(m.per_user, 0);
	EXPECT_EQ_INT((int)m.owner, (int)geteuid());
	EXPECT(m.sync_timeout_ns == 7000000000ULL);
	EXPECT_EQ_INT(m.sync_on_close, 1);
	EXPECT_EQ_INT(m.bounded, 0);
	EXPECT_EQ_INT(stat(th_at("cd"), &st), 0);		/* the cache made its directory */
	pohm_mount_close(&m);
	EXPECT(m.cache == NULL && m.client == NULL);
	/* Other values, another open: the keys are read, not defaults. */
	EXPECT_EQ_INT(set(&cfg, "sync_timeout", "0.5"), 0);
	EXPECT_EQ_INT(set(&cfg, "sync_on_close", "no"), 0);
	EXPECT_EQ_INT(set(&cfg, "cache_size", "10M"), 0);
	EXPECT_EQ_INT(pohm_mount_open(&m, &cfg, err, sizeof(err)), 0);
	EXPECT(m.sync_timeout_ns == 500000000ULL);
	EXPECT_EQ_INT(m.sync_on_close, 0);
	EXPECT_EQ_INT(m.bounded, 1);
	pohm_mount_close(&m);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

TEST(no_prefix_or_no_server_fails_naming_the_key)
{
	struct pohm_config cfg;
	struct pohm_mount m;
	struct fake_node fn;
	char err[512];

	scratch();
	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	pohm_config_defaults(&cfg);
	err[0] = '\0';
	EXPECT_EQ_INT(pohm_mount_open(&m, &cfg, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "prefix=(unset)") != NULL);
	EXPECT(m.client == NULL && m.cache == NULL);
	pohm_config_free(&cfg);
	/* (A relative prefix never gets here: the configuration refuses it.) */
	/* No server: the client's keys are checked before any client. */
	pohm_config_defaults(&cfg);
	EXPECT_EQ_INT(set(&cfg, "prefix", th_at("p")), 0);
	EXPECT_EQ_INT(set(&cfg, "cache_dir", th_at("cd")), 0);
	EXPECT_EQ_INT(set(&cfg, "groups", "1"), 0);
	err[0] = '\0';
	EXPECT_EQ_INT(pohm_mount_open(&m, &cfg, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "server") != NULL);
	EXPECT(m.client == NULL && m.cache == NULL);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}

/*
 * As OTHER in a child: pohm_mount_open of cfg with TMPDIR tmpdir; exit 0
 * when the mount is the per-user one in want, made 0700 as OTHER, and its
 * open succeeded; 10 + the errno when the open failed; else the check.
 */
static int open_as_other(const struct pohm_config *cfg, const char *tmpdir, const char *want)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		struct pohm_mount m;
		struct stat sb;
		char err[512] = "";
		int r;

		if (setresgid(OTHER, OTHER, OTHER) || setresuid(OTHER, OTHER, OTHER))
			_exit(1);
		setenv("TMPDIR", tmpdir, 1);
		r = pohm_mount_open(&m, cfg, err, sizeof(err));
		if (r) {
			printf("# as %u: %d %s\n", OTHER, r, err);
			_exit(10 + (-r & 0xff) % 240);
		}
		if (!m.per_user || strcmp(m.cache_dir, want))
			_exit(2);
		if (stat(want, &sb) || sb.st_uid != OTHER || (sb.st_mode & 0777) != 0700)
			_exit(3);
		if ((int)m.owner != (int)OTHER)
			_exit(4);
		pohm_mount_close(&m);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST(another_user_gets_its_per_user_cache_and_a_planted_symlink_is_refused)
{
	struct pohm_config cfg;
	struct fake_node fn;
	char want[1024], base[600], cmd[4096];
	const char *p;

	if (geteuid())
		SKIP("needs root to run a child as another user");
	scratch();
	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	client_cfg(&cfg, &fn);
	/* The configured cache_dir is root's: OTHER cannot use it. */
	EXPECT_EQ_INT(mkdir(th_at("cd-root"), 0700), 0);
	EXPECT_EQ_INT(set(&cfg, "cache_dir", th_at("cd-root")), 0);
	/* OTHER's own TMPDIR: BASE/pohmelfs-UID/<prefix, '/' as '_'>. */
	snprintf(base, sizeof(base), "%s", th_at("tmp-other"));
	EXPECT_EQ_INT(mkdir(base, 0700), 0);
	EXPECT_EQ_INT(chown(base, OTHER, OTHER), 0);
	snprintf(want, sizeof(want), "%s/pohmelfs-%u/", base, OTHER);
	for (p = th_at("p"); *p; p++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%c", *p == '/' ? '_' : *p);
	EXPECT_EQ_INT(open_as_other(&cfg, base, want), 0);
	/* The configured one is untouched. */
	EXPECT_EQ_INT(rmdir(th_at("cd-root")), 0);
	EXPECT_EQ_INT(mkdir(th_at("cd-root"), 0700), 0);
	/* A symlink planted where the per-user directory goes: -EACCES. */
	snprintf(cmd, sizeof(cmd), "rm -rf %s/pohmelfs-%u && mkdir %s/elsewhere && "
		 "ln -s %s/elsewhere %s/pohmelfs-%u", base, OTHER, root, root, base, OTHER);
	EXPECT_EQ_INT(system(cmd), 0);
	EXPECT_EQ_INT(open_as_other(&cfg, base, want), 10 + EACCES);
	pohm_config_free(&cfg);
	fn_stop(&fn);
}
