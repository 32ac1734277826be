/*
 * edge.h — th_at_edge: a unit test's input copied so that it ends where an
 * inaccessible page begins, so that a decoder reading one byte past what
 * it was given crashes the test even without a sanitizer.  Used by
 * test_node_decode (request bodies) and test_proto, test_fsck (replies).
 */
#ifndef POHM_TESTS_UNIT_EDGE_H
#define POHM_TESTS_UNIT_EDGE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TH_ARENA	65536u

/* The guarded arena: TH_ARENA readable bytes, then a PROT_NONE page.  Tests
 * run one at a time on the main thread; nothing else touches it. */
static uint8_t *th_arena;

/* Copy n bytes (n <= TH_ARENA) so that they end where the guard page begins. */
static __attribute__((unused)) const uint8_t *th_at_edge(const void *src, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);

	if (!th_arena) {
		uint8_t *m = mmap(NULL, TH_ARENA + (size_t)pg, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED || mprotect(m + TH_ARENA, (size_t)pg, PROT_NONE)) {
			printf("# no guarded arena\n");
			abort();
		}
		th_arena = m;
	}
	if (n > TH_ARENA)
		abort();
	if (n)
		memcpy(th_arena + TH_ARENA - n, src, n);
	return th_arena + TH_ARENA - n;
}

#endif
