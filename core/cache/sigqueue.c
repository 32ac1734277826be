/*
 * sigqueue.c — replay the namespace changes signal handlers made under the
 * prefix while the shim was busy on their thread (issue 19 item 5).
 *
 * Such a handler's call went straight to libc (preload/sigsafe.c): the
 * local tree changed, the storage did not.  Before the call it left a
 * record in cache_dir/sq/ (format in cache.h), locked until the call is
 * done.  Here each record that is no longer locked is applied to the
 * storage as the kernel already applied it locally; the local state
 * decides, so a record is replayed correctly whatever happened since, and
 * twice is the same as once:
 *
 *   a name gone locally      → removed from the storage (a directory with
 *                              rmdir, anything else without touching the
 *                              local tree) if this cache knew its inode
 *                              (else it was never here: an unlink or
 *                              chmod, say, of a name not fetched yet,
 *                              which failed locally with ENOENT);
 *   a rename (R from → to)   → from gone and to present locally: the stored
 *                              inode is renamed, replacing what the storage
 *                              had under to, as the kernel did; the storage
 *                              without from: to is treated as present;
 *   a name present locally   → a regular file the journal does not know and
 *                              the storage lacks is adopted and pushed
 *                              (POHM_SQ_OPEN only); known files are pushed
 *                              by sync_all (their change is seen by the
 *                              journal); other new names (directories,
 *                              symlinks) and names the storage has for
 *                              another inode are left to the reconcile scan,
 *                              which keeps conflict copies.
 *
 * One replayer per record: an exclusive OFD lock on the record file (its
 * writer's lock until the call is done, then the replayer's), and a record
 * found unlinked once locked was done by another replayer.  A crash
 * mid-replay leaves the record: the next replay does it again.
 * sq.tmp/ holds records still being written; one there that is not locked
 * and older than SQ_TMP_AGE_NS is a writer's that died before its call (the
 * call did not happen, or its name is adopted by the scan): removed.  (A
 * young one may be between its create and its lock: removing it made the
 * writer's rename into sq/ fail and its record fall back to the ring,
 * which dies with a host that ends in its handler.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"

#define SQ_REC_MAX (sizeof(POHM_SQ_MAGIC) + 2 + 2 * 4096)

static int sq_dir(struct pohm_cache *c, const char *name, int make)
{
	int fd, r;

	fd = pohm_sys_openat(c->j.dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd == -ENOENT && make) {
		r = pohm_sys_mkdirat(c->j.dirfd, name, 0700);
		if (r && r != -EEXIST)
			return r;
		fd = pohm_sys_openat(c->j.dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	}
	return fd;
}

int pohm_cache_sigq_dirs(struct pohm_cache *c, int *qfd, int *tfd)
{
	int q, t;

	q = sq_dir(c, "sq", 1);
	if (q < 0)
		return q;
	t = sq_dir(c, "sq.tmp", 1);
	if (t < 0) {
		pohm_sys_close(q);
		return t;
	}
	*qfd = q;
	*tfd = t;
	return 0;
}

/* Exclusive OFD lock on the whole of fd, not waiting: 0, or -EAGAIN when held. */
static int sq_lock(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl))
		return -EAGAIN;
	return 0;
}

/* The local state of rel: 1 present, 0 gone, -errno. */
static int local_has(struct pohm_cache *c, const char *rel, struct stat *st)
{
	int r = pohm_sys_fstatat(c->pfd, rel, st, AT_SYMLINK_NOFOLLOW);

	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	return r ? r : 1;
}

