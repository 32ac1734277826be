/* test_fsck.c — fsck and repair on the in-memory store: each namespace
 * class injected (dangling entries, orphans with and without data, wrong
 * link counts, unfinished intents left by a crash at every step of a
 * rename, a stale rename lease, unreferenced chunk generations, old
 * tombstones, lost chunks), found, repaired, and fsck clean afterwards.
 * The replica classes (divergent groups, checksum errors) need several
 * groups: tests/bats/ns_fsck.bats covers them on a local cluster. */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "edge.h"
#include "fsck.h"
#include "kv.h"
#include "ns.h"
#include "nsobj.h"
#include "sys.h"

static struct pohm_kv kv;

struct seen {
	int n[POHM_FSCK_NCLASSES];	/* issues (not INFO) of the first pass */
	int fixed[POHM_FSCK_NCLASSES];
	int dry[POHM_FSCK_NCLASSES];	/* action 2 */
	int left;			/* issues (not INFO) the verify pass found */
};

static void collect(void *arg, const struct pohm_fsck_issue *is)
{
	struct seen *s = arg;

	if (is->sev == POHM_FSCK_INFO)
		return;
	if (getenv("FSCK_VERBOSE"))
		printf("# %s%s [%s] %s (action %d)\n", is->verify ? "left: " : "",
		       pohm_fsck_class_name(is->cls), is->key, is->what, is->action);
	if (is->verify) {
		s->left++;
		return;
	}
	s->n[is->cls]++;
	if (is->action == 1)
		s->fixed[is->cls]++;
	if (is->action == 2)
		s->dry[is->cls]++;
}

/* The handles opened next write small files' data inline (decision 0023);
 * the tests of chunks leave it 0: their files are small. */
static int inline_on;

static struct pohm_ns *open_ns(uint64_t intent_ms)
{
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = intent_ms,
				  .chunk_shift = 12, .no_inline = !inline_on };
	struct pohm_ns *ns = NULL;
	int r = pohm_ns_open(&ns, &kv, &o);

	if (r)
		printf("# pohm_ns_open: %d\n", r);
	return ns;
}

static struct pohm_ns *fresh(void)
{
	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	return open_ns(1);
}

/* Run fsck (repair: 0 check, 1 repair, 2 dry run); returns the status. */
static int run(struct pohm_ns *ns, int repair, struct seen *s, uint64_t age_ns)
{
	struct pohm_fsck_opts o = { .repair = repair != 0, .dry_run = repair == 2,
				    .age_ns = age_ns, .report = collect, .arg = s };
	struct pohm_fsck_result res;

	memset(s, 0, sizeof(*s));
	return pohm_fsck_run(ns, &kv, NULL, &o, &res);
}

static uint64_t ino_of(struct pohm_ns *ns, uint64_t dir, const char *name)
{
	uint64_t ino = 0;

	return pohm_ns_lookup(ns, dir, name, &ino, NULL) ? 0 : ino;
}

static uint32_t nlink_of(struct pohm_ns *ns, uint64_t ino)
{
	struct pohm_inode in;
	uint32_t n;

	if (pohm_ns_getattr(ns, ino, &in))
		return 0;
	n = in.nlink;
	pohm_inode_clear(&in);
	return n;
}

static int exists(const char *key)
{
	struct pohm_kv_val v = { 0 };
	int r = kv.ops->get(kv.ctx, key, &v);

	pohm_kv_val_free(&v);
	return r == 0;
}

/* A file dir/name holding text (one chunk). */
static uint64_t file_with(struct pohm_ns *ns, uint64_t dir, const char *name, const char *text)
{
	struct pohm_chunk_write w = { 0, text, strlen(text) };
	struct pohm_inode in;
	uint64_t ino;

	if (pohm_ns_create(ns, dir, name, 0644, 0, 0, 0, POHM_CREATE_EXCL, &in))
		return 0;
	ino = in.ino;
	if (pohm_ns_commit(ns, ino, in.dversion, strlen(text), &w, 1, NULL, NULL))
		ino = 0;
	pohm_inode_clear(&in);
	return ino;
}

/* Entries in dir. */
static int names_fn(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	(*(int *)arg)++;
	return 0;
}

static int count_names(struct pohm_ns *ns, uint64_t dir)
{
	int n = 0;

	return pohm_ns_readdir(ns, dir, names_fn, &n) ? -1 : n;
}

static struct pohm_ns *sample(uint64_t *d, uint64_t *f)
{
	struct pohm_ns *ns = fresh();

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	*d = ino_of(ns, POHM_ROOT_INO, "d");
	*f = file_with(ns, *d, "f", "hello fsck");
	EXPECT(*f != 0);
	EXPECT_EQ_INT(pohm_ns_symlink(ns, *d, "s", "f", 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_link(ns, *f, POHM_ROOT_INO, "hard", NULL), 0);
	return ns;
}

TEST(clean_namespace_is_clean)
{
	struct seen s;
	uint64_t d, f;
	struct pohm_ns *ns = sample(&d, &f);
	long puts = pohm_kvmem_puts(&kv);
	int i, total = 0;

	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_OK);
	for (i = 0; i < POHM_FSCK_NCLASSES; i++)
		total += s.n[i];
	EXPECT_EQ_INT(total, 0);
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv), puts);	/* a clean repair writes nothing */
	pohm_ns_close(ns);
}

TEST(dangling_entry_removed)
{
	struct seen s;
	uint64_t d, f, g;
	struct pohm_ns *ns = sample(&d, &f);
	char key[POHM_KEY_MAX];

	g = file_with(ns, d, "gone", "x");
	pohm_key_inode(key, g);
	EXPECT_EQ_INT(kv.ops->del(kv.ctx, key), 0);	/* the inode vanished */
	EXPECT_EQ_INT(pohm_ns_tombstone(ns, f), 0);	/* the other a tombstone */
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_DANGLING], 3);	/* d/gone, d/f, /hard */
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_DANGLING], 3);
	EXPECT_EQ_INT(s.left, 0);
	EXPECT_EQ_INT(ino_of(ns, d, "gone"), 0);
	EXPECT_EQ_INT(ino_of(ns, POHM_ROOT_INO, "hard"), 0);
	EXPECT(ino_of(ns, d, "s") != 0);	/* the rest untouched */
	pohm_ns_close(ns);
}

