/*
 * fsck_ns.c — the namespace checks of fsck (fsck.h) on the committed view
 * built by fsck.c, and their repairs through core/ns's repair entry points.
 *
 * Order: the rename lease; every live directory's buckets walked from
 * (dir, 0, 0) as a reader walks them (entries counted only in leaves, and
 * in a SPLITTING bucket only for the halves whose child does not exist yet),
 * with intents, seals, splits and dangling entries handled on the way;
 * then every inode's names against its nlink (orphans, counts, parents);
 * chunks against the maps; tombstones and buckets nothing reaches.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck_int.h"
#include "store.h"
#include "wire.h"

static uint64_t ts_ns(const struct pohm_ts *t)
{
	return t->sec < 0 ? 0 : (uint64_t)t->sec * 1000000000ULL + t->nsec;
}

/* Age of something stamped at ns (0 = unknown: counts as old). */
static uint64_t age_of(const struct fsck *f, uint64_t ns)
{
	return ns && ns < f->now ? f->now - ns : (ns ? 0 : UINT64_MAX);
}

/* ---------------------------------------------------------------- lease */

static void check_lease(struct fsck *f, uint64_t tmo)
{
	char age[32];

	(void)tmo;
	if (!f->have_lease || !f->lease.txid)
		return;
	if (f->lease.expires > f->now) {
		fk_issue(f, POHM_FSCK_INTENT, POHM_FSCK_INFO, "l:rename", 0, 0,
			 "rename lease held (a directory move in progress)");
		return;
	}
	fk_age(age, sizeof(age), f->now - f->lease.expires);
	fk_issue(f, POHM_FSCK_INTENT, POHM_FSCK_FIX, "l:rename", 0,
		 fk_act(f, f->repair ? pohm_ns_clear_stale_lease(f->ns) : 0),
		 "rename lease of txid %016" PRIx64 " expired %s ago (its holder died)",
		 f->lease.txid, age);
}

/* ---------------------------------------------------------------- directories */

static void mark_busy(struct fsck *f, uint64_t ino)
{
	struct fk_inode *x = ino ? fk_inode(f, ino) : NULL;

	if (x)
		x->busy = 1;
}

static void check_intent(struct fsck *f, struct fk_inode *dir, const struct fk_bucket *b,
			 const struct pohm_dentry *e, uint64_t tmo)
{
	uint64_t age = age_of(f, e->i_time);
	const char *kind = e->intent == POHM_INTENT_MOVE ? "rename" : "rmdir";
	char a[32];

	mark_busy(f, e->ino);
	mark_busy(f, e->i_replaced);
	mark_busy(f, e->i_dir);
	dir->busy = 1;
	fk_age(a, sizeof(a), age == UINT64_MAX ? 0 : age);
	if (age < tmo) {
		fk_issue(f, POHM_FSCK_INTENT, POHM_FSCK_INFO, b->bk.hdr.key, e->ino, 0,
			 "%s of \"%s\" in progress (%s old)", kind, e->name, a);
		return;
	}
	fk_issue(f, POHM_FSCK_INTENT, POHM_FSCK_FIX, b->bk.hdr.key, e->ino,
		 fk_act(f, f->repair ? pohm_ns_settle_entry(f->ns, dir->in.ino, e->name) : 0),
		 "unfinished %s of \"%s\" in directory %" PRIu64 "%s%s (%s old): completed or "
		 "rolled back as the next client would", kind, e->name, dir->in.ino,
		 e->intent == POHM_INTENT_MOVE ? " to " : "",
		 e->intent == POHM_INTENT_MOVE && e->i_name ? e->i_name : "", a);
}

