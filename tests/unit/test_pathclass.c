/*
 * test_pathclass.c — core/pathclass: lexical classification of tricky
 * paths against one or two spellings of the prefix.
 */
#include <errno.h>

#include "harness.h"
#include "pathclass.h"

static struct pohm_pc_prefix pf;
static char rel[4096];

static void prefix(const char *a, const char *b)
{
	memset(&pf, 0, sizeof(pf));
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, a), 0);
	if (b)
		EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, b), 0);
}

/* Classify path from base (NULL = the path is absolute or from "/"). */
static enum pohm_pc_class cls_from(const char *base, const char *path, struct pohm_pc_res *res)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	size_t len = 0;

	if (base) {
		pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, base, POHM_PC_FULL, res);
		len = res->cls == POHM_PC_IN ? res->len : 0;
	}
	return pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, path, 0, res);
}

static enum pohm_pc_class cls(const char *path)
{
	struct pohm_pc_res res;

	return cls_from(NULL, path, &res);
}

TEST(spelling_normalises)
{
	struct pohm_pc_spelling sp;

	EXPECT_EQ_INT(pohm_pc_spelling_set(&sp, "//tmp/./a//b/../c/"), 0);
	EXPECT_EQ_STR(sp.path, "/tmp/a/c");
	EXPECT_EQ_INT(sp.ncomp, 3);
	EXPECT_EQ_INT(sp.off[2], 7);
	EXPECT_EQ_INT(sp.clen[2], 1);
	EXPECT_EQ_INT(pohm_pc_spelling_set(&sp, "relative/p"), -EINVAL);
	EXPECT_EQ_INT(pohm_pc_spelling_set(&sp, "/"), -EINVAL);
	EXPECT_EQ_INT(pohm_pc_spelling_set(&sp, "/a/.."), -EINVAL);
	EXPECT_EQ_INT(pohm_pc_spelling_set(&sp, ""), -EINVAL);
}

TEST(prefix_refuses_nested_spellings)
{
	memset(&pf, 0, sizeof(pf));
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, "/a/b/c"), 0);
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, "/a/b/c/"), 0);	/* same: not added */
	EXPECT_EQ_INT(pf.nsp, 1);
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, "/a/b"), -EINVAL);
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, "/a/b/c/d"), -EINVAL);
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, "/a/bc"), 0);
	EXPECT_EQ_INT(pf.nsp, 2);
	EXPECT_EQ_INT(pohm_pc_prefix_add(&pf, "/x"), -ENOSPC);
}

