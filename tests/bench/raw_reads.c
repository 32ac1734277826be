/*
 * raw_reads.c — small-read benchmark for core/io (issue 4): KEYS objects of
 * SIZE bytes are written, then THREADS threads share READS pohm_io_read
 * calls (each one LOOKUP + READ, i.e. THREADS operations in flight) and the
 * wall time of the read phase is printed as "seconds reads threads".
 * Every read's bytes are compared with what was written, so a wrong answer
 * fails the run (exit 1) instead of counting as fast.
 *
 *   raw_reads READS THREADS [KEYS [SIZE]]     (configured by POHMELFS_*)
 *
 * Built and run by tests/bench/bench_raw.sh against its own local node.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "io.h"

extern char **environ;

static struct pohm_client *client;
static unsigned nkeys, objsize;
static unsigned long total_reads;
static unsigned long next_read;		/* atomic: reads handed out */
static int failed;			/* atomic: a read went wrong */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The content of key k: a pattern that differs per key and per byte. */
static void fill(uint8_t *p, unsigned k)
{
	unsigned i;

	for (i = 0; i < objsize; i++)
		p[i] = (uint8_t)(k * 131u + i * 7u + (i >> 8));
}

static void key_name(char *buf, size_t len, unsigned k)
{
	snprintf(buf, len, "bench-small-%u", k);
}

static void *reader(void *arg)
{
	struct pohm_io_result *res = malloc(sizeof(*res));
	uint8_t *want = malloc(objsize), *got = malloc(objsize);
	char key[64];

	(void)arg;
	if (!res || !want || !got) {
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		goto out;
	}
	for (;;) {
		unsigned long i = __atomic_fetch_add(&next_read, 1, __ATOMIC_RELAXED);
		unsigned k;
		size_t n = 0;
		int rc;

		if (i >= total_reads)
			break;
		k = (unsigned)((i * 2654435761u) % nkeys);
		key_name(key, sizeof(key), k);
		rc = pohm_io_read(client, key, strlen(key), 0, got, objsize, &n, res);
		fill(want, k);
		if (rc || n != objsize || memcmp(want, got, objsize)) {
			fprintf(stderr, "raw_reads: read %lu of %s: %s (%zu bytes)\n", i, key,
				rc ? strerror(-rc) : "wrong content", n);
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			break;
		}
	}
out:
	free(res);
	free(want);
	free(got);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct pohm_config cfg;
	struct pohm_io_result *res = malloc(sizeof(*res));
	pthread_t tids[256];
	unsigned threads, k, t;
	char err[512], key[64];
	uint8_t *buf;
	double t0;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: raw_reads READS THREADS [KEYS [SIZE]]\n");
		return 2;
	}
	total_reads = strtoul(argv[1], NULL, 10);
	threads = (unsigned)strtoul(argv[2], NULL, 10);
	nkeys = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 256;
	objsize = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 4096;
	if (!threads || threads > 256 || !nkeys || !objsize || !res) {
		fprintf(stderr, "raw_reads: bad arguments\n");
		return 2;
	}
	rc = pohm_config_load(&cfg, environ, err, sizeof(err));
	if (!rc)
		rc = pohm_client_open(&client, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "raw_reads: %s\n", err);
		return 2;
	}
	buf = malloc(objsize);
	if (!buf)
		return 2;
	for (k = 0; k < nkeys; k++) {
		key_name(key, sizeof(key), k);
		fill(buf, k);
		rc = pohm_io_write(client, key, strlen(key), buf, objsize, NULL, res);
		if (rc) {
			fprintf(stderr, "raw_reads: write %s: %s: %s\n", key, res->msg, strerror(-rc));
			return 1;
		}
	}
	t0 = now_s();
	for (t = 0; t < threads; t++)
		if (pthread_create(&tids[t], NULL, reader, NULL)) {
			fprintf(stderr, "raw_reads: cannot start a thread\n");
			return 1;
		}
	for (t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	printf("%.3f %lu %u\n", now_s() - t0, total_reads, threads);
	pohm_client_close(client);
	free(buf);
	free(res);
	return __atomic_load_n(&failed, __ATOMIC_RELAXED) ? 1 : 0;
}
