/*
 * shim.h — what every wrapper in preload/ needs: initialisation, path
 * classification, the fd table, the cwd, and the one place errno is set.
 * Include it first in every preload/ file.
 *
 * The shape of a wrapper (STYLE.md example 4):
 *
 *	struct pohm_path p;
 *	if (!pohm_claim(AT_FDCWD, path, &p))
 *		return pohm_real.mkdir(path, mode);        // not ours: libc
 *	r = pohm_hook_stat(&p, 0, st);                      // ours: the storage
 *	if (r == POHM_PASS)
 *		r = pohm_sysret(pohm_real.stat(path, st));
 *	return pohm_ret(r);
 *
 * (The namespace and attribute wrappers make one call instead, handing
 * the hook their real call: names.c ns_call, struct pohm_real_call.)
 *
 * Sections: state and init; errno; classification; fd table; internal
 * fds; cwd; exec handoff.
 */
#ifndef POHM_PRELOAD_SHIM_H
#define POHM_PRELOAD_SHIM_H

#undef _FORTIFY_SOURCE		/* fortified inlines would clash with our definitions */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "hooks.h"
#include "mount.h"
#include "real.h"
#include "sys.h"

/* Thread-local state of the running thread, initial-exec: no call to read it. */
#define POHM_TLS __thread __attribute__((tls_model("initial-exec")))

/* ------------------------------------------------------------ state and init */

/*
 * struct pohm_state (state.c; filled by init.c) — the shim's global state,
 * one struct.
 *
 *   prefix   written once by light init (under pohm_sys_once), read-only
 *            afterwards: no lock.
 *   on       1 when a prefix is configured; same rule.
 *   ready    0 until init finished, then POHM_READY_OFF or POHM_READY_ON
 *            (on's value, in the same word, so that the hot path reads
 *            one word; release store, wrappers load-acquire).
 *   nfast, fast  the hot path's copy of the prefix (fast.h); same rule as
 *            prefix, filled before on is set.
 *
 * The fd table (fd.c) and the cwd (cwd.c) keep their own state and locks;
 * lock order: cwd_lock, then fdt_lock (no code holds both today).  No lock
 * is ever held across a hook or a real libc call that may block.
 */
/* A spelling of the prefix as the hot path compares it: NUL-padded so whole
 * words can be read up to and past its end (fast.c, pohm_abs_fast_out). */
struct pohm_fast_spelling {
	uint32_t len;			/* strlen(path); first: on path's cache line */
	char path[POHM_PC_MAXLEN + 16] __attribute__((aligned(16)));
};

/* The hot path's words (ready, nfast, fast[0]'s length and first bytes)
 * share the struct's first cache line. */
struct pohm_state {
	int on;				/* a prefix is configured */
	int ready;			/* init done (atomic): 0, POHM_READY_* */
	unsigned nfast;			/* spellings in fast[] (= prefix.nsp once on) */
	int test_ifd;			/* handle of the test-only internal fd, or -1 */
	struct pohm_fast_spelling fast[POHM_PC_NSPELL];	/* the prefix, for the hot path */
	struct pohm_pc_prefix prefix;	/* the prefix's spellings */
	uintptr_t utop;			/* end of user addresses (pohm_addr_ok), atomic:
					 * POHM_UADDR_HI, raised at most once by
					 * pohm_addr_high */
};
extern POHM_HIDDEN struct pohm_state pohm_state;

#define POHM_READY_OFF	1		/* init done, no prefix: every call passes */
#define POHM_READY_ON	2		/* init done, a prefix is configured */

/*
 * Per-thread nesting depth: > 0 while the shim itself runs (init, a hook
 * that called pohm_hold) and in a vfork child (set by our vfork until the
 * parent resumes).  Wrappers then go straight to libc and touch no table.
 */
extern POHM_HIDDEN POHM_TLS int pohm_depth;

/*
 * Per-thread count of the shim's frames that hold one of its locks, its
 * allocator or a hook (pohm_busy_*, hooks_cache.c) on this thread.  A
 * wrapper entered while it is > 0 was entered from a signal handler that
 * interrupted the shim: it goes straight to libc, lock-free, and the path
 * is noted for the next normal call (sigsafe.c).
 */
extern POHM_HIDDEN POHM_TLS int pohm_busy;

