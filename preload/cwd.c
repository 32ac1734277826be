/*
 * cwd.c — the working directory, tracked as a lexical position
 * (pathclass.h) plus its path inside the prefix when it is under it, so a
 * relative path is classified without a system call.
 *
 * The state is set from the kernel's getcwd at light init and after every
 * successful chdir (one extra system call; symlinks make a lexical update
 * wrong), and copied from the fd table on fchdir (getcwd again when the
 * table does not know the fd's place).  While glibc code that
 * changes the cwd behind our back runs (nftw with FTW_CHDIR, fts without
 * FTS_NOCHDIR) the state is "volatile": classification asks getcwd each
 * time, and resyncs when that code is done.
 *
 * Rules: cwd_st is an atomic word (CWD_KNOWN, CWD_UNDER, packed position),
 * read without a lock; cwd_st and cwd_rel are written together with
 * cwd_lock held, and cwd_rel is read with it held; pohm_cwd_fast, the hot
 * path's summary of cwd_st and cwd_vol, is rewritten with cwd_lock held
 * whenever either changes.  No allocation under the lock.
 *
 * Sections: state; wrappers.
 */
#include "shim.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

/* ------------------------------------------------------------ state */

#define CWD_KNOWN	(1ull << 63)	/* the position is known */
#define CWD_UNDER	(1ull << 62)	/* the cwd is under the prefix: cwd_rel is set */

static uint64_t cwd_st;			/* atomic; 0 = unknown */
static char *cwd_rel;			/* cwd_lock: the path inside the prefix */
static size_t cwd_rellen;		/* cwd_lock */
static int cwd_vol;			/* atomic: volatile sections running */
static pthread_mutex_t cwd_lock = PTHREAD_MUTEX_INITIALIZER;

int pohm_cwd_base(struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen)
{
	uint64_t st = __atomic_load_n(&cwd_st, __ATOMIC_ACQUIRE);

	*rellen = 0;
	if (!st || __atomic_load_n(&cwd_vol, __ATOMIC_RELAXED))
		return -1;
	if (!rel) {		/* the position only; *rellen says whether there is a rel */
		pohm_pos_unpack(st, pos);
		*rellen = (st & CWD_UNDER) != 0;
		return 0;
	}
	if (st & CWD_UNDER) {
		pohm_busy_lock(&cwd_lock);
		st = __atomic_load_n(&cwd_st, __ATOMIC_RELAXED);
		if (st & CWD_UNDER) {
			*rellen = cwd_rellen < relsz ? cwd_rellen : relsz;
			if (cwd_rellen < relsz)
				memcpy(rel, cwd_rel, cwd_rellen);
		}
		pohm_busy_unlock(&cwd_lock);
		if (!st)
			return -1;
	}
	pohm_pos_unpack(st, pos);
	return 0;
}

/*
 * The hot path's view of the cwd (fast.h, pohm_cwd_fast_out): a pure
 * function of cwd_st and cwd_vol, rewritten with cwd_lock held whenever
 * either changes, read lock-free.
 */
uint64_t pohm_cwd_fast;

static uint64_t fast_of(uint64_t st)
{
	const struct pohm_pc_prefix *pf = &pohm_state.prefix;
	struct pohm_pc_pos pos;
	uint64_t w = POHM_CWD_FAST_VALID;
	unsigned s;

	if (!st || (st & CWD_UNDER) || __atomic_load_n(&cwd_vol, __ATOMIC_RELAXED))
		return 0;
	pohm_pos_unpack(st, &pos);
	if (pos.depth >= POHM_PC_MAXCOMP)
		return w;	/* below any prefix component: off every spelling */
	for (s = 0; s < pf->nsp; s++) {
		if (pos.match[s] >= pf->sp[s].ncomp)
			return 0;	/* under the prefix after all */
		if (pos.match[s] == pos.depth)
			w |= 1u << s;	/* the next component may lead towards it */
	}
	return w | ((uint64_t)pos.depth << POHM_CWD_FAST_DEPTH_SHIFT);
}

/* Rewrite the fast word (cwd_lock held). */
static void fast_update(void)
{
	__atomic_store_n(&pohm_cwd_fast, fast_of(__atomic_load_n(&cwd_st, __ATOMIC_RELAXED)),
			 __ATOMIC_RELEASE);
}

