/*
 * bench.c — `pohmelfs-node --bench`: a load generator for the node alone.
 *
 *   pohmelfs-node --bench HOST:PORT read|write [--size BYTES] [--count N]
 *                 [--conns C] [--depth D] [--csum] [--group G]
 *
 * C connections (one thread each) keep D requests in flight on the same key
 * (reads; the key is written once first) or on C×D rotating keys
 * (writes) until N requests completed, then prints requests/s and MiB/s.
 * --csum asks for the IO CHECKSUM on reads and verifies it, as a client
 * without noreadcsum would.  It measures the node, not the project's client.
 */
#include "node.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "sys.h"
#include "node_wire.h"

struct bench {
	struct pohm_addr addr;
	int write;
	uint64_t size, count;
	unsigned conns, depth, group;
	int csum;
	uint8_t *data;
	uint64_t done;			/* atomic: completed requests */
	uint64_t errors;		/* atomic */
};

/* A request header: NEED_ACK, no DIRECT (a non-owner forwards). */
static void bench_hdr(struct pohm_cmd *h, int32_t cmd, const uint8_t *id, uint32_t group,
		      uint64_t trans, uint64_t size)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->id.id, id, POHM_ID_SIZE);
	h->id.group = group;
	h->cmd = cmd;
	h->flags = POHM_FLAG_NEED_ACK;	/* no DIRECT: a non-owner forwards */
	h->trans = trans;
	h->size = size;
}

/* Connect and handshake; the fd or -errno. */
static int bench_connect(struct bench *b, struct node_rd *rd)
{
	struct pohm_cmd h, r;
	uint8_t *p = NULL;
	int32_t v[4] = { 3, 0, 0, 1 };
	int fd = node_wire_connect(&b->addr, 5000);

	if (fd < 0)
		return fd;
	memset(&h, 0, sizeof(h));
	h.cmd = POHM_CMD_REVERSE_LOOKUP;
	h.flags = POHM_FLAG_DIRECT | POHM_FLAG_NOLOCK;
	pohm_version_encode(h.id.id, v);
	if (node_wire_send(fd, &h, NULL, 0) || node_wire_read(fd, rd, POHM_MAX_PACKET, &r, &p) != 1 ||
	    r.status) {
		free(p);
		close(fd);
		return -EPROTO;
	}
	free(p);
	return fd;
}

/* Send request number n (a READ of the one key, or a WRITE of a rotating key). */
static int bench_send(struct bench *b, int fd, uint64_t trans, uint64_t n)
{
	uint8_t id[POHM_ID_SIZE], io_raw[POHM_IO_ATTR_SIZE];
	struct pohm_io_attr io;
	struct pohm_cmd h;
	struct iovec iov[2];
	char key[64];

	snprintf(key, sizeof(key), "bench-%" PRIu64, b->write ? n % (b->conns * b->depth) : 0);
	pohm_key_id(id, NULL, 0, key, strlen(key));
	memset(&io, 0, sizeof(io));
	memcpy(io.id, id, POHM_ID_SIZE);
	if (b->write) {
		io.size = b->size;
		io.timestamp.tsec = 1;
	} else {
		memcpy(io.parent, id, POHM_ID_SIZE);
		io.size = b->size;
		io.flags = b->csum ? POHM_IO_CHECKSUM : 0;
	}
	pohm_io_attr_encode(io_raw, &io);
	bench_hdr(&h, b->write ? POHM_CMD_WRITE : POHM_CMD_READ, id, b->group, trans,
		  POHM_IO_ATTR_SIZE + (b->write ? b->size : 0));
	iov[0].iov_base = io_raw;
	iov[0].iov_len = sizeof(io_raw);
	iov[1].iov_base = b->data;
	iov[1].iov_len = b->write ? b->size : 0;
	return node_wire_send(fd, &h, iov, 2);
}

