/*
 * fd.c — the fd table and the library's internal fds.
 *
 * The table records, for fds the shim saw opened under the prefix or on an
 * ancestor of it, their lexical position (pathclass.h) and, under the
 * prefix, the storage's cookie, the POHM_FD_* flags and a *hint*: the path
 * inside the prefix the fd was last known by, with the local (dev, ino) of
 * the open file once a relative call used the fd as its base.  The hint is
 * never trusted alone: classify.c checks that it still names that
 * (dev, ino) before a hook sees it, and asks the kernel when not (issue 18,
 * "fds by identity").  Every other fd has no entry: as a dirfd it is "somewhere
 * outside" (pohm_fd_base).  It is an array of chunks indexed by fd (DAOS
 * fd_table, STYLE.md example 9), so the common question "is this fd in the
 * table?" is two loads and no lock.
 *
 * Rules (the "Mutex rules" of this file):
 *   - pohm_fdt_chunks[i] goes from NULL to a chunk once (CAS, release) and is
 *     never freed; readers load it acquire.
 *   - an entry's st and cookie are atomics: read anywhere without a lock
 *     (vfork-safe); written only with fdt_lock held.
 *   - an entry's rel (a refcounted immutable string) is read and written
 *     with fdt_lock held.
 *   - nothing allocates or frees with fdt_lock held (an allocator's own
 *     fork handlers could otherwise deadlock with ours), and no hook or
 *     libc call that may block runs under it.
 *
 * The exec handoff of the table is in handoff.c.
 *
 * Sections: entries; table operations; internal fds; fork.
 */
#include "shim.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"

/* ------------------------------------------------------------ entries */

/* Packed entry state (one atomic word). */
#define ST_SET		(1ull << 63)	/* the entry holds something */
#define ST_UNDER	(1ull << 62)	/* the fd names something under the prefix */
#define ST_LAZY		(1ull << 61)	/* position unknown (handed over): resolve */
#define ST_FLAGS_SHIFT	54		/* POHM_FD_* flags, 7 bits (54-60) */
#define ST_FLAGS_MASK	0x7fu
#define ST_M0_SHIFT	30		/* match[0], 12 bits */
#define ST_M1_SHIFT	42		/* match[1], 12 bits */
#define ST_DEPTH_MASK	0x3fffffffull	/* depth, 30 bits */

#define FDT_SHIFT	POHM_FDT_SHIFT
#define FDT_CHUNK	(1 << FDT_SHIFT)
#define FDT_NCHUNK	POHM_FDT_NCHUNK
#define FDT_LIMIT	(FDT_CHUNK * FDT_NCHUNK)

/* An immutable hint (a path inside the prefix) and, when has_id, the
 * local identity of the open file; shared by dup'ed fds. */
struct pohm_relstr {
	int refs;		/* atomic */
	int has_id;
	uint64_t dev, ino;
	size_t len;
	char s[];
};

struct pohm_fdent *pohm_fdt_chunks[FDT_NCHUNK];
static pthread_mutex_t fdt_lock = PTHREAD_MUTEX_INITIALIZER;
static POHM_START_BSS int fdt_under;		/* atomic: entries with ST_UNDER */
int pohm_fdt_max = -1;		/* atomic: highest fd ever recorded (shim.h) */
/* atomic: the lowest fd ever recorded or registered internal (INT_MAX: none) */
static int fd_low = INT_MAX;
/* atomic, shim.h: 0 until pohm_fd_plain_start, then fd_low; only lowered */
int pohm_fd_plain_below;
int pohm_dirs_under;		/* atomic: see shim.h */

uint64_t pohm_pos_pack(const struct pohm_pc_pos *pos)
{
	uint64_t d = pos->depth > ST_DEPTH_MASK ? ST_DEPTH_MASK : pos->depth;

	return d | ((uint64_t)(pos->match[0] & 0xfff) << ST_M0_SHIFT) |
	       ((uint64_t)(pos->match[1] & 0xfff) << ST_M1_SHIFT);
}

