/*
 * store.h — layer core/store, the replicated key-value store: its whole
 * interface.
 *
 * What it does: key operations on every configured group at once with the
 * version and replica rules of DESIGN.md §3 (io.h: write, lookup, read,
 * get with read repair, the replicated CAS); the kv seam the namespace is
 * written against, with its two backends, kvio over io and the in-memory
 * kvmem of the tests (kv.h); the encoded objects of the storage layout
 * (nsobj.h); listing and reading every object of the storage for fsck
 * (iter.h); offline mode when no group answers (io.h).
 * Main types: struct pohm_client (opaque here), struct pohm_kv and
 * pohm_kv_ops, struct pohm_io_result, struct pohm_inode, pohm_bucket,
 * pohm_dentry, struct pohm_iter_obj.
 * Relies on: core/net (transactions, routes), core/config, core/wire,
 * core/sys.
 * Rules for callers: every function returns >= 0 or -errno and never sets
 * errno; a kv put with a checksum is a CAS (-EAGAIN when it lost, nothing
 * written); values are never empty; only immutable objects are deleted.
 * kvmem and iter are linked into the tools and tests, never into
 * libpohmelfs.so.
 *
 * Parts (include this header, not them, from outside core/store):
 * io.h, iter.h, kv.h, nsobj.h.  io_int.h is private to core/store.
 */
#ifndef POHM_CORE_STORE_H
#define POHM_CORE_STORE_H

#include "io.h"
#include "iter.h"
#include "kv.h"
#include "nsobj.h"

#endif
