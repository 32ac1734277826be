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

int pohm_ns_inline_ok(const struct pohm_ns *ns, uint64_t size)
{
	return !ns->no_inline && size && size <= POHM_INLINE_MAX;
}
