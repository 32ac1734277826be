/*
 * sc_procs.c — process shapes that the shim must survive, for
 * tests/bats/shim_procs.bats (run under the shim with the storage on; the
 * test checks from another host what reached the storage).  Each file
 * written holds its own name; each command prints "ok" at the end, or
 * "ERR what: errno-name" and exits 1.
 *
 *   setuid UID DIR N    write DIR/before, then setgid+setuid(UID) and
 *                       write, read back and rename N files in DIR
 *   seteuid UID DIR N   the same with setegid+seteuid(UID), then back to
 *                       the original user and write DIR/back
 *   setuid-cwd UID DIR N  chdir(DIR), then as setuid with relative names
 *                       (the new user may not reach DIR by its path)
 *   held-fd UID FILE    open FILE for writing (created, empty), then
 *                       setgid+setuid(UID), write its own name through
 *                       that fd and close it
 *   dlopen LIB SYM      dlopen LIB, call int SYM(void), print its result
 *   chdir-root DIR      chdir("/"), then mkdir, write, rename, list and
 *                       stat under DIR by absolute paths
 *   fork DIR N          fork; parent and child each write N files
 *                       (DIR/parent-I, DIR/child-I) at once
 *   children DIR N      N short-lived children, one after another: each
 *                       runs /bin/sh -c 'echo … > DIR/c-I' (fork + exec)
 *   closefrom DIR HOW   write DIR/early through an fd left open, then
 *                       close every fd from 3 up (HOW: close_range,
 *                       closefrom, or loop: close(3..1023) one by one),
 *                       or (HOW dup2) close it and dup2 /dev/null over
 *                       700..720, where the library's fds live; then
 *                       write, read back, rename and list under DIR
 *   creds UID DIR [N]   write DIR/before; then for each way to switch the
 *                       effective ids (setreuid+setregid, setresuid+
 *                       setresgid) switch to UID, write DIR/re or DIR/res,
 *                       switch back the same way and write DIR/re-back or
 *                       DIR/res-back; then capset (the same capabilities)
 *                       and setfsuid+setfsgid(UID) in this thread: a
 *                       write of DIR/fs must fail (EACCES: the cache is
 *                       root's), and after setfsuid+setfsgid(0) DIR/fs-back
 *                       succeeds
 *   exec-as UID CMD...  drop supplementary groups, setgid+setuid(UID) and
 *                       exec CMD (setpriv's job, for sanitizer runs: an
 *                       uninstrumented setpriv cannot take the
 *                       instrumented library, its libcap-ng opens a file
 *                       before the sanitizer's runtime is initialised)
 */
#include <dirent.h>
#include <dlfcn.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

/* glibc exports capset but declares it nowhere (libcap's header does). */
int capset(cap_user_header_t hdr, cap_user_data_t data);

static int fail(const char *what)
{
	const char *e = strerrorname_np(errno);

	printf("ERR %s: %s\n", what, e ? e : "?");
	return 1;
}

/* DIR/NAME-I, written with its own name as content. */
static int write_named(const char *dir, const char *name, int i)
{
	char p[PATH_MAX];
	int fd;
	size_t n;

	if (i >= 0)
		snprintf(p, sizeof(p), "%s/%s-%d", dir, name, i);
	else
		snprintf(p, sizeof(p), "%s/%s", dir, name);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		return fail(p);
	n = strlen(p);
	if (write(fd, p, n) != (ssize_t)n || close(fd))
		return fail(p);
	return 0;
}

/* The file P holds its own name. */
static int check_named(const char *p)
{
	char buf[PATH_MAX];
	ssize_t n;
	int fd = open(p, O_RDONLY);

	if (fd < 0)
		return fail(p);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return fail(p);
	buf[n] = 0;
	if (strcmp(buf, p)) {
		printf("ERR %s holds \"%s\"\n", p, buf);
		return 1;
	}
	return 0;
}

/* Write N files DIR/NAME-I, read them back, rename each to NAME-I.done. */
static int write_batch(const char *dir, const char *name, int n)
{
	char p[PATH_MAX], q[PATH_MAX + 8];
	int i;

	for (i = 0; i < n; i++) {
		if (write_named(dir, name, i))
			return 1;
		snprintf(p, sizeof(p), "%s/%s-%d", dir, name, i);
		if (check_named(p))
			return 1;
		snprintf(q, sizeof(q), "%s.done", p);
		if (rename(p, q))
			return fail("rename");
	}
	return 0;
}

