/*
 * sync.c — what the storage must hear about an fd's data and its file
 * system: fsync, fdatasync, sync, syncfs, sync_file_range (commit after
 * the local sync succeeded), mmap/munmap/msync (a writable shared mapping
 * of a tracked fd is a writer until unmapped), copy_file_range and
 * sendfile into a tracked fd, and the statfs/statvfs families (the
 * storage's figures overlaid on the local ones).
 *
 * Sections: sync; mappings; fd-to-fd copies; file systems.
 */
#include "shim.h"

#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

/* ------------------------------------------------------------ sync */

/* After a successful local sync of fd: the commit, when fd is ours. */
static int synced(enum pohm_sync_op op, int fd, int r)
{
	struct pohm_fd_info fi;

	if (r < 0 || !pohm_claim_fd(fd, &fi))
		return r;
	return pohm_ret(pohm_hook_sync(op, fd, &fi));
}

POHM_EXPORT int fsync(int fd)
{
	pohm_init();
	return synced(POHM_SYNC_FSYNC, fd, pohm_real.fsync(fd));
}

POHM_EXPORT int fdatasync(int fd)
{
	pohm_init();
	return synced(POHM_SYNC_FDATASYNC, fd, pohm_real.fdatasync(fd));
}

POHM_EXPORT int syncfs(int fd)
{
	pohm_init();
	return synced(POHM_SYNC_FS, fd, pohm_real.syncfs(fd));
}

POHM_EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	int r;

	pohm_init();
	r = pohm_real.sync_file_range(fd, off, n, flags);
	if (!(flags & SYNC_FILE_RANGE_WAIT_AFTER))
		return r;
	return synced(POHM_SYNC_RANGE, fd, r);
}

/* sync() cannot fail: a failed commit is the storage's to log. */
POHM_EXPORT void sync(void)
{
	int saved;

	pohm_init();
	pohm_real.sync();
	if (pohm_active()) {
		saved = errno;
		pohm_hook_sync(POHM_SYNC_ALL, -1, NULL);
		errno = saved;
	}
}

/* ------------------------------------------------------------ mappings */

/* Writable shared mappings of tracked fds made so far (munmap looks only then). */
static int maps_writable;

static void mapped(void *m, size_t len, int prot, int flags, int fd)
{
	struct pohm_fd_info fi;

	if (m == MAP_FAILED || fd < 0 || !(prot & PROT_WRITE) ||
	    (flags & MAP_TYPE) == MAP_PRIVATE || !pohm_claim_fd(fd, &fi))
		return;
	__atomic_add_fetch(&maps_writable, 1, __ATOMIC_RELAXED);
	pohm_hook_fd_event(POHM_EV_MAP_WRITE, fd, &fi, m, len);
}

POHM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m;

	pohm_init();
	m = pohm_real.mmap(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && !(prot & PROT_READ))
		pohm_addr_changed();	/* may replace readable pages (MAP_FIXED) */
	mapped(m, len, prot, flags, fd);
	return m;
}

POHM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	void *m;

	pohm_init();
	m = pohm_real.mmap64(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && !(prot & PROT_READ))
		pohm_addr_changed();
	mapped(m, len, prot, flags, fd);
	return m;
}

POHM_EXPORT int munmap(void *addr, size_t len)
{
	int r;

	pohm_init();
	r = pohm_real.munmap(addr, len);
	pohm_addr_changed();	/* pages cached as readable may be gone (addr.c) */
	if (r == 0 && __atomic_load_n(&maps_writable, __ATOMIC_RELAXED) && pohm_active())
		pohm_hook_fd_event(POHM_EV_UNMAP, -1, NULL, addr, len);
	return r;
}

POHM_EXPORT int msync(void *addr, size_t len, int flags)
{
	int r;

	pohm_init();
	r = pohm_real.msync(addr, len, flags);
	if (r < 0 || !(flags & MS_SYNC) || !__atomic_load_n(&maps_writable, __ATOMIC_RELAXED) ||
	    !pohm_active())
		return r;
	return pohm_ret(pohm_hook_fd_event(POHM_EV_MSYNC, -1, NULL, addr, len));
}