static void check_entry(struct fsck *f, struct fk_inode *dir, const struct fk_bucket *b,
			const struct pohm_dentry *e, uint64_t tmo)
{
	struct fk_inode *x = fk_inode(f, e->ino);
	struct pohm_inode cur;
	int rc = 0;

	/* A MOVED_IN mark (decision 0067) is a plain entry to fsck: its
	 * source's MOVE intent, if left, is that entry's check. */
	int intent = e->intent && e->intent != POHM_INTENT_MOVED_IN;

	dir->entries++;
	if (intent)
		check_intent(f, dir, b, e, tmo);
	if (x && !(x->in.hdr.flags & POHM_OBJF_TOMBSTONE)) {
		x->names++;
		x->name_dir = dir->in.ino;
		if (S_ISDIR(x->in.mode))
			dir->subdirs++;
		return;
	}
	if (x)
		x->names++;	/* a tombstone something still names: not reclaimed */
	if (intent)
		return;		/* the intent decides */
	if (!x && b->ts_ns && age_of(f, b->ts_ns) < tmo) {
		/*
		 * A new inode and its entry are written together (decision
		 * 0022): the entry of a create in flight may be read before its
		 * inode lands.  Only a bucket unchanged for the intent timeout
		 * (longer than a write stays undecided) says the create died.
		 */
		fk_issue(f, POHM_FSCK_DANGLING, POHM_FSCK_INFO, b->bk.hdr.key, e->ino, 0,
			 "entry \"%s\" in directory %" PRIu64 " names inode %" PRIu64
			 ", which is missing; the bucket changed recently (a create in progress?)",
			 e->name, dir->in.ino, e->ino);
		return;
	}
	if (f->repair && f->res->complete) {
		/* Read it again: the view may be older than the name. */
		rc = pohm_ns_getattr(f->ns, e->ino, &cur);
		if (!rc) {
			pohm_inode_clear(&cur);
			return;
		}
		rc = rc == -ENOENT ? pohm_ns_drop_entry(f->ns, dir->in.ino, e->name, e->ino) : rc;
		if (rc == -ENOENT)
			rc = 0;		/* gone meanwhile */
	}
	fk_issue(f, POHM_FSCK_DANGLING, POHM_FSCK_FIX, b->bk.hdr.key, e->ino,
		 f->repair && !f->res->complete ? -EAGAIN : fk_act(f, rc),
		 "entry \"%s\" in directory %" PRIu64 " names inode %" PRIu64 ", which is %s",
		 e->name, dir->in.ino, e->ino, x ? "deleted (a tombstone)" : "missing");
}

/*
 * The entries of bucket b as a reader sees them, and its state.  skip has
 * bit c set for each half (c = hash bit b's depth) whose split child exists:
 * a SPLITTING bucket's sealed entries are current only for a half without
 * its child (the child, made from them, is what writers change from then on:
 * core/ns/nsdir.c ns_bucket_locate), so those halves are checked in the child.
 */
static void check_leaf(struct fsck *f, struct fk_inode *dir, struct fk_bucket *b, uint64_t tmo,
		       unsigned skip)
{
	uint64_t age = age_of(f, b->bk.stamp);
	char a[32];
	uint32_t i;

	fk_age(a, sizeof(a), age == UINT64_MAX ? 0 : age);
	if (b->bk.state == POHM_BUCKET_SPLITTING || b->bk.state == POHM_BUCKET_SEALED ||
	    b->bk.state == POHM_BUCKET_SEALED_WITH) {
		const char *what = b->bk.state != POHM_BUCKET_SPLITTING ? "seal (rmdir)" : "split";

		dir->busy = 1;
		if (age < tmo)
			fk_issue(f, POHM_FSCK_INTENT, POHM_FSCK_INFO, b->bk.hdr.key, dir->in.ino, 0,
				 "%s in progress (%s old)", what, a);
		else
			fk_issue(f, POHM_FSCK_INTENT, POHM_FSCK_FIX, b->bk.hdr.key, dir->in.ino,
				 fk_act(f, f->repair ? pohm_ns_settle_bucket(f->ns, b->bk.dir, b->bk.depth,
									b->bk.index) : 0),
				 "unfinished %s of a bucket of directory %" PRIu64 " (%s old)", what,
				 dir->in.ino, a);
	}
	for (i = 0; i < b->bk.n; i++)
		if (!(skip & (1u << ((pohm_name_hash(b->bk.e[i].name) >> b->bk.depth) & 1))))
			check_entry(f, dir, b, &b->bk.e[i], tmo);
}

