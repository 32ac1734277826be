/* test_ns.c — the namespace on the in-memory store: POSIX errors, bucket
 * splits, renames, hard links, data commits, many threads on two "hosts",
 * and a crash injected between every two storage writes of every
 * multi-object operation. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "kv.h"
#include "ns.h"
#include "nsobj.h"
#include "ns_int.h"
#include "sha512.h"
#include "sys.h"

static struct pohm_kv kv;

static struct pohm_ns *open_ns(unsigned bucket_max, uint64_t intent_ms)
{
	struct pohm_ns_opts o = { .fsid = "test", .bucket_max = bucket_max,
				  .intent_timeout_ms = intent_ms, .chunk_shift = 12 };
	struct pohm_ns *ns = NULL;
	int r = pohm_ns_open(&ns, &kv, &o);

	if (r)
		printf("# pohm_ns_open: %d\n", r);
	return ns;
}

/* put_n applies its writes last first in every fresh store (the crash
 * tests run both ways: decision 0022's writes have no order). */
static int put_n_reversed;

static struct pohm_ns *fresh(unsigned bucket_max)
{
	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	pohm_kvmem_put_n_reverse(&kv, put_n_reversed);
	return open_ns(bucket_max, 10000);
}

static uint64_t ino_of(struct pohm_ns *ns, uint64_t dir, const char *name)
{
	uint64_t ino = 0;

	if (pohm_ns_lookup(ns, dir, name, &ino, NULL))
		return 0;
	return ino;
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

struct listing {
	int n;
	char names[4096][24];
	uint64_t inos[4096];
};

static int collect(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	struct listing *l = arg;

	if (l->n < 4096) {
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
		l->inos[l->n] = ino;
	}
	l->n++;
	return 0;
}

static int count_entries(struct pohm_ns *ns, uint64_t dir)
{
	static struct listing l;

	l.n = 0;
	if (pohm_ns_readdir(ns, dir, collect, &l))
		return -1;
	return l.n;
}

TEST(root_created_once)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	struct pohm_inode a, b;

	EXPECT(ns != NULL);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, POHM_ROOT_INO, &a), 0);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, POHM_ROOT_INO, &b), 0);
	EXPECT(S_ISDIR(a.mode));
	EXPECT_EQ_U64(a.version, b.version);
	EXPECT(!memcmp(&a.btime, &b.btime, sizeof(a.btime)));
	pohm_inode_clear(&a);
	pohm_inode_clear(&b);
	pohm_ns_close(ns);
	pohm_ns_close(ns2);
}

/* lazy_root: nothing reaches the store at open; the first call makes the
 * root (once among clients); a failed check fails that call only. */
TEST(lazy_root_on_first_use)
{
	struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = 12, .lazy_root = 1 };
	struct pohm_ns *ns = NULL, *ns2 = NULL;
	struct pohm_inode d, a, b;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	EXPECT_EQ_INT(pohm_ns_open(&ns, &kv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_open(&ns2, &kv, &o), 0);
	EXPECT_EQ_U64(pohm_kvmem_count(&kv), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv), 0);
	/* The root cannot be written: the call that needed it fails ... */
	pohm_kvmem_fail_after(&kv, 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), -EIO);
	/* ... and the next one checks again. */
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	pohm_inode_clear(&d);
	EXPECT(ino_of(ns2, POHM_ROOT_INO, "d") != 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, POHM_ROOT_INO, &a), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, POHM_ROOT_INO, &b), 0);
	EXPECT(S_ISDIR(a.mode));
	EXPECT(!memcmp(&a.btime, &b.btime, sizeof(a.btime)));	/* one root */
	pohm_inode_clear(&a);
	pohm_inode_clear(&b);
	pohm_ns_close(ns);
	pohm_ns_close(ns2);
}

/* A store that counts the reads of the root inode (lazy_root_proven_by_a_read)
 * and every read (optimistic_cas_*). */
static struct pohm_kv_ops counting_ops;
static int root_reads, all_reads;

static int counting_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	root_reads += !strcmp(key, "i:1");
	all_reads++;
	return kv.ops->get(ctx, key, out);
}

static size_t largest_get_n;	/* the most keys of one get_n */

static int counting_get_n(void *ctx, size_t n, const char *const *keys,
			  struct pohm_kv_val *out, int *st)
{
	size_t i;

	for (i = 0; i < n; i++)
		root_reads += !strcmp(keys[i], "i:1");
	all_reads++;
	if (n > largest_get_n)
		largest_get_n = n;
	return kv.ops->get_n(ctx, n, keys, out, st);
}

/* ckv: the test store (kv, kvmem: it has a get_n) with its reads counted. */
static void counting_kv(struct pohm_kv *ckv)
{
	counting_ops = *kv.ops;
	counting_ops.get = counting_get;
	counting_ops.get_n = counting_get_n;
	ckv->ops = &counting_ops;
	ckv->ctx = kv.ctx;
}

/* lazy_root: a first read that finds an object proves the root (no check,
 * issue 23); one that finds nothing checks it, and a read of the root
 * itself then sees the root the check made. */
TEST(lazy_root_proven_by_a_read)
{
	struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = 12, .lazy_root = 1 };
	struct pohm_ns *ns = fresh(0), *lz = NULL;
	struct pohm_kv ckv;
	struct pohm_inode d, a;
	uint64_t ino;

	counting_kv(&ckv);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	root_reads = 0;
	EXPECT_EQ_INT(pohm_ns_open(&lz, &ckv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(lz, d.ino, &a), 0);
	pohm_inode_clear(&a);
	EXPECT_EQ_INT(pohm_ns_create(lz, d.ino, "f", 0644, 0, 0, 0, 0, &a), 0);
	pohm_inode_clear(&a);
	EXPECT_EQ_INT(root_reads, 0);
	pohm_ns_close(lz);
	pohm_inode_clear(&d);
	pohm_ns_close(ns);

	/* An empty store: the first read finds nothing; the root is made. */
	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ckv.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&lz, &ckv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_lookup(lz, POHM_ROOT_INO, "x", &ino, NULL), -ENOENT);
	EXPECT_EQ_INT(pohm_ns_getattr(lz, POHM_ROOT_INO, &a), 0);
	EXPECT(S_ISDIR(a.mode));
	pohm_inode_clear(&a);
	pohm_ns_close(lz);

	/* A first read of the root itself in an empty store answers the root. */
	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ckv.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&lz, &ckv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(lz, POHM_ROOT_INO, &a), 0);
	EXPECT(S_ISDIR(a.mode));
	pohm_inode_clear(&a);
	pohm_ns_close(lz);
}

/* Another thread (its own view of what it read): a create and a chmod. */
struct other_change {
	struct pohm_ns *ns;
	uint64_t dir, ino;
	int r1, r2;
};

static void *other_thread(void *arg)
{
	struct other_change *o = arg;
	struct pohm_setattr sa = { .mask = POHM_SET_MODE, .mode = 0600 };
	struct pohm_inode in;

	o->r1 = pohm_ns_create(o->ns, o->dir, "b", 0644, 0, 0, 0, POHM_CREATE_EXCL, &in);
	if (!o->r1)
		pohm_inode_clear(&in);
	o->r2 = pohm_ns_setattr(o->ns, o->ino, &sa, &in);
	if (!o->r2)
		pohm_inode_clear(&in);
	return NULL;
}

/*
 * Optimistic CAS (issue 23, decision 0017): a create reads the directory's
 * inode and bucket once each (the insert CASes the bucket the lookup read,
 * the lookup does not check the directory again), and a change based on
 * what this thread saw loses safely to another thread's change: the CAS
 * fails, a read follows, and both changes stand.
 */
TEST(optimistic_cas_reads_once_and_loses_safely)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	struct pohm_setattr sa = { .mask = POHM_SET_MTIME };
	struct other_change o;
	struct pohm_kv ckv;
	struct pohm_inode d, a, x;
	pthread_t t;

	counting_kv(&ckv);
	pohm_ns_close(ns);
	ns = NULL;
	{
		struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12 };

		EXPECT_EQ_INT(pohm_ns_open(&ns, &ckv, &opt), 0);
	}
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	/* (The first entry: an absent bucket is nothing to peek at.) */
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "0", 0644, 0, 0, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "a", 0644, 0, 0, 0, 0, &a), 0);
	/* The bucket as the create of "0" wrote it lacks "a": no read at all
	 * (decision 0022; 1 in session 11: the directory's inode and bucket
	 * together; 4 before). */
	EXPECT_EQ_INT(all_reads, 0);

	/* Another thread changes the bucket and a's inode under this one. */
	ns2 = open_ns(0, 10000);
	o.ns = ns2;
	o.dir = d.ino;
	o.ino = a.ino;
	pthread_create(&t, NULL, other_thread, &o);
	pthread_join(t, NULL);
	EXPECT_EQ_INT(o.r1, 0);
	EXPECT_EQ_INT(o.r2, 0);
	/* This thread's bucket (with "a" only) and inode (0644) are stale now:
	 * the create's CAS on the bucket loses and it reads (its inode, sent
	 * with it, stays and gets the name). */
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "c", 0644, 0, 0, 0, POHM_CREATE_EXCL, &x), 0);
	EXPECT(all_reads >= 1);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "c"), x.ino);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, ino_of(ns, d.ino, "c"), &x), 0);
	pohm_inode_clear(&x);
	/* A stale copy never makes an exclusive create of a name that is there. */
	EXPECT_EQ_INT(pohm_ns_create(ns2, d.ino, "e", 0644, 0, 0, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "e", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL),
		      -EEXIST);
	EXPECT_EQ_INT(count_entries(ns, d.ino), 5);
	EXPECT(ino_of(ns, d.ino, "b") != 0);
	sa.mtime.sec = 12345;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a.ino, &sa, &x), 0);
	EXPECT_EQ_U64(x.mode & 07777, 0600);	/* the other thread's chmod stands */
	EXPECT_EQ_U64((uint64_t)x.mtime.sec, 12345);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, a.ino, &x), 0);
	EXPECT_EQ_U64(x.mode & 07777, 0600);
	EXPECT_EQ_U64((uint64_t)x.mtime.sec, 12345);
	pohm_inode_clear(&x);
	pohm_inode_clear(&a);
	pohm_inode_clear(&d);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * Kept bases (decision 0048): pohm_ns_opts.base_note / base_load over an
 * in-memory table standing in for the cache's k/ files (one version per key,
 * as noted; "stale" keeps them from being updated, as another host's change
 * the cache never saw).
 */
#define KEPT_N 64
static struct kept {
	char key[POHM_KEY_MAX];
	uint8_t *data;
	size_t len;
	uint64_t ts_ns;
} kept[KEPT_N];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static int kept_frozen;		/* notes ignored (guarded by kept_lock) */

static void kept_note(void *arg, const char *key, const struct pohm_kv_val *v)
{
	int i, free_slot = -1;

	pthread_mutex_lock(&kept_lock);
	for (i = 0; i < KEPT_N && !kept_frozen; i++) {
		if (!kept[i].data) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (strcmp(kept[i].key, key))
			continue;
		free(kept[i].data);
		kept[i].data = NULL;
		free_slot = i;
		break;
	}
	if (!kept_frozen && v && free_slot >= 0 && (kept[free_slot].data = malloc(v->len + 1))) {
		memcpy(kept[free_slot].data, v->data, v->len);
		kept[free_slot].len = v->len;
		kept[free_slot].ts_ns = v->ts_ns;
		snprintf(kept[free_slot].key, sizeof(kept[free_slot].key), "%s", key);
	}
	pthread_mutex_unlock(&kept_lock);
}

static int kept_load(void *arg, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	int i, r = -ENOENT;

	pthread_mutex_lock(&kept_lock);
	for (i = 0; i < KEPT_N; i++)
		if (kept[i].data && !strcmp(kept[i].key, key) &&
		    (out->data = malloc(kept[i].len + 1))) {
			memcpy(out->data, kept[i].data, kept[i].len);
			out->len = kept[i].len;
			/* kvmem keeps no stamps; a real base always has one
			 * (ns_base_peek refuses a base without). */
			out->ts_ns = kept[i].ts_ns ? kept[i].ts_ns : 1;
			pohm_sha512(out->data, out->len, out->csum);
			*age_ns = 1000;
			r = 0;
			break;
		}
	pthread_mutex_unlock(&kept_lock);
	return r;
}

static void kept_clear(void)
{
	int i;

	for (i = 0; i < KEPT_N; i++) {
		free(kept[i].data);
		kept[i].data = NULL;
	}
	kept_frozen = 0;
}

struct kept_call {
	struct pohm_ns *ns;
	uint64_t dir, ino, uino;
	const char *uname;
	int reads, r_attr, r_create, r_mkdir, r_excl, r_unlink, gone;
	uint32_t mode;
};

/* A "new process": a thread with nothing of its own to peek at. */
static void *kept_thread(void *arg)
{
	struct kept_call *k = arg;
	struct pohm_setattr sa = { .mask = POHM_SET_MTIME };
	struct pohm_inode x;
	char name[32];

	sa.mtime.sec = 4242;
	all_reads = 0;
	k->r_attr = pohm_ns_setattr(k->ns, k->ino, &sa, &x);
	if (!k->r_attr) {
		k->mode = x.mode & 07777;
		pohm_inode_clear(&x);
	}
	snprintf(name, sizeof(name), "f%d", k->r_mkdir = (int)(random() % 100000));
	k->r_create = pohm_ns_create(k->ns, k->dir, name, 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL);
	snprintf(name, sizeof(name), "m%d", k->r_mkdir);
	k->r_mkdir = pohm_ns_mkdir(k->ns, k->dir, name, 0755, 0, 0, NULL);
	/* "b" was made by the other "host": an exclusive create of it is EEXIST
	 * whatever the kept bucket says. */
	k->r_excl = pohm_ns_create(k->ns, k->dir, "b", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL);
	/* An unlink whose inode the caller knows: the entry's and the link
	 * count's CAS, no lookup. */
	k->r_unlink = pohm_ns_unlink_ino(k->ns, k->dir, k->uname, &k->uino, &k->gone);
	k->reads = all_reads;
	return NULL;
}

/* k: the calls of kept_thread, run (and joined) in a new thread over ns:
 * in directory dir, a setattr of ino and the unlink of uname (inode uino). */
static void kept_run(struct kept_call *k, struct pohm_ns *ns, uint64_t dir, uint64_t ino,
		     const char *uname, uint64_t uino)
{
	pthread_t t;

	memset(k, 0, sizeof(*k));
	k->ns = ns;
	k->dir = dir;
	k->ino = ino;
	k->uname = uname;
	k->uino = uino;
	pthread_create(&t, NULL, kept_thread, k);
	pthread_join(t, NULL);
}

TEST(kept_bases_serve_a_new_thread_and_lose_safely)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL;
	uint64_t u1, u2;
	struct kept_call k;
	struct other_change o;
	struct pohm_kv ckv;
	struct pohm_inode d, a, x;

	kept_clear();
	counting_kv(&ckv);
	pohm_ns_close(ns);
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &ckv, &opt), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "0", 0644, 0, 0, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "a", 0644, 0, 0, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "u1", 0644, 0, 0, 0, 0, &x), 0);
	u1 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "u2", 0644, 0, 0, 0, 0, &x), 0);
	u2 = x.ino;
	pohm_inode_clear(&x);

	/* Unchanged since noted: the setattr, the create and the mkdir write at
	 * once (the exclusive create of "b", absent, too). */
	kept_run(&k, nsb, d.ino, a.ino, "u1", u1);
	EXPECT_EQ_INT(k.r_attr, 0);
	EXPECT_EQ_INT(k.r_create, 0);
	EXPECT_EQ_INT(k.r_mkdir, 0);
	EXPECT_EQ_INT(k.r_excl, 0);
	EXPECT_EQ_INT(k.r_unlink, 0);
	EXPECT_EQ_INT(k.gone, 1);
	EXPECT_EQ_INT(k.reads, 0);
	EXPECT_EQ_U64(ino_of(nsb, d.ino, "u1"), 0);
	/* Then another "host" (no bases) removes "b", makes it again and
	 * chmods a, and the kept bases stay as they were (frozen). */
	pthread_mutex_lock(&kept_lock);
	kept_frozen = 1;
	pthread_mutex_unlock(&kept_lock);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_unlink(ns2, d.ino, "b"), 0);
	/* (From this thread: a new one may get the id, hence the peeks in
	 * kvmem, of one that ended.) */
	memset(&o, 0, sizeof(o));
	o.ns = ns2;
	o.dir = d.ino;
	o.ino = a.ino;
	other_thread(&o);
	EXPECT_EQ_INT(o.r1, 0);
	EXPECT_EQ_INT(o.r2, 0);
	/* Stale bases: every write loses its CAS, reads and writes again; the
	 * exclusive create of "b" is EEXIST (never decided on the kept copy). */
	kept_run(&k, nsb, d.ino, a.ino, "u2", u2);
	EXPECT_EQ_INT(k.r_attr, 0);
	EXPECT_EQ_INT(k.r_create, 0);
	EXPECT_EQ_INT(k.r_mkdir, 0);
	EXPECT_EQ_INT(k.r_excl, -EEXIST);
	EXPECT_EQ_INT(k.r_unlink, 0);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "u2"), 0);
	/* Its last name: gone; the inode waits for fsck, marked (decision 0049). */
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, u2, &x), 0);
	EXPECT(x.hdr.flags & POHM_OBJF_UNLINKED);
	pohm_inode_clear(&x);
	EXPECT(k.reads >= 3);	/* setattr, create, the exclusive create */
	EXPECT_EQ_U64(k.mode, 0600);	/* the other host's chmod stands */
	/* A third handle sees both hosts' changes. */
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, a.ino, &x), 0);
	EXPECT_EQ_U64(x.mode & 07777, 0600);
	EXPECT_EQ_U64((uint64_t)x.mtime.sec, 4242);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(count_entries(ns2, d.ino), 7);	/* 0 a b, and f/m twice */
	EXPECT_EQ_INT(nlink_of(ns2, d.ino), 4);
	pohm_inode_clear(&a);
	pohm_inode_clear(&d);
	pohm_ns_close(ns2);
	pohm_ns_close(nsb);
	kept_clear();
}

/* A "new process" renaming in one directory on kept bases (decision 0052):
 * what pohm_ns_rename_ready says, then the rename, with its reads counted. */
struct kept_rename {
	struct pohm_ns *ns;
	uint64_t dir, sino, ddir;	/* ddir: 0 for dir */
	const char *sname, *dname;
	int ready, r, reads;
};

static void *kept_rename_thread(void *arg)
{
	struct kept_rename *k = arg;

	uint64_t dd = k->ddir ? k->ddir : k->dir;

	all_reads = 0;
	k->ready = dd == k->dir ?
			   pohm_ns_rename_ready(k->ns, k->dir, k->sname, k->sino, k->dname) :
			   pohm_ns_move_ready(k->ns, k->dir, k->sname, k->sino, dd, k->dname);
	k->r = pohm_ns_rename_ino(k->ns, k->dir, k->sname, dd, k->dname, 0, k->sino);
	k->reads = all_reads;
	return NULL;
}

static void kept_move_run(struct kept_rename *k, struct pohm_ns *ns, uint64_t dir,
			  const char *sname, uint64_t sino, uint64_t ddir, const char *dname);

static void kept_rename_run(struct kept_rename *k, struct pohm_ns *ns, uint64_t dir,
			    const char *sname, uint64_t sino, const char *dname)
{
	kept_move_run(k, ns, dir, sname, sino, 0, dname);
}

/* kept_rename_run into another directory ddir. */
static void kept_move_run(struct kept_rename *k, struct pohm_ns *ns, uint64_t dir,
			  const char *sname, uint64_t sino, uint64_t ddir, const char *dname)
{
	pthread_t t;

	memset(k, 0, sizeof(*k));
	k->ddir = ddir;
	k->ns = ns;
	k->dir = dir;
	k->sname = sname;
	k->sino = sino;
	k->dname = dname;
	pthread_create(&t, NULL, kept_rename_thread, k);
	pthread_join(t, NULL);
}

/*
 * Decision 0052: a rename in one directory whose kept copies say the target
 * is absent is sent with no read (the cache skips its lookup of the target
 * then).  Another host then makes the target (a file, a directory) under
 * frozen bases: ready still says 1 (the copies are stale), and the rename
 * reads and decides on what is stored: the file is replaced (its last name:
 * a tombstone), the directory refuses a file (EISDIR, nothing moved).  A
 * target in the copy, or a source that is another inode: 0.
 */
TEST(rename_on_kept_bases_reads_nothing_and_a_stale_base_decides_on_a_read)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL;
	struct pohm_inode d, x;
	uint64_t s1, s2, s3, t2;
	struct kept_rename k;
	struct pohm_kv ckv;

	kept_clear();
	counting_kv(&ckv);
	pohm_ns_close(ns);
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &ckv, &opt), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s1", 0644, 0, 0, 0, 0, &x), 0);
	s1 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s2", 0644, 0, 0, 0, 0, &x), 0);
	s2 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s3", 0644, 0, 0, 0, 0, &x), 0);
	s3 = x.ino;
	pohm_inode_clear(&x);

	/* Not ready: the target is in the copy; the source is another inode. */
	EXPECT_EQ_INT(pohm_ns_rename_ready(nsb, d.ino, "s1", s1, "s2"), 0);
	EXPECT_EQ_INT(pohm_ns_rename_ready(nsb, d.ino, "s3", s2, "zz"), 0);
	EXPECT_EQ_INT(pohm_ns_rename_ready(nsb, d.ino, "s1", s1, "s1"), 0);
	/* Unchanged since noted: the move and the ctime, no read. */
	kept_rename_run(&k, nsb, d.ino, "s2", s2, "t1");
	EXPECT_EQ_INT(k.ready, 1);
	EXPECT_EQ_INT(k.r, 0);
	EXPECT_EQ_INT(k.reads, 0);
	EXPECT_EQ_U64(ino_of(nsb, d.ino, "t1"), s2);
	EXPECT_EQ_U64(ino_of(nsb, d.ino, "s2"), 0);

	/* Another "host" makes t2 (a file) and td (a directory); the kept
	 * bases stay as they were. */
	pthread_mutex_lock(&kept_lock);
	kept_frozen = 1;
	pthread_mutex_unlock(&kept_lock);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_create(ns2, d.ino, "t2", 0644, 0, 0, 0, 0, &x), 0);
	t2 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, d.ino, "td", 0755, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	kept_rename_run(&k, nsb, d.ino, "t1", s2, "t2");
	EXPECT_EQ_INT(k.ready, 1);	/* the stale copy says absent */
	EXPECT_EQ_INT(k.r, 0);
	EXPECT(k.reads >= 1);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "t2"), s2);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "t1"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, t2, &x), -ENOENT);	/* replaced: its last name */
	/* (ready is not asserted here: a new thread may get the id, hence
	 * kvmem's peeks, of the one that just read the fresh bucket.) */
	kept_rename_run(&k, nsb, d.ino, "s3", s3, "td");
	EXPECT_EQ_INT(k.r, -EISDIR);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s3"), s3);
	EXPECT(ino_of(ns2, d.ino, "td") != 0);
	EXPECT_EQ_INT(count_entries(ns2, d.ino), 4);	/* s1 s3 t2 td */
	pohm_inode_clear(&d);
	pohm_ns_close(ns2);
	pohm_ns_close(nsb);
	kept_clear();
}

/*
 * Decision 0054: a file moving to another directory on kept copies that say
 * the target is absent: no lookup (the intent, the commit and the finish
 * only).  Under frozen copies another handle makes the target: the commit
 * meets it (EEXIST), the intent is cleared and the rename runs again on
 * reads, replacing it; a directory there refuses the file (EISDIR) with
 * the source as it was, no intent left.
 */
TEST(move_on_kept_bases_reads_nothing_and_meets_a_new_target_by_starting_over)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL;
	struct pohm_inode d, e, x;
	uint64_t s1, s2, s3, t2;
	struct kept_rename k;
	struct pohm_kv ckv;

	kept_clear();
	counting_kv(&ckv);
	pohm_ns_close(ns);
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &ckv, &opt), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "e", 0755, 0, 0, &e), 0);
	EXPECT_EQ_INT(pohm_ns_create(nsb, e.ino, "e0", 0644, 0, 0, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s1", 0644, 0, 0, 0, 0, &x), 0);
	s1 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s2", 0644, 0, 0, 0, 0, &x), 0);
	s2 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s3", 0644, 0, 0, 0, 0, &x), 0);
	s3 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_move_ready(nsb, d.ino, "s1", s1, e.ino, "e0"), 0);	/* there */
	EXPECT_EQ_INT(pohm_ns_move_ready(nsb, d.ino, "s1", s2, e.ino, "zz"), 0);	/* another inode */
	EXPECT_EQ_INT(pohm_ns_move_ready(nsb, POHM_ROOT_INO, "d", d.ino, e.ino, "zz"), 0); /* a dir */
	kept_move_run(&k, nsb, d.ino, "s1", s1, e.ino, "t1");
	EXPECT_EQ_INT(k.ready, 1);
	EXPECT_EQ_INT(k.r, 0);
	EXPECT_EQ_INT(k.reads, 0);
	EXPECT_EQ_U64(ino_of(nsb, e.ino, "t1"), s1);
	EXPECT_EQ_U64(ino_of(nsb, d.ino, "s1"), 0);

	pthread_mutex_lock(&kept_lock);
	kept_frozen = 1;
	pthread_mutex_unlock(&kept_lock);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_create(ns2, e.ino, "t2", 0644, 0, 0, 0, 0, &x), 0);
	t2 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, e.ino, "td", 0755, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	kept_move_run(&k, nsb, d.ino, "s2", s2, e.ino, "t2");
	EXPECT_EQ_INT(k.ready, 1);	/* the stale copy says absent */
	EXPECT_EQ_INT(k.r, 0);
	EXPECT(k.reads >= 1);
	EXPECT_EQ_U64(ino_of(ns2, e.ino, "t2"), s2);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s2"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, t2, &x), -ENOENT);	/* replaced: its last name */
	kept_move_run(&k, nsb, d.ino, "s3", s3, e.ino, "td");
	EXPECT_EQ_INT(k.r, -EISDIR);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s3"), s3);
	/* No intent left on s3: an unlink of it is plain. */
	EXPECT_EQ_INT(pohm_ns_unlink(ns2, d.ino, "s3"), 0);
	EXPECT_EQ_INT(count_entries(ns2, d.ino), 0);
	EXPECT_EQ_INT(count_entries(ns2, e.ino), 4);	/* e0 t1 t2 td */
	pohm_inode_clear(&d);
	pohm_inode_clear(&e);
	pohm_ns_close(ns2);
	pohm_ns_close(nsb);
	kept_clear();
}

/*
 * A move on kept copies (decision 0054) whose source another host
 * replaced meanwhile (a new file renamed over it, as editors save): the
 * intent's CAS loses and finds another inode there.  The name exists, so
 * the move decides on reads and moves what it names now; it failed
 * -ENOENT (session 14 review).
 */
TEST(move_on_kept_bases_of_a_source_another_host_replaced_moves_the_name)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL;
	struct pohm_inode d, e, x;
	uint64_t s4, n4;
	struct kept_rename k;
	struct pohm_kv ckv;

	kept_clear();
	counting_kv(&ckv);
	pohm_ns_close(ns);
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &ckv, &opt), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "e", 0755, 0, 0, &e), 0);
	EXPECT_EQ_INT(pohm_ns_create(nsb, e.ino, "e0", 0644, 0, 0, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(nsb, d.ino, "s4", 0644, 0, 0, 0, 0, &x), 0);
	s4 = x.ino;
	pohm_inode_clear(&x);
	pthread_mutex_lock(&kept_lock);
	kept_frozen = 1;
	pthread_mutex_unlock(&kept_lock);
	ns2 = open_ns(0, 10000);
	/* Another host saves s4 atomically: a new file renamed over it. */
	EXPECT_EQ_INT(pohm_ns_create(ns2, d.ino, "s4.tmp", 0644, 0, 0, 0, 0, &x), 0);
	n4 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_rename(ns2, d.ino, "s4.tmp", d.ino, "s4", 0), 0);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s4"), n4);
	kept_move_run(&k, nsb, d.ino, "s4", s4, e.ino, "t4");
	EXPECT_EQ_INT(k.ready, 1);	/* it did go on the kept copies */
	EXPECT_EQ_INT(k.r, 0);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s4"), 0);
	EXPECT_EQ_U64(ino_of(ns2, e.ino, "t4"), n4);
	EXPECT_EQ_INT(nlink_of(ns2, n4), 1);
	pohm_inode_clear(&d);
	pohm_inode_clear(&e);
	pohm_ns_close(ns2);
	pohm_ns_close(nsb);
	kept_clear();
}

/* A "new process" removing dir/name, whose inode the caller guesses. */
struct kept_rmdir {
	struct pohm_ns *ns;
	uint64_t dir, ino;
	const char *name;
	int r, gone, reads;
};

static void *kept_rmdir_thread(void *arg)
{
	struct kept_rmdir *k = arg;

	all_reads = 0;
	k->r = pohm_ns_rmdir_ino(k->ns, k->dir, k->name, &k->ino, &k->gone);
	k->reads = all_reads;
	return NULL;
}

