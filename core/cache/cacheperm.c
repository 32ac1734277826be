/*
 * cacheperm.c — permission checks from the STORED attributes.  The local
 * copy of a directory is made with the owner's rwx added (cache_make_local
 * fills it with stubs), so the kernel's own check on it is not the stored
 * one; and a namespace change goes to the storage before the local call.
 * These checks run first, as the kernel would: the process's fsuid, fsgid,
 * supplementary groups and capabilities against the mode, owner and group
 * the journal holds for each directory (recorded from the storage by the
 * walk that materialized it).  A directory the journal does not know (made by
 * another user's cache, or without the shim) and the prefix root are judged
 * by their local mode, as the kernel will judge the real call.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

uint32_t cache_fsuid(void)
{
	return pohm_perm_fsuid();
}

/* want on an object of this stored mode/owner/group, for the calling thread
 * as the kernel checks a file operation (the one checker, core/sys perm.h). */
static int perm_fs(uint32_t mode, uint32_t uid, uint32_t gid, int want)
{
	struct pohm_cred cr;

	pohm_cred_fs(&cr);
	return pohm_perm_mode(mode, uid, gid, want, &cr);
}

/* The journal's record of the local object dfd/path (fstatat, no follow). */
static int local_record(struct pohm_cache *c, int dfd, const char *path, struct pohm_jrec *rec)
{
	struct stat st;
	uint64_t ino;
	int r;

	memset(rec, 0, sizeof(*rec));
	r = pohm_sys_fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW | (*path ? 0 : AT_EMPTY_PATH));
	if (r)
		return r;
	r = pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino);
	if (r)
		return r;
	return pohm_journal_get(&c->j, ino, rec);
}

/* check_one's flag: path is a component to walk through (a directory). */
#define CHECK_DIR	0x100

/*
 * want on the local directory dfd/path itself, as the kernel will judge it
 * (0 for anything else).  For everyone but its owner its mode is the stored
 * one (cache_make_local adds rwx for the owner only).
 */
static int check_local_dir(int dfd, const char *path, int want)
{
	struct stat st;

	if (pohm_sys_fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW | (*path ? 0 : AT_EMPTY_PATH)) ||
	    !S_ISDIR(st.st_mode))
		return 0;
	return perm_fs(st.st_mode, st.st_uid, st.st_gid, want);
}

/* want on the object dfd/path per its record; a directory without one (made
 * by another user's cache, or without the shim) as the kernel sees it. */
static int check_one(struct pohm_cache *c, int dfd, const char *path, int want)
{
	struct pohm_jrec rec;
	int r;

	if (local_record(c, dfd, path, &rec)) {
		pohm_jrec_clear(&rec);
		/* No record: never let the storage change first on a directory
		 * the kernel would refuse (issue 22 item 2: a refused unlink
		 * had removed the stored name). */
		return check_local_dir(dfd, path, want & ~CHECK_DIR);
	}
	if ((want & CHECK_DIR) && !S_ISDIR(rec.mode)) {
		/* A path component that is not a directory: the kernel's
		 * ENOTDIR comes before any permission. */
		pohm_jrec_clear(&rec);
		return S_ISLNK(rec.mode) ? 0 : -ENOTDIR;
	}
	want &= ~CHECK_DIR;
	r = perm_fs(rec.mode, rec.uid, rec.gid, want);
	pohm_jrec_clear(&rec);
	return r;
}

int cache_perm_path(struct pohm_cache *c, const char *rel, int want)
{
	char spath[4096], *path;
	size_t len = strlen(rel), i;
	int r;

	/* Root with CAP_DAC_OVERRIDE passes every check on directories: no walk
	 * (the open path may call this on every materialize).  Two syscalls. */
	if (cache_fsuid() == 0 && pohm_perm_has_cap(CAP_DAC_OVERRIDE))
		return 0;
	path = cache_cut(rel, len, spath);	/* 4096 bytes or more: on the heap */
	if (!path)
		return -ENOMEM;
	/* Each directory above rel's last component.  Not the prefix root: that
	 * is the local directory itself (the stored root inode's owner is
	 * whoever made the file system), and the kernel checks it. */
	r = 0;
	for (i = 0; i < len; i++) {
		if (path[i] != '/' || !i)
			continue;
		path[i] = '\0';
		r = check_one(c, c->pfd, path, X_OK | CHECK_DIR);
		path[i] = '/';
		if (r)
			break;
	}
	if (!r && want)
		r = *rel ? check_one(c, c->pfd, path, want) : check_local_dir(c->pfd, "", want);
	cache_cut_free(path, spath);
	return r;
}

int cache_perm_parent(struct pohm_cache *c, const char *rel, int want)
{
	char sdir[4096], *dir;
	const char *slash = strrchr(rel, '/');
	int r;

	if (!slash)
		return cache_perm_path(c, "", want);
	dir = cache_cut(rel, (size_t)(slash - rel), sdir);
	if (!dir)
		return -ENOMEM;
	r = cache_perm_path(c, dir, want);
	cache_cut_free(dir, sdir);
	return r;
}

