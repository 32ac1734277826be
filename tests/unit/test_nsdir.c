/*
 * test_nsdir.c — core/ns/nsdir.c, a directory's buckets, on the in-memory
 * store: the entry contract (insert, -EEXIST with the standing entry, get,
 * remove only of the given inode), splits that keep every name findable in
 * the one leaf that locate names, the CAS of a bucket (a stale copy loses
 * with -EAGAIN), and a damaged bucket read as -EIO, never as empty.
 */
#include <dirent.h>
#include <errno.h>

#include "harness.h"
#include "kv.h"
#include "ns.h"
#include "ns_int.h"
#include "nsobj.h"

static struct pohm_kv kv;

static struct pohm_ns *fresh(unsigned bucket_max)
{
	struct pohm_ns_opts o = { .fsid = "test", .bucket_max = bucket_max,
				  .intent_timeout_ms = 10000, .chunk_shift = 12 };
	struct pohm_ns *ns = NULL;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	if (pohm_ns_open(&ns, &kv, &o))
		printf("# pohm_ns_open failed\n");
	return ns;
}

static int insert(struct pohm_ns *ns, const char *name, uint64_t ino, struct pohm_dentry *existing)
{
	struct pohm_dentry e = { .name = (char *)name, .ino = ino, .type = DT_REG, .txid = ino };

	return ns_entry_insert(ns, POHM_ROOT_INO, &e, existing);
}

/* The inode name maps to in the root, 0 if none. */
static uint64_t ino_of(struct pohm_ns *ns, const char *name)
{
	struct pohm_dentry d;
	uint64_t ino;

	if (ns_entry_get(ns, POHM_ROOT_INO, name, &d))
		return 0;
	ino = d.ino;
	pohm_dentry_clear(&d);
	return ino;
}

TEST(insert_get_remove_contract)
{
	struct pohm_ns *ns = fresh(64);
	struct pohm_dentry ex;

	EXPECT_EQ_INT(insert(ns, "a", 100, NULL), 0);
	EXPECT_EQ_U64(ino_of(ns, "a"), 100);
	/* A second insert of the name: -EEXIST and the entry that stands. */
	memset(&ex, 0, sizeof(ex));
	EXPECT_EQ_INT(insert(ns, "a", 200, &ex), -EEXIST);
	EXPECT_EQ_U64(ex.ino, 100);
	EXPECT(ex.name && !strcmp(ex.name, "a"));
	pohm_dentry_clear(&ex);
	EXPECT_EQ_U64(ino_of(ns, "a"), 100);
	/* Remove only if the name still maps to the given inode. */
	EXPECT_EQ_INT(ns_entry_remove(ns, POHM_ROOT_INO, "a", 200), -ENOENT);
	EXPECT_EQ_U64(ino_of(ns, "a"), 100);
	EXPECT_EQ_INT(ns_entry_remove(ns, POHM_ROOT_INO, "a", 100), 0);
	EXPECT_EQ_U64(ino_of(ns, "a"), 0);
	EXPECT_EQ_INT(ns_entry_remove(ns, POHM_ROOT_INO, "a", 0), -ENOENT);
	/* ino 0 removes whatever the name maps to. */
	EXPECT_EQ_INT(insert(ns, "b", 300, NULL), 0);
	EXPECT_EQ_INT(ns_entry_remove(ns, POHM_ROOT_INO, "b", 0), 0);
	EXPECT_EQ_U64(ino_of(ns, "b"), 0);
	pohm_ns_close(ns);
}

struct walk {
	unsigned leaves, entries, over, misplaced;
	unsigned max;
};

