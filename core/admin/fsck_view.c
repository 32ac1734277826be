/*
 * fsck_view.c — what fsck knows (fsck_int.h): the issue reports, and the
 * committed view of every object (slots by key, inodes, buckets, maps,
 * chunk sums), which the driver and the replica checks (fsck.c) and the
 * namespace checks (fsck_ns.c) read.  A file of its own so that fsck.c and
 * fsck_ns.c do not call each other in a circle (issue 20): both call down
 * into this one.
 *
 * Sections: issues · the view.
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

static const char *const class_names[POHM_FSCK_NCLASSES] = {
	[POHM_FSCK_DANGLING] = "dangling",	[POHM_FSCK_ORPHAN] = "orphan",
	[POHM_FSCK_NLINK] = "nlink",		[POHM_FSCK_INTENT] = "intent",
	[POHM_FSCK_DIVERGENT] = "divergent",	[POHM_FSCK_CHECKSUM] = "checksum",
	[POHM_FSCK_GARBAGE] = "garbage",	[POHM_FSCK_TOMBSTONE] = "tombstone",
	[POHM_FSCK_LOST] = "lost",		[POHM_FSCK_UNCHECKED] = "unchecked",
};

const char *pohm_fsck_class_name(enum pohm_fsck_class c)
{
	return (unsigned)c < POHM_FSCK_NCLASSES ? class_names[c] : "?";
}

/* ---------------------------------------------------------------- issues */

void fk_issue(struct fsck *f, enum pohm_fsck_class cls, enum pohm_fsck_sev sev, const char *key,
	      uint64_t ino, int action, const char *fmt, ...)
{
	struct pohm_fsck_issue is;
	va_list ap;

	memset(&is, 0, sizeof(is));
	is.cls = cls;
	is.sev = sev;
	is.ino = ino;
	is.action = action;
	is.verify = f->verify;
	snprintf(is.key, sizeof(is.key), "%s", key ? key : "");
	va_start(ap, fmt);
	vsnprintf(is.what, sizeof(is.what), fmt, ap);
	va_end(ap);
	if (sev == POHM_FSCK_INFO) {
		f->res->info[cls]++;
	} else {
		f->res->found[cls]++;
		/* A repaired issue no longer counts against the outcome; loss always does. */
		if (action != 1 || sev == POHM_FSCK_LOSS)
			f->res->status |= (int)sev;
	}
	if (action == 1)
		f->res->fixed++;
	else if (action < 0)
		f->res->failed++;
	if (f->o->report)
		f->o->report(f->o->arg, &is);
}

int fk_act(struct fsck *f, int rc)
{
	if (!f->repair)
		return f->o->repair && f->o->dry_run && !f->verify ? 2 : 0;
	return rc ? (rc < 0 ? rc : 1) : 1;
}

void fk_progress(struct fsck *f, int repairing, uint64_t done, uint64_t total)
{
	if (f->o->progress)
		f->o->progress(f->o->arg, repairing ? 1 : f->verify ? 2 : 0, done, total,
			       f->read_bytes);
}

void fk_age(char *buf, size_t len, uint64_t ns)
{
	double s = (double)ns / 1e9;

	if (s < 120)
		snprintf(buf, len, "%.1f s", s);
	else if (s < 7200)
		snprintf(buf, len, "%.0f min", s / 60);
	else
		snprintf(buf, len, "%.0f h", s / 3600);
}

/* ---------------------------------------------------------------- the view */

static uint64_t str_hash(const char *s)
{
	return pohm_fnv1a(POHM_NAME_BASIS, s);
}

static struct fk_slot *slot_of(const struct fsck *f, const char *key)
{
	size_t i = (size_t)(str_hash(key) & (f->nslot - 1));

	while (f->slot[i].key && strcmp(f->slot[i].key, key))
		i = (i + 1) & (f->nslot - 1);
	return &f->slot[i];
}

const struct fk_slot *fk_find(const struct fsck *f, const char *key)
{
	const struct fk_slot *s;

	if (!f->nslot)
		return NULL;
	s = slot_of(f, key);
	return s->key ? s : NULL;
}

static int slots_grow(struct fsck *f)
{
	struct fk_slot *old = f->slot;
	size_t n = f->nslot, i;

	f->nslot = n ? n * 2 : 1024;
	f->slot = calloc(f->nslot, sizeof(*f->slot));
	if (!f->slot) {
		f->slot = old;
		f->nslot = n;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (old[i].key)
			*slot_of(f, old[i].key) = old[i];
	free(old);
	return 0;
}

/* Make room for one more element of size sz in *arr (count n, capacity *cap). */
int fk_grow(void **arr, size_t n, size_t *cap, size_t sz)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*arr, (*cap ? *cap * 2 : 256) * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = *cap ? *cap * 2 : 256;
	return 0;
}

struct fk_inode *fk_inode(struct fsck *f, uint64_t ino)
{
	char key[POHM_KEY_MAX];
	const struct fk_slot *s;

	pohm_key_inode(key, ino);
	s = fk_find(f, key);
	return s && s->type == POHM_OBJ_INODE ? &f->ino[s->idx] : NULL;
}

struct fk_bucket *fk_bucket(struct fsck *f, uint64_t dir, unsigned depth, uint32_t index)
{
	char key[POHM_KEY_MAX];
	const struct fk_slot *s;

	pohm_key_bucket(key, dir, depth, index);
	s = fk_find(f, key);
	return s && s->type == POHM_OBJ_BUCKET ? &f->bk[s->idx] : NULL;
}

struct fk_map *fk_map(struct fsck *f, uint64_t ino, uint64_t index, uint64_t gen)
{
	char key[POHM_KEY_MAX];
	const struct fk_slot *s;

