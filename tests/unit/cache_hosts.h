/*
 * cache_hosts.h — hosts for cache tests: each a cache (core/cache) on its
 * own prefix and cache_dir under one scratch directory, all over one
 * in-memory store (kvmem) seen through a wrapper that counts the writes by
 * key kind ("i:" inodes, "b:" buckets, "d:" chunks ...).  One scratch
 * directory per test program, removed at exit whichever tests ran.
 * Include once, after harness.h.
 */
#ifndef POHM_TESTS_CACHE_HOSTS_H
#define POHM_TESTS_CACHE_HOSTS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "kv.h"

static struct pohm_kv ch_mem;		/* the store */
static struct pohm_kv ch_kv;		/* what the caches use: ch_mem, counted */
static unsigned ch_puts[128];		/* writes by the key's first byte */
static char ch_root[128];

/* A one-shot ordering hook: run just after the next read of a chunk ("d:"
 * key), whoever makes it (a fetch, between its look at the local copy and
 * its rename); cleared before it runs. */
static void (*ch_after_chunk_get)(void);
/* Hosts opened after this is set write no inline data (decision 0023): the
 * tests whose hooks need a chunk read (ch_after_chunk_get); ch_setup clears it. */
static int ch_no_inline;
/* Hosts opened after this is set have chunks of 1 << it (0: 12, 4 KiB); ch_setup clears it. */
static unsigned ch_chunk_shift;

/* A one-shot ordering hook: run just after the next read of the key
 * ch_after_get_key names, whoever makes it; cleared before it runs. */
static void (*ch_after_get)(void);
static char ch_after_get_key[64];

static int ch_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	int r = ch_mem.ops->get(ch_mem.ctx, key, out);

	if (ch_after_get && !strcmp(key, ch_after_get_key)) {
		void (*fn)(void) = ch_after_get;

		ch_after_get = NULL;
		fn();
	}

	if (ch_after_chunk_get && key[0] == 'd' && key[1] == ':') {
		void (*fn)(void) = ch_after_chunk_get;

		ch_after_chunk_get = NULL;
		fn();
	}
	return r;
}

static int ch_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	return ch_mem.ops->read(ch_mem.ctx, key, off, buf, len);
}

/* A one-shot ordering hook: run just before the next compare-and-swap of
 * an inode ("i:" key, with an expectation), whoever makes it; cleared
 * before it runs, so the hook's own writes pass. */
static void (*ch_before_inode_cas)(void);

/* A one-shot ordering hook: run just before the next write of a key that
 * starts with ch_before_put_prefix, whoever makes it; cleared before it runs. */
static void (*ch_before_put)(void);
static char ch_before_put_prefix[64];

static int ch_put(void *ctx, const char *key, const void *data, size_t len, const uint8_t *expect)
{
	int r;

	if (ch_before_put && !strncmp(key, ch_before_put_prefix, strlen(ch_before_put_prefix))) {
		void (*fn)(void) = ch_before_put;

		ch_before_put = NULL;
		fn();
	}
	if (ch_before_inode_cas && key[0] == 'i' && key[1] == ':' && expect) {
		void (*fn)(void) = ch_before_inode_cas;

		ch_before_inode_cas = NULL;
		fn();
	}
	r = ch_mem.ops->put(ch_mem.ctx, key, data, len, expect);

	if (!r)
		ch_puts[(unsigned char)key[0] & 127]++;
	return r;
}

static int ch_del(void *ctx, const char *key)
{
	return ch_mem.ops->del(ch_mem.ctx, key);
}

static int ch_scan(void *ctx, const char *prefix,
		   int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	return ch_mem.ops->scan(ch_mem.ctx, prefix, fn, arg);
}

static const struct pohm_kv_ops ch_ops = {
	.get = ch_get, .read = ch_read, .put = ch_put, .del = ch_del, .scan = ch_scan,
};

/* A store over ch_kv that counts round trips: each get, read and get_n
 * call is one (ch_rt_take); writes, deletes and scans are not counted.
 * ch_counted has no get_n (the cache then reads inode by inode);
 * ch_counted_n has one, a loop of ch_kv gets counted as one call. */
static unsigned ch_rt;		/* counted calls since the last ch_rt_take */

static int ch_cnt_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	ch_rt++;
	return ch_kv.ops->get(ch_kv.ctx, key, out);
}

static int ch_cnt_get_n(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out,
			int *st)
{
	size_t i;

	ch_rt++;
	for (i = 0; i < n; i++)
		st[i] = ch_kv.ops->get(ch_kv.ctx, keys[i], &out[i]);
	return 0;
}

static int ch_cnt_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	ch_rt++;
	return ch_kv.ops->read(ch_kv.ctx, key, off, buf, len);
}

static int ch_cnt_put(void *ctx, const char *key, const void *data, size_t len,
		      const uint8_t *expect)
{
	return ch_kv.ops->put(ch_kv.ctx, key, data, len, expect);
}

static int ch_cnt_del(void *ctx, const char *key)
{
	return ch_kv.ops->del(ch_kv.ctx, key);
}

static int ch_cnt_scan(void *ctx, const char *prefix,
		       int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	return ch_kv.ops->scan(ch_kv.ctx, prefix, fn, arg);
}

