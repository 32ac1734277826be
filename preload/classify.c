/*
 * classify.c — "is (dirfd, path) under the prefix?" (DESIGN.md §2 step 1).
 *
 * Absolute paths are walked from "/"; relative ones from the tracked cwd
 * (cwd.c) or the dirfd's entry in the fd table (fd.c); /proc/self/fd/N,
 * /proc/thread-self/fd/N and /dev/fd/N start from fd N.  The walk itself is
 * core/pathclass: lexical, no system call, no allocation.  Only when a
 * base's position is unknown (an fd handed over by exec, the cwd while
 * glibc's nftw/fts move it, a ".." above a dirfd we never saw opened) does
 * this file ask the kernel (getcwd, readlink of /proc/self/fd/N), and then
 * it caches the answer.  The caller's (dirfd, path) is never modified.
 *
 * Sections: bases; the classifier.
 */
#include "shim.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

/* ------------------------------------------------------------ bases */

/*
 * The kernel's idea of where base is (getcwd, or /proc/self/fd/N), walked
 * into *pos and rel; cached in the cwd state / fd table when it may be.
 * 0, or -1 when the kernel does not know either (then: somewhere outside).
 */
__attribute__((noinline)) static int base_from_kernel(int dirfd, struct pohm_pc_pos *pos,
						       char *rel, size_t relsz, size_t *rellen)
{
	char buf[PATH_MAX], link[40];
	struct pohm_pc_res res;
	int saved = errno;
	long n;

	if (dirfd == AT_FDCWD) {
		n = syscall(SYS_getcwd, buf, sizeof(buf));
		if (n > 0)
			n--;		/* the kernel counts the NUL */
	} else {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		n = syscall(SYS_readlinkat, AT_FDCWD, link, buf, sizeof(buf) - 1);
	}
	errno = saved;
	pos->depth = POHM_PC_DEEP;
	pos->match[0] = pos->match[1] = 0;
	*rellen = 0;
	if (n <= 0 || n >= (long)sizeof(buf) || buf[0] != '/')
		return -1;
	buf[n] = '\0';
	pos->depth = 0;
	pohm_pc_walk(&pohm_state.prefix, pos, rel, relsz, rellen, buf, POHM_PC_FULL, &res);
	*rellen = res.cls == POHM_PC_IN ? (res.trunc ? relsz : res.len) : 0;
	if (dirfd == AT_FDCWD)
		return 0;	/* unknown or volatile cwd: asked each time */
	if (res.cls != POHM_PC_IN || !res.trunc) {
		if (res.cls == POHM_PC_IN)
			rel[res.len] = '\0';
		pohm_fd_resolved(dirfd, pos, res.cls == POHM_PC_IN ? rel : NULL);
	}
	return 0;
}

/* The base of a relative path: 0, or -1 when the fd is invalid (dirfd < 0). */
static int base_of(int dirfd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen)
{
	int r;

	if (dirfd == AT_FDCWD) {
		r = pohm_cwd_base(pos, rel, relsz, rellen);
		if (r < 0)
			base_from_kernel(AT_FDCWD, pos, rel, relsz, rellen);
		return 0;
	}
	if (dirfd < 0)
		return -1;
	if (pohm_fd_base(dirfd, pos, rel, relsz, rellen) < 0)
		base_from_kernel(dirfd, pos, rel, relsz, rellen);
	return 0;
}

/* "/proc/self/fd/N[/rest]", "/proc/thread-self/fd/N...", "/dev/fd/N...": N and rest. */
static int proc_fd(const char *path, int *fd, const char **rest)
{
	static const char *const pre[] = { "/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/" };
	static const size_t len[] = { 14, 21, 8 };
	const char *s;
	unsigned i;
	long n = 0;

	if (path[1] != 'p' && path[1] != 'd')
		return 0;
	for (i = 0; i < 3; i++)
		if (!strncmp(path, pre[i], len[i]))
			break;
	if (i == 3)
		return 0;
	s = path + len[i];
	if (*s < '0' || *s > '9')
		return 0;
	for (; *s >= '0' && *s <= '9' && n < INT_MAX / 10; s++)
		n = n * 10 + (*s - '0');
	if (*s && *s != '/')
		return 0;
	while (*s == '/')
		s++;
	*fd = (int)n;
	*rest = s;
	return 1;
}

