/*
 * nschunk.c — writing one chunk object (a fresh generation, never
 * overwritten) and whether a file's data goes inline in its inode.  Below
 * nsmap.c (map objects inline their small maps' chunks) and nsdata.c.
 * (Moved out of nsdata.c in session 13, issue 20.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ns_int.h"
#include "wire.h"

int pohm_ns_put_chunk(struct pohm_ns *ns, uint64_t ino, uint64_t index, const void *data,
		      size_t len, uint64_t *gen)
{
	struct pohm_buf b = POHM_BUF_INIT;
	char key[POHM_KEY_MAX];
	int r;

	if (!len)
		return -EINVAL;
	do
		*gen = ns_random(ns);
	while (!*gen || *gen == POHM_GEN_INLINE);	/* 0 is a hole, the other inline data */
	pohm_key_chunk(key, ino, index, *gen);
	r = pohm_chunk_encode(&b, ns->fsid, ino, index, *gen, data, len);
	if (!r)
		r = ns->kv.ops->put(ns->kv.ctx, key, b.p, b.len, NULL);
	pohm_buf_free(&b);
	return r;
}

int pohm_ns_put_chunks(struct pohm_ns *ns, uint64_t ino, size_t n, const uint64_t *index,
		       const void *const *data, const size_t *len, uint64_t *gen)
{
	struct pohm_buf *b = NULL;
	char (*keys)[POHM_KEY_MAX] = NULL;
	const char **kp = NULL;
	const void **dp = NULL;
	size_t *lp = NULL, i;
	int *st = NULL, r = 0;

	if (n < 2 || !ns->kv.ops->write_n) {
		for (i = 0; !r && i < n; i++)
			r = pohm_ns_put_chunk(ns, ino, index[i], data[i], len[i], &gen[i]);
		return r;
	}
	b = calloc(n, sizeof(*b));
	keys = calloc(n, sizeof(*keys));
	kp = calloc(n, sizeof(*kp));
	dp = calloc(n, sizeof(*dp));
	lp = calloc(n, sizeof(*lp));
	st = calloc(n, sizeof(*st));
	if (!b || !keys || !kp || !dp || !lp || !st) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; !r && i < n; i++) {
		if (!len[i]) {
			r = -EINVAL;
			break;
		}
		do
			gen[i] = ns_random(ns);
		while (!gen[i] || gen[i] == POHM_GEN_INLINE);
		pohm_key_chunk(keys[i], ino, index[i], gen[i]);
		r = pohm_chunk_encode(&b[i], ns->fsid, ino, index[i], gen[i], data[i], len[i]);
		kp[i] = keys[i];
		dp[i] = b[i].p;
		lp[i] = b[i].len;
	}
	if (!r)
		r = ns->kv.ops->write_n(ns->kv.ctx, n, kp, dp, lp, st);
	for (i = 0; !r && i < n; i++)
		r = st[i];
out:
	for (i = 0; b && i < n; i++)
		pohm_buf_free(&b[i]);
	free(b);
	free(keys);
	free(kp);
	free(dp);
	free(lp);
	free(st);
	return r;
}

int pohm_ns_inline_ok(const struct pohm_ns *ns, uint64_t size)
{
	return !ns->no_inline && size && size <= POHM_INLINE_MAX;
}
