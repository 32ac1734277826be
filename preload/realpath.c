/*
 * realpath.c — realpath (+ fortified) and canonicalize_file_name for names
 * under the prefix, built on our own getcwd, readlink and faccessat (walk.h
 * says why glibc's cannot be used there).
 *
 * Behaviour is glibc 2.36's: a relative name starts from getcwd; each
 * component is tried with readlink (EINVAL: not a link); "." is skipped,
 * ".." drops the last resolved component; at most 40 links are followed
 * (then ELOOP); a component followed by "/" at the end, "/." at the end or
 * "/.." must be a directory (checked with faccessat, so ENOTDIR); with a caller's buffer, a result
 * longer than PATH_MAX fails with ENAMETOOLONG and on error the part
 * resolved so far is left in the buffer; without one the result comes from
 * the host's malloc.
 *
 * Names outside the prefix go to glibc; when glibc fails there with ENOENT
 * the name is tried once more here, because a symlink outside the prefix
 * may lead into it (the kernel then meets an entry not fetched yet); not
 * when the kernel's own walk, following no symlink, ends at the missing
 * name.
 */
#include "shim.h"
#include "walk.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define LINKS_MAX	40	/* glibc's __eloop_threshold on Linux */

/* A growing string (our own allocator). */
struct str {
	char *s;
	size_t len, cap;
};

static int str_room(struct str *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;
	char *n;

	while (cap < b->len + more + 1)
		cap *= 2;
	if (cap == b->cap)
		return 0;
	if (!(n = realloc(b->s, cap)))
		return -1;
	b->s = n;
	b->cap = cap;
	return 0;
}

