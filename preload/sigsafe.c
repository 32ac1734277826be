/*
 * sigsafe.c — calls from a signal handler that interrupted the shim.
 *
 * A handler runs on the interrupted thread.  If that thread was inside the
 * shim (pohm_busy > 0: holding the fd table's, the cwd's or the shadows'
 * lock, in the allocator, or anywhere in a hook, which may hold the
 * mounts', the dirty list's, the cache's or the network's locks, including
 * the wrapper's real call that core makes in the middle of an operation:
 * hooks_cache.c real_outside), a call
 * under the prefix that took the normal way could wait forever for a lock
 * its own thread holds.  So the wrappers go straight to libc then (the
 * local file changes, nothing else is touched) and, for a call that may
 * change the tree (shim.h pohm_claim_op: not stat, access, readlink...),
 * note the path here:
 * a fixed ring of absolute paths in static memory, filled with raw system
 * calls only (getcwd, readlink of /proc/self/fd/N) and atomics.  The next
 * hook call of the process that is not itself inside the shim
 * (hooks_cache.c:busy_enter) and the exit hook take the paths and bring
 * the storage in line: a name gone locally is removed from the storage, a
 * name present locally is left to pohmelfsd's reconcile (adopted if new,
 * pushed if changed), which is started.  A full ring drops further paths
 * and says so once in the log.
 *
 * Durable queue (issue 19 item 5): when no later hook runs in the process
 * (a SIGTERM handler unlinks its pid file and the process exits), the ring
 * is lost with it.  So, once the first mount is open (pohm_sig_queue_set),
 * a note also writes a record into the cache's queue (core/cache/sigqueue.c,
 * format in cache.h): staged in sq.tmp/ under a unique name (pid, tid and a
 * counter, O_CREAT|O_EXCL), locked with an exclusive OFD lock, written,
 * renamed into sq/, its fd moved above the host's range and kept in a
 * record entry (not a path slot: up to SQ_RECS records wait, however
 * many handler calls one long hook sees).  The lock says "the call is not done yet": the note comes before
 * the call, so no replayer may trust the local state until the noting
 * thread's next hook (pohm_sig_commit closes the fd) or the process's end
 * (the kernel drops the lock).  pohmelfsd's reconcile, `pohmelfs sync` and
 * the drain replay the queue.  A rename or link is one record naming both
 * paths, so the storage renames its inode instead of losing the file.
 * A record that cannot be written falls back to the ring's path.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "shim.h"

#define SIG_SLOTS POHM_SIG_SLOTS
#define SIG_PATH  4096

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_TAKING };

/* Atomics: each slot's state moves FREE → FILLING (one noter) → READY →
 * TAKING (one taker) → FREE; the path is written only in FILLING and read
 * only in TAKING. */
static int sig_state[SIG_SLOTS];
static char sig_path[SIG_SLOTS][SIG_PATH];
static POHM_START_BSS int sig_ready;		/* atomic: READY slots */
static POHM_START_BSS int sig_lost;		/* atomic: paths were dropped (full ring, too long) */
/*
 * Atomics: the written queue records' fds, kept (locked) until the noting
 * thread's next hook: rec_fd1 is 0 (free), -1 (taken by a noter, being
 * written) or fd + 1; rec_tid the noting thread, written before rec_fd1.
 * Apart from the ring: a record needs no path slot once written, so a
 * burst of handler calls during one long hook is not capped at the ring's
 * 32 paths (a rename needs two slots while it is noted).
 */
#define SQ_RECS 128
static int rec_fd1[SQ_RECS];
static int rec_tid[SQ_RECS];
static POHM_START_BSS int rec_held;		/* atomic: entries holding an fd */
/* Atomics: the queue's folders (fd + 1; 0 until the first mount is open),
 * set once by pohm_sig_queue_set; a replay is wanted; the name counter. */
static int sq_qfd1, sq_tfd1;
static POHM_START_BSS int sq_want;
static unsigned sq_seq;

