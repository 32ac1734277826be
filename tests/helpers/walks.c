/*
 * walks.c — the tree walks and name resolvers that glibc runs without an
 * interposable call, printed in a form that is the same for two copies of
 * one tree (preload_walks.bats runs it natively and under the shim, on a
 * host whose cache has not fetched the tree yet, and compares).
 *
 *   nftw FLAGS ROOT     FLAGS: letters p(FTW_PHYS) m(MOUNT) c(CHDIR)
 *                       d(DEPTH) a(ACTIONRETVAL, skipping the subtree of
 *                       any directory named "skip"); "-" for none
 *   nftw64 FLAGS ROOT | ftw ROOT | ftw64 ROOT
 *   fts OPTS ROOT...    OPTS: letters p(PHYSICAL) l(LOGICAL) n(NOCHDIR)
 *                       s(NOSTAT) d(SEEDOT) x(XDEV) c(COMFOLLOW), "-" for
 *                       none; children sorted by name; "skip" dirs get
 *                       FTS_SKIP, symlinks named "follow" FTS_FOLLOW, and
 *                       fts_children is asked at every directory
 *   fts64 OPTS ROOT...
 *   glob FLAGS PATTERN  FLAGS: m(MARK) o(ONLYDIR) n(NOCHECK) b(BRACE)
 *                       t(TILDE) e(ERR) s(NOSORT: output sorted here) "-"
 *   glob64 FLAGS PATTERN
 *   scandir DIR | scandir64 DIR | scandirat DIR NAME | scandirat64 DIR NAME
 *                       (each entry's d_ino is compared with lstat's st_ino)
 *   realpath NAME... | canon NAME...  (the cwd is printed as ".")
 *
 * A line per object: what the call said, the path, and the stat fields
 * that two copies share (type and mode, size, link count; for nftw also
 * the level and base, for fts the accpath and the cwd relative to the
 * start).  Walks without a defined order are printed sorted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char start_cwd[PATH_MAX];
static char **lines;
static size_t nlines;
static int nftw_flags;

static void add(const char *s)
{
	lines = realloc(lines, (nlines + 1) * sizeof(*lines));
	lines[nlines++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void flush(int sorted)
{
	size_t i;

	if (sorted)
		qsort(lines, nlines, sizeof(*lines), cmp_str);
	for (i = 0; i < nlines; i++)
		printf("%s\n", lines[i]);
	nlines = 0;
}

/* The cwd relative to where the program started. */
static const char *cwd_rel(void)
{
	static char buf[PATH_MAX];
	size_t n = strlen(start_cwd);

	if (!getcwd(buf, sizeof(buf)))
		return "?";
	if (!strncmp(buf, start_cwd, n) && (!buf[n] || buf[n] == '/'))
		return buf[n] ? buf + n + 1 : ".";
	return buf;
}

static void stat_str(char *out, size_t len, const struct stat *st)
{
	snprintf(out, len, "%o %lld %lu", (unsigned)st->st_mode, (long long)st->st_size,
		 (unsigned long)st->st_nlink);
}

/* ------------------------------------------------------------ ftw/nftw */

static const char *ftw_name(int f)
{
	switch (f) {
	case FTW_F: return "F";
	case FTW_D: return "D";
	case FTW_DNR: return "DNR";
	case FTW_NS: return "NS";
	case FTW_SL: return "SL";
	case FTW_SLN: return "SLN";
	case FTW_DP: return "DP";
	}
	return "?";
}

static int nftw_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	char line[PATH_MAX + 256], s[64];

	stat_str(s, sizeof(s), st);
	if (flag == FTW_NS)
		strcpy(s, "-");
	snprintf(line, sizeof(line), "%s %s level=%d base=%s %s%s", ftw_name(flag), path, f->level,
		 path + f->base, s, (nftw_flags & FTW_CHDIR) ? " cwd=" : "");
	if (nftw_flags & FTW_CHDIR)
		strncat(line, cwd_rel(), sizeof(line) - strlen(line) - 1);
	add(line);
	if ((nftw_flags & FTW_ACTIONRETVAL) && flag == FTW_D && !strcmp(path + f->base, "skip"))
		return FTW_SKIP_SUBTREE;
	return 0;
}

static int nftw64_cb(const char *path, const struct stat64 *st, int flag, struct FTW *f)
{
	return nftw_cb(path, (const struct stat *)st, flag, f);
}

static int ftw_cb(const char *path, const struct stat *st, int flag)
{
	char line[PATH_MAX + 64], s[64];

	stat_str(s, sizeof(s), st);
	snprintf(line, sizeof(line), "%s %s %s", ftw_name(flag), path, flag == FTW_NS ? "-" : s);
	add(line);
	return 0;
}

static int ftw64_cb(const char *path, const struct stat64 *st, int flag)
{
	return ftw_cb(path, (const struct stat *)st, flag);
}

