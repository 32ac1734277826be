/*
 * rel_threads.c — many threads of one process writing through plain libc
 * calls (run it under the shim), and the checks of what they left.
 *
 *   rel_threads files DIR THREADS N        thread t writes DIR/t<t>_<i>, i < N,
 *                                          each with its own recognizable bytes
 *   rel_threads check-files DIR THREADS N  every such file is whole and right
 *   rel_threads append FILE THREADS N      thread t opens FILE with O_APPEND and
 *                                          writes N fixed-size records, one write(2)
 *                                          each; fsync and close at the end
 *   rel_threads check-append FILE THREADS N  FILE holds exactly THREADS*N whole
 *                                          records, each once, each thread's in order
 *
 * Prints "ok ..." and exits 0, or names the first problem and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC 64		/* record length of the append test, newline included */

static const char *target;
static int nthreads, per_thread;
static int failed;	/* set once by any thread (atomic) */

static void fail(const char *what, long t, int i)
{
	fprintf(stderr, "thread %ld item %d: %s: %s\n", t, i, what, strerror(errno));
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

/* The size and bytes of file (t, i): sizes spread from 1 byte to ~40 KB. */
static size_t file_size(long t, int i)
{
	return 1 + (size_t)((t * 7919 + i * 104729) % 40000);
}

static void file_bytes(long t, int i, char *buf, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		buf[k] = (char)('a' + (t * 31 + i * 17 + (long)k) % 26);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *files_thread(void *arg)
{
	long t = (long)arg;
	char name[4096], *buf = malloc(40001);
	int i, fd;

	if (!buf) {
		fail("malloc", t, 0);
		return NULL;
	}
	for (i = 0; i < per_thread; i++) {
		size_t n = file_size(t, i);

		snprintf(name, sizeof(name), "%s/t%ld_%d", target, t, i);
		file_bytes(t, i, buf, n);
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			fail("open", t, i);
			break;
		}
		if (write_all(fd, buf, n))
			fail("write", t, i);
		if (close(fd))
			fail("close", t, i);
	}
	free(buf);
	return NULL;
}

static void *append_thread(void *arg)
{
	long t = (long)arg;
	char rec[REC + 1];
	int i, fd;

	fd = open(target, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		fail("open", t, 0);
		return NULL;
	}
	for (i = 0; i < per_thread; i++) {
		int n = snprintf(rec, sizeof(rec), "T%04ld R%06d ", t, i);

		memset(rec + n, 'a' + (int)((t + i) % 26), REC - 1 - (size_t)n);
		rec[REC - 1] = '\n';
		if (write(fd, rec, REC) != REC)
			fail("write", t, i);
	}
	if (fsync(fd))
		fail("fsync", t, per_thread);
	if (close(fd))
		fail("close", t, per_thread);
	return NULL;
}

static int run_threads(void *(*fn)(void *))
{
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	long t;

	if (!th)
		return 1;
	for (t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, fn, (void *)t)) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	free(th);
	return failed;
}

static int check_files(void)
{
	char name[4096], *want = malloc(40001), *got = malloc(40002);
	long t;
	int i, rc = 0;

	if (!want || !got)
		return 1;
	for (t = 0; t < nthreads && !rc; t++)
		for (i = 0; i < per_thread && !rc; i++) {
			size_t n = file_size(t, i);
			ssize_t r;
			int fd;

			snprintf(name, sizeof(name), "%s/t%ld_%d", target, t, i);
			file_bytes(t, i, want, n);
			fd = open(name, O_RDONLY);
			if (fd < 0) {
				fprintf(stderr, "%s: %s\n", name, strerror(errno));
				rc = 1;
				break;
			}
			r = read(fd, got, 40002);
			close(fd);
			if (r != (ssize_t)n || memcmp(want, got, n)) {
				fprintf(stderr, "%s: %zd bytes, want %zu (or different bytes)\n", name, r, n);
				rc = 1;
			}
		}
	free(want);
	free(got);
	if (!rc)
		printf("ok %d files\n", nthreads * per_thread);
	return rc;
}

static int check_append(void)
{
	int *next = calloc((size_t)nthreads, sizeof(int));
	char rec[REC];
	FILE *f = fopen(target, "r");
	long count = 0, t;
	size_t got;
	int r;

	if (!f || !next) {
		fprintf(stderr, "%s: %s\n", target, strerror(errno));
		return 1;
	}
	while ((got = fread(rec, 1, REC, f)) == REC) {
		char fill;
		int k, n;

		if (sscanf(rec, "T%4ld R%6d %n", &t, &r, &n) != 2 || n != 14 || t < 0 || t >= nthreads ||
		    rec[REC - 1] != '\n') {
			fprintf(stderr, "record %ld is torn: %.63s\n", count, rec);
			return 1;
		}
		fill = (char)('a' + (int)((t + r) % 26));
		for (k = n; k < REC - 1; k++)
			if (rec[k] != fill) {
				fprintf(stderr, "record %ld is torn at byte %d\n", count, k);
				return 1;
			}
		if (r != next[t]) {
			fprintf(stderr, "record %ld: thread %ld record %d, expected %d (lost or doubled)\n",
				count, t, r, next[t]);
			return 1;
		}
		next[t]++;
		count++;
	}
	if (ferror(f) || got) {
		fprintf(stderr, "trailing partial record after %ld\n", count);
		return 1;
	}
	fclose(f);
	for (t = 0; t < nthreads; t++)
		if (next[t] != per_thread) {
			fprintf(stderr, "thread %ld: %d records, expected %d\n", t, next[t], per_thread);
			return 1;
		}
	free(next);
	printf("ok %ld records\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode;
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: rel_threads files|check-files|append|check-append PATH THREADS N\n");
		return 2;
	}
	mode = argv[1];
	target = argv[2];
	nthreads = atoi(argv[3]);
	per_thread = atoi(argv[4]);
	if (nthreads <= 0 || nthreads > 1000 || per_thread <= 0) {
		fprintf(stderr, "rel_threads: THREADS must be 1-1000 and N positive\n");
		return 2;
	}
	if (!strcmp(mode, "files"))
		rc = run_threads(files_thread);
	else if (!strcmp(mode, "append"))
		rc = run_threads(append_thread);
	else if (!strcmp(mode, "check-files"))
		return check_files();
	else if (!strcmp(mode, "check-append"))
		return check_append();
	else {
		fprintf(stderr, "rel_threads: unknown mode %s\n", mode);
		return 2;
	}
	if (!rc)
		printf("ok %d threads x %d\n", nthreads, per_thread);
	return rc;
}
