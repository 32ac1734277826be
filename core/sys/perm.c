/*
 * perm.c — the one permission checker (perm.h).  Raw system calls (capget,
 * getgroups, setfsuid/setfsgid as queries) stay in core/sys.
 *
 * The kept credentials (issue 23: geteuid, setfsuid(-1) and capget were
 * asked at every check, 14 calls a file in tar): after
 * pohm_sys_keep_attrs, the ids and the effective capabilities are read
 * once into a snapshot, tagged with the generation cred_gen had before the
 * read; pohm_sys_creds_changed (the shim's set*id wrappers, after the
 * real call, which glibc applies to every thread) bumps cred_gen, so the
 * next check reads again.  pohm_sys_creds_per_thread (setfsuid, setfsgid,
 * capset: one thread's own) turns the snapshot off for good: from then on
 * every check asks the kernel, as before.  The supplementary groups are not
 * kept (asked only when the owner and group ids do not decide).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perm.h"
#include "raw.h"
#include "sys.h"

/* The snapshot's words, in this order. */
enum { K_UID, K_EUID, K_GID, K_EGID, K_FSUID, K_FSGID, K_CAP0, K_CAP1, K_N };

/*
 * The snapshot, a sequence lock without a lock to wait on: snap_seq is odd
 * while one thread rewrites snap[] (it got there by compare-and-swap from
 * even; any other reader meanwhile, a signal handler included, asks the
 * kernel instead of waiting); a reader copies snap[] between two loads of
 * snap_seq and uses the copy only if they are equal and even and snap_gen
 * is the current cred_gen.  Every access is atomic (acquire loads, release
 * stores).  cred_gen starts at 1 so the empty snapshot (gen 0) is stale;
 * per_thread is 0, then 1 for good.
 */
static uint32_t snap[K_N], snap_seq, snap_gen, cred_gen = 1;
static int per_thread;

static void caps_now(uint32_t cap[2])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	cap[0] = cap[1] = 0;
	if (POHM_RAW(SYS_capget, &h, d))
		return;
	cap[0] = d[0].effective;
	cap[1] = d[1].effective;
}

/* The kept snapshot into k, read again when stale.  1, or 0: ask the
 * kernel (not kept in this process, per-thread changes seen, or another
 * thread is rewriting it). */