static void kept_rmdir_run(struct kept_rmdir *k, struct pohm_ns *ns, uint64_t dir,
			   const char *name, uint64_t ino)
{
	pthread_t t;

	memset(k, 0, sizeof(*k));
	k->ns = ns;
	k->dir = dir;
	k->name = name;
	k->ino = ino;
	pthread_create(&t, NULL, kept_rmdir_thread, k);
	pthread_join(t, NULL);
}

/*
 * Decision 0055: an rmdir on kept copies reads nothing (the intent on the
 * kept bucket, the seal created on the empty directory's absent root
 * bucket, the commit, the tombstone with the parent's count).  Under
 * frozen copies another handle fills one directory (the seal's create
 * fails, the walk finds it not empty: ENOTEMPTY, the file and the name
 * stay, no intent left) and replaces another by a new directory of the
 * same name (the intent's read finds another inode: the lookup's answer,
 * the new one, is removed).
 */
TEST(rmdir_on_kept_bases_reads_nothing_and_a_stale_base_decides_on_a_read)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL;
	struct pohm_inode d, x;
	uint64_t s1, s2, s3, n3;
	struct kept_rmdir k;
	struct pohm_kv ckv;

	kept_clear();
	counting_kv(&ckv);
	pohm_ns_close(ns);
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &ckv, &opt), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, d.ino, "s1", 0755, 0, 0, &x), 0);
	s1 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, d.ino, "s2", 0755, 0, 0, &x), 0);
	s2 = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_mkdir(nsb, d.ino, "s3", 0755, 0, 0, &x), 0);
	s3 = x.ino;
	pohm_inode_clear(&x);
	kept_rmdir_run(&k, nsb, d.ino, "s1", s1);
	EXPECT_EQ_INT(k.r, 0);
	EXPECT_EQ_INT(k.reads, 0);
	EXPECT_EQ_INT(k.gone, 1);
	EXPECT_EQ_U64(ino_of(nsb, d.ino, "s1"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(nsb, s1, &x), -ENOENT);
	EXPECT_EQ_U64(nlink_of(nsb, d.ino), 4);

	pthread_mutex_lock(&kept_lock);
	kept_frozen = 1;
	pthread_mutex_unlock(&kept_lock);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_create(ns2, s2, "f", 0644, 0, 0, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_rmdir(ns2, d.ino, "s3"), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, d.ino, "s3", 0755, 0, 0, &x), 0);
	n3 = x.ino;
	pohm_inode_clear(&x);
	kept_rmdir_run(&k, nsb, d.ino, "s2", s2);
	EXPECT_EQ_INT(k.r, -ENOTEMPTY);
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s2"), s2);
	EXPECT(ino_of(ns2, s2, "f") != 0);
	EXPECT_EQ_INT(pohm_ns_create(ns2, s2, "g", 0644, 0, 0, 0, 0, &x), 0);	/* not sealed */
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_rename(ns2, d.ino, "s2", d.ino, "s2b", 0), 0);	/* no intent */
	kept_rmdir_run(&k, nsb, d.ino, "s3", s3);
	EXPECT_EQ_INT(k.r, 0);
	EXPECT_EQ_U64(k.ino, n3);	/* the name's inode, as the lookup found it */
	EXPECT_EQ_U64(ino_of(ns2, d.ino, "s3"), 0);
	EXPECT_EQ_INT(count_entries(ns2, d.ino), 1);	/* s2b */
	EXPECT_EQ_U64(nlink_of(ns2, d.ino), 3);
	pohm_inode_clear(&d);
	pohm_ns_close(ns2);
	pohm_ns_close(nsb);
	kept_clear();
}

/* A "new process" that only reads a directory's attributes the way the
 * cache's walk does (pohm_ns_getattr_dir), then one that guesses a name. */
struct guess_call {
	struct pohm_ns *ns;
	uint64_t dir, ino;
	const char *name;
	int r;
	uint8_t type;
};

static void *getattr_dir_thread(void *arg)
{
	struct guess_call *g = arg;
	struct pohm_inode x;

	g->r = pohm_ns_getattr_dir(g->ns, g->dir, &x);
	if (!g->r) {
		g->ino = x.ino;
		pohm_inode_clear(&x);
	}
	return NULL;
}

static void *guess_thread(void *arg)
{
	struct guess_call *g = arg;

	g->r = pohm_ns_lookup_guess(g->ns, g->dir, g->name, &g->ino, &g->type);
	return NULL;
}

static void guess_run(void *(*fn)(void *), struct guess_call *g, struct pohm_ns *ns,
		      uint64_t dir, const char *name)
{
	pthread_t t;

	memset(g, 0, sizeof(*g));
	g->ns = ns;
	g->dir = dir;
	g->name = name;
	pthread_create(&t, NULL, fn, g);
	pthread_join(t, NULL);
}

/*
 * Decision 0053: a directory's attributes read with its first bucket along
 * leave that bucket as a kept copy; a new "process" guesses a name's inode
 * from it with no read, and the guess is only that: after another host
 * replaced the name, the bucket-and-inode check of the guess is -ESTALE
 * and the lookup finds the new inode.  A name not in the copy: no guess.
 */
TEST(lookup_guess_from_a_kept_bucket_is_confirmed_by_a_fresh_read)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL;
	struct pohm_inode d, f, x;
	struct guess_call g;
	uint64_t f2;

	pohm_ns_close(ns);
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &kv, &opt), 0);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns2, d.ino, "f", 0644, 0, 0, 0, 0, &f), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, d.ino, "sub", 0755, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	kept_clear();
	/* Nothing kept: no guess. */
	guess_run(guess_thread, &g, nsb, d.ino, "f");
	EXPECT_EQ_INT(g.r, -ENOENT);
	guess_run(getattr_dir_thread, &g, nsb, d.ino, NULL);
	EXPECT_EQ_INT(g.r, 0);
	EXPECT_EQ_U64(g.ino, d.ino);
	guess_run(guess_thread, &g, nsb, d.ino, "f");
	EXPECT_EQ_INT(g.r, 0);
	EXPECT_EQ_U64(g.ino, f.ino);
	EXPECT_EQ_INT(g.type, DT_REG);
	guess_run(guess_thread, &g, nsb, d.ino, "sub");
	EXPECT_EQ_INT(g.r, 0);
	EXPECT_EQ_INT(g.type, DT_DIR);
	guess_run(guess_thread, &g, nsb, d.ino, "nope");
	EXPECT_EQ_INT(g.r, -ENOENT);
	EXPECT_EQ_INT(pohm_ns_lookup_check(nsb, d.ino, "f", f.ino, &x), 0);
	pohm_inode_clear(&x);
	/* Another host replaces f: the guess is stale, the check says so. */
	pthread_mutex_lock(&kept_lock);
	kept_frozen = 1;
	pthread_mutex_unlock(&kept_lock);
	EXPECT_EQ_INT(pohm_ns_unlink(ns2, d.ino, "f"), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns2, d.ino, "f", 0644, 0, 0, 0, 0, &x), 0);
	f2 = x.ino;
	pohm_inode_clear(&x);
	guess_run(guess_thread, &g, nsb, d.ino, "f");
	EXPECT_EQ_INT(g.r, 0);
	EXPECT_EQ_U64(g.ino, f.ino);	/* stale */
	EXPECT_EQ_INT(pohm_ns_lookup_check(nsb, d.ino, "f", g.ino, &x), -ESTALE);
	EXPECT_EQ_U64(ino_of(nsb, d.ino, "f"), f2);
	pohm_inode_clear(&f);
	pohm_inode_clear(&d);
	pohm_ns_close(ns2);
	pohm_ns_close(nsb);
	kept_clear();
}

struct absent_call {
	struct pohm_ns *ns;
	uint64_t dir, max_age;
	int present_said_absent, missing_said_absent, lookups;
};

/* Lookups of n0..n39 (they read the buckets: copies kept), with lookups != 0. */
static void *absent_thread(void *arg)
{
	struct absent_call *a = arg;
	char name[16];
	int i;

	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		if (a->lookups) {
			EXPECT(ino_of(a->ns, a->dir, name) != 0);
			continue;
		}
		a->present_said_absent += pohm_ns_lookup_absent(a->ns, a->dir, name, a->max_age);
		snprintf(name, sizeof(name), "m%d", i);
		a->missing_said_absent += pohm_ns_lookup_absent(a->ns, a->dir, name, a->max_age);
	}
	return NULL;
}

static void absent_run(struct absent_call *a, struct pohm_ns *ns, uint64_t dir, uint64_t max_age,
		       int lookups)
{
	pthread_t t;

	memset(a, 0, sizeof(*a));
	a->ns = ns;
	a->dir = dir;
	a->max_age = max_age;
	a->lookups = lookups;
	pthread_create(&t, NULL, absent_thread, a);
	pthread_join(t, NULL);
}

/*
 * Decision 0061: a name is absent, with no read, only by a young copy of
 * the name's own bucket (through the split buckets' copies): never for a
 * present name of a split directory, nothing without copies or with an
 * age limit they exceed, and some missing names once the leaves are kept.
 */
TEST(lookup_absent_from_kept_buckets_of_a_split_directory)
{
	struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12, .base_note = kept_note,
				    .base_load = kept_load, .base_max_ns = 30000000000ULL };
	struct pohm_ns *ns = fresh(0), *ns2 = NULL, *nsb = NULL, *nsc = NULL;
	struct ns_bucket_ref root;
	struct pohm_inode d, x;
	struct absent_call a;
	char name[16];
	int i;

	pohm_ns_close(ns);
	ns2 = open_ns(4, 10000);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		EXPECT_EQ_INT(pohm_ns_create(ns2, d.ino, name, 0644, 0, 0, 0, 0, &x), 0);
		pohm_inode_clear(&x);
	}
	EXPECT_EQ_INT(ns_bucket_read_at(ns2, d.ino, 0, 0, &root), 0);
	EXPECT_EQ_INT(root.bk.state, POHM_BUCKET_SPLIT);	/* 40 names, 4 a bucket */
	ns_bucket_release(&root);
	kept_clear();
	EXPECT_EQ_INT(pohm_ns_open(&nsb, &kv, &opt), 0);
	EXPECT_EQ_INT(pohm_ns_open(&nsc, &kv, &opt), 0);
	/* Nothing kept: nothing absent. */
	absent_run(&a, nsc, d.ino, 30000000000ULL, 0);
	EXPECT_EQ_INT(a.present_said_absent, 0);
	EXPECT_EQ_INT(a.missing_said_absent, 0);
	/* One "process" looks every name up: the buckets it read are kept. */
	absent_run(&a, nsb, d.ino, 30000000000ULL, 1);
	/* Another, with no depth hint: present names never absent, missing
	 * ones absent by their leaf's copy. */
	absent_run(&a, nsc, d.ino, 30000000000ULL, 0);
	EXPECT_EQ_INT(a.present_said_absent, 0);
	EXPECT(a.missing_said_absent > 0);
	/* The same in the process that read them (its thread copies, its hint). */
	absent_run(&a, nsb, d.ino, 30000000000ULL, 0);
	EXPECT_EQ_INT(a.present_said_absent, 0);
	EXPECT(a.missing_said_absent > 0);
	/* A limit under the kept copies' window (base_max_ns): they are not
	 * taken; and no limit at all: nothing. */
	absent_run(&a, nsc, d.ino, 500, 0);
	EXPECT_EQ_INT(a.missing_said_absent, 0);
	absent_run(&a, nsc, d.ino, 0, 0);
	EXPECT_EQ_INT(a.missing_said_absent, 0);
	pohm_inode_clear(&d);
	pohm_ns_close(nsc);
	pohm_ns_close(nsb);
	pohm_ns_close(ns2);
	kept_clear();
}

/*
 * Issue 23: a rename inside one bucket is one bucket CAS (no intent) plus
 * the inode's ctime; one that replaces a file drops its link; an unlink
 * removes the name from the bucket its lookup just read, without a read.
 */
TEST(rename_in_one_bucket_is_one_put_and_unlink_reads_its_bucket_once)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_kv ckv;
	struct pohm_inode d, a, b, x;
	long puts;

	counting_kv(&ckv);
	pohm_ns_close(ns);
	ns = NULL;
	{
		struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12 };

		EXPECT_EQ_INT(pohm_ns_open(&ns, &ckv, &opt), 0);
	}
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "a", 0644, 0, 0, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "b", 0644, 0, 0, 0, 0, &b), 0);
	puts = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d.ino, "a", d.ino, "a2", 0), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - puts), 2);	/* the bucket, a's ctime (4 before) */
	EXPECT_EQ_U64(ino_of(ns, d.ino, "a2"), a.ino);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "a"), 0);
	/* Over b: b loses its only link. */
	puts = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d.ino, "a2", d.ino, "b", 0), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - puts), 3);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "b"), a.ino);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, b.ino, &x), -ENOENT);
	EXPECT_EQ_INT(count_entries(ns, d.ino), 1);
	/* An unlink: the lookup's read serves the bucket CAS. */
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d.ino, "b"), 0);
	EXPECT_EQ_INT(all_reads, 1);	/* the bucket; a's inode is as this thread wrote it (3 before) */
	EXPECT_EQ_INT(count_entries(ns, d.ino), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, a.ino, &x), -ENOENT);
	pohm_inode_clear(&a);
	pohm_inode_clear(&b);
	pohm_inode_clear(&d);
	pohm_ns_close(ns);
}

TEST(create_lookup_errors)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_inode in;
	uint64_t ino;
	char longname[300];

	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 1000, 1000, 0, POHM_CREATE_EXCL, &in), 0);
	EXPECT(S_ISREG(in.mode));
	EXPECT_EQ_INT(in.uid, 1000);
	EXPECT_EQ_INT(in.nlink, 1);
	ino = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_U64(ino_of(ns, 1, "a"), ino);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), -EEXIST);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &in), 1);
	EXPECT_EQ_U64(in.ino, ino);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, 1, "nope", &ino, NULL), -ENOENT);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, ino_of(ns, 1, "a"), "x", &ino, NULL), -ENOTDIR);
	EXPECT_EQ_INT(pohm_ns_create(ns, ino_of(ns, 1, "a"), "x", 0644, 0, 0, 0, 0, NULL), -ENOTDIR);
	EXPECT_EQ_INT(pohm_ns_create(ns, 12345, "x", 0644, 0, 0, 0, 0, NULL), -ENOENT);
	memset(longname, 'n', 256);
	longname[256] = 0;
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, longname, 0644, 0, 0, 0, 0, NULL), -ENAMETOOLONG);
	longname[255] = 0;
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, longname, 0644, 0, 0, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a/b", 0644, 0, 0, 0, 0, NULL), -EINVAL);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "a", 0755, 0, 0, NULL), -EEXIST);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "nope"), -ENOENT);
	pohm_ns_close(ns);
}

TEST(mkdir_rmdir_nlink)
{
	struct pohm_ns *ns = fresh(0);
	uint64_t d, e, up;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	EXPECT_EQ_INT(nlink_of(ns, 1), 3);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, d, "e", 0755, 0, 0, NULL), 0);
	e = ino_of(ns, d, "e");
	EXPECT_EQ_INT(nlink_of(ns, d), 3);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, e, "..", &up, NULL), 0);
	EXPECT_EQ_U64(up, d);
	EXPECT_EQ_INT(pohm_ns_rmdir(ns, 1, "d"), -ENOTEMPTY);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "e"), -EISDIR);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "f", 0644, 0, 0, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_rmdir(ns, d, "f"), -ENOTDIR);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "f"), 0);
	EXPECT_EQ_INT(pohm_ns_rmdir(ns, d, "e"), 0);
	EXPECT_EQ_INT(nlink_of(ns, d), 2);
	EXPECT_EQ_INT(pohm_ns_lookup(ns, d, "e", &up, NULL), -ENOENT);
	EXPECT_EQ_INT(pohm_ns_rmdir(ns, 1, "d"), 0);
	EXPECT_EQ_INT(nlink_of(ns, 1), 2);
	/* A removed directory takes no new entries. */
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "late", 0644, 0, 0, 0, 0, NULL), -ENOENT);
	EXPECT_EQ_INT(pohm_ns_rmdir(ns, 1, "."), -EINVAL);
	pohm_ns_close(ns);
}

TEST(split_and_readdir_exactly_once)
{
	static struct listing l;
	struct pohm_ns *ns = fresh(8);
	char name[32];
	int i, j, dup = 0, miss = 0;

	for (i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, name, 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	}
	for (i = 0; i < 600; i += 7) {
		snprintf(name, sizeof(name), "f%04d", i);
		EXPECT(ino_of(ns, 1, name) != 0);
	}
	l.n = 0;
	EXPECT_EQ_INT(pohm_ns_readdir(ns, 1, collect, &l), 0);
	EXPECT_EQ_INT(l.n, 600);
	for (i = 0; i < 600; i++) {
		int seen = 0;

		snprintf(name, sizeof(name), "f%04d", i);
		for (j = 0; j < l.n; j++)
			seen += !strcmp(l.names[j], name);
		dup += seen > 1;
		miss += seen == 0;
	}
	EXPECT_EQ_INT(dup, 0);
	EXPECT_EQ_INT(miss, 0);
	/* 600 names in buckets of ≤ 8 entries: the directory split many times. */
	EXPECT(pohm_kvmem_count(&kv) > 600 + 600 / 8);
	/* A second handle (cold hint) finds everything too. */
	{
		struct pohm_ns *ns2 = open_ns(8, 10000);

		EXPECT(ino_of(ns2, 1, "f0599") != 0);
		EXPECT(ino_of(ns2, 1, "f0000") != 0);
		pohm_ns_close(ns2);
	}
	for (i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, name), 0);
	}
	EXPECT_EQ_INT(count_entries(ns, 1), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "x", 0755, 0, 0, NULL), 0);
	pohm_ns_close(ns);
}

/* pohm_ns_unlink_ino in a thread of its own (nothing peeked yet). */
struct unlink_guess {
	struct pohm_ns *ns;
	uint64_t dir, ino;
	const char *name;
	int r, gone, reads, rmdir;
};

static void *unlink_guess_thread(void *arg)
{
	struct unlink_guess *u = arg;

	all_reads = 0;
	u->r = u->rmdir ? pohm_ns_rmdir_ino(u->ns, u->dir, u->name, &u->ino, &u->gone) :
			  pohm_ns_unlink_ino(u->ns, u->dir, u->name, &u->ino, &u->gone);
	u->reads = all_reads;
	return NULL;
}

static void unlink_guess(struct pohm_ns *ns, struct unlink_guess *u, uint64_t dir,
			 const char *name, uint64_t guess)
{
	struct pohm_setattr sa = { .mask = POHM_SET_MODE, .mode = 0600 };
	uint64_t ino = 0;
	pthread_t t;

	/* A new thread may inherit a finished one's peeks (kvmem keys them by
	 * thread): a change by this one makes them stale. */
	if (!pohm_ns_lookup(ns, dir, name, &ino, NULL))
		pohm_ns_setattr(ns, ino, &sa, NULL);

	u->ns = ns;
	u->dir = dir;
	u->name = name;
	u->ino = guess;
	u->rmdir = 0;
	pthread_create(&t, NULL, unlink_guess_thread, u);
	pthread_join(t, NULL);
}

/*
 * Issue 23: an unlink told the name's inode reads it along with the lookup
 * (one read in all, two without the guess), and says whether the inode's
 * last name went, as its link count's CAS left it: the cache needs no read
 * to know whether to forget the inode.  An rmdir says it wrote the
 * directory's tombstone.
 */
TEST(unlink_with_a_guess_reads_once_and_tells_the_last_name)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_kv ckv;
	struct pohm_inode d, a;
	struct unlink_guess u;

	counting_kv(&ckv);
	pohm_ns_close(ns);
	ns = NULL;
	{
		struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12 };

		EXPECT_EQ_INT(pohm_ns_open(&ns, &ckv, &opt), 0);
	}
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "a", 0644, 0, 0, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_link(ns, a.ino, d.ino, "b", NULL), 0);
	EXPECT_EQ_INT(pohm_ns_link(ns, a.ino, d.ino, "c", NULL), 0);
	/* No guess: the lookup, then the inode's read for its link count. */
	unlink_guess(ns, &u, d.ino, "a", 0);
	EXPECT_EQ_INT(u.r, 0);
	EXPECT_EQ_U64(u.ino, a.ino);
	EXPECT_EQ_INT(u.gone, 0);
	EXPECT_EQ_INT(u.reads, 2);
	/* The right guess: one read. */
	unlink_guess(ns, &u, d.ino, "b", a.ino);
	EXPECT_EQ_INT(u.r, 0);
	EXPECT_EQ_INT(u.gone, 0);
	EXPECT_EQ_INT(u.reads, 1);
	EXPECT_EQ_INT(nlink_of(ns, a.ino), 1);
	/* A wrong guess costs nothing but the read; the last name goes. */
	unlink_guess(ns, &u, d.ino, "c", d.ino + 1);
	EXPECT_EQ_INT(u.r, 0);
	EXPECT_EQ_U64(u.ino, a.ino);
	EXPECT_EQ_INT(u.gone, 1);
	EXPECT_EQ_INT(u.reads, 2);
	pohm_inode_clear(&a);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, u.ino, &a), -ENOENT);
	/* A missing name: nothing to tell. */
	unlink_guess(ns, &u, d.ino, "c", u.ino);
	EXPECT_EQ_INT(u.r, -ENOENT);
	EXPECT_EQ_INT(u.gone, -1);
	/* rmdir the same way: the tombstone it wrote, no read of it. */
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, d.ino, "s", 0755, 0, 0, &a), 0);
	u.rmdir = 1;
	{
		pthread_t t;

		u.ino = a.ino;
		u.name = "s";
		pthread_create(&t, NULL, unlink_guess_thread, &u);
		pthread_join(t, NULL);
	}
	EXPECT_EQ_INT(u.r, 0);
	EXPECT_EQ_U64(u.ino, a.ino);
	EXPECT_EQ_INT(u.gone, 1);
	pohm_inode_clear(&a);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, u.ino, &a), -ENOENT);
	EXPECT_EQ_INT(nlink_of(ns, d.ino), 2);
	pohm_inode_clear(&d);
	pohm_ns_close(ns);
}

/*
 * Issue 23: a rename inside a directory whose bucket this thread just read
 * makes no read of it (the CAS against that copy is the check); a stale
 * copy loses its CAS and the rules are judged on a read: NOREPLACE over a
 * name another thread made meanwhile is EEXIST, a plain rename replaces it.
 */
TEST(rename_on_the_bucket_just_read_reads_nothing_and_loses_safely)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	struct pohm_kv ckv;
	struct pohm_inode d, a, x;
	struct other_change o;
	uint64_t b;
	pthread_t t;

	counting_kv(&ckv);
	pohm_ns_close(ns);
	ns = NULL;
	{
		struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12 };

		EXPECT_EQ_INT(pohm_ns_open(&ns, &ckv, &opt), 0);
	}
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "a0", 0644, 0, 0, 0, 0, &a), 0);
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_rename(ns, d.ino, "a0", d.ino, "a", 0), 0);
	EXPECT_EQ_INT(all_reads, 0);	/* bucket and inode as this thread wrote them (2 before) */
	EXPECT_EQ_U64(ino_of(ns, d.ino, "a"), a.ino);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "a0"), 0);

	/* Another thread makes "b": this thread's copy of the bucket is stale. */
	ns2 = open_ns(0, 10000);
	o.ns = ns2;
	o.dir = d.ino;
	o.ino = a.ino;
	pthread_create(&t, NULL, other_thread, &o);
	pthread_join(t, NULL);
	EXPECT_EQ_INT(o.r1, 0);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d.ino, "a", d.ino, "b", POHM_RENAME_NOREPLACE), -EEXIST);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "a"), a.ino);
	b = ino_of(ns, d.ino, "b");
	EXPECT(b != 0 && b != a.ino);
	/* The other thread changes a's inode (b exists: only its chmod); a
	 * plain rename replaces b, and its ctime CAS on the stale copy of a
	 * loses, reads, and keeps the chmod. */
	pthread_create(&t, NULL, other_thread, &o);
	pthread_join(t, NULL);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d.ino, "a", d.ino, "b", 0), 0);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "b"), a.ino);
	EXPECT_EQ_U64(ino_of(ns, d.ino, "a"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, b, &x), -ENOENT);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, a.ino, &x), 0);
	EXPECT_EQ_U64(x.nlink, 1);
	EXPECT_EQ_U64(x.mode & 07777, 0600);	/* the other thread's chmod stands */
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(count_entries(ns, d.ino), 1);
	pohm_inode_clear(&a);
	pohm_inode_clear(&d);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * Issue 23: a rename across directories reads the target and the source
 * (with the source's inode, when the caller guesses it) once each, or not
 * at all on copies that say the plain case (decision 0054); the
 * intent, the commit at the target and the intent's finish CAS the
 * buckets as this thread just read or wrote them (5 reads before).
 */
TEST(rename_across_directories_reads_each_bucket_once)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_kv ckv;
	struct pohm_inode d1, d2, a, x;

	counting_kv(&ckv);
	pohm_ns_close(ns);
	ns = NULL;
	{
		struct pohm_ns_opts opt = { .fsid = "test", .chunk_shift = 12 };

		EXPECT_EQ_INT(pohm_ns_open(&ns, &ckv, &opt), 0);
	}
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d1", 0755, 0, 0, &d1), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, POHM_ROOT_INO, "d2", 0755, 0, 0, &d2), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d1.ino, "a", 0644, 0, 0, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d2.ino, "o", 0644, 0, 0, 0, 0, &x), 0);
	pohm_inode_clear(&x);
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_rename_ino(ns, d1.ino, "a", d2.ino, "b", 0, a.ino), 0);
	/* No read: both buckets and a's inode are this thread's copies from
	 * its creates, which say a is there and b absent (decision 0054; one
	 * get_n of both directories and buckets in session 12, 2 in 10). */
	EXPECT_EQ_INT(all_reads, 0);
	EXPECT_EQ_U64(ino_of(ns, d2.ino, "b"), a.ino);
	EXPECT_EQ_U64(ino_of(ns, d1.ino, "a"), 0);
	EXPECT_EQ_INT(count_entries(ns, d1.ino), 0);
	EXPECT_EQ_INT(count_entries(ns, d2.ino), 2);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, a.ino, &x), 0);
	EXPECT_EQ_U64(x.nlink, 1);
	pohm_inode_clear(&x);
	/* Back over o: the commit replaces it, o loses its only link. */
	EXPECT_EQ_INT(pohm_ns_create(ns, d1.ino, "o", 0644, 0, 0, 0, 0, &x), 0);
	EXPECT_EQ_INT(pohm_ns_rename_ino(ns, d2.ino, "b", d1.ino, "o", 0, a.ino), 0);
	EXPECT_EQ_U64(ino_of(ns, d1.ino, "o"), a.ino);
	pohm_inode_clear(&d2);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, x.ino, &d2), -ENOENT);
	pohm_inode_clear(&x);
	pohm_inode_clear(&a);
	pohm_inode_clear(&d1);
	pohm_ns_close(ns);
}

TEST(hardlinks)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_inode in;
	uint64_t a;

	pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL);
	pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &in);
	a = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_link(ns, a, ino_of(ns, 1, "d"), "b", NULL), 0);
	EXPECT_EQ_INT(pohm_ns_link(ns, a, 1, "c", NULL), 0);
	EXPECT_EQ_INT(nlink_of(ns, a), 3);
	EXPECT_EQ_INT(pohm_ns_link(ns, a, 1, "c", NULL), -EEXIST);
	EXPECT_EQ_INT(nlink_of(ns, a), 3);
	EXPECT_EQ_INT(pohm_ns_link(ns, ino_of(ns, 1, "d"), 1, "dl", NULL), -EPERM);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "a"), 0);
	EXPECT_EQ_INT(nlink_of(ns, a), 2);
	EXPECT_EQ_U64(ino_of(ns, ino_of(ns, 1, "d"), "b"), a);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "c"), 0);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, ino_of(ns, 1, "d"), "b"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, a, &in), -ENOENT);	/* last name gone */
	pohm_ns_close(ns);
}

TEST(symlinks_and_resolve)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_inode in;
	uint64_t d, ino;

	pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL);
	d = ino_of(ns, 1, "d");
	pohm_ns_create(ns, d, "f", 0644, 0, 0, 0, 0, NULL);
	EXPECT_EQ_INT(pohm_ns_symlink(ns, 1, "l", "d/f", 0, 0, &in), 0);
	EXPECT_EQ_STR(in.target, "d/f");
	EXPECT_EQ_U64(in.size, 3);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_symlink(ns, 1, "ld", "d", 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_symlink(ns, 1, "loop", "loop", 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_symlink(ns, 1, "out", "../x", 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_symlink(ns, 1, "abs", "/etc/passwd", 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/l", 1, &ino), 0);
	EXPECT_EQ_U64(ino, ino_of(ns, d, "f"));
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/l", 0, &ino), 0);
	EXPECT_EQ_U64(ino, ino_of(ns, 1, "l"));
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "ld/./f", 0, &ino), 0);
	EXPECT_EQ_U64(ino, ino_of(ns, d, "f"));
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "d/../d/f", 0, &ino), 0);
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/loop", 1, &ino), -ELOOP);
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/out", 1, &ino), -EXDEV);
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/abs", 1, &ino), -EXDEV);
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/d/f/x", 1, &ino), -ENOTDIR);
	EXPECT_EQ_INT(pohm_ns_resolve(ns, "/d/nope", 1, &ino), -ENOENT);
	pohm_ns_close(ns);
}

