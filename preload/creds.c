/*
 * creds.c — the process attributes core/ keeps instead of asking the
 * kernel at every call (issue 23): the umask (core/sys
 * pohm_sys_umask_kept, the mode of every new object).  Each wrapper makes
 * the real call and then tells core/sys the kept copy may have moved; it
 * classifies nothing and hands nothing off (no path: the call itself always
 * falls through to the C library), so it is the same with or without a
 * prefix.  What a raw system call changes behind the C library's back is
 * not seen (libpohmelfs(7) LIMITS).
 *
 * Sections: umask.
 */
#include "shim.h"

#include <sys/stat.h>

/* ------------------------------------------------------------ umask */

POHM_EXPORT mode_t umask(mode_t mask)
{
	mode_t old;

	pohm_init();
	old = pohm_real.umask(mask);
	pohm_sys_umask_changed();	/* after the call: sys.c says why */
	return old;
}
