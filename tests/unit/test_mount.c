/*
 * test_mount.c — core/mount/mount_user.c, where a user who cannot use the
 * configured cache_dir keeps its cache: whether a cache_dir is another
 * user's (pohm_mount_dir_foreign), the per-user path and when $TMPDIR may
 * hold it (pohm_mount_user_dir), and making it while refusing what another
 * user could have planted (pohm_mount_user_dir_make), and which one a
 * configuration uses for the calling user (pohm_mount_cache_dir; another
 * user's case runs in a child as that user).  Ownership cases need
 * chown: skipped when not run as root (CI runs as root).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "config.h"
#include "mount.h"

#define OTHER	65534u	/* the tests' unprivileged user */

static const char *root;	/* th_scratch's directory */

/* A fresh scratch directory (root). */
static void scratch(void)
{
	root = th_scratch("mount");
}

static int mkdir_owned(const char *path, mode_t mode, uid_t uid)
{
	if (mkdir(path, mode) || chmod(path, mode) || chown(path, uid, uid))
		return -1;
	return 0;
}

TEST(root_may_use_any_cache_dir)
{
	scratch();
	EXPECT_EQ_INT(pohm_mount_dir_foreign("/root", 0), 0);
	EXPECT_EQ_INT(pohm_mount_dir_foreign(th_at("none/deeper"), 0), 0);
}

TEST(another_users_dir_or_one_it_cannot_make_is_foreign)
{
	if (geteuid())
		SKIP("needs root for chown");
	scratch();
	EXPECT_EQ_INT(mkdir_owned(th_at("rootdir"), 0755, 0), 0);
	EXPECT_EQ_INT(mkdir_owned(th_at("mine"), 0755, OTHER), 0);
	EXPECT_EQ_INT(pohm_mount_dir_foreign(th_at("rootdir"), OTHER), 1);
	EXPECT_EQ_INT(pohm_mount_dir_foreign(th_at("mine"), OTHER), 0);
	/* Missing: foreign unless its nearest existing ancestor lets the user make it. */
	EXPECT_EQ_INT(pohm_mount_dir_foreign(th_at("rootdir/a/b"), OTHER), 1);
	EXPECT_EQ_INT(pohm_mount_dir_foreign(th_at("mine/a/b"), OTHER), 0);
	/* A symlink is judged by its own owner, not by what it points to. */
	EXPECT_EQ_INT(symlink(th_at("mine"), th_at("link")), 0);
	EXPECT_EQ_INT(pohm_mount_dir_foreign(th_at("link"), OTHER), 1);
}

