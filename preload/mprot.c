/*
 * mprot.c — mprotect and mremap: their own system calls, after which
 * pages this process found readable may not be any more, so every
 * thread's cache of readable pages (addr.c) is dropped.  Not path calls:
 * nothing else happens here.
 */
#include "shim.h"

#include <stdarg.h>
#include <sys/mman.h>

POHM_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	int r = pohm_sys_mprotect(addr, len, prot);

	if (!(prot & PROT_READ))
		pohm_addr_changed();
	return pohm_ret(r);
}

POHM_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	va_list ap;
	long r;

	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	r = pohm_sys_mremap(old, old_len, new_len, flags, new_addr);
	pohm_addr_changed();	/* the old range is unmapped (or moved) */
	if (r < 0) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	return (void *)r;
}
