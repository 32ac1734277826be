/*
 * cachekept.c — the namespace's CAS bases kept in cache_dir for the next
 * process (issue 23, decision 0048; pohm_ns_opts.base_note / base_load).
 *
 * A note only goes to a small table in memory (the last KEPT_SLOTS keys
 * this process read, wrote or forgot; the least recently noted is dropped,
 * never written).  The table reaches cache_dir once, when the process
 * ends normally or an exec replaces its image (pohm_cache_kept_flush from
 * the exit path), or when the cache is closed: a killed process leaves
 * nothing, and the next one reads first (one wait), which is correct.
 * The process itself is served from the table.
 *
 * Only news is written (session 14): a note of the bytes and stamp k/
 * already holds (this process loaded them from there, wrote them there,
 * or finds them there at the flush) is not written again, unless the kept
 * note is older than half the base's window (its age would soon make it
 * useless while it is still the stored version).  A process that only
 * reads what it validated writes nothing in k/.
 *
 * `k/<key>`: the bytes of an inode or bucket as a process of this cache
 * last read or wrote them, the version's stamp, when they were noted, and
 * the SHA-512 of all three; the file's mtime is the note time too (the
 * sweep's age).  Written in place (pwrite, ftruncate only when the file
 * was longer): a reader that meets a torn or half-written file finds the
 * checksum wrong and has no base.  A file noted later than ours is left
 * alone; two writers racing may leave either's bytes: a base is only the
 * expect of a CAS, a stale one costs a read.  No lock on the files, no
 * rename: nothing here is ever the only copy of anything.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache_int.h"
#include "sys.h"
#include "wire.h"

#define BASE_MAX (1u << 20)	/* bigger objects are not kept (a bucket is ~30 KiB at most) */
#define KEPT_SLOTS 64		/* keys a process keeps for the next one */

static int base_name(char *out, size_t n, const char *key)
{
	int l = snprintf(out, n, "k/%s", key);

	return l > 0 && (size_t)l < n && !strchr(key, '/') ? 0 : -EINVAL;
}

/* The file: data, the version's stamp and the note time (8 bytes each,
 * little-endian; the time in ns of CLOCK_REALTIME), SHA-512 of all three. */
#define TRAILER (16 + POHM_SHA512_LEN)

/*
 * The table.  Guarded by kept_lock, a leaf (nothing else is taken under
 * it; its holders do memory work, and pohm_cache_kept_flush the k/ file
 * calls).  A fork child starts with an empty table (cache_base_atfork_child:
 * the parent's notes are the parent's to write; a child that execs would
 * otherwise write them again at each exec).
 */
struct kept {
	struct pohm_cache *c;		/* NULL: a free slot */
	char key[POHM_KEY_MAX];
	uint8_t *data;			/* NULL: forgotten (the file is to go) */
	size_t len;
	uint64_t ts_ns;			/* the version's stamp */
	uint64_t when_ns;		/* note time, CLOCK_REALTIME */
	uint64_t used;			/* kept_clock at the note: the LRU order */
	int dirty;			/* to write at the next flush */
	int ondisk;			/* k/ holds these bytes and stamp, noted at disk_ns */
	uint64_t disk_ns;
	int moved;			/* the process saw the key change: no need to
					 * look in k/ for these bytes at the flush */
	int loaded;			/* only loaded from k/, not noted: the process
					 * asks k/ again (another may have noted since) */
};
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept kept[KEPT_SLOTS];
static uint64_t kept_clock;

/* A kept note of the same version older than this is written again (its
 * age renewed): half the window ns_base_peek trusts a base for. */
static uint64_t refresh_ns(const struct pohm_cache *c)
{
	uint64_t w = c->attr_timeout_ns && c->attr_timeout_ns < CACHE_BASE_MAX_NS ?
		     c->attr_timeout_ns : CACHE_BASE_MAX_NS;

	return w / 2;
}

