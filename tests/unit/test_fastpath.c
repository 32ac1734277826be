/*
 * test_fastpath.c — preload/fast.h, the hot path's test of an absolute
 * path against the prefix: it may say "outside" only where the full walk
 * (core/pathclass, POHM_PC_FULL) says so, it must say it for the common
 * cases, and it never reads across a page it was not given.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "../../preload/shim.h"

/* The state fast.h reads; filled as preload/init.c's fast_setup does. */
struct pohm_state pohm_state;
POHM_TLS int pohm_depth;

static char rel[4096];

static void prefix(const char *a, const char *b)
{
	struct pohm_pc_prefix *pf = &pohm_state.prefix;
	unsigned s;

	memset(&pohm_state, 0, sizeof(pohm_state));
	EXPECT_EQ_INT(pohm_pc_prefix_add(pf, a), 0);
	if (b)
		EXPECT_EQ_INT(pohm_pc_prefix_add(pf, b), 0);
	for (s = 0; s < pf->nsp; s++) {
		memcpy(pohm_state.fast[s].path, pf->sp[s].path, pf->sp[s].len);
		pohm_state.fast[s].len = (uint32_t)pf->sp[s].len;
	}
	pohm_state.nfast = pf->nsp;
	pohm_state.on = 1;
}

static enum pohm_pc_class walk(const char *path)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	size_t len = 0;

	return pohm_pc_walk(&pohm_state.prefix, &pos, rel, sizeof(rel), &len, path, POHM_PC_FULL,
			    &res);
}

static unsigned contradictions;

/* path at each of 16 alignments: fast may say outside only if the walk does. */
static void agrees(const char *path)
{
	static char buf[4096 + 32] __attribute__((aligned(16)));
	size_t n = strlen(path), a;
	enum pohm_pc_class full = walk(path);

	for (a = 0; a < 16 && n + a + 1 < sizeof(buf); a++) {
		memcpy(buf + a, path, n + 1);
		if ((pohm_abs_fast_out(buf + a) || pohm_abs_fast_out_full(buf + a)) &&
		    full != POHM_PC_OUT) {
			if (contradictions++ < 10)
				printf("# fast says outside, walk says %d: prefix %s%s%s, path %s\n",
				       full, pohm_state.fast[0].path, pohm_state.nfast > 1 ? " + " : "",
				       pohm_state.nfast > 1 ? pohm_state.fast[1].path : "", path);
			th_failed = 1;
		}
	}
}

static const char *const prefixes[][2] = {
	{ "/tmp/p", NULL }, { "/tmp/pq/x", NULL }, { "/a", NULL }, { "/tmp/p.q/r", NULL },
	{ "/home/u/pohm", "/data/pohm" }, { "/tmp/kill_loop.JDT3s5/a", "/x/y/z" },
	{ "/aaaaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbb/p", NULL }, { "/tmp/.x", NULL },
	{ "/home/u/.cache/p", "/a.b/..c" }, { "/tmp/a.b", NULL },
	{ "/.hidden/aaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbb/p", NULL },
};

TEST(never_contradicts_the_walk_on_tricky_paths)
{
	static const char *const paths[] = {
		"/tmp/p", "/tmp/p/", "/tmp/p/a", "/tmp/px", "/tmp", "/tmp/", "/", "//tmp/p/a",
		"/tmp//p", "/tmp/./p", "/tmp/x/../p/a", "/usr/lib/libc.so.6", "/tmp/q/..",
		"/tmp/q/../p", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/../../../../tmp/p",
		"/tmp/pp/../p", "/tmp/p/.", "/tmp/.p", "/tm", "/tmp/qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq/x",
		"/tmp/qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq/..//p", "/x/y", "/home/u/pohm/a", "/data/pohm",
		"/home/u/pohm", "/home/u", "/home/u/", "/home/u/poh", "/home/u/pohmx/a", "/data",
		"/data/pohm/..", "/data/pohm/../pohm/x", "/usr/../home/u/pohm/f", "/usr/..",
		"/tmp/p.q", "/tmp/p.q/r/s", "/tmp/p.q/", "/tmp/p.", "/tmp/p./r", "/tmp/pq", "/tmp/pq/",
		"/tmp/pq/x/y", "/tmp/pq/y", "/a", "/a/", "/ab", "/a.", "/a/.", "/a/..", "/.a", "/..",
		"/./a", "/b/../a", "/b/..a/a", "/b/a../a", "/b/.../a", "/tmp/kill_loop.JDT3s5/a/w24",
		"/tmp/kill_loop.JDT3s5/b/w24", "/tmp/kill_loop.JDT3s5/a", "/tmp/kill_loop.JDT3s5",
		"/x/y/z/q", "/x/y/zz", "/x/y", "/x/yz/../y/z",
		"/aaaaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbb/p/x",
		"/aaaaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbb/q/x",
		"/aaaaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbb", "/aaaaaaaaaaaaaaaaaaaaaa/b/../bbbbbbbbbbbbbbbbbbbb/p",
		"/tmp/..", "/tmp/../tmp/.x", "/tmp/a..", "/tmp/a../..", "/home/u/..", "/home/u/.c/..",
		"/a.b/..", "/a.b/.c", "/a.b/..c/x", "/.hidden/..", "/.hidden/aaaaaaaaaaaaaaaaaaaaaaaaaaaa..",
		"/.hidden/aaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbb/..",
	};
	unsigned i, k;

	for (k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		prefix(prefixes[k][0], prefixes[k][1]);
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
			agrees(paths[i]);
	}
}