TEST(orphans_to_lost_found_or_removed)
{
	struct seen s;
	uint64_t d, f, e, lf;
	struct pohm_ns *ns = sample(&d, &f);
	struct pohm_inode in;
	char buf[32];

	EXPECT_EQ_INT(pohm_ns_create(ns, d, "empty", 0644, 0, 0, 0, 0, &in), 0);
	e = in.ino;
	pohm_inode_clear(&in);
	/* Both lose their names behind the namespace's back. */
	EXPECT_EQ_INT(pohm_ns_drop_entry(ns, d, "f", f), 0);
	EXPECT_EQ_INT(pohm_ns_drop_entry(ns, POHM_ROOT_INO, "hard", f), 0);
	EXPECT_EQ_INT(pohm_ns_drop_entry(ns, d, "empty", e), 0);
	/* Young orphans may be creates in progress: only noted, by a client
	 * whose intent timeout (10 s) they are surely within (fresh()'s is
	 * 1 ms: under TSan the drops above took longer, and the orphan with
	 * data was found, not noted). */
	pohm_ns_close(ns);
	ns = open_ns(10000);
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_OK);
	usleep(1200 * 1000);	/* past the intent timeout... */
	pohm_ns_close(ns);
	ns = open_ns(1000);	/* ...of a client whose timeout is 1 s */
	/* The one with data is lost; the empty one is garbage only past the age. */
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN], 1);
	EXPECT_EQ_INT(run(ns, 0, &s, 1), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN], 2);
	EXPECT_EQ_INT(run(ns, 1, &s, 1), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_ORPHAN], 2);
	EXPECT_EQ_INT(s.left, 0);
	lf = ino_of(ns, POHM_ROOT_INO, "lost+found");
	EXPECT(lf != 0);
	snprintf(buf, sizeof(buf), "#%llu", (unsigned long long)f);
	EXPECT_EQ_U64(ino_of(ns, lf, buf), f);
	EXPECT_EQ_INT(nlink_of(ns, f), 1);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, e, &in), -ENOENT);	/* empty: removed */
	{
		struct pohm_inode fi;
		char data[32] = { 0 };

		EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &fi), 0);
		EXPECT_EQ_INT(pohm_ns_read(ns, &fi, 0, data, sizeof(data)), 10);
		EXPECT_EQ_STR(data, "hello fsck");
		pohm_inode_clear(&fi);
	}
	pohm_ns_close(ns);
}

/*
 * Decision 0049: an unlink in one wait leaves its inode live and marked
 * UNLINKED.  Without a name it is garbage (removed past the age, never
 * /lost+found, though it holds data); with a name (an unlink that died
 * after the mark, or lost its bucket's race) it is a file: the mark goes.
 */
TEST(unlinked_mark_is_garbage_without_a_name_and_cleared_with_one)
{
	struct seen s;
	struct pohm_ns *ns = fresh();
	struct pohm_inode in;
	uint64_t d, u, m, lf;
	int gone = -1;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, POHM_ROOT_INO, "d");
	u = file_with(ns, d, "u", "unlinked data");
	m = file_with(ns, d, "m", "marked but named");
	EXPECT(u && m);
	/* u: the one-wait unlink (this thread read its bucket and inode). */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, u, &in), 0);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_unlink_ino(ns, d, "u", &u, &gone), 0);
	EXPECT_EQ_INT(gone, 1);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, u, &in), 0);
	EXPECT(in.hdr.flags & POHM_OBJF_UNLINKED);
	pohm_inode_clear(&in);
	/* m: the unlink dies after the mark (put_n applies the inode first). */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	pohm_inode_clear(&in);
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_unlink_ino(ns, d, "m", &m, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_U64(ino_of(ns, d, "m"), m);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	EXPECT(in.hdr.flags & POHM_OBJF_UNLINKED);
	pohm_inode_clear(&in);
	usleep(2000);	/* m's mark older than the intent timeout (1 ms) */
	/* Within the garbage age (the default hour): u only noted (INFO). */
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN], 0);
	EXPECT_EQ_INT(s.n[POHM_FSCK_NLINK], 1);	/* m's mark */
	usleep(2000);
	run(ns, 1, &s, 1);	/* its chunk is garbage only once u is a tombstone */
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_ORPHAN], 1);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_NLINK], 1);
	usleep(2000);
	EXPECT_EQ_INT(run(ns, 1, &s, 1), POHM_FSCK_OK);	/* the chunk, the tombstone */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, u, &in), -ENOENT);	/* removed */
	lf = ino_of(ns, POHM_ROOT_INO, "lost+found");
	EXPECT(lf == 0 || count_names(ns, lf) == 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	EXPECT(!(in.hdr.flags & POHM_OBJF_UNLINKED));
	EXPECT_EQ_INT(in.nlink, 1);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(run(ns, 0, &s, 1), POHM_FSCK_OK);
	pohm_ns_close(ns);
}

TEST(nlink_and_parent_fixed)
{
	struct seen s;
	uint64_t d, f, sub;
	struct pohm_ns *ns = sample(&d, &f);

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, d, "sub", 0755, 0, 0, NULL), 0);
	sub = ino_of(ns, d, "sub");
	EXPECT_EQ_INT(pohm_ns_fix_links(ns, f, 7, 0), 0);
	EXPECT_EQ_INT(pohm_ns_fix_links(ns, d, 9, 0), 0);
	EXPECT_EQ_INT(pohm_ns_fix_links(ns, sub, 2, POHM_ROOT_INO), 0);	/* wrong parent */
	usleep(2000);	/* past the 1 ms intent timeout: a count too high, not a link */
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_NLINK], 3);
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.left, 0);
	EXPECT_EQ_INT(nlink_of(ns, f), 2);
	EXPECT_EQ_INT(nlink_of(ns, d), 3);
	EXPECT_EQ_U64(ino_of(ns, sub, ".."), d);
	pohm_ns_close(ns);
}