/* Every entry of a leaf must be in the leaf that locate names for it. */
static int visit(struct pohm_ns *ns, struct ns_bucket_ref *ref, void *arg)
{
	struct walk *w = arg;
	struct ns_bucket_ref at;
	uint32_t i;

	w->leaves++;
	w->entries += ref->bk.n;
	if (ref->bk.n > w->max)
		w->over++;
	for (i = 0; i < ref->bk.n; i++) {
		if (ns_bucket_locate(ns, POHM_ROOT_INO, ref->bk.e[i].name, &at)) {
			w->misplaced++;
			continue;
		}
		if (at.bk.depth != ref->bk.depth || at.bk.index != ref->bk.index)
			w->misplaced++;
		ns_bucket_release(&at);
	}
	return 0;
}

TEST(splits_keep_every_name_in_the_leaf_locate_names)
{
	struct pohm_ns *ns = fresh(4);
	struct walk w = { .max = 4 };
	char name[32];
	int i, missing = 0;

	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "file-%d", i);
		EXPECT_EQ_INT(insert(ns, name, 1000 + (uint64_t)i, NULL), 0);
	}
	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "file-%d", i);
		if (ino_of(ns, name) != 1000 + (uint64_t)i)
			missing++;
	}
	EXPECT_EQ_INT(missing, 0);
	EXPECT_EQ_INT(ns_bucket_walk(ns, POHM_ROOT_INO, visit, &w), 0);
	EXPECT_EQ_INT(w.entries, 60);
	EXPECT(w.leaves >= 60 / 4);	/* it did split */
	EXPECT_EQ_INT(w.over, 0);	/* no leaf above bucket_max */
	EXPECT_EQ_INT(w.misplaced, 0);
	pohm_ns_close(ns);
}

TEST(a_stale_copy_of_a_bucket_loses_its_CAS)
{
	struct pohm_ns *ns = fresh(64);
	struct ns_bucket_ref a, b;

	EXPECT_EQ_INT(insert(ns, "x", 7, NULL), 0);
	EXPECT_EQ_INT(ns_bucket_locate(ns, POHM_ROOT_INO, "x", &a), 0);
	EXPECT_EQ_INT(ns_bucket_locate(ns, POHM_ROOT_INO, "x", &b), 0);
	EXPECT_EQ_INT(a.bk.n, 1);
	pohm_bucket_remove(&a.bk, 0);
	EXPECT_EQ_INT(ns_bucket_store(ns, &a), 0);
	/* b was read before a's write: its CAS must fail, not undo the remove. */
	b.bk.e[0].ino = 8;
	EXPECT_EQ_INT(ns_bucket_store(ns, &b), -EAGAIN);
	ns_bucket_release(&a);
	ns_bucket_release(&b);
	EXPECT_EQ_U64(ino_of(ns, "x"), 0);
	pohm_ns_close(ns);
}

TEST(a_damaged_bucket_is_EIO_never_empty)
{
	struct pohm_ns *ns = fresh(64);
	struct ns_bucket_ref ref;
	struct pohm_kv_val v = { 0 };
	struct pohm_dentry d;
	char key[POHM_KEY_MAX];

	EXPECT_EQ_INT(insert(ns, "x", 7, NULL), 0);
	pohm_key_bucket(key, POHM_ROOT_INO, 0, 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, key, "not a bucket", 12, NULL), 0);
	EXPECT_EQ_INT(ns_bucket_read_at(ns, POHM_ROOT_INO, 0, 0, &ref), -EIO);
	/* Lookups and inserts through it fail the same way: no write over it. */
	EXPECT_EQ_INT(ns_entry_get(ns, POHM_ROOT_INO, "x", &d), -EIO);
	EXPECT_EQ_INT(insert(ns, "y", 8, NULL), -EIO);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	EXPECT(v.len == 12 && !memcmp(v.data, "not a bucket", 12));
	pohm_kv_val_free(&v);
	/* A bucket that does not exist is -ENOENT. */
	EXPECT_EQ_INT(ns_bucket_read_at(ns, POHM_ROOT_INO, 3, 5, &ref), -ENOENT);
	pohm_ns_close(ns);
	pohm_kvmem_free(&kv);
}