TEST(absolute_paths)
{
	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(cls("/tmp/p"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "");
	EXPECT_EQ_INT(cls("/tmp/p/"), POHM_PC_IN);
	EXPECT_EQ_INT(cls("/tmp/p/a/b"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "a/b");
	EXPECT_EQ_INT(cls("/tmp/px"), POHM_PC_OUT);
	EXPECT_EQ_INT(cls("/tmp/p.x/a"), POHM_PC_OUT);
	EXPECT_EQ_INT(cls("/tmp"), POHM_PC_ANCESTOR);
	EXPECT_EQ_INT(cls("/"), POHM_PC_ANCESTOR);
	EXPECT_EQ_INT(cls("/usr/lib/x86_64-linux-gnu/libc.so.6"), POHM_PC_OUT);
	EXPECT_EQ_INT(cls("/tm"), POHM_PC_OUT);
}

TEST(dots_and_slashes)
{
	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(cls("//tmp//p//a"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "a");
	EXPECT_EQ_INT(cls("/tmp/./p/./a/."), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "a");
	EXPECT_EQ_INT(cls("/usr/../tmp/p/x"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "x");
	EXPECT_EQ_INT(cls("/tmp/p/.."), POHM_PC_ANCESTOR);
	EXPECT_EQ_INT(cls("/tmp/p/../p"), POHM_PC_IN);
	EXPECT_EQ_INT(cls("/tmp/p/a/../../q"), POHM_PC_OUT);
	EXPECT_EQ_INT(cls("/tmp/p/a/b/../c"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "a/c");
	EXPECT_EQ_INT(cls("/tmp/p/a/.."), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "");
	EXPECT_EQ_INT(cls("/../../tmp/p/z"), POHM_PC_IN);	/* "/.." is "/" */
	EXPECT_EQ_STR(rel, "z");
	EXPECT_EQ_INT(cls("/tmp/q/../p/y"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "y");
	EXPECT_EQ_INT(cls("/tmp/p/..a/b"), POHM_PC_IN);		/* "..a" is a name */
	EXPECT_EQ_STR(rel, "..a/b");
	EXPECT_EQ_INT(cls("/tmp/p/.hidden"), POHM_PC_IN);
	EXPECT_EQ_STR(rel, ".hidden");
	EXPECT_EQ_INT(cls("/x..y/z"), POHM_PC_OUT);
}

TEST(trailing_slash_is_reported)
{
	struct pohm_pc_res res;

	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(cls_from(NULL, "/tmp/p/a/", &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.slash, 1);
	EXPECT_EQ_STR(rel, "a");
	EXPECT_EQ_INT(cls_from(NULL, "/tmp/p/a", &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.slash, 0);
	EXPECT_EQ_INT(cls_from(NULL, "/tmp/p/a/.", &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.slash, 1);
}

TEST(relative_from_bases)
{
	struct pohm_pc_res res;

	prefix("/home/u/pohm", NULL);
	EXPECT_EQ_INT(cls_from("/home/u", "pohm/a", &res), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "a");
	EXPECT_EQ_INT(cls_from("/home/u", "src/a.c", &res), POHM_PC_OUT);
	EXPECT_EQ_INT(cls_from("/", "home/u/pohm", &res), POHM_PC_IN);
	EXPECT_EQ_INT(cls_from("/home/u/pohm/d", "x", &res), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "d/x");
	EXPECT_EQ_INT(cls_from("/home/u/pohm/d", "../../y", &res), POHM_PC_OUT);
	EXPECT_EQ_INT(cls_from("/home/u/pohm/d", "..", &res), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "");
	EXPECT_EQ_INT(cls_from("/home/u/pohm/d", "/etc/passwd", &res), POHM_PC_OUT);
	/* A base that left the prefix: only its depth matters on the way back. */
	EXPECT_EQ_INT(cls_from("/home/v/src", "../../u/pohm/k", &res), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "k");
	EXPECT_EQ_INT(cls_from("/home/v/src", "../../v/pohm/k", &res), POHM_PC_OUT);
	EXPECT_EQ_INT(cls_from("/var/lib/x", "../../../home/u/pohm", &res), POHM_PC_IN);
	EXPECT_EQ_INT(cls_from("/home/u", "", &res), POHM_PC_ANCESTOR);
}

TEST(unknown_base_escapes_only_on_dotdot)
{
	struct pohm_pc_pos pos = { POHM_PC_DEEP, { 0, 0 } };
	struct pohm_pc_res res;
	size_t len = 0;

	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "a/b/c", 0, &res),
		      POHM_PC_OUT);
	pos.depth = POHM_PC_DEEP;
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "a/../..", 0, &res),
		      POHM_PC_ESCAPE);
	pos.depth = POHM_PC_DEEP;
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "a/../b", 0, &res),
		      POHM_PC_OUT);
	pos.depth = POHM_PC_DEEP;
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "/tmp/p/q", 0, &res),
		      POHM_PC_IN);
	EXPECT_EQ_STR(rel, "q");
}

TEST(two_spellings)
{
	struct pohm_pc_res res;

	prefix("/home/u/pohm", "/data/pohm");
	EXPECT_EQ_INT(cls_from(NULL, "/data/pohm/a", &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.spelling, 1);
	EXPECT_EQ_STR(rel, "a");
	EXPECT_EQ_INT(cls_from(NULL, "/home/u/pohm/a", &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.spelling, 0);
	EXPECT_EQ_INT(cls_from(NULL, "/data", &res), POHM_PC_ANCESTOR);
	EXPECT_EQ_INT(cls_from(NULL, "/data/other", &res), POHM_PC_OUT);
	/* From a base on one spelling's way, up and into the other. */
	EXPECT_EQ_INT(cls_from("/home/u", "../../data/pohm/b", &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.spelling, 1);
	EXPECT_EQ_STR(rel, "b");
	/* From inside one spelling to the other. */
	EXPECT_EQ_INT(cls_from("/data/pohm/d", "/home/u/pohm/e", &res), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "e");
}

TEST(root_position_of_a_spelling)
{
	struct pohm_pc_pos pos;
	struct pohm_pc_res res;
	size_t len = 0;

	prefix("/home/u/pohm", "/home/data");
	pos = pohm_pc_root_of(&pf, 0);
	EXPECT_EQ_INT(pos.depth, 3);
	EXPECT_EQ_INT(pos.match[0], 3);
	EXPECT_EQ_INT(pos.match[1], 1);
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "../../data/x", 0, &res),
		      POHM_PC_IN);
	EXPECT_EQ_INT(res.spelling, 1);
	EXPECT_EQ_STR(rel, "x");
}

TEST(long_relative_path_truncates_rel_but_keeps_class)
{
	static char path[8192];
	struct pohm_pc_res res;
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	char small[16];
	size_t len = 0, i;

	prefix("/tmp/p", NULL);
	for (i = 0; i + 2 < 4095; i += 2)
		memcpy(path + i, "a/", 2);
	path[i] = 'z';
	path[i + 1] = '\0';
	EXPECT_EQ_INT(cls_from("/tmp/p", path, &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.trunc, 0);
	EXPECT_EQ_INT(res.len, strlen(path));
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, small, sizeof(small), &len,
				   "/tmp/p/abcdefgh/ijklmnopq", 0, &res), POHM_PC_IN);
	EXPECT_EQ_INT(res.trunc, 1);
	/* Popping after an overflow still classifies exactly. */
	len = 0;
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, small, sizeof(small), &len,
				   "/tmp/p/abcdefgh/ijklmnopq/../../../q", 0, &res), POHM_PC_OUT);
}