TEST(the_per_user_path_and_when_TMPDIR_may_hold_it)
{
	char out[4096], want[4096];
	const char *saved = getenv("TMPDIR");

	if (geteuid())
		SKIP("needs root for chown");
	scratch();
	unsetenv("TMPDIR");
	EXPECT_EQ_INT(pohm_mount_user_dir("/data/pre fix", OTHER, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "/var/tmp/pohmelfs-%u/_data_pre fix", OTHER);
	EXPECT_EQ_STR(out, want);
	EXPECT_EQ_INT(pohm_mount_user_dir("relative", OTHER, out, sizeof(out)), -EINVAL);
	EXPECT_EQ_INT(pohm_mount_user_dir("/p", OTHER, out, 20), -ENAMETOOLONG);
	/* The user's own TMPDIR: used. */
	EXPECT_EQ_INT(mkdir_owned(th_at("tmp-own"), 0700, OTHER), 0);
	setenv("TMPDIR", th_at("tmp-own"), 1);
	EXPECT_EQ_INT(pohm_mount_user_dir("/p", OTHER, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/pohmelfs-%u/_p", th_at("tmp-own"), OTHER);
	EXPECT_EQ_STR(out, want);
	/* World-writable and sticky (like /tmp): used. */
	EXPECT_EQ_INT(mkdir_owned(th_at("tmp-sticky"), 01777, 0), 0);
	setenv("TMPDIR", th_at("tmp-sticky"), 1);
	EXPECT_EQ_INT(pohm_mount_user_dir("/p", OTHER, out, sizeof(out)), 0);
	EXPECT(strncmp(out, th_at("tmp-sticky"), strlen(th_at("tmp-sticky"))) == 0);
	/* World-writable without the sticky bit, another user's, or not writable:
	 * someone else could rename the directory away, so /var/tmp. */
	EXPECT_EQ_INT(mkdir_owned(th_at("tmp-open"), 0777, 0), 0);
	EXPECT_EQ_INT(mkdir_owned(th_at("tmp-other"), 0700, 4242), 0);
	EXPECT_EQ_INT(mkdir_owned(th_at("tmp-ro"), 0755, 0), 0);
	setenv("TMPDIR", th_at("tmp-open"), 1);
	EXPECT_EQ_INT(pohm_mount_user_dir("/p", OTHER, out, sizeof(out)), 0);
	EXPECT(strncmp(out, "/var/tmp/", 9) == 0);
	setenv("TMPDIR", th_at("tmp-other"), 1);
	EXPECT_EQ_INT(pohm_mount_user_dir("/p", OTHER, out, sizeof(out)), 0);
	EXPECT(strncmp(out, "/var/tmp/", 9) == 0);
	setenv("TMPDIR", th_at("tmp-ro"), 1);
	EXPECT_EQ_INT(pohm_mount_user_dir("/p", OTHER, out, sizeof(out)), 0);
	EXPECT(strncmp(out, "/var/tmp/", 9) == 0);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
}

TEST(making_it_refuses_a_planted_symlink_or_another_users_directory)
{
	char err[512], path[512];
	struct stat st;

	if (geteuid())
		SKIP("needs root for chown");
	scratch();
	/* Made, both levels 0700 and the user's; making it again is fine. */
	snprintf(path, sizeof(path), "%s/pohmelfs-0/_p", root);
	err[0] = 0;
	EXPECT_EQ_INT(pohm_mount_user_dir_make(path, 0, err, sizeof(err)), 0);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);
	EXPECT_EQ_INT(stat(th_at("pohmelfs-0"), &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0700);
	EXPECT_EQ_INT(pohm_mount_user_dir_make(path, 0, err, sizeof(err)), 0);
	/* One of the user's own but too open: made private. */
	EXPECT_EQ_INT(chmod(path, 0755), 0);
	EXPECT_EQ_INT(pohm_mount_user_dir_make(path, 0, err, sizeof(err)), 0);
	EXPECT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0700);
	/* A symlink planted at the last level: -EACCES, nothing followed. */
	EXPECT_EQ_INT(mkdir_owned(th_at("elsewhere"), 0755, OTHER), 0);
	snprintf(path, sizeof(path), "%s/pohmelfs-0/_q", root);
	EXPECT_EQ_INT(symlink(th_at("elsewhere"), path), 0);
	err[0] = 0;
	EXPECT_EQ_INT(pohm_mount_user_dir_make(path, 0, err, sizeof(err)), -EACCES);
	EXPECT(strstr(err, "symlink") != NULL);
	EXPECT_EQ_INT(stat(th_at("elsewhere"), &st), 0);
	EXPECT_EQ_INT(st.st_mode & 07777, 0755);
	/* A directory another user made in advance, at either level. */
	snprintf(path, sizeof(path), "%s/pohmelfs-0/_r", root);
	EXPECT_EQ_INT(mkdir_owned(path, 0700, OTHER), 0);
	err[0] = 0;
	EXPECT_EQ_INT(pohm_mount_user_dir_make(path, 0, err, sizeof(err)), -EACCES);
	EXPECT(strstr(err, "belongs to uid") != NULL);
	EXPECT_EQ_INT(mkdir_owned(th_at("pohmelfs-7"), 0700, OTHER), 0);
	snprintf(path, sizeof(path), "%s/pohmelfs-7/_p", root);
	EXPECT_EQ_INT(pohm_mount_user_dir_make(path, 7, err, sizeof(err)), -EACCES);
	EXPECT_EQ_INT(stat(path, &st), -1);		/* nothing made below it */
	EXPECT_EQ_INT(pohm_mount_user_dir_make("relative/x", 0, err, sizeof(err)), -EINVAL);
}

/* pohm_mount_cache_dir of cfg in a child running as uid OTHER: 0 and the
 * path in out, or -errno (or -1 if the child could not switch). */
static int cache_dir_as_other(const struct pohm_config *cfg, char *out, size_t len)
{
	int p[2], st, r;
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		char buf[4096 + 16];

		close(p[0]);
		if (setresgid(OTHER, OTHER, OTHER) || setresuid(OTHER, OTHER, OTHER))
			_exit(1);
		r = pohm_mount_cache_dir(cfg, buf + 16, sizeof(buf) - 16);
		snprintf(buf, 16, "%d", r);
		n = write(p[1], buf, sizeof(buf));
		_exit(n == (ssize_t)sizeof(buf) ? 0 : 1);
	}
	close(p[1]);
	{
		char buf[4096 + 16];

		n = read(p[0], buf, sizeof(buf));
		close(p[0]);
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) ||
		    n != (ssize_t)sizeof(buf))
			return -1;
		snprintf(out, len, "%s", buf + 16);
		return atoi(buf);
	}
}

