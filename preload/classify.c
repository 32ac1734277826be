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
 * A base under the prefix is taken by identity, not by the name it had
 * (issue 18): the directory may have been renamed since, by this process,
 * another one, or a remote rename applied here.  The cwd's current name is
 * the kernel's getcwd, each time; a dirfd's hint (fd.c) is used only when
 * it still names the fd's own local (dev, ino) — one fstatat from the
 * prefix root (base_current) — else readlink of /proc/self/fd/N gives the
 * name and corrects the hint.  A base whose directory was removed (rmdir,
 * or the cwd removed) has no name: a path that stays inside it is left to
 * the kernel (ENOENT, or the directory itself for "" and "."), one that
 * starts with ".." is walked from where the directory was.
 *
 * Sections: bases; the classifier.
 */
#include "shim.h"

#include <limits.h>
#include <string.h>

/* ------------------------------------------------------------ bases */

/* " (deleted)": what the kernel appends to the name of a removed file. */
#define DELETED " (deleted)"
#define DELETED_LEN (sizeof(DELETED) - 1)

/* The removed directory's name without its DELETED mark: 1 if buf, of
 * length *n, names a removed file (fd < 0: known removed), else 0. */
static int strip_deleted(int fd, char *buf, long *n)
{
	struct stat st;

	if (*n <= (long)DELETED_LEN || memcmp(buf + *n - DELETED_LEN, DELETED, DELETED_LEN))
		return 0;
	if (fd >= 0 && (pohm_sys_fstat(fd, &st) < 0 || st.st_nlink != 0))
		return 0;	/* a name that happens to end that way */
	*n -= (long)DELETED_LEN;
	buf[*n] = '\0';
	return 1;
}

/* link: "/proc/self/fd/N" for fd N >= 0 (40 bytes do).  Not snprintf:
 * its formatting cost as much as the rest of a cached stat's check. */
static void proc_fd_link(char *link, int fd)
{
	static const char pre[] = "/proc/self/fd/";
	char digits[12];
	size_t n = 0;
	unsigned v = (unsigned)fd;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(link, pre, sizeof(pre) - 1);
	link += sizeof(pre) - 1;
	while (n)
		*link++ = digits[--n];
	*link = '\0';
}

/* The (dev, ino) of dirfd into id, when the fd table wants it and has none. */
static void note_dir_id(int dirfd, struct pohm_fdid *id)
{
	struct stat st;

	if (id && id->under && !id->known && !pohm_sys_fstat(dirfd, &st)) {
		id->dev = (uint64_t)st.st_dev;
		id->ino = (uint64_t)st.st_ino;
		id->known = 1;
	}
}

/*
 * The kernel's idea of where base is (getcwd, or /proc/self/fd/N), walked
 * into *pos and rel; cached in the fd table when it may be (id: what the
 * table said of the fd, or NULL).  0; 1 when the base is a removed
 * directory (*pos and rel are where it was); -1 when the kernel does not
 * know either (then: somewhere outside).  A base deeper than PATH_MAX
 * (getcwd says ENAMETOOLONG) is found by deepbase.c's walk instead.
 */
__attribute__((noinline)) static int base_from_kernel(int dirfd, struct pohm_pc_pos *pos,
						       char *rel, size_t relsz, size_t *rellen,
						       struct pohm_fdid *id)
{
	char buf[PATH_MAX], link[40];
	struct pohm_pc_res res;
	int dead = 0;
	long n;