/* A crash at every step of a rename across directories: repair completes
 * or rolls back what is left, and fsck is clean afterwards. */
TEST(crash_mid_rename_repaired)
{
	int k, done = 0, intents = 0;

	for (k = 0; k < 40 && !done; k++) {
		struct seen s;
		uint64_t d, f, d2, a, b;
		struct pohm_ns *ns = sample(&d, &f);
		int r, st;

		EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d2", 0755, 0, 0, NULL), 0);
		d2 = ino_of(ns, POHM_ROOT_INO, "d2");
		pohm_kvmem_fail_after(&kv, k);
		r = pohm_ns_rename(ns, d, "f", d2, "g", 0);
		pohm_kvmem_fail_after(&kv, -1);
		done = r == 0;
		usleep(3000);	/* past the 1 ms intent timeout */
		st = run(ns, 0, &s, 0);
		intents += s.n[POHM_FSCK_INTENT];
		EXPECT(st == POHM_FSCK_OK || st == POHM_FSCK_FOUND);
		EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
		if (s.left)
			printf("# crash after %d writes: %d issues left after repair\n", k, s.left);
		EXPECT_EQ_INT(s.left, 0);
		a = ino_of(ns, d, "f");
		b = ino_of(ns, d2, "g");
		/* Exactly one name, never lost, link count right. */
		EXPECT((a == f) != (b == f));
		EXPECT_EQ_INT(nlink_of(ns, f), 2);
		EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_OK);
		pohm_ns_close(ns);
	}
	EXPECT(done);
	EXPECT(intents > 0);	/* some crash points did leave an intent */
}

TEST(stale_rename_lease_cleared)
{
	struct seen s;
	uint64_t d, f;
	struct pohm_ns *ns = sample(&d, &f), *other = open_ns(1);
	uint64_t d2, sub;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, d, "sub", 0755, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d2", 0755, 0, 0, NULL), 0);
	sub = ino_of(ns, d, "sub");
	d2 = ino_of(ns, POHM_ROOT_INO, "d2");
	/* A directory move that dies right after taking the lease (its first write). */
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_rename(ns, d, "sub", d2, "sub", 0) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	usleep(3000);
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_INTENT], 1);
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_INTENT], 1);
	EXPECT_EQ_U64(ino_of(ns, d, "sub"), sub);
	pohm_ns_close(other);
	pohm_ns_close(ns);
}

TEST(chunk_gc_and_tombstones)
{
	struct seen s;
	uint64_t d, f, g, gen;
	struct pohm_ns *ns = sample(&d, &f);
	struct pohm_chunk_write w = { 0, "second version", 14 };
	struct pohm_inode in;
	char old[POHM_KEY_MAX], stray[POHM_KEY_MAX], tomb[POHM_KEY_MAX];

	EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
	pohm_key_chunk(old, f, 0, in.chunks[0].gen);
	EXPECT_EQ_INT(pohm_ns_commit(ns, f, in.dversion, 14, &w, 1, NULL, NULL), 0);
	pohm_inode_clear(&in);
	/* A push that died before its commit. */
	EXPECT_EQ_INT(pohm_ns_put_chunk(ns, f, 3, "lost push", 9, &gen), 0);
	pohm_key_chunk(stray, f, 3, gen);
	/* A deleted file: its tombstone and its chunk. */
	g = file_with(ns, d, "del", "bye");
	pohm_key_inode(tomb, g);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "del"), 0);
	EXPECT(exists(old) && exists(stray) && exists(tomb));
	/* Younger than the age: kept (tombstones know their age; chunks here do not). */
	EXPECT_EQ_INT(run(ns, 1, &s, 3600ULL * 1000000000ULL), POHM_FSCK_OK);
	EXPECT(exists(tomb));
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_GARBAGE], 3);	/* old gen, stray, deleted file's */
	EXPECT(!exists(old) && !exists(stray));
	/* Past the age: the tombstone goes too. */
	EXPECT_EQ_INT(run(ns, 0, &s, 1), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_TOMBSTONE], 1);
	EXPECT_EQ_INT(run(ns, 1, &s, 1), POHM_FSCK_OK);
	EXPECT(!exists(tomb));
	/* The live data is intact. */
	{
		char data[32] = { 0 };

		EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in, 0, data, sizeof(data)), 14);
		EXPECT_EQ_STR(data, "second version");
		pohm_inode_clear(&in);
	}
	pohm_ns_close(ns);
}

/* A file large enough for external chunk-map objects (4 KiB chunks, more
 * than POHM_MAP_INLINE_MAX of them): an overwrite leaves an old map object
 * and an old chunk behind; GC takes exactly those; a lost map is loss. */
