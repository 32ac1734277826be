/*
 * walk_fts.c — fts_open/fts_read/fts_children/fts_set/fts_close (+64) for
 * walks whose roots may meet the prefix, built on our own wrappers (walk.h
 * says why).  Walks whose roots are all elsewhere stay glibc's own; an FTS
 * made here is remembered in a list, so the other calls know whose it is.
 *
 * Behaviour is glibc 2.36's (the 4.4BSD fts): roots in the given order or
 * sorted by the comparison; children in readdir order or sorted; FTS_D
 * before and FTS_DP after a directory's children; FTS_DC for a directory
 * that is its own ancestor; FTS_DNR/FTS_ERR/FTS_NS with fts_errno;
 * FTS_SL/FTS_SLNONE; FTS_DOT only with FTS_SEEDOT; FTS_LOGICAL implies
 * FTS_NOCHDIR; without FTS_NOCHDIR the walk changes directory (checking
 * device and inode before each change) and fts_accpath is the name
 * relative to the cwd; FTS_NOSTAT with FTS_PHYSICAL skips the stat of
 * entries whose d_type says they are not directories (FTS_NSOK); FTS_XDEV;
 * fts_set's FTS_AGAIN, FTS_FOLLOW, FTS_SKIP; fts_children (FTS_NAMEONLY);
 * a finished walk returns NULL with errno 0.  FTSENT and FTS64ENT have the
 * same layout on this ABI, so one implementation serves both.
 *
 * Sections: entries; stat and sort; reading a directory; fts_read and
 * the rest.
 */
#include "shim.h"
#include "walk.h"

#include <dirent.h>
#include <fts.h>
#include <limits.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#define ISSET(sp, o)	((sp)->fts_options & (o))
#define IS_DOT(n)	((n)[0] == '.' && (!(n)[1] || ((n)[1] == '.' && !(n)[2])))

/* How a directory is read: for fts_children, its names only, for fts_read. */
enum build { B_CHILD = 1, B_NAMES, B_READ };

/* ------------------------------------------------------------ entries */

static FTSENT *ent_new(FTS *sp, const char *name, size_t len)
{
	size_t size = sizeof(FTSENT) + len + 1, off = 0;
	FTSENT *p;

	if (!ISSET(sp, FTS_NOSTAT)) {
		off = (size + alignof(struct stat) - 1) & ~(alignof(struct stat) - 1);
		size = off + sizeof(struct stat);
	}
	if (!(p = malloc(size)))
		return NULL;
	memset(p, 0, sizeof(*p));
	memcpy(p->fts_name, name, len);
	p->fts_name[len] = '\0';
	p->fts_namelen = (unsigned short)len;
	p->fts_path = sp->fts_path;
	p->fts_instr = FTS_NOINSTR;
	p->fts_statp = off ? (struct stat *)((char *)p + off) : NULL;
	return p;
}

static void ent_free_list(FTSENT *p)
{
	FTSENT *next;

	for (; p; p = next) {
		next = p->fts_link;
		free(p);
	}
}

/* Make the path buffer more bytes longer.  0, or -1 (ENAMETOOLONG, ENOMEM). */
static int path_grow(FTS *sp, size_t more)
{
	char *np;

	sp->fts_pathlen += (int)(more + 256);
	if (sp->fts_pathlen < 0 || sp->fts_pathlen >= USHRT_MAX) {
		free(sp->fts_path);
		sp->fts_path = NULL;
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!(np = realloc(sp->fts_path, (size_t)sp->fts_pathlen))) {
		free(sp->fts_path);
		sp->fts_path = NULL;
		return -1;
	}
	sp->fts_path = np;
	return 0;
}

