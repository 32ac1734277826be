/*
 * chunkmemo.c — chunkmemo.h's table: MEMO_SLOTS slots, a chunk's slot
 * chosen by (ino, index), allocated at the first chunk kept.
 *
 * A slot holds the chunk cut into (at most) MEMO_SEGS segments, a whole
 * number of SHA-512 blocks each: the keyed hash of each segment and the
 * SHA-512 state at each segment's start.  A push finds the first
 * segment whose keyed hash differs and goes on hashing from the state
 * before it: a database whose writes land late in a chunk (new pages at
 * the end) hashes only the part from the first changed segment on.
 */
#include "chunkmemo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"
#include "wire.h"

#define MEMO_SLOTS	128	/* ~176 KiB: a 128 MiB file's chunks at the default size,
				 * an 8 MiB one's at 64 KiB (decision 0072) */
#define MEMO_SEGS	16	/* 64 KiB segments of a 1 MiB chunk */

struct memo_mid {
	uint64_t h[8];		/* SHA-512 chaining state at a segment's start */
};

struct memo_slot {
	uint64_t ino, index;	/* ino 0: empty (no storage inode is 0) */
	uint64_t len;
	uint64_t ph[MEMO_SEGS][2];	/* polyhash of each segment */
	struct memo_mid mid[MEMO_SEGS];
	uint8_t sum[64];	/* SHA-512 of the whole */
};

/*
 * The process's table and key, guarded by memo_lock.  Only ever taken
 * with trylock: a push that finds it busy (another thread, or a fork
 * child of a process whose thread held it) hashes as if nothing were
 * remembered.  Copied by fork: what it says stays true of any bytes.
 */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct memo_slot *memo;
static struct pohm_polykey memo_key;

/* A file's chunks take consecutive slots from one its inode picks: a
 * file of up to MEMO_SLOTS chunks never evicts its own. */
static size_t slot_of(uint64_t ino, uint64_t index)
{
	uint64_t x = ino * 0x9e3779b97f4a7c15ULL;

	return (size_t)(((x ^ (x >> 29)) + index) % MEMO_SLOTS);
}

/* The segment size for n bytes: whole SHA-512 blocks, at most MEMO_SEGS segments. */
static size_t seg_of(size_t n)
{
	size_t s = (n + MEMO_SEGS - 1) / MEMO_SEGS;

	return s <= 128 ? 128 : (s + 127) & ~(size_t)127;
}

/* Under memo_lock: the table (allocated, the key drawn, at the first
 * use), or NULL without memory. */
static struct memo_slot *memo_table(void)
{
	uint64_t x[2];

	if (memo || !(memo = calloc(MEMO_SLOTS, sizeof(*memo))))
		return memo;
	if (pohm_sys_getrandom(x, sizeof(x), 0) != (ssize_t)sizeof(x)) {
		x[0] = pohm_sys_seed();
		x[1] = pohm_sys_seed() * 0x9e3779b97f4a7c15ULL;
	}
	memo_key.r[0] = pohm_polykey_of(x[0]);
	memo_key.r[1] = pohm_polykey_of(x[1]);
	return memo;
}

int pohm_chunk_memo_sum(uint64_t ino, uint64_t index, const void *p, size_t n, int keep,
			uint8_t out[64])
{
	const uint8_t *b = p;
	struct memo_slot *s, *now = NULL;
	struct pohm_sha512 h;
	size_t at = slot_of(ino, index), seg = seg_of(n), nseg = (n + seg - 1) / seg, i, first = 0;
	int known = 0;

	if (!n || !ino || pthread_mutex_trylock(&memo_lock))
		goto hash;
	s = memo || keep ? memo_table() : NULL;
	known = s && s[at].ino == ino && s[at].index == index && s[at].len == n;
	/* What the slot says, copied: the hashing runs without the lock. */
	if ((known || (s && keep)) && (now = malloc(sizeof(*now))) && known)
		*now = s[at];
	pthread_mutex_unlock(&memo_lock);
	if (!now)
		goto hash;
	/* The first segment whose bytes differ (keyed hash: the key is fixed
	 * once the table exists). */
	for (i = 0; i < nseg; i++) {
		uint64_t ph[2];

		pohm_polyhash(&memo_key, b + i * seg, i + 1 < nseg ? seg : n - i * seg, ph);
		if (known && first == i && ph[0] == now->ph[i][0] && ph[1] == now->ph[i][1])
			first++;
		memcpy(now->ph[i], ph, sizeof(ph));
	}
	if (known && first == nseg) {
		memcpy(out, now->sum, 64);
		free(now);
		return 1;
	}
	if (!known)
		first = 0;
	/* On from the state at the first changed segment's start. */
	pohm_sha512_init(&h);
	if (first) {
		memcpy(h.h, now->mid[first].h, sizeof(h.h));
		h.nbytes = first * seg;
	}
	for (i = first; i < nseg; i++) {
		memcpy(now->mid[i].h, h.h, sizeof(h.h));
		pohm_sha512_update(&h, b + i * seg, i + 1 < nseg ? seg : n - i * seg);
	}
	pohm_sha512_final(&h, out);
	now->ino = ino;
	now->index = index;
	now->len = n;
	memcpy(now->sum, out, 64);
	if (!pthread_mutex_trylock(&memo_lock)) {
		memo[at] = *now;
		pthread_mutex_unlock(&memo_lock);
	}
	free(now);
	return !!first;
hash:
	pohm_sha512(p, n, out);
	return 0;
}