TEST(chunk_maps_gc_and_loss)
{
	enum { N = POHM_MAP_INLINE_MAX + 44 };
	static char buf[N][4096];
	struct pohm_chunk_write w[N];
	struct seen s;
	uint64_t d, f, big;
	struct pohm_ns *ns = sample(&d, &f);
	struct pohm_inode in;
	char oldmap[POHM_KEY_MAX], oldchunk[POHM_KEY_MAX];
	int i;

	EXPECT_EQ_INT(pohm_ns_create(ns, d, "big", 0644, 0, 0, 0, 0, &in), 0);
	big = in.ino;
	for (i = 0; i < N; i++) {
		memset(buf[i], 'a' + i % 26, sizeof(buf[i]));
		w[i].index = (uint64_t)i;
		w[i].data = buf[i];
		w[i].len = sizeof(buf[i]);
	}
	EXPECT_EQ_INT(pohm_ns_commit(ns, big, in.dversion, (uint64_t)N * 4096, w, N, NULL, NULL), 0);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_OK);
	/* Overwrite chunk 5: a new chunk and a new map object for its range. */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, big, &in), 0);
	EXPECT(in.nmaps >= 2);
	pohm_key_map(oldmap, big, 0, in.maps[0].gen);
	pohm_key_chunk(oldchunk, big, 5, in.chunks[5].gen);
	buf[5][0] = 'X';
	EXPECT_EQ_INT(pohm_ns_commit(ns, big, in.dversion, (uint64_t)N * 4096, &w[5], 1, NULL, NULL), 0);
	pohm_inode_clear(&in);
	EXPECT(exists(oldmap) && exists(oldchunk));
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_GARBAGE], 2);
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_GARBAGE], 2);
	EXPECT(!exists(oldmap) && !exists(oldchunk));
	{
		char got[4096];

		EXPECT_EQ_INT(pohm_ns_getattr(ns, big, &in), 0);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in, 5 * 4096, got, sizeof(got)), 4096);
		EXPECT_MEM(got, buf[5], 4096);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in, (uint64_t)(N - 1) * 4096, got, sizeof(got)), 4096);
		EXPECT_MEM(got, buf[N - 1], 4096);
		/* The second map object vanishes: its chunks are lost. */
		pohm_key_map(oldmap, big, 1, in.maps[1].gen);
		pohm_inode_clear(&in);
	}
	EXPECT_EQ_INT(kv.ops->del(kv.ctx, oldmap), 0);
	EXPECT_EQ_INT(run(ns, 0, &s, 0) & POHM_FSCK_DATALOSS, POHM_FSCK_DATALOSS);
	EXPECT_EQ_INT(s.n[POHM_FSCK_LOST], 1);
	pohm_ns_close(ns);
}

TEST(lost_chunk_is_data_loss)
{
	struct seen s;
	uint64_t d, f;
	struct pohm_ns *ns = sample(&d, &f);
	struct pohm_inode in;
	char key[POHM_KEY_MAX];
	uint64_t g;

	EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
	pohm_key_chunk(key, f, 0, in.chunks[0].gen);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(kv.ops->del(kv.ctx, key), 0);
	/* Another file's chunk overwritten with other bytes (a valid object). */
	g = file_with(ns, d, "other", "original");
	EXPECT_EQ_INT(pohm_ns_getattr(ns, g, &in), 0);
	pohm_key_chunk(key, g, 0, in.chunks[0].gen);
	{
		struct pohm_buf b = POHM_BUF_INIT;

		EXPECT_EQ_INT(pohm_chunk_encode(&b, "test", g, 0, in.chunks[0].gen, "tampered", 8), 0);
		EXPECT_EQ_INT(kv.ops->put(kv.ctx, key, b.p, b.len, NULL), 0);
		pohm_buf_free(&b);
	}
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_DATALOSS);
	EXPECT_EQ_INT(s.n[POHM_FSCK_LOST], 2);
	/* Repair cannot bring it back, and says so. */
	EXPECT_EQ_INT(run(ns, 1, &s, 0) & POHM_FSCK_DATALOSS, POHM_FSCK_DATALOSS);
	pohm_ns_close(ns);
}

/* ---- a directory caught mid-split (core/ns/nsdir.c split_finish) ---- */

static void put_bucket(const struct pohm_bucket *bk, const uint8_t *expect)
{
	struct pohm_buf b = POHM_BUF_INIT;

	EXPECT_EQ_INT(pohm_bucket_encode(&b, bk), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, bk->hdr.key, b.p, b.len, expect), 0);
	pohm_buf_free(&b);
}

/* Which half of a depth-0 bucket name goes to at depth 1. */
static unsigned half_of(const char *name)
{
	return (unsigned)(pohm_name_hash(name) & 1);
}

/*
 * A splitter killed after making the children in halves (bit c: child c)
 * of dir's root bucket from its entries, and before saying SPLIT: the root
 * stays SPLITTING with its sealed entries, stamped now (young) or never.
 */
static void split_stopped(uint64_t dir, unsigned halves, int young)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket parent, child;
	char key[POHM_KEY_MAX];
	unsigned c;
	uint32_t i;

	pohm_key_bucket(key, dir, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	for (c = 0; c < 2; c++) {
		if (!(halves & (1u << c)))
			continue;
		EXPECT_EQ_INT(pohm_bucket_decode(&child, v.data, v.len), 0);
		child.depth = 1;
		child.index = c;
		pohm_key_bucket(child.hdr.key, dir, 1, c);
		for (i = child.n; i > 0; i--)
			if (half_of(child.e[i - 1].name) != c)
				pohm_bucket_remove(&child, i - 1);
		put_bucket(&child, POHM_KV_ABSENT);
		pohm_bucket_clear(&child);
	}
	EXPECT_EQ_INT(pohm_bucket_decode(&parent, v.data, v.len), 0);
	parent.state = POHM_BUCKET_SPLITTING;
	parent.txid = 1;
	parent.stamp = young ? pohm_sys_real_ns() : 0;
	put_bucket(&parent, NULL);
	pohm_bucket_clear(&parent);
	pohm_kv_val_free(&v);
}

static int count_fn(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	(void)name;
	(void)ino;
	(void)type;
	(*(int *)arg)++;
	return 0;
}

static int entries_of(struct pohm_ns *ns, uint64_t dir)
{
	int n = 0;

	return pohm_ns_readdir(ns, dir, count_fn, &n) ? -1 : n;
}

static int issues(const struct seen *s)
{
	int i, n = 0;

	for (i = 0; i < POHM_FSCK_NCLASSES; i++)
		n += s->n[i];
	return n;
}