/* 1 once light init found a prefix: vfork is then fork (exec.c). */
extern POHM_HIDDEN int pohm_vfork_forks;

static inline void pohm_busy_lock(pthread_mutex_t *m)
{
	pohm_busy++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* counted before the lock is taken */
	pthread_mutex_lock(m);
}

static inline void pohm_busy_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pohm_busy--;
}

/* The allocator's own locks: a handler must not enter it either. */
#define POHM_BUSY(expr) ({ __typeof__(expr) busy_r_; pohm_busy++;		\
	__atomic_signal_fence(__ATOMIC_SEQ_CST); busy_r_ = (expr);		\
	__atomic_signal_fence(__ATOMIC_SEQ_CST); pohm_busy--; busy_r_; })
#define pohm_busy_malloc(n)	POHM_BUSY(malloc(n))
#define pohm_busy_calloc(n, m)	POHM_BUSY(calloc(n, m))
#define pohm_busy_realloc(p, n)	POHM_BUSY(realloc(p, n))
#define pohm_busy_free(p)	((void)POHM_BUSY((free(p), 0)))

/*
 * A wrapper found pohm_busy > 0 (a signal handler interrupted the shim on
 * this thread): note (dirfd, path) for the next normal call, which brings
 * the storage in line with the local name (sigsafe.c).  Async-signal-safe:
 * raw system calls and static memory only.
 */
#define POHM_SIG_SLOTS 32	/* paths noted at most between two drains */
/* op: a core/cache/cache.h POHM_SQ_* letter ('P' path, 'W' opened for
 * writing, 'R' rename, 'L' link); path2 (dirfd2) the second name or NULL.
 * Also writes the record of the durable queue once it is set. */
void pohm_sig_note_op(char op, int dirfd, const char *path, int dirfd2, const char *path2);
#define pohm_sig_note(dirfd, path) pohm_sig_note_op('P', dirfd, path, AT_FDCWD, NULL)
/* The cache's queue folders (sq/, sq.tmp/; taken over, high fds): records from now on. */
void pohm_sig_queue_set(int qfd, int tfd);
/* The call behind each queue record this thread noted (all: every thread's,
 * at exit) is done: let the records be replayed.  Count released. */
int pohm_sig_commit(int all);
/* A fork's child (async-signal-safe): drop its copies of the held records'
 * fds, unreplayed — their calls are the parent's, which releases them. */
void pohm_sig_fork_child(void);
/* 1 (once) when the queue should be replayed (set, or records released). */
int pohm_sig_replay_take(void);
/* 1 when noted paths wait. */
int pohm_sig_pending(void);
/* Take the next noted path (absolute) into buf: 1, or 0 when none. */
int pohm_sig_take(char *buf, size_t size);
/* 1 (once) when paths were dropped since the last call: full ring, too long. */
int pohm_sig_lost_take(void);

/*
 * fn(arg) on this thread's library stack (stack.c), so that a call into
 * the library takes little of the caller's stack; on the current stack
 * when already there or when none can be had.  fn's result.
 */
long pohm_stack_run(long (*fn)(void *), void *arg);

/* Slow part of pohm_active: run light init once (idempotent, thread-safe). */
void pohm_init_slow(void);

/*
 * Make sure light init ran, so the real table is filled: the first thing a
 * wrapper does when it calls pohm_real before pohm_active (another
 * library's constructor may call it before ours runs).
 */
static inline void pohm_init(void)
{
	if (__builtin_expect(!__atomic_load_n(&pohm_state.ready, __ATOMIC_ACQUIRE), 0))
		pohm_init_slow();
}

/*
 * 1 while this thread runs inside the sanitizer runtime's own work, where
 * the shim must pass every call straight to libc and touch no table and
 * no allocation of its own (state.c; a SAN=thread build only, 0 in every
 * other build).  ThreadSanitizer's symbolizer (libbacktrace, run when a
 * report is prepared, even one a suppression then drops) opens, reads and
 * maps modules through libc, that is through our wrappers (TSan's
 * interceptor calls the next definition: ours), and while it runs TSan
 * sends malloc and free to its internal allocator: a free there of memory
 * the shim got before is a CHECK failure in TSan that then deadlocks on
 * its allocator lock (session 13's rsync hang, notes-s14-tsan), and
 * memory got there and kept would later be freed to the wrong allocator.
 * The symbolizer opens even a module name like "linux-vdso.so.1",
 * relative to a cwd that may be under the prefix.
 */