TEST(rename_rules)
{
	struct pohm_ns *ns = fresh(0);
	uint64_t a, b, d, e, sub;

	pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, NULL);
	pohm_ns_create(ns, 1, "b", 0644, 0, 0, 0, 0, NULL);
	pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL);
	pohm_ns_mkdir(ns, 1, "e", 0755, 0, 0, NULL);
	a = ino_of(ns, 1, "a");
	b = ino_of(ns, 1, "b");
	d = ino_of(ns, 1, "d");
	e = ino_of(ns, 1, "e");
	/* Replace a file: b's inode goes. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "a", 1, "b", 0), 0);
	EXPECT_EQ_U64(ino_of(ns, 1, "b"), a);
	EXPECT_EQ_U64(ino_of(ns, 1, "a"), 0);
	EXPECT_EQ_INT(nlink_of(ns, b), 0);
	/* Across directories. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "b", d, "moved", 0), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "moved"), a);
	EXPECT_EQ_INT(count_entries(ns, 1), 2);
	/* Type clashes and non-empty targets. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, d, "moved", 1, "e", 0), -EISDIR);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "e", d, "moved", 0), -ENOTDIR);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "e", 1, "d", 0), -ENOTEMPTY);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "nope", 1, "x", 0), -ENOENT);
	/* NOREPLACE and EXCHANGE. */
	pohm_ns_create(ns, 1, "c", 0644, 0, 0, 0, 0, NULL);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "c", d, "moved", POHM_RENAME_NOREPLACE), -EEXIST);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "c", d, "moved", POHM_RENAME_EXCHANGE), 0);
	EXPECT_EQ_U64(ino_of(ns, 1, "c"), a);
	EXPECT(ino_of(ns, d, "moved") != a && ino_of(ns, d, "moved") != 0);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "c", 1, "zz", POHM_RENAME_EXCHANGE), -ENOENT);
	/* A directory into its own subtree. */
	pohm_ns_mkdir(ns, d, "sub", 0755, 0, 0, NULL);
	sub = ino_of(ns, d, "sub");
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "d", sub, "x", 0), -EINVAL);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "d", d, "x", 0), -EINVAL);
	/* Directory across parents: parent and nlinks follow. */
	EXPECT_EQ_INT(nlink_of(ns, d), 3);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d, "sub", e, "sub2", 0), 0);
	EXPECT_EQ_INT(nlink_of(ns, d), 2);
	EXPECT_EQ_INT(nlink_of(ns, e), 3);
	{
		uint64_t up;

		EXPECT_EQ_INT(pohm_ns_lookup(ns, sub, "..", &up, NULL), 0);
		EXPECT_EQ_U64(up, e);
	}
	/* Replace an empty directory with a directory. */
	pohm_ns_mkdir(ns, 1, "empty", 0755, 0, 0, NULL);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "e", 1, "empty", 0), 0);
	EXPECT_EQ_U64(ino_of(ns, 1, "empty"), e);
	/* Same name: nothing happens. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "empty", 1, "empty", 0), 0);
	pohm_ns_close(ns);
}

TEST(setattr_times_and_xattrs)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_setattr sa = { 0 };
	struct pohm_inode in;
	char buf[64];
	uint64_t a;

	pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &in);
	a = in.ino;
	pohm_inode_clear(&in);
	sa.mask = POHM_SET_MODE | POHM_SET_UID | POHM_SET_MTIME | POHM_SET_ATIME;
	sa.mode = 04711;
	sa.uid = 42;
	sa.mtime.sec = 4102444800LL;	/* 2100-01-01 */
	sa.mtime.nsec = 123456789;
	sa.atime.sec = -86400;		/* 1969-12-31 */
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, &in), 0);
	EXPECT_EQ_INT(in.mode, S_IFREG | 04711);
	EXPECT_EQ_INT(in.uid, 42);
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, a, &in), 0);
	EXPECT_EQ_U64(in.mtime.sec, 4102444800LL);
	EXPECT_EQ_INT(in.mtime.nsec, 123456789);
	EXPECT_EQ_INT(in.atime.sec, -86400);
	pohm_inode_clear(&in);

	EXPECT_EQ_INT(pohm_ns_setxattr(ns, a, "user.k", "val", 3, 0), 0);
	EXPECT_EQ_INT(pohm_ns_setxattr(ns, a, "user.k", "v2", 2, POHM_XATTR_CREATE), -EEXIST);
	EXPECT_EQ_INT(pohm_ns_setxattr(ns, a, "user.n", "v2", 2, POHM_XATTR_REPLACE), -ENODATA);
	EXPECT_EQ_INT(pohm_ns_setxattr(ns, a, "user.e", "", 0, 0), 0);
	EXPECT_EQ_INT(pohm_ns_getxattr(ns, a, "user.k", NULL, 0), 3);
	EXPECT_EQ_INT(pohm_ns_getxattr(ns, a, "user.k", buf, 2), -ERANGE);
	EXPECT_EQ_INT(pohm_ns_getxattr(ns, a, "user.k", buf, sizeof(buf)), 3);
	EXPECT(!memcmp(buf, "val", 3));
	EXPECT_EQ_INT(pohm_ns_getxattr(ns, a, "user.e", buf, sizeof(buf)), 0);
	EXPECT_EQ_INT(pohm_ns_listxattr(ns, a, buf, sizeof(buf)), 14);
	EXPECT(!memcmp(buf, "user.k\0user.e\0", 14));
	EXPECT_EQ_INT(pohm_ns_removexattr(ns, a, "user.k"), 0);
	EXPECT_EQ_INT(pohm_ns_removexattr(ns, a, "user.k"), -ENODATA);
	EXPECT_EQ_INT(pohm_ns_getxattr(ns, a, "user.k", buf, sizeof(buf)), -ENODATA);
	pohm_ns_close(ns);
}

/* Based times (issue 18): a time sent with its base is kept from the stored
 * one only when that moved since the base and is newer; with the stored
 * time still the base, it is set, backwards too; nothing left: no write. */
TEST(setattr_based_times_never_move_a_newer_stored_time_back)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_setattr sa = { 0 };
	struct pohm_inode in;
	uint64_t a, v;

	pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &in);
	a = in.ino;
	pohm_inode_clear(&in);
	sa.mask = POHM_SET_MTIME;
	sa.mtime.sec = 2000000000;		/* the stored time: 2033 */
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, NULL), 0);
	/* Stored = base: a change from it, even backwards, is set. */
	sa.based = POHM_SET_MTIME;
	sa.base_mtime.sec = 2000000000;
	sa.mtime.sec = 1000000000;		/* 2001 */
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, &in), 0);
	EXPECT_EQ_U64(in.mtime.sec, 1000000000);
	pohm_inode_clear(&in);
	/* Stored (2001) moved since the base (2033)... and is older than the
	 * value sent: set. */
	sa.mtime.sec = 1500000000;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, &in), 0);
	EXPECT_EQ_U64(in.mtime.sec, 1500000000);
	pohm_inode_clear(&in);
	/* Stored (2017) moved since the base (2033) and is newer than the
	 * value sent (2001): kept, and with nothing else to set, nothing is
	 * written (the version stays). */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, a, &in), 0);
	v = in.version;
	pohm_inode_clear(&in);
	sa.mtime.sec = 1000000000;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, &in), 0);
	EXPECT_EQ_U64(in.mtime.sec, 1500000000);
	EXPECT_EQ_U64(in.version, v);
	pohm_inode_clear(&in);
	/* With a mode beside it: the mode is set, the time kept. */
	sa.mask |= POHM_SET_MODE;
	sa.mode = 0600;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, &in), 0);
	EXPECT_EQ_U64(in.mtime.sec, 1500000000);
	EXPECT_EQ_INT(in.mode & 07777, 0600);
	EXPECT_EQ_U64(in.version, v + 1);
	pohm_inode_clear(&in);
	pohm_ns_close(ns);
}

/* Another thread's chmod (its own peek: this thread's copy goes stale). */
struct chmod_arg {
	struct pohm_ns *ns;
	uint64_t ino;
	int r;
};

static void *chmod_thread(void *p)
{
	struct chmod_arg *a = p;
	struct pohm_setattr sa = { .mask = POHM_SET_MODE, .mode = 0600 };

	a->r = pohm_ns_setattr(a->ns, a->ino, &sa, NULL);
	return NULL;
}

/*
 * pohm_ns_commit_map_n (issue 23, decision 0057): the commits of many
 * files in one put_many; one whose data moved on answers -ESTALE as alone;
 * one whose base this thread kept went stale (another writer's chmod)
 * loses its CAS in the batch and is committed alone over the change.
 */
TEST(commit_map_n_commits_together_and_each_as_alone)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_chunk_set set[4];
	struct pohm_ns_commit cm[4];
	struct pohm_inode in[4], x;
	struct chmod_arg ca;
	uint8_t data[4][100], got[100];
	pthread_t t;
	long calls;
	char name[8];
	int i;

	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, name, 0644, 0, 0, 0, 0, &in[i]), 0);
		memset(data[i], 'a' + i, sizeof(data[i]));
		memset(&set[i], 0, sizeof(set[i]));
		set[i].index = 0;
		set[i].gen = POHM_GEN_INLINE;
		set[i].len = sizeof(data[i]);
		set[i].data = data[i];
		pohm_sha512(data[i], sizeof(data[i]), set[i].csum);
	}
	/* f2's data moves on before the batch: its base is stale. */
	EXPECT_EQ_INT(pohm_ns_commit_map(ns, in[2].ino, in[2].dversion, 100, &set[3], 1, NULL, NULL,
					 NULL), 0);
	/* f1's inode changes in another thread: this thread's copy is old. */
	ca.ns = ns;
	ca.ino = in[1].ino;
	pthread_create(&t, NULL, chmod_thread, &ca);
	pthread_join(t, NULL);
	EXPECT_EQ_INT(ca.r, 0);
	memset(cm, 0, sizeof(cm));
	for (i = 0; i < 4; i++) {
		cm[i].ino = in[i].ino;
		cm[i].base_dversion = in[i].dversion;
		cm[i].size = 100;
		cm[i].set = &set[i];
		cm[i].n = 1;
	}
	calls = pohm_kvmem_put_n_calls(&kv);
	EXPECT_EQ_INT(pohm_ns_commit_map_n(ns, 4, cm), 0);
	EXPECT_EQ_INT(cm[0].rc, 0);
	EXPECT_EQ_INT(cm[1].rc, 0);
	EXPECT_EQ_INT(cm[2].rc, -ESTALE);
	EXPECT_EQ_INT(cm[3].rc, 0);
	/* One batch for every CAS (f1's lost one, then alone: a put). */
	EXPECT_EQ_INT((int)(pohm_kvmem_put_n_calls(&kv) - calls), 1);
	for (i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		EXPECT_EQ_U64(cm[i].out.size, 100);
		EXPECT_EQ_INT(pohm_ns_getattr(ns, in[i].ino, &x), 0);
		EXPECT_EQ_U64(x.dversion, in[i].dversion + 1);
		EXPECT_EQ_INT(pohm_ns_read(ns, &x, 0, got, sizeof(got)), 100);
		EXPECT_MEM(got, data[i], 100);
		if (i == 1)
			EXPECT_EQ_INT((int)(x.mode & 07777), 0600);	/* the chmod stays */
		pohm_inode_clear(&x);
		pohm_inode_clear(&cm[i].out);
	}
	/* f2 holds what moved it on, not the batch's bytes. */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, in[2].ino, &x), 0);
	EXPECT_EQ_INT(pohm_ns_read(ns, &x, 0, got, sizeof(got)), 100);
	EXPECT_MEM(got, data[3], 100);
	pohm_inode_clear(&x);
	for (i = 0; i < 4; i++)
		pohm_inode_clear(&in[i]);
	pohm_ns_close(ns);
}

TEST(data_commit_read_conflict_corruption)
{
	struct pohm_ns *ns = fresh(0);
	static uint8_t big[3 * 4096 + 100], got[sizeof(big)];
	struct pohm_chunk_write w[4];
	struct pohm_inode in, in2;
	struct pohm_setattr sa = { .mask = POHM_SET_SIZE };
	size_t i;
	uint64_t a;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 31 + 7);
	pohm_ns_create(ns, 1, "f", 0644, 0, 0, 0, 0, &in);
	a = in.ino;
	for (i = 0; i < 4; i++) {
		w[i].index = i;
		w[i].data = big + i * 4096;
		w[i].len = i < 3 ? 4096 : 100;
	}
	EXPECT_EQ_INT(pohm_ns_commit(ns, a, in.dversion, sizeof(big), w, 4, NULL, &in2), 0);
	EXPECT_EQ_U64(in2.size, sizeof(big));
	EXPECT_EQ_INT(pohm_ns_read(ns, &in2, 0, got, sizeof(got)), (int)sizeof(big));
	EXPECT_MEM(got, big, sizeof(big));
	EXPECT_EQ_INT(pohm_ns_read(ns, &in2, 4000, got, 200), 200);
	EXPECT_MEM(got, big + 4000, 200);
	EXPECT_EQ_INT(pohm_ns_read(ns, &in2, sizeof(big), got, 10), 0);
	/* A stale base is refused: the writer keeps a conflict copy. */
	EXPECT_EQ_INT(pohm_ns_commit(ns, a, in.dversion, 10, w, 1, NULL, NULL), -ESTALE);
	/* One changed chunk: the others keep their generation. */
	big[5000] ^= 0xFF;
	w[0].index = 1;
	w[0].data = big + 4096;
	w[0].len = 4096;
	{
		struct pohm_inode in3;
		uint64_t gen0 = in2.chunks[0].gen, gen1 = in2.chunks[1].gen;

		EXPECT_EQ_INT(pohm_ns_commit(ns, a, in2.dversion, sizeof(big), w, 1, NULL, &in3), 0);
		EXPECT_EQ_U64(in3.chunks[0].gen, gen0);
		EXPECT(in3.chunks[1].gen != gen1);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in3, 0, got, sizeof(got)), (int)sizeof(big));
		EXPECT_MEM(got, big, sizeof(big));
		pohm_inode_clear(&in3);
	}
	/* Truncate then extend: a hole reads as zeros. */
	sa.size = 10;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, NULL), 0);
	sa.size = 9000;
	pohm_inode_clear(&in2);
	EXPECT_EQ_INT(pohm_ns_setattr(ns, a, &sa, &in2), 0);
	EXPECT_EQ_INT(pohm_ns_read(ns, &in2, 0, got, 9000), 9000);
	EXPECT_MEM(got, big, 10);
	for (i = 10; i < 9000 && !got[i]; i++)
		;
	EXPECT_EQ_INT(i, 9000);
	/* Corrupt the stored chunk: the read fails, never returns wrong bytes. */
	{
		char key[POHM_KEY_MAX];
		struct pohm_kv_val v;

		pohm_key_chunk(key, a, 0, in2.chunks[0].gen);
		EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
		v.data[v.len - 1] ^= 1;
		kv.ops->put(kv.ctx, key, v.data, v.len, NULL);
		pohm_kv_val_free(&v);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in2, 0, got, 10), -EIO);
	}
	pohm_inode_clear(&in);
	pohm_inode_clear(&in2);
	pohm_ns_close(ns);
}

/* ---- streamed reads (pohm_ns_read_stream) ---- */

struct streamed {
	uint8_t buf[64 * 4096];
	uint64_t last_end;	/* pieces come in file order, without overlap */
	int pieces, out_of_order;
};

static int stream_take(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct streamed *st = arg;

	if (off < st->last_end || off + n > sizeof(st->buf))
		st->out_of_order++;
	else
		memcpy(st->buf + off, p, n);
	st->last_end = off + n;
	st->pieces++;
	return 0;
}

TEST(read_stream_order_holes_truncate_corruption)
{
	struct pohm_ns *ns = fresh(0);
	static uint8_t data[40 * 4096];
	static struct streamed st;
	struct pohm_chunk_write w[40];
	struct pohm_setattr sa = { .mask = POHM_SET_SIZE };
	struct pohm_inode in, in2;
	size_t i, nw = 0;

	/* 40 chunks of 4 KiB, more than one batch's worth... */
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 1);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "s", 0644, 0, 0, 0, 0, &in), 0);
	for (i = 0; i < 40; i++) {
		if (i % 7 == 3) {	/* ...with holes */
			memset(data + i * 4096, 0, 4096);
			continue;
		}
		w[nw].index = i;
		w[nw].data = data + i * 4096;
		w[nw].len = 4096;
		nw++;
	}
	EXPECT_EQ_INT(pohm_ns_commit(ns, in.ino, in.dversion, sizeof(data), w, nw, NULL, &in2), 0);
	memset(&st, 0, sizeof(st));
	EXPECT_EQ_INT(pohm_ns_read_stream(ns, &in2, stream_take, &st), 0);
	EXPECT_EQ_INT(st.out_of_order, 0);
	EXPECT_EQ_INT(st.pieces, (int)nw);	/* holes are not delivered */
	EXPECT_MEM(st.buf, data, sizeof(data));
	/* A truncate mid-chunk: the entry is shortened, the bytes are the prefix. */
	pohm_inode_clear(&in2);
	sa.size = 5 * 4096 + 100;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, in.ino, &sa, &in2), 0);
	memset(&st, 0, sizeof(st));
	EXPECT_EQ_INT(pohm_ns_read_stream(ns, &in2, stream_take, &st), 0);
	EXPECT_EQ_U64(st.last_end, sa.size);
	EXPECT_MEM(st.buf, data, (size_t)sa.size);
	/* A corrupt chunk is refused: -EIO, and its bytes never reach the sink. */
	{
		char key[POHM_KEY_MAX];
		struct pohm_kv_val v;

		pohm_key_chunk(key, in.ino, 2, in2.chunks[2].gen);
		EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
		v.data[v.len - 10] ^= 0x40;
		kv.ops->put(kv.ctx, key, v.data, v.len, NULL);
		pohm_kv_val_free(&v);
		memset(&st, 0, sizeof(st));
		EXPECT_EQ_INT(pohm_ns_read_stream(ns, &in2, stream_take, &st), -EIO);
		EXPECT_EQ_INT(st.pieces, 2);		/* chunks 0 and 1 only */
		EXPECT_EQ_U64(st.last_end, 2 * 4096);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in2, 2 * 4096, st.buf, 10), -EIO);
		EXPECT_EQ_INT(pohm_ns_read(ns, &in2, 4096, st.buf, 10), 10);
	}
	pohm_inode_clear(&in);
	pohm_inode_clear(&in2);
	pohm_ns_close(ns);
}

TEST(lookup_check_plain_case_only)
{
	struct pohm_ns *ns = fresh(8), *other;
	struct pohm_inode a, b, got;
	char name[32];
	int i;

	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "b", 0600, 0, 0, 0, 0, &b), 0);
	EXPECT_EQ_INT(pohm_ns_lookup_check(ns, 1, "a", a.ino, &got), 0);
	EXPECT_EQ_U64(got.ino, a.ino);
	EXPECT_EQ_U64(got.version, a.version);
	EXPECT_EQ_INT(got.mode, a.mode);
	pohm_inode_clear(&got);
	/* The name maps to another inode, or to none: the caller looks it up. */
	EXPECT_EQ_INT(pohm_ns_lookup_check(ns, 1, "a", b.ino, &got), -ESTALE);
	EXPECT_EQ_INT(pohm_ns_lookup_check(ns, 1, "nope", a.ino, &got), -ESTALE);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "b", 1, "a", 0), 0);
	EXPECT_EQ_INT(pohm_ns_lookup_check(ns, 1, "a", a.ino, &got), -ESTALE);
	EXPECT_EQ_INT(pohm_ns_lookup_check(ns, 1, "a", b.ino, &got), 0);
	EXPECT_EQ_INT(got.mode & 0777, 0600);
	pohm_inode_clear(&got);
	EXPECT_EQ_INT(pohm_ns_lookup_check(ns, 1, "..", 1, &got), -ESTALE);
	/* Split buckets: a handle that does not know the depth yet falls back,
	 * and after one lookup it knows it. */
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, name, 0644, 0, 0, 0, 0, NULL), 0);
	}
	other = open_ns(8, 10000);
	EXPECT_EQ_INT(pohm_ns_lookup_check(other, 1, "a", b.ino, &got), -ESTALE);
	EXPECT_EQ_U64(ino_of(other, 1, "a"), b.ino);
	EXPECT_EQ_INT(pohm_ns_lookup_check(other, 1, "a", b.ino, &got), 0);
	pohm_inode_clear(&got);
	pohm_ns_close(other);
	pohm_inode_clear(&a);
	pohm_inode_clear(&b);
	pohm_ns_close(ns);
}

/* pohm_ns_getattr_many gives each inode what pohm_ns_getattr gives, in one
 * get_n for all (issue 23: a listing validates its entries together). */
TEST(getattr_many_is_getattr_in_one_read)
{
	struct pohm_ns *ns = fresh(0), *cns;
	struct pohm_kv ckv;
	struct pohm_inode a, b, one, many[5];
	uint64_t inos[5];
	int st[5], i;

	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0640, 0, 0, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "b", 0600, 0, 0, 0, 0, &b), 0);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "b"), 0);	/* a tombstone now */
	inos[0] = a.ino;
	inos[1] = b.ino;
	inos[2] = POHM_ROOT_INO;
	inos[3] = 0x1234567;		/* never existed */
	inos[4] = a.ino;
	counting_kv(&ckv);
	{
		struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = 12 };

		cns = NULL;
		EXPECT_EQ_INT(pohm_ns_open(&cns, &ckv, &o), 0);
	}
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_getattr_many(cns, 5, inos, NULL, many, st), 0);
	EXPECT_EQ_INT(all_reads, 1);
	for (i = 0; i < 5; i++) {
		int r = pohm_ns_getattr(cns, inos[i], &one);

		EXPECT_EQ_INT(st[i], r);
		if (!r) {
			EXPECT_EQ_U64(many[i].ino, one.ino);
			EXPECT_EQ_U64(many[i].version, one.version);
			EXPECT_EQ_INT(many[i].mode, one.mode);
			pohm_inode_clear(&one);
		}
		if (!st[i])
			pohm_inode_clear(&many[i]);
	}
	EXPECT_EQ_INT(st[0], 0);
	EXPECT_EQ_INT(st[1], -ENOENT);
	EXPECT_EQ_INT(st[3], -ENOENT);
	pohm_ns_close(cns);
	pohm_inode_clear(&a);
	pohm_inode_clear(&b);
	pohm_ns_close(ns);
}

/* pohm_ns_getattr_many's head entries: the version and attributes a full
 * read gives, without the inline bytes and without hashing them (session
 * 19: a revalidated listing hashed every small file's data to compare a
 * version). */
TEST(getattr_many_head_gives_the_version_without_the_bytes)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_chunk_write w = { .index = 0, .len = 3000 };
	struct pohm_inode f, full, many[2];
	static uint8_t data[3000];
	uint64_t inos[2], blocks;
	uint8_t head[2] = { 1, 0 };
	int st[2];

	memset(data, 'x', sizeof(data));
	w.data = data;
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "f", 0640, 0, 0, 0, 0, &f), 0);
	EXPECT_EQ_INT(pohm_ns_commit(ns, f.ino, f.dversion, sizeof(data), &w, 1, NULL, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, f.ino, &full), 0);
	EXPECT(pohm_inode_is_inline(&full));
	inos[0] = inos[1] = f.ino;
	blocks = pohm_sha512_blocks();
	head[1] = 1;
	EXPECT_EQ_INT(pohm_ns_getattr_many(ns, 2, inos, head, many, st), 0);
	EXPECT_EQ_INT((int)(pohm_sha512_blocks() - blocks), 0);
	EXPECT_EQ_INT(st[0], 0);
	EXPECT_EQ_U64(many[0].version, full.version);
	EXPECT_EQ_U64(many[0].size, full.size);
	EXPECT_EQ_INT(many[0].mode, full.mode);
	EXPECT(many[0].idata == NULL && many[0].nchunks == 0);
	pohm_inode_clear(&many[0]);
	pohm_inode_clear(&many[1]);
	/* Without head: the whole inode, its bytes checked. */
	head[1] = 0;
	blocks = pohm_sha512_blocks();
	EXPECT_EQ_INT(pohm_ns_getattr_many(ns, 2, inos, head, many, st), 0);
	EXPECT((int)(pohm_sha512_blocks() - blocks) > 0);
	EXPECT(pohm_inode_is_inline(&many[1]));
	EXPECT_MEM(many[1].idata, data, sizeof(data));
	EXPECT(many[0].idata == NULL);
	pohm_inode_clear(&many[0]);
	pohm_inode_clear(&many[1]);
	pohm_inode_clear(&full);
	pohm_inode_clear(&f);
	pohm_ns_close(ns);
}

/* readdir reads a split directory's buckets a level at a time (one get_n
 * per level), not one bucket after another (issue 23). */
TEST(readdir_reads_a_level_at_a_time)
{
	struct pohm_ns *ns = fresh(8), *cns;
	struct pohm_ns_opts o = { .fsid = "test", .bucket_max = 8, .chunk_shift = 12 };
	struct pohm_kv ckv;
	char name[32];
	int i;

	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, name, 0644, 0, 0, 0, 0, NULL), 0);
	}
	counting_kv(&ckv);
	cns = NULL;
	EXPECT_EQ_INT(pohm_ns_open(&cns, &ckv, &o), 0);
	all_reads = 0;
	EXPECT_EQ_INT(count_entries(cns, 1), 40);
	/* 40 names in buckets of 8: at least 5 leaves, so 9+ buckets one by
	 * one; by level: the directory inode and at most 5 levels. */
	if (all_reads > 6)
		printf("# %d reads\n", all_reads);
	EXPECT(all_reads <= 6);
	pohm_ns_close(cns);
	pohm_ns_close(ns);
}

static int along_count(void *arg, const char *name, uint64_t ino, uint8_t type, unsigned flags)
{
	(void)name;
	(void)ino;
	(void)type;
	(void)flags;
	(*(int *)arg)++;
	return 0;
}

/* pohm_ns_readdir_along: the listing and the inodes asked along in one
 * round trip for a directory of one bucket (issue 23, session 20: the
 * listing, then the known entries' inodes, were two), each inode as
 * pohm_ns_getattr_many's head gives it; one never made -ENOENT. */
TEST(readdir_along_reads_the_inodes_with_the_listing)
{
	struct pohm_ns *ns = fresh(256), *cns;
	struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = 12 };
	struct pohm_inode a, b, out[3];
	struct pohm_kv ckv;
	uint64_t inos[3];
	int st[3], n = 0;
	struct pohm_ns_along along = { 3, inos, out, st };

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &a), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, a.ino, "f", 0644, 0, 0, 0, 0, &b), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, a.ino, "g", 0644, 0, 0, 0, 0, NULL), 0);
	inos[0] = b.ino;
	inos[1] = ino_of(ns, a.ino, "g");
	inos[2] = 0x7654321;		/* never existed */
	counting_kv(&ckv);
	cns = NULL;
	EXPECT_EQ_INT(pohm_ns_open(&cns, &ckv, &o), 0);
	all_reads = 0;
	EXPECT_EQ_INT(pohm_ns_readdir_along(cns, a.ino, along_count, &n, &along), 0);
	EXPECT_EQ_INT(n, 2);
	EXPECT_EQ_INT(all_reads, 1);
	EXPECT_EQ_INT(st[0], 0);
	EXPECT_EQ_U64(out[0].ino, b.ino);
	EXPECT_EQ_U64(out[0].version, b.version);
	EXPECT_EQ_INT(st[1], 0);
	EXPECT_EQ_INT(st[2], -ENOENT);
	pohm_inode_clear(&out[0]);
	pohm_inode_clear(&out[1]);
	/* Not a directory: the listing fails; the inodes were read in its
	 * round trip all the same, each st set. */
	n = 0;
	st[2] = 0;
	EXPECT_EQ_INT(pohm_ns_readdir_along(cns, b.ino, along_count, &n, &along), -ENOTDIR);
	EXPECT_EQ_INT(n, 0);
	EXPECT_EQ_INT(st[2], -ENOENT);
	if (!st[0])
		pohm_inode_clear(&out[0]);
	if (!st[1])
		pohm_inode_clear(&out[1]);
	pohm_ns_close(cns);
	pohm_inode_clear(&a);
	pohm_inode_clear(&b);
	pohm_ns_close(ns);
}

/* More inodes along than one get_n round holds (POHM_KV_GET_N_ROUND):
 * they fill each bucket level's round trip, not a round of their own
 * before the levels (a directory of 1000 entries was 2 rounds for its
 * first level); every one is read. */
TEST(readdir_along_spreads_over_the_levels)
{
	struct pohm_ns *ns = fresh(8), *cns;
	struct pohm_ns_opts o = { .fsid = "test", .bucket_max = 8, .chunk_shift = 12 };
	enum { NA = POHM_KV_GET_N_ROUND + 100 };
	static uint64_t inos[NA];
	static struct pohm_inode out[NA];
	static int st[NA];
	struct pohm_ns_along along = { NA, inos, out, st };
	struct pohm_kv ckv;
	uint64_t f[40];
	char name[32];
	int i, n = 0, levels, ok = 0;

	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, name, 0644, 0, 0, 0, 0, NULL), 0);
		f[i] = ino_of(ns, 1, name);
	}
	for (i = 0; i < NA; i++)
		inos[i] = f[i % 40];
	counting_kv(&ckv);
	cns = NULL;
	EXPECT_EQ_INT(pohm_ns_open(&cns, &ckv, &o), 0);
	all_reads = 0;
	EXPECT_EQ_INT(count_entries(cns, 1), 40);
	levels = all_reads;
	EXPECT(levels >= 2);
	all_reads = 0;
	largest_get_n = 0;
	EXPECT_EQ_INT(pohm_ns_readdir_along(cns, 1, along_count, &n, &along), 0);
	EXPECT_EQ_INT(n, 40);
	EXPECT_EQ_INT(all_reads, levels);
	EXPECT(largest_get_n <= POHM_KV_GET_N_ROUND);
	for (i = 0; i < NA; i++) {
		ok += !st[i] && out[i].ino == inos[i];
		if (!st[i])
			pohm_inode_clear(&out[i]);
	}
	EXPECT_EQ_INT(ok, NA);
	pohm_ns_close(cns);
	pohm_ns_close(ns);
}