static const struct pohm_kv_ops ch_counted_ops = {
	.get = ch_cnt_get, .read = ch_cnt_read, .put = ch_cnt_put, .del = ch_cnt_del,
	.scan = ch_cnt_scan,
};
static const struct pohm_kv_ops ch_counted_n_ops = {
	.get = ch_cnt_get, .read = ch_cnt_read, .put = ch_cnt_put, .del = ch_cnt_del,
	.scan = ch_cnt_scan, .get_n = ch_cnt_get_n,
};
static __attribute__((unused)) struct pohm_kv ch_counted = { &ch_counted_ops, NULL };
static __attribute__((unused)) struct pohm_kv ch_counted_n = { &ch_counted_n_ops, NULL };

/* Counted calls since the last call. */
static __attribute__((unused)) unsigned ch_rt_take(void)
{
	unsigned n = ch_rt;

	ch_rt = 0;
	return n;
}

static void ch_cleanup(void)
{
	char cmd[200];

	pohm_kvmem_free(&ch_mem);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ch_root);
	if (system(cmd))
		printf("# cleanup of %s failed\n", ch_root);
}

/* A new empty store and scratch directory for one test. */
static void ch_setup(void)
{
	char cmd[400];

	if (!ch_root[0]) {
		snprintf(ch_root, sizeof(ch_root), "/tmp/pohm-cache-hosts.%d", (int)getpid());
		atexit(ch_cleanup);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", ch_root, ch_root);
	if (system(cmd))
		printf("# setup failed\n");
	pohm_kvmem_free(&ch_mem);
	pohm_kvmem_new(&ch_mem);
	ch_kv.ops = &ch_ops;
	ch_kv.ctx = NULL;
	memset(ch_puts, 0, sizeof(ch_puts));
	ch_before_inode_cas = NULL;
	ch_after_chunk_get = NULL;
	ch_after_get = NULL;
	ch_before_put = NULL;
	ch_no_inline = 0;
	ch_chunk_shift = 0;
}

/* Host name's cache over store kv with attr_timeout_ns (4 KiB chunks). */
static struct pohm_cache *ch_host_over(const char *name, struct pohm_kv *kv,
				       uint64_t attr_timeout_ns)
{
	struct pohm_cache_opts o = { 0 };
	struct pohm_cache *c = NULL;
	char prefix[512], cdir[512], err[512];
	int r;

	snprintf(prefix, sizeof(prefix), "%s/%s/prefix", ch_root, name);
	snprintf(cdir, sizeof(cdir), "%s/%s/state", ch_root, name);
	o.prefix = prefix;
	o.cache_dir = cdir;
	o.fsid = "t";
	o.host_id = name;
	o.kv = kv;
	o.chunk_shift = ch_chunk_shift ? ch_chunk_shift : 12;
	o.attr_timeout_ns = attr_timeout_ns;
	o.no_inline = ch_no_inline;
	r = pohm_cache_open(&c, &o, err, sizeof(err));
	if (r)
		printf("# open %s: %d %s\n", name, r, err);
	return c;
}

/* Host name's cache (attr_timeout 0: every call checks the store; 4 KiB chunks). */
static __attribute__((unused)) struct pohm_cache *ch_host(const char *name)
{
	return ch_host_over(name, &ch_kv, 0);
}

/* The local path of rel on host h. */
static const char *ch_path(const char *h, const char *rel)
{
	static char buf[4][1024];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s/prefix/%s", ch_root, h, rel);
	return buf[i];
}

/* What the shim does for open(O_CREAT|O_WRONLY|O_TRUNC), write, close with
 * a push (sync_on_close): 0 or -errno. */
static __attribute__((unused)) int ch_write(struct pohm_cache *c, const char *h, const char *rel,
					    const void *data, size_t len)
{
	int fd, r;

	r = pohm_cache_create(c, rel, 0644, 0);
	if (r < 0)
		return r;
	fd = open(ch_path(h, rel), O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	pohm_cache_opened(c, rel, fd);
	if (len && write(fd, data, len) != (ssize_t)len)
		r = -EIO;
	else
		r = pohm_cache_push_fd(c, fd);
	close(fd);
	return r < 0 ? r : 0;
}

/* The whole local file p into buf (at most len bytes): bytes, or -errno. */
static __attribute__((unused)) ssize_t ch_read_all(const char *p, void *buf, size_t len)
{
	int fd = open(p, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	close(fd);
	return n < 0 ? -errno : n;
}

/* Writes since the last call, of keys starting with kind. */
static __attribute__((unused)) unsigned ch_puts_of(char kind)
{
	unsigned n = ch_puts[(unsigned char)kind & 127];

	ch_puts[(unsigned char)kind & 127] = 0;
	return n;
}

static __attribute__((unused)) void ch_puts_reset(void)
{
	memset(ch_puts, 0, sizeof(ch_puts));
}

/* The conflict copies from host `from` that host h (cache c) sees whose
 * contents are want: their number, or -1 if one holds anything else. */
static __attribute__((unused)) int ch_conflict_copies(struct pohm_cache *c, const char *h,
						       const char *from, const char *want)
{
	char rel[800], dir[256], buf[256];
	struct dirent *de;
	ssize_t n;
	DIR *d;
	int found = 0;

	snprintf(dir, sizeof(dir), ".pohmelfs-conflicts/%s", from);
	if (pohm_cache_materialize(c, dir, POHM_MAT_LIST))
		return 0;
	d = opendir(ch_path(h, dir));
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", dir, de->d_name);
		if (pohm_cache_materialize(c, rel, POHM_MAT_DATA) ||
		    (n = ch_read_all(ch_path(h, rel), buf, sizeof(buf) - 1)) < 0) {
			found = -1;
			break;
		}
		buf[n] = '\0';
		if (strcmp(buf, want)) {
			found = -1;
			break;
		}
		found++;
	}
	if (d)
		closedir(d);
	return found;
}

#endif
