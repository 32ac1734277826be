/*
 * ownfile.c — the cache_dir's own files and directories, opened and made as
 * its owner's (journal.h: pohm_journal_open_own, pohm_journal_mkdir_own).
 *
 * Used by the journal, its index (jindex.c), the writers' and push locks,
 * rename intents and create marks.  A file of its own so that the journal
 * and its index do not call each other in a circle (issue 20).
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>

#include "sys.h"

/*
 * The cache's own files and directories never depend on the host process's
 * umask (a umask of 0577 would make them unreadable to their own user).
 * The common case, a file that exists, costs one openat.
 */
/*
 * A cache belongs to one user (DESIGN §2).  A process that switches its
 * effective uid (setuid, seteuid) gets that user's own cache (mount_user.c),
 * but files are opened with the fsuid: one changed alone (setfsuid), or
 * root without CAP_DAC_OVERRIDE in another user's cache_dir, is refused
 * here.  Say so once instead of leaving a bare EACCES.
 */
static void journal_denied(int dirfd)
{
	static int said;	/* once per process; atomic */
	struct stat st;
	long fsuid = (long)pohm_perm_fsuid();

	if (pohm_sys_fstat(dirfd, &st) || (long)st.st_uid == fsuid ||
	    __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	pohm_err("the cache_dir belongs to uid %u but files are opened as uid %ld (the "
		 "fsuid: setfsuid, or root without CAP_DAC_OVERRIDE; effective uid %ld): only "
		 "its owner can use a cache, calls under the prefix fail with EACCES",
		 (unsigned)st.st_uid, fsuid, (long)pohm_sys_geteuid());
}

int pohm_journal_open_own(int dirfd, const char *name, int flags)
{
	int fd;

	if (!(flags & O_CREAT)) {
		fd = pohm_sys_openat(dirfd, name, flags, 0);
		goto out;
	}
	if (!(flags & O_EXCL)) {
		fd = pohm_sys_openat(dirfd, name, flags & ~O_CREAT, 0);
		if (fd != -ENOENT)
			goto out;
	}
	fd = pohm_sys_openat(dirfd, name, flags | O_EXCL, 0600);
	if (fd == -EEXIST && !(flags & O_EXCL))
		return pohm_sys_openat(dirfd, name, flags & ~O_CREAT, 0);	/* a racing creator */
	if (fd >= 0)
		pohm_sys_fchmod(fd, 0600);
out:
	if (fd == -EACCES)
		journal_denied(dirfd);
	return fd;
}

int pohm_journal_may(struct pohm_journal *j)
{
	if (j->owner < 0 || pohm_perm_fsuid() == (uint32_t)j->owner ||
	    pohm_perm_has_cap(CAP_DAC_OVERRIDE))
		return 0;
	journal_denied(j->dirfd);
	return -EACCES;
}

int pohm_journal_mkdir_own(int dirfd, const char *name)
{
	int r = pohm_sys_mkdirat(dirfd, name, 0700);

	if (!r)
		pohm_sys_fchmodat(dirfd, name, 0700);
	return r;
}