/*
 * RELIABILITY.md finding 15: create then unlink of one name must not bring
 * back the bucket's bytes from before the create.  A writer that read the
 * bucket before the create and writes late (a CAS against those bytes) must
 * be refused; when the bytes came back it applied over the unlink, and its
 * roll-forward restored the unlinked name on a majority.
 */
TEST(bucket_bytes_never_repeat_after_create_and_unlink)
{
	struct pohm_ns *ns = fresh(256);
	struct pohm_kv_val before = { 0 }, after = { 0 };
	char key[POHM_KEY_MAX];

	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, NULL), 0);
	pohm_key_bucket(key, 1, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &before), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "n", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "n"), 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &after), 0);
	EXPECT(memcmp(before.csum, after.csum, sizeof(before.csum)) != 0);
	/* The late writer: its CAS against the old read is refused. */
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, key, before.data, before.len, before.csum), -EAGAIN);
	EXPECT_EQ_U64(ino_of(ns, 1, "n"), 0);
	EXPECT(ino_of(ns, 1, "a") != 0);
	pohm_kv_val_free(&before);
	pohm_kv_val_free(&after);
	pohm_ns_close(ns);
}

/*
 * A split caught between creating its children and marking the parent SPLIT:
 * a writer whose depth hint was already deeper put "x" into the child, so the
 * sealed parent does not have it.  A handle whose hint stops at the parent
 * must still find, list and remove "x" (the eight-thread test's rare -ENOENT).
 */
static void put_bucket(const struct pohm_bucket *bk, const uint8_t *expect)
{
	struct pohm_buf b = POHM_BUF_INIT;

	EXPECT_EQ_INT(pohm_bucket_encode(&b, bk), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, bk->hdr.key, b.p, b.len, expect), 0);
	pohm_buf_free(&b);
}

TEST(lookup_during_split_reads_the_child)
{
	struct pohm_ns *ns = fresh(16), *other;
	const char *names[] = { "a", "b", "c", "d", "e", "x" };
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket parent, child;
	char key[POHM_KEY_MAX];
	uint64_t xino = 0;
	unsigned c, i;

	for (i = 0; i < 6; i++)
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, names[i], 0644, 0, 0, 0, 0, NULL), 0);
	xino = ino_of(ns, 1, "x");
	EXPECT(xino != 0);
	pohm_key_bucket(key, 1, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	for (c = 0; c < 2; c++) {
		EXPECT_EQ_INT(pohm_bucket_decode(&child, v.data, v.len), 0);
		child.depth = 1;
		child.index = c;
		pohm_key_bucket(child.hdr.key, 1, 1, c);
		for (i = child.n; i > 0; i--)
			if ((pohm_name_hash(child.e[i - 1].name) & 1) != c)
				pohm_bucket_remove(&child, i - 1);
		put_bucket(&child, POHM_KV_ABSENT);
		pohm_bucket_clear(&child);
	}
	EXPECT_EQ_INT(pohm_bucket_decode(&parent, v.data, v.len), 0);
	pohm_bucket_remove(&parent, (uint32_t)pohm_bucket_find(&parent, "x"));
	parent.state = POHM_BUCKET_SPLITTING;
	parent.txid = 1;
	put_bucket(&parent, NULL);
	pohm_bucket_clear(&parent);
	pohm_kv_val_free(&v);

	other = open_ns(16, 10000);	/* no hint: starts at depth 0 */
	EXPECT_EQ_U64(ino_of(other, 1, "x"), xino);
	EXPECT_EQ_U64(ino_of(other, 1, "a"), ino_of(ns, 1, "a"));
	EXPECT_EQ_INT(count_entries(other, 1), 6);
	EXPECT_EQ_INT(pohm_ns_unlink(other, 1, "x"), 0);
	EXPECT_EQ_U64(ino_of(other, 1, "x"), 0);
	EXPECT_EQ_INT(count_entries(other, 1), 5);
	EXPECT_EQ_INT(pohm_ns_create(other, 1, "y", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	EXPECT(ino_of(ns, 1, "y") != 0);
	EXPECT_EQ_INT(count_entries(ns, 1), 6);
	pohm_ns_close(other);
	pohm_ns_close(ns);
}

/*
 * A splitter that died after writing both children leaves the parent
 * SPLITTING with its snapshot, which goes stale as the children change.
 * pohm_ns_lookup_check must not confirm a name from it (session 14
 * review: a name renamed away was confirmed, reads went back in time);
 * only a NORMAL bucket is plain enough, the rest is the lookup's.
 */
TEST(lookup_check_does_not_trust_a_splitting_parents_snapshot)
{
	struct pohm_ns *ns = fresh(16), *other;
	const char *names[] = { "a", "b", "c", "d", "e" };
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket parent, child;
	struct pohm_inode in;
	char key[POHM_KEY_MAX];
	uint64_t aino;
	unsigned c, i;
	int r;

	for (i = 0; i < 5; i++)
		EXPECT_EQ_INT(pohm_ns_create(ns, 1, names[i], 0644, 0, 0, 0, 0, NULL), 0);
	aino = ino_of(ns, 1, "a");
	pohm_key_bucket(key, 1, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	for (c = 0; c < 2; c++) {
		EXPECT_EQ_INT(pohm_bucket_decode(&child, v.data, v.len), 0);
		child.depth = 1;
		child.index = c;
		pohm_key_bucket(child.hdr.key, 1, 1, c);
		for (i = child.n; i > 0; i--)
			if ((pohm_name_hash(child.e[i - 1].name) & 1) != c)
				pohm_bucket_remove(&child, i - 1);
		put_bucket(&child, POHM_KV_ABSENT);
		pohm_bucket_clear(&child);
	}
	/* The splitter died here: the parent stays SPLITTING with its snapshot. */
	EXPECT_EQ_INT(pohm_bucket_decode(&parent, v.data, v.len), 0);
	parent.state = POHM_BUCKET_SPLITTING;
	parent.txid = 1;
	put_bucket(&parent, NULL);
	pohm_bucket_clear(&parent);
	pohm_kv_val_free(&v);
	other = open_ns(16, 10000);
	/* Another host renames "a" away (the inode lives on as "a2"). */
	EXPECT_EQ_INT(pohm_ns_rename(other, 1, "a", 1, "a2", 0), 0);
	pohm_ns_close(other);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&parent, v.data, v.len), 0);
	/* The stale snapshot still names "a". */
	EXPECT_EQ_INT(parent.state, POHM_BUCKET_SPLITTING);
	EXPECT(pohm_bucket_find(&parent, "a") >= 0);
	pohm_bucket_clear(&parent);
	pohm_kv_val_free(&v);
	other = open_ns(16, 10000);	/* a new process: no hint */
	r = pohm_ns_lookup_check(other, 1, "a", aino, &in);
	if (!r)
		pohm_inode_clear(&in);
	EXPECT_EQ_INT(r, -ESTALE);
	/* The lookup it falls back on reads the child: "a" is gone. */
	EXPECT_EQ_U64(ino_of(other, 1, "a"), 0);
	EXPECT_EQ_U64(ino_of(other, 1, "a2"), aino);
	pohm_ns_close(other);
	pohm_ns_close(ns);
}

/* ---- many threads on two handles ("hosts") in one directory ---- */

#define NTHREADS 8
#define NFILES 250
#define NDIRS 25

struct worker {
	struct pohm_ns *ns;
	int id;
	int files, dirs;	/* names that should exist at the end */
	int errors;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[32], to[32];
	int i, r;

	for (i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "t%d-f%d", w->id, i);
		r = pohm_ns_create(w->ns, 1, name, 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL);
		if (r) {
			printf("# create %s: %d\n", name, r);
			w->errors++;
			continue;
		}
		w->files++;
		if (i % 5 == 1) {		/* rename some */
			snprintf(to, sizeof(to), "t%d-r%d", w->id, i);
			r = pohm_ns_rename(w->ns, 1, name, 1, to, 0);
			if (r) {
				printf("# rename %s: %d\n", name, r);
				w->errors++;
			}
		} else if (i % 5 == 2) {	/* unlink some */
			r = pohm_ns_unlink(w->ns, 1, name);
			if (r) {
				printf("# unlink %s: %d\n", name, r);
				w->errors++;
			} else {
				w->files--;
			}
		}
		if (i % (NFILES / NDIRS) == 0) {
			snprintf(name, sizeof(name), "t%d-d%d", w->id, i);
			r = pohm_ns_mkdir(w->ns, 1, name, 0755, 0, 0, NULL);
			if (r) {
				printf("# mkdir %s: %d\n", name, r);
				w->errors++;
			} else {
				w->dirs++;
			}
		}
	}
	return NULL;
}

TEST(eight_threads_two_hosts_one_directory)
{
	static struct listing l;
	struct pohm_ns *ns = fresh(16), *host2 = open_ns(16, 10000);
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	int i, j, expected = 0, dirs = 0, dup = 0, dangling = 0;

	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ i % 2 ? host2 : ns, i, 0, 0, 0 };
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ_INT(w[i].errors, 0);
		expected += w[i].files + w[i].dirs;
		dirs += w[i].dirs;
	}
	l.n = 0;
	EXPECT_EQ_INT(pohm_ns_readdir(ns, 1, collect, &l), 0);
	EXPECT_EQ_INT(l.n, expected);
	for (i = 0; i < l.n && i < 4096; i++) {
		for (j = i + 1; j < l.n && j < 4096; j++)
			dup += !strcmp(l.names[i], l.names[j]);
		if (ino_of(host2, 1, l.names[i]) != l.inos[i] || nlink_of(ns, l.inos[i]) == 0)
			dangling++;
	}
	EXPECT_EQ_INT(dup, 0);
	EXPECT_EQ_INT(dangling, 0);
	EXPECT_EQ_INT(nlink_of(ns, 1), 2 + dirs);
	pohm_ns_close(ns);
	pohm_ns_close(host2);
}

/* ---- crash between any two storage writes ---- */

/* Invariants after recovery: every listed name resolves to a live inode
 * whose nlink is at least the number of names it has; names lookup == listing. */
static int check_invariants(struct pohm_ns *ns, uint64_t dir, int *names_out)
{
	static struct listing l;
	int i, j, bad = 0;

	l.n = 0;
	if (pohm_ns_readdir(ns, dir, collect, &l))
		return 1;
	for (i = 0; i < l.n; i++) {
		int links = 0;

		if (ino_of(ns, dir, l.names[i]) != l.inos[i])
			bad++;
		for (j = 0; j < l.n; j++)
			links += l.inos[j] == l.inos[i];
		if (nlink_of(ns, l.inos[i]) < (uint32_t)links)
			bad++;
	}
	*names_out = l.n;
	return bad;
}

typedef int (*crash_op)(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino);

static int op_rename(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_rename(ns, d1, "a", d2, "b", 0);
}

/* With the caller's guess: the copies this thread wrote say the plain case,
 * so no lookup (decision 0054); the same writes in the same order. */
static int op_move_on_copies(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_rename_ino(ns, d1, "a", d2, "b", 0, ino);
}

/* rmdir with the caller's guess: this thread's copies, no lookup (decision
 * 0055); decision 0058: the intent with the seal created at once, then the
 * entry's removal with the tombstone and the parent's count: two put_ns,
 * five writes, nothing else. */
static long rmdir_copies_put_ns, rmdir_copies_puts;
static int op_rmdir_on_copies(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	uint64_t sub = ino_of(ns, d1, "sub");
	long n0 = pohm_kvmem_put_n_calls(&kv), p0 = pohm_kvmem_puts(&kv);
	int gone, r;

	r = pohm_ns_rmdir_ino(ns, d1, "sub", &sub, &gone);
	if (!r) {
		rmdir_copies_put_ns = pohm_kvmem_put_n_calls(&kv) - n0;
		rmdir_copies_puts = pohm_kvmem_puts(&kv) - p0;
	}
	return r;
}

static int op_rename_replace(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_rename(ns, d1, "a", d1, "c", 0);
}

static int op_link(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_link(ns, ino, d2, "l", NULL);
}

static int op_unlink(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_unlink(ns, d1, "a");
}

/* An unlink whose inode the caller knows, both kept (decision 0049): the
 * entry and the inode's mark in one put_n. */
static long unlink_one_wait_put_ns;
static int op_unlink_one_wait(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	struct pohm_inode in;
	long n0;
	int gone, r;

	if (pohm_ns_getattr(ns, ino, &in))	/* a read: the kept inode */
		return -EIO;
	pohm_inode_clear(&in);
	n0 = pohm_kvmem_put_n_calls(&kv);
	r = pohm_ns_unlink_ino(ns, d1, "a", &ino, &gone);
	if (!r)
		unlink_one_wait_put_ns = pohm_kvmem_put_n_calls(&kv) - n0;
	return r;
}

static int op_rmdir(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_rmdir(ns, d1, "sub");
}

static int op_mvdir(struct pohm_ns *ns, uint64_t d1, uint64_t d2, uint64_t ino)
{
	return pohm_ns_rename(ns, d1, "sub", d2, "sub", 0);
}

static void crash_every_step(const char *what, crash_op op)
{
	int k, done = 0;

	for (k = 0; k < 40 && !done; k++) {
		struct pohm_ns *ns = fresh(0), *rec;
		struct pohm_inode in;
		uint64_t d1, d2, a;
		int n1 = 0, n2 = 0, bad, r;

		pohm_ns_mkdir(ns, 1, "d1", 0755, 0, 0, NULL);
		pohm_ns_mkdir(ns, 1, "d2", 0755, 0, 0, NULL);
		d1 = ino_of(ns, 1, "d1");
		d2 = ino_of(ns, 1, "d2");
		pohm_ns_create(ns, d1, "a", 0644, 0, 0, 0, 0, &in);
		a = in.ino;
		pohm_inode_clear(&in);
		pohm_ns_create(ns, d1, "c", 0644, 0, 0, 0, 0, NULL);
		pohm_ns_mkdir(ns, d1, "sub", 0755, 0, 0, NULL);
		pohm_kvmem_fail_after(&kv, k);
		r = op(ns, d1, d2, a);
		pohm_kvmem_fail_after(&kv, -1);
		if (r == 0)
			done = 1;	/* k writes were enough: every crash point was covered */
		pohm_ns_close(ns);
		/* The next client, after the intent timeout, sees a consistent state. */
		usleep(3000);
		rec = open_ns(0, 1);
		bad = check_invariants(rec, d1, &n1) + check_invariants(rec, d2, &n2);
		if (bad)
			printf("# %s: crash after %d writes: %d bad entries\n", what, k, bad);
		EXPECT_EQ_INT(bad, 0);
		/* Never lost: inode a keeps at least one name unless it was unlinked. */
		if (op == op_unlink_one_wait && ino_of(rec, d1, "a") == a) {
			/* Not unlinked (yet): its inode is there for its name,
			 * marked or not (the mark's write alone is harmless). */
			EXPECT_EQ_INT(pohm_ns_getattr(rec, a, &in), 0);
			pohm_inode_clear(&in);
		}
		if (op != op_unlink && op != op_unlink_one_wait) {
			int named = ino_of(rec, d1, "a") == a || ino_of(rec, d2, "b") == a ||
				    ino_of(rec, d1, "c") == a || ino_of(rec, d2, "l") == a;

			if (!named)
				printf("# %s: crash after %d writes lost the file\n", what, k);
			EXPECT(named);
		}
		if (op == op_rmdir || op == op_rmdir_on_copies) {
			/* Decision 0058: a directory left named is writable (no
			 * seal stays), a removed one is no longer counted low. */
			uint64_t sub = ino_of(rec, d1, "sub");

			EXPECT(nlink_of(rec, d1) >= 2u + (sub != 0));
			if (sub) {
				r = pohm_ns_create(rec, sub, "x", 0644, 0, 0, 0, 0, NULL);
				if (r)
					printf("# %s: crash after %d writes: create in sub %d\n", what, k, r);
				EXPECT_EQ_INT(r, 0);
			}
		}
		/* The operation can be retried (or is complete) afterwards. */
		pohm_ns_close(rec);
	}
	EXPECT(done);
}

TEST(crash_rename)         { crash_every_step("rename", op_rename); }
TEST(crash_rename_replace) { crash_every_step("rename-replace", op_rename_replace); }
TEST(crash_move_on_copies)  { crash_every_step("move on copies", op_move_on_copies); }
TEST(crash_rmdir_on_copies)
{
	rmdir_copies_put_ns = rmdir_copies_puts = 0;
	crash_every_step("rmdir on copies", op_rmdir_on_copies);
	EXPECT_EQ_INT((int)rmdir_copies_put_ns, 2);	/* decision 0058: two waits */
	EXPECT_EQ_INT((int)rmdir_copies_puts, 5);
}
TEST(crash_link)           { crash_every_step("link", op_link); }
TEST(crash_unlink)         { crash_every_step("unlink", op_unlink); }
TEST(crash_rmdir)          { crash_every_step("rmdir", op_rmdir); }
TEST(crash_move_dir)       { crash_every_step("move-dir", op_mvdir); }
TEST(crash_unlink_one_wait)
{
	unlink_one_wait_put_ns = 0;
	crash_every_step("unlink in one wait", op_unlink_one_wait);
	EXPECT_EQ_INT((int)unlink_one_wait_put_ns, 1);	/* the whole unlink: one put_n */
}
/* The same with every put_n's writes applied last first. */
static void crash_reversed(const char *what, crash_op op)
{
	put_n_reversed = 1;
	crash_every_step(what, op);
	put_n_reversed = 0;
}
TEST(crash_rename_put_n_reversed)  { crash_reversed("rename, reversed", op_rename); }
TEST(crash_unlink_put_n_reversed)  { crash_reversed("unlink, reversed", op_unlink); }
TEST(crash_unlink_one_wait_put_n_reversed)
{
	crash_reversed("unlink in one wait, reversed", op_unlink_one_wait);
}
TEST(crash_rmdir_put_n_reversed)   { crash_reversed("rmdir, reversed", op_rmdir); }
TEST(crash_move_dir_put_n_reversed) { crash_reversed("move-dir, reversed", op_mvdir); }
TEST(crash_move_on_copies_put_n_reversed) { crash_reversed("move on copies, reversed", op_move_on_copies); }
TEST(crash_rmdir_on_copies_put_n_reversed) { crash_reversed("rmdir on copies, reversed", op_rmdir_on_copies); }

/* rmdir racing a create inside: never an orphan entry in a removed dir. */
struct race { struct pohm_ns *ns; uint64_t parent, dir; int created, removed; };

static void *race_create(void *arg)
{
	struct race *r = arg;

	r->created = pohm_ns_create(r->ns, r->dir, "x", 0644, 0, 0, 0, 0, NULL) == 0;
	return NULL;
}

TEST(rmdir_races_create)
{
	int round, orphans = 0;

	for (round = 0; round < 50; round++) {
		struct pohm_ns *ns = fresh(0), *other = open_ns(0, 10000);
		struct race rc = { other, 1, 0, 0, 0 };
		pthread_t t;
		uint64_t x;

		pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL);
		rc.dir = ino_of(ns, 1, "d");
		pthread_create(&t, NULL, race_create, &rc);
		rc.removed = pohm_ns_rmdir(ns, 1, "d") == 0;
		pthread_join(t, NULL);
		if (rc.removed && pohm_ns_lookup(ns, rc.dir, "x", &x, NULL) != -ENOENT)
			orphans++;
		if (rc.removed && rc.created)
			orphans++;	/* both cannot have succeeded */
		if (!rc.removed && !rc.created)
			orphans += 0;	/* rmdir lost to an in-flight create or vice versa: fine */
		pohm_ns_close(ns);
		pohm_ns_close(other);
	}
	EXPECT_EQ_INT(orphans, 0);
}

/* Two hosts moving a into b and b into a at once never build a cycle. */
struct mv { struct pohm_ns *ns; uint64_t from, to; const char *name; int r; };

static void *race_mv(void *arg)
{
	struct mv *m = arg;

	m->r = pohm_ns_rename(m->ns, 1, m->name, m->to, m->name, 0);
	return NULL;
}

TEST(cross_moves_never_cycle)
{
	int round, cycles = 0;

	for (round = 0; round < 30; round++) {
		struct pohm_ns *ns = fresh(0), *other = open_ns(0, 10000);
		struct mv m1, m2;
		pthread_t t;
		uint64_t a, b, up;

		pohm_ns_mkdir(ns, 1, "a", 0755, 0, 0, NULL);
		pohm_ns_mkdir(ns, 1, "b", 0755, 0, 0, NULL);
		a = ino_of(ns, 1, "a");
		b = ino_of(ns, 1, "b");
		m1 = (struct mv){ ns, 1, b, "a", 0 };
		m2 = (struct mv){ other, 1, a, "b", 0 };
		pthread_create(&t, NULL, race_mv, &m1);
		race_mv(&m2);
		pthread_join(t, NULL);
		if (m1.r == 0 && m2.r == 0)
			cycles++;
		/* Both still reachable from the root. */
		if (pohm_ns_lookup(ns, a, "..", &up, NULL) || pohm_ns_lookup(ns, b, "..", &up, NULL))
			cycles++;
		{
			uint64_t ia, ib;
			int ra = pohm_ns_resolve(ns, "a", 0, &ia) && pohm_ns_resolve(ns, "b/a", 0, &ia);
			int rb = pohm_ns_resolve(ns, "b", 0, &ib) && pohm_ns_resolve(ns, "a/b", 0, &ib);

			cycles += ra + rb;
		}
		pohm_ns_close(ns);
		pohm_ns_close(other);
	}
	EXPECT_EQ_INT(cycles, 0);
}

/* ---- large files: chunk maps in map objects ---- */

static struct pohm_ns *open_with(unsigned chunk_shift, int http)
{
	struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = chunk_shift, .http_compat = http };
	struct pohm_ns *ns = NULL;
	int r = pohm_ns_open(&ns, &kv, &o);

	if (r)
		printf("# pohm_ns_open: %d\n", r);
	return ns;
}

static size_t stored_len(const char *key)
{
	struct pohm_kv_val v;
	size_t n;

	if (kv.ops->get(kv.ctx, key, &v))
		return 0;
	n = v.len;
	pohm_kv_val_free(&v);
	return n;
}

static size_t inode_len(uint64_t ino)
{
	char key[POHM_KEY_MAX];

	pohm_key_inode(key, ino);
	return stored_len(key);
}

/* A 1 GiB file of 1 MiB chunks, sparse: 100 bytes in chunks 0, 300, 511 and 1023. */
TEST(map_one_byte_in_1gib_sparse_file)
{
	static const uint64_t idx[] = { 0, 300, 511, 1023 };
	struct pohm_chunk_write w[4];
	struct pohm_inode in, in2, in3;
	static uint8_t data[4][100], got[256];
	struct pohm_ns *ns;
	long before;
	size_t i;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ns = open_with(20, 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "big", 0644, 0, 0, 0, 0, &in), 0);
	for (i = 0; i < 4; i++) {
		memset(data[i], 'a' + (int)i, sizeof(data[i]));
		w[i].index = idx[i];
		w[i].data = data[i];
		w[i].len = sizeof(data[i]);
	}
	EXPECT_EQ_INT(pohm_ns_commit(ns, in.ino, in.dversion, 1ULL << 30, w, 4, NULL, &in2), 0);
	EXPECT_EQ_INT(in2.nmaps, 4);			/* 1024 chunks / 256 per map */
	EXPECT_EQ_INT(in2.nchunks, 1024);		/* the out inode comes with the whole map */
	EXPECT(inode_len(in.ino) < 1024);		/* inline it would be ~12 KiB here, 74 KiB full */
	/* The 1-byte overwrite: one chunk, one map object, one inode CAS. */
	data[2][50] = 'X';
	w[0].index = 511;
	w[0].data = data[2];
	w[0].len = sizeof(data[2]);
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_commit(ns, in.ino, in2.dversion, 1ULL << 30, w, 1, NULL, &in3), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 3);
	EXPECT_EQ_U64(in3.maps[0].gen, in2.maps[0].gen);
	EXPECT(in3.maps[1].gen != in2.maps[1].gen);
	EXPECT_EQ_U64(in3.maps[2].gen, in2.maps[2].gen);
	EXPECT_EQ_U64(in3.maps[3].gen, in2.maps[3].gen);
	/* Reads follow the maps, from a loaded inode and from a bare one. */
	for (i = 0; i < 2; i++) {
		struct pohm_inode r;

		if (i) {
			EXPECT_EQ_INT(pohm_ns_getattr(ns, in.ino, &r), 0);
		} else {
			pohm_inode_copy(&r, &in3);
			free(r.chunks);
			r.chunks = NULL;
			r.nchunks = 0;
			r.map_loaded = 0;
		}
		EXPECT_EQ_INT(pohm_ns_read(ns, &r, 511ULL << 20, got, 100), 100);
		EXPECT_EQ_INT(got[50], 'X');
		EXPECT_EQ_INT(got[49], 'c');
		EXPECT_EQ_INT(pohm_ns_read(ns, &r, (1023ULL << 20) + 90, got, 20), 20);
		EXPECT_EQ_INT(got[9], 'd');
		EXPECT_EQ_INT(got[10], 0);		/* past the chunk's bytes: zeros */
		EXPECT_EQ_INT(pohm_ns_read(ns, &r, 700ULL << 20, got, 256), 256);
		EXPECT_EQ_INT(got[0] | got[255], 0);	/* a hole */
		pohm_inode_clear(&r);
	}
	{
		char key[POHM_KEY_MAX];

		pohm_key_map(key, in.ino, 1, in3.maps[1].gen);
		printf("# 1 GiB sparse file: 1-byte overwrite = %ld puts (chunk + map + inode), "
		       "inode %zu bytes, map object %zu bytes\n", pohm_kvmem_puts(&kv) - before,
		       inode_len(in.ino), stored_len(key));
		EXPECT(stored_len(key) > 0);
	}
	pohm_inode_clear(&in);
	pohm_inode_clear(&in2);
	pohm_inode_clear(&in3);
	pohm_ns_close(ns);
}

/* Fill ino with size bytes of pattern seed (every chunk written), base dversion *dv. */
static int fill(struct pohm_ns *ns, uint64_t ino, uint64_t *dv, size_t size, uint8_t seed,
		uint8_t *buf)
{
	size_t cs = 4096, n = (size + cs - 1) / cs, i;
	struct pohm_chunk_write *w = calloc(n, sizeof(*w));
	struct pohm_inode out;
	int r;

	for (i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 7 + seed + i / 4096);
	for (i = 0; i < n; i++) {
		w[i].index = i;
		w[i].data = buf + i * cs;
		w[i].len = i + 1 < n ? cs : size - i * cs;
	}
	r = pohm_ns_commit(ns, ino, *dv, size, w, n, NULL, &out);
	if (!r) {
		*dv = out.dversion;
		pohm_inode_clear(&out);
	}
	free(w);
	return r;
}

static int read_all(struct pohm_ns *ns, uint64_t ino, uint8_t *buf, size_t cap, uint64_t *size)
{
	struct pohm_inode in;
	ssize_t n;
	int r = pohm_ns_getattr(ns, ino, &in);

	if (r)
		return r;
	*size = in.size;
	n = in.size <= cap ? pohm_ns_read(ns, &in, 0, buf, (size_t)in.size) : -EFBIG;
	pohm_inode_clear(&in);
	return n < 0 ? (int)n : 0;
}

/* 16 MiB of 4 KiB chunks, every chunk written: 16 map objects. */
TEST(map_one_byte_in_large_full_file)
{
	size_t size = 16u << 20;
	uint8_t *buf = malloc(size), *got = malloc(size);
	struct pohm_chunk_write w;
	struct pohm_inode in;
	struct pohm_ns *ns;
	uint64_t dv, sz = 0;
	long before;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ns = open_with(12, 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "full", 0644, 0, 0, 0, 0, &in), 0);
	dv = in.dversion;
	EXPECT_EQ_INT(fill(ns, in.ino, &dv, size, 1, buf), 0);
	EXPECT(inode_len(in.ino) < 2048);
	buf[5 * 4096 * 256 + 17] ^= 0x5a;
	w.index = 5 * 256;
	w.data = buf + w.index * 4096;
	w.len = 4096;
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_commit(ns, in.ino, dv, size, &w, 1, NULL, NULL), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 3);
	EXPECT_EQ_INT(read_all(ns, in.ino, got, size, &sz), 0);
	EXPECT_EQ_U64(sz, size);
	EXPECT(!memcmp(got, buf, size));
	pohm_inode_clear(&in);
	pohm_ns_close(ns);
	free(buf);
	free(got);
}

/*
 * Crash at every write of a commit that changes chunks in two map objects
 * and grows the file: the file is the old version or the new one, whole.
 */
