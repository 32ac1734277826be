/*
 * status.c — `pohmelfs status [--json]`, the cluster part: every node
 * (address, state, protocol, ping latency, last error), every group
 * (nodes, backends, ids) and the route table; then the cache part
 * (cache.c) when a prefix is configured.  Exit 1 when a node is down or a
 * configured group has no route.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "net.h"
#include "sys.h"

struct group_sum {
	uint32_t group;
	size_t ids, nodes, backends;
};

/* Per-group totals from a route table sorted by (group, id, node, backend). */
static size_t summarize(const struct pohm_route *rt, struct group_sum *out, size_t max)
{
	size_t n = 0, i, j;

	for (i = 0; i < rt->n; i++) {
		struct group_sum *g;

		if (!n || out[n - 1].group != rt->e[i].group) {
			if (n == max)
				break;
			memset(&out[n], 0, sizeof(out[n]));
			out[n++].group = rt->e[i].group;
		}
		g = &out[n - 1];
		g->ids++;
		/* Count distinct nodes and (node, backend) pairs seen earlier in this group. */
		for (j = i; j > 0 && rt->e[j - 1].group == g->group; j--)
			if (rt->e[j - 1].node == rt->e[i].node)
				break;
		if (!(j > 0 && rt->e[j - 1].group == g->group))
			g->nodes++;
		for (j = i; j > 0 && rt->e[j - 1].group == g->group; j--)
			if (rt->e[j - 1].node == rt->e[i].node && rt->e[j - 1].backend == rt->e[i].backend)
				break;
		if (!(j > 0 && rt->e[j - 1].group == g->group))
			g->backends++;
	}
	return n;
}

static void idhex(const uint8_t *id, char *out)
{
	static const char d[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 8; i++) {
		out[2 * i] = d[id[i] >> 4];
		out[2 * i + 1] = d[id[i] & 15];
	}
	out[16] = 0;
}

int cmd_status(struct cli *cli)
{
	struct pohm_net *net = pohm_client_net(cli->client);
	const struct pohm_config *cfg = &cli->cfg;
	struct group_sum groups[POHM_MAX_GROUPS * 4];
	struct pohm_route rt;
	struct pohm_node_info ni;
	uint64_t deadline = pohm_sys_mono_ns() + cfg->read_wait_timeout_ns;
	size_t ng, i;
	int nodes, n, rc, bad = 0;
	unsigned gi;
	char id[17], ver[48];

	rc = pohm_net_refresh(net, deadline, 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(net, m, sizeof(m));
		fprintf(stderr, "pohmelfs: status: %s\n", m[0] ? m : strerror(-rc));
		bad = 1;
	} else {
		pohm_net_ping_all(net, deadline);
	}
	nodes = pohm_net_nodes(net);
	if (pohm_net_route_copy(net, &rt))
		return 1;
	ng = summarize(&rt, groups, sizeof(groups) / sizeof(groups[0]));
	for (gi = 0; gi < cfg->ngroups; gi++)
		if (!pohm_route_group_size(&rt, cfg->groups[gi]))
			bad = 1;

	if (cli->json)
		printf("{\"fsid\":");
	if (cli->json) {
		cli_json_str(stdout, cfg->fsid);
		printf(",\"nodes\":[");
	} else {
		printf("fsid %s, groups", cfg->fsid);
		for (gi = 0; gi < cfg->ngroups; gi++)
			printf("%c%u", gi ? ':' : ' ', cfg->groups[gi]);
		printf(", write quorum %u\nnodes:\n", pohm_config_write_quorum(cfg));
	}
	for (n = 0; n < nodes; n++) {
		if (pohm_net_node_info(net, n, &ni))
			continue;
		bad |= !ni.up;
		snprintf(ver, sizeof(ver), "%d.%d.%d.%d", ni.version[0], ni.version[1], ni.version[2],
			 ni.version[3]);
		if (cli->json) {
			printf("%s{\"address\":", n ? "," : "");
			cli_json_str(stdout, ni.name);
			printf(",\"up\":%s,\"protocol\":\"%s\",\"rtt_ms\":%.3f,\"ids\":%zu,\"error\":",
			       ni.up ? "true" : "false", ni.up ? ver : "", ni.rtt_ns / 1e6, ni.ids);
			cli_json_str(stdout, ni.up ? "" : ni.last_msg);
			printf("}");
		} else if (ni.up) {
			printf("  %-22s up    protocol %s  ping %.3f ms  %zu ids\n", ni.name, ver,
			       ni.rtt_ns / 1e6, ni.ids);
		} else {
			printf("  %-22s DOWN  %s\n", ni.name, ni.last_msg[0] ? ni.last_msg : "not connected");
		}
	}
	if (cli->json)
		printf("],\"groups\":[");
	else
		printf("groups:\n");
	for (i = 0; i < ng; i++) {
		if (cli->json)
			printf("%s{\"group\":%u,\"nodes\":%zu,\"backends\":%zu,\"ids\":%zu}", i ? "," : "",
			       groups[i].group, groups[i].nodes, groups[i].backends, groups[i].ids);
		else
			printf("  group %-6u %zu nodes, %zu backends, %zu ids\n", groups[i].group,
			       groups[i].nodes, groups[i].backends, groups[i].ids);
	}
	for (gi = 0; gi < cfg->ngroups; gi++)
		if (!pohm_route_group_size(&rt, cfg->groups[gi]) && !cli->json)
			printf("  group %-6u NO ROUTE (no node serves it)\n", cfg->groups[gi]);
	if (cli->json)
		printf("],\"route\":[");
	else
		printf("route (group: first id bytes -> node backend):\n");
	for (i = 0; i < rt.n; i++) {
		char name[64];

		idhex(rt.e[i].id, id);
		pohm_net_node_name(net, rt.e[i].node, name, sizeof(name));
		if (cli->json) {
			printf("%s{\"group\":%u,\"id\":\"%s\",\"node\":", i ? "," : "", rt.e[i].group, id);
			cli_json_str(stdout, name);
			printf(",\"backend\":%d}", rt.e[i].backend);
		} else {
			printf("  %-6u %s... -> %s backend %d\n", rt.e[i].group, id, name,
			       rt.e[i].backend);
		}
	}
	if (cli->json)
		printf("],\"healthy\":%s", bad ? "false" : "true");
	pohm_route_free(&rt);
	status_cache(cli);
	if (cli->json)
		printf("}\n");
	return bad ? 1 : 0;
}
