/*
 * fast.h — the hot path's test of an absolute path against the prefix,
 * inlined into every path wrapper (included by shim.h; not on its own).
 *
 * pohm_abs_fast_out(path) is 1 when path is certainly outside the prefix
 * and no ancestor of it, 0 when the classifier must decide.  The rule, for
 * each spelling of the prefix (the configured one, its realpath):
 *
 *   1. Find d, the first byte where path and the spelling differ (sixteen
 *      bytes at once, then eight at a time).  The bytes before d equal a
 *      normalised path, so they hold no "//", "/./" or "/../".
 *   2. The path leaves the spelling at d for good if its component there
 *      differs from the spelling's: path[d] is an ordinary byte (not '/',
 *      '.' or NUL), or path[d] ends the path's component ('/' or NUL) in the
 *      middle of one of the spelling's and that component does not end in
 *      '.' (it could be "." or "..", as "/tmp/." against "/tmp/.x").
 *      Anything else (equal through the spelling's end, "//", a '.' at d
 *      after '/' or '.', a trailing '/') goes to the classifier.
 *
 * Left at d, only a ".." can climb back (pathclass.h, "Fast exit"), so the
 * path is outside when no ".." follows the earliest d.  The inline test
 * asks for more: no two dots in a row anywhere in the path (a name such as
 * "a..b" then goes to the classifier; never a wrong answer).  That drops
 * the shift to d and lets one pass serve both: the path's first 32 bytes
 * are two unaligned loads, compared with each spelling's first block (its
 * second only while the first is equal) and with '.' and NUL; the first
 * "pair of dots or NUL" bit decides.  About 50 instructions, no strlen, no
 * call, no lock, no thread-local read; a longer path scans on.
 *
 * pohm_cwd_fast_out(path) is the same for a relative path from the cwd,
 * from the cwd's summary word (cwd.c keeps it): the first component does
 * not lead towards the prefix and no ".." follows.
 *
 * Reads: never a block that crosses the path's page.  The inline test
 * reads the first 32 bytes only when they lie within the page (else the
 * classifier, which tries the word way first); the later scan uses
 * unaligned blocks while 17 bytes remain in the page, then aligned ones
 * (which never cross a page) and stop at the page's end: only the path's
 * first page is known readable (addr.c, pohm_addr_cached), so a path that
 * goes on into the next page is the slow path's, which checks each page.
 * Bytes read past the NUL are ignored.
 * Sanitizer builds, which would see those reads, compare byte by byte.
 */
#ifndef POHM_PRELOAD_FAST_H
#define POHM_PRELOAD_FAST_H

#include <string.h>

#if defined(__SSE2__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define POHM_FAST_WORDS 1
#include <emmintrin.h>
/* Sixteen bytes from p, any alignment (the caller keeps them in p's page). */
#define POHM_FAST_LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#endif

#define POHM_FAST_NONE ((size_t)-1)
/* Inlined into each wrapper, so that its fast path needs no stack frame. */
#define POHM_FAST_INLINE static inline __attribute__((always_inline))

/* 1 if c ends a component or is a '.' (no ordinary byte of a name). */
POHM_FAST_INLINE int pohm_fast_special(char c)
{
	return c == '/' || c == '.' || c == '\0';
}

/*
 * Step 2 for the first difference d (path[d] != f->path[d], d >= 1):
 * d if the path's component there differs from the spelling's, else
 * POHM_FAST_NONE.
 */
POHM_FAST_INLINE size_t pohm_fast_leaves(const char *path, const struct pohm_fast_spelling *f,
				      size_t d)
{
	char c = path[d], p = f->path[d];

	if (!pohm_fast_special(c))
		return d;
	if (path[d - 1] == '/' || path[d - 1] == '.' || p == '/' || p == '\0')
		return POHM_FAST_NONE;	/* "//", "/.", "." or "..", a trailing '/', both ends */
	return d;	/* the path's component ends inside the spelling's */
}