TEST(no_prefix_means_outside)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	size_t len = 0;

	memset(&pf, 0, sizeof(pf));
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "/tmp/p", 0, &res),
		      POHM_PC_OUT);
}

TEST(full_walk_gives_exact_depth)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	size_t len = 0;

	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "/var/lib/x/",
				   POHM_PC_FULL, &res), POHM_PC_OUT);
	EXPECT_EQ_INT(pos.depth, 3);
	EXPECT_EQ_INT(pos.match[0], 0);
	EXPECT_EQ_INT(pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, "../../../tmp/p/w",
				   0, &res), POHM_PC_IN);
	EXPECT_EQ_STR(rel, "w");
}

/* The fast checks may only ever say "outside" when the walk says so. */
static void fast_agrees(const char *base, const char *path)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	enum pohm_pc_class full;
	size_t len = 0;
	int fast;

	if (base) {
		pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, base, POHM_PC_FULL, &res);
		if (res.cls == POHM_PC_IN)
			return;		/* fast_out_rel is for bases outside */
		fast = pohm_pc_fast_out_rel(&pf, &pos, path);
	} else {
		fast = pohm_pc_fast_out(&pf, path);
	}
	len = 0;
	full = pohm_pc_walk(&pf, &pos, rel, sizeof(rel), &len, path, POHM_PC_FULL, &res);
	if (fast && full != POHM_PC_OUT) {
		printf("# fast says outside, walk says %d: base %s, path %s\n", full,
		       base ? base : "-", path);
		th_failed = 1;
	}
}

TEST(fast_checks_never_contradict_the_walk)
{
	static const char *const abs[] = {
		"/tmp/p", "/tmp/p/", "/tmp/p/a", "/tmp/px", "/tmp", "/tmp/", "/", "//tmp/p/a",
		"/tmp//p", "/tmp/./p", "/tmp/x/../p/a", "/usr/lib/libc.so.6", "/tmp/q/..",
		"/tmp/q/../p", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/../../../../tmp/p",
		"/tmp/pp/../p", "/tmp/p/.", "/tmp/.p", "/tm", "/tmp/qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq/x",
		"/tmp/qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq/..//p", "/x/y", "/home/u/pohm/a", "/data/pohm",
	};
	static const char *const relp[] = {
		"p", "p/a", "x", "x/../p", "./p", "../tmp/p", "pp", "..", ".", "", "q/../../tmp/p",
		"tmp/p", "pohm/a", "data/pohm/x", "src/file.c", "a..b/c",
	};
	static const char *const bases[] = { "/", "/tmp", "/tmp/q", "/var/lib", "/home/u", "/data" };
	unsigned i, j, k;

	for (k = 0; k < 2; k++) {
		if (k == 0)
			prefix("/tmp/p", NULL);
		else
			prefix("/home/u/pohm", "/data/pohm");
		for (i = 0; i < sizeof(abs) / sizeof(abs[0]); i++)
			fast_agrees(NULL, abs[i]);
		for (j = 0; j < sizeof(bases) / sizeof(bases[0]); j++)
			for (i = 0; i < sizeof(relp) / sizeof(relp[0]); i++)
				fast_agrees(bases[j], relp[i]);
	}
	prefix("/tmp/p", NULL);
	EXPECT_EQ_INT(pohm_pc_fast_out(&pf, "/usr/lib/libc.so.6"), 1);
	EXPECT_EQ_INT(pohm_pc_fast_out(&pf, "/tmp/q/file"), 1);
	EXPECT_EQ_INT(pohm_pc_fast_out(&pf, "/tmp/q/../p"), 0);
	EXPECT_EQ_INT(pohm_pc_fast_out(&pf, "/tmp/p/a"), 0);
}
