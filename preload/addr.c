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
#include <sys/mman.h>
#include <sys/uio.h>

#include "sys.h"

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
		if (a - POHM_UADDR_LO >= __atomic_load_n(&pohm_state.utop, __ATOMIC_RELAXED) -
		    POHM_UADDR_LO ||
		    !page_ok(a >> 12))
			return 0;
		end = ((a >> 12) + 1) << 12;
		if (memchr((const void *)a, '\0', end - a))
			return 1;
		a = end;	/* the string goes on into the next page */
	}
}

/*
 * The end of user addresses, looked up on the first pointer at or above
 * POHM_UADDR_HI, not at every start (light init did: a cpuid, which traps
 * to the hypervisor in a VM, and an mmap and munmap; issue 23).  x86-64:
 * 2^47, unless the CPU has 5-level paging (CPUID.7.ECX bit 16) and the
 * kernel maps above 2^47 when asked (a hint there: one mmap and munmap,
 * on such CPUs only); then 2^56.  Elsewhere there is no top (shim.h).
 * Threads racing here find the same answer.
 */
int pohm_addr_high(const void *p)
{
#if defined(__x86_64__)
	static int asked;	/* atomic: the top was looked up */
	unsigned a = 7, b, c = 0, d;
	long m;

	if ((uintptr_t)p < POHM_UADDR_HI)
		return 0;	/* the NULL area */
	if (!__atomic_load_n(&asked, __ATOMIC_ACQUIRE)) {
		__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
		if (c & (1u << 16)) {
			m = pohm_sys_mmap((void *)((uintptr_t)1 << 52), 4096, PROT_NONE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m >= 0 && (uintptr_t)m >= (uintptr_t)1 << 47)
				__atomic_store_n(&pohm_state.utop, (uintptr_t)1 << 56,
						 __ATOMIC_RELAXED);
			if (m >= 0)
				pohm_sys_munmap((void *)m, 4096);
		}
		__atomic_store_n(&asked, 1, __ATOMIC_RELEASE);
	}
	if ((uintptr_t)p - POHM_UADDR_LO <
	    __atomic_load_n(&pohm_state.utop, __ATOMIC_RELAXED) - POHM_UADDR_LO)
		return pohm_addr_str((const char *)p);
#endif
	return 0;
}