#ifdef POHM_FAST_WORDS
/* Step 1 and 2 for one spelling (path[0] == '/'). */
POHM_FAST_INLINE size_t pohm_fast_diverge(const char *path, const struct pohm_fast_spelling *f)
{
	size_t room, i, d;
	uint64_t x, y;

	path = pohm_launder(path);	/* whole words: the compiler must not know the object */
	room = 4096 - ((uintptr_t)path & 4095);	/* bytes to the page's end */

	for (i = 0;; i += 8) {
		if (__builtin_expect(i + 8 > room, 0))
			return POHM_FAST_NONE;	/* the word would cross a page */
		memcpy(&x, path + i, 8);
		memcpy(&y, f->path + i, 8);
		x ^= y;
		if (x)
			break;
		if (i + 8 > f->len)
			return POHM_FAST_NONE;	/* equal through the spelling's NUL */
	}
	d = i + (size_t)(__builtin_ctzll(x) >> 3);
	if (d > f->len)
		return POHM_FAST_NONE;		/* past the NUL both strings end at */
	return pohm_fast_leaves(path, f, d);
}

/*
 * Length of the first component of path (up to '/' or the NUL), by
 * aligned sixteen-byte blocks; POHM_FAST_NONE when it reaches the end of
 * path's page (the next page is not known readable: addr.c).
 */
POHM_FAST_INLINE size_t pohm_fast_comp_len(const char *path)
{
	const __m128i slash = _mm_set1_epi8('/'), zero = _mm_setzero_si128();
	size_t off = (uintptr_t)path & 15;
	const char *b = path - off;
	unsigned valid = 0xffffu << off, m;
	__m128i v;

	for (;; b += 16, valid = 0xffff) {
		v = _mm_load_si128((const __m128i *)(const void *)b);
		m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, slash),
							     _mm_cmpeq_epi8(v, zero))) & valid;
		if (m)
			return (size_t)(b - path) + (size_t)__builtin_ctz(m);
		if (!(((uintptr_t)b + 16) & 4095))
			return POHM_FAST_NONE;
	}
}

/*
 * pohm_fast_comp_len, from one unaligned block when the first component is
 * shorter than sixteen bytes and the block lies within the path's page
 * (most relative paths), else by the aligned scan.
 */
POHM_FAST_INLINE size_t pohm_fast_comp_len_first(const char *path)
{
	unsigned m;
	__m128i v;

	if (__builtin_expect(((uintptr_t)path & 4095) <= 4096 - 16, 1)) {
		v = POHM_FAST_LOAD(pohm_launder(path));
		m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('/')),
							     _mm_cmpeq_epi8(v, _mm_setzero_si128())));
		if (__builtin_expect(m != 0, 1))
			return (size_t)__builtin_ctz(m);
	}
	return pohm_fast_comp_len(path);
}

/* 1 if s holds "..", by aligned sixteen-byte blocks up to its NUL; also 1
 * ("not sure") when s goes on past its page's end (the next page is not
 * known readable: addr.c). */
POHM_FAST_INLINE int pohm_fast_dotdot(const char *s)
{
	const __m128i dot = _mm_set1_epi8('.'), zero = _mm_setzero_si128();
	size_t off = (uintptr_t)s & 15;
	const char *b = s - off;
	unsigned valid = 0xffffu << off, carry = 0, m, z, before;
	__m128i v;

	for (;; b += 16, valid = 0xffff) {
		v = _mm_load_si128((const __m128i *)(const void *)b);
		m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot)) & valid;
		z = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) & valid;
		before = (z - 1) & ~z;	/* the bytes before the NUL (all when none) */
		if (m & ((m << 1) | carry) & before)
			return 1;
		if (z)
			return 0;
		if (!(((uintptr_t)b + 16) & 4095))
			return 1;
		carry = m >> 15;
	}
}
#else
POHM_FAST_INLINE size_t pohm_fast_diverge(const char *path, const struct pohm_fast_spelling *f)
{
	size_t d;

	for (d = 0; path[d] == f->path[d]; d++)
		if (!path[d])
			return POHM_FAST_NONE;
	return pohm_fast_leaves(path, f, d);
}

POHM_FAST_INLINE int pohm_fast_dotdot(const char *s)
{
	return strstr(s, "..") != NULL;
}

POHM_FAST_INLINE size_t pohm_fast_comp_len(const char *path)
{
	size_t n = 0;

	while (path[n] && path[n] != '/')
		n++;
	return n;
}

