/*
 * cache.c — opening a cache, materializing paths and listings.
 *
 * Sections: open/close · local copies (stubs, fetch) · walk and
 * materialize (and pohm_cache_xattr_ready) · listing · paths.  Below it
 * (cache_int.h has the order): cachebase.c (freshness marks, counters),
 * cachestat.c (the stat overlay), createmark.c, cacheperm.c, cachexattr.c,
 * push.c; above it mvintent.c and cachens.c (issue 20, session 13).
 *
 * Every local change goes through *at calls relative to a held directory fd
 * with O_NOFOLLOW, so a symlink swapped into the cache can never redirect a
 * fetch outside the prefix.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"
#include "wire.h"
#include "stub.h"

static int sys_mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t i, n = strlen(path);
	int r;

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	/* Made by an earlier process: one call, not one per component (each
	 * process that opens the cache does this twice; make starts dozens). */
	r = pohm_sys_mkdirat(AT_FDCWD, path, mode);
	if (r == -EEXIST)
		return 0;
	if (!r) {
		pohm_sys_fchmodat(AT_FDCWD, path, mode);	/* whatever the umask */
		return 0;
	}
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		r = pohm_sys_mkdirat(AT_FDCWD, buf, mode);
		if (!r)
			pohm_sys_fchmodat(AT_FDCWD, buf, mode);	/* whatever the umask */
		if (r && r != -EEXIST)
			return r;
		buf[i] = i < n ? '/' : '\0';
	}
	return 0;
}

/* Default cache_dir: $XDG_STATE_HOME (or ~/.local/state)/pohmelfs/<prefix with / as _>. */
static int default_cache_dir(char *out, size_t len, const char *prefix)
{
	const char *base = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char esc[1024];
	size_t i;

	for (i = 0; prefix[i] && i < sizeof(esc) - 1; i++)
		esc[i] = prefix[i] == '/' ? '_' : prefix[i];
	esc[i] = '\0';
	if (strlen(prefix) >= sizeof(esc))
		return -ENAMETOOLONG;
	if (base && *base)
		i = (size_t)snprintf(out, len, "%.2048s/pohmelfs/%s", base, esc);
	else if (home && *home)
		i = (size_t)snprintf(out, len, "%.2048s/.local/state/pohmelfs/%s", home, esc);
	else
		return -ENOENT;
	return i < len ? 0 : -ENAMETOOLONG;
}

/* One cache serves one fsid: refuse a prefix already bound to another. */
static int bind_fsid(struct pohm_cache *c, const char *fsid, char *err, size_t errlen)
{
	char have[256];
	ssize_t n;
	int fd, r = 0;

	fd = pohm_sys_openat(c->j.dirfd, "fsid", O_RDONLY, 0);
	if (fd >= 0) {
		n = pohm_sys_read_full(fd, have, sizeof(have) - 1);
		pohm_sys_close(fd);
		have[n > 0 ? n : 0] = '\0';
		if (strcmp(have, fsid)) {
			snprintf(err, errlen, "prefix=%s is bound to fsid \"%s\", not \"%s\" "
				 "(use another prefix or cache_dir)", c->prefix, have, fsid);
			return -EEXIST;
		}
		return 0;
	}
	fd = pohm_journal_open_own(c->j.dirfd, "fsid", O_WRONLY | O_CREAT | O_EXCL);
	if (fd >= 0) {
		r = (int)pohm_sys_write_full(fd, fsid, strlen(fsid));
		pohm_sys_close(fd);
	}
	return r < 0 ? r : 0;
}

/* ---------------------------------------------------------------- open/close */

int pohm_cache_open(struct pohm_cache **out, const struct pohm_cache_opts *o, char *err,
		    size_t errlen)
{
	struct pohm_ns_opts nso = { 0 };
	struct pohm_cache *c;
	char cdir[4096];
	struct stat pst, sst;
	uint8_t h[64];
	int r;

	err[0] = '\0';
	if (!o->prefix || o->prefix[0] != '/') {
		snprintf(err, errlen, "prefix=%s: expected an absolute path", o->prefix ? o->prefix : "");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pfd = c->stage_fd = c->cmark_fd = c->kdir = -1;
	c->j.dirfd = c->j.xfd = c->j.sfd = -1;
	pthread_mutex_init(&c->vlock, NULL);
	if (cache_writers_init(c) || cache_lockfds_init(c)) {
		cache_writers_close(c);
		free(c);
		return -ENOMEM;
	}
	snprintf(c->prefix, sizeof(c->prefix), "%s", o->prefix);
	snprintf(c->host, sizeof(c->host), "%s", o->host_id && *o->host_id ? o->host_id : "host");
	c->attr_timeout_ns = o->attr_timeout_ns;
	c->offline = o->offline;
	c->offline_arg = o->offline_arg;
	c->is_root = pohm_sys_geteuid() == 0;

	if (o->prefix_fd) {
		/* The handle the process holds: after a switch to a user who
		 * cannot search the prefix's parents, the path would fail where
		 * the kernel checks nothing for the process's own handles
		 * (issue 22 item 1). */
		r = pohm_sys_fcntl(*o->prefix_fd, F_DUPFD_CLOEXEC, POHM_FD_BASE);
	} else {
		r = sys_mkdir_p(c->prefix, 0755);
		if (!r)
			r = pohm_sys_open_high(AT_FDCWD, c->prefix, O_PATH | O_DIRECTORY, 0);
	}
	if (r < 0) {
		snprintf(err, errlen, "prefix=%s: %s", c->prefix,
			 r == -ENOTDIR || r == -EEXIST ? "exists and is not a directory" : strerror(-r));
		goto fail;
	}
	pohm_own_set(&c->pfd, r);	/* the host's close and dup2 leave it alone */
	pohm_sys_fstat(c->pfd, &pst);
	c->pdev = (uint64_t)pst.st_dev;
	pohm_sha512(o->fsid, strlen(o->fsid), h);
	c->dev = (pohm_le64(h) & 0x7fffffffULL) | 0x10000000ULL;	/* stable per fsid */

	if (o->cache_dir && *o->cache_dir)
		snprintf(cdir, sizeof(cdir), "%s", o->cache_dir);
	else if (default_cache_dir(cdir, sizeof(cdir), c->prefix)) {
		snprintf(err, errlen, "cache_dir: neither XDG_STATE_HOME nor HOME is set");
		r = -EINVAL;
		goto fail;
	}
	r = sys_mkdir_p(cdir, 0700);
	if (!r)
		r = pohm_journal_open(&c->j, cdir);
	if (r) {
		snprintf(err, errlen, "cache_dir=%s: %s", cdir, strerror(-r));
		goto fail;
	}
	r = bind_fsid(c, o->fsid, err, errlen);
	if (r)
		goto fail;
	r = cache_boot_check(c);
	if (r)
		pohm_warn("cache_dir=%s: cannot check the boot id (%s)", cdir, strerror(-r));
	/* Fetches build files on the prefix's own filesystem, so rename is atomic. */
	r = pohm_sys_fstatat(c->j.dirfd, "tmp", &sst, 0);
	if (!r && sst.st_dev == pst.st_dev) {
		c->stage_fd = pohm_sys_open_high(c->j.dirfd, "tmp", O_PATH | O_DIRECTORY, 0);
	} else {
		r = pohm_journal_mkdir_own(c->pfd, POHM_STAGING_NAME);
		if (r && r != -EEXIST)
			goto fail_stage;
		c->stage_fd = pohm_sys_open_high(c->pfd, POHM_STAGING_NAME,
						 O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
	}
	if (c->stage_fd < 0) {
		r = c->stage_fd;
		goto fail_stage;
	}
	pohm_own_set(&c->stage_fd, c->stage_fd);

	nso.fsid = o->fsid;
	nso.bucket_max = o->bucket_max;
	nso.chunk_shift = o->chunk_shift;
	nso.http_compat = o->http_compat;
	nso.no_inline = o->no_inline;
	nso.root_uid = (uint32_t)pohm_sys_geteuid();
	nso.root_gid = (uint32_t)pohm_sys_getegid();
	nso.lazy_root = 1;	/* no round trip until a call needs the storage (issue 23) */
	nso.root_failed = o->root_failed;
	nso.root_failed_arg = o->root_failed_arg;
	/* CAS bases for the next process, as old as a validation may be
	 * (attr_timeout) and at most a minute (decision 0048). */
	nso.base_note = cache_base_note;
	nso.base_load = cache_base_load;
	nso.base_arg = c;
	nso.base_max_ns = c->attr_timeout_ns < CACHE_BASE_MAX_NS ? c->attr_timeout_ns
								  : CACHE_BASE_MAX_NS;
	r = pohm_ns_open(&c->ns, o->kv, &nso);
	if (r) {
		snprintf(err, errlen, "fsid=%s: cannot open the root (%s)", o->fsid, strerror(-r));
		goto fail;
	}
	*out = c;
	return 0;
fail_stage:
	snprintf(err, errlen, "prefix=%s: cannot make a staging directory (%s)", c->prefix,
		 strerror(-r));
fail:
	pohm_cache_close(c);
	return r < 0 ? r : -EIO;
}

void pohm_cache_atfork_child(struct pohm_cache *c)
{
	if (!c)
		return;
	pthread_mutex_init(&c->vlock, NULL);
	c->kdir_users = 0;	/* only the forking thread is here: no create uses it */
	pohm_journal_atfork_child();
	cache_lockfds_atfork_child(c);
	cache_writers_atfork_child(c);
	cache_base_atfork_child();
	if (c->ns)
		pohm_ns_atfork_child(c->ns);
}

void pohm_cache_close(struct pohm_cache *c)
{
	if (!c)
		return;
	pohm_ns_close(c->ns);
	cache_base_drop(c);
	pohm_journal_close(&c->j);
	pohm_own_close(&c->pfd);
	pohm_own_close(&c->stage_fd);
	pohm_own_close(&c->cmark_fd);
	pohm_own_close(&c->kdir);
	cache_writers_close(c);
	cache_lockfds_close(c);
	pthread_mutex_destroy(&c->vlock);
	free(c);
}

int pohm_cache_prefix_fd(const struct pohm_cache *c)
{
	return c->pfd;
}

uint64_t pohm_cache_dev(const struct pohm_cache *c)
{
	return c->dev;
}

void pohm_cache_get_stats(const struct pohm_cache *c, struct pohm_cache_stats *s)
{
	pthread_mutex_lock((pthread_mutex_t *)&c->vlock);
	*s = c->stats;
	pthread_mutex_unlock((pthread_mutex_t *)&c->vlock);
}

/* ---------------------------------------------------------------- local copies */

static int cache_link_name(struct pohm_cache *c, const struct pohm_jrec *rec, int dfd,
			   const char *name);

/*
 * The other local name of a hardlinked inode that the record knows (its
 * hint), if it still holds the clean copy being replaced: *other gets its
 * path.  1 or 0.
 */
static int fetch_other_name(struct pohm_cache *c, const char *rel, const struct pohm_inode *in,
			    char *other, size_t len)
{
	struct pohm_jrec old;
	struct stat hst;
	int yes;

	if (!S_ISREG(in->mode) || in->nlink <= 1 || pohm_journal_get(&c->j, in->ino, &old))
		return 0;
	yes = old.hint[0] && strcmp(old.hint, rel) && !(old.flags & POHM_J_STUB) &&
	      !pohm_sys_fstatat(c->pfd, old.hint, &hst, AT_SYMLINK_NOFOLLOW) &&
	      (uint64_t)hst.st_ino == old.lino && !cache_local_changed(c, &old, c->pfd, old.hint, &hst);
	if (yes)
		snprintf(other, len, "%s", old.hint);
	pohm_jrec_clear(&old);
	return yes;
}

/* After a fetch into rel: the other known name becomes a link of the new copy. */
static void fetch_relink(struct pohm_cache *c, uint64_t ino, const char *other)
{
	struct pohm_jrec rec;
	const char *name;
	int odfd;

	if (pohm_journal_get(&c->j, ino, &rec))
		return;
	odfd = pohm_sys_open_parent(c->pfd, other, &name);
	if (odfd >= 0) {
		if (cache_link_name(c, &rec, odfd, name))
			pohm_warn("%s: keeps the old copy of a hardlinked file (relink failed)", other);
		pohm_sys_close(odfd);
	}
	pohm_jrec_clear(&rec);
}

int cache_record(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		 const struct pohm_inode *in, uint32_t flags)
{
	return cache_record_at(c, dfd, name, rel, in, flags, 0);
}

int cache_record_at(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		    const struct pohm_inode *in, uint32_t flags, uint64_t validated_ns)
{
	struct pohm_jrec rec;
	struct stat st;
	int r;

	memset(&rec, 0, sizeof(rec));
	r = pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (r)
		return r;
	pohm_journal_note_inode(&rec, in);
	pohm_journal_note_local(&rec, &st);
	rec.flags = flags;
	rec.validated_ns = validated_ns ? validated_ns : pohm_sys_real_ns();
	if (flags & POHM_J_LISTED)
		rec.listed_ns = rec.validated_ns;	/* a new directory (decision 0062) */
	pohm_jrec_set_hint(&rec, rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	return r;
}

int cache_make_local(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		     const struct pohm_inode *in)
{
	return cache_make_local_at(c, dfd, name, rel, in, 0);
}

int cache_make_local_at(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			const struct pohm_inode *in, uint64_t validated_ns)
{
	uint32_t flags = 0;
	int r, fd;

	switch (in->mode & S_IFMT) {
	case S_IFDIR:
		/* Moved here by another host: the local directory follows
		 * (dirmove.c), its dirfds, cwds and entries with it. */
		if (!cache_dir_move_in(c, dfd, name, rel, in->ino)) {
			r = 0;
			break;
		}
		/* Ours to fill with stubs: the owner keeps rwx locally; stat shows the stored mode. */
		r = pohm_sys_mkdirat(dfd, name, (in->mode & 07777) | 0700);
		if (!r)	/* whatever the umask */
			pohm_sys_fchmodat(dfd, name, (in->mode & 07777) | 0700);
		break;
	case S_IFLNK:
		r = pohm_sys_symlinkat(in->target ? in->target : "", dfd, name);
		break;
	case S_IFIFO:
		r = pohm_sys_mknodat(dfd, name, S_IFIFO | (in->mode & 07777), 0);
		if (!r)
			pohm_sys_fchmodat(dfd, name, in->mode & 07777);
		break;
	case S_IFCHR:
	case S_IFBLK:
		if (c->is_root) {
			r = pohm_sys_mknodat(dfd, name, in->mode, in->rdev);
			break;
		}
		/* Without privilege a device is a stub. */
		__attribute__((fallthrough));
	default:
		if (S_ISREG(in->mode) && in->nlink > 1) {
			struct pohm_jrec known;

			/* A second name of an inode cached here: a local hardlink. */
			if (!pohm_journal_get(&c->j, in->ino, &known)) {
				r = known.lino ? cache_link_name(c, &known, dfd, name) : -ENOENT;
				pohm_jrec_clear(&known);
				if (!r) {
					cache_mark_fresh(c, in->ino);
					if (validated_ns && c->attr_timeout_ns)
						pohm_journal_touch(&c->j, in->ino, in->version,
								   validated_ns);
					return 0;
				}
			}
		}
		if (S_ISREG(in->mode) && in->size) {
			/* A stub (stub.h): no open of it succeeds without the shim,
			 * not even root's.  Its xattrs come with its fetch. */
			r = pohm_stub_make(dfd, name, 0, 0, 0);
			flags = POHM_J_STUB | (in->nxattr ? 0 : POHM_J_NOXATTR);
			break;
		}
		/* An empty file needs no fetch: it gets its mode now.  (Without
		 * privilege a device is an empty mode-000 file, never fetched.) */
		fd = pohm_sys_openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0);
		r = fd < 0 ? fd : 0;
		if (fd >= 0) {
			cache_xattr_apply(fd, in);
			pohm_sys_fchmod(fd, S_ISREG(in->mode) ? in->mode & 07777 : 0);
			pohm_sys_close(fd);
		}
		break;
	}
	if (r && r != -EEXIST)
		return r;
	if (c->is_root) {
		pohm_sys_fchownat(dfd, name, in->uid, in->gid, AT_SYMLINK_NOFOLLOW);
		/* chown clears S_ISUID/S_ISGID of a file (root's too): set the
		 * mode again after it. */
		if (!r && !flags && S_ISREG(in->mode) && (in->mode & 06000))
			pohm_sys_fchmodat(dfd, name, in->mode & 07777);
	}
	if (!r && !flags && !S_ISDIR(in->mode)) {
		/* Nothing will be fetched into these (symlinks, FIFOs, empty
		 * files, devices): their stored times now (issue 18 case 4). */
		struct timespec tv[2] = {
			{ in->atime.sec, in->atime.nsec }, { in->mtime.sec, in->mtime.nsec },
		};

		pohm_sys_utimensat(dfd, name, tv, AT_SYMLINK_NOFOLLOW);
	}
	return cache_record_at(c, dfd, name, rel, in, flags, validated_ns);
}

/* fetch_once's sink: a verified piece of the file into the temp file (arg: its fd). */
static int fetch_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	ssize_t w = pohm_sys_pwrite_full(*(int *)arg, p, n, (off_t)off);

	if (w < 0)
		return (int)w;
	/* Start its writeback now, so the final fsync has little left to wait for. */
	pohm_sys_sync_file_range(*(int *)arg, (off_t)off, (off_t)n, SYNC_FILE_RANGE_WRITE);
	return 0;
}

void cache_fetch_base_of(struct cache_fetch_base *b, const struct stat *lst,
			 const struct pohm_jrec *rec)
{
	memset(b, 0, sizeof(*b));
	b->lino = (uint64_t)lst->st_ino;
	if (!rec)
		return;
	b->has_rec = 1;
	b->flags = rec->flags;
	b->version = rec->version;
	b->dversion = rec->dversion;
	b->rlino = rec->lino;
	b->lsize = rec->lsize;
	b->lctime = rec->lctime;
}

/*
 * The re-check of cache_fetch before its rename, with ino's w.lock byte
 * held exclusively (or, for a stub, maybe not: it holds no data a writer
 * could have written).  0: install; 1: something moved since base (why
 * logged), leave the name alone; -errno.
 */
static int fetch_still_base(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			    const struct pohm_inode *in, const struct cache_fetch_base *b)
{
	struct pohm_jrec cur;
	struct stat lst;
	const char *why = NULL;
	int r;

	r = pohm_journal_get(&c->j, in->ino, &cur);
	if (r && r != -ENOENT)
		return r;
	if ((r == 0) != (b->has_rec != 0))
		why = "its record appeared or went";
	else if (!r && (cur.version != b->version || cur.dversion != b->dversion ||
			cur.lino != b->rlino || cur.lsize != b->lsize ||
			cur.lctime.sec != b->lctime.sec || cur.lctime.nsec != b->lctime.nsec ||
			(cur.flags & POHM_J_STUB) != (b->flags & POHM_J_STUB)))
		why = !(cur.flags & POHM_J_STUB) && cur.dversion >= in->dversion ?
		      "a copy as new or newer was installed meanwhile" :
		      "its record changed meanwhile (push, refresh or restub)";
	else if (pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW))
		why = "the name went meanwhile";
	else if ((uint64_t)lst.st_ino != b->lino)
		why = "the name was replaced meanwhile";
	else if (!r && !(cur.flags & POHM_J_STUB) && (uint64_t)lst.st_ino == cur.lino ?
		 cache_local_changed(c, &cur, dfd, name, &lst) :
		 !r && S_ISREG(lst.st_mode) && !pohm_stub_shape(&lst))
		why = "the copy was written meanwhile";
	if (!r)
		pohm_jrec_clear(&cur);
	if (!why)
		return 0;
	pohm_debug("%s: fetched version %llu not installed: %s", rel,
		   (unsigned long long)in->dversion, why);
	return 1;
}

