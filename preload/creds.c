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
 * Sections: umask; credentials.
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

/* ------------------------------------------------------------ credentials */

/*
 * The set*id family: glibc changes every thread's ids (it signals each
 * thread to make the system call), so the kept credentials are read again
 * at the next check.  Failed or not: a partial change is possible (one
 * thread refused), so the next check asks.  errno is the real call's.
 */
#define CREDS_CHANGED(call) do {					\
	int r_;								\
	pohm_init();							\
	r_ = call;							\
	pohm_sys_creds_changed();					\
	return r_;							\
} while (0)

POHM_EXPORT int setuid(uid_t uid)
{
	CREDS_CHANGED(pohm_real.setuid(uid));
}

POHM_EXPORT int seteuid(uid_t euid)
{
	CREDS_CHANGED(pohm_real.seteuid(euid));
}

POHM_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	CREDS_CHANGED(pohm_real.setreuid(ruid, euid));
}

POHM_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	CREDS_CHANGED(pohm_real.setresuid(ruid, euid, suid));
}

POHM_EXPORT int setgid(gid_t gid)
{
	CREDS_CHANGED(pohm_real.setgid(gid));
}

POHM_EXPORT int setegid(gid_t egid)
{
	CREDS_CHANGED(pohm_real.setegid(egid));
}

POHM_EXPORT int setregid(gid_t rgid, gid_t egid)
{
	CREDS_CHANGED(pohm_real.setregid(rgid, egid));
}

POHM_EXPORT int setresgid(gid_t rgid, gid_t egid, gid_t sgid)
{
	CREDS_CHANGED(pohm_real.setresgid(rgid, egid, sgid));
}

/*
 * setfsuid, setfsgid and capset change the calling thread alone: from the
 * first of them on, nothing is kept (every check asks the kernel, as it did
 * before issue 23), since one snapshot cannot hold each thread's own.  Said
 * before the call, so no check in this thread meanwhile uses the old one.
 */
POHM_EXPORT int setfsuid(uid_t fsuid)
{
	pohm_init();
	if (fsuid != (uid_t)-1)	/* -1 only asks */
		pohm_sys_creds_per_thread();
	return pohm_real.setfsuid(fsuid);
}

POHM_EXPORT int setfsgid(gid_t fsgid)
{
	pohm_init();
	if (fsgid != (gid_t)-1)
		pohm_sys_creds_per_thread();
	return pohm_real.setfsgid(fsgid);
}

POHM_EXPORT int capset(cap_user_header_t hdr, cap_user_data_t data)
{
	pohm_init();
	pohm_sys_creds_per_thread();
	return pohm_real.capset(hdr, data);
}
