/*
 * pathclass.c — lexical path classification against the prefix.
 * The model (positions as depth + matched components) is in pathclass.h.
 *
 * Sections: spellings of the prefix; the walk.
 */
#include "pathclass.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------ spellings */

int pohm_pc_spelling_set(struct pohm_pc_spelling *sp, const char *path)
{
	const char *s, *e;
	size_t len = 0, n;
	unsigned nc = 0;

	if (!path || path[0] != '/')
		return -EINVAL;
	for (s = path; *s; s = e) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (nc) {
				nc--;
				len = sp->off[nc] - 1;
			}
			continue;
		}
		if (nc == POHM_PC_MAXCOMP || len + 1 + n >= POHM_PC_MAXLEN)
			return -ENAMETOOLONG;
		sp->path[len++] = '/';
		sp->off[nc] = (uint16_t)len;
		sp->clen[nc++] = (uint16_t)n;
		memcpy(sp->path + len, s, n);
		len += n;
	}
	if (!nc)
		return -EINVAL;
	sp->path[len] = '\0';
	sp->len = len;
	sp->ncomp = nc;
	return 0;
}

/* 1 if a is b or a lexical ancestor of b. */
static int spelling_covers(const struct pohm_pc_spelling *a, const struct pohm_pc_spelling *b)
{
	return a->len <= b->len && !memcmp(a->path, b->path, a->len) &&
	       (b->path[a->len] == '/' || b->path[a->len] == '\0');
}

int pohm_pc_prefix_add(struct pohm_pc_prefix *pf, const char *path)
{
	struct pohm_pc_spelling *sp;
	unsigned i;
	int r;

	if (pf->nsp == POHM_PC_NSPELL)
		return -ENOSPC;
	sp = &pf->sp[pf->nsp];
	r = pohm_pc_spelling_set(sp, path);
	if (r < 0)
		return r;
	for (i = 0; i < pf->nsp; i++) {
		if (pf->sp[i].len == sp->len && !memcmp(pf->sp[i].path, sp->path, sp->len))
			return 0;	/* the same spelling twice */
		/*
		 * One spelling inside the other (a prefix that is a symlink to
		 * its own parent) would make one path have two rels.
		 */
		if (spelling_covers(&pf->sp[i], sp) || spelling_covers(sp, &pf->sp[i]))
			return -EINVAL;
	}
	pf->nsp++;
	return 0;
}

struct pohm_pc_pos pohm_pc_root_of(const struct pohm_pc_prefix *pf, int s)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	const struct pohm_pc_spelling *a = &pf->sp[s], *b;
	unsigned t, m;

	pos.depth = a->ncomp;
	for (t = 0; t < pf->nsp; t++) {
		b = &pf->sp[t];
		for (m = 0; m < a->ncomp && m < b->ncomp; m++)
			if (a->clen[m] != b->clen[m] ||
			    memcmp(a->path + a->off[m], b->path + b->off[m], a->clen[m]))
				break;
		pos.match[t] = (uint16_t)m;
	}
	return pos;
}

enum pohm_pc_class pohm_pc_pos_class(const struct pohm_pc_prefix *pf,
				     const struct pohm_pc_pos *pos, int *spelling)
{
	unsigned s;
	int anc = 0;

	for (s = 0; s < pf->nsp; s++) {
		if (pos->match[s] == pf->sp[s].ncomp) {
			if (spelling)
				*spelling = (int)s;
			return POHM_PC_IN;
		}
		if (pos->match[s] >= pos->depth)
			anc = 1;
	}
	return anc ? POHM_PC_ANCESTOR : POHM_PC_OUT;
}

/* ------------------------------------------------------------ the walk */

/* Under which spelling pos is, or -1. */
static int pos_under(const struct pohm_pc_prefix *pf, const struct pohm_pc_pos *pos)
{
	unsigned s;

	for (s = 0; s < pf->nsp; s++)
		if (pos->match[s] == pf->sp[s].ncomp)
			return (int)s;
	return -1;
}

/* 1 if pos is off every spelling: not under one, not on the way to one. */
static int pos_off(const struct pohm_pc_prefix *pf, const struct pohm_pc_pos *pos)
{
	unsigned s;

	for (s = 0; s < pf->nsp; s++)
		if (pos->match[s] >= pos->depth || pos->match[s] == pf->sp[s].ncomp)
			return 0;
	return 1;
}

