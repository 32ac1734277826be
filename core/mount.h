/*
 * mount.h — everything one prefix needs, built from a configuration: the
 * client (core/io), the namespace store over it (core/kvio) and the cache
 * (core/cache).  The preload layer's heavy init, pohmelfsd and the
 * pohmelfs tool all start here.
 */
#ifndef POHM_CORE_MOUNT_H
#define POHM_CORE_MOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "kv.h"

struct pohm_mount {
	struct pohm_client *client;
	struct pohm_kv kv;
	struct pohm_cache *cache;
	char prefix[4096];
	char cache_dir[4096];		/* as opened (default resolved) */
	uint64_t sync_timeout_ns;	/* background push period */
	int sync_on_close;
};

/*
 * Open the prefix of cfg (prefix= must be set).  0, or -errno with a
 * one-line reason in err naming the key at fault.
 */
int pohm_mount_open(struct pohm_mount *m, const struct pohm_config *cfg, char *err, size_t errlen);
/* Close what pohm_mount_open opened. */
void pohm_mount_close(struct pohm_mount *m);
/* The cache_dir a configuration uses for its prefix (default resolved). */
int pohm_mount_cache_dir(const struct pohm_config *cfg, char *out, size_t len);

#endif
