/*
 * pushmany.c — pushes of many files at once (issue 23, decision 0057):
 * pohm_cache_push_fds (each push up to its commit point, the commits
 * together through pohm_ns_commit_map_n, each push finished from its
 * answer), and the syncs built on it: every dirty file of the journal
 * (pohmelfs sync, sync(2), pohmelfsd's rounds) or of a list of inodes
 * (a process's exit or exec), gathered SYNC_BATCH open files at a time.
 * One push's rules are push.c's (cache_push_known).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"
#include "stub.h"

/* ---------------------------------------------------------------- many files together */

/*
 * The turns of a batch: one fd of p.lock holding the byte of each of its
 * inodes (an OFD lock per byte; the same rule as cache_push_turn_take,
 * whose pushers they exclude and which exclude them).  Never waited for:
 * a file another pusher of this host holds goes alone, after the batch,
 * and waits for its turn there.
 */
static int batch_turn(int fd, uint64_t ino, short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(ino & 0x3fffffffffffffffULL);
	fl.l_len = 1;
	return pohm_sys_fcntl(fd, F_OFD_SETLK, (long)&fl);
}

/* One file of a batch. */
struct batch_slot {
	int fd;
	uint64_t ino;
	struct pohm_jrec rec;		/* read in its turn, before st */
	struct stat st;
	struct push_stash ps;
	enum { SLOT_DONE, SLOT_ALONE, SLOT_COMMIT } state;
	int locked;
};

/* A slot's first half (its turn, the journal's record, the local state,
 * push_known up to its commit point). */
static void batch_prep(struct pohm_cache *c, int lfd, struct batch_slot *b, size_t i, int *res)
{
	struct stat st;
	size_t k;
	int r;

	b[i].state = SLOT_DONE;
	res[i] = 0;
	r = pohm_sys_fstat(b[i].fd, &st);
	if (r) {
		res[i] = r;
		return;
	}
	if ((uint64_t)st.st_dev != c->pdev)
		return;
	if (!S_ISREG(st.st_mode) || lfd < 0) {
		b[i].state = SLOT_ALONE;	/* a directory's attributes: as ever */
		return;
	}
	if (pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &b[i].ino))
		return;	/* not a file of ours */
	for (k = 0; k < i; k++)
		if (b[k].ino == b[i].ino && b[k].state != SLOT_DONE) {
			b[i].state = SLOT_ALONE;	/* two fds of one file: after the first */
			return;
		}
	if (batch_turn(lfd, b[i].ino, F_WRLCK)) {
		b[i].state = SLOT_ALONE;	/* another pusher has it: wait for it alone */
		return;
	}
	b[i].locked = 1;
	r = pohm_journal_get(&c->j, b[i].ino, &b[i].rec);
	if (r) {
		res[i] = r == -ENOENT ? 0 : r;
		return;
	}
	b[i].ps.phase = STASH_PREP;
	r = pohm_sys_fstat(b[i].fd, &b[i].st);
	if (!r)
		r = cache_push_known(c, b[i].fd, &b[i].rec, &b[i].st, &b[i].ps);
	if (!r && b[i].ps.ready) {
		b[i].state = SLOT_COMMIT;
		return;
	}
	pohm_jrec_clear(&b[i].rec);
	if (r == -ENOENT)
		r = cache_push_drop_gone(c, b[i].ino);
	if (r == -EAGAIN)
		b[i].state = SLOT_ALONE;	/* pohm_cache_push_fd's retries */
	res[i] = r;
}