TEST(never_contradicts_the_walk_on_random_paths)
{
	static const char alphabet[] = "//...apqtmxyzhdu";
	char path[80];
	unsigned k, i, j, n, seed = 12345;

	for (k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		prefix(prefixes[k][0], prefixes[k][1]);
		for (i = 0; i < 20000; i++) {
			seed = seed * 1103515245u + 12345u;
			n = (seed >> 16) % 72;	/* past the two blocks read at once */
			path[0] = '/';
			/* half of them start as a spelling does, then go astray */
			j = 1;
			if (seed & 0x8000) {
				const struct pohm_fast_spelling *f = &pohm_state.fast[(seed >> 3) % pohm_state.nfast];

				for (; j < f->len && j < (seed >> 8) % (f->len + 2) && j < sizeof(path) - 1; j++)
					path[j] = f->path[j];
			}
			for (; j < n + 1 && j < sizeof(path) - 1; j++) {
				seed = seed * 1103515245u + 12345u;
				path[j] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
			}
			path[j] = '\0';
			agrees(path);
		}
	}
}

TEST(says_outside_for_the_common_cases)
{
	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/usr/lib/x86_64-linux-gnu/libc.so.6"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/tmp/q/file"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/tmp/pp"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/etc/ld.so.cache"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/tmp/q/../p"), 0);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/tmp/p/a"), 0);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/tmp"), 0);		/* an ancestor */
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/usr/../tmp/p/a"), 0);
	prefix("/tmp/tmp.Xr4/away/prefix", "/var/tmp/real/prefix");
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/tmp/tmp.Xr4/file"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/usr/share/locale/locale.alias"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/var/tmp/real/prefix/x"), 0);
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/var/tmp/other"), 1);
	/* the one-block way alone, for paths that differ within 16 bytes */
	EXPECT_EQ_INT(pohm_abs_fast_out("/usr/lib/x86_64-linux-gnu/libc.so.6"), 1);
	EXPECT_EQ_INT(pohm_abs_fast_out("/tmp/tmp.Xr4/file"), 1);
	/* the inline test itself past the first 16 bytes: a sibling sharing 20
	 * bytes with the prefix is outside (a 16-byte-only test sent every such
	 * path, the bench's own layout, down the slow path: 726 instructions a
	 * round instead of 316) */
	{
		static char _Alignas(64) in[64], out[64];

		prefix("/tmp/tmp.AbCdEfGhIj/away/prefix", NULL);
		strcpy(out, "/tmp/tmp.AbCdEfGhIj/file");
		strcpy(in, "/tmp/tmp.AbCdEfGhIj/away/prefix/a");
		EXPECT_EQ_INT(pohm_abs_fast_out(out), 1);
		EXPECT_EQ_INT(pohm_abs_fast_out(in), 0);
		strcpy(out, "/tmp/tmp.AbCdEfGhIj/away/prefixx");
		EXPECT_EQ_INT(pohm_abs_fast_out(out), 1);
	}
	memset(&pohm_state, 0, sizeof(pohm_state));
	EXPECT_EQ_INT(pohm_abs_fast_out_full("/usr/lib"), 0);	/* no prefix yet: not certain */
}

TEST(no_read_crosses_into_the_next_page)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	static const char *const paths[] = { "/usr/lib/libc.so.6", "/tmp/p", "/tmp/p/a", "/", "/t",
					     "/tmp/qqqqqqq/../p", "/tmp/q",
					     "/usr/lib/x86_64-linux-gnu/libc.so.6.and.more/x" };
	unsigned i;
	size_t n, gap;

	EXPECT(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	EXPECT_EQ_INT(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
	prefix("/tmp/p", NULL);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		n = strlen(paths[i]);
		/* the NUL at the page's last byte, then up to 48 bytes before it */
		for (gap = 0; gap <= 48; gap++) {
			char *at = m + pg - n - 1 - gap;

			memset(m + pg - 64, '.', 64);
			memcpy(at, paths[i], n + 1);
			EXPECT_EQ_INT((pohm_abs_fast_out(at) || pohm_abs_fast_out_full(at)) &&
				      walk(paths[i]) != POHM_PC_OUT, 0);
			if (i == 0 && n + 1 + gap >= 32)	/* room for the inline test */
				EXPECT_EQ_INT(pohm_abs_fast_out(at), 1);
		}
	}
	munmap(m, (size_t)pg * 2);
}
