/*
 * routefile.c — the route table a cache's last full refresh saw, kept in
 * cache_dir/routes for the cache's next processes (decision 0074).
 *
 * A process that takes a fresh file skips ROUTE_LIST and the wait for the
 * handshakes (conn_setup.c: pohm_net_refresh).  The file is a hint: a
 * wrong one costs a -95 and a full refresh (io_op_reroute), never a wrong
 * answer, since every request is DIRECT and a node that does not own the
 * key refuses it (PROTOCOL.md §3.6, §10.7).
 *
 * Format 1, little-endian:
 *   "POHMRTBL", u32 format (1), u32 dial_idx, u64 written (CLOCK_REALTIME
 *   ns), u64 config key (routefile_key), u32 nodes, then per node: its
 *   dnet_addr (32 bytes), 4 × i32 protocol version, u32 len, len bytes of
 *   dnet_id_container (as in its handshake reply); last the FNV-1a of
 *   every byte before it (u64).
 * Written to cache_dir/tmp/routes.PID (made with O_EXCL|O_NOFOLLOW in the
 * owner's 0700 tmp/) and renamed over routes (never half a file); read
 * with O_NOFOLLOW and taken only when the process's euid owns it and no
 * one else may write it.  A process in a cache_dir it does not own (root
 * in a user's cache) never writes one, so never finds one of its own
 * there.  Not synced: a file a crash damaged fails its sum and is ignored.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sys.h"

#define RT_MAGIC	"POHMRTBL"
#define RT_FORMAT	1u
#define RT_HEAD		(8 + 4 + 4 + 8 + 8 + 4)
#define RT_NODE_HEAD	(POHM_ADDR_SIZE + 16 + 4)
#define RT_READ_CHUNK	(64 * 1024)
#define RT_MAX_BYTES	(64u << 20)
/* Freshness (decision 0074): a table saved within the last minute, the
 * stock client's own route check interval; a clock a little behind the
 * writer's (another process, the same clock) is no reason to refuse it. */
#define RT_TTL_NS	60000000000ULL
#define RT_SKEW_NS	1000000000ULL

static uint64_t fnv_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = POHM_FNV_BASIS;

	while (n--)
		h = pohm_fnv1a_step(h, *p++);
	return h;
}

/* What a table is valid for: the protocol line and the configured seeds.
 * A file written under another configuration is not taken. */
static uint64_t routefile_key(const struct pohm_config *cfg)
{
	uint8_t a[POHM_ADDR_SIZE];
	uint64_t h = pohm_fnv1a_step(POHM_FNV_BASIS, (uint8_t)cfg->protocol);
	unsigned i;
	size_t k;

	for (i = 0; i < cfg->nservers; i++) {
		pohm_addr_encode(a, &cfg->servers[i]);
		for (k = 0; k < sizeof(a); k++)
			h = pohm_fnv1a_step(h, a[k]);
	}
	return h;
}

