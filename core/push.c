/*
 * push.c — send a changed local file to the storage (DESIGN.md §2 "push").
 *
 * The file is read through the caller's fd (never a second open of our own
 * at close time: closing any fd of a file drops the process's POSIX locks),
 * chunk by chunk; only chunks whose SHA-512 differs from the synced version
 * are written, as new generations; the inode CAS against the version this
 * host last synced is the commit point.  If the storage moved on meanwhile,
 * the storage version stays and ours becomes a conflict copy under
 * /.pohmelfs-conflicts/HOST/ at the fsid root; nothing is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache_int.h"
#include "log.h"
#include "sha512.h"
#include "sys.h"

/* Write every chunk of fd that differs from old (nold checksums) as a new generation. */
static int push_chunks(struct pohm_cache *c, int fd, uint64_t ino, uint64_t size, unsigned shift,
		       uint8_t (*old)[64], uint32_t nold, struct pohm_chunk_set **out,
		       size_t *nout, uint8_t (**sums)[64])
{
	uint64_t cs = 1ULL << shift, nch = (size + cs - 1) / cs, i;
	struct pohm_chunk_set *set = NULL;
	uint8_t *buf = NULL, (*all)[64] = NULL;
	size_t n = 0;
	int r = 0;

	buf = malloc(cs);
	set = calloc(nch ? nch : 1, sizeof(*set));
	all = calloc(nch ? nch : 1, 64);
	if (!buf || !set || !all) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nch; i++) {
		size_t want = (size_t)(i + 1 < nch ? cs : size - i * cs);
		ssize_t got = pohm_sys_pread_full(fd, buf, want, (off_t)(i * cs));

		if (got < 0) {
			r = (int)got;
			goto out;
		}
		if ((size_t)got < want) {
			r = -EAGAIN;	/* shrank while we read: the caller retries later */
			goto out;
		}
		pohm_sha512(buf, want, all[i]);
		if (i < nold && !memcmp(all[i], old[i], 64))
			continue;	/* unchanged chunk: keep its generation */
		set[n].index = i;
		set[n].len = (uint32_t)want;
		memcpy(set[n].csum, all[i], 64);
		r = pohm_ns_put_chunk(c->ns, ino, i, buf, want, &set[n].gen);
		if (r)
			goto out;
		cache_count(c, &c->stats.pushed_chunks, 1);
		cache_count(c, &c->stats.pushed_bytes, want);
		n++;
	}
out:
	free(buf);
	if (r) {
		free(set);
		free(all);
		return r;
	}
	*out = set;
	*nout = n;
	*sums = all;
	return 0;
}

/* Make dir/name in the storage if missing; its inode in *ino. */
static int ns_mkdir_p(struct pohm_cache *c, uint64_t dir, const char *name, uint64_t *ino)
{
	int r = pohm_ns_mkdir(c->ns, dir, name, 0700, (uint32_t)syscall(SYS_geteuid),
			      (uint32_t)syscall(SYS_getegid), NULL);

	if (r && r != -EEXIST)
		return r;
	return pohm_ns_lookup(c->ns, dir, name, ino, NULL);
}

int cache_conflict_copy(struct pohm_cache *c, int fd, const struct pohm_jrec *rec,
			 const struct stat *st, const char *why)
{
	struct pohm_chunk_set *set = NULL;
	uint8_t (*sums)[64] = NULL;
	struct pohm_inode in;
	const char *base = strrchr(rec->hint, '/');
	uint64_t d1, d2;
	char name[320];
	size_t n;
	int r;

	base = base ? base + 1 : rec->hint;
	snprintf(name, sizeof(name), "%.200s.%llx.%lld", *base ? base : "file",
		 (unsigned long long)rec->ino, (long long)(pohm_sys_real_ns() / 1000000000ULL));
	r = ns_mkdir_p(c, POHM_ROOT_INO, ".pohmelfs-conflicts", &d1);
	if (!r)
		r = ns_mkdir_p(c, d1, c->host, &d2);
	if (!r)
		r = pohm_ns_create(c->ns, d2, name, S_IFREG | (st->st_mode & 07777),
				   (uint32_t)st->st_uid, (uint32_t)st->st_gid, 0, POHM_CREATE_EXCL, &in);
	if (r)
		return r;
	r = push_chunks(c, fd, in.ino, (uint64_t)st->st_size, in.chunk_shift, NULL, 0, &set, &n,
			&sums);
	if (!r)
		r = pohm_ns_commit_map(c->ns, in.ino, in.dversion, (uint64_t)st->st_size, set, n,
				       NULL, NULL);
	if (!r) {
		cache_count(c, &c->stats.conflicts, 1);
		pohm_warn("%s: %s; the stored version stays, ours is /.pohmelfs-conflicts/%s/%s",
			  rec->hint, why, c->host, name);
	}
	pohm_inode_clear(&in);
	free(set);
	free(sums);
	return r;
}

