/*
 * fsck.c — check and repair (fsck.h): the driver and the replica checks
 * (every group's copy of every key compared with the committed one, and
 * the repairs that bring the groups in line).  The issue reports and the
 * committed view of every object are fsck_view.c, the namespace checks
 * fsck_ns.c.
 *
 * Sections: filling and freeing the view · replicas · driver.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_int.h"
#include "store.h"
#include "sys.h"
#include "wire.h"

/* ---------------------------------------------------------------- filling and freeing the view */

static int scan_fn(void *arg, const char *key, const void *data, size_t len)
{
	struct fsck *f = arg;

	f->res->objects++;
	f->read_bytes += len;
	fk_progress(f, 0, f->res->objects, 0);
	return fk_add(f, key, data, len, 0);
}

static void view_free(struct fsck *f)
{
	size_t i;

	for (i = 0; i < f->nslot; i++)
		free(f->slot[i].key);
	for (i = 0; i < f->nino; i++)
		pohm_inode_clear(&f->ino[i].in);
	for (i = 0; i < f->nbk; i++)
		pohm_bucket_clear(&f->bk[i].bk);
	for (i = 0; i < f->nmap; i++)
		pohm_map_clear(&f->map[i].m);
	free(f->map);
	f->map = NULL;
	f->nmap = f->cmap = 0;
	free(f->slot);
	free(f->ino);
	free(f->bk);
	free(f->ch);
	f->slot = NULL;
	f->ino = NULL;
	f->bk = NULL;
	f->ch = NULL;
	f->nslot = f->used = f->nino = f->nbk = f->nch = 0;
	f->cino = f->cbk = f->cch = 0;
}

/* ---------------------------------------------------------------- replicas */

struct pending {
	char key[POHM_KEY_MAX];
	uint8_t id[POHM_ID_SIZE];
	enum pohm_fsck_class cls;
	enum pohm_fsck_sev sev;
	int kind;			/* 0 CAS object, 1 chunk, 2 marker (delete by id) */
	int minority;			/* kind 1: fewer than a majority of the groups hold it */
	uint8_t sum[64];		/* kind 1: sha512 of the committed object's bytes */
	char what[240];
};

struct rep {
	struct fsck *f;
	struct pending *p;
	size_t n, cap;
	uint32_t bad_group;		/* groups already reported unreadable (bit per index) */
	int err;
};

static int is_marker(const struct pohm_iter_copy *cp)
{
	return !cp->status && cp->len == POHM_IO_MARKER_LEN &&
	       !memcmp(cp->data, pohm_io_absent_marker, POHM_IO_MARKER_LEN);
}

static void pend(struct rep *r, const char *key, const uint8_t *id, enum pohm_fsck_class cls,
		 enum pohm_fsck_sev sev, int kind, const char *what)
{
	struct pending *p;

	if (fk_grow((void **)&r->p, r->n, &r->cap, sizeof(*r->p))) {
		r->err = -ENOMEM;
		return;
	}
	p = &r->p[r->n++];
	snprintf(p->key, sizeof(p->key), "%s", key);
	memcpy(p->id, id, POHM_ID_SIZE);
	p->cls = cls;
	p->sev = sev;
	p->kind = kind;
	p->minority = 0;
	memset(p->sum, 0, sizeof(p->sum));
	snprintf(p->what, sizeof(p->what), "%s", what);
}

/* The key an object's copies claim (checked against its id), or "" and -ENOENT. */
static int obj_key(struct fsck *f, const struct pohm_iter_obj *o, char *key, uint8_t *type)
{
	unsigned g;

	key[0] = 0;
	for (g = 0; g < o->ncopies; g++) {
		const struct pohm_iter_copy *cp = &o->copy[g];
		struct pohm_obj_hdr h;

		if (cp->status || pohm_obj_peek(&h, cp->data, cp->len))
			continue;
		if (pohm_iter_key_is(f->c, o->id, h.key)) {
			memcpy(key, h.key, POHM_KEY_MAX);
			*type = h.type;
			return 0;
		}
	}
	return -ENOENT;
}

/* The present content most groups hold (ties: the newest stamp). */
static int most_held(const struct pohm_cas_vote *v, unsigned n)
{
	unsigned i, j, best_n = 0, cnt;
	int best = -1;

	for (i = 0; i < n; i++) {
		if (v[i].status)
			continue;
		for (j = 0, cnt = 0; j < n; j++)
			cnt += !v[j].status && !memcmp(v[j].csum, v[i].csum, 64);
		if (cnt > best_n || (cnt == best_n && pohm_time_cmp(&v[i].ts, &v[best].ts) > 0)) {
			best = (int)i;
			best_n = cnt;
		}
	}
	return best;
}

