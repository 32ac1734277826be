/*
 * ns_http.c — http_compat path copies (ns_http.h).
 *
 * Sections: names (the name a file's copy follows, a directory's path) ·
 * copies (write or remove one) · hooks (commit, setattr, unlink, rename).
 *
 * Paths are built bottom-up from the names recorded in the inodes (pname in
 * hdr.parent), each checked with one lookup; a stale or missing one is found
 * again by a scan of the parent directory, and a directory's is written back
 * so that the scan happens once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sys.h"
#include "ns_http.h"

#define HTTP_DEPTH	256	/* deepest directory walked */

/* ---------------------------------------------------------------- names */

struct scan {
	uint64_t ino;
	char name[POHM_NAME_MAX + 1];
	int found;
};

static int scan_fn(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	struct scan *s = arg;

	if (ino != s->ino)
		return 0;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->found = 1;
	return 1;
}

/*
 * The name of in (not the root) in its directory: the recorded one if the
 * directory still maps it to in, else the first found by a scan (*scanned).
 */
static int name_of(struct pohm_ns *ns, const struct pohm_inode *in, uint64_t *dir, char *name,
		   int *scanned)
{
	struct scan s = { .ino = in->ino };
	uint64_t x;
	int r;

	*scanned = 0;
	*dir = in->hdr.parent;
	if (in->pname && !pohm_ns_lookup(ns, in->hdr.parent, in->pname, &x, NULL) &&
	    x == in->ino) {
		snprintf(name, POHM_NAME_MAX + 1, "%s", in->pname);
		return 0;
	}
	r = pohm_ns_readdir(ns, in->hdr.parent, scan_fn, &s);
	if (r)
		return r;
	if (!s.found)
		return -ENOENT;
	strcpy(name, s.name);
	*scanned = 1;
	return 0;
}

struct hint {
	uint64_t dir;
	const char *name;
};

static int hint_fn(struct pohm_inode *in, void *arg)
{
	const struct hint *h = arg;

	if (in->pname && !strcmp(in->pname, h->name) &&
	    (S_ISDIR(in->mode) || in->hdr.parent == h->dir))
		return 1;	/* already recorded */
	return ns_http_hint_set(in, h->dir, h->name);
}

/* Record (dir, name) in ino by its own CAS. */
static void hint_store(struct pohm_ns *ns, uint64_t ino, uint64_t dir, const char *name)
{
	struct hint h = { dir, name };
	int r = ns_inode_update(ns, ino, hint_fn, &h, NULL);

	if (r && r != -ENOENT)
		pohm_info("http_compat: cannot record the name of inode %llx: %s",
			  (unsigned long long)ino, strerror(-r));
}

/* "/a/b" of directory dir ("" for the root) into out (POHM_HTTP_PATH bytes). */
static int dir_path(struct pohm_ns *ns, uint64_t dir, char *out)
{
	char buf[POHM_HTTP_PATH], name[POHM_NAME_MAX + 1];
	size_t pos = sizeof(buf) - 1;
	unsigned depth;
	int r = 0;

	buf[pos] = '\0';
	for (depth = 0; dir != POHM_ROOT_INO; depth++) {
		struct pohm_inode in;
		uint64_t parent;
		size_t n;
		int scanned;

		if (depth == HTTP_DEPTH)
			return -ELOOP;
		r = ns_inode_get(ns, dir, &in, NULL, 0);
		if (r)
			return r;
		r = S_ISDIR(in.mode) ? name_of(ns, &in, &parent, name, &scanned) : -ENOTDIR;
		pohm_inode_clear(&in);
		if (r)
			return r;
		if (scanned)
			hint_store(ns, dir, parent, name);
		n = strlen(name);
		if (n + 1 > pos)
			return -ENAMETOOLONG;
		pos -= n;
		memcpy(buf + pos, name, n);
		buf[--pos] = '/';
		dir = parent;
	}
	memcpy(out, buf + pos, sizeof(buf) - pos);
	return 0;
}

/* "dirpath/name" into out: 0 or -ENAMETOOLONG. */
static int join(char *out, const char *dirpath, const char *name)
{
	int n = snprintf(out, POHM_HTTP_PATH, "%s/%s", dirpath, name);

	return n < 0 || n >= POHM_HTTP_PATH ? -ENAMETOOLONG : 0;
}

