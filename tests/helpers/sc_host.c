/*
 * sc_host.c — hosts that watch what the shim does to the process it lives
 * in, for tests/bats/shim_procs.bats (issue 19).  Run under the shim with
 * the storage on.  Each command prints "ok" at the end, or "ERR what" and
 * exits 1.
 *
 *   forks DIR N       create DIR/parent, then fork N children, 16 at a
 *                     time; each creates DIR/f-I with O_EXCL, writes its
 *                     name and exits.  Every child must succeed (siblings
 *                     must not draw the same new inode numbers).
 *   sigchld DIR PIDFILE
 *                     count SIGCHLDs, write and close DIR/written (with
 *                     sync_on_close=0 the close starts pohmelfsd), wait
 *                     up to 20 s for PIDFILE, then 0.5 s more: no SIGCHLD
 *                     may have come and no child of this process may
 *                     exist (waitpid(-1) and waitpid(-1, __WALL): ECHILD).
 *                     SIGTERM and SIGUSR1 stay blocked in this program
 *                     throughout (the daemon must not inherit that).
 *                     Prints "ok daemon PID" with the daemon's pid.
 *   umask DIR N       umask(077); one thread sets umask(077) in a loop and
 *                     checks that it always finds 077 there; three threads
 *                     each create N files (mode 0666) and N directories
 *                     (0777) under DIR: all must be 0600 / 0700.
 *   sighandler DIR N  a SIGALRM every 10 ms (setitimer) whose handler
 *                     creates DIR/s/pid-K (write "K", close) and unlinks
 *                     DIR/s/pid-(K-1), as a daemon's pid-file handler
 *                     does, while the main thread creates DIR/m-I, I < N,
 *                     under the shim (then DIR/x-I until the handler ran
 *                     more than 20 times).  Prints "ok HITS"; a deadlock is the
 *                     caller's timeout.  Locally DIR/s ends holding
 *                     pid-(HITS-1) alone.
 *   chain DIR N       make DIR/d/f (holding "deep") and a chain of
 *                     relative symlinks DIR/l0 -> d, DIR/lI -> l(I-1).
 *   vforkexec PATH    vfork; the child execv's PATH; the parent waits:
 *                     it must exit 0.
 *   deepstack DIR N KB
 *                     stat DIR (the library's first call), then on a
 *                     thread whose stack is KB KiB: stat, open and read
 *                     DIR/l(N-1)/f, mkdir DIR/l(N-1)/new.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
	const char *e = strerrorname_np(errno);

	printf("ERR %s: %s\n", what, e ? e : "?");
	return 1;
}

/* DIR/NAME created with O_EXCL, holding its own path. */
static int create_named(const char *dir, const char *name)
{
	char p[PATH_MAX];
	int fd, n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return -errno;
	n = (int)strlen(p);
	if (write(fd, p, (size_t)n) != n) {
		n = -errno;
		close(fd);
		return n ? n : -EIO;
	}
	return close(fd) ? -errno : 0;
}

static int do_forks(const char *dir, int n)
{
	char name[32];
	int i, done = 0, bad = 0, st, r;
	pid_t pid;

	/* The parent uses the namespace first: its generator is seeded and
	 * every child starts from a copy of it. */
	if ((r = create_named(dir, "parent"))) {
		errno = -r;
		return fail("create parent");
	}
	for (i = 0; i < n || done < i;) {
		if (i < n && i - done < 16) {
			if ((pid = fork()) < 0)
				return fail("fork");
			if (pid == 0) {
				snprintf(name, sizeof(name), "f-%d", i);
				r = create_named(dir, name);
				if (r)
					printf("ERR child %d: %s\n", i, strerrorname_np(-r));
				fflush(stdout);
				_exit(r ? 1 : 0);
			}
			i++;
			continue;
		}
		if (wait(&st) < 0)
			return fail("wait");
		done++;
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad) {
		printf("ERR %d of %d children failed\n", bad, n);
		return 1;
	}
	printf("ok\n");
	return 0;
}

static volatile sig_atomic_t nchld;

