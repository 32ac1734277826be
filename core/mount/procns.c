/*
 * procns.c — a namespace change by a host process, in one call (moved
 * from preload/hooks_cache.c, issue 20): the storage's half first
 * (mkdir, rmdir, unlink, remove, rename, link, symlink, mknod), then,
 * when the kernel must answer alone or the storage agreed, the host's own
 * real call, then what follows its result.  Which storage case a call is
 * (a symlink out of the storage's reach on the way, a name only the
 * kernel holds) is decided here, so nothing passes from a "before" half
 * to an "after" half between calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mount.h"
#include "sys.h"

/* Internal: the storage leaves the call to the kernel (the real call answers). */
#define KERNEL	(-0x10000)

/*
 * 1 when rel is something other than a directory: a trailing slash on
 * either name of rmdir, remove or rename (on a rename's target too, for
 * its source) then fails ENOTDIR in the kernel, so the storage must not
 * change (the shim refuses "." and ".." outright).
 */
static int not_dir(struct pohm_cache *c, const char *rel)
{
	struct stat st;

	if (pohm_cache_materialize(c, rel, POHM_MAT_NOFOLLOW) ||
	    pohm_sys_fstatat(pohm_cache_prefix_fd(c), rel, &st, AT_SYMLINK_NOFOLLOW))
		return 0;	/* missing: the storage call answers ENOENT */
	return !S_ISDIR(st.st_mode);
}

/* The storage's half of a namespace call: 0, -errno, or KERNEL. */
static int ns_apply(struct pohm_cache *c, enum pohm_proc_ns op, const char *a, const char *b,
		    const struct pohm_proc_ns_arg *arg)
{
	struct stat st;
	int r;

	switch (op) {
	case POHM_PN_MKDIR:
		r = pohm_cache_mkdir(c, a, pohm_mount_new_mode(arg->mode));
		break;
	case POHM_PN_RMDIR:
		r = pohm_cache_rmdir(c, a);
		break;
	case POHM_PN_UNLINK:
		r = pohm_cache_unlink(c, a);
		break;
	case POHM_PN_REMOVE:
		r = pohm_cache_materialize(c, a, POHM_MAT_NOFOLLOW);
		if (!r)
			r = pohm_sys_fstatat(pohm_cache_prefix_fd(c), a, &st, AT_SYMLINK_NOFOLLOW);
		if (!r)
			r = S_ISDIR(st.st_mode) ? pohm_cache_rmdir(c, a) : pohm_cache_unlink(c, a);
		break;
	case POHM_PN_RENAME:
		r = pohm_cache_rename(c, a, b, arg->flags);
		break;
	case POHM_PN_LINK:
		r = pohm_cache_link(c, a, b);
		break;
	case POHM_PN_SYMLINK:
		r = pohm_cache_symlink(c, arg->target, a);
		break;
	case POHM_PN_MKNOD:
		if (S_ISSOCK(arg->mode))
			r = KERNEL;	/* sockets stay local */
		else
			r = pohm_cache_mknod(c, a, pohm_mount_new_mode(arg->mode), arg->dev);
		break;
	default:
		r = KERNEL;
		break;
	}
	return r;
}

/*
 * A core call answered -EXDEV for rel: the storage's own walk met a
 * symlink with an absolute target, or one climbing above the prefix root,
 * on the way to rel's parent.  The kernel follows it, so ask the kernel
 * where the parent is (pohm_cache_parent_real): 1 when outside the prefix
 * (the call is the kernel's alone, as for any path outside), 0 and out =
 * rel by its real path below the prefix (the caller tries once more), or
 * -errno when the parent does not resolve (the real call gives the
 * kernel's errno).  A name right under the root has no such parent: out =
 * rel.  out has POHM_PROC_REL_MAX bytes.
 */
static int beyond(struct pohm_cache *c, const char *rel, char *out)
{
	if (!strchr(rel, '/')) {
		snprintf(out, POHM_PROC_REL_MAX, "%s", rel);
		return 0;
	}
	return pohm_cache_parent_real(c, rel, out, POHM_PROC_REL_MAX);
}

