/*
 * bench_inproc.c — the passthrough cost measured inside one process, so
 * that the machine's drift cannot tell the two sides apart.
 *
 * The same rounds of open/fstat/stat/close run in alternating blocks
 * through two tables of function pointers: "libc" (looked up in libc.so.6
 * itself) and "default" (looked up in the global scope, which is the
 * shim's wrappers when the shim is preloaded).  Both sides make the same
 * indirect calls; only the code they reach differs.  Each block's time is
 * this thread's CPU time (user + system: the syscalls count, time spent
 * preempted does not).  Printed: the median of the per-pair ratios
 * default / libc, its 95 % confidence interval (order statistics of the
 * median), and the medians of the two sides in ns per round.
 *
 * Without the shim preloaded both tables reach libc: the ratio is the
 * method's own error (the control).
 *
 *   bench_inproc FILE PAIRS [ROUNDS_PER_BLOCK] [rel]
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spelled.h"

struct calls {
	int (*open)(const char *, int, ...);
	int (*fstat)(int, struct stat *);
	int (*stat)(const char *, struct stat *);
	int (*close)(int);
};

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int lookup(void *handle, struct calls *c)
{
	c->open = (int (*)(const char *, int, ...))dlsym(handle, "open");
	c->fstat = (int (*)(int, struct stat *))dlsym(handle, "fstat");
	c->stat = (int (*)(const char *, struct stat *))dlsym(handle, "stat");
	c->close = (int (*)(int))dlsym(handle, "close");
	return c->open && c->fstat && c->stat && c->close ? 0 : -1;
}

/* ns per round of one block of n rounds through c; < 0 on a failed call. */
static double block(const struct calls *c, long n)
{
	struct stat st;
	double t0 = cpu_ns();
	long i;
	int fd;

	for (i = 0; i < n; i++) {
		fd = c->open(SPELLED(i), O_RDONLY);
		if (fd < 0 || c->fstat(fd, &st) < 0 || c->stat(SPELLED(i), &st) < 0)
			return -1;
		c->close(fd);
	}
	return (cpu_ns() - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	char dir[4096], base[4096];
	struct calls libc, dflt;
	const char *path;
	double *ratio, *ta, *tb, a, b, m;
	long pairs, rounds = 400, i, lo, hi, w;
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_inproc FILE PAIRS [ROUNDS_PER_BLOCK] [rel]\n");
		return 2;
	}
	path = argv[1];
	pairs = atol(argv[2]);
	if (argc > 3)
		rounds = atol(argv[3]);
	if (pairs < 11 || rounds < 1) {
		fprintf(stderr, "bench_inproc: PAIRS must be >= 11 and ROUNDS_PER_BLOCK >= 1\n");
		return 2;
	}
	if (argc > 4 && !strcmp(argv[4], "rel")) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
		snprintf(base, sizeof(base), "%s", basename(argv[1]));
		if (chdir(dirname(dir)) < 0)
			return 1;
		path = base;
	}
	h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (!h || lookup(h, &libc) < 0 || lookup(RTLD_DEFAULT, &dflt) < 0) {
		fprintf(stderr, "bench_inproc: symbol lookup failed: %s\n", dlerror());
		return 1;
	}
	spell(path);
	ratio = calloc((size_t)pairs, sizeof(double));
	ta = calloc((size_t)pairs, sizeof(double));
	tb = calloc((size_t)pairs, sizeof(double));
	if (!ratio || !ta || !tb)
		return 1;
	block(&libc, rounds * 10);	/* warm up both sides */
	block(&dflt, rounds * 10);
	for (i = 0; i < pairs; i++) {
		if (i % 2) {
			b = block(&dflt, rounds);
			a = block(&libc, rounds);
		} else {
			a = block(&libc, rounds);
			b = block(&dflt, rounds);
		}
		if (a <= 0 || b <= 0) {
			fprintf(stderr, "bench_inproc: a call on %s failed\n", path);
			return 1;
		}
		ratio[i] = b / a;
		ta[i] = a;
		tb[i] = b;
	}
	/*
	 * Ranks of a 95 % confidence interval of the median (normal
	 * approximation: pairs/2 -+ 0.98 sqrt(pairs), w rounded up).
	 */
	for (w = 0; w * w * 10000 < pairs * 9604; w++)
		;
	lo = pairs / 2 - w;
	hi = pairs / 2 + w;
	if (lo < 0)
		lo = 0;
	if (hi > pairs - 1)
		hi = pairs - 1;
	m = median(ratio, pairs);	/* sorts ratio */
	a = median(ta, pairs);
	b = median(tb, pairs);
	printf("%.4f %.4f %.4f %.1f %.1f\n", m, ratio[lo], ratio[hi], a, b);
	return 0;
}