void pohm_pos_unpack(uint64_t st, struct pohm_pc_pos *pos)
{
	pos->depth = (uint32_t)(st & ST_DEPTH_MASK);
	pos->match[0] = (uint16_t)((st >> ST_M0_SHIFT) & 0xfff);
	pos->match[1] = (uint16_t)((st >> ST_M1_SHIFT) & 0xfff);
}

static uint64_t st_pack(const struct pohm_pc_pos *pos, unsigned flags, int under)
{
	return ST_SET | (under ? ST_UNDER : 0) | ((uint64_t)(flags & ST_FLAGS_MASK) << ST_FLAGS_SHIFT) |
	       pohm_pos_pack(pos);
}

static unsigned st_flags(uint64_t st)
{
	return (unsigned)(st >> ST_FLAGS_SHIFT) & ST_FLAGS_MASK;
}

/* The entry of fd if its chunk exists, else NULL (lock-free). */
static struct pohm_fdent *ent_peek(int fd)
{
	struct pohm_fdent *c;

	if (fd < 0 || fd >= FDT_LIMIT)
		return NULL;
	c = __atomic_load_n(&pohm_fdt_chunks[fd >> FDT_SHIFT], __ATOMIC_ACQUIRE);
	return c ? &c[fd & (FDT_CHUNK - 1)] : NULL;
}

/* atomic *v = min(*v, fd) */
static void lower_to(int *v, int fd)
{
	int m = __atomic_load_n(v, __ATOMIC_RELAXED);

	while (fd < m && !__atomic_compare_exchange_n(v, &m, fd, 1, __ATOMIC_SEQ_CST,
						      __ATOMIC_RELAXED))
		;
}

/*
 * fd is about to get an entry or become internal: the hot wrappers must
 * look at it from now on.  pohm_fd_plain_below stays 0 until init ends
 * (lowering 0 leaves it 0); init records fds only on its own thread
 * before pohm_fd_plain_start, which then starts from fd_low.
 */
static void note_low(int fd)
{
	lower_to(&fd_low, fd);
	lower_to(&pohm_fd_plain_below, fd);
}

/* The second lowering catches a note_low that ran between the two (none
 * should: only init's own thread records before it ends). */