/* Is e's note the version v (same bytes, same stamp)?  Under kept_lock. */
static int kept_same(const struct kept *e, const uint8_t *data, size_t len, uint64_t ts_ns)
{
	return e->data && data && e->len == len && e->ts_ns == ts_ns &&
	       !memcmp(e->data, data, len);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* The slot of (c, key), or NULL.  Under kept_lock. */
static struct kept *kept_find(struct pohm_cache *c, const char *key)
{
	int i;

	for (i = 0; i < KEPT_SLOTS; i++)
		if (kept[i].c == c && !strcmp(kept[i].key, key))
			return &kept[i];
	return NULL;
}

void cache_base_note(void *arg, const char *key, const struct pohm_kv_val *v)
{
	struct pohm_cache *c = arg;
	char name[POHM_KEY_MAX + 8];
	struct kept *e;
	uint8_t *b = NULL, *old;
	uint64_t when = now_ns();
	int i;

	if (base_name(name, sizeof(name), key) || strlen(key) >= POHM_KEY_MAX)
		return;
	if (v && v->len <= BASE_MAX && v->len) {
		b = malloc(v->len);
		if (b)
			memcpy(b, v->data, v->len);
	}
	/* No copy (a forget, too big, no memory): the key is forgotten. */
	pthread_mutex_lock(&kept_lock);
	e = kept_find(c, key);
	if (e && b && kept_same(e, b, v->len, v->ts_ns)) {
		/* The version the process knew: younger now, no news for k/
		 * (unless k/'s note of it is getting old). */
		old = b;
		e->when_ns = when;
		e->used = ++kept_clock;
		e->loaded = 0;
		if (e->ondisk && when >= e->disk_ns && when - e->disk_ns >= refresh_ns(c))
			e->dirty = 1;
		goto unlock;
	}
	if (e) {
		old = e->data;
		e->moved = 1;	/* a change this process saw: k/ has not these bytes */
	} else {
		e = &kept[0];
		for (i = 0; i < KEPT_SLOTS && e->c; i++)
			if (!kept[i].c || kept[i].used < e->used)
				e = &kept[i];
		old = e->data;
		memset(e, 0, sizeof(*e));
		e->c = c;
		memcpy(e->key, key, strlen(key) + 1);
	}
	e->data = b;
	e->len = b ? v->len : 0;
	e->ts_ns = b ? v->ts_ns : 0;
	e->when_ns = when;
	e->used = ++kept_clock;
	e->dirty = 1;
	e->ondisk = 0;
	e->loaded = 0;
unlock:
	pthread_mutex_unlock(&kept_lock);
	free(old);
}

/*
 * Does the file open as fd (n bytes long) hold b, e's bytes and stamp
 * (the first len + 8 of n), intact?  1 with *disk_ns its note time, else 0.
 * Under kept_lock, at the flush: one pread instead of a pwrite and a
 * futimens when it does.
 */
static int kept_holds(int fd, const uint8_t *b, size_t n, size_t len, uint64_t *disk_ns)
{
	uint8_t sum[POHM_SHA512_LEN], *f = malloc(n);
	int i, r = 0;

	if (!f || pohm_sys_pread_full(fd, f, n, 0) != (ssize_t)n || memcmp(f, b, len + 8))
		goto out;
	pohm_sha512(f, len + 16, sum);
	if (memcmp(sum, f + len + 16, POHM_SHA512_LEN))
		goto out;	/* torn: write ours */
	*disk_ns = 0;
	for (i = 0; i < 8; i++)
		*disk_ns |= (uint64_t)f[len + 8 + i] << (8 * i);
	r = 1;
out:
	free(f);
	return r;
}

/* Write e's file (or remove it, when forgotten), unless k/ holds its
 * version noted recently enough.  Under kept_lock. */
static void kept_write(struct kept *e)
{
	char name[POHM_KEY_MAX + 8];
	struct timespec tv[2];
	struct stat st;
	uint8_t *b;
	size_t n = e->len + TRAILER;
	uint64_t disk;
	int fd, i;

	if (base_name(name, sizeof(name), e->key))
		return;
	if (!e->data) {
		pohm_sys_unlinkat(e->c->j.dirfd, name, 0);
		return;
	}
	b = malloc(n);
	if (!b)
		return;
	memcpy(b, e->data, e->len);
	for (i = 0; i < 8; i++) {
		b[e->len + i] = (uint8_t)(e->ts_ns >> (8 * i));
		b[e->len + 8 + i] = (uint8_t)(e->when_ns >> (8 * i));
	}
	pohm_sha512(b, e->len + 16, b + e->len + 16);
	fd = pohm_journal_open_own(e->c->j.dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -ENOENT && !pohm_journal_mkdir_own(e->c->j.dirfd, "k"))
		fd = pohm_journal_open_own(e->c->j.dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC |
					   O_NOFOLLOW);
	if (fd < 0)
		goto out;
	if (pohm_sys_fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto close;
	if (st.st_size > 0 && (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
			      (uint64_t)st.st_mtim.tv_nsec > e->when_ns)
		goto close;	/* another process noted it later */
	/* The version k/ holds already (the process read what it had
	 * validated, or what another process noted): no rewrite, unless
	 * that note is getting old.  Not looked for when the process saw
	 * the key change (its bytes are news). */
	if (!e->moved && st.st_size == (off_t)n && kept_holds(fd, b, n, e->len, &disk) &&
	    (disk >= e->when_ns || e->when_ns - disk < refresh_ns(e->c))) {
		e->ondisk = 1;
		e->disk_ns = disk;
		goto close;
	}
	if (pohm_sys_pwrite_full(fd, b, n, 0) != (ssize_t)n)
		goto close;	/* a torn base: no base */
	if (st.st_size > (off_t)n)
		pohm_sys_ftruncate(fd, (off_t)n);
	tv[0].tv_sec = tv[1].tv_sec = (time_t)(e->when_ns / 1000000000ULL);
	tv[0].tv_nsec = tv[1].tv_nsec = (long)(e->when_ns % 1000000000ULL);
	pohm_sys_utimensat(fd, NULL, tv, 0);
	e->ondisk = 1;
	e->disk_ns = e->when_ns;
	e->moved = 0;
close:
	pohm_sys_close(fd);
out:
	free(b);
}

/* Write c's unwritten notes; drop: also free its slots (the cache closes).
 * At exit (!drop) the lock is only tried, for up to ~100 ms: a signal
 * handler that calls exit() on a thread interrupted inside a note holds it
 * for good, and a flush left out only costs the next process one read
 * (session 13 review). */
static void kept_flush(struct pohm_cache *c, int drop)
{
	int i, tries = 0;

	if (drop) {
		pthread_mutex_lock(&kept_lock);
	} else {
		while (pthread_mutex_trylock(&kept_lock)) {
			if (++tries > 100)
				return;
			pohm_sys_nap_ns(1000000);
		}
	}
	for (i = 0; i < KEPT_SLOTS; i++) {
		struct kept *e = &kept[i];

		if (e->c != c)
			continue;
		if (e->dirty)
			kept_write(e);
		e->dirty = 0;
		if (drop) {
			free(e->data);
			memset(e, 0, sizeof(*e));
		}
	}
	pthread_mutex_unlock(&kept_lock);
}

void pohm_cache_kept_flush(struct pohm_cache *c)
{
	if (c)
		kept_flush(c, 0);
}

void cache_base_drop(struct pohm_cache *c)
{
	kept_flush(c, 1);
}

void cache_base_atfork_child(void)
{
	/* The parent's copies stay allocated in the child (its pages are the
	 * parent's until written; no allocator call here). */
	pthread_mutex_init(&kept_lock, NULL);
	memset(kept, 0, sizeof(kept));
}

/* The table's answer for (c, key): 0 with *out and *age_ns, -ENOENT
 * forgotten, 1 not in the table. */
static int kept_load(struct pohm_cache *c, const char *key, struct pohm_kv_val *out,
		     uint64_t *age_ns)
{
	struct kept *e;
	uint64_t now = now_ns();
	uint8_t *b = NULL;
	int r = 1;

	pthread_mutex_lock(&kept_lock);
	e = kept_find(c, key);
	if (e && !e->loaded) {
		r = -ENOENT;
		if (e->data && now >= e->when_ns && (b = malloc(e->len))) {
			memcpy(b, e->data, e->len);
			out->len = e->len;
			out->ts_ns = e->ts_ns;
			*age_ns = now - e->when_ns;
			r = 0;
		}
	}
	pthread_mutex_unlock(&kept_lock);
	if (!r) {
		pohm_sha512(b, out->len, out->csum);
		out->data = b;
	}
	return r;
}

/*
 * Remember that k/ holds (data, len, ts_ns) noted at when_ns, as this
 * process loaded it: a later note of the same version is then no news
 * (cache_base_note), with no look at k/ at the flush.  Takes a free slot
 * or another loaded one, never a note's (loaded slots go first when a note
 * needs one: their used is 0).  No memory: not remembered.  data NULL:
 * k/ has no base of key (gone, torn): what a load remembered is dropped.
 */
static void kept_loaded(struct pohm_cache *c, const char *key, const uint8_t *data, size_t len,
			uint64_t ts_ns, uint64_t when_ns)
{
	struct kept *e;
	uint8_t *b = NULL, *old = NULL;
	int i;

	if (strlen(key) >= POHM_KEY_MAX || (data && !(b = malloc(len))))
		return;
	if (b)
		memcpy(b, data, len);
	pthread_mutex_lock(&kept_lock);
	e = kept_find(c, key);
	if (!b) {
		if (e && e->loaded) {
			old = e->data;
			memset(e, 0, sizeof(*e));
		}
		goto unlock;
	}
	for (i = 0; !e && i < KEPT_SLOTS; i++)
		if (!kept[i].c || kept[i].loaded)
			e = &kept[i];
	if (e && (!e->c || e->loaded)) {
		old = e->data;
		memset(e, 0, sizeof(*e));
		e->c = c;
		memcpy(e->key, key, strlen(key) + 1);
		e->data = b;
		e->len = len;
		e->ts_ns = ts_ns;
		e->when_ns = e->disk_ns = when_ns;
		e->ondisk = 1;
		e->loaded = 1;
		b = NULL;
	}
unlock:
	pthread_mutex_unlock(&kept_lock);
	free(old);
	free(b);
}

int cache_base_load(void *arg, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	struct pohm_cache *c = arg;
	uint8_t sum[POHM_SHA512_LEN];
	char name[POHM_KEY_MAX + 8];
	struct stat st;
	uint8_t *b = NULL;
	uint64_t when = 0, now;
	size_t len;
	int fd, i, r;

	if (base_name(name, sizeof(name), key))
		return -ENOENT;
	r = kept_load(c, key, out, age_ns);
	if (r <= 0)
		return r;
	r = -ENOENT;
	fd = pohm_sys_openat(c->j.dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0) {
		kept_loaded(c, key, NULL, 0, 0, 0);
		return -ENOENT;
	}
	if (pohm_sys_fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= TRAILER ||
	    st.st_size > BASE_MAX + TRAILER)
		goto out;
	len = (size_t)st.st_size - TRAILER;
	b = malloc((size_t)st.st_size);
	if (!b || pohm_sys_pread_full(fd, b, (size_t)st.st_size, 0) != st.st_size)
		goto out;
	pohm_sha512(b, len + 16, sum);
	if (memcmp(sum, b + len + 16, POHM_SHA512_LEN))
		goto out;	/* torn, or being written */
	for (i = 0; i < 8; i++)
		when |= (uint64_t)b[len + 8 + i] << (8 * i);
	now = now_ns();
	if (now < when)
		goto out;	/* from the future: the clock moved; not trusted */
	*age_ns = now - when;	/* since the note, not the write */
	out->ts_ns = 0;
	for (i = 0; i < 8; i++)
		out->ts_ns |= (uint64_t)b[len + i] << (8 * i);
	pohm_sha512(b, len, out->csum);
	kept_loaded(c, key, b, len, out->ts_ns, when);
	out->data = b;
	out->len = len;
	b = NULL;
	r = 0;
out:
	if (r)
		kept_loaded(c, key, NULL, 0, 0, 0);
	free(b);
	pohm_sys_close(fd);
	return r;
}

int cache_base_sweep(struct pohm_cache *c, uint64_t max_age_ns)
{
	char buf[4096];
	struct timespec now;
	ssize_t n;
	int fd, gone = 0;

	fd = pohm_sys_openat(c->j.dirfd, "k", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	clock_gettime(CLOCK_REALTIME, &now);
	while ((n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			struct stat st;

			off += de->d_reclen;
			if (de->d_name[0] == '.' ||
			    pohm_sys_fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			if ((uint64_t)(now.tv_sec - st.st_mtim.tv_sec) * 1000000000ULL <= max_age_ns &&
			    now.tv_sec >= st.st_mtim.tv_sec)
				continue;
			gone += !pohm_sys_unlinkat(fd, de->d_name, 0);
		}
	}
	pohm_sys_close(fd);
	return n < 0 ? (int)n : gone;
}
