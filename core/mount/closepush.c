/*
 * closepush.c — when a host process's writes travel (moved from
 * preload/hooks_cache.c, issues 18 and 20): the push decisions at close,
 * fsync/sync/syncfs, msync, munmap, a writable mapping, and exit or exec.
 * The shim classifies the call and hands over the mount and an fd; what
 * only it knows (its fd table, the read-only shadows of write-only fds)
 * comes in as struct pohm_host_fds.  Callers hold the shim's hold (core
 * calls libc by name here), and every callback runs under it.
 *
 * The rules (DESIGN.md §2, issue 22 item 12): with sync_on_close, the
 * close of the process's last writing fd of a file pushes it; fsync and
 * friends and msync(MS_SYNC) always push; otherwise the files a process
 * wrote go on its dirty list, pushed at exit (and by exec) and by
 * pohmelfsd meanwhile.  A munmap pushes only what no writing fd of the
 * process still holds.  A push no fd of ours can read (a write-only fd
 * on a file we may not read) is handed to pohmelfsd, which may have
 * other rights; offline, a close's push waits in the cache for pohmelfsd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mount.h"
#include "sys.h"

/* How long an exit waits for the replies of writes sent without a wait
 * (decision 0073): over loopback and a LAN they are in long before. */
#define POHM_EXIT_SETTLE_NS (500ULL * 1000 * 1000)

/* Is the local file (dev, ino) open through an fd of the host under the
 * prefix (for writing only, with want_write) other than except (-1: any)? */
static int held(const struct pohm_host_fds *h, uint64_t dev, uint64_t ino, int want_write,
		int except)
{
	struct stat st;
	unsigned fl;
	uint64_t cookie;
	int fd;

	for (fd = h->next(0, &cookie, &fl); fd >= 0; fd = h->next(fd + 1, &cookie, &fl))
		if (fd != except && (!want_write || (fl & POHM_HOST_FD_WRITE)) &&
		    !pohm_sys_fstat(fd, &st) && (uint64_t)st.st_dev == dev &&
		    (uint64_t)st.st_ino == ino)
			return 1;
	return 0;
}

int pohm_proc_fd_held(void *h, uint64_t dev, uint64_t ino)
{
	return held(h, dev, ino, 0, -1);
}

/*
 * Push through fd, or through a readable fd on its inode when fd is
 * write-only (the shim's shadow, kept open until just before the host's
 * last close of the inode, so no POSIX lock of the program is released by
 * a push).  st: fd's stat if the caller just took it, or NULL; hfl: fd's
 * POHM_HOST_FD_* flags, or -1.
 * -EACCES/-EPERM: nothing can read it; the caller hands the push to
 * pohmelfsd.
 */
static int push_fd(struct pohm_cache *c, const struct pohm_host_fds *h, int fd,
		   const struct stat *st, int hfl)
{
	int r, shadow, fl;

	/* Write-only: straight to the readable fd.  Trying fd first cost ten
	 * calls (the journal's record, the push turn) before its pread failed
	 * EBADF (issue 23); a clean file's push answers 0 on either fd.  The
	 * access mode as the host's table recorded it at the open (hfl, its
	 * POHM_HOST_FD_* flags; -1: not known, asked with F_GETFL; issue 23).
	 * A table without it (an fd handed over by an earlier library) says
	 * "not write-only", and the EBADF below still finds the shadow. */
	if (hfl >= 0)
		fl = (hfl & POHM_HOST_FD_WRONLY) ? O_WRONLY : O_RDWR;
	else
		fl = pohm_sys_fcntl(fd, F_GETFL, 0);
	if (fl < 0 || (fl & O_ACCMODE) != O_WRONLY) {
		r = st ? pohm_cache_push_fd_as(c, fd, st) : pohm_cache_push_fd(c, fd);
		if (r != -EBADF)
			return r;
	}
	/* With st, the push's own fstat of the shadow in its turn checks it
	 * (-EBADFD: closed or another file now; issue 23, one fstat fewer a
	 * close); then it is asked for again, checked. */
	shadow = h->readable(fd, st, st ? POHM_HOST_FD_UNCHECKED : 0);
	if (shadow >= 0 && st) {
		r = pohm_cache_push_fd_as(c, shadow, st);
		if (r != -EBADFD)
			return r;
		shadow = h->readable(fd, st, 0);
	}
	if (shadow == -EBADF)
		return 0;	/* not a regular file: nothing to push */
	if (shadow < 0 && fl >= 0 && (fl & O_ACCMODE) == O_WRONLY) {
		/* Nothing can read it (mode 0200): a clean file's push still
		 * answers 0 through fd itself; a dirty one fails EBADF there
		 * and goes to pohmelfsd as before (session 13 review). */
		r = pohm_cache_push_fd(c, fd);
		return r == -EBADF ? shadow : r;
	}
	if (shadow < 0)
		return shadow;
	/* The shadow is on fd's file (h->readable checks it): fd's stat is its. */
	return st ? pohm_cache_push_fd_as(c, shadow, st) : pohm_cache_push_fd(c, shadow);
}

