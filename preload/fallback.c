/*
 * fallback.c — raw system calls for the few wrappers that can be reached
 * while the real table is still being resolved (dlsym and the allocator's
 * own initialisation may open files).  Used by no other path.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

int pohm_fallback_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

int pohm_fallback_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
}
