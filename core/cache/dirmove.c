/*
 * dirmove.c — a directory another host moved into another parent: its
 * local copy follows by identity (a local rename), as the kernel's
 * directory follows a rename, so that dirfds and cwds in it keep working
 * at the new place and what it holds stays fetched (DESIGN §2, "a remote
 * rename becomes a local rename"; session 18, doc/notes-s18-dirmove.md).
 * Before, the listing of its old parent removed it (listgone.c) and the
 * new parent got an empty stub.  Two ways in:
 *   - the new name is made here first (a walk or a listing of the new
 *     parent, cache_make_local_at): the directory the journal records
 *     for that inode moves there (cache_dir_move_in);
 *   - the old name is found gone first (a walk or a listing of the old
 *     parent, cache.c dir_follow): the stored inode's hdr.parent names
 *     the new parent; cache_dir_stored_path finds its path from a
 *     directory present here, the walk makes the missing ones below it
 *     (stubs), and the local directory moves in.
 * The records below a moved directory take their new paths in rehint.c.
 * Only this file's callers rename; nothing here removes anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cache_int.h"
#include "sys.h"

/* A parent chain longer than this is not followed (the old rule then). */
#define MOVE_MAX_DEPTH 16

/* This thread's moves (pohm_cache_dir_moves; per thread: no lock). */
static __thread unsigned dir_moves;

unsigned pohm_cache_dir_moves(void)
{
	return dir_moves;
}

void cache_dir_moved(void)
{
	dir_moves++;
}

int cache_dir_moving(struct pohm_cache *c, uint64_t ino)
{
	struct stat st;
	char path[64];

	snprintf(path, sizeof(path), "p/%llx.mv", (unsigned long long)ino);
	return !pohm_sys_fstatat(c->j.dirfd, path, &st, AT_SYMLINK_NOFOLLOW);
}

/*
 * The local directory the journal records for the stored directory ino,
 * checked by identity: *rec (clear it) when its hint still names that
 * directory (the same local inode, indexed as ino).  0 or -ENOENT.
 */
static int recorded_dir(struct pohm_cache *c, uint64_t ino, struct pohm_jrec *rec)
{
	struct stat st;
	uint64_t known;

	if (pohm_journal_get(&c->j, ino, rec))
		return -ENOENT;
	if (S_ISDIR(rec->mode) && rec->lino && rec->hint[0] &&
	    !pohm_sys_fstatat(c->pfd, rec->hint, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) &&
	    (uint64_t)st.st_dev == rec->ldev && (uint64_t)st.st_ino == rec->lino &&
	    !pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &known) &&
	    known == ino)
		return 0;
	pohm_jrec_clear(rec);
	return -ENOENT;
}

int cache_dir_rename_local(int odfd, const char *oname, int dfd, const char *name)
{
	struct stat st;
	int r = pohm_sys_renameat2(odfd, oname, dfd, name, RENAME_NOREPLACE);

	if (r != -EINVAL && r != -ENOSYS)
		goto out;
	/* No RENAME_NOREPLACE here: never over a name that exists. */
	if (pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != -ENOENT)
		return -EEXIST;
	r = pohm_sys_renameat(odfd, oname, dfd, name);
out:
	if (!r)
		cache_dir_moved();
	return r;
}

int cache_dir_move_in(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		      uint64_t ino)
{
	struct pohm_jrec rec;
	int r;

	/* The record first: a directory new here has none (no system call
	 * then, as a listing makes many). */
	if (recorded_dir(c, ino, &rec))
		return -ENOENT;
	r = cache_dir_moving(c, ino) ? -EBUSY : cache_dir_rename_local(c->pfd, rec.hint, dfd, name);
	if (!r) {
		pohm_debug("%s: moved elsewhere, the local directory follows", rec.hint);
		cache_dir_rehint_below(c, dfd, name, rel);
	}
	pohm_jrec_clear(&rec);
	return r;
}

/* pohm_ns_readdir's callback: the name of s->ino. */
struct name_scan {
	uint64_t ino;
	char name[POHM_NAME_MAX + 1];
	int found;
};

static int name_fn(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	struct name_scan *s = arg;

	(void)type;
	if (ino != s->ino || strlen(name) > POHM_NAME_MAX)
		return 0;
	strcpy(s->name, name);
	s->found = 1;
	return 1;
}

int cache_dir_stored_path(struct pohm_cache *c, uint64_t ino, const struct pohm_inode *in,
			  char *rel, size_t len)
{
	char names[MOVE_MAX_DEPTH][POHM_NAME_MAX + 1], base[sizeof(((struct pohm_jrec *)0)->hint)];
	uint64_t cur = ino, par = in->hdr.parent;
	struct pohm_inode pin;
	struct pohm_jrec rec;
	size_t n = 0, k, off;
	int r;

	for (;;) {
		struct name_scan s = { cur, "", 0 };

		if (n == MOVE_MAX_DEPTH || !par || par == cur)
			return -ELOOP;
		r = pohm_ns_readdir(c->ns, par, name_fn, &s);
		if (r < 0)
			return r;
		if (!s.found)
			return -ENOENT;	/* moved again meanwhile: the next look */
		strcpy(names[n++], s.name);
		if (par == POHM_ROOT_INO) {
			base[0] = '\0';
			break;
		}
		if (!recorded_dir(c, par, &rec)) {
			snprintf(base, sizeof(base), "%s", rec.hint);
			pohm_jrec_clear(&rec);
			break;
		}
		r = pohm_ns_getattr(c->ns, par, &pin);
		if (r)
			return r;
		cur = par;
		par = pin.hdr.parent;
		pohm_inode_clear(&pin);
	}
	off = (size_t)snprintf(rel, len, "%s", base);
	for (k = n; k-- > 0 && off < len;)
		off += (size_t)snprintf(rel + off, len - off, "%s%s", off ? "/" : "", names[k]);
	return off < len ? 0 : -ENAMETOOLONG;
}