/* Push the attributes the local file changed (mode, owner, times). */
static int push_attrs(struct pohm_cache *c, const struct pohm_jrec *rec, const struct stat *st,
		      struct pohm_inode *in)
{
	struct pohm_setattr sa = { 0 };
	int r;

	/* A local directory keeps rwx for its owner whatever the stored mode
	 * (cache_make_local): that difference is ours, not a chmod. */
	if ((st->st_mode & 07777) != (rec->mode & 07777) &&
	    !(S_ISDIR(st->st_mode) && (st->st_mode & 07777) == ((rec->mode & 07777) | 0700))) {
		sa.mask |= POHM_SET_MODE;
		sa.mode = st->st_mode & 07777;
	}
	if (c->is_root && (uint32_t)st->st_uid != rec->uid) {
		sa.mask |= POHM_SET_UID;
		sa.uid = (uint32_t)st->st_uid;
	}
	if (c->is_root && (uint32_t)st->st_gid != rec->gid) {
		sa.mask |= POHM_SET_GID;
		sa.gid = (uint32_t)st->st_gid;
	}
	if (st->st_mtim.tv_sec != rec->mtime.sec || (uint32_t)st->st_mtim.tv_nsec != rec->mtime.nsec) {
		sa.mask |= POHM_SET_MTIME;
		sa.mtime.sec = st->st_mtim.tv_sec;
		sa.mtime.nsec = (uint32_t)st->st_mtim.tv_nsec;
	}
	if (!sa.mask)
		return 0;
	pohm_inode_clear(in);
	r = pohm_ns_setattr(c->ns, rec->ino, &sa, in);
	return r ? r : 1;
}

/*
 * A file left dirty across an unclean shutdown (cacheboot.c): its contents
 * may be torn, so they never replace the committed version.  Different from
 * the synced version: a conflict copy, and the name shows the storage
 * version from its next open (1).  Equal: 0, an ordinary push follows (the
 * attributes may still have changed).
 */
static int push_torn(struct pohm_cache *c, int fd, struct pohm_jrec *rec, const struct stat *st)
{
	int r = pohm_journal_content_differs(rec, fd, (uint64_t)st->st_size);

	if (r <= 0) {
		rec->flags &= ~(uint32_t)POHM_J_TORN;
		return r;
	}
	r = cache_conflict_copy(c, fd, rec, st, "changed before an unclean shutdown (maybe torn)");
	if (r)
		return r;
	rec->flags = (rec->flags | POHM_J_CONFLICT) & ~(uint32_t)POHM_J_TORN;
	r = cache_restub(c, rec);
	return r ? r : 1;
}

/* Was the storage's current version (in) committed by this host from the
 * local file st, since rec was read?  Then the journal says so now. */
static int pushed_here(struct pohm_cache *c, const struct pohm_jrec *rec, const struct stat *st,
		       const struct pohm_inode *in)
{
	struct pohm_jrec cur;
	int here = 0, wait;

	/* The committer records its version right after its commit: give it a
	 * moment (up to ~0.2 s) if the journal still shows the version we had. */
	for (wait = 0; wait < 40; wait++) {
		if (pohm_journal_get(&c->j, rec->ino, &cur))
			return 0;
		if (cur.lino != (uint64_t)st->st_ino || cur.ldev != (uint64_t)st->st_dev ||
		    (cur.flags & (POHM_J_STUB | POHM_J_CONFLICT))) {
			pohm_jrec_clear(&cur);
			return 0;	/* the local file was replaced: not the same history */
		}
		here = cur.dversion == in->dversion;
		wait = here || cur.dversion != rec->dversion ? 40 : wait;
		pohm_jrec_clear(&cur);
		if (wait < 40) {
			struct timespec ts = { 0, 5000000L };

			syscall(SYS_nanosleep, &ts, NULL);
		}
	}
	return here;
}

