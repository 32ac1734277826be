/*
 * cachescan.c — adopt what programs made in the prefix without the shim
 * (pohmelfsd's reconcile pass, DESIGN.md §2: "reconciles changes made
 * without the shim").
 *
 * Changed contents of known files are found by the journal's change
 * detection and pushed by sync_all; this pass finds new names.  A known
 * directory whose local ctime moved since the pass last saw it is read
 * whole; each entry the local index does not know (or knows by a stale
 * entry, cache_index_known) is made in the storage:
 * directories (then read in turn), regular files (created, then pushed),
 * symlinks and FIFOs.  A name the storage already holds for another inode
 * is not overwritten: a regular file becomes a conflict copy and leaves the
 * tree (the next open shows the storage's version); anything else is left
 * alone and logged.  Except an empty stored file: that is what a process
 * killed between its create and its record leaves, and the local file is
 * taken as its contents.  Runs only in pohmelfsd and `pohmelfs sync`: its own
 * opens and closes would release a host process's POSIX locks.
 *
 * Several caches can share one local tree (a cache per user: mount_user.c;
 * each keeps its own journal), so a name this journal lacks may be another
 * cache's file, not one made without the shim.  Two rules keep this pass off
 * them: it looks only at names owned by its cache's user (the owner of the
 * cache_dir: a cache belongs to one user, journal.c; root's cache too, so
 * root's cache takes only root's files), and a regular file whose size and
 * mtime are the stored file's under that name is a copy of it (another
 * cache fetched or pushed it, then maybe chowned it to its stored owner),
 * not a conflict.  Both are left alone, silently.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

/* Names younger than this are left for the next pass: the shim creates the
 * local file a moment before it records it (and a fetch renames a copy in
 * a moment before its record), so a fresh unknown name may be one of ours. */
#define SETTLE_NS 5000000000ULL

struct scan {
	struct pohm_cache *c;
	uint64_t now_ns;
	uid_t uid;		/* the cache's user: owner of its cache_dir */
	int adopted;
	int pending;		/* a name was too young: scan its directory again */
	int err;
};

/* Record a symlink or FIFO found at dfd/name as a new storage inode. */
static int adopt_other(struct scan *s, int dfd, uint64_t dino, const char *name, const char *rel,
		       const struct stat *st)
{
	struct pohm_inode in;
	char target[4096];
	ssize_t n;
	int r;

	if (S_ISLNK(st->st_mode)) {
		n = pohm_sys_readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return (int)n;
		target[n] = '\0';
		r = pohm_ns_symlink(s->c->ns, dino, name, target, (uint32_t)st->st_uid,
				    (uint32_t)st->st_gid, &in);
	} else if (S_ISFIFO(st->st_mode)) {
		r = pohm_ns_create(s->c->ns, dino, name, (uint32_t)(S_IFIFO | (st->st_mode & 07777)),
				   (uint32_t)st->st_uid, (uint32_t)st->st_gid, 0, POHM_CREATE_EXCL,
				   &in);
	} else {
		return 0;	/* sockets and devices stay local */
	}
	if (r)
		return r;
	r = cache_record(s->c, dfd, name, rel, &in, 0);
	pohm_inode_clear(&in);
	return r;
}

/* A regular file unknown to the journal: create and push it, or keep it as a conflict. */
static int adopt_file(struct scan *s, int dfd, uint64_t dino, const char *name, const char *rel,
		      int exists)
{
	struct pohm_jrec rec;
	struct stat st;
	int fd, r;

	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	r = pohm_sys_fstat(fd, &st);
	if (r || !S_ISREG(st.st_mode))
		goto out;
	if (exists) {
		memset(&rec, 0, sizeof(rec));
		pohm_jrec_set_hint(&rec, rel);
		r = cache_conflict_copy(s->c, fd, &rec, &st,
					"made here without the shim while the storage has the name");
		if (!r)
			r = pohm_sys_unlinkat(dfd, name, 0);
		/* The stored name has no local file now (decision 0062). */
		cache_dir_incomplete(s->c, dino);
		goto out;
	}
	r = pohm_cache_adopt(s->c, rel, fd);
	if (!r)
		r = pohm_cache_push_fd(s->c, fd);
	if (r >= 0)
		r = 0;
out:
	pohm_sys_close(fd);
	return r;
}