static void on_chld(int sig __attribute__((unused)))
{
	nchld++;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int do_sigchld(const char *dir, const char *pidfile)
{
	struct sigaction sa = { 0 };
	char buf[32] = "";
	sigset_t blk;
	int i, r, fd;
	ssize_t n;

	sa.sa_handler = on_chld;	/* no SA_RESTART: our calls see EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL))
		return fail("sigaction");
	sigemptyset(&blk);
	sigaddset(&blk, SIGTERM);
	sigaddset(&blk, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &blk, NULL))
		return fail("sigprocmask");
	if ((r = create_named(dir, "written"))) {
		errno = -r;
		return fail("create");
	}
	for (i = 0; i < 200 && access(pidfile, F_OK); i++)
		nap_ms(100);
	nap_ms(500);
	fd = open(pidfile, O_RDONLY);
	if (fd < 0)
		return fail("no pohmelfsd pid file");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (nchld) {
		printf("ERR %d SIGCHLD for children this program never made\n", (int)nchld);
		return 1;
	}
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		return fail("waitpid(-1) found a child");
	if (waitpid(-1, NULL, WNOHANG | __WALL) != -1 || errno != ECHILD)
		return fail("waitpid(-1, __WALL) found a child");
	printf("ok daemon %s\n", buf);
	return 0;
}

static const char *um_dir;
static int um_n;
static volatile int um_stop;
static int um_undone, um_bad;	/* atomics */

static void *umask_setter(void *arg __attribute__((unused)))
{
	while (!__atomic_load_n(&um_stop, __ATOMIC_RELAXED))
		if (umask(077) != 077)
			__atomic_add_fetch(&um_undone, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *creator(void *arg)
{
	long t = (long)arg;
	char p[PATH_MAX];
	struct stat st;
	int i, fd;

	for (i = 0; i < um_n; i++) {
		snprintf(p, sizeof(p), "%s/t%ld-f%d", um_dir, t, i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0666);
		if (fd < 0 || fstat(fd, &st) || close(fd)) {
			printf("ERR open %s: %s\n", p, strerrorname_np(errno));
			__atomic_add_fetch(&um_bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		if ((st.st_mode & 07777) != 0600 || stat(p, &st) || (st.st_mode & 07777) != 0600) {
			printf("ERR %s: mode %o, expected 600\n", p, st.st_mode & 07777);
			__atomic_add_fetch(&um_bad, 1, __ATOMIC_RELAXED);
		}
		snprintf(p, sizeof(p), "%s/t%ld-d%d", um_dir, t, i);
		if (mkdir(p, 0777) || stat(p, &st) || (st.st_mode & 07777) != 0700) {
			printf("ERR mkdir %s: %s, mode %o\n", p, strerrorname_np(errno),
			       st.st_mode & 07777);
			__atomic_add_fetch(&um_bad, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static int do_umask(const char *dir, int n)
{
	pthread_t setter, c[3];
	long i;

	um_dir = dir;
	um_n = n;
	umask(077);
	if (pthread_create(&setter, NULL, umask_setter, NULL))
		return fail("pthread_create");
	for (i = 0; i < 3; i++)
		if (pthread_create(&c[i], NULL, creator, (void *)i))
			return fail("pthread_create");
	for (i = 0; i < 3; i++)
		pthread_join(c[i], NULL);
	__atomic_store_n(&um_stop, 1, __ATOMIC_RELAXED);
	pthread_join(setter, NULL);
	if (umask(077) != 077)
		um_undone++;
	if (um_undone)
		printf("ERR the program's umask 077 was found changed %d times\n", um_undone);
	if (um_bad || um_undone)
		return 1;
	printf("ok\n");
	return 0;
}

/* The handler's state: written before the timer starts, then only by it. */
static char sig_base[PATH_MAX];
static size_t sig_baselen;
static volatile sig_atomic_t sig_hits, sig_bad, sig_errno, sig_badrun;	/* the last failed call's */

/* sig_base + K into p (no stdio in a handler). */
static void sig_name(char *p, long k)
{
	char d[24];
	int n = 0;

	memcpy(p, sig_base, sig_baselen);
	do
		d[n++] = (char)('0' + k % 10);
	while ((k /= 10));
	for (p += sig_baselen; n; )
		*p++ = d[--n];
	*p = '\0';
}

static void on_alarm(int sig)
{
	char p[PATH_MAX];
	long k = sig_hits;
	int fd, saved = errno;

	(void)sig;
	sig_name(p, k);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1 || close(fd)) {
		sig_bad = 1;
		sig_errno = errno;
		sig_badrun = (sig_atomic_t)k;
	}
	if (k > 0) {
		sig_name(p, k - 1);
		if (unlink(p)) {
			sig_bad = 2;
			sig_errno = errno;
			sig_badrun = (sig_atomic_t)k;
		}
	}
	sig_hits = (sig_atomic_t)(k + 1);
	errno = saved;
}

static int do_sighandler(const char *dir, int n)
{
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	char name[32], sdir[PATH_MAX];
	int i, r;

	snprintf(sdir, sizeof(sdir), "%s/s", dir);
	if (mkdir(sdir, 0755))
		return fail("mkdir s");
	sig_baselen = (size_t)snprintf(sig_base, sizeof(sig_base), "%s/pid-", sdir);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL))
		return fail("timer");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "m-%d", i);
		if ((r = create_named(dir, name))) {
			errno = -r;
			return fail(name);
		}
	}
	/* Creates got fast (session 14: 150 took under 100 ms, 10 alarms):
	 * go on creating x-I until the handler has run 20 times. */
	for (i = 0; sig_hits <= 20 && i < 100 * n; i++) {
		snprintf(name, sizeof(name), "x-%d", i);
		if ((r = create_named(dir, name))) {
			errno = -r;
			return fail(name);
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	if (sig_bad) {
		const char *e = strerrorname_np((int)sig_errno);

		printf("ERR the handler's call failed (%d, %s, in run %ld of %ld)\n", (int)sig_bad,
		       e ? e : "?", (long)sig_badrun, (long)sig_hits);
		return 1;
	}
	printf("ok %d\n", (int)sig_hits);
	return 0;
}

static int do_chain(const char *dir, int n)
{
	char p[PATH_MAX], t[32];
	int i, fd;

	snprintf(p, sizeof(p), "%s/d", dir);
	if (mkdir(p, 0755))
		return fail("mkdir d");
	snprintf(p, sizeof(p), "%s/d/f", dir);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 || write(fd, "deep", 4) != 4 ||
	    close(fd))
		return fail("d/f");
	for (i = 0; i < n; i++) {
		if (i)
			snprintf(t, sizeof(t), "l%d", i - 1);
		else
			snprintf(t, sizeof(t), "d");
		snprintf(p, sizeof(p), "%s/l%d", dir, i);
		if (symlink(t, p))
			return fail("symlink");
	}
	printf("ok\n");
	return 0;
}

struct deep_arg {
	const char *dir;
	int n;
	char err[128];
};

static void *deep_thread(void *v)
{
	struct deep_arg *a = v;
	char p[PATH_MAX], b[8];
	struct stat st;
	int fd;

	snprintf(p, sizeof(p), "%s/l%d/f", a->dir, a->n - 1);
	if (stat(p, &st) || st.st_size != 4) {
		snprintf(a->err, sizeof(a->err), "stat: %s", strerrorname_np(errno));
		return NULL;
	}
	if ((fd = open(p, O_RDONLY)) < 0 || read(fd, b, sizeof(b)) != 4 || memcmp(b, "deep", 4)) {
		snprintf(a->err, sizeof(a->err), "open/read: %s", strerrorname_np(errno));
		return NULL;
	}
	close(fd);
	snprintf(p, sizeof(p), "%s/l%d/new", a->dir, a->n - 1);
	if (mkdir(p, 0755))
		snprintf(a->err, sizeof(a->err), "mkdir: %s", strerrorname_np(errno));
	return NULL;
}

static int do_deepstack(const char *dir, int n, int kb)
{
	struct deep_arg a = { dir, n, "" };
	pthread_attr_t at;
	struct stat st;
	pthread_t t;

	/* The library's first call under the prefix (its configuration and
	 * connections) on the main thread: the small stack is for the walk. */
	if (stat(dir, &st))
		return fail("stat DIR");
	pthread_attr_init(&at);
	if (pthread_attr_setstacksize(&at, (size_t)kb * 1024) ||
	    pthread_create(&t, &at, deep_thread, &a))
		return fail("thread");
	pthread_join(t, NULL);
	if (a.err[0]) {
		printf("ERR %s\n", a.err);
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int do_vforkexec(const char *path)
{
	int st;
	pid_t pid = vfork();

	if (pid == 0) {
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return fail("vfork");
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("ERR the child: status %#x\n", st);
		return 1;
	}
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(op, "forks"))
		return do_forks(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(op, "sigchld"))
		return do_sigchld(argv[2], argv[3]);
	if (argc == 4 && !strcmp(op, "umask"))
		return do_umask(argv[2], atoi(argv[3]));
	if (argc == 3 && !strcmp(op, "vforkexec"))
		return do_vforkexec(argv[2]);
	if (argc == 4 && !strcmp(op, "chain"))
		return do_chain(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(op, "deepstack"))
		return do_deepstack(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 4 && !strcmp(op, "sighandler"))
		return do_sighandler(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: see the comment at the top of sc_host.c\n");
	return 2;
}
