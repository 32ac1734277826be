/*
 * procopen.c — an open by a host process under the prefix, in one call
 * (moved from preload/hooks_cache.c's hook_open/hook_open_done pair,
 * issue 20): the storage's half (a create, or the name materialized with
 * the open mode's own checks), a writer's open-for-write lock taken before
 * the real open (pohm_cache_writer_prelock; why: doc/notes-s11-model2.md),
 * the host's own open, then the fd's side: a created file recorded on its
 * fd (or undone when the open failed), a writer's storage inode and
 * open-for-write lock, pohmelfsd's start, a write-only fd's shadow.
 * What passed between the two halves in thread-locals (the created flag,
 * the real path, the lock) are locals here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mount.h"
#include "sys.h"

/* Internal: the storage leaves the open to the kernel (the real open). */
#define KERNEL	(-0x10000)

/* Open-for-write locks held before the next sweep (see writer_opened);
 * relaxed atomic, any thread. */
static int sweep_at = 16;

/* The held callback of pohm_cache_writer_*: (dev, ino) open through a
 * host fd under the prefix. */
static int held_here(void *h, uint64_t dev, uint64_t ino)
{
	return pohm_proc_fd_held(h, dev, ino);
}

/* What held_here_or asks: the host's fds, and the file the current open
 * is about, whose fd is not in the host's table yet. */
struct opening {
	const struct pohm_host_fds *h;
	uint64_t dev, ino;
};

static int held_here_or(void *arg, uint64_t dev, uint64_t ino)
{
	const struct opening *o = arg;

	return (o->dev == dev && o->ino == ino) || held_here((void *)o->h, dev, ino);
}

/*
 * A create answered -EXDEV: the storage's walk met a symlink with an
 * absolute target, or one climbing above the prefix root, on the way to
 * rel's parent.  The kernel follows it: by the parent's real path below
 * the prefix the create is tried once more (*own: that name, malloc'd);
 * outside the prefix, or a parent that does not resolve, the open is the
 * kernel's alone (*outside).  Returns KERNEL or the create's result; an
 * open never fails EXDEV here (the kernel decides).
 */
static int open_beyond(struct pohm_cache *c, const char *rel, mode_t mode, int excl,
		       char **own, int *outside)
{
	char *q = malloc(POHM_PROC_REL_MAX);
	int r;

	if (!q)
		return KERNEL;	/* as the same name: the kernel decides */
	if (!strchr(rel, '/')) {
		snprintf(q, POHM_PROC_REL_MAX, "%s", rel);
		r = 0;
	} else {
		r = pohm_cache_parent_real(c, rel, q, POHM_PROC_REL_MAX);
	}
	if (r == 0 && strcmp(q, rel)) {
		*own = q;
		r = pohm_cache_create(c, q, mode, excl);
	} else {
		r = r == 0 ? -EXDEV : KERNEL;
	}
	if (r == KERNEL || r == -EXDEV) {
		free(q);
		*own = NULL;
		*outside = r == KERNEL;
		r = KERNEL;
	}
	return r;
}

/* The storage's half of an open of rel: KERNEL (do the real open) or
 * -errno.  hold: a create's new file's parent is held for the open
 * (pohm_cache_create_held).  *created, *own, *outside as open_beyond;
 * counted. */
