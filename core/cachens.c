/*
 * cachens.c — namespace changes under the prefix: the storage first (so
 * other hosts see them as soon as the call returns, like the 2012 directory
 * objects), then the same change on the local copy; if the local change
 * fails, the storage change is compensated.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache_int.h"
#include "log.h"
#include "sys.h"

static uint32_t my_uid(void)
{
	return (uint32_t)syscall(SYS_geteuid);
}

static uint32_t my_gid(void)
{
	return (uint32_t)syscall(SYS_getegid);
}

/* The inode this thread's last pohm_cache_create made, and a hash of its
 * path, for the pohm_cache_opened that follows (thread-local: no lock). */
static __thread uint64_t created_ino, created_hash;

static uint64_t rel_hash(const char *rel)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *rel; rel++)
		h = (h ^ (uint8_t)*rel) * 0x100000001b3ULL;
	return h;
}

/* Is dfd/name (lst) a clean copy of an inode other than ino, i.e. of a file
 * deleted elsewhere?  An unknown file, or a changed one, is not stale. */
static int stale_local(struct pohm_cache *c, int dfd, const char *name, const struct stat *lst,
		       uint64_t ino)
{
	struct pohm_jrec rec;
	uint64_t known;
	int stale;

	if (pohm_journal_lookup_local(&c->j, (uint64_t)lst->st_dev, (uint64_t)lst->st_ino, &known) ||
	    known == ino || pohm_journal_get(&c->j, known, &rec))
		return 0;
	stale = rec.lino == (uint64_t)lst->st_ino && !cache_local_changed(c, &rec, dfd, name, lst);
	pohm_jrec_clear(&rec);
	return stale;
}

/*
 * The local copy of the regular file in, which a create found in the storage
 * but not here: an empty file (or a stub when in has data, fetched next),
 * built under a temp name and linked in, so that nobody writes to it before
 * its state is taken.  If another process of this host made the name
 * meanwhile, that file stays as it is (it may already hold writes; its
 * maker records it).  0 or -errno.
 */