/* Walk dir's buckets from the root bucket, as readdir does. */
static void walk_dir(struct fsck *f, struct fk_inode *dir, uint64_t tmo)
{
	struct { uint8_t depth; uint32_t index; } stack[96];
	size_t top = 0;

	stack[top].depth = 0;
	stack[top++].index = 0;
	while (top) {
		struct fk_bucket *b;
		unsigned d;
		uint32_t idx;

		top--;
		d = stack[top].depth;
		idx = stack[top].index;
		b = fk_bucket(f, dir->in.ino, d, idx);
		if (!b) {
			if (d)
				f->names_unsure++;	/* a split's half: its names unread */
			if (d && f->res->complete)
				fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, "", dir->in.ino, 0,
					 "directory %" PRIu64 ": bucket %u:%u of a split is missing "
					 "(its entries are lost)", dir->in.ino, d, idx);
			continue;
		}
		if (b->reached)
			continue;
		b->reached = 1;
		if (b->bk.state == POHM_BUCKET_SPLIT && d < 40 && top + 2 <= 96) {
			stack[top].depth = (uint8_t)(d + 1);
			stack[top++].index = idx | (1u << d);
			stack[top].depth = (uint8_t)(d + 1);
			stack[top++].index = idx;
		} else if (b->bk.state == POHM_BUCKET_SPLITTING && d < 40 && top + 2 <= 96) {
			/* Mid-split: each half in its child once that exists (check_leaf). */
			unsigned c, have = 0;

			for (c = 0; c < 2; c++) {
				uint32_t ci = idx | (c ? 1u << d : 0);

				if (!fk_bucket(f, dir->in.ino, d + 1, ci))
					continue;
				have |= 1u << c;
				stack[top].depth = (uint8_t)(d + 1);
				stack[top++].index = ci;
			}
			check_leaf(f, dir, b, tmo, have);
		} else {
			check_leaf(f, dir, b, tmo, 0);
		}
	}
}

/* ---------------------------------------------------------------- inodes */

static int lost_found(struct fsck *f, uint64_t *out)
{
	uint64_t ino;
	int rc;

	if (f->lost_found) {
		*out = f->lost_found;
		return 0;
	}
	rc = pohm_ns_lookup(f->ns, POHM_ROOT_INO, "lost+found", &ino, NULL);
	if (rc == -ENOENT) {
		rc = pohm_ns_mkdir(f->ns, POHM_ROOT_INO, "lost+found", 0700, 0, 0, NULL);
		if (!rc || rc == -EEXIST)
			rc = pohm_ns_lookup(f->ns, POHM_ROOT_INO, "lost+found", &ino, NULL);
	}
	if (!rc)
		*out = f->lost_found = ino;
	return rc;
}

static int orphan_fix(struct fsck *f, const struct fk_inode *x, int keep, char *where, size_t len)
{
	char name[32];
	uint64_t lf;
	int rc;

	if (!keep)
		return f->res->complete ? pohm_ns_tombstone(f->ns, x->in.ino) : -EAGAIN;
	rc = lost_found(f, &lf);
	if (rc)
		return rc;
	snprintf(name, sizeof(name), "#%" PRIu64, x->in.ino);
	rc = pohm_ns_relink(f->ns, x->in.ino, lf, name);
	if (!rc && !S_ISDIR(x->in.mode) && x->in.nlink != 1)
		rc = pohm_ns_fix_links(f->ns, x->in.ino, 1, 0);
	snprintf(where, len, " → /lost+found/%s", name);
	return rc;
}

