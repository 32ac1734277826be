/*
 * ns_http.h — http_compat path copies (DESIGN.md §3), internal to the
 * namespace module.
 *
 * With http_compat set, the whole content of a regular file is also stored
 * under the key "/" + its path relative to the fsid root ("/dir/file"), in
 * the fsid namespace, as one plain WRITE, so that an HTTP front end that
 * keys objects by path (as the 2012 client did, sha512 of the path) can
 * serve it.  The copy is written after the commit point and is never read
 * by core/ns: the inode and its chunks stay the truth.  Internal keys never
 * start with '/', so a copy cannot overwrite one.
 *
 * Which path: a file keeps its copy under one name, the one recorded in its
 * inode (pname, in the directory hdr.parent): the name it had at its first
 * commit, or was last renamed to.  Other hard links get no copy; when that
 * name is removed the copy goes, and moves to another name of the file in
 * the same directory if there is one.  Empty files (a zero-size WRITE
 * cannot create a key) and files over POHM_HTTP_MAX bytes have no copy.
 *
 * Every function here is a no-op unless the handle was opened with
 * http_compat; failures to write a copy are logged, never returned.
 */
#ifndef POHM_CORE_NS_HTTP_H
#define POHM_CORE_NS_HTTP_H

#include "ns_int.h"

/*
 * Larger files get no path copy: the client sends up to 32 MiB as one
 * WRITE packet (io.h POHM_IO_PACKET_MAX) and anything larger as PREPARE /
 * WRITE / COMMIT, which hides the key while it runs (PROTOCOL.md §10).
 */
#define POHM_HTTP_MAX	(32ULL << 20)
#define POHM_HTTP_PATH	POHM_NS_HTTP_PATH	/* longest path key, with NUL (ns.h) */

/* Inside an inode CAS: record (dir, name) as the name the copy follows.
 * 0 or -ENOMEM.  (nsdata.c: its commit is the caller.) */
int ns_http_hint_set(struct pohm_inode *in, uint64_t dir, const char *name);

/*
 * The hooks.  They are called from below (nsdata.c's commit, nsdir.c's
 * intent resolution, nsops.c's unlink and rename, nsattr.c's setattr), but
 * ns_http.c is a layer above the namespace: it finds a file's path with
 * pohm_ns_lookup and pohm_ns_readdir and copies its data with pohm_ns_read,
 * and a lookup may resolve an intent, which renames the copy again.  So the
 * upcall is real, and it is made explicit: the hooks are reached through
 * ns->http (ns_http_ops, set by pohm_ns_open), not by name (issue 20,
 * session 13; tests/circles.sh).  The wrappers below keep the callers'
 * words.
 */
struct ns_http_ops {
	int (*hint_find)(struct pohm_ns *ns, uint64_t ino, uint64_t *dir, char *name);
	void (*commit)(struct pohm_ns *ns, const struct pohm_inode *in);
	void (*setattr)(struct pohm_ns *ns, uint64_t ino, unsigned mask);
	void (*unlink)(struct pohm_ns *ns, uint64_t dir, const char *name, uint8_t type,
		       uint64_t ino);
	void (*rename)(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t ddir,
		       const char *dname, uint64_t ino, uint8_t type, uint64_t other,
		       uint8_t other_type);
};
/* ns_http.c's hooks (read-only). */
extern const struct ns_http_ops ns_http_ops;

/*
 * The name the copy of regular file ino follows, checked against its
 * directory (found by a scan of hdr.parent when the recorded one is stale):
 * 0 and *dir, name (POHM_NAME_MAX + 1 bytes); -ENOENT when there is none or
 * http_compat is off; -errno.
 */
static inline int ns_http_hint_find(struct pohm_ns *ns, uint64_t ino, uint64_t *dir, char *name)
{
	return ns->http->hint_find(ns, ino, dir, name);
}
/* After a commit of in: write its copy at its path (or remove one it must not have). */
static inline void ns_http_commit(struct pohm_ns *ns, const struct pohm_inode *in)
{
	ns->http->commit(ns, in);
}
/* After a setattr of ino with mask (POHM_SET_*): a size change rewrites the copy. */
static inline void ns_http_setattr(struct pohm_ns *ns, uint64_t ino, unsigned mask)
{
	ns->http->setattr(ns, ino, mask);
}
/* After dir/name (of type DT_*, inode ino) was unlinked: remove its copy. */
static inline void ns_http_unlink(struct pohm_ns *ns, uint64_t dir, const char *name,
				  uint8_t type, uint64_t ino)
{
	ns->http->unlink(ns, dir, name, type, ino);
}
/*
 * After sdir/sname (ino, type) was renamed to ddir/dname: move the copies
 * (a directory's whole subtree).  other/other_type: the inode that went the
 * other way under RENAME_EXCHANGE, else 0.
 */
static inline void ns_http_rename(struct pohm_ns *ns, uint64_t sdir, const char *sname,
				  uint64_t ddir, const char *dname, uint64_t ino, uint8_t type,
				  uint64_t other, uint8_t other_type)
{
	ns->http->rename(ns, sdir, sname, ddir, dname, ino, type, other, other_type);
}

#endif