int pohm_cache_sigq_gone(struct pohm_cache *c, const char *rel)
{
	struct pohm_jrec rec;
	const char *name;
	uint64_t dino, ino;
	uint8_t type = 0;
	int dfd, r;

	/* Never through pohm_cache_unlink: it brings the local stub back
	 * first, and a replayer killed there would leave the name locally. */
	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (!r) {
		r = pohm_ns_lookup(c->ns, dino, name, &ino, &type);
		pohm_sys_close(dfd);
	}
	if (!r && pohm_journal_get(&c->j, ino, &rec)) {
		/* Never here (a handler's unlink or chmod of a name not fetched
		 * yet: ENOENT locally): its local absence says nothing. */
		return 0;
	}
	if (!r) {
		pohm_jrec_clear(&rec);
		r = type == DT_DIR ? pohm_cache_rmdir(c, rel) : pohm_cache_drop_stored(c, rel);
	}
	if (r == -ENOENT || r == -ENOTDIR)
		r = 0;
	if (r)
		pohm_warn("%s: removed by a signal handler, but not from the storage (%s)", rel,
			  strerror(-r));
	if (r == -ENOTEMPTY || r == -EACCES || r == -EPERM || r == -EBUSY)
		r = 0;	/* trying again would not help: said once */
	else
		pohm_debug("%s: removed by a signal handler; removed from the storage", rel);
	return r;
}

/*
 * A file the journal knows is present locally as rel: make rel its
 * journal name, which sync_all looks it up by.  A handler's rename left
 * the old one there; sq_rename renames it with the stored inode, but a
 * replayer that died between the two (the host's next handler _exits in
 * its drain) left a storage that has the rename and a journal that does
 * not, and the file's unpushed data was never pushed.  0 or -errno.
 */