void pohm_fd_plain_start(void)
{
	__atomic_store_n(&pohm_fd_plain_below, __atomic_load_n(&fd_low, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
	lower_to(&pohm_fd_plain_below, __atomic_load_n(&fd_low, __ATOMIC_SEQ_CST));
}

/* The entry of fd, creating its chunk (called without fdt_lock), for
 * writing: the fd stops being plain before its entry is set. */
static struct pohm_fdent *ent_get(int fd)
{
	struct pohm_fdent *c, *want = NULL;

	if (fd < 0 || fd >= FDT_LIMIT)
		return NULL;
	note_low(fd);
	c = __atomic_load_n(&pohm_fdt_chunks[fd >> FDT_SHIFT], __ATOMIC_ACQUIRE);
	if (!c) {
		want = pohm_busy_calloc(FDT_CHUNK, sizeof(*want));
		if (!want)
			return NULL;
		if (__atomic_compare_exchange_n(&pohm_fdt_chunks[fd >> FDT_SHIFT], &c, want, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			c = want;
		else
			pohm_busy_free(want);	/* another thread won; c is its chunk */
	}
	return &c[fd & (FDT_CHUNK - 1)];
}

static struct pohm_relstr *rel_new(const char *s)
{
	size_t n = strlen(s);
	struct pohm_relstr *r = pohm_busy_malloc(sizeof(*r) + n + 1);

	if (!r)
		return NULL;
	r->refs = 1;
	r->has_id = 0;
	r->dev = r->ino = 0;
	r->len = n;
	memcpy(r->s, s, n + 1);
	return r;
}

static struct pohm_relstr *rel_ref(struct pohm_relstr *r)
{
	if (r)
		__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
	return r;
}

static void rel_unref(struct pohm_relstr *r)
{
	if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0)
		pohm_busy_free(r);
}

/*
 * Replace an entry (fdt_lock held): returns the old rel for the caller to
 * unref after unlocking.
 */
static struct pohm_relstr *ent_set(struct pohm_fdent *e, uint64_t st, uint64_t cookie, struct pohm_relstr *rel)
{
	uint64_t old = __atomic_load_n(&e->st, __ATOMIC_RELAXED);
	struct pohm_relstr *orel = e->rel;

	if ((old & ST_UNDER) && !(st & ST_UNDER))
		__atomic_sub_fetch(&fdt_under, 1, __ATOMIC_RELAXED);
	else if (!(old & ST_UNDER) && (st & ST_UNDER))
		__atomic_add_fetch(&fdt_under, 1, __ATOMIC_RELAXED);
	e->rel = rel;
	__atomic_store_n(&e->cookie, cookie, __ATOMIC_RELAXED);
	__atomic_store_n(&e->st, st, __ATOMIC_RELEASE);
	return orel;
}

static void note_max(int fd)
{
	int m = __atomic_load_n(&pohm_fdt_max, __ATOMIC_RELAXED);

	while (fd > m && !__atomic_compare_exchange_n(&pohm_fdt_max, &m, fd, 1, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		;
}

/* ------------------------------------------------------------ table operations */

unsigned pohm_fd_flags_of(int oflags)
{
	unsigned f = 0;

	if ((oflags & O_ACCMODE) == O_WRONLY || (oflags & O_ACCMODE) == O_RDWR)
		f |= POHM_FD_WRITE;
	if ((oflags & O_ACCMODE) == O_WRONLY)
		f |= POHM_FD_WRONLY;
	if (oflags & O_DIRECTORY)
		f |= POHM_FD_DIR;
	if ((oflags & O_PATH) == O_PATH)
		f = (f & ~(POHM_FD_WRITE | POHM_FD_WRONLY)) | POHM_FD_PATH;
	return f;
}

void pohm_fd_forget(int fd)
{
	struct pohm_fdent *e = ent_peek(fd);
	struct pohm_relstr *old;
	int saved;

	if (!e || !__atomic_load_n(&e->st, __ATOMIC_RELAXED))
		return;
	if (pohm_san_inside())
		return;	/* TSan's symbolizer reused a stale number: no table (shim.h) */
	saved = errno;
	pohm_busy_lock(&fdt_lock);
	old = ent_set(e, 0, 0, NULL);
	pohm_busy_unlock(&fdt_lock);
	rel_unref(old);
	errno = saved;
}

/* pohm_fd_record with under given: an fd under the prefix without a name
 * (rel NULL) is lazy, its position asked of the kernel when needed. */
static void fd_record(int fd, const struct pohm_pc_pos *pos, const char *rel,
		      const struct pohm_fd_info *fi, int under)
{
	struct pohm_relstr *r = NULL, *old;
	struct pohm_fdent *e;
	uint64_t st;
	int saved = errno;

	e = ent_get(fd);
	if (!e)
		goto out;
	if (rel && !(r = rel_new(rel)))
		goto out;
	st = st_pack(pos, fi ? fi->flags : 0, under);
	if (under && !rel)
		st |= ST_LAZY;
	pohm_busy_lock(&fdt_lock);
	old = ent_set(e, st, fi ? fi->cookie : 0, r);
	pohm_busy_unlock(&fdt_lock);
	rel_unref(old);
	note_max(fd);
out:
	errno = saved;
}

void pohm_fd_record(int fd, const struct pohm_pc_pos *pos, const char *rel,
		    const struct pohm_fd_info *fi)
{
	fd_record(fd, pos, rel, fi, rel != NULL || (fi && (fi->flags & POHM_FD_INHERITED)));
}

/* The position of a classified path (shim.h); here, its one user's file,
 * so that the table calls nothing of classify.c. */
struct pohm_pc_pos pohm_path_pos(const struct pohm_path *p)
{
	struct pohm_pc_pos pos = pohm_pc_root_of(&pohm_state.prefix, p->spelling);
	const char *s;

	if (p->len) {
		pos.depth++;
		for (s = p->rel; (s = strchr(s, '/')); s++)
			pos.depth++;
	}
	return pos;
}

void pohm_fd_opened(int fd, const struct pohm_path *p, const struct pohm_where *w,
		    const struct pohm_fd_info *fi)
{
	struct pohm_pc_pos pos;

	if (fd < 0)
		return;
	if (w->cls == POHM_PC_IN) {
		pos = pohm_path_pos(p);
		/* A name too long for the table (POHM_PATH_TRUNC, issue 19 item
		 * 10) is under the prefix all the same: kept without it, lazy. */
		fd_record(fd, &pos, (p->flags & POHM_PATH_TRUNC) ? NULL : p->rel, fi, 1);
	} else if (w->cls == POHM_PC_ANCESTOR) {
		pohm_fd_record(fd, &w->pos, NULL, NULL);
	} else {
		pohm_fd_forget(fd);
	}
}

void pohm_fd_resolved(int fd, const struct pohm_pc_pos *pos, const char *rel,
		      const struct pohm_fdid *id)
{
	struct pohm_relstr *r = rel ? rel_new(rel) : NULL, *old = r;
	struct pohm_fdent *e = ent_get(fd);
	uint64_t st;
	int saved = errno;

	if (r && id && id->known) {
		r->has_id = 1;
		r->dev = id->dev;
		r->ino = id->ino;
	}
	if (e && (!rel || r)) {
		pohm_busy_lock(&fdt_lock);
		st = __atomic_load_n(&e->st, __ATOMIC_RELAXED);
		/* a handed-over fd, or one never seen: remember where it is; an
		 * fd under the prefix whose hint the caller read: its new name */
		if (!st || (st & ST_LAZY) ||
		    (rel && id && (st & ST_UNDER) && e->rel == id->token))
			old = ent_set(e, st_pack(pos, st_flags(st), rel != NULL),
				      __atomic_load_n(&e->cookie, __ATOMIC_RELAXED), r);
		pohm_busy_unlock(&fdt_lock);
		note_max(fd);
	}
	rel_unref(old);
	errno = saved;
}

int pohm_fd_take(int fd, struct pohm_fdsnap *snap, struct pohm_fd_info *fi)
{
	struct pohm_fdent *e = ent_peek(fd);

	snap->st = 0;
	snap->cookie = 0;
	snap->rel = NULL;
	if (!e || !__atomic_load_n(&e->st, __ATOMIC_RELAXED))
		return 0;
	pohm_busy_lock(&fdt_lock);
	snap->st = __atomic_load_n(&e->st, __ATOMIC_RELAXED);
	snap->cookie = __atomic_load_n(&e->cookie, __ATOMIC_RELAXED);
	snap->rel = ent_set(e, 0, 0, NULL);
	pohm_busy_unlock(&fdt_lock);
	if (!(snap->st & ST_UNDER))
		return 0;
	fi->cookie = snap->cookie;
	fi->flags = st_flags(snap->st);
	return 1;
}

void pohm_fd_put(int fd, struct pohm_fdsnap *snap)
{
	struct pohm_fdent *e = ent_peek(fd);
	struct pohm_relstr *old = snap->rel;

	if (e && snap->st) {
		pohm_busy_lock(&fdt_lock);
		if (!__atomic_load_n(&e->st, __ATOMIC_RELAXED))
			old = ent_set(e, snap->st, snap->cookie, snap->rel);
		pohm_busy_unlock(&fdt_lock);
	}
	rel_unref(old);
	snap->rel = NULL;
}

void pohm_fd_release(struct pohm_fdsnap *snap)
{
	int saved = errno;

	rel_unref(snap->rel);
	snap->rel = NULL;
	errno = saved;
}

void pohm_fd_dup(int oldfd, int newfd)
{
	struct pohm_fdent *o = ent_peek(oldfd), *n;
	struct pohm_relstr *old;
	int saved = errno;

	if (!o || !__atomic_load_n(&o->st, __ATOMIC_RELAXED)) {
		pohm_fd_forget(newfd);
		return;
	}
	n = ent_get(newfd);
	if (!n)
		goto out;
	pohm_busy_lock(&fdt_lock);
	old = ent_set(n, __atomic_load_n(&o->st, __ATOMIC_RELAXED),
		      __atomic_load_n(&o->cookie, __ATOMIC_RELAXED), rel_ref(o->rel));
	pohm_busy_unlock(&fdt_lock);
	rel_unref(old);
	note_max(newfd);
out:
	errno = saved;
}

int pohm_fd_base(int fd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen,
		 struct pohm_fdid *id)
{
	struct pohm_fdent *e = ent_peek(fd);
	uint64_t st = e ? __atomic_load_n(&e->st, __ATOMIC_ACQUIRE) : 0;

	*rellen = 0;
	id->under = 0;
	id->known = 0;
	id->token = NULL;
	if (!st) {
		pos->depth = POHM_PC_DEEP;
		pos->match[0] = pos->match[1] = 0;
		return 0;
	}
	if (st & ST_LAZY)
		return -1;
	pohm_pos_unpack(st, pos);
	if (!(st & ST_UNDER))
		return 0;
	pohm_busy_lock(&fdt_lock);
	if (e->rel) {
		*rellen = e->rel->len;
		if (e->rel->len < relsz)
			memcpy(rel, e->rel->s, e->rel->len);
		else
			*rellen = relsz;	/* the walk sees it as truncated */
		id->known = e->rel->has_id;
		id->dev = e->rel->dev;
		id->ino = e->rel->ino;
		id->under = 1;
		id->token = e->rel;
		/* pos and rel from one entry: st as it is under the lock */
		pohm_pos_unpack(__atomic_load_n(&e->st, __ATOMIC_RELAXED), pos);
	}
	pohm_busy_unlock(&fdt_lock);
	return 0;
}

int pohm_fd_lookup(int fd, struct pohm_fd_info *fi)
{
	struct pohm_fdent *e = ent_peek(fd);
	uint64_t st = e ? __atomic_load_n(&e->st, __ATOMIC_ACQUIRE) : 0;

	if (!(st & ST_UNDER))
		return 0;
	fi->cookie = __atomic_load_n(&e->cookie, __ATOMIC_RELAXED);
	fi->flags = st_flags(st);
	return 1;
}

void pohm_fd_listed(int fd)
{
	struct pohm_fdent *e = ent_peek(fd);
	uint64_t st;

	if (!e)
		return;
	pohm_busy_lock(&fdt_lock);
	st = __atomic_load_n(&e->st, __ATOMIC_RELAXED);
	if (st & ((uint64_t)POHM_FD_UNLISTED << ST_FLAGS_SHIFT))
		__atomic_store_n(&e->st, st & ~((uint64_t)POHM_FD_UNLISTED << ST_FLAGS_SHIFT),
				 __ATOMIC_RELEASE);
	pohm_busy_unlock(&fdt_lock);
}

int pohm_fd_max(void)
{
	return __atomic_load_n(&pohm_fdt_max, __ATOMIC_RELAXED);
}

int pohm_fd_count_under(void)
{
	return __atomic_load_n(&fdt_under, __ATOMIC_RELAXED);
}

void pohm_fd_forget_range(unsigned lo, unsigned hi)
{
	int max = __atomic_load_n(&pohm_fdt_max, __ATOMIC_RELAXED), fd;

	if (max < 0 || lo > (unsigned)max)
		return;
	if (hi > (unsigned)max)
		hi = (unsigned)max;
	for (fd = (int)lo; fd <= (int)hi; fd++)
		if (!pohm_ifd_is(fd))
			pohm_fd_forget(fd);
}

/* ------------------------------------------------------------ internal fds */

#define IFD_MAX 32

/* Registered internal fds by handle: fd number or -1.  Atomics. */
static int ifd_tab[IFD_MAX] = { [0 ... IFD_MAX - 1] = -1 };
int pohm_ifd_low = INT_MAX;	/* atomic: no internal fd is below it (shim.h) */

int pohm_ifd_register(int fd)
{
	int h, none;

	if (fd < 0)
		return -EINVAL;
	for (h = 0; h < IFD_MAX; h++) {
		none = -1;
		if (__atomic_compare_exchange_n(&ifd_tab[h], &none, fd, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			lower_to(&pohm_ifd_low, fd);
			note_low(fd);
			pohm_fd_forget(fd);
			return h;
		}
	}
	return -ENOSPC;
}

int pohm_ifd_fd(int handle)
{
	int fd;

	if (handle < 0 || handle >= IFD_MAX)
		return -EBADF;
	fd = __atomic_load_n(&ifd_tab[handle], __ATOMIC_ACQUIRE);
	return fd < 0 ? -EBADF : fd;
}

void pohm_ifd_unregister(int handle)
{
	if (handle >= 0 && handle < IFD_MAX)
		__atomic_store_n(&ifd_tab[handle], -1, __ATOMIC_RELEASE);
}

/* core's own fds (core/sys/ownfd.h) become registered: the fast paths of
 * close and dup must look at fd from now on.  Replaces ownfd.c's weak one. */
void pohm_own_noted(int fd)
{
	lower_to(&pohm_ifd_low, fd);
	note_low(fd);
}

/* The preloaded library's registered fds (ifd_tab) and core's (ownfd.h). */
int pohm_ifd_is(int fd)
{
	int h;

	if (fd < __atomic_load_n(&pohm_ifd_low, __ATOMIC_RELAXED))
		return 0;
	for (h = 0; h < IFD_MAX; h++)
		if (__atomic_load_n(&ifd_tab[h], __ATOMIC_RELAXED) == fd)
			return 1;
	return pohm_own_is(fd);
}

int pohm_ifd_first_in(unsigned lo, unsigned hi)
{
	int h, fd, best = pohm_own_first_in(lo, hi);

	for (h = 0; h < IFD_MAX; h++) {
		fd = __atomic_load_n(&ifd_tab[h], __ATOMIC_RELAXED);
		if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi && (best < 0 || fd < best))
			best = fd;
	}
	return best;
}

int pohm_ifd_evict(int fd)
{
	int h, nfd;

	nfd = pohm_own_evict(fd);
	if (nfd)
		return nfd;	/* core's: moved (1) or no number free */
	for (h = 0; h < IFD_MAX; h++) {
		if (__atomic_load_n(&ifd_tab[h], __ATOMIC_RELAXED) != fd)
			continue;
		nfd = pohm_sys_fcntl(fd, F_DUPFD_CLOEXEC, POHM_FD_BASE);
		if (nfd < 0)
			return nfd;
		lower_to(&pohm_ifd_low, nfd);
		note_low(nfd);
		__atomic_store_n(&ifd_tab[h], nfd, __ATOMIC_RELEASE);
		pohm_log_fd_moved(fd, nfd);	/* the log= file's fd is one of these */
		pohm_debug("internal fd %d moved to %d (the program reuses %d)", fd, nfd, fd);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ fork */

void pohm_fd_atfork(enum pohm_fork_phase phase)
{
	if (phase == POHM_FORK_PREPARE)
		pohm_busy_lock(&fdt_lock);
	else
		pohm_busy_unlock(&fdt_lock);
	if (phase == POHM_FORK_CHILD)
		pohm_own_atfork_child();
}