/* Push fd (whose storage inode the journal knows) if its local copy changed. */
static int push_known(struct pohm_cache *c, int fd, struct pohm_jrec *rec, const struct stat *st)
{
	struct pohm_chunk_set *set = NULL;
	uint8_t (*sums)[64] = NULL;
	struct pohm_inode in;
	struct pohm_ts mt;
	size_t n = 0;
	int r, d, pushed_attrs = 0;

	d = pohm_journal_is_dirty(rec, st);
	if (d == 2 && !(rec->flags & POHM_J_STUB) &&
	    st->st_mtim.tv_sec == rec->mtime.sec && (uint32_t)st->st_mtim.tv_nsec == rec->mtime.nsec &&
	    !pohm_journal_content_differs(rec, fd, (uint64_t)st->st_size))
		d = 0;	/* a racy ctime, but the same bytes and times: nothing to send */
	if (!d && (st->st_mode & 07777) == (rec->mode & 07777))
		return 0;
	if (!S_ISREG(st->st_mode))
		return 0;
	if (rec->flags & POHM_J_STUB) {
		if (!st->st_size && !(st->st_mode & 07777))
			return 0;	/* an untouched stub */
		/* A stub changed without the shim: its base is unknown, so never a push. */
		r = cache_conflict_copy(c, fd, rec, st, "a stub written without the shim");
		return r;
	}
	if (rec->flags & POHM_J_TORN) {
		r = push_torn(c, fd, rec, st);
		if (r)
			return r < 0 ? r : 0;
	}
	r = push_chunks(c, fd, rec->ino, (uint64_t)st->st_size,
			rec->chunk_shift ? rec->chunk_shift : 20, rec->csum, rec->nchunks,
			&set, &n, &sums);
	if (r)
		return r;
	if (!n && (uint64_t)st->st_size == rec->size) {
		/* Same contents (a racy timestamp, or a rewrite of equal bytes). */
		r = pohm_ns_getattr(c->ns, rec->ino, &in);
		if (!r && in.dversion != rec->dversion) {
			pohm_journal_note_inode(rec, &in);	/* someone committed the same data */
		}
		if (!r)
			goto attrs;
		goto out;
	}
	mt.sec = st->st_mtim.tv_sec;
	mt.nsec = (uint32_t)st->st_mtim.tv_nsec;
	r = pohm_ns_commit_map(c->ns, rec->ino, rec->dversion, (uint64_t)st->st_size, set, n, &mt,
			       &in);
	if (r == -ESTALE) {
		/* The storage moved on.  Identical content is no conflict. */
		r = pohm_ns_getattr(c->ns, rec->ino, &in);
		if (!r && pushed_here(c, rec, st, &in)) {
			/* Another process of this host committed from this same local file
			 * (appenders, sqlite): ours is a later state of it, not a conflict.
			 * Again from the version it committed. */
			pohm_inode_clear(&in);
			r = -EAGAIN;
			goto out;
		}
		if (!r) {
			uint64_t i, same = in.size == (uint64_t)st->st_size;
			uint64_t cs = 1ULL << in.chunk_shift, nch = (in.size + cs - 1) / cs;

			for (i = 0; same && i < nch; i++)
				same = i < in.nchunks && in.chunks[i].gen &&
				       !memcmp(in.chunks[i].csum, sums[i], 64);
			if (!same) {
				r = cache_conflict_copy(c, fd, rec, st, "changed here and on another host");
				pohm_journal_note_inode(rec, &in);
				rec->flags |= POHM_J_CONFLICT;
				/* The local name shows the storage version again at the next open. */
				if (!r)
					r = cache_restub(c, rec);
				pohm_inode_clear(&in);
				goto out;
			}
		}
	}
	if (r)
		goto out;
attrs:
	r = push_attrs(c, rec, st, &in);
	if (r < 0)
		goto out_in;
	pushed_attrs = r;
	pohm_journal_note_inode(rec, &in);
	pohm_journal_note_local(rec, st);
	rec->flags &= ~(uint32_t)POHM_J_STUB;
	r = pohm_journal_put(&c->j, rec);
	cache_mark_fresh(c, rec->ino);
	if (!r && (n || (uint64_t)st->st_size != rec->lsize || pushed_attrs)) {
		cache_count(c, &c->stats.pushes, 1);
		r = 1;
	}
out_in:
	pohm_inode_clear(&in);
out:
	free(set);
	free(sums);
	return r;
}

