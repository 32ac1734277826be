/*
 * sig_queue.c — a daemon-like host whose signal handlers change names
 * under the prefix while its main thread is inside the shim, then dies in
 * a handler, for tests/bats/shim_sigqueue.bats (issue 19 item 5).
 *
 *   sig_queue DIR N M
 *     Before: DIR/pid (the pid file) and DIR/r-K holding "r-K", K < M,
 *     made by ordinary calls.  Then a SIGALRM every 1 ms (setitimer) whose
 *     handler renames DIR/r-K to DIR/q-K (K = the hit), while the main
 *     thread creates DIR/m-I, I < N.  After M renames, the first SIGALRM
 *     that finds the main thread inside the shim (in_shim) and a stat of
 *     DIR/pid answered by libc, not by the shim's overlay (straight_to_libc:
 *     the shim was busy for sure) sends SIGTERM to the process; the SIGTERM
 *     handler (nested: the main thread is still where the alarm found it)
 *     writes DIR/last ("bye"),
 *     unlinks DIR/pid and _exit(0)s, as a daemon's SIGTERM handler does:
 *     no later call of the process, no exit hook.  Prints "bye HITS",
 *     "inside the shim K" (alarms that found the main thread in the shim)
 *     and "disproved D" (in_shim guesses the check found wrong) from the
 *     handler (write(2)); "ERR what" and exit 1 on a failed call (also when
 *     a stat of DIR/pid from the main thread does not show the overlay's
 *     device: the check could not tell); a deadlock is the caller's
 *     timeout.  Main loop done before M renames: prints "ERR slow" (exit 1).
 *     (in_shim alone was wrong now and then, about 1 alarm in 200, in the
 *     plain build too: an interrupted instruction of the library's wrapper
 *     code, outside any hook (close's fd check, the path's classification),
 *     where the shim is not busy and a handler's calls rightly take the
 *     hooks: its unlink of DIR/pid then reached the storage.)
 *
 *   sig_queue DIR N M term SQDIR
 *     As above, but in_shim's guess is checked before the SIGTERM: the
 *     alarm's handler first chmods DIR/pid to 0644 and sends it only if
 *     that left a new entry in SQDIR (the queue folder): the shim was busy
 *     for sure, so the SIGTERM handler's calls are queued too.  In sanitizer
 *     builds, where only the interrupted PC tells, the guess was wrong now
 *     and then: the SIGTERM handler's calls then took the normal way, whose
 *     drain replayed every record, and the queue was empty at the end.
 *
 *   sig_queue DIR N M stat SQDIR
 *     As above, but the SIGALRM handler acts only when it finds the main
 *     thread inside the shim: read-only calls on DIR/r-K (stat, lstat,
 *     access, faccessat, readlink, statx, open O_RDONLY, statvfs,
 *     getxattr), then one changing call (mkdir DIR/s-K, the control).
 *     From the M-th such hit on, once SQDIR (the queue folder, outside the
 *     prefix) holds an entry, it prints "bye HITS" and "inside the shim K"
 *     and _exit(0)s in the handler: the records of its last calls stay in
 *     SQDIR, locked, never replayed by this process.  No entry after M + 400
 *     hits: prints "no record after HITS" and _exit(3)s.
 *
 *   sig_queue DIR N M burst SQDIR
 *     The first SIGALRM that finds the main thread inside the shim and
 *     leaves an entry in SQDIR: its handler makes M directories DIR/b-H-K
 *     (H the hit, K < M) in one go, prints "bye HITS", "inside the shim K"
 *     and _exit(0)s; no entry after 400 such hits: "no record after HITS",
 *     _exit(3).
 *
 *   sig_queue DIR N M unlink
 *     DIR/r-K, K < M, exist already (not made here).  The SIGALRM handler,
 *     when it finds the main thread inside the shim, unlinks DIR/r-K
 *     (K = the hit); after M, the timer stops, the main loop ends and the
 *     process makes one more call under the prefix and exits normally.
 *     Prints "done HITS" and "inside the shim K".
 *
 *   In every mode an alarm acts on in_shim's yes at most once per create
 *   of the main loop (step, below).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <ucontext.h>
#include <unistd.h>

static char dir[PATH_MAX];
static size_t dirlen;
static int m_max;
static volatile sig_atomic_t hits, bad, inlib;
static uintptr_t anchor;	/* an address on the main thread's own stack */
static enum { M_TERM, M_STAT, M_UNLINK, M_BURST } mode;
static int sqfd = -1;		/* M_STAT, M_BURST, M_TERM with SQDIR: the queue folder */
static volatile sig_atomic_t done;	/* M_UNLINK: the handler's part is over */
static volatile sig_atomic_t disproved;	/* in_shim said yes, the check no */
/*
 * The main loop's creates done, and its count when an alarm last acted on
 * in_shim's yes: an alarm acts at most once per create.  A handler that
 * acted where in_shim was wrong made its calls through the hooks (storage
 * round trips, often over the timer's 1 ms): the next alarm was pending
 * at its return and found the main thread at the same instruction, and
 * so on, the main thread starved (seen: "no record after 405", the plain
 * build's `stat` mode).
 */
