/*
 * pathclass.h — lexical path classification against the prefix (DESIGN.md
 * §2 step 1).  Pure string work: no system call, no allocation, no global
 * state, so preload/ can run it on every path call and tests can drive it
 * alone.
 *
 * The model.  A path is a walk from "/" (absolute) or from a base
 * directory (relative).  Of a position we keep only
 *
 *   depth     the number of components below "/", and
 *   match[s]  how many leading components equal those of prefix spelling s
 *             (s = 0: the configured prefix, s = 1: its realpath).
 *
 * Pushing a component at depth d raises match[s] to d+1 when match[s] was
 * d and the component equals the prefix's component d+1; ".." lowers depth
 * and clamps every match[s] to it.  The position is under spelling s when
 * match[s] equals that spelling's component count; below it, the
 * components past the prefix form "rel", the path inside the prefix.
 * Nothing else about a position is ever needed: the components where a
 * path left the prefix are irrelevant, because only their number matters
 * when ".." climbs back.  So the cwd and every directory fd can be kept as
 * such a position, and a relative path from them is classified exactly.
 *
 * Fast exit: once a position is off every spelling (deeper than every
 * match[s] and under none), only a ".." can bring it back, so a walk that
 * finds no ".." in the rest of the string stops there: an absolute path
 * outside the prefix costs one prefix comparison and one strstr.
 *
 * A base whose depth is unknown (a directory fd the shim did not see
 * opened) starts at POHM_PC_DEEP: relative paths without ".." below it
 * are outside, and a ".." that climbs above it yields POHM_PC_ESCAPE (the
 * caller then finds the base's real path and walks again).
 *
 * Lexical means symlinks are not followed: "/p/link/.." is "/p" here,
 * whatever the kernel makes of it.  The caller's path is never modified.
 */
#ifndef POHM_CORE_PATHCLASS_H
#define POHM_CORE_PATHCLASS_H

#include <stddef.h>
#include <stdint.h>

#define POHM_PC_NSPELL	2		/* spellings of the prefix: as given, realpath */
#define POHM_PC_MAXLEN	4096		/* bytes of a prefix, with its NUL (PATH_MAX) */
#define POHM_PC_MAXCOMP	512		/* components of a prefix */
#define POHM_PC_DEEP	(1u << 30)	/* depth of a base that is somewhere unknown */

/* One spelling of the prefix: normalised, absolute, no trailing slash, not "/".
 * path last: what setting a short spelling writes (the counts, the first
 * entries of off and clen, the first bytes of path) spans ~2 KiB, not 5
 * (a page fault less in every process started, issue 23). */
struct pohm_pc_spelling {
	size_t len;			/* strlen(path) */
	unsigned ncomp;			/* number of components */
	uint16_t off[POHM_PC_MAXCOMP];	/* offset of component i in path */
	uint16_t clen[POHM_PC_MAXCOMP];	/* length of component i */
	char path[POHM_PC_MAXLEN];	/* e.g. "/home/u/pohmelfs" */
};

/* The prefix: one or two spellings (two when realpath differs).  nsp
 * first, beside sp[0]'s counts (same reason). */
struct pohm_pc_prefix {
	unsigned nsp;			/* 0 = no prefix configured */
	struct pohm_pc_spelling sp[POHM_PC_NSPELL];
};

/* A position (see the model above).  "/" is { 0, {0, 0} }. */
struct pohm_pc_pos {
	uint32_t depth;			/* components below "/"; >= POHM_PC_DEEP: unknown */
	uint16_t match[POHM_PC_NSPELL];	/* leading components equal to spelling s */
};

/* Result classes of a walk. */
enum pohm_pc_class {
	POHM_PC_OUT = 0,	/* outside the prefix, and not one of its ancestors */
	POHM_PC_IN,		/* the prefix root or something below it */
	POHM_PC_ANCESTOR,	/* "/" or another ancestor of a spelling of the prefix */
	POHM_PC_ESCAPE,		/* ".." climbed above a base of unknown depth */
};

/* Walk flags. */
#define POHM_PC_FULL	0x1	/* walk to the end even when outside (exact depth) */

/* What a walk found; rel itself is in the caller's buffer. */
struct pohm_pc_res {
	enum pohm_pc_class cls;
	int spelling;		/* POHM_PC_IN: which spelling the path is under */
	int trunc;		/* POHM_PC_IN: rel did not fit its buffer (len is then 0) */
	int slash;		/* the path ended in "/" (or "/." / "/..") */
	size_t len;		/* POHM_PC_IN: strlen(rel) */
};

/*
 * Normalise an absolute path into sp (collapse "//" and "/./", resolve ".."
 * lexically, drop a trailing slash) and index its components.
 * 0; -EINVAL if path is not absolute or normalises to "/";
 * -ENAMETOOLONG if it has more than POHM_PC_MAXLEN-1 bytes or
 * POHM_PC_MAXCOMP components.
 */
int pohm_pc_spelling_set(struct pohm_pc_spelling *sp, const char *path);

/*
 * Add a spelling to pf unless it equals one already there.
 * 0 or the error of pohm_pc_spelling_set; -ENOSPC if pf is full.
 */
int pohm_pc_prefix_add(struct pohm_pc_prefix *pf, const char *path);

/* The position of the prefix root in spelling s (depth = match[s] = ncomp). */
struct pohm_pc_pos pohm_pc_root_of(const struct pohm_pc_prefix *pf, int s);

/*
 * Walk path from *pos (an absolute path restarts at "/"), updating *pos.
 *
 * rel/relsz/rellen: a buffer for the path inside the prefix.  On entry
 * *rellen is the length of the base's rel (0 unless *pos is under the
 * prefix; rel need not be NUL-terminated then); on POHM_PC_IN, rel holds
 * the NUL-terminated result.  rel may be NULL (relsz 0) when only the
 * class is wanted.
 *
 * Without POHM_PC_FULL a walk that leaves the prefix for good stops early
 * and *pos is then meaningless; with it, *pos is exact.
 * Returns the class; details in *res.  Never fails.
 */
enum pohm_pc_class pohm_pc_walk(const struct pohm_pc_prefix *pf, struct pohm_pc_pos *pos,
				char *rel, size_t relsz, size_t *rellen, const char *path,
				unsigned flags, struct pohm_pc_res *res);

/*
 * The common case alone: 1 if the absolute path is certainly outside the
 * prefix and no ancestor of it (it differs from every spelling and has no
 * "//" or "/." that normalising could change), 0 if it needs the walk.
 * A string comparison and one SSE2 scan; pohm_pc_walk starts with it.
 * pf must have at least one spelling.
 */
int pohm_pc_fast_out(const struct pohm_pc_prefix *pf, const char *path);

/*
 * The same for a relative path from the position pos (a base that is not
 * under the prefix): 1 if certainly outside and no ancestor, 0 if it
 * needs the walk.  Looks at the first component only, then for "..".
 */
int pohm_pc_fast_out_rel(const struct pohm_pc_prefix *pf, const struct pohm_pc_pos *pos,
			 const char *path);

/* Class of a position: POHM_PC_IN (and *spelling), ANCESTOR or OUT. */
enum pohm_pc_class pohm_pc_pos_class(const struct pohm_pc_prefix *pf,
				     const struct pohm_pc_pos *pos, int *spelling);

#endif