/* One connection: keep depth requests in flight until count completed. */
static void *bench_thread(void *arg)
{
	struct bench *b = arg;
	struct node_rd *rd = calloc(1, sizeof(*rd));
	uint64_t trans = 1, inflight = 0;
	int fd = -1;

	if (!rd)
		return NULL;
	fd = bench_connect(b, rd);
	if (fd < 0)
		goto out;
	for (;;) {
		struct pohm_cmd r;
		uint8_t *p = NULL;

		while (inflight < b->depth &&
		       __atomic_load_n(&b->done, __ATOMIC_RELAXED) + inflight < b->count) {
			if (bench_send(b, fd, trans, trans))
				goto out;
			trans++;
			inflight++;
		}
		if (!inflight)
			break;
		if (node_wire_read(fd, rd, POHM_MAX_PACKET, &r, &p) != 1)
			goto out;
		if (r.flags & POHM_FLAG_MORE) {
			free(p);
			continue;
		}
		inflight--;
		if (r.status) {
			__atomic_add_fetch(&b->errors, 1, __ATOMIC_RELAXED);
		} else if (b->csum && !b->write && r.size >= POHM_IO_ATTR_SIZE) {
			uint8_t sum[POHM_ID_SIZE];

			pohm_sha512(p + POHM_IO_ATTR_SIZE, (size_t)r.size - POHM_IO_ATTR_SIZE, sum);
			if (memcmp(sum, p, POHM_ID_SIZE))
				__atomic_add_fetch(&b->errors, 1, __ATOMIC_RELAXED);
		}
		free(p);
		__atomic_add_fetch(&b->done, 1, __ATOMIC_RELAXED);
	}
out:
	if (fd >= 0)
		close(fd);
	free(rd);
	return NULL;
}

/* See node.h: parse options, write the read key, run the threads, print. */
int node_bench_main(int argc, char **argv)
{
	struct bench b;
	pthread_t t[256];
	uint64_t t0, t1, v;
	unsigned i;
	int k;

	memset(&b, 0, sizeof(b));
	b.size = 4096;
	b.count = 100000;
	b.conns = 1;
	b.depth = 16;
	b.group = 1;
	if (argc < 2 || pohm_addr_parse(&b.addr, argv[0]) ||
	    (strcmp(argv[1], "read") && strcmp(argv[1], "write")))
		goto usage;
	b.write = !strcmp(argv[1], "write");
	for (k = 2; k < argc; k++) {
		if (!strcmp(argv[k], "--csum")) {
			b.csum = 1;
			continue;
		}
		if (k + 1 >= argc || node_parse_size(argv[k + 1], &v))
			goto usage;
		if (!strcmp(argv[k], "--size"))
			b.size = v;
		else if (!strcmp(argv[k], "--count") && v)
			b.count = v;
		else if (!strcmp(argv[k], "--conns") && v && v <= 256)
			b.conns = (unsigned)v;
		else if (!strcmp(argv[k], "--depth") && v && v <= 4096)
			b.depth = (unsigned)v;
		else if (!strcmp(argv[k], "--group"))
			b.group = (unsigned)v;
		else
			goto usage;
		k++;
	}
	b.data = malloc(b.size ? b.size : 1);
	if (!b.data)
		return 1;
	for (v = 0; v < b.size; v++)
		b.data[v] = (uint8_t)(v * 131 + 7);
	if (!b.write) {
		/* The key every read asks for. */
		struct bench w = b;
		struct node_rd *rd = calloc(1, sizeof(*rd));
		struct pohm_cmd r;
		uint8_t *p = NULL;
		int fd = rd ? bench_connect(&w, rd) : -ENOMEM;

		w.write = 1;
		w.conns = w.depth = 1;
		if (fd < 0 || bench_send(&w, fd, 1, 0) ||
		    node_wire_read(fd, rd, POHM_MAX_PACKET, &r, &p) != 1 || r.status) {
			fprintf(stderr, "bench: cannot write the key\n");
			return 1;
		}
		free(p);
		free(rd);
		close(fd);
	}
	t0 = pohm_sys_mono_ns();
	for (i = 0; i < b.conns; i++)
		pthread_create(&t[i], NULL, bench_thread, &b);
	for (i = 0; i < b.conns; i++)
		pthread_join(t[i], NULL);
	t1 = pohm_sys_mono_ns();
	printf("%s size=%" PRIu64 " conns=%u depth=%u%s: %" PRIu64 " requests in %.3f s = %.0f req/s, "
	       "%.1f MiB/s, %" PRIu64 " errors\n", b.write ? "write" : "read", b.size, b.conns,
	       b.depth, b.csum ? " csum" : "", b.done, (double)(t1 - t0) / 1e9,
	       (double)b.done * 1e9 / (double)(t1 - t0),
	       (double)b.done * (double)b.size * 1e9 / (double)(t1 - t0) / 1048576.0, b.errors);
	free(b.data);
	return b.errors || b.done < b.count ? 1 : 0;
usage:
	fprintf(stderr, "usage: pohmelfs-node --bench HOST:PORT read|write [--size BYTES] "
			"[--count N] [--conns C] [--depth D] [--csum] [--group G]\n");
	return 125;
}