static int do_setuid(int eff, uid_t uid, const char *dir, int n)
{
	uid_t was = geteuid();
	gid_t was_g = getegid();

	if (write_named(dir, "before", -1))
		return 1;
	if (eff ? setegid(uid) || seteuid(uid) : setgid(uid) || setuid(uid))
		return fail("setuid");
	if (geteuid() != uid)
		return fail("still the old user");
	if (write_batch(dir, "after", n))
		return 1;
	if (eff) {
		if (seteuid(was) || setegid(was_g))
			return fail("seteuid back");
		if (write_named(dir, "back", -1))
			return 1;
	}
	printf("ok\n");
	return 0;
}

/* An fd opened before a switch of user, written and closed after it. */
static int do_held_fd(uid_t uid, const char *p)
{
	size_t n = strlen(p);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return fail(p);
	if (setgid(uid) || setuid(uid))
		return fail("setuid");
	if (write(fd, p, n) != (ssize_t)n)
		return fail("write");
	if (close(fd))
		return fail("close");
	printf("ok\n");
	return 0;
}

static int do_dlopen(const char *lib, const char *sym)
{
	void *h = dlopen(lib, RTLD_NOW);
	int (*f)(void);

	if (!h) {
		printf("ERR dlopen: %s\n", dlerror());
		return 1;
	}
	if (!(f = (int (*)(void))dlsym(h, sym))) {
		printf("ERR dlsym: %s\n", dlerror());
		return 1;
	}
	printf("%d\n", f());
	dlclose(h);
	return 0;
}

static int do_chdir_root(const char *dir)
{
	char p[PATH_MAX], q[PATH_MAX], cwd[PATH_MAX];
	struct dirent *e;
	struct stat st;
	int n = 0;
	DIR *d;

	if (chdir("/") || !getcwd(cwd, sizeof(cwd)) || strcmp(cwd, "/"))
		return fail("chdir /");
	snprintf(p, sizeof(p), "%s/daemon", dir);
	if (mkdir(p, 0755))
		return fail("mkdir");
	if (write_batch(p, "f", 5) || write_named(p, "pid", -1))
		return 1;
	snprintf(q, sizeof(q), "%s/daemon/pid", dir);
	if (stat(q, &st) || st.st_size != (off_t)strlen(q))
		return fail("stat");
	if (!(d = opendir(p)))
		return fail("opendir");
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	if (n != 6) {
		printf("ERR %d names in %s, not 6\n", n, p);
		return 1;
	}
	if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, "/"))
		return fail("cwd moved");
	printf("ok\n");
	return 0;
}

static int do_fork(const char *dir, int n)
{
	int st, r;
	pid_t pid;

	if (write_named(dir, "before-fork", -1))
		return 1;
	if ((pid = fork()) < 0)
		return fail("fork");
	if (pid == 0) {
		r = write_batch(dir, "child", n);
		fflush(stdout);
		_exit(r);
	}
	r = write_batch(dir, "parent", n);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return fail("child");
	if (r)
		return 1;
	printf("ok\n");
	return 0;
}

static int do_children(const char *dir, int n)
{
	char p[PATH_MAX], num[16];
	int i, st;
	pid_t pid;

	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/c-%d", dir, i);
		snprintf(num, sizeof(num), "%d", i);
		if ((pid = fork()) < 0)
			return fail("fork");
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", "echo \"$0\" > \"$1\"", num, p, (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("ERR child %d: status %d\n", i, st);
			return 1;
		}
	}
	printf("ok\n");
	return 0;
}

#define DUP_LO 700
#define DUP_HI 720