	pohm_key_map(key, ino, index, gen);
	s = fk_find(f, key);
	return s && s->type == POHM_OBJ_MAP ? &f->map[s->idx] : NULL;
}

/* sha512 of a chunk object's data part: 0, or -EPROTO. */
static int chunk_sum(const uint8_t *data, size_t len, uint64_t *ino, uint64_t *idx, uint64_t *gen,
		     uint32_t *dlen, uint8_t *sum)
{
	const uint8_t *d;
	size_t n;
	int r = pohm_chunk_decode(ino, idx, gen, &d, &n, data, len);

	if (r)
		return r;
	*dlen = (uint32_t)n;
	pohm_sha512(d, n, sum);
	return 0;
}

void fk_chunk_alt(struct fsck *f, const char *key, const uint8_t *data, size_t len)
{
	const struct fk_slot *s = fk_find(f, key);
	struct fk_chunk *c;
	uint64_t a, b, g;
	uint32_t n;
	uint8_t sum[64];
	unsigned i;

	if (s && s->type == POHM_OBJ_MAP) {
		struct fk_map *m = &f->map[s->idx];

		pohm_sha512(data, len, sum);
		for (i = 0; i < m->nalt; i++)
			if (!memcmp(m->csum[i], sum, 64))
				return;
		if (m->nalt < FK_ALT)
			memcpy(m->csum[m->nalt++], sum, 64);
		return;
	}
	if (!s || s->type != POHM_OBJ_CHUNK || chunk_sum(data, len, &a, &b, &g, &n, sum))
		return;
	c = &f->ch[s->idx];
	for (i = 0; i < c->nalt; i++)
		if (!memcmp(c->csum[i], sum, 64))
			return;
	if (c->nalt < FK_ALT)
		memcpy(c->csum[c->nalt++], sum, 64);
}

int fk_add(struct fsck *f, const char *key, const uint8_t *data, size_t len, uint64_t ts_ns)
{
	struct pohm_obj_hdr h;
	struct fk_slot *s;
	int r;

	if (pohm_obj_peek(&h, data, len)) {
		f->res->foreign++;
		return 0;
	}
	if ((f->used + 1) * 2 > f->nslot && (r = slots_grow(f)))
		return r;
	s = slot_of(f, key);
	if (s->key)
		return 0;	/* seen already (a store that lists a key twice) */
	switch (h.type) {
	case POHM_OBJ_INODE: {
		struct fk_inode *x;

		if ((r = fk_grow((void **)&f->ino, f->nino, &f->cino, sizeof(*f->ino))))
			return r;
		x = &f->ino[f->nino];
		memset(x, 0, sizeof(*x));
		if (pohm_inode_decode(&x->in, data, len)) {
			f->names_unsure++;	/* a directory's: its entries go unread */
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, 0, 0,
				 "inode object does not decode (malformed committed version)");
			return 0;
		}
		x->ts_ns = ts_ns;
		s->idx = (uint32_t)f->nino++;
		if (x->in.hdr.flags & POHM_OBJF_TOMBSTONE)
			f->res->tombstones++;
		else
			f->res->inodes++;
		break;
	}
	case POHM_OBJ_BUCKET: {
		struct fk_bucket *x;

		if ((r = fk_grow((void **)&f->bk, f->nbk, &f->cbk, sizeof(*f->bk))))
			return r;
		x = &f->bk[f->nbk];
		memset(x, 0, sizeof(*x));
		if (pohm_bucket_decode(&x->bk, data, len)) {
			f->names_unsure++;
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, 0, 0,
				 "bucket object does not decode (malformed committed version)");
			return 0;
		}
		x->ts_ns = ts_ns;
		s->idx = (uint32_t)f->nbk++;
		f->res->buckets++;
		break;
	}
	case POHM_OBJ_CHUNK: {
		struct fk_chunk *x;

		if ((r = fk_grow((void **)&f->ch, f->nch, &f->cch, sizeof(*f->ch))))
			return r;
		x = &f->ch[f->nch];
		memset(x, 0, sizeof(*x));
		if (chunk_sum(data, len, &x->ino, &x->idx, &x->gen, &x->len, x->csum[0])) {
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, 0, 0,
				 "chunk object does not decode");
			return 0;
		}
		x->nalt = 1;
		x->ts_ns = ts_ns;
		snprintf(x->key, sizeof(x->key), "%s", key);
		s->idx = (uint32_t)f->nch++;
		f->res->chunks++;
		break;
	}
	case POHM_OBJ_MAP: {
		struct fk_map *x;

		if ((r = fk_grow((void **)&f->map, f->nmap, &f->cmap, sizeof(*f->map))))
			return r;
		x = &f->map[f->nmap];
		memset(x, 0, sizeof(*x));
		if (pohm_map_decode(&x->m, data, len)) {
			fk_issue(f, POHM_FSCK_LOST, POHM_FSCK_LOSS, key, 0, 0,
				 "chunk-map object does not decode");
			return 0;
		}
		pohm_sha512(data, len, x->csum[0]);
		x->nalt = 1;
		x->ts_ns = ts_ns;
		snprintf(x->key, sizeof(x->key), "%s", key);
		s->idx = (uint32_t)f->nmap++;
		f->res->maps++;
		break;
	}
	case POHM_OBJ_LEASE:
		if (!strcmp(key, "l:rename") && !pohm_lease_decode(&f->lease, data, len)) {
			f->have_lease = 1;
			f->lease_ts = ts_ns;
		}
		f->res->leases++;
		s->idx = 0;
		break;
	default:
		/* A kind this fsck does not know (e.g. a newer format): leave it alone. */
		f->res->foreign++;
		f->unknown++;
		return 0;
	}
	s->key = strdup(key);
	if (!s->key)
		return -ENOMEM;
	s->type = h.type;
	f->used++;
	return 0;
}