/* Compare one object's copies; add its committed version to the view. */
static int rep_obj(void *arg, const struct pohm_iter_obj *o)
{
	struct rep *r = arg;
	struct fsck *f = r->f;
	struct pohm_cas_vote v[POHM_MAX_GROUPS];
	char key[POHM_KEY_MAX], what[240], age[32];
	size_t off = 0;
	uint8_t type = 0;
	unsigned g, markers = 0, good = 0, corrupt = 0, differ = 0, missing = 0;
	int idx, chunk;

	f->res->objects++;
	memset(v, 0, sizeof(v));
	for (g = 0; g < o->ncopies; g++)
		f->read_bytes += o->copy[g].len;
	fk_progress(f, 0, f->res->objects, 0);
	for (g = 0; g < o->ncopies; g++) {
		const struct pohm_iter_copy *cp = &o->copy[g];

		v[g].ts = cp->ts;
		if (cp->status == -ENOENT || is_marker(cp)) {
			v[g].status = -ENOENT;
			markers += is_marker(cp);
		} else if (cp->status == -EILSEQ) {
			v[g].status = -EILSEQ;
			corrupt++;
		} else if (cp->status || cp->partial) {
			v[g].status = cp->status ? cp->status : -EFBIG;
			if (cp->status && !(r->bad_group & (1u << g))) {
				r->bad_group |= 1u << g;
				f->res->complete = 0;
				fk_issue(f, POHM_FSCK_UNCHECKED, POHM_FSCK_ERR, "", 0, 0,
					 "group %u: copies could not be read (%s): the check is incomplete",
					 cp->group, strerror(-cp->status));
			}
		} else {
			memcpy(v[g].csum, cp->csum, 64);
			good++;
		}
	}
	if (obj_key(f, o, key, &type)) {
		if (markers && !good) {
			/* Only markers (and gaps): a create that was rolled back. */
			uint64_t newest = 0;

			f->res->markers++;
			for (g = 0; g < o->ncopies; g++)
				if (is_marker(&o->copy[g]) && pohm_time_to_ns(&o->copy[g].ts) > newest)
					newest = pohm_time_to_ns(&o->copy[g].ts);
			if (newest + f->age < f->now)
				pend(r, "", o->id, POHM_FSCK_TOMBSTONE, POHM_FSCK_FIX, 2,
				     "absent marker past its age");
		} else if (corrupt && !good) {
			char hex[17];

			f->names_unsure++;	/* it may have been a bucket */

			for (g = 0; g < 8; g++)
				snprintf(hex + 2 * g, 3, "%02x", o->id[g]);
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, "", 0, 0,
				 "id %s...: every readable copy is corrupt (%u of %u groups; "
				 "whose object it was cannot be told)", hex, corrupt, o->ncopies);
		} else {
			f->res->foreign++;
		}
		return 0;
	}
	chunk = type == POHM_OBJ_CHUNK || type == POHM_OBJ_MAP;	/* immutable, written plainly */
	idx = pohm_cas_pick(v, o->ncopies, 1);
	if (chunk && idx < 0 && good)
		idx = most_held(v, o->ncopies);	/* immutable: any good copy is it */
	if (idx == -ENOENT) {
		/* Committed absent; a minority still holds content: roll it back. */
		if (good)
			pend(r, key, o->id, POHM_FSCK_DIVERGENT, POHM_FSCK_FIX, chunk,
			     "a minority of the groups holds an uncommitted version");
		return 0;
	}
	if (idx < 0) {
		if (type == POHM_OBJ_BUCKET || type == POHM_OBJ_INODE)
			f->names_unsure++;	/* no committed version in the view */
		if (!good && corrupt) {
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, 0, 0,
				 "every readable copy is corrupt");
		} else if (good) {
			pend(r, key, o->id, POHM_FSCK_DIVERGENT, POHM_FSCK_FIX, chunk,
			     "the groups disagree and no version has a majority");
		}
		return 0;
	}
	/* The committed version: what the namespace checks see. */
	r->err = fk_add(f, key, o->copy[idx].data, o->copy[idx].len, pohm_time_to_ns(&o->copy[idx].ts));
	if (r->err)
		return r->err;
	for (g = 0; g < o->ncopies; g++) {
		const struct pohm_iter_copy *cp = &o->copy[g];

		if (chunk && !v[g].status && memcmp(v[g].csum, v[idx].csum, 64))
			fk_chunk_alt(f, key, cp->data, cp->len);
		if (v[g].status == -EILSEQ) {
			off += (size_t)snprintf(what + off, sizeof(what) - off, "%sgroup %u corrupt",
						off ? ", " : "", cp->group);
		} else if (v[g].status == -ENOENT) {
			missing++;
			off += (size_t)snprintf(what + off, sizeof(what) - off, "%sgroup %u %s",
						off ? ", " : "", cp->group,
						is_marker(cp) ? "holds the absent marker" : "has no copy");
		} else if (!v[g].status && memcmp(v[g].csum, v[idx].csum, 64)) {
			int64_t d = (int64_t)(pohm_time_to_ns(&cp->ts) - pohm_time_to_ns(&o->copy[idx].ts));

			differ++;
			fk_age(age, sizeof(age), (uint64_t)(d < 0 ? -d : d));
			off += (size_t)snprintf(what + off, sizeof(what) - off,
						"%sgroup %u holds another version (%s %s)", off ? ", " : "",
						cp->group, age, d < 0 ? "older" : "newer, uncommitted");
		}
		if (off >= sizeof(what))
			off = sizeof(what) - 1;
	}
	if (corrupt)
		pend(r, key, o->id, POHM_FSCK_CHECKSUM, POHM_FSCK_FIX, chunk, what);
	else if (missing || differ)
		pend(r, key, o->id, POHM_FSCK_DIVERGENT, POHM_FSCK_FIX, chunk, what);
	if (chunk && (corrupt || missing || differ) && !r->err) {
		struct pending *p = &r->p[r->n - 1];

		for (g = 0, good = 0; g < o->ncopies; g++)
			good += !v[g].status && !memcmp(v[g].csum, v[idx].csum, 64);
		p->minority = good * 2 <= o->ncopies;
		memcpy(p->sum, v[idx].csum, 64);
	}
	return 0;
}