/* A push no fd of ours can read: pohmelfsd pushes it (maybe with other rights). */
static void hand_to_daemon(struct pohm_mount *m, uint64_t ino, int r)
{
	pohm_warn("a file written under the prefix cannot be read back for its push (%s); "
		  "pohmelfsd will push it", strerror(-r));
	pohm_dirty_note(pohm_proc_dirty(), ino);
	pohm_mount_daemon_start(m);
}

/*
 * Push everything dirty without touching the process's POSIX locks: files
 * it has open through its own fds (pread on them), the others by path,
 * their commits together (pohm_cache_push_fds, issue 23).  but_writers:
 * leave out the files this process still has open for writing (their
 * writer's close, fsync or exit pushes them, or pohmelfsd): a munmap ends
 * a writer, not a write session (issue 22 item 12).  own (exit, exec):
 * the others are the n files of the process's dirty list own[], not every
 * dirty file of the journal (other processes' leftovers are pohmelfsd's;
 * sync, syncfs and msync still push them all, as sync(2) flushes all).
 */
static int push_process(struct pohm_mount *m, const struct pohm_host_fds *h, int but_writers,
			const uint64_t *own, size_t n)
{
	struct pohm_cache *c = m->cache;
	struct stat st;
	uint64_t cookie;
	unsigned fl;
	int fd, r, err = 0;

	for (fd = h->next(0, &cookie, &fl); fd >= 0; fd = h->next(fd + 1, &cookie, &fl)) {
		if (fl & POHM_HOST_FD_NODATA)
			continue;
		if (but_writers && ((fl & POHM_HOST_FD_WRITE) ||
				    (!pohm_sys_fstat(fd, &st) &&
				     held(h, (uint64_t)st.st_dev, (uint64_t)st.st_ino, 1, -1))))
			continue;
		r = push_fd(c, h, fd, NULL, (int)fl);
		if (r == -EACCES || r == -EPERM)
			hand_to_daemon(m, cookie, r);
		else if (r < 0)
			err = r;
	}
	r = own ? pohm_cache_sync_inos(c, n, own, pohm_proc_fd_held, (void *)h)
		: pohm_cache_sync_others(c, pohm_proc_fd_held, (void *)h);
	return r < 0 ? r : err;
}

/* Left for exit and pohmelfsd: on the dirty list, and pohmelfsd runs. */
static int leave_dirty(struct pohm_mount *m, uint64_t ino)
{
	pohm_proc_count(POHM_ST_CLOSE, 0);
	pohm_dirty_note(pohm_proc_dirty(), ino);
	pohm_mount_daemon_start(m);
	return 0;
}

/*
 * A writing fd opened before a switch to another user belongs to the
 * first user's cache: the new user's cache does not know the file, its
 * push here finds nothing to do, and the first user's pohmelfsd or
 * `pohmelfs sync` pushes it (libpohmelfs(7) LIMITS).
 */