static volatile sig_atomic_t step, acted = -1;
static dev_t local_dev;		/* M_TERM without SQDIR: DIR/pid's device, from the kernel */

__attribute__((noinline, no_sanitize("address")))
static void set_anchor(void)
{
	char probe;

	anchor = (uintptr_t)&probe;
}

/* The library's code (its executable mappings, from /proc/self/maps). */
static uintptr_t lib_lo[8], lib_hi[8];
static int nlib;

static void find_lib(void)
{
	char line[4096];
	unsigned long lo, hi;
	char perm[8];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f) && nlib < 8)
		if (strstr(line, "libpohmelfs") &&
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) == 3 && perm[2] == 'x') {
			lib_lo[nlib] = lo;
			lib_hi[nlib++] = hi;
		}
	if (f)
		fclose(f);
}

/*
 * Did this signal interrupt the shim?  The handler runs on the stack of
 * the code it interrupted: far from the main thread's own stack means a
 * hook, which runs on the library's stack (preload/stack.c; not in
 * sanitizer builds).  Else: the interrupted instruction is the library's.
 */
__attribute__((noinline, no_sanitize("address")))	/* probe on the real stack, not ASan's fake one */
static int in_shim(const ucontext_t *uc)
{
	char probe;
	uintptr_t p = (uintptr_t)&probe, pc = 0;
	int i;

	if ((p > anchor ? p - anchor : anchor - p) > ((uintptr_t)64 << 20))
		return 1;
#if defined(__x86_64__)
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	pc = (uintptr_t)uc->uc_mcontext.pc;
#endif
	for (i = 0; i < nlib; i++)
		if (pc >= lib_lo[i] && pc < lib_hi[i])
			return 1;
	return 0;
}

static int fail(const char *what)
{
	const char *e = strerrorname_np(errno);

	printf("ERR %s: %s\n", what, e ? e : "?");
	return 1;
}

/* DIR/<pre><k> into p, no stdio (handlers). */
static char *name_k(char *p, const char *pre, long k)
{
	char d[24], *o = p;
	int n = 0;

	memcpy(o, dir, dirlen);
	o += dirlen;
	*o++ = '/';
	while (*pre)
		*o++ = *pre++;
	if (k >= 0) {
		do
			d[n++] = (char)('0' + k % 10);
		while ((k /= 10));
		while (n)
			*o++ = d[--n];
	}
	*o = '\0';
	return p;
}

static void put(const char *s, long k)
{
	char b[64], d[24];
	size_t n = strlen(s);
	int m = 0;

	memcpy(b, s, n);
	do
		d[m++] = (char)('0' + k % 10);
	while ((k /= 10));
	while (m)
		b[n++] = d[--m];
	b[n++] = '\n';
	if (write(1, b, n) < 0)
		bad = 9;
}

static void on_term(int sig)
{
	char p[PATH_MAX];
	int fd;

	(void)sig;
	fd = open(name_k(p, "last", -1), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "bye", 3) != 3 || close(fd))
		put("ERR handler: last ", errno);
	if (unlink(name_k(p, "pid", -1)))
		put("ERR handler: unlink pid ", errno);
	put("bye ", hits);
	put("inside the shim ", inlib);
	put("disproved ", disproved);
	_exit(0);
}

