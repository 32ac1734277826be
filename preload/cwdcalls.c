/*
 * cwdcalls.c — the wrappers of the working directory: chdir and fchdir
 * update cwd.c's state after the real call (chdir under the prefix runs
 * the lookup hook first: the directory must exist locally); getcwd only
 * makes sure light init ran.  Apart from cwd.c since session 13 (issue
 * 20): the state is below classify.c and the hooks, the wrappers above
 * them.
 */
#include "shim.h"

#include <limits.h>

POHM_EXPORT int chdir(const char *path)
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_ro(AT_FDCWD, path, &p)) {
		r = pohm_real.chdir(path);
		if (r == 0 && pohm_active())
			pohm_cwd_resync();
		return r;
	}
	r = pohm_hook_lookup(POHM_PL_CHDIR, &p, 0);
	if (r == POHM_PASS)
		r = pohm_sysret(pohm_real.chdir(path));
	if (r == 0)
		pohm_cwd_resync();
	return pohm_ret(r);
}

/* The fd's position is in the table; for an fd of unknown place, getcwd. */
POHM_EXPORT int fchdir(int fd)
{
	char rel[POHM_REL_MAX];
	struct pohm_pc_pos pos;
	struct pohm_fdid id;
	size_t len;
	int r;

	pohm_init();
	r = pohm_real.fchdir(fd);
	if (r < 0 || !pohm_active())
		return r;
	if (pohm_fd_base(fd, &pos, rel, sizeof(rel), &len, &id) < 0 || pos.depth >= POHM_PC_DEEP) {
		pohm_cwd_resync();	/* an fd of unknown place: ask the kernel once */
		return r;
	}
	pohm_cwd_store(&pos, id.under || pohm_pc_pos_class(&pohm_state.prefix, &pos, NULL) == POHM_PC_IN);
	return r;
}

POHM_EXPORT char *getcwd(char *buf, size_t size)
{
	pohm_init();
	return pohm_real.getcwd(buf, size);
}

POHM_EXPORT char *__getcwd_chk(char *buf, size_t size, size_t buflen)
{
	pohm_init();
	return pohm_real.__getcwd_chk(buf, size, buflen);
}
