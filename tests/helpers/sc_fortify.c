/*
 * sc_fortify.c — open and openat with flags that are not constant and no
 * mode, which glibc's fortified headers turn into calls of __open_2 and
 * __openat_2 (__open64_2, __openat64_2 with _FILE_OFFSET_BITS=64).
 * tests/bats/shim_calls.bats compiles it with -D_FORTIFY_SOURCE=2 -O2 and
 * checks with nm that those names are referenced; built by the Makefile
 * without fortification it calls plain open and openat.
 *
 *   sc_fortify read P             open(P, O_RDONLY), print the contents
 *   sc_fortify write P TEXT       open(P, O_WRONLY|O_TRUNC), write TEXT
 *   sc_fortify readat DIR NAME    the same through openat
 *   sc_fortify writeat DIR NAME TEXT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Flags from the command line: not a constant the compiler can see, so
 * the fortified open takes the __open_2 route. */
static int flags_of(const char *verb)
{
	return strncmp(verb, "write", 5) ? O_RDONLY : O_WRONLY | O_TRUNC;
}

static int use(int fd, const char *how, const char *text)
{
	char buf[4096];
	ssize_t n;

	if (fd < 0) {
		perror("sc_fortify: open");
		return 1;
	}
	if (!strcmp(how, "w")) {
		if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
			return 1;
	} else {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, n, stdout);
	}
	return close(fd) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int dfd;

	if (argc == 3 && !strcmp(argv[1], "read"))
		return use(open(argv[2], flags_of(argv[1])), "r", NULL);
	if (argc == 4 && !strcmp(argv[1], "write"))
		return use(open(argv[2], flags_of(argv[1])), "w", argv[3]);
	if (argc >= 4 && !strncmp(argv[1], "readat", 6)) {
		if ((dfd = open(argv[2], O_RDONLY | O_DIRECTORY)) < 0)
			return 1;
		return use(openat(dfd, argv[3], flags_of(argv[1])), "r", NULL);
	}
	if (argc == 5 && !strcmp(argv[1], "writeat")) {
		if ((dfd = open(argv[2], O_RDONLY | O_DIRECTORY)) < 0)
			return 1;
		return use(openat(dfd, argv[3], flags_of(argv[1])), "w", argv[4]);
	}
	fprintf(stderr, "usage: see the comment at the top of sc_fortify.c\n");
	return 2;
}
