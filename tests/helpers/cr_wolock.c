/*
 * cr_wolock — POSIX locks of a write-only fd survive every push trigger
 * (DESIGN.md §2 "Never close a second fd at the wrong moment"), for
 * cache_shadow.bats.
 *
 *   cr_wolock FILE OTHER
 *
 * Opens FILE O_WRONLY|O_CREAT|O_TRUNC, takes a write lock on all of it with
 * F_SETLK, writes, and then runs each push trigger the shim sees while the
 * fd is open: fsync, fdatasync, fstat, fchmod, sync, syncfs, and the
 * open-write-close of OTHER (another file, whose close is pushed).  After
 * each one a child process asks F_GETLK whether this process still holds
 * the lock; closing a second fd on FILE anywhere in this process (a shadow
 * opened and closed by the shim) would have dropped it.  Then FILE is
 * closed, and $READER (a shell command, if set) runs while this process is
 * still alive, so a push at exit cannot stand in for the push at close.
 *
 * Prints "STEP held" or "STEP LOST" per step; exit 0 only if every step
 * held, 1 if any lost, 2 on a setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *file;

/* 1 if another process finds FILE write-locked by us, 0 if not, -1 on error. */
static int lock_held_by_us(void)
{
	pid_t me = getpid(), pid;
	int st;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(file, O_RDONLY);

		if (fd < 0)
			fd = open(file, O_WRONLY);	/* mode 0200 */
		if (fd < 0 || fcntl(fd, F_GETLK, &fl))
			_exit(2);
		_exit(fl.l_type != F_UNLCK && fl.l_pid == me ? 0 : 1);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) > 1)
		return -1;
	return WEXITSTATUS(st) == 0;
}

static int lost;

static void check(const char *step)
{
	int h = lock_held_by_us();

	if (h < 0) {
		fprintf(stderr, "cr_wolock: %s: cannot check the lock\n", step);
		exit(2);
	}
	printf("%s %s\n", step, h ? "held" : "LOST");
	fflush(stdout);
	lost |= !h;
}

int main(int argc, char **argv)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	const char *msg = "locked and written\n";
	struct stat st;
	int fd, o;

	if (argc != 3) {
		fprintf(stderr, "usage: cr_wolock FILE OTHER\n");
		return 2;
	}
	file = argv[1];
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fcntl(fd, F_SETLK, &fl)) {
		fprintf(stderr, "cr_wolock: %s: %s\n", file, strerror(errno));
		return 2;
	}
	if (write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		fprintf(stderr, "cr_wolock: write: %s\n", strerror(errno));
		return 2;
	}
	check("write");
	if (fsync(fd))
		fprintf(stderr, "cr_wolock: fsync: %s\n", strerror(errno));
	check("fsync");
	if (getenv("AFTER_FSYNC") && system(getenv("AFTER_FSYNC")))
		fprintf(stderr, "cr_wolock: AFTER_FSYNC failed\n");
	if (fdatasync(fd))
		fprintf(stderr, "cr_wolock: fdatasync: %s\n", strerror(errno));
	check("fdatasync");
	fstat(fd, &st);
	check("fstat");
	if (fchmod(fd, 0640))
		fprintf(stderr, "cr_wolock: fchmod: %s\n", strerror(errno));
	check("fchmod");
	sync();
	check("sync");
	if (syncfs(fd))
		fprintf(stderr, "cr_wolock: syncfs: %s\n", strerror(errno));
	check("syncfs");
	o = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (o < 0 || write(o, "other\n", 6) != 6 || close(o)) {
		fprintf(stderr, "cr_wolock: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	check("other-close");
	if (close(fd)) {
		fprintf(stderr, "cr_wolock: close: %s\n", strerror(errno));
		return 2;
	}
	if (getenv("READER") && system(getenv("READER")))
		fprintf(stderr, "cr_wolock: READER failed\n");
	fflush(stdout);
	return lost ? 1 : 0;
}
