/*
 * chattr.c — what a chmod or chown the kernel accepted must make the
 * storage hold, beyond what an ordinary push sends (issue 22 items 7, 8).
 *
 * An ordinary push compares the local object with its journal record, and
 * cannot tell some explicit changes from the cache's own local differences:
 * a non-root cache's local files carry the user's own uid and gid whatever
 * the stored owner (only root may chown), so its pushes never send them; a
 * local directory keeps u+rwx for the cache, so a chmod from 0300 to 0700
 * looks like no change; and a directory another user's cache made has no
 * record in this one.  Here the caller says what the program did, so the
 * local mode (chmod) or group (chown) is stored when it differs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

int pohm_cache_follow(struct pohm_cache *c, const char *rel, char *out, size_t len)
{
	char got[4096], root[4096];
	struct stat st;
	int fd, n, rn, r;

	if (pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW | (*rel ? 0 : AT_EMPTY_PATH)) ||
	    !S_ISLNK(st.st_mode))
		return 1;	/* not a symlink (or missing): rel itself */
	fd = pohm_sys_openat(c->pfd, rel, O_PATH, 0);
	if (fd < 0)
		return fd;
	n = pohm_sys_fd_path(fd, got, sizeof(got));
	pohm_sys_close(fd);
	rn = pohm_sys_fd_path(c->pfd, root, sizeof(root));
	if (n < 0 || rn < 0)
		return n < 0 ? n : rn;
	if (strncmp(got, root, (size_t)rn) || (got[rn] && got[rn] != '/'))
		return 2;	/* leads out of the prefix */
	r = snprintf(out, len, "%s", got[rn] ? got + rn + 1 : "");
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

/*
 * The setattr of sa on ino failed (r); its outcome may be unknown (a put
 * whose answer never came may have landed: -EIO).  The stored inode says:
 * 0 with *in filled when it holds what sa sets (it landed), else r, and in
 * *smode the stored mode when the read worked (else left as it was).
 */
static int chattr_settle(struct pohm_cache *c, uint64_t ino, const struct pohm_setattr *sa,
			 struct pohm_inode *in, uint32_t *smode, int r)
{
	if (pohm_ns_getattr(c->ns, ino, in))
		return r;
	*smode = in->mode;
	if ((!(sa->mask & POHM_SET_MODE) || (in->mode & 07777) == (sa->mode & 07777)) &&
	    (!(sa->mask & POHM_SET_UID) || in->uid == sa->uid) &&
	    (!(sa->mask & POHM_SET_GID) || in->gid == sa->gid))
		return 0;
	pohm_inode_clear(in);
	return r;
}

/*
 * The storage did not take sa (r).  A regular file's mode, and a root
 * cache's owner and group, travel with the object's next push (push.c
 * push_attrs_diff): 0, logged.  What no push sends is stored at the call
 * or not at all, as offline (cacheoffline.c refuses it before the call):
 * a directory's mode (push_attrs_diff and dir_times_follow take a local
 * mode of stored | 0700 for the cache's own u+rwx, so a chmod u+rwx was
 * never sent again), a non-root cache's group (its pushes send none).
 * The directory's local mode goes back to the stored one's local form
 * (smode: as just read, when chattr_settle could), so that no later push
 * sends what the call failed on, and r is returned for the call to fail
 * with it; only while the local mode is still the one this call found
 * (st): a chmod another process of this host made since stays.
 */
static int chattr_unsent(struct pohm_cache *c, int fd, const char *rel, const struct stat *st,
			 const struct pohm_setattr *sa, uint32_t smode, int r)
{
	mode_t m = (mode_t)((smode & 07777) | 0700);
	struct stat now;

	if (!((sa->mask & POHM_SET_MODE) && S_ISDIR(st->st_mode)) &&
	    (c->is_root || !(sa->mask & (POHM_SET_UID | POHM_SET_GID)))) {
		pohm_warn("%s: attribute change not pushed yet (%s)", rel ? rel : "fd",
			  strerror(-r));
		return 0;
	}
	if (!(sa->mask & POHM_SET_MODE) || !S_ISDIR(st->st_mode) || (fd < 0 && !(rel && *rel)))
		return r;
	if (fd >= 0 ? pohm_sys_fstat(fd, &now) : pohm_sys_fstatat(c->pfd, rel, &now, AT_SYMLINK_NOFOLLOW))
		return r;
	if (now.st_ino != st->st_ino || (now.st_mode & 07777) != (st->st_mode & 07777))
		return r;	/* changed since: not ours to put back */
	if ((fd < 0 || pohm_sys_fchmod(fd, m)) && rel && *rel)
		pohm_sys_fchmodat(c->pfd, rel, m);
	return r;
}