/* rename(tmp -> dfd/name) if nothing moved since base: 0 renamed, 1 left, -errno. */
static int fetch_install(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			 const struct pohm_inode *in, const struct cache_fetch_base *b,
			 const char *tmp, int *lk)
{
	int stub = !b->has_rec || (b->flags & POHM_J_STUB), r;

	*lk = cache_writer_exclude(c, in->ino);
	if (*lk == -EAGAIN && !stub) {
		pohm_debug("%s: fetched version %llu not installed: open for write here", rel,
			   (unsigned long long)in->dversion);
		return 1;
	}
	if (*lk < 0 && *lk != -EAGAIN)
		return *lk;
	/* A stub a writer's lock covers (a byte shared with another inode, or
	 * a writer that got ahead of a refresh which already replaced it: the
	 * re-check sees that) is still replaced; it holds no data. */
	r = fetch_still_base(c, dfd, name, rel, in, b);
	if (!r)
		r = pohm_sys_renameat(c->stage_fd, tmp, dfd, name);
	return r;
}

/* One attempt of cache_fetch. */
static int fetch_once(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		      const struct pohm_inode *in, const struct cache_fetch_base *base)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	char tmp[64];
	struct timespec tv[2];
	struct pohm_jrec rec;
	struct stat st;
	int fd, r, lk = -1;

	snprintf(tmp, sizeof(tmp), "f.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	fd = pohm_sys_open_high(c->stage_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fd;
	/* Each chunk is written as it arrives (several in flight); holes stay sparse. */
	r = pohm_ns_read_stream(c->ns, in, fetch_piece, &fd);
	if (!r && in->size)
		r = pohm_sys_ftruncate(fd, (off_t)in->size);
	if (r)
		goto fail;
	r = pohm_sys_fsync(fd);
	if (r)
		goto fail;
	cache_xattr_apply(fd, in);
	/* Owner before mode: chown clears S_ISUID/S_ISGID. */
	if (c->is_root)
		pohm_sys_fchown(fd, in->uid, in->gid);
	pohm_sys_fchmod(fd, in->mode & 07777);
	tv[0].tv_sec = in->atime.sec;
	tv[0].tv_nsec = in->atime.nsec;
	tv[1].tv_sec = in->mtime.sec;
	tv[1].tv_nsec = in->mtime.nsec;
	pohm_sys_utimensat(fd, NULL, tv, 0);
	/* Readers and mappings of the old copy keep it; the name now shows the
	 * new one, if nothing moved since the refresh looked (issue 18). */
	r = fetch_install(c, dfd, name, rel, in, base, tmp, &lk);
	if (r)
		goto fail;
	r = pohm_sys_fstat(fd, &st);
	if (r)
		goto out;
	memset(&rec, 0, sizeof(rec));
	pohm_journal_note_inode(&rec, in);
	pohm_journal_note_local(&rec, &st);
	rec.validated_ns = pohm_sys_real_ns();
	pohm_jrec_set_hint(&rec, rel);
	r = pohm_journal_put(&c->j, &rec);
	pohm_jrec_clear(&rec);
	cache_count(c, &c->stats.fetches, 1);
	cache_count(c, &c->stats.fetched_bytes, in->size);
	goto out;
fail:
	pohm_sys_unlinkat(c->stage_fd, tmp, 0);
out:
	cache_writer_include(lk);
	pohm_sys_close(fd);
	return r;
}

int cache_fetch(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		const struct pohm_inode *in, const struct cache_fetch_base *base)
{
	char other[4096];
	int has_other = fetch_other_name(c, rel, in, other, sizeof(other));
	int r = fetch_once(c, dfd, name, rel, in, base);

	if (r == 1)
		return 0;	/* left alone: the local state moved on */
	if (!r && has_other)
		fetch_relink(c, in->ino, other);	/* a refresh renames over every name */

	if (r != -ENOSPC && r != -EDQUOT) {
		if (!r && c->space_fn)
			c->space_fn(c->space_arg, 0);	/* the cache grew */
		return r;
	}
	/* Full: ask for room (pohmelfsd evicts clean files), then once more. */
	if (c->space_fn && !c->space_fn(c->space_arg, in->size + (1u << 20)))
		r = fetch_once(c, dfd, name, rel, in, base);
	if (r == 1)
		return 0;
	if (!r && has_other)
		fetch_relink(c, in->ino, other);
	if (r == -ENOSPC || r == -EDQUOT) {
		pohm_err("fetch of %s (%llu bytes): the cache filesystem is full and nothing more "
			 "could be evicted", rel, (unsigned long long)in->size);
		r = -EIO;
	}
	return r;
}

void pohm_cache_set_space_fn(struct pohm_cache *c, int (*fn)(void *arg, uint64_t need), void *arg)
{
	c->space_fn = fn;
	c->space_arg = arg;
}

void pohm_cache_set_follow_fn(struct pohm_cache *c, void (*fn)(struct pohm_cache *c, const char *rel))
{
	c->follow_fn = fn;
}

void pohm_cache_set_absent_fn(struct pohm_cache *c, int (*fn)(struct pohm_cache *c, const char *rel))
{
	c->absent_fn = fn;
}

/* ---------------------------------------------------------------- walk */

/* What materialize needs of an inode, from its journal record and the local copy. */
static int inode_from_record(int dfd, const char *name, const struct pohm_jrec *rec,
			     struct pohm_inode *in)
{
	char target[4096];
	long n;

	in->ino = rec->ino;
	in->mode = rec->mode;
	in->uid = rec->uid;
	in->gid = rec->gid;
	in->nlink = rec->nlink;
	in->size = rec->size;
	in->rdev = rec->rdev;
	in->atime = rec->atime;
	in->mtime = rec->mtime;
	in->ctime = rec->ctime;
	in->version = rec->version;
	in->dversion = rec->dversion;
	in->chunk_shift = rec->chunk_shift;
	if (!S_ISLNK(rec->mode))
		return 0;
	n = pohm_sys_readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n < 0)
		return (int)n;
	in->target = malloc((size_t)n + 1);
	if (!in->target)
		return -ENOMEM;
	memcpy(in->target, target, (size_t)n);
	in->target[n] = '\0';
	return 0;
}

/*
 * A clean fetched copy takes the stored mode, owner (root only) and, when
 * its data is the stored data, times: the kernel and stat then show them
 * (DESIGN §2 ownership).  Our own change of its ctime is noted in rec, so
 * it stays clean.
 */
static void apply_stored_attrs(struct pohm_cache *c, int dfd, const char *name,
			       struct pohm_jrec *rec, const struct stat *lst,
			       const struct pohm_inode *in)
{
	struct stat st;
	int changed = 0;

	/* Owner before mode: chown clears S_ISUID/S_ISGID of a file. */
	if (c->is_root && (lst->st_uid != in->uid || lst->st_gid != in->gid) &&
	    !pohm_sys_fchownat(dfd, name, in->uid, in->gid, AT_SYMLINK_NOFOLLOW))
		changed = 1;
	if (((lst->st_mode & 07777) != (in->mode & 07777) || (changed && (in->mode & 06000))) &&
	    !pohm_sys_fchmodat(dfd, name, in->mode & 07777))
		changed = 1;
	if (rec->dversion == in->dversion &&
	    (lst->st_mtim.tv_sec != in->mtime.sec ||
	     (uint32_t)lst->st_mtim.tv_nsec != in->mtime.nsec ||
	     lst->st_atim.tv_sec != in->atime.sec ||
	     (uint32_t)lst->st_atim.tv_nsec != in->atime.nsec)) {
		struct timespec tv[2] = {
			{ in->atime.sec, in->atime.nsec }, { in->mtime.sec, in->mtime.nsec },
		};

		if (!pohm_sys_utimensat(dfd, name, tv, AT_SYMLINK_NOFOLLOW))
			changed = 1;
	}
	if (changed && !pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    (uint64_t)st.st_ino == rec->lino)
		pohm_journal_note_local(rec, &st);
}

/*
 * Local directories (st_dev, st_ino mixed into one nonzero key) already
 * reported as unknown to this cache's journal, so each is reported once per
 * process.  Process-wide and lock-free (a slot goes 0 -> key once, by CAS):
 * safe across fork.  A full table reports nothing more; a key collision
 * silences one report: "at most once" holds either way.
 */
#define FOREIGN_DIRS 256
static uint64_t foreign_dir[FOREIGN_DIRS];