int pohm_cache_push_fds(struct pohm_cache *c, size_t n, const int *fds, int *res)
{
	struct batch_slot *b = calloc(n ? n : 1, sizeof(*b));
	struct pohm_ns_commit *cm = calloc(n ? n : 1, sizeof(*cm));
	size_t i, k = 0;
	int lfd = -1, r;

	if (!b || !cm) {
		free(b);
		free(cm);
		for (i = 0; i < n; i++)
			res[i] = pohm_cache_push_fd(c, fds[i]);
		return 0;
	}
	lfd = pohm_journal_open_own(c->j.dirfd, "p.lock", O_RDWR | O_CREAT);
	for (i = 0; i < n; i++) {
		b[i].fd = fds[i];
		batch_prep(c, lfd, b, i, res);
	}
	/* The commits, together (pohm_ns_commit_map_n). */
	for (i = 0; i < n; i++)
		if (b[i].state == SLOT_COMMIT) {
			cm[k].ino = b[i].ino;
			cm[k].base_dversion = b[i].rec.dversion;
			cm[k].size = (uint64_t)b[i].st.st_size;
			cm[k].set = b[i].ps.set;
			cm[k].n = b[i].ps.n;
			cm[k].mtime = &b[i].ps.mt;
			cm[k].sa = b[i].ps.sa.mask ? &b[i].ps.sa : NULL;
			k++;
		}
	if (k)
		pohm_ns_commit_map_n(c->ns, k, cm);
	for (i = 0, k = 0; i < n; i++) {
		if (b[i].state != SLOT_COMMIT)
			continue;
		b[i].ps.phase = STASH_FINISH;
		b[i].ps.rc = cm[k].rc;
		b[i].ps.in = cm[k].out;
		k++;
		r = cache_push_known(c, b[i].fd, &b[i].rec, &b[i].st, &b[i].ps);
		pohm_jrec_clear(&b[i].rec);
		if (r == -ENOENT)
			r = cache_push_drop_gone(c, b[i].ino);
		b[i].state = r == -EAGAIN ? SLOT_ALONE : SLOT_DONE;
		res[i] = r;
	}
	/* Every turn back before the files that go alone take theirs. */
	if (lfd >= 0)
		pohm_sys_close(lfd);
	for (i = 0; i < n; i++)
		if (b[i].state == SLOT_ALONE)
			res[i] = pohm_cache_push_fd(c, b[i].fd);
	free(b);
	free(cm);
	return 0;
}

/* Files opened for one batch of pohm_cache_push_fds (an fd each). */
#define SYNC_BATCH 128

struct sync_ctx {
	struct pohm_cache *c;
	int (*held)(void *arg, uint64_t dev, uint64_t ino);
	void *arg;
	uint64_t quiet_ns;		/* sync_round: leave busy live writers' files */
	struct pohm_sync_defer *defer;
	int pushed;
	int err;
	int fds[SYNC_BATCH];		/* the batch being gathered */
	size_t nfds;
	/* Files not at their hints (sync_repair): collected (REPAIR_COLLECT),
	 * or, after a complete repair, marked as not found (REPAIR_AFTER). */
	enum { REPAIR_NO, REPAIR_COLLECT, REPAIR_AFTER } repair;
	struct stale { uint64_t ino, key; } *stale;
	size_t nstale, capstale;
	struct cache_miss *miss;	/* REPAIR_AFTER: the marks (NULL: none) */
};

/* The gathered files' pushes, together (issue 23); their fds closed. */
static void sync_flush(struct sync_ctx *s)
{
	int res[SYNC_BATCH];
	size_t i;

	if (!s->nfds)
		return;
	pohm_cache_push_fds(s->c, s->nfds, s->fds, res);
	for (i = 0; i < s->nfds; i++) {
		if (res[i] < 0)
			s->err = res[i];
		else
			s->pushed += res[i];
		pohm_sys_close(s->fds[i]);
	}
	s->nfds = 0;
}

/* rel's push joins the batch (by path alone when it cannot). */
static void sync_add(struct sync_ctx *s, const char *rel)
{
	int fd, r = cache_push_open(s->c, rel, &fd);

	if ((r == -EMFILE || r == -ENFILE) && s->nfds) {
		sync_flush(s);	/* out of fds: push what we hold, then again */
		r = cache_push_open(s->c, rel, &fd);
	}
	if (r == 1) {
		r = pohm_cache_push_path(s->c, rel);
	} else if (!r && fd >= 0) {
		s->fds[s->nfds++] = fd;
		if (s->nfds == SYNC_BATCH)
			sync_flush(s);
		return;
	}
	if (r < 0)
		s->err = r;
	else
		s->pushed += r;
}