static size_t cat(char *dst, size_t at, size_t size, const char *s)
{
	while (*s && at + 1 < size)
		dst[at++] = *s++;
	dst[at] = '\0';
	return at;
}

/* Take a FREE slot into FILLING: its index, or -1 (full: lost). */
static int slot_get(void)
{
	int i, st;

	for (i = 0; i < SIG_SLOTS; i++) {
		st = SLOT_FREE;
		if (__atomic_compare_exchange_n(&sig_state[i], &st, SLOT_FILLING, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return i;
	}
	__atomic_store_n(&sig_lost, 1, __ATOMIC_RELAXED);
	return -1;
}

static void slot_free(int i)
{
	__atomic_store_n(&sig_state[i], SLOT_FREE, __ATOMIC_RELEASE);
}

static void slot_ready(int i)
{
	__atomic_store_n(&sig_state[i], SLOT_READY, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sig_ready, 1, __ATOMIC_RELEASE);
}

/*
 * The absolute path of (dirfd, path) into slot i's buffer, and where its
 * part below the prefix starts (*rel; "" for the prefix itself): 1, or 0
 * when it is not under the prefix, -1 when it cannot be noted whole.
 */
static int slot_path(int i, int dirfd, const char *path, const char **rel)
{
	const struct pohm_pc_spelling *sp;
	char *b = sig_path[i];
	size_t n = 0;
	unsigned k;
	long r;

	b[0] = '\0';
	if (path[0] != '/') {
		if (dirfd == AT_FDCWD) {
			r = pohm_sys_getcwd(b, SIG_PATH);
			n = r > 0 ? strlen(b) : 0;
		} else {
			char proc[32] = "/proc/self/fd/";
			char num[12];
			int d = 0, v = dirfd;

			do
				num[d++] = (char)('0' + v % 10);
			while ((v /= 10) && d < 11);
			n = strlen(proc);
			while (d)
				proc[n++] = num[--d];
			proc[n] = '\0';
			r = pohm_sys_readlinkat(AT_FDCWD, proc, b, SIG_PATH - 1);
			n = r > 0 ? (size_t)r : 0;
			b[n] = '\0';
		}
		if (!n)
			return -1;
		n = cat(b, n, SIG_PATH, "/");
	}
	n = cat(b, n, SIG_PATH, path);
	if (n + 1 >= SIG_PATH)
		return -1;	/* too long to be noted whole */
	/* Lexically at or below a spelling of the prefix ("/p/../P/a" is missed). */
	for (k = 0; k < pohm_state.prefix.nsp; k++) {
		sp = &pohm_state.prefix.sp[k];
		if (!strncmp(b, sp->path, sp->len) && (b[sp->len] == '/' || !b[sp->len])) {
			*rel = b + sp->len;
			while (**rel == '/')
				(*rel)++;
			return 1;
		}
	}
	return 0;
}

/* Decimal v at dst: the end. */
static char *put_num(char *dst, unsigned long v)
{
	char num[24];
	int d = 0;

	do
		num[d++] = (char)('0' + v % 10);
	while ((v /= 10) && d < 23);
	while (d)
		*dst++ = num[--d];
	return dst;
}

/*
 * Write the queue record "op rel1 [rel2]" (raw system calls only): its fd
 * (locked, above the host's range) + 1, or 0 when it could not be written.
 */
static int record_write(char op, const char *rel1, const char *rel2)
{
	int q = __atomic_load_n(&sq_qfd1, __ATOMIC_ACQUIRE) - 1;
	int t = __atomic_load_n(&sq_tfd1, __ATOMIC_ACQUIRE) - 1;
	char name[80], opz[2] = { op, '\0' }, *e;
	struct iovec iov[4];
	struct flock fl;
	long fd = -1, hi, want, w;
	int tries, niov = 3;

	if (q < 0 || t < 0)
		return 0;
	for (tries = 0; tries < 8 && fd < 0; tries++) {
		e = put_num(name, (unsigned long)pohm_sys_getpid());
		*e++ = '-';
		e = put_num(e, (unsigned long)pohm_sys_gettid());
		*e++ = '-';
		e = put_num(e, __atomic_add_fetch(&sq_seq, 1, __ATOMIC_RELAXED));
		*e = '\0';
		fd = pohm_sys_openat(t, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0 && fd != -EEXIST)
			return 0;
	}
	if (fd < 0)
		return 0;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (pohm_sys_fcntl((int)fd, F_OFD_SETLK, (long)&fl))
		goto fail;
	iov[0].iov_base = (void *)POHM_SQ_MAGIC;
	iov[0].iov_len = sizeof(POHM_SQ_MAGIC) - 1;
	iov[1].iov_base = opz;
	iov[1].iov_len = 2;
	iov[2].iov_base = (void *)rel1;
	iov[2].iov_len = strlen(rel1) + 1;
	if (rel2) {
		iov[3].iov_base = (void *)rel2;
		iov[3].iov_len = strlen(rel2) + 1;
		niov = 4;
	}
	want = (long)(iov[0].iov_len + iov[1].iov_len + iov[2].iov_len +
		      (rel2 ? iov[3].iov_len : 0));
	w = pohm_sys_writev((int)fd, iov, niov);
	if (w != want)
		goto fail;	/* a short write to a local file: the disk is full */
	hi = pohm_sys_fcntl((int)fd, F_DUPFD_CLOEXEC, POHM_FD_BASE);
	if (hi >= 0) {
		pohm_sys_close((int)fd);
		fd = hi;
	}
	if (pohm_sys_renameat(t, name, q, name))
		goto fail;
	return (int)fd + 1;
fail:
	pohm_sys_unlinkat(t, name, 0);
	pohm_sys_close((int)fd);
	return 0;
}

/* Take a free record entry (-1: being written): its index, or -1 (all held). */
static int rec_get(void)
{
	int k, v;

	for (k = 0; k < SQ_RECS; k++) {
		v = 0;
		if (__atomic_compare_exchange_n(&rec_fd1[k], &v, -1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return k;
	}
	return -1;
}

void pohm_sig_note_op(char op, int dirfd, const char *path, int dirfd2, const char *path2)
{
	const char *rel1 = NULL, *rel2 = NULL;
	int i, j = -1, k, in1, in2 = 0, saved = errno;

	if (!path || !pohm_state.on)
		return;
	if ((i = slot_get()) < 0)
		goto out;
	in1 = slot_path(i, dirfd, path, &rel1);
	if (path2) {
		if ((j = slot_get()) < 0) {
			slot_free(i);
			goto out;
		}
		in2 = slot_path(j, dirfd2, path2, &rel2);
	}
	if (in1 < 0 || in2 < 0)
		__atomic_store_n(&sig_lost, 1, __ATOMIC_RELAXED);
	if (in1 <= 0 && in2 <= 0) {
		/* Not ours (also the shim's own calls inside a hook, which look
		 * the same from here): nothing lost. */
		slot_free(i);
		if (j >= 0)
			slot_free(j);
		goto out;
	}
	if (in1 > 0 && *rel1 && (!path2 || (in2 > 0 && *rel2)) && (k = rec_get()) >= 0) {
		int rfd = record_write(op, rel1, path2 ? rel2 : NULL);

		if (rfd) {
			/* The record says it all: its entry keeps the lock, the
			 * path slots are free again. */
			__atomic_store_n(&rec_tid[k], (int)pohm_sys_gettid(), __ATOMIC_RELAXED);
			__atomic_add_fetch(&rec_held, 1, __ATOMIC_RELEASE);
			__atomic_store_n(&rec_fd1[k], rfd, __ATOMIC_RELEASE);
			slot_free(i);
			if (j >= 0)
				slot_free(j);
			goto out;
		}
		__atomic_store_n(&rec_fd1[k], 0, __ATOMIC_RELEASE);
	}
	/* No record: the ring's paths, as before the queue. */
	if (in1 > 0)
		slot_ready(i);
	else
		slot_free(i);
	if (j >= 0) {
		if (in2 > 0)
			slot_ready(j);
		else
			slot_free(j);
	}
out:
	errno = saved;
}

void pohm_sig_queue_set(int qfd, int tfd)
{
	int none = 0;

	if (!__atomic_compare_exchange_n(&sq_qfd1, &none, qfd + 1, 0, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED)) {
		pohm_sys_close(qfd);
		pohm_sys_close(tfd);
		return;
	}
	__atomic_store_n(&sq_tfd1, tfd + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sq_want, 1, __ATOMIC_RELEASE);	/* older records may wait */
}

int pohm_sig_commit(int all)
{
	int k, rfd, n = 0, tid = (int)pohm_sys_gettid();

	for (k = 0; k < SQ_RECS; k++) {
		if ((rfd = __atomic_load_n(&rec_fd1[k], __ATOMIC_ACQUIRE)) <= 0 ||
		    (!all && __atomic_load_n(&rec_tid[k], __ATOMIC_RELAXED) != tid))
			continue;
		if (!__atomic_compare_exchange_n(&rec_fd1[k], &rfd, -1, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		pohm_sys_close(rfd - 1);	/* the call is done: the record may be replayed */
		__atomic_sub_fetch(&rec_held, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&rec_fd1[k], 0, __ATOMIC_RELEASE);
		n++;
	}
	if (n)
		__atomic_store_n(&sq_want, 1, __ATOMIC_RELEASE);
	return n;
}

/*
 * A held record's lock belongs to its open file description, which a fork
 * shares: the child's copy of the fd kept it locked (no replay) until the
 * child exited, the parent's commit closing only its own.  The child owns
 * none of those calls (its one thread is the forking one, and the record
 * entries it notes from now on are its own): close its copies.  An entry
 * at -1 is left alone: a noter of this thread that a handler interrupted
 * (it finishes here) or another thread's of the parent (gone: the entry
 * stays taken, one of SQ_RECS).
 */
void pohm_sig_fork_child(void)
{
	int k, rfd;

	/* rec_held counts an entry before it holds an fd and after it let go:
	 * 0 means none holds one, and rec_fd1's page, which a process that
	 * never noted a record never touched, is not faulted in by every fork
	 * child (issue 23). */
	if (!__atomic_load_n(&rec_held, __ATOMIC_ACQUIRE))
		return;
	for (k = 0; k < SQ_RECS; k++) {
		if ((rfd = __atomic_load_n(&rec_fd1[k], __ATOMIC_ACQUIRE)) <= 0 ||
		    !__atomic_compare_exchange_n(&rec_fd1[k], &rfd, -1, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		pohm_sys_close(rfd - 1);
		__atomic_sub_fetch(&rec_held, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&rec_fd1[k], 0, __ATOMIC_RELEASE);
	}
}

int pohm_sig_replay_take(void)
{
	return __atomic_exchange_n(&sq_want, 0, __ATOMIC_ACQ_REL);
}

int pohm_sig_pending(void)
{
	return __atomic_load_n(&sig_ready, __ATOMIC_ACQUIRE) > 0 ||
	       __atomic_load_n(&rec_held, __ATOMIC_ACQUIRE) > 0 ||
	       __atomic_load_n(&sig_lost, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&sq_want, __ATOMIC_RELAXED);
}

int pohm_sig_take(char *buf, size_t size)
{
	int i, st;

	for (i = 0; i < SIG_SLOTS; i++) {
		st = SLOT_READY;
		if (!__atomic_compare_exchange_n(&sig_state[i], &st, SLOT_TAKING, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		__atomic_sub_fetch(&sig_ready, 1, __ATOMIC_RELEASE);
		snprintf(buf, size, "%s", sig_path[i]);
		__atomic_store_n(&sig_state[i], SLOT_FREE, __ATOMIC_RELEASE);
		return 1;
	}
	return 0;
}

int pohm_sig_lost_take(void)
{
	return __atomic_exchange_n(&sig_lost, 0, __ATOMIC_RELAXED);
}