/* 1 the first time this process meets local directory st here, else 0. */
static int foreign_dir_first(const struct stat *st)
{
	uint64_t k = ((uint64_t)st->st_ino * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)st->st_dev;
	unsigned i, s;

	k = k ? k : 1;
	for (i = 0, s = (unsigned)(k >> 56); i < FOREIGN_DIRS; i++, s = (s + 1) % FOREIGN_DIRS) {
		uint64_t cur = __atomic_load_n(&foreign_dir[s], __ATOMIC_RELAXED);

		if (!cur && __atomic_compare_exchange_n(&foreign_dir[s], &cur, k, 0,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return 1;
		if (cur == k)
			return 0;
	}
	return 0;
}

/*
 * Issue 18 case 3 ("attributes follow the storage"): a clean copy whose
 * stored data changed on another host becomes a stub of the new stored
 * version, so stat shows the stored size, mode, owner and times at once and
 * the data comes at the next open (pohm_cache_refresh fetches a stub).
 * lst is the copy as ensure_entry saw it; the name is replaced only if it
 * still holds that local file.  A hardlinked copy is left alone (its other
 * names share the local inode; the open's refresh relinks them).  0 or
 * -errno; on failure the copy stays as it was.
 */
static int restub_stale(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			const struct stat *lst, const struct pohm_jrec *seen,
			const struct pohm_inode *in)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	struct cache_fetch_base base;
	struct pohm_jrec rec;
	struct stat st, now;
	char tmp[64];
	int r, lk = -1;

	snprintf(tmp, sizeof(tmp), "s.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	r = pohm_stub_make(c->stage_fd, tmp, c->is_root, in->uid, in->gid);
	if (r)
		return r;
	r = pohm_sys_fstatat(c->stage_fd, tmp, &st, AT_SYMLINK_NOFOLLOW);
	if (!r && (pohm_sys_fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) ||
		   now.st_ino != lst->st_ino || now.st_ctim.tv_sec != lst->st_ctim.tv_sec ||
		   now.st_ctim.tv_nsec != lst->st_ctim.tv_nsec || now.st_size != lst->st_size))
		r = -EAGAIN;	/* changed meanwhile: not ours to replace */
	/* As a refresh's rename (fetch_install): with no writer of this host,
	 * and the record still what ensure_entry saw (issue 18). */
	if (!r && (lk = cache_writer_exclude(c, in->ino)) < 0)
		r = lk;
	if (!r) {
		cache_fetch_base_of(&base, lst, seen);
		r = fetch_still_base(c, dfd, name, rel, in, &base);
		r = r == 1 ? -EAGAIN : r;
	}
	if (!r)
		r = pohm_sys_renameat(c->stage_fd, tmp, dfd, name);
	if (r) {
		cache_writer_include(lk);
		pohm_sys_unlinkat(c->stage_fd, tmp, 0);
		return r;
	}
	memset(&rec, 0, sizeof(rec));
	pohm_journal_note_inode(&rec, in);
	pohm_journal_note_local(&rec, &st);
	rec.flags = POHM_J_STUB | (in->nxattr ? 0 : POHM_J_NOXATTR);
	rec.validated_ns = pohm_sys_real_ns();
	pohm_jrec_set_hint(&rec, rel);
	r = pohm_journal_put(&c->j, &rec);
	cache_writer_include(lk);
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * An entry answered from its journal record rec (of inode known): validated
 * within attr_timeout, or offline (as last validated).  A stub about to be
 * fetched (data) needs the stored chunk map: a getattr, which offline fails
 * with -EIO.  A stub's stat (no data) shows the recorded attributes, which
 * the validation found current: no round trip (issue 23: a getattr per
 * stub made ls -l / find -ls of non-empty files in a second cache one wait
 * an entry).  0 with *in filled, or -errno.
 */
static int entry_from_record(struct pohm_cache *c, int dfd, const char *name, uint64_t known,
			     int data, const struct pohm_jrec *rec, struct pohm_inode *in)
{
	if (S_ISREG(rec->mode) && (rec->flags & POHM_J_STUB) && data) {
		int r = pohm_ns_getattr(c->ns, known, in);

		return r && cache_offline(c) ? -EIO : r;
	}
	return inode_from_record(dfd, name, rec, in);
}

/* Was ino's record (read as seen) rewritten since?  1 (or unreadable), 0. */
static int record_moved(struct pohm_cache *c, const struct pohm_jrec *seen)
{
	struct pohm_jrec cur;
	int moved;

	if (pohm_journal_get(&c->j, seen->ino, &cur))
		return 1;
	moved = pohm_journal_moved(&cur, seen);
	pohm_jrec_clear(&cur);
	return moved;
}

static int sib_batch(struct pohm_cache *c, int dfd, uint64_t dino);

/*
 * Is local directory dfd small enough that a process which did not list
 * it may batch its entries (cache_sib_batch)?  Its size grows with its
 * entries on every filesystem (ext4 ~20 bytes a short name, rounded to
 * blocks; tmpfs, btrfs by the names): SIB_SMALL_BYTES bounds a batch
 * nobody asked for to ~10 000 entries (~20 waits), where a stat of two
 * names of a huge directory would otherwise read all of it.  1 or 0.
 */
#define SIB_SMALL_BYTES (256u << 10)
static int sib_small(int dfd)
{
	struct stat st;

	return !pohm_sys_fstatat(dfd, "", &st, AT_EMPTY_PATH) && st.st_size <= SIB_SMALL_BYTES;
}

/* What ensure_entry found, for the walk's table of directories
 * (walkfresh.c): the local name's (dev, ino) when have, and the
 * validated_ns of the record it answered from (0: checked by this process
 * now, or not answered from a record). */
struct entry_seen {
	int have;
	uint64_t ldev, lino, vns;
	int from_rec;		/* answered from a fresh record: lst is the name's now */
	int known;		/* the journal has the local name's record (not stale) */
	struct stat lst;	/* when have */
	struct pohm_stat_seen rec;	/* from_rec: the record answered from */
};

/*
 * Make dfd/name agree with the storage entry of dino/name.  0 with *in
 * filled (clear it), -ENOENT if the storage has no such entry.  data: the
 * caller fetches this entry's data next (POHM_MAT_DATA on the last
 * component), so a stale clean copy is left to that refresh.  given: NULL,
 * or dfd/name's lstat the caller made a moment ago (then not made again
 * for an answer from a fresh record; made when the storage is asked).
 * *found: what it found (struct entry_seen).
 */
/* List a directory whole: every storage entry present locally. */
static int list_dir(struct pohm_cache *c, int dfd, uint64_t dino, const char *rel);

/* List dino (open as dfd), the parent of rel: a local directory whose name
 * the storage no longer has, but whose inode lives, is renamed by the
 * listing to the name it has now (list_renamed_to).  Best effort: a
 * listing that fails leaves it, and the next walk past attr_timeout asks
 * again. */
static void list_parent_of(struct pohm_cache *c, int dfd, uint64_t dino, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	size_t n = slash ? (size_t)(slash - rel) : 0;
	char *prel = malloc(n + 1);

	if (!prel)
		return;
	memcpy(prel, rel, n);
	prel[n] = '\0';
	if (list_dir(c, dfd, dino, prel))
		pohm_debug("%s: listing its parent after a rename elsewhere failed", rel);
	free(prel);
}

/* This thread is in dir_follow (no lock: per thread): a walk it makes
 * follows no other move (a bound on the nesting). */
static __thread int dir_following;

/* The local directory odfd/oname (orel) stands for the stored directory
 * ino (in, read just now), which another host moved into another parent:
 * it moves to the stored path (dirmove.c finds it; the walk makes its
 * missing parents), so that its dirfds and cwds follow, as the kernel's
 * would.  Best effort: a failure leaves it where it is (the stored inode
 * lives: nothing is removed) and the next look tries again. */
static void dir_follow(struct pohm_cache *c, int odfd, const char *oname, const char *orel,
		       uint64_t ino, const struct pohm_inode *in)
{
	char rel[sizeof(((struct pohm_jrec *)0)->hint)];
	const char *name;
	uint64_t pino;
	int pfd = -1, r;

	if (dir_following || cache_dir_moving(c, ino))
		return;	/* nested; or this host's renamer moves it */
	dir_following = 1;
	r = cache_dir_stored_path(c, ino, in, rel, sizeof(rel));
	if (!r)
		r = cache_walk_parent(c, rel, &pfd, &pino, &name);
	if (!r && pino != in->hdr.parent)
		r = -ESTALE;	/* moved again meanwhile */
	if (!r)
		r = cache_dir_rename_local(odfd, oname, pfd, name);
	if (!r) {
		r = cache_record(c, pfd, name, rel, in, 0);
		cache_dir_rehint_below(c, pfd, name, rel);
	}
	if (pfd >= 0)
		pohm_sys_close(pfd);
	dir_following = 0;
	if (r)
		pohm_debug("%s: moved elsewhere; the local directory stays for now: %s", orel,
			   strerror(-r));
	else
		pohm_debug("%s: moved elsewhere, the local directory follows to %s", orel, rel);
}

/*
 * The local directory dfd/name (rel) of the stored directory ino, whose
 * name a lookup in dino found gone: removed (no inode, or its tombstone)
 * it goes with its entries (listgone.c); moved into another parent it
 * follows (dir_follow); renamed in dino, *same is set (the caller's
 * listing renames it); a failed read leaves it.  One inode read.
 */
static void dir_name_gone(struct pohm_cache *c, int dfd, uint64_t dino, const char *name,
			  const char *rel, uint64_t ino, int *same)
{
	struct pohm_inode in;
	int r = pohm_ns_getattr(c->ns, ino, &in);

	*same = 0;
	if (r == -ENOENT)
		cache_drop_gone_dir(c, dfd, name, rel, ino);
	if (r)
		return;
	if (in.hdr.parent == dino)
		*same = 1;
	else
		dir_follow(c, dfd, name, rel, ino, &in);
	pohm_inode_clear(&in);
}

static int ensure_entry(struct pohm_cache *c, int dfd, uint64_t dino, const char *name,
			const char *rel, int data, const struct stat *given, struct pohm_inode *in,
			struct entry_seen *found)
{
	struct pohm_jrec rec;
	struct stat lst;
	uint64_t ino = 0, known = 0;
	uint8_t type;
	int r, have_local, have_rec = 0;

	memset(in, 0, sizeof(*in));
	if (given) {
		lst = *given;
		r = 0;
	} else {
		r = pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW);
	}
	have_local = !r;
	found->have = have_local;
	found->ldev = have_local ? (uint64_t)lst.st_dev : 0;
	found->lino = have_local ? (uint64_t)lst.st_ino : 0;
	found->vns = 0;
	found->from_rec = 0;
	found->known = 0;
	found->rec.ok = 0;
	if (have_local)
		found->lst = lst;
	/* Not here, in a directory this process holds complete (listed or
	 * made within attr_timeout): absent, no round trip (decision 0047).
	 * Offline the storage is not asked either way: the real call says
	 * ENOENT, as the listing left it. */
	if (r == -ENOENT && cache_dir_complete(c, dino) && !cache_offline(c))
		return -ENOENT;
	/* Not here, and not in dino's bucket as this process or another of
	 * the cache read or wrote it within attr_timeout: absent, no round
	 * trip and no connection (decision 0061).  A name this host stored
	 * since has its local file (made before its call returned). */
	if (r == -ENOENT && c->attr_timeout_ns && !cache_offline(c) &&
	    pohm_ns_lookup_absent(c->ns, dino, name, c->attr_timeout_ns))
		return -ENOENT;
	/* The overlay's index answer for this local file (readdir's d_ino
	 * of the name, a moment ago): confirmed by its record, no index read. */
	if (have_local && !cache_lhint_rec(c, &lst, &known, &rec)) {
		have_rec = 1;
	} else if (have_local && !pohm_journal_lookup_local(&c->j, (uint64_t)lst.st_dev,
							    (uint64_t)lst.st_ino, &known) &&
		   !pohm_journal_get(&c->j, known, &rec)) {
		have_rec = 1;
		if (cache_index_stale(&rec, &lst)) {
			/* A stale index entry (a deleted file's reused inode number). */
			pohm_jrec_clear(&rec);
			have_rec = 0;
			known = 0;
		}
	}
	found->known = have_rec;
	if (dfd < 0 && (!have_rec || S_ISLNK(rec.mode) ||
			!(cache_fresh_rec(c, &rec) || cache_offline(c)))) {
		/* No fd of the directory (a named base): the record answers
		 * alone, or the walk opens it and comes again. */
		if (have_rec)
			pohm_jrec_clear(&rec);
		return -EAGAIN;
	}
	if (have_rec && (cache_fresh_rec(c, &rec) || cache_offline(c))) {
		/* Validated within attr_timeout, or offline: answer from the
		 * journal, no round trip. */
		found->vns = rec.validated_ns;
		found->from_rec = 1;
		cache_stat_seen_of(&found->rec, &rec);
		found->rec.ino = known;
		r = entry_from_record(c, dfd, name, known, data, &rec, in);
		pohm_jrec_clear(&rec);
		return r;
	}
	if (given) {
		/* The caller's lstat answers from a fresh record only: what
		 * follows asks the storage and may unlink or replace dfd/name
		 * by what it decides, so on the walk's own look at dfd/name
		 * (the caller's was made through its own dirfd, tied to dfd
		 * by identity only: review 2 of session 17, finding 2). */
		if (have_rec)
			pohm_jrec_clear(&rec);
		return ensure_entry(c, dfd, dino, name, rel, data, NULL, in, found);
	}
	/* Expired: with its siblings, when this process lists or walks dino
	 * (find -ls, ls -l, du: issue 23), one listing and batch, not a round
	 * trip each; then answered as above if the batch confirmed it. */
	if (have_rec && known && !cache_offline(c) && cache_sib_batch(c, dino, sib_small(dfd)) &&
	    !sib_batch(c, dfd, dino)) {
		struct pohm_jrec now;

		/* Its record, as the batch left it (the validation table's slot
		 * may hold a sibling by now: validated_ns answers then). */
		if (!pohm_journal_get(&c->j, known, &now)) {
			if (now.version == rec.version && cache_fresh_rec(c, &now)) {
				found->vns = now.validated_ns;
				found->from_rec = 1;
				cache_stat_seen_of(&found->rec, &now);
				found->rec.ino = known;
				r = entry_from_record(c, dfd, name, known, data, &now, in);
				pohm_jrec_clear(&now);
				pohm_jrec_clear(&rec);
				return r;
			}
			pohm_jrec_clear(&now);
		}
	}
	/* A name this host lacks may lack it by a signal handler's removal or
	 * rename still in the queue (another process's, whose drains are
	 * bounded): applied first, or the storage's name comes back here. */
	if (!have_local && c->absent_fn)
		c->absent_fn(c, rel);
	cache_count(c, &c->stats.lookups, 1);
	pohm_debug("%s: asking the storage (local %d, record %d, version %llu, validated %llu ns ago)",
		   rel, have_local, have_rec, (unsigned long long)(have_rec ? rec.version : 0),
		   (unsigned long long)(have_rec && rec.validated_ns ?
					pohm_sys_real_ns() - rec.validated_ns : 0));
	/* The journal knows the inode: its name's bucket and it in one round trip. */
	if (have_rec && known) {
		r = S_ISDIR(rec.mode) ? pohm_ns_lookup_check_dir(c->ns, dino, name, known, in) :
					pohm_ns_lookup_check(c->ns, dino, name, known, in);
		if (!r) {
			ino = known;
			goto checked;
		}
		if (r != -ESTALE) {
			/* The storage failed: no second wait.  Offline (no group
			 * answered), the copy as last validated. */
			if (cache_offline(c))
				r = entry_from_record(c, dfd, name, known, data, &rec, in);
			goto out;
		}
	}
	/* No record: a copy of dir's bucket kept from before may name the
	 * inode; the bucket and that inode in one round trip, the fresh
	 * bucket deciding (decision 0053).  A stale guess: the lookup below. */
	if (!(have_rec && known) && !pohm_ns_lookup_guess(c->ns, dino, name, &ino, &type)) {
		r = type == DT_DIR ? pohm_ns_lookup_check_dir(c->ns, dino, name, ino, in) :
				     pohm_ns_lookup_check(c->ns, dino, name, ino, in);
		if (!r)
			goto checked;
		ino = 0;
		if (r != -ESTALE)
			goto out;
	}
	r = pohm_ns_lookup(c->ns, dino, name, &ino, &type);
	if (r == -ENOENT && have_rec && !S_ISDIR(lst.st_mode) &&
	    !cache_local_changed(c, &rec, dfd, name, &lst) && !(rec.flags & POHM_J_CONFLICT)) {
		/* Deleted on another host and clean here: the local name goes too. */
		pohm_sys_unlinkat(dfd, name, 0);
		if (rec.nlink <= 1)
			pohm_journal_del(&c->j, known);
	} else if (r == -ENOENT && have_rec && S_ISDIR(lst.st_mode) &&
		   !(rec.flags & POHM_J_CONFLICT)) {
		/* A directory removed on another host: with its entries
		 * (listgone.c), so that none of them is found below it here.
		 * One only renamed elsewhere leaves its name now: a listing of
		 * the parent renames it by identity, so that a dirfd or a cwd
		 * in it follows (DESIGN §2, "a remote rename becomes a local
		 * rename"); one moved to another parent follows there
		 * (dir_follow).  The old name never shows the old directory
		 * after attr_timeout. */
		int same;

		dir_name_gone(c, dfd, dino, name, rel, known, &same);
		if (same)
			list_parent_of(c, dfd, dino, rel);
	}
	if (r)
		goto out;
	/* A directory's first bucket comes along: the next lookup in it has
	 * a guess of its inode (decision 0053). */
	r = type == DT_DIR ? pohm_ns_getattr_dir(c->ns, ino, in) : pohm_ns_getattr(c->ns, ino, in);
	if (r)
		goto out;
checked:
	if (have_local && have_rec && known == ino) {
		/* Only news (a newer stored version: an older one is a stale
		 * replica's word), and only over the record as it was read: one
		 * another process rewrote meanwhile (a push's commit, a fetch)
		 * may know more than in (issue 18). */
		if (rec.version < in->version && !record_moved(c, &rec)) {
			if (!(rec.flags & POHM_J_STUB) && !cache_local_changed(c, &rec, dfd, name, &lst))
				cache_xattr_pull(dfd, name, in);
			/* Attributes changed in the storage: the overlay must show them.
			 * (Data changes are the refresh's business: keep dversion.) */
			uint64_t dv = rec.dversion, size = rec.size;
			uint8_t (*cs)[64] = rec.csum;
			uint32_t nc = rec.nchunks;
			struct pohm_jrec seen = rec;	/* its fields only: never cleared */
			int clean = S_ISREG(lst.st_mode) && !(rec.flags & POHM_J_STUB) &&
				    !cache_local_changed(c, &rec, dfd, name, &lst);

			if (clean && !data && S_ISREG(in->mode) && rec.dversion < in->dversion &&
			    rec.nlink <= 1 && in->nlink <= 1 && (uint64_t)lst.st_nlink <= 1 &&
			    !restub_stale(c, dfd, name, rel, &lst, &rec, in)) {
				cache_mark_fresh(c, ino);
				goto out;
			}
			rec.csum = NULL;
			rec.nchunks = 0;
			pohm_journal_note_inode(&rec, in);
			pohm_jrec_clear(&rec);
			/* dversion, size and checksums describe the local data: keep them. */
			rec.csum = cs;
			rec.nchunks = nc;
			rec.dversion = dv;
			if (!(rec.flags & POHM_J_STUB))
				rec.size = size;	/* a stub shows the stored size */
			else if (in->nxattr)
				rec.flags &= ~(uint32_t)POHM_J_NOXATTR;
			else
				rec.flags |= POHM_J_NOXATTR;
			rec.version = in->version;
			rec.validated_ns = pohm_sys_real_ns();
			if (clean)
				apply_stored_attrs(c, dfd, name, &rec, &lst, in);
			/* Unless another process rewrote the record since it was read
			 * (a push's commit, a newer stored mtime): never its word back
			 * to ours, older (issue 18). */
			if (!pohm_journal_put_cas(&c->j, &rec, &seen))
				cache_mark_fresh(c, ino);
		} else if (rec.version == in->version) {
			cache_mark_checked(c, ino, in->version);
		}
		goto out;
	}
	if (have_local) {
		if (!have_rec && S_ISDIR(lst.st_mode) && S_ISDIR(in->mode)) {
			/*
			 * A directory this journal never recorded: another user's
			 * cache made it (per-user caches share the prefix's tree,
			 * mount_user.c), or a program without the shim.  It serves
			 * as the stored one, as far as its permissions let this
			 * user.  Not recorded: this cache's reconcile would take the
			 * other cache's files in it for new ones (cachescan.c).
			 */
			if (foreign_dir_first(&lst))
				pohm_warn("%s: a local directory this cache did not make (another "
					  "user's cache, or a program without the shim): used as the "
					  "stored directory, not recorded here", rel);
			goto out;
		}
		/* The name means another inode now.  Replace a clean local copy. */
		if (!have_rec || cache_local_changed(c, &rec, dfd, name, &lst)) {
			pohm_warn("%s: changed here and replaced elsewhere; keeping the local copy "
				  "until it is pushed", rel);
			goto out;
		}
		if (S_ISDIR(lst.st_mode)) {
			pohm_warn("%s: replaced elsewhere, but the local directory remains", rel);
			goto out;
		}
		pohm_sys_unlinkat(dfd, name, 0);
	}
	r = cache_make_local(c, dfd, name, rel, in);
	if (!r)
		cache_mark_fresh(c, ino);
	else
		cache_dir_incomplete(c, dino);	/* a stored name without a local one */
out:
	if (r)
		pohm_inode_clear(in);
	if (have_rec)
		pohm_jrec_clear(&rec);
	return r;
}

/*
 * The stored attributes of the recorded prefix root, revalidated after
 * attr_timeout (its link count and times move with its entries, on other
 * hosts too).  Only when the root itself is asked about: every other walk
 * passes through it without a round trip.
 */
static int root_check(struct pohm_cache *c)
{
	struct pohm_inode in;
	struct pohm_jrec rec;
	int r;

	if (cache_fresh(c, POHM_ROOT_INO))
		return 0;
	r = pohm_ns_getattr(c->ns, POHM_ROOT_INO, &in);
	if (r)
		return cache_offline(c) ? 0 : r;	/* offline: the root as last validated */
	if (!pohm_journal_get(&c->j, POHM_ROOT_INO, &rec)) {
		if (rec.version != in.version) {
			pohm_journal_note_inode(&rec, &in);
			rec.validated_ns = pohm_sys_real_ns();
			pohm_journal_put(&c->j, &rec);
		}
		pohm_jrec_clear(&rec);
	}
	pohm_inode_clear(&in);
	cache_mark_fresh(c, POHM_ROOT_INO);
	return 0;
}

/* The inode of the prefix root, recorded once so the index knows the root;
 * with check, its stored attributes revalidated (root_check). */
static int ensure_root(struct pohm_cache *c, int check)
{
	struct pohm_inode in;
	uint64_t ino;
	struct stat st;
	int r;

	r = pohm_sys_fstat(c->pfd, &st);
	if (r)
		return r;
	if (!pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino))
		return check ? root_check(c) : 0;
	r = pohm_ns_getattr(c->ns, POHM_ROOT_INO, &in);
	if (r)
		return r;
	r = cache_record(c, c->pfd, "", "", &in, 0);
	if (r == -ENOENT) {
		/* fstatat with "" needs AT_EMPTY_PATH: record through "." instead. */
		r = cache_record(c, c->pfd, ".", "", &in, 0);
	}
	pohm_inode_clear(&in);
	return r;
}

