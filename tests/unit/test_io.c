/*
 * test_io.c — core/io: the quorum rule as a pure function, the logical
 * clock, and group operations against three fake nodes (one group each):
 * round trip, a group down (quorum holds / successful_write_count=3
 * fails), a stale group and read repair, corruption in transit and on disk
 * (failover), a hung node, -95 with a route refresh, CAS.
 */
#include "harness.h"
#include "fake_node.h"

#include "config.h"
#include "io.h"
#include "sys.h"

#define MS 1000000ULL

/* ---------------------------------------------------------------- quorum (pure) */

static struct pohm_vote V(int status, uint64_t tsec)
{
	struct pohm_vote v = { status, { tsec, 0 } };

	return v;
}

static int pick(const struct pohm_vote *v, size_t n, unsigned w, int final, uint64_t *tsec)
{
	struct pohm_time ts;
	int absent = -1, r = pohm_quorum_pick(v, n, w, final, &ts, &absent);

	*tsec = r == 1 ? (absent ? 0 : ts.tsec) : 999;
	return r;
}

TEST(quorum_majority_of_three)
{
	struct pohm_vote v[3];
	uint64_t t;

	v[0] = V(0, 5); v[1] = V(0, 5); v[2] = V(0, 4);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 5);
	/* A newer version held by one group only is uncommitted. */
	v[0] = V(0, 9); v[1] = V(0, 5); v[2] = V(0, 5);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 5);
	/* Three different versions: the highest that two groups have reached. */
	v[0] = V(0, 9); v[1] = V(0, 7); v[2] = V(0, 3);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 7);
	/* Absent on two groups: absent. */
	v[0] = V(-ENOENT, 0); v[1] = V(0, 4); v[2] = V(-ENOENT, 0);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 0);
}

TEST(quorum_early_decision)
{
	struct pohm_vote v[3];
	uint64_t t;

	/* Two agree, one pending: decided (a hung node is not waited for). */
	v[0] = V(0, 5); v[1] = V(1, 0); v[2] = V(0, 5);
	EXPECT_EQ_INT(pick(v, 3, 2, 0, &t), 1);
	EXPECT_EQ_U64(t, 5);
	/* One answered, two pending: undecided. */
	v[0] = V(0, 5); v[1] = V(1, 0); v[2] = V(1, 0);
	EXPECT_EQ_INT(pick(v, 3, 2, 0, &t), 0);
	/* 5 and 3 answered, one pending: it could lift 5 to two votes. */
	v[0] = V(0, 5); v[1] = V(0, 3); v[2] = V(1, 0);
	EXPECT_EQ_INT(pick(v, 3, 2, 0, &t), 0);
	/* Final with that state: 3 (held at or above by both). */
	v[2] = V(-ETIMEDOUT, 0);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 3);
	/* Two absent, one pending: absent decided. */
	v[0] = V(-ENOENT, 0); v[1] = V(-ENOENT, 0); v[2] = V(1, 0);
	EXPECT_EQ_INT(pick(v, 3, 2, 0, &t), 1);
	EXPECT_EQ_U64(t, 0);
}

TEST(quorum_failures_and_write_count)
{
	struct pohm_vote v[3];
	uint64_t t;

	/* Nobody answered. */
	v[0] = V(-ETIMEDOUT, 0); v[1] = V(-ECONNREFUSED, 0); v[2] = V(-EILSEQ, 0);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), -ENODATA);
	/* One group answered: a quorum of the answering groups is that group. */
	v[1] = V(0, 8);
	EXPECT_EQ_INT(pick(v, 3, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 8);
	/* successful_write_count=1: the newest copy anywhere is committed. */
	v[0] = V(0, 9); v[1] = V(0, 5); v[2] = V(0, 5);
	EXPECT_EQ_INT(pick(v, 3, 1, 1, &t), 1);
	EXPECT_EQ_U64(t, 9);
	/* Two groups, default majority (2): one copy alone is not committed. */
	v[0] = V(0, 9); v[1] = V(-ENOENT, 0);
	EXPECT_EQ_INT(pick(v, 2, 2, 1, &t), 1);
	EXPECT_EQ_U64(t, 0);
}

TEST(logical_clock)
{
	uint64_t last = 0;

	EXPECT_EQ_U64(pohm_clock_next(&last, 100, 0), 100);
	EXPECT_EQ_U64(pohm_clock_next(&last, 100, 0), 101);	/* same ns: +1 */
	EXPECT_EQ_U64(pohm_clock_next(&last, 50, 0), 102);	/* clock went back */
	EXPECT_EQ_U64(pohm_clock_next(&last, 200, 500), 500);	/* floor above now */
	EXPECT_EQ_U64(pohm_clock_next(&last, 200, 0), 501);
	EXPECT_EQ_U64(pohm_time_to_ns(&(struct pohm_time){ 3, 7 }), 3000000007ULL);
	EXPECT_EQ_U64(pohm_time_from_ns(3000000007ULL).tnsec, 7);
}