#if defined(__SANITIZE_THREAD__)
int pohm_san_inside(void);
#else
static inline int pohm_san_inside(void)
{
	return 0;
}
#endif

/*
 * Make sure light init ran; 1 when this call must be looked at (a prefix
 * is configured, the shim is not running itself and the thread is not in
 * the sanitizer runtime's own work), else 0.
 */
static inline int pohm_active(void)
{
	if (__builtin_expect(!__atomic_load_n(&pohm_state.ready, __ATOMIC_ACQUIRE), 0))
		pohm_init_slow();
	return pohm_state.on && !pohm_depth && !pohm_busy && !pohm_san_inside();
}

/*
 * glibc declares most path parameters nonnull, and the compiler may then
 * drop a NULL check in our definitions; a NULL from the host must reach
 * the kernel (EFAULT), not crash us.  Test pointers through this.
 */
static inline const char *pohm_launder(const char *p)
{
	__asm__("" : "+r"(p));
	return p;
}

/*
 * Bad pointers.  The shim reads a caller's path before the kernel does,
 * so a pointer the kernel answers EFAULT for must not be read here: such
 * a call goes to libc untouched.  The addresses that can never be mapped
 * are refused by a compare: the NULL area below mmap_min_addr's usual
 * 64 KiB, and, on x86-64, kernel and non-canonical addresses (at or above
 * 2^47, or 2^56 where light init finds 5-level paging in use).  Inside the
 * user range a page is read only once known readable: the thread's cache
 * of pages found readable, else one process_vm_readv probe (addr.c has the
 * design and what stays unsafe).
 *
 * POHM_UADDR_LO/HI: the hot path's constant test (one subtraction and
 * one compare): outside it, the slow path, where pohm_addr_ok decides
 * with the runtime top.  Other architectures tag pointers' top bytes
 * (aarch64 TBI), so there only the NULL area is refused.
 */
#define POHM_UADDR_LO	((uintptr_t)0x10000)
#if defined(__x86_64__)
#define POHM_UADDR_HI	((uintptr_t)1 << 47)
#else
#define POHM_UADDR_HI	(~(uintptr_t)0)
#endif

/*
 * The pages this thread found readable, direct-mapped by page number
 * (address >> 12; 0: empty) modulo POHM_ADDR_SLOTS: an entry counts while
 * its gen equals pohm_addr_gen.  Written only by its own thread (addr.c;
 * a signal handler's path call may interleave, and every entry it may
 * leave names a page found readable at that gen).
 */
#define POHM_ADDR_SLOTS 128
struct pohm_addr_cache {
	struct {
		uintptr_t page;
		unsigned long gen;
	} e[POHM_ADDR_SLOTS];
};
extern POHM_HIDDEN POHM_TLS struct pohm_addr_cache pohm_addr_tls;
extern POHM_HIDDEN unsigned long pohm_addr_gen;

/* 1 if the string s may be read to its NUL: each page it spans is cached
 * as readable or probed so (addr.c); 0: the kernel's EFAULT. */
POHM_HIDDEN int pohm_addr_str(const char *s);

/* pohm_addr_ok of a pointer at or above pohm_state.utop (or in the NULL
 * area): looks the end of user addresses up on the first such pointer
 * (addr.c), then decides as pohm_addr_ok. */
POHM_HIDDEN int pohm_addr_high(const void *p);

/* A libc call may have made pages unreadable (munmap, mremap, mprotect or
 * mmap without PROT_READ): every thread's cache is dropped. */
POHM_HIDDEN void pohm_addr_changed(void);

/* 1 if p may be read (the hot path's test; 0 includes NULL).  The caller
 * launders p (pohm_launder), so that the compiler keeps the NULL case. */
static inline __attribute__((always_inline)) int pohm_addr_plain(const void *p)
{
	return (uintptr_t)p - POHM_UADDR_LO < POHM_UADDR_HI - POHM_UADDR_LO;
}

/*
 * 1 if this thread found p's page readable since the last change of the
 * mappings (no call, no system call: two loads of one slot and the gen):
 * the hot path reads within that page only (fast.h stops at its end), else
 * the slow path checks the whole string.
 */