static int do_closefrom(const char *dir, const char *how)
{
	char p[PATH_MAX], early[PATH_MAX];
	struct dirent *e;
	int fd, n = 0, i, nul;
	struct stat st;
	DIR *d;

	snprintf(early, sizeof(early), "%s/early", dir);
	if ((fd = open(early, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		return fail("open early");
	if (write(fd, early, strlen(early)) != (ssize_t)strlen(early))
		return fail("write early");
	if (write_named(dir, "warm", -1))
		return 1;
	if (!strcmp(how, "closefrom")) {
		closefrom(3);
	} else if (!strcmp(how, "loop")) {
		for (i = 3; i < 1024; i++)
			close(i);
	} else if (!strcmp(how, "dup2")) {
		/* Over the numbers the library's own fds live at. */
		close(fd);
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			return fail("fd survived");
		if ((nul = open("/dev/null", O_RDWR)) < 0)
			return fail("open /dev/null");
		for (i = DUP_LO; i <= DUP_HI; i++)
			if (dup2(nul, i) != i)
				return fail("dup2");
	} else if (close_range(3, ~0U, 0)) {
		return fail("close_range");
	}
	if (strcmp(how, "dup2") && (fcntl(fd, F_GETFD) != -1 || errno != EBADF))
		return fail("fd survived");
	if (write_batch(dir, "after", 5))
		return 1;
	snprintf(p, sizeof(p), "%s/sub", dir);
	if (mkdir(p, 0755) || write_named(p, "inner", -1))
		return fail("mkdir");
	if (!(d = opendir(dir)))
		return fail("opendir");
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	if (n != 8) {
		printf("ERR %d names in %s, not 8\n", n, dir);
		return 1;
	}
	if (!strcmp(how, "dup2")) {
		/* The host's fds are still its /dev/null, and nothing of ours went there. */
		for (i = DUP_LO; i <= DUP_HI; i++)
			if (fstat(i, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
				printf("ERR fd %d is not the program's /dev/null any more\n", i);
				return 1;
			}
		for (i = DUP_LO; i <= DUP_HI; i++)
			if (close(i))
				return fail("close of a dup2'd fd");
	}
	printf("ok\n");
	return 0;
}

/* Each libc way to change the ids that preload/creds.c reports (issue 23). */
static int do_creds(uid_t uid, const char *dir)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	char p[PATH_MAX];
	int fd;

	if (write_named(dir, "before", -1))
		return 1;
	if (setregid((gid_t)-1, uid) || setreuid((uid_t)-1, uid) || geteuid() != uid)
		return fail("setreuid");
	if (write_named(dir, "re", -1))
		return 1;
	if (setreuid((uid_t)-1, 0) || setregid((gid_t)-1, 0))
		return fail("setreuid back");
	if (write_named(dir, "re-back", -1))
		return 1;
	if (setresgid((gid_t)-1, uid, (gid_t)-1) || setresuid((uid_t)-1, uid, (uid_t)-1))
		return fail("setresuid");
	if (write_named(dir, "res", -1))
		return 1;
	if (setresuid((uid_t)-1, 0, (uid_t)-1) || setresgid((gid_t)-1, 0, (gid_t)-1))
		return fail("setresuid back");
	if (write_named(dir, "res-back", -1))
		return 1;
	if (syscall(SYS_capget, &h, d) || capset(&h, d))
		return fail("capset");
	setfsgid(uid);
	setfsuid(uid);
	snprintf(p, sizeof(p), "%s/fs", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	setfsuid(0);
	setfsgid(0);
	if (fd >= 0 || errno != EACCES)
		return fail("a create as fsuid UID in root's cache");
	if (write_named(dir, "fs-back", -1))
		return 1;
	printf("ok\n");
	return 0;
}

static int do_exec_as(uid_t uid, char **cmd)
{
	if (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)
		return fail("exec-as: switching user");
	execvp(cmd[0], cmd);
	return fail(cmd[0]);
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(op, "setuid"))
		return do_setuid(0, atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc == 5 && !strcmp(op, "setuid-cwd")) {
		if (chdir(argv[3]))
			return fail("chdir");
		return do_setuid(0, atoi(argv[2]), ".", atoi(argv[4]));
	}
	if (argc == 5 && !strcmp(op, "seteuid"))
		return do_setuid(1, atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(op, "held-fd"))
		return do_held_fd(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(op, "dlopen"))
		return do_dlopen(argv[2], argv[3]);
	if (argc == 3 && !strcmp(op, "chdir-root"))
		return do_chdir_root(argv[2]);
	if (argc == 4 && !strcmp(op, "fork"))
		return do_fork(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(op, "children"))
		return do_children(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(op, "creds"))	/* switch_run adds a count */
		return do_creds(atoi(argv[2]), argv[3]);
	if (argc >= 4 && !strcmp(op, "exec-as"))
		return do_exec_as(atoi(argv[2]), argv + 3);
	if (argc == 4 && !strcmp(op, "closefrom"))
		return do_closefrom(argv[2], argv[3]);
	fprintf(stderr, "usage: see the comment at the top of sc_procs.c\n");
	return 2;
}