TEST(map_crash_every_write)
{
	size_t size = 300 * 4096 + 123, nsize = size + 5000;
	uint8_t *a = malloc(nsize), *b = malloc(nsize), *got = malloc(nsize);
	struct pohm_chunk_write w[3];
	int k, olds = 0, news = 0, bad = 0;
	long writes = 0;

	for (k = 0; k < 16; k++) {
		struct pohm_ns *ns, *ns2;
		struct pohm_inode in;
		uint64_t dv, sz = 0, ino;
		long start;
		int r;

		pohm_kvmem_free(&kv);
		pohm_kvmem_new(&kv);
		ns = open_with(12, 0);
		pohm_ns_create(ns, 1, "f", 0644, 0, 0, 0, 0, &in);
		ino = in.ino;
		dv = in.dversion;
		pohm_inode_clear(&in);
		if (fill(ns, ino, &dv, size, 3, a)) {
			bad++;
			break;
		}
		memcpy(b, a, size);
		memset(b + size, 0, nsize - size);
		b[10] ^= 1;			/* map 0 */
		b[299 * 4096] ^= 1;		/* map 1; chunk 300, the old last, now continues with zeros */
		memset(b + 301 * 4096 + 10, 'z', 50);	/* chunk 301, new */
		w[0].index = 0;
		w[0].data = b;
		w[0].len = 4096;
		w[1].index = 299;
		w[1].data = b + 299 * 4096;
		w[1].len = 4096;
		w[2].index = 301;
		w[2].data = b + 301 * 4096;
		w[2].len = nsize - 301 * 4096;
		start = pohm_kvmem_puts(&kv);
		pohm_kvmem_fail_after(&kv, k);
		r = pohm_ns_commit(ns, ino, dv, nsize, w, 3, NULL, NULL);
		pohm_kvmem_fail_after(&kv, -1);
		if (!r)
			writes = pohm_kvmem_puts(&kv) - start;
		ns2 = open_with(12, 0);		/* the next client */
		if (read_all(ns2, ino, got, nsize, &sz)) {
			bad++;
		} else if (sz == size && !memcmp(got, a, size)) {
			olds++;
		} else if (sz == nsize && !memcmp(got, b, nsize)) {
			news++;
		} else {
			size_t j = 0;

			while (j < nsize && got[j] == (sz == size ? a[j] : b[j]))
				j++;
			printf("# crash after %d writes: size %" PRIu64 ", first difference at %zu\n",
			       k, sz, j);
			bad++;
		}
		pohm_ns_close(ns2);
		pohm_ns_close(ns);
		if (!r)
			break;
	}
	/* 3 chunks + 2 map objects + the inode. */
	EXPECT_EQ_INT(writes, 6);
	EXPECT_EQ_INT(olds, 6);
	EXPECT_EQ_INT(news, 1);
	EXPECT_EQ_INT(bad, 0);
	free(a);
	free(b);
	free(got);
}

/* Truncate, extend, shrink back inline, grow external again. */
TEST(map_truncate_and_transitions)
{
	size_t size = 600 * 4096;
	uint8_t *buf = malloc(size), *got = malloc(size), *exp = malloc(size);
	struct pohm_setattr sa = { .mask = POHM_SET_SIZE };
	struct pohm_inode in;
	struct pohm_ns *ns;
	uint64_t dv, sz = 0, ino;
	long before;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ns = open_with(12, 0);
	pohm_ns_create(ns, 1, "t", 0644, 0, 0, 0, 0, &in);
	ino = in.ino;
	dv = in.dversion;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(fill(ns, ino, &dv, size, 9, buf), 0);
	/* Truncate into map 1, then extend: no map object is written, zeros show. */
	before = pohm_kvmem_puts(&kv);
	sa.size = 300 * 4096 + 10;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, ino, &sa, NULL), 0);
	sa.size = size;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, ino, &sa, &in), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 2);
	EXPECT_EQ_INT(in.nchunks, 600);		/* returned inodes list every chunk */
	EXPECT(in.map_loaded && in.chunks[300].gen && in.chunks[300].len == 10 && !in.chunks[301].gen);
	dv = in.dversion;
	pohm_inode_clear(&in);
	memcpy(exp, buf, 300 * 4096 + 10);
	memset(exp + 300 * 4096 + 10, 0, size - (300 * 4096 + 10));
	EXPECT_EQ_INT(read_all(ns, ino, got, size, &sz), 0);
	EXPECT_EQ_U64(sz, size);
	EXPECT(!memcmp(got, exp, size));
	/* A commit after the truncate keeps the zeros (the cut map is rewritten). */
	{
		struct pohm_chunk_write w = { 550, buf + 550 * 4096, 4096 };

		memcpy(exp + 550 * 4096, buf + 550 * 4096, 4096);
		EXPECT_EQ_INT(pohm_ns_commit(ns, ino, dv, size, &w, 1, NULL, &in), 0);
		dv = in.dversion;
		pohm_inode_clear(&in);
		EXPECT_EQ_INT(read_all(ns, ino, got, size, &sz), 0);
		EXPECT(!memcmp(got, exp, size));
	}
	/* Shrink to 100 chunks by a commit: back inline. */
	EXPECT_EQ_INT(pohm_ns_commit(ns, ino, dv, 100 * 4096 - 7, NULL, 0, NULL, &in), 0);
	EXPECT_EQ_INT(in.nmaps, 0);
	EXPECT_EQ_INT(in.nchunks, 100);
	dv = in.dversion;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(read_all(ns, ino, got, size, &sz), 0);
	EXPECT_EQ_U64(sz, 100 * 4096 - 7);
	EXPECT(!memcmp(got, exp, 100 * 4096 - 7));
	/* Grow by a commit without new chunks: external again, the rest zeros. */
	EXPECT_EQ_INT(pohm_ns_commit(ns, ino, dv, size, NULL, 0, NULL, &in), 0);
	EXPECT_EQ_INT(in.nmaps, 3);
	pohm_inode_clear(&in);
	memset(exp + 100 * 4096 - 7, 0, size - (100 * 4096 - 7));
	EXPECT_EQ_INT(read_all(ns, ino, got, size, &sz), 0);
	EXPECT(!memcmp(got, exp, size));
	/* A chmod of a large file does not touch its maps. */
	before = pohm_kvmem_puts(&kv);
	sa.mask = POHM_SET_MODE;
	sa.mode = 0600;
	EXPECT_EQ_INT(pohm_ns_setattr(ns, ino, &sa, NULL), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 1);
	EXPECT_EQ_INT(read_all(ns, ino, got, size, &sz), 0);
	EXPECT(!memcmp(got, exp, size));
	/* A damaged map object fails the read, never returns wrong bytes. */
	EXPECT_EQ_INT(pohm_ns_getattr(ns, ino, &in), 0);
	{
		char key[POHM_KEY_MAX];
		struct pohm_kv_val v;

		pohm_key_map(key, ino, 0, in.maps[0].gen);
		EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
		v.data[v.len - 1] ^= 1;
		kv.ops->put(kv.ctx, key, v.data, v.len, NULL);
		pohm_kv_val_free(&v);
		/* This handle still has its verified copy; the next client reads storage. */
		pohm_inode_clear(&in);
		EXPECT_EQ_INT(pohm_ns_getattr(ns, ino, &in), 0);
		pohm_inode_clear(&in);
		pohm_ns_close(ns);
		ns = open_with(12, 0);
		EXPECT_EQ_INT(pohm_ns_getattr(ns, ino, &in), -EIO);
	}
	pohm_inode_clear(&in);
	pohm_ns_close(ns);
	free(buf);
	free(got);
	free(exp);
}

/*
 * One thread commits versions that change a chunk in map 0 and one in map 1
 * together; readers on the same handle (sharing its map cache) must always
 * see both chunks of one version.
 */
struct map_race {
	struct pohm_ns *ns;
	uint64_t ino;
	int done;			/* atomic */
	int torn, reads, errors;	/* atomic */
};

static void *map_reader(void *arg)
{
	struct map_race *m = arg;
	uint8_t a[16], b[16];
	unsigned n = 0;

	while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
		struct pohm_inode in;

		if (pohm_ns_getattr(m->ns, m->ino, &in)) {
			__atomic_add_fetch(&m->errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (n++ & 1) {		/* both read paths: loaded map, and map objects */
			free(in.chunks);
			in.chunks = NULL;
			in.nchunks = 0;
			in.map_loaded = 0;
		}
		if (pohm_ns_read(m->ns, &in, 0, a, 16) != 16 ||
		    pohm_ns_read(m->ns, &in, 299 * 4096, b, 16) != 16)
			__atomic_add_fetch(&m->errors, 1, __ATOMIC_RELAXED);
		else if (memcmp(a, b, 16))
			__atomic_add_fetch(&m->torn, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&m->reads, 1, __ATOMIC_RELAXED);
		pohm_inode_clear(&in);
	}
	return NULL;
}

TEST(map_readers_never_see_half_a_commit)
{
	size_t size = 300 * 4096;
	uint8_t *buf = malloc(size);
	struct map_race m = { 0 };
	pthread_t t[3];
	struct pohm_inode in;
	uint64_t dv;
	int v, i;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	m.ns = open_with(12, 0);
	pohm_ns_create(m.ns, 1, "r", 0644, 0, 0, 0, 0, &in);
	m.ino = in.ino;
	dv = in.dversion;
	pohm_inode_clear(&in);
	memset(buf, 0, size);
	EXPECT_EQ_INT(fill(m.ns, m.ino, &dv, size, 0, buf), 0);
	memset(buf, 0, 4096);
	memset(buf + 299 * 4096, 0, 4096);
	{
		struct pohm_chunk_write w[2] = { { 0, buf, 4096 }, { 299, buf + 299 * 4096, 4096 } };

		EXPECT_EQ_INT(pohm_ns_commit(m.ns, m.ino, dv, size, w, 2, NULL, &in), 0);
		dv = in.dversion;
		pohm_inode_clear(&in);
	}
	for (i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, map_reader, &m);
	/* At least 40 commits, and on until the readers ran (a loaded machine
	 * may not schedule them during the first 40: reads == 0 failed once). */
	for (v = 1; v <= 40 || (__atomic_load_n(&m.reads, __ATOMIC_RELAXED) < 20 && v < 100000);
	     v++) {
		struct pohm_chunk_write w[2] = { { 0, buf, 4096 }, { 299, buf + 299 * 4096, 4096 } };

		memset(buf, v & 0xff, 16);
		memset(buf + 299 * 4096, v & 0xff, 16);
		EXPECT_EQ_INT(pohm_ns_commit(m.ns, m.ino, dv, size, w, 2, NULL, &in), 0);
		dv = in.dversion;
		pohm_inode_clear(&in);
	}
	__atomic_store_n(&m.done, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ_INT(m.torn, 0);
	EXPECT_EQ_INT(m.errors, 0);
	EXPECT(m.reads > 0);
	pohm_ns_close(m.ns);
	free(buf);
}

/* Decoders meet every truncation and every flipped byte of an external-map inode and a map object. */
TEST(map_objects_decode_hostile_bytes)
{
	struct pohm_inode in = { 0 }, out;
	struct pohm_chunkref e[3] = { { 5, { 1 }, 100 }, { 0, { 0 }, 0 }, { 9, { 2 }, 4096 } };
	struct pohm_map m = { .ino = 77, .index = 2, .gen = 3, .n = 3, .e = e }, mo;
	struct pohm_buf bi = POHM_BUF_INIT, bm = POHM_BUF_INIT;
	struct pohm_mapref refs[2] = { { 11, { 3 } }, { 0, { 0 } } };
	size_t i;
	int ok = 0;

	in.hdr.type = POHM_OBJ_INODE;
	strcpy(in.hdr.key, "i:4d");
	in.ino = 77;
	in.mode = S_IFREG | 0644;
	in.chunk_shift = 12;
	in.size = 300 * 4096;
	in.nmaps = 2;
	in.map_span = 256;
	in.map_end = in.size;
	in.maps = refs;
	in.pname = "name";
	m.hdr.type = POHM_OBJ_MAP;
	strcpy(m.hdr.key, "m:4d:2:3");
	EXPECT_EQ_INT(pohm_inode_encode(&bi, &in), 0);
	EXPECT_EQ_INT(pohm_map_encode(&bm, &m), 0);
	EXPECT_EQ_INT(pohm_inode_decode(&out, bi.p, bi.len), 0);
	EXPECT_EQ_INT(out.nmaps, 2);
	EXPECT_EQ_U64(out.maps[0].gen, 11);
	EXPECT_EQ_STR(out.pname, "name");
	pohm_inode_clear(&out);
	EXPECT_EQ_INT(pohm_map_decode(&mo, bm.p, bm.len), 0);
	EXPECT_EQ_INT(mo.n, 3);
	EXPECT_EQ_U64(mo.e[2].gen, 9);
	pohm_map_clear(&mo);
	for (i = 0; i < bi.len; i++) {
		if (!pohm_inode_decode(&out, bi.p, i)) {
			ok++;	/* a prefix that ends before the optional section decodes */
			pohm_inode_clear(&out);
		}
		bi.p[i] ^= 0xa5;
		if (!pohm_inode_decode(&out, bi.p, bi.len))
			pohm_inode_clear(&out);
		bi.p[i] ^= 0xa5;
	}
	for (i = 0; i < bm.len; i++) {
		EXPECT(pohm_map_decode(&mo, bm.p, i) != 0);
		bm.p[i] ^= 0x5a;
		if (!pohm_map_decode(&mo, bm.p, bm.len))
			pohm_map_clear(&mo);
		bm.p[i] ^= 0x5a;
	}
	EXPECT(ok <= 1);
	pohm_buf_free(&bi);
	pohm_buf_free(&bm);
}

/* ---- http_compat: path copies ---- */

/* The copy at key as a string ("" if absent). */
static const char *copy_of(const char *key)
{
	static char s[256];
	struct pohm_kv_val v;

	s[0] = '\0';
	if (kv.ops->get(kv.ctx, key, &v))
		return s;
	snprintf(s, sizeof(s), "%.*s", (int)v.len, (const char *)v.data);
	pohm_kv_val_free(&v);
	return s;
}

static int put_text(struct pohm_ns *ns, uint64_t ino, const char *text)
{
	struct pohm_chunk_write w = { 0, text, strlen(text) };
	struct pohm_inode in;
	int r = pohm_ns_getattr(ns, ino, &in);

	if (r)
		return r;
	r = pohm_ns_commit(ns, ino, in.dversion, strlen(text), &w, *text ? 1 : 0, NULL, NULL);
	pohm_inode_clear(&in);
	return r;
}

/* ---- inline data (decision 0023) ---- */

/* A format-1 inode with a chunk map, as every client before session 12 wrote it. */
static void v1_inode(struct pohm_inode *in, struct pohm_chunkref *c)
{
	memset(in, 0, sizeof(*in));
	in->hdr.type = POHM_OBJ_INODE;
	strcpy(in->hdr.key, "i:4d");
	in->ino = 77;
	in->mode = S_IFREG | 0644;
	in->chunk_shift = 12;
	in->size = 100;
	memset(c, 0, sizeof(*c));
	c->gen = 1234;
	c->len = 100;
	c->csum[0] = 9;
	in->nchunks = 1;
	in->chunks = c;
}

/* The new decoder reads the old format; the old decoder refuses an inline
 * inode (-EPROTO, which ns_inode_get gives as -EIO); every flipped byte of
 * an inline inode is refused or decodes to the bytes it was written with. */
/*
 * Decision 0058's values: a SEALED_WITH bucket keeps its seal's fields and
 * an RMDIR_SEALED intent its txid through encode and decode; a value past
 * the newest known one is refused (-EPROTO), as decoders before 0058
 * refuse these two, so no client acts on a state it cannot read.
 */
TEST(sealed_with_bucket_and_rmdir_sealed_intent_encode_decode)
{
	struct pohm_bucket bk = { 0 }, out;
	struct pohm_dentry e = { 0 };
	struct pohm_buf b = POHM_BUF_INIT;

	bk.hdr.type = POHM_OBJ_BUCKET;
	bk.dir = 77;
	bk.state = POHM_BUCKET_SEALED_WITH;
	bk.txid = 1234;
	bk.stamp = 99;
	bk.seal_parent = 5;
	bk.seal_name = "gone";
	e.name = "sub";
	e.ino = 8;
	e.type = DT_DIR;
	e.intent = POHM_INTENT_RMDIR_SEALED;
	e.i_txid = 1234;
	e.i_time = 42;
	bk.n = bk.cap = 1;
	bk.e = &e;
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&out, b.p, b.len), 0);
	EXPECT_EQ_INT(out.state, POHM_BUCKET_SEALED_WITH);
	EXPECT_EQ_U64(out.txid, 1234);
	EXPECT_EQ_U64(out.seal_parent, 5);
	EXPECT(out.seal_name && !strcmp(out.seal_name, "gone"));
	EXPECT_EQ_INT(out.n, 1);
	EXPECT_EQ_INT(out.e[0].intent, POHM_INTENT_RMDIR_SEALED);
	EXPECT_EQ_U64(out.e[0].i_txid, 1234);
	pohm_bucket_clear(&out);
	pohm_buf_free(&b);
	bk.state = POHM_BUCKET_SEALED_WITH + 1;
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&out, b.p, b.len), -EPROTO);
	pohm_buf_free(&b);
	bk.state = POHM_BUCKET_NORMAL;
	/* Decision 0067's mark: its source travels in i_dir, i_name. */
	e.intent = POHM_INTENT_MOVED_IN;
	e.i_dir = 9;
	e.i_name = "src";
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&out, b.p, b.len), 0);
	EXPECT_EQ_INT(out.e[0].intent, POHM_INTENT_MOVED_IN);
	EXPECT_EQ_U64(out.e[0].i_dir, 9);
	EXPECT(out.e[0].i_name && !strcmp(out.e[0].i_name, "src"));
	pohm_bucket_clear(&out);
	pohm_buf_free(&b);
	e.intent = POHM_INTENT_MOVED_IN + 1;
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&out, b.p, b.len), -EPROTO);
	pohm_buf_free(&b);
}

TEST(inline_inode_encode_decode_both_formats)
{
	struct pohm_inode in, out, il = { 0 };
	struct pohm_chunkref c;
	struct pohm_buf b1 = POHM_BUF_INIT, b2 = POHM_BUF_INIT;
	uint8_t sum[64];
	uint64_t blocks;
	size_t i;

	v1_inode(&in, &c);
	EXPECT_EQ_INT(pohm_inode_encode(&b1, &in), 0);
	EXPECT_EQ_INT(pohm_inode_decode(&out, b1.p, b1.len), 0);
	EXPECT(!pohm_inode_is_inline(&out) && out.nchunks == 1 && out.chunks[0].gen == 1234);
	EXPECT(out.idata == NULL);
	pohm_inode_clear(&out);
	EXPECT_EQ_INT(pohm_inode_decode_known(&out, b1.p, b1.len, POHM_INODE_EXT_V1), 0);
	pohm_inode_clear(&out);
	/* The same inode with its 100 bytes inline, and a name hint. */
	il = in;
	il.chunks = NULL;
	il.nchunks = 0;
	il.pname = strdup("name");
	EXPECT_EQ_INT(pohm_inode_set_inline(&il, "0123456789abcdefghij0123456789abcdefghij0123456789"
					    "abcdefghij0123456789abcdefghij0123456789abcdefghij", 100), 0);
	EXPECT(pohm_inode_is_inline(&il));
	/* The encoder takes chunk 0's checksum, hashing nothing (issue 23). */
	blocks = pohm_sha512_blocks();
	EXPECT_EQ_INT(pohm_inode_encode(&b2, &il), 0);
	EXPECT_EQ_INT((int)(pohm_sha512_blocks() - blocks), 0);
	EXPECT(b2.len < b1.len + 100 + 64 + 16);	/* one object, not much bigger */
	EXPECT_EQ_INT(pohm_inode_decode(&out, b2.p, b2.len), 0);
	EXPECT(pohm_inode_is_inline(&out));
	EXPECT_EQ_INT((int)out.chunks[0].len, 100);
	EXPECT_MEM(out.idata, il.idata, 100);
	pohm_sha512(il.idata, 100, sum);
	EXPECT_MEM(out.chunks[0].csum, sum, 64);	/* the data checksum covers it */
	EXPECT_EQ_STR(out.pname, "name");
	pohm_inode_clear(&out);
	/* The old client's decoder. */
	EXPECT_EQ_INT(pohm_inode_decode_known(&out, b2.p, b2.len, POHM_INODE_EXT_V1), -EPROTO);
	for (i = 0; i < b2.len; i++) {
		b2.p[i] ^= 0x41;
		if (!pohm_inode_decode(&out, b2.p, b2.len)) {
			if (pohm_inode_is_inline(&out))
				EXPECT(!memcmp(out.idata, il.idata, out.chunks[0].len) ||
				       out.chunks[0].len != 100);
			pohm_inode_clear(&out);
		}
		b2.p[i] ^= 0x41;
	}
	/* Too big for inline, or inline without bytes: refused by the encoder. */
	EXPECT_EQ_INT(pohm_inode_set_inline(&il, b1.p, POHM_INLINE_MAX + 1), -EINVAL);
	free(il.idata);
	il.idata = NULL;
	pohm_buf_free(&b2);
	EXPECT_EQ_INT(pohm_inode_encode(&b2, &il), -EINVAL);
	pohm_inode_clear(&il);
	pohm_buf_free(&b1);
	pohm_buf_free(&b2);
}

/* The key of chunk index of ino's committed version ("" inline or a hole). */
static void chunk_key_of(struct pohm_ns *ns, uint64_t ino, uint64_t index, char *key)
{
	struct pohm_inode in;

	key[0] = 0;
	if (pohm_ns_getattr(ns, ino, &in))
		return;
	if (index < in.nchunks && in.chunks[index].gen && in.chunks[index].gen != POHM_GEN_INLINE)
		pohm_key_chunk(key, ino, index, in.chunks[index].gen);
	pohm_inode_clear(&in);
}

/* ino's committed data, as a string. */
static const char *text_of(struct pohm_ns *ns, uint64_t ino, char *buf, size_t len)
{
	struct pohm_inode in;
	ssize_t n;

	buf[0] = 0;
	if (pohm_ns_getattr(ns, ino, &in))
		return "(getattr failed)";
	n = pohm_ns_read(ns, &in, 0, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	pohm_inode_clear(&in);
	return buf;
}

/*
 * A small file's commit is its inode's CAS alone (no chunk object); it
 * reads back by the stream and the range reader; growing past the
 * threshold goes back to chunks (chunk 0 written out, then the CAS); a
 * crash at each put of that growth leaves the small version whole; a no_inline
 * handle (a mixed-version fsid) writes chunks as before.
 */
/*
 * pohm_ns_put_chunks (issue 23): the changed chunks of a push go in one
 * write_n (one wait in the replicated store), each a fresh generation the
 * commit then names; the file reads back whole.
 */
TEST(put_chunks_writes_every_chunk_in_one_batch)
{
	struct pohm_ns *ns;
	struct pohm_chunk_set set[3];
	struct pohm_inode in;
	uint8_t data[3][4096], got[3 * 4096];
	const void *dp[3];
	uint64_t idx[3], gen[3], ino;
	size_t len[3];
	long calls, puts;
	int i;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ns = open_with(12, 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "big", 0644, 0, 0, 0, 0, &in), 0);
	for (i = 0; i < 3; i++) {
		memset(data[i], 'x' + i, sizeof(data[i]));
		idx[i] = (uint64_t)i;
		dp[i] = data[i];
		len[i] = sizeof(data[i]);
	}
	calls = pohm_kvmem_write_n_calls(&kv);
	puts = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_put_chunks(ns, in.ino, 3, idx, dp, len, gen), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_write_n_calls(&kv) - calls), 1);
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - puts), 3);
	EXPECT(gen[0] && gen[1] && gen[2] && gen[0] != gen[1] && gen[1] != gen[2]);
	for (i = 0; i < 3; i++) {
		memset(&set[i], 0, sizeof(set[i]));
		set[i].index = (uint64_t)i;
		set[i].gen = gen[i];
		set[i].len = 4096;
		pohm_sha512(data[i], 4096, set[i].csum);
	}
	EXPECT_EQ_INT(pohm_ns_commit_map(ns, in.ino, in.dversion, sizeof(got), set, 3, NULL, NULL,
					 NULL), 0);
	ino = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, ino, &in), 0);
	EXPECT_EQ_INT(pohm_ns_read(ns, &in, 0, got, sizeof(got)), (int)sizeof(got));
	for (i = 0; i < 3; i++)
		EXPECT_MEM(got + i * 4096, data[i], 4096);
	pohm_inode_clear(&in);
	/* One chunk alone: a plain put, no batch. */
	calls = pohm_kvmem_write_n_calls(&kv);
	EXPECT_EQ_INT(pohm_ns_put_chunks(ns, 77, 1, idx, dp, len, gen), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_write_n_calls(&kv) - calls), 0);
	pohm_ns_close(ns);
}

TEST(small_file_commit_is_one_cas_and_grows_back_to_chunks)
{
	struct pohm_ns *ns, *old;
	struct pohm_inode in;
	char buf[9000], big[8192], key[POHM_KEY_MAX];
	uint64_t f, g;
	long before;
	int k;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ns = open_with(12, 0);
	memset(big, 'q', sizeof(big));
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "f", 0644, 0, 0, 0, 0, &in), 0);
	f = in.ino;
	pohm_inode_clear(&in);
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(put_text(ns, f, "small"), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - before), 1);
	EXPECT_EQ_STR(text_of(ns, f, buf, sizeof(buf)), "small");
	chunk_key_of(ns, f, 0, key);
	EXPECT_EQ_STR(key, "");
	EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
	EXPECT(pohm_inode_is_inline(&in));
	{
		char part[4] = { 0 };

		EXPECT_EQ_INT((int)pohm_ns_read(ns, &in, 1, part, 3), 3);
		EXPECT_MEM(part, "mal", 3);
	}
	pohm_inode_clear(&in);
	/* Exactly the threshold: still inline. */
	before = pohm_kvmem_puts(&kv);
	{
		struct pohm_chunk_write w = { 0, big, POHM_INLINE_MAX };

		EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
		EXPECT_EQ_INT(pohm_ns_commit(ns, f, in.dversion, POHM_INLINE_MAX, &w, 1, NULL, NULL), 0);
		pohm_inode_clear(&in);
	}
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - before), 1);
	EXPECT_EQ_INT(put_text(ns, f, "small"), 0);
	/* Growth by a chunk 1 alone (an append at 4 KiB): crash at each put. */
	for (k = 0; k <= 3; k++) {
		struct pohm_chunk_write w = { 1, big, 100 };

		EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
		if (k < 3)
			pohm_kvmem_fail_after(&kv, k);
		before = pohm_kvmem_puts(&kv);
		EXPECT_EQ_INT(pohm_ns_commit(ns, f, in.dversion, 4096 + 100, &w, 1, NULL, NULL),
			      k < 3 ? -EIO : 0);
		pohm_kvmem_fail_after(&kv, -1);
		pohm_inode_clear(&in);
		if (k < 3) {
			EXPECT_EQ_STR(text_of(ns, f, buf, sizeof(buf)), "small");
		} else {
			EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - before), 3);	/* chunk 1, chunk 0, inode */
			EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
			EXPECT(!pohm_inode_is_inline(&in) && in.nchunks == 2 && in.size == 4196);
			EXPECT_EQ_INT((int)pohm_ns_read(ns, &in, 0, buf, sizeof(buf)), 4196);
			EXPECT_MEM(buf, "small", 5);
			EXPECT(buf[5] == 0 && buf[4095] == 0 && buf[4096] == 'q' && buf[4195] == 'q');
			pohm_inode_clear(&in);
		}
	}
	chunk_key_of(ns, f, 0, key);
	EXPECT(key[0] != 0);
	/* Back to small: inline again, one put. */
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(put_text(ns, f, "again"), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - before), 1);
	EXPECT_EQ_STR(text_of(ns, f, buf, sizeof(buf)), "again");
	/* A truncate of inline data keeps a checksum of what it keeps. */
	{
		struct pohm_setattr sa = { .mask = POHM_SET_SIZE, .size = 2 };
		uint8_t sum[64];

		EXPECT_EQ_INT(pohm_ns_setattr(ns, f, &sa, NULL), 0);
		EXPECT_EQ_STR(text_of(ns, f, buf, sizeof(buf)), "ag");
		EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
		pohm_sha512("ag", 2, sum);
		EXPECT(pohm_inode_is_inline(&in));
		EXPECT_MEM(in.chunks[0].csum, sum, 64);
		pohm_inode_clear(&in);
	}
	/* So does a commit that only shortens it, in the inode it answers with. */
	{
		uint8_t sum[64];

		EXPECT_EQ_INT(put_text(ns, f, "hello"), 0);
		EXPECT_EQ_INT(pohm_ns_getattr(ns, f, &in), 0);
		before = (long)in.dversion;
		pohm_inode_clear(&in);
		EXPECT_EQ_INT(pohm_ns_commit(ns, f, (uint64_t)before, 3, NULL, 0, NULL, &in), 0);
		pohm_sha512("hel", 3, sum);
		EXPECT(pohm_inode_is_inline(&in));
		EXPECT_MEM(in.chunks[0].csum, sum, 64);
		pohm_inode_clear(&in);
		EXPECT_EQ_STR(text_of(ns, f, buf, sizeof(buf)), "hel");
	}
	/* A handle that must not write inline (older clients share the fsid). */
	{
		struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = 12, .no_inline = 1 };

		EXPECT_EQ_INT(pohm_ns_open(&old, &kv, &o), 0);
	}
	EXPECT_EQ_INT(pohm_ns_create(old, 1, "g", 0644, 0, 0, 0, 0, &in), 0);
	g = in.ino;
	pohm_inode_clear(&in);
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(put_text(old, g, "chunked"), 0);
	EXPECT_EQ_INT((int)(pohm_kvmem_puts(&kv) - before), 2);
	chunk_key_of(ns, g, 0, key);
	EXPECT(key[0] != 0);
	EXPECT_EQ_STR(text_of(ns, g, buf, sizeof(buf)), "chunked");
	pohm_ns_close(old);
	pohm_ns_close(ns);
}