static int kept(uint32_t k[K_N])
{
	uint32_t g, s1, s2, r[3];
	int i;

	if (!pohm_sys_keeps_attrs() || __atomic_load_n(&per_thread, __ATOMIC_ACQUIRE))
		return 0;
	g = __atomic_load_n(&cred_gen, __ATOMIC_ACQUIRE);
	s1 = __atomic_load_n(&snap_seq, __ATOMIC_ACQUIRE);
	if (s1 & 1)
		return 0;
	if (__atomic_load_n(&snap_gen, __ATOMIC_ACQUIRE) == g) {
		for (i = 0; i < K_N; i++)
			k[i] = __atomic_load_n(&snap[i], __ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&snap_seq, __ATOMIC_ACQUIRE);
		return s1 == s2;
	}
	/* Stale: read every id now, and keep them if no one else is at it. */
	POHM_RAW(SYS_getresuid, &r[0], &r[1], &r[2]);
	k[K_UID] = r[0];
	k[K_EUID] = r[1];
	POHM_RAW(SYS_getresgid, &r[0], &r[1], &r[2]);
	k[K_GID] = r[0];
	k[K_EGID] = r[1];
	k[K_FSUID] = (uint32_t)POHM_RAW(SYS_setfsuid, -1);
	k[K_FSGID] = (uint32_t)POHM_RAW(SYS_setfsgid, -1);
	caps_now(&k[K_CAP0]);
	if (__atomic_compare_exchange_n(&snap_seq, &s1, s1 + 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		for (i = 0; i < K_N; i++)
			__atomic_store_n(&snap[i], k[i], __ATOMIC_RELEASE);
		__atomic_store_n(&snap_gen, g, __ATOMIC_RELEASE);
		__atomic_store_n(&snap_seq, s1 + 2, __ATOMIC_RELEASE);
	}
	return 1;
}

void pohm_sys_creds_changed(void)
{
	__atomic_add_fetch(&cred_gen, 1, __ATOMIC_ACQ_REL);
}

void pohm_sys_creds_per_thread(void)
{
	__atomic_store_n(&per_thread, 1, __ATOMIC_RELEASE);
}

int pohm_perm_has_cap(int cap)
{
	uint32_t k[K_N], c[2];

	if (kept(k)) {
		c[0] = k[K_CAP0];
		c[1] = k[K_CAP1];
	} else {
		caps_now(c);
	}
	return !!(c[cap / 32] & (1u << (cap % 32)));
}

uint32_t pohm_perm_fsuid(void)
{
	uint32_t k[K_N];

	if (kept(k))
		return k[K_FSUID];
	/* setfsuid with an invalid id changes nothing and returns the current one. */
	return (uint32_t)POHM_RAW(SYS_setfsuid, -1);
}

uid_t pohm_perm_euid(void)
{
	uint32_t k[K_N];

	if (kept(k))
		return (uid_t)k[K_EUID];
	return (uid_t)POHM_RAW(SYS_geteuid);
}

uid_t pohm_sys_geteuid(void)
{
	return pohm_perm_euid();
}

gid_t pohm_perm_egid(void)
{
	uint32_t k[K_N];

	if (kept(k))
		return (gid_t)k[K_EGID];
	return (gid_t)POHM_RAW(SYS_getegid);
}

void pohm_cred_fs(struct pohm_cred *cr)
{
	uint32_t k[K_N];

	if (kept(k)) {
		cr->uid = k[K_FSUID];
		cr->gid = k[K_FSGID];
	} else {
		cr->uid = (uint32_t)POHM_RAW(SYS_setfsuid, -1);
		cr->gid = (uint32_t)POHM_RAW(SYS_setfsgid, -1);
	}
	cr->how = POHM_CRED_GROUPS | POHM_CRED_CAPS;
}

void pohm_cred_access(struct pohm_cred *cr, int effective)
{
	uint32_t k[K_N];

	if (kept(k)) {
		cr->uid = k[effective ? K_EUID : K_UID];
		cr->gid = k[effective ? K_EGID : K_GID];
	} else {
		cr->uid = (uint32_t)POHM_RAW(effective ? SYS_geteuid : SYS_getuid);
		cr->gid = (uint32_t)POHM_RAW(effective ? SYS_getegid : SYS_getgid);
	}
	cr->how = POHM_CRED_GROUPS | POHM_CRED_ROOT;
}

/* Is gid one of the calling thread's supplementary groups? */
static int in_groups(uint32_t gid)
{
	gid_t small[256], *v = small;
	int n, i, found = 0, saved = errno;	/* for malloc and free only */

	n = (int)POHM_RAW(SYS_getgroups, 0, NULL);
	if (n <= 0)
		goto out;
	if (n > 256 && !(v = malloc(sizeof(*v) * (size_t)n)))
		goto out;
	n = (int)POHM_RAW(SYS_getgroups, n, v);
	for (i = 0; i < n && !found; i++)
		found = (uint32_t)v[i] == gid;
	if (v != small)
		free(v);
out:
	errno = saved;
	return found;
}

int pohm_perm_mode(uint32_t mode, uint32_t uid, uint32_t gid, int want,
		   const struct pohm_cred *cr)
{
	uint32_t bits;
	int over;

	want &= R_OK | W_OK | X_OK;
	if (!want)
		return 0;
	if (cr->uid == uid)
		bits = (mode >> 6) & 7;
	else if (cr->gid == gid || ((cr->how & POHM_CRED_GROUPS) && in_groups(gid)))
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	if ((bits & (uint32_t)want) == (uint32_t)want)
		return 0;
	/* The override, as the kernel applies CAP_DAC_OVERRIDE. */
	over = ((cr->how & POHM_CRED_ROOT) && cr->uid == 0) ||
	       ((cr->how & POHM_CRED_CAPS) && pohm_perm_has_cap(CAP_DAC_OVERRIDE));
	if (over && (!(want & X_OK) || S_ISDIR(mode) || (mode & 0111)))
		return 0;
	if ((cr->how & POHM_CRED_CAPS) && !(want & W_OK) && (S_ISDIR(mode) || !(want & X_OK)) &&
	    pohm_perm_has_cap(CAP_DAC_READ_SEARCH))
		return 0;
	return -EACCES;
}
