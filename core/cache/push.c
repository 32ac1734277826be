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
#include <unistd.h>

#include "cache_int.h"
#include "chunkmemo.h"
#include "sys.h"
#include "wire.h"
#include "stub.h"

/* Free a set of push_chunks (and the inline data it owns). */
static void set_free(struct pohm_chunk_set *set, size_t n)
{
	size_t i;

	for (i = 0; set && i < n; i++)
		if (set[i].gen == POHM_GEN_INLINE)
			free((void *)set[i].data);
	free(set);
}

/* Changed chunks a push holds in memory and writes together (one wait,
 * pohm_ns_put_chunks): up to PUSH_BATCH of them, PUSH_BATCH_BYTES in all. */
#define PUSH_BATCH 16
#define PUSH_BATCH_BYTES (8u << 20)

/* The changed chunks read so far and not written yet: set[at..at + n). */
struct chunk_batch {
	uint64_t index[PUSH_BATCH];
	const void *data[PUSH_BATCH];
	size_t len[PUSH_BATCH];
	uint64_t gen[PUSH_BATCH];
	size_t n, bytes, at;
};

/* Write the batch's chunks together; their generations into set. */
static int batch_flush(struct pohm_cache *c, uint64_t ino, struct chunk_batch *b,
		       struct pohm_chunk_set *set)
{
	size_t i;
	int r = 0;

	if (b->n)
		r = pohm_ns_put_chunks(c->ns, ino, b->n, b->index, b->data, b->len, b->gen);
	for (i = 0; i < b->n; i++) {
		if (!r)
			set[b->at + i].gen = b->gen[i];
		free((void *)b->data[i]);
	}
	b->at += b->n;
	b->n = 0;
	b->bytes = 0;
	return r;
}

/*
 * Write every chunk of fd that differs from old (nold checksums) as a new
 * generation, the changed ones together (issue 23: up to PUSH_BATCH a
 * wait, not one wait each); a file of at most POHM_INLINE_MAX bytes
 * instead goes in the commit itself (decision 0023: its chunk 0
 * POHM_GEN_INLINE, the bytes owned by the set: set_free).
 */
static int push_chunks(struct pohm_cache *c, int fd, uint64_t ino, uint64_t size, unsigned shift,
		       uint8_t (*old)[64], uint32_t nold, struct pohm_chunk_set **out,
		       size_t *nout, uint8_t (**sums)[64])
{
	uint64_t cs = 1ULL << shift, nch = (size + cs - 1) / cs, i;
	struct pohm_chunk_set *set = NULL;
	struct chunk_batch *b = NULL;
	uint8_t *buf = NULL, (*all)[64] = NULL;
	size_t n = 0;
	int r = 0;

	set = calloc(nch ? nch : 1, sizeof(*set));
	all = calloc(nch ? nch : 1, 64);
	b = calloc(1, sizeof(*b));
	if (!set || !all || !b) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nch; i++) {
		size_t want = (size_t)(i + 1 < nch ? cs : size - i * cs);
		ssize_t got;

		if (!buf && !(buf = malloc(cs))) {
			r = -ENOMEM;
			goto out;
		}
		got = pohm_sys_pread_full(fd, buf, want, (off_t)(i * cs));
		if (got < 0) {
			r = (int)got;
			goto out;
		}
		if ((size_t)got < want) {
			r = -EAGAIN;	/* shrank while we read: the caller retries later */
			goto out;
		}
		/* A chunk this process pushed and that still holds those bytes
		 * is not hashed again (chunkmemo.h). */
		pohm_chunk_memo_sum(ino, i, buf, want, nch > 1, all[i]);
		if (i < nold && !memcmp(all[i], old[i], 64))
			continue;	/* unchanged chunk: keep its generation */
		set[n].index = i;
		set[n].len = (uint32_t)want;
		memcpy(set[n].csum, all[i], 64);
		if (i == 0 && pohm_ns_inline_ok(c->ns, size)) {
			set[n].gen = POHM_GEN_INLINE;	/* no chunk object: the commit carries it */
			set[n].data = buf;
			buf = NULL;	/* owned by the set; the loop ends here (one chunk) */
			b->at = n + 1;
		} else {
			/* Held until the batch goes (its own buffer). */
			b->index[b->n] = i;
			b->data[b->n] = buf;
			b->len[b->n] = want;
			b->n++;
			b->bytes += want;
			buf = NULL;
			if (b->n == PUSH_BATCH || b->bytes + cs > PUSH_BATCH_BYTES)
				r = batch_flush(c, ino, b, set);
		}
		if (r)
			goto out;
		cache_count(c, &c->stats.pushed_chunks, 1);
		cache_count(c, &c->stats.pushed_bytes, want);
		n++;
	}
	r = batch_flush(c, ino, b, set);
out:
	if (b && b->n) {
		for (i = 0; i < b->n; i++)
			free((void *)b->data[i]);
	}
	free(b);
	free(buf);
	if (r) {
		set_free(set, n);
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
	int r = pohm_ns_mkdir(c->ns, dir, name, 0700, (uint32_t)pohm_sys_geteuid(),
			      (uint32_t)pohm_sys_getegid(), NULL);

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
	uint64_t d1, d2 = 0;
	char name[320];
	size_t n;
	int r, try = 0;

	base = base ? base + 1 : rec->hint;
	r = ns_mkdir_p(c, POHM_ROOT_INO, ".pohmelfs-conflicts", &d1);
	if (!r)
		r = ns_mkdir_p(c, d1, c->host, &d2);
	/* NAME.INO.SECONDS, or NAME.INO.SECONDS.N when that second has one already
	 * (a create must never fail EEXIST because of a conflict copy). */
	for (try = 0; !r && try < 100; try++) {
		int len = snprintf(name, sizeof(name), "%.200s.%llx.%lld", *base ? base : "file",
				   (unsigned long long)rec->ino,
				   (long long)(pohm_sys_real_ns() / 1000000000ULL));

		if (try)
			snprintf(name + len, sizeof(name) - (size_t)len, ".%d", try);
		r = pohm_ns_create(c->ns, d2, name, S_IFREG | (st->st_mode & 07777),
				   (uint32_t)st->st_uid, (uint32_t)st->st_gid, 0, POHM_CREATE_EXCL, &in);
		if (r != -EEXIST)
			break;
		r = 0;
	}
	if (!r && try == 100)
		r = -EEXIST;
	if (r)
		return r;
	r = push_chunks(c, fd, in.ino, (uint64_t)st->st_size, in.chunk_shift, NULL, 0, &set, &n,
			&sums);
	if (!r)
		r = pohm_ns_commit_map(c->ns, in.ino, in.dversion, (uint64_t)st->st_size, set, n,
				       NULL, NULL, NULL);
	if (!r) {
		cache_count(c, &c->stats.conflicts, 1);
		pohm_warn("%s: %s; the stored version stays, ours is /.pohmelfs-conflicts/%s/%s",
			  rec->hint, why, c->host, name);
	}
	pohm_inode_clear(&in);
	set_free(set, n);
	free(sums);
	return r;
}

