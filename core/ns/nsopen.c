/*
 * nsopen.c — the namespace handle: open (options, the root check now or
 * on first use), fork child, close.  The top of core/ns: it wires the
 * map cache (nsmap.c), the lazy root (nslazy.c) and the http_compat
 * hooks (ns_http.c).  (Moved out of ns.c in session 13, issue 20.)
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ns_http.h"
#include "ns_int.h"
#include "nsmap.h"
#include "sys.h"

/* ---------------------------------------------------------------- open/close */

int pohm_ns_open(struct pohm_ns **out, const struct pohm_kv *kv, const struct pohm_ns_opts *o)
{
	struct pohm_ns *ns = calloc(1, sizeof(*ns));
	int r;

	if (!ns)
		return -ENOMEM;
	ns->kv = *kv;
	snprintf(ns->fsid, sizeof(ns->fsid), "%s", o->fsid ? o->fsid : "pohmelfs");
	ns->bucket_max = o->bucket_max ? o->bucket_max : 256;
	ns->chunk_shift = o->chunk_shift ? o->chunk_shift : 20;
	if (ns->chunk_shift < 12 || ns->chunk_shift > 30)
		ns->chunk_shift = 20;
	ns->intent_timeout_ns = (o->intent_timeout_ms ? o->intent_timeout_ms : 10000) * 1000000ULL;
	/*
	 * 600 attempts span about 5 s (ns_backoff), longer than a CAS copy
	 * stays young (iocas.c cas_age_limit, at most 3 s): a lost write its
	 * dead writer left on a key's arbiter refuses every CAS until then,
	 * and the next read undoes it (RELIABILITY.md finding 12).  200
	 * spanned 1.3 s: a create right after such a death failed EBUSY.
	 */
	ns->max_retries = o->max_retries ? o->max_retries : 600;
	ns->http_compat = o->http_compat;
	ns->http = &ns_http_ops;	/* the hooks above the namespace (ns_http.h) */
	ns->no_inline = o->no_inline;
	ns->map_cache = ns_map_cache_new();	/* NULL: no cache, still correct */
	pthread_mutex_init(&ns->rng_lock, NULL);
	pthread_mutex_init(&ns->hint_lock, NULL);
	ns->rng_pid = 0;	/* seeded by the first ns_random */

	pthread_mutex_init(&ns->root_lock, NULL);
	ns->store = *kv;
	ns->root_uid = o->root_uid;
	ns->root_gid = o->root_gid;
	ns->root_mode = o->root_mode;
	ns->root_failed = o->root_failed;
	ns->root_failed_arg = o->root_failed_arg;
	ns->base_note = o->base_note;
	ns->base_load = o->base_load;
	ns->base_arg = o->base_arg;
	ns->base_max_ns = o->base_max_ns;
	if (o->lazy_root) {
		ns_lazy_kv(ns);
		if (ns->base_note)
			ns_base_kv(ns);
		*out = ns;
		return 0;
	}
	r = ns_root_check(ns);
	if (r) {
		pohm_ns_close(ns);
		return r;
	}
	ns->root_ready = 1;
	if (ns->base_note)
		ns_base_kv(ns);
	*out = ns;
	return 0;
}

void pohm_ns_atfork_child(struct pohm_ns *ns)
{
	/* Held by another thread of the parent, they would stay held here.
	 * Each guards a few words, never across a call: new locks over the
	 * words as they were is safe (the generator reseeds by its pid check). */
	pthread_mutex_init(&ns->rng_lock, NULL);
	pthread_mutex_init(&ns->hint_lock, NULL);
	pthread_mutex_init(&ns->root_lock, NULL);
	ns_map_cache_atfork_child(ns->map_cache);
}

void pohm_ns_close(struct pohm_ns *ns)
{
	if (!ns)
		return;
	/* A deferred finish's done names ns (decision 0073): told now (an
	 * unanswered one -EIO, left to the readers), never after the free. */
	if (ns->kv.ops && ns->kv.ops->settle) {
		ns->kv.ops->settle(ns->kv.ctx, UINT64_MAX);
		ns_finish_owed(ns);	/* the refused ones (finish_told) */
	}
	pthread_mutex_destroy(&ns->rng_lock);
	pthread_mutex_destroy(&ns->hint_lock);
	pthread_mutex_destroy(&ns->root_lock);
	ns_map_cache_free(ns->map_cache);
	free(ns);
}
