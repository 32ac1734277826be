/*
 * kvio.c — the namespace's key-value store (kv.h) on the replicated client
 * (io.h): every key in the fsid namespace on every configured group.
 *
 *   get   pohm_io_get: the committed version (with read repair if enabled);
 *         its checksum is computed here over the bytes received (io already
 *         verified them against each group's READ checksum).
 *   put   pohm_io_write; a CAS put is a data compare-and-swap that needs a
 *         majority of groups (DESIGN.md §3: CAS-arbitrated objects), and
 *         "absent" is a CAS against pohm_kv_absent, a parent no data hashes
 *         to, which Elliptics lets through only where the key is missing.
 *   del   pohm_io_del (core/ns deletes only objects nobody CASes).
 *
 * A CAS put that lands on fewer groups than it needs has lost, but the
 * groups that took it now hold an uncommitted version.  It is rolled back
 * at once: the content it replaced (remembered from this thread's last get
 * of the key; core/ns always reads before it CASes) is written again with
 * a data CAS against our version, so only the groups that hold ours change
 * (DESIGN.md §3: the writer rolls a minority version back by re-committing
 * the committed content under a fresh timestamp, never an older one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "kv.h"
#include "nsobj.h"
#include "log.h"
#include "sha512.h"

/*
 * This thread's last value read, kept for the rollback above.  Thread-local,
 * so no lock; bounded to small objects (inodes and buckets).
 */
#define LAST_MAX (256u << 10)
static __thread struct {
	char key[POHM_KEY_MAX];
	uint8_t csum[POHM_KV_CSUM];
	uint8_t *data;
	size_t len, cap;
} last;

static void remember(const char *key, const struct pohm_kv_val *v)
{
	if (v->len > LAST_MAX || strlen(key) >= sizeof(last.key))
		return;
	if (v->len > last.cap) {
		uint8_t *p = realloc(last.data, v->len);

		if (!p)
			return;
		last.data = p;
		last.cap = v->len;
	}
	memcpy(last.data, v->data, v->len);
	last.len = v->len;
	memcpy(last.csum, v->csum, POHM_KV_CSUM);
	strcpy(last.key, key);
}

/* Put back what our minority write replaced, where it is still ours. */
static void rollback(struct pohm_client *c, const char *key, const void *ours, size_t len,
		     const uint8_t *expect)
{
	struct pohm_write_opts o;
	struct pohm_io_result res;

	if (!last.data || strcmp(last.key, key) || memcmp(last.csum, expect, POHM_KV_CSUM))
		return;		/* nothing known to put back: read repair settles it */
	memset(&o, 0, sizeof(o));
	o.flags = POHM_W_CAS_DATA;
	pohm_sha512(ours, len, o.parent);
	pohm_io_write(c, key, strlen(key), last.data, last.len, &o, &res);
	pohm_debug("rolled back a minority write of %s on %u group(s)", key, res.committed);
}

static int kvio_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	struct pohm_io_result res;
	int r, tries = 0;

	/* -ESTALE: a newer version was committed between the lookup and the read. */
	do
		r = pohm_io_get(ctx, key, strlen(key), &out->data, &out->len, &res);
	while (r == -ESTALE && ++tries < 20);
	if (r == -ENOENT)
		return r;
	if (r) {
		pohm_debug("%s", res.msg);
		return r == -ETIMEDOUT ? -EIO : r;
	}
	pohm_sha512(out->data, out->len, out->csum);
	remember(key, out);
	return 0;
}

static int kvio_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	struct pohm_io_result res;
	size_t got = 0;
	int r = pohm_io_read(ctx, key, strlen(key), off, buf, len, &got, &res);

	if (r == -E2BIG)
		return 0;	/* offset at or past the end */
	if (r)
		return r;
	return (int)got;
}

static int kvio_put(void *ctx, const char *key, const void *data, size_t len,
		    const uint8_t *expect)
{
	struct pohm_write_opts o;
	struct pohm_io_result res;
	int r;

	memset(&o, 0, sizeof(o));
	if (expect) {
		o.flags = POHM_W_CAS_DATA | POHM_W_MAJORITY;
		memcpy(o.parent, expect, sizeof(o.parent));
	}
	r = pohm_io_write(ctx, key, strlen(key), data, len, &o, &res);
	if (r == -EBADFD) {
		pohm_debug("%s", res.msg);
		if (res.committed && expect != POHM_KV_ABSENT)
			rollback(ctx, key, data, len, expect);
		return expect == POHM_KV_ABSENT ? -EEXIST : -EAGAIN;
	}
	if (r)
		pohm_info("%s", res.msg);
	return r;
}

static int kvio_del(void *ctx, const char *key)
{
	struct pohm_io_result res;

	return pohm_io_del(ctx, key, strlen(key), &res);
}

static const struct pohm_kv_ops kvio_ops = {
	.get = kvio_get, .read = kvio_read, .put = kvio_put, .del = kvio_del, .scan = NULL,
};

void pohm_kvio_init(struct pohm_kv *kv, struct pohm_client *client)
{
	kv->ops = &kvio_ops;
	kv->ctx = client;
}