/* The path buffer moved: repoint every entry that refers into it. */
static void path_moved(FTS *sp, FTSENT *head)
{
	char *base = sp->fts_path;
	FTSENT *p;

#define REPOINT(e)							\
	do {								\
		if ((e)->fts_accpath != (e)->fts_name)			\
			(e)->fts_accpath = base + ((e)->fts_accpath - (e)->fts_path); \
		(e)->fts_path = base;					\
	} while (0)
	for (p = sp->fts_child; p; p = p->fts_link)
		REPOINT(p);
	for (p = head; p->fts_level >= FTS_ROOTLEVEL; p = p->fts_link ? p->fts_link : p->fts_parent)
		REPOINT(p);
#undef REPOINT
}

/* Length of p's path to append a name to (a trailing "/" is not doubled). */
static size_t path_end(const FTSENT *p)
{
	return p->fts_path[p->fts_pathlen - 1] == '/' ? p->fts_pathlen - 1u : p->fts_pathlen;
}

/* ------------------------------------------------------------ stat and sort */

static unsigned short ent_stat(FTS *sp, FTSENT *p, int follow)
{
	struct stat scratch, *st = ISSET(sp, FTS_NOSTAT) ? &scratch : p->fts_statp;
	FTSENT *t;
	int e;

	if (ISSET(sp, FTS_LOGICAL) || follow) {
		if (stat(p->fts_accpath, st)) {
			e = errno;
			if (!lstat(p->fts_accpath, st)) {
				errno = 0;
				return FTS_SLNONE;
			}
			p->fts_errno = e;
			memset(st, 0, sizeof(*st));
			return FTS_NS;
		}
	} else if (lstat(p->fts_accpath, st)) {
		p->fts_errno = errno;
		memset(st, 0, sizeof(*st));
		return FTS_NS;
	}
	if (S_ISDIR(st->st_mode)) {
		p->fts_dev = st->st_dev;
		p->fts_ino = st->st_ino;
		p->fts_nlink = st->st_nlink;
		if (IS_DOT(p->fts_name))
			return FTS_DOT;
		for (t = p->fts_parent; t->fts_level >= FTS_ROOTLEVEL; t = t->fts_parent)
			if (t->fts_ino == p->fts_ino && t->fts_dev == p->fts_dev) {
				p->fts_cycle = t;
				return FTS_DC;
			}
		return FTS_D;
	}
	if (S_ISLNK(st->st_mode))
		return FTS_SL;
	return S_ISREG(st->st_mode) ? FTS_F : FTS_DEFAULT;
}

/* The list head of n entries in the caller's order (unchanged if out of memory). */
static FTSENT *ent_sort(FTS *sp, FTSENT *head, int n)
{
	FTSENT **a, *p;
	int i;

	if (n > sp->fts_nitems) {
		sp->fts_nitems = n + 40;
		if (!(a = realloc(sp->fts_array, (size_t)sp->fts_nitems * sizeof(*a)))) {
			free(sp->fts_array);
			sp->fts_array = NULL;
			sp->fts_nitems = 0;
			return head;
		}
		sp->fts_array = a;
	}
	for (i = 0, p = head; p; p = p->fts_link)
		sp->fts_array[i++] = p;
	qsort(sp->fts_array, (size_t)n, sizeof(FTSENT *), sp->fts_compar);
	for (i = 0; i < n - 1; i++)
		sp->fts_array[i]->fts_link = sp->fts_array[i + 1];
	sp->fts_array[n - 1]->fts_link = NULL;
	return sp->fts_array[0];
}

/*
 * chdir into p (by fd if given, else by opening path), only if it is
 * still the directory p says (device and inode).  0, or -1 with errno.
 */
static int safe_cd(FTS *sp, FTSENT *p, int fd, const char *path)
{
	struct stat st;
	int nfd = fd, r, e;

	if (ISSET(sp, FTS_NOCHDIR))
		return 0;
	if (fd < 0 && (nfd = open(path, O_RDONLY)) < 0)
		return -1;
	if (fstat(nfd, &st))
		r = -1;
	else if (st.st_dev != p->fts_dev || st.st_ino != p->fts_ino)
		r = -1, errno = ENOENT;
	else
		r = fchdir(nfd);
	e = errno;
	if (fd < 0)
		close(nfd);
	errno = e;
	return r;
}

