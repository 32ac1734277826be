/*
 * perm.c — the one permission checker (perm.h).  Raw system calls (capget,
 * getgroups, setfsuid/setfsgid as queries) stay in core/sys.
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

int pohm_perm_has_cap(int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (POHM_RAW(SYS_capget, &h, d))
		return 0;
	return !!(d[cap / 32].effective & (1u << (cap % 32)));
}

uint32_t pohm_perm_fsuid(void)
{
	/* setfsuid with an invalid id changes nothing and returns the current one. */
	return (uint32_t)POHM_RAW(SYS_setfsuid, -1);
}

void pohm_cred_fs(struct pohm_cred *cr)
{
	cr->uid = pohm_perm_fsuid();
	cr->gid = (uint32_t)POHM_RAW(SYS_setfsgid, -1);
	cr->how = POHM_CRED_GROUPS | POHM_CRED_CAPS;
}

void pohm_cred_access(struct pohm_cred *cr, int effective)
{
	cr->uid = (uint32_t)POHM_RAW(effective ? SYS_geteuid : SYS_getuid);
	cr->gid = (uint32_t)POHM_RAW(effective ? SYS_getegid : SYS_getgid);
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
