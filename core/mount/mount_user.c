/*
 * mount_user.c — the cache_dir of a user who cannot use the configured
 * one (mount.h).
 *
 * A cache belongs to one user (DESIGN.md §2): its cache_dir is mode 0700.
 * A process that starts as root under the shim and then switches to
 * another user (setuid, seteuid), or a program exec'd after such a switch
 * with the first user's HOME, cannot use that directory.  Such a user gets
 * a cache of its own, in a place every user can create a directory in
 * without privileges:
 *
 *     BASE/pohmelfs-UID/<prefix with '/' as '_'>
 *
 * BASE is $TMPDIR when that is an absolute directory the user may write and
 * no other user can rename things in (owned by root or the user; sticky if
 * others may write it), else /var/tmp (kept across reboots, so a journal
 * left with dirty files there survives one).  Because BASE is shared, both
 * levels below it must be real directories made by that user: a directory
 * another user created in advance, or a symlink planted there, would give
 * that user the cache's contents or let it redirect them, so it is refused
 * with a logged reason and the calls fail with EACCES (nothing is written
 * there).
 *
 * Sections: is the configured one usable · where the per-user one is ·
 * making it.
 */
#include "mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"

/* ---------------------------------------------------------------- usable? */

/* May uid (with effective gid gid) add names to a directory of mode/owner st?
 * By the mode bits, through the one checker (core/sys perm.h) with uid 0's
 * override only (supplementary groups and capabilities ignored: a false
 * "no" only moves the cache to the per-user place). */
static int may_write(const struct stat *st, uid_t uid, gid_t gid)
{
	struct pohm_cred cr = { (uint32_t)uid, (uint32_t)gid, POHM_CRED_ROOT };

	return !pohm_perm_mode(st->st_mode, st->st_uid, st->st_gid, W_OK | X_OK, &cr);
}

int pohm_mount_dir_foreign(const char *dir, uid_t euid)
{
	char up[4096];
	struct stat st;
	char *slash;
	int r;

	if (euid == 0)
		return 0;	/* root may use any cache_dir, as before */
	r = pohm_sys_fstatat(AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW);
	if (!r)
		return st.st_uid != euid;
	if (r != -ENOENT)
		return 1;	/* cannot even look (another user's 0700 HOME) */
	/* Not there yet: it is made by us, if the nearest existing ancestor lets us. */
	if (strlen(dir) >= sizeof(up))
		return 0;	/* the open reports ENAMETOOLONG */
	strcpy(up, dir);
	while ((slash = strrchr(up, '/')) && slash != up) {
		*slash = '\0';
		r = pohm_sys_fstatat(AT_FDCWD, up, &st, 0);
		if (!r)
			return !S_ISDIR(st.st_mode) ? 0 :	/* the open reports ENOTDIR */
			       !may_write(&st, euid, pohm_sys_getegid());
		if (r != -ENOENT)
			return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- where */

/* Is base a directory where uid may make its per-user directory safely? */
static int base_safe(const char *base, uid_t uid)
{
	struct stat st;

	if (!base || base[0] != '/' || pohm_sys_fstatat(AT_FDCWD, base, &st, 0) ||
	    !S_ISDIR(st.st_mode))
		return 0;
	if (st.st_uid != 0 && st.st_uid != uid)
		return 0;	/* its owner could rename our directory away */
	if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))
		return 0;	/* others could, too */
	return may_write(&st, uid, pohm_sys_getegid());
}

int pohm_mount_user_dir(const char *prefix, uid_t uid, char *out, size_t len)
{
	const char *tmp = getenv("TMPDIR"), *base = base_safe(tmp, uid) ? tmp : "/var/tmp";
	size_t i, n;
	int w;

	if (!prefix || prefix[0] != '/')
		return -EINVAL;
	w = snprintf(out, len, "%.2048s/pohmelfs-%u/", base, (unsigned)uid);
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	n = (size_t)w;
	for (i = 0; prefix[i]; i++) {
		if (n + 1 >= len)
			return -ENAMETOOLONG;
		out[n++] = prefix[i] == '/' ? '_' : prefix[i];
	}
	out[n] = '\0';
	return 0;
}

/* ---------------------------------------------------------------- making it */

/*
 * at/name as a directory of uid's own, mode 0700: made if missing; refused
 * (-EACCES, reason in err) when it is a symlink, not a directory, or
 * another user's.  An open fd of it, or -errno.
 */
static int own_dir(int at, const char *name, const char *shown, uid_t uid, char *err,
		   size_t errlen)
{
	struct stat st;
	int fd, r;

	r = pohm_sys_mkdirat(at, name, 0700);
	if (r && r != -EEXIST) {
		snprintf(err, errlen, "%s: cannot make uid %u's cache directory (%s)", shown,
			 (unsigned)uid, strerror(-r));
		return r;
	}
	fd = pohm_sys_openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd == -ELOOP || fd == -ENOTDIR) {
		snprintf(err, errlen, "%s is a symlink or not a directory: refused as uid %u's "
			 "cache directory (another user may have planted it; remove it)", shown,
			 (unsigned)uid);
		return -EACCES;
	}
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open uid %u's cache directory (%s)", shown,
			 (unsigned)uid, strerror(-fd));
		return fd;
	}
	r = pohm_sys_fstat(fd, &st);
	if (!r && st.st_uid != uid) {
		snprintf(err, errlen, "%s belongs to uid %u: refused as uid %u's cache directory "
			 "(another user may have made it in advance; remove it)", shown,
			 (unsigned)st.st_uid, (unsigned)uid);
		r = -EACCES;
	} else if (!r && (st.st_mode & 07777) != 0700 && (r = pohm_sys_fchmod(fd, 0700))) {
		snprintf(err, errlen, "%s: cannot make it private (%s)", shown, strerror(-r));
	}
	if (r) {
		pohm_sys_close(fd);
		return r;
	}
	return fd;
}

int pohm_mount_user_dir_make(const char *path, uid_t uid, char *err, size_t errlen)
{
	char base[4096], shown[4096];
	char *user, *esc;
	int bfd = -1, ufd = -1, efd = -1, r;

	if (strlen(path) >= sizeof(base))
		return -ENAMETOOLONG;
	strcpy(base, path);
	esc = strrchr(base, '/');
	if (!esc || esc == base)
		return -EINVAL;
	*esc++ = '\0';
	user = strrchr(base, '/');
	if (!user || user == base)
		return -EINVAL;
	*user++ = '\0';
	bfd = pohm_sys_openat(AT_FDCWD, base, O_PATH | O_DIRECTORY, 0);
	if (bfd < 0) {
		r = bfd;
		snprintf(err, errlen, "%s: cannot hold uid %u's cache directory (%s)", base,
			 (unsigned)uid, strerror(-r));
		goto out;
	}
	snprintf(shown, sizeof(shown), "%s/%s", base, user);
	r = ufd = own_dir(bfd, user, shown, uid, err, errlen);
	if (r < 0)
		goto out;
	r = efd = own_dir(ufd, esc, path, uid, err, errlen);
	if (r >= 0)
		r = 0;
out:
	if (efd >= 0)
		pohm_sys_close(efd);
	if (ufd >= 0)
		pohm_sys_close(ufd);
	if (bfd >= 0)
		pohm_sys_close(bfd);
	return r;
}