static void check_inode(struct fsck *f, struct fk_inode *x, uint64_t tmo)
{
	const struct pohm_inode *in = &x->in;
	int isdir = S_ISDIR(in->mode), root = in->ino == POHM_ROOT_INO;
	uint32_t want = isdir ? 2 + x->subdirs : x->names;
	uint64_t parent = root ? POHM_ROOT_INO : x->name_dir, changed;
	char where[64] = "", a[32];

	if (x->busy) {
		fk_issue(f, POHM_FSCK_NLINK, POHM_FSCK_INFO, in->hdr.key, in->ino, 0,
			 "link count not checked: part of an operation in progress");
		return;
	}
	if (!x->names && !root) {
		uint64_t t = ts_ns(&in->ctime), age;
		/* Marked by the unlink that took its last name (decision 0049):
		 * garbage like an empty one, never a lost file. */
		int keep = !(in->hdr.flags & POHM_OBJF_UNLINKED) &&
			   ((S_ISREG(in->mode) && in->size) || (isdir && x->entries) ||
			    S_ISLNK(in->mode));

		if (x->ts_ns > t)
			t = x->ts_ns;
		age = age_of(f, t);
		/*
		 * One with data is a lost file once no operation can still name it
		 * (the intent timeout); an empty one is the harmless leftover of a
		 * create that lost its race (nsops.c inode_discard): garbage,
		 * reclaimed at the garbage age.
		 */
		if (age < (keep ? tmo : f->age)) {
			fk_issue(f, POHM_FSCK_ORPHAN, POHM_FSCK_INFO, in->hdr.key, in->ino, 0,
				 keep ? "inode without a name, changed recently (a create in progress?)"
				 : in->hdr.flags & POHM_OBJF_UNLINKED ? "unlinked inode, young"
				      : "empty inode without a name (a create that lost a race?), young");
			return;
		}
		fk_age(a, sizeof(a), age == UINT64_MAX ? 0 : age);
		if (!keep && f->names_unsure) {
			/*
			 * Removed only when no name can exist: with a bucket this
			 * pass could not read, its name may be there (a marked
			 * inode is then a file whose bucket is damaged, not an
			 * unlinked one).  Left, said; the next run after the
			 * bucket's repair decides.
			 */
			fk_issue(f, POHM_FSCK_ORPHAN, POHM_FSCK_ERR, in->hdr.key, in->ino, 0,
				 "inode %" PRIu64 " (%" PRIu64 " bytes%s) has no name found (%s "
				 "unchanged), not removed: %" PRIu64 " bucket(s) or inode(s) could "
				 "not be read and may name it", in->ino, in->size,
				 in->hdr.flags & POHM_OBJF_UNLINKED ? ", marked unlinked" : "", a,
				 f->names_unsure);
			return;
		}
		{
			int act = fk_act(f, f->repair ? orphan_fix(f, x, keep, where, sizeof(where)) : 0);

			fk_issue(f, POHM_FSCK_ORPHAN, POHM_FSCK_FIX, in->hdr.key, in->ino, act,
				 "inode %" PRIu64 " (%s, %" PRIu64 " bytes, nlink %u) has no name "
				 "(%s unchanged)%s%s", in->ino, isdir ? "directory" :
				 S_ISREG(in->mode) ? "file" : S_ISLNK(in->mode) ? "symlink" : "special",
				 in->size, in->nlink, a, keep ? ": goes to /lost+found" :
				 in->hdr.flags & POHM_OBJF_UNLINKED ? ": unlinked, removed" : ": empty, removed",
				 act == 1 ? where : "");
		}
		return;
	}
	if (isdir && x->names > 1) {
		fk_issue(f, POHM_FSCK_NLINK, POHM_FSCK_ERR, in->hdr.key, in->ino, 0,
			 "directory %" PRIu64 " has %u names (not repaired: remove one by hand)",
			 in->ino, x->names);
		return;
	}
	if (in->nlink == want && (!isdir || in->hdr.parent == parent) &&
	    !(in->hdr.flags & POHM_OBJF_UNLINKED))
		return;
	changed = ts_ns(&in->ctime) > x->ts_ns ? ts_ns(&in->ctime) : x->ts_ns;
	if ((in->hdr.flags & POHM_OBJF_UNLINKED) && age_of(f, changed) < tmo) {
		/*
		 * A mark younger than an operation can stay undecided: the view
		 * may hold the bucket from before a one-wait unlink and the
		 * inode from after it.  Dropping the mark then would make the
		 * unlinked inode an unmarked one without a name, a lost file
		 * for the next run (/lost+found).  The next run decides.
		 */
		fk_issue(f, POHM_FSCK_NLINK, POHM_FSCK_INFO, in->hdr.key, in->ino, 0,
			 "marked unlinked recently (an unlink in progress?): not checked");
		return;
	}
	if (!isdir && in->nlink > want && age_of(f, changed) < tmo) {
		/*
		 * A link raises the count, then adds its name: the view may
		 * hold the inode from after the one and the bucket from before
		 * the other.  Lowering the count then leaves it one below the
		 * names once the entry lands, and a later unlink tombstones a
		 * file another name still has.  Too high is safe: next run.
		 */
		fk_issue(f, POHM_FSCK_NLINK, POHM_FSCK_INFO, in->hdr.key, in->ino, 0,
			 "nlink %u, the names say %u, changed recently (a link in progress?): "
			 "not lowered", in->nlink, want);
		return;
	}
	fk_issue(f, POHM_FSCK_NLINK, POHM_FSCK_FIX, in->hdr.key, in->ino,
		 fk_act(f, f->repair ? pohm_ns_fix_links(f->ns, in->ino, want, isdir ? parent : 0) : 0),
		 "inode %" PRIu64 ": nlink %u, the names say %u%s%s", in->ino, in->nlink, want,
		 isdir && in->hdr.parent != parent ? "; its parent is recorded wrong" : "",
		 in->hdr.flags & POHM_OBJF_UNLINKED ? "; marked unlinked (an unlink that lost "
		 "its race, or died: decision 0049), the mark goes" : "");
}

/* ---------------------------------------------------------------- chunks */

/* The map entry of chunk idx of a live regular inode x (inline or in its
 * map objects), or NULL when the committed map names none. */
