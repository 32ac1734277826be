/*
 * proclookup.c — a read-only use of a name by a host process (access,
 * readlink, getxattr, chdir, opendir, realpath, exec, dlopen...): what
 * each needs materialized first (moved from preload/hooks_cache.c's
 * hook_lookup, issue 20), the user xattrs a stub must fetch, and
 * access(2) of a stub answered from its stored attributes.
 */
#include <errno.h>
#include <unistd.h>

#include "mount.h"

/* What each use needs of the name: its last component not followed, its
 * data (a file's), its entries (a directory's); 0: the name itself. */
static const unsigned lookup_mat[] = {
	[POHM_PL_ACCESS] = 0,		[POHM_PL_READLINK] = POHM_MAT_NOFOLLOW,
	[POHM_PL_XATTR_GET] = 0,	[POHM_PL_CHDIR] = 0,
	[POHM_PL_OPENDIR] = POHM_MAT_LIST,	[POHM_PL_REALPATH] = 0,
	[POHM_PL_STATFS] = 0,		[POHM_PL_EXEC] = POHM_MAT_DATA,
	[POHM_PL_DLOPEN] = POHM_MAT_DATA,	[POHM_PL_TEMPDIR] = 0,
	[POHM_PL_HANDLE] = 0,		[POHM_PL_WATCH] = 0,
	[POHM_PL_SPAWN_OPEN] = POHM_MAT_DATA,
};

int pohm_proc_lookup(struct pohm_cache *c, enum pohm_proc_lookup why, const char *rel,
		     int amode, unsigned flags)
{
	unsigned mf = why < sizeof(lookup_mat) / sizeof(lookup_mat[0]) ? lookup_mat[why] : 0;
	int r;

	if (why == POHM_PL_XATTR_GET && (flags & POHM_PLF_NOFOLLOW))
		mf = POHM_MAT_NOFOLLOW;
	r = pohm_cache_materialize(c, rel, mf);
	if (r >= 0 && why == POHM_PL_XATTR_GET && (flags & POHM_PLF_USER_XATTR))
		r = pohm_cache_xattr_ready(c, rel, mf);
	if (r >= 0 && why == POHM_PL_ACCESS) {
		/* A stub by its stored attributes (the one checker); 1: the real call. */
		r = pohm_cache_access(c, rel, amode, !!(flags & POHM_PLF_EFFECTIVE));
		r = r == 1 ? POHM_PROC_PASS : r;
	} else if (r >= 0) {
		r = POHM_PROC_PASS;
	}
	pohm_proc_count(why == POHM_PL_OPENDIR ? POHM_ST_READDIR : POHM_ST_LOOKUP, r);
	return r;
}