/* ---------------------------------------------------------------- against fake nodes */

struct cluster {
	struct fake_node fn[3];
	struct pohm_config cfg;
	struct pohm_client *c;
};

static void start3(struct cluster *cl, const char *wcount, int repair)
{
	char s[64], err[256];
	int i;

	pohm_config_defaults(&cl->cfg);
	for (i = 0; i < 3; i++)
		EXPECT_EQ_INT(fn_start(&cl->fn[i], (uint32_t)i + 1, 0), 0);
	for (i = 0; i < 3; i++)
		fn_set_peers(&cl->fn[i], (uint16_t[]){ cl->fn[0].port, cl->fn[1].port, cl->fn[2].port }, 3);
	snprintf(s, sizeof(s), "127.0.0.1:%u", cl->fn[0].port);
	pohm_config_set(&cl->cfg, "server", s, POHM_CFG_CALLER, NULL, 0);
	pohm_config_set(&cl->cfg, "groups", "1:2:3", POHM_CFG_CALLER, NULL, 0);
	pohm_config_set(&cl->cfg, "read_wait_timeout", "1", POHM_CFG_CALLER, NULL, 0);
	pohm_config_set(&cl->cfg, "write_wait_timeout", "1", POHM_CFG_CALLER, NULL, 0);
	if (wcount)
		pohm_config_set(&cl->cfg, "successful_write_count", wcount, POHM_CFG_CALLER, NULL, 0);
	if (repair)
		pohm_config_set(&cl->cfg, "read_repair", "1", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_client_open(&cl->c, &cl->cfg, err, sizeof(err)), 0);
}

static void stop3(struct cluster *cl)
{
	int i;

	pohm_client_close(cl->c);
	for (i = 0; i < 3; i++)
		fn_stop(&cl->fn[i]);
	pohm_config_free(&cl->cfg);
}

static int put(struct cluster *cl, const char *key, const char *data, struct pohm_io_result *res)
{
	struct pohm_write_opts o;

	memset(&o, 0, sizeof(o));
	o.flags = POHM_W_CAS_TS;
	return pohm_io_write(cl->c, key, strlen(key), data, strlen(data), &o, res);
}

static int get_is(struct cluster *cl, const char *key, const char *want, struct pohm_io_result *res)
{
	uint8_t *d = NULL;
	size_t n = 0;
	int r = pohm_io_get(cl->c, key, strlen(key), &d, &n, res);
	int ok = r == 0 && n == strlen(want) && !memcmp(d, want, n);

	if (!ok)
		printf("# get %s: rc %d, %zu bytes, msg: %s\n", key, r, n, res->msg);
	free(d);
	return ok;
}

TEST(round_trip_three_groups)
{
	struct cluster cl;
	struct pohm_io_result res;
	char buf[16];
	size_t got = 0;
	unsigned g;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "hello", "world!", &res), 0);
	EXPECT_EQ_INT(res.committed, 3);
	EXPECT_EQ_INT(res.notes, 0);
	EXPECT(get_is(&cl, "hello", "world!", &res));
	EXPECT_EQ_INT(pohm_io_read(cl.c, "hello", 5, 2, buf, sizeof(buf), &got, &res), 0);
	EXPECT_EQ_INT(got, 4);
	EXPECT_MEM(buf, "rld!", 4);
	EXPECT_EQ_INT(pohm_io_read(cl.c, "hello", 5, 6, buf, sizeof(buf), &got, &res), 0);
	EXPECT_EQ_INT(got, 0);
	EXPECT_EQ_INT(pohm_io_lookup(cl.c, "hello", 5, POHM_LOOKUP_CSUM | POHM_LOOKUP_ALL, &res), 0);
	EXPECT_EQ_U64(res.size, 6);
	for (g = 0; g < 3; g++) {
		uint8_t sum[64];

		pohm_sha512("world!", 6, sum);
		EXPECT_EQ_INT(res.g[g].status, 0);
		EXPECT_MEM(res.g[g].csum, sum, 64);
		EXPECT_EQ_INT(fn_count(&cl.fn[g], POHM_CMD_WRITE), 1);
	}
	EXPECT_EQ_INT(pohm_io_del(cl.c, "hello", 5, &res), 0);
	EXPECT_EQ_INT(pohm_io_lookup(cl.c, "hello", 5, 0, &res), -ENOENT);
	EXPECT_EQ_INT(pohm_io_del(cl.c, "hello", 5, &res), -ENOENT);
	EXPECT_EQ_INT(put(&cl, "empty", "", &res), -EINVAL);
	stop3(&cl);
}