/*
 * Leave rec's file (local state st) to its live writer this round?  A file
 * being written is not worth a push of each half-written state (the writer's
 * last close, or its death, brings one anyway: writer.c); but a writer that
 * keeps it open and busy for long still gets a snapshot every 4 quiet
 * periods, so that a host crash loses at most that much.
 */
static int sync_defer(struct sync_ctx *s, const struct pohm_jrec *rec, const struct stat *st)
{
	struct pohm_sync_defer *d = s->defer;
	uint64_t now = pohm_sys_real_ns(), ct, cap = 4 * s->quiet_ns;
	int i, slot = -1;

	ct = (uint64_t)st->st_ctim.tv_sec * 1000000000ULL + (uint64_t)st->st_ctim.tv_nsec;
	for (i = 0; i < (int)(sizeof(d->e) / sizeof(d->e[0])); i++) {
		if (d->e[i].ino == rec->ino) {
			slot = i;
			break;
		}
		if (!d->e[i].ino && slot < 0)
			slot = i;
	}
	if (ct + s->quiet_ns <= now || pohm_cache_writer_alive(s->c, rec->ino) != 1) {
		if (slot >= 0 && d->e[slot].ino == rec->ino)
			d->e[slot].ino = 0;	/* quiet, or no writer left: push */
		return 0;
	}
	if (slot < 0)
		return 0;			/* no room to remember: push */
	if (d->e[slot].ino != rec->ino) {
		d->e[slot].ino = rec->ino;
		d->e[slot].since_ns = now;
	}
	d->e[slot].round = d->round;
	if (now - d->e[slot].since_ns < cap)
		return 1;
	d->e[slot].ino = 0;			/* busy for 4 periods: a snapshot */
	return 0;
}

/* A 64-bit mixer of one value (stale_key's terms). */
static uint64_t fp_term(uint64_t ino)
{
	ino ^= ino >> 31;
	ino *= 0x9e3779b97f4a7c15ULL;
	return ino ^ (ino >> 29);
}

/* What a stale record's state is remembered by from one round to the
 * next: its inode, hint and local inode (the same file left the same). */
static uint64_t stale_key(const struct pohm_jrec *rec)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *p;

	for (p = rec->hint; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	return fp_term(rec->ino ^ fp_term(rec->lino ^ fp_term(h)));
}

/* rec's file is not at its hint: noted for sync_repair. */
static void stale_note(struct sync_ctx *s, const struct pohm_jrec *rec)
{
	struct stale *v;

	if (s->repair == REPAIR_AFTER) {
		if (s->miss)
			cache_miss_add(s->c, s->miss, rec, stale_key(rec), NULL);
		return;
	}
	if (s->repair != REPAIR_COLLECT)
		return;
	if (s->nstale == s->capstale) {
		v = realloc(s->stale, (s->capstale ? s->capstale * 2 : 16) * sizeof(*v));
		if (!v)
			return;	/* this round without it; the next one notes it again */
		s->stale = v;
		s->capstale = s->capstale ? s->capstale * 2 : 16;
	}
	s->stale[s->nstale].ino = rec->ino;
	s->stale[s->nstale++].key = stale_key(rec);
}