/* Split rel into components in buf (NUL separated); returns the count. */
static int split_rel(const char *rel, char *buf, size_t len, const char **comp, int max)
{
	int n = 0;
	char *p;

	if (strlen(rel) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, rel);
	for (p = strtok(buf, "/"); p && n < max; p = strtok(NULL, "/"))
		comp[n++] = p;
	return p ? -ENAMETOOLONG : n;
}

/*
 * One walk's buffers, on the heap: a host thread's stack may be small.
 * buf, path, norm and cur hold cap bytes each, next twice that: 4 KiB for
 * a name below the prefix shorter than PATH_MAX, POHM_REL_CAP for a longer
 * one (issue 19 item 10; mat_new).
 */
struct mat_work {
	size_t cap;
	char *buf, *path, *next, *norm;
	char *cur;		/* the walk after a followed link */
	const char *comp[512];
	char mem[];
};

static struct mat_work *mat_new(const char *rel)
{
	size_t cap = strnlen(rel, 4096) < 4096 ? 4096 : POHM_REL_CAP;
	struct mat_work *w = malloc(sizeof(*w) + 6 * cap);

	if (!w)
		return NULL;
	w->cap = cap;
	w->buf = w->mem;
	w->path = w->buf + cap;
	w->norm = w->path + cap;
	w->cur = w->norm + cap;
	w->next = w->cur + cap;
	return w;
}

/*
 * One walk of rel.  A symlink that stays in the prefix is not followed
 * here: its continuation is left in w->norm and *follow set, for
 * materialize_at's loop (the walk used to recurse, ~25 KB of stack per
 * link).
 */
/* What a walk found at its last component when it is a directory
 * (cache_walk_parent): opened O_PATH (fd, -1 if not) and its storage inode,
 * validated within attr_timeout by the walk itself.  Only for a walk that
 * followed no symlink (materialize_dir). */
struct mat_dir {
	int fd;
	uint64_t ino;
	int followed;			/* the walk followed a symlink on the way */
	int err;			/* -ENOENT or -ENOTDIR: online, the storage has no
					 * directory at a component of rel (another host
					 * renamed or removed it); the local one may remain
					 * (ensure_entry keeps directories), the caller must
					 * not use it (0: none) */
};

/*
 * The listing a walk's LIST asks for (an open of the directory for
 * reading, opendir): 0 when it failed for anything but a full cache disk
 * (ENOSPC, EDQUOT: pohm_cache_materialize evicts and tries again) or
 * memory.  The directory is there locally and the open is the kernel's:
 * the entries it shows are those already here, the listing is left
 * incomplete (list_dir) and the next open lists again.  The failure is
 * kept for the caller (pohm_cache_list_failed): the shim fails the fd's
 * first read of entries with EIO unless a listing then succeeds (DESIGN.md
 * §0: no listing passes for complete; preload/dir.c).  An open of "."
 * that failed made programs that save their working directory so (gnulib
 * savewd: GNU mkdir -p; fts) carry on in the directory they had entered:
 * `mkdir -p d2/s3 common/sub` made d2/common/sub (doc/notes-s15-conc.md,
 * tests/unit/test_listfail.c).  The local directory's own mode keeping
 * this user from filling it (its owner made it 0600, issue 22 item 9) is
 * one such case: the kernel lists what is there, as it opens it.
 */
/* 1 after a listing list_for_open let pass failed on this thread, until
 * pohm_cache_list_failed takes it.  Thread-local: no lock; only this
 * thread's calls set or clear it. */
static __thread int list_failed;

static int list_for_open(struct pohm_cache *c, int dfd, uint64_t dino, const char *rel)
{
	const char *fail = pohm_sys_test_switch(POHM_TEST_LIST_FAIL);
	int r = fail && !strcmp(fail, rel) ? -EIO : list_dir(c, dfd, dino, rel);

	if (r && r != -ENOSPC && r != -EDQUOT && r != -ENOMEM) {
		if (r != -EACCES) {
			pohm_warn("%s: listing failed (%s); the open goes on, its reads will fail",
				  *rel ? rel : ".", strerror(-r));
			list_failed = 1;
		}
		r = 0;
	}
	return r;
}

int pohm_cache_list_failed(void)
{
	int r = list_failed;

	list_failed = 0;
	return r;
}

/* Is dfd/name a directory here (not following a symlink)? */
static int local_dir(int dfd, const char *name)
{
	struct stat st;

	return !pohm_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}
/* The walk's last component when its entry was answered from a fresh
 * record and no symlink was followed on the way (want: the caller takes
 * it): its local stat as the walk found it and its storage inode
 * (pohm_cache_materialize remembers the path with them: no fstatat of its
 * own, no index read for the overlay).  until: the least of the deadlines
 * (cache_fresh_until) of every component the walk answered, directories
 * on the way included: the path's entry lasts no longer than the oldest
 * check it stands on (UINT64_MAX: none; 0: one was not fresh). */
struct mat_last {
	int ok, want;
	struct stat lst;
	uint64_t ino;
	uint64_t until;
	struct pohm_stat_seen *seen;	/* NULL, or the record when ok (stat) */
	struct pohm_walk_base *base;	/* NULL, or the parent the caller opened
					 * (its fd the walk's once handed down) */
	const struct stat *given;	/* NULL, or the name's lstat below base */
	int reopen;			/* a named base's directory did not open
					 * as the table's: the walk again, no base */
};

/* A component the walk answered (ino, its record's validated_ns as
 * ensure_entry or the walk table saw it): ml->until bounded by its
 * freshness.  Offline the walk answers as last known: no bound. */
static void mat_bound(struct pohm_cache *c, struct mat_last *ml, uint64_t ino, uint64_t vns)
{
	uint64_t until;

	if (!ml || !c->attr_timeout_ns)
		return;
	until = cache_fresh_until(c, ino, vns);
	if (!until && cache_offline(c))
		return;
	if (until < ml->until)
		ml->until = until;
}

/*
 * The walk's next directory when opening it below *dfd found no free fd
 * (err: -EMFILE or -ENFILE; one left, as the kernel's lstat needs none:
 * review 2 of session 17): *dfd closed (-1 after), path opened from the
 * prefix root with no symlink on the way and taken when it is the local
 * directory ensure_entry saw (seen).  The fd, or err (no openat2, or
 * another directory now).
 */
static int open_dir_alone(struct pohm_cache *c, int *dfd, const char *path,
			  const struct entry_seen *seen, int err)
{
	struct stat st;
	int fd;

	pohm_sys_close(*dfd);
	*dfd = -1;
	fd = pohm_sys_open_dir_nolinks(c->pfd, path);
	if (fd < 0)
		return err;
	if (pohm_sys_fstat(fd, &st) < 0 || (uint64_t)st.st_dev != seen->ldev ||
	    (uint64_t)st.st_ino != seen->lino) {
		pohm_sys_close(fd);
		return err;
	}
	return fd;
}

/* path (plen bytes, cap the room) with name appended after a "/" (none
 * when plen is 0), cut at cap: the new length.  Not snprintf: a tenth of
 * a cached stat's instructions went to its formatting (issue 23). */