/* Set the state: pos known (or NULL = unknown), rel when under the prefix. */
static void cwd_store(const struct pohm_pc_pos *pos, const char *rel, size_t len)
{
	char *copy = NULL, *old;
	uint64_t st = 0;
	int saved = errno;

	if (pos) {
		st = CWD_KNOWN | pohm_pos_pack(pos);
		if (rel && (copy = pohm_busy_malloc(len + 1))) {
			memcpy(copy, rel, len + 1);
			st |= CWD_UNDER;
		} else if (rel) {
			st = 0;		/* no memory: unknown, getcwd next time */
		}
	}
	pohm_busy_lock(&cwd_lock);
	old = cwd_rel;
	cwd_rel = copy;
	cwd_rellen = copy ? len : 0;
	__atomic_store_n(&cwd_st, st, __ATOMIC_RELEASE);
	fast_update();
	pohm_busy_unlock(&cwd_lock);
	pohm_busy_free(old);
	errno = saved;
}

void pohm_cwd_resync(void)
{
	char buf[PATH_MAX], rel[POHM_REL_MAX];
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	size_t len = 0;
	int saved = errno;
	long n;

	n = syscall(SYS_getcwd, buf, sizeof(buf));
	errno = saved;
	if (n <= 0 || buf[0] != '/') {
		cwd_store(NULL, NULL, 0);	/* deleted or unreachable: unknown */
		return;
	}
	pohm_pc_walk(&pohm_state.prefix, &pos, rel, sizeof(rel), &len, buf, POHM_PC_FULL, &res);
	if (res.cls == POHM_PC_IN && res.trunc)
		cwd_store(NULL, NULL, 0);
	else
		cwd_store(&pos, res.cls == POHM_PC_IN ? rel : NULL, res.len);
}

void pohm_cwd_volatile(int delta)
{
	if (__atomic_add_fetch(&cwd_vol, delta, __ATOMIC_ACQ_REL) == 0 && delta < 0) {
		pohm_cwd_resync();
		return;
	}
	pohm_busy_lock(&cwd_lock);
	fast_update();
	pohm_busy_unlock(&cwd_lock);
}

void pohm_cwd_atfork(enum pohm_fork_phase phase)
{
	if (phase == POHM_FORK_PREPARE)
		pohm_busy_lock(&cwd_lock);
	else
		pohm_busy_unlock(&cwd_lock);
}

/* ------------------------------------------------------------ wrappers */

POHM_EXPORT int chdir(const char *path)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim(AT_FDCWD, path, &p)) {
		r = pohm_real.chdir(path);
		if (r == 0 && pohm_active())
			pohm_cwd_resync();
		return r;
	}
	r = pohm_hook_lookup(POHM_LK_CHDIR, &p, 0);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.chdir(path));
	if (r == 0)
		pohm_cwd_resync();
	return pohm_ret(r);
}

/* The fd's position is in the table; for an fd of unknown place, getcwd. */
POHM_EXPORT int fchdir(int fd)
{
	char rel[POHM_REL_MAX];
	struct pohm_pc_pos pos;
	size_t len;
	int r;

	pohm_init();
	r = pohm_real.fchdir(fd);
	if (r < 0 || !pohm_active())
		return r;
	if (pohm_fd_base(fd, &pos, rel, sizeof(rel), &len) < 0 || len >= sizeof(rel) ||
	    pos.depth >= POHM_PC_DEEP) {
		pohm_cwd_resync();	/* an fd of unknown place: ask the kernel once */
		return r;
	}
	rel[len] = '\0';
	cwd_store(&pos, pohm_pc_pos_class(&pohm_state.prefix, &pos, NULL) == POHM_PC_IN ? rel : NULL,
		  len);
	return r;
}

POHM_EXPORT char *getcwd(char *buf, size_t size)
{
	pohm_init();
	return pohm_real.getcwd(buf, size);
}

POHM_EXPORT char *__getcwd_chk(char *buf, size_t size, size_t buflen)
{
	pohm_init();
	return pohm_real.__getcwd_chk(buf, size, buflen);
}
