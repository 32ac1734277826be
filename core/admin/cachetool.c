/*
 * cachetool.c — whole-cache views and maintenance (cachetool.h).
 *
 * Sections: open/close · classification · scan · clean · evict · pohmelfsd.
 *
 * The journal's on-disk names are journal.c's: records in slots of
 * j.slots (jslots.c; a large one in j/<ino>), the local index in the file
 * x.idx (jindex.c); this file reaches them only through journal.h.  clean writes one index entry
 * itself, ahead of the journal record, for the reason given there.
 */
#include "cachetool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "config.h"
#include "sys.h"
#include "cache.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* ---------------------------------------------------------------- open/close */

int pohm_ct_open(struct pohm_ct *t, const char *prefix, const char *cache_dir, char *err,
		 size_t errlen)
{
	char path[4200];
	struct stat st;
	ssize_t n;
	int fd, r;

	memset(t, 0, sizeof(*t));
	t->j.dirfd = t->j.xfd = t->j.sfd = t->pfd = -1;
	if (strlen(prefix) >= sizeof(t->prefix) || strlen(cache_dir) >= sizeof(t->cache_dir)) {
		snprintf(err, errlen, "prefix or cache_dir: path too long");
		return -ENAMETOOLONG;
	}
	memcpy(t->prefix, prefix, strlen(prefix) + 1);
	memcpy(t->cache_dir, cache_dir, strlen(cache_dir) + 1);
	snprintf(path, sizeof(path), "%s/j", cache_dir);
	r = pohm_sys_fstatat(AT_FDCWD, path, &st, 0);
	if (r) {
		if (r == -ENOENT)
			snprintf(err, errlen, "cache_dir=%s: no cache yet (nothing under prefix=%s "
				 "was used)", cache_dir, prefix);
		else
			snprintf(err, errlen, "cache_dir=%s: %s", cache_dir, strerror(-r));
		return r;
	}
	r = pohm_journal_open(&t->j, cache_dir);
	if (r) {
		snprintf(err, errlen, "cache_dir=%s: %s", cache_dir, strerror(-r));
		return r;
	}
	r = pohm_sys_open_high(AT_FDCWD, prefix, O_PATH | O_DIRECTORY, 0);
	t->pfd = r < 0 ? -1 : r;
	fd = pohm_sys_openat(t->j.dirfd, "fsid", O_RDONLY, 0);
	if (fd >= 0) {
		n = pohm_sys_read_full(fd, t->fsid, sizeof(t->fsid) - 1);
		t->fsid[n > 0 ? n : 0] = '\0';
		pohm_sys_close(fd);
	}
	return 0;
}

void pohm_ct_close(struct pohm_ct *t)
{
	pohm_journal_close(&t->j);
	if (t->pfd >= 0)
		pohm_sys_close(t->pfd);
	t->pfd = -1;
}

/* ---------------------------------------------------------------- classification */

