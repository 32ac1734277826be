/*
 * stackuse.c — how much of the caller's stack one file call takes under
 * the shim (issue 19 item 10: at most 16 KiB per call into the library).
 *
 *   stackuse DIR LIMIT
 *
 * DIR is a tree another host made (tests/bats/shim_procs.bats): st/f,
 * op/f (4 bytes), ls/{x,y}, rl/l (a symlink), mk/, rn/f, ul/f, cr/,
 * bin/true (run by posix_spawn, which fetches it first).  On
 * a thread with a 1 MiB stack of our own, each call runs once with the
 * stack below the measuring frame painted; the deepest byte it changed is
 * its high-water mark.  The first call is the library's first under the
 * prefix (configuration, mount, connections); the rest find a cold cache
 * (each directory fetched on first use).  Prints "NAME BYTES" per call,
 * the resident KiB of this thread's library stack (what the calls used
 * there, in pages; -1 when the build does not switch stacks), then
 * "ok", or "ERR NAME..." and exits 1 when a call failed or used more
 * than LIMIT bytes (LIMIT 0: no limit).
 *
 *   stackuse threads DIR N
 *
 * N threads one after another each stat DIR/st/f; the process's mappings
 * must not grow with N (each thread's library stack is unmapped when it
 * exits).  Prints "maps BEFORE AFTER" and "ok".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STACK	(1u << 20)
#define PAINT	0x5a

static char *stack_lo;		/* the thread's stack; set before it starts */
static const char *dir;
static long limit;
static int bad;
static int fd = -1;
extern char **environ;
static DIR *dp;

static char *at(const char *rel)
{
	static char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return p;
}

static int c_first(void)
{
	struct stat st;

	return stat(dir, &st);
}

static int c_stat(void)
{
	struct stat st;

	return stat(at("st/f"), &st) || st.st_size != 0 ? -1 : 0;
}

static int c_open(void)
{
	return (fd = open(at("op/f"), O_RDONLY)) < 0 ? -1 : 0;
}

static int c_read(void)
{
	char b[8];

	return read(fd, b, sizeof(b)) == 4 && !memcmp(b, "data", 4) ? 0 : -1;
}

static int c_close(void)
{
	int r = close(fd);

	fd = -1;
	return r;
}

static int c_opendir(void)
{
	return (dp = opendir(at("ls"))) ? 0 : -1;
}

static int c_readdir(void)
{
	struct dirent *e;
	int n = 0;

	while ((e = readdir(dp)))
		n += e->d_name[0] != '.';
	return n == 2 ? 0 : -1;
}

static int c_closedir(void)
{
	return closedir(dp);
}

static int c_readlink(void)
{
	char b[64];

	return readlink(at("rl/l"), b, sizeof(b)) == 6 ? 0 : -1;
}

static int c_mkdir(void)
{
	return mkdir(at("mk/new"), 0755);
}

static int c_rename(void)
{
	char from[PATH_MAX];

	snprintf(from, sizeof(from), "%s", at("rn/f"));
	return rename(from, at("rn/g"));
}

static int c_unlink(void)
{
	return unlink(at("ul/f"));
}

static int c_create(void)
{
	return (fd = open(at("cr/new"), O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 ? -1 : 0;
}

static int c_write(void)
{
	return write(fd, "made", 4) == 4 ? 0 : -1;
}

static int c_spawn(void)
{
	char *argv[] = { "true", NULL };
	pid_t pid;
	int st;

	if ((errno = posix_spawn(&pid, at("bin/true"), NULL, NULL, argv, environ)))
		return -1;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

static int c_mounts(void)
{
	int m = open("/proc/self/mounts", O_RDONLY);

	return m < 0 ? -1 : close(m);
}

static const struct call {
	const char *name;
	int (*fn)(void);
} calls[] = {
	{ "first-stat", c_first }, { "stat", c_stat }, { "open", c_open },
	{ "read", c_read }, { "close", c_close }, { "opendir", c_opendir },
	{ "readdir", c_readdir }, { "closedir", c_closedir },
	{ "readlink", c_readlink }, { "mkdir", c_mkdir }, { "rename", c_rename },
	{ "unlink", c_unlink }, { "create", c_create }, { "write", c_write },
	{ "close-written", c_close }, { "spawn", c_spawn }, { "mounts", c_mounts },
};

__attribute__((noinline)) static void paint(char *lo, char *hi)
{
	volatile char *q;

	for (q = lo; q < (volatile char *)hi; q++)
		*q = PAINT;
}

/* The bytes of stack below this frame that c->fn touched. */
__attribute__((noinline)) static long measure(const struct call *c, int *rc)
{
	char *top = __builtin_frame_address(0) - 512, *lo = stack_lo + 4096, *q;

	paint(lo, top);
	errno = 0;
	*rc = c->fn();
	for (q = lo; q < top && *(volatile char *)q == PAINT; q++)
		;
	return (long)(top + 512 - q);
}

/* The resident KiB of the 256 KiB mapping that holds the library's stack
 * for this thread (preload/stack.c), from /proc/self/smaps; -1 if none. */
static long lib_stack_kb(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	long size = 0, rss = -1, hit = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Size: %ld kB", &size) == 1)
			continue;
		if (sscanf(line, "Rss: %ld kB", &rss) == 1 && size == 256 && rss > hit)
			hit = rss;
	}
	fclose(f);
	return hit;
}

static void *run(void *v __attribute__((unused)))
{
	unsigned i;
	long used;
	int rc;

	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		used = measure(&calls[i], &rc);
		if (rc) {
			printf("ERR %s failed: %s\n", calls[i].name, strerrorname_np(errno) ?: "?");
			bad = 1;
			return NULL;
		}
		printf("%s %ld\n", calls[i].name, used);
		if (limit && used > limit) {
			printf("ERR %s used %ld bytes of stack, more than %ld\n", calls[i].name, used,
			       limit);
			bad = 1;
		}
	}
	printf("library-stack-resident-kib %ld\n", lib_stack_kb());
	return NULL;
}

static void *one_stat(void *v __attribute__((unused)))
{
	struct stat st;

	if (stat(at("st/f"), &st))
		bad = 1;
	return NULL;
}

static int maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, ch;

	if (!f)
		return -1;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static int threads(int n)
{
	pthread_t t;
	int i, before = 0;

	for (i = 0; i < n + 4; i++) {
		if (i == 4)
			before = maps();	/* glibc's cache of thread stacks is warm */
		if (pthread_create(&t, NULL, one_stat, NULL) || pthread_join(t, NULL) || bad) {
			printf("ERR thread %d\n", i);
			return 1;
		}
	}
	printf("maps %d %d\n", before, maps());
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	pthread_attr_t at;
	pthread_t t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "threads")) {
		dir = argv[2];
		return threads(atoi(argv[3]));
	}
	if (argc != 3) {
		fprintf(stderr, "usage: stackuse DIR LIMIT\n");
		return 2;
	}
	dir = argv[1];
	limit = atol(argv[2]);
	stack_lo = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			-1, 0);
	if (stack_lo == MAP_FAILED)
		return 2;
	pthread_attr_init(&at);
	if (pthread_attr_setstack(&at, stack_lo, STACK) || pthread_create(&t, &at, run, NULL)) {
		printf("ERR thread\n");
		return 1;
	}
	pthread_join(t, NULL);
	if (bad)
		return 1;
	printf("ok\n");
	return 0;
}