/* The key of dir/name. */
static int entry_path(struct pohm_ns *ns, uint64_t dir, const char *name, char *out)
{
	char dp[POHM_HTTP_PATH];
	int r = dir_path(ns, dir, dp);

	return r ? r : join(out, dp, name);
}

static int http_hint_find(struct pohm_ns *ns, uint64_t ino, uint64_t *dir, char *name)
{
	struct pohm_inode in;
	int r, scanned;

	if (!ns->http_compat)
		return -ENOENT;
	r = ns_inode_get(ns, ino, &in, NULL, 0);
	if (r)
		return r;
	r = S_ISREG(in.mode) ? name_of(ns, &in, dir, name, &scanned) : -ENOENT;
	pohm_inode_clear(&in);
	return r;
}

/* ---------------------------------------------------------------- copies */

static void copy_del(struct pohm_ns *ns, const char *key)
{
	int r = ns->kv.ops->del(ns->kv.ctx, key);

	if (r && r != -ENOENT)
		pohm_warn("http_compat: cannot remove the copy %s: %s", key, strerror(-r));
}

/* Make key hold in's whole content, or nothing if in gets no copy.  0 or -errno (logged). */
static int copy_write(struct pohm_ns *ns, const struct pohm_inode *in, const char *key)
{
	uint8_t *buf;
	ssize_t n;
	int r;

	if (!S_ISREG(in->mode) || !in->size || in->size > POHM_HTTP_MAX) {
		r = ns->kv.ops->del(ns->kv.ctx, key);
		if (r && r != -ENOENT)
			pohm_warn("http_compat: cannot remove the copy %s: %s", key, strerror(-r));
		return r == -ENOENT ? 0 : r;
	}
	buf = malloc((size_t)in->size);
	if (!buf) {
		pohm_warn("http_compat: no memory for the copy %s", key);
		return -ENOMEM;
	}
	n = pohm_ns_read(ns, in, 0, buf, (size_t)in->size);
	if (n == (ssize_t)in->size)
		r = ns->kv.ops->put(ns->kv.ctx, key, buf, (size_t)in->size, NULL);
	else
		r = n < 0 ? (int)n : -EIO;
	if (r) {
		pohm_warn("http_compat: cannot write the copy %s: %s", key, strerror(-r));
		copy_del(ns, key);	/* never leave an older version there */
	}
	free(buf);
	return r;
}

/* ---------------------------------------------------------------- hooks */

static void http_commit(struct pohm_ns *ns, const struct pohm_inode *committed)
{
	char path[POHM_HTTP_PATH], name[POHM_NAME_MAX + 1];
	struct pohm_inode cur, fresh;
	unsigned tries;
	uint64_t dir;
	int r, scanned, same_name;

	if (!ns->http_compat || !S_ISREG(committed->mode))
		return;
	if (pohm_inode_copy(&cur, committed))
		return;
	/*
	 * Concurrent writers: each re-reads the inode after writing its copy and
	 * writes again if the data or the name moved on meanwhile, so the last
	 * one to finish leaves the newest version (a writer that dies between
	 * its commit and its copy leaves the copy one version behind).
	 */
	for (tries = 0; tries < 4; tries++) {
		r = name_of(ns, &cur, &dir, name, &scanned);
		if (!r && scanned) {
			/* Record the name found, then start over from what the CAS stored. */
			hint_store(ns, cur.ino, dir, name);
			pohm_inode_clear(&cur);
			if (ns_inode_get(ns, committed->ino, &cur, NULL, 0))
				return;
			continue;
		}
		if (!r)
			r = entry_path(ns, dir, name, path);
		if (r)
			break;		/* no name (unlinked while open): no copy */
		copy_write(ns, &cur, path);
		r = ns_inode_get(ns, cur.ino, &fresh, NULL, 0);
		if (r == -ENOENT) {
			copy_del(ns, path);	/* unlinked meanwhile: the unlink's delete may have come first */
			break;
		}
		if (r)
			break;
		same_name = fresh.hdr.parent == cur.hdr.parent &&
			    !strcmp(fresh.pname ? fresh.pname : "", cur.pname ? cur.pname : "");
		if (fresh.dversion == cur.dversion && same_name) {
			pohm_inode_clear(&fresh);
			break;
		}
		if (!same_name)
			copy_del(ns, path);	/* renamed meanwhile */
		pohm_inode_clear(&cur);
		cur = fresh;
	}
	pohm_inode_clear(&cur);
}