static int push_dir_attrs(struct pohm_cache *c, const char *rel, const struct stat *st);

int pohm_cache_push_fd(struct pohm_cache *c, int fd)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int r, tries;

	for (tries = 0; tries < 20; tries++) {
		if (tries) {
			/* Raced another pusher of this file: a short random pause. */
			cache_count(c, &c->stats.retries, 1);
			struct timespec ts = { 0, (long)(pohm_sys_mono_ns() % 8 + 1) * 1000000L };

			syscall(SYS_nanosleep, &ts, NULL);
		}
		r = pohm_sys_fstat(fd, &st);
		if (r)
			return r;
		if ((uint64_t)st.st_dev != c->pdev)
			return 0;
		if (!S_ISREG(st.st_mode))	/* fchmod/futimens of a directory */
			return S_ISDIR(st.st_mode) ? push_dir_attrs(c, NULL, &st) : 0;
		if (pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino))
			return 0;	/* not a file of ours */
		r = pohm_journal_get(&c->j, ino, &rec);
		if (r)
			return r == -ENOENT ? 0 : r;
		r = push_known(c, fd, &rec, &st);
		pohm_jrec_clear(&rec);
		if (r != -EAGAIN)
			return r;	/* -EAGAIN: the file changed size while we read it, or
					 * another process of this host committed it first */
	}
	return r;
}

/* Mode, owner and times of a directory or symlink (rel unused: st says which). */
static int push_dir_attrs(struct pohm_cache *c, const char *rel, const struct stat *st)
{
	struct pohm_inode in;
	struct pohm_jrec rec;
	uint64_t ino;
	int r;

	if (pohm_journal_lookup_local(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino))
		return 0;
	r = pohm_journal_get(&c->j, ino, &rec);
	if (r)
		return r == -ENOENT ? 0 : r;
	memset(&in, 0, sizeof(in));
	r = push_attrs(c, &rec, st, &in);
	if (r > 0) {
		pohm_journal_note_inode(&rec, &in);
		pohm_journal_put(&c->j, &rec);
	}
	pohm_inode_clear(&in);
	pohm_jrec_clear(&rec);
	return r;
}

int pohm_cache_push_path(struct pohm_cache *c, const char *rel)
{
	int fd, r;
	struct stat st;

	if (!pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) ? push_dir_attrs(c, rel, &st) : 0;
	fd = pohm_sys_openat(c->pfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);

	if (fd == -EACCES) {
		/* Our own mode-000 stub or a file without read permission. */
		return 0;
	}
	if (fd < 0)
		return fd == -ENOENT || fd == -ELOOP ? 0 : fd;
	r = pohm_cache_push_fd(c, fd);
	pohm_sys_close(fd);
	return r;	/* 1 pushed, 0 nothing to push, -errno */
}

struct sync_ctx {
	struct pohm_cache *c;
	int (*held)(void *arg, uint64_t dev, uint64_t ino);
	void *arg;
	int pushed;
	int err;
};

static int sync_one(void *arg, struct pohm_jrec *rec)
{
	struct sync_ctx *s = arg;
	struct stat st;
	int r;

	if (!rec->hint[0] || (rec->flags & POHM_J_STUB) || !S_ISREG(rec->mode))
		return 0;
	if (pohm_sys_fstatat(s->c->pfd, rec->hint, &st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st.st_ino != rec->lino || !pohm_journal_is_dirty(rec, &st))
		return 0;
	if (s->held && s->held(s->arg, (uint64_t)st.st_dev, (uint64_t)st.st_ino))
		return 0;	/* open in the calling process: an fd of ours would drop its locks */
	r = pohm_cache_push_path(s->c, rec->hint);
	if (r < 0)
		s->err = r;
	else
		s->pushed += r;
	return 0;
}

int pohm_cache_sync_others(struct pohm_cache *c, int (*held)(void *arg, uint64_t dev, uint64_t ino),
			   void *arg)
{
	struct sync_ctx s = { c, held, arg, 0, 0 };
	int r = pohm_journal_each(&c->j, sync_one, &s);

	if (r)
		return r;
	return s.err ? s.err : s.pushed;
}

int pohm_cache_sync_all(struct pohm_cache *c)
{
	return pohm_cache_sync_others(c, NULL, NULL);
}