/* Mode and owner of dfd/path: its record's, else the local object's.  0 or -errno. */
static int owner_of(struct pohm_cache *c, int dfd, const char *path, uint32_t *mode,
		    uint32_t *uid, uint32_t *gid)
{
	struct pohm_jrec rec;
	struct stat st;
	int r;

	if (!local_record(c, dfd, path, &rec)) {
		*mode = rec.mode;
		*uid = rec.uid;
		*gid = rec.gid;
		pohm_jrec_clear(&rec);
		return 0;
	}
	pohm_jrec_clear(&rec);
	r = pohm_sys_fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW | (*path ? 0 : AT_EMPTY_PATH));
	if (r)
		return r;
	*mode = st.st_mode;
	*uid = st.st_uid;
	*gid = st.st_gid;
	return 0;
}

int cache_perm_sticky(struct pohm_cache *c, int dfd, const char *name)
{
	uint32_t dmode, duid, dgid, vmode, vuid, vgid, me;

	if (owner_of(c, dfd, "", &dmode, &duid, &dgid) || !(dmode & S_ISVTX) ||
	    (me = cache_fsuid()) == duid)
		return 0;
	if (!owner_of(c, dfd, name, &vmode, &vuid, &vgid) && vuid != me &&
	    !pohm_perm_has_cap(CAP_FOWNER))
		return -EPERM;
	return 0;
}

int cache_perm_sticky_matters(struct pohm_cache *c, int dfd)
{
	uint32_t dmode, duid, dgid;

	if (owner_of(c, dfd, "", &dmode, &duid, &dgid))
		return 1;
	return (dmode & S_ISVTX) && cache_fsuid() != duid && !pohm_perm_has_cap(CAP_FOWNER);
}

int cache_perm_hardlink(struct pohm_cache *c, int dfd, const char *name)
{
	uint32_t mode, uid, gid;
	char v[8] = "";
	int fd;

	if (owner_of(c, dfd, name, &mode, &uid, &gid) || cache_fsuid() == uid ||
	    pohm_perm_has_cap(CAP_FOWNER))
		return 0;
	fd = pohm_sys_openat(AT_FDCWD, "/proc/sys/fs/protected_hardlinks", O_RDONLY, 0);
	if (fd >= 0) {
		if (pohm_sys_read_full(fd, v, sizeof(v) - 1) < 0)
			v[0] = 0;
		pohm_sys_close(fd);
	}
	if (v[0] != '1')
		return 0;
	/* fs.protected_hardlinks: only a regular file, not set-id, that the
	 * caller may read and write (the kernel's may_linkat). */
	if (S_ISREG(mode) && !(mode & S_ISUID) &&
	    (mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
	    !perm_fs(mode, uid, gid, R_OK | W_OK))
		return 0;
	return -EPERM;
}

int pohm_cache_perm_owner(struct pohm_cache *c, int fd, const char *rel, int follow,
			  enum pohm_perm_owner how)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int r;

	r = fd >= 0 ? pohm_sys_fstat(fd, &st)
		    : pohm_sys_fstatat(c->pfd, rel, &st,
				       (follow ? 0 : AT_SYMLINK_NOFOLLOW) | (*rel ? 0 : AT_EMPTY_PATH));
	if (r || (uint64_t)st.st_dev != c->pdev)
		return 0;	/* missing, or out of the prefix: the kernel answers */
	if (pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino) ||
	    pohm_journal_get(&c->j, ino, &rec))
		return 0;	/* no record: the local owner is the one the kernel checks */
	if (rec.uid == cache_fsuid())
		r = 0;
	else if (how == POHM_PERM_CHOWN)
		r = pohm_perm_has_cap(CAP_CHOWN) ? 0 : -EPERM;
	else if (pohm_perm_has_cap(CAP_FOWNER))
		r = 0;
	else if (how == POHM_PERM_TOUCH)
		r = perm_fs(rec.mode, rec.uid, rec.gid, W_OK);
	else
		r = -EPERM;
	pohm_jrec_clear(&rec);
	return r;
}

int pohm_cache_access(struct pohm_cache *c, const char *rel, int want, int effective)
{
	struct pohm_cred cr;
	struct stat st;

	want &= R_OK | W_OK | X_OK;
	if (pohm_sys_fstatat(c->pfd, rel, &st, *rel ? 0 : AT_EMPTY_PATH))
		return 1;	/* the real call says what is missing */
	if (st.st_mode & 07777)
		return 1;	/* fetched: the local file answers for itself */
	pohm_cache_stat_fix(c, &st);
	if (!(st.st_mode & 07777) || !want)
		return 1;
	pohm_cred_access(&cr, effective);
	return pohm_perm_mode(st.st_mode, st.st_uid, st.st_gid, want, &cr);
}