/* A chgrp noted here (POHM_J_CHGRP) left the local group (st) other than
 * the stored one: a change to send, whatever the data and times say. */
static int chgrp_due(const struct pohm_jrec *rec, const struct stat *st)
{
	return (rec->flags & POHM_J_CHGRP) && (uint32_t)st->st_gid != rec->gid;
}

/* The group went with this push (push_attrs_diff asked POHM_J_CHGRP):
 * its put clears the flag knowingly; another put keeps one a racing
 * fchown set after rec was read (journal.h POHM_J_CHGRP_SENT). */
static void chgrp_sent(struct pohm_jrec *rec)
{
	if (rec->flags & POHM_J_CHGRP)
		rec->flags ^= POHM_J_CHGRP | POHM_J_CHGRP_SENT;
}

/* After chgrp_sent's put, which cleared the flag: a second chgrp since
 * the push's stat (whose group, seen, is what push_attrs_diff compared)
 * found the flag still set and noted nothing; it is noted now. */
static void chgrp_put_done(struct pohm_cache *c, int fd, struct pohm_jrec *rec, uint32_t seen)
{
	if (!(rec->flags & POHM_J_CHGRP_SENT))
		return;
	rec->flags &= ~POHM_J_CHGRP_SENT;
	cache_chgrp_again(c, fd, seen);
}

/*
 * The attribute changes of the local file (st) from the base rec, into
 * *sa: mode, owner (root only), mtime, atime.  Based (issue 18): rec is
 * the base, what this host last knew stored, and must have been read
 * before st was taken (so a local change st does not show is not in rec
 * either).  Only what differs from the base is set: a mode or owner that
 * changed here wins over another change of it (it is the later one this
 * host saw); a time is sent with its base and the storage keeps a stored
 * time that moved since the base and is newer (pohm_setattr.based): a
 * stale local time never moves it backwards.  sa->mask: 0 for none.
 */
static void push_attrs_diff(const struct pohm_cache *c, const struct pohm_jrec *rec,
			    const struct stat *st, struct pohm_setattr *sa)
{
	memset(sa, 0, sizeof(*sa));
	/* A local directory keeps rwx for its owner whatever the stored mode
	 * (cache_make_local): that difference is ours, not a chmod. */
	if ((st->st_mode & 07777) != (rec->mode & 07777) &&
	    !(S_ISDIR(st->st_mode) && (st->st_mode & 07777) == ((rec->mode & 07777) | 0700))) {
		sa->mask |= POHM_SET_MODE;
		sa->mode = st->st_mode & 07777;
	}
	if (c->is_root && (uint32_t)st->st_uid != rec->uid) {
		sa->mask |= POHM_SET_UID;
		sa->uid = (uint32_t)st->st_uid;
	}
	if ((c->is_root || (rec->flags & POHM_J_CHGRP)) && (uint32_t)st->st_gid != rec->gid) {
		sa->mask |= POHM_SET_GID;
		sa->gid = (uint32_t)st->st_gid;
	}
	if (st->st_mtim.tv_sec != rec->mtime.sec || (uint32_t)st->st_mtim.tv_nsec != rec->mtime.nsec) {
		sa->mask |= POHM_SET_MTIME;
		sa->mtime.sec = st->st_mtim.tv_sec;
		sa->mtime.nsec = (uint32_t)st->st_mtim.tv_nsec;
	}
	/* atime travels too (utime sets it; issue 18 case 4).  Alone it moves
	 * the ctime only when set explicitly: a read here rides along with the
	 * next change's setattr, never a round trip of its own. */
	if (st->st_atim.tv_sec != rec->atime.sec || (uint32_t)st->st_atim.tv_nsec != rec->atime.nsec) {
		sa->mask |= POHM_SET_ATIME;
		sa->atime.sec = st->st_atim.tv_sec;
		sa->atime.nsec = (uint32_t)st->st_atim.tv_nsec;
	}
	sa->based = sa->mask & (POHM_SET_ATIME | POHM_SET_MTIME);
	sa->base_atime = rec->atime;
	sa->base_mtime = rec->mtime;
}

/* The user.* xattrs of the local object (fd, or path when fd < 0) that
 * differ from in's (its stored inode, xattrs loaded).  A failure is
 * logged, not returned (0): the push goes on. */
static int push_xattrs(struct pohm_cache *c, const struct pohm_jrec *rec,
		       const struct pohm_inode *in, int fd, const char *path)
{
	int xr = 0;

	if (in->ino == rec->ino && (fd >= 0 || path)) {
		xr = cache_xattr_push(c, fd, path, in);
		if (xr < 0) {
			pohm_warn("%s: xattrs not pushed (%s)", rec->hint, strerror(-xr));
			xr = 0;
		}
	}
	return xr;
}

/*
 * Push the attributes the local file changed (mode, owner, times, user.*
 * xattrs) by a setattr of their own (push_attrs_diff says which, and how
 * they are based).  The local object is fd, or path when fd < 0; in is
 * its stored inode (xattrs loaded), replaced by the result of a setattr.
 * A push that commits data carries them in its commit instead
 * (push_known).
 */