struct spread {
	const uint8_t *sum;
	uint8_t *data;
	size_t len;
};

static int spread_fn(void *arg, size_t i, const uint8_t *data, size_t len)
{
	struct spread *sp = arg;
	uint8_t sum[64];

	(void)i;
	if (sp->data)
		return 0;	/* one key: had it already */
	pohm_sha512(data, len, sum);
	if (memcmp(sum, sp->sum, 64))
		return -EBADMSG;	/* not the committed content: try another group */
	sp->data = malloc(len);
	if (!sp->data)
		return -ENOMEM;
	memcpy(sp->data, data, len);
	sp->len = len;
	return 0;
}

/*
 * An immutable object (chunk, chunk map) a committed inode names but that
 * fewer than a majority of the groups hold: a read (which wants a
 * majority) cannot repair it, so its committed content (checked against
 * the sum the scan saw) is written to every group again.
 */
static int spread_immutable(struct fsck *f, const struct pending *p, struct pohm_io_result *res)
{
	const char *keys[1] = { p->key };
	struct spread sp = { p->sum, NULL, 0 };
	int rc;

	rc = pohm_io_get_many(f->c, 1, keys, 1, 0, spread_fn, &sp, res);
	if (!rc && !sp.data)
		rc = -EIO;
	if (!rc)
		rc = pohm_io_write(f->c, p->key, strlen(p->key), sp.data, sp.len, NULL, res);
	free(sp.data);
	return rc;
}

/* Bring one key's groups in line with its committed version (read repair). */
static int rep_fix(struct fsck *f, const struct pending *p, char *note, size_t len)
{
	struct pohm_io_result *res = malloc(sizeof(*res));
	uint8_t *data = NULL, sum[64];
	size_t dlen = 0;
	unsigned g;
	int rc;

	if (!res)
		return -ENOMEM;
	note[0] = 0;
	if (p->kind == 2) {
		rc = pohm_iter_del(f->c, p->id);
		free(res);
		return rc;
	}
	if (p->kind == 1 && p->minority) {
		rc = spread_immutable(f, p, res);
		goto out;
	}
	if (p->kind == 1)
		rc = pohm_io_get(f->c, p->key, strlen(p->key), &data, &dlen, res);
	else
		rc = pohm_io_cas_get(f->c, p->key, strlen(p->key), &data, &dlen, sum, res);
	free(data);
	if (rc == -ENOENT && p->kind == 1)
		rc = -ENODATA;	/* immutable and named, yet no group answered with it */
	if (rc == -ENOENT)
		rc = 0;		/* committed absent: the minority copies were rolled back */
	for (g = 0; !rc && g < res->ngroups; g++)
		if (res->g[g].repair < 0)
			rc = res->g[g].repair;
out:
	if (res->notes)
		snprintf(note, len, "%.380s", res->msg);
	free(res);
	return rc;
}