static int create_local(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			const struct pohm_inode *in)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	struct pohm_jrec rec;
	struct stat st;
	char tmp[64];
	int fd, r;

	if (in->nlink > 1)
		return cache_make_local(c, dfd, name, rel, in);	/* maybe a local hardlink */
	snprintf(tmp, sizeof(tmp), "c.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	fd = pohm_sys_openat(c->stage_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	/* A stub is mode 000 (EACCES without the shim); an empty file needs no fetch. */
	syscall(SYS_fchmod, fd, in->size ? 0 : in->mode & 07777);
	if (c->is_root)
		syscall(SYS_fchown, fd, in->uid, in->gid);
	r = pohm_sys_fstat(fd, &st);
	pohm_sys_close(fd);
	if (!r)
		r = syscall(SYS_linkat, c->stage_fd, tmp, dfd, name, 0) ? -errno : 0;
	pohm_sys_unlinkat(c->stage_fd, tmp, 0);
	if (r)
		return r == -EEXIST ? 0 : r;
	/* The state before the link: the link's own ctime change reads as dirty
	 * (the push then finds nothing to send), a write by anyone else too. */
	memset(&rec, 0, sizeof(rec));
	pohm_journal_note_inode(&rec, in);
	pohm_journal_note_local(&rec, &st);
	rec.flags = in->size ? POHM_J_STUB : 0;
	rec.validated_ns = pohm_sys_real_ns();
	snprintf(rec.hint, sizeof(rec.hint), "%s", rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * Refresh dfd/name from in, the version the create found, in this host's
 * push turn of the inode: other processes may be appending to the local
 * file and pushing it, and in may already be older than what one of them
 * committed and recorded since; that local copy is newer, never replaced.
 */
static int refresh_in_turn(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			   const struct pohm_inode *in)
{
	struct pohm_jrec rec;
	int turn = cache_push_turn_take(c, in->ino), r = 0, newer = 0;

	if (!pohm_journal_get(&c->j, in->ino, &rec)) {
		newer = !(rec.flags & POHM_J_STUB) && rec.dversion > in->dversion;
		pohm_jrec_clear(&rec);
	}
	if (!newer)
		r = pohm_cache_refresh(c, dfd, name, rel, in);
	if (turn)
		cache_push_turn_drop(c, in->ino);
	return r;
}

int pohm_cache_create(struct pohm_cache *c, const char *rel, mode_t mode, int excl)
{
	struct pohm_inode in;
	const char *name;
	uint64_t dino;
	int dfd, r;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_ns_create(c->ns, dino, name, S_IFREG | (mode & 07777), my_uid(), my_gid(), 0,
			   excl ? POHM_CREATE_EXCL : 0, &in);
	if (r == 1) {
		/* It exists: open it with its contents, as a local file system would. */
		if (S_ISREG(in.mode)) {
			struct stat lst;

			if (pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW))
				create_local(c, dfd, name, rel, &in);
			r = refresh_in_turn(c, dfd, name, rel, &in);
			if (r == -ENOENT)
				r = 0;	/* gone locally meanwhile (another thread's create): O_CREAT makes it */
			r = r ? r : 1;
		}
		pohm_inode_clear(&in);
	} else if (r == 0) {
		struct stat lst;

		/* A stale local file of that name (deleted elsewhere, clean) makes way.
		 * Not a file the journal does not tie to another inode: that may be
		 * another process's local copy of the inode we just made (its create
		 * found ours), already being written. */
		if (!pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(lst.st_mode) &&
		    stale_local(c, dfd, name, &lst, in.ino))
			pohm_sys_unlinkat(dfd, name, 0);
		cache_mark_fresh(c, in.ino);
		created_ino = in.ino;
		created_hash = rel_hash(rel);
		/* Remember the inode under its name until the real open tells us the local file. */
		{
			struct pohm_jrec rec;

			memset(&rec, 0, sizeof(rec));
			pohm_journal_note_inode(&rec, &in);
			rec.validated_ns = pohm_sys_real_ns();
			snprintf(rec.hint, sizeof(rec.hint), "%s", rel);
			r = pohm_journal_put(&c->j, &rec);
			pohm_jrec_clear(&rec);
		}
		pohm_inode_clear(&in);
	}
	pohm_sys_close(dfd);
	return r;
}

/*
 * Is the file open as fd (fst) the one rel names in the prefix, walked one
 * component at a time without following a symlink?  An open that went
 * through a symlink (or a directory swapped for one) may have reached a
 * file outside the prefix: that file is never recorded, so never pushed.
 */
static int names_fd(struct pohm_cache *c, const char *rel, const struct stat *fst)
{
	const char *name;
	struct stat st;
	int dfd = pohm_sys_open_parent(c->pfd, rel, &name), same;

	if (dfd < 0)
		return 0;
	same = !pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
	       st.st_dev == fst->st_dev && st.st_ino == fst->st_ino;
	pohm_sys_close(dfd);
	if (!same)
		pohm_debug("%s: the open reached another file (through a symlink): not ours", rel);
	return same;
}

int pohm_cache_opened(struct pohm_cache *c, const char *rel, int fd)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int r;

	r = pohm_sys_fstat(fd, &st);
	if (r)
		return r;
	if (!names_fd(c, rel, &st))
		return 0;
	/*
	 * Just created: whatever the index says about this local inode number
	 * is stale (the file system reuses numbers of deleted files at once).
	 * The create just before told us the inode (else ask the storage).
	 */
	if (created_ino && created_hash == rel_hash(rel)) {
		ino = created_ino;
	} else {
		r = pohm_ns_resolve(c->ns, rel, 0, &ino);
		if (r)
			return r;
	}
	created_ino = 0;
	r = pohm_journal_get(&c->j, ino, &rec);
	if (r == -ENOENT) {
		struct pohm_inode in;

		memset(&rec, 0, sizeof(rec));
		r = pohm_ns_getattr(c->ns, ino, &in);
		if (r)
			return r;
		pohm_journal_note_inode(&rec, &in);
		pohm_inode_clear(&in);
	} else if (r) {
		return r;
	}
	/* The local file starts as the (empty) committed version, with its times
	 * (so that closing it unwritten pushes nothing): a write makes it dirty. */
	if (!rec.lino && !st.st_size) {
		struct timespec tv[2] = {
			{ rec.atime.sec, rec.atime.nsec }, { rec.mtime.sec, rec.mtime.nsec },
		};

		int saved = errno;

		if (!syscall(SYS_utimensat, fd, NULL, tv, 0))
			pohm_sys_fstat(fd, &st);
		errno = saved;
		if (!st.st_size)
			pohm_journal_note_local(&rec, &st);
		else	/* another process wrote meanwhile: that is a change to push */
			rec.ldev = (uint64_t)st.st_dev, rec.lino = (uint64_t)st.st_ino;
	}
	else {
		rec.ldev = (uint64_t)st.st_dev;
		rec.lino = (uint64_t)st.st_ino;
	}
	snprintf(rec.hint, sizeof(rec.hint), "%s", rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	return r;
}

int pohm_cache_adopt(struct pohm_cache *c, const char *rel, int fd)
{
	struct pohm_inode in;
	struct pohm_jrec rec;
	const char *name;
	struct stat st;
	uint64_t dino, ino;
	int dfd, r;

	r = pohm_sys_fstat(fd, &st);
	if (r)
		return r;
	if (!pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino))
		return 0;	/* known already */
	if (!names_fd(c, rel, &st))
		return 0;
	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_ns_create(c->ns, dino, name, S_IFREG | (st.st_mode & 07777),
			   (uint32_t)st.st_uid, (uint32_t)st.st_gid, 0, 0, &in);
	pohm_sys_close(dfd);
	if (r < 0)
		return r;
	memset(&rec, 0, sizeof(rec));
	pohm_journal_note_inode(&rec, &in);
	pohm_inode_clear(&in);
	/* Recorded as the empty committed version: any content is a change to push. */
	rec.ldev = (uint64_t)st.st_dev;
	rec.lino = (uint64_t)st.st_ino;
	rec.lsize = st.st_size ? (uint64_t)-1 : 0;
	rec.lctime.sec = st.st_ctim.tv_sec;
	rec.lctime.nsec = (uint32_t)st.st_ctim.tv_nsec;
	rec.recorded_ns = pohm_sys_real_ns();
	snprintf(rec.hint, sizeof(rec.hint), "%s", rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	return r;
}

void pohm_cache_create_undo(struct pohm_cache *c, const char *rel)
{
	const char *name;
	uint64_t dino;
	int dfd;

	if (cache_walk_parent(c, rel, &dfd, &dino, &name))
		return;
	pohm_ns_unlink(c->ns, dino, name);
	pohm_sys_close(dfd);
}

int pohm_cache_mkdir(struct pohm_cache *c, const char *rel, mode_t mode)
{
	struct pohm_inode in;
	const char *name;
	uint64_t dino;
	int dfd, r;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_ns_mkdir(c->ns, dino, name, mode & 07777, my_uid(), my_gid(), &in);
	if (r)
		goto out;
	r = pohm_sys_mkdirat(dfd, name, mode & 07777);
	if (r == -EEXIST) {
		struct stat lst;

		/* A stale local directory (removed elsewhere): reuse it if it is a directory. */
		r = pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW);
		if (!r && !S_ISDIR(lst.st_mode))
			r = -EEXIST;
	}
	if (r) {
		pohm_ns_rmdir(c->ns, dino, name);	/* compensate */
	} else {
		r = cache_record(c, dfd, name, rel, &in, 0);
		cache_mark_fresh(c, in.ino);
	}
	pohm_inode_clear(&in);
out:
	pohm_sys_close(dfd);
	return r;
}

