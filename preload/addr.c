/*
 * addr.c — may the shim read a caller's string?  (issue 22 item 10)
 *
 * The shim reads a path before the kernel does, so a pointer the kernel
 * answers EFAULT for must never be read here: such a call goes to libc
 * untouched and the kernel answers.  No fault handler (not acceptable in a
 * host process); instead:
 *
 *   1. never-mapped addresses are refused by a compare (shim.h,
 *      pohm_addr_plain / pohm_addr_ok: the NULL area, kernel and
 *      non-canonical addresses);
 *   2. each thread keeps the pages (4 KiB units) it found readable in a
 *      direct-mapped table of POHM_ADDR_SLOTS (2 KiB of TLS), each entry
 *      tagged with the mapping generation; the hot path
 *      (pohm_outside_fast) compares the path's page with its slot, with
 *      no call and no system call;
 *   3. any other page is probed once by process_vm_readv of one byte from
 *      our own pid (the only fault-safe read without a signal handler;
 *      ~1.2 µs) and, when readable, cached;
 *   4. a string is read only to its NUL, page by page: each new page it
 *      reaches is checked the same way (pohm_addr_str).
 *
 * Staleness: a cached page may later be unmapped or made unreadable.  The
 * libc entry points that can do that (munmap, mremap, mprotect and mmap
 * without PROT_READ; sync.c and mprot.c) bump pohm_addr_gen, which makes
 * every entry of every thread's table stale.  Raw system calls, glibc's
 * internal munmap (free of a large block, then reading through the freed
 * pointer), shmdt, brk and pkey_mprotect are not seen: a path pointer into
 * such a page, read by this thread since, still faults in the shim
 * (libpohmelfs(7), LIMITS).
 *
 * When process_vm_readv is refused (seccomp, an LSM: any error but
 * EFAULT), probing stops for the process and every page in the user
 * range is taken as readable, as before this file.
 */
#include "shim.h"

#include <string.h>
#include <sys/uio.h>

POHM_TLS struct pohm_addr_cache pohm_addr_tls;

/* Bumped (relaxed atomics) by every libc call that may make a page
 * unreadable; threads compare it with their cache's gen. */
POHM_HIDDEN unsigned long pohm_addr_gen;

/* 1 once a probe failed with anything but EFAULT: no more probes. Atomic. */
static int probe_off;

void pohm_addr_changed(void)
{
	__atomic_add_fetch(&pohm_addr_gen, 1, __ATOMIC_RELAXED);
}

/* 1 if the page at a is readable, 0 if not (EFAULT), 1 when unknown
 * (probing refused: then off for good). */
static int probe(uintptr_t a)
{
	struct iovec l, r;
	long n;
	char b;

	if (__atomic_load_n(&probe_off, __ATOMIC_RELAXED))
		return 1;
	l.iov_base = &b;
	l.iov_len = 1;
	r.iov_base = (void *)a;
	r.iov_len = 1;
	/* the pid not cached: a fork child has its own */
	n = pohm_sys_process_vm_readv(pohm_sys_getpid(), &l, 1UL, &r, 1UL);
	if (n == 1)
		return 1;
	if (n == -EFAULT)
		return 0;
	__atomic_store_n(&probe_off, 1, __ATOMIC_RELAXED);
	return 1;
}

/* 1 while this thread writes a slot: a signal handler's path call then
 * probes without writing, so that a slot never pairs its page with the
 * other writer's gen. */
static POHM_TLS int filling;

/* 1 if page pg (an address >> 12) is readable: the cache, else a probe
 * whose success is cached in pg's slot. */
static int page_ok(uintptr_t pg)
{
	unsigned long gen = __atomic_load_n(&pohm_addr_gen, __ATOMIC_RELAXED);
	unsigned i = (unsigned)pg % POHM_ADDR_SLOTS;

	if (pohm_addr_tls.e[i].page == pg && pohm_addr_tls.e[i].gen == gen)
		return 1;
	/* gen was read before the probe: a change racing with it (another
	 * thread's munmap) leaves the entry stale-marked, never trusted */
	if (!probe(pg << 12))
		return 0;
	if (filling)
		return 1;
	filling = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pohm_addr_tls.e[i].page = pg;
	pohm_addr_tls.e[i].gen = gen;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	filling = 0;
	return 1;
}

int pohm_addr_str(const char *s)
{
	uintptr_t a = (uintptr_t)s, end;

	for (;;) {
		if (a - POHM_UADDR_LO >= pohm_state.utop - POHM_UADDR_LO ||
		    !page_ok(a >> 12))
			return 0;
		end = ((a >> 12) + 1) << 12;
		if (memchr((const void *)a, '\0', end - a))
			return 1;
		a = end;	/* the string goes on into the next page */
	}
}