POHM_FAST_INLINE size_t pohm_fast_comp_len_first(const char *path)
{
	return pohm_fast_comp_len(path);
}
#endif

/* The general case: step 1 word by word, then the scan (from d - 1: the
 * byte before d may be the first '.' of a "..", as in "/tmp/.." against
 * "/tmp/.x"). */
static inline int pohm_abs_fast_out_any(const char *path)
{
	unsigned n = pohm_state.nfast;
	size_t d, from;

	if (!n || (from = pohm_fast_diverge(path, &pohm_state.fast[0])) == POHM_FAST_NONE)
		return 0;
	if (n > 1) {
		d = pohm_fast_diverge(path, &pohm_state.fast[1]);
		if (d == POHM_FAST_NONE)
			return 0;
		if (d < from)
			from = d;
	}
	return !pohm_fast_dotdot(path + from - 1);
}

#ifdef POHM_FAST_WORDS
/*
 * Steps 1 and 2 after the blocks up to i equal to spelling f's: the next
 * blocks, sixteen bytes at a time (a sibling of the prefix that shares
 * 32 bytes or more with it).  The path's blocks are unaligned
 * loads that never cross its page, the spelling's aligned ones within its
 * padded array.
 */
POHM_FAST_INLINE size_t pohm_fast_leaves_after(const char *path,
					       const struct pohm_fast_spelling *f, size_t i)
{
	size_t room = 4096 - ((uintptr_t)path & 4095), d;
	unsigned eq = 0xffffu;

	while (eq == 0xffffu) {
		if (i + 16 > f->len)
			return POHM_FAST_NONE;	/* equal through the NUL both end at */
		i += 16;
		if (i + 16 > room)
			return POHM_FAST_NONE;	/* the next block would cross a page */
		eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(path + i)),
			_mm_load_si128((const __m128i *)(const void *)(f->path + i))));
	}
	d = i + (size_t)__builtin_ctz(~eq);
	if (d > f->len)
		return POHM_FAST_NONE;		/* equal through the NUL both end at */
	return pohm_fast_leaves(path, f, d);
}

/* Bit i set when byte i of block v is NUL or starts a ".." (w: the block
 * one byte on, so that a pair across two blocks needs no carry). */
POHM_FAST_INLINE unsigned pohm_fast_events(__m128i v, __m128i w)
{
	const __m128i dot = _mm_set1_epi8('.');

	return (unsigned)_mm_movemask_epi8(
		_mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(v, dot), _mm_cmpeq_epi8(w, dot)),
			     _mm_cmpeq_epi8(v, _mm_setzero_si128())));
}

/* Bit i set when byte i of the 32 bytes v0, v1 equals c. */
POHM_FAST_INLINE unsigned pohm_fast_mask2(__m128i v0, __m128i v1, char c)
{
	const __m128i x = _mm_set1_epi8(c);

	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v0, x)) |
	       (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v1, x)) << 16;
}

/*
 * 1 if s reaches its NUL before any "..": sixteen bytes at a time while
 * they and the byte after stay within s's page, then the aligned scan.  A
 * pair of dots anywhere counts, even inside a name ("a..b"): the answer
 * is then "not certain", never wrong.
 */
POHM_FAST_INLINE int pohm_fast_nodots(const char *s)
{
	size_t room = 4096 - ((uintptr_t)s & 4095);
	unsigned m;

	for (;; s += 16, room -= 16) {
		if (__builtin_expect(room < 17, 0))
			return !pohm_fast_dotdot(s);	/* a pair from s[-1] was seen above */
		m = pohm_fast_events(POHM_FAST_LOAD(s), POHM_FAST_LOAD(s + 1));
		if (m)
			return s[__builtin_ctz(m)] == '\0';
	}
}

/*
 * Steps 1 and 2 for spelling f from the path's first two blocks v0, v1:
 * 1 if the path leaves the spelling for good.
 */
