/*
 * hooks_pass.c — the default hooks: every one "not handled" (POHM_PASS, or
 * the result unchanged; a one-call hook makes the wrapper's real call).
 *
 * Each is a weak definition: a strong definition of the same name anywhere
 * in the library replaces it at link time, hook by hook.  The library
 * always links preload/hooks_cache.c, which replaces every one of them but
 * pohm_hook_statfs_fix; the others here are the fallback of a build
 * without it.  The contracts are in hooks.h.
 */
#include "shim.h"

#define POHM_WEAK __attribute__((weak))

POHM_WEAK int pohm_hook_open(const struct pohm_path *p, int flags, mode_t mode, int *fd_out)
{
	return POHM_PASS;
}

POHM_WEAK int pohm_hook_open_done(const struct pohm_path *p, int flags, int fd,
				  struct pohm_fd_info *fi)
{
	return fd;
}

POHM_WEAK int pohm_hook_stat(const struct pohm_path *p, int flags, struct stat *st,
			     const struct pohm_real_call *real)
{
	return real->call(real->arg);
}

POHM_WEAK int pohm_hook_statx(const struct pohm_path *p, int flags, unsigned mask,
			      struct statx *stx, const struct pohm_real_call *real)
{
	return real->call(real->arg);
}

POHM_WEAK void pohm_hook_stat_fix(const struct pohm_path *p, int fd, const struct pohm_fd_info *fi,
				  struct stat *st)
{
}

POHM_WEAK int pohm_hook_mount_dev(uint64_t *dev)
{
	return POHM_PASS;
}

POHM_WEAK void pohm_hook_statfs_fix(const struct pohm_path *p, int fd, struct statfs *sf,
				    struct statvfs *sv)
{
}

POHM_WEAK int pohm_hook_ns(enum pohm_ns_op op, const struct pohm_path *a,
			   const struct pohm_path *b, const struct pohm_ns_arg *arg,
			   const struct pohm_real_call *real)
{
	return real->call(real->arg);
}

POHM_WEAK int pohm_hook_attr(enum pohm_attr_op op, const struct pohm_path *p, int fd,
			     const struct pohm_fd_info *fi, int flags,
			     const struct pohm_real_call *real)
{
	return real->call(real->arg);
}

POHM_WEAK int pohm_hook_lookup(enum pohm_lookup why, const struct pohm_path *p, int flags)
{
	return POHM_PASS;
}

POHM_WEAK int pohm_hook_readdir(DIR *dir, int fd, struct dirent64 *ent)
{
	return 0;
}

POHM_WEAK int pohm_hook_close(int fd, const struct pohm_fd_info *fi)
{
	return 0;
}

POHM_WEAK int pohm_hook_sync(enum pohm_sync_op op, int fd, const struct pohm_fd_info *fi)
{
	return 0;
}

POHM_WEAK int pohm_hook_fd_event(enum pohm_fd_event ev, int fd, const struct pohm_fd_info *fi,
				 void *addr, size_t len)
{
	return 0;
}

POHM_WEAK void pohm_hook_fd_inherited(int fd, struct pohm_fd_info *fi)
{
}

POHM_WEAK void pohm_hook_fork(enum pohm_fork_phase phase)
{
}

POHM_WEAK size_t pohm_hook_exec_env(char *buf, size_t size, int replacing)
{
	return 0;
}

POHM_WEAK void pohm_hook_exit(void)
{
}
