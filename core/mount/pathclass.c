/*
 * pathclass.c — lexical path classification against the prefix.
 * The model (positions as depth + matched components) is in pathclass.h.
 *
 * Sections: spellings of the prefix; the walk.
 */
#include "pathclass.h"

#include <errno.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

#if !defined(__SSE2__)
/* 0x80 in every byte of x that is zero, exactly (no false positives). */
static inline uint64_t zero_bytes(uint64_t x)
{
	const uint64_t low7 = 0x7f7f7f7f7f7f7f7full;

	return ~(((x & low7) + low7) | x | low7);
}
#endif

/*
 * path_is_clean(p, n): 1 if the path (n bytes) has no "//" and no "/."
 * anywhere: then normalising changes nothing, and a plain comparison with
 * the prefix decides.  Sixteen bytes at a time with SSE2 (eight with plain
 * words elsewhere); never reads past p[n], the NUL.
 */
#if defined(__SSE2__)
/* 1 if some byte i of the 16 at p is '/' and byte i+1 is '/' or '.'. */
static inline int slash_pair16(const char *p)
{
	const __m128i slash = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.');
	__m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 1));

	return _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, slash),
					       _mm_or_si128(_mm_cmpeq_epi8(b, slash),
							    _mm_cmpeq_epi8(b, dot)))) != 0;
}

__attribute__((unused))	/* only sanitizer builds use it (clean_len below) */
static int path_is_clean(const char *p, size_t n)
{
	char tmp[32];
	size_t i;

	if (n < 16) {		/* pad short paths so one block covers them */
		memset(tmp, 0, sizeof(tmp));
		memcpy(tmp, p, n);
		p = tmp;
		n = 16;
	}
	for (i = 0; i + 16 <= n; i += 16)
		if (slash_pair16(p + i))
			return 0;
	return i == n || !slash_pair16(p + n - 16);	/* the tail, overlapping */
}
#else
static int path_is_clean(const char *p, size_t n)
{
	const uint64_t slash = 0x2f2f2f2f2f2f2f2full, dot = 0x2e2e2e2e2e2e2e2eull;
	uint64_t w0, w1;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w0, p + i, 8);
		memcpy(&w1, p + i + 1, 8);
		if (zero_bytes(w0 ^ slash) & (zero_bytes(w1 ^ slash) | zero_bytes(w1 ^ dot)))
			return 0;
	}
	for (; i < n; i++)
		if (p[i] == '/' && (p[i + 1] == '/' || p[i + 1] == '.'))
			return 0;
	return 1;
}
#endif

/* 1 if the first n bytes of a and b are equal (a word at a time: most
 * paths differ from the prefix within the first component). */
static inline int same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return 0;
	}
	for (; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

#if defined(__SSE2__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/*
 * strlen and path_is_clean in one pass, for the hot path: aligned 16-byte
 * blocks (an aligned load never crosses a page, so the bytes it reads
 * around the string are harmless and masked off; sanitizer builds, which
 * would see them, take the two-pass version).  Returns 1 and sets *len
 * when the path is clean, 0 when some '/' is followed by '/' or '.'.
 */
static int clean_len(const char *path, size_t *len)
{
	const __m128i slash = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.');
	const __m128i zero = _mm_setzero_si128();
	size_t off = (uintptr_t)path & 15;
	const char *b = path - off;
	unsigned valid = 0xffffu << off, carry = 0, s, sd, z, before;
	__m128i v;

	for (;; b += 16, valid = 0xffff) {
		v = _mm_load_si128((const __m128i *)(const void *)b);
		s = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, slash)) & valid;
		sd = s | ((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot)) & valid);
		z = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) & valid;
		before = z ? (z & -z) - 1 : 0xffff;	/* the bytes before the NUL */
		if (((s << 1) | carry) & sd & before)
			return 0;	/* a '/' then '/' or '.' */
		if (z) {
			*len = (size_t)(b - path) + (size_t)__builtin_ctz(z);
			return 1;
		}
		carry = (s >> 15) & 1;
	}
}
#else
static int clean_len(const char *path, size_t *len)
{
	*len = strlen(path);
	return path_is_clean(path, *len);
}
#endif

int pohm_pc_fast_out(const struct pohm_pc_prefix *pf, const char *path)
{
	const struct pohm_pc_spelling *sp = &pf->sp[0];
	size_t n;

	if (!clean_len(path, &n))
		return 0;

	/* under, an ancestor, or a sibling like "/p.x": the walk decides */
	if (same_bytes(path, sp->path, n < sp->len ? n : sp->len))
		return 0;
	if (pf->nsp > 1 && same_bytes(path, sp[1].path, n < sp[1].len ? n : sp[1].len))
		return 0;
	return 1;
}

int pohm_pc_fast_out_rel(const struct pohm_pc_prefix *pf, const struct pohm_pc_pos *pos,
			 const char *path)
{
	const struct pohm_pc_spelling *sp;
	size_t n;
	unsigned s;

	if (path[0] == '.' || path[0] == '/' || !path[0])
		return 0;	/* "./x", "../x", "": let the walk decide */
	for (n = 1; path[n] && path[n] != '/'; n++)
		;
	for (s = 0; s < pf->nsp; s++) {
		sp = &pf->sp[s];
		if (pos->match[s] == sp->ncomp)
			return 0;	/* the base is under the prefix */
		if (pos->match[s] == pos->depth && sp->clen[pos->depth] == n &&
		    same_bytes(sp->path + sp->off[pos->depth], path, n))
			return 0;	/* the first component leads towards it */
	}
	/* Off every spelling after the first component: only ".." comes back. */
	return !path[n] || !strchr(path + n, '.') || !strstr(path + n, "..");
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
		if (!(flags & POHM_PC_FULL) && pohm_pc_fast_out(pf, s))
			return POHM_PC_OUT;
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
