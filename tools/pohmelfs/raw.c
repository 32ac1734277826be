/*
 * raw.c — `pohmelfs put|get|lookup|del KEY`: raw objects through core/io.
 * Warnings (a group that failed over, was repaired or is stale) go to
 * stderr even when the command succeeds; failures name key, group and node.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Print res->msg as a warning when it carries more than the key. */
static void warn_notes(const char *cmd, const struct pohm_io_result *res)
{
	if (res->notes)
		fprintf(stderr, "pohmelfs: %s: warning: %s\n", cmd, res->msg);
}

static int fail(const char *cmd, const struct pohm_io_result *res, int rc)
{
	fprintf(stderr, "pohmelfs: %s: %s: %s\n", cmd, res->msg, strerror(-rc));
	return 1;
}

/* Read all of fd into a malloc'ed buffer. 0 or -errno. */
static int slurp(int fd, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	uint8_t *p = malloc(cap);

	if (!p)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			uint8_t *q = cap > SIZE_MAX / 2 ? NULL : realloc(p, cap * 2);

			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		r = read(fd, p + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;

			free(p);
			return e;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	*out = p;
	*len = n;
	return 0;
}

/*
 * Standard input as one buffer: a regular file is mapped (no copy, no
 * growing buffer), anything else read.  *mapped says which to release.
 * Not MAP_POPULATE: that maps every page before the first byte is sent
 * (~20 ms for 256 MiB); faulted in as they are sent, the pages come while
 * the node is busy with earlier pieces.
 */
static int input(uint8_t **out, size_t *len, int *mapped)
{
	struct stat st;
	off_t pos = lseek(0, 0, SEEK_CUR);

	*mapped = 0;
	if (!fstat(0, &st) && S_ISREG(st.st_mode) && pos >= 0 && st.st_size > pos &&
	    (uint64_t)(st.st_size - pos) <= SIZE_MAX) {
		off_t base = pos & ~(off_t)(sysconf(_SC_PAGESIZE) - 1);
		size_t n = (size_t)(st.st_size - base);
		uint8_t *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, 0, base);

		if (p != MAP_FAILED) {
			*out = p + (pos - base);
			*len = (size_t)(st.st_size - pos);
			*mapped = 1;
			return 0;
		}
	}
	return slurp(0, out, len);
}

static void input_release(uint8_t *p, size_t len, int mapped)
{
	if (!mapped) {
		free(p);
		return;
	}
	{
		uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
		uint8_t *base = (uint8_t *)((uintptr_t)p & ~page);

		munmap(base, len + (size_t)(p - base));
	}
}

int cmd_put(struct cli *cli, const char *key)
{
	struct pohm_write_opts o;
	struct pohm_io_result *res = malloc(sizeof(*res));
	uint8_t *data = NULL;
	size_t len = 0;
	int rc, ret = 1, mapped = 0;

	if (!res)
		return 1;
	rc = input(&data, &len, &mapped);
	if (rc) {
		fprintf(stderr, "pohmelfs: put %s: reading standard input: %s\n", key, strerror(-rc));
		goto out;
	}
	memset(&o, 0, sizeof(o));
	o.flags = POHM_W_CAS_TS;	/* no group may go back in time */
	rc = pohm_io_write(cli->client, key, strlen(key), data, len, &o, res);
	if (rc) {
		ret = fail("put", res, rc);
		goto out;
	}
	warn_notes("put", res);
	ret = 0;
out:
	if (data)
		input_release(data, len, mapped);
	free(res);
	return ret;
}