static void http_setattr(struct pohm_ns *ns, uint64_t ino, unsigned mask)
{
	struct pohm_inode in;

	if (!ns->http_compat || !(mask & POHM_SET_SIZE))
		return;
	if (ns_inode_get(ns, ino, &in, NULL, 0))
		return;
	ns_http_commit(ns, &in);
	pohm_inode_clear(&in);
}

static void http_unlink(struct pohm_ns *ns, uint64_t dir, const char *name, uint8_t type,
			uint64_t ino)
{
	char path[POHM_HTTP_PATH];
	struct pohm_inode in;

	if (!ns->http_compat || type != DT_REG)
		return;
	if (!entry_path(ns, dir, name, path))
		copy_del(ns, path);
	/* If that was the copy's name, another one in the same directory takes it over. */
	if (!ns_inode_get(ns, ino, &in, NULL, 0)) {
		if (!in.pname || (in.hdr.parent == dir && !strcmp(in.pname, name)))
			ns_http_commit(ns, &in);
		pohm_inode_clear(&in);
	}
}

/* One copy to move: from (removed first), to (written from ino, or removed if ino is 0). */
struct move {
	char *from, *to;
	uint64_t ino;
};

struct moves {
	struct move *m;
	size_t n, cap;
	int err;
};

/* A malloc'ed copy of s (never libc's strdup: the library has its own allocator). */
static char *copy_str(const char *s)
{
	char *d = malloc(strlen(s) + 1);

	if (d)
		strcpy(d, s);
	return d;
}

static void moves_add(struct moves *l, const char *from, const char *to, uint64_t ino)
{
	struct move *m;

	if (l->err)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct move *a = realloc(l->m, cap * sizeof(*a));

		if (!a) {
			l->err = -ENOMEM;
			return;
		}
		l->m = a;
		l->cap = cap;
	}
	m = &l->m[l->n];
	m->from = from ? copy_str(from) : NULL;
	m->to = copy_str(to);
	m->ino = ino;
	if ((from && !m->from) || !m->to) {
		free(m->from);
		free(m->to);
		l->err = -ENOMEM;
		return;
	}
	l->n++;
}

struct subtree {
	struct pohm_ns *ns;
	struct moves *l;
	const char *from, *to;		/* the directory's old and new path */
	unsigned depth;
};

static void collect(struct pohm_ns *ns, struct moves *l, uint64_t ino, uint8_t type,
		    const char *from, const char *to, unsigned depth);

static int subtree_fn(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	struct subtree *s = arg;
	char f[POHM_HTTP_PATH], t[POHM_HTTP_PATH];

	if (join(f, s->from, name) || join(t, s->to, name)) {
		s->l->err = -ENAMETOOLONG;
		return 1;
	}
	collect(s->ns, s->l, ino, type, f, t, s->depth + 1);
	return s->l->err ? 1 : 0;
}

/* The copies under ino (of type DT_*) that move from path from to path to. */
static void collect(struct pohm_ns *ns, struct moves *l, uint64_t ino, uint8_t type,
		    const char *from, const char *to, unsigned depth)
{
	struct subtree s = { ns, l, from, to, depth };
	int r;

	if (type == DT_REG) {
		moves_add(l, from, to, ino);
	} else if (type == DT_DIR) {
		if (depth >= HTTP_DEPTH) {
			l->err = -ELOOP;
			return;
		}
		r = pohm_ns_readdir(ns, ino, subtree_fn, &s);
		if (r && !l->err)
			l->err = r;
	} else {
		moves_add(l, from, to, 0);	/* no copy: whatever was at "to" goes */
	}
}

/* Is sdir/sname the name regular file ino's copy follows (not another hard link)? */
static int is_copy_name(struct pohm_ns *ns, uint64_t ino, uint64_t sdir, const char *sname)
{
	struct pohm_inode in;
	int r = ns_inode_get(ns, ino, &in, NULL, 0), yes;

	if (r)
		return 0;
	yes = in.nlink <= 1 || !in.pname || (in.hdr.parent == sdir && !strcmp(in.pname, sname));
	pohm_inode_clear(&in);
	return yes;
}

