/*
 * test_nsmap.c — core/ns/nsmap.c, a file's chunk map, on the in-memory
 * store: a small map stays in the inode; a large one moves to map objects
 * that read back entry by entry; a commit rewrites only the objects whose
 * range it changes; a damaged or missing object is -EIO, never a hole;
 * entries past the size are holes; shrinking goes back inline.
 */
#include <errno.h>
#include <sys/stat.h>

#include "harness.h"
#include "kv.h"
#include "ns.h"
#include "ns_int.h"
#include "nsmap.h"
#include "nsobj.h"

#define CS	4096u	/* chunk_shift 12 */

static struct pohm_kv kv;

static struct pohm_ns *fresh(void)
{
	struct pohm_ns_opts o = { .fsid = "test", .bucket_max = 64, .intent_timeout_ms = 10000,
				  .chunk_shift = 12 };
	struct pohm_ns *ns = NULL;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	if (pohm_ns_open(&ns, &kv, &o))
		printf("# pohm_ns_open failed\n");
	return ns;
}

static void empty_file(struct pohm_inode *in, uint64_t ino)
{
	memset(in, 0, sizeof(*in));
	in->ino = ino;
	in->mode = S_IFREG | 0644;
	in->nlink = 1;
	in->chunk_shift = 12;
}

/* Chunks [lo, hi) at generation gen + index (checksum bytes = index). */
static struct pohm_chunk_set *chunks(uint64_t lo, uint64_t hi, uint64_t gen)
{
	struct pohm_chunk_set *s = calloc(hi - lo, sizeof(*s));
	uint64_t i;

	for (i = lo; s && i < hi; i++) {
		s[i - lo].index = i;
		s[i - lo].gen = gen + i;
		s[i - lo].len = CS;
		memset(s[i - lo].csum, (int)(i & 0xff), 64);
	}
	return s;
}

/* What a commit does around ns_map_apply: the new size goes into the inode. */
static int apply(struct pohm_ns *ns, struct pohm_inode *in, uint64_t size,
		 const struct pohm_chunk_set *set, size_t n)
{
	int r = ns_map_apply(ns, in, size, set, n);

	if (!r)
		in->size = size;
	return r;
}

/* The entry of chunk i through a fresh cursor: 0 or -errno. */
static int entry(struct pohm_ns *ns, const struct pohm_inode *in, uint64_t i,
		 struct pohm_chunkref *out)
{
	struct ns_map_cursor c;
	int r;

	ns_map_cursor_init(&c, in);
	r = ns_map_entry(ns, &c, i, out);
	ns_map_cursor_release(&c);
	return r;
}

/* Every entry [0, n) has generation gen + i (within the checked range). */
static int all_gens(struct pohm_ns *ns, const struct pohm_inode *in, uint64_t n, uint64_t gen)
{
	struct ns_map_cursor c;
	struct pohm_chunkref e;
	uint64_t i;
	int bad = 0;

	ns_map_cursor_init(&c, in);
	for (i = 0; i < n && !bad; i++)
		if (ns_map_entry(ns, &c, i, &e) || e.gen != gen + i || e.csum[0] != (i & 0xff))
			bad = 1;
	ns_map_cursor_release(&c);
	return !bad;
}

TEST(a_small_map_stays_in_the_inode)
{
	struct pohm_ns *ns = fresh();
	struct pohm_chunk_set *s = chunks(0, 3, 100);
	struct pohm_inode in;
	struct pohm_chunkref e;

	empty_file(&in, 42);
	EXPECT_EQ_INT(apply(ns, &in, 3 * CS - 100, s, 3), 0);
	EXPECT_EQ_INT(in.nmaps, 0);
	EXPECT_EQ_INT(in.nchunks, 3);
	EXPECT(all_gens(ns, &in, 3, 100));
	EXPECT_EQ_INT(entry(ns, &in, 5, &e), 0);
	EXPECT_EQ_U64(e.gen, 0);		/* past the end: a hole */
	pohm_inode_clear(&in);
	free(s);
	pohm_ns_close(ns);
}

TEST(a_large_map_lives_in_map_objects_and_reads_back)
{
	uint64_t n = POHM_MAP_INLINE_MAX + 44;	/* two map objects */
	struct pohm_ns *ns = fresh();
	struct pohm_chunk_set *s = chunks(0, n, 1000);
	struct pohm_inode in;
	struct pohm_chunkref e;

	empty_file(&in, 43);
	EXPECT_EQ_INT(apply(ns, &in, n * CS, s, n), 0);
	EXPECT_EQ_INT(in.nmaps, (n + POHM_MAP_SPAN - 1) / POHM_MAP_SPAN);
	EXPECT_EQ_INT(in.nchunks, 0);		/* not kept in the inode */
	EXPECT(in.maps && in.maps[0].gen && in.maps[1].gen);
	EXPECT(all_gens(ns, &in, n, 1000));
	EXPECT_EQ_INT(entry(ns, &in, n, &e), 0);
	EXPECT_EQ_U64(e.gen, 0);
	/* pohm_ns_map_load gives the same entries as an array. */
	EXPECT_EQ_INT(pohm_ns_map_load(ns, &in), 0);
	EXPECT_EQ_INT(in.nchunks, n);
	EXPECT(in.map_loaded && in.chunks[n - 1].gen == 1000 + n - 1);
	pohm_inode_clear(&in);
	free(s);
	pohm_ns_close(ns);
}