/* Sink of a streamed get: each verified piece goes to standard output. */
static int write_out(void *arg, const uint8_t *p, size_t n, uint64_t off)
{
	int *werr = arg;

	(void)off;
	while (n) {
		ssize_t w = write(1, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			*werr = errno;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int cmd_get(struct cli *cli, const char *key)
{
	struct pohm_io_result *res = malloc(sizeof(*res));
	uint64_t total = 0;
	int rc, werr = 0;

	if (!res)
		return 1;
	/* Piece by piece to stdout: a large object is never held whole. */
	rc = pohm_io_get_stream(cli->client, key, strlen(key), write_out, &werr, &total, res);
	if (rc && werr)
		fprintf(stderr, "pohmelfs: get %s: writing standard output: %s\n", key,
			strerror(werr));
	else if (rc)
		fail("get", res, rc);
	else
		warn_notes("get", res);
	free(res);
	return rc ? 1 : 0;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

int cmd_lookup(struct cli *cli, const char *key)
{
	struct pohm_io_result *res = malloc(sizeof(*res));
	struct pohm_net *net = pohm_client_net(cli->client);
	char ts[48], sum[2 * POHM_ID_SIZE + 1], node[64];
	unsigned gi;
	int rc;

	if (!res)
		return 1;
	rc = pohm_io_lookup(cli->client, key, strlen(key), POHM_LOOKUP_CSUM | POHM_LOOKUP_ALL, res);
	if (cli->json) {
		printf("{\"key\":");
		cli_json_str(stdout, key);
		printf(",\"found\":%s", rc == 0 ? "true" : "false");
		if (!rc) {
			cli_fmt_time(&res->ts, ts, sizeof(ts));
			printf(",\"timestamp\":\"%s\",\"size\":%llu", ts, (unsigned long long)res->size);
		}
		printf(",\"groups\":[");
		for (gi = 0; gi < res->ngroups; gi++) {
			const struct pohm_group_reply *g = &res->g[gi];

			pohm_net_node_name(net, g->node, node, sizeof(node));
			printf("%s{\"group\":%u,\"node\":", gi ? "," : "", g->group);
			cli_json_str(stdout, g->node >= 0 ? node : "");
			printf(",\"status\":%d", g->status);
			if (!g->status) {
				cli_fmt_time(&g->ts, ts, sizeof(ts));
				hex(g->csum, POHM_ID_SIZE, sum);
				printf(",\"size\":%llu,\"timestamp\":\"%s\",\"checksum\":\"%s\","
				       "\"committed\":%s", (unsigned long long)g->size, ts, sum,
				       !rc && !pohm_time_cmp(&g->ts, &res->ts) ? "true" : "false");
			} else {
				printf(",\"error\":");
				cli_json_str(stdout, strerror(-g->status));
			}
			printf("}");
		}
		printf("],\"message\":");
		cli_json_str(stdout, res->msg);
		printf("}\n");
	} else {
		for (gi = 0; gi < res->ngroups; gi++) {
			const struct pohm_group_reply *g = &res->g[gi];

			pohm_net_node_name(net, g->node, node, sizeof(node));
			if (g->status) {
				printf("group %u  node %s  %s\n", g->group, g->node >= 0 ? node : "-",
				       g->status == -ENOENT ? "absent" : strerror(-g->status));
				continue;
			}
			cli_fmt_time(&g->ts, ts, sizeof(ts));
			hex(g->csum, POHM_ID_SIZE, sum);
			printf("group %u  node %s  size %llu  timestamp %s  sha512 %.32s...%s\n",
			       g->group, node, (unsigned long long)g->size, ts, sum,
			       !rc && !pohm_time_cmp(&g->ts, &res->ts) ? "" : "  (not the committed version)");
		}
	}
	if (rc) {
		if (rc == -ENOENT)
			fprintf(stderr, "pohmelfs: lookup: %s: not found\n", res->msg);
		else
			fail("lookup", res, rc);
	}
	free(res);
	return rc ? 1 : 0;
}

int cmd_del(struct cli *cli, const char *key)
{
	struct pohm_io_result *res = malloc(sizeof(*res));
	int rc;

	if (!res)
		return 1;
	rc = pohm_io_del(cli->client, key, strlen(key), res);
	if (rc)
		fail("del", res, rc);
	else
		warn_notes("del", res);
	free(res);
	return rc ? 1 : 0;
}