int pohm_net_route_file(struct pohm_net *net, const char *cache_dir)
{
	int n = snprintf(net->route_path, sizeof(net->route_path), "%s/routes", cache_dir);

	if (n < 0 || n >= (int)sizeof(net->route_path)) {
		net->route_path[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Is st ours alone: owned by our euid, writable by no one else? */
static int owned_alone(const struct stat *st)
{
	return st->st_uid == pohm_sys_geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* ---------------------------------------------------------------- save */

/* Append node's backends (from the route table) as a dnet_id_container. Lock held. */
static int encode_node_ids(struct pohm_buf *b, const struct pohm_route *rt, int node)
{
	int32_t backends[64];
	size_t nb = 0, i, j;
	int rc;

	for (i = 0; i < rt->n; i++) {
		if (rt->e[i].node != node)
			continue;
		for (j = 0; j < nb && backends[j] != rt->e[i].backend; j++)
			;
		if (j == nb) {
			if (nb == sizeof(backends) / sizeof(backends[0]))
				return -E2BIG;
			backends[nb++] = rt->e[i].backend;
		}
	}
	rc = pohm_backends_encode_count(b, (uint32_t)nb);
	for (j = 0; j < nb && !rc; j++) {
		struct pohm_backend_ids be;
		uint8_t *ids;
		size_t k = 0;

		memset(&be, 0, sizeof(be));
		be.backend_id = backends[j];
		for (i = 0; i < rt->n; i++)
			if (rt->e[i].node == node && rt->e[i].backend == backends[j])
				k++;
		ids = malloc(k * POHM_ID_SIZE);
		if (!ids)
			return -ENOMEM;
		for (i = 0, k = 0; i < rt->n; i++)
			if (rt->e[i].node == node && rt->e[i].backend == backends[j]) {
				be.group = rt->e[i].group;
				memcpy(ids + k++ * POHM_ID_SIZE, rt->e[i].id, POHM_ID_SIZE);
			}
		be.ids_count = (uint32_t)k;
		be.ids = ids;
		rc = pohm_backends_encode_one(b, &be);
		free(ids);
	}
	return rc;
}

/* The file's bytes for the nodes that are up and have routes. Lock held. */
static int encode_table(struct pohm_net *net, struct pohm_buf *b)
{
	uint32_t count = 0, i;
	size_t at_count;
	int rc = 0, n;

	rc |= pohm_buf_put(b, RT_MAGIC, 8);
	rc |= pohm_buf_put_u32(b, RT_FORMAT);
	rc |= pohm_buf_put_u32(b, net->dial_idx);
	rc |= pohm_buf_put_u64(b, pohm_sys_real_ns());
	rc |= pohm_buf_put_u64(b, routefile_key(net->cfg));
	at_count = b->len;
	rc |= pohm_buf_put_u32(b, 0);
	for (n = 0; n < net->nconns && !rc; n++) {
		struct pohm_conn *c = net->conns[n];
		uint8_t a[POHM_ADDR_SIZE];
		size_t at_len;

		if (c->state != CONN_UP || !c->handshake_ok)
			continue;
		for (i = 0; i < net->route.n && net->route.e[i].node != n; i++)
			;
		if (i == net->route.n)
			continue;
		pohm_addr_encode(a, &c->addr);
		rc |= pohm_buf_put(b, a, sizeof(a));
		for (i = 0; i < 4; i++)
			rc |= pohm_buf_put_u32(b, (uint32_t)c->version[i]);
		at_len = b->len;
		rc |= pohm_buf_put_u32(b, 0);
		if (!rc)
			rc = encode_node_ids(b, &net->route, n);
		if (!rc)
			pohm_st32(b->p + at_len, (uint32_t)(b->len - at_len - 4));
		count++;
	}
	if (rc)
		return rc < 0 ? rc : -ENOMEM;
	if (!count)
		return -ENOENT;
	pohm_st32(b->p + at_count, count);
	return pohm_buf_put_u64(b, fnv_bytes(b->p, b->len)) ? -ENOMEM : 0;
}

/*
 * The cache_dir's tmp/ as an O_PATH fd, when the cache_dir is the euid's
 * and tmp/ is its own directory (not a link) no one else may write: no
 * one else can then put anything at the temporary's name.  fd or -errno.
 */
static int own_tmp_dir(const char *routes)
{
	char dir[sizeof(((struct pohm_net *)0)->route_path) + 8];
	size_t n = strlen(routes) - strlen("routes");
	struct stat st;
	int fd;

	memcpy(dir, routes, n);
	dir[n] = '\0';
	if (pohm_sys_fstatat(AT_FDCWD, n ? dir : ".", &st, 0) || st.st_uid != pohm_sys_geteuid())
		return -EPERM;	/* another user's cache_dir (root in a user's cache) */
	memcpy(dir + n, "tmp", 4);
	fd = pohm_sys_openat(AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	if (pohm_sys_fstat(fd, &st) || !owned_alone(&st)) {
		pohm_sys_close(fd);
		return -EPERM;
	}
	return fd;
}

void pohm_routefile_save(struct pohm_net *net)
{
	struct pohm_buf b = POHM_BUF_INIT;
	char tmp[32];
	int rc, fd, dfd = -1;

	if (!net->route_path[0])
		return;
	pthread_mutex_lock(&net->lock);
	rc = encode_table(net, &b);
	pthread_mutex_unlock(&net->lock);
	if (rc)
		goto out;
	dfd = own_tmp_dir(net->route_path);
	if (dfd < 0)
		goto out;
	snprintf(tmp, sizeof(tmp), "routes.%ld", (long)pohm_sys_pid());
	fd = pohm_sys_openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd == -EEXIST && !pohm_sys_unlinkat(dfd, tmp, 0))	/* a dead namesake's */
		fd = pohm_sys_openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto out;
	rc = pohm_sys_write(fd, b.p, b.len) == (ssize_t)b.len ? 0 : -EIO;
	pohm_sys_close(fd);
	/* rename replaces whatever is at routes, a link included; never follows it. */
	if (rc || pohm_sys_renameat(dfd, tmp, AT_FDCWD, net->route_path))
		pohm_sys_unlinkat(dfd, tmp, 0);
out:
	if (dfd >= 0)
		pohm_sys_close(dfd);
	pohm_buf_free(&b);
}

/* ---------------------------------------------------------------- load */

/* The file's bytes (malloc'd) in *out, their count in *len: one open, one
 * fstat, one read for a table under 64 KiB.  A link, or a file not ours
 * alone (owned_alone), is refused: -EPERM.  0 or -errno. */
static int read_all(const char *path, uint8_t **out, size_t *len)
{
	size_t cap = RT_READ_CHUNK, got = 0;
	uint8_t *p = malloc(cap), *np;
	struct stat st;
	int fd, rc = 0;

	if (!p)
		return -ENOMEM;
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0) {
		free(p);
		return fd;
	}
	if (pohm_sys_fstat(fd, &st) || !S_ISREG(st.st_mode) || !owned_alone(&st))
		rc = -EPERM;
	while (!rc) {
		ssize_t n = pohm_sys_read(fd, p + got, cap - got);

		if (n < 0) {
			rc = (int)n;
			break;
		}
		got += (size_t)n;
		if (got < cap)
			break;
		if (cap >= RT_MAX_BYTES || !(np = realloc(p, cap * 2))) {
			rc = -EFBIG;
			break;
		}
		p = np;
		cap *= 2;
	}
	pohm_sys_close(fd);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	*len = got;
	return 0;
}

struct rt_node {
	struct pohm_addr addr;
	int32_t version[4];
	const uint8_t *ids;
	size_t idslen;
};

/*
 * Check a file's bytes: its sum, magic, format, configuration, age, and
 * every node's address, version line and id container.  The nodes in
 * *nodes (malloc'd, pointing into p), their count in *n, dial_idx in *dial.
 * 0, or -ESTALE (too old, another configuration or protocol line) or -EPROTO.
 */
static int parse_table(const struct pohm_net *net, const int32_t our[4], const uint8_t *p,
		       size_t len, uint64_t now_real, struct rt_node **nodes, uint32_t *n,
		       uint32_t *dial)
{
	struct pohm_rd rd;
	struct rt_node *v;
	uint64_t written;
	uint32_t i, count;

	if (len < RT_HEAD + 8 || fnv_bytes(p, len - 8) != pohm_le64(p + len - 8) ||
	    memcmp(p, RT_MAGIC, 8))
		return -EPROTO;
	rd = pohm_rd_make(p + 8, len - 16);
	if (pohm_rd_u32(&rd) != RT_FORMAT)
		return -EPROTO;	/* another format: a full refresh writes ours */
	*dial = pohm_rd_u32(&rd);
	written = pohm_rd_u64(&rd);
	if (pohm_rd_u64(&rd) != routefile_key(net->cfg))
		return -ESTALE;
	if (written > now_real + RT_SKEW_NS ||
	    (now_real > written && now_real - written > RT_TTL_NS))
		return -ESTALE;
	count = pohm_rd_u32(&rd);
	if (rd.err || !count || count > POHM_MAX_NODES)
		return -EPROTO;
	v = calloc(count, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < count && !rd.err; i++) {
		struct pohm_backend_iter it;
		const uint8_t *a = pohm_rd_take(&rd, POHM_ADDR_SIZE);
		unsigned k;

		for (k = 0; k < 4; k++)
			v[i].version[k] = (int32_t)pohm_rd_u32(&rd);
		v[i].idslen = pohm_rd_u32(&rd);
		v[i].ids = pohm_rd_take(&rd, v[i].idslen);
		if (rd.err || pohm_addr_decode(&v[i].addr, a) ||
		    pohm_backends_begin(&it, v[i].ids, v[i].idslen))
			rd.err = -EPROTO;
		else if (v[i].version[0] != our[0] || v[i].version[1] != our[1])
			rd.err = -ESTALE;
	}
	if (rd.err || rd.left) {
		free(v);
		return rd.err ? rd.err : -EPROTO;
	}
	*nodes = v;
	*n = count;
	return 0;
}

/* Is every configured server (seed) a node of the file?  A seed that was
 * down when the file was written would stay unused for a minute, and a
 * read could be served by a node with an older copy: a full refresh. */
static int seeds_listed(const struct pohm_config *cfg, const struct rt_node *v, uint32_t n)
{
	unsigned s;
	uint32_t i;

	for (s = 0; s < cfg->nservers; s++) {
		for (i = 0; i < n && !pohm_addr_equal(&v[i].addr, &cfg->servers[s]); i++)
			;
		if (i == n)
			return 0;
	}
	return 1;
}

/* Does every configured group have an owner in r? */
static int groups_covered(const struct pohm_config *cfg, const struct pohm_route *r)
{
	unsigned g;

	for (g = 0; g < cfg->ngroups; g++)
		if (!pohm_route_group_size(r, cfg->groups[g]))
			return 0;
	return 1;
}

int pohm_routefile_load(struct pohm_net *net, const int32_t our[4])
{
	struct pohm_route check = POHM_ROUTE_INIT;
	struct rt_node *v = NULL;
	uint8_t *p = NULL;
	uint32_t n = 0, i, dial = 0;
	size_t len = 0;
	int rc;

	if (!net->route_path[0])
		return -ENOENT;
	rc = read_all(net->route_path, &p, &len);
	if (!rc)
		rc = parse_table(net, our, p, len, pohm_sys_real_ns(), &v, &n, &dial);
	if (!rc && !seeds_listed(net->cfg, v, n))
		rc = -ESTALE;
	/* The whole table first, with the file's node numbers: every group covered? */
	for (i = 0; i < n && !rc; i++)
		rc = pohm_route_apply_ids(&check, (int)i, v[i].ids, v[i].idslen, 1);
	if (!rc && !groups_covered(net->cfg, &check))
		rc = -ESTALE;
	pohm_route_free(&check);
	if (rc)
		goto out;
	pthread_mutex_lock(&net->lock);
	for (i = 0; i < n && !rc; i++) {
		int idx = pohm_net_node_add(net, &v[i].addr, 0);

		if (idx < 0) {
			rc = idx;
			break;
		}
		rc = pohm_route_apply_ids(&net->route, idx, v[i].ids, v[i].idslen, 1);
		memcpy(net->conns[idx]->version, v[i].version, sizeof(v[i].version));
		net->conns[idx]->listed = 1;
	}
	net->dial_idx = dial;
	if (rc)
		pohm_route_free(&net->route);	/* empty before: nothing else lost */
	pthread_mutex_unlock(&net->lock);
out:
	free(v);
	free(p);
	return rc;
}
