/*
 * rehintmiss.c — the files a complete repair walk (pushmany.c sync_repair)
 * did not find: their records name files removed without the shim.  Kept
 * in cache_dir/rehint.miss, so that neither pohmelfsd's later rounds nor
 * its next start (nor a sync by hand) walk the whole tree for them again
 * until the directory their hint names as parent changes (an entry made or
 * removed in it, it moved or went) or a day has passed (a file the walk
 * missed while it moved is then looked for again).  Only a saving: a lost
 * or torn file costs one walk more.  Format 1: MISS_MAGIC, then fixed
 * records (struct cache_miss_ent, this host's byte order: the file never
 * leaves the host); another magic is read as none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "sys.h"

#define MISS_FILE "rehint.miss"
#define MISS_MAGIC "PRMISS1\n"
#define MISS_MAX 65536				/* records read at most */
#define MISS_TTL_NS (24ULL * 3600 * 1000000000ULL)

/* The state of the directory rec's hint names as its parent (all 0: none). */
static void parent_state(struct pohm_cache *c, const struct pohm_jrec *rec, struct cache_miss_ent *e)
{
	char dir[sizeof(rec->hint)];
	const char *s = strrchr(rec->hint, '/');
	struct stat st;
	int r;

	e->pdev = e->pino = e->pmt_sec = e->pmt_nsec = e->pct_sec = e->pct_nsec = 0;
	if (s) {
		memcpy(dir, rec->hint, (size_t)(s - rec->hint));
		dir[s - rec->hint] = '\0';
		r = pohm_sys_fstatat(c->pfd, dir, &st, AT_SYMLINK_NOFOLLOW);
	} else {
		r = pohm_sys_fstat(c->pfd, &st);
	}
	if (r)
		return;
	e->pdev = (uint64_t)st.st_dev;
	e->pino = (uint64_t)st.st_ino;
	e->pmt_sec = (uint64_t)st.st_mtim.tv_sec;
	e->pmt_nsec = (uint64_t)st.st_mtim.tv_nsec;
	e->pct_sec = (uint64_t)st.st_ctim.tv_sec;
	e->pct_nsec = (uint64_t)st.st_ctim.tv_nsec;
}

/* Order of the loaded marks: by ino, then key (cache_miss_holds bsearches). */
static int miss_cmp(const void *a, const void *b)
{
	const struct cache_miss_ent *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

int cache_miss_load(struct pohm_cache *c, struct cache_miss *m)
{
	char magic[sizeof(MISS_MAGIC) - 1];
	struct stat st;
	ssize_t got;
	size_t n;
	int fd, r = 0;

	memset(m, 0, sizeof(*m));
	fd = pohm_sys_openat(c->j.dirfd, MISS_FILE, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return 0;
	if (pohm_sys_fstat(fd, &st) || st.st_size < (off_t)sizeof(magic) ||
	    pohm_sys_pread_full(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, MISS_MAGIC, sizeof(magic)))
		goto out;
	n = ((size_t)st.st_size - sizeof(magic)) / sizeof(*m->e);
	if (n > MISS_MAX)
		n = MISS_MAX;
	if (!n)
		goto out;
	m->e = malloc(n * sizeof(*m->e));
	if (!m->e) {
		r = -ENOMEM;
		goto out;
	}
	got = pohm_sys_pread_full(fd, m->e, n * sizeof(*m->e), (off_t)sizeof(magic));
	m->n = m->cap = got > 0 ? (size_t)got / sizeof(*m->e) : 0;
	qsort(m->e, m->n, sizeof(*m->e), miss_cmp);
out:
	pohm_sys_close(fd);
	return r;
}

const struct cache_miss_ent *cache_miss_holds(struct pohm_cache *c, const struct cache_miss *m,
					      const struct pohm_jrec *rec, uint64_t key)
{
	struct cache_miss_ent now, want = { .ino = rec->ino, .key = key };
	const struct cache_miss_ent *e;

	e = m->n ? bsearch(&want, m->e, m->n, sizeof(*m->e), miss_cmp) : NULL;
	if (!e || pohm_sys_real_ns() - e->at_ns > MISS_TTL_NS)
		return NULL;
	parent_state(c, rec, &now);
	if (now.pdev != e->pdev || now.pino != e->pino || now.pmt_sec != e->pmt_sec ||
	    now.pmt_nsec != e->pmt_nsec || now.pct_sec != e->pct_sec || now.pct_nsec != e->pct_nsec)
		return NULL;
	return e;
}

int cache_miss_add(struct pohm_cache *c, struct cache_miss *m, const struct pohm_jrec *rec,
		   uint64_t key, const struct cache_miss_ent *old)
{
	struct cache_miss_ent *v;

	if (m->n == m->cap) {
		v = realloc(m->e, (m->cap ? m->cap * 2 : 16) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->e = v;
		m->cap = m->cap ? m->cap * 2 : 16;
	}
	v = &m->e[m->n++];
	if (old) {
		*v = *old;
		return 0;
	}
	v->ino = rec->ino;
	v->key = key;
	v->at_ns = pohm_sys_real_ns();
	parent_state(c, rec, v);
	return 0;
}

int cache_miss_save(struct pohm_cache *c, const struct cache_miss *m)
{
	char tmp[64];
	int fd, r;

	if (!m->n) {
		r = pohm_sys_unlinkat(c->j.dirfd, MISS_FILE, 0);
		return r == -ENOENT ? 0 : r;
	}
	snprintf(tmp, sizeof(tmp), ".%s.%d.%ld", MISS_FILE, (int)pohm_sys_getpid(),
		 (long)pohm_sys_gettid());
	fd = pohm_journal_open_own(c->j.dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	r = (int)pohm_sys_write_full(fd, MISS_MAGIC, sizeof(MISS_MAGIC) - 1);
	if (r >= 0)
		r = (int)pohm_sys_write_full(fd, m->e, m->n * sizeof(*m->e));
	pohm_sys_close(fd);
	if (r >= 0)
		r = pohm_sys_renameat(c->j.dirfd, tmp, c->j.dirfd, MISS_FILE);
	if (r < 0)
		pohm_sys_unlinkat(c->j.dirfd, tmp, 0);
	return r < 0 ? r : 0;
}

void cache_miss_free(struct cache_miss *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}