static const struct pohm_chunkref *map_entry(struct fsck *f, const struct fk_inode *x, uint64_t idx)
{
	uint64_t span, mi;
	const struct fk_map *m;

	if (!x->in.nmaps)
		return idx < x->in.nchunks ? &x->in.chunks[idx] : NULL;
	span = x->in.map_span ? x->in.map_span : POHM_MAP_SPAN;
	mi = idx / span;
	if (mi >= x->in.nmaps || !x->in.maps[mi].gen)
		return NULL;
	m = fk_map(f, x->in.ino, mi, x->in.maps[mi].gen);
	if (!m || idx - mi * span >= m->m.n)
		return NULL;
	return &m->m.e[idx - mi * span];
}

static int live_file(const struct fk_inode *x)
{
	return x && !(x->in.hdr.flags & POHM_OBJF_TOMBSTONE) && S_ISREG(x->in.mode);
}

/* Is chunk c named by its inode's committed map?  *ref gets the entry. */
static int chunk_referenced(struct fsck *f, const struct fk_chunk *c, const struct fk_inode **xo,
			    const struct pohm_chunkref **ref)
{
	const struct fk_inode *x = fk_inode(f, c->ino);

	*xo = x;
	*ref = live_file(x) ? map_entry(f, x, c->idx) : NULL;
	return *ref && (*ref)->gen == c->gen;
}

/* Is map object m named by its inode? */
static int map_referenced(struct fsck *f, const struct fk_map *m, const struct fk_inode **xo)
{
	const struct fk_inode *x = fk_inode(f, m->m.ino);

	*xo = x;
	return live_file(x) && m->m.index < x->in.nmaps && x->in.maps[m->m.index].gen == m->m.gen;
}

int fk_immutable_named(struct fsck *f, const char *key)
{
	const struct fk_slot *s = fk_find(f, key);
	const struct pohm_chunkref *ref;
	const struct fk_inode *x;

	if (s && s->type == POHM_OBJ_CHUNK)
		return chunk_referenced(f, &f->ch[s->idx], &x, &ref);
	if (s && s->type == POHM_OBJ_MAP)
		return map_referenced(f, &f->map[s->idx], &x);
	return 1;
}

/* Delete an unreferenced immutable object once it is old enough. */
static void reclaim(struct fsck *f, const char *key, uint64_t ino, uint64_t ts, int gc_ok,
		    const struct fk_inode *x, const char *kind)
{
	uint64_t age = age_of(f, ts);
	char a[32];

	if (age < f->age) {
		f->res->young++;
		fk_issue(f, POHM_FSCK_GARBAGE, POHM_FSCK_INFO, key, ino, 0,
			 "unreferenced %s, young (a replaced version, or a write in progress "
			 "or stopped mid-way)", kind);
		return;
	}
	if (!gc_ok) {
		fk_issue(f, POHM_FSCK_GARBAGE, POHM_FSCK_INFO, key, ino, 0,
			 "unreferenced %s kept: objects of a kind this fsck does not know exist",
			 kind);
		return;
	}
	fk_age(a, sizeof(a), age == UINT64_MAX ? 0 : age);
	fk_issue(f, POHM_FSCK_GARBAGE, POHM_FSCK_FIX, key, ino,
		 f->repair && !f->res->complete ? -EAGAIN :
		 fk_act(f, f->repair ? f->kv->ops->del(f->kv->ctx, key) : 0),
		 "%s no committed inode names (%s; inode %s)", kind, ts ? a : "age unknown",
		 !x ? "missing" : (x->in.hdr.flags & POHM_OBJF_TOMBSTONE) ? "deleted" : "live");
}