static int open_before(struct pohm_cache *c, const char *rel, unsigned pflags, int flags,
		       mode_t mode, int hold, int *created, char **own, int *outside)
{
	unsigned mf = POHM_MAT_DATA | POHM_MAT_LIST;	/* a file's data, a directory's entries */
	int r;

	if ((flags & O_CREAT) && (pflags & POHM_POF_DIRNAME))
		return KERNEL;	/* a directory's name: EISDIR (or ENOTDIR, EEXIST) from the kernel */
	if (flags & O_CREAT) {
		r = hold ? pohm_cache_create_held(c, rel, pohm_mount_new_mode(mode), !!(flags & O_EXCL))
			 : pohm_cache_create(c, rel, pohm_mount_new_mode(mode), !!(flags & O_EXCL));
		if (r == -EXDEV)
			r = open_beyond(c, rel, pohm_mount_new_mode(mode), !!(flags & O_EXCL), own,
					outside);
		if (r == -ENOENT && pohm_cache_parent_refused(c, rel))
			r = KERNEL;	/* a socket on the way: ENOTDIR from the kernel */
		if (r == 0)
			*created = 1;
		return pohm_proc_count(POHM_ST_CREATE, r < 0 && r != -EISDIR && r != KERNEL ?
					r : KERNEL);
	}
	if (flags & O_NOFOLLOW)
		mf |= POHM_MAT_NOFOLLOW;
	/* The open mode's own bits, as the kernel checks them (not R_OK always). */
	mf |= POHM_MAT_OPEN;
	if ((flags & O_ACCMODE) != O_WRONLY)
		mf |= POHM_MAT_OPEN_R;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		mf |= POHM_MAT_OPEN_W;	/* O_TRUNC asks write permission too */
	if (flags & O_PATH)
		mf = flags & O_NOFOLLOW ? POHM_MAT_NOFOLLOW : 0;
	if ((mf & POHM_MAT_OPEN_W) && pohm_sys_test_switch(POHM_TEST_REFRESH_IN_OPEN))
		r = 0;	/* test build: the refresh comes after the real open instead */
	else
		r = pohm_cache_materialize(c, rel, mf);
	return pohm_proc_count(POHM_ST_OPEN, r < 0 ? r : KERNEL);
}

/*
 * A write-open of the local file (ldev, lino), storage inode ino: the inode
 * is open for write until this process's last writing fd on it closes or
 * the process ends (writer.c), and pohmelfsd runs (it pushes what a writer
 * that never closes leaves).  Locks and shadows of files the host closed
 * behind our back (a raw SYS_close: node/libuv) are swept first, by
 * identity: no fd of the host still names that (dev, ino).  Sweeps are
 * amortized: when the held locks reach twice what the last sweep left.
 */
static void writer_opened(struct pohm_cache *c, const struct pohm_host_fds *h,
			  struct pohm_wprelock *pl, uint64_t ino, uint64_t ldev, uint64_t lino,
			  int keep_on_exec)
{
	struct pohm_mount *um = pohm_proc_mount_of(c);
	struct opening o = { h, ldev, lino };
	int n, r;

	n = pohm_cache_writer_count(c);
	if (n >= __atomic_load_n(&sweep_at, __ATOMIC_RELAXED)) {
		/* Not the lock this open took before it (pohm_cache_writer_prelock):
		 * its fd is not in the host's table yet. */
		n -= pohm_cache_writer_sweep(c, held_here_or, &o);
		h->sweep();
		__atomic_store_n(&sweep_at, n * 2 > 16 ? n * 2 : 16, __ATOMIC_RELAXED);
	}
	r = pohm_cache_writer_open_pre(c, pl, ino, ldev, lino, keep_on_exec, held_here, (void *)h);
	if (r)
		pohm_debug("inode %llx: not marked open for write (%s); pohmelfsd's rounds push it",
			   (unsigned long long)ino, strerror(-r));
	if (um)
		pohm_mount_daemon_start(um);
}

/* The fd's side of an open of name (rel: the name the host gave), fd >= 0
 * or -errno; *created: this open made the file.  Returns fd. */
static int open_after(struct pohm_cache *c, const struct pohm_host_fds *h, const char *rel,
		      const char *name, int flags, int fd, int created, struct pohm_wprelock *pl,
		      uint64_t *ino)
{
	struct stat st, lst;	/* lst: fd's local stat (st becomes the storage's) */
	uint64_t known = 0;
	int have = 0;

	if (fd < 0) {
		pohm_cache_writer_prelock_drop(c, pl, held_here, (void *)h);
		if (created)
			pohm_cache_create_undo(c, name);
		return fd;
	}
	if (created)
		pohm_cache_opened_as(c, name, fd, &st, &known);
	else if (flags & O_CREAT)
		pohm_cache_adopt(c, name, fd);	/* made by libc itself (mkstemp) */
	/* The storage inode, for the dirty list at close, and "open for write":
	 * writers only (a reader's open stays a few syscalls).  A file this
	 * open created and recorded: as recorded (issue 23). */
	if ((flags & O_ACCMODE) != O_RDONLY && (known || !pohm_sys_fstat(fd, &st))) {
		uint64_t ldev = (uint64_t)st.st_dev, lino = (uint64_t)st.st_ino;

		have = 1;
		lst = st;
		if (known)
			*ino = known;
		else {
			pohm_cache_stat_fix(c, &st);
			*ino = (uint64_t)st.st_ino;
		}
		if (S_ISREG(st.st_mode) && !(flags & O_PATH) &&
		    pohm_sys_test_switch(POHM_TEST_REFRESH_IN_OPEN))
			pohm_cache_materialize(c, rel, POHM_MAT_DATA);	/* the race */
		if (S_ISREG(st.st_mode) && !(flags & O_PATH))
			writer_opened(c, h, pl, *ino, ldev, lino, !(flags & O_CLOEXEC));
	}
	if (pl->state != POHM_WPRE_NONE)	/* not a writer's regular file after all */
		pohm_cache_writer_prelock_drop(c, pl, held_here, (void *)h);
	/* A write-only fd gets its read-only shadow now, while the process may
	 * still read the file (a later fchmod may take that away); a file we
	 * may not read gets none.  Its stat as just taken (issue 23). */
	if ((flags & O_ACCMODE) == O_WRONLY && !(flags & O_PATH))
		h->readable(fd, have ? &lst : NULL, 1);
	return fd;
}

