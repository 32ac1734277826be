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
 * Sections: umask; credentials; syscall(2).
 */
#include "shim.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>

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

/* ------------------------------------------------------------ syscall(2) */

/*
 * The C library's syscall(2) (libcap's cap_set_proc and cap_setuid, a
 * per-thread setresuid as Samba does): the kept credentials and umask
 * are not told by a wrapper above, so a credential call made this way
 * turns the snapshot off for good (it may be one thread's only), and a
 * umask marks the kept one stale.  getdents64 and getdents on an fd
 * whose directory's listing failed list it again or fail EIO, as the
 * getdents64 wrapper (dir.c).  Every other number passes untouched;
 * errno is the real call's.  Inline assembly is still not seen
 * (libpohmelfs(7) LIMITS).
 */
static int creds_nr(long nr)
{
	switch (nr) {
	case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid:
	case SYS_setresuid: case SYS_setresgid: case SYS_setfsuid: case SYS_setfsgid:
	case SYS_capset:
		return 1;
	}
	return 0;
}

static int dents_nr(long nr)
{
#ifdef SYS_getdents
	if (nr == SYS_getdents)
		return 1;
#endif
	return nr == SYS_getdents64;
}

POHM_EXPORT long syscall(long nr, ...)
{
	long a[6], r;
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	pohm_init();
	if (creds_nr(nr))
		pohm_sys_creds_per_thread();
	if (dents_nr(nr) && (r = pohm_dir_fd_readable((int)a[0])) < 0) {
		errno = (int)-r;
		return -1;	/* as getdents64 (dir.c): a listing failed */
	}
	r = pohm_real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (nr == SYS_umask)
		pohm_sys_umask_changed();
	return r;
}