static inline __attribute__((always_inline)) int pohm_addr_cached(const void *p)
{
	uintptr_t pg = (uintptr_t)p >> 12;
	unsigned i = (unsigned)pg % POHM_ADDR_SLOTS;

	return pohm_addr_tls.e[i].page == pg &&
	       pohm_addr_tls.e[i].gen == __atomic_load_n(&pohm_addr_gen, __ATOMIC_RELAXED);
}

/* 1 if p is a caller's string the shim may read to its NUL: not NULL,
 * not certainly unmapped, every page readable (pohm_addr_str). */
static inline int pohm_addr_ok(const void *p)
{
	__asm__("" : "+r"(p));
	if ((uintptr_t)p - POHM_UADDR_LO <
	    __atomic_load_n(&pohm_state.utop, __ATOMIC_RELAXED) - POHM_UADDR_LO)
		return pohm_addr_str((const char *)p);
	return pohm_addr_high(p);
}

/* 1 if p is not NULL, for any pointer the host may pass as NULL. */
static inline int pohm_given(const void *p)
{
	__asm__("" : "+r"(p));
	return p != 0;
}

/* ------------------------------------------------------------ errno */

/* The preload boundary: r < 0 → errno = -r, return -1; else return r. */
static inline int pohm_ret(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

/*
 * An attribute wrapper's call under the prefix (attr.c, xattr.c): one
 * hook call, which makes the wrapper's own libc call fn(x) itself
 * (hooks.h struct pohm_real_call); errno set here.
 */
static inline int pohm_attr_call(enum pohm_attr_op op, const struct pohm_path *p, int fd,
				 const struct pohm_fd_info *fi, int flags, int (*fn)(void *),
				 void *x)
{
	struct pohm_real_call real = { fn, x, NULL };

	return pohm_ret(pohm_hook_attr(op, p, fd, fi, flags, &real));
}

static inline long pohm_retl(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* After a real call: its result, or -errno when it failed. */
static inline int pohm_sysret(int r)
{
	return r < 0 ? -errno : r;
}

static inline long pohm_sysretl(long r)
{
	return r < 0 ? -errno : r;
}

/* ------------------------------------------------------------ classification */

/* What pohm_locate found beyond the pohm_path (for tracking fds and the cwd). */
struct pohm_where {
	enum pohm_pc_class cls;		/* OUT, IN or ANCESTOR */
	struct pohm_pc_pos pos;		/* exact unless cls == OUT without POHM_LOC_FULL */
};

#define POHM_LOC_EMPTY	0x1	/* "" names the dirfd itself (AT_EMPTY_PATH) */
#define POHM_LOC_FULL	0x2	/* exact position even outside (chdir) */
#define POHM_LOC_BASE	0x4	/* one name below a dirfd: p->base, the dirfd's
				 * directory opened from the prefix root with no
				 * symlink on the way (its name's check; issue 23) */
#define POHM_LOC_NAMED	0x8	/* with BASE, for an lstat: p->base may instead
				 * be the dirfd itself by its name in /proc/self/fd
				 * (no fd; classify.c base_named) */

/*
 * Classify (dirfd, path) (classify.c).  Lexical; no system call and no
 * allocation unless a ".." climbs above a directory fd the shim never saw
 * opened (then one readlink of /proc/self/fd/N).  Fills p (and w if not
 * NULL).  Returns the class: POHM_PC_IN when p describes a path under the
 * prefix.  errno is preserved.
 */
enum pohm_pc_class pohm_locate(int dirfd, const char *path, unsigned flags,
			       struct pohm_path *p, struct pohm_where *w);

/*
 * The path p (classified POHM_PATH_TRUNC: its name below the prefix did
 * not fit p->inl) classified again with rel in buf (cap bytes) into *lp
 * (issue 19 item 10; hooks_stack.c, on the library's stack): 0, or
 * -ENAMETOOLONG when it does not fit buf either, -ENOENT when the second
 * walk found it no longer under the prefix (the cwd moved meanwhile).
 */
int pohm_locate_long(const struct pohm_path *p, struct pohm_path *lp, char *buf, size_t cap);

/* 1 if (dirfd, path) is under the prefix (p filled), else 0. */
int pohm_classify(int dirfd, const char *path, struct pohm_path *p);

/*
 * A directory (dirfd, or AT_FDCWD) whose absolute path the kernel cannot
 * give (ENAMETOOLONG): found by walking ".." (deepbase.c).  0 when it is
 * under the prefix, with *pos, and rel / *rellen its name below the
 * prefix (*rellen == relsz when that did not fit); -1 when it is not, or
 * the walk failed.  errno is preserved.
 */
int pohm_deep_base(int dirfd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen);

/*
 * The cwd as the hot path needs it (cwd.c keeps it): POHM_CWD_FAST_VALID
 * when the cwd is known, not under the prefix and not volatile; then bit s
 * set when the cwd lies on spelling s's way (its next component could lead
 * into the prefix), with the cwd's depth above POHM_CWD_FAST_DEPTH_SHIFT.
 * 0: ask the classifier.
 */
#define POHM_CWD_FAST_VALID	(1ull << 63)
#define POHM_CWD_FAST_DEPTH_SHIFT 8
extern POHM_HIDDEN uint64_t pohm_cwd_fast;

/*
 * 1 if the relative path is certainly outside the prefix from the cwd:
 * its first component does not lead towards the prefix and no ".." can
 * bring it back.  Lock-free, from pohm_cwd_fast alone (fast.h).
 */
static inline __attribute__((always_inline)) int pohm_cwd_fast_out(const char *path);

/*
 * 1 if the absolute path is certainly outside the prefix and no ancestor
 * of it, 0 if the classifier must decide (fast.h has how and why).
 */
static inline __attribute__((always_inline)) int pohm_abs_fast_out(const char *path);

/*
 * The hot path, inlined into the wrappers: 1 if path is certainly outside
 * the prefix, decided without the classifier: an absolute path by a word
 * comparison with each spelling and a scan of the rest for ".."
 * (pohm_abs_fast_out; /proc/... and /dev/... take the full way, for
 * /proc/self/fd/N and /dev/fd/N), a relative one from a cwd that is not
 * under the prefix by its first component (pohm_cwd_fast_out).  Only a
 * path whose page this thread found readable lately (pohm_addr_cached).
 */
static inline __attribute__((always_inline)) int pohm_outside_fast(int dirfd, const char *path)
{
	path = pohm_launder(path);
#if defined(__SSE2__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* fast.h's block scans stop at the page's end */
	if (__builtin_expect(!pohm_addr_plain(path) || !pohm_addr_cached(path), 0))
		return 0;	/* NULL, never mapped, or a page not known readable: the
				 * slow path checks it and passes a bad one to libc */
#else
	/* fast.h's byte loops read to the NUL: the whole string is checked */
	if (__builtin_expect(!pohm_addr_plain(path) || !pohm_addr_str(path), 0))
		return 0;
#endif
	if (path[0] == '/')
		return path[1] != 'p' && path[1] != 'd' && pohm_abs_fast_out(path);
	return path[0] && dirfd == AT_FDCWD && pohm_cwd_fast_out(path);
}

/*
 * 1 when a path call certainly goes to libc unchanged: init is done and
 * the shim is off or the path is certainly outside.  0: the caller's slow
 * path decides, and it starts with pohm_active() (which runs init and
 * passes the shim's own calls).  No call and one initial-exec
 * thread-local read (the page cache) here, so the hot wrappers test this
 * first and tail-call libc without a stack frame.
 */
static inline __attribute__((always_inline)) int pohm_pass(int dirfd, const char *path)
{
	int r = __atomic_load_n(&pohm_state.ready, __ATOMIC_ACQUIRE);

	if (__builtin_expect(r != POHM_READY_ON, 0))
		return r;	/* 0: init not done (the slow path runs it); 1: no prefix */
	return pohm_outside_fast(dirfd, path);
}
/*
 * "Is this call ours?": not certainly passed (pohm_pass: one word, no
 * thread-local read for a path outside), then pohm_active() (init, the
 * shim's own calls) and pohm_classify().  changes: the call may change
 * the name or the file (unlink, mkdir, chmod, truncate...); when a signal
 * handler interrupted the shim (pohm_busy), such a call is noted for the
 * storage (sigsafe.c), a read-only one (stat, access, readlink...) is not:
 * it passes to libc and leaves nothing to replay.
 */
static inline int pohm_claim_op(int dirfd, const char *path, int changes, struct pohm_path *p)
{
	if (pohm_pass(dirfd, path))
		return 0;
	if (!pohm_active()) {
		if (pohm_busy && changes)
			pohm_sig_note(dirfd, path);
		return 0;
	}
	return pohm_classify(dirfd, path, p);
}
/* A call that may change what path names (noted from a handler). */
static inline int pohm_claim(int dirfd, const char *path, struct pohm_path *p)
{
	return pohm_claim_op(dirfd, path, 1, p);
}
/* A read-only call (never noted from a handler). */
static inline int pohm_claim_ro(int dirfd, const char *path, struct pohm_path *p)
{
	return pohm_claim_op(dirfd, path, 0, p);
}

/* pohm_claim_op for the *at calls: AT_EMPTY_PATH in atflags lets "" name
 * dirfd; loc: more POHM_LOC_* flags for pohm_locate (0: none). */
static inline int pohm_claim_at_op(int dirfd, const char *path, int atflags, int changes,
				   unsigned loc, struct pohm_path *p)
{
	if (pohm_pass(dirfd, path))
		return 0;
	if (!pohm_active()) {
		if (pohm_busy && changes)
			pohm_sig_note(dirfd, path);
		return 0;
	}
	return pohm_locate(dirfd, path, ((atflags & AT_EMPTY_PATH) ? POHM_LOC_EMPTY : 0) | loc, p,
			   NULL) == POHM_PC_IN;
}
static inline int pohm_claim_at(int dirfd, const char *path, int atflags, struct pohm_path *p)
{
	return pohm_claim_at_op(dirfd, path, atflags, 1, 0, p);
}
static inline int pohm_claim_at_ro(int dirfd, const char *path, int atflags, struct pohm_path *p)
{
	return pohm_claim_at_op(dirfd, path, atflags, 0, 0, p);
}

/* "Is this fd ours?": opened under the prefix (fi filled). */
static inline int pohm_claim_fd(int fd, struct pohm_fd_info *fi);

/* The position of the prefix root plus p->rel (for recording an fd; fd.c). */
struct pohm_pc_pos pohm_path_pos(const struct pohm_path *p);

/* ------------------------------------------------------------ fd table (fd.c) */

/*
 * A snapshot of one entry, taken out of the table (rel ownership moves
 * with it); put back or released.
 */
struct pohm_relstr;
struct pohm_fdsnap {
	uint64_t st;			/* packed state, 0 = the fd was not in the table */
	uint64_t cookie;
	struct pohm_relstr *rel;	/* owned by the snapshot */
};

/*
 * One entry of the fd table (fd.c has the rules).  Declared here so the
 * hot paths can ask "has this fd an entry at all?" inline.
 */
struct pohm_fdent {
	uint64_t st;			/* atomic, packed state; 0 = no entry */
	uint64_t cookie;		/* atomic */
	struct pohm_relstr *rel;	/* fdt_lock */
};

#define POHM_FDT_SHIFT	10		/* 1024 entries a chunk */
#define POHM_FDT_NCHUNK	1024		/* fds below 2^20 are tracked */
extern POHM_HIDDEN struct pohm_fdent *pohm_fdt_chunks[POHM_FDT_NCHUNK];

/* 1 if fd has an entry (lock-free): the cheap test before the others. */
static inline int pohm_fd_known(int fd)
{
	struct pohm_fdent *c;

	if ((unsigned)fd >= (POHM_FDT_NCHUNK << POHM_FDT_SHIFT))
		return 0;
	c = __atomic_load_n(&pohm_fdt_chunks[fd >> POHM_FDT_SHIFT], __ATOMIC_ACQUIRE);
	return c && __atomic_load_n(&c[fd & ((1 << POHM_FDT_SHIFT) - 1)].st, __ATOMIC_RELAXED);
}

/* The highest fd ever recorded in the table, -1 while it never held one (fd.c). */
extern POHM_HIDDEN int pohm_fdt_max;

/*
 * Every fd below it is certainly neither in the table nor internal, and
 * init is done: 0 until then, afterwards the lowest fd ever recorded or
 * registered as internal (INT_MAX while none was).  It only goes down
 * (fd.c).  The hot fd wrappers' one test.
 */
extern POHM_HIDDEN int pohm_fd_plain_below;

/*
 * 1 if fd needs nothing of the shim (init done, no entry, not internal):
 * one compare, no call and no frame, so the hot fd wrappers tail-call libc
 * on it.  A negative fd is never plain (the slow path passes it on).
 */
static inline int pohm_fd_plain(int fd)
{
	return (unsigned)fd < (unsigned)__atomic_load_n(&pohm_fd_plain_below, __ATOMIC_ACQUIRE);
}

/* Forget fd (it is new, or gone).  Lock-free when fd is not in the table. */
void pohm_fd_forget(int fd);

/*
 * After libc opened fd for a path the hot path passed (pohm_pass): only a
 * stale entry of the number (closed behind our back) needs dropping, and
 * a plain fd has none.
 */
static inline void pohm_fd_opened_outside(int fd)
{
	if (__builtin_expect(!pohm_fd_plain(fd), 0) && pohm_fd_known(fd))
		pohm_fd_forget(fd);
}

/* At the end of init: pohm_fd_plain_below from the fds recorded so far. */
void pohm_fd_plain_start(void);

/* A position in the low 55 bits of a word (bits 55..63 are the caller's). */
uint64_t pohm_pos_pack(const struct pohm_pc_pos *pos);
void pohm_pos_unpack(uint64_t v, struct pohm_pc_pos *pos);
/* Record fd at a position (ANCESTOR or IN; rel for IN, or NULL if unknown). */
void pohm_fd_record(int fd, const struct pohm_pc_pos *pos, const char *rel,
		    const struct pohm_fd_info *fi);
/* After an open of (p, w) returned fd: record or forget, as the class says. */
void pohm_fd_opened(int fd, const struct pohm_path *p, const struct pohm_where *w,
		    const struct pohm_fd_info *fi);
/* Take fd's entry out of the table; 1 if it was under the prefix (fi set). */
int pohm_fd_take(int fd, struct pohm_fdsnap *snap, struct pohm_fd_info *fi);
/* Put a taken entry back (a failed dup2), or release it. */
void pohm_fd_put(int fd, struct pohm_fdsnap *snap);
void pohm_fd_release(struct pohm_fdsnap *snap);
/* After a successful dup: newfd gets a copy of oldfd's entry (or is forgotten). */
void pohm_fd_dup(int oldfd, int newfd);
/*
 * What the table knows of a dirfd under the prefix beyond its position:
 * token is the hint's identity in the table (for pohm_fd_resolved), and
 * (dev, ino) the open file's, when known.
 */
struct pohm_fdid {
	int under;			/* the fd is under the prefix; the hint is in rel */
	int known;			/* dev and ino are set */
	uint64_t dev, ino;
	const void *token;
};
/*
 * The base of a relative path at dirfd: its position, and its hint when
 * under the prefix (copied into rel, *rellen set; a hint is checked by
 * its caller, classify.c, before it is used).  A dirfd the shim never saw
 * opened is "somewhere outside" (depth POHM_PC_DEEP).  Returns 0, or -1
 * when the position is unknown and must be resolved (inherited fds).
 */
int pohm_fd_base(int fd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen,
		 struct pohm_fdid *id);
/* fd's directory was listed after all: drop its POHM_FD_UNLISTED (dir.c). */
void pohm_fd_listed(int fd);
/* The highest fd ever recorded, or -1 (atomic read). */
int pohm_fd_max(void);
/* Number of fds under the prefix in the table (atomic read). */
int pohm_fd_count_under(void);
/* An fd handed over by exec, or never seen opened, whose position the
 * kernel just told: record it (only if the entry is still lazy or empty);
 * or an fd under the prefix whose hint (id->token, from pohm_fd_base) the
 * kernel just corrected to rel, with the identity id (if id->known). */
void pohm_fd_resolved(int fd, const struct pohm_pc_pos *pos, const char *rel,
		      const struct pohm_fdid *id);
/* Before a close_range: the close hook of every fd under the prefix in
 * [lo, hi] (fdcalls.c: it calls up to the hooks, fd.c does not). */
void pohm_fd_close_hooks(unsigned lo, unsigned hi);
/* After it: forget every entry in [lo, hi] (internal fds excepted). */
void pohm_fd_forget_range(unsigned lo, unsigned hi);
/* pthread_atfork handlers of the table. */
void pohm_fd_atfork(enum pohm_fork_phase phase);

/* dir.c: 0 when a program may read fd's entries itself (getdents64): not
 * marked POHM_FD_UNLISTED, or its directory listed now; else -errno (-EIO:
 * the listing failed again, the mark stays). */
int pohm_dir_fd_readable(int fd);

/* Directory streams opened under the prefix (readdir looks only when > 0). */
extern POHM_HIDDEN int pohm_dirs_under;

static inline int pohm_claim_fd(int fd, struct pohm_fd_info *fi)
{
	return pohm_active() && pohm_fd_known(fd) && pohm_fd_lookup(fd, fi);
}

/* ------------------------------------------------------------ internal fds (fd.c) */

/* 1 if fd is one of the library's registered internal fds. */
int pohm_ifd_is(int fd);
/* No internal fd is below this (atomic, fd.c): the inline first test. */
extern POHM_HIDDEN int pohm_ifd_low;
static inline int pohm_ifd_maybe(int fd)
{
	return fd >= __atomic_load_n(&pohm_ifd_low, __ATOMIC_RELAXED);
}
/* The lowest internal fd in [lo, hi], or -1. */
int pohm_ifd_first_in(unsigned lo, unsigned hi);
/* dup2/dup3 onto fd: move the internal fd aside first.  1 moved (the old
 * number is still open until the dup2 replaces it), 0 not internal, -errno. */
int pohm_ifd_evict(int fd);

/* ------------------------------------------------------------ cwd (cwd.c) */

/*
 * An open (flags) of a path outside the prefix that names a mount table of
 * this process (/proc/self/mountinfo, /proc/mounts...): an fd of its text
 * with the prefix's line added (mounttab.c), or -1 to open it as usual.
 * errno preserved.
 */
int pohm_mounttab_open(const char *path, int flags);

/* Base of relative paths at AT_FDCWD: 0 and its position when the cwd is
 * known and not under the prefix; -1 when the kernel must be asked (a cwd
 * under the prefix is asked each time: its name may have moved). */
int pohm_cwd_base(struct pohm_pc_pos *pos);
/* Set the cwd state from the kernel's getcwd (init, chdir, unknown fchdir). */
void pohm_cwd_resync(void);
/* Set the cwd state: pos known (or NULL = unknown), under the prefix or not
 * (fchdir of an fd whose place the table knows). */
void pohm_cwd_store(const struct pohm_pc_pos *pos, int under);
/* glibc code that changes the cwd behind our back runs (nftw, fts): +1 / -1. */
void pohm_cwd_volatile(int delta);
void pohm_cwd_atfork(enum pohm_fork_phase phase);

/* ------------------------------------------------------------ exec handoff (handoff.c) */

#define POHM_FDTAB_ENV	"POHMELFS_FDTAB"

/*
 * Memory of one exec environment, mapped with a raw mmap so it can be
 * built in a vfork child (no allocator, no lock).
 */
struct pohm_exec_mem {
	void *map;
	size_t len;
};

/*
 * The environment for a new image: envp minus any POHMELFS_FDTAB=, plus
 * POHMELFS_FDTAB=<table> when fds under the prefix stay open across the
 * exec, plus the strings of pohm_hook_exec_env (not in a vfork child).
 * Returns envp itself when nothing changes.  Preserves errno.
 */
char *const *pohm_exec_env(char *const *envp, int replacing, struct pohm_exec_mem *mem);
void pohm_exec_env_free(struct pohm_exec_mem *mem);
/* At init: adopt the fds of POHMELFS_FDTAB and remove it from environ;
 * read POHMELFS_WLOCKS into pohm_wlocks_in and remove it too. */
void pohm_fd_adopt_env(void);

/*
 * Open-for-write lock fds the previous image handed over
 * (POHMELFS_WLOCKS=fd:ino:ldev:lino;..., hex: core/cache/writer.c's
 * pohm_cache_writer_export), for the storage hooks to adopt when the cache
 * opens.  Written by light init only (before main, one thread), read after;
 * defined in state.c, so that the hooks (below handoff.c) do not refer to
 * handoff.c.
 */
#define POHM_WLOCK_ENV	"POHMELFS_WLOCKS"
#define POHM_WLOCK_MAX	32
struct pohm_wlock_in {
	int fd;
	uint64_t ino, ldev, lino;
};
extern POHM_HIDDEN struct pohm_wlock_in pohm_wlocks_in[POHM_WLOCK_MAX];
extern POHM_HIDDEN int pohm_nwlocks_in;

/* ------------------------------------------------------------ helpers */

/* fd flags (POHM_FD_*) implied by open flags. */
unsigned pohm_fd_flags_of(int oflags);

#include "fast.h"

#endif