	if (dirfd == AT_FDCWD) {
		n = pohm_sys_getcwd(buf, sizeof(buf));
		if (n > 0) {
			n--;		/* the kernel counts the NUL */
		} else if (n == -ENOENT) {
			/* the cwd was removed: where it was */
			n = pohm_sys_readlinkat(AT_FDCWD, "/proc/self/cwd", buf, sizeof(buf) - 1);
			dead = n > 0 && n < (long)sizeof(buf) && strip_deleted(-1, buf, &n);
			if (!dead && n >= 0)
				n = -ENOENT;
		}
	} else {
		proc_fd_link(link, dirfd);
		n = pohm_sys_readlinkat(AT_FDCWD, link, buf, sizeof(buf) - 1);
		dead = n > 0 && n < (long)sizeof(buf) && strip_deleted(dirfd, buf, &n);
	}
	if (n == -ENAMETOOLONG) {
		/* deeper than PATH_MAX: walk ".." to the prefix root (deepbase.c) */
		*rellen = 0;
		if (pohm_deep_base(dirfd, pos, rel, relsz, rellen) < 0) {
			pos->depth = POHM_PC_DEEP;
			pos->match[0] = pos->match[1] = 0;
			*rellen = 0;
			return -1;
		}
		if (dirfd != AT_FDCWD && *rellen < relsz) {
			note_dir_id(dirfd, id);
			pohm_fd_resolved(dirfd, pos, rel, id);
		}
		return 0;
	}
	pos->depth = POHM_PC_DEEP;
	pos->match[0] = pos->match[1] = 0;
	*rellen = 0;
	if (n <= 0 || n >= (long)sizeof(buf) || buf[0] != '/')
		return -1;
	buf[n] = '\0';
	pos->depth = 0;
	pohm_pc_walk(&pohm_state.prefix, pos, rel, relsz, rellen, buf, POHM_PC_FULL, &res);
	*rellen = res.cls == POHM_PC_IN ? (res.trunc ? relsz : res.len) : 0;
	if (dead)
		return 1;
	if (dirfd == AT_FDCWD)
		return 0;	/* a cwd under the prefix, unknown or volatile: asked each time */
	if (res.cls == POHM_PC_IN && !res.trunc) {
		rel[res.len] = '\0';
		note_dir_id(dirfd, id);
		pohm_fd_resolved(dirfd, pos, rel, id);
	} else if (res.cls != POHM_PC_IN) {
		pohm_fd_resolved(dirfd, pos, NULL, NULL);	/* only if lazy or unseen */
	}
	return 0;
}

/*
 * An O_PATH fd of the prefix root, for checking hints (opened on first
 * use, above POHM_FD_BASE, registered internal so the host cannot close
 * it): its handle (fd.c:pohm_ifd_fd), -1 before, -2 when it cannot be had
 * (RLIMIT_NOFILE below POHM_FD_BASE; then the check goes by absolute path).
 * Atomic; set once by CAS (a loser closes its own fd).
 */
static int root_handle = -1;