/* Postorder check for FTW_DEPTH: every DP comes after everything below it. */
static int run_nftw(int is64, const char *flags, const char *root)
{
	int r;

	nftw_flags = 0;
	for (; *flags; flags++)
		nftw_flags |= *flags == 'p' ? FTW_PHYS : *flags == 'm' ? FTW_MOUNT :
			      *flags == 'c' ? FTW_CHDIR : *flags == 'd' ? FTW_DEPTH :
			      *flags == 'a' ? FTW_ACTIONRETVAL : 0;
	r = is64 ? nftw64(root, nftw64_cb, 3, nftw_flags) : nftw(root, nftw_cb, 3, nftw_flags);
	if (nftw_flags & FTW_DEPTH) {
		size_t i, j, n;
		int ok = 1;

		for (i = 0; i < nlines; i++) {
			char dir[PATH_MAX];

			if (strncmp(lines[i], "DP ", 3))
				continue;
			n = strcspn(lines[i] + 3, " ");
			snprintf(dir, sizeof(dir), "%.*s/", (int)n, lines[i] + 3);
			for (j = i + 1; j < nlines; j++)
				if (!strncmp(lines[j] + strcspn(lines[j], " ") + 1, dir, strlen(dir)))
					ok = 0;
		}
		printf("postorder %s\n", ok ? "ok" : "BROKEN");
	}
	flush(1);
	printf("nftw returned %d cwd=%s\n", r, cwd_rel());
	return 0;
}

/* ------------------------------------------------------------ fts */

static const char *fts_name(int i)
{
	static const char *n[] = { "?", "D", "DC", "DEFAULT", "DNR", "DOT", "DP", "ERR", "F",
				   "INIT", "NS", "NSOK", "SL", "SLNONE", "W" };
	return i >= 0 && i <= 14 ? n[i] : "?";
}

static int by_name(const FTSENT **a, const FTSENT **b)
{
	return strcmp((*a)->fts_name, (*b)->fts_name);
}

static int by_name64(const FTSENT64 **a, const FTSENT64 **b)
{
	return strcmp((*a)->fts_name, (*b)->fts_name);
}

static int run_fts(int is64, const char *opts, char **roots)
{
	int o = 0, n = 0;
	FTSENT *e, *c;
	FTS *f;

	for (; *opts; opts++)
		o |= *opts == 'p' ? FTS_PHYSICAL : *opts == 'l' ? FTS_LOGICAL :
		     *opts == 'n' ? FTS_NOCHDIR : *opts == 's' ? FTS_NOSTAT :
		     *opts == 'd' ? FTS_SEEDOT : *opts == 'x' ? FTS_XDEV :
		     *opts == 'c' ? FTS_COMFOLLOW : 0;
	/* FTS and FTS64 (FTSENT, FTSENT64) have one layout on this ABI. */
	f = is64 ? (FTS *)fts64_open(roots, o, by_name64) : fts_open(roots, o, by_name);
	if (!f) {
		printf("fts_open failed: %s\n", strerror(errno));
		return 0;
	}
	for (;;) {
		char s[64] = "-";

		errno = 0;
		e = is64 ? (FTSENT *)fts64_read((FTS64 *)f) : fts_read(f);
		if (!e)
			break;
		/* With FTS_NOSTAT glibc leaves fts_statp unset: never read it then. */
		if (!(o & FTS_NOSTAT) && e->fts_info != FTS_NS && e->fts_info != FTS_NSOK &&
		    e->fts_info != FTS_DNR && e->fts_info != FTS_ERR)
			stat_str(s, sizeof(s), e->fts_statp);
		printf("%s %s name=%s acc=%s level=%d err=%d %s cwd=%s\n", fts_name(e->fts_info),
		       e->fts_path, e->fts_name, e->fts_accpath, e->fts_level, e->fts_errno, s,
		       cwd_rel());
		if (e->fts_info == FTS_D) {
			if (!strcmp(e->fts_name, "skip")) {
				if (is64)
					fts64_set((FTS64 *)f, (FTSENT64 *)e, FTS_SKIP);
				else
					fts_set(f, e, FTS_SKIP);
				continue;
			}
			c = is64 ? (FTSENT *)fts64_children((FTS64 *)f, 0) : fts_children(f, 0);
			for (n = 0; c; c = c->fts_link, n++)
				if (c->fts_info == FTS_SL && !strcmp(c->fts_name, "follow")) {
					if (is64)
						fts64_set((FTS64 *)f, (FTSENT64 *)c, FTS_FOLLOW);
					else
						fts_set(f, c, FTS_FOLLOW);
				}
			printf("  children %d\n", n);
		}
	}
	printf("fts_read end errno=%d\n", errno);
	printf("fts_close %d cwd=%s\n", is64 ? fts64_close((FTS64 *)f) : fts_close(f), cwd_rel());
	return 0;
}

/* ------------------------------------------------------------ glob */

static int glob_err(const char *path, int err)
{
	printf("glob error %s: %s\n", path, strerror(err));
	return 0;
}