/* Storage inode behind dfd/name as the journal knows it (0 if unknown). */
static uint64_t local_ino(struct pohm_cache *c, int dfd, const char *name)
{
	struct stat st;
	uint64_t ino = 0;

	if (!pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino);
	return ino;
}

static int remove_entry(struct pohm_cache *c, const char *rel, int dir)
{
	const char *name;
	uint64_t dino, ino;
	int dfd, r;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_cache_materialize(c, rel, POHM_MAT_NOFOLLOW);
	if (r)
		goto out;
	ino = local_ino(c, dfd, name);
	r = dir ? pohm_ns_rmdir(c->ns, dino, name) : pohm_ns_unlink(c->ns, dino, name);
	if (r == -ENOENT && !ino) {
		struct stat lst;

		/* Only here (made behind the storage's back, e.g. by libc's mkstemp): local only. */
		if (!pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW))
			r = pohm_sys_unlinkat(dfd, name, dir ? AT_REMOVEDIR : 0);
		goto out;
	}
	if (r)
		goto out;
	/* The storage change is made; the local copy follows. */
	r = pohm_sys_unlinkat(dfd, name, dir ? AT_REMOVEDIR : 0);
	if (r == -ENOENT)
		r = 0;
	if (r)
		pohm_warn("%s: removed from the storage, but the local copy stays (%s)", rel,
			  strerror(-r));
	if (ino) {
		struct pohm_inode in;

		cache_unmark(c, ino);
		if (pohm_ns_getattr(c->ns, ino, &in) == -ENOENT) {
			pohm_journal_del(&c->j, ino);
			cache_push_forget(c, ino);
		} else
			pohm_inode_clear(&in);
	}
out:
	pohm_sys_close(dfd);
	return r;
}

int pohm_cache_unlink(struct pohm_cache *c, const char *rel)
{
	return remove_entry(c, rel, 0);
}

int pohm_cache_rmdir(struct pohm_cache *c, const char *rel)
{
	return remove_entry(c, rel, 1);
}

/* Both parents of a rename or link, materialized, with the source itself. */
struct two_paths {
	int ffd, tfd;			/* parent directory fds (close with two_close) */
	uint64_t fdino, tdino;		/* their storage inodes */
	const char *fname, *tname;	/* the last components */
};

static int two_walk(struct pohm_cache *c, const char *from, const char *to, int mat_to,
		    struct two_paths *t)
{
	int r;