/*
 * A split stopped after its children were made, then changed through them
 * as a writer with a fresh handle (or a deeper depth hint) does: "x" (with
 * data) and "y" (empty) exist only in a child, "n0" was unlinked there and
 * still stands in the parent's sealed entries.  fsck counts each half in
 * its child: no orphan, no dangling name, no link count to fix; only the
 * unfinished split once it is stale, and repair finishes it without
 * touching the child's names.  Before fsck applied the rule, x and y were
 * orphans (x moved to /lost+found while still named, y removed under its
 * name) and n0's stale entry a dangling one.
 */
/*
 * Inline data (decision 0023): an inline inode has no chunk to miss; a
 * file that grew past the threshold names a chunk again; the chunk of an
 * earlier chunked version is garbage once the file is inline; damaged
 * inline bytes are a malformed inode (the data checksum covers them).
 */
TEST(inline_inodes_have_no_chunks_to_miss)
{
	struct seen s;
	struct pohm_ns *ns;
	struct pohm_inode in;
	struct pohm_chunk_write w;
	struct pohm_kv_val v = { 0 };
	char big[6000], key[POHM_KEY_MAX], ik[POHM_KEY_MAX], old[POHM_KEY_MAX];
	uint64_t d, f, g, h;

	inline_on = 1;
	ns = fresh();
	inline_on = 0;
	memset(big, 'b', sizeof(big));
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, POHM_ROOT_INO, "d");
	f = file_with(ns, d, "small", "inline bytes");
	EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
	EXPECT(pohm_inode_is_inline(&in));
	pohm_inode_clear(&in);
	/* g grows past the threshold: chunk 0 written out, chunk 1 new. */
	g = file_with(ns, d, "grows", "tiny");
	EXPECT_EQ_INT(pohm_ns_getattr(ns, g, &in), 0);
	w.index = 1;
	w.data = big;
	w.len = sizeof(big) - 4096;
	EXPECT_EQ_INT(pohm_ns_commit(ns, g, in.dversion, sizeof(big), &w, 1, NULL, NULL), 0);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, g, &in), 0);
	EXPECT(!pohm_inode_is_inline(&in) && in.nchunks == 2);
	EXPECT(in.chunks[0].gen != POHM_GEN_INLINE && in.chunks[0].gen != 0);
	{
		char got[16] = { 0 };

		EXPECT_EQ_INT((int)pohm_ns_read(ns, &in, 0, got, 6), 6);
		EXPECT_MEM(got, "tiny\0\0", 6);	/* its bytes, then the gap's zeros */
	}
	pohm_inode_clear(&in);
	/* h: chunked first (6000 bytes), then 5 bytes inline: its chunks are garbage. */
	h = file_with(ns, d, "shrinks", "");
	EXPECT_EQ_INT(pohm_ns_getattr(ns, h, &in), 0);
	w.index = 0;
	w.data = big;
	w.len = 4096;
	{
		struct pohm_chunk_write w2[2] = { w, { 1, big, sizeof(big) - 4096 } };

		EXPECT_EQ_INT(pohm_ns_commit(ns, h, in.dversion, sizeof(big), w2, 2, NULL, NULL), 0);
	}
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, h, &in), 0);
	pohm_key_chunk(old, h, 0, in.chunks[0].gen);
	w.len = 5;
	EXPECT_EQ_INT(pohm_ns_commit(ns, h, in.dversion, 5, &w, 1, NULL, NULL), 0);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, h, &in), 0);
	EXPECT(pohm_inode_is_inline(&in));
	pohm_inode_clear(&in);
	EXPECT(exists(old));
	/* No missing chunk, no loss: only the two old chunks of h to collect. */
	EXPECT_EQ_INT(run(ns, 0, &s, 0) & POHM_FSCK_DATALOSS, 0);
	EXPECT_EQ_INT(s.n[POHM_FSCK_LOST], 0);
	EXPECT_EQ_INT(s.n[POHM_FSCK_GARBAGE], 2);
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT(!exists(old));
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_OK);
	/* A flipped inline byte: the inode no longer decodes, which fsck says. */
	pohm_key_inode(ik, f);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, ik, &v), 0);
	v.data[v.len - 1] ^= 0x20;
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, ik, v.data, v.len, NULL), 0);
	pohm_kv_val_free(&v);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), -EIO);
	EXPECT(run(ns, 0, &s, 0) != POHM_FSCK_OK);
	EXPECT(s.n[POHM_FSCK_LOST] >= 1);
	(void)key;
	pohm_ns_close(ns);
}

/*
 * s14: a marked inode whose only name is in a bucket that does not decode
 * is not garbage fsck can prove: the unlink that marked it may have lost
 * its race (the name stands), and the name is unreadable.  It is left and
 * reported; once the bucket is back, the name is counted and the mark goes.
 */
