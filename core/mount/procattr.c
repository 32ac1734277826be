/*
 * procattr.c — an attribute change by a host process (moved from
 * preload/hooks_cache.c, issues 18 and 20): what comes before the kernel
 * changes the local copy (a real copy, not a stub; offline, only what can
 * travel later; the kernel's owner checks on the stored owner), the
 * host's own call, and when the change travels after it: one call,
 * pohm_proc_attr.  The shim maps its own operations to enum
 * pohm_proc_attr and POHM_PAF_* (mount.h) and holds its hold around it.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "mount.h"
#include "sys.h"

/* Before the kernel changes the local copy: a real copy, not a stub; when
 * offline, only a change that can travel later; the kernel's owner checks
 * on the stored owner (issue 22).  Counted; 0 (the kernel goes on) or -errno. */
static int attr_before(struct pohm_cache *c, enum pohm_proc_attr op, const char *rel, int fd,
		       unsigned flags)
{
	unsigned nofollow = (flags & POHM_PAF_NOFOLLOW) ? POHM_MAT_NOFOLLOW : 0;
	int r = 0;

	if (!rel && fd < 0)
		goto out;	/* a name too long to resolve here: the kernel's alone */
	/* Change a real copy, not a stub (a changed stub would be a conflict). */
	if (rel && (r = pohm_cache_materialize(c, rel, POHM_MAT_DATA | nofollow)) < 0)
		goto out;
	r = pohm_cache_attr_offline(c, rel, fd, nofollow, op == POHM_PA_OWNER);
	if (r < 0)
		goto out;
	/* The kernel's owner checks, on the stored owner: the local copy may be
	 * the caller's own whoever owns the file (issue 22). */
	r = 0;
	if (op == POHM_PA_MODE || (op == POHM_PA_TIMES && (flags & POHM_PAF_SET)))
		r = pohm_cache_perm_owner(c, fd, rel, !nofollow, POHM_PERM_FOWNER);
	else if (op == POHM_PA_OWNER && (flags & POHM_PAF_SET))
		r = pohm_cache_perm_owner(c, fd, rel, !nofollow, POHM_PERM_CHOWN);
	else if (op == POHM_PA_TIMES && (flags & POHM_PAF_TOUCH))
		r = pohm_cache_perm_owner(c, fd, rel, !nofollow, POHM_PERM_TOUCH);
out:
	return pohm_proc_count(POHM_ST_ATTR, r < 0 ? r : 0);
}

/* Is rel (under the prefix) a regular file open through an fd of the host? */
static int held_path(struct pohm_cache *c, const struct pohm_host_fds *h, const char *rel)
{
	struct stat st;

	return !pohm_sys_fstatat(pohm_cache_prefix_fd(c), rel, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st.st_mode) &&	/* only a file's push opens an fd of ours */
	       pohm_proc_fd_held((void *)h, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

/* After the kernel's change succeeded: it travels now (a path's change,
 * unless a file of the host's open fds, which pushes at close or sync; a
 * truncation through an fd travels with that fd's next push).  Failures
 * are logged: the change stays for a later push, but for what no push
 * sends (chattr.c): 0, or that -errno for the call. */
static int attr_after(struct pohm_cache *c, const struct pohm_host_fds *h,
		       enum pohm_proc_attr op, const char *rel, int fd, unsigned flags)
{
	char real[4096];
	int r, fl, chattr = op == POHM_PA_MODE || op == POHM_PA_OWNER;

	/* chmod, chown... follow a symlink: the change is its target's
	 * (issue 22 item 7).  One fstatat when rel is no symlink. */
	if (rel && !(flags & POHM_PAF_NOFOLLOW)) {
		r = pohm_cache_follow(c, rel, real, sizeof(real));
		if (r == 2 || r < 0)
			return 0;	/* out of the prefix: libc's alone */
		if (r == 0)
			rel = real;
	}
	/* The change travels now, so that other hosts see it after attr_timeout.
	 * A truncation through an fd is a data change of a writer still open,
	 * as a write is (issue 22 item 12: fsx's 645 ftruncates were 645 pushes
	 * of the whole file): it travels with the fd's next push, at its close
	 * (sync_on_close), fsync, the process's exit or pohmelfsd's round. */
	if (fd >= 0 && op == POHM_PA_SIZE)
		r = 0;
	else if (fd >= 0 && (fl = pohm_sys_fcntl(fd, F_GETFL, 0)) >= 0 &&
		 (fl & O_ACCMODE) == O_WRONLY)
		r = pohm_cache_push_wronly(c, fd);	/* dirty: travels with its close */
	else if (fd >= 0)
		r = pohm_cache_push_fd(c, fd);
	else if (rel && !held_path(c, h, rel))
		r = pohm_cache_push_path(c, rel);
	else
		r = 0;	/* open here: pushed through its fd at close or sync */
	if (r < 0 && r != -EBADF)
		pohm_warn("%s: attribute change not pushed yet (%s)", rel ? rel : "fd",
			  strerror(-r));
	if (r == -EBADF && op == POHM_PA_OWNER)
		pohm_cache_chgrp_later(c, fd);	/* its close's push sends the group */
	/* What a push cannot tell from the cache's own differences (chattr.c):
	 * asked even when the push failed, no later one would send it (not
	 * for a write-only fd's file: its close pushes, -EBADF). */
	if (chattr && r != -EBADF && (fd >= 0 || rel)) {
		r = pohm_cache_push_chattr(c, fd, rel, op == POHM_PA_OWNER);
		if (r < 0 && r != -EBADF) {
			pohm_warn("%s: attribute change not stored (%s): the call fails",
				  rel ? rel : "fd", strerror(-r));
			return r;
		}
	}
	return 0;
}

int pohm_proc_attr(struct pohm_cache *c, const struct pohm_host_fds *h, enum pohm_proc_attr op,
		   const char *rel, int fd, unsigned flags, const struct pohm_proc_real *real)
{
	int r = attr_before(c, op, rel, fd, flags);

	if (r < 0)
		return r;
	r = real->call(real->arg);
	if (r >= 0) {
		int e = attr_after(c, h, op, rel, fd, flags);

		if (e < 0)
			r = e;
	}
	return r;
}