static int push_attrs(struct pohm_cache *c, const struct pohm_jrec *rec, const struct stat *st,
		      struct pohm_inode *in, int fd, const char *path)
{
	struct pohm_setattr sa;
	int r, xr = push_xattrs(c, rec, in, fd, path);

	push_attrs_diff(c, rec, st, &sa);
	if (!sa.mask)
		return xr;
	pohm_inode_clear(in);
	r = pohm_ns_setattr(c->ns, rec->ino, &sa, in);
	return r ? r : 1;
}

/* Moved from cache.c (session 13, issue 20): push is its only user. */
int cache_restub(struct pohm_cache *c, struct pohm_jrec *rec)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	const char *name;
	struct stat st;
	char tmp[64];
	int dfd, r;

	snprintf(tmp, sizeof(tmp), "s.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	r = pohm_stub_make(c->stage_fd, tmp, c->is_root, rec->uid, rec->gid);
	if (r)
		return r;
	r = pohm_sys_fstatat(c->stage_fd, tmp, &st, AT_SYMLINK_NOFOLLOW);
	dfd = r ? r : pohm_sys_open_parent(c->pfd, rec->hint, &name);
	if (dfd < 0) {
		r = dfd;
		goto fail;
	}
	r = pohm_sys_renameat(c->stage_fd, tmp, dfd, name);
	pohm_sys_close(dfd);
	if (r)
		goto fail;
	/* Its stored xattrs are not known here: reading them fetches it. */
	rec->flags = (rec->flags | POHM_J_STUB) & ~(uint32_t)POHM_J_NOXATTR;
	pohm_journal_note_local(rec, &st);
	cache_unmark(c, rec->ino);
	return pohm_journal_put(&c->j, rec);
fail:
	pohm_sys_unlinkat(c->stage_fd, tmp, 0);
	return r;
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

/*
 * One pusher of an inode at a time on this host (DESIGN.md §2: O_APPEND is
 * atomic per host).  Processes and threads that write one file push it in
 * turn, so each push starts from the version the previous one recorded.
 * The turn is an exclusive OFD lock on byte <ino> of cache_dir/p.lock
 * (decision 0016), taken on a description of that file no other holder
 * uses (OFD locks belong to the open file description: two threads of a
 * process exclude each other too; lockfd.c keeps them between turns) and
 * held across the push's network I/O, never across a call into
 * the host.  The kernel drops it when its holder dies: no pid to check,
 * nothing to break, nothing left behind.  A pusher that waited
 * PUSH_WAIT_NS gives up waiting and pushes anyway (the inode CAS still
 * protects the storage; it only risks a spurious conflict copy).  The
 * lock's fd is kept per thread (the turn is taken and given back by the
 * same call), TURN_SLOTS at a time.
 *
 * The holder notes in ino's record which data version this host last
 * committed and from which local file (pohm_journal_put_commit): only
 * that put writes those fields, every other put carries them over, so a
 * process that read the record before our commit and writes it back
 * after (the record then goes back a version) leaves them.  Earlier
 * caches kept them in a p/INO symlink, still read (journal.h).
 */
#define PUSH_WAIT_NS (30ULL * 1000000000ULL)
#define TURN_SLOTS 4

/* This thread's turns: fd + 1 (0 = free slot, as a new thread starts). */
static __thread struct turn {
	uint64_t ino;
	int fd1;
	unsigned gen;	/* cache_lockfd_take's, for the give */
} turns[TURN_SLOTS];

static struct turn *turn_of(uint64_t ino)
{
	int i;

	for (i = 0; i < TURN_SLOTS; i++)
		if (turns[i].fd1 && turns[i].ino == ino)
			return &turns[i];
	return NULL;
}

/* Wait for this host's turn to push ino.  1 when the lock is ours, 0 when
 * we gave up waiting (or it cannot be taken: push without it). */
int cache_push_turn_take(struct pohm_cache *c, uint64_t ino)
{
	uint64_t t0 = pohm_sys_mono_ns(), pause_ns = 500000;
	struct turn *t = NULL;
	struct flock fl;
	int i, fd, r;

	if (turn_of(ino))
		return 0;	/* this thread holds it already (a push inside a refresh) */
	for (i = 0; i < TURN_SLOTS && !t; i++)
		if (!turns[i].fd1)
			t = &turns[i];
	if (!t)
		return 0;
	fd = cache_lockfd_take(c, CACHE_LF_P, &t->gen);	/* one of its own, kept (issue 23) */
	if (fd < 0)
		return 0;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(ino & 0x3fffffffffffffffULL);	/* two inodes may share a byte */
	fl.l_len = 1;
	for (;;) {
		r = pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl);
		if (!r)
			break;
		if (r != -EAGAIN && r != -EACCES && r != -EINTR)
			goto fail;
		if (pohm_sys_mono_ns() - t0 > PUSH_WAIT_NS) {
			pohm_warn("push of %llx: another pusher on this host has held it for %llu s; "
				  "pushing without waiting", (unsigned long long)ino,
				  (unsigned long long)(PUSH_WAIT_NS / 1000000000ULL));
			goto fail;
		}
		pohm_sys_nap_ns(pause_ns);
		if (pause_ns < 8000000)
			pause_ns *= 2;
	}
	t->ino = ino;
	t->fd1 = fd + 1;
	return 1;
fail:
	cache_lockfd_give(c, CACHE_LF_P, fd, t->gen);
	return 0;
}

/* Give the turn back (only if this thread holds it). */
void cache_push_turn_drop(struct pohm_cache *c, uint64_t ino)
{
	struct turn *t = turn_of(ino);

	if (!t)
		return;
	cache_lockfd_give(c, CACHE_LF_P, t->fd1 - 1, t->gen);
	t->fd1 = 0;
}

void cache_push_forget(struct pohm_cache *c, uint64_t ino)
{
	char last[64];

	/* An earlier cache's p/<ino> last-commit link (journal.h). */
	snprintf(last, sizeof(last), "p/%llx", (unsigned long long)ino);
	pohm_sys_unlinkat(c->j.dirfd, last, 0);
}

