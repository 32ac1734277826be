/*
 * main.c — pohmelfs-node entry point: picks the mode from argv[1] and
 * hands off.  Kept alone so the fuzz target can link everything else.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "index.h"
#include "node.h"

/* The synopsis of every mode. */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: pohmelfs-node --listen HOST:PORT --group G --data DIR [--join HOST:PORT]...\n"
		"                     [--ids N] [--nosync] [--auth-cookie C] [--protocol 3.0|2.26]\n"
		"                     [--sync-interval S] [--blob-size SIZE] [--threads N]\n"
		"                     [--max-packet SIZE] [--max-object SIZE] [--backend-id N]\n"
		"                     [--config FILE] [--log FILE] [--log-level L] [--pidfile F]\n"
		"                     [--watch-pid PID]\n"
		"       pohmelfs-node --probe HOST:PORT [--expect-nodes N]\n"
		"       pohmelfs-node --client HOST:PORT [options] COMMAND [ARGS]\n"
		"       pohmelfs-node --free-ports N\n"
		"       pohmelfs-node --corrupt-disk DIR ID-HEX\n"
		"       pohmelfs-node --records DIR\n"
		"       pohmelfs-node --self-test\n"
		"       pohmelfs-node --bench HOST:PORT read|write [--size B] [--count N] [--conns C]\n"
		"                     [--depth D] [--csum]\n"
		"See pohmelfs-node(8).\n");
}

/* Dispatch on the first argument; a server by default. */
int main(int argc, char **argv)
{
	struct node_config cfg;
	char err[8192];

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return node_probe_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--client"))
		return node_client_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--free-ports"))
		return node_free_ports_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return node_bench_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--corrupt-disk"))
		return node_corrupt_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--records"))
		return node_records_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--self-test")) {
		/* The record checksum's fast path against its portable one. */
		int r = node_crc32c_selftest(err, sizeof(err));

		printf("crc32c: %s\n", err);
		/* The store's index: put/get/del against a plain array. */
		if (node_index_selftest()) {
			printf("index: failed\n");
			return 1;
		}
		printf("index: ok\n");
		return r ? 1 : 0;
	}
	if (node_config_parse(&cfg, argc, argv, err, sizeof(err))) {
		fprintf(stderr, "pohmelfs-node: %s\n", err);
		usage(stderr);
		return 2;
	}
	/*
	 * Request payloads up to 32 MiB come from the heap and stay there when
	 * freed, so the next one reuses warm pages instead of a fresh mapping
	 * that faults in (and zeroes) every page: a third of a large write's
	 * CPU before.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	return node_run(&cfg);
}