int pohm_proc_open(struct pohm_cache *c, const struct pohm_host_fds *h, const char *rel,
		   unsigned pflags, int flags, mode_t mode, uint64_t *ino,
		   const struct pohm_proc_real *real)
{
	struct pohm_wprelock pl = { .state = POHM_WPRE_NONE };
	const char *name;
	char *own = NULL;
	int created = 0, outside = 0, dfd, r;
	/* A new file may be opened by its parent (issue 23): not a
	 * directory's or a path-only open. */
	int hold = real->at && !(flags & (O_DIRECTORY | O_PATH));

	r = open_before(c, rel, pflags, flags, mode, hold, &created, &own, &outside);
	/* The create made a new inode and holds its local parent (the kept
	 * one, checked by its kernel path: no symlink on the way; a walk's
	 * low fd is never held): the host's open is made
	 * there, by name, with O_EXCL — the new file, made by this open, at
	 * rel (three calls fewer: no stale-name check before it, no name
	 * check and no fstat after it).  A name there already (a stale copy, another process's
	 * file, a symlink), or any failure: the stale-name check, then the
	 * host's own open by its path, as before. */
	if (hold && (dfd = pohm_cache_create_parent(c, &name)) >= 0) {
		int fd = r == KERNEL && created ? real->at(real->arg, dfd, name, O_EXCL) : -1;

		pohm_cache_create_parent_done(c, fd >= 0);
		if (fd >= 0) {
			r = fd;
			goto opened;
		}
	}
	/* A writer's open of an existing file takes its open-for-write lock
	 * first (no refresh renames over the name until the fd is held).  Not
	 * a name this open just created: its create found no local file there
	 * after the storage's insert (cachens.c), so there is no recorded copy
	 * to hold, and the prelock's fstatat only failed ENOENT (issue 23);
	 * a file another process made there meanwhile is locked after the
	 * open and its copy checked (pohm_cache_writer_open_pre). */
	if (r == KERNEL && !outside && !created)
		pohm_cache_writer_prelock(c, own ? own : rel, flags, &pl);
	if (r == KERNEL) {
		r = real->call(real->arg);
		if ((r == -EMFILE || r == -ENFILE) && pohm_cache_kept_drop(c))
			r = real->call(real->arg);	/* the kept look's number given back */
	}
	if (outside)
		return r;	/* through a symlink out of the prefix: the kernel's alone */
opened:
	r = open_after(c, h, rel, own ? own : rel, flags, r, created, &pl, ino);
	free(own);
	return r;
}

int pohm_proc_mktemp(struct pohm_cache *c, const struct pohm_host_fds *h, const char *rel,
		     int flags, uint64_t *ino, const struct pohm_proc_real *real)
{
	struct pohm_wprelock pl = { .state = POHM_WPRE_NONE };
	int r;

	/* The template's directory must be local before libc's loop runs in it. */
	r = pohm_proc_lookup(c, POHM_PL_TEMPDIR, rel, 0, 0);
	if (r < 0)
		return r;
	r = real->call(real->arg);	/* rel now names the file libc made */
	return open_after(c, h, rel, rel, flags, r, 0, &pl, ino);
}