/* Every object a live inode's committed map names must exist. */
static void check_named(struct fsck *f, const struct fk_inode *x)
{
	char key[POHM_KEY_MAX];
	uint64_t span = x->in.map_span ? x->in.map_span : POHM_MAP_SPAN, i, n;
	unsigned k;

	if (x->in.nmaps) {
		for (i = 0; i < x->in.nmaps; i++) {
			const struct fk_map *m;

			if (!x->in.maps[i].gen)
				continue;
			m = fk_map(f, x->in.ino, i, x->in.maps[i].gen);
			if (!m) {
				pohm_key_map(key, x->in.ino, i, x->in.maps[i].gen);
				fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, x->in.ino, 0,
					 "inode %" PRIu64 ": chunk-map object %" PRIu64 " is missing in "
					 "every group (chunks %" PRIu64 "-%" PRIu64 " lost)", x->in.ino, i,
					 i * span, i * span + span - 1);
				continue;
			}
			for (k = 0; k < m->nalt; k++)
				if (!memcmp(m->csum[k], x->in.maps[i].csum, 64))
					break;
			if (k == m->nalt)
				fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, m->key, x->in.ino, 0,
					 "inode %" PRIu64 ": no copy of chunk-map object %" PRIu64
					 " matches the checksum the inode records", x->in.ino, i);
		}
	}
	n = x->in.nmaps ? x->in.nmaps * span : x->in.nchunks;
	for (i = 0; i < n; i++) {
		const struct pohm_chunkref *ref = map_entry(f, x, i);

		if (!ref || !ref->gen || ref->gen == POHM_GEN_INLINE)
			continue;	/* a hole, or inline data (decision 0023): no chunk object */
		pohm_key_chunk(key, x->in.ino, i, ref->gen);
		if (!fk_find(f, key))
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, x->in.ino, 0,
				 "inode %" PRIu64 ": chunk %" PRIu64 " (generation %016" PRIx64 ") its "
				 "map names is missing in every group (data lost)", x->in.ino, i,
				 ref->gen);
	}
}

static void check_chunks(struct fsck *f, int gc_ok)
{
	size_t i;
	unsigned k;

	for (i = 0; i < f->nch; i++) {
		const struct fk_chunk *c = &f->ch[i];
		const struct pohm_chunkref *ref;
		const struct fk_inode *x;

		if (!chunk_referenced(f, c, &x, &ref)) {
			reclaim(f, c->key, c->ino, c->ts_ns, gc_ok, x, "chunk generation");
			continue;
		}
		for (k = 0; k < c->nalt; k++)
			if (!memcmp(c->csum[k], ref->csum, 64))
				break;
		if (k == c->nalt || c->len < ref->len)
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, c->key, c->ino, 0,
				 "chunk %" PRIu64 " of inode %" PRIu64 ": no copy matches the "
				 "checksum its map records (data lost)", c->idx, c->ino);
	}
	for (i = 0; i < f->nmap; i++) {
		const struct fk_map *m = &f->map[i];
		const struct fk_inode *x;

		if (!map_referenced(f, m, &x))
			reclaim(f, m->key, m->m.ino, m->ts_ns, gc_ok, x, "chunk-map object");
	}
	if (!f->res->complete)
		return;
	for (i = 0; i < f->nino; i++)
		if (live_file(&f->ino[i]))
			check_named(f, &f->ino[i]);
}

/* ---------------------------------------------------------------- leftovers */

static void check_tombstones(struct fsck *f)
{
	size_t i;

	for (i = 0; i < f->nino; i++) {
		const struct fk_inode *x = &f->ino[i];
		uint64_t t = x->ts_ns ? x->ts_ns : ts_ns(&x->in.ctime), age = age_of(f, t);
		char a[32];

		if (!(x->in.hdr.flags & POHM_OBJF_TOMBSTONE) || x->names || age < f->age)
			continue;
		fk_age(a, sizeof(a), age == UINT64_MAX ? 0 : age);
		fk_issue(f, POHM_FSCK_TOMBSTONE, POHM_FSCK_FIX, x->in.hdr.key, x->in.ino,
			 f->repair && !f->res->complete ? -EAGAIN :
			 fk_act(f, f->repair ? f->kv->ops->del(f->kv->ctx, x->in.hdr.key) : 0),
			 "tombstone of inode %" PRIu64 " is %s old: reclaimed", x->in.ino, a);
	}
}