static void rep_report(struct fsck *f, struct rep *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct pending *p = &r->p[i];
		char note[400];
		int act = fk_act(f, 0);

		note[0] = 0;
		if (f->repair)
			fk_progress(f, 1, i, r->n);
		if (p->kind == 1 && !fk_immutable_named(f, p->key)) {
			/* Nothing names it: spreading it would only spread garbage.  The
			 * garbage check reclaims it once it is older than the age. */
			fk_issue(f, p->cls, POHM_FSCK_INFO, p->key, 0, 0,
				 "%s; no committed inode names it: left to the garbage check", p->what);
			continue;
		}
		if (f->repair)
			act = fk_act(f, rep_fix(f, p, note, sizeof(note)));
		if (act < 0 && note[0])
			fk_issue(f, p->cls, p->sev, p->key, 0, act, "%s (%s)", p->what, note);
		else
			fk_issue(f, p->cls, p->sev, p->key, 0, act, "%s", p->what);
	}
}

/* Fill the view from every group's copies, and check them against each other. */
static int view_from_groups(struct fsck *f)
{
	struct pohm_iter_stats *st = calloc(1, sizeof(*st));
	struct rep r;
	unsigned g;
	int rc;

	if (!st)
		return -ENOMEM;
	memset(&r, 0, sizeof(r));
	r.f = f;
	rc = pohm_iter_all(f->c, rep_obj, &r, st);
	for (g = 0; g < st->ngroups; g++) {
		if (!st->g[g].error)
			continue;
		f->res->complete = 0;
		fk_issue(f, POHM_FSCK_UNCHECKED, POHM_FSCK_ERR, "", 0, 0,
			 "not every backend could be listed: %s", st->g[g].msg);
	}
	if (!rc)
		rc = r.err;
	if (!rc)
		rep_report(f, &r);
	free(r.p);
	free(st);
	return rc;
}

/* ---------------------------------------------------------------- driver */

static int one_pass(struct fsck *f)
{
	int rc;

	f->res->complete = 1;
	f->read_bytes = 0;
	if (f->c) {
		rc = view_from_groups(f);
	} else {
		rc = f->kv->ops->scan ? f->kv->ops->scan(f->kv->ctx, "", scan_fn, f) : -ENOTSUP;
	}
	if (rc) {
		fk_issue(f, POHM_FSCK_UNCHECKED, POHM_FSCK_ERR, "", 0, 0,
			 "the objects could not be listed: %s", strerror(-rc));
		view_free(f);
		return rc;
	}
	fk_check_namespace(f);
	view_free(f);
	f->unknown = 0;
	f->names_unsure = 0;
	f->lost_found = 0;
	f->have_lease = 0;
	return 0;
}

int pohm_fsck_run(struct pohm_ns *ns, const struct pohm_kv *kv, struct pohm_client *client,
		  const struct pohm_fsck_opts *o, struct pohm_fsck_result *res)
{
	struct pohm_fsck_result again;
	struct fsck f;
	int rc, loss;

	memset(res, 0, sizeof(*res));
	memset(&f, 0, sizeof(f));
	f.ns = ns;
	f.kv = kv;
	f.c = client;
	f.o = o;
	f.res = res;
	f.age = o->age_ns ? o->age_ns : POHM_FSCK_DEFAULT_AGE;
	f.repair = o->repair && !o->dry_run;
	/* One clock for both passes: what was young for the repair stays young
	 * for the check after it (else it would be "left" by crossing an age). */
	f.now = pohm_sys_real_ns();
	rc = one_pass(&f);
	if (rc || !f.repair)
		return rc == -ENOMEM ? rc : res->status;
	/* What the repair left: a second, read-only pass. */
	loss = res->status & POHM_FSCK_DATALOSS;
	memset(&again, 0, sizeof(again));
	f.res = &again;
	f.repair = 0;
	f.verify = 1;
	rc = one_pass(&f);
	res->status = again.status | loss;
	res->complete = again.complete;
	return rc == -ENOMEM ? rc : res->status;
}