TEST(http_compat_path_copies)
{
	struct pohm_ns *ns, *plain;
	struct pohm_inode in;
	uint64_t d, e, f, g;
	long before;

	pohm_kvmem_free(&kv);
	pohm_kvmem_new(&kv);
	ns = open_with(12, 1);
	plain = open_with(12, 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &in), 0);
	d = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "f", 0644, 0, 0, 0, 0, &in), 0);
	f = in.ino;
	pohm_inode_clear(&in);
	/* Without http_compat nothing but the inode is written (the data
	 * inline in it: decision 0023). */
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(put_text(plain, f, "zero"), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 1);
	EXPECT_EQ_STR(copy_of("/d/f"), "");
	/*
	 * With it: one more WRITE, after the commit, at "/" + the path (the
	 * first one also records the directory's name in its inode, once).
	 */
	EXPECT_EQ_INT(put_text(ns, f, "hello"), 0);
	EXPECT_EQ_STR(copy_of("/d/f"), "hello");
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(put_text(ns, f, "hello again"), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 2);	/* inode, copy */
	EXPECT_EQ_STR(copy_of("/d/f"), "hello again");
	/* A truncate rewrites it; an empty file has none (a zero-size WRITE cannot create a key). */
	{
		struct pohm_setattr sa = { .mask = POHM_SET_SIZE, .size = 5 };

		EXPECT_EQ_INT(pohm_ns_setattr(ns, f, &sa, NULL), 0);
		EXPECT_EQ_STR(copy_of("/d/f"), "hello");
		sa.size = 0;
		EXPECT_EQ_INT(pohm_ns_setattr(ns, f, &sa, NULL), 0);
		EXPECT_EQ_STR(copy_of("/d/f"), "");
		EXPECT_EQ_INT(put_text(ns, f, "hello"), 0);
	}
	/* Rename of the file, then of its directory: the copies follow. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, d, "f", d, "g", 0), 0);
	EXPECT_EQ_STR(copy_of("/d/f"), "");
	EXPECT_EQ_STR(copy_of("/d/g"), "hello");
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "e", 0755, 0, 0, &in), 0);
	e = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "d", e, "d2", 0), 0);
	EXPECT_EQ_STR(copy_of("/d/g"), "");
	EXPECT_EQ_STR(copy_of("/e/d2/g"), "hello");
	EXPECT_EQ_INT(put_text(ns, f, "third"), 0);
	EXPECT_EQ_STR(copy_of("/e/d2/g"), "third");
	/* Across directories, replacing a file. */
	EXPECT_EQ_INT(pohm_ns_create(ns, e, "x", 0644, 0, 0, 0, 0, &in), 0);
	g = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(put_text(ns, g, "xx"), 0);
	EXPECT_EQ_STR(copy_of("/e/x"), "xx");
	EXPECT_EQ_INT(pohm_ns_rename(ns, d, "g", e, "x", 0), 0);
	EXPECT_EQ_STR(copy_of("/e/x"), "third");
	EXPECT_EQ_STR(copy_of("/e/d2/g"), "");
	EXPECT_EQ_INT(put_text(ns, f, "fourth"), 0);
	EXPECT_EQ_STR(copy_of("/e/x"), "fourth");
	/* Exchange. */
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "y", 0644, 0, 0, 0, 0, &in), 0);
	g = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(put_text(ns, g, "why"), 0);
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "y", e, "x", POHM_RENAME_EXCHANGE), 0);
	EXPECT_EQ_STR(copy_of("/y"), "fourth");
	EXPECT_EQ_STR(copy_of("/e/x"), "why");
	/* Hard links: the copy stays under its name; when that goes, another name in the directory takes it. */
	EXPECT_EQ_INT(pohm_ns_link(ns, f, 1, "y2", NULL), 0);
	EXPECT_EQ_STR(copy_of("/y2"), "");
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "y2", 1, "y3", 0), 0);
	EXPECT_EQ_STR(copy_of("/y3"), "");
	EXPECT_EQ_STR(copy_of("/y"), "fourth");
	/* Removing a name the copy does not follow costs one DEL, no rewrite. */
	EXPECT_EQ_INT(pohm_ns_link(ns, f, 1, "y4", NULL), 0);
	before = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "y4"), 0);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - before, 2);	/* bucket + nlink */
	EXPECT_EQ_STR(copy_of("/y"), "fourth");
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "y"), 0);
	EXPECT_EQ_STR(copy_of("/y"), "");
	EXPECT_EQ_STR(copy_of("/y3"), "fourth");
	EXPECT_EQ_INT(pohm_ns_unlink(ns, 1, "y3"), 0);
	EXPECT_EQ_STR(copy_of("/y3"), "");
	/* Over 32 MiB (one WRITE packet) there is no copy, and an old one goes. */
	{
		struct pohm_chunk_write w = { 0, "big", 3 };
		struct pohm_setattr sa = { .mask = POHM_SET_SIZE, .size = 3 };
		uint64_t big;

		EXPECT_EQ_INT(pohm_ns_create(ns, 1, "big", 0644, 0, 0, 0, 0, &in), 0);
		big = in.ino;
		EXPECT_EQ_INT(pohm_ns_commit(ns, big, in.dversion, 3, &w, 1, NULL, NULL), 0);
		pohm_inode_clear(&in);
		EXPECT_EQ_STR(copy_of("/big"), "big");
		EXPECT_EQ_INT(pohm_ns_getattr(ns, big, &in), 0);
		EXPECT_EQ_INT(pohm_ns_commit(ns, big, in.dversion, (32u << 20) + 1, &w, 1, NULL,
					     NULL), 0);
		pohm_inode_clear(&in);
		EXPECT_EQ_STR(copy_of("/big"), "");
		EXPECT_EQ_INT(pohm_ns_setattr(ns, big, &sa, NULL), 0);
		EXPECT_EQ_STR(copy_of("/big"), "big");
	}
	/* A file named like an internal key cannot overwrite it. */
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "i:1", 0644, 0, 0, 0, 0, &in), 0);
	EXPECT_EQ_INT(put_text(ns, in.ino, "not a root"), 0);
	pohm_inode_clear(&in);
	EXPECT_EQ_STR(copy_of("/i:1"), "not a root");
	EXPECT_EQ_INT(pohm_ns_getattr(ns, 1, &in), 0);
	EXPECT(S_ISDIR(in.mode));
	pohm_inode_clear(&in);
	pohm_ns_close(plain);
	pohm_ns_close(ns);
}

/* Issue 19: fork children of one process (a shell running redirections)
 * each draw their own inode numbers; before, every child replayed the
 * parent's generator and the 9th sibling's create failed EEXIST. */
TEST(fork_children_draw_their_own_inode_numbers)
{
	struct pohm_ns *ns = fresh(0);
	uint64_t ino[4] = { 0 }, mine;
	struct pohm_inode in;
	int pfd[2], i, j, st;
	pid_t pid;

	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "parent", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	EXPECT_EQ_INT(pipe(pfd), 0);
	for (i = 0; i < 4; i++) {
		pid = fork();
		if (pid == 0) {
			mine = 0;
			if (!pohm_ns_create(ns, 1, "child", 0644, 0, 0, 0, POHM_CREATE_EXCL, &in))
				mine = in.ino;
			_exit(write(pfd[1], &mine, sizeof(mine)) == sizeof(mine) ? 0 : 1);
		}
		EXPECT(pid > 0);
		EXPECT_EQ_INT((int)read(pfd[0], &ino[i], sizeof(ino[i])), (int)sizeof(ino[i]));
		EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	}
	close(pfd[0]);
	close(pfd[1]);
	for (i = 0; i < 4; i++) {
		EXPECT(ino[i] != 0);
		for (j = 0; j < i; j++)
			EXPECT(ino[i] != ino[j]);
	}
	pohm_ns_close(ns);
}

/* Issue 19 item 6: a lock held by another thread at the fork is copied
 * held; the child's first create would wait for it forever.  Here the
 * generator's lock is held by a thread while the process forks; the child
 * makes the locks new (what the library's fork hook does) and creates. */
static pthread_mutex_t held_go = PTHREAD_MUTEX_INITIALIZER;

static void *hold_rng_lock(void *arg)
{
	struct pohm_ns *ns = arg;

	pthread_mutex_lock(&ns->rng_lock);
	pthread_mutex_lock(&held_go);	/* until the parent has forked */
	pthread_mutex_unlock(&held_go);
	pthread_mutex_unlock(&ns->rng_lock);
	return NULL;
}

TEST(fork_child_with_a_lock_held_by_another_thread)
{
	struct pohm_ns *ns = fresh(0);
	struct timespec nap = { 0, 10000000 };
	pthread_t th;
	int st, i;
	pid_t pid, w = 0;

	pthread_mutex_lock(&held_go);
	EXPECT_EQ_INT(pthread_create(&th, NULL, hold_rng_lock, ns), 0);
	while (!pthread_mutex_trylock(&ns->rng_lock))	/* until the thread holds it */
		pthread_mutex_unlock(&ns->rng_lock), nanosleep(&nap, NULL);
	pid = fork();
	if (pid == 0) {
		alarm(10);	/* a hang fails the test instead of blocking the run */
		pohm_ns_atfork_child(ns);
		_exit(pohm_ns_create(ns, 1, "forked-with-lock", 0644, 0, 0, 0, POHM_CREATE_EXCL,
				     NULL) ? 1 : 0);
	}
	pthread_mutex_unlock(&held_go);
	pthread_join(th, NULL);
	for (i = 0; i < 1500 && w != pid; i++) {
		w = waitpid(pid, &st, WNOHANG);
		if (w != pid)
			nanosleep(&nap, NULL);
	}
	if (w != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	EXPECT(w == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	pohm_ns_close(ns);
}

/* A create whose bucket put applied but answered -EIO, and whose settling
 * reads fail for a while (the node that took the put died): with fewer
 * failing reads than NS_UNSURE_RETRIES the create finds its own entry by
 * txid and succeeds (before, the first failed read made it -EIO for a
 * create that happened); with more it reports EIO, and the name, if in,
 * has its inode. */
/* A one-bucket rename whose bucket put has an unknown outcome (it applied)
 * settles it by reading again while the reads fail fewer times than the
 * retries: 0, the name moved, the inode whole. */
TEST(rename_in_one_bucket_with_an_unknown_outcome_settles_it)
{
	int failing[] = { 0, 1, 2 }, f;

	for (f = 0; f < 3; f++) {
		struct pohm_ns *ns = fresh(0);
		struct pohm_inode a, x;
		int r;

		EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &a), 0);
		pohm_kvmem_fail_unsure(&kv, 0, failing[f]);	/* the rename's bucket put */
		r = pohm_ns_rename(ns, 1, "a", 1, "b", 0);
		pohm_kvmem_fail_unsure(&kv, -1, 0);
		if (r)
			printf("# %d failing reads: %d\n", failing[f], r);
		EXPECT_EQ_INT(r, 0);
		EXPECT_EQ_U64(ino_of(ns, 1, "b"), a.ino);
		EXPECT_EQ_U64(ino_of(ns, 1, "a"), 0);
		EXPECT_EQ_INT(pohm_ns_getattr(ns, a.ino, &x), 0);
		EXPECT_EQ_U64(x.nlink, 1);
		pohm_inode_clear(&x);
		pohm_inode_clear(&a);
		pohm_ns_close(ns);
	}
}

/* The intent of dir/name as stored in dir's root bucket, unresolved (-1:
 * no such name or bucket). */
static int raw_intent(uint64_t dir, const char *name)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket bk;
	char key[POHM_KEY_MAX];
	int i, r = -1;

	pohm_key_bucket(key, dir, 0, 0);
	if (kv.ops->get(kv.ctx, key, &v))
		return -1;
	if (!pohm_bucket_decode(&bk, v.data, v.len)) {
		i = pohm_bucket_find(&bk, name);
		if (i >= 0)
			r = bk.e[i].intent;
		pohm_bucket_clear(&bk);
	}
	pohm_kv_val_free(&v);
	return r;
}

/* dir as a client before decision 0079 made it: no stored bucket until
 * its first entry. */
static void raw_drop_root(uint64_t dir)
{
	char key[POHM_KEY_MAX];

	pohm_key_bucket(key, dir, 0, 0);
	EXPECT_EQ_INT(kv.ops->del(kv.ctx, key), 0);
}

/*
 * A move across directories whose commit put lands but answers -EIO (its
 * outcome unknown), in both put orders, with the reads after it working
 * (the retry finds its txid: done) or failing too (still unknown: -EIO,
 * its intent left for whoever meets it to settle by txid).  Never both
 * names as plain entries of an inode with nlink 1: a later unlink of one
 * freed the file the other still named (session 14 review: the commit's
 * error cleared the intent).
 */
TEST(move_commit_with_an_unknown_outcome_leaves_one_name)
{
	int k, rev, then, saw_retry = 0, saw_left = 0;

	for (rev = 0; rev < 2; rev++)
	for (then = 0; then < 2; then++)
	for (k = 0; k < 4; k++) {
		struct pohm_ns *ns = fresh(0);
		struct pohm_inode a, d, e, x;
		int r, intent;

		pohm_kvmem_put_n_reverse(&kv, rev);
		EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &d), 0);
		EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "e", 0755, 0, 0, &e), 0);
		raw_drop_root(e.ino);	/* the commit creates it: one put */
		EXPECT_EQ_INT(pohm_ns_create(ns, d.ino, "a", 0644, 0, 0, 0, 0, &a), 0);
		pohm_kvmem_fail_unsure(&kv, k, then ? 50 : 0);
		r = pohm_ns_rename(ns, d.ino, "a", e.ino, "b", 0);
		pohm_kvmem_fail_unsure(&kv, -1, 0);
		intent = raw_intent(d.ino, "a");
		if (k == 1 && !then)
			saw_retry += r == 0;	/* the commit's: its retry read settles it */
		if (k == 1 && then)
			saw_left += r == -EIO && intent == POHM_INTENT_MOVE;
		/* Settled (a lookup meets the intent): one name, nlink 1. */
		if (ino_of(ns, e.ino, "b")) {
			EXPECT_EQ_U64(ino_of(ns, e.ino, "b"), a.ino);
			EXPECT_EQ_U64(ino_of(ns, d.ino, "a"), 0);
		} else {
			EXPECT(r != 0);
			EXPECT_EQ_U64(ino_of(ns, d.ino, "a"), a.ino);
		}
		EXPECT_EQ_INT(pohm_ns_getattr(ns, a.ino, &x), 0);
		EXPECT_EQ_INT(x.nlink, 1);
		pohm_inode_clear(&x);
		pohm_inode_clear(&a);
		pohm_inode_clear(&d);
		pohm_inode_clear(&e);
		pohm_ns_close(ns);
	}
	pohm_kvmem_put_n_reverse(&kv, 0);
	EXPECT_EQ_INT(saw_retry, 2);
	EXPECT_EQ_INT(saw_left, 2);
}

TEST(create_with_an_unknown_outcome_settles_it_and_keeps_its_inode)
{
	int failing[] = { 1, 2, 3, 50 }, k, f, nputs;
	struct pohm_ns *ns = fresh(0);
	long p0 = pohm_kvmem_puts(&kv);

	/* A create's puts: the inode's, then the bucket's (the last). */
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "probe", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	nputs = (int)(pohm_kvmem_puts(&kv) - p0);
	EXPECT(nputs >= 2);
	pohm_ns_close(ns);
	for (f = 0; f < 4; f++) {
		for (k = 0; k < nputs; k++) {
			struct pohm_inode in;
			uint64_t ino;
			int r;

			ns = fresh(0);
			pohm_kvmem_fail_unsure(&kv, k, failing[f]);
			r = pohm_ns_create(ns, 1, "f", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL);
			pohm_kvmem_fail_unsure(&kv, -1, 0);
			EXPECT(r == 0 || r == -EIO);
			/* The bucket put's unknown outcome, settled by reading again
			 * while the reads fail fewer times than the retries. */
			if (k == nputs - 1 && failing[f] <= 2) {
				if (r)
					printf("# bucket put unsure, %d failing reads: %d\n", failing[f], r);
				EXPECT_EQ_INT(r, 0);
			}
			ino = ino_of(ns, 1, "f");
			if (ino) {
				r = pohm_ns_getattr(ns, ino, &in);
				if (r)
					printf("# unsure put %d, %d failing: name f without inode %llx\n",
					       k, failing[f], (unsigned long long)ino);
				EXPECT_EQ_INT(r, 0);
				if (!r)
					pohm_inode_clear(&in);
			}
			pohm_ns_close(ns);
		}
	}
}

/*
 * Issue 23, decision 0022: a create's new inode and its entry go out in
 * one put_n (one wait), and so do a mkdir's (after the parent's link
 * count).  A crash between the two, in either order: with only the inode,
 * the name is absent (an orphan for fsck); with only the entry, the name
 * reads as absent (lookup gives its number, getattr -ENOENT), a
 * non-exclusive create takes it over once the intent timeout has passed,
 * and an unlink removes it.  The parent's link count is never too low.
 */
TEST(create_writes_inode_and_entry_together_and_a_crash_between_reads_absent)
{
	struct pohm_ns *ns = fresh(0), *rec;
	struct pohm_inode in;
	uint64_t d, ino;
	long calls, puts;
	int rev, r;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "seed", 0644, 0, 0, 0, 0, NULL), 0);
	calls = pohm_kvmem_put_n_calls(&kv);
	puts = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "a", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), 0);
	EXPECT_EQ_INT(pohm_kvmem_put_n_calls(&kv) - calls, 1);	/* inode + entry: one wait */
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - puts, 2);
	puts = pohm_kvmem_puts(&kv);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, d, "m", 0755, 0, 0, NULL), 0);
	/* count, inode, its empty bucket (decision 0079), entry: one */
	EXPECT_EQ_INT(pohm_kvmem_put_n_calls(&kv) - calls, 2);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv) - puts, 4);
	EXPECT_EQ_INT(nlink_of(ns, d), 3);
	EXPECT(nlink_of(ns, ino_of(ns, d, "m")) == 2);
	pohm_ns_close(ns);

	for (rev = 0; rev < 2; rev++) {
		int isdir, k;

		for (isdir = 0; isdir < 2; isdir++) {
			for (k = 1; k <= 1 + 2 * isdir; k++) {
				int live;

				ns = fresh(0);
				EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
				d = ino_of(ns, 1, "d");
				EXPECT_EQ_INT(pohm_ns_create(ns, d, "seed", 0644, 0, 0, 0, 0, NULL), 0);
				calls = pohm_kvmem_put_n_calls(&kv);
				pohm_kvmem_put_n_reverse(&kv, rev);
				pohm_kvmem_fail_after(&kv, k);	/* k of the writes land */
				r = isdir ? pohm_ns_mkdir(ns, d, "f", 0755, 0, 0, NULL)
					  : pohm_ns_create(ns, d, "f", 0644, 0, 0, 0,
							   POHM_CREATE_EXCL, NULL);
				pohm_kvmem_fail_after(&kv, -1);
				pohm_kvmem_put_n_reverse(&kv, 0);
				EXPECT(r < 0);
				EXPECT_EQ_INT(pohm_kvmem_put_n_calls(&kv) - calls, 1);
				pohm_ns_close(ns);
				/* The next client: intent timeout 1 ms. */
				usleep(3000);
				rec = open_ns(0, 1);
				ino = ino_of(rec, d, "f");
				live = ino && !pohm_ns_getattr(rec, ino, &in);
				if (live)
					pohm_inode_clear(&in);
				EXPECT(!live);	/* the bucket is written last or first: never both */
				/* Never too low; one too high after a crashed mkdir. */
				EXPECT(nlink_of(rec, d) >= 2);
				if (!rev) {
					EXPECT_EQ_U64(ino, 0);	/* the inode alone: an orphan */
				} else {
					EXPECT(ino != 0);	/* the entry alone: */
					EXPECT_EQ_INT(pohm_ns_getattr(rec, ino, &in), -ENOENT);
					EXPECT_EQ_INT(pohm_ns_create(rec, d, "f", 0644, 0, 0, 0,
								     POHM_CREATE_EXCL, NULL), -EEXIST);
				}
				/* A plain create takes the name (over a dead half-create). */
				EXPECT_EQ_INT(pohm_ns_create(rec, d, "f", 0644, 0, 0, 0, 0, &in), 0);
				EXPECT(in.ino != ino || !ino);
				EXPECT_EQ_U64(ino_of(rec, d, "f"), in.ino);
				EXPECT_EQ_INT(nlink_of(rec, in.ino), 1);
				pohm_inode_clear(&in);
				EXPECT_EQ_INT(pohm_ns_unlink(rec, d, "f"), 0);
				EXPECT_EQ_U64(ino_of(rec, d, "f"), 0);
				EXPECT_EQ_INT(pohm_ns_mkdir(rec, d, "f", 0755, 0, 0, NULL), 0);
				/* The count landed: it is second in the put_n (after
				 * the inode), third reversed (after the entry and the
				 * new directory's bucket). */
				EXPECT_EQ_INT(nlink_of(rec, d), 3 + (isdir && k >= 2 + rev));
				pohm_ns_close(rec);
			}
		}
	}
}

/* A name whose inode is not there yet because its create is in flight is
 * not taken over: the create that meets it waits for the inode. */
struct late {
	struct pohm_ns *ns;
	struct pohm_inode in;
};

static void *late_inode(void *arg)
{
	struct late *l = arg;

	usleep(30000);
	ns_inode_put(l->ns, &l->in, NULL);
	return NULL;
}

TEST(a_create_meeting_an_entry_whose_inode_is_in_flight_waits_for_it)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_inode in;
	struct pohm_dentry e = { 0 };
	struct late l;
	char key[POHM_KEY_MAX];
	pthread_t t;
	uint64_t d;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "tmp", 0644, 0, 0, 0, 0, &l.in), 0);
	l.ns = ns;
	pohm_key_inode(key, l.in.ino);
	EXPECT_EQ_INT(kv.ops->del(kv.ctx, key), 0);	/* "not landed yet" */
	e.name = (char *)"f";
	e.ino = l.in.ino;
	e.type = DT_REG;
	e.txid = 77;
	EXPECT_EQ_INT(ns_entry_insert(ns, d, &e, NULL), 0);
	pthread_create(&t, NULL, late_inode, &l);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "f", 0644, 0, 0, 0, 0, &in), 1);	/* exists */
	pthread_join(t, NULL);
	EXPECT_EQ_U64(in.ino, l.in.ino);
	EXPECT_EQ_U64(ino_of(ns, d, "f"), l.in.ino);
	pohm_inode_clear(&in);
	pohm_inode_clear(&l.in);
	pohm_ns_close(ns);
}

/*
 * Decision 0022: a rename in one bucket by a caller that named the source
 * (pohm_ns_read_along before its lookup of the target, as the cache does)
 * sends the bucket's CAS and the source's ctime CAS in one put_n, with no
 * read.  Run in a thread of its own: no copy of the setup's writes (kvmem
 * keeps them per thread), like a new process.  A crash between the two,
 * either way round: the rename happened whole or not at all, the inode
 * is live, and the rename can be made again.
 */
struct along {
	struct pohm_ns *ns;
	uint64_t d, s;
	long calls, puts;
	int lookup, r;
};

static void *along_rename(void *arg)
{
	struct along *a = arg;
	uint64_t ino;

	pohm_ns_read_along(a->ns, a->s);
	a->lookup = pohm_ns_lookup(a->ns, a->d, "t", &ino, NULL);
	a->calls = pohm_kvmem_put_n_calls(&kv);
	a->puts = pohm_kvmem_puts(&kv);
	a->r = pohm_ns_rename_ino(a->ns, a->d, "s", a->d, "t", 0, a->s);
	a->calls = pohm_kvmem_put_n_calls(&kv) - a->calls;
	a->puts = pohm_kvmem_puts(&kv) - a->puts;
	return NULL;
}

TEST(rename_in_a_bucket_sends_the_ctime_along_and_a_crash_between_is_harmless)
{
	struct pohm_inode in, in2;
	struct along a;
	pthread_t t;
	int rev;

	for (rev = -1; rev < 2; rev++) {
		a.ns = fresh(0);
		EXPECT_EQ_INT(pohm_ns_mkdir(a.ns, 1, "d", 0755, 0, 0, NULL), 0);
		a.d = ino_of(a.ns, 1, "d");
		EXPECT_EQ_INT(pohm_ns_create(a.ns, a.d, "s", 0644, 0, 0, 0, 0, &in), 0);
		a.s = in.ino;
		usleep(2000);
		if (rev >= 0) {
			pohm_kvmem_put_n_reverse(&kv, rev);
			pohm_kvmem_fail_after(&kv, 1);
		}
		pthread_create(&t, NULL, along_rename, &a);
		pthread_join(t, NULL);
		pohm_kvmem_fail_after(&kv, -1);
		pohm_kvmem_put_n_reverse(&kv, 0);
		EXPECT_EQ_INT(a.lookup, -ENOENT);
		EXPECT_EQ_INT(a.calls, 1);
		EXPECT_EQ_INT(pohm_ns_getattr(a.ns, a.s, &in2), 0);
		EXPECT_EQ_INT(in2.nlink, 1);
		if (rev < 0) {
			EXPECT_EQ_INT(a.r, 0);
			EXPECT_EQ_INT(a.puts, 2);	/* bucket and ctime: nothing after */
			EXPECT(in2.ctime.sec > in.ctime.sec ||
			       (in2.ctime.sec == in.ctime.sec && in2.ctime.nsec > in.ctime.nsec));
		} else if (rev == 0) {
			EXPECT(a.r != 0);	/* the ctime landed, the move did not */
		}	/* (rev 1: the move, its commit point, landed: done) */
		/* Whole or not at all. */
		if (rev == 0) {
			EXPECT_EQ_U64(ino_of(a.ns, a.d, "s"), a.s);	/* ctime only */
			EXPECT_EQ_U64(ino_of(a.ns, a.d, "t"), 0);
			EXPECT_EQ_INT(pohm_ns_rename(a.ns, a.d, "s", a.d, "t", 0), 0);
		}
		EXPECT_EQ_U64(ino_of(a.ns, a.d, "s"), 0);
		EXPECT_EQ_U64(ino_of(a.ns, a.d, "t"), a.s);
		EXPECT_EQ_INT(count_entries(a.ns, a.d), 1);
		pohm_inode_clear(&in2);
		pohm_inode_clear(&in);
		pohm_ns_close(a.ns);
	}
}

/* A put_n that fails before sending anything (offline: -EIO) leaves no
 * name: the create fails, it never inserts an entry for an inode it did
 * not write. */
static int put_n_offline(void *ctx, size_t n, const char *const *keys, const void *const *data,
			 const size_t *len, const uint8_t *const *expect, int *st)
{
	(void)ctx; (void)n; (void)keys; (void)data; (void)len; (void)expect; (void)st;
	return -EIO;
}

TEST(a_put_n_that_sends_nothing_names_nothing)
{
	static struct pohm_kv_ops ops;
	struct pohm_ns *ns = fresh(0), *off;
	struct pohm_ns_opts o = { .fsid = "test", .chunk_shift = 12 };
	struct pohm_kv okv;
	uint64_t d;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "seed", 0644, 0, 0, 0, 0, NULL), 0);
	ops = *kv.ops;
	ops.put_n = put_n_offline;
	okv.ops = &ops;
	okv.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&off, &okv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_create(off, d, "f", 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL), -EIO);
	EXPECT_EQ_INT(pohm_ns_mkdir(off, d, "m", 0755, 0, 0, NULL), -EIO);
	EXPECT_EQ_U64(ino_of(ns, d, "f"), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "m"), 0);
	EXPECT_EQ_INT(nlink_of(ns, d), 2);
	EXPECT_EQ_INT(count_entries(ns, d), 1);
	pohm_ns_close(off);
	pohm_ns_close(ns);
}


/* ---------------------------------------------------------------- the UNLINKED mark (s14) */

/* The inode's flags (0 if it cannot be read). */
static uint16_t flags_of(struct pohm_ns *ns, uint64_t ino)
{
	struct pohm_inode in;
	uint16_t f;

	if (pohm_ns_getattr(ns, ino, &in))
		return 0;
	f = in.hdr.flags;
	pohm_inode_clear(&in);
	return f;
}

/* dir/name, the inode's only name, gets the UNLINKED mark while it stays
 * named: a one-wait unlink whose put_n applied the inode and then died
 * (the state a crash, or a bucket CAS lost to a rename, leaves). */