/* fchdir back to fd unless the walk does not change directories: 0 or -1. */
static int cd_fd(FTS *sp, int fd)
{
	return ISSET(sp, FTS_NOCHDIR) ? 0 : fchdir(fd);
}

/* ------------------------------------------------------------ reading a directory */

/* Fail a build: free what was read, close the stream, stop the walk. */
static FTSENT *build_fail(FTS *sp, FTSENT *cur, FTSENT *head, DIR *d, int err)
{
	ent_free_list(head);
	closedir(d);
	cur->fts_info = FTS_ERR;
	sp->fts_options |= FTS_STOP;
	errno = err;
	return NULL;
}

/* The children of sp->fts_cur, as a list; NULL when none or on error. */
static FTSENT *build(FTS *sp, enum build type)
{
	FTSENT *cur = sp->fts_cur, *head = NULL, *tail = NULL, *p;
	int nlinks, nostat = 0, descend, n = 0, moved = 0;
	struct dirent64 *e;
	size_t len, maxlen, nl;
	char *cp = NULL;
	void *was;
	DIR *d;

	if (!(d = opendir(cur->fts_accpath))) {
		if (type == B_READ) {
			cur->fts_info = FTS_DNR;
			cur->fts_errno = errno;
		}
		return NULL;
	}
	if (type == B_NAMES) {
		nlinks = 0;
	} else if (ISSET(sp, FTS_NOSTAT) && ISSET(sp, FTS_PHYSICAL)) {
		nlinks = (int)cur->fts_nlink - (ISSET(sp, FTS_SEEDOT) ? 0 : 2);
		nostat = 1;
	} else {
		nlinks = -1;
	}
	descend = 0;
	if (nlinks || type == B_READ) {
		if (safe_cd(sp, cur, dirfd(d), NULL)) {
			if (nlinks && type == B_READ)
				cur->fts_errno = errno;
			cur->fts_flags |= FTS_DONTCHDIR;
			closedir(d);
			d = NULL;
		} else {
			descend = 1;
		}
	}
	len = path_end(cur);
	if (ISSET(sp, FTS_NOCHDIR)) {
		cp = sp->fts_path + len;
		*cp++ = '/';
	}
	len++;
	maxlen = (size_t)sp->fts_pathlen - len;
	while (d && (e = readdir64(d))) {
		if (!ISSET(sp, FTS_SEEDOT) && IS_DOT(e->d_name))
			continue;
		nl = strlen(e->d_name);
		if (!(p = ent_new(sp, e->d_name, nl)))
			return build_fail(sp, cur, head, d, errno);
		if (nl >= maxlen) {
			was = sp->fts_path;
			if (path_grow(sp, nl + len + 1)) {
				int err = errno;

				free(p);
				return build_fail(sp, cur, head, d, err);
			}
			if (was != sp->fts_path) {
				moved = 1;
				if (ISSET(sp, FTS_NOCHDIR))
					cp = sp->fts_path + len;
			}
			maxlen = (size_t)sp->fts_pathlen - len;
		}
		if (len + nl >= USHRT_MAX) {
			free(p);
			return build_fail(sp, cur, head, d, ENAMETOOLONG);
		}
		p->fts_level = (short)(cur->fts_level + 1);
		p->fts_parent = sp->fts_cur;
		p->fts_pathlen = (unsigned short)(len + nl);
		if (nlinks == 0 || (nostat && e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)) {
			p->fts_accpath = ISSET(sp, FTS_NOCHDIR) ? p->fts_path : p->fts_name;
			p->fts_info = FTS_NSOK;
		} else {
			if (ISSET(sp, FTS_NOCHDIR)) {
				p->fts_accpath = p->fts_path;
				memmove(cp, p->fts_name, (size_t)p->fts_namelen + 1);
			} else {
				p->fts_accpath = p->fts_name;
			}
			p->fts_info = ent_stat(sp, p, 0);
			if (nlinks > 0 && (p->fts_info == FTS_D || p->fts_info == FTS_DC ||
					   p->fts_info == FTS_DOT))
				nlinks--;
		}
		p->fts_link = NULL;
		if (!head)
			head = p;
		else
			tail->fts_link = p;
		tail = p;
		n++;
	}
	if (d)
		closedir(d);
	if (moved)
		path_moved(sp, head);
	if (ISSET(sp, FTS_NOCHDIR)) {
		if (len == (size_t)sp->fts_pathlen || n == 0)
			cp--;
		*cp = '\0';
	}
	if (descend && (type == B_CHILD || !n) &&
	    (cur->fts_level == FTS_ROOTLEVEL ? cd_fd(sp, sp->fts_rfd) :
					       safe_cd(sp, cur->fts_parent, -1, ".."))) {
		cur->fts_info = FTS_ERR;
		sp->fts_options |= FTS_STOP;
		ent_free_list(head);
		return NULL;
	}
	if (!n) {
		if (type == B_READ)
			cur->fts_info = FTS_DP;
		ent_free_list(head);
		return NULL;
	}
	if (sp->fts_compar && n > 1)
		head = ent_sort(sp, head, n);
	return head;
}

