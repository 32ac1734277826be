/*
 * nsmap.h — a file's chunk map, inline or in map objects (DESIGN.md §3),
 * internal to the namespace module (nsdata.c, nsmap.c).
 *
 * A map of at most POHM_MAP_INLINE_MAX chunks lives in the inode.  A larger
 * one lives in immutable map objects m:<ino>:<k>:<gen> of POHM_MAP_SPAN
 * entries each, which the inode names by generation and checksum: a commit
 * writes new chunk generations and new map objects for the ranges it
 * changed, then CASes the inode (the commit point); the others keep their
 * objects.  See nsobj.h for what refers to what.
 */
#ifndef POHM_CORE_NSMAP_H
#define POHM_CORE_NSMAP_H

#include "ns_int.h"

/* A handle's cache of map objects read or written (thread-safe); NULL = none. */
struct ns_map_cache *ns_map_cache_new(void);
void ns_map_cache_free(struct ns_map_cache *c);
/* In a fork child: the cache's lock as new (another thread may have held it). */
void ns_map_cache_atfork_child(struct ns_map_cache *c);

/* Reads entries of one committed inode's map, one map object at a time. */
struct ns_map_cursor {
	const struct pohm_inode *in;
	uint64_t k;			/* map object held in m */
	int have;			/* m holds object k */
	struct pohm_map m;
};

void ns_map_cursor_init(struct ns_map_cursor *c, const struct pohm_inode *in);
void ns_map_cursor_release(struct ns_map_cursor *c);
/* The committed entry of chunk i (gen 0: a hole): 0, or -EIO for a missing/bad map object. */
int ns_map_entry(struct pohm_ns *ns, struct ns_map_cursor *c, uint64_t i,
		 struct pohm_chunkref *out);

/*
 * Put the new chunks set[0..n) (sorted by index; for equal indexes the
 * later one wins) into in's map for a file of size bytes, inside an inode
 * CAS: writes the map objects that change (new generations) and edits *in;
 * the caller's CAS of *in commits them.  0 or -errno (nothing referenced).
 */
int ns_map_apply(struct pohm_ns *ns, struct pohm_inode *in, uint64_t size,
		 const struct pohm_chunk_set *set, size_t n);

#endif
