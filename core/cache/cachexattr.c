/*
 * cachexattr.c — user.* extended attributes between a local copy and its
 * stored inode (DESIGN §3: small xattrs live in the inode).  The local file
 * is the working copy: a push makes the stored user.* set equal to the
 * local one; a fetch puts the stored set on the new local file.  Other
 * namespaces (security.*, trusted.*, system.*) belong to the local system
 * and are neither pushed nor applied.  The calls go through core/sys (the
 * libc names are the shim's own hooks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"
#include "stub.h"

#define XNAME_MAX 256
#define XVALUE_MAX 65536

static int is_user(const char *name)
{
	return !strncmp(name, "user.", 5);
}

/* The local object: fd >= 0, or path (no follow).  -errno. */
static long x_list(int fd, const char *path, char *buf, size_t n)
{
	return pohm_sys_listxattr(fd, path, 0, buf, n);
}

static long x_get(int fd, const char *path, const char *name, void *buf, size_t n)
{
	return pohm_sys_getxattr(fd, path, 0, name, buf, n);
}

/* The local names, NUL-separated, malloc'ed into *out; length or -errno. */
static long local_names(int fd, const char *path, char **out)
{
	long n = x_list(fd, path, NULL, 0);

	*out = NULL;
	if (n == -ENOTSUP || n == -EPERM)
		return 0;		/* no xattrs on this file system or object */
	if (n <= 0)
		return n;
	*out = malloc((size_t)n + 1);
	if (!*out)
		return -ENOMEM;
	n = x_list(fd, path, *out, (size_t)n);
	if (n < 0) {
		free(*out);
		*out = NULL;
	}
	return n;
}

static const struct pohm_xattr *stored(const struct pohm_inode *in, const char *name)
{
	uint32_t i;

	for (i = 0; i < in->nxattr; i++)
		if (in->xattr[i].name && !strcmp(in->xattr[i].name, name))
			return &in->xattr[i];
	return NULL;
}

int cache_xattr_push(struct pohm_cache *c, int fd, const char *path, const struct pohm_inode *in)
{
	char *names = NULL, *val = NULL, *p;
	long n, len;
	uint32_t i;
	int r = 0, changed = 0;

	n = local_names(fd, path, &names);
	if (n < 0)
		return (int)n;
	val = malloc(XVALUE_MAX);
	if (!val) {
		r = -ENOMEM;
		goto out;
	}
	for (p = names; p && p < names + n; p += strlen(p) + 1) {
		const struct pohm_xattr *x;

		if (!is_user(p))
			continue;
		len = x_get(fd, path, p, val, XVALUE_MAX);
		if (len == -ENODATA)
			continue;	/* removed meanwhile */
		if (len < 0) {
			r = (int)len;
			goto out;
		}
		x = stored(in, p);
		if (x && x->len == (uint32_t)len && !memcmp(x->value, val, (size_t)len))
			continue;
		r = pohm_ns_setxattr(c->ns, in->ino, p, val, (size_t)len, 0);
		if (r)
			goto out;
		changed = 1;
	}
	for (i = 0; i < in->nxattr; i++) {
		const char *name = in->xattr[i].name;
		int here = 0;

		if (!name || !is_user(name))
			continue;
		for (p = names; p && p < names + n && !here; p += strlen(p) + 1)
			here = !strcmp(p, name);
		if (here)
			continue;
		r = pohm_ns_removexattr(c->ns, in->ino, name);
		if (r == -ENODATA)
			r = 0;
		if (r)
			goto out;
		changed = 1;
	}
out:
	free(val);
	free(names);
	return r ? r : changed;
}

int cache_xattr_apply(int fd, const struct pohm_inode *in)
{
	uint32_t i;
	int r = 0, ret;

	for (i = 0; i < in->nxattr; i++) {
		const struct pohm_xattr *x = &in->xattr[i];

		if (!x->name || !is_user(x->name))
			continue;
		ret = pohm_sys_setxattr(fd, NULL, 0, x->name, x->value, (size_t)x->len, 0);
		if (ret && !r)
			r = ret;
	}
	if (r)
		pohm_warn("inode %llu: stored xattrs not all applied to the local copy (%s)",
			  (unsigned long long)in->ino, strerror(-r));
	return r;
}

/* The local user.* names of the object at path (following: a /proc/self/fd
 * link), malloc'ed into *out; length or -errno. */
static long path_names(const char *path, char **out)
{
	long n = pohm_sys_listxattr(-1, path, 1, NULL, 0);

	*out = NULL;
	if (n < 0)
		return n == -ENOTSUP ? 0 : n;
	if (!n)
		return 0;
	*out = malloc((size_t)n + 1);
	if (!*out)
		return -ENOMEM;
	n = pohm_sys_listxattr(-1, path, 1, *out, (size_t)n);
	if (n < 0) {
		free(*out);
		*out = NULL;
	}
	return n;
}

int cache_xattr_pull(int dfd, const char *name, const struct pohm_inode *in)
{
	char path[64], *names = NULL, *p;
	long n;
	uint32_t i;
	int fd, r = 0, ret;

	if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
		return 0;	/* user.* is for files and directories only */
	fd = pohm_sys_openat(dfd, name, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = path_names(path, &names);
	if (n < 0) {
		r = (int)n;
		goto out;
	}
	for (p = names; p && p < names + n; p += strlen(p) + 1) {
		if (!is_user(p) || stored(in, p))
			continue;
		ret = pohm_sys_removexattr(-1, path, 1, p);
		if (ret && ret != -ENODATA && !r)
			r = ret;
	}
	for (i = 0; i < in->nxattr; i++) {
		const struct pohm_xattr *x = &in->xattr[i];

		if (!x->name || !is_user(x->name))
			continue;
		ret = pohm_sys_setxattr(-1, path, 1, x->name, x->value, (size_t)x->len, 0);
		if (ret && !r)
			r = ret;
	}
out:
	free(names);
	pohm_sys_close(fd);
	return r;
}