static void mark_named(struct pohm_ns *ns, uint64_t dir, const char *name, uint64_t ino)
{
	struct pohm_inode in;
	int gone = -1;

	EXPECT_EQ_INT(pohm_ns_getattr(ns, ino, &in), 0);	/* the copy the unlink sends along */
	pohm_inode_clear(&in);
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_unlink_ino(ns, dir, name, &ino, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_U64(ino_of(ns, dir, name), ino);
	EXPECT(flags_of(ns, ino) & POHM_OBJF_UNLINKED);
}

/*
 * A link racing a one-wait unlink: the link resolved the name, then the
 * unlink's put_n took the entry and marked the inode (nlink 1, no name),
 * then the link's count + 1 and its entry land.  The new name's unlink
 * must leave the inode for fsck as garbage (a tombstone, or still marked),
 * never an unmarked inode with no name (which fsck takes for a lost file
 * and links into /lost+found); and a name still there keeps its file.
 */
TEST(link_racing_a_one_wait_unlink_leaves_garbage_not_a_lost_file)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_inode in;
	uint64_t d, u, b;
	int gone = -1, r;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "u", 0644, 0, 0, 0, 0, &in), 0);
	u = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_getattr(ns, u, &in), 0);	/* the kept copy: one wait */
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_unlink_ino(ns, d, "u", &u, &gone), 0);
	EXPECT_EQ_INT(gone, 1);
	EXPECT(flags_of(ns, u) & POHM_OBJF_UNLINKED);
	/* The link (its lookup of "u" was before the unlink). */
	EXPECT_EQ_INT(pohm_ns_link(ns, u, d, "v", NULL), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "v"), u);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "v"), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "v"), 0);
	r = pohm_ns_getattr(ns, u, &in);
	EXPECT(r == -ENOENT || r == 0);
	if (!r) {
		if (!(in.hdr.flags & POHM_OBJF_UNLINKED))
			printf("# unnamed inode %llu: nlink %u, not marked (a lost file for fsck)\n",
			       (unsigned long long)u, in.nlink);
		EXPECT(in.hdr.flags & POHM_OBJF_UNLINKED);
		pohm_inode_clear(&in);
	}
	/* A marked inode that is still named (the unlink died): a link and an
	 * unlink of one name leave the other name its file. */
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "b", 0644, 0, 0, 0, 0, &in), 0);
	b = in.ino;
	pohm_inode_clear(&in);
	mark_named(ns, d, "b", b);
	EXPECT_EQ_INT(pohm_ns_link(ns, b, d, "c", NULL), 0);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "b"), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "c"), b);
	EXPECT(nlink_of(ns, b) >= 1);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "c"), 0);
	r = pohm_ns_getattr(ns, b, &in);
	EXPECT(r == -ENOENT || (!r && (in.hdr.flags & POHM_OBJF_UNLINKED)));
	if (!r)
		pohm_inode_clear(&in);
	pohm_ns_close(ns);
}

/*
 * RENAME_EXCHANGE gives both inodes a name: both lose an UNLINKED mark
 * (the source's was cleared, the other side's was left), in one directory
 * and across two.
 */
static void exchange_clears(int across)
{
	struct pohm_ns *ns = fresh(0);
	struct pohm_inode in;
	uint64_t d, e, a, b;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	if (across)
		EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "e", 0755, 0, 0, NULL), 0);
	e = across ? ino_of(ns, 1, "e") : d;
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "a", 0644, 0, 0, 0, 0, &in), 0);
	a = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_INT(pohm_ns_create(ns, e, "b", 0644, 0, 0, 0, 0, &in), 0);
	b = in.ino;
	pohm_inode_clear(&in);
	mark_named(ns, d, "a", a);
	mark_named(ns, e, "b", b);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d, "a", e, "b", POHM_RENAME_EXCHANGE), 0);
	EXPECT_EQ_U64(ino_of(ns, d, "a"), b);
	EXPECT_EQ_U64(ino_of(ns, e, "b"), a);
	if (flags_of(ns, b) & POHM_OBJF_UNLINKED)
		printf("# exchange%s: the other side keeps its mark\n", across ? " across" : "");
	EXPECT(!(flags_of(ns, a) & POHM_OBJF_UNLINKED));
	EXPECT(!(flags_of(ns, b) & POHM_OBJF_UNLINKED));
	pohm_ns_close(ns);
}

TEST(rename_exchange_clears_both_marks)        { exchange_clears(0); }
TEST(rename_exchange_across_clears_both_marks) { exchange_clears(1); }

/*
 * A rename in one bucket sends the source's ctime along with the bucket's
 * CAS (decision 0022) before it knows the commit.  On an inode whose kept
 * copy is marked UNLINKED (a one-wait unlink that died after its inode
 * put) and whose name went meanwhile without touching the inode (an
 * unlinker that died before the count), the bucket's CAS loses and the
 * inode's won: the mark went from an inode with no name, which fsck then
 * links into /lost+found instead of collecting it (session 14 review).
 * A marked copy is not sent along; the rename fails -ENOENT, the mark stays.
 */
struct along_marked {
	struct pohm_ns *ns;
	uint64_t d, s;
	pthread_barrier_t *bar;
	int lookup, r;
};

static void *along_marked_rename(void *arg)
{
	struct along_marked *a = arg;
	uint64_t ino;

	pohm_ns_read_along(a->ns, a->s);
	a->lookup = pohm_ns_lookup(a->ns, a->d, "t", &ino, NULL);	/* the kept copies */
	pthread_barrier_wait(a->bar);
	pthread_barrier_wait(a->bar);		/* the name goes meanwhile */
	a->r = pohm_ns_rename_ino(a->ns, a->d, "s", a->d, "t", 0, a->s);
	return NULL;
}

TEST(rename_in_a_bucket_does_not_send_a_marked_inodes_ctime_along)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket bk;
	struct pohm_inode in;
	struct along_marked a;
	pthread_barrier_t bar;
	char key[POHM_KEY_MAX];
	pthread_t t;
	int i;

	a.ns = fresh(0);
	a.bar = &bar;
	EXPECT_EQ_INT(pohm_ns_mkdir(a.ns, 1, "d", 0755, 0, 0, NULL), 0);
	a.d = ino_of(a.ns, 1, "d");
	EXPECT_EQ_INT(pohm_ns_create(a.ns, a.d, "s", 0644, 0, 0, 0, 0, &in), 0);
	a.s = in.ino;
	pohm_inode_clear(&in);
	mark_named(a.ns, a.d, "s", a.s);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, along_marked_rename, &a);
	pthread_barrier_wait(&bar);
	/* The name goes, the inode is not written (its unlinker died). */
	pohm_key_bucket(key, a.d, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&bk, v.data, v.len), 0);
	i = pohm_bucket_find(&bk, "s");
	EXPECT(i >= 0);
	if (i >= 0)
		pohm_bucket_remove(&bk, (uint32_t)i);
	put_bucket(&bk, v.csum);
	pohm_bucket_clear(&bk);
	pohm_kv_val_free(&v);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&bar);
	EXPECT_EQ_INT(a.lookup, -ENOENT);
	EXPECT_EQ_INT(a.r, -ENOENT);
	EXPECT_EQ_U64(ino_of(a.ns, a.d, "t"), 0);
	EXPECT(flags_of(a.ns, a.s) & POHM_OBJF_UNLINKED);	/* garbage for fsck */
	pohm_ns_close(a.ns);
}

/*
 * rename(2) of two names of one inode does nothing and returns 0; the
 * storage says so with POHM_NS_RENAME_SAME, so that the cache keeps both
 * local names too (it did the local rename, dropping the source here
 * while the storage kept it; session 14 review).  In one directory and
 * across, with the target a link another handle made.
 */
TEST(rename_onto_a_link_of_the_same_inode_says_nothing_was_done)
{
	struct pohm_ns *ns = fresh(0), *ns2 = open_ns(0, 10000);
	struct pohm_inode in;
	uint64_t d, e, s;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "e", 0755, 0, 0, NULL), 0);
	d = ino_of(ns, 1, "d");
	e = ino_of(ns, 1, "e");
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "s", 0644, 0, 0, 0, 0, &in), 0);
	s = in.ino;
	pohm_inode_clear(&in);
	EXPECT_EQ_U64(ino_of(ns, d, "t"), 0);	/* this handle saw t absent */
	EXPECT_EQ_U64(ino_of(ns, e, "u"), 0);
	EXPECT_EQ_INT(pohm_ns_link(ns2, s, d, "t", NULL), 0);
	EXPECT_EQ_INT(pohm_ns_link(ns2, s, e, "u", NULL), 0);
	EXPECT_EQ_INT(pohm_ns_rename_ino(ns, d, "s", d, "t", 0, s), POHM_NS_RENAME_SAME);
	EXPECT_EQ_INT(pohm_ns_rename_ino(ns, d, "s", e, "u", 0, s), POHM_NS_RENAME_SAME);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d, "t", e, "u", 0), 0);	/* the plain call: 0 */
	EXPECT_EQ_U64(ino_of(ns, d, "s"), s);
	EXPECT_EQ_U64(ino_of(ns, d, "t"), s);
	EXPECT_EQ_U64(ino_of(ns, e, "u"), s);
	EXPECT_EQ_INT(nlink_of(ns, s), 3);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/* The state of dir's root bucket as stored (-1: none). */
static int raw_root_state(uint64_t dir)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_bucket bk;
	char key[POHM_KEY_MAX];
	int r = -1;

	pohm_key_bucket(key, dir, 0, 0);
	if (kv.ops->get(kv.ctx, key, &v))
		return -1;
	if (!pohm_bucket_decode(&bk, v.data, v.len)) {
		r = bk.state;
		pohm_bucket_clear(&bk);
	}
	pohm_kv_val_free(&v);
	return r;
}

/*
 * An rmdir whose one-write seal (decision 0055) lands but answers -EIO:
 * it fails, and takes its seal back as seal_dir's walk does on any
 * failure; the seal was left, for every later writer to resolve by
 * reading the parent (session 14 review).  Decision 0058: the seal goes
 * with the intent in one put_n; an unknown answer of either takes back
 * the seal, then the intent, and the rmdir runs again the old way: it
 * ends removed, or failed with the directory unsealed and writable.
 */
TEST(rmdir_whose_first_seal_has_an_unknown_outcome_leaves_no_seal)
{
	int k, saw = 0, removed = 0;

	for (k = 0; k < 6; k++) {
		struct pohm_ns *ns = fresh(0);
		uint64_t d;
		int r;

		EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, NULL), 0);
		d = ino_of(ns, 1, "d");
		pohm_kvmem_fail_unsure(&kv, k, 0);
		r = pohm_ns_rmdir(ns, 1, "d");
		pohm_kvmem_fail_unsure(&kv, -1, 0);
		if (!r) {
			removed++;
			EXPECT_EQ_U64(ino_of(ns, 1, "d"), 0);
		} else if (ino_of(ns, 1, "d") == d) {
			saw++;
			EXPECT(raw_root_state(d) != POHM_BUCKET_SEALED);
			EXPECT(raw_root_state(d) != POHM_BUCKET_SEALED_WITH);
			EXPECT_EQ_INT(pohm_ns_create(ns, d, "f", 0644, 0, 0, 0, 0, NULL), 0);
		}
		pohm_ns_close(ns);
	}
	EXPECT(saw + removed == 6);
	EXPECT(removed >= 1);
}

/* Monotonic milliseconds, for a wait's length. */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Decision 0058: an rmdir's seal goes out with its intent, so a seal may
 * land first, or alone (the intent's CAS lost, or its writer died).  A
 * writer meeting a young SEALED_WITH seal whose intent is not there waits
 * (the intent may still land: unsealing then would let the rmdir commit
 * over a directory being filled); once the seal is older than the intent
 * timeout it unseals and writes.  With both written and stale, the rmdir
 * is committed: the writer completes it and finds the directory gone.
 */
TEST(rmdir_seal_sent_with_its_intent_is_waited_for_then_decided)
{
	struct pohm_ns *ns, *ns2;
	struct pohm_inode x;
	uint64_t d, t0, ms;
	int gone, r;

	/* The seal alone: put_n applied last key first, dead after one put. */
	put_n_reversed = 1;
	ns = fresh(0);
	put_n_reversed = 0;
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_rmdir_ino(ns, 1, "d", &d, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	pohm_kvmem_put_n_reverse(&kv, 0);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	ns2 = open_ns(0, 400);
	t0 = now_ms();
	r = pohm_ns_create(ns2, d, "f", 0644, 0, 0, 0, 0, NULL);
	ms = now_ms() - t0;
	EXPECT_EQ_INT(r, 0);
	if (ms < 250)
		printf("# the create waited %" PRIu64 " ms for a young seal\n", ms);
	EXPECT(ms >= 250);	/* waited for the seal to go stale */
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_NORMAL);
	EXPECT_EQ_U64(ino_of(ns2, 1, "d"), d);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);

	/* Both written, then dead: committed; a writer completes it. */
	ns = fresh(0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	pohm_kvmem_fail_after(&kv, 2);
	EXPECT(pohm_ns_rmdir_ino(ns, 1, "d", &d, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	usleep(3000);
	ns2 = open_ns(0, 1);
	EXPECT_EQ_INT(pohm_ns_create(ns2, d, "f", 0644, 0, 0, 0, 0, NULL), -ENOENT);
	EXPECT_EQ_U64(ino_of(ns2, 1, "d"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, d, &x), -ENOENT);	/* tombstoned */
	EXPECT_EQ_INT(pohm_ns_mkdir(ns2, 1, "d", 0755, 0, 0, NULL), 0);	/* the name is free */
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/* Review 15, D1: a put_n whose seal lands, then (a pause, a second CAS attempt,
 * or a reader's clock ahead) a writer on another host meets the lone seal
 * as stale, unseals it and creates in the directory, and only then the
 * intent lands.  Both answers were 0: the rmdir committed over an entry.
 * The writer now fences the parent's bucket before unsealing. */
static struct pohm_kv_ops gap_ops;
static int gap_armed;
static uint64_t gap_dir;
static int gap_create_r = 1;

static void *gap_writer(void *arg)
{
	struct pohm_ns *nsb = open_ns(0, 1);	/* its clock: the seal is stale */

	(void)arg;
	usleep(3000);
	gap_create_r = pohm_ns_create(nsb, gap_dir, "f", 0644, 0, 0, 0, 0, NULL);
	pohm_ns_close(nsb);
	return NULL;
}

static int gap_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		     const size_t *len, const uint8_t *const *expect, int *st)
{
	size_t k;

	if (!gap_armed || n != 2)
		return kv.ops->put_n(ctx, n, keys, data, len, expect, st);
	gap_armed = 0;
	for (k = n; k-- > 0;) {		/* the root's seal first */
		st[k] = kv.ops->put(ctx, keys[k], data[k], len[k], expect[k]);
		if (k == 1) {
			pthread_t t;

			pthread_create(&t, NULL, gap_writer, NULL);
			pthread_join(t, NULL);
		}
	}
	return 0;
}

TEST(rmdir_seal_then_late_intent_loses_no_entry)
{
	struct pohm_ns *ns = fresh(0), *a;
	struct pohm_kv gkv;
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = 10000, .chunk_shift = 12 };
	struct pohm_inode x;
	uint64_t d;
	int gone, r;

	gap_ops = *kv.ops;
	gap_ops.put_n = gap_put_n;
	gkv.ops = &gap_ops;
	gkv.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&a, &gkv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(a, 1, "d", 0755, 0, 0, &x), 0);
	d = gap_dir = x.ino;
	pohm_inode_clear(&x);
	gap_armed = 1;
	r = pohm_ns_rmdir_ino(a, 1, "d", &d, &gone);
	printf("# rmdir %d, the other host's create %d\n", r, gap_create_r);
	/* POSIX: the create made d non-empty, or the rmdir removed it first. */
	EXPECT(!(r == 0 && gap_create_r == 0));
	pohm_ns_close(a);
	pohm_ns_close(ns);
}

/* Review 15, D2: the intent lands first; a reader whose clock says it is
 * stale finds no seal and rolls it back; then the seal lands.  Both answers
 * were 0 (a name pointing at a tombstone).  The reader now fences the
 * directory's root before rolling back. */
static int gap2_armed;
static uint64_t gap2_found;

static void *gap2_reader(void *arg)
{
	struct pohm_ns *nsb = open_ns(0, 1);

	(void)arg;
	usleep(3000);
	gap2_found = ino_of(nsb, 1, "d");	/* resolves the stale intent */
	pohm_ns_close(nsb);
	return NULL;
}

static int gap2_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		      const size_t *len, const uint8_t *const *expect, int *st)
{
	size_t k;

	if (!gap2_armed || n != 2)
		return kv.ops->put_n(ctx, n, keys, data, len, expect, st);
	gap2_armed = 0;
	for (k = 0; k < n; k++) {		/* the parent's intent first */
		st[k] = kv.ops->put(ctx, keys[k], data[k], len[k], expect[k]);
		if (k == 0) {
			pthread_t t;

			pthread_create(&t, NULL, gap2_reader, NULL);
			pthread_join(t, NULL);
		}
	}
	return 0;
}

TEST(rmdir_intent_rolled_back_then_seal_lands_no_more)
{
	struct pohm_ns *ns = fresh(0), *a, *c;
	struct pohm_kv gkv;
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = 10000, .chunk_shift = 12 };
	struct pohm_inode x;
	uint64_t d;
	int gone, r, ra;

	gap_ops = *kv.ops;
	gap_ops.put_n = gap2_put_n;
	gkv.ops = &gap_ops;
	gkv.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&a, &gkv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(a, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	gap2_armed = 1;
	r = pohm_ns_rmdir_ino(a, 1, "d", &d, &gone);
	c = open_ns(0, 10000);
	ra = pohm_ns_getattr(c, d, &x);
	if (!ra)
		pohm_inode_clear(&x);
	printf("# rmdir %d; reader saw %" PRIu64 "; d named %d; getattr %d\n", r,
	       gap2_found, ino_of(c, 1, "d") == d, ra);
	/* A name in the parent must name a live directory. */
	EXPECT(!(ino_of(c, 1, "d") == d && ra == -ENOENT));
	pohm_ns_close(c);
	pohm_ns_close(a);
	pohm_ns_close(ns);
}

/* Review 15, D2: as above, but no delay and the reader's default 10 s timeout:
 * the rmdir's host is 1 s ahead (i_time in the reader's future), which
 * `now - i_time` (unsigned) reads as stale at once. */
static int gap3_armed;

static void *gap3_reader(void *arg)
{
	struct pohm_ns *nsb = open_ns(0, 10000);

	(void)arg;
	gap2_found = ino_of(nsb, 1, "d");
	pohm_ns_close(nsb);
	return NULL;
}

static int gap3_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		      const size_t *len, const uint8_t *const *expect, int *st)
{
	struct pohm_bucket bk;
	struct pohm_buf b = POHM_BUF_INIT;
	size_t k;
	uint32_t i;

	if (!gap3_armed || n != 2)
		return kv.ops->put_n(ctx, n, keys, data, len, expect, st);
	gap3_armed = 0;
	/* The intent as a host whose clock is 1 s ahead stamps it. */
	EXPECT_EQ_INT(pohm_bucket_decode(&bk, data[0], len[0]), 0);
	for (i = 0; i < bk.n; i++)
		if (bk.e[i].intent == POHM_INTENT_RMDIR_SEALED)
			bk.e[i].i_time += 1000000000ULL;
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	pohm_bucket_clear(&bk);
	st[0] = kv.ops->put(ctx, keys[0], b.p, b.len, expect[0]);
	pohm_buf_free(&b);
	{
		pthread_t t;

		pthread_create(&t, NULL, gap3_reader, NULL);
		pthread_join(t, NULL);
	}
	for (k = 1; k < n; k++)
		st[k] = kv.ops->put(ctx, keys[k], data[k], len[k], expect[k]);
	return 0;
}

TEST(rmdir_intent_from_a_clock_ahead_is_young)
{
	struct pohm_ns *ns = fresh(0), *a, *c;
	struct pohm_kv gkv;
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = 10000, .chunk_shift = 12 };
	struct pohm_inode x;
	uint64_t d;
	int gone, r, ra;

	gap_ops = *kv.ops;
	gap_ops.put_n = gap3_put_n;
	gkv.ops = &gap_ops;
	gkv.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&a, &gkv, &o), 0);
	EXPECT_EQ_INT(pohm_ns_mkdir(a, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	gap3_armed = 1;
	r = pohm_ns_rmdir_ino(a, 1, "d", &d, &gone);
	c = open_ns(0, 10000);
	ra = pohm_ns_getattr(c, d, &x);
	if (!ra)
		pohm_inode_clear(&x);
	printf("# rmdir %d; d named %d; getattr %d\n", r, ino_of(c, 1, "d") == d, ra);
	EXPECT(!(ino_of(c, 1, "d") == d && ra == -ENOENT));
	/* An intent stamped ahead of the reader's clock is young: the reader
	 * waits instead of rolling it back, and the empty d goes. */
	EXPECT_EQ_INT(r, 0);
	pohm_ns_close(c);
	pohm_ns_close(a);
	pohm_ns_close(ns);
}

/* Review 15, D3: a lone SEALED_WITH seal (intent lost, take-back failed)
 * on a directory that is then renamed away: the seal's (parent, name)
 * names nothing, which seal_resolve read as "the rmdir committed": every
 * create in it answered ENOENT and repair left it.  Now: still named in
 * the parent (stale seal), unsealed. */
TEST(lone_seal_on_a_directory_renamed_in_its_parent_is_unsealed)
{
	struct pohm_ns *ns, *ns2;
	struct pohm_inode x;
	uint64_t d;
	int gone, r;

	put_n_reversed = 1;
	ns = fresh(0);
	put_n_reversed = 0;
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_rmdir_ino(ns, 1, "d", &d, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	pohm_kvmem_put_n_reverse(&kv, 0);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	ns2 = open_ns(0, 50);
	EXPECT_EQ_INT(pohm_ns_rename(ns2, 1, "d", 1, "e", 0), 0);
	usleep(100000);
	r = pohm_ns_create(ns2, d, "f", 0644, 0, 0, 0, 0, NULL);
	printf("# create in the renamed, live directory: %d\n", r);
	EXPECT_EQ_INT(r, 0);
	EXPECT_EQ_INT(pohm_ns_settle_bucket(ns2, d, 0, 0), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns2, d, "g", 0644, 0, 0, 0, 0, NULL), 0);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/* Review 15, D3: as above, renamed into another directory: its parent is
 * no longer the seal's, so no rmdir of it committed and no intent can land
 * (the bucket it was sent on changed): unsealed at once, young or not. */
TEST(lone_seal_on_a_directory_moved_to_another_parent_is_unsealed_at_once)
{
	struct pohm_ns *ns, *ns2;
	struct pohm_inode x;
	uint64_t d, p, t0, ms;
	int gone, r;

	put_n_reversed = 1;
	ns = fresh(0);
	put_n_reversed = 0;
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "p", 0755, 0, 0, &x), 0);
	p = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	pohm_kvmem_fail_after(&kv, 1);
	EXPECT(pohm_ns_rmdir_ino(ns, 1, "d", &d, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	pohm_kvmem_put_n_reverse(&kv, 0);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	ns2 = open_ns(0, 2000);		/* the seal stays young throughout */
	EXPECT_EQ_INT(pohm_ns_rename(ns2, 1, "d", p, "e", 0), 0);
	t0 = now_ms();
	r = pohm_ns_create(ns2, d, "f", 0644, 0, 0, 0, 0, NULL);
	ms = now_ms() - t0;
	printf("# create in the moved directory: %d after %" PRIu64 " ms\n", r, ms);
	EXPECT_EQ_INT(r, 0);
	EXPECT(ms < 1000);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_NORMAL);
	EXPECT_EQ_U64(ino_of(ns2, p, "e"), d);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/* dir/name removed from dir's root bucket as stored, nothing else. */
static void raw_remove(uint64_t dir, const char *name)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_bucket bk;
	char key[POHM_KEY_MAX];
	int i;

	pohm_key_bucket(key, dir, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&bk, v.data, v.len), 0);
	i = pohm_bucket_find(&bk, name);
	EXPECT(i >= 0);
	if (i >= 0)
		pohm_bucket_remove(&bk, (uint32_t)i);
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, key, b.p, b.len, v.csum), 0);
	pohm_bucket_clear(&bk);
	pohm_buf_free(&b);
	pohm_kv_val_free(&v);
}

/* Review 15, D3, the other side: an rmdir committed (its entry removed)
 * whose tombstone never landed leaves a live, unnamed inode under its
 * seal.  A writer holding its number finds it named nowhere in the parent:
 * committed, -ENOENT, the seal kept (not unsealed into an orphan). */
TEST(committed_rmdir_whose_tombstone_was_lost_keeps_its_seal)
{
	struct pohm_ns *ns, *ns2;
	struct pohm_inode x;
	uint64_t d;
	int gone;

	ns = fresh(0);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "o", 0755, 0, 0, NULL), 0);
	pohm_kvmem_fail_after(&kv, 2);	/* both written, then dead */
	EXPECT(pohm_ns_rmdir_ino(ns, 1, "d", &d, &gone) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	raw_remove(1, "d");		/* its wait 2 without the tombstone */
	usleep(3000);
	ns2 = open_ns(0, 1);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, d, &x), 0);	/* live, unnamed */
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(ns2, d, "f", 0644, 0, 0, 0, 0, NULL), -ENOENT);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	EXPECT_EQ_INT(pohm_ns_settle_bucket(ns2, d, 0, 0), 0);
	EXPECT_EQ_INT(raw_root_state(d), POHM_BUCKET_SEALED_WITH);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/* dir's root bucket and (pdir, name)'s entry as an rmdir the old way
 * (RMDIR intent, then a SEALED walk) by a host whose clock is ahead by
 * `ahead` ns leaves them mid-way: raw writes. */
static void raw_rmdir_midway(uint64_t pdir, const char *name, uint64_t dir, uint64_t ahead)
{
	struct pohm_kv_val v = { 0 };
	struct pohm_buf b = POHM_BUF_INIT;
	struct pohm_bucket bk;
	char key[POHM_KEY_MAX];
	uint64_t t = ns_now_ns() + ahead, txid = 0x5eed5eedULL;
	int i;

	pohm_key_bucket(key, pdir, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&bk, v.data, v.len), 0);
	i = pohm_bucket_find(&bk, name);
	EXPECT(i >= 0);
	if (i >= 0) {
		bk.e[i].intent = POHM_INTENT_RMDIR;
		bk.e[i].i_txid = txid;
		bk.e[i].i_time = t;
	}
	bk.txid ^= 1;
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, key, b.p, b.len, v.csum), 0);
	pohm_bucket_clear(&bk);
	pohm_buf_free(&b);
	pohm_kv_val_free(&v);

	pohm_key_bucket(key, dir, 0, 0);
	EXPECT_EQ_INT(kv.ops->get(kv.ctx, key, &v), 0);
	EXPECT_EQ_INT(pohm_bucket_decode(&bk, v.data, v.len), 0);
	bk.state = POHM_BUCKET_SEALED;
	bk.txid = txid;
	bk.stamp = t;
	bk.seal_parent = pdir;
	bk.seal_name = malloc(strlen(name) + 1);
	strcpy(bk.seal_name, name);
	EXPECT_EQ_INT(pohm_bucket_encode(&b, &bk), 0);
	EXPECT_EQ_INT(kv.ops->put(kv.ctx, key, b.p, b.len, v.csum), 0);
	pohm_bucket_clear(&bk);
	pohm_buf_free(&b);
	pohm_kv_val_free(&v);
}

/* Review 15, D2's age rule in seal_resolve: a writer in a sealed directory
 * whose rmdir's intent is stamped 1 s ahead of the writer's clock waits
 * for it (young), and does not read `now - i_time` wrapped as stale and
 * abort a running rmdir at once. */
TEST(seal_whose_intent_is_ahead_of_the_writers_clock_is_waited_for)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	struct pohm_inode x;
	uint64_t d, t0, ms;
	int r;

	EXPECT_EQ_INT(pohm_ns_mkdir(ns, 1, "d", 0755, 0, 0, &x), 0);
	d = x.ino;
	pohm_inode_clear(&x);
	EXPECT_EQ_INT(pohm_ns_create(ns, d, "t", 0644, 0, 0, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_unlink(ns, d, "t"), 0);	/* an empty root bucket */
	raw_rmdir_midway(1, "d", d, 1000000000ULL);
	ns2 = open_ns(0, 200);
	t0 = now_ms();
	r = pohm_ns_create(ns2, d, "f", 0644, 0, 0, 0, 0, NULL);
	ms = now_ms() - t0;
	printf("# create under a seal whose intent is 1 s ahead: %d after %" PRIu64 " ms\n", r, ms);
	EXPECT_EQ_INT(r, 0);		/* stale at last: aborted, then written */
	EXPECT(ms >= 900);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/* The object keys (written by hand since session 16) are exactly the
 * printf formats every stored key was made with. */
TEST(object_keys_are_the_printf_formats)
{
	static const uint64_t v[] = { 0, 1, 9, 10, 15, 16, 255, 0x1234abcdULL, 0xffffffffULL,
				      0x100000000ULL, 0x0123456789abcdefULL, ~0ULL };
	char got[POHM_KEY_MAX], want[POHM_KEY_MAX];
	size_t i, j, k;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		pohm_key_inode(got, v[i]);
		snprintf(want, sizeof(want), "i:%" PRIx64, v[i]);
		EXPECT_EQ_STR(got, want);
		for (j = 0; j < sizeof(v) / sizeof(v[0]); j++) {
			unsigned depth = (unsigned)v[j];
			uint32_t index = (uint32_t)v[(j + i) % (sizeof(v) / sizeof(v[0]))];

			pohm_key_bucket(got, v[i], depth, index);
			snprintf(want, sizeof(want), "b:%" PRIx64 ":%u:%" PRIx32, v[i], depth, index);
			EXPECT_EQ_STR(got, want);
			for (k = 0; k < sizeof(v) / sizeof(v[0]); k += 3) {
				pohm_key_chunk(got, v[i], v[j], v[k]);
				snprintf(want, sizeof(want), "d:%" PRIx64 ":%" PRIx64 ":%" PRIx64, v[i],
					 v[j], v[k]);
				EXPECT_EQ_STR(got, want);
				pohm_key_map(got, v[i], v[j], v[k]);
				want[0] = 'm';
				EXPECT_EQ_STR(got, want);
			}
		}
	}
}