/* State of one walk, kept together so the helpers stay small. */
struct walk {
	const struct pohm_pc_prefix *pf;
	struct pohm_pc_pos *pos;
	char *rel;		/* output buffer (may be NULL) */
	size_t relsz;		/* its size */
	size_t len;		/* bytes of rel in use */
	int under;		/* spelling the position is under, or -1 */
	int trunc;		/* rel overflowed: its content is lost */
};

static void walk_push(struct walk *w, const char *c, size_t n)
{
	struct pohm_pc_pos *pos = w->pos;
	unsigned s;

	for (s = 0; s < w->pf->nsp; s++) {
		const struct pohm_pc_spelling *sp = &w->pf->sp[s];

		if (pos->match[s] == pos->depth && pos->depth < sp->ncomp &&
		    sp->clen[pos->depth] == n && !memcmp(sp->path + sp->off[pos->depth], c, n)) {
			pos->match[s]++;
			if (pos->match[s] == sp->ncomp) {
				w->under = (int)s;	/* entered the prefix root */
				w->len = 0;
				w->trunc = 0;
			}
		}
	}
	if (pos->depth < UINT32_MAX)
		pos->depth++;
	if (w->under < 0 || pos->depth <= w->pf->sp[w->under].ncomp || w->trunc)
		return;
	if (w->len + (w->len ? 1 : 0) + n + 1 > w->relsz) {
		w->trunc = 1;
		return;
	}
	if (w->len)
		w->rel[w->len++] = '/';
	memcpy(w->rel + w->len, c, n);
	w->len += n;
}

/* ".." — returns 0, or -1 when it climbs above a base of unknown depth. */
static int walk_pop(struct walk *w)
{
	struct pohm_pc_pos *pos = w->pos;
	unsigned s;

	if (pos->depth == 0)
		return 0;		/* "/.." is "/" */
	if (pos->depth == POHM_PC_DEEP)
		return -1;
	pos->depth--;
	for (s = 0; s < w->pf->nsp; s++)
		if (pos->match[s] > pos->depth)
			pos->match[s] = (uint16_t)pos->depth;
	if (w->under < 0)
		return 0;
	if (pos->depth < w->pf->sp[w->under].ncomp) {
		w->under = -1;		/* left the prefix */
		w->len = 0;
		w->trunc = 0;
		return 0;
	}
	if (!w->trunc) {
		while (w->len && w->rel[w->len - 1] != '/')
			w->len--;
		if (w->len)
			w->len--;
	}
	return 0;
}

enum pohm_pc_class pohm_pc_walk(const struct pohm_pc_prefix *pf, struct pohm_pc_pos *pos,
				char *rel, size_t relsz, size_t *rellen, const char *path,
				unsigned flags, struct pohm_pc_res *res)
{
	struct walk w = { pf, pos, rel, rel ? relsz : 0, *rellen, -1, 0 };
	const char *s = path, *e;
	size_t n;
	int slash = 0;

	res->cls = POHM_PC_OUT;
	res->spelling = -1;
	res->trunc = 0;
	res->slash = 0;
	res->len = 0;
	if (!pf->nsp)
		return POHM_PC_OUT;
	if (*s == '/') {
		pos->depth = 0;
		memset(pos->match, 0, sizeof(pos->match));
		w.len = 0;
	}
	w.under = pos_under(pf, pos);
	if (w.under < 0)
		w.len = 0;
	else if (w.len >= w.relsz)
		w.trunc = 1;
	if (!(flags & POHM_PC_FULL) && pos_off(pf, pos) && !strstr(s, ".."))
		return POHM_PC_OUT;
	for (; *s; s = e) {
		while (*s == '/')
			s++;
		if (!*s) {
			slash = 1;
			break;
		}
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		slash = 0;
		if (n == 1 && s[0] == '.') {
			slash = 1;
			continue;
		}
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			slash = 1;
			if (walk_pop(&w) < 0) {
				res->cls = POHM_PC_ESCAPE;
				return POHM_PC_ESCAPE;
			}
			continue;
		}
		walk_push(&w, s, n);
		if (!(flags & POHM_PC_FULL) && w.under < 0 && pos_off(pf, pos) && !strstr(e, ".."))
			return POHM_PC_OUT;
	}
	res->slash = slash;
	res->cls = pohm_pc_pos_class(pf, pos, &res->spelling);
	if (res->cls != POHM_PC_IN)
		return res->cls;
	res->trunc = w.trunc;
	if (!w.trunc && w.rel) {
		w.rel[w.len] = '\0';
		res->len = w.len;
	} else if (w.trunc) {
		res->len = 0;
	}
	*rellen = res->len;
	return POHM_PC_IN;
}