/* ------------------------------------------------------------ the classifier */

enum pohm_pc_class pohm_locate(int dirfd, const char *path, unsigned flags,
			       struct pohm_path *p, struct pohm_where *w)
{
	const struct pohm_pc_prefix *pf = &pohm_state.prefix;
	unsigned wf = (flags & POHM_LOC_FULL) ? POHM_PC_FULL : 0;
	struct pohm_where local;
	struct pohm_pc_res res;
	const char *walk;
	size_t len = 0;
	int base = dirfd;

	if (!w)
		w = &local;
	w->cls = POHM_PC_OUT;
	if (!pohm_addr_ok(path) || !pf->nsp)
		return POHM_PC_OUT;	/* NULL or a bad pointer: EFAULT from the kernel */
	path = pohm_launder(path);
	/* The hot path: an absolute path outside, by string comparison alone. */
	if (path[0] == '/' && !(flags & POHM_LOC_FULL) && !proc_fd(path, &base, &walk) &&
	    pohm_abs_fast_out_full(path))
		return POHM_PC_OUT;
	/* The next hottest: a relative name from a cwd that is not under the prefix. */
	if (path[0] != '/' && dirfd == AT_FDCWD && !(flags & POHM_LOC_FULL) &&
	    pohm_cwd_fast_out(path))
		return POHM_PC_OUT;
	p->dirfd = dirfd;
	p->path = path;
	p->spelling = -1;
	p->flags = 0;
	p->len = 0;
	p->rel[0] = '\0';
	walk = path;
	if (path[0] == '/') {
		if (!proc_fd(path, &base, &walk)) {
			w->pos.depth = 0;
			w->pos.match[0] = w->pos.match[1] = 0;
			goto walk;
		}
		p->flags |= POHM_PATH_PROCFD;
	} else if (!path[0] && !(flags & POHM_LOC_EMPTY)) {
		return POHM_PC_OUT;	/* ENOENT from the kernel */
	}
	if (base_of(base, &w->pos, p->rel, sizeof(p->rel), &len) < 0)
		return POHM_PC_OUT;	/* EBADF from the kernel */
walk:
	w->cls = pohm_pc_walk(pf, &w->pos, p->rel, sizeof(p->rel), &len, walk, wf, &res);
	if (w->cls == POHM_PC_ESCAPE) {
		/* ".." above a base of unknown depth: ask the kernel, walk again. */
		if (base_from_kernel(base, &w->pos, p->rel, sizeof(p->rel), &len) < 0)
			return w->cls = POHM_PC_OUT;
		w->cls = pohm_pc_walk(pf, &w->pos, p->rel, sizeof(p->rel), &len, walk, wf, &res);
		if (w->cls == POHM_PC_ESCAPE)
			return w->cls = POHM_PC_OUT;
	}
	if (w->cls != POHM_PC_IN)
		return w->cls;
	p->spelling = res.spelling;
	p->len = res.len;
	if (res.slash)
		p->flags |= POHM_PATH_SLASH;
	if (res.trunc) {
		p->flags |= POHM_PATH_TRUNC;
		p->rel[0] = '\0';
		p->len = 0;
	}
	return POHM_PC_IN;
}

int pohm_classify(int dirfd, const char *path, struct pohm_path *p)
{
	return pohm_locate(dirfd, path, 0, p, NULL) == POHM_PC_IN;
}

struct pohm_pc_pos pohm_path_pos(const struct pohm_path *p)
{
	struct pohm_pc_pos pos = pohm_pc_root_of(&pohm_state.prefix, p->spelling);
	const char *s;

	if (p->len) {
		pos.depth++;
		for (s = p->rel; (s = strchr(s, '/')); s++)
			pos.depth++;
	}
	return pos;
}