/*
 * After a push: the mode and owner another host stored since the base
 * (base_*) that this copy did not change take effect on the local file
 * (fd), so that it agrees with the record the push notes (in's); else
 * they would read as a local change from that record, and the next push
 * would take them back (issue 18).  Owner first: chown clears the set-id
 * bits.  *st becomes the local state after.  Errors leave it as it was.
 */
static void push_take_stored(struct pohm_cache *c, int fd, uint32_t base_mode, uint32_t base_uid,
			     uint32_t base_gid, const struct pohm_inode *in, struct stat *st)
{
	int changed = 0;

	if (c->is_root && (uint32_t)st->st_uid == base_uid && (uint32_t)st->st_gid == base_gid &&
	    (in->uid != base_uid || in->gid != base_gid) &&
	    !pohm_sys_fchown(fd, in->uid, in->gid))
		changed = 1;
	if ((((st->st_mode & 07777) == (base_mode & 07777) &&
	      (in->mode & 07777) != (base_mode & 07777)) || (changed && (in->mode & 06000))) &&
	    !pohm_sys_fchmod(fd, in->mode & 07777))
		changed = 1;
	if (changed)
		pohm_sys_fstat(fd, st);
}

/*
 * The chunk size of a push (decision 0072): a file whose stored version
 * has no chunk object yet (inline or empty: all its chunks are new now)
 * and that holds more than inline data and at most PUSH_SMALL_FILE
 * bytes gets chunks of 1 <<
 * PUSH_SMALL_SHIFT, so that a file rewritten in place (a database: a
 * page here and there at each commit) sends and hashes small chunks;
 * anything else keeps shift, the record's.
 */
#define PUSH_SMALL_SHIFT 16u
#define PUSH_SMALL_FILE (1u << 20)
static unsigned push_first_shift(const struct pohm_jrec *rec, uint64_t size, unsigned shift)
{
	if (shift <= PUSH_SMALL_SHIFT || rec->size > POHM_INLINE_MAX || size <= POHM_INLINE_MAX ||
	    size > PUSH_SMALL_FILE)
		return shift;
	return PUSH_SMALL_SHIFT;
}

/* Do fd's first size bytes, hashed in chunks of 1 << in's chunk_shift,
 * have in's chunk checksums? */
static int stored_is_rehashed(const struct pohm_inode *in, int fd, uint64_t size)
{
	uint64_t i, cs = 1ULL << in->chunk_shift, nch = (size + cs - 1) / cs;
	uint8_t *buf = malloc(cs ? cs : 1), sum[64];
	int same = !!buf;

	for (i = 0; same && i < nch; i++) {
		size_t want = (size_t)(i + 1 < nch ? cs : size - i * cs);

		if (i >= in->nchunks || !in->chunks[i].gen ||
		    pohm_sys_pread_full(fd, buf, want, (off_t)(i * cs)) != (ssize_t)want)
			same = 0;
		else
			pohm_sha512(buf, want, sum);
		if (same && memcmp(in->chunks[i].csum, sum, 64))
			same = 0;
	}
	free(buf);
	return same;
}

/* Is the stored version in the bytes of fd whose chunk checksums are sums
 * (size bytes, chunks of 1 << shift)?  A stored version of another chunk
 * size (decision 0072: a batch's or an older client's 1 MiB chunks against
 * a small first push's) is compared by hashing fd again at its size, for
 * a file of at most PUSH_SMALL_FILE bytes; a larger one counts as other. */
static int stored_is(const struct pohm_inode *in, int fd, uint8_t (*sums)[64], uint64_t size,
		     unsigned shift)
{
	uint64_t i, cs = 1ULL << in->chunk_shift, nch = (in->size + cs - 1) / cs;

	if (in->size != size)
		return 0;
	if (in->chunk_shift != shift)
		return size <= PUSH_SMALL_FILE && in->chunk_shift <= 30 &&
		       stored_is_rehashed(in, fd, size);
	for (i = 0; i < nch; i++)
		if (i >= in->nchunks || !in->chunks[i].gen || memcmp(in->chunks[i].csum, sums[i], 64))
			return 0;
	return 1;
}

int cache_push_known(struct pohm_cache *c, int fd, struct pohm_jrec *rec, const struct stat *st,
		      struct push_stash *ps)
{
	struct pohm_chunk_set *set = NULL;
	uint8_t (*sums)[64] = NULL;
	struct pohm_setattr sa;
	struct pohm_inode in;
	struct pohm_ts mt;
	struct stat now;
	uint32_t base_mode, base_uid, base_gid, seen_gid;
	uint64_t checked = 0;	/* when a racy record's bytes were read */
	unsigned shift = rec->chunk_shift ? rec->chunk_shift : 20;
	size_t n = 0;
	int r, d, pushed_attrs = 0, carried = 0, resized = 0;