const char *pohm_ct_state_name(enum pohm_ct_state s)
{
	static const char *const names[] = {
		"directory", "other", "clean", "dirty", "stub", "stub-changed", "missing",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static int has_user_xattrs(int fd);

/*
 * A copy whose ctime moved (is_dirty 1) but whose local file, size, mtime,
 * owner and link count are the record's: only its bytes and user.* xattrs can differ
 * from the stored version (a chmod to the same mode, a rewrite of equal
 * bytes with the mtime put back, a link made and removed).  Issue 18:
 * status counts as dirty only what differs from the stored version.
 */
static int maybe_same(const struct pohm_jrec *r, const struct stat *st)
{
	return (uint64_t)st->st_ino == r->lino && (uint64_t)st->st_size == r->lsize &&
	       (uint64_t)st->st_size == r->size && st->st_mtim.tv_sec == r->mtime.sec &&
	       (uint32_t)st->st_mtim.tv_nsec == r->mtime.nsec && (uint32_t)st->st_uid == r->uid &&
	       (uint32_t)st->st_gid == r->gid && (uint64_t)st->st_nlink == r->nlink;
}

/* Dirty against the stored version: the cache's own rule, settling a racy
 * ctime by the contents of fd.  With moved: also a moved ctime with nothing
 * else moved (maybe_same) and no user.* xattrs here (the journal keeps no
 * word on a clean copy's xattrs: one set here cannot be told from one
 * fetched, one removed here not at all; so status only, never eviction). */
static int differs(const struct pohm_jrec *r, const struct stat *st, int fd, int moved)
{
	int d = pohm_journal_is_dirty(r, st);

	if ((st->st_mode & 07777) != (r->mode & 07777))
		return 1;	/* a chmod not pushed yet */
	if (moved && d == 1 && maybe_same(r, st)) {
		if (fd < 0 || has_user_xattrs(fd))
			return 1;
		d = 2;
	}
	if (d != 2)
		return d;
	if (fd < 0)
		return 1;	/* cannot read it: assume changed, as the cache does */
	return pohm_journal_content_differs(r, fd, (uint64_t)st->st_size) != 0;
}

enum pohm_ct_state pohm_ct_classify(struct pohm_ct *t, const struct pohm_jrec *r,
				    struct stat *st)
{
	int d, fd;

	memset(st, 0, sizeof(*st));
	if (S_ISDIR(r->mode))
		return POHM_CT_DIR;
	if (!S_ISREG(r->mode))
		return POHM_CT_OTHER;
	if (t->pfd < 0 || !r->hint[0] ||
	    pohm_sys_fstatat(t->pfd, r->hint, st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st->st_ino != r->lino ||
	    !((r->flags & POHM_J_STUB) ? pohm_stub_kind(st) : S_ISREG(st->st_mode))) {
		memset(st, 0, sizeof(*st));
		return POHM_CT_MISSING;
	}
	if (r->flags & POHM_J_STUB)	/* only a regular stub can be written into */
		return S_ISREG(st->st_mode) && !pohm_stub_shape(st) ? POHM_CT_STUB_CHANGED
								     : POHM_CT_STUB;
	d = pohm_journal_is_dirty(r, st);
	if ((d != 2 && !(d == 1 && maybe_same(r, st))) || (st->st_mode & 07777) != (r->mode & 07777))
		return differs(r, st, -1, 0) ? POHM_CT_DIRTY : POHM_CT_CLEAN;
	fd = pohm_sys_openat(t->pfd, r->hint, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	d = differs(r, st, fd, 1);
	if (fd >= 0)
		pohm_sys_close(fd);
	return d ? POHM_CT_DIRTY : POHM_CT_CLEAN;
}

/* ---------------------------------------------------------------- scan */

/* Bytes allocated under dirfd/name (a directory), at most depth levels down. */
static uint64_t disk_usage(int dirfd, const char *name, int depth)
{
	char buf[8192];
	uint64_t sum = 0;
	struct stat st;
	ssize_t n;
	int fd;

	fd = pohm_sys_openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return 0;
	if (!pohm_sys_fstat(fd, &st))
		sum += (uint64_t)st.st_blocks * 512;
	while ((n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
		ssize_t off = 0;

		while (off < n) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (pohm_sys_fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			if (S_ISDIR(st.st_mode))
				sum += depth > 0 ? disk_usage(fd, de->d_name, depth - 1) : 0;
			else
				sum += (uint64_t)st.st_blocks * 512;
		}
	}
	pohm_sys_close(fd);
	return sum;
}

struct scan_ctx {
	struct pohm_ct *t;
	struct pohm_ct_summary *s;
	int (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_state st,
		  const struct stat *lst);
	void *arg;
};

static int scan_one(void *arg, struct pohm_jrec *r)
{
	struct scan_ctx *x = arg;
	struct pohm_ct_summary *s = x->s;
	enum pohm_ct_state state;
	struct stat st;

	state = pohm_ct_classify(x->t, r, &st);
	s->records++;
	if (r->flags & POHM_J_CONFLICT)
		s->conflicts++;
	switch (state) {
	case POHM_CT_DIR:
		s->dirs++;
		break;
	case POHM_CT_OTHER:
		s->others++;
		break;
	case POHM_CT_CLEAN:
	case POHM_CT_DIRTY:
		s->files++;
		if (state == POHM_CT_CLEAN) {
			s->clean++;
		} else {
			s->dirty++;
			s->dirty_bytes += (uint64_t)st.st_size;
		}
		s->cached_bytes += (uint64_t)st.st_size;
		s->cached_disk += (uint64_t)st.st_blocks * 512;
		if (r->recorded_ns > s->last_ns)
			s->last_ns = r->recorded_ns;
		break;
	case POHM_CT_STUB:
	case POHM_CT_STUB_CHANGED:
		s->files++;
		if (state == POHM_CT_STUB)
			s->stubs++;
		else
			s->stubs_changed++;
		s->stub_bytes += r->size;
		break;
	case POHM_CT_MISSING:
		s->files++;
		s->missing++;
		break;
	}
	return x->fn ? x->fn(x->arg, r, state, &st) : 0;
}

int pohm_ct_scan(struct pohm_ct *t, struct pohm_ct_summary *s,
		 int (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_state st,
			   const struct stat *lst),
		 void *arg)
{
	struct scan_ctx x = { t, s, fn, arg };

	memset(s, 0, sizeof(*s));
	s->state_disk = disk_usage(AT_FDCWD, t->cache_dir, 8);
	return pohm_journal_each(&t->j, scan_one, &x);
}

/* ---------------------------------------------------------------- clean */

struct ino_list {
	uint64_t *v;
	size_t n, cap;
};

/* Candidates: fetched regular files with data. */
static int collect(void *arg, struct pohm_jrec *r)
{
	struct ino_list *l = arg;

	if (!S_ISREG(r->mode) || (r->flags & POHM_J_STUB) || !r->lsize || !r->hint[0])
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		uint64_t *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = r->ino;
	return 0;
}

/* Where stubs are built: on the prefix's filesystem, as the cache builds fetches. */
static int open_stage(struct pohm_ct *t)
{
	struct stat pst, sst;
	int r;

	r = pohm_sys_fstat(t->pfd, &pst);
	if (r)
		return r;
	if (!pohm_sys_fstatat(t->j.dirfd, "tmp", &sst, 0) && sst.st_dev == pst.st_dev)
		return pohm_sys_openat(t->j.dirfd, "tmp", O_PATH | O_DIRECTORY, 0);
	r = pohm_journal_mkdir_own(t->pfd, POHM_STAGING_NAME);
	if (r && r != -EEXIST)
		return r;
	return pohm_sys_openat(t->pfd, POHM_STAGING_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
}

/* Does the file open as fd have a user.* xattr?  1 when unsure. */
static int has_user_xattrs(int fd)
{
	char names[4096];
	ssize_t n = pohm_sys_listxattr(fd, NULL, 0, names, sizeof(names)), i;

	if (n < 0)
		return n != -ENOTSUP;	/* none on this file system, else unsure */
	for (i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		if (!strncmp(names + i, "user.", 5))
			return 1;
	return 0;
}

/* Write lease on fd: 0 if nobody else has the file open, -EAGAIN if someone does. */
static int lease(int fd, int type)
{
	return pohm_sys_fcntl(fd, F_SETLEASE, type);
}

/*
 * One file: 0 and *verdict, or -errno (counted as failed).  The order is
 * what makes it safe while programs use the cache:
 *   1. a write lease: nobody has the file open, and an open by anyone now
 *      waits until we let go (so nobody writes it under us);
 *   2. clean by the cache's own rule, checked under the lease;
 *   3. the stub's index entry first: a process that meets the stub in the
 *      next moment finds the record (still "fetched", another local inode)
 *      and fetches the data again, never takes the stub for a file changed
 *      without the shim;
 *   4. exchange stub and file (RENAME_EXCHANGE), check that the file we
 *      leased is the one that moved out (else exchange back);
 *   5. the record becomes a stub — unless someone changed it meanwhile.
 */
static int clean_one(struct pohm_ct *t, int stage, uint64_t ino, enum pohm_ct_verdict *verdict,
		     uint64_t *freed, struct pohm_jrec *rec)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	struct stat st, sst, moved;
	struct pohm_jrec cur;
	const char *name;
	char tmp[64];
	int dfd = -1, fd = -1, leased = 0, placed = 0, indexed = 0, user_xattrs = 1, r;

	*verdict = POHM_CT_FAILED;
	*freed = 0;
	r = pohm_journal_get(&t->j, ino, rec);
	if (r)
		return r == -ENOENT ? 1 : r;	/* 1: nothing to do */
	if (!S_ISREG(rec->mode) || (rec->flags & POHM_J_STUB) || !rec->lsize || !rec->hint[0])
		return 1;
	dfd = pohm_sys_open_parent(t->pfd, rec->hint, &name);
	if (dfd < 0)
		return dfd == -ENOENT || dfd == -ENOTDIR || dfd == -ELOOP ? 1 : dfd;
	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0) {
		r = fd == -ENOENT || fd == -ELOOP ? 1 : fd;
		goto out;
	}
	r = pohm_sys_fstat(fd, &st);
	if (r)
		goto out;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_ino != rec->lino) {
		r = 1;		/* the name holds something else now */
		goto out;
	}
	if (st.st_nlink > 1) {
		*verdict = POHM_CT_KEPT_LINKED;
		r = 0;
		goto out;
	}
	r = lease(fd, F_WRLCK);
	if (r) {
		if (r != -EAGAIN)
			pohm_debug("%s: no lease (%s): kept", rec->hint, strerror(-r));
		*verdict = POHM_CT_KEPT_BUSY;
		r = 0;
		goto out;
	}
	leased = 1;
	if (differs(rec, &st, fd, 0)) {
		*verdict = POHM_CT_KEPT_DIRTY;
		r = 0;
		goto out;
	}
	/* A clean copy's user.* xattrs are the stored ones; the stub keeps none. */
	user_xattrs = has_user_xattrs(fd);
	snprintf(tmp, sizeof(tmp), "c.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	r = pohm_stub_make(stage, tmp, pohm_sys_geteuid() == 0, rec->uid, rec->gid);
	if (r)
		goto out;
	placed = 1;
	r = pohm_sys_fstatat(stage, tmp, &sst, AT_SYMLINK_NOFOLLOW);
	if (!r)
		r = pohm_journal_index_set(&t->j, (uint64_t)sst.st_dev, (uint64_t)sst.st_ino, ino);
	if (r)
		goto out;
	indexed = 1;
	r = pohm_sys_renameat2(stage, tmp, dfd, name, RENAME_EXCHANGE);
	if (r == -EINVAL || r == -ENOSYS) {
		/* No exchange on this filesystem: a plain rename, under our lease. */
		r = pohm_sys_renameat(stage, tmp, dfd, name);
		if (!r)
			placed = 0;
	} else if (!r) {
		if (pohm_sys_fstatat(stage, tmp, &moved, AT_SYMLINK_NOFOLLOW) ||
		    moved.st_ino != st.st_ino || moved.st_dev != st.st_dev) {
			/* Someone renamed another file into the name meanwhile: put it back. */
			pohm_sys_renameat2(stage, tmp, dfd, name, RENAME_EXCHANGE);
			r = -EBUSY;
		}
	} else {
		goto out;
	}
	if (r)
		goto out;
	*freed = (uint64_t)st.st_blocks * 512;
	*verdict = POHM_CT_STUBBED;
	indexed = 0;
	/* The data file is gone from the tree; its inode lives until we close fd,
	 * so its number cannot be reused before its index entry is dropped. */
	if (!pohm_journal_get(&t->j, ino, &cur)) {
		if (cur.lino == (uint64_t)st.st_ino && !(cur.flags & POHM_J_STUB)) {
			cur.flags |= POHM_J_STUB;
			if (!user_xattrs)
				cur.flags |= POHM_J_NOXATTR;
			pohm_journal_note_local(&cur, &sst);
			r = pohm_journal_put(&t->j, &cur);
		}
		pohm_jrec_clear(&cur);
	}
	pohm_journal_index_drop(&t->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, ino);
out:
	if (indexed)
		pohm_journal_index_drop(&t->j, (uint64_t)sst.st_dev, (uint64_t)sst.st_ino, ino);
	if (placed)
		pohm_sys_unlinkat(stage, tmp, 0);
	if (leased)
		lease(fd, F_UNLCK);
	if (fd >= 0)
		pohm_sys_close(fd);
	if (dfd >= 0)
		pohm_sys_close(dfd);
	return r;
}

/* clean_one for ino, its verdict added to res and told to fn: the bytes freed. */
static uint64_t clean_counted(struct pohm_ct *t, int stage, uint64_t ino, const char *who,
			      struct pohm_ct_clean *res,
			      void (*fn)(void *arg, const struct pohm_jrec *r,
					 enum pohm_ct_verdict v, uint64_t bytes),
			      void *arg)
{
	enum pohm_ct_verdict v;
	struct pohm_jrec rec;
	uint64_t freed = 0;
	int r;

	memset(&rec, 0, sizeof(rec));
	r = clean_one(t, stage, ino, &v, &freed, &rec);
	if (r == 1) {
		pohm_jrec_clear(&rec);
		return 0;	/* nothing to do */
	}
	if (r < 0) {
		pohm_warn("%s: %s: %s", who, rec.hint[0] ? rec.hint : "?", strerror(-r));
		v = POHM_CT_FAILED;
	}
	switch (v) {
	case POHM_CT_STUBBED:
		res->stubbed++;
		res->freed += freed;
		break;
	case POHM_CT_KEPT_DIRTY:
		res->dirty++;
		break;
	case POHM_CT_KEPT_BUSY:
		res->busy++;
		break;
	case POHM_CT_KEPT_LINKED:
		res->linked++;
		break;
	case POHM_CT_FAILED:
		res->failed++;
		break;
	}
	if (fn)
		fn(arg, &rec, v, freed);
	pohm_jrec_clear(&rec);
	return v == POHM_CT_STUBBED ? freed : 0;
}

int pohm_ct_clean(struct pohm_ct *t, struct pohm_ct_clean *res,
		  void (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_verdict v,
			     uint64_t bytes),
		  void *arg)
{
	struct ino_list l = { NULL, 0, 0 };
	size_t i;
	int stage = -1, r;

	memset(res, 0, sizeof(*res));
	if (t->pfd < 0)
		return 0;		/* no prefix directory: nothing cached */
	r = pohm_journal_each(&t->j, collect, &l);
	if (r)
		goto out;
	stage = open_stage(t);
	if (stage < 0) {
		r = stage;
		goto out;
	}
	for (i = 0; i < l.n; i++)
		clean_counted(t, stage, l.v[i], "cache clean", res, fn, arg);
	r = 0;
out:
	if (stage >= 0)
		pohm_sys_close(stage);
	free(l.v);
	return r;
}

/* ---------------------------------------------------------------- evict */

struct lru_item {
	uint64_t ino, used_ns, bytes;
};

struct lru_ctx {
	struct pohm_ct *t;
	struct lru_item *v;
	size_t n, cap;
	uint64_t cached;		/* bytes held by fetched files, dirty ones too */
};

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/* Every fetched regular file: its blocks count; the evictable ones are listed. */
static int lru_collect(void *arg, struct pohm_jrec *r)
{
	struct lru_ctx *x = arg;
	struct stat st;
	uint64_t used;

	if (!S_ISREG(r->mode) || (r->flags & POHM_J_STUB) || !r->hint[0] ||
	    pohm_sys_fstatat(x->t->pfd, r->hint, &st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st.st_ino != r->lino || !S_ISREG(st.st_mode))
		return 0;
	x->cached += (uint64_t)st.st_blocks * 512;
	if (!st.st_blocks)
		return 0;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		struct lru_item *v = realloc(x->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		x->v = v;
		x->cap = cap;
	}
	/* Last use: the latest of the local atime, the local mtime (a write is
	 * a use; pushes read O_NOATIME, so a just-pushed file's atime may be
	 * older) and the cache's own last check. */
	used = ts_ns(&st.st_atim);
	if (ts_ns(&st.st_mtim) > used)
		used = ts_ns(&st.st_mtim);
	if (r->validated_ns > used)
		used = r->validated_ns;
	x->v[x->n].ino = r->ino;
	x->v[x->n].used_ns = used;
	x->v[x->n].bytes = (uint64_t)st.st_blocks * 512;
	x->n++;
	return 0;
}

static int lru_cmp(const void *a, const void *b)
{
	const struct lru_item *x = a, *y = b;

	return x->used_ns < y->used_ns ? -1 : x->used_ns > y->used_ns;
}

int pohm_ct_size_value(const char *v, uint64_t fs_size, uint64_t *out)
{
	uint64_t n;
	int pct;

	*out = 0;
	if (!v || !*v)
		return 0;
	if (pohm_config_parse_size(v, &n, &pct))
		return -EINVAL;
	*out = pct ? fs_size / 100 * n : n;
	return 0;
}

int pohm_ct_evict(struct pohm_ct *t, const struct pohm_ct_limits *lim, struct pohm_ct_clean *res,
		  void (*fn)(void *arg, const struct pohm_jrec *r, enum pohm_ct_verdict v,
			     uint64_t bytes),
		  void *arg)
{
	struct lru_ctx x = { t, NULL, 0, 0, 0 };
	struct statfs sfs;
	uint64_t avail = UINT64_MAX;
	size_t i;
	int stage = -1, r;

	memset(res, 0, sizeof(*res));
	if (t->pfd < 0 || (!lim->max_bytes && !lim->min_free))
		return 0;
	if (lim->min_free && !fstatfs(t->pfd, &sfs))
		avail = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
	r = pohm_journal_each(&t->j, lru_collect, &x);
	if (r)
		goto out;
	if ((!lim->max_bytes || x.cached <= lim->max_bytes) && avail >= lim->min_free)
		goto out;	/* within bounds: the common case */
	qsort(x.v, x.n, sizeof(*x.v), lru_cmp);
	stage = open_stage(t);
	if (stage < 0) {
		r = stage;
		goto out;
	}
	for (i = 0; i < x.n; i++) {
		uint64_t freed;

		if ((!lim->max_bytes || x.cached <= lim->max_bytes) && avail >= lim->min_free)
			break;
		freed = clean_counted(t, stage, x.v[i].ino, "evict", res, fn, arg);
		x.cached -= freed < x.cached ? freed : x.cached;
		if (avail != UINT64_MAX)
			avail += freed;
	}
	r = 0;
out:
	if (stage >= 0)
		pohm_sys_close(stage);
	free(x.v);
	return r;
}