TEST(marked_inode_named_in_an_undecodable_bucket_is_kept)
{
	struct seen s;
	struct pohm_ns *ns = fresh();
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket bk;
	struct pohm_inode in;
	char bkey[POHM_KEY_MAX];
	uint8_t *good;
	size_t glen;
	uint64_t d, m;
	int gone = -1;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, POHM_ROOT_INO, "d");
	m = file_with(ns, d, "m", "a file, its bucket damaged");
	EXPECT(m != 0);
	/* The unlink dies after the mark (put_n applies the inode first). */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	pohm_inode_clear(&in);
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_unlink_ino(ns, d, "m", &m, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_U64(ino_of(ns, d, "m"), m);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	EXPECT(in.hdr.flags & POHM_OBJF_UNLINKED);
	pohm_inode_clear(&in);
	/* Then d's bucket is damaged: cut short, it no longer decodes. */
	pohm_key_bucket(bkey, d, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, bkey, &v), 0);
	glen = v.len;
	good = malloc(glen);
	EXPECT(good != NULL);
	memcpy(good, v.data, glen);
	memset(&bk, 0, sizeof(bk));
	EXPECT(pohm_bucket_decode(&bk, v.data, v.len - 1) != 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, bkey, v.data, v.len - 1, v.csum), 0);
	pohm_kv_val_free(&v);
	usleep(2000);
	/* Past every age: still not removed, and said. */
	EXPECT(run(ns, 1, &s, 1) & POHM_FSCK_ERROR);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN], 1);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_ORPHAN], 0);
	EXPECT(s.n[POHM_FSCK_LOST] >= 1);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	pohm_inode_clear(&in);
	/* The bucket restored: the name counts, the repair drops the mark. */
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, bkey, &v), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, bkey, good, glen, v.csum), 0);
	pohm_kv_val_free(&v);
	free(good);
	run(ns, 1, &s, 1);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_NLINK], 1);
	EXPECT_EQ_INT(run(ns, 0, &s, 1), POHM_FSCK_OK);
	EXPECT_EQ_U64(ino_of(ns, d, "m"), m);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	EXPECT(!(in.hdr.flags & POHM_OBJF_UNLINKED));
	pohm_inode_clear(&in);
	pohm_ns_close(ns);
}

/*
 * s14: fsck's view may hold a bucket read before a one-wait unlink and the
 * inode read after it (named, marked).  A mark younger than the intent
 * timeout is left for the next run: dropping it would turn the unlinked
 * inode into a lost file (/lost+found) once the view catches up.
 */
TEST(young_mark_on_a_named_inode_is_left_for_the_next_run)
{
	struct seen s;
	struct pohm_ns *ns = fresh(), *slow;
	struct pohm_inode in;
	uint64_t d, m;
	int gone = -1;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, POHM_ROOT_INO, "d");
	m = file_with(ns, d, "m", "being unlinked");
	EXPECT(m != 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	pohm_inode_clear(&in);
	pohm_kvmem_fail_after(&kv, 1);	/* the mark landed, the bucket not yet */
	EXPECT(pohm_ns_unlink_ino(ns, d, "m", &m, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	slow = open_ns(10000);		/* an intent timeout of 10 s */
	EXPECT_EQ_INT(run(slow, 1, &s, 1), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.n[POHM_FSCK_NLINK], 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, m, &in), 0);
	EXPECT(in.hdr.flags & POHM_OBJF_UNLINKED);	/* left */
	pohm_inode_clear(&in);
	/* The unlink's bucket write lands: garbage for the next run, never
	 * a lost file. */
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "m"), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "m"), 0);
	pohm_ns_close(slow);
	pohm_ns_close(ns);
}

/*
 * s14: a directory whose inode does not decode: its buckets are not
 * "buckets of a removed directory" (garbage) but the only record of its
 * names, and the empty file named there is not garbage either.
 */
TEST(buckets_of_a_directory_whose_inode_does_not_decode_are_kept)
{
	struct seen s;
	struct pohm_ns *ns = fresh();
	struct pohm_kv_val v = { 0 };
	char ik[POHM_KEY_MAX], bkey[POHM_KEY_MAX];
	uint64_t d, e;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, POHM_ROOT_INO, "d");
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "empty", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	e = ino_of(ns, d, "empty");
	EXPECT(e != 0);
	pohm_key_inode(ik, d);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, ik, &v), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, ik, v.data, v.len - 1, v.csum), 0);
	pohm_kv_val_free(&v);
	usleep(2000);
	EXPECT(run(ns, 1, &s, 1) & POHM_FSCK_ERROR);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_GARBAGE], 0);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_ORPHAN], 0);
	pohm_key_bucket(bkey, d, 0, 0);
	EXPECT(exists(bkey));
	pohm_key_inode(ik, e);
	EXPECT(exists(ik));
	EXPECT_EQ_INT(nlink_of(ns, e), 1);
	pohm_ns_close(ns);
}

/*
 * s14: a link raises the count, then adds its name.  fsck's view may hold
 * the inode from after the one and the bucket from before the other; a
 * repair that lowered the count then left it one below the names, and an
 * unlink of one name tombstoned the file the other still names.
 */
TEST(count_of_a_link_in_flight_is_not_lowered)
{
	struct seen s;
	struct pohm_ns *ns = fresh(), *slow;
	struct pohm_inode in;
	uint64_t d, f;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, POHM_ROOT_INO, "d");
	f = file_with(ns, d, "f", "two names soon");
	EXPECT(f != 0);
	pohm_kvmem_fail_after(&kv, 1);	/* the count + 1 lands, the entry not yet */
	EXPECT(pohm_ns_link(ns, f, d, "g", NULL) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_INT(nlink_of(ns, f), 2);
	EXPECT_EQ_U64(ino_of(ns, d, "g"), 0);
	slow = open_ns(10000);		/* an intent timeout of 10 s */
	run(slow, 1, &s, 1);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_NLINK], 0);
	EXPECT_EQ_INT(nlink_of(ns, f), 2);
	/* The link's entry lands; one name's unlink leaves the other its file. */
	EXPECT_EQ_INT(pohm_ns_relink(ns, f, d, "g"), 0);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "f"), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "g"), f);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
	EXPECT_EQ_INT(in.nlink, 1);
	pohm_inode_clear(&in);
	pohm_ns_close(slow);
	pohm_ns_close(ns);
}

