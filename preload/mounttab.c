/*
 * mounttab.c — the kernel's mount tables as the shim's stat describes the
 * prefix (issue 22 item 11; man/libpohmelfs.7 says why).
 *
 * Under the prefix stat reports st_ino = the storage inode number and
 * st_dev = one device number per fsid (core/cache), so (st_dev, st_ino)
 * stays unique: the storage's random inode numbers are not disjoint from
 * the local file system's.  Tools that find a file's file system by its
 * st_dev (df, findmnt, stat's mount point, gnulib's mountlist) look it up
 * in /proc/self/mountinfo or /proc/mounts: read through the shim, these
 * carry one more line, the prefix as a mount point with that device number
 * and the file system type, source and options of the local mount it is
 * on, whose statfs(2) figures the shim reports unchanged.  The real tables
 * are read, the line appended, and the caller gets a memfd of the text.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

/* Which table path names: 1 mountinfo, 2 mounts, 0 neither. */
static int table_kind(const char *path)
{
	const char *p, *leaf;
	char pid[24];

	if (!pohm_addr_ok(path) || strncmp(path, "/proc/", 6))
		return 0;	/* a bad pointer: the kernel's EFAULT */
	p = path + 6;
	if (!strcmp(p, "mounts"))
		return 2;
	leaf = strchr(p, '/');
	if (!leaf || (strcmp(leaf, "/mountinfo") && strcmp(leaf, "/mounts")))
		return 0;
	snprintf(pid, sizeof(pid), "%ld/", (long)pohm_sys_getpid());
	if (strncmp(p, "self/", 5) && strncmp(p, "thread-self/", 12) &&
	    strncmp(p, pid, strlen(pid)))
		return 0;	/* another process's view is its own */
	return strcmp(leaf, "/mountinfo") ? 2 : 1;
}

/* Unescape a mount table field (\040 and the like) into out. */
static void unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 1 < len; i++) {
		if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3') {
			out[o++] = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

/* Escape s as the kernel writes a path in a mount table. */
static void escape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 5 < len; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			o += (size_t)snprintf(out + o, len - o, "\\%03o", (unsigned char)*s);
		else
			out[o++] = *s;
	}
	out[o] = '\0';
}

/* Is mount point mp (unescaped) path itself or one of its ancestors? */
static size_t covers(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (n == 1 && mp[0] == '/')
		return 1;
	return !strncmp(mp, path, n) && (path[n] == '/' || !path[n]) ? n : 0;
}

/*
 * The line for the prefix (at real, device dev), from the table's line of
 * the mount it is on, appended to buf[*len] (capacity cap).  0 or -1.
 */
