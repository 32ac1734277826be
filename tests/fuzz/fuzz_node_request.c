/*
 * fuzz_node_request.c — libFuzzer target for pohmelfs-node's request
 * handling: the input is a byte stream as a client would send it on one
 * connection (headers and payloads, possibly many packets, possibly cut
 * short), fed through node_feed() into the real dispatch, store and reply
 * code against a private temp data directory.  Replies are collected in a
 * buffer and dropped.  Any crash, sanitizer report or leak is a bug:
 * hostile input must get an error reply or a dropped connection.
 *
 * Build (tests/fuzz/run does this):
 *   clang -fsanitize=fuzzer,address -D_GNU_SOURCE -Icore/<layer> (each) -Inode \
 *         tests/fuzz/fuzz_node_request.c node/[all but main.c] core/<layer>/*.c -pthread
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../node/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The node under test, reused by every input (single-threaded).  Every
 * FUZZ_RESET inputs the data directory is emptied, so the store (which
 * ITERATOR and BULK_READ walk) stays small and the fuzzer stays fast.
 */
#define FUZZ_RESET 2000
static struct node fuzz_node;
static struct node_config fuzz_cfg;
static int fuzz_ready;
static unsigned fuzz_runs;

static char dir[] = "/tmp/pohmelfs-fuzz-node.XXXXXX";

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path);
}

/* Remove the data directory when the fuzzer exits. */
static void fuzz_cleanup(void)
{
	if (fuzz_ready)
		node_fini(&fuzz_node);
	fuzz_ready = 0;
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int fuzz_setup(void)
{
	char *argv[] = { "fuzz", "--listen", "127.0.0.1:1", "--group", "1", "--data", dir,
			 "--nosync", "--ids", "4", "--max-packet", "1M", "--max-object", "16M",
			 "--log-level", "error", NULL };
	char err[512];

	if (!mkdtemp(dir))
		return -1;
	atexit(fuzz_cleanup);
	if (node_config_parse(&fuzz_cfg, (int)(sizeof(argv) / sizeof(argv[0])) - 1, argv, err,
			      sizeof(err))) {
		fprintf(stderr, "fuzz: %s\n", err);
		return -1;
	}
	return node_init(&fuzz_node, &fuzz_cfg);
}

/* Start over with an empty data directory. */
static int fuzz_reset(void)
{
	node_fini(&fuzz_node);
	fuzz_ready = 0;
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return node_init(&fuzz_node, &fuzz_cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pohm_buf out = POHM_BUF_INIT;
	struct node_conn *c;

	if (!fuzz_ready) {
		if (fuzz_setup())
			abort();
		fuzz_ready = 1;
	} else if (++fuzz_runs % FUZZ_RESET == 0) {
		if (fuzz_reset())
			abort();
		fuzz_ready = 1;
	}
	c = node_conn_new_capture(&fuzz_node, &out);
	if (!c)
		return 0;
	node_feed(&fuzz_node, c, data, size);
	node_conn_put(c);
	pohm_buf_free(&out);
	return 0;
}
