/*
 * perm.h — the one permission checker: may a process with these ids have
 * R_OK|W_OK|X_OK on an object of this mode, owner and group, by the
 * kernel's rules (generic_permission: owner bits, else group bits, else
 * other bits; then CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH).
 *
 * Every access decision of core/ and preload/ goes through
 * pohm_perm_mode: the cache's checks on STORED attributes (core/cache
 * cacheperm.c: namespace changes, attribute changes, access(2) of a stub)
 * and the per-user cache_dir checks (core/mount mount_user.c).  Only the
 * credential differs, and the caller says which one it means:
 * pohm_cred_fs for a file operation (what the kernel checks for open,
 * mkdir, unlink...), pohm_cred_access for access(2)/faccessat(2), or a
 * credential filled by hand for "could user U do this" (no groups, no
 * capabilities: only U's id 0 overrides).
 *
 * Guards: none (the credential is the caller's; capabilities and groups
 * are read with one system call each when the mode bits do not decide).
 * Kept credentials (issue 23): in a process that called
 * pohm_sys_keep_attrs (the shim), the ids and effective capabilities are
 * read once and again after pohm_sys_creds_changed (sys.h); perm.c says how.
 */
#ifndef POHM_CORE_PERM_H
#define POHM_CORE_PERM_H

#include <stdint.h>
#include <sys/types.h>

/* pohm_cred.how: what besides uid and gid decides. */
#define POHM_CRED_GROUPS 0x1	/* the calling thread's supplementary groups count as gid */
#define POHM_CRED_CAPS	 0x2	/* the calling thread's effective capabilities override */
#define POHM_CRED_ROOT	 0x4	/* uid 0 overrides as CAP_DAC_OVERRIDE would */

/* Who asks: the ids checked against the object's owner and group. */
struct pohm_cred {
	uint32_t uid, gid;
	unsigned how;		/* POHM_CRED_* */
};

/* The calling thread as the kernel checks its file operations: fsuid,
 * fsgid, supplementary groups, effective capabilities. */
void pohm_cred_fs(struct pohm_cred *cr);
/* The calling thread as access(2) checks it: the real uid and gid
 * (effective: the effective ones, faccessat's AT_EACCESS), the
 * supplementary groups, and uid 0's override (access(2) gives a real root
 * its capabilities and takes them from everyone else). */
void pohm_cred_access(struct pohm_cred *cr, int effective);
/*
 * May cr have want (R_OK|W_OK|X_OK; 0 always may) on an object of mode
 * (S_IFMT bits included), owner uid and group gid?  The override (CAPS or
 * ROOT) grants everything except X_OK on a non-directory with no x bit;
 * CAP_DAC_READ_SEARCH grants reading and searching directories.  0, or
 * -EACCES.
 */
int pohm_perm_mode(uint32_t mode, uint32_t uid, uint32_t gid, int want,
		   const struct pohm_cred *cr);
/* Does the calling thread hold capability cap in its effective set?  1, 0. */
int pohm_perm_has_cap(int cap);
/* The calling thread's fsuid. */
uint32_t pohm_perm_fsuid(void);
/* The calling thread's effective uid (geteuid(2), kept as above). */
uid_t pohm_perm_euid(void);
/* The calling thread's effective gid (getegid(2), kept as above). */
gid_t pohm_perm_egid(void);
/* Reporting changes: pohm_sys_creds_changed, pohm_sys_creds_per_thread
 * (sys.h, for the shim's wrappers). */

#endif
