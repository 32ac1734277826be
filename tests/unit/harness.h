/*
 * harness.h — a tiny unit-test harness (jemalloc/redis style).
 *
 *   TEST(name) { EXPECT(cond); EXPECT_EQ_INT(a, b); ... }
 *
 * Each test file includes this header once; it provides main(), which runs
 * every TEST in file order (or only those named on the command line) and
 * prints TAP ("ok N - name" / "not ok N - name"), which tests/run counts.
 * A failed EXPECT prints file:line and the values, marks the test failed and
 * goes on; SKIP("why") ends a test as skipped.
 */
#ifndef POHM_TESTS_HARNESS_H
#define POHM_TESTS_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct th_test {
	const char *name;
	void (*fn)(void);
};

/* Test registry, filled by constructors before main: single-threaded. */
static struct th_test th_tests[512];
static int th_ntests;
static int th_failed;			/* current test failed */
static const char *th_skip_reason;	/* current test skipped */

#define TEST(tname)							\
	static void test_##tname(void);					\
	__attribute__((constructor)) static void th_reg_##tname(void)	\
	{								\
		th_tests[th_ntests].name = #tname;			\
		th_tests[th_ntests++].fn = test_##tname;		\
	}								\
	static void test_##tname(void)

#define EXPECT(cond) do {						\
	if (!(cond)) {							\
		printf("# %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
		th_failed = 1;						\
	}								\
} while (0)

#define EXPECT_EQ_INT(a, b) do {					\
	long long th_a = (long long)(a), th_b = (long long)(b);		\
	if (th_a != th_b) {						\
		printf("# %s:%d: %s == %lld, expected %s == %lld\n",	\
		       __FILE__, __LINE__, #a, th_a, #b, th_b);		\
		th_failed = 1;						\
	}								\
} while (0)

#define EXPECT_EQ_U64(a, b) do {					\
	uint64_t th_a = (uint64_t)(a), th_b = (uint64_t)(b);		\
	if (th_a != th_b) {						\
		printf("# %s:%d: %s == %" PRIu64 ", expected %" PRIu64 "\n", \
		       __FILE__, __LINE__, #a, th_a, th_b);		\
		th_failed = 1;						\
	}								\
} while (0)

#define EXPECT_EQ_STR(a, b) do {					\
	const char *th_a = (a), *th_b = (b);				\
	if (!th_a || !th_b || strcmp(th_a, th_b)) {			\
		printf("# %s:%d: %s == \"%s\", expected \"%s\"\n",	\
		       __FILE__, __LINE__, #a, th_a ? th_a : "(null)",	\
		       th_b ? th_b : "(null)");				\
		th_failed = 1;						\
	}								\
} while (0)

#define EXPECT_MEM(a, b, n) do {					\
	if (memcmp((a), (b), (n))) {					\
		printf("# %s:%d: %s differs from %s (%zu bytes)\n",	\
		       __FILE__, __LINE__, #a, #b, (size_t)(n));	\
		th_failed = 1;						\
	}								\
} while (0)

#define SKIP(why) do { th_skip_reason = (why); return; } while (0)

/* Hex string → bytes; returns the byte count. */
static inline size_t th_unhex(uint8_t *out, const char *hex)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
	}
	return n;
}

/*
 * Scratch directory: th_scratch(tag) empties (or makes) /tmp/pohm-TAG-test.PID,
 * mode 755, and returns its path; it is removed at exit whichever tests
 * ran (no test depends on running last).  th_at(name): "DIR/name", in one
 * of 4 rotating buffers.  Single-threaded, as the harness.
 */
static char th_scratch_dir[128];

static void th_scratch_rm(void)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", th_scratch_dir);
	if (system(cmd))
		printf("# removing %s failed\n", th_scratch_dir);
}

static __attribute__((unused)) const char *th_scratch(const char *tag)
{
	char cmd[600];

	if (!th_scratch_dir[0]) {
		snprintf(th_scratch_dir, sizeof(th_scratch_dir), "/tmp/pohm-%s-test.%d", tag,
			 (int)getpid());
		atexit(th_scratch_rm);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s && chmod 755 %s", th_scratch_dir,
		 th_scratch_dir, th_scratch_dir);
	if (system(cmd))
		printf("# scratch %s failed\n", th_scratch_dir);
	return th_scratch_dir;
}

static __attribute__((unused)) const char *th_at(const char *name)
{
	static char p[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", th_scratch_dir, name);
	return p[i];
}

int main(int argc, char **argv)
{
	int i, j, run = 0, bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < th_ntests; i++) {
		if (argc > 1) {
			for (j = 1; j < argc && strcmp(argv[j], th_tests[i].name); j++)
				;
			if (j == argc)
				continue;
		}
		th_failed = 0;
		th_skip_reason = NULL;
		th_tests[i].fn();
		run++;
		if (th_skip_reason)
			printf("ok %d - %s # SKIP %s\n", run, th_tests[i].name, th_skip_reason);
		else
			printf("%sok %d - %s\n", th_failed ? "not " : "", run, th_tests[i].name);
		bad += th_failed;
	}
	printf("1..%d\n", run);
	return bad ? 1 : 0;
}

#endif
