/*
 * sc_errno.c — failing calls under one directory, each printed as
 * "call errno-name".  tests/bats/shim_calls.bats runs it natively in a
 * plain directory and under the shim with the storage on (on the host
 * that made the fixture and on a host with an empty cache); the outputs
 * must be the same.
 *
 *   sc_errno setup ROOT            make the fixture (ROOT must exist)
 *   sc_errno run ROOT OUTSIDE      OUTSIDE: an existing directory on
 *                                  another file system, holding a file "o"
 *   sc_errno setup-eacces ROOT     the fixture of the permission cases
 *   sc_errno eacces ROOT           run them (as an unprivileged user)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *root;
static char pbuf[4][PATH_MAX];
static int pnext;

/* ROOT/NAME */
static const char *P(const char *name)
{
	char *b = pbuf[pnext++ & 3];

	snprintf(b, PATH_MAX, "%s/%s", root, name);
	return b;
}

static void show(const char *what, long r)
{
	const char *e = r < 0 ? strerrorname_np(errno) : "OK";

	printf("%-28s %s\n", what, e ? e : "?");
}

/* Each call starts with errno at a sentinel, so a success shows as OK. */
#define CALL(what, expr) do { errno = EDOM; show(what, (long)(expr)); } while (0)

/* Opens that succeed are closed again (their fd would leak otherwise). */
static long opened(int fd)
{
	if (fd >= 0)
		close(fd);
	return fd;
}

static int die(const char *what)
{
	perror(what);
	return 1;
}

static int setup(void)
{
	int fd;

	if (mkdir(P("d"), 0755) || mkdir(P("e"), 0755))
		return die("mkdir");
	if ((fd = open(P("f"), O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 || write(fd, "f\n", 2) != 2 ||
	    close(fd))
		return die("f");
	if ((fd = open(P("d/x"), O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 || close(fd))
		return die("d/x");
	if (symlink("l2", P("l1")) || symlink("l1", P("l2")))
		return die("symlink");
	return 0;
}

static int run(const char *outside)
{
	char longname[300], out1[PATH_MAX], out2[PATH_MAX];
	struct stat st;
	char buf[64];

	memset(longname, 'n', 256);
	longname[256] = 0;
	snprintf(out1, sizeof(out1), "%s/f", outside);
	snprintf(out2, sizeof(out2), "%s/o", outside);
	CALL("open missing", opened(open(P("missing"), O_RDONLY)));
	CALL("open missing/x creat", opened(open(P("missing/x"), O_WRONLY | O_CREAT, 0644)));
	CALL("stat missing", stat(P("missing"), &st));
	CALL("unlink missing", unlink(P("missing")));
	CALL("rmdir missing", rmdir(P("missing")));
	CALL("truncate missing", truncate(P("missing"), 0));
	CALL("chmod missing", chmod(P("missing"), 0600));
	CALL("access missing", access(P("missing"), F_OK));
	CALL("rename missing", rename(P("missing"), P("m2")));
	CALL("opendir missing", opendir(P("missing")) ? 0 : -1);
	CALL("mkdir d", mkdir(P("d"), 0755));
	CALL("open f excl", opened(open(P("f"), O_WRONLY | O_CREAT | O_EXCL, 0644)));
	CALL("symlink onto f", symlink("x", P("f")));
	CALL("link f onto d", link(P("f"), P("d")));
	CALL("mkfifo f", mkfifo(P("f"), 0644));
	CALL("open f/x", opened(open(P("f/x"), O_RDONLY)));
	CALL("mkdir f/x", mkdir(P("f/x"), 0755));
	CALL("rmdir f", rmdir(P("f")));
	CALL("rename d onto f", rename(P("d"), P("f")));
	CALL("open d directory-f", opened(open(P("f"), O_RDONLY | O_DIRECTORY)));
	CALL("open d writing", opened(open(P("d"), O_WRONLY)));
	CALL("unlink d", unlink(P("d")));
	CALL("rename f onto e", rename(P("f"), P("e")));
	CALL("rmdir d", rmdir(P("d")));
	CALL("rename e onto d", rename(P("e"), P("d")));
	CALL("open longname", opened(open(P(longname), O_RDONLY)));
	CALL("mkdir longname", mkdir(P(longname), 0755));
	CALL("open l1", opened(open(P("l1"), O_RDONLY)));
	CALL("stat l1", stat(P("l1"), &st));
	CALL("open l1 creat", opened(open(P("l1"), O_WRONLY | O_CREAT, 0644)));
	CALL("open l1 nofollow", opened(open(P("l1"), O_RDONLY | O_NOFOLLOW)));
	CALL("readlink f", readlink(P("f"), buf, sizeof(buf)));
	CALL("rename f outside", rename(P("f"), out1));
	CALL("link f outside", link(P("f"), out1));
	CALL("rename outside in", rename(out2, P("o")));
	CALL("link outside in", link(out2, P("o")));
	return 0;
}

static int setup_eacces(void)
{
	int fd;

	if (mkdir(P("ro"), 0755) || mkdir(P("no"), 0755))
		return die("mkdir");
	if ((fd = open(P("ro/f"), O_WRONLY | O_CREAT | O_EXCL, 0444)) < 0 || close(fd))
		return die("ro/f");
	if ((fd = open(P("no/f"), O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 || close(fd))
		return die("no/f");
	if (chmod(P("ro"), 0555) || chmod(P("no"), 0))
		return die("chmod");
	return 0;
}

static int eacces(void)
{
	struct stat st;

	CALL("open ro/f writing", opened(open(P("ro/f"), O_WRONLY)));
	CALL("creat ro/new", opened(creat(P("ro/new"), 0644)));
	CALL("mkdir ro/n", mkdir(P("ro/n"), 0755));
	CALL("unlink ro/f", unlink(P("ro/f")));
	CALL("rename ro/f", rename(P("ro/f"), P("moved")));
	CALL("access ro/f w", access(P("ro/f"), W_OK));
	CALL("open no/f", opened(open(P("no/f"), O_RDONLY)));
	CALL("stat no/f", stat(P("no/f"), &st));
	CALL("opendir no", opendir(P("no")) ? 0 : -1);
	CALL("truncate ro/f", truncate(P("ro/f"), 0));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: see the comment at the top of sc_errno.c\n");
		return 2;
	}
	root = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "setup"))
		return setup();
	if (!strcmp(argv[1], "run") && argc > 3)
		return run(argv[3]);
	if (!strcmp(argv[1], "setup-eacces"))
		return setup_eacces();
	if (!strcmp(argv[1], "eacces"))
		return eacces();
	fprintf(stderr, "usage: see the comment at the top of sc_errno.c\n");
	return 2;
}