TEST(fsck_mid_split_reads_the_children)
{
	struct seen s;
	struct pohm_ns *ns = fresh(), *other;
	struct pohm_inode in;
	char name[8], data[32] = { 0 };
	uint64_t big, x, y;
	int i;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "big", 0755, 0, 0, NULL), 0);
	big = ino_of(ns, POHM_ROOT_INO, "big");
	/* n0 empty: its unlink leaves a tombstone only, no chunk to collect. */
	EXPECT_EQ_INT(pohm_ns_create(ns, big, "n0", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	for (i = 1; i < 6; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		EXPECT(file_with(ns, big, name, name) != 0);
	}
	split_stopped(big, 3, 1);
	other = open_ns(10000);		/* no hint: meets the SPLITTING root bucket */
	x = file_with(other, big, "x", "in a child only");
	EXPECT(x != 0);
	EXPECT_EQ_INT(pohm_ns_create(other, big, "y", 0644, 0, 0, 0, POHM_CREATE_EXCL, &in), 0);
	y = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_unlink(other, big, "n0"), 0);
	EXPECT_EQ_INT(entries_of(other, big), 7);
	/* Young split, a reader's intent timeout: nothing to report. */
	EXPECT_EQ_INT(run(other, 0, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(issues(&s), 0);
	/* Stale (past the 1 ms timeout): the split only. */
	usleep(3000);
	EXPECT_EQ_INT(run(ns, 0, &s, 1), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_INTENT], 1);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN], 0);
	EXPECT_EQ_INT(s.n[POHM_FSCK_DANGLING], 0);
	EXPECT_EQ_INT(s.n[POHM_FSCK_NLINK], 0);
	/* Repair (garbage age 1 ns: an empty orphan would be removed at once). */
	EXPECT_EQ_INT(run(ns, 1, &s, 1), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_INTENT], 1);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN], 0);
	EXPECT_EQ_INT(s.left, 0);
	EXPECT_EQ_U64(ino_of(ns, big, "x"), x);
	EXPECT_EQ_U64(ino_of(ns, big, "y"), y);
	EXPECT_EQ_U64(ino_of(ns, big, "n0"), 0);
	EXPECT_EQ_U64(ino_of(ns, POHM_ROOT_INO, "lost+found"), 0);
	EXPECT_EQ_INT(nlink_of(ns, x), 1);
	EXPECT_EQ_INT(nlink_of(ns, y), 1);
	EXPECT_EQ_INT(entries_of(ns, big), 7);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, x, &in), 0);
	EXPECT_EQ_INT(pohm_ns_read(ns, &in, 0, data, sizeof(data)), 15);
	EXPECT_EQ_STR(data, "in a child only");
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(run(ns, 0, &s, 1), POHM_FSCK_OK);
	pohm_ns_close(other);
	pohm_ns_close(ns);
}

/*
 * A split stopped between its two children: half 0 has its child, half 1
 * only the parent's entries.  Names whose inode is gone are reported in
 * both places a reader finds them (the child for half 0, the parent for
 * half 1), once each, and removed by repair.
 */
TEST(fsck_mid_split_still_reports_damage)
{
	struct seen s;
	struct pohm_ns *ns = fresh(), *other;
	char name[3][8][8], key[POHM_KEY_MAX];
	uint64_t big, ino;
	int n[2] = { 0, 0 }, i;
	unsigned h;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "big", 0755, 0, 0, NULL), 0);
	big = ino_of(ns, POHM_ROOT_INO, "big");
	/* Two names of each half. */
	for (i = 0; i < 64 && (n[0] < 2 || n[1] < 2); i++) {
		char nm[8];

		snprintf(nm, sizeof(nm), "m%d", i);
		h = half_of(nm);
		if (n[h] >= 2)
			continue;
		snprintf(name[h][n[h]++], sizeof(name[0][0]), "%s", nm);
		EXPECT(file_with(ns, big, nm, nm) != 0);
	}
	EXPECT(n[0] == 2 && n[1] == 2);
	/* A half-0 name made after the split stopped lives in child 0 only. */
	for (; i < 128; i++) {
		snprintf(name[2][0], sizeof(name[2][0]), "m%d", i);
		if (!half_of(name[2][0]))
			break;
	}
	split_stopped(big, 1, 1);
	other = open_ns(10000);
	EXPECT(file_with(other, big, name[2][0], "late") != 0);
	/* The inodes of one name per half, and of the late one, vanish. */
	for (h = 0; h < 3; h++) {
		ino = ino_of(other, big, name[h][0]);
		EXPECT(ino != 0);
		pohm_key_inode(key, ino);
		EXPECT_EQ_INT(kv.ops->del(kv.ctx, key), 0);
	}
	EXPECT_EQ_INT(run(other, 0, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.n[POHM_FSCK_DANGLING], 3);
	EXPECT_EQ_INT(s.n[POHM_FSCK_ORPHAN] + s.n[POHM_FSCK_NLINK], 0);
	usleep(3000);
	EXPECT_EQ_INT(run(ns, 1, &s, 0), POHM_FSCK_OK);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_DANGLING], 3);
	EXPECT_EQ_INT(s.fixed[POHM_FSCK_INTENT], 1);
	EXPECT_EQ_INT(s.left, 0);
	for (h = 0; h < 3; h++)
		EXPECT_EQ_U64(ino_of(ns, big, name[h][0]), 0);
	EXPECT(ino_of(ns, big, name[0][1]) != 0);
	EXPECT(ino_of(ns, big, name[1][1]) != 0);
	EXPECT_EQ_INT(entries_of(ns, big), 2);
	EXPECT_EQ_INT(run(ns, 0, &s, 0), POHM_FSCK_OK);
	pohm_ns_close(other);
	pohm_ns_close(ns);
}

TEST(dry_run_changes_nothing)
{
	struct seen s;
	uint64_t d, f;
	struct pohm_ns *ns = sample(&d, &f);
	long puts;
	size_t keys;

	EXPECT_EQ_INT(pohm_ns_fix_links(ns, f, 5, 0), 0);
	EXPECT_EQ_INT(pohm_ns_drop_entry(ns, POHM_ROOT_INO, "hard", f), 0);
	usleep(2000);	/* past the 1 ms intent timeout */
	puts = pohm_kvmem_puts(&kv);
	keys = pohm_kvmem_count(&kv);
	EXPECT_EQ_INT(run(ns, 2, &s, 0), POHM_FSCK_FOUND);
	EXPECT_EQ_INT(s.dry[POHM_FSCK_NLINK], 1);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv), puts);
	EXPECT_EQ_INT(pohm_kvmem_count(&kv), keys);
	EXPECT_EQ_INT(nlink_of(ns, f), 5);
	pohm_ns_close(ns);
}

