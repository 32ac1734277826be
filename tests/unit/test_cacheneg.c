/*
 * test_cacheneg.c — negative lookups (issue 23, decision 0047): a name
 * missing locally in a directory this process holds complete (listed, or
 * made by it, within attr_timeout) is absent with no store call; after
 * attr_timeout the store is asked again; whatever may leave a stored name
 * without a local file (a create's failed undo, a rename from another
 * directory) makes the directory incomplete.  The store calls are counted
 * (every read kind) through a wrapper over cache_hosts.h's store.
 */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "cache_hosts.h"

static unsigned neg_reads;	/* get and read calls since the last neg_take */

static int neg_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	neg_reads++;
	return ch_kv.ops->get(ch_kv.ctx, key, out);
}

static int neg_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	neg_reads++;
	return ch_kv.ops->read(ch_kv.ctx, key, off, buf, len);
}

static int neg_put(void *ctx, const char *key, const void *data, size_t len, const uint8_t *expect)
{
	return ch_kv.ops->put(ch_kv.ctx, key, data, len, expect);
}

static int neg_del(void *ctx, const char *key)
{
	return ch_kv.ops->del(ch_kv.ctx, key);
}

static int neg_scan(void *ctx, const char *prefix,
		    int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	return ch_kv.ops->scan(ch_kv.ctx, prefix, fn, arg);
}

static const struct pohm_kv_ops neg_ops = {
	.get = neg_get, .read = neg_read, .put = neg_put, .del = neg_del, .scan = neg_scan,
};
static struct pohm_kv neg_kv = { &neg_ops, NULL };

#define NEG_TIMEOUT_NS 1000000000ULL	/* attr_timeout of the counted hosts */

/* Host name's cache over the counted store, attr_timeout NEG_TIMEOUT_NS. */
static struct pohm_cache *neg_host(const char *name)
{
	struct pohm_cache_opts o = { 0 };
	struct pohm_cache *c = NULL;
	char prefix[512], cdir[512], err[512];
	int r;

	(void)ch_host;	/* cache_hosts.h's hosts check every call: not these */
	snprintf(prefix, sizeof(prefix), "%s/%s/prefix", ch_root, name);
	snprintf(cdir, sizeof(cdir), "%s/%s/state", ch_root, name);
	o.prefix = prefix;
	o.cache_dir = cdir;
	o.fsid = "t";
	o.host_id = name;
	o.kv = &neg_kv;
	o.chunk_shift = 12;
	o.attr_timeout_ns = NEG_TIMEOUT_NS;
	r = pohm_cache_open(&c, &o, err, sizeof(err));
	if (r)
		printf("# open %s: %d %s\n", name, r, err);
	return c;
}

static unsigned neg_take(void)
{
	unsigned n = neg_reads;

	neg_reads = 0;
	return n;
}

static void neg_sleep_past_timeout(void)
{
	struct timespec ts = { 1, 200000000 };	/* attr_timeout + 0.2 s */

	nanosleep(&ts, NULL);
}

static int exists(const char *h, const char *rel)
{
	struct stat st;

	return !lstat(ch_path(h, rel), &st);
}

TEST(a_missing_name_in_a_directory_made_here_costs_no_store_call)
{
	struct pohm_cache *a;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	neg_take();
	/* The real call reports ENOENT: materialize leaves it to it (0). */
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/x", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/y", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	EXPECT(!exists("a", "d/x"));
	/* Expired: the store is asked again. */
	neg_sleep_past_timeout();
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/x", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	pohm_cache_close(a);
}

TEST(a_listed_directory_answers_within_attr_timeout_then_sees_another_hosts_create)
{
	struct pohm_cache *a, *b;

	ch_setup();
	a = neg_host("a");
	b = neg_host("b");
	EXPECT(a && b);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "d/f", "data", 4), 0);
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d", POHM_MAT_LIST), 0);
	EXPECT(exists("b", "d/f"));
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d/new", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	/* a creates it: b may not know within attr_timeout, must after it. */
	EXPECT_EQ_INT(ch_write(a, "a", "d/new", "x", 1), 0);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d/new", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	EXPECT(!exists("b", "d/new"));
	neg_sleep_past_timeout();
	EXPECT_EQ_INT(pohm_cache_materialize(b, "d/new", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	EXPECT(exists("b", "d/new"));
	pohm_cache_close(a);
	pohm_cache_close(b);
}

TEST(a_create_whose_undo_failed_leaves_the_directory_incomplete)
{
	struct pohm_cache *a;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	/* The insert is made, the local open "fails", and so does the undo. */
	EXPECT_EQ_INT(pohm_cache_create(a, "d/y", 0644, 1), 0);
	pohm_kvmem_fail_after(&ch_mem, 0);
	pohm_cache_create_undo(a, "d/y");
	pohm_kvmem_fail_after(&ch_mem, -1);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/y", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	EXPECT(exists("a", "d/y"));	/* the stored name, made here */
	pohm_cache_close(a);
}

TEST(a_rename_from_another_directory_leaves_the_target_incomplete)
{
	struct pohm_cache *a;

	ch_setup();
	a = neg_host("a");
	EXPECT(a != NULL);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "d", 0755), 0);
	EXPECT_EQ_INT(pohm_cache_mkdir(a, "e", 0755), 0);
	EXPECT_EQ_INT(ch_write(a, "a", "e/f", "data", 4), 0);
	/* A rename within a directory keeps it complete. */
	EXPECT_EQ_INT(pohm_cache_rename(a, "e/f", "e/g", 0), 0);
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "e/missing", POHM_MAT_NOFOLLOW), 0);
	EXPECT_EQ_INT(neg_take(), 0);
	EXPECT_EQ_INT(pohm_cache_rename(a, "e/g", "d/g", 0), 0);
	EXPECT(exists("a", "d/g"));
	neg_take();
	EXPECT_EQ_INT(pohm_cache_materialize(a, "d/missing", POHM_MAT_NOFOLLOW), 0);
	EXPECT(neg_take() >= 1);
	pohm_cache_close(a);
}
