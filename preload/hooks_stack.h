/*
 * hooks_stack.h — the storage hooks of hooks_cache.c under their own
 * names (pohm_hk_*, same contracts as hooks.h's pohm_hook_*).  The
 * pohm_hook_* that preload/ calls are in hooks_stack.c: each runs its
 * pohm_hk_* on the library's stack (stack.c, issue 19 item 10).
 */
#ifndef POHM_PRELOAD_HOOKS_STACK_H
#define POHM_PRELOAD_HOOKS_STACK_H

#include "hooks.h"

int pohm_hk_open(const struct pohm_path *p, int flags, mode_t mode, struct pohm_fd_info *fi, const struct pohm_real_call *real);
int pohm_hk_mktemp(const struct pohm_path *p, int flags, struct pohm_fd_info *fi, const struct pohm_real_call *real);
int pohm_hk_stat(const struct pohm_path *p, int flags, struct stat *st, const struct pohm_real_call *real);
int pohm_hk_statx(const struct pohm_path *p, int flags, unsigned mask, struct statx *stx, const struct pohm_real_call *real);
void pohm_hk_stat_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi, struct stat *st);
int pohm_hk_ns(enum pohm_ns_op op, const struct pohm_path *a, const struct pohm_path *b, const struct pohm_ns_arg *arg, const struct pohm_real_call *real);
int pohm_hk_mount_dev(uint64_t *dev);
int pohm_hk_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd, const struct pohm_fd_info *fi, int flags, const struct pohm_real_call *real);
int pohm_hk_lookup(enum pohm_proc_lookup why, const struct pohm_path *p, int flags);
int pohm_hk_readdir(DIR *dir, int fd, struct dirent64 *ent);
int pohm_hk_close(int fd, const struct pohm_fd_info *fi);
int pohm_hk_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi);
int pohm_hk_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi, void *addr, size_t len);
void pohm_hk_fd_inherited(int fd, struct pohm_fd_info *fi);
void pohm_hk_exit(void);
/* A path that could not be made whole (POHM_PATH_TRUNC and longer than
 * POHM_REL_CAP, or no memory): err, POHM_PASS in passthrough tests, or the
 * mount's error. */
int pohm_hk_too_long(int err);

#endif