static int root_fd(void)
{
	int h = __atomic_load_n(&root_handle, __ATOMIC_ACQUIRE), want = -1, fd, nfd;

	if (h >= 0)
		return pohm_ifd_fd(h);
	if (h == -2)
		return -1;
	fd = pohm_sys_openat(AT_FDCWD, pohm_state.prefix.sp[0].path, O_PATH | O_DIRECTORY, 0);
	nfd = fd < 0 ? -1 : pohm_sys_fcntl(fd, F_DUPFD_CLOEXEC, POHM_FD_BASE);
	if (nfd == -EINVAL) {
		/* RLIMIT_NOFILE below POHM_FD_BASE: never take a low number */
		want = -1;
		__atomic_compare_exchange_n(&root_handle, &want, -2, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		want = -1;
	}
	if (fd >= 0)
		pohm_sys_close(fd);
	h = nfd < 0 ? -1 : pohm_ifd_register(nfd);
	if (h < 0) {
		if (nfd >= 0)
			pohm_sys_close(nfd);
		/* no prefix root yet (created on first use): try again later */
		return -1;
	}
	if (!__atomic_compare_exchange_n(&root_handle, &want, h, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		pohm_ifd_unregister(h);
		pohm_sys_close(nfd);
		return want >= 0 ? pohm_ifd_fd(want) : -1;
	}
	return nfd;
}

/* 1 once openat2 answered ENOSYS or EPERM (missing, or a seccomp filter's
 * refusal): base_open is not tried again in this process (review 2 of
 * session 17, finding 3).  Set by any thread, never cleared; atomic. */
static int no_openat2;

/*
 * The check of base_current by an open that follows no symlink, for a
 * stat of a name below dirfd (issue 23): the walk below the prefix root
 * (core/cache walkfresh.c) must open the same directory that way, and
 * takes this open instead.  1 and *base when rel (not "") opens to id's
 * directory, 0 when it opens to another one, -1 when it does not open
 * (a symlink on the way, no openat2: no_openat2): the fstatat decides.
 */
static int base_open(int rfd, const char *rel, const struct pohm_fdid *id,
		     struct pohm_walk_base *base)
{
	struct stat st;
	int fd;

	if (__atomic_load_n(&no_openat2, __ATOMIC_RELAXED))
		return -1;
	fd = pohm_sys_open_dir_nolinks(rfd, rel);
	if (fd == -ENOSYS || fd == -EPERM)
		__atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
	if (fd < 0)
		return -1;
	if (pohm_sys_fstat(fd, &st) < 0 || (uint64_t)st.st_dev != id->dev ||
	    (uint64_t)st.st_ino != id->ino) {
		pohm_sys_close(fd);
		return 0;
	}
	base->fd = fd;
	base->dev = id->dev;
	base->ino = id->ino;
	return 1;
}

/*
 * The prefix root's name as the kernel gives it (readlink of root_fd's
 * /proc/self/fd link), for base_named: read once.  root_name_state: 0
 * unread, 1 being read (by the thread that moved it from 0), 2 ready
 * (root_name and root_name_len written before, not after), 3 none (no
 * /proc: base_named is not tried).  Atomic.
 */
static char root_name[PATH_MAX];
static size_t root_name_len;
static int root_name_state;

static const char *root_kernel_name(int rfd, size_t *len)
{
	int want = 0, s = __atomic_load_n(&root_name_state, __ATOMIC_ACQUIRE);
	char link[40];
	long n;

	if (s == 0 && __atomic_compare_exchange_n(&root_name_state, &want, 1, 0, __ATOMIC_ACQ_REL,
						  __ATOMIC_RELAXED)) {
		proc_fd_link(link, rfd);
		n = pohm_sys_readlinkat(AT_FDCWD, link, root_name, sizeof(root_name) - 1);
		s = n > 0 && n < (long)sizeof(root_name) - 1 && root_name[0] == '/' ? 2 : 3;
		root_name_len = s == 2 && n > 1 ? (size_t)n : 0;	/* "/": "" before "/rel" */
		__atomic_store_n(&root_name_state, s, __ATOMIC_RELEASE);
	}
	if (s != 2)
		return NULL;
	*len = root_name_len;
	return root_name;
}

/*
 * The check of base_current by the kernel's name of dirfd itself (one
 * readlink, no fd made), for an lstat of a name below dirfd (issue 23,
 * POHM_LOC_NAMED): 1 and *base (named, no fd) when that name is the prefix
 * root's followed by "/" rel — the directory's own chain of names as the
 * kernel keeps it, which no symlink is in (a removed one ends " (deleted)",
 * one moved away has its new name); else 0, and base_open decides.  It
 * trusts the fd table's identity of dirfd (id): an fd replaced behind the
 * hooks (raw syscalls) is not seen here, as nowhere else in the shim.
 */
static int base_named(int dirfd, int rfd, const char *rel, size_t rellen,
		      const struct pohm_fdid *id, struct pohm_walk_base *base)
{
	char buf[PATH_MAX], link[40];
	const char *root;
	size_t rlen = 0;
	long n;

	root = root_kernel_name(rfd, &rlen);
	if (!root || rlen + 1 + rellen >= sizeof(buf))
		return 0;
	proc_fd_link(link, dirfd);
	n = pohm_sys_readlinkat(AT_FDCWD, link, buf, sizeof(buf));
	if (n != (long)(rlen + 1 + rellen) || memcmp(buf, root, rlen) || buf[rlen] != '/' ||
	    memcmp(buf + rlen + 1, rel, rellen))
		return 0;
	/* A hint that itself ends DELETED: removed or not, the kernel's name
	 * cannot tell, so base_open decides. */
	if (rellen >= DELETED_LEN && !memcmp(rel + rellen - DELETED_LEN, DELETED, DELETED_LEN))
		return 0;
	base->fd = -1;
	base->named = 1;
	base->dev = id->dev;
	base->ino = id->ino;
	return 1;
}

/*
 * 1 if the hint rel (*rellen bytes, at a position) still names dirfd's own
 * local file (id): one fstatat from the prefix root (base: not NULL, rel
 * not the root: base_open instead, *base when it returns 1; named: first
 * base_named).  The first check of an fd takes its identity (one fstat)
 * and keeps it in the table.
 */
static int base_current(int dirfd, char *rel, size_t relsz, size_t rellen,
			struct pohm_fdid *id, struct pohm_walk_base *base, int named)
{
	char abs[PATH_MAX];
	struct stat st;
	int rfd, r = 0;

	if (rellen >= relsz)
		return 0;	/* a truncated hint: the kernel says */
	rel[rellen] = '\0';
	if (!id->known) {
		if (pohm_sys_fstat(dirfd, &st) < 0)
			goto out;	/* EBADF: the real call says so */
		id->dev = (uint64_t)st.st_dev;
		id->ino = (uint64_t)st.st_ino;
		id->known = 1;
	}
	rfd = root_fd();
	if (base && named && rellen && rfd >= 0 && base_named(dirfd, rfd, rel, rellen, id, base)) {
		r = 1;
		goto out;
	}
	if (base && rellen && rfd >= 0) {
		r = base_open(rfd, rel, id, base);
		if (r >= 0)
			goto out;
		r = 0;
	}
	if (rfd >= 0) {
		if (pohm_sys_fstatat(rfd, rellen ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
			goto out;
	} else {
		/* no root fd: the same check by the prefix's absolute path */
		const char *pre = pohm_state.prefix.sp[0].path;
		size_t n = strlen(pre);

		if (n + 1 + rellen >= sizeof(abs))
			goto out;
		memcpy(abs, pre, n);
		abs[n] = '/';
		memcpy(abs + n + 1, rel, rellen + 1);
		if (pohm_sys_fstatat(AT_FDCWD, abs, &st, AT_SYMLINK_NOFOLLOW) < 0)
			goto out;
	}
	r = (uint64_t)st.st_dev == id->dev && (uint64_t)st.st_ino == id->ino;
out:
	return r;
}

/* The base of a relative path: 0, 1 when it is a removed directory, or
 * -1 when the fd is invalid (dirfd < 0).  base, named: as base_current's. */
static int base_of(int dirfd, struct pohm_pc_pos *pos, char *rel, size_t relsz, size_t *rellen,
		   struct pohm_walk_base *base, int named)
{
	struct pohm_fdid id;
	int known;

	if (dirfd == AT_FDCWD) {
		*rellen = 0;
		if (pohm_cwd_base(pos) < 0)
			return base_from_kernel(AT_FDCWD, pos, rel, relsz, rellen, NULL) > 0;
		return 0;
	}
	if (dirfd < 0)
		return -1;
	if (pohm_fd_base(dirfd, pos, rel, relsz, rellen, &id) < 0)
		return base_from_kernel(dirfd, pos, rel, relsz, rellen, NULL) > 0;
	if (!id.under)
		return 0;
	known = id.known;
	if (base_current(dirfd, rel, relsz, *rellen, &id, base, named)) {
		if (!known)
			pohm_fd_resolved(dirfd, pos, rel, &id);	/* keep the identity */
		return 0;
	}
	return base_from_kernel(dirfd, pos, rel, relsz, rellen, &id) > 0;
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

/* One name, no "." or ".." (POHM_LOC_BASE's case). */
static int one_name(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/*
 * pohm_locate past its fast outs: p's fields, rel written into buf (cap
 * bytes; POHM_PATH_TRUNC when it does not fit).
 */
static enum pohm_pc_class locate_walk(int dirfd, const char *path, unsigned flags,
				      struct pohm_path *p, struct pohm_where *w, char *buf,
				      size_t cap)
{
	const struct pohm_pc_prefix *pf = &pohm_state.prefix;
	unsigned wf = (flags & POHM_LOC_FULL) ? POHM_PC_FULL : 0;
	struct pohm_pc_res res;
	const char *walk;
	size_t len = 0;
	int base = dirfd, dead;

	p->dirfd = dirfd;
	p->path = path;
	p->spelling = -1;
	p->flags = (flags & POHM_LOC_EMPTY) ? POHM_PATH_EMPTY : 0;
	p->len = 0;
	p->rel = buf;
	p->lent.fd = -1;
	p->lent.named = 0;
	p->base = &p->lent;
	buf[0] = '\0';
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
	dead = base_of(base, &w->pos, buf, cap, &len,
		       (flags & POHM_LOC_BASE) && path[0] != '/' && one_name(walk) ? &p->lent : NULL,
		       !!(flags & POHM_LOC_NAMED));
	if (dead < 0)
		return POHM_PC_OUT;	/* EBADF from the kernel */
	if (dead && !(walk[0] == '.' && walk[1] == '.' && (!walk[2] || walk[2] == '/')))
		return POHM_PC_OUT;	/* inside a removed directory: the kernel answers */
walk:
	w->cls = pohm_pc_walk(pf, &w->pos, buf, cap, &len, walk, wf, &res);
	if (w->cls == POHM_PC_ESCAPE) {
		/* ".." above a base of unknown depth: ask the kernel, walk again. */
		if (base_from_kernel(base, &w->pos, buf, cap, &len, NULL) < 0)
			return w->cls = POHM_PC_OUT;
		w->cls = pohm_pc_walk(pf, &w->pos, buf, cap, &len, walk, wf, &res);
		if (w->cls == POHM_PC_ESCAPE)
			return w->cls = POHM_PC_OUT;
	}
	if (w->cls != POHM_PC_IN) {
		if (p->lent.fd >= 0)
			pohm_sys_close(p->lent.fd);	/* not reached from an inside base */
		p->lent.fd = -1;
		return w->cls;
	}
	p->spelling = res.spelling;
	p->len = res.len;
	if (res.slash)
		p->flags |= POHM_PATH_SLASH;
	if (res.trunc) {
		p->flags |= POHM_PATH_TRUNC;
		buf[0] = '\0';
		p->len = 0;
	}
	return POHM_PC_IN;
}

enum pohm_pc_class pohm_locate(int dirfd, const char *path, unsigned flags,
			       struct pohm_path *p, struct pohm_where *w)
{
	struct pohm_where local;
	const char *walk;
	int base = dirfd;

	if (!w)
		w = &local;
	w->cls = POHM_PC_OUT;
	if (!pohm_addr_ok(path) || !pohm_state.prefix.nsp)
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
	return locate_walk(dirfd, path, flags, p, w, p->inl, sizeof(p->inl));
}

int pohm_locate_long(const struct pohm_path *p, struct pohm_path *lp, char *buf, size_t cap)
{
	struct pohm_where w;
	unsigned flags = (p->flags & POHM_PATH_EMPTY) ? POHM_LOC_EMPTY : 0;

	w.cls = POHM_PC_OUT;
	if (locate_walk(p->dirfd, p->path, flags, lp, &w, buf, cap) != POHM_PC_IN)
		return -ENOENT;
	return (lp->flags & POHM_PATH_TRUNC) ? -ENAMETOOLONG : 0;
}

int pohm_classify(int dirfd, const char *path, struct pohm_path *p)
{
	return pohm_locate(dirfd, path, 0, p, NULL) == POHM_PC_IN;
}