	if (ps && ps->phase == STASH_FINISH) {
		set = ps->set;
		sums = ps->sums;
		n = ps->n;
		sa = ps->sa;
		mt = ps->mt;
		in = ps->in;
		r = ps->rc;
		ps->set = NULL;
		ps->sums = NULL;
		goto committed;
	}
	d = pohm_journal_is_dirty(rec, st);
	/* A store through our writable shared mapping to a page already dirty
	 * moves no time: whatever the record says, compare the bytes. */
	if (!d && cache_writer_mapped_here(c, (uint64_t)st->st_dev, (uint64_t)st->st_ino))
		d = 2;
	if (d == 2 && !(rec->flags & POHM_J_STUB) &&
	    st->st_mtim.tv_sec == rec->mtime.sec && (uint32_t)st->st_mtim.tv_nsec == rec->mtime.nsec) {
		checked = pohm_sys_real_ns();
		if (!pohm_journal_content_differs(rec, fd, (uint64_t)st->st_size))
			d = 0;	/* a racy ctime, but the same bytes and times: nothing to send */
	}
	if (!d && (st->st_mode & 07777) == (rec->mode & 07777) && !chgrp_due(rec, st)) {
		/* Read once: not again at every later scan (pohmelfsd's
		 * rounds, pohmelfs sync), which would hash the whole cache. */
		/* Not while a writer holds the inode: a store through a
		 * mapping whose page is already dirty moves no time, so a
		 * settled record would hide it for good (s19 review). */
		if (checked && pohm_cache_writer_alive(c, rec->ino) == 0)
			pohm_journal_settle_racy(&c->j, rec, st, checked);
		return 0;
	}
	if (!S_ISREG(st->st_mode))
		return 0;
	if (rec->flags & POHM_J_STUB) {
		if (pohm_stub_shape(st))
			return 0;	/* an untouched stub */
		/* fd is not the record's local file: another pusher (pohmelfsd's
		 * round beside `pohmelfs sync`) kept these bytes as a conflict
		 * copy and put a fresh stub in its place while we waited for
		 * the turn with an fd opened before.  A second copy would only
		 * repeat the first. */
		if ((uint64_t)st->st_ino != rec->lino || (uint64_t)st->st_dev != rec->ldev)
			return 0;
		/* A stub changed without the shim: its base is unknown, so never a push.
		 * Its data is kept as a conflict copy; the name becomes a stub again
		 * and shows the stored version at its next open. */
		r = cache_conflict_copy(c, fd, rec, st, "a stub written without the shim");
		if (!r) {
			rec->flags |= POHM_J_CONFLICT;
			r = cache_restub(c, rec);
		}
		return r ? r : 1;
	}
	if (rec->flags & POHM_J_TORN) {
		r = push_torn(c, fd, rec, st);
		if (r)
			return r < 0 ? r : 0;
	}
	/* A batch's commit keeps the stored chunk size (pohm_ns_commit_map_n). */
	if (!ps) {
		shift = push_first_shift(rec, (uint64_t)st->st_size, shift);
		resized = shift != (rec->chunk_shift ? rec->chunk_shift : 20u);
	}
	r = push_chunks(c, fd, rec->ino, (uint64_t)st->st_size, shift, resized ? NULL : rec->csum,
			resized ? 0 : rec->nchunks, &set, &n, &sums);
	if (r)
		return r;
	if (!n && (uint64_t)st->st_size == rec->size) {
		/* The bytes of the base version (a racy timestamp, a ctime moved
		 * without the shim, a rewrite of equal bytes; a chmod, a utime).
		 * The inode the setattr's CAS will be based on (decision 0048) at
		 * this copy's version: no read; a CAS it loses reads and retries
		 * over what is stored then, as after a read here that another
		 * host's change followed (handled below push_attrs). */
		if (!pohm_ns_getattr_base(c->ns, rec->ino, &in)) {
			/* Only a base no older than what this host last saw: a
			 * kept copy from before a newer version the record noted
			 * (a listing's batch keeps nothing) would otherwise be
			 * taken back as stored when no setattr's CAS checks it
			 * (session 13 review). */
			if (in.dversion == rec->dversion && !in.nmaps && in.version >= rec->version)
				goto attrs;
			pohm_inode_clear(&in);
		}
		r = pohm_ns_getattr(c->ns, rec->ino, &in);
		if (r)
			goto out;
		if (in.dversion == rec->dversion || stored_is(&in, fd, sums, (uint64_t)st->st_size, shift))
			goto attrs;	/* ours, or the same data committed by another */
		/* The storage moved on from this copy's base, and this copy holds
		 * the base's bytes: nothing of ours to send but attributes.  The
		 * record keeps its base, so the next open fetches the newer
		 * version; adopting it here would make the next local change
		 * overwrite it (issue 18 case 1). */
		{
			/* This copy's times are its base's; the record's are
			 * the newer stored version's (a revalidation notes its
			 * attributes and keeps the data identity): no change of
			 * ours, never sent over that version.  Mode and owner
			 * changed here still travel. */
			struct stat ast = *st;

			ast.st_mtim.tv_sec = rec->mtime.sec;
			ast.st_mtim.tv_nsec = rec->mtime.nsec;
			ast.st_atim.tv_sec = rec->atime.sec;
			ast.st_atim.tv_nsec = rec->atime.nsec;
			r = push_attrs(c, rec, &ast, &in, fd, NULL);
		}
		if (r < 0)
			goto out_in;
		pushed_attrs = r;
		rec->mode = (rec->mode & S_IFMT) | (st->st_mode & 07777);
		if (c->is_root) {
			rec->uid = (uint32_t)st->st_uid;
			rec->gid = (uint32_t)st->st_gid;
		} else if (rec->flags & POHM_J_CHGRP) {
			rec->gid = (uint32_t)st->st_gid;
		}
		chgrp_sent(rec);
		pohm_journal_note_local(rec, st);
		r = pohm_journal_put(&c->j, rec);
		chgrp_put_done(c, fd, rec, (uint32_t)st->st_gid);
		if (!r && pushed_attrs) {
			cache_count(c, &c->stats.pushes, 1);
			r = 1;
		}
		goto out_in;
	}
	mt.sec = st->st_mtim.tv_sec;
	mt.nsec = (uint32_t)st->st_mtim.tv_nsec;
	/* The attributes changed here go in the same CAS (issue 23): the
	 * mtime with the data, as before; mode, owner and atime as push_attrs
	 * would send them after it, based on the same record (read before st). */
	push_attrs_diff(c, rec, st, &sa);
	sa.mask &= ~(unsigned)POHM_SET_MTIME;
	sa.based &= ~(unsigned)POHM_SET_MTIME;
	if (ps) {
		/* A batch's: its commit goes with the others' (pohm_cache_push_fds). */
		ps->ready = 1;
		ps->set = set;
		ps->sums = sums;
		ps->n = n;
		ps->sa = sa;
		ps->mt = mt;
		return 0;
	}
	r = pohm_ns_commit_map_shift(c->ns, rec->ino, rec->dversion, (uint64_t)st->st_size,
				     resized ? shift : 0, set, n, &mt, sa.mask ? &sa : NULL, &in);
committed:
	if (!r) {
		rec->mtime = mt;	/* committed with the data: no setattr of its own (issue 23) */
		carried = sa.mask != 0;
	}
	if (r == -ESTALE) {
		/* The storage moved on.  Identical content is no conflict. */
		r = pohm_ns_getattr(c->ns, rec->ino, &in);
		if (!r && pohm_journal_committed(&c->j, rec->ino, in.dversion, (uint64_t)st->st_ino)) {
			/* This host committed the stored version from this same local file
			 * (another appender's push; the journal went back a version since):
			 * ours is a later state of it, not a conflict.  Again from it. */
			pohm_journal_note_inode(rec, &in);
			pohm_journal_put(&c->j, rec);
			pohm_inode_clear(&in);
			r = -EAGAIN;
			goto out;
		}
		if (!r) {
			if (!stored_is(&in, fd, sums, (uint64_t)st->st_size, shift)) {
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
	/*
	 * The local copy now holds in's data: our commit, or the stored version
	 * whose bytes it holds.  Noted before push_attrs: a setattr retries its
	 * CAS over whatever is stored by then and answers with that, maybe a
	 * data version another host committed meanwhile.  Its attributes are
	 * news; its data is not in this copy, so it never becomes the base of
	 * the next push (that would commit over it: issue 18, CI failure of
	 * cache_append_hosts).  The next open fetches it.
	 */
	pohm_journal_note_data(rec, &in);
	base_mode = rec->mode;
	base_uid = rec->uid;
	base_gid = rec->gid;
	if (carried) {	/* the commit set them; its answer (in) shows them */
		push_xattrs(c, rec, &in, fd, NULL);
		r = 1;
	} else
		r = push_attrs(c, rec, st, &in, fd, NULL);
	if (r < 0)
		goto out_in;
	pushed_attrs = r;
	seen_gid = (uint32_t)st->st_gid;	/* push_attrs_diff's; now's may be later */
	now = *st;
	push_take_stored(c, fd, base_mode, base_uid, base_gid, &in, &now);
	st = &now;
	if (in.dversion == rec->dversion) {
		pohm_journal_note_inode(rec, &in);
	} else {
		pohm_journal_note_attrs(rec, &in);
		rec->mtime.sec = st->st_mtim.tv_sec;	/* ours, as push_attrs sent them */
		rec->mtime.nsec = (uint32_t)st->st_mtim.tv_nsec;
		rec->atime.sec = st->st_atim.tv_sec;
		rec->atime.nsec = (uint32_t)st->st_atim.tv_nsec;
	}
	pohm_journal_note_local(rec, st);
	chgrp_sent(rec);
	rec->flags &= ~(uint32_t)(POHM_J_STUB | POHM_J_NOXATTR);
	rec->commit_dversion = rec->dversion;	/* this host's commit, or the stored
						 * version whose bytes this copy holds */
	rec->commit_lino = rec->lino;
	r = pohm_journal_put_commit(&c->j, rec);
	chgrp_put_done(c, fd, rec, seen_gid);
	cache_mark_fresh(c, rec->ino);
	if (!r && (n || (uint64_t)st->st_size != rec->lsize || pushed_attrs)) {
		cache_count(c, &c->stats.pushes, 1);
		r = 1;
	}
out_in:
	pohm_inode_clear(&in);
out:
	set_free(set, n);
	free(sums);
	return r;
}

static int push_dir_attrs(struct pohm_cache *c, const struct stat *st, int fd, const char *rel);

/*
 * A push failed with ENOENT: if the storage no longer has the inode (its
 * last name was unlinked or renamed over, maybe on another host), the local
 * writes are those of an unlinked file, lost when it goes (POSIX): the push
 * is dropped and the journal forgets the inode.  0, or -ENOENT when the
 * inode is still there (something else was missing).
 */
int cache_push_drop_gone(struct pohm_cache *c, uint64_t ino)
{
	struct pohm_inode in;
	int r = pohm_ns_getattr(c->ns, ino, &in);

	if (!r) {
		pohm_inode_clear(&in);
		return -ENOENT;
	}
	if (r != -ENOENT)
		return r;
	pohm_journal_del(&c->j, ino);
	cache_push_forget(c, ino);
	cache_unmark(c, ino);
	return 0;
}

/* The push of fd, the local file of our inode ino, in this host's turn
 * (hinted: ino is pohm_journal_local_hint's; -ESRCH, nothing done, when
 * its record does not name fd's file; want: the file fd must be, or NULL;
 * -EBADFD, nothing read or done, when fd is not (or is closed): the
 * caller's unchecked shadow, pohm_cache_push_fd_as). */
static int push_fd_ino(struct pohm_cache *c, int fd, uint64_t ino, int hinted,
		       const struct stat *want)
{
	struct pohm_jrec rec;
	struct stat st;
	int r = 0, tries, turn;

	turn = cache_push_turn_take(c, ino);
	for (tries = 0; tries < 20; tries++) {
		if (tries) {
			/* Raced another pusher of this file: a short random pause. */
			cache_count(c, &c->stats.retries, 1);
			pohm_sys_nap_ns((pohm_sys_mono_ns() % 8 + 1) * 1000000ULL);
		}
		/* The state now, in our turn: what we read and what we record.
		 * The base before the local state (push_attrs). */
		r = pohm_journal_get(&c->j, ino, &rec);
		if (r) {
			r = hinted ? -ESRCH : r == -ENOENT ? 0 : r;
			break;
		}
		r = pohm_sys_fstat(fd, &st);
		if (want && (r || st.st_dev != want->st_dev || st.st_ino != want->st_ino))
			r = -EBADFD;
		if (!r && hinted && (rec.lino != (uint64_t)st.st_ino || rec.ldev != (uint64_t)st.st_dev))
			r = -ESRCH;
		hinted = 0;	/* confirmed: the retries need not */
		if (r) {
			pohm_jrec_clear(&rec);
			break;
		}
		r = cache_push_known(c, fd, &rec, &st, NULL);
		pohm_jrec_clear(&rec);
		if (r == -ENOENT)
			r = cache_push_drop_gone(c, ino);
		if (r != -EAGAIN)
			break;	/* -EAGAIN: the file changed size while we read it, or
				 * the journal lagged behind this host's last commit */
	}
	if (turn)
		cache_push_turn_drop(c, ino);
	return r;
}

int pohm_cache_push_fd_as(struct pohm_cache *c, int fd, const struct stat *st)
{
	uint64_t ino;
	int r;

	if ((uint64_t)st->st_dev != c->pdev)
		return 0;
	if (!S_ISREG(st->st_mode))	/* fchmod/futimens of a directory */
		return S_ISDIR(st->st_mode) ? push_dir_attrs(c, st, fd, NULL) : 0;
	/* The file this thread just recorded (a create's close): no index
	 * read, its record (read in the push's turn anyway) confirms it. */
	if (!pohm_journal_local_hint(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino) &&
	    (r = push_fd_ino(c, fd, ino, 1, st)) != -ESRCH)
		return r;
	if (pohm_journal_lookup_local(&c->j, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &ino))
		return 0;	/* not a file of ours */
	return push_fd_ino(c, fd, ino, 0, st);
}

int pohm_cache_push_fd(struct pohm_cache *c, int fd)
{
	struct stat st;
	int r = pohm_sys_fstat(fd, &st);

	return r ? r : pohm_cache_push_fd_as(c, fd, &st);
}

/* The storage inode of the local file st and, when it has bytes, its
 * record (*had): this thread's hint when the record confirms it (no index
 * read), else the index's.  0, or -ENOENT: not a file of ours. */
static int wronly_rec(struct pohm_cache *c, const struct stat *st, uint64_t *ino,
		      struct pohm_jrec *rec, int *had)
{
	uint64_t dev = (uint64_t)st->st_dev, lino = (uint64_t)st->st_ino;

	*had = 0;
	if (!pohm_journal_local_hint(&c->j, dev, lino, ino) && !pohm_journal_get(&c->j, *ino, rec)) {
		if (rec->lino == lino && rec->ldev == dev) {
			*had = 1;
			return 0;
		}
		pohm_jrec_clear(rec);
	}
	if (pohm_journal_lookup_local(&c->j, dev, lino, ino))
		return -ENOENT;
	*had = st->st_size > 0 && !pohm_journal_get(&c->j, *ino, rec);
	return 0;
}

int pohm_cache_push_wronly(struct pohm_cache *c, int fd)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int r, reads, had;

	r = pohm_sys_fstat(fd, &st);
	if (r)
		return r;
	if ((uint64_t)st.st_dev != c->pdev || !S_ISREG(st.st_mode))
		return pohm_cache_push_fd(c, fd);	/* nothing of a file's push here */
	if (wronly_rec(c, &st, &ino, &rec, &had))
		return 0;	/* not a file of ours */
	if (!had || st.st_size <= 0) {
		if (had)
			pohm_jrec_clear(&rec);
		return push_fd_ino(c, fd, ino, 0, NULL);	/* no bytes to read, or no record: as ever */
	}
	/* What cache_push_known would do: a stub's or a torn push has its own
	 * ways; otherwise changed bytes, times or mode mean push_chunks reads
	 * every chunk of fd, which fails EBADF on a write-only fd. */
	reads = !(rec.flags & (POHM_J_STUB | POHM_J_TORN)) &&
		(pohm_journal_is_dirty(&rec, &st) || (st.st_mode & 07777) != (rec.mode & 07777) ||
		 chgrp_due(&rec, &st));
	pohm_jrec_clear(&rec);
	return reads ? -EBADF : push_fd_ino(c, fd, ino, 0, NULL);
}

/*
 * Does the local directory (st; fd, or path when fd < 0) differ from its
 * record only by times that follow its entries (decision 0015)?  Then its
 * push (a directory's fsync: sqlite syncs its directory after each
 * journal's create) sends nothing: the entries are in the storage already
 * (DESIGN.md §2), and the stored mtime follows them within the lag
 * (cachedirtime.c, cache_dir_time_lag_ns).  A setattr here cost 2 waits per
 * fsync (the stored inode's read for its xattrs, the CAS), issue 23.
 * Followed times: mode and owner as recorded, the local mtime equal to the
 * ctime (set by the kernel at an entry change: no utimes to another time,
 * no chmod, chown or xattr change since) and not to the atime (a touch to
 * now sets all three alike), and no more than the lag after the stored
 * mtime the record knows.  The atime never costs a round trip of its own
 * (push_attrs_diff).  A directory with user.* xattrs still goes the whole
 * way (their comparison needs the stored inode).  Decision 0060.
 */
static int dir_times_follow(const struct pohm_cache *c, const struct pohm_jrec *rec,
			    const struct stat *st, int fd, const char *path)
{
	uint64_t m = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + (uint64_t)st->st_mtim.tv_nsec;
	uint64_t stored = (uint64_t)rec->mtime.sec * 1000000000ULL + rec->mtime.nsec;
	char names[1024];
	long n, i;

	if (!S_ISDIR(st->st_mode) || !S_ISDIR(rec->mode))
		return 0;
	if ((st->st_mode & 07777) != (rec->mode & 07777) &&
	    (st->st_mode & 07777) != ((rec->mode & 07777) | 0700))
		return 0;
	if (c->is_root && ((uint32_t)st->st_uid != rec->uid || (uint32_t)st->st_gid != rec->gid))
		return 0;
	if (st->st_mtim.tv_sec != st->st_ctim.tv_sec || st->st_mtim.tv_nsec != st->st_ctim.tv_nsec)
		return 0;
	/* A touch (UTIME_NOW) sets the atime to the same instant: set, not followed. */
	if (st->st_atim.tv_sec == st->st_mtim.tv_sec && st->st_atim.tv_nsec == st->st_mtim.tv_nsec)
		return 0;
	if (m > stored && m - stored > cache_dir_time_lag_ns())
		return 0;
	n = pohm_sys_listxattr(fd, fd < 0 ? path : NULL, 0, names, sizeof(names));
	if (n == -ENOTSUP || n == -EPERM)
		return 1;
	if (n < 0)
		return 0;	/* -ERANGE (many names), or unknown: the whole way */
	for (i = 0; i < n; i += (long)strlen(names + i) + 1)
		if (!strncmp(names + i, "user.", 5))
			return 0;
	return 1;
}

/* Mode, owner, times and xattrs of a directory or symlink (st0 says which),
 * open as fd or named rel (fd < 0). */
static int push_dir_attrs(struct pohm_cache *c, const struct stat *st0, int fd, const char *rel)
{
	struct pohm_inode in;
	struct pohm_jrec rec;
	struct stat st;
	char path[8192];
	uint64_t ino;
	int r;

	if (pohm_journal_lookup_local(&c->j, (uint64_t)st0->st_dev, (uint64_t)st0->st_ino, &ino))
		return 0;
	r = pohm_journal_get(&c->j, ino, &rec);
	if (r)
		return r == -ENOENT ? 0 : r;
	/* The local state after the base (push_attrs): st0 may predate a
	 * change this host stored and recorded meanwhile (an entry removed:
	 * cache_dir_changed), and would send the time before it. */
	r = fd >= 0 ? pohm_sys_fstat(fd, &st) : pohm_sys_fstatat(c->pfd, rel, &st,
								  AT_SYMLINK_NOFOLLOW);
	if (r || st.st_ino != st0->st_ino || st.st_dev != st0->st_dev) {
		pohm_jrec_clear(&rec);
		return r == -ENOENT ? 0 : r;	/* replaced meanwhile: its own push */
	}
	/* The xattr calls take a whole path: none for one the kernel would
	 * refuse (PATH_MAX or more, issue 19 item 10), its xattrs left alone. */
	if (fd < 0 && (size_t)snprintf(path, sizeof(path), "%s/%s", c->prefix, rel) >= 4096)
		path[0] = '\0';
	if ((fd >= 0 || path[0]) && dir_times_follow(c, &rec, &st, fd, path)) {
		pohm_jrec_clear(&rec);
		return 0;	/* only times its entries moved: nothing to send */
	}
	/* The stored inode, for its xattrs; unknown, they are left alone. */
	if (pohm_ns_getattr(c->ns, ino, &in))
		memset(&in, 0, sizeof(in));
	r = push_attrs(c, &rec, &st, &in, fd, fd < 0 && path[0] ? path : NULL);
	if (r > 0 && in.ino == ino)
		/* Into the record as it is now: rec was read before the
		 * storage calls, and another process may have written it since
		 * (issue 18). */
		pohm_journal_note_stored(&c->j, &in);
	pohm_inode_clear(&in);
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * Open for reading a regular file (rel) whose owner may not read it (mode
 * 0200): as its owner (or root), through an O_PATH fd, add u+r, open it
 * read-only, and put the mode back before anything is read, so the push
 * records the local state with the restored mode and ctime.  Anyone else
 * gets -EACCES: a push that could not read the file is an error.  fd or
 * -errno.
 */
static int open_unreadable(struct pohm_cache *c, const char *rel)
{
	char proc[64];
	struct stat st;
	int pfd, fd, r;

	pfd = pohm_sys_openat(c->pfd, rel, O_PATH | O_NOFOLLOW, 0);
	if (pfd < 0)
		return pfd;
	r = pohm_sys_fstat(pfd, &st);
	if (r)
		goto out;
	r = -EACCES;
	if (!S_ISREG(st.st_mode) || (st.st_mode & S_IRUSR) ||
	    (cache_fsuid() != (uint32_t)st.st_uid && cache_fsuid() != 0))
		goto out;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	r = pohm_sys_fchmodat(AT_FDCWD, proc, (st.st_mode & 07777) | S_IRUSR);
	if (r)
		goto out;
	fd = pohm_sys_openat(AT_FDCWD, proc, O_RDONLY | O_NONBLOCK, 0);
	r = pohm_sys_fchmodat(AT_FDCWD, proc, st.st_mode & 07777);
	if (r)
		pohm_err("%s: mode could not be put back to %o after reading it for a push (%s)",
			 rel, (unsigned)(st.st_mode & 07777), strerror(-r));
	r = fd;
out:
	pohm_sys_close(pfd);
	return r;
}

/*
 * Open rel's local file for its push (pohm_cache_push_path): *fd a
 * readable fd (the caller's to close), or -1 when there is nothing to
 * push (gone, our own stub); 1 when rel is no regular file (a directory's
 * or symlink's attributes: the caller pushes it by path), 0, or -errno.
 */
int cache_push_open(struct pohm_cache *c, const char *rel, int *fd)
{
	struct stat st;
	int have;

	*fd = -1;
	have = !pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW);
	if (have && !S_ISREG(st.st_mode))
		return 1;
	/* O_NOATIME: our read for the push is no access of the program's (an
	 * atime it just set with utime must stay).  Only the owner or root
	 * may ask for it. */
	*fd = pohm_sys_openat(c->pfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOATIME, 0);
	if (*fd == -EPERM)
		*fd = pohm_sys_openat(c->pfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);

	if (*fd == -EACCES) {
		/* Our own (regular) stub (nothing to push), or a file its owner may
		 * not read: read it with u+r for a moment (never "unchanged"). */
		if (!have)
			return -EACCES;
		*fd = -1;
		if (pohm_stub_shape(&st))
			return 0;
		*fd = open_unreadable(c, rel);
	}
	if (*fd < 0) {
		int r = *fd;

		*fd = -1;
		return r == -ENOENT || r == -ELOOP ? 0 : r;
	}
	return 0;
}

int pohm_cache_push_path(struct pohm_cache *c, const char *rel)
{
	struct stat st;
	int fd, r = cache_push_open(c, rel, &fd);

	if (r == 1) {
		if (pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW))
			return 0;
		return S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) ? push_dir_attrs(c, &st, -1, rel) : 0;
	}
	if (r || fd < 0)
		return r;
	r = pohm_cache_push_fd(c, fd);
	pohm_sys_close(fd);
	return r;	/* 1 pushed, 0 nothing to push, -errno */
}