static int add_line(int kind, char *buf, size_t *len, size_t cap, const char *real, uint64_t dev)
{
	const char *line, *end, *best = NULL, *f[6], *below, *opt_end, *sep;
	char mp[8192], root[4096], eroot[16384], emp[8192];
	size_t best_n = 0, n;
	int nf, k, r;

	for (line = buf; line < buf + *len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(buf + *len - line));
		if (!end)
			break;
		/* the mount point: field 5 of mountinfo, field 2 of mounts */
		for (nf = 0, f[0] = line; nf < 5 && f[nf] < end; nf++) {
			const char *sp = memchr(f[nf], ' ', (size_t)(end - f[nf]));

			if (!sp)
				break;
			f[nf + 1] = sp + 1;
		}
		k = kind == 1 ? 4 : 1;
		if (nf <= k)
			continue;
		unescape(f[k], (size_t)(f[k + 1] - 1 - f[k]), mp, sizeof(mp));
		n = covers(mp, real);
		if (n && n >= best_n) {
			best = line;
			best_n = n;
		}
	}
	if (!best)
		return -1;
	end = memchr(best, '\n', (size_t)(buf + *len - best));
	for (nf = 0, f[0] = best; nf < 5; nf++)
		f[nf + 1] = memchr(f[nf], ' ', (size_t)(end - f[nf])) + 1;
	escape(real, emp, sizeof(emp));
	if (kind == 1) {
		/* id parent maj:min root mountpoint REST: the root is the mount's
		 * root plus the prefix's path below its mount point. */
		unescape(f[3], (size_t)(f[4] - 1 - f[3]), root, sizeof(root));
		below = best_n == 1 ? real : real + best_n;	/* "" or "/x/y" */
		snprintf(mp, sizeof(mp), "%s%s", strcmp(root, "/") ? root : "", *below ? below : "");
		if (!mp[0])
			snprintf(mp, sizeof(mp), "/");
		escape(mp, eroot, sizeof(eroot));
		/* The options, then " - type source superoptions"; the optional
		 * fields between (shared:N, master:N) are the local mount's
		 * propagation, not the prefix's: left out. */
		opt_end = memchr(f[5], ' ', (size_t)(end - f[5]));
		sep = memmem(f[5], (size_t)(end - f[5]), " - ", 3);
		if (!opt_end || !sep)
			return -1;
		r = snprintf(buf + *len, cap - *len, "%u %.*s %u:%u %s %s %.*s%.*s\n",
			     0x40000000u | (unsigned)(dev & 0xfffffff), (int)(f[1] - 1 - f[0]), f[0],
			     major((dev_t)dev), minor((dev_t)dev), eroot, emp,
			     (int)(opt_end - f[5]), f[5], (int)(end - sep), sep);
	} else {
		/* source mountpoint REST */
		r = snprintf(buf + *len, cap - *len, "%.*s %s %.*s\n", (int)(f[1] - 1 - f[0]), f[0],
			     emp, (int)(end - f[2]), f[2]);
	}
	if (r < 0 || (size_t)r >= cap - *len)
		return -1;
	*len += (size_t)r;
	return 0;
}

static int mounttab_open(const char *path, int flags);

struct mt_arg {
	const char *path;
	int flags;
};

static long mt_run(void *v)
{
	struct mt_arg *a = v;

	return mounttab_open(a->path, a->flags);
}

/* On the library's stack (stack.c): the table is built in ~40 KiB of
 * frames. */
int pohm_mounttab_open(const char *path, int flags)
{
	struct mt_arg a = { path, flags };

	if (!table_kind(path))
		return -1;
	return (int)pohm_stack_run(mt_run, &a);
}

static int mounttab_open(const char *path, int flags)
{
	char real[4096], *buf = NULL;
	size_t len = 0, cap = 1 << 16;
	uint64_t dev;
	int kind, fd = -1, mfd = -1, saved = errno;
	ssize_t n;

	if (!(kind = table_kind(path)) || (flags & O_ACCMODE) != O_RDONLY ||
	    (flags & (O_DIRECTORY | O_PATH)))
		return -1;
	if (!pohm_real.realpath(pohm_state.prefix.sp[0].path, real))
		goto out;
	if (pohm_hook_mount_dev(&dev) != 0)
		goto out;
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0)
		goto out;
	for (;;) {
		char *nb = realloc(buf, cap);

		if (!nb)
			goto out;
		buf = nb;
		n = pohm_sys_read_full(fd, buf + len, cap - len - 8192);
		if (n < 0)
			goto out;
		len += (size_t)n;
		if (len < cap - 8192)
			break;
		cap *= 2;
	}
	if (add_line(kind, buf, &len, cap, real, dev))
		goto out;
	mfd = pohm_sys_memfd_create(kind == 1 ? "mountinfo" : "mounts",
				    (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (mfd < 0) {
		mfd = -1;
		goto out;
	}
	if (pohm_sys_write_full(mfd, buf, len) != (ssize_t)len || lseek(mfd, 0, SEEK_SET)) {
		pohm_sys_close(mfd);
		mfd = -1;
	}
out:
	if (fd >= 0)
		pohm_sys_close(fd);
	free(buf);
	errno = saved;
	return mfd;
}