	t->ffd = t->tfd = -1;
	r = cache_walk_parent(c, from, &t->ffd, &t->fdino, &t->fname);
	if (!r)
		r = cache_walk_parent(c, to, &t->tfd, &t->tdino, &t->tname);
	if (!r)
		r = pohm_cache_materialize(c, from, POHM_MAT_NOFOLLOW);
	if (!r && mat_to)
		r = pohm_cache_materialize(c, to, POHM_MAT_NOFOLLOW);
	return r;
}

static void two_close(struct two_paths *t)
{
	if (t->ffd >= 0)
		pohm_sys_close(t->ffd);
	if (t->tfd >= 0)
		pohm_sys_close(t->tfd);
}

int pohm_cache_rename(struct pohm_cache *c, const char *from, const char *to, unsigned flags)
{
	struct two_paths t;
	uint64_t ino;
	int r;

	r = two_walk(c, from, to, 1, &t);
	if (r)
		goto out;
	ino = local_ino(c, t.ffd, t.fname);
	r = pohm_ns_rename(c->ns, t.fdino, t.fname, t.tdino, t.tname, flags);
	if (r)
		goto out;
	r = syscall(SYS_renameat2, t.ffd, t.fname, t.tfd, t.tname, flags) ? -errno : 0;
	if (r) {
		/* Put the storage back as it was (best effort; logged if it fails). */
		unsigned back = flags & POHM_RENAME_EXCHANGE;

		if (pohm_ns_rename(c->ns, t.tdino, t.tname, t.fdino, t.fname, back))
			pohm_err("rename %s -> %s: done in the storage, failed locally (%s), and "
				 "could not be undone", from, to, strerror(-r));
		goto out;
	}
	if (ino) {
		struct pohm_jrec rec;

		if (!pohm_journal_get(&c->j, ino, &rec)) {
			snprintf(rec.hint, sizeof(rec.hint), "%s", to);
			pohm_journal_put(&c->j, &rec);
			pohm_jrec_clear(&rec);
		}
	}
out:
	two_close(&t);
	return r;
}

int pohm_cache_link(struct pohm_cache *c, const char *from, const char *to)
{
	struct two_paths t;
	uint64_t ino;
	int r;

	r = two_walk(c, from, to, 0, &t);
	if (!r)
		r = pohm_ns_lookup(c->ns, t.fdino, t.fname, &ino, NULL);
	if (!r)
		r = pohm_ns_link(c->ns, ino, t.tdino, t.tname, NULL);
	if (r)
		goto out;
	r = syscall(SYS_linkat, t.ffd, t.fname, t.tfd, t.tname, 0) ? -errno : 0;
	if (r)
		pohm_ns_unlink(c->ns, t.tdino, t.tname);	/* compensate */
	cache_unmark(c, ino);
out:
	two_close(&t);
	return r;
}

int pohm_cache_mknod(struct pohm_cache *c, const char *rel, mode_t mode, uint64_t rdev)
{
	struct pohm_inode in;
	const char *name;
	uint64_t dino;
	int dfd, r;

	if ((S_ISCHR(mode) || S_ISBLK(mode)) && !c->is_root)
		return -EPERM;		/* what mknod(2) says without CAP_MKNOD */
	if (!(mode & S_IFMT))
		mode |= S_IFREG;	/* as mknod(2): no type is a regular file */
	if (!S_ISFIFO(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISREG(mode))
		return -EINVAL;
	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_ns_create(c->ns, dino, name, (uint32_t)(mode & (S_IFMT | 07777)), my_uid(),
			   my_gid(), S_ISCHR(mode) || S_ISBLK(mode) ? rdev : 0, POHM_CREATE_EXCL, &in);
	if (r)
		goto out;
	r = syscall(SYS_mknodat, dfd, name, mode, (dev_t)rdev) ? -errno : 0;
	if (r)
		pohm_ns_unlink(c->ns, dino, name);	/* compensate */
	else
		r = cache_record(c, dfd, name, rel, &in, 0);
	pohm_inode_clear(&in);
out:
	pohm_sys_close(dfd);
	return r;
}

int pohm_cache_symlink(struct pohm_cache *c, const char *target, const char *rel)
{
	struct pohm_inode in;
	const char *name;
	uint64_t dino;
	int dfd, r;

	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r;
	r = pohm_ns_symlink(c->ns, dino, name, target, my_uid(), my_gid(), &in);
	if (r)
		goto out;
	r = syscall(SYS_symlinkat, target, dfd, name) ? -errno : 0;
	if (r)
		pohm_ns_unlink(c->ns, dino, name);
	else
		r = cache_record(c, dfd, name, rel, &in, 0);
	pohm_inode_clear(&in);
out:
	pohm_sys_close(dfd);
	return r;
}