static void check_unreached(struct fsck *f)
{
	size_t i;

	for (i = 0; i < f->nbk; i++) {
		const struct fk_bucket *b = &f->bk[i];
		const struct fk_inode *d;
		uint64_t age;
		char a[32];

		if (b->reached)
			continue;
		d = fk_inode(f, b->bk.dir);
		if (d && !(d->in.hdr.flags & POHM_OBJF_TOMBSTONE) && S_ISDIR(d->in.mode)) {
			fk_issue(f, POHM_FSCK_GARBAGE, POHM_FSCK_INFO, b->bk.hdr.key, b->bk.dir, 0,
				 "bucket not reachable from its directory's root bucket "
				 "(written by a split that has not finished)");
			continue;
		}
		age = age_of(f, b->ts_ns ? b->ts_ns : b->bk.stamp);
		if (age < f->age)
			continue;
		fk_age(a, sizeof(a), age == UINT64_MAX ? 0 : age);
		if (!d && f->names_unsure) {
			/* Its directory's inode may be one that did not decode:
			 * these names are all that is left of it (s14). */
			fk_issue(f, POHM_FSCK_GARBAGE, POHM_FSCK_ERR, b->bk.hdr.key, b->bk.dir,
				 0, "bucket of directory %" PRIu64 ", which is missing (%u entries, "
				 "%s old), kept: %" PRIu64 " object(s) could not be read and may "
				 "be its inode", b->bk.dir, b->bk.n,
				 b->ts_ns || b->bk.stamp ? a : "age unknown", f->names_unsure);
			continue;
		}
		fk_issue(f, POHM_FSCK_GARBAGE, POHM_FSCK_FIX, b->bk.hdr.key, b->bk.dir,
			 f->repair && !f->res->complete ? -EAGAIN :
			 fk_act(f, f->repair ? f->kv->ops->del(f->kv->ctx, b->bk.hdr.key) : 0),
			 "bucket of removed directory %" PRIu64 " (%u entries, %s old)", b->bk.dir,
			 b->bk.n, b->ts_ns || b->bk.stamp ? a : "age unknown");
	}
}

/* ---------------------------------------------------------------- http_compat copies */

/*
 * Where the copy at path differs from the file (sum: sha512 of its size
 * bytes; NULL: there must be no copy): a description into what, 0 in line,
 * 1 not, -errno (could not tell).  *seen: some group holds a copy.  With
 * a client every group is looked up; without one the store is read.
 */
static int http_state(struct fsck *f, const char *path, const uint8_t *sum, uint64_t size,
		      char *what, size_t len, int *seen)
{
	struct pohm_io_result res;
	size_t off = 0;
	unsigned g;
	int r, bad = 0;

	*seen = 0;
	what[0] = 0;
	if (!f->c) {
		uint8_t *buf = malloc(size + 1), got[64];

		if (!buf)
			return -ENOMEM;
		r = f->kv->ops->read(f->kv->ctx, path, 0, buf, size + 1);
		if (r >= 0) {
			*seen = 1;
			pohm_sha512(buf, (size_t)r, got);
			bad = !sum || (uint64_t)r != size || memcmp(got, sum, 64);
			snprintf(what, len, "%s", sum ? "stale" : "should not exist");
			r = bad;
		} else if (r == -ENOENT) {
			snprintf(what, len, "missing");
			r = sum != NULL;
		}
		free(buf);
		return r;
	}
	r = pohm_io_lookup(f->c, path, strlen(path), POHM_LOOKUP_CSUM | POHM_LOOKUP_ALL, &res);
	if (r && r != -ENOENT)
		return r;
	for (g = 0; g < res.ngroups && off < len; g++) {
		const struct pohm_group_reply *gr = &res.g[g];
		const char *state;

		if (!gr->status && gr->has_csum)
			*seen = 1;
		if (!gr->status && gr->has_csum)
			state = !sum ? "should not exist" :
				!memcmp(gr->csum, sum, 64) && gr->size == size ? NULL : "stale";
		else if (gr->status == -ENOENT)
			state = sum ? "missing" : NULL;
		else
			return gr->status ? gr->status : -EIO;	/* unknown: not judged */
		if (!state)
			continue;
		bad = 1;
		off += (size_t)snprintf(what + off, len - off, "%sgroup %u: %s", off ? ", " : "",
					gr->group, state);
	}
	return bad;
}

/*
 * A writer writes a file's copy right after its commit (ns_http.h): a file
 * changed more recently than this may still have its copy on the way.
 */
#define HTTP_YOUNG_NS	(5 * 1000000000ULL)

