/*
 * localonly.c — names the storage does not hold (issue 22 item 4).
 *
 * bind(2) is not interposed, so a socket it makes exists only in the local
 * directory; so does anything made without the shim until a reconcile
 * adopts it.  The storage answers ENOENT for such a name, or for a path
 * through one, where the kernel answers ENOTDIR, EISDIR, EACCES, EEXIST or
 * succeeds.  When a namespace change failed in the storage with ENOENT
 * (nothing stored changed), these tell the hook whether the kernel's local
 * answer is the one to give.  A stub is a mode-000 socket too: it is the
 * journal's (POHM_J_STUB on the record of its local inode), never local-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cache_int.h"
#include "sys.h"

int pohm_cache_parent_refused(struct pohm_cache *c, const char *rel)
{
	char sdir[4096], *dir;
	const char *slash = strrchr(rel, '/');
	int fd;

	if (!slash)
		return 0;	/* the prefix root: the kernel reached it */
	dir = cache_cut(rel, (size_t)(slash - rel), sdir);
	if (!dir)
		return 0;
	fd = pohm_sys_openat(c->pfd, dir, O_PATH | O_DIRECTORY, 0);
	cache_cut_free(dir, sdir);
	if (fd < 0)
		return 1;	/* ENOTDIR (a socket on the way), EACCES, ENOENT, ELOOP */
	pohm_sys_close(fd);
	return 0;
}

int pohm_cache_local_only(struct pohm_cache *c, const char *rel)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int only;

	if (!*rel || pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
		return 0;
	if (pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino) ||
	    pohm_journal_get(&c->j, ino, &rec))
		return 1;	/* unknown to the journal */
	/* A stale index entry (the inode number reused), or a socket bound where
	 * the record is not a stub's: not the storage's. */
	only = (rec.lino != (uint64_t)st.st_ino && rec.nlink <= 1) ||
	       (S_ISSOCK(st.st_mode) && !(rec.flags & POHM_J_STUB));
	pohm_jrec_clear(&rec);
	return only;
}
