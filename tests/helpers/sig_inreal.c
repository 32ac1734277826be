/*
 * sig_inreal.c — a signal handler that interrupts the real open a hook
 * makes from inside core (core/mount procopen.c calls the wrapper's
 * openat back), for tests/bats/shim_sigqueue.bats.
 *
 *   sig_inreal FIFO NAME SQDIR
 *     Opens FIFO (a FIFO under the prefix) for reading: the real open
 *     blocks in the kernel until a writer comes.  A SIGALRM every 20 ms
 *     (SA_RESTART) looks at what it interrupted (x86-64 ucontext: the
 *     kernel set the interrupted openat up for its restart, so the
 *     instruction is a `syscall`, rax SYS_openat, rsi this program's FIFO
 *     pointer: the real open itself, not the hook's own work).  The first
 *     that did: creates NAME (under the prefix) holding "h", then prints
 *     "in the real open" and "queued N", N the entries now in SQDIR (the queue folder,
 *     counted with raw getdents64), and lets a child open the FIFO for
 *     writing.  The open returns; the program closes it, makes one more
 *     call under the prefix (stat NAME: a hook, which releases the queue
 *     record) and prints "done".  No hit within 20 s (the child opens
 *     anyway): "ERR no hit", exit 1.  Not x86-64: "skip", exit 77.
 *
 *   sig_inreal FIFO NAME SQDIR fork
 *     The same, but the handler unlinks NAME (it must exist), and before
 *     its first call after the open (no close of the FIFO before) the
 *     program forks a child that does not exec
 *     (stdout and stderr closed, lives 60 s: the test kills it) and prints
 *     "child PID"; then the call (lstat FIFO) and "done".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static const char *fifo, *name;
static int forks;		/* the "fork" mode: the handler unlinks NAME */
static int sqfd = -1, go[2];
static volatile sig_atomic_t hit;

static void put(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		hit = 2;
}

/* Entries in the queue folder (raw getdents64: a handler). */
static int sq_entries(void)
{
	char buf[4096];
	long n, off;
	int count = 0;

	if (lseek(sqfd, 0, SEEK_SET) < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, sqfd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			const char *nm = buf + off + 19;

			if (strcmp(nm, ".") && strcmp(nm, ".."))
				count++;
			off += reclen;
		}
	return count;
}

#if defined(__x86_64__)
/* Did this signal interrupt the openat of our FIFO (set up for restart)? */
static int in_real_open(const ucontext_t *uc)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	const unsigned char *ip = (const unsigned char *)g[REG_RIP];

	return g[REG_RAX] == SYS_openat && g[REG_RSI] == (greg_t)(uintptr_t)fifo &&
	       ip[0] == 0x0f && ip[1] == 0x05;
}
#endif

static void on_alarm(int sig, siginfo_t *si, void *ucv)
{
	char b[32] = "queued ";
	int saved = errno, n, k = 7, fd;

	(void)sig;
	(void)si;
#if defined(__x86_64__)
	if (hit || !in_real_open(ucv))
		goto out;
#else
	(void)ucv;
	goto out;
#endif
	hit = 1;
	if (forks) {
		if (unlink(name))
			put("ERR handler: unlink\n");
	} else {
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "h", 1) != 1 || close(fd))
			put("ERR handler: create\n");
	}
	put("in the real open\n");
	n = sq_entries();
	if (n < 0) {
		b[k++] = '-';
		n = 1;
	}
	if (n >= 10)
		b[k++] = (char)('0' + n / 10 % 10);
	b[k++] = (char)('0' + n % 10);
	b[k++] = '\n';
	b[k] = '\0';
	put(b);
	if (write(go[1], "g", 1) != 1)
		put("ERR handler: go\n");
out:
	errno = saved;
}

/* The writer: waits for the handler's word (20 s at most), then opens the
 * FIFO for writing with a raw call (not through the shim) and closes it. */
static void writer(void)
{
	struct pollfd pf = { go[0], POLLIN, 0 };
	long fd;

	poll(&pf, 1, 20000);
	fd = syscall(SYS_openat, AT_FDCWD, fifo, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		syscall(SYS_close, (int)fd);
	_exit(fd >= 0 ? 0 : 1);
}

int main(int argc, char **argv)
{
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	struct stat st;
	pid_t child;
	int fd, status;

	if (argc != 4 && (argc != 5 || strcmp(argv[4], "fork")))
		return fprintf(stderr, "usage: sig_inreal FIFO NAME SQDIR [fork]\n"), 2;
#if !defined(__x86_64__)
	return printf("skip: x86-64 only\n"), 77;
#endif
	fifo = argv[1];
	name = argv[2];
	forks = argc == 5;
	setvbuf(stdout, NULL, _IONBF, 0);
	if ((sqfd = open(argv[3], O_RDONLY | O_DIRECTORY)) < 0 || pipe(go))
		return printf("ERR setup: %s\n", strerror(errno)), 1;
	if ((child = fork()) < 0)
		return printf("ERR fork: %s\n", strerror(errno)), 1;
	if (!child)
		writer();
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL))
		return printf("ERR timer: %s\n", strerror(errno)), 1;
	fd = open(fifo, O_RDONLY);
	setitimer(ITIMER_REAL, &off, NULL);
	if (fd < 0)
		return printf("ERR open: %s\n", strerror(errno)), 1;
	if (!forks)
		close(fd);	/* a hook: in the fork mode, after the fork */
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return printf("ERR writer\n"), 1;
	if (hit != 1)
		return printf("ERR no hit\n"), 1;
	if (forks) {
		/* The handler's record is still held (no hook since): a child
		 * that does not exec must not keep it held. */
		if ((child = fork()) < 0)
			return printf("ERR fork: %s\n", strerror(errno)), 1;
		if (!child) {
			syscall(SYS_close, 1);	/* raw: no hook in the child */
			syscall(SYS_close, 2);
			sleep(60);
			_exit(0);
		}
		printf("child %d\n", (int)child);
	}
	/* A hook with no handler around: the record is released. */
	if (forks ? lstat(fifo, &st) : stat(name, &st))
		return printf("ERR stat: %s\n", strerror(errno)), 1;
	if (forks)
		close(fd);
	printf("done\n");
	return 0;
}
