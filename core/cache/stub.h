/*
 * stub.h — the local form of a listed file whose data is not fetched.
 *
 * A stub is a socket inode with mode 000 (a name made with mknod, no
 * socket bound to it): every open of it without the shim fails, root's
 * too — EACCES for a user (mode 000), ENXIO ("No such device or address")
 * for root, who passes the mode check but cannot open a socket inode —
 * and exec fails with EACCES.  Nothing can be written into it, so a stub
 * is never silently read as an empty file nor changed in place.  The
 * journal record (POHM_J_STUB) holds the true attributes; the shim's stat
 * family and readdir report them (a regular file of the stored size).
 *
 * Where the filesystem makes no socket inodes (mknod fails with EPERM or
 * EOPNOTSUPP), and in stubs made by earlier versions, a stub is an empty
 * regular file with mode 000 (root reads it as empty: the documented limit
 * of such filesystems).  POHMELFS_TEST_REGULAR_STUBS=1 (test builds only,
 * sys.h pohm_sys_test_switch; documented in libpohmelfs(7)) makes that form,
 * to test it.
 */
#ifndef POHM_CORE_STUB_H
#define POHM_CORE_STUB_H

#include <stdint.h>
#include <sys/stat.h>

/*
 * Make dfd/name a stub (never follows or replaces: -EEXIST when the name
 * exists).  When chown_it, owned by uid:gid.  0 or -errno; errno untouched.
 */
int pohm_stub_make(int dfd, const char *name, int chown_it, uint32_t uid, uint32_t gid);

/*
 * Is st (an lstat of a local name) the shape of an untouched stub: a socket
 * or regular file, empty, mode 000?  Whether it is one of the cache's stubs
 * is the journal's word (POHM_J_STUB on the record of its local inode).
 */
static inline int pohm_stub_shape(const struct stat *st)
{
	return (S_ISSOCK(st->st_mode) || S_ISREG(st->st_mode)) && !st->st_size &&
	       !(st->st_mode & 07777);
}

/* Is st a local file a stub may be (the shapes above, touched or not)? */
static inline int pohm_stub_kind(const struct stat *st)
{
	return S_ISSOCK(st->st_mode) || S_ISREG(st->st_mode);
}

#endif
