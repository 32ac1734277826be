/*
 * cwd.c — the working directory, tracked as a lexical position
 * (pathclass.h) and whether it is under the prefix, so a relative path
 * from a cwd outside is classified without a system call.
 *
 * The state is set from the kernel's getcwd at light init and after every
 * successful chdir (one extra system call; symlinks make a lexical update
 * wrong), and copied from the fd table on fchdir (getcwd again when the
 * table does not know the fd's place).  A cwd under the prefix keeps no
 * path: its name moves when it or an ancestor is renamed (by this
 * process, another one, or another host's rename arriving here), so
 * classify.c asks the kernel (getcwd) for every relative path from it and
 * the hooks see the directory's current name (issue 18, "the cwd by
 * identity").  While glibc code that changes the cwd behind our back runs
 * (nftw with FTW_CHDIR, fts without FTS_NOCHDIR) the state is "volatile":
 * classification asks getcwd each time, and resyncs when that code is
 * done.
 *
 * Rules: cwd_st is an atomic word (CWD_KNOWN, CWD_UNDER, packed position),
 * read without a lock, written with cwd_lock held; pohm_cwd_fast, the hot
 * path's summary of cwd_st and cwd_vol, is rewritten with cwd_lock held
 * whenever either changes.
 *
 * The wrappers (chdir, fchdir, getcwd) are in cwdcalls.c: this file is
 * the state only, below classify.c and the hooks (doc/ARCHITECTURE.md §4.6).
 */
#include "shim.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ state */

#define CWD_KNOWN	(1ull << 63)	/* the position is known */
#define CWD_UNDER	(1ull << 62)	/* the cwd is under the prefix: ask the kernel */

static uint64_t cwd_st;			/* atomic; 0 = unknown */
static int cwd_vol;			/* atomic: volatile sections running */
static POHM_START_BSS pthread_mutex_t cwd_lock = PTHREAD_MUTEX_INITIALIZER;

int pohm_cwd_base(struct pohm_pc_pos *pos)
{
	uint64_t st = __atomic_load_n(&cwd_st, __ATOMIC_ACQUIRE);

	if (!st || (st & CWD_UNDER) || __atomic_load_n(&cwd_vol, __ATOMIC_RELAXED))
		return -1;
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

/* Set the state: pos known (or NULL = unknown), under the prefix or not
 * (shim.h). */
void pohm_cwd_store(const struct pohm_pc_pos *pos, int under)
{
	uint64_t st = 0;

	if (pos)
		st = CWD_KNOWN | (under ? CWD_UNDER : 0) | pohm_pos_pack(pos);
	pohm_busy_lock(&cwd_lock);
	__atomic_store_n(&cwd_st, st, __ATOMIC_RELEASE);
	fast_update();
	pohm_busy_unlock(&cwd_lock);
}

void pohm_cwd_resync(void)
{
	char buf[PATH_MAX];
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	size_t len = 0;
	long n;

	n = pohm_sys_getcwd(buf, sizeof(buf));
	if (n <= 0 || buf[0] != '/') {
		pohm_cwd_store(NULL, 0);	/* deleted or unreachable: unknown */
		return;
	}
	pohm_pc_walk(&pohm_state.prefix, &pos, NULL, 0, &len, buf, POHM_PC_FULL, &res);
	pohm_cwd_store(&pos, res.cls == POHM_PC_IN);
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