/* ------------------------------------------------------------ fts_read and the rest */

/* A root becomes current: its path into the buffer, its name the last component. */
static void load_root(FTS *sp, FTSENT *p)
{
	size_t len = p->fts_namelen;
	char *cp;

	p->fts_pathlen = (unsigned short)len;
	memmove(sp->fts_path, p->fts_name, len + 1);
	if ((cp = strrchr(p->fts_name, '/')) && (cp != p->fts_name || cp[1])) {
		cp++;
		len = strlen(cp);
		memmove(p->fts_name, cp, len + 1);
		p->fts_namelen = (unsigned short)len;
	}
	p->fts_accpath = p->fts_path = sp->fts_path;
	sp->fts_dev = p->fts_dev;
}

/* FTS_FOLLOW on p: stat through the link, and keep a way back. */
static void follow(FTS *sp, FTSENT *p)
{
	p->fts_info = ent_stat(sp, p, 1);
	if (p->fts_info == FTS_D && !ISSET(sp, FTS_NOCHDIR)) {
		if ((p->fts_symfd = open(".", O_RDONLY)) < 0) {
			p->fts_errno = errno;
			p->fts_info = FTS_ERR;
		} else {
			p->fts_flags |= FTS_SYMFOLLOW;
		}
	}
}

FTSENT *pohm_fts_read(FTS *sp)
{
	FTSENT *p, *prev;
	int instr, e;
	char *t;

	if (!sp->fts_cur || ISSET(sp, FTS_STOP))
		return NULL;
	p = sp->fts_cur;
	instr = p->fts_instr;
	p->fts_instr = FTS_NOINSTR;
	if (instr == FTS_AGAIN) {
		p->fts_info = ent_stat(sp, p, 0);
		return p;
	}
	if (instr == FTS_FOLLOW && (p->fts_info == FTS_SL || p->fts_info == FTS_SLNONE)) {
		follow(sp, p);
		return p;
	}
	if (p->fts_info == FTS_D) {
		if (instr == FTS_SKIP || (ISSET(sp, FTS_XDEV) && p->fts_dev != sp->fts_dev)) {
			if (p->fts_flags & FTS_SYMFOLLOW)
				close(p->fts_symfd);
			if (sp->fts_child) {
				ent_free_list(sp->fts_child);
				sp->fts_child = NULL;
			}
			p->fts_info = FTS_DP;
			return p;
		}
		if (sp->fts_child && ISSET(sp, FTS_NAMEONLY)) {
			sp->fts_options &= ~FTS_NAMEONLY;
			ent_free_list(sp->fts_child);
			sp->fts_child = NULL;
		}
		if (sp->fts_child) {
			if (safe_cd(sp, p, -1, p->fts_accpath)) {
				p->fts_errno = errno;
				p->fts_flags |= FTS_DONTCHDIR;
				for (prev = sp->fts_child; prev; prev = prev->fts_link)
					prev->fts_accpath = prev->fts_parent->fts_accpath;
			}
		} else if (!(sp->fts_child = build(sp, B_READ))) {
			return ISSET(sp, FTS_STOP) ? NULL : p;
		}
		p = sp->fts_child;
		sp->fts_child = NULL;
		sp->fts_cur = p;
		goto name;
	}
next:
	prev = p;
	if ((p = p->fts_link)) {
		sp->fts_cur = p;
		free(prev);
		if (p->fts_level == FTS_ROOTLEVEL) {
			if (cd_fd(sp, sp->fts_rfd)) {
				sp->fts_options |= FTS_STOP;
				return NULL;
			}
			load_root(sp, p);
			return p;
		}
		if (p->fts_instr == FTS_SKIP)
			goto next;
		if (p->fts_instr == FTS_FOLLOW) {
			follow(sp, p);
			p->fts_instr = FTS_NOINSTR;
		}
name:
		t = sp->fts_path + path_end(p->fts_parent);
		*t++ = '/';
		memmove(t, p->fts_name, (size_t)p->fts_namelen + 1);
		return p;
	}
	/* Up to the parent. */
	p = prev->fts_parent;
	if (!p) {		/* fts_open of an empty list */
		free(prev);
		errno = 0;
		return sp->fts_cur = NULL;
	}
	sp->fts_cur = p;
	free(prev);
	if (p->fts_level == FTS_ROOTPARENTLEVEL) {
		free(p);
		errno = 0;
		return sp->fts_cur = NULL;
	}
	sp->fts_path[p->fts_pathlen] = '\0';
	if (p->fts_level == FTS_ROOTLEVEL) {
		if (cd_fd(sp, sp->fts_rfd)) {
			sp->fts_options |= FTS_STOP;
			return NULL;
		}
	} else if (p->fts_flags & FTS_SYMFOLLOW) {
		if (cd_fd(sp, p->fts_symfd)) {
			e = errno;
			close(p->fts_symfd);
			errno = e;
			sp->fts_options |= FTS_STOP;
			return NULL;
		}
		close(p->fts_symfd);
	} else if (!(p->fts_flags & FTS_DONTCHDIR) && safe_cd(sp, p->fts_parent, -1, "..")) {
		sp->fts_options |= FTS_STOP;
		return NULL;
	}
	p->fts_info = p->fts_errno ? FTS_ERR : FTS_DP;
	return p;
}