TEST(key_namespaced_by_fsid)
{
	struct cluster cl;
	struct pohm_io_result res;
	uint8_t id[64];

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "v", &res), 0);
	pohm_key_id(id, "pohmelfs", 8, "k", 1);
	pthread_mutex_lock(&cl.fn[0].lock);
	EXPECT(fn_find(&cl.fn[0], id, 0) != NULL);
	pthread_mutex_unlock(&cl.fn[0].lock);
	stop3(&cl);
}

TEST(group_down_quorum_holds_and_three_of_three_fails)
{
	struct cluster cl;
	struct pohm_io_result res;

	start3(&cl, NULL, 0);
	fn_set_flags(&cl.fn[1], FN_SILENT);		/* group 2 hangs */
	EXPECT_EQ_INT(put(&cl, "k", "v1", &res), 0);
	EXPECT_EQ_INT(res.committed, 2);
	EXPECT(get_is(&cl, "k", "v1", &res));
	stop3(&cl);

	start3(&cl, "3", 0);
	fn_set_flags(&cl.fn[2], FN_ENOTSUP);		/* group 3 refuses */
	EXPECT_EQ_INT(put(&cl, "k", "v1", &res), -EIO);
	EXPECT_EQ_INT(res.committed, 2);
	EXPECT(strstr(res.msg, "key k: write committed on 2 of 3 groups, 3 needed") != NULL);
	EXPECT(strstr(res.msg, "group 3 node 127.0.0.1:") != NULL);
	EXPECT(strstr(res.msg, "-95") != NULL);
	stop3(&cl);
}

TEST(hung_node_does_not_delay_reads)
{
	struct cluster cl;
	struct pohm_io_result res;
	uint64_t t0, dt;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "v1", &res), 0);
	fn_set_flags(&cl.fn[0], FN_SILENT_KEYS);
	t0 = pohm_sys_mono_ns();
	EXPECT(get_is(&cl, "k", "v1", &res));
	dt = pohm_sys_mono_ns() - t0;
	EXPECT(dt < 500 * MS);		/* read_wait_timeout is 1 s */
	EXPECT(res.chosen != 0);
	stop3(&cl);
}

TEST(stale_group_and_read_repair)
{
	struct cluster cl;
	struct pohm_io_result res;
	struct pohm_time t1;

	start3(&cl, NULL, 1);
	EXPECT_EQ_INT(put(&cl, "k", "old", &res), 0);
	fn_set_flags(&cl.fn[2], FN_ENOTSUP);		/* group 3 misses the next write */
	EXPECT_EQ_INT(put(&cl, "k", "new", &res), 0);
	t1 = res.ts;
	fn_set_flags(&cl.fn[2], 0);
	EXPECT(get_is(&cl, "k", "new", &res));
	EXPECT(strstr(res.msg, "group 3 repaired") != NULL);
	EXPECT_EQ_INT(res.g[2].repair, 1);
	EXPECT(pohm_time_cmp(&res.ts, &t1) > 0);	/* a fresh stamp, never an old one */
	EXPECT_EQ_INT(pohm_io_lookup(cl.c, "k", 1, POHM_LOOKUP_ALL, &res), 0);
	EXPECT_EQ_INT(res.g[2].status, 0);
	EXPECT(!pohm_time_cmp(&res.g[2].ts, &res.g[0].ts));
	EXPECT(!pohm_time_cmp(&res.g[1].ts, &res.g[0].ts));
	stop3(&cl);
}

TEST(stale_group_without_repair_is_reported)
{
	struct cluster cl;
	struct pohm_io_result res;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "old", &res), 0);
	fn_set_flags(&cl.fn[0], FN_ENOTSUP);
	EXPECT_EQ_INT(put(&cl, "k", "new", &res), 0);
	fn_set_flags(&cl.fn[0], 0);
	EXPECT(get_is(&cl, "k", "new", &res));
	/* Group 1 may not have been waited for; when it answered, it is named. */
	if (res.g[0].status == 0)
		EXPECT(strstr(res.msg, "group 1 holds another version") != NULL);
	EXPECT(res.chosen != 0);
	stop3(&cl);
}