static int run_glob(int is64, const char *flags, const char *pat)
{
	int fl = 0, r, sorted = 0;
	glob_t g;
	size_t i;

	memset(&g, 0, sizeof(g));
	for (; *flags; flags++) {
		fl |= *flags == 'm' ? GLOB_MARK : *flags == 'o' ? GLOB_ONLYDIR :
		      *flags == 'n' ? GLOB_NOCHECK : *flags == 'b' ? GLOB_BRACE :
		      *flags == 't' ? GLOB_TILDE : *flags == 'e' ? GLOB_ERR :
		      *flags == 's' ? GLOB_NOSORT : 0;
		sorted |= *flags == 's';
	}
	r = is64 ? glob64(pat, fl, glob_err, (glob64_t *)&g) : glob(pat, fl, glob_err, &g);
	printf("glob returned %d, %zu paths, gl_flags %#x\n", r, g.gl_pathc, g.gl_flags);
	for (i = 0; i < g.gl_pathc; i++)
		add(g.gl_pathv[i]);
	flush(sorted);
	if (is64)
		globfree64((glob64_t *)&g);
	else
		globfree(&g);
	return 0;
}

/* ------------------------------------------------------------ scandir, realpath */

static int not_hidden(const struct dirent *d)
{
	errno = EPERM;	/* scandir must not take this for an error */
	return d->d_name[0] != '.';
}

static int not_hidden64(const struct dirent64 *d)
{
	errno = EPERM;
	return d->d_name[0] != '.';
}

static int run_scandir(const char *how, const char *dir, const char *name)
{
	struct dirent **list;
	int n, i, fd = -1;

	errno = 1234;
	if (!strcmp(how, "scandir"))
		n = scandir(dir, &list, not_hidden, alphasort);
	else if (!strcmp(how, "scandir64"))
		n = scandir64(dir, (struct dirent64 ***)&list, not_hidden64, alphasort64);
	else {
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		n = !strcmp(how, "scandirat") ?
			scandirat(fd, name, &list, not_hidden, alphasort) :
			scandirat64(fd, name, (struct dirent64 ***)&list, not_hidden64, alphasort64);
	}
	printf("%s returned %d errno %s\n", how, n, n < 0 ? strerror(errno) :
	       errno == 1234 ? "kept" : "CHANGED");
	for (i = 0; i < n; i++) {
		/* d_ino must be the inode number stat reports (the shim's overlay). */
		char path[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s%s%s", dir, fd >= 0 ? name : "", fd >= 0 ? "/" : "",
			 list[i]->d_name);
		printf("%s type=%d ino=%s\n", list[i]->d_name, list[i]->d_type,
		       lstat(path, &st) ? strerror(errno) :
		       st.st_ino == list[i]->d_ino ? "stat's" : "DIFFERENT");
		free(list[i]);
	}
	if (n >= 0)
		free(list);
	if (fd >= 0)
		close(fd);
	return 0;
}

static void print_resolved(const char *name, const char *r)
{
	size_t n = strlen(start_cwd);

	if (!r)
		printf("%s -> error %s\n", name, strerror(errno));
	else if (!strncmp(r, start_cwd, n) && (!r[n] || r[n] == '/'))
		printf("%s -> .%s\n", name, r + n);
	else
		printf("%s -> %s\n", name, r);
}

static int run_realpath(int canon, char **names)
{
	char buf[PATH_MAX], *r;

	for (; *names; names++) {
		if (canon) {
			r = canonicalize_file_name(*names);
			print_resolved(*names, r);
			free(r);
		} else {
			r = realpath(*names, NULL);
			print_resolved(*names, r);
			free(r);
			r = realpath(*names, buf);
			print_resolved(*names, r);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";

	if (!getcwd(start_cwd, sizeof(start_cwd)) || argc < 3) {
		fprintf(stderr, "usage: walks nftw|nftw64|ftw|ftw64|fts|fts64|glob|glob64|"
				"scandir|scandir64|scandirat|scandirat64|realpath|canon ...\n");
		return 2;
	}
	if (!strncmp(how, "nftw", 4) && argc > 3)
		return run_nftw(!strcmp(how, "nftw64"), strcmp(argv[2], "-") ? argv[2] : "", argv[3]);
	if (!strcmp(how, "ftw") || !strcmp(how, "ftw64")) {
		int r = how[3] ? ftw64(argv[2], ftw64_cb, 2) : ftw(argv[2], ftw_cb, 2);

		flush(1);
		printf("ftw returned %d\n", r);
		return 0;
	}
	if (!strncmp(how, "fts", 3) && argc > 3)
		return run_fts(!strcmp(how, "fts64"), strcmp(argv[2], "-") ? argv[2] : "", argv + 3);
	if (!strncmp(how, "glob", 4) && argc > 3)
		return run_glob(!strcmp(how, "glob64"), strcmp(argv[2], "-") ? argv[2] : "", argv[3]);
	if (!strncmp(how, "scandir", 7))
		return run_scandir(how, argv[2], argc > 3 ? argv[3] : ".");
	if (!strcmp(how, "realpath") || !strcmp(how, "canon"))
		return run_realpath(how[0] == 'c', argv + 2);
	fprintf(stderr, "walks: unknown call %s\n", how);
	return 2;
}
