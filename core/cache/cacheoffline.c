/*
 * cacheoffline.c — what an attribute change may do while the store is
 * offline (cache.h pohm_cache_attr_offline).
 *
 * A regular file's mode, times, size and user.* xattrs travel with its
 * push, so offline they are changed locally and pushed when the storage
 * answers, as its data is.  A directory's or a symlink's attributes and any
 * owner or group are stored by pohm_cache_push_chattr right after the
 * change, and only then: offline that change would stay local for good
 * (and the stat overlay would hide it), so it is refused before the real
 * call, with EIO like every call that needs the storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "cache_int.h"
#include "stub.h"
#include "sys.h"

int pohm_cache_attr_offline(struct pohm_cache *c, const char *rel, int fd, unsigned flags,
			    int owner)
{
	struct stat st;
	int r;

	if (!cache_offline(c))
		return 0;
	if (owner)
		return -EIO;
	if (rel && *rel)
		r = pohm_sys_fstatat(c->pfd, rel, &st,
				     (flags & POHM_MAT_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0);
	else
		r = pohm_sys_fstat(rel ? c->pfd : fd, &st);	/* the prefix root, or fd */
	if (r)
		return r == -ENOENT ? 0 : r;	/* the real call reports it */
	return S_ISREG(st.st_mode) && !pohm_stub_shape(&st) ? 0 : -EIO;
}