/*
 * ns_apply answered -EXDEV: a symlink out of the storage's reach on the
 * way (beyond()).  Each name by its real path: all outside the prefix,
 * the call is the kernel's alone; all inside, try once more by the real
 * paths; one in and one out (rename, link), EXDEV as across any boundary;
 * a parent that does not resolve, the real call answers.
 */
static int ns_beyond(struct pohm_cache *c, enum pohm_proc_ns op, const char *a, const char *b,
		     const struct pohm_proc_ns_arg *arg)
{
	char *q = malloc(2 * POHM_PROC_REL_MAX);
	int ra, rb = 0, r;

	if (!q)
		return -ENOMEM;
	ra = beyond(c, a, q);
	if (b)
		rb = beyond(c, b, q + POHM_PROC_REL_MAX);
	if (ra < 0 || rb < 0)
		r = KERNEL;
	else if (ra == 1 && (!b || rb == 1))
		r = KERNEL;
	else if (ra == 1 || rb == 1)
		r = -EXDEV;
	else if (!strcmp(q, a) && (!b || !strcmp(q + POHM_PROC_REL_MAX, b)))
		r = -EXDEV;	/* the same names: the storage's answer stands */
	else
		r = ns_apply(c, op, q, b ? q + POHM_PROC_REL_MAX : NULL, arg);
	free(q);
	return r;
}

/*
 * The storage answered -ENOENT (and changed nothing): a name it does not
 * hold may be involved — a socket bind(2) made, which exists only here
 * (issue 22 item 4).  The kernel answers when it cannot walk to a parent
 * (ENOTDIR through a socket, EACCES...) or when the name changed is itself
 * local-only (a rename or link of a socket; rmdir, unlink of one).  A
 * rename of one that replaces a stored name removes that name once the
 * kernel did it (*drop_to set: pohm_proc_ns).
 */
static int ns_local_only(struct pohm_cache *c, enum pohm_proc_ns op, const char *a, const char *b,
			 const struct pohm_proc_ns_arg *arg, int *drop_to)
{
	if (pohm_cache_parent_refused(c, a) || (b && pohm_cache_parent_refused(c, b)))
		return KERNEL;
	switch (op) {
	case POHM_PN_RENAME:
		if (!pohm_cache_local_only(c, a))
			break;
		*drop_to = !(arg->flags & RENAME_EXCHANGE);
		return KERNEL;
	case POHM_PN_LINK:
	case POHM_PN_UNLINK:
	case POHM_PN_RMDIR:
	case POHM_PN_REMOVE:
		if (pohm_cache_local_only(c, a))
			return KERNEL;
		break;
	default:
		break;
	}
	return -ENOENT;
}

int pohm_proc_ns(struct pohm_cache *c, enum pohm_proc_ns op, const char *a, const char *b,
		 const struct pohm_proc_ns_arg *arg, const struct pohm_proc_real *real)
{
	unsigned moves = pohm_cache_dir_moves();
	int drop_to = 0, r;

	if (!a[0])
		return op == POHM_PN_MKDIR ? -EEXIST : -EBUSY;	/* the prefix root itself */
	if ((op == POHM_PN_RMDIR || op == POHM_PN_REMOVE || op == POHM_PN_RENAME) &&
	    arg->slash && not_dir(c, a))
		r = KERNEL;	/* ENOTDIR from the real call */
	else
		r = ns_apply(c, op, a, b, arg);
	if (r == -EXDEV)
		r = ns_beyond(c, op, a, b, arg);
	if (r == -ENOENT && pohm_cache_dir_moves() != moves)
		return POHM_PROC_AGAIN;	/* not the kernel's: it goes by the moved base */
	if (r == -ENOENT)
		r = ns_local_only(c, op, a, b, arg, &drop_to);
	if (r != KERNEL)
		return pohm_proc_count(POHM_ST_NS, r);
	r = real->call(real->arg);
	if (drop_to && r == 0 && b) {
		int d = pohm_cache_drop_stored(c, b);

		if (d < 0)
			pohm_warn("%s: replaced here by a local-only name, but still in the storage (%s)",
				  b, strerror(-d));
	}
	return r;
}
