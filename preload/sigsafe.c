/*
 * sigsafe.c — calls from a signal handler that interrupted the shim.
 *
 * A handler runs on the interrupted thread.  If that thread was inside the
 * shim (pohm_busy > 0: holding the fd table's, the cwd's or the shadows'
 * lock, in the allocator, or anywhere in a hook, which may hold the
 * mounts', the dirty list's, the cache's or the network's locks), a call
 * under the prefix that took the normal way could wait forever for a lock
 * its own thread holds.  So the wrappers go straight to libc then (the
 * local file changes, nothing else is touched) and note the path here:
 * a fixed ring of absolute paths in static memory, filled with raw system
 * calls only (getcwd, readlink of /proc/self/fd/N) and atomics.  The next
 * hook call of the process that is not itself inside the shim
 * (hooks_cache.c:busy_enter) and the exit hook take the paths and bring
 * the storage in line: a name gone locally is removed from the storage, a
 * name present locally is left to pohmelfsd's reconcile (adopted if new,
 * pushed if changed), which is started.  A full ring drops further paths
 * and says so once in the log.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#define SIG_SLOTS POHM_SIG_SLOTS
#define SIG_PATH  4096

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_TAKING };

/* Atomics: each slot's state moves FREE → FILLING (one noter) → READY →
 * TAKING (one taker) → FREE; the path is written only in FILLING and read
 * only in TAKING. */
static int sig_state[SIG_SLOTS];
static char sig_path[SIG_SLOTS][SIG_PATH];
static int sig_ready;		/* atomic: READY slots */
static int sig_lost;		/* atomic: paths were dropped (full ring, too long) */

static size_t cat(char *dst, size_t at, size_t size, const char *s)
{
	while (*s && at + 1 < size)
		dst[at++] = *s++;
	dst[at] = '\0';
	return at;
}

/* Lexically at or below a spelling of the prefix ("/p/../P/a" is missed). */
static int under_prefix(const char *b)
{
	const struct pohm_pc_spelling *sp;
	unsigned k;

	for (k = 0; k < pohm_state.prefix.nsp; k++) {
		sp = &pohm_state.prefix.sp[k];
		if (!strncmp(b, sp->path, sp->len) && (b[sp->len] == '/' || !b[sp->len]))
			return 1;
	}
	return 0;
}

void pohm_sig_note(int dirfd, const char *path)
{
	int i, st, saved = errno;
	size_t n = 0;
	long r;
	char *b;

	if (!path || !pohm_state.on)
		return;
	for (i = 0; i < SIG_SLOTS; i++) {
		st = SLOT_FREE;
		if (__atomic_compare_exchange_n(&sig_state[i], &st, SLOT_FILLING, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
	}
	if (i == SIG_SLOTS) {
		__atomic_store_n(&sig_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	b = sig_path[i];
	b[0] = '\0';
	if (path[0] != '/') {
		if (dirfd == AT_FDCWD) {
			r = syscall(SYS_getcwd, b, SIG_PATH);
			n = r > 0 ? strlen(b) : 0;
		} else {
			char proc[32] = "/proc/self/fd/";
			char num[12];
			int k = 0, v = dirfd;

			do
				num[k++] = (char)('0' + v % 10);
			while ((v /= 10) && k < 11);
			n = strlen(proc);
			while (k)
				proc[n++] = num[--k];
			proc[n] = '\0';
			r = syscall(SYS_readlinkat, AT_FDCWD, proc, b, SIG_PATH - 1);
			n = r > 0 ? (size_t)r : 0;
			b[n] = '\0';
		}
		if (!n)
			goto drop;
		n = cat(b, n, SIG_PATH, "/");
	}
	n = cat(b, n, SIG_PATH, path);
	if (n + 1 >= SIG_PATH)
		goto drop;	/* too long to be noted whole */
	if (!under_prefix(b)) {
		/* Not ours (also the shim's own calls inside a hook, which look
		 * the same from here): free the slot, nothing lost. */
		__atomic_store_n(&sig_state[i], SLOT_FREE, __ATOMIC_RELEASE);
		errno = saved;
		return;
	}
	__atomic_store_n(&sig_state[i], SLOT_READY, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sig_ready, 1, __ATOMIC_RELEASE);
	errno = saved;
	return;
drop:
	__atomic_store_n(&sig_lost, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&sig_state[i], SLOT_FREE, __ATOMIC_RELEASE);
	errno = saved;
}

int pohm_sig_pending(void)
{
	return __atomic_load_n(&sig_ready, __ATOMIC_ACQUIRE) > 0 ||
	       __atomic_load_n(&sig_lost, __ATOMIC_RELAXED);
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