TEST(the_cache_dir_a_configuration_uses_for_the_calling_user)
{
	struct pohm_config cfg;
	char out[4096], want[4096], err[512];
	const char *home = getenv("HOME"), *xdg = getenv("XDG_STATE_HOME");
	const char *tmp = getenv("TMPDIR");

	if (geteuid())
		SKIP("needs root to run a child as another user");
	scratch();
	pohm_config_defaults(&cfg);
	EXPECT_EQ_INT(pohm_config_set(&cfg, "prefix", "/p/x", POHM_CFG_CALLER, err, sizeof(err)), 0);
	/* No cache_dir: under XDG_STATE_HOME, else HOME's .local/state. */
	setenv("XDG_STATE_HOME", th_at("state"), 1);
	EXPECT_EQ_INT(pohm_mount_cache_dir(&cfg, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/pohmelfs/_p_x", th_at("state"));
	EXPECT_EQ_STR(out, want);
	unsetenv("XDG_STATE_HOME");
	setenv("HOME", th_at("home"), 1);
	EXPECT_EQ_INT(pohm_mount_cache_dir(&cfg, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/.local/state/pohmelfs/_p_x", th_at("home"));
	EXPECT_EQ_STR(out, want);
	/* A configured cache_dir that is root's: root uses it ... */
	EXPECT_EQ_INT(mkdir_owned(th_at("cd-root"), 0700, 0), 0);
	EXPECT_EQ_INT(pohm_config_set(&cfg, "cache_dir", th_at("cd-root"), POHM_CFG_CALLER, err,
				      sizeof(err)), 0);
	EXPECT_EQ_INT(pohm_mount_cache_dir(&cfg, out, sizeof(out)), 0);
	EXPECT_EQ_STR(out, th_at("cd-root"));
	/* ... another user gets its per-user one ... */
	unsetenv("TMPDIR");
	EXPECT_EQ_INT(cache_dir_as_other(&cfg, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "/var/tmp/pohmelfs-%u/_p_x", OTHER);
	EXPECT_EQ_STR(out, want);
	/* ... and a cache_dir of that user's own is used as configured. */
	EXPECT_EQ_INT(mkdir_owned(th_at("cd-other"), 0700, OTHER), 0);
	EXPECT_EQ_INT(pohm_config_set(&cfg, "cache_dir", th_at("cd-other"), POHM_CFG_CALLER, err,
				      sizeof(err)), 0);
	EXPECT_EQ_INT(cache_dir_as_other(&cfg, out, sizeof(out)), 0);
	EXPECT_EQ_STR(out, th_at("cd-other"));
	pohm_config_free(&cfg);
	if (home)
		setenv("HOME", home, 1);
	if (xdg)
		setenv("XDG_STATE_HOME", xdg, 1);
	if (tmp)
		setenv("TMPDIR", tmp, 1);
}

/* host.c: a new object's stored mode is the kernel's: type bits kept,
 * permission bits (set-id and sticky too) less the umask, read each time. */
TEST(new_mode_applies_the_current_umask)
{
	mode_t old = umask(022);

	EXPECT_EQ_INT(pohm_mount_new_mode(0666), 0644);
	EXPECT_EQ_INT(pohm_mount_new_mode(S_IFCHR | 04777), S_IFCHR | 04755);
	umask(077);
	EXPECT_EQ_INT(pohm_mount_new_mode(S_IFDIR | 01777), S_IFDIR | 01700);
	EXPECT_EQ_INT(umask(old), 077);	/* read without changing it */
}