static int str_put(struct str *b, const char *s, size_t n)
{
	if (str_room(b, n) < 0)
		return -1;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

/* The cwd into b: 0, or -1 with errno. */
static int put_cwd(struct str *b)
{
	size_t cap = 256;

	for (;;) {
		if (str_room(b, cap) < 0)
			return -1;
		if (getcwd(b->s, cap + 1)) {
			b->len = strlen(b->s);
			return 0;
		}
		if (errno != ERANGE)
			return -1;
		cap *= 2;
	}
}

/*
 * True when what follows a component makes it a directory that must be
 * checked: a trailing "/", or "/." at the end, or "/.." anywhere next.
 */
static int needs_dir(const char *rest)
{
	while (*rest == '/') {
		while (*rest == '/')
			rest++;
		if (!*rest)
			return 1;
		if (*rest++ != '.')
			return 0;
		if (!*rest || (*rest == '.' && (!rest[1] || rest[1] == '/')))
			return 1;
	}
	return 0;
}

/* Is the resolved name b a directory we may reach?  (glibc asks faccessat of "b/".) */
static int is_dir(struct str *b)
{
	size_t len = b->len;
	int r;

	if (str_put(b, "/", 1) < 0)
		return 0;
	r = faccessat(AT_FDCWD, b->s, F_OK, AT_EACCESS) == 0;
	b->len = len;
	b->s[len] = '\0';
	return r;
}

/*
 * Resolve name into out (our memory).  0, or -errno; out holds what was
 * resolved so far either way.
 */
static int resolve(const char *name, struct str *out)
{
	struct str todo = { 0 };	/* the name still to walk, after a link was expanded */
	char link[PATH_MAX + 1];
	const char *start, *end;
	int links = 0, r = 0;
	size_t n, keep;
	ssize_t ln;

	if (name[0] != '/') {
		if (put_cwd(out) < 0)
			return -errno;
	} else if (str_put(out, "/", 1) < 0) {
		return -ENOMEM;
	}
	for (start = name; *start; start = end) {
		while (*start == '/')
			start++;
		end = start + strcspn(start, "/");
		n = (size_t)(end - start);
		if (!n)
			break;
		if (n == 1 && start[0] == '.')
			continue;
		if (n == 2 && start[0] == '.' && start[1] == '.') {
			while (out->len > 1 && out->s[out->len - 1] != '/')
				out->len--;
			if (out->len > 1)
				out->len--;
			out->s[out->len] = '\0';
			continue;
		}
		keep = out->len;
		if ((out->s[out->len - 1] != '/' && str_put(out, "/", 1) < 0) ||
		    str_put(out, start, n) < 0) {
			r = -ENOMEM;
			break;
		}
		ln = readlink(out->s, link, sizeof(link) - 1);
		if (ln < 0) {
			if (needs_dir(end) ? !is_dir(out) : errno != EINVAL) {
				r = -errno;
				break;
			}
			continue;
		}
		if (++links > LINKS_MAX) {
			r = -ELOOP;
			break;
		}
		link[ln] = '\0';
		{
			/* Walk "target + rest" next; the rest may live in todo itself. */
			struct str next = { 0 };

			if (str_put(&next, link, (size_t)ln) < 0 || str_put(&next, end, strlen(end)) < 0) {
				free(next.s);
				r = -ENOMEM;
				break;
			}
			free(todo.s);
			todo = next;
		}
		end = todo.s;
		if (link[0] == '/')
			out->len = 1;
		else
			out->len = keep;	/* back to the link's directory */
		out->s[out->len] = '\0';
	}
	if (!r && out->len > 1 && out->s[out->len - 1] == '/')
		out->s[--out->len] = '\0';
	free(todo.s);
	return r;
}

static char *realpath_ours(const char *name, char *resolved)
{
	struct str out = { 0 };
	char *ret = NULL;
	int r;

	if (!pohm_given(name)) {
		errno = EINVAL;
		return NULL;
	}
	if (!name[0]) {
		errno = ENOENT;
		return NULL;
	}
	r = resolve(name, &out);
	if (resolved) {
		if (out.s && out.len < PATH_MAX)
			memcpy(resolved, out.s, out.len + 1);
		else if (!r)
			r = -ENAMETOOLONG;
		ret = resolved;
	} else if (!r) {
		if ((ret = pohm_host_malloc(out.len + 1)))
			memcpy(ret, out.s, out.len + 1);
		else
			r = -ENOMEM;
	}
	free(out.s);
	if (r) {
		errno = -r;
		return NULL;
	}
	return ret;
}

/* 1 when the name is ours to resolve. */
static int ours(const char *path)
{
	struct pohm_path p;

	return pohm_claim_ro(AT_FDCWD, path, &p);
}

/*
 * glibc failed with ENOENT outside the prefix: try once more here (see the
 * file comment), unless the kernel meets no symlink on the way to the
 * missing name (one openat2 that follows none answers ENOENT too): then no
 * link leads into the prefix, and our walk would only repeat glibc's
 * readlink of every component (gcc's include search: half of cc1's extra
 * system calls, issue 23).  errno stays ENOENT.
 */
static int retry(const char *path)
{
	int fd;

	if (errno != ENOENT || !pohm_active())
		return 0;
	fd = pohm_sys_open_dir_nolinks(AT_FDCWD, path);
	if (fd >= 0)
		pohm_sys_close(fd);
	errno = ENOENT;
	return fd != -ENOENT;
}

POHM_EXPORT char *realpath(const char *path, char *resolved)
{
	char *r;

	if (ours(path))
		return realpath_ours(path, resolved);
	r = pohm_real.realpath(path, resolved);
	return r || !retry(path) ? r : realpath_ours(path, resolved);
}

POHM_EXPORT char *__realpath_chk(const char *path, char *resolved, size_t len)
{
	char *r;

	if (resolved && len < PATH_MAX)
		return pohm_real.__realpath_chk(path, resolved, len);	/* glibc's overflow report */
	if (ours(path))
		return realpath_ours(path, resolved);
	r = pohm_real.__realpath_chk(path, resolved, len);
	return r || !retry(path) ? r : realpath_ours(path, resolved);
}

POHM_EXPORT char *canonicalize_file_name(const char *path)
{
	char *r;

	if (ours(path))
		return realpath_ours(path, NULL);
	r = pohm_real.canonicalize_file_name(path);
	return r || !retry(path) ? r : realpath_ours(path, NULL);
}