TEST(corruption_in_transit_fails_over)
{
	struct cluster cl;
	struct pohm_io_result res;
	int i;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "payload", &res), 0);
	/* The clean copy answers last, so the corrupt ones are tried first. */
	for (i = 0; i < 3; i++)
		fn_set_flags(&cl.fn[i], i == 2 ? FN_SLOW_LOOKUP : FN_CORRUPT_READ);
	EXPECT(get_is(&cl, "k", "payload", &res));
	EXPECT_EQ_INT(res.chosen, 2);
	EXPECT(strstr(res.msg, "checksum mismatch") != NULL);
	fn_set_flags(&cl.fn[2], FN_CORRUPT_READ | FN_SLOW_LOOKUP);
	EXPECT(!get_is(&cl, "k", "payload", &res));
	stop3(&cl);
}

TEST(corruption_on_disk_fails_over)
{
	struct cluster cl;
	struct pohm_io_result res;
	char buf[8];
	size_t got;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "payload", &res), 0);
	/* Reads of group 1 and 2 fail with -84 after an answered lookup. */
	fn_set_flags(&cl.fn[0], FN_EILSEQ);
	EXPECT_EQ_INT(pohm_io_read(cl.c, "k", 1, 0, buf, sizeof(buf), &got, &res), 0);
	EXPECT_EQ_INT(got, 7);
	EXPECT(res.chosen != 0);
	stop3(&cl);
}

TEST(noreadcsum_skips_checksum)
{
	struct cluster cl;
	struct pohm_io_result res;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "payload", &res), 0);
	cl.cfg.noreadcsum = 1;
	fn_set_flags(&cl.fn[0], FN_CORRUPT_READ); fn_set_flags(&cl.fn[1], FN_CORRUPT_READ); fn_set_flags(&cl.fn[2], FN_CORRUPT_READ);
	/* Corrupt bytes go unnoticed without checksums: that is what the option trades. */
	EXPECT(!get_is(&cl, "k", "payload", &res));
	EXPECT_EQ_INT(res.notes, 0);
	stop3(&cl);
}

TEST(cas_timestamp_and_data)
{
	struct cluster cl;
	struct pohm_io_result res;
	struct pohm_write_opts o;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "v1", &res), 0);
	memset(&o, 0, sizeof(o));
	o.flags = POHM_W_CAS_DATA | POHM_W_MAJORITY;
	pohm_sha512("not-v1", 6, o.parent);
	EXPECT_EQ_INT(pohm_io_write(cl.c, "k", 1, "v2", 2, &o, &res), -EBADFD);
	EXPECT(strstr(res.msg, "compare-and-swap refused") != NULL);
	pohm_sha512("v1", 2, o.parent);
	EXPECT_EQ_INT(pohm_io_write(cl.c, "k", 1, "v2", 2, &o, &res), 0);
	EXPECT(get_is(&cl, "k", "v2", &res));
	stop3(&cl);
}

TEST(enotsup_refreshes_route)
{
	struct cluster cl;
	struct pohm_io_result res;
	int before;

	start3(&cl, NULL, 0);
	EXPECT_EQ_INT(put(&cl, "k", "v1", &res), 0);
	before = fn_count(&cl.fn[1], POHM_CMD_REVERSE_LOOKUP);
	fn_set_flags(&cl.fn[1], FN_ENOTSUP);
	EXPECT_EQ_INT(put(&cl, "k", "v2", &res), 0);
	EXPECT_EQ_INT(res.g[1].status, -EOPNOTSUPP);
	EXPECT(fn_count(&cl.fn[1], POHM_CMD_REVERSE_LOOKUP) > before);
	stop3(&cl);
}

TEST(no_node_reachable)
{
	struct pohm_config cfg;
	struct pohm_client *c;
	struct pohm_io_result res;
	struct fake_node fn;
	char s[64], err[256];

	EXPECT_EQ_INT(fn_start(&fn, 1, 0), 0);
	snprintf(s, sizeof(s), "127.0.0.1:%u", fn.port);
	fn_stop(&fn);
	pohm_config_defaults(&cfg);
	pohm_config_set(&cfg, "server", s, POHM_CFG_CALLER, NULL, 0);
	pohm_config_set(&cfg, "groups", "1", POHM_CFG_CALLER, NULL, 0);
	EXPECT_EQ_INT(pohm_client_open(&c, &cfg, err, sizeof(err)), 0);
	EXPECT(pohm_io_write(c, "k", 1, "v", 1, NULL, &res) < 0);
	EXPECT(strstr(res.msg, "no node reachable") && strstr(res.msg, "Connection refused"));
	pohm_client_close(c);
	pohm_config_free(&cfg);
}
