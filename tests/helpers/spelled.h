/*
 * spelled.h — the benchmarks' path at each of the 16 alignments a string
 * can have against a 16-byte block (bench_ops.c, bench_inproc.c).  The
 * rounds rotate through them, as a real program's paths come at any
 * alignment: the shim's path test reads whole blocks, so one fixed
 * alignment, set by the size of the environment, would make the figure
 * depend on it.
 */
#ifndef POHM_TESTS_SPELLED_H
#define POHM_TESTS_SPELLED_H

#include <stdio.h>

static char spelled[16][4096 + 64] __attribute__((aligned(64)));

/* Copy path to the 16 alignments. */
static void spell(const char *path)
{
	int k;

	for (k = 0; k < 16; k++)
		snprintf(spelled[k] + k, sizeof(spelled[k]) - 16, "%s", path);
}

/* The copy round i uses. */
#define SPELLED(i) (spelled[(i) % 16] + (i) % 16)

#endif
