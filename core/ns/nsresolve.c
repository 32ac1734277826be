/*
 * nsresolve.c — a path to an inode, following symlinks (pohm_ns_resolve),
 * by pohm_ns_lookup of each component.  Above nsops.c.  (Moved out of ns.c
 * in session 13, issue 20.)
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ns_int.h"
#include "sys.h"

/* ---------------------------------------------------------------- resolve */

/*
 * pohm_ns_resolve's buffers, on the heap: a host thread's stack may be
 * small.  buf and rest hold cap bytes each, a path (and a link's
 * continuation) of up to cap / 2 - 1: 8 KiB for the usual path, twice
 * POHM_REL_CAP for one of PATH_MAX bytes or more (issue 19 item 10).
 */
struct resolve_work {
	uint64_t stack[256];
	size_t cap;
	char *buf, *rest;
	char mem[];
};

static int resolve_in(struct pohm_ns *ns, const char *path, int follow, uint64_t *ino,
		      struct resolve_work *w)
{
	char *buf = w->buf, name[POHM_NAME_MAX + 1];
	uint64_t cur = POHM_ROOT_INO, *stack = w->stack;
	unsigned depth = 0, links = 0;
	const char *p;
	int r;

	if (strlen(path) >= w->cap / 2)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	p = buf;
	for (;;) {
		const char *end;
		size_t n;
		uint64_t next;
		uint8_t type;
		struct pohm_inode in;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n > POHM_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (!depth)
				return -EXDEV;	/* leaves the fsid */
			cur = stack[--depth];
			continue;
		}
		r = pohm_ns_lookup(ns, cur, name, &next, &type);
		if (r)
			return r;
		if (type == DT_LNK && (*p || follow)) {
			char *rest = w->rest;

			if (++links > 40)
				return -ELOOP;
			r = ns_inode_get(ns, next, &in, NULL, 0);
			if (r)
				return r;
			if (!in.target) {
				pohm_inode_clear(&in);
				return -EIO;
			}
			if (strlen(in.target) + strlen(p) + 2 > w->cap / 2) {
				pohm_inode_clear(&in);
				return -ENAMETOOLONG;
			}
			snprintf(rest, w->cap, "%s%s%s", in.target, *p ? "/" : "", p);
			if (in.target[0] == '/') {
				pohm_inode_clear(&in);
				return -EXDEV;	/* absolute targets are resolved by the caller */
			}
			pohm_inode_clear(&in);
			strcpy(buf, rest);
			p = buf;
			continue;
		}
		if (*p && type != DT_DIR && type != DT_UNKNOWN)
			return -ENOTDIR;
		if (depth == sizeof(w->stack) / sizeof(w->stack[0]))
			return -ENAMETOOLONG;
		stack[depth++] = cur;
		cur = next;
	}
	*ino = cur;
	return 0;
}

int pohm_ns_resolve(struct pohm_ns *ns, const char *path, int follow, uint64_t *ino)
{
	size_t cap = strnlen(path, 4096) < 4096 ? 8192 : 2 * (size_t)POHM_REL_CAP;
	struct resolve_work *w = malloc(sizeof(*w) + 2 * cap);
	int r;

	if (!w)
		return -ENOMEM;
	w->cap = cap;
	w->buf = w->mem;
	w->rest = w->mem + cap;
	r = resolve_in(ns, path, follow, ino, w);
	free(w);
	return r;
}