/* One file's copy: checked against its committed content, repaired. */
static void check_http_file(struct fsck *f, const struct fk_inode *x, int *seen)
{
	char path[POHM_NS_HTTP_PATH], old[POHM_NS_HTTP_PATH], what[POHM_NS_HTTP_PATH + 200];
	char owhat[200];
	uint8_t sum[64], *buf = NULL;
	int r, want;
	ssize_t n;

	*seen = 0;
	r = pohm_ns_http_key(f->ns, &x->in, path, &want);
	if (r)
		return;		/* no name to follow (it is checked as an orphan) */
	if (want) {
		buf = malloc((size_t)x->in.size);
		if (!buf)
			return;
		n = pohm_ns_read(f->ns, &x->in, 0, buf, (size_t)x->in.size);
		if (n != (ssize_t)x->in.size) {
			free(buf);
			return;		/* unreadable data is reported by the chunk checks */
		}
		pohm_sha512(buf, (size_t)x->in.size, sum);
		free(buf);
	}
	r = http_state(f, path, want ? sum : NULL, x->in.size, what, sizeof(what), seen);
	if (r >= 0 && !pohm_ns_http_old_key(f->ns, &x->in, old) && strcmp(old, path)) {
		int at_old = 0, o = http_state(f, old, NULL, 0, owhat, sizeof(owhat), &at_old);

		if (o >= 0 && at_old) {
			/* A rename's copy left at the name the file had. */
			*seen = 1;
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%scopy left at %s",
				 r ? "; " : "", old);
			r = 1;
		}
	}
	if (r <= 0) {
		if (r < 0)
			fk_issue(f, POHM_FSCK_UNCHECKED, POHM_FSCK_INFO, path, x->in.ino, 0,
				 "http_compat copy of inode %" PRIu64 " not checked: %s", x->in.ino,
				 strerror(-r));
		return;
	}
	if (age_of(f, x->ts_ns) < HTTP_YOUNG_NS) {
		fk_issue(f, POHM_FSCK_DIVERGENT, POHM_FSCK_INFO, path, x->in.ino, 0,
			 "http_compat copy of inode %" PRIu64 " (%s) behind a recent change: its "
			 "writer may still be writing it", x->in.ino, what);
		return;
	}
	fk_issue(f, POHM_FSCK_DIVERGENT, POHM_FSCK_FIX, path, x->in.ino,
		 fk_act(f, f->repair ? pohm_ns_http_restore(f->ns, x->in.ino) : 0),
		 "http_compat copy of inode %" PRIu64 " (%" PRIu64 " bytes) at its path: %s",
		 x->in.ino, x->in.size, what);
}

/*
 * The path copies of every named regular file: checked when the handle
 * has http_compat, or — a tool that opened it without knowing — when the
 * storage holds objects without our header and one of them is the copy of
 * a file (then the fsid uses http_compat, and every file's copy counts).
 */
static int http_candidate(const struct fk_inode *x)
{
	return live_file(x) && x->names && !x->busy;
}

/*
 * A handle opened without http_compat (a tool that does not know) may be
 * checking an fsid that uses it: it does when objects without our header
 * exist and one is the copy of a file.  Then the handle is switched to
 * http_compat, so that completing a rename moves the copies too.
 */
static void detect_http(struct fsck *f)
{
	char path[POHM_NS_HTTP_PATH], what[200];
	int seen = 0;
	size_t i;

	if (pohm_ns_http_compat(f->ns) || !f->res->foreign)
		return;
	/*
	 * Before the directory walk (names are not counted yet, and a rename
	 * completed on the way should move its copy): by the names recorded in
	 * the inodes, which needs no lookup of the files' own names.
	 */
	for (i = 0; i < f->nino && !seen; i++)
		if (live_file(&f->ino[i]) &&
		    !pohm_ns_http_hint_key(f->ns, &f->ino[i].in, path) &&
		    http_state(f, path, NULL, 0, what, sizeof(what), &seen) < 0)
			seen = 0;
	if (seen)
		pohm_ns_set_http_compat(f->ns, 1);
}

/* The path copies of every named regular file, with http_compat. */
static void check_http(struct fsck *f)
{
	int seen;
	size_t i;

	if (!pohm_ns_http_compat(f->ns))
		return;
	for (i = 0; i < f->nino; i++)
		if (http_candidate(&f->ino[i]))
			check_http_file(f, &f->ino[i], &seen);
}

/* ---------------------------------------------------------------- all */

void fk_check_namespace(struct fsck *f)
{
	uint64_t tmo = pohm_ns_intent_timeout_ns(f->ns);
	size_t i;

	detect_http(f);
	check_lease(f, tmo);
	for (i = 0; i < f->nino; i++) {
		struct fk_inode *x = &f->ino[i];

		if (!(x->in.hdr.flags & POHM_OBJF_TOMBSTONE) && S_ISDIR(x->in.mode))
			walk_dir(f, x, tmo);
	}
	for (i = 0; i < f->nino; i++)
		if (!(f->ino[i].in.hdr.flags & POHM_OBJF_TOMBSTONE))
			check_inode(f, &f->ino[i], tmo);
	check_chunks(f, !f->unknown);
	check_http(f);
	check_tombstones(f);
	check_unreached(f);
}