static int scan_dir(struct scan *s, const char *rel, int depth);

/* Is the local regular file st what a cache holds of the stored file in
 * (same size and mtime, as a fetch leaves it and a push stores it)? */
static int stored_copy(const struct pohm_inode *in, const struct stat *st)
{
	return S_ISREG(in->mode) && in->size == (uint64_t)st->st_size &&
	       in->mtime.sec == (int64_t)st->st_mtim.tv_sec &&
	       in->mtime.nsec == (uint32_t)st->st_mtim.tv_nsec;
}

/* One entry of a directory being scanned. */
static int scan_entry(struct scan *s, int dfd, uint64_t dino, const char *dir, const char *name)
{
	char rel[4096];
	struct stat st;
	uint64_t ino;
	uint8_t type;
	int r, exists;

	if (snprintf(rel, sizeof(rel), "%s%s%s", dir, *dir ? "/" : "", name) >= (int)sizeof(rel))
		return -ENAMETOOLONG;
	if (pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;	/* gone meanwhile */
	if (cache_index_known(s->c, &st, &ino) != -ENOENT)
		return 0;	/* known (not a stale index entry), or cannot tell */
	if (st.st_uid != s->uid)
		return 0;	/* another user's: theirs to adopt (their cache's, maybe) */
	if ((uint64_t)st.st_ctim.tv_sec * 1000000000ULL + (uint64_t)st.st_ctim.tv_nsec + SETTLE_NS >
	    s->now_ns) {
		s->pending = 1;
		return 0;
	}
	exists = !pohm_ns_lookup(s->c->ns, dino, name, &ino, &type);
	if (exists && S_ISREG(st.st_mode)) {
		struct pohm_inode in;

		/* An empty stored file under the name: most likely the shim's own
		 * create whose process died before it recorded the local file.
		 * Nothing to lose by taking it as that file's first contents. */
		if (!pohm_ns_getattr(s->c->ns, ino, &in)) {
			int same = stored_copy(&in, &st);

			if (S_ISREG(in.mode) && !in.size && !same)
				exists = 0;
			pohm_inode_clear(&in);
			if (same)
				return 0;	/* another cache's copy of the stored file */
		}
	}
	if (S_ISREG(st.st_mode)) {
		r = adopt_file(s, dfd, dino, name, rel, exists);
	} else if (exists) {
		pohm_warn("%s: made here without the shim, but the storage has this name: left "
			  "alone (rename it)", rel);
		return 0;
	} else if (S_ISDIR(st.st_mode)) {
		r = pohm_cache_mkdir(s->c, rel, st.st_mode & 07777);
		if (!r)
			r = scan_dir(s, rel, 1);
	} else {
		r = adopt_other(s, dfd, dino, name, rel, &st);
	}
	if (!r) {
		s->adopted++;
		pohm_info("%s: made without the shim, now in the storage", rel);
	}
	return r;
}

/*
 * The storage inode and record of the local directory rel (st): 0, or 1
 * when the journal does not know it (yet) or cannot say.  An index entry
 * that names another directory's record is stale (cachebase.c
 * cache_index_stale: a reused local inode number; session 15,
 * test_dirindex): the storage resolves rel, and when that inode's record
 * names this local directory the index is set right and it is used.
 */
static int scan_dir_ino(struct scan *s, const char *rel, const struct stat *st, uint64_t *dino,
			struct pohm_jrec *rec)
{
	if (pohm_journal_lookup_local(&s->c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, dino) ||
	    pohm_journal_get(&s->c->j, *dino, rec))
		return 1;
	if (!cache_index_stale(rec, st))
		return 0;
	pohm_jrec_clear(rec);
	if (*rel && !pohm_ns_resolve(s->c->ns, rel, 0, dino) && !pohm_journal_get(&s->c->j, *dino, rec)) {
		if (S_ISDIR(rec->mode) && !cache_index_stale(rec, st) &&
		    !pohm_journal_index_set(&s->c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, *dino))
			return 0;
		pohm_jrec_clear(rec);
	}
	pohm_warn("%s: its index entry names another directory: not scanned", *rel ? rel : ".");
	return 1;
}

/* Read rel whole if it changed since the last pass (depth > 0: always). */
static int scan_dir(struct scan *s, const char *rel, int depth)
{
	char buf[8192];
	struct pohm_jrec rec;
	struct stat st;
	const char *name;
	uint64_t dino;
	long n;
	int dfd, fd, r, pending = s->pending;

	if (*rel) {
		dfd = pohm_sys_open_parent(s->c->pfd, rel, &name);
		if (dfd < 0)
			return dfd == -ENOENT || dfd == -ENOTDIR ? 0 : dfd;
		fd = pohm_sys_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		pohm_sys_close(dfd);
	} else {
		fd = pohm_sys_openat(s->c->pfd, ".", O_RDONLY | O_DIRECTORY, 0);
	}
	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? 0 : fd;
	r = pohm_sys_fstat(fd, &st);
	if (r)
		goto out;
	if (scan_dir_ino(s, rel, &st, &dino, &rec))
		goto out;	/* not a directory of ours (yet) */
	if (!depth && rec.lctime.sec == st.st_ctim.tv_sec &&
	    rec.lctime.nsec == (uint32_t)st.st_ctim.tv_nsec) {
		pohm_jrec_clear(&rec);
		goto out;	/* no name added or removed since the last pass */
	}
	s->pending = 0;
	while ((n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			int e;

			off += de->d_reclen;
			if (cache_name_ours(!*rel, de->d_name))
				continue;
			e = scan_entry(s, fd, dino, rel, de->d_name);
			if (e && e != -EEXIST) {
				pohm_warn("%s/%s: not adopted: %s", rel, de->d_name, strerror(-e));
				s->err = e;
			}
		}
	}
	/* Seen as it is now (our own adoptions included), unless a name must
	 * wait.  Only the local state: rec is as old as the scan, and an entry
	 * change meanwhile stored and recorded a newer mtime (cachedirtime.c)
	 * that a put of rec would take back (issue 18, the shim_programs
	 * sighting of session 10). */
	if (!s->pending && !pohm_sys_fstat(fd, &st))
		pohm_journal_relocal(&s->c->j, dino, &st);
	pohm_jrec_clear(&rec);
	s->pending |= pending;
out:
	pohm_sys_close(fd);
	return r;
}

struct dir_list {
	char **v;
	size_t n, cap;
};

static int collect_dir(void *arg, struct pohm_jrec *r)
{
	struct dir_list *l = arg;

	if (!S_ISDIR(r->mode) || !r->hint[0])
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = malloc(strlen(r->hint) + 1);	/* not strdup: libc's allocator */
	if (!l->v[l->n])
		return -ENOMEM;
	memcpy(l->v[l->n], r->hint, strlen(r->hint) + 1);
	l->n++;
	return 0;
}

int pohm_cache_reconcile(struct pohm_cache *c)
{
	struct scan s = { c, pohm_sys_real_ns(), 0, 0, 0, 0 };
	struct dir_list l = { NULL, 0, 0 };
	struct stat cst;
	size_t i;
	int r;

	r = pohm_sys_fstat(c->j.dirfd, &cst);
	if (r)
		return r;
	s.uid = cst.st_uid;

	/* First the renames a kill cut in two: their old local names are not new files. */
	r = cache_rename_recover(c);
	if (r)
		pohm_warn("completing interrupted renames: %s", strerror(-r));
	/* CAS bases too old to be used (decision 0048): a minute at most. */
	r = cache_base_sweep(c, CACHE_BASE_MAX_NS);
	if (r < 0)
		pohm_debug("sweeping kept bases: %s", strerror(-r));
	/* Then what signal handlers changed while the shim was busy (sigqueue.c). */
	r = pohm_cache_sigq_replay(c, POHM_SQ_OPEN, NULL);
	if (r < 0)
		pohm_warn("replaying the signal queue: %s", strerror(-r));
	else
		s.adopted += r;
	r = pohm_journal_each(&c->j, collect_dir, &l);
	if (!r)
		r = scan_dir(&s, "", 0);
	for (i = 0; !r && i < l.n; i++)
		r = scan_dir(&s, l.v[i], 0);
	for (i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	if (r)
		return r;
	return s.err ? s.err : s.adopted;
}