/* ------------------------------------------------------------ fd-to-fd copies */

static void written(int fd, long r)
{
	struct pohm_fd_info fi;

	if (r > 0 && pohm_claim_fd(fd, &fi))
		pohm_hook_fd_event(POHM_EV_WRITTEN, fd, &fi, NULL, (size_t)r);
}

POHM_EXPORT ssize_t copy_file_range(int in, off64_t *inoff, int out, off64_t *outoff, size_t n,
				    unsigned int flags)
{
	ssize_t r;

	pohm_init();
	r = pohm_real.copy_file_range(in, inoff, out, outoff, n, flags);
	written(out, r);
	return r;
}

POHM_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	ssize_t r;

	pohm_init();
	r = pohm_real.sendfile(out, in, off, n);
	written(out, r);
	return r;
}

POHM_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
	ssize_t r;

	pohm_init();
	r = pohm_real.sendfile64(out, in, off, n);
	written(out, r);
	return r;
}

/* ------------------------------------------------------------ file systems */

/* Lookup hook before a statfs by path: POHM_PASS or -errno. */
static int statfs_pre(struct pohm_path *p)
{
	int r = pohm_hook_lookup(POHM_PL_STATFS, p, 0);

	return r == POHM_PASS || r >= 0 ? POHM_PASS : r;
}

POHM_EXPORT int statfs(const char *path, struct statfs *sf)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.statfs(path, sf);
	if ((r = statfs_pre(&p)) == POHM_PASS && (r = pohm_sysret(pohm_real.statfs(path, sf))) == 0)
		pohm_hook_statfs_fix(&p, -1, sf, NULL);
	return pohm_ret(r);
}

POHM_EXPORT int statfs64(const char *path, struct statfs64 *sf)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.statfs64(path, sf);
	if ((r = statfs_pre(&p)) == POHM_PASS &&
	    (r = pohm_sysret(pohm_real.statfs64(path, sf))) == 0)
		pohm_hook_statfs_fix(&p, -1, (struct statfs *)sf, NULL);
	return pohm_ret(r);
}

POHM_EXPORT int statvfs(const char *path, struct statvfs *sv)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.statvfs(path, sv);
	if ((r = statfs_pre(&p)) == POHM_PASS &&
	    (r = pohm_sysret(pohm_real.statvfs(path, sv))) == 0)
		pohm_hook_statfs_fix(&p, -1, NULL, sv);
	return pohm_ret(r);
}

POHM_EXPORT int statvfs64(const char *path, struct statvfs64 *sv)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_real.statvfs64(path, sv);
	if ((r = statfs_pre(&p)) == POHM_PASS &&
	    (r = pohm_sysret(pohm_real.statvfs64(path, sv))) == 0)
		pohm_hook_statfs_fix(&p, -1, NULL, (struct statvfs *)sv);
	return pohm_ret(r);
}

/* fd forms: the overlay when the fd was opened under the prefix. */
static int fstatfs_done(int fd, int r, struct statfs *sf, struct statvfs *sv)
{
	struct pohm_fd_info fi;

	if (r == 0 && pohm_claim_fd(fd, &fi))
		pohm_hook_statfs_fix(NULL, fd, sf, sv);
	return r;
}

POHM_EXPORT int fstatfs(int fd, struct statfs *sf)
{
	pohm_init();
	return fstatfs_done(fd, pohm_real.fstatfs(fd, sf), sf, NULL);
}

POHM_EXPORT int fstatfs64(int fd, struct statfs64 *sf)
{
	pohm_init();
	return fstatfs_done(fd, pohm_real.fstatfs64(fd, sf), (struct statfs *)sf, NULL);
}

POHM_EXPORT int fstatvfs(int fd, struct statvfs *sv)
{
	pohm_init();
	return fstatfs_done(fd, pohm_real.fstatvfs(fd, sv), NULL, sv);
}

POHM_EXPORT int fstatvfs64(int fd, struct statvfs64 *sv)
{
	pohm_init();
	return fstatfs_done(fd, pohm_real.fstatvfs64(fd, sv), NULL, (struct statvfs *)sv);
}