static size_t path_add(char *path, size_t plen, size_t cap, const char *name)
{
	size_t n = strlen(name);

	if (plen && plen + 1 < cap)
		path[plen++] = '/';
	if (plen + n >= cap)
		n = plen < cap ? cap - 1 - plen : 0;
	memcpy(path + plen, name, n);
	path[plen + n] = '\0';
	return plen + n;
}

static int materialize_once(struct pohm_cache *c, const char *rel, unsigned flags,
			    struct mat_work *w, int *follow, struct mat_dir *md,
			    struct mat_last *ml)
{
	char *buf = w->buf, *path = w->path;
	const char **comp = w->comp;
	int n, i = 0, dfd = -1, r = 0, lent = -1;
	uint64_t dino = POHM_ROOT_INO;
	size_t plen = 0;
	struct cache_walk_chain ch = { 0 };

	*follow = 0;
	n = split_rel(rel, buf, w->cap, comp, 512);
	if (n < 0)
		return n;
	path[0] = '\0';
	if (n >= 2) {
		/* The parent walked within attr_timeout, every directory on the
		 * way still fresh: start there (walkfresh.c, issue 23). */
		for (i = 0; i < n - 1; i++)
			plen = path_add(path, plen, w->cap, comp[i]);
		dfd = cache_walk_start(c, path, &ch, ml ? ml->base : NULL);
		if (dfd == CACHE_WALK_NOFD && !ml->given)
			dfd = cache_walk_open(c, path, ml->base->dev, ml->base->ino);
		if (ml && ml->base && ml->base->taken)
			lent = dfd;	/* the caller's open, ours now (or none) */
		if ((dfd >= 0 || dfd == CACHE_WALK_NOFD) && ch.n == (unsigned)(n - 1)) {
			unsigned k;

			dino = ch.ino[ch.n - 1];
			for (k = 0; k < ch.n; k++)
				mat_bound(c, ml, ch.ino[k], ch.vns[k]);
		} else {
			if (dfd >= 0)
				pohm_sys_close(dfd);
			dfd = lent = -1;
			ch.n = 0;
			i = 0;
			plen = 0;
			path[0] = '\0';
		}
	}
	if (dfd < 0 && dfd != CACHE_WALK_NOFD) {
		r = ensure_root(c, n == 0);
		if (r)
			return r;
		dfd = pohm_sys_openat(c->pfd, ".", O_PATH | O_DIRECTORY, 0);
		if (dfd < 0)
			return dfd;
	}
	if (n == 0 && (flags & POHM_MAT_LIST))
		r = list_for_open(c, dfd, POHM_ROOT_INO, "");
	for (; i < n && !r; i++) {
		int last = i == n - 1;
		struct pohm_inode in;
		struct entry_seen seen;

		if (last && (flags & POHM_MAT_PARENT))
			break;
		plen = path_add(path, plen, w->cap, comp[i]);
		r = ensure_entry(c, dfd, dino, comp[i], path, last && (flags & POHM_MAT_DATA),
				 last && dfd == lent ? ml->given : NULL, &in, &seen);
		if (r == -EAGAIN && dfd == CACHE_WALK_NOFD) {
			/* A named base, more than a fresh record to answer:
			 * its directory opened here, checked as the table's. */
			path[plen - strlen(comp[i]) - 1] = '\0';
			dfd = lent = cache_walk_open(c, path, ml->base->dev, ml->base->ino);
			path[plen - strlen(comp[i]) - 1] = '/';
			if (dfd < 0) {
				ml->reopen = 1;
				return -EAGAIN;
			}
			r = ensure_entry(c, dfd, dino, comp[i], path, 0, ml->given, &in, &seen);
		}
		if (last && (flags & POHM_MAT_LIST) && (r == -EIO || r == -ETIMEDOUT) &&
		    local_dir(dfd, comp[i])) {
			/* The storage failed on the directory an open lists:
			 * as list_for_open, its local entries (an open of "."). */
			pohm_warn("%s: not validated (%s); the local directory is opened, its reads will fail",
				  path, strerror(-r));
			list_failed = 1;
			r = 0;
			break;
		}
		if (r == -ENOENT || r == -ENOTDIR) {
			/* The real call reports it when the local name is gone
			 * too.  A local directory left where the storage has none
			 * (another host's mv or rm -rf) must not take a create:
			 * the caller fails as the kernel would there. */
			if (md && !cache_offline(c))
				md->err = r;
			/* Nor be the way to a name below it: a directory the
			 * journal knows, gone from the storage (not one made here
			 * without the shim, which reconcile adopts). */
			if (last || !seen.known || !S_ISDIR(seen.lst.st_mode) || cache_offline(c))
				r = 0;
			break;
		}
		if (r)
			break;
		mat_bound(c, ml, in.ino, seen.vns);
		if (S_ISDIR(in.mode) && seen.have && ch.n < POHM_DCHAIN) {
			/* A directory on the way, as spelled, no symlink followed. */
			ch.ino[ch.n] = in.ino;
			ch.vns[ch.n++] = seen.vns;
			cache_walk_note(c, path, &ch, seen.ldev, seen.lino);
		} else {
			ch.n = POHM_DCHAIN + 1;	/* deeper: no more notes */
		}
		if (S_ISLNK(in.mode) && (!last || !(flags & POHM_MAT_NOFOLLOW))) {
			/* Follow a symlink that stays in the prefix, as the kernel will. */
			char *next = w->next;
			size_t nsz = 2 * w->cap;
			const char *rest = rel + (comp[i] - buf) + strlen(comp[i]);

			if (in.target && in.target[0] != '/')
				snprintf(next, nsz, "%.*s%s%s", (int)(plen - strlen(comp[i])),
					 path, in.target, rest);
			else if (in.target && !strncmp(in.target, c->prefix, strlen(c->prefix)) &&
				 (in.target[strlen(c->prefix)] == '/' || !in.target[strlen(c->prefix)]))
				snprintf(next, nsz, "%s%s", in.target + strlen(c->prefix), rest);
			else
				next[0] = '\0';		/* leaves the prefix: not ours */
			pohm_inode_clear(&in);
			if (next[0]) {
				r = pohm_cache_normalize(next, w->norm, w->cap);
				if (!r)
					*follow = 1;
			}
			break;
		}
		if (!last) {
			int nfd;

			if (!S_ISDIR(in.mode)) {
				pohm_inode_clear(&in);
				/* ENOTDIR comes from the real call, unless a local
				 * directory remains under the name (as above). */
				if (md && !cache_offline(c))
					md->err = -ENOTDIR;
				break;
			}
			nfd = pohm_sys_openat(dfd, comp[i], O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
			if ((nfd == -EMFILE || nfd == -ENFILE) && seen.have)
				nfd = open_dir_alone(c, &dfd, path, &seen, nfd);
			dino = in.ino;
			pohm_inode_clear(&in);
			if (nfd < 0) {
				r = nfd;
				break;
			}
			if (dfd >= 0)
				pohm_sys_close(dfd);
			dfd = nfd;
			continue;
		}
		if (ml && ml->want && seen.have && seen.from_rec) {
			ml->ok = 1;
			ml->lst = seen.lst;
			ml->ino = in.ino;
			if (ml->seen)
				*ml->seen = seen.rec;
		}
		if (md && S_ISDIR(in.mode) && !(flags & POHM_MAT_LIST) && !cache_offline(c)) {
			/* Online, ensure_entry's 0 means checked now or fresh. */
			md->fd = pohm_sys_openat(dfd, comp[i], O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
			md->ino = in.ino;
		}
		if (S_ISREG(in.mode) && (flags & POHM_MAT_DATA))
			r = pohm_cache_refresh(c, dfd, comp[i], path, &in);
		else if (S_ISDIR(in.mode) && (flags & POHM_MAT_LIST)) {
			int nfd = pohm_sys_openat(dfd, comp[i], O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);

			if (nfd >= 0) {
				r = list_for_open(c, nfd, in.ino, path);
				pohm_sys_close(nfd);
			}
		}
		pohm_inode_clear(&in);
	}
	if (dfd >= 0)
		pohm_sys_close(dfd);
	return r;
}

/* Walk rel, following symlinks that stay in the prefix (at most 40, as
 * the kernel), in a loop with one heap work area. */
static int materialize_dir(struct pohm_cache *c, const char *rel, unsigned flags, int depth,
			   struct mat_dir *md, struct mat_last *ml)
{
	struct mat_work *w = mat_new(rel);
	int r, follow, first = depth;

	if (!w)
		return -ENOMEM;
	for (;; depth++) {
		if (depth > 40) {
			r = -ELOOP;
			break;
		}
		/* md only for rel itself, walked with no symlink followed: the
		 * caller's rel must name that directory as spelled (a create's
		 * names_fd walks it O_NOFOLLOW; an absolute link resolves by its
		 * real path instead, open_beyond). */
		r = materialize_once(c, rel, flags, w, &follow, depth == first ? md : NULL, ml);
		if (r == -EXDEV && depth > 0)
			r = 0;	/* a followed link left the prefix on the way */
		if (r || !follow)
			break;
		memcpy(w->cur, w->norm, strlen(w->norm) + 1);
		rel = w->cur;
		/* The walk now reaches a name its caller did not spell: what
		 * a signal handler did to it must be in the storage first. */
		if (c->follow_fn)
			c->follow_fn(c, rel);
		if (md)
			md->followed = 1;
		if (ml) {
			ml->ok = ml->want = 0;
			ml->base = NULL;	/* another path now */
			ml->given = NULL;
		}
	}
	free(w);
	return r;
}

static int materialize_at(struct pohm_cache *c, const char *rel, unsigned flags, int depth)
{
	return materialize_dir(c, rel, flags, depth, NULL, NULL);
}

/*
 * The open path's shortcut: a path this process materialized (with at least
 * these flags) within attr_timeout, whose local name still holds the same
 * local file, needs nothing — one fstatat instead of a walk with journal
 * reads.  Listed directories and followed symlinks are never remembered (the target
 * could have been evicted since); a fetch, eviction or rename gives the name
 * a new local inode, which misses.
 */
static uint64_t path_hash(const char *rel, unsigned flags)
{
	uint64_t h = pohm_fnv1a(POHM_FNV_BASIS, rel);

	h = pohm_fnv1a_step(h, (uint8_t)(flags & (POHM_MAT_DATA | POHM_MAT_NOFOLLOW)));
	return h ? h : 1;
}

/* The table's entry for (rel, flags) when it is there and younger than
 * attr_timeout: 1 and *out, else 0.  No system call. */
static int path_recent(struct pohm_cache *c, const char *rel, unsigned flags,
		       struct pohm_pfresh *out)
{
	struct pohm_pfresh *e;
	uint64_t h;
	int hit;

	if (!c->attr_timeout_ns || (flags & POHM_MAT_PARENT) || !*rel)
		return 0;
	h = path_hash(rel, flags);
	e = &c->pfresh[h % POHM_PCACHE];
	pthread_mutex_lock(&c->vlock);
	hit = e->hash == h && pohm_sys_mono_ns() - e->mono_ns < c->attr_timeout_ns;
	if (hit)
		*out = *e;
	pthread_mutex_unlock(&c->vlock);
	return hit;
}

static int path_fresh(struct pohm_cache *c, const char *rel, unsigned flags)
{
	struct pohm_pfresh e;
	struct stat st;

	return path_recent(c, rel, flags, &e) &&
	       !pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW) &&
	       (uint64_t)st.st_dev == e.ldev && (uint64_t)st.st_ino == e.lino &&
	       !(S_ISDIR(st.st_mode) && (flags & POHM_MAT_LIST));
}

/* ml: the walk's last component, when it knows it (no fstatat here). */
static void path_remember(struct pohm_cache *c, const char *rel, unsigned flags,
			  const struct mat_last *ml)
{
	struct pohm_pfresh *e;
	struct stat st;
	uint64_t h;

	if (ml->ok)
		st = ml->lst;
	if (!c->attr_timeout_ns || (flags & POHM_MAT_PARENT) || !*rel || !ml->until ||
	    (!ml->ok && pohm_sys_fstatat(c->pfd, rel, &st, AT_SYMLINK_NOFOLLOW)) ||
	    (S_ISDIR(st.st_mode) && (flags & POHM_MAT_LIST)) ||
	    (S_ISLNK(st.st_mode) && !(flags & POHM_MAT_NOFOLLOW)) ||
	    pohm_stub_shape(&st))
		return;		/* missing, a followed symlink, or a stub */
	h = path_hash(rel, flags);
	e = &c->pfresh[h % POHM_PCACHE];
	pthread_mutex_lock(&c->vlock);
	e->hash = h;
	e->ldev = (uint64_t)st.st_dev;
	e->lino = (uint64_t)st.st_ino;
	/* Its age: that of the oldest check the walk stood on. */
	e->mono_ns = ml->until == UINT64_MAX ? pohm_sys_mono_ns() : ml->until - c->attr_timeout_ns;
	e->ino = ml->ok ? ml->ino : 0;
	pthread_mutex_unlock(&c->vlock);
}

/* What the caller's call needs on the last component (POHM_MAT_OPEN*). */
static int mat_want(unsigned flags)
{
	if (flags & POHM_MAT_OPEN)
		return ((flags & POHM_MAT_OPEN_R) ? R_OK : 0) | ((flags & POHM_MAT_OPEN_W) ? W_OK : 0);
	return (flags & POHM_MAT_LIST) ? R_OK : 0;
}

int pohm_cache_stat_recent(struct pohm_cache *c, const char *rel, unsigned flags)
{
	struct pohm_pfresh e;

	return !(flags & POHM_MAT_LIST) && path_recent(c, rel, flags, &e);
}

int pohm_cache_stat_found(struct pohm_cache *c, const char *rel, unsigned flags, struct stat *st)
{
	struct pohm_pfresh e;
	uint64_t h, ino;
	int r;

	/* The entry holds no symlink unless flags has POHM_MAT_NOFOLLOW (nor
	 * any directory to list): the file a real stat found is the name's
	 * own local file when it is the remembered one. */
	if ((flags & POHM_MAT_LIST) || !path_recent(c, rel, flags, &e) ||
	    (uint64_t)st->st_dev != e.ldev || (uint64_t)st->st_ino != e.lino)
		return -EAGAIN;
	r = cache_perm_path(c, rel, mat_want(flags));
	if (r)
		return r;
	ino = e.ino;
	cache_stat_fix_ino(c, st, &ino);
	if (ino && ino != e.ino) {
		/* Next time the overlay reads the record alone. */
		h = path_hash(rel, flags);
		pthread_mutex_lock(&c->vlock);
		if (c->pfresh[h % POHM_PCACHE].hash == h && c->pfresh[h % POHM_PCACHE].lino == e.lino &&
		    c->pfresh[h % POHM_PCACHE].ldev == e.ldev)
			c->pfresh[h % POHM_PCACHE].ino = ino;
		pthread_mutex_unlock(&c->vlock);
	}
	return 0;
}

void pohm_cache_stat_fix_rel(struct pohm_cache *c, const char *rel, unsigned flags,
			     struct stat *st)
{
	struct pohm_pfresh e;
	uint64_t ino = 0;