/* DIR/pid's device as stat(2) reports it, without the shim's wrapper (raw
 * system call): *dev; 0, or -1. */
static int raw_dev(dev_t *dev)
{
	char p[PATH_MAX];
	struct stat st;

	if (syscall(SYS_newfstatat, AT_FDCWD, name_k(p, "pid", -1), &st, 0))
		return -1;
	*dev = st.st_dev;
	return 0;
}

/* M_TERM without SQDIR: did a stat of DIR/pid from this handler go straight
 * to libc?  The shim's hook shows its overlay's device for a file it
 * recorded (core/cache/cachestat.c); straight to libc, the call saw the
 * local one: the shim was busy (or running itself), and the SIGTERM
 * handler's calls go there too, whatever the interrupted PC suggested. */
static int straight_to_libc(void)
{
	char p[PATH_MAX];
	struct stat st;

	return !stat(name_k(p, "pid", -1), &st) && st.st_dev == local_dev;
}

/* Entries in the queue folder (raw getdents64: a handler). */
static int sq_entries(void)
{
	char buf[4096];
	long n, off;
	int count = 0;

	if (lseek(sqfd, 0, SEEK_SET) < 0)
		return 0;
	while ((n = syscall(SYS_getdents64, sqfd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			const char *name = buf + off + 19;

			if (strcmp(name, ".") && strcmp(name, ".."))
				count++;
			off += reclen;
		}
	return count;
}

/* M_TERM with SQDIR: did a changing call (DIR/pid's mode, unchanged) leave
 * a queue record?  Only this handler writes records while it runs, and
 * only a handler that interrupted a busy shim does. */
static int probe_queued(void)
{
	char p[PATH_MAX];
	int before = sq_entries();

	if (chmod(name_k(p, "pid", -1), 0644))
		put("ERR handler: chmod pid ", errno);
	return sq_entries() > before;
}

/* M_STAT: read-only calls on DIR/r-K, then the control mkdir. */
static void stat_hit(long k)
{
	char a[PATH_MAX], l[64];
	struct stat st;
	struct statx stx;
	struct statvfs sv;
	int fd;

	name_k(a, "r-", k % m_max);
	if (stat(a, &st) || lstat(a, &st) || access(a, R_OK) || faccessat(AT_FDCWD, a, F_OK, 0) ||
	    statx(AT_FDCWD, a, 0, STATX_BASIC_STATS, &stx) || statvfs(a, &sv))
		put("ERR handler: stat ", errno);
	if (readlink(a, l, sizeof(l)) >= 0)
		put("ERR handler: readlink ", 0);
	if (getxattr(a, "user.none", l, sizeof(l)) >= 0)
		put("ERR handler: getxattr ", 0);
	if ((fd = open(a, O_RDONLY)) < 0 || close(fd))
		put("ERR handler: open ", errno);
	if (mkdir(name_k(a, "s-", k), 0755))
		put("ERR handler: mkdir ", errno);
}

static void on_alarm(int sig, siginfo_t *si, void *ucv)
{
	char a[PATH_MAX], b[PATH_MAX];
	long k = hits;
	int saved = errno, in = in_shim(ucv);

	(void)sig;
	(void)si;
	if (in)
		inlib = (sig_atomic_t)(inlib + 1);
	if (in && step == acted)
		in = 0;		/* acted in this step already: let the main thread run */
	else if (in)
		acted = step;
	if (mode == M_STAT) {
		if (in) {
			stat_hit(k);
			hits = (sig_atomic_t)(k + 1);
			if (k + 1 >= m_max && sq_entries()) {
				put("bye ", hits);
				put("inside the shim ", inlib);
				_exit(0);
			}
			if (k + 1 >= m_max + 400) {
				/* in_shim's guesses never met a busy shim (no
				 * stack switch to tell in sanitizer builds) */
				put("no record after ", hits);
				_exit(3);
			}
		}
	} else if (mode == M_BURST) {
		if (in) {
			char pre[32] = "b-", d[24];
			int j, n = 0, m = 2;
			long v = k;

			do
				d[n++] = (char)('0' + v % 10);
			while ((v /= 10));
			while (n)
				pre[m++] = d[--n];
			pre[m++] = '-';
			pre[m] = '\0';
			for (j = 0; j < m_max; j++) {
				name_k(a, pre, j);
				if (mkdir(a, 0755))
					put("ERR handler: mkdir ", errno);
			}
			hits = (sig_atomic_t)(k + 1);
			if (sq_entries()) {
				put("bye ", hits);
				put("inside the shim ", inlib);
				_exit(0);
			}
			if (k + 1 >= 400) {
				put("no record after ", hits);
				_exit(3);
			}
		}
	} else if (mode == M_UNLINK) {
		if (in && k < m_max) {
			if (unlink(name_k(a, "r-", k)))
				put("ERR handler: unlink ", errno);
			hits = (sig_atomic_t)(k + 1);
			done = hits >= m_max;
		}
	} else if (k < m_max) {
		if (rename(name_k(a, "r-", k), name_k(b, "q-", k)))
			put("ERR handler: rename ", errno);
		hits = (sig_atomic_t)(k + 1);
	} else if (in && (sqfd < 0 ? straight_to_libc() : probe_queued())) {
		kill(getpid(), SIGTERM);	/* its handler runs now, on this stack */
	} else if (in) {
		disproved = (sig_atomic_t)(disproved + 1);
	}
	errno = saved;
}

static int make(const char *pre, long k, const char *data)
{
	char p[PATH_MAX];
	int fd;

	fd = open(name_k(p, pre, k), O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data) || close(fd))
		return fail(p);
	return 0;
}

int main(int argc, char **argv)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct sigaction sa;
	char data[32];
	int i, n;

	set_anchor();
	find_lib();
	if (argc < 4 ||
	    (argc > 4 && strcmp(argv[4], "stat") && strcmp(argv[4], "burst") &&
	     strcmp(argv[4], "term") && strcmp(argv[4], "unlink")) ||
	    (argc > 4 && strcmp(argv[4], "unlink") && argc != 6))
		return fprintf(stderr, "usage: sig_queue DIR N M [stat|burst|term SQDIR | unlink]\n"), 2;
	if (argc > 4)
		mode = !strcmp(argv[4], "stat")	 ? M_STAT
		       : !strcmp(argv[4], "burst") ? M_BURST
		       : !strcmp(argv[4], "term")  ? M_TERM
						   : M_UNLINK;
	if (argc > 5 && (sqfd = open(argv[5], O_RDONLY | O_DIRECTORY)) < 0)
		return fail(argv[5]);
	setvbuf(stdout, NULL, _IONBF, 0);
	dirlen = strlen(argv[1]);
	memcpy(dir, argv[1], dirlen + 1);
	n = atoi(argv[2]);
	m_max = atoi(argv[3]);
	snprintf(data, sizeof(data), "%d", (int)getpid());
	if (make("pid", -1, data))
		return 1;
	if (mode == M_TERM && sqfd < 0) {
		char p[PATH_MAX];
		struct stat st;

		/* The check must be able to tell: a normal call shows the overlay. */
		if (raw_dev(&local_dev) || stat(name_k(p, "pid", -1), &st))
			return fail("stat pid");
		if (st.st_dev == local_dev) {
			printf("ERR overlay: %s shows the local device %lx\n", p, (unsigned long)st.st_dev);
			return 1;
		}
	}
	for (i = 0; i < m_max && mode != M_UNLINK; i++) {
		snprintf(data, sizeof(data), "r-%d", i);
		if (make("r-", i, data))
			return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_term;
	if (sigaction(SIGTERM, &sa, NULL))
		return fail("sigaction");
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL))
		return fail("timer");
	for (i = 0; i < n && !done; i++) {
		snprintf(data, sizeof(data), "m-%d", i);
		if (make("m-", i, data))
			return 1;
		step = (sig_atomic_t)(i + 1);
	}
	if (done) {
		struct itimerval off = { { 0, 0 }, { 0, 0 } };
		struct stat st;

		setitimer(ITIMER_REAL, &off, NULL);
		if (stat(dir, &st))	/* a hook with no handler around: it drains */
			return fail("stat");
		printf("done %d\ninside the shim %d\n", (int)hits, (int)inlib);
		return 0;
	}
	printf("ERR slow: %d creates before %d renames\n", n, m_max);
	return 1;
}