static void http_rename(struct pohm_ns *ns, uint64_t sdir, const char *sname, uint64_t ddir,
			const char *dname, uint64_t ino, uint8_t type, uint64_t other,
			uint8_t other_type)
{
	char sp[POHM_HTTP_PATH], dp[POHM_HTTP_PATH];
	struct moves l = { 0 };
	size_t i;
	int r;

	if (!ns->http_compat)
		return;
	r = entry_path(ns, sdir, sname, sp);
	if (!r)
		r = entry_path(ns, ddir, dname, dp);
	if (r) {
		pohm_warn("http_compat: cannot name the paths of a rename: %s", strerror(-r));
		return;
	}
	if (type == DT_REG && !is_copy_name(ns, ino, sdir, sname)) {
		moves_add(&l, NULL, dp, 0);	/* a second hard link: its copy stays put */
	} else {
		hint_store(ns, ino, ddir, dname);
		collect(ns, &l, ino, type, sp, dp, 0);
	}
	if (other) {
		hint_store(ns, other, sdir, sname);
		collect(ns, &l, other, other_type, dp, sp, 0);
	}
	if (l.err)
		pohm_warn("http_compat: %s -> %s: %s", sp, dp, strerror(-l.err));
	/* Old keys first: under EXCHANGE one side's new key is the other's old one. */
	for (i = 0; i < l.n; i++)
		if (l.m[i].from)
			copy_del(ns, l.m[i].from);
	for (i = 0; i < l.n; i++) {
		struct pohm_inode in;

		if (!l.m[i].ino) {
			copy_del(ns, l.m[i].to);
		} else if (!ns_inode_get(ns, l.m[i].ino, &in, NULL, 0)) {
			copy_write(ns, &in, l.m[i].to);
			pohm_inode_clear(&in);
		}
		free(l.m[i].from);
		free(l.m[i].to);
	}
	free(l.m);
}

const struct ns_http_ops ns_http_ops = {
	.hint_find = http_hint_find,
	.commit = http_commit,
	.setattr = http_setattr,
	.unlink = http_unlink,
	.rename = http_rename,
};

/* ---------------------------------------------------------------- fsck */

int pohm_ns_http_compat(const struct pohm_ns *ns)
{
	return ns->http_compat;
}

void pohm_ns_set_http_compat(struct pohm_ns *ns, int on)
{
	ns->http_compat = !!on;
}

int pohm_ns_http_key(struct pohm_ns *ns, const struct pohm_inode *in, char *path, int *want)
{
	char name[POHM_NAME_MAX + 1];
	uint64_t dir;
	int r, scanned;

	if (!S_ISREG(in->mode))
		return -ENOENT;
	r = name_of(ns, in, &dir, name, &scanned);
	if (!r)
		r = entry_path(ns, dir, name, path);
	*want = in->size && in->size <= POHM_HTTP_MAX;
	return r;
}

int pohm_ns_http_hint_key(struct pohm_ns *ns, const struct pohm_inode *in, char *path)
{
	if (!S_ISREG(in->mode) || !in->pname)
		return -ENOENT;
	return entry_path(ns, in->hdr.parent, in->pname, path);
}

int pohm_ns_http_old_key(struct pohm_ns *ns, const struct pohm_inode *in, char *path)
{
	uint64_t x;

	if (!S_ISREG(in->mode) || !in->pname)
		return -ENOENT;
	/* Still a name: this file's (not moved) or another's (its copy, its business). */
	if (pohm_ns_lookup(ns, in->hdr.parent, in->pname, &x, NULL) != -ENOENT)
		return -ENOENT;
	return entry_path(ns, in->hdr.parent, in->pname, path);
}

int pohm_ns_http_restore(struct pohm_ns *ns, uint64_t ino)
{
	char path[POHM_HTTP_PATH], name[POHM_NAME_MAX + 1];
	struct pohm_inode in;
	uint64_t dir;
	int r, scanned;

	r = ns_inode_get(ns, ino, &in, NULL, 0);
	if (r)
		return r;
	if (!pohm_ns_http_old_key(ns, &in, path))
		copy_del(ns, path);	/* left behind by a rename that did not finish it */
	r = S_ISREG(in.mode) ? name_of(ns, &in, &dir, name, &scanned) : -ENOENT;
	if (!r && scanned)
		hint_store(ns, ino, dir, name);
	if (!r)
		r = entry_path(ns, dir, name, path);
	if (!r)
		r = copy_write(ns, &in, path);
	pohm_inode_clear(&in);
	return r;
}