	if (!(flags & POHM_MAT_LIST) && path_recent(c, rel, flags, &e) &&
	    (uint64_t)st->st_dev == e.ldev && (uint64_t)st->st_ino == e.lino)
		ino = e.ino;	/* trusted only if its record names st's inode */
	cache_stat_fix_ino(c, st, &ino);
}

void pohm_cache_stat_fix_seen(struct pohm_cache *c, const char *rel, unsigned flags,
			      struct stat *st, const struct pohm_stat_seen *seen)
{
	if (seen->ok && (uint64_t)st->st_dev == c->pdev && seen->lino == (uint64_t)st->st_ino)
		cache_stat_apply(c, st, seen);
	else
		pohm_cache_stat_fix_rel(c, rel, flags, st);
}

int pohm_cache_materialize(struct pohm_cache *c, const char *rel, unsigned flags)
{
	return pohm_cache_materialize_seen(c, rel, flags, NULL);
}

int pohm_cache_materialize_seen(struct pohm_cache *c, const char *rel, unsigned flags,
				struct pohm_stat_seen *seen)
{
	return pohm_cache_materialize_from(c, rel, flags, seen, NULL, NULL);
}

int pohm_cache_materialize_from(struct pohm_cache *c, const char *rel, unsigned flags,
				struct pohm_stat_seen *seen, struct pohm_walk_base *base,
				const struct stat *lst)
{
	int r;

	/* A walk that fetches (DATA) may put another local file at the name. */
	struct mat_last ml = { .want = !(flags & POHM_MAT_DATA), .until = UINT64_MAX,
			       .seen = (flags & POHM_MAT_LIST) ? NULL : seen, .base = base,
			       .given = base && !(flags & (POHM_MAT_DATA | POHM_MAT_LIST)) ? lst : NULL };

	if (seen)
		seen->ok = 0;

	if (path_fresh(c, rel, flags))
		return cache_perm_path(c, rel, mat_want(flags));
	r = materialize_dir(c, rel, flags, 0, NULL, &ml);
	if (ml.reopen) {
		/* The named base's directory is not the table's any more. */
		ml = (struct mat_last){ .want = ml.want, .until = UINT64_MAX, .seen = ml.seen };
		r = materialize_dir(c, rel, flags, 0, NULL, &ml);
	}
	if (!r)
		r = cache_perm_path(c, rel, mat_want(flags));
	if (!r)
		path_remember(c, rel, flags, &ml);

	/* A stub or a journal record that did not fit (a fetch asks for itself). */
	if ((r == -ENOSPC || r == -EDQUOT) && c->space_fn && !c->space_fn(c->space_arg, 1u << 20))
		r = materialize_at(c, rel, flags, 0);
	if (r == -ENOSPC || r == -EDQUOT) {
		pohm_err("%s: the cache filesystem is full and nothing more could be evicted", rel);
		r = -EIO;
	}
	return r;
}

int pohm_cache_xattr_ready(struct pohm_cache *c, const char *rel, unsigned flags)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t ino;
	int need;

	if (pohm_sys_fstatat(c->pfd, *rel ? rel : ".", &st,
			     (flags & POHM_MAT_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) ||
	    !pohm_stub_kind(&st) ||
	    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &ino) ||
	    pohm_journal_get(&c->j, ino, &rec))
		return 0;	/* missing (the real call says so), or no stub of ours */
	need = rec.lino == (uint64_t)st.st_ino && (rec.flags & POHM_J_STUB) &&
	       !(rec.flags & POHM_J_NOXATTR);
	pohm_jrec_clear(&rec);
	return need ? pohm_cache_materialize(c, rel, POHM_MAT_DATA | (flags & POHM_MAT_NOFOLLOW)) : 0;
}

/*
 * Make dfd/name a hardlink of the local copy the journal tracks for rec
 * (its hint), replacing what is there by rename.  0, or -errno (then the
 * caller fetches instead).
 */
static int cache_link_name(struct pohm_cache *c, const struct pohm_jrec *rec, int dfd,
			   const char *name)
{
	static unsigned long seq;	/* temp-name uniqueness; atomic */
	struct pohm_jrec cur;
	struct stat hst, lst;
	char tmp[64];
	int r, clean;

	if (!rec->hint[0] || pohm_sys_fstatat(c->pfd, rec->hint, &hst, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)hst.st_ino != rec->lino)
		return -ENOENT;
	snprintf(tmp, sizeof(tmp), "l.%d.%lu", (int)pohm_sys_getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	clean = !cache_local_changed(c, rec, c->pfd, rec->hint, &hst);
	r = pohm_sys_linkat(c->pfd, rec->hint, c->stage_fd, tmp, 0);
	if (r)
		return r;
	r = pohm_sys_renameat(c->stage_fd, tmp, dfd, name);
	if (r) {
		pohm_sys_unlinkat(c->stage_fd, tmp, 0);
		return r;
	}
	/* The link moved the local ctime: a clean copy must stay clean (refreshable). */
	if (clean && !pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) &&
	    !pohm_journal_get(&c->j, rec->ino, &cur)) {
		if (cur.lino == rec->lino && cur.lino == (uint64_t)lst.st_ino &&
		    cur.lctime.sec == rec->lctime.sec && cur.lctime.nsec == rec->lctime.nsec &&
		    cur.lsize == (uint64_t)lst.st_size) {
			pohm_journal_note_local(&cur, &lst);
			pohm_journal_put(&c->j, &cur);
		}
		pohm_jrec_clear(&cur);
	}
	return 0;
}

/* After a stub written without the shim became a conflict copy (and the
 * name a fresh stub): fetch over that new stub, its state the base. */
static int refetch_after_push(struct pohm_cache *c, int dfd, const char *name, const char *rel,
			      const struct pohm_inode *in)
{
	struct cache_fetch_base base;
	struct pohm_jrec rec;
	struct stat lst;
	int r, has;

	r = pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW);
	if (r)
		return r;
	has = !pohm_journal_get(&c->j, in->ino, &rec);
	cache_fetch_base_of(&base, &lst, has ? &rec : NULL);
	if (has)
		pohm_jrec_clear(&rec);
	return cache_fetch(c, dfd, name, rel, in, &base);
}

/*
 * rec is older than the stored version in (a stub's, or a clean copy's),
 * dfd/name (lst) a regular copy neither the record nor the index knows:
 * what a fetch or refresh that died between its rename and its record put
 * leaves.  Holding the stored version
 * in's bytes, it is that clean copy: rec becomes it (the put the fetch did
 * not make) and 0.  Else (a file put there without the shim, its base
 * unknown) the index maps it to rec's inode, so that the push that keeps
 * it as a conflict copy finds it, and 1.  -errno.
 */
static int note_unrecorded_fetch(struct pohm_cache *c, int dfd, const char *name,
				 struct pohm_jrec *rec, const struct stat *lst,
				 const struct pohm_inode *in)
{
	struct pohm_jrec cand, seen = *rec;	/* seen: its fields only, never cleared */
	struct stat st;
	int fd, r;

	fd = pohm_sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return fd == -EACCES ? 1 : fd;
	memset(&cand, 0, sizeof(cand));
	pohm_journal_note_data(&cand, in);
	r = pohm_sys_fstat(fd, &st);
	if (!r && (st.st_ino != lst->st_ino || st.st_dev != lst->st_dev))
		r = -EAGAIN;	/* the name moved on: the next look decides */
	if (!r)
		r = pohm_journal_content_differs(&cand, fd, (uint64_t)st.st_size);
	pohm_sys_close(fd);
	pohm_jrec_clear(&cand);
	if (r == 1)
		return pohm_journal_index_set(&c->j, (uint64_t)lst->st_dev, (uint64_t)lst->st_ino,
					      rec->ino) ?: 1;
	if (r)
		return r;
	pohm_info("%s: a copy fetched before a crash, not recorded: now clean at version %llu",
		  rec->hint, (unsigned long long)in->dversion);
	pohm_journal_note_inode(rec, in);
	rec->flags &= ~(uint32_t)(POHM_J_STUB | POHM_J_CONFLICT);
	pohm_journal_note_local(rec, &st);
	r = pohm_journal_put_cas(&c->j, rec, &seen);
	return r == -ESTALE ? -EAGAIN : r;
}

int pohm_cache_refresh(struct pohm_cache *c, int dfd, const char *name, const char *rel,
		       const struct pohm_inode *in)
{
	struct cache_fetch_base base;
	struct pohm_jrec rec;
	struct stat lst;
	uint64_t known;
	int r;

	r = pohm_sys_fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW);
	if (r)
		return r;
	r = pohm_journal_get(&c->j, in->ino, &rec);
	if (r == -ENOENT) {

		/* A local file nobody recorded may be another process's create of a
		 * moment ago, being written: never fetch over it (adopt, or
		 * pohmelfsd's reconcile, records it).  Only a stub is replaced. */
		if (S_ISREG(lst.st_mode) && !pohm_stub_shape(&lst) &&
		    pohm_journal_lookup_local(&c->j, (uint64_t)lst.st_dev, (uint64_t)lst.st_ino,
					      &known))
			return 0;
		cache_fetch_base_of(&base, &lst, NULL);
		return cache_fetch(c, dfd, name, rel, in, &base);
	}
	if (r)
		return r;
	/* Each fetch below installs only if nothing moved since this look. */
	cache_fetch_base_of(&base, &lst, &rec);
	if ((uint64_t)lst.st_ino != rec.lino && !(rec.flags & POHM_J_STUB) &&
	    rec.dversion == in->dversion && pohm_stub_shape(&lst)) {
		/* Another name of a hardlinked inode, still a stub: link it to the copy. */
		r = cache_link_name(c, &rec, dfd, name);
		if (r)
			r = cache_fetch(c, dfd, name, rel, in, &base);
	} else if (!(rec.flags & POHM_J_STUB) && rec.dversion >= in->dversion) {
		r = 0;		/* our copy is the committed one (or newer: never go back) */
	} else if (!(rec.flags & POHM_J_STUB) && (uint64_t)lst.st_ino != rec.lino &&
		   pohm_stub_shape(&lst)) {
		/* A stub at the name that is not the record's copy, which is
		 * older than the stored version: a restub that died before
		 * its record put (its copy's bytes were stored first, as the
		 * conflict copy or the commit), or another name of a hardlinked
		 * inode that moved on.  Nothing here to keep: fetch. */
		r = cache_fetch(c, dfd, name, rel, in, &base);
	} else if (S_ISREG(lst.st_mode) && !pohm_stub_shape(&lst) && (uint64_t)lst.st_ino != rec.lino &&
		   pohm_journal_lookup_local(&c->j, (uint64_t)lst.st_dev, (uint64_t)lst.st_ino,
					     &known) &&
		   (r = note_unrecorded_fetch(c, dfd, name, &rec, &lst, in)) <= 0) {
		;	/* a fetch's copy whose record put a crash took: now recorded */
	} else if (!(rec.flags & POHM_J_STUB) && cache_local_changed(c, &rec, dfd, name, &lst)) {
		r = 0;		/* changed here too: the push will keep both (conflict copy) */
	} else if ((rec.flags & POHM_J_STUB) && S_ISREG(lst.st_mode) && !pohm_stub_shape(&lst)) {
		/* A stub changed without the shim (only a regular one can be
		 * written): never pushed, its data kept as a conflict copy. */
		pohm_warn("%s: a stub was changed without the shim; it becomes a conflict copy", rel);
		r = pohm_cache_push_path(c, rel);
		if (r >= 0)
			r = refetch_after_push(c, dfd, name, rel, in);
	} else {
		r = cache_fetch(c, dfd, name, rel, in, &base);
	}
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * The storage inode of the local directory dfd from its journal record,
 * when that record is a directory validated within attr_timeout (the
 * walk that opened it just looked): 0 with *ino, else -ENOENT (resolve in
 * the storage).  A directory the journal does not record (another user's,
 * or made without the shim) always resolves.
 */
static int dir_known(struct pohm_cache *c, int dfd, uint64_t *ino)
{
	struct pohm_jrec rec;
	struct stat st;
	uint64_t known;
	int r = -ENOENT;

	if (pohm_sys_fstatat(dfd, "", &st, AT_EMPTY_PATH) ||
	    pohm_journal_lookup_local(&c->j, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &known) ||
	    pohm_journal_get(&c->j, known, &rec))
		return -ENOENT;
	if (S_ISDIR(rec.mode) && rec.lino == (uint64_t)st.st_ino && cache_fresh_rec(c, &rec)) {
		*ino = known;
		r = 0;
	}
	pohm_jrec_clear(&rec);
	return r;
}

/*
 * A namespace change's parent without the walk (issue 23: a create's walk
 * was five calls per component, two journal reads each): the directory
 * when the walk table (walkfresh.c) holds it — a walk of this process
 * reached it as spelled, no symlink on the way, and every directory of
 * its path, not only its own, is still fresh (cache_fresh_at_count: its
 * record's validation within attr_timeout, or this process's own check);
 * cache_walk_start opens it following no symlink and checks it is still
 * the local directory the walk found.  Its ancestors are checked too: a
 * directory another host renamed or removed is seen gone by the next
 * create below it once attr_timeout has passed since this host validated
 * it (the own record alone let an ancestor be up to twice that stale,
 * review s15).  0 with *dfd (O_PATH) and *ino, else -1 (walk).
 */
static int parent_recent(struct pohm_cache *c, const char *dir, int *dfd, uint64_t *ino,
			 struct cache_look *look)
{
	struct cache_walk_chain ch;
	const char *p;
	unsigned n = 1;
	int fd;

	if (!c->attr_timeout_ns || !*dir || cache_offline(c))
		return -1;
	for (p = dir; *p; p++)
		n += *p == '/';
	fd = look ? cache_walk_start_look(c, dir, &ch, look) : cache_walk_start(c, dir, &ch, NULL);
	if (fd < 0)
		return -1;
	if (ch.n != n) {
		/* Not a chain from the root as dir spells it ("a//b", "./a"). */
		if (look) {
			look->ldev = look->lino = 0;	/* given back or closed, not kept */
			cache_walk_look_done(c, fd, look);
			look->kept = 0;
		} else {
			pohm_sys_close(fd);
		}
		return -1;
	}
	*dfd = fd;
	*ino = ch.ino[ch.n - 1];
	return 0;
}

