/*
 * admin.h — layer core/admin, the administration tools' logic: its whole
 * interface.
 *
 * What it does: check and repair a namespace on the storage (fsck.h:
 * every copy of every object classified, then the namespace checked and
 * repaired through the paths a client takes), and whole-cache views and
 * maintenance for `pohmelfs status|stats|sync|cache` and pohmelfsd, from
 * the journal and the local files only (cachetool.h).
 * Main types: struct pohm_fsck_opts, pohm_fsck_result, pohm_fsck_issue;
 * struct pohm_ct, pohm_ct_summary, pohm_ct_clean, pohm_ct_limits.
 * Relies on: core/cache (the journal), core/ns, core/store (kv, io, iter),
 * core/sys; every layer below.
 * Rules for callers: the top of core/, linked into the tools and the unit
 * tests only, never into libpohmelfs.so (Makefile LIB_CORE_OBJ), so nothing
 * below may call it.  Functions return >= 0 or -errno, never touch errno.
 *
 * Parts (include this header, not them, from outside core/admin):
 * cachetool.h, fsck.h.  fsck_int.h is private to core/admin.
 */
#ifndef POHM_CORE_ADMIN_H
#define POHM_CORE_ADMIN_H

#include "cachetool.h"
#include "fsck.h"

#endif
