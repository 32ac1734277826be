/*
 * createmark.c — create marks: a creator's lock on the byte of (directory,
 * name) that a listing of another process of this host respects, and the
 * expiry of the earlier format's mark files.  Below the listing (cache.c),
 * the creates (cachens.c) and the rename recovery (mvintent.c), which all
 * use it.  (Moved out of cachens.c in session 13, issue 20.)
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

uint64_t cache_rel_hash(const char *rel)
{
	return pohm_fnv1a(POHM_FNV_BASIS, rel);
}

/*
 * Create marks (RELIABILITY finding 2): between a create's storage insert
 * and the creator's local O_EXCL open, a listing by another process of this
 * host would put a stub at the name and the open would fail EEXIST.  The
 * creator holds an exclusive OFD lock on the byte hash(directory inode,
 * name) of cache_dir/c.lock from before the insert until after its local
 * open (the fd in this thread's created_lock); a listing leaves a name
 * alone while that byte is locked (F_OFD_GETLK: nothing taken).  The kernel
 * drops the lock if the creator dies, so a kill between the insert and the
 * open leaves a name the next listing makes at once: no pid in a file, no
 * kill(pid, 0), no 5-second window (decision 0016).  Two names sharing a
 * byte only make a listing leave one alone a moment longer.
 *
 * Marks of the earlier format (files p/DINO.cHASH holding a pid) are no
 * longer honoured; cache_rename_recover's scan of p/ removes them once
 * they are CREATE_MARK_NS old.
 */
#define CREATE_MARK_NS 5000000000ULL

/* This thread's create lock on c.lock: fd + 1 (0: none); the fd is a
 * description of its own, kept between creates (lockfd.c: a create's
 * open and close of c.lock are one F_UNLCK, issue 23). */
static __thread int created_lock;
static __thread unsigned created_gen;	/* cache_lockfd_take's, for the give */

static off_t create_byte(uint64_t dino, const char *name)
{
	return (off_t)((cache_rel_hash(name) ^ (dino * 0x9e3779b97f4a7c15ULL)) & 0x3fffffffffffffffULL);
}

void cache_create_mark(struct pohm_cache *c, uint64_t dino, const char *name, int on)
{
	struct flock fl;
	int fd;

	if (created_lock) {
		cache_lockfd_give(c, CACHE_LF_C, created_lock - 1, created_gen);
		created_lock = 0;
	}
	if (!on)
		return;
	fd = cache_lockfd_take(c, CACHE_LF_C, &created_gen);
	if (fd < 0)
		return;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = create_byte(dino, name);
	fl.l_len = 1;
	/* Not waited for: a creator of the same name (or byte) holds it, and
	 * a listing leaves the name alone for that one as well. */
	if (pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl)) {
		cache_lockfd_give(c, CACHE_LF_C, fd, created_gen);
		return;
	}
	created_lock = fd + 1;
}

/* 1 while a mark (st: its stat) is younger than CREATE_MARK_NS. */
static int create_mark_young(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + (uint64_t)st->st_mtim.tv_nsec +
		       CREATE_MARK_NS > pohm_sys_real_ns();
}

/* 1 if a p/ entry's name is an earlier-format create mark's: HEX.c + 16 hex digits. */
static int create_mark_name(const char *n, size_t len)
{
	size_t i;

	if (len < 19 || n[len - 18] != '.' || n[len - 17] != 'c')
		return 0;
	for (i = 0; i < len; i++)
		if (i != len - 18 && i != len - 17 && !isxdigit((unsigned char)n[i]))
			return 0;
	return 1;
}

int cache_old_mark_expire(int dfd, const char *name, size_t len)
{
	struct stat st;

	if (!create_mark_name(name, len))
		return 0;
	if (!pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
	    !create_mark_young(&st))
		pohm_sys_unlinkat(dfd, name, 0);
	return 1;
}

/* c.lock opened once per cache and process for the checks (issue 23: a
 * listing checked each new name twice, an open and a close each time, or
 * a failed open in a cache where no create had run yet: made here then, as
 * the first creator would); read-only where the cache may only be read;
 * -errno when neither works. */
static int marks_fd(struct pohm_cache *c)
{
	int fd = __atomic_load_n(&c->cmark_fd, __ATOMIC_ACQUIRE), none = -1;

	if (fd >= 0)
		return fd;
	fd = pohm_journal_open_own(c->j.dirfd, "c.lock", O_RDWR | O_CREAT);
	if (fd < 0)
		fd = pohm_sys_openat(c->j.dirfd, "c.lock", O_RDONLY, 0);
	if (fd < 0)
		return fd;
	fd = pohm_sys_move_high(fd);
	if (fd < 0)
		return fd;
	if (!__atomic_compare_exchange_n(&c->cmark_fd, &none, fd, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		pohm_sys_close(fd);	/* another thread's won */
		return none;
	}
	pohm_own_set(&c->cmark_fd, fd);	/* the host's close and dup2 leave it alone */
	return fd;
}

int cache_create_marked(struct pohm_cache *c, uint64_t dino, const char *name)
{
	struct flock fl;
	int fd, r;

	fd = marks_fd(c);
	if (fd < 0)
		return 0;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = create_byte(dino, name);
	fl.l_len = 1;
	r = pohm_sys_fcntl(fd, F_OFD_GETLK, (long)&fl);
	return !r && fl.l_type != F_UNLCK;
}