static int walk_parent_dir(struct pohm_cache *c, const char *dir, int *dfd, uint64_t *ino,
			   int direct, struct cache_look *look)
{
	struct mat_dir md = { -1, 0, 0, 0 };
	int r;

	*dfd = -1;
	if (!parent_recent(c, dir, dfd, ino, look))
		return 0;
	r = materialize_dir(c, dir, 0, 0, &md, NULL);
	if (!r && md.err)
		r = md.err;	/* the storage has no directory there: as the kernel would */
	if (!r && direct && md.followed)
		r = -EXDEV;	/* by the parent's real path (cache_walk_parent_direct) */
	if (r || md.fd >= 0) {
		/* The walk opened it and knows its inode (issue 23: no second
		 * look at its record); it noted it in the walk table. */
		if (r && md.fd >= 0) {
			pohm_sys_close(md.fd);
			md.fd = -1;
		}
		*dfd = md.fd;
		*ino = md.ino;
		return r;
	}
	*dfd = pohm_sys_openat(c->pfd, dir, O_PATH | O_DIRECTORY, 0);
	if (*dfd < 0)
		return *dfd;
	/* The walk just validated it: its record names the inode (issue 23). */
	if (!dir_known(c, *dfd, ino))
		return 0;
	r = pohm_ns_resolve(c->ns, dir, 1, ino);
	if (r)
		pohm_sys_close(*dfd);
	return r;
}

static int walk_parent(struct pohm_cache *c, const char *rel, int *dfd, uint64_t *dino,
		       const char **name, int direct, struct cache_look *look)
{
	char sdir[4096], *dir;
	const char *slash = strrchr(rel, '/');
	uint64_t ino = POHM_ROOT_INO;
	int r;

	*name = slash ? slash + 1 : rel;
	if (!**name)
		return -EINVAL;
	if (slash) {
		dir = cache_cut(rel, (size_t)(slash - rel), sdir);
		if (!dir)
			return -ENOMEM;
		r = walk_parent_dir(c, dir, dfd, &ino, direct, look);
		cache_cut_free(dir, sdir);
		if (r)
			return r;
	} else {
		r = ensure_root(c, 0);
		if (r)
			return r;
		*dfd = pohm_sys_openat(c->pfd, ".", O_PATH | O_DIRECTORY, 0);
		if (*dfd < 0)
			return *dfd;
	}
	*dino = ino;
	return 0;
}

int cache_walk_parent(struct pohm_cache *c, const char *rel, int *dfd, uint64_t *dino,
		      const char **name)
{
	return walk_parent(c, rel, dfd, dino, name, 0, NULL);
}

int cache_walk_parent_direct(struct pohm_cache *c, const char *rel, int *dfd, uint64_t *dino,
			     const char **name, struct cache_look *look)
{
	*look = (struct cache_look){ 0, 0, 0 };
	return walk_parent(c, rel, dfd, dino, name, 1, look);
}

int pohm_cache_parent_real(struct pohm_cache *c, const char *rel, char *out, size_t len)
{
	char dir[4096], got[4096], root[4096];
	const char *slash = strrchr(rel, '/');
	int fd, n, rn, r;

	if (!slash)
		return -EINVAL;		/* the parent is the prefix root */
	if ((size_t)(slash - rel) >= sizeof(dir))
		return -ENAMETOOLONG;	/* nor would the kernel's path of it fit */
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	materialize_at(c, dir, 0, 0);	/* symlinks on the way, as the kernel will follow them */
	fd = pohm_sys_openat(c->pfd, dir, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	n = pohm_sys_fd_path(fd, got, sizeof(got));
	pohm_sys_close(fd);
	rn = pohm_sys_fd_path(c->pfd, root, sizeof(root));
	if (n < 0 || rn < 0)
		return n < 0 ? n : rn;
	if (strncmp(got, root, (size_t)rn) || (got[rn] && got[rn] != '/'))
		return 1;		/* outside the prefix */
	r = got[rn] ? snprintf(out, len, "%s/%s", got + rn + 1, slash + 1) :
		      snprintf(out, len, "%s", slash + 1);
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

/* ---------------------------------------------------------------- listing */

struct list_ent {
	char *name;
	uint64_t ino;
	unsigned flags;			/* POHM_NS_DENT_* */
	struct pohm_inode *in;		/* read by list_prefetch for a stub to make, or NULL */
	int gone;			/* list_prefetch found the inode removed */
	int same;			/* list_prefetch found it present here as ino */
};

struct list_ctx {
	struct pohm_cache *c;
	int dfd;
	uint64_t dino;
	const char *rel;
	struct list_ent *v;		/* the storage's entries, sorted by name once listed */
	size_t n, cap;
	uint64_t mono0, real0;		/* when the listing's reads began */
	int recheck;			/* list_prefetch: fresh records too */
	int partial;			/* a stored name left missing or held by another
					 * file here: not complete (COMPLETE) */
	int marks;			/* list_prefetch: check present entries only (no stubs) */
	struct list_known *k;		/* the local entries before the listing (list_known), by name */
	size_t nk, kcap;
	uint64_t *kino;			/* the inodes of the ones to check, read along the listing */
	struct pohm_inode *kin;		/* kino[a]'s fixed part as read along, when !kst[a] */
	int *kst;
	size_t na;			/* how many: kino[0..na) */
};

/* A local entry as list_known saw it: its name, the inode and version its
 * record holds (ino 0: none, or a stale index entry), and where its inode
 * is in the read along the listing (-1: list_prefetch would not check it). */
struct list_known {
	char *name;
	uint64_t ino, ver;
	long a;
};

/* Collect one storage entry (pohm_ns_readdir_flags's callback). */
static int list_collect(void *arg, const char *name, uint64_t ino, uint8_t type, unsigned flags)
{
	struct list_ctx *l = arg;

	(void)type;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct list_ent *a = realloc(l->v, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		l->v = a;
		l->cap = cap;
	}
	/* Not strdup: libc's copy would not come from the allocator free() uses here. */
	l->v[l->n].name = malloc(strlen(name) + 1);
	if (!l->v[l->n].name)
		return -ENOMEM;
	strcpy(l->v[l->n].name, name);
	l->v[l->n].flags = flags;
	l->v[l->n].in = NULL;
	l->v[l->n].gone = 0;
	l->v[l->n].same = 0;
	l->v[l->n++].ino = ino;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct list_ent *)a)->name, ((const struct list_ent *)b)->name);
}

static const struct list_ent *list_find(const struct list_ctx *l, const char *name)
{
	struct list_ent key = { .name = (char *)name };

	return l->n ? bsearch(&key, l->v, l->n, sizeof(key), ent_cmp) : NULL;
}

static int list_own_name(const struct list_ctx *l, const char *name);

static int known_cmp(const void *a, const void *b)
{
	return strcmp(((const struct list_known *)a)->name, ((const struct list_known *)b)->name);
}

/*
 * Would list_prefetch check the local entry whose lstat is lst (its
 * record's, not a stale index entry, not fresh unless recheck)?  1 or 0;
 * *ino and *ver its record's (0: no record).
 */
static int list_checks(struct list_ctx *l, const struct stat *lst, uint64_t *ino, uint64_t *ver)
{
	struct pohm_cache *c = l->c;
	struct pohm_jrec rec;
	uint64_t known = 0;
	int keep;

	*ino = *ver = 0;
	if (pohm_journal_lookup_local(&c->j, (uint64_t)lst->st_dev, (uint64_t)lst->st_ino, &known) ||
	    pohm_journal_get(&c->j, known, &rec))
		return 0;
	/* As ensure_entry: not a stale index entry, not fresh yet. */
	keep = !cache_index_stale(&rec, lst) && rec.version &&
	       (l->recheck || !cache_fresh_at_count(c, rec.ino, rec.validated_ns, 0));
	*ino = known;
	*ver = rec.version;
	pohm_jrec_clear(&rec);
	return keep;
}

/* fn(l, name) for every name of the local directory l->dfd but the
 * cache's own (list_own_name), until one returns non-zero: its value, 0,
 * or -errno. */
static int list_local_each(struct list_ctx *l, int (*fn)(struct list_ctx *l, const char *name))
{
	char buf[8192];
	long n;
	int fd, r = 0;

	fd = pohm_sys_openat(l->dfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	while (!r && (n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n && !r) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (!list_own_name(l, de->d_name))
				r = fn(l, de->d_name);
		}
	}
	if (n < 0 && !r)
		r = (int)n;
	pohm_sys_close(fd);
	return r;
}

/* list_known's look at one local name: kept in l->k with its record's
 * inode and version, and whether list_prefetch would check it. */
static int known_one(struct list_ctx *l, const char *name)
{
	struct list_known *k;
	struct stat lst;
	uint64_t ino, ver;
	int check;

	if (pohm_sys_fstatat(l->dfd, name, &lst, AT_SYMLINK_NOFOLLOW))
		return 0;
	check = list_checks(l, &lst, &ino, &ver);
	if (l->nk == l->kcap) {
		size_t cap = l->kcap ? l->kcap * 2 : 64;

		k = realloc(l->k, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		l->k = k;
		l->kcap = cap;
	}
	k = &l->k[l->nk];
	k->name = malloc(strlen(name) + 1);
	if (!k->name)
		return -ENOMEM;
	strcpy(k->name, name);
	k->ino = ino;
	k->ver = ver;
	k->a = check ? 0 : -1;
	l->nk++;
	return 0;
}

/* list_known's arrays of the inodes to read along (kino, kin, kst) freed
 * (the inodes in kin cleared by the caller) and set NULL. */
static void known_arrays_free(struct list_ctx *l)
{
	free(l->kino);
	free(l->kin);
	free(l->kst);
	l->kino = NULL;
	l->kin = NULL;
	l->kst = NULL;
}

/*
 * Before the listing (issue 23): the local entries, each with the inode
 * its record holds; of those list_prefetch would check, the inodes are
 * read in the listing's first round trips (pohm_ns_readdir_along): an
 * unchanged directory is one wait, not two.  Which of them the listing
 * confirms is list_prefetch's to say.  0 or -errno (l->k as far as it got).
 */
static int list_known(struct list_ctx *l)
{
	size_t k1, i;
	int r;

	if (cache_offline(l->c))
		return 0;
	r = list_local_each(l, known_one);
	if (r)
		return r;
	k1 = l->nk ? l->nk : 1;
	l->kino = calloc(k1, sizeof(*l->kino));
	l->kin = calloc(k1, sizeof(*l->kin));
	l->kst = calloc(k1, sizeof(*l->kst));
	if (!l->kino || !l->kin || !l->kst) {
		/* all three or none: list_known_find and list_prefetch read
		 * kin wherever kst is set */
		known_arrays_free(l);
		return -ENOMEM;
	}
	if (l->nk)
		qsort(l->k, l->nk, sizeof(*l->k), known_cmp);
	for (i = 0; i < l->nk; i++) {
		if (l->k[i].a < 0)
			continue;
		l->k[i].a = (long)l->na;
		l->kino[l->na++] = l->k[i].ino;
	}
	return 0;
}

/*
 * List dino into l (list_collect), with the inodes of l's known entries
 * (list_known) read in the listing's first round trip; without them when
 * they cannot be had (list_prefetch reads them after, as before).
 */
static int list_read(struct list_ctx *l)
{
	struct pohm_ns_along along;
	int r;

	if (list_known(l) || !l->na)
		return pohm_ns_readdir_flags(l->c->ns, l->dino, list_collect, l);
	along.n = l->na;
	along.inos = l->kino;
	along.out = l->kin;
	along.st = l->kst;
	r = pohm_ns_readdir_along(l->c->ns, l->dino, list_collect, l, &along);
	if (!r)
		cache_count(l->c, &l->c->stats.lookups, l->na);
	return r;
}

/* list_known's entry of name, or NULL (not seen, or list_known failed). */
static const struct list_known *list_known_find(const struct list_ctx *l, const char *name)
{
	struct list_known key = { (char *)name, 0, 0, 0 };

	return l->nk && l->kst ? bsearch(&key, l->k, l->nk, sizeof(key), known_cmp) : NULL;
}

/*
 * Issue 23: a listing whose entries' validation expired reads their
 * inodes together, not one lstat's round trip each.  For every entry
 * present locally as the inode the listing names, plainly (no intent),
 * whose record is no longer fresh: the inode is read (the committed read
 * pohm_ns_getattr makes, pipelined), and if it is the version the record
 * holds, the entry is checked as ensure_entry's pohm_ns_lookup_check
 * would check it — the listing's bucket read is that check's bucket half
 * — as of when the listing's reads began.  Anything else (a newer or
 * older version, gone, a failed read) is left to ensure_entry at the next
 * call on the name, which knows what to do.  For every entry missing
 * locally, the inode is read for list_one's stub.  0, or -errno (nothing
 * done: every entry takes the per-entry path).
 */
static int list_prefetch(struct list_ctx *l)
{
	struct pohm_cache *c = l->c;
	struct pohm_inode *in = NULL;
	uint64_t *inos = NULL, *ver = NULL, *mino = NULL, *mver = NULL;
	uint8_t *head = NULL;
	size_t *idx = NULL, i, m = 0, nm = 0;
	int *st = NULL, r = 0;

	if (!l->n || cache_offline(c))
		return 0;
	inos = calloc(l->n, sizeof(*inos));
	ver = calloc(l->n, sizeof(*ver));
	head = calloc(l->n, sizeof(*head));
	idx = calloc(l->n, sizeof(*idx));
	st = calloc(l->n, sizeof(*st));
	in = calloc(l->n, sizeof(*in));
	mino = calloc(l->n, sizeof(*mino));
	mver = calloc(l->n, sizeof(*mver));
	if (!inos || !ver || !head || !idx || !st || !in || !mino || !mver) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < l->n; i++) {
		struct list_ent *e = &l->v[i];
		const struct list_known *k = list_known_find(l, e->name);
		struct stat lst;
		uint64_t known = 0;

		if (k) {
			/* Present before the listing; its inode read along it
			 * when to check: confirmed, or (another inode or
			 * version, gone, a failed read) left to ensure_entry
			 * as below. */
			e->same = k->ino && k->ino == e->ino;
			if (e->same && k->a >= 0 && !(e->flags & POHM_NS_DENT_INTENT) &&
			    !l->kst[k->a] && l->kin[k->a].version == k->ver) {
				mino[nm] = k->ino;
				mver[nm++] = k->ver;
			}
			continue;
		}
		if (pohm_sys_fstatat(l->dfd, e->name, &lst, AT_SYMLINK_NOFOLLOW)) {
			if (l->marks || cache_create_marked(c, l->dino, e->name))
				continue;
			ver[m] = 0;	/* a stub to make */
		} else {
			int keep = list_checks(l, &lst, &known, &ver[m]);

			e->same = known == e->ino;
			if ((e->flags & POHM_NS_DENT_INTENT) || !keep || !e->same)
				continue;
		}
		/* A present entry's check needs the version alone: no inline
		 * bytes hashed, no map read (session 19: a fifth of find -ls's
		 * instructions); a stub to make needs the whole inode. */
		head[m] = ver[m] != 0;
		inos[m] = e->ino;
		idx[m++] = i;
	}
	if (!m)
		goto out;
	r = pohm_ns_getattr_many(c->ns, m, inos, head, in, st);
	if (r)
		goto out;
	cache_count(c, &c->stats.lookups, m);
	for (i = 0; i < m; i++) {
		struct list_ent *e = &l->v[idx[i]];

		if (!ver[i]) {
			if (st[i] == -ENOENT)
				e->gone = 1;
			if (!st[i] && (e->in = malloc(sizeof(*e->in)))) {
				*e->in = in[i];
				continue;	/* list_one's now */
			}
		} else if (!st[i] && in[i].version == ver[i]) {
			mino[nm] = inos[i];
			mver[nm++] = ver[i];
		}
		if (!st[i])
			pohm_inode_clear(&in[i]);
	}
out:
	/* The checked ones' marks, in one journal pass (issue 23: not three
	 * calls an entry). */
	if (nm)
		cache_mark_checked_many(c, nm, mino, mver, l->mono0, l->real0);
	free(inos);
	free(ver);
	free(head);
	free(idx);
	free(st);
	free(in);
	free(mino);
	free(mver);
	return r;
}