POHM_FAST_INLINE int pohm_fast_pair_out(const char *path, const struct pohm_fast_spelling *f,
					__m128i v0, __m128i v1)
{
	unsigned eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
		v0, _mm_load_si128((const __m128i *)(const void *)f->path)));
	size_t d;

	if (__builtin_expect(eq == 0xffffu, 0)) {
		if (f->len < 16)
			return 0;	/* equal through the NUL both end at */
		eq = 0xffffu | (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			v1, _mm_load_si128((const __m128i *)(const void *)(f->path + 16)))) << 16;
		if (eq == ~0u)
			return pohm_fast_leaves_after(path, f, 16) != POHM_FAST_NONE;
	}
	d = (size_t)__builtin_ctz(~eq);
	return d <= f->len && pohm_fast_leaves(path, f, d) != POHM_FAST_NONE;
}

/*
 * The whole test on the path's first 32 bytes, read as two blocks: the
 * path leaves each spelling (further blocks only while they equal the
 * spelling's) and holds no ".." anywhere (stricter than "none after the
 * first difference", so never wrong): bit i of the masks is set for a
 * NUL at i or dots at i and i + 1, and the lowest decides.  A longer path
 * scans on from byte 31 (a pair across bytes 31 and 32).  A path whose
 * first 32 bytes would cross a page (under 1 % of them) is left to the
 * caller's slow path (0), which asks pohm_abs_fast_out_full first.  No
 * call, so the hot wrappers need no stack frame.  Only with a prefix
 * (nfast >= 1: the callers test POHM_READY_ON or pohm_active first).
 */
POHM_FAST_INLINE int pohm_abs_fast_out(const char *path)
{
	__m128i v0, v1;
	unsigned m;

	path = pohm_launder(path);
	if (__builtin_expect(((uintptr_t)path & 4095) > 4096 - 32, 0))
		return 0;
	v0 = POHM_FAST_LOAD(path);
	v1 = POHM_FAST_LOAD(path + 16);
	if (!pohm_fast_pair_out(path, &pohm_state.fast[0], v0, v1))
		return 0;
	if (__builtin_expect(pohm_state.nfast > 1, 0) &&
	    !pohm_fast_pair_out(path, &pohm_state.fast[1], v0, v1))
		return 0;
	m = pohm_fast_mask2(v0, v1, '.');
	m = (m & (m >> 1)) | pohm_fast_mask2(v0, v1, '\0');
	if (__builtin_expect(!m, 0))
		return pohm_fast_nodots(path + 31);
	return path[__builtin_ctz(m)] == '\0';
}

/* Both ways: the block, else words (classify.c's first test; also
 * without a prefix, where nothing is certain). */
static inline int pohm_abs_fast_out_full(const char *path)
{
	return pohm_state.nfast && (pohm_abs_fast_out(path) || pohm_abs_fast_out_any(path));
}
#else
POHM_FAST_INLINE int pohm_fast_nodots(const char *s)
{
	return !pohm_fast_dotdot(s);
}

POHM_FAST_INLINE int pohm_abs_fast_out(const char *path)
{
	return pohm_abs_fast_out_any(path);
}

static inline int pohm_abs_fast_out_full(const char *path)
{
	return pohm_abs_fast_out_any(path);
}
#endif

POHM_FAST_INLINE int pohm_cwd_fast_out(const char *path)
{
	uint64_t w = __atomic_load_n(&pohm_cwd_fast, __ATOMIC_RELAXED);
	const struct pohm_pc_spelling *sp;
	unsigned s, depth;
	const char *c;
	size_t n, i;

	if (!(w & POHM_CWD_FAST_VALID) || path[0] == '.')
		return 0;	/* unknown, under, volatile; "./x", "../x": the walk decides */
	n = pohm_fast_comp_len_first(path);
	if (n == POHM_FAST_NONE)
		return 0;	/* runs past its page: the slow path checks it */
	depth = (unsigned)(w >> POHM_CWD_FAST_DEPTH_SHIFT) & 0xffffff;
	for (s = 0; s < POHM_PC_NSPELL; s++) {
		if (!(w & (1u << s)))
			continue;
		sp = &pohm_state.prefix.sp[s];
		if (sp->clen[depth] != n)
			continue;
		/* names are short: a byte loop beats a call of memcmp */
		for (c = sp->path + sp->off[depth], i = 0; i < n && c[i] == path[i]; i++)
			;
		if (i == n)
			return 0;	/* the first component leads towards it */
	}
	return !path[n] || pohm_fast_nodots(path + n);
}

#endif