TEST(class_names)
{
	EXPECT_EQ_STR(pohm_fsck_class_name(POHM_FSCK_DANGLING), "dangling");
	EXPECT_EQ_STR(pohm_fsck_class_name(POHM_FSCK_DIVERGENT), "divergent");
	EXPECT_EQ_STR(pohm_fsck_class_name(POHM_FSCK_NCLASSES), "?");
}

/* ---- core/iter's wire helpers */

#include "iter.h"

TEST(iter_request_layout)
{
	uint8_t rq[POHM_ITER_REQ_SIZE + POHM_ITER_RANGE_SIZE], lo[64], hi[64];

	pohm_iter_slice(3, 16, lo, hi);
	EXPECT_EQ_INT(lo[0], 0x30);
	EXPECT_EQ_INT(lo[63], 0);
	EXPECT_EQ_INT(hi[0], 0x3f);
	EXPECT_EQ_INT(hi[63], 0xff);
	pohm_iter_slice(15, 16, lo, hi);
	EXPECT_EQ_INT(hi[0], 0xff);
	pohm_iter_request_encode(rq, lo, hi);
	EXPECT_EQ_U64(pohm_le64(rq), 0);		/* id: the server's choice */
	EXPECT_EQ_INT(pohm_le32(rq + 8), 1);		/* start */
	EXPECT_EQ_U64(pohm_le64(rq + 12), 1);		/* one range */
	EXPECT_EQ_INT(pohm_le32(rq + 52), 2);		/* network */
	EXPECT_EQ_U64(pohm_le64(rq + 56), 2);		/* KEY_RANGE, no DATA */
	EXPECT_EQ_INT(pohm_le32(rq + 64), 0);		/* no groups */
	EXPECT_MEM(rq + 104, lo, 64);
	EXPECT_MEM(rq + 168, hi, 64);
}

TEST(iter_response_checked)
{
	uint8_t p[POHM_ITER_RESP_SIZE + 8];
	struct pohm_iter_key k;
	int i;

	memset(p, 0, sizeof(p));
	for (i = 0; i < 64; i++)
		p[8 + i] = (uint8_t)i;
	pohm_st32(p + 72, (uint32_t)-84);
	pohm_st64(p + 76, 1700000000);
	pohm_st64(p + 84, 5);
	pohm_st64(p + 92, 7);
	pohm_st64(p + 100, 4096);
	pohm_st64(p + 124, 0x40);
	EXPECT_EQ_INT(pohm_iter_response_decode(&k, p, POHM_ITER_RESP_SIZE), 0);
	EXPECT_EQ_INT(k.id[63], 63);
	EXPECT_EQ_INT(k.status, -84);
	EXPECT_EQ_U64(k.ts.tsec, 1700000000);
	EXPECT_EQ_U64(k.ts.tnsec, 5);
	EXPECT_EQ_U64(k.user_flags, 7);
	EXPECT_EQ_U64(k.size, 4096);
	EXPECT_EQ_U64(k.record_flags, 0x40);
	/* Short, carrying data we did not ask for, or a nonsense time: refused. */
	EXPECT_EQ_INT(pohm_iter_response_decode(&k, p, POHM_ITER_RESP_SIZE - 1), -EPROTO);
	EXPECT_EQ_INT(pohm_iter_response_decode(&k, p, POHM_ITER_RESP_SIZE + 8), -EPROTO);
	pohm_st64(p + 84, 1000000000ULL);
	EXPECT_EQ_INT(pohm_iter_response_decode(&k, p, POHM_ITER_RESP_SIZE), -EPROTO);
}

/* An ITERATOR reply of every length up to one past the real size, against the
 * guard page (edge.h): only the exact size decodes, nothing reads past the
 * end, and the reserved and count fields do not leak into the key. */
TEST(iter_response_at_the_guard_page)
{
	uint8_t p[POHM_ITER_RESP_SIZE + 1];
	struct pohm_iter_key k;
	size_t n;

	memset(p, 0xEE, sizeof(p));		/* iterator id, counts, reserved */
	memset(p + 8, 0x42, POHM_ID_SIZE);
	pohm_st32(p + 72, 0);
	pohm_st64(p + 76, 1);
	pohm_st64(p + 84, 2);
	pohm_st64(p + 92, 3);
	pohm_st64(p + 100, 4);
	pohm_st64(p + 124, 5);
	for (n = 0; n <= sizeof(p); n++) {
		int rc = pohm_iter_response_decode(&k, th_at_edge(p, n), n);

		EXPECT_EQ_INT(rc, n == POHM_ITER_RESP_SIZE ? 0 : -EPROTO);
	}
	EXPECT_EQ_INT(pohm_iter_response_decode(&k, th_at_edge(p, POHM_ITER_RESP_SIZE),
						POHM_ITER_RESP_SIZE), 0);
	EXPECT_EQ_INT(k.id[0], 0x42);
	EXPECT_EQ_INT(k.id[63], 0x42);
	EXPECT_EQ_INT(k.status, 0);
	EXPECT_EQ_U64(k.ts.tsec, 1);
	EXPECT_EQ_U64(k.ts.tnsec, 2);
	EXPECT_EQ_U64(k.user_flags, 3);
	EXPECT_EQ_U64(k.size, 4);
	EXPECT_EQ_U64(k.record_flags, 5);
	/* No bytes but a length that claims a whole reply: refused, not read. */
	EXPECT_EQ_INT(pohm_iter_response_decode(&k, NULL, POHM_ITER_RESP_SIZE), -EPROTO);
}