int pohm_proc_close(struct pohm_mount *m, const struct pohm_host_fds *h, int fd, uint64_t ino,
		    unsigned hfl)
{
	struct pohm_cache *c = m->cache;
	struct stat st;
	const struct stat *known;
	int r, last;

	/* Is this the process's last writing fd of the file?  While another
	 * one is open (Python's mmap keeps a dup of the fd it maps) the file
	 * is still being written: it stays open for write (writer.c), and
	 * under sync_on_close that fd's close pushes (issue 22 item 12); the
	 * exit pushes it at the latest.  fd's stat serves the push and the
	 * shadow's close too (issue 23).  A write-only fd's file as its open
	 * recorded it with its shadow, without an fstat (issue 23): the
	 * push's own fstat of the shadow in its turn checks the shadow is
	 * still that file, and it is the file the program wrote through fd —
	 * even if a raw dup2 put another file on fd's number since, whose
	 * fstat would have pushed the other file and left this one's shadow
	 * open. */
	if ((hfl & POHM_HOST_FD_WRONLY) && h->known && !h->known(fd, &st))
		known = &st;
	else
		known = pohm_sys_fstat(fd, &st) ? NULL : &st;
	last = known && S_ISREG(st.st_mode);
	if (last && held(h, (uint64_t)st.st_dev, (uint64_t)st.st_ino, 1, fd)) {
		last = 0;
		if (m->sync_on_close) {
			h->closing(fd, known);
			pohm_proc_count(POHM_ST_CLOSE, 0);
			pohm_dirty_note(pohm_proc_dirty(), ino);
			return 0;
		}
	}
	if (!m->sync_on_close) {
		h->closing(fd, known);
		if (last)
			pohm_cache_writer_close(c, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
		return leave_dirty(m, ino);	/* pushed at exit and by pohmelfsd meanwhile */
	}
	r = push_fd(c, h, fd, known, (int)hfl);
	h->closing(fd, known);
	/* Pushed: the inode is no longer open for write here (after the push,
	 * so pohmelfsd does not push it at the same time). */
	if (last)
		pohm_cache_writer_close(c, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	/* Offline: the data stays in the cache, and pohmelfsd pushes it when
	 * the storage answers. */
	if (r < 0 && pohm_mount_offline(m))
		return leave_dirty(m, ino);
	if (r != -EACCES && r != -EPERM)
		return pohm_proc_count(POHM_ST_CLOSE, r < 0 ? -EIO : 0);
	/* A write-only fd on a file we may not read: another process
	 * (pohmelfsd, maybe with other rights) pushes it, the close succeeds. */
	pohm_proc_count(POHM_ST_CLOSE, 0);
	hand_to_daemon(m, ino, r);
	return 0;
}

int pohm_proc_sync(struct pohm_mount *m, const struct pohm_host_fds *h, int fd, uint64_t ino)
{
	int r;

	if (fd < 0)
		r = push_process(m, h, 0, NULL, 0);
	else if ((r = push_fd(m->cache, h, fd, NULL, -1)) == -EACCES || r == -EPERM) {
		hand_to_daemon(m, ino, r);
		r = 0;
	}
	return pohm_proc_count(POHM_ST_SYNC, r < 0 ? -EIO : 0);
}

void pohm_proc_mapped(struct pohm_mount *m, const struct pohm_host_fds *h, int fd,
		       const uint64_t *ino)
{
	struct stat st;

	/* A writable shared mapping writes the file until it is unmapped,
	 * maybe after its fd's close (whose push came before those writes):
	 * the exit pushes it if no munmap did, and the inode stays open for
	 * write until the process ends (writer.c). */
	if (ino)
		pohm_dirty_note(pohm_proc_dirty(), *ino);
	if (fd >= 0 && !pohm_sys_fstat(fd, &st))
		pohm_cache_writer_mapped(m->cache, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

int pohm_proc_unmapped(struct pohm_mount *m, const struct pohm_host_fds *h, int sync)
{
	/* msync(MS_SYNC) promises what fsync does: everything, now.  A munmap
	 * ends a writer: what no open fd of ours still writes travels now. */
	if (sync)
		return push_process(m, h, 0, NULL, 0) < 0 ? -EIO : 0;
	push_process(m, h, 1, NULL, 0);
	return 0;
}

void pohm_proc_exit_push(const struct pohm_host_fds *h, int settle)
{
	struct pohm_mount *m = pohm_proc_mount_now();
	uint64_t *own = NULL;
	size_t n;

	/* Through the cache of the process's user now (another user's
	 * cache_dir is closed to it: that user's pohmelfsd or `pohmelfs sync`
	 * pushes what was left there).  What this process wrote: its dirty
	 * list, not a walk of the whole journal (issue 23). */
	if (m && (n = pohm_dirty_take_list(pohm_proc_dirty(), &own)))
		push_process(m, h, 0, own, n);
	free(own);
	/* Writes sent without a wait (a rename's finish, decision 0073): their
	 * outcome, briefly; one not answered by then is the readers'.  Every
	 * mount's, one deadline: a process that switched users made its
	 * renames through the other user's mount (session 20). */
	if (settle)
		pohm_proc_settle_all(pohm_sys_mono_ns() + POHM_EXIT_SETTLE_NS);
	/* The CAS bases for the next process, once (decision 0048). */
	if (m)
		pohm_cache_kept_flush(m->cache);
}