FTSENT *pohm_fts_children(FTS *sp, int instr)
{
	FTSENT *p;
	int fd;

	if (instr != 0 && instr != FTS_NAMEONLY) {
		errno = EINVAL;
		return NULL;
	}
	p = sp->fts_cur;
	errno = 0;
	if (ISSET(sp, FTS_STOP))
		return NULL;
	if (p->fts_info == FTS_INIT)
		return p->fts_link;
	if (p->fts_info != FTS_D)
		return NULL;
	if (sp->fts_child)
		ent_free_list(sp->fts_child);
	if (instr == FTS_NAMEONLY) {
		sp->fts_options |= FTS_NAMEONLY;
		instr = B_NAMES;
	} else {
		instr = B_CHILD;
	}
	if (p->fts_level != FTS_ROOTLEVEL || p->fts_accpath[0] == '/' || ISSET(sp, FTS_NOCHDIR))
		return sp->fts_child = build(sp, (enum build)instr);
	if ((fd = open(".", O_RDONLY)) < 0)
		return NULL;
	sp->fts_child = build(sp, (enum build)instr);
	if (fchdir(fd))
		return NULL;
	close(fd);
	return sp->fts_child;
}

int pohm_fts_close(FTS *sp)
{
	FTSENT *p, *gone;
	int e = 0;

	if (sp->fts_cur) {
		for (p = sp->fts_cur; p->fts_level >= FTS_ROOTLEVEL;) {
			gone = p;
			p = p->fts_link ? p->fts_link : p->fts_parent;
			free(gone);
		}
		free(p);
	}
	ent_free_list(sp->fts_child);
	free(sp->fts_array);
	free(sp->fts_path);
	if (!ISSET(sp, FTS_NOCHDIR)) {
		e = fchdir(sp->fts_rfd) ? errno : 0;
		close(sp->fts_rfd);
	}
	free(sp);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

FTS *pohm_fts_open(char *const *argv, int opts, int (*cmp)(const FTSENT **, const FTSENT **))
{
	FTSENT *parent = NULL, *root = NULL, *tail = NULL, *p;
	size_t maxarg = 0, len;
	char *const *a;
	int n = 0, e;
	FTS *sp;

	if (opts & ~FTS_OPTIONMASK) {
		errno = EINVAL;
		return NULL;
	}
	if (!(sp = calloc(1, sizeof(*sp))))
		return NULL;
	sp->fts_compar = (int (*)(const void *, const void *))cmp;
	sp->fts_options = opts;
	if (ISSET(sp, FTS_LOGICAL))
		sp->fts_options |= FTS_NOCHDIR;
	for (a = argv; *a; a++)
		if ((len = strlen(*a)) + 1 > maxarg)
			maxarg = len + 1;
	if (path_grow(sp, maxarg > 1024 ? maxarg : 1024))
		goto fail;
	if (*argv) {
		if (!(parent = ent_new(sp, "", 0)))
			goto fail;
		parent->fts_level = FTS_ROOTPARENTLEVEL;
	}
	for (; *argv; argv++, n++) {
		if (!(len = strlen(*argv))) {
			errno = ENOENT;
			goto fail;
		}
		if (!(p = ent_new(sp, *argv, len)))
			goto fail;
		p->fts_level = FTS_ROOTLEVEL;
		p->fts_parent = parent;
		p->fts_accpath = p->fts_name;
		p->fts_info = ent_stat(sp, p, ISSET(sp, FTS_COMFOLLOW));
		if (p->fts_info == FTS_DOT)
			p->fts_info = FTS_D;	/* "." and ".." as roots are directories */
		if (cmp) {
			p->fts_link = root;
			root = p;
		} else {
			p->fts_link = NULL;
			if (!root)
				root = p;
			else
				tail->fts_link = p;
			tail = p;
		}
	}
	if (cmp && n > 1)
		root = ent_sort(sp, root, n);
	if (!(sp->fts_cur = ent_new(sp, "", 0)))
		goto fail;
	sp->fts_cur->fts_link = root;
	sp->fts_cur->fts_info = FTS_INIT;
	if (!ISSET(sp, FTS_NOCHDIR) && (sp->fts_rfd = open(".", O_RDONLY)) < 0)
		sp->fts_options |= FTS_NOCHDIR;
	return sp;
fail:
	e = errno;
	ent_free_list(root);
	free(parent);
	free(sp->fts_path);
	free(sp);
	errno = e;
	return NULL;
}

int pohm_fts_set(FTSENT *e, int instr)
{
	if (instr != 0 && instr != FTS_AGAIN && instr != FTS_FOLLOW && instr != FTS_NOINSTR &&
	    instr != FTS_SKIP) {
		errno = EINVAL;
		return 1;
	}
	e->fts_instr = (unsigned short)instr;
	return 0;
}
