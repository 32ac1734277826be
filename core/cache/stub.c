/*
 * stub.c — making a stub (stub.h): a mode-000 socket inode, or an empty
 * mode-000 regular file where the filesystem has no socket inodes.
 * Raw syscalls: the libc names are the shim's own hooks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "stub.h"
#include "sys.h"

/* Test builds, POHMELFS_TEST_REGULAR_STUBS=1: the form of a filesystem
 * without sockets (sys.h pohm_sys_test_switch). */
static int regular_wanted(void)
{
	const char *v = pohm_sys_test_switch(POHM_TEST_REGULAR_STUBS);

	return v && v[0] == '1';
}

static int make_regular(int dfd, const char *name)
{
	int fd = pohm_sys_openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0);

	if (fd < 0)
		return fd;
	pohm_sys_fchmod(fd, 0);	/* whatever the umask: 000 already, made sure */
	pohm_sys_close(fd);
	return 0;
}

int pohm_stub_make(int dfd, const char *name, int chown_it, uint32_t uid, uint32_t gid)
{
	int r;

	if (regular_wanted()) {
		r = make_regular(dfd, name);
	} else {
		r = pohm_sys_mknodat(dfd, name, S_IFSOCK, 0);
		if (r == -EPERM || r == -EOPNOTSUPP || r == -ENOSYS)
			r = make_regular(dfd, name);	/* no socket inodes here */
	}
	if (!r) {
		/* Mode 0 needs no chmod (a umask only takes bits away). */
		if (chown_it)
			pohm_sys_fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
	}
	return r;
}