/* A new directory (mkdir 0) or file of dir: its inode number (0 failed). */
static uint64_t made(struct pohm_ns *ns, uint64_t dir, const char *name, int mkdir)
{
	struct pohm_inode x;
	uint64_t ino;

	if (mkdir ? pohm_ns_mkdir(ns, dir, name, 0755, 0, 0, &x) :
		    pohm_ns_create(ns, dir, name, 0644, 0, 0, 0, 0, &x))
		return 0;
	ino = x.ino;
	pohm_inode_clear(&x);
	return ino;
}

/*
 * Decision 0067, F1: a rename across directories whose intent and commit
 * land but whose finish (the source's removal) does not leaves the MOVE
 * intent T on the source.  The destination entry carries the MOVED_IN
 * mark; whoever changes it (how: 0 renames it away, 1 unlinks it, 2
 * renames another file over it, 3 unlinks it without a lookup on the
 * renamer's kept copy, 4 renames it inside its directory) settles the source first, so a third client that
 * reads the source's bucket later finds nothing to roll forward.  On main
 * (no mark) the third client wrote d2/b again: one inode under two names
 * with nlink 1, or an unlinked name back.
 */
static void f1_case_with(int how, int deferred)
{
	struct pohm_ns *ns = fresh(0), *ns2, *ns3;
	struct pohm_inode x;
	uint64_t d1, d2, d3, a, o = 0, ino;
	int gone;

	d1 = made(ns, 1, "d1", 1);
	EXPECT(d1 != 0);
	d2 = made(ns, 1, "d2", 1);
	EXPECT(d2 != 0);
	d3 = made(ns, 1, "d3", 1);
	EXPECT(d3 != 0);
	a = made(ns, d1, "a", 0);
	EXPECT(a != 0);
	if (how == 2) {
		o = made(ns, d3, "o", 0);
	}
	if (deferred)
		EXPECT(made(ns, d2, "p", 0) != 0);
	else
		raw_drop_root(d2);	/* no stored bucket: the synchronous finish */
	ino_of(ns, d2, "b");	/* the kept copy of d2's bucket (decision 0054) */
	if (deferred) {
		/* The finish sent without a wait (decision 0073: d2's
		 * bucket stored, the ctime with the commit) is lost; the
		 * rename answers at its commit. */
		pohm_kvmem_defer_lose(&kv, 1);
		EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
		pohm_kvmem_defer_lose(&kv, 0);
	} else {
		/* The intent and the commit land, the finish answers -EIO
		 * (no quorum in time): the rename happened, and says so
		 * (s19-mv4b; it was -EIO, ns_replicas test 4). */
		pohm_kvmem_fail_after(&kv, 2);
		EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
		pohm_kvmem_fail_after(&kv, -1);
	}
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_MOVE);
	EXPECT_EQ_INT(raw_intent(d2, "b"), POHM_INTENT_MOVED_IN);
	ns2 = open_ns(0, 10000);		/* another host: the intent is young */
	if (how == 0) {
		EXPECT_EQ_INT(pohm_ns_rename(ns2, d2, "b", d3, "c", 0), 0);
	} else if (how == 1) {
		EXPECT_EQ_INT(pohm_ns_unlink(ns2, d2, "b"), 0);
	} else if (how == 2) {
		EXPECT_EQ_INT(pohm_ns_rename(ns2, d3, "o", d2, "b", 0), 0);
	} else if (how == 4) {
		EXPECT_EQ_INT(pohm_ns_rename(ns2, d2, "b", d2, "b2", 0), 0);
	} else {
		ino = a;	/* the renamer's own kept copy, no lookup */
		EXPECT_EQ_INT(pohm_ns_unlink_ino(ns, d2, "b", &ino, &gone), 0);
	}
	EXPECT_EQ_INT(raw_intent(d1, "a"), -1);	/* settled before the change */
	usleep(3000);
	ns3 = open_ns(0, 1);			/* a third client: stale */
	EXPECT_EQ_U64(ino_of(ns3, d1, "a"), 0);
	if (how == 0 || how == 4) {
		EXPECT_EQ_U64(ino_of(ns3, d2, "b"), 0);
		EXPECT_EQ_U64(ino_of(ns3, how ? d2 : d3, how ? "b2" : "c"), a);
		EXPECT_EQ_INT(nlink_of(ns3, a), 1);
	} else if (how == 2) {
		EXPECT_EQ_U64(ino_of(ns3, d2, "b"), o);
		EXPECT_EQ_U64(ino_of(ns3, d3, "o"), 0);
		EXPECT_EQ_INT(pohm_ns_getattr(ns3, a, &x), -ENOENT);	/* replaced */
	} else if (how == 1) {
		EXPECT_EQ_U64(ino_of(ns3, d2, "b"), 0);
		EXPECT_EQ_INT(nlink_of(ns3, a), 0);	/* gone */
	} else {
		EXPECT_EQ_U64(ino_of(ns3, d2, "b"), 0);
		EXPECT_EQ_INT(gone, 1);		/* its last name (decision 0049) */
		EXPECT_EQ_INT(pohm_ns_getattr(ns3, a, &x), 0);
		EXPECT(x.hdr.flags & POHM_OBJF_UNLINKED);
		pohm_inode_clear(&x);
	}
	pohm_ns_close(ns3);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

static void f1_case(int how)
{
	f1_case_with(how, 0);
}

TEST(f1_rename_away_of_a_moved_entry_settles_its_source_first)
{
	f1_case(0);
}

TEST(f1_unlink_of_a_moved_entry_settles_its_source_first)
{
	f1_case(1);
}

TEST(f1_rename_over_a_moved_entry_settles_its_source_first)
{
	f1_case(2);
}

TEST(f1_unlink_on_a_kept_copy_of_a_moved_entry_settles_its_source_first)
{
	f1_case(3);
}

TEST(f1_rename_inside_the_directory_of_a_moved_entry_settles_its_source_first)
{
	f1_case(4);
}

/*
 * Decision 0067: a marked MOVE intent whose commit never landed is rolled
 * back once stale (the destination is fenced first), not rolled forward:
 * with marks, a destination without the txid never had it.  And the
 * renamer's commit starts no put after its deadline.
 */
TEST(stale_marked_move_without_its_commit_is_rolled_back)
{
	struct pohm_ns *ns = fresh(0), *ns3;
	struct pohm_dentry e = { 0 };
	struct ns_deadline late;
	uint64_t d1, d2, a, rep = 0;
	uint8_t rtype = 0;
	long puts;

	d1 = made(ns, 1, "d1", 1);
	EXPECT(d1 != 0);
	d2 = made(ns, 1, "d2", 1);
	EXPECT(d2 != 0);
	a = made(ns, d1, "a", 0);
	EXPECT(a != 0);
	pohm_kvmem_fail_after(&kv, 1);		/* the intent alone */
	EXPECT(pohm_ns_rename(ns, d1, "a", d2, "b", 0) != 0);
	pohm_kvmem_fail_after(&kv, -1);
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_MOVE);
	usleep(3000);
	ns3 = open_ns(0, 1);
	EXPECT_EQ_U64(ino_of(ns3, d1, "a"), a);		/* rolled back */
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_NONE);
	EXPECT_EQ_U64(ino_of(ns3, d2, "b"), 0);
	EXPECT_EQ_INT(nlink_of(ns3, a), 1);
	/* A commit past its deadline writes nothing. */
	e.name = "a";
	e.ino = a;
	e.type = DT_REG;
	e.i_txid = 77;
	e.i_dir = d2;
	e.i_name = "b";
	e.i_flags = POHM_MOVE_MARKED;
	puts = pohm_kvmem_puts(&kv);
	/* Past on either clock (the real-time one, then the boot clock). */
	late.boot_ns = pohm_sys_boot_ns() + 10000000000ULL;
	late.real_ns = ns_now_ns() - 1;
	EXPECT_EQ_INT(ns_move_commit_from(ns3, d1, &e, &late, &rep, &rtype, NULL), -ETIME);
	late.boot_ns = pohm_sys_boot_ns() - 1;
	late.real_ns = ns_now_ns() + 10000000000ULL;
	EXPECT_EQ_INT(ns_move_commit_from(ns3, d1, &e, &late, &rep, &rtype, NULL), -ETIME);
	EXPECT_EQ_INT(pohm_kvmem_puts(&kv), puts);
	EXPECT_EQ_U64(ino_of(ns3, d2, "b"), 0);
	pohm_ns_close(ns3);
	pohm_ns_close(ns);
}

/* Decision 0067's cost: the renamer whose finish was acknowledged knows
 * its txid settled, so its own unlink of the moved name is the one-wait
 * unlink of a kept copy (decision 0049); another handle reads the source's
 * bucket first.  The counts are printed. */
TEST(unlink_of_a_moved_entry_by_its_renamer_needs_no_settle)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	uint64_t d1, d2, a, ino;
	long puts, calls;
	int gone;

	d1 = made(ns, 1, "d1", 1);
	EXPECT(d1 != 0);
	d2 = made(ns, 1, "d2", 1);
	EXPECT(d2 != 0);
	a = made(ns, d1, "a", 0);
	EXPECT(a != 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, d1, "c", 0644, 0, 0, 0, 0, NULL), 0);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
	EXPECT_EQ_INT(raw_intent(d2, "b"), POHM_INTENT_MOVED_IN);
	puts = pohm_kvmem_puts(&kv);
	calls = pohm_kvmem_put_n_calls(&kv);
	ino = a;
	EXPECT_EQ_INT(pohm_ns_unlink_ino(ns, d2, "b", &ino, &gone), 0);
	printf("# the renamer's unlink: %ld puts, %ld put_n\n", pohm_kvmem_puts(&kv) - puts,
	       pohm_kvmem_put_n_calls(&kv) - calls);
	EXPECT_EQ_INT(pohm_kvmem_put_n_calls(&kv) - calls, 1);	/* entry + mark, one wait */
	EXPECT_EQ_INT(gone, 1);
	/* Another handle: reads d1's bucket (nothing left to settle), then unlinks. */
	EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "c", d2, "e", 0), 0);
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_unlink(ns2, d2, "e"), 0);
	EXPECT_EQ_U64(ino_of(ns2, d2, "e"), 0);
	EXPECT_EQ_U64(ino_of(ns2, d1, "c"), 0);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * Decision 0067, concurrently: an F1 state (intent and commit landed, the
 * finish lost), then one host unlinks the moved name while a stale client
 * meets the source's intent.  Whichever comes first, the name stays gone
 * and the source never comes back: the settle's and the roll-back's CASes
 * on the source's bucket decide, and the roll-back fences the destination
 * first.  40 rounds.
 */
struct f1_race {
	struct pohm_ns *ns;
	uint64_t dir;
	char name[16];
	int r;
};

static void *f1_unlinker(void *arg)
{
	struct f1_race *c = arg;

	c->r = pohm_ns_unlink(c->ns, c->dir, c->name);
	return NULL;
}

static void *f1_reader(void *arg)
{
	struct f1_race *c = arg;
	uint64_t ino = 0;

	c->r = pohm_ns_lookup(c->ns, c->dir, c->name, &ino, NULL);
	return NULL;
}

TEST(f1_unlink_and_a_stale_resolver_race_on_a_moved_entry)
{
	struct pohm_ns *ns = fresh(0), *nsb, *nsc;
	struct f1_race u, l;
	struct pohm_inode x;
	pthread_t tu, tl;
	uint64_t d1, d2, a;
	int k, bad = 0;

	d1 = made(ns, 1, "d1", 1);
	EXPECT(d1 != 0);
	d2 = made(ns, 1, "d2", 1);
	EXPECT(d2 != 0);
	EXPECT(made(ns, d2, "p", 0) != 0);	/* d2's bucket stored: the commit carries the ctime */
	nsb = open_ns(0, 10000);
	nsc = open_ns(0, 1);
	for (k = 0; k < 40; k++) {
		memset(&u, 0, sizeof(u));
		memset(&l, 0, sizeof(l));
		snprintf(u.name, sizeof(u.name), "b%d", k);
		snprintf(l.name, sizeof(l.name), "a%d", k);
		EXPECT_EQ_INT(pohm_ns_create(ns, d1, l.name, 0644, 0, 0, 0, 0, &x), 0);
		a = x.ino;
		pohm_inode_clear(&x);
		/* The finish sent without a wait and lost (decision 0073). */
		ino_of(ns, d2, u.name);
		pohm_kvmem_defer_lose(&kv, 1);
		EXPECT_EQ_INT(pohm_ns_rename(ns, d1, l.name, d2, u.name, 0), 0);
		pohm_kvmem_defer_lose(&kv, 0);
		EXPECT_EQ_INT(raw_intent(d1, l.name), POHM_INTENT_MOVE);
		usleep(2000);		/* stale for nsc */
		u.ns = nsb;
		u.dir = d2;
		l.ns = nsc;
		l.dir = d1;
		pthread_create(&tu, NULL, f1_unlinker, &u);
		pthread_create(&tl, NULL, f1_reader, &l);
		pthread_join(tu, NULL);
		pthread_join(tl, NULL);
		if (u.r != 0 || l.r != -ENOENT || ino_of(nsc, d1, l.name) ||
		    ino_of(nsc, d2, u.name) || nlink_of(nsc, a)) {
			printf("# round %d: unlink %d lookup %d, after: %" PRIu64 " %" PRIu64
			       " nlink %u\n", k, u.r, l.r, ino_of(nsc, d1, l.name),
			       ino_of(nsc, d2, u.name), nlink_of(nsc, a));
			bad++;
		}
	}
	EXPECT_EQ_INT(bad, 0);
	pohm_ns_close(nsc);
	pohm_ns_close(nsb);
	pohm_ns_close(ns);
}

/*
 * Decision 0073: a file's move across answers at its commit; its finish
 * (the source's MOVE intent removed) goes out without a wait, and the
 * handle's next storage call tells its outcome first.  Without it the
 * finish was written before the rename returned (nothing pending).
 */
TEST(move_across_sends_its_finish_without_a_wait)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	struct pohm_inode x, y;
	uint64_t d1, d2, a;

	d1 = made(ns, 1, "d1", 1);
	d2 = made(ns, 1, "d2", 1);
	a = made(ns, d1, "a", 0);
	EXPECT(d1 && d2 && a);
	EXPECT(made(ns, d2, "o", 0) != 0);	/* d2's bucket stored (not created by the commit) */
	ns2 = open_ns(0, 10000);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, a, &x), 0);
	usleep(2000);
	EXPECT_EQ_U64(ino_of(ns, d2, "b"), 0);	/* the cache's lookup of the target */
	EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
	EXPECT_EQ_INT((int)pohm_kvmem_deferred(&kv), 1);	/* the finish */
	EXPECT_EQ_INT(raw_intent(d1, "a"), -1);		/* told by this read: gone */
	EXPECT_EQ_INT((int)pohm_kvmem_deferred(&kv), 0);
	EXPECT_EQ_U64(ino_of(ns2, d1, "a"), 0);
	EXPECT_EQ_U64(ino_of(ns2, d2, "b"), a);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, a, &y), 0);
	EXPECT(y.ctime.sec > x.ctime.sec ||
	       (y.ctime.sec == x.ctime.sec && y.ctime.nsec > x.ctime.nsec));
	EXPECT_EQ_INT((int)y.nlink, 1);
	pohm_inode_clear(&x);
	pohm_inode_clear(&y);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * Decision 0073 with the finish lost (a renamer killed after the commit,
 * or its finish refused everywhere): the source keeps MOVE T, yet every
 * other handle -- young intent or stale -- and the renamer itself see the
 * new name only, and a stale resolver never rolls back the committed T
 * (the destination's mark proves it, decision 0067).
 */
TEST(lost_deferred_finish_leaves_only_the_new_name_visible)
{
	struct pohm_ns *ns = fresh(0), *ns2, *ns3;
	uint64_t d1, d2, a;

	d1 = made(ns, 1, "d1", 1);
	d2 = made(ns, 1, "d2", 1);
	a = made(ns, d1, "a", 0);
	EXPECT(d1 && d2 && a);
	EXPECT(made(ns, d2, "o", 0) != 0);	/* d2's bucket stored (not created by the commit) */
	EXPECT_EQ_U64(ino_of(ns, d2, "b"), 0);	/* the cache's lookup of the target */
	pohm_kvmem_defer_lose(&kv, 1);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
	pohm_kvmem_defer_lose(&kv, 0);
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_MOVE);	/* not finished */
	EXPECT_EQ_INT(raw_intent(d2, "b"), POHM_INTENT_MOVED_IN);
	ns2 = open_ns(0, 10000);		/* the intent is young for it */
	EXPECT_EQ_U64(ino_of(ns2, d1, "a"), 0);
	EXPECT_EQ_U64(ino_of(ns2, d2, "b"), a);
	usleep(3000);
	ns3 = open_ns(0, 1);			/* stale for it: resolves */
	EXPECT_EQ_U64(ino_of(ns3, d1, "a"), 0);
	EXPECT_EQ_U64(ino_of(ns3, d2, "b"), a);
	EXPECT_EQ_INT((int)nlink_of(ns3, a), 1);
	EXPECT_EQ_INT(raw_intent(d1, "a"), -1);	/* completed by the resolver */
	EXPECT_EQ_INT(raw_intent(d2, "b"), POHM_INTENT_MOVED_IN);	/* rolled forward, kept */
	EXPECT_EQ_U64(ino_of(ns, d1, "a"), 0);
	EXPECT_EQ_U64(ino_of(ns, d2, "b"), a);
	pohm_ns_close(ns3);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * A store whose put_deferred first lets another handle change the
 * directory d (a create of "z" there, on the plain store): the deferred
 * finish then goes on a stale copy and is refused, as when a concurrent
 * mover or creator wrote the source's bucket between the intent and the
 * finish (review of s18-mv4).
 */
static struct pohm_kv_ops racy_ops;
static struct pohm_ns *racer;
static uint64_t racy_dir;

static int racy_put_deferred(void *ctx, const char *key, const void *data, size_t len,
			     const uint8_t *expect, void (*done)(void *arg, int st), void *arg)
{
	if (racer && racy_dir) {
		EXPECT(made(racer, racy_dir, "z", 0) != 0);
		racy_dir = 0;
	}
	return kv.ops->put_deferred(ctx, key, data, len, expect, done, arg);
}

static struct pohm_ns *open_racy(void)
{
	static struct pohm_kv racy;
	struct pohm_ns_opts o = { .fsid = "test", .intent_timeout_ms = 10000, .chunk_shift = 12 };
	struct pohm_ns *ns = NULL;

	racy_ops = *kv.ops;
	racy_ops.put_deferred = racy_put_deferred;
	racy.ops = &racy_ops;
	racy.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&ns, &racy, &o), 0);
	return ns;
}

/*
 * A deferred finish refused because the source's bucket changed under it
 * (review of s18-mv4, HIGH: it was left to the readers, and 4 movers out
 * of one directory left most finishes undone) is owed: told at the
 * renamer's next storage call's start, redone by intent_finish after that
 * settle (ns_finish_owed), not inside it.
 */
TEST(refused_deferred_finish_is_redone_at_the_next_call)
{
	struct pohm_ns *ns, *ns2;
	uint64_t d1, d2, a;

	ns2 = fresh(0);
	ns = open_racy();
	d1 = made(ns, 1, "d1", 1);
	d2 = made(ns, 1, "d2", 1);
	a = made(ns, d1, "a", 0);
	EXPECT(d1 && d2 && a);
	EXPECT(made(ns, d2, "o", 0) != 0);	/* d2's bucket stored */
	EXPECT_EQ_U64(ino_of(ns, d2, "b"), 0);	/* the cache's lookup of the target */
	racer = ns2;
	racy_dir = d1;
	EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
	racer = NULL;
	EXPECT_EQ_INT((int)pohm_kvmem_deferred(&kv), 1);	/* sent, refused, untold */
	EXPECT_EQ_INT(raw_intent(d1, "z"), 0);		/* the other handle's create */
	/* That read told the refusal, in its settle: owed, not redone there
	 * (review of s19-mv4, MEDIUM: the redo ran while this thread held
	 * the process's settler slot, every other thread's call waiting). */
	EXPECT_EQ_INT((int)pohm_kvmem_deferred(&kv), 0);
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_MOVE);
	/* The renamer's next call (a listing here) redoes it first. */
	EXPECT_EQ_INT(count_entries(ns, d1), 1);	/* z */
	EXPECT_EQ_INT(raw_intent(d1, "a"), -1);
	EXPECT_EQ_INT(raw_intent(d2, "b"), POHM_INTENT_MOVED_IN);
	EXPECT_EQ_U64(ino_of(ns2, d1, "a"), 0);
	EXPECT_EQ_U64(ino_of(ns2, d2, "b"), a);
	EXPECT_EQ_INT((int)nlink_of(ns2, a), 1);
	pohm_ns_close(ns);
	pohm_ns_close(ns2);
}

/*
 * A directory with many leftover committed moves out (finishes lost, as
 * renamers killed after their commit leave them) lists at once (review of
 * s19-mv4, LOW: a listing resolved one such entry per round, 16 rounds,
 * then failed EBUSY).
 */
TEST(listing_resolves_many_leftover_moves_out)
{
	struct pohm_ns *ns = fresh(0), *ns2;	/* d1: one bucket (256) */
	uint64_t d1, d2;
	char name[16], to[16];
	int i;

	d1 = made(ns, 1, "d1", 1);
	d2 = made(ns, 1, "d2", 1);
	EXPECT(d1 && d2);
	EXPECT(made(ns, d2, "o", 0) != 0);	/* d2's bucket stored */
	EXPECT(made(ns, d1, "keep", 0) != 0);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		EXPECT(made(ns, d1, name, 0) != 0);
	}
	pohm_kvmem_defer_lose(&kv, 1);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		snprintf(to, sizeof(to), "g%d", i);
		EXPECT_EQ_INT((int)nlink_of(ns, ino_of(ns, d1, name)), 1);	/* the cache's */
		EXPECT_EQ_U64(ino_of(ns, d2, to), 0);
		EXPECT_EQ_INT(pohm_ns_rename(ns, d1, name, d2, to, 0), 0);
	}
	pohm_kvmem_defer_lose(&kv, 0);
	EXPECT_EQ_INT(raw_intent(d1, "f39"), POHM_INTENT_MOVE);	/* not finished */
	EXPECT_EQ_INT(raw_intent(d1, "f0"), POHM_INTENT_MOVE);
	ns2 = open_ns(0, 10000);		/* the intents are young for it */
	EXPECT_EQ_INT(count_entries(ns2, d1), 1);	/* keep */
	EXPECT_EQ_INT(raw_intent(d1, "f0"), -1);
	EXPECT_EQ_INT(raw_intent(d1, "f39"), -1);
	EXPECT_EQ_INT(count_entries(ns2, d2), 41);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * An rmdir of the directory a file moved out of, while the move's finish
 * is lost or untold (the source keeps the committed MOVE T; another
 * handle, for which the intent is young): the seal resolves it as a
 * reader does and removes the directory (review of s18-mv4, HIGH: seal_fn
 * counted the entry, rmdir failed ENOTEMPTY until a listing).  An entry
 * that is not a committed move still refuses.
 */
TEST(rmdir_resolves_a_committed_move_out_first)
{
	struct pohm_ns *ns = fresh(0), *ns2;
	uint64_t d1, d2, a, c;

	d1 = made(ns, 1, "d1", 1);
	d2 = made(ns, 1, "d2", 1);
	a = made(ns, d1, "a", 0);
	c = made(ns, d1, "c", 0);
	EXPECT(d1 && d2 && a && c);
	EXPECT(made(ns, d2, "o", 0) != 0);	/* d2's bucket stored */
	EXPECT_EQ_U64(ino_of(ns, d2, "b"), 0);
	pohm_kvmem_defer_lose(&kv, 1);
	EXPECT_EQ_INT(pohm_ns_rename(ns, d1, "a", d2, "b", 0), 0);
	pohm_kvmem_defer_lose(&kv, 0);
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_MOVE);	/* not finished */
	ns2 = open_ns(0, 10000);		/* the intent is young for it */
	EXPECT_EQ_INT(pohm_ns_rmdir(ns2, 1, "d1"), -ENOTEMPTY);	/* c is there */
	EXPECT_EQ_INT(pohm_ns_unlink(ns2, d1, "c"), 0);
	EXPECT_EQ_INT(raw_intent(d1, "a"), POHM_INTENT_MOVE);	/* still */
	EXPECT_EQ_INT(pohm_ns_rmdir(ns2, 1, "d1"), 0);
	EXPECT_EQ_U64(ino_of(ns2, 1, "d1"), 0);
	EXPECT_EQ_U64(ino_of(ns2, d2, "b"), a);
	EXPECT_EQ_INT((int)nlink_of(ns2, a), 1);
	pohm_ns_close(ns2);
	pohm_ns_close(ns);
}

/*
 * Decision 0073: F1's cases with the finish sent without a wait and lost
 * (pohm_kvmem_defer_lose): another handle unlinks the destination, renames
 * it away, or the renamer itself unlinks it on its kept copy -- each
 * settles the source first (the renamer: its own finish's outcome told
 * first, -EIO, so it reads the source), and a third, stale handle finds
 * nothing to roll forward.
 */
TEST(f1_lost_deferred_finish_unlink_by_another_handle_settles_first)
{
	f1_case_with(1, 1);
}

TEST(f1_lost_deferred_finish_rename_away_settles_first)
{
	f1_case_with(0, 1);
}

TEST(f1_lost_deferred_finish_unlink_by_the_renamer_settles_first)
{
	f1_case_with(3, 1);
}

/*
 * A store whose put, once it answered -EIO (pohm_kvmem_fail_unsure: applied,
 * the answer lost), lets another handle create names in directory 1 until
 * its bucket splits -- as 8 workers in one directory split it between a
 * renamer's lost answer and its settling read (ns_replicas test 4, s19).
 */
static struct pohm_kv_ops splitty_ops;
static struct pohm_ns *splitter;

static int splitty_put(void *ctx, const char *key, const void *data, size_t len,
		       const uint8_t *expect)
{
	int r = kv.ops->put(ctx, key, data, len, expect), i;
	char name[16];

	if (r == -EIO && splitter) {
		for (i = 0; i < 24; i++) {
			snprintf(name, sizeof(name), "z%d", i);
			EXPECT(made(splitter, 1, name, 0) != 0);
		}
		splitter = NULL;
	}
	return r;
}

/*
 * A one-bucket rename a -> b whose bucket put applied but answered -EIO,
 * after which the bucket split with a and b in different children: the
 * settling read finds its txid at b in b's bucket: 0 (it was -EIO: the read
 * of a's bucket alone found neither name, for a rename that happened).
 */
TEST(rename_in_one_bucket_unknown_outcome_then_split_settles_it)
{
	static struct pohm_kv splitty;
	struct pohm_ns_opts o = { .fsid = "test", .bucket_max = 8, .intent_timeout_ms = 10000,
				  .chunk_shift = 12 };
	struct pohm_ns *ns = NULL, *ns2 = fresh(8);
	struct pohm_inode a, x;
	char dname[16];
	int i;

	/* A target name whose bucket differs from a's from the first split on. */
	for (i = 0; i < 100; i++) {
		snprintf(dname, sizeof(dname), "b%d", i);
		if ((pohm_name_hash(dname) ^ pohm_name_hash("a")) & 1)
			break;
	}
	splitty_ops = *kv.ops;
	splitty_ops.put = splitty_put;
	splitty.ops = &splitty_ops;
	splitty.ctx = kv.ctx;
	EXPECT_EQ_INT(pohm_ns_open(&ns, &splitty, &o), 0);
	EXPECT_EQ_INT(pohm_ns_create(ns, 1, "a", 0644, 0, 0, 0, 0, &a), 0);
	splitter = ns2;
	pohm_kvmem_fail_unsure(&kv, 0, 0);	/* the rename's bucket put */
	EXPECT_EQ_INT(pohm_ns_rename(ns, 1, "a", 1, dname, 0), 0);
	pohm_kvmem_fail_unsure(&kv, -1, 0);
	EXPECT(splitter == NULL);	/* the split did happen in between */
	EXPECT_EQ_U64(ino_of(ns2, 1, dname), a.ino);
	EXPECT_EQ_U64(ino_of(ns2, 1, "a"), 0);
	EXPECT_EQ_INT(pohm_ns_getattr(ns2, a.ino, &x), 0);
	EXPECT_EQ_U64(x.nlink, 1);
	pohm_inode_clear(&x);
	pohm_inode_clear(&a);
	pohm_ns_close(ns);
	pohm_ns_close(ns2);
}