static int sq_known_name(struct pohm_cache *c, uint64_t ino, const char *rel)
{
	struct pohm_jrec rec;
	int r;

	r = pohm_journal_get(&c->j, ino, &rec);
	if (r)
		return r == -ENOENT ? 0 : r;
	if (strcmp(rec.hint, rel)) {
		pohm_jrec_set_hint(&rec, rel);
		r = pohm_journal_put(&c->j, &rec);
	}
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * The file open at fd was just adopted as rel: is rel still its name?  The
 * look before the adopt and the storage's create are apart by a round
 * trip, and the handler's next call may remove rel in between (a pid
 * file's handler removes the last one).  That removal found no rel in the
 * storage (a hook's unlink then removes it locally only; a record's
 * replay finds nothing to remove), so the name the adopt made would stay
 * for good (shim_procs 23 under UBSan, session 19).  This look comes after
 * the create and the journal's record: a removal after it finds both in
 * the storage's and the journal's view.  A name no longer the file's
 * leaves the storage if the storage still has it for the adopted inode.
 * 0 (still its name, or nothing of ours), 1 (the stored name removed), or -errno.
 */
static int sq_adopt_check(struct pohm_cache *c, const char *rel, int fd)
{
	struct stat fst, st;
	const char *name;
	uint64_t ino, sino, dino;
	uint8_t type;
	int dfd, r;

	if (pohm_sys_fstat(fd, &fst) || cache_index_known(c, &fst, &ino))
		return 0;	/* not adopted: nothing of ours in the storage */
	r = local_has(c, rel, &st);
	if (r < 0 || (r && st.st_dev == fst.st_dev && st.st_ino == fst.st_ino))
		return r < 0 ? r : 0;
	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r == -ENOENT || r == -ENOTDIR ? 0 : r;
	r = pohm_ns_lookup(c->ns, dino, name, &sino, &type);
	pohm_sys_close(dfd);
	if (r || sino != ino)
		return r == -ENOENT ? 0 : r;	/* gone, or another file's name now */
	r = pohm_cache_drop_stored(c, rel);
	return r ? r : 1;
}

/* rel is present locally: 1 when the record must wait for a replayer that may open it. */
static int sq_present(struct pohm_cache *c, const char *rel, const struct stat *st,
		      unsigned flags)
{
	const char *name;
	uint64_t ino, dino;
	uint8_t type;
	int dfd, fd, r;

	if (!S_ISREG(st->st_mode))
		return 0;	/* the reconcile scan adopts it */
	r = cache_index_known(c, st, &ino);
	if (r != -ENOENT)	/* sync_all pushes what changed (a stale entry: adopt) */
		return r ? r : sq_known_name(c, ino, rel);
	if (!(flags & POHM_SQ_OPEN))
		return 1;
	r = cache_walk_parent(c, rel, &dfd, &dino, &name);
	if (r)
		return r == -ENOENT || r == -ENOTDIR ? 0 : r;
	r = pohm_ns_lookup(c->ns, dino, name, &ino, &type);
	if (r != -ENOENT) {
		pohm_sys_close(dfd);
		return r;	/* the storage has the name: the scan decides (conflict copy) */
	}
	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	pohm_sys_close(dfd);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	r = pohm_cache_adopt(c, rel, fd);
	if (!r)
		r = pohm_cache_push_fd(c, fd);
	if (r >= 0)
		r = sq_adopt_check(c, rel, fd);
	pohm_sys_close(fd);
	if (r < 0)
		pohm_warn("%s: written by a signal handler, not adopted (%s)", rel, strerror(-r));
	else if (r == 1)
		pohm_debug("%s: removed locally while adopted; removed from the storage", rel);
	else
		pohm_info("%s: written by a signal handler, now in the storage", rel);
	return r < 0 ? r : 0;
}

static int sq_one(struct pohm_cache *c, const char *rel, unsigned flags)
{
	struct stat st;
	int r = local_has(c, rel, &st);

	if (r < 0)
		return r;
	return r ? sq_present(c, rel, &st, flags) : pohm_cache_sigq_gone(c, rel);
}

/* The storage side of a rename the kernel did: -ENOENT when the storage lacks from. */
static int sq_rename(struct pohm_cache *c, const char *from, const char *to)
{
	const char *fname, *tname;
	uint64_t fdino, tdino, ino;
	struct pohm_jrec rec;
	uint8_t type;
	int ffd = -1, tfd = -1, r;

	r = cache_walk_parent(c, from, &ffd, &fdino, &fname);
	if (!r)
		r = cache_walk_parent(c, to, &tfd, &tdino, &tname);
	if (!r)
		r = pohm_ns_lookup(c->ns, fdino, fname, &ino, &type);
	if (!r)
		r = pohm_ns_rename_ino(c->ns, fdino, fname, tdino, tname, 0, ino);
	if (r == POHM_NS_RENAME_SAME)
		r = 0;		/* two names of one inode: the storage keeps both */
	if (r)
		goto out;
	cache_dir_changed(c, fdino);
	if (tdino != fdino)
		cache_dir_changed(c, tdino);
	if (!pohm_journal_get(&c->j, ino, &rec)) {
		pohm_jrec_set_hint(&rec, to);
		pohm_journal_put(&c->j, &rec);
		pohm_jrec_clear(&rec);
	}
	pohm_debug("%s -> %s: renamed by a signal handler; renamed in the storage", from, to);
out:
	if (ffd >= 0)
		pohm_sys_close(ffd);
	if (tfd >= 0)
		pohm_sys_close(tfd);
	return r;
}

/* Apply one record: 0 done, 1 left for a replayer that may open files, -errno. */
static int sq_apply(struct pohm_cache *c, char op, const char *a, const char *b, unsigned flags)
{
	struct stat st;
	int r, ra, rb;

	switch (op) {
	case POHM_SQ_PATH:
	case POHM_SQ_WRITE:
		return sq_one(c, a, flags);
	case POHM_SQ_LINK:
		return sq_one(c, b, flags);
	case POHM_SQ_RENAME:
		ra = local_has(c, a, &st);
		rb = local_has(c, b, &st);
		if (ra < 0 || rb < 0)
			return ra < 0 ? ra : rb;
		if (!ra && rb) {
			r = sq_rename(c, a, b);
			if (r != -ENOENT)
				return r;
			return sq_present(c, b, &st, flags);	/* never stored: a new name */
		}
		r = sq_one(c, a, flags);	/* the rename failed, or more happened since */
		rb = sq_one(c, b, flags);
		return r < 0 ? r : rb < 0 ? rb : (r | rb);
	}
	pohm_warn("signal queue: a record of unknown kind '%c' dropped", op);
	return 0;
}

/* A record's operation and its one or two paths (b "" for one). */
struct sq_rec {
	char op;
	char a[4096], b[4096];
};

/* Parse the record open at fd: 0, 1 malformed (said, to be dropped), -errno. */
static int sq_read(int fd, struct sq_rec *rec)
{
	char buf[SQ_REC_MAX + 1];
	size_t m = sizeof(POHM_SQ_MAGIC) - 1, la;
	ssize_t n;

	n = pohm_sys_read_full(fd, buf, SQ_REC_MAX);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	if ((size_t)n < m + 3 || memcmp(buf, POHM_SQ_MAGIC, m) || buf[m + 1] || buf[n - 1])
		goto bad;
	rec->op = buf[m];
	la = strlen(buf + m + 2);
	if (pohm_cache_normalize(buf + m + 2, rec->a, sizeof(rec->a)) || !rec->a[0])
		goto bad;
	rec->b[0] = '\0';
	if (rec->op == POHM_SQ_RENAME || rec->op == POHM_SQ_LINK) {
		if ((size_t)n <= m + 2 + la + 1 ||
		    pohm_cache_normalize(buf + m + 2 + la + 1, rec->b, sizeof(rec->b)) || !rec->b[0])
			goto bad;
	}
	return 0;
bad:
	pohm_warn("signal queue: a malformed record dropped");
	return 1;
}

/* x is y, or one is below the other, component by component ("" is the root). */
static int sq_related(const char *x, const char *y)
{
	size_t nx = strlen(x), ny = strlen(y), n = nx < ny ? nx : ny;

	if (!nx || !ny)
		return 1;
	if (memcmp(x, y, n))
		return 0;
	return nx == ny || (nx < ny ? y[n] == '/' : x[n] == '/');
}

/*
 * Do the first n bytes of rel name what they spell, locally: no component
 * a symlink, and every directory above the last component present (one
 * absent may be fetched and be a stored symlink)?  The last component may
 * be absent if new_ok (a create; one the storage holds as a symlink is
 * caught where the walk follows it, pohm_cache_sigq_follow).  1 yes, 0 no
 * or unknown.  Local fstatat calls only.
 */
static int sq_plain(struct pohm_cache *c, const char *rel, size_t n, int new_ok)
{
	char p[4096];
	struct stat st;
	int r;

	if (n >= sizeof(p))
		return 0;
	memcpy(p, rel, n);
	p[n] = '\0';
	for (size_t i = 0; i <= n; i++) {
		if (p[i] != '/' && p[i])
			continue;
		p[i] = '\0';
		r = pohm_sys_fstatat(c->pfd, p, &st, AT_SYMLINK_NOFOLLOW);
		p[i] = i < n ? '/' : '\0';
		if (r == -ENOENT && i == n && new_ok)
			return 1;	/* a new name */
		if (r || S_ISLNK(st.st_mode))
			return 0;
	}
	return 1;
}

/*
 * A bounded replay's state (one drain): the call about to run, how many
 * costly records it may still apply beyond those that call needs, and the
 * last record directory found plain (a backlog's records mostly share one).
 */
struct sq_run {
	struct pohm_sigq_bound *bd;
	unsigned budget;
	int calls_plain;		/* -1: not looked at yet */
	size_t dir_len;			/* plain_dir's; SIZE_MAX: none yet */
	char plain_dir[4096];
};

/* Must the record be applied before the call: does it name a path the call
 * reaches (that path, above or below it), or may it through a symlink? */
static int sq_needed(struct pohm_cache *c, struct sq_run *run, const struct sq_rec *rec)
{
	const struct pohm_sigq_bound *bd = run->bd;
	const char *paths[2] = { rec->a, rec->b };
	const char *slash;
	size_t n;

	if (run->calls_plain < 0) {
		run->calls_plain = 1;
		for (int i = 0; i < 2; i++)
			if (bd->rel[i] && !sq_plain(c, bd->rel[i], strlen(bd->rel[i]), 1))
				run->calls_plain = 0;
	}
	if (!run->calls_plain)
		return 1;
	for (int j = 0; j < 2 && paths[j][0]; j++) {
		for (int i = 0; i < 2; i++)
			if (bd->rel[i] && sq_related(bd->rel[i], paths[j]))
				return 1;
		slash = strrchr(paths[j], '/');
		if (!slash)
			continue;	/* in the prefix's root: no directory to follow */
		n = (size_t)(slash - paths[j]);
		if (n == run->dir_len && !memcmp(paths[j], run->plain_dir, n))
			continue;
		if (!sq_plain(c, paths[j], n, 0))
			return 1;
		memcpy(run->plain_dir, paths[j], n);
		run->dir_len = n;
	}
	return 0;
}

/* Parse and apply the record open at fd: 0 done, 1 left (needs an open, or
 * deferred past the run's budget), -errno. */
static int sq_record(struct pohm_cache *c, int fd, unsigned flags, struct sq_run *run)
{
	static __thread struct sq_rec rec;	/* this thread's; too large for a hook's stack */
	int r = sq_read(fd, &rec);

	if (r)
		return r > 0 ? 0 : r;
	if (run && run->budget && run->bd->until_ns && pohm_sys_mono_ns() >= run->bd->until_ns)
		run->budget = 0;	/* out of time: the budget is spent */
	if (run && !run->budget && !sq_needed(c, run, &rec)) {
		run->bd->deferred++;
		return 1;
	}
	r = sq_apply(c, rec.op, rec.a, rec.b, flags);
	if (run && run->budget && r != 1)
		run->budget--;
	return r;
}

/* A staged record younger than this may be its writer's between its
 * O_EXCL create and its lock (record_write in preload/sigsafe.c): a
 * writer is never that slow, a dead one's leftover waits that long. */
#define SQ_TMP_AGE_NS	(30ULL * 1000000000ULL)

/* Remove the unlocked leftovers of writers that died while staging. */
static void sq_clean_tmp(struct pohm_cache *c)
{
	uint64_t now = pohm_sys_real_ns();
	char buf[4096];
	struct stat st;
	ssize_t n;
	int t, fd;

	t = sq_dir(c, "sq.tmp", 0);
	if (t < 0)
		return;
	while ((n = pohm_sys_getdents64(t, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			fd = pohm_sys_openat(t, de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
			if (fd < 0)
				continue;
			if (!pohm_sys_fstat(fd, &st) &&
			    (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + (uint64_t)st.st_mtim.tv_nsec +
			    SQ_TMP_AGE_NS < now && !sq_lock(fd))
				pohm_sys_unlinkat(t, de->d_name, 0);
			pohm_sys_close(fd);
		}
	}
	pohm_sys_close(t);
}

/* This thread is in sq_replay: a walk of a record's own replay that follows
 * a symlink must not start another (pohm_cache_sigq_follow). */
static __thread int sq_replaying;

/* Both replays: run NULL applies every unlocked record. */
static int sq_replay(struct pohm_cache *c, unsigned flags, struct sq_run *run, int *left)
{
	char buf[4096];
	struct stat st;
	int q, fd, r, done = 0, err = 0, kept = 0;
	ssize_t n;

	if (left)
		*left = 0;
	q = sq_dir(c, "sq", 0);
	if (q < 0)
		return q == -ENOENT ? 0 : q;
	sq_replaying = 1;
	while ((n = pohm_sys_getdents64(q, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			fd = pohm_sys_openat(q, de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
			if (fd < 0)
				continue;	/* another replayer removed it */
			if (sq_lock(fd)) {
				kept++;			/* in flight */
				if (run)
					run->bd->deferred++;
				pohm_sys_close(fd);
				continue;
			}
			if (pohm_sys_fstat(fd, &st) || !st.st_nlink) {
				pohm_sys_close(fd);	/* replayed meanwhile */
				continue;
			}
			r = sq_record(c, fd, flags, run);
			if (r == 0) {
				pohm_sys_unlinkat(q, de->d_name, 0);
				done++;
			} else {
				kept++;
				if (r < 0)
					err = r;	/* kept: the next replay tries again */
			}
			pohm_sys_close(fd);
		}
	}
	sq_replaying = 0;
	pohm_sys_close(q);
	sq_clean_tmp(c);
	if (left)
		*left = kept;
	return err && !done ? err : done;
}

int pohm_cache_sigq_replay(struct pohm_cache *c, unsigned flags, int *left)
{
	return sq_replay(c, flags, NULL, left);
}

int pohm_cache_sigq_replay_for(struct pohm_cache *c, struct pohm_sigq_bound *bd, int *left)
{
	static __thread struct sq_run run;	/* this thread's; too large for a hook's stack */
	int r;

	run.bd = bd;
	run.budget = bd->budget;
	bd->deferred = 0;
	run.calls_plain = -1;
	run.dir_len = SIZE_MAX;
	r = sq_replay(c, 0, &run, left);
	__atomic_store_n(&c->sq_deferred, bd->deferred != 0, __ATOMIC_RELAXED);
	return r;
}

void pohm_cache_sigq_follow(struct pohm_cache *c, const char *rel)
{
	struct pohm_sigq_bound bd = { { rel, NULL }, 0, 0, 0 };
	int r;

	if (sq_replaying || !__atomic_load_n(&c->sq_deferred, __ATOMIC_RELAXED))
		return;
	r = pohm_cache_sigq_replay_for(c, &bd, NULL);
	if (r < 0)
		pohm_warn("%s: replaying the signal queue before following a symlink: %s", rel,
			  strerror(-r));
}

/* Does the queue hold a record (any process's, replayable or not)?  One
 * folder read; 1, 0 (none, or the folder cannot be read). */
static int sq_queued(struct pohm_cache *c)
{
	char buf[1024];
	ssize_t n;
	int q, any = 0;

	q = sq_dir(c, "sq", 0);
	if (q < 0)
		return 0;
	while (!any && (n = pohm_sys_getdents64(q, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n && !any;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			any = de->d_name[0] != '.';
		}
	}
	pohm_sys_close(q);
	return any;
}

int pohm_cache_sigq_absent(struct pohm_cache *c, const char *rel)
{
	struct pohm_sigq_bound bd = { { rel, NULL }, 0, 0, 0 };
	int r;

	if (sq_replaying || !sq_queued(c))
		return 0;
	r = pohm_cache_sigq_replay_for(c, &bd, NULL);
	if (r < 0)
		pohm_warn("%s: replaying the signal queue before asking the storage: %s", rel,
			  strerror(-r));
	return r > 0 ? r : 0;
}

int pohm_cache_sigq_put(struct pohm_cache *c, const char *rel)
{
	static unsigned long seq;	/* atomic */
	char name[64], rec[sizeof(POHM_SQ_MAGIC) + 2 + 4096];
	size_t m = sizeof(POHM_SQ_MAGIC) - 1, n = strlen(rel) + 1;
	int q, t, fd = -EEXIST, r;

	if (n > 4096)
		return -ENAMETOOLONG;
	r = pohm_cache_sigq_dirs(c, &q, &t);
	if (r)
		return r;
	for (int tries = 0; tries < 8 && fd == -EEXIST; tries++) {
		snprintf(name, sizeof(name), "%ld-r-%lu", (long)pohm_sys_getpid(),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		fd = pohm_sys_openat(t, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		r = fd;
		goto out;
	}
	memcpy(rec, POHM_SQ_MAGIC, m);
	rec[m] = POHM_SQ_PATH;
	rec[m + 1] = '\0';
	memcpy(rec + m + 2, rel, n);
	r = pohm_sys_write_full(fd, rec, m + 2 + n) == (ssize_t)(m + 2 + n) ? 0 : -ENOSPC;
	pohm_sys_close(fd);
	if (!r)
		r = pohm_sys_renameat(t, name, q, name);
	if (r)
		pohm_sys_unlinkat(t, name, 0);
out:
	pohm_sys_close(q);
	pohm_sys_close(t);
	return r;
}