TEST(a_commit_rewrites_only_the_map_objects_it_changes)
{
	uint64_t n = POHM_MAP_INLINE_MAX + 44;
	struct pohm_ns *ns = fresh();
	struct pohm_chunk_set *s = chunks(0, n, 1000), *one = chunks(n - 2, n - 1, 5000);
	struct pohm_mapref before[2];
	struct pohm_inode in;
	struct pohm_chunkref e;

	empty_file(&in, 44);
	EXPECT_EQ_INT(apply(ns, &in, n * CS, s, n), 0);
	EXPECT_EQ_INT(in.nmaps, 2);
	memcpy(before, in.maps, sizeof(before));
	EXPECT_EQ_INT(apply(ns, &in, n * CS, one, 1), 0);
	EXPECT_EQ_INT(in.nmaps, 2);
	/* Object 0's range did not change: the same object; object 1 is new. */
	EXPECT_EQ_U64(in.maps[0].gen, before[0].gen);
	EXPECT(!memcmp(in.maps[0].csum, before[0].csum, 64));
	EXPECT(in.maps[1].gen != before[1].gen);
	EXPECT_EQ_INT(entry(ns, &in, n - 2, &e), 0);
	EXPECT_EQ_U64(e.gen, 5000 + n - 2);
	EXPECT(all_gens(ns, &in, n - 2, 1000));
	/* The old object 1 is still there for readers of the old inode. */
	in.maps[1] = before[1];
	EXPECT_EQ_INT(entry(ns, &in, n - 2, &e), 0);
	EXPECT_EQ_U64(e.gen, 1000 + n - 2);
	pohm_inode_clear(&in);
	free(s);
	free(one);
	pohm_ns_close(ns);
}

TEST(a_damaged_or_missing_map_object_is_EIO_never_a_hole)
{
	uint64_t n = POHM_MAP_INLINE_MAX + 44;
	struct pohm_ns *ns = fresh();
	struct pohm_chunk_set *s = chunks(0, n, 1000);
	struct pohm_inode in;
	struct pohm_chunkref e;
	uint64_t gen;

	empty_file(&in, 45);
	EXPECT_EQ_INT(apply(ns, &in, n * CS, s, n), 0);
	EXPECT_EQ_INT(in.nmaps, 2);
	/* A reference whose checksum does not match the stored object. */
	in.maps[1].csum[7] ^= 1;
	EXPECT_EQ_INT(entry(ns, &in, POHM_MAP_SPAN + 1, &e), -EIO);
	EXPECT_EQ_INT(entry(ns, &in, 1, &e), 0);	/* object 0 is fine */
	EXPECT_EQ_U64(e.gen, 1001);
	EXPECT_EQ_INT(pohm_ns_map_load(ns, &in), -EIO);
	in.maps[1].csum[7] ^= 1;
	/* A reference to a generation that was never written. */
	gen = in.maps[0].gen;
	in.maps[0].gen = gen + 12345;
	EXPECT_EQ_INT(entry(ns, &in, 0, &e), -EIO);
	in.maps[0].gen = gen;
	EXPECT_EQ_INT(entry(ns, &in, 0, &e), 0);
	pohm_inode_clear(&in);
	free(s);
	pohm_ns_close(ns);
}

TEST(entries_past_the_size_are_holes_and_the_last_is_cut)
{
	uint64_t n = POHM_MAP_INLINE_MAX + 44;
	struct pohm_ns *ns = fresh();
	struct pohm_chunk_set *s = chunks(0, n, 1000);
	struct pohm_inode in;
	struct pohm_chunkref e;

	empty_file(&in, 46);
	EXPECT_EQ_INT(apply(ns, &in, n * CS, s, n), 0);
	/* A truncate edits only the inode: the objects stay, valid below size. */
	in.size = (uint64_t)(POHM_MAP_SPAN + 3) * CS + 100;
	EXPECT_EQ_INT(entry(ns, &in, POHM_MAP_SPAN + 3, &e), 0);
	EXPECT_EQ_U64(e.gen, 1000 + POHM_MAP_SPAN + 3);
	EXPECT_EQ_INT(e.len, 100);
	EXPECT_EQ_INT(entry(ns, &in, POHM_MAP_SPAN + 4, &e), 0);
	EXPECT_EQ_U64(e.gen, 0);
	EXPECT_EQ_INT(e.len, 0);
	pohm_inode_clear(&in);
	free(s);
	pohm_ns_close(ns);
}

TEST(shrinking_under_the_inline_limit_goes_back_inline)
{
	uint64_t n = POHM_MAP_INLINE_MAX + 44;
	struct pohm_ns *ns = fresh();
	struct pohm_chunk_set *s = chunks(0, n, 1000);
	struct pohm_inode in;

	empty_file(&in, 47);
	EXPECT_EQ_INT(apply(ns, &in, n * CS, s, n), 0);
	EXPECT_EQ_INT(in.nmaps, 2);
	EXPECT_EQ_INT(apply(ns, &in, 10 * CS, NULL, 0), 0);
	EXPECT_EQ_INT(in.nmaps, 0);
	EXPECT_EQ_INT(in.nchunks, 10);
	EXPECT(all_gens(ns, &in, 10, 1000));	/* the entries kept from the objects */
	pohm_inode_clear(&in);
	free(s);
	pohm_ns_close(ns);
	pohm_kvmem_free(&kv);
}