/* Make one storage entry present locally (the same inode, or a stub of it). */
static int list_one(struct list_ctx *l, const struct list_ent *e)
{
	const char *name = e->name;
	uint64_t ino = e->ino;
	int pre = 0;
	struct pohm_inode in;
	struct pohm_jrec rec;
	char spath[4096], *path;
	size_t rl = strlen(l->rel), nl = strlen(name);
	struct stat lst;
	uint64_t known = 0;
	int r, have_local;

	if (e->same)
		return 0;	/* list_prefetch found it present, the same inode */
	have_local = !pohm_sys_fstatat(l->dfd, name, &lst, AT_SYMLINK_NOFOLLOW);
	if (have_local &&
	    !pohm_journal_lookup_local(&l->c->j, (uint64_t)lst.st_dev, (uint64_t)lst.st_ino, &known) &&
	    known == ino)
		return 0;	/* present and the same inode */
	if (have_local) {
		/* Another inode (or an unknown file) holds the name: replace it
		 * only if clean.  One kept may go without the storage's name
		 * (the reconcile's conflict copy): not complete. */
		if (!known || pohm_journal_get(&l->c->j, known, &rec)) {
			l->partial = 1;
			return 0;
		}
		r = S_ISDIR(lst.st_mode) || cache_local_changed(l->c, &rec, l->dfd, name, &lst);
		pohm_jrec_clear(&rec);
		if (r) {
			l->partial = 1;
			return 0;
		}
		pohm_sys_unlinkat(l->dfd, name, 0);
	} else if (cache_create_marked(l->c, l->dino, name)) {
		/* A create of this host in flight: its O_EXCL open makes the
		 * name, unless it dies first: not complete meanwhile. */
		l->partial = 1;
		return 0;
	}
	/* l->rel "/" name; 4096 bytes or more on the heap (issue 19 item 10) */
	path = rl + nl + 2 <= sizeof(spath) ? spath : malloc(rl + nl + 2);
	if (!path)
		return -ENOMEM;
	snprintf(path, rl + nl + 2, "%s%s%s", l->rel, rl ? "/" : "", name);
	if (e->in) {
		in = *e->in;		/* list_prefetch read it */
		memset(e->in, 0, sizeof(*e->in));
		pre = 1;
		r = 0;
	} else {
		r = e->gone ? -ENOENT : pohm_ns_getattr(l->c->ns, ino, &in);
	}
	if (r == -ENOENT || r) {
		cache_cut_free(path, spath);
		return r == -ENOENT ? 0 : r;	/* -ENOENT: removed meanwhile */
	}
	/* Its record says validated when the listing began (the inode was
	 * read then), written with it: no touch after (issue 23). */
	r = cache_make_local_at(l->c, l->dfd, name, path, &in,
				pre && l->c->attr_timeout_ns ? l->real0 : 0);
	cache_cut_free(path, spath);
	pohm_inode_clear(&in);
	return r == -EEXIST ? 0 : r;
}

/*
 * The storage entry a local name gone from the listing was renamed to in
 * this directory (the same inode, a name not present locally), or NULL.
 */
static const struct list_ent *list_renamed_to(const struct list_ctx *l, uint64_t ino)
{
	struct stat st;
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].ino == ino &&
		    pohm_sys_fstatat(l->dfd, l->v[i].name, &st, AT_SYMLINK_NOFOLLOW) == -ENOENT)
			return &l->v[i];
	return NULL;
}

struct rehint {
	const char *from, *to;
	const struct stat *pre, *post;	/* the clean copy before and after the rename */
};

/* The record's hint from -> to, if it still names from; the local state
 * follows the ctime the rename moved when the record still describes the
 * copy as it was (it was found clean just before): else the copy looks
 * changed here, and the next listing keeps it as "removed elsewhere but
 * changed here" after another host removes it. */
static int rehint_fn(struct pohm_jrec *r, const void *arg)
{
	const struct rehint *h = arg;

	if (strcmp(r->hint, h->from))
		return -ESTALE;
	pohm_jrec_set_hint(r, h->to);
	if (h->post && r->lino == (uint64_t)h->pre->st_ino &&
	    h->post->st_ino == h->pre->st_ino && h->post->st_dev == h->pre->st_dev &&
	    h->post->st_size == h->pre->st_size &&
	    h->post->st_mtim.tv_sec == h->pre->st_mtim.tv_sec &&
	    h->post->st_mtim.tv_nsec == h->pre->st_mtim.tv_nsec)
		pohm_journal_note_local(r, h->post);
	return 0;
}

/*
 * A local name the storage listing lacks (DESIGN §2): if the journal knows
 * it, the storage confirms it is gone, and it is clean here, it follows a
 * rename to a new name in this directory or goes.  Unknown files (creates
 * in flight, files made without the shim) and dirty files stay: the scan
 * or the push decides about them.  0 or -errno.
 */
static int list_drop_gone(struct list_ctx *l, const char *name)
{
	const struct list_ent *to;
	struct pohm_jrec rec;
	struct stat lst;
	uint64_t known, ino;
	uint8_t type;
	char path[4096], path_to[4096];
	int r;

	if (pohm_sys_fstatat(l->dfd, name, &lst, AT_SYMLINK_NOFOLLOW) ||
	    pohm_journal_lookup_local(&l->c->j, (uint64_t)lst.st_dev, (uint64_t)lst.st_ino, &known))
		return 0;
	if (pohm_journal_get(&l->c->j, known, &rec))
		return 0;
	r = 0;
	if (cache_index_stale(&rec, &lst))
		goto out;	/* a stale index entry: not a file we know */
	if (rec.flags & POHM_J_CONFLICT)
		goto out;
	/* A rename of this host in flight (cachens.c's intent): the renamer moves it. */
	if (cache_dir_moving(l->c, known))
		goto out;
	/* The listing may predate a create of this host: ask about the name itself. */
	r = pohm_ns_lookup(l->c->ns, l->dino, name, &ino, &type);
	if (r != -ENOENT)
		goto out;	/* still there (0), or unknown: leave it */
	r = 0;
	if (!S_ISDIR(lst.st_mode) && cache_local_changed(l->c, &rec, l->dfd, name, &lst)) {
		pohm_warn("%s%s%s: removed elsewhere but changed here; kept until it is pushed",
			  l->rel, *l->rel ? "/" : "", name);
		goto out;
	}
	to = list_renamed_to(l, known);
	if (to && !pohm_sys_renameat(l->dfd, name, l->dfd, to->name)) {
		/* A remote rename becomes a local rename: the data stays fetched.
		 * The hint follows in the record as it is now (rec was read
		 * before the lookup: issue 18). */
		struct stat post;
		struct rehint h = { path, path_to, &lst, NULL };

		if (S_ISDIR(lst.st_mode))
			cache_dir_moved();	/* a walk below it looked for the old name */
		if (S_ISREG(lst.st_mode) &&
		    !pohm_sys_fstatat(l->dfd, to->name, &post, AT_SYMLINK_NOFOLLOW))
			h.post = &post;
		snprintf(path, sizeof(path), "%s%s%s", l->rel, *l->rel ? "/" : "", name);
		snprintf(path_to, sizeof(path_to), "%s%s%s", l->rel, *l->rel ? "/" : "", to->name);
		pohm_journal_update(&l->c->j, known, rehint_fn, &h);
		if (S_ISDIR(lst.st_mode))
			cache_dir_rehint_below(l->c, l->dfd, to->name, path_to);
		cache_unmark(l->c, known);
		goto out;
	}
	if (S_ISDIR(lst.st_mode)) {
		/* Removed elsewhere, it goes with its entries, what changed here
		 * kept as conflict copies (listgone.c); moved into another
		 * parent, it follows; renamed here over a name present here
		 * (list_renamed_to found none free), it goes as before; a
		 * failed read leaves it for the next look. */
		int same;

		snprintf(path, sizeof(path), "%s%s%s", l->rel, *l->rel ? "/" : "", name);
		dir_name_gone(l->c, l->dfd, l->dino, name, path, known, &same);
		if (same)
			cache_drop_gone_dir(l->c, l->dfd, name, path, known);
		goto out;
	}
	if (!pohm_sys_unlinkat(l->dfd, name, 0) && rec.nlink <= 1)
		pohm_journal_del(&l->c->j, known);
	cache_unmark(l->c, known);
out:
	pohm_jrec_clear(&rec);
	return r;
}

/* Names the cache keeps at the prefix root for itself. */
static int list_own_name(const struct list_ctx *l, const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..") ||
	       (!*l->rel && !strncmp(name, ".pohmelfs-", 10));
}

/* list_sweep's look at one local name. */
static int sweep_one(struct list_ctx *l, const char *name)
{
	return list_find(l, name) ? 0 : list_drop_gone(l, name);
}

/* Remove or rename the local names the storage listing lacks. */
static int list_sweep(struct list_ctx *l)
{
	return list_local_each(l, sweep_one);
}

/* The validation table also remembers listings, under a salted key: a
 * listed directory is complete (COMPLETE, cache_int.h), unless the listing
 * left a stored name missing here. */

static void list_free(struct list_ctx *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].name);
		if (l->v[i].in) {
			pohm_inode_clear(l->v[i].in);
			free(l->v[i].in);
		}
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
	for (i = 0; i < l->nk; i++)
		free(l->k[i].name);
	for (i = 0; i < l->na; i++)
		if (!l->kst[i])
			pohm_inode_clear(&l->kin[i]);
	free(l->k);
	l->k = NULL;
	known_arrays_free(l);
	l->nk = l->kcap = l->na = 0;
}

/*
 * Revalidate the expired entries of directory dfd (dino) present here
 * together (ensure_entry, cache_sib_batch said so): a listing (its
 * committed bucket reads, a level at a time) and list_prefetch's batch of
 * their inodes, each confirmed one checked as of the listing's start, as
 * a listing's are.  Nothing else: no stub made, no name removed (the
 * per-entry path does that for the names asked about).  0 or -errno.
 */
static int sib_batch(struct pohm_cache *c, int dfd, uint64_t dino)
{
	struct list_ctx l = { .c = c, .dfd = dfd, .dino = dino, .rel = "", .marks = 1 };
	int r;

	l.mono0 = pohm_sys_mono_ns();
	l.real0 = pohm_sys_real_ns();
	r = list_read(&l);
	if (!r)
		r = list_prefetch(&l);
	list_free(&l);
	return r;
}

static int list_dir(struct pohm_cache *c, int dfd, uint64_t dino, const char *rel)
{
	struct list_ctx l = { .c = c, .dfd = dfd, .dino = dino, .rel = rel };
	size_t i, made = 0;
	int r;

	if (cache_dir_complete(c, dino))
		return 0;	/* listed (or made here) within attr_timeout */
	/* As ensure_entry: names below rel a handler removed or renamed, in
	 * the queue still, must not come back from the listing. */
	if (c->absent_fn)
		c->absent_fn(c, rel);
	l.mono0 = pohm_sys_mono_ns();
	l.real0 = pohm_sys_real_ns();
	r = list_read(&l);
	if (r && cache_offline(c)) {
		/* Offline: the local entries, as last listed. */
		list_free(&l);
		return 0;
	}
	if (!r) {
		if (l.n)	/* an empty listing has no array (qsort wants one) */
			qsort(l.v, l.n, sizeof(*l.v), ent_cmp);
		r = list_sweep(&l);
	}
	if (!r && list_prefetch(&l))
		pohm_debug("%s: reading the listing's inodes together failed: one by one", rel);
	for (i = 0; !r && i < l.n; i++) {
		made += l.v[i].in != NULL;
		r = list_one(&l, &l.v[i]);
	}
	/* Complete as of the listing's start (another host's create after it
	 * shows when that is attr_timeout old); a listing that failed or was
	 * cut short (r), or left a name missing here, is not. */
	if (!r && !l.partial)
		cache_mark_listed(c, dino, l.mono0, l.real0);
	else
		cache_dir_incomplete(c, dino);
	list_free(&l);
	/*
	 * The stubs are validated as of the listing's start: when making
	 * them took half of attr_timeout (hundreds on a loaded machine),
	 * they would expire before the caller's lstat of each came, and each
	 * would wait for its own round trip.  A second listing and batch
	 * checks them all again, as of its own start.
	 */
	if (!r && made && c->attr_timeout_ns &&
	    pohm_sys_mono_ns() - l.mono0 >= c->attr_timeout_ns / 2) {
		/* Their records are fresh still, but not for long: checked
		 * again whatever they say. */
		struct list_ctx again = { .c = c, .dfd = dfd, .dino = dino, .rel = rel,
					  .recheck = 1, .marks = 1 };

		again.mono0 = pohm_sys_mono_ns();
		again.real0 = pohm_sys_real_ns();
		if (!list_read(&again))
			list_prefetch(&again);	/* marks only: stubs are list_one's */
		list_free(&again);
	}
	return r;
}

/* ---------------------------------------------------------------- paths */

int pohm_cache_normalize(const char *path, char *out, size_t len)
{
	size_t n = 0;
	const char *p = path;

	while (*p) {
		const char *end;
		size_t cl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		cl = end ? (size_t)(end - p) : strlen(p);
		if (cl == 1 && p[0] == '.') {
			/* skip */
		} else if (cl == 2 && p[0] == '.' && p[1] == '.') {
			if (!n)
				return -EXDEV;
			while (n && out[n - 1] != '/')
				n--;
			if (n)
				n--;	/* the slash */
		} else {
			if (n + !!n + cl + 1 > len)
				return -ENAMETOOLONG;
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, cl);
			n += cl;
		}
		p += cl;
	}
	if (!len)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}