static int sync_one(void *arg, struct pohm_jrec *rec)
{
	struct sync_ctx *s = arg;
	struct stat st;

	if (!rec->hint[0] || !S_ISREG(rec->mode))
		return 0;
	if (pohm_sys_fstatat(s->c->pfd, rec->hint, &st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st.st_ino != rec->lino || (uint64_t)st.st_dev != rec->ldev) {
		/* Not at its hint (removed, or moved without its record
		 * following): the push cannot find it here; sync_repair may. */
		pohm_debug("%s: not found at its hint; not pushed", rec->hint);
		stale_note(s, rec);
		return 0;
	}
	/* A stub counts only once written without the shim (it then becomes a
	 * conflict copy, push_known); an untouched one has nothing to send. */
	if ((rec->flags & POHM_J_STUB) ? !S_ISREG(st.st_mode) || pohm_stub_shape(&st)
				       : !pohm_journal_is_dirty(rec, &st) &&
					 !cache_writer_mapped_here(s->c, (uint64_t)st.st_dev,
								   (uint64_t)st.st_ino))
		return 0;	/* a file our writable mapping may have changed: push_known compares */
	if (s->held && s->held(s->arg, (uint64_t)st.st_dev, (uint64_t)st.st_ino))
		return 0;	/* open in the calling process: an fd of ours would drop its locks */
	if (s->defer && sync_defer(s, rec, &st))
		return 0;
	sync_add(s, rec->hint);
	return 0;
}

/* Is ino's file still not at its record's hint, read again (a sync by
 * hand: a fetch may have put its record meanwhile)?  1 or 0. */
static int still_stale(struct sync_ctx *s, uint64_t ino)
{
	struct pohm_jrec rec;
	struct stat st;
	int r;

	if (pohm_journal_get(&s->c->j, ino, &rec))
		return 0;	/* forgotten: unlinked since */
	r = pohm_sys_fstatat(s->c->pfd, rec.hint, &st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st.st_ino != rec.lino || (uint64_t)st.st_dev != rec.ldev;
	pohm_jrec_clear(&rec);
	return r;
}

/* Was key among the last round's stale files (d->seen)?  1 or 0. */
static int seen_before(const struct pohm_sync_defer *d, uint64_t key)
{
	uint32_t i;

	if (d->nseen > sizeof(d->seen) / sizeof(d->seen[0]))
		return 1;
	for (i = 0; i < d->nseen; i++)
		if (d->seen[i] == key)
			return 1;
	return 0;
}

/* The files a repair looks for, moved to the front of s->stale: those seen
 * stale the round before as well (pohmelfsd), or still stale when read
 * again (a sync by hand).  The round's set becomes d->seen.  Their count. */
static size_t stale_confirm(struct sync_ctx *s)
{
	struct pohm_sync_defer *d = s->defer;
	uint64_t now[sizeof(d->seen) / sizeof(d->seen[0])];
	size_t i, k = 0, max = sizeof(now) / sizeof(now[0]);
	struct stale t;

	for (i = 0; i < s->nstale && i < max; i++)
		now[i] = s->stale[i].key;
	for (i = 0; i < s->nstale; i++)
		if (d ? seen_before(d, s->stale[i].key) : still_stale(s, s->stale[i].ino)) {
			t = s->stale[k];
			s->stale[k++] = s->stale[i];
			s->stale[i] = t;
		}
	if (d) {
		d->nseen = (uint32_t)(s->nstale > max ? max + 1 : s->nstale);
		memcpy(d->seen, now, (s->nstale < max ? s->nstale : max) * sizeof(now[0]));
	}
	return k;
}

/* The stale files s->stale[from..to) read again and pushed when found. */
static void stale_push(struct sync_ctx *s, size_t from, size_t to)
{
	struct pohm_jrec rec;
	size_t i;

	for (i = from; i < to; i++)
		if (!pohm_journal_get(&s->c->j, s->stale[i].ino, &rec)) {
			sync_one(s, &rec);
			pohm_jrec_clear(&rec);
		}
	sync_flush(s);
}

/* The stale files a mark still holds for (rehintmiss.c) left out of
 * s->stale, their marks kept in keep.  The count of marks read. */
static size_t stale_unmarked(struct sync_ctx *s, struct cache_miss *keep)
{
	const struct cache_miss_ent *e;
	struct cache_miss old;
	struct pohm_jrec rec;
	size_t i, k = 0, had;

	if (cache_miss_load(s->c, &old) || !old.n) {
		cache_miss_free(&old);
		return 0;
	}
	for (i = 0; i < s->nstale; i++) {
		e = NULL;
		if (!pohm_journal_get(&s->c->j, s->stale[i].ino, &rec)) {
			e = cache_miss_holds(s->c, &old, &rec, s->stale[i].key);
			if (e && cache_miss_add(s->c, keep, &rec, 0, e))
				e = NULL;
			pohm_jrec_clear(&rec);
		}
		if (!e)
			s->stale[k++] = s->stale[i];
	}
	s->nstale = k;
	had = old.n;
	cache_miss_free(&old);
	return had;
}

/*
 * After a pass (pohmelfsd's rounds and the syncs by hand, never a host
 * process's exit: it walks the whole tree): files found not at their hints
 * are looked for by identity.  A directory move re-hints the records below
 * it (rehint.c), but a walk cut short (a kill, no fd, a journal error)
 * leaves some stale, and the push finds a file only by its hint; so the
 * whole local tree is walked (cache_rehint_all: each known entry whose
 * record's hint names nothing takes its path), and those files pushed.
 * Not for a file a complete repair did not find while nothing changed
 * around it since (rehintmiss.c: a file removed without the shim), nor
 * for one a round sees away from its hint for the first time.
 */
static void sync_repair(struct sync_ctx *s)
{
	struct cache_miss keep = { NULL, 0, 0 };
	size_t n, had;
	int r;

	had = stale_unmarked(s, &keep);
	n = stale_confirm(s);
	if (!s->defer && n < s->nstale) {
		/* A sync by hand: those found at their hints when read again. */
		s->repair = REPAIR_NO;
		stale_push(s, n, s->nstale);
	}
	if (!n) {
		if (keep.n != had)
			cache_miss_save(s->c, &keep);	/* some changed: looked for again */
		goto out;
	}
	r = cache_rehint_all(s->c);
	/* -ENAMETOOLONG: only paths no hint can hold were left out, and no
	 * walk ever finds a record's file there: complete for the marks. */
	if (r == -ENAMETOOLONG)
		r = 0;
	if (r)
		pohm_warn("looking for files not at their recorded names: %s", strerror(-r));
	s->repair = REPAIR_AFTER;
	s->miss = r ? NULL : &keep;	/* an incomplete walk marks nothing */
	stale_push(s, 0, n);
	if (!r || keep.n != had)
		cache_miss_save(s->c, &keep);
out:
	cache_miss_free(&keep);
}

/* A pass over every record (sync_one), then the repair when asked for. */
static int sync_pass(struct sync_ctx *s)
{
	int r = pohm_journal_each(&s->c->j, sync_one, s);

	sync_flush(s);
	if (!r && s->repair == REPAIR_COLLECT)
		sync_repair(s);
	free(s->stale);
	if (r)
		return r;
	return s->err ? s->err : s->pushed;
}

int pohm_cache_sync_others(struct pohm_cache *c, int (*held)(void *arg, uint64_t dev, uint64_t ino),
			   void *arg)
{
	struct sync_ctx s = { .c = c, .held = held, .arg = arg, .repair = REPAIR_NO };

	return sync_pass(&s);
}

int pohm_cache_sync_inos(struct pohm_cache *c, size_t n, const uint64_t *inos,
			 int (*held)(void *arg, uint64_t dev, uint64_t ino), void *arg)
{
	struct sync_ctx s = { .c = c, .held = held, .arg = arg, .repair = REPAIR_NO };
	struct pohm_jrec rec;
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		r = pohm_journal_get(&c->j, inos[i], &rec);
		if (r) {
			if (r != -ENOENT)	/* forgotten: unlinked since */
				s.err = r;
			continue;
		}
		sync_one(&s, &rec);
		pohm_jrec_clear(&rec);
	}
	sync_flush(&s);
	return s.err ? s.err : s.pushed;
}

int pohm_cache_sync_round(struct pohm_cache *c, uint64_t quiet_ns, struct pohm_sync_defer *d)
{
	struct sync_ctx s = { .c = c, .quiet_ns = quiet_ns, .defer = d, .repair = REPAIR_COLLECT };
	size_t i;
	int r;

	d->round++;
	r = sync_pass(&s);
	/* What this round did not leave again is pushed or clean: forget it, so
	 * that a later writer of it gets its own 4 periods. */
	for (i = 0; i < sizeof(d->e) / sizeof(d->e[0]); i++)
		if (d->e[i].ino && d->e[i].round != d->round)
			d->e[i].ino = 0;
	return r;
}

int pohm_cache_sync_all(struct pohm_cache *c)
{
	struct sync_ctx s = { .c = c, .repair = REPAIR_COLLECT };

	return sync_pass(&s);
}
