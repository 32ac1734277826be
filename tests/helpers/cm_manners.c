/*
 * cm_manners — what a host program may observe of the shim's manners
 * (issue #8: never write to stdout, never call exit, never install signal
 * handlers; DESIGN.md §2: no threads in host processes).  Used by
 * tests/bats/shim_manners.bats, natively and under the shim.
 *
 *   cm_manners io DIR READFILE ROUNDS
 *       ROUNDS times: create DIR/f.N, write, close (a push at close under
 *       sync_on_close), read READFILE whole, list DIR, rename f.N to g.N,
 *       fsync a reopened g.N; after every call count /proc/self/task.
 *       Prints the signal lines of /proc/self/status at the start and at
 *       the end, "max tasks N" and "done": the same text natively and under
 *       the shim when the shim keeps its manners.
 *   cm_manners down DIR GOFILE
 *       Writes DIR/before, prints "ready", waits (up to 300 s) until GOFILE
 *       exists (the test stops the storage meanwhile), then tries calls
 *       that need the storage and prints for each "NAME rc errno ms", then
 *       "max tasks N", the signal lines and "alive".  Exits 0 unless the
 *       first phase failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int max_tasks;

/* Count this process's threads (entries of /proc/self/task); keep the largest. */
static void count_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	if (n > max_tasks)
		max_tasks = n;
}

/* Print the SigBlk, SigIgn and SigCgt lines of /proc/self/status with a tag. */
static void print_signals(const char *tag)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7) || !strncmp(line, "SigIgn:", 7) ||
		    !strncmp(line, "SigCgt:", 7))
			printf("%s %s", tag, line);
	fclose(f);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Write "data" to a new file PATH; 0 or -1 with errno set. */
static int put(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), e;

	count_tasks();
	if (fd < 0)
		return -1;
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	count_tasks();
	if (close(fd))
		return -1;
	count_tasks();
	return 0;
}

/* Read PATH whole; bytes read or -1. */
static long slurp(const char *path)
{
	char buf[65536];
	long total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY), e;

	count_tasks();
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	e = errno;
	close(fd);
	count_tasks();
	errno = e;
	return n < 0 ? -1 : total;
}

/* Number of entries of DIR (without . and ..), or -1. */
static int list(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	count_tasks();
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	count_tasks();
	closedir(d);
	return n;
}

static int run_io(const char *dir, const char *readfile, int rounds)
{
	char a[4200], b[4200];
	int i, fd;
	long n;

	count_tasks();
	print_signals("start");
	for (i = 0; i < rounds; i++) {
		snprintf(a, sizeof(a), "%s/f.%d", dir, i);
		snprintf(b, sizeof(b), "%s/g.%d", dir, i);
		if (put(a, "round data\n")) {
			printf("put %d: %s\n", i, strerror(errno));
			continue;
		}
		n = slurp(readfile);
		printf("read %d: %ld\n", i, n);
		printf("list %d: %d\n", i, list(dir));
		if (rename(a, b))
			printf("rename %d: %s\n", i, strerror(errno));
		count_tasks();
		fd = open(b, O_RDWR);
		count_tasks();
		if (fd < 0 || write(fd, "more\n", 5) != 5 || fsync(fd))
			printf("fsync %d: %s\n", i, strerror(errno));
		count_tasks();
		if (fd >= 0)
			close(fd);
		count_tasks();
	}
	print_signals("end");
	printf("max tasks %d\n", max_tasks);
	printf("done\n");
	return 0;
}

/* One timed call: print "NAME rc errno ms". */
#define TIMED(name, call)                                                           \
	do {                                                                        \
		long t0_ = now_ms();                                                \
		long rc_;                                                           \
		errno = 0;                                                          \
		rc_ = (call);                                                       \
		printf("%s %ld %d %ld\n", name, rc_, rc_ < 0 ? errno : 0, now_ms() - t0_); \
		fflush(stdout);                                                     \
		count_tasks();                                                      \
	} while (0)

static int run_down(const char *dir, const char *gofile)
{
	char path[4200], sub[4200];
	struct stat st;
	int i;

	count_tasks();
	snprintf(path, sizeof(path), "%s/before", dir);
	if (put(path, "before\n")) {
		printf("first phase: %s\n", strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < 6000 && access(gofile, F_OK); i++)
		usleep(50000);
	snprintf(path, sizeof(path), "%s/after", dir);
	TIMED("create", put(path, "after\n"));
	snprintf(sub, sizeof(sub), "%s/newdir", dir);
	TIMED("mkdir", mkdir(sub, 0755));
	snprintf(path, sizeof(path), "%s/before", dir);
	TIMED("stat", stat(path, &st));
	TIMED("read", slurp(path));
	TIMED("list", list(dir));
	snprintf(sub, sizeof(sub), "%s/renamed", dir);
	TIMED("rename", rename(path, sub));
	printf("max tasks %d\n", max_tasks);
	print_signals("end");
	printf("alive\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "io"))
		return run_io(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "down"))
		return run_down(argv[2], argv[3]);
	fprintf(stderr, "usage: cm_manners io DIR READFILE ROUNDS | down DIR GOFILE\n");
	return 2;
}