int pohm_cache_push_chattr(struct pohm_cache *c, int fd, const char *rel, int owner)
{
	struct pohm_setattr sa = { 0 };
	struct pohm_inode in;
	struct pohm_jrec rec;
	struct stat st;
	uint32_t smode, sgid, suid;
	uint64_t ino;
	int r, have_rec = 0;

	memset(&in, 0, sizeof(in));
	memset(&rec, 0, sizeof(rec));
	r = fd >= 0 ? pohm_sys_fstat(fd, &st)
		    : pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW | (*rel ? 0 : AT_EMPTY_PATH));
	if (r)
		return r == -ENOENT ? 0 : r;
	if ((uint64_t)st.st_dev != c->pdev || S_ISSOCK(st.st_mode) || S_ISLNK(st.st_mode))
		return 0;	/* not ours, a bound socket or a stub, a symlink (no mode) */
	if (!pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino) &&
	    !pohm_journal_get(&c->j, ino, &rec)) {
		have_rec = 1;
		if (rec.flags & POHM_J_STUB)
			goto out;	/* never pushed (invariant I11) */
		smode = rec.mode;
		suid = rec.uid;
		sgid = rec.gid;
	} else if (S_ISDIR(st.st_mode) && rel && *rel) {
		/* A directory another user's cache made: the storage's own. */
		r = pohm_ns_resolve(c->ns, rel, 0, &ino);
		if (!r)
			r = pohm_ns_getattr(c->ns, ino, &in);
		if (r) {
			r = r == -ENOENT ? 0 : r;
			goto out;
		}
		smode = in.mode;
		suid = in.uid;
		sgid = in.gid;
		pohm_inode_clear(&in);
	} else {
		goto out;	/* not a file of the storage's */
	}
	if (!owner && (st.st_mode & 07777) != (smode & 07777)) {
		sa.mask |= POHM_SET_MODE;
		sa.mode = st.st_mode & 07777;
	}
	if (owner) {
		/* Only root may give a file away; a non-root owner may change its
		 * group to one of its own (the kernel accepted it locally). */
		if (c->is_root && (uint32_t)st.st_uid != suid) {
			sa.mask |= POHM_SET_UID;
			sa.uid = (uint32_t)st.st_uid;
		}
		if ((uint32_t)st.st_gid != sgid && (c->is_root || (uint32_t)st.st_uid == suid)) {
			sa.mask |= POHM_SET_GID;
			sa.gid = (uint32_t)st.st_gid;
		}
		/* A chown clears the set-id bits: the mode goes too. */
		if ((st.st_mode & 07777) != (smode & 07777)) {
			sa.mask |= POHM_SET_MODE;
			sa.mode = st.st_mode & 07777;
		}
	}
	r = 0;
	if (!sa.mask)
		goto out;
	r = pohm_ns_setattr(c->ns, ino, &sa, &in);
	if (r)
		r = chattr_settle(c, ino, &sa, &in, &smode, r);
	if (r) {
		r = chattr_unsent(c, fd, rel, &st, &sa, smode, r);
		goto out;
	}
	if (have_rec) {
		/* The attributes and the version only: dversion, size and chunk
		 * checksums describe the local data (a file open here may be
		 * changed and not pushed yet), as ensure_entry keeps them. */
		rec.version = in.version;
		rec.mode = in.mode;
		rec.uid = in.uid;
		rec.gid = in.gid;
		rec.ctime = in.ctime;
		pohm_journal_put(&c->j, &rec);
	}
	pohm_inode_clear(&in);
	r = 1;
out:
	pohm_jrec_clear(&rec);
	return r;
}

/* pohm_journal_update's edit for pohm_cache_chgrp_later: the flag alone,
 * on the record as it is now (a push that committed meanwhile stays). */
static int chgrp_flag_fn(struct pohm_jrec *r, const void *arg)
{
	(void)arg;
	if (r->flags & POHM_J_CHGRP)
		return -EALREADY;	/* nothing to write */
	r->flags |= POHM_J_CHGRP;
	return 0;
}

/* The flag for the file open at fd (st its stat), when it is one of the
 * storage's that the journal knows. */
static void chgrp_note(struct pohm_cache *c, int fd, const struct stat *st)
{
	uint64_t ino;
	int r;

	if ((uint64_t)st->st_dev != c->pdev ||
	    pohm_journal_lookup_local(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino))
		return;	/* not a file of the storage's */
	r = pohm_journal_update(&c->j, ino, chgrp_flag_fn, NULL);
	if (r && r != -EALREADY && r != -ENOENT)
		pohm_warn("fd %d: group change not stored (the journal took no note)", fd);
}

void pohm_cache_chgrp_later(struct pohm_cache *c, int fd)
{
	struct stat st;

	if (!c->is_root && !pohm_sys_fstat(fd, &st))
		chgrp_note(c, fd, &st);
}

void cache_chgrp_again(struct pohm_cache *c, int fd, uint32_t sent)
{
	struct stat st;

	/* After the put: a chown whose note came before it (and found the
	 * flag set) changed the group before this stat; one whose note
	 * comes after sets the flag itself. */
	if (fd >= 0 && !pohm_sys_fstat(fd, &st) && (uint32_t)st.st_gid != sent)
		chgrp_note(c, fd, &st);
}
