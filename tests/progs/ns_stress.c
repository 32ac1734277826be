/*
 * ns_stress — drive core/ns against a real cluster, from many processes.
 *
 *   ns_stress work ID FILES DIRS DIR   create FILES files and DIRS
 *                                      directories named wID-* in DIR (a path
 *                                      from the fsid root, made if missing),
 *                                      renaming every 5th and unlinking every
 *                                      5th+1; prints "names N" (what should exist)
 *   ns_stress check DIR EXPECTED [WORKERS FILES DIRS]
 *                                      list DIR: exactly EXPECTED entries, no
 *                                      duplicate, every name looks up to the
 *                                      listed inode, every inode alive with
 *                                      nlink ≥ its names; prints "ok" or problems
 *                                      (with WORKERS FILES DIRS: also each name
 *                                      that `work` 1..WORKERS left and is missing,
 *                                      and each listed name it did not leave)
 *   ns_stress mv FROM TO               rename (paths from the fsid root)
 *   ns_stress rmdir PATH | mkdir PATH | create PATH | resolve PATH
 *
 * Configured by POHMELFS_* like the library.  Exit 0 on success.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "io.h"
#include "kv.h"
#include "log.h"
#include "ns.h"

extern char **environ;

static struct pohm_ns *ns;

static int split(const char *path, uint64_t *dir, const char **name)
{
	char parent[4096];
	const char *slash = strrchr(path, '/');

	*name = slash ? slash + 1 : path;
	if (!slash) {
		*dir = POHM_ROOT_INO;
		return 0;
	}
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	return pohm_ns_resolve(ns, parent, 1, dir);
}

static int mkdir_p(const char *path, uint64_t *ino)
{
	char buf[4096], *p;
	uint64_t cur = POHM_ROOT_INO;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = strtok(buf, "/"); p; p = strtok(NULL, "/")) {
		int r = pohm_ns_mkdir(ns, cur, p, 0755, 0, 0, NULL);

		if (r && r != -EEXIST)
			return r;
		r = pohm_ns_lookup(ns, cur, p, &cur, NULL);
		if (r)
			return r;
	}
	*ino = cur;
	return 0;
}

static int work(int id, int files, int dirs, const char *dpath)
{
	char name[64], to[64];
	uint64_t dir;
	int i, r, names = 0, errors = 0, every = dirs ? files / dirs : 0;

	r = mkdir_p(dpath, &dir);
	if (r) {
		fprintf(stderr, "mkdir %s: %s\n", dpath, strerror(-r));
		return 1;
	}
	for (i = 0; i < files; i++) {
		snprintf(name, sizeof(name), "w%d-f%d", id, i);
		r = pohm_ns_create(ns, dir, name, 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL);
		if (r) {
			fprintf(stderr, "create %s: %s\n", name, strerror(-r));
			errors++;
			continue;
		}
		names++;
		if (i % 5 == 0) {
			snprintf(to, sizeof(to), "w%d-r%d", id, i);
			r = pohm_ns_rename(ns, dir, name, dir, to, 0);
			if (r) {
				fprintf(stderr, "rename %s: %s\n", name, strerror(-r));
				errors++;
			}
		} else if (i % 5 == 1) {
			r = pohm_ns_unlink(ns, dir, name);
			if (r) {
				fprintf(stderr, "unlink %s: %s\n", name, strerror(-r));
				errors++;
			} else {
				names--;
			}
		}
		if (every && i % every == 0) {
			snprintf(name, sizeof(name), "w%d-d%d", id, i);
			r = pohm_ns_mkdir(ns, dir, name, 0755, 0, 0, NULL);
			if (r) {
				fprintf(stderr, "mkdir %s: %s\n", name, strerror(-r));
				errors++;
			} else {
				names++;
			}
		}
	}
	printf("names %d errors %d\n", names, errors);
	return errors ? 1 : 0;
}

struct listing {
	char **names;
	uint64_t *inos;
	size_t n, cap;
};

static int collect(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	struct listing *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->names = realloc(l->names, l->cap * sizeof(*l->names));
		l->inos = realloc(l->inos, l->cap * sizeof(*l->inos));
	}
	l->names[l->n] = strdup(name);
	l->inos[l->n++] = ino;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether `work ID FILES DIRS` leaves name: the same rules as work(). */
static int work_leaves(const char *name, int workers, int files, int dirs)
{
	int id, i, every = dirs ? files / dirs : 0, n = 0;
	char kind;

	if (sscanf(name, "w%d-%c%d%n", &id, &kind, &i, &n) != 3 || name[n] || id < 1 ||
	    id > workers || i < 0 || i >= files)
		return 0;
	if (kind == 'f')
		return i % 5 != 0 && i % 5 != 1;
	if (kind == 'r')
		return i % 5 == 0;
	return kind == 'd' && every && i % every == 0;
}

/* Print each name the workers left that the (sorted) listing lacks, and each it should not have. */
static int compare_names(char **names, size_t n, int workers, int files, int dirs)
{
	static const char kinds[] = "frd";
	char want[64];
	int id, i, k, bad = 0;
	size_t j;

	for (j = 0; j < n; j++)
		if (!work_leaves(names[j], workers, files, dirs)) {
			printf("unexpected: %s\n", names[j]);
			bad++;
		}
	for (id = 1; id <= workers; id++)
		for (i = 0; i < files; i++)
			for (k = 0; kinds[k]; k++) {
				snprintf(want, sizeof(want), "w%d-%c%d", id, kinds[k], i);
				if (!work_leaves(want, workers, files, dirs))
					continue;
				if (!bsearch(&(const char *){ want }, names, n, sizeof(*names), cmp_names)) {
					printf("missing: %s\n", want);
					bad++;
				}
			}
	return bad;
}

static int check(const char *dpath, long expected, int workers, int files, int dirs)
{
	struct listing l = { 0 };
	uint64_t dir;
	size_t i;
	int r, bad = 0;

	r = pohm_ns_resolve(ns, dpath, 1, &dir);
	if (!r)
		r = pohm_ns_readdir(ns, dir, collect, &l);
	if (r) {
		fprintf(stderr, "list %s: %s\n", dpath, strerror(-r));
		return 1;
	}
	if (expected >= 0 && (long)l.n != expected) {
		printf("listing has %zu entries, expected %ld\n", l.n, expected);
		bad++;
	}
	for (i = 0; i < l.n; i++) {
		struct pohm_inode in;
		uint64_t ino;
		int gr;

		if (pohm_ns_lookup(ns, dir, l.names[i], &ino, NULL) || ino != l.inos[i]) {
			printf("dangling: %s\n", l.names[i]);
			bad++;
		} else if ((gr = pohm_ns_getattr(ns, ino, &in))) {
			printf("orphan entry (its inode: %s): %s\n", strerror(-gr), l.names[i]);
			bad++;
		} else {
			if (!in.nlink) {
				printf("nlink 0: %s\n", l.names[i]);
				bad++;
			}
			pohm_inode_clear(&in);
		}
	}
	qsort(l.names, l.n, sizeof(*l.names), cmp_names);
	for (i = 1; i < l.n; i++)
		if (!strcmp(l.names[i], l.names[i - 1])) {
			printf("duplicate: %s\n", l.names[i]);
			bad++;
		}
	if (workers > 0)
		bad += compare_names(l.names, l.n, workers, files, dirs);
	if (!bad)
		printf("ok %zu entries\n", l.n);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct pohm_ns_opts o = { 0 };
	struct pohm_config cfg;
	struct pohm_client *client;
	struct pohm_kv kv;
	char err[1024];
	const char *name;
	uint64_t dir, ino;
	int r;

	if (argc < 3) {
		fprintf(stderr, "usage: ns_stress work|check|mv|mkdir|rmdir|create|resolve ...\n");
		return 2;
	}
	if (pohm_config_load(&cfg, environ, err, sizeof(err)) ||
	    pohm_config_check_client(&cfg, err, sizeof(err))) {
		fprintf(stderr, "ns_stress: %s\n", err);
		return 2;
	}
	pohm_log_setup((enum pohm_log_level)cfg.log_level, -1);
	if (pohm_client_open(&client, &cfg, err, sizeof(err))) {
		fprintf(stderr, "ns_stress: %s\n", err);
		return 2;
	}
	pohm_kvio_init(&kv, client);
	o.fsid = cfg.fsid;
	o.bucket_max = getenv("NS_BUCKET_MAX") ? (unsigned)atoi(getenv("NS_BUCKET_MAX")) : 0;
	o.intent_timeout_ms = getenv("NS_INTENT_MS") ? strtoull(getenv("NS_INTENT_MS"), NULL, 10) : 0;
	r = pohm_ns_open(&ns, &kv, &o);
	if (r) {
		fprintf(stderr, "ns_stress: open: %s\n", strerror(-r));
		return 2;
	}
	if (!strcmp(argv[1], "work") && argc == 6)
		r = work(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argv[5]);
	else if (!strcmp(argv[1], "check") && argc == 4)
		r = check(argv[2], atol(argv[3]), 0, 0, 0);
	else if (!strcmp(argv[1], "check") && argc == 7)
		r = check(argv[2], atol(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	else if (!strcmp(argv[1], "mv") && argc == 4) {
		uint64_t d2;
		const char *n2;

		r = split(argv[2], &dir, &name) || split(argv[3], &d2, &n2);
		if (!r)
			r = pohm_ns_rename(ns, dir, name, d2, n2, 0);
		printf("%s\n", r ? strerror(-r) : "ok");
		r = r != 0;
	} else if (argc == 3 && (!strcmp(argv[1], "mkdir") || !strcmp(argv[1], "rmdir") ||
				 !strcmp(argv[1], "create"))) {
		r = split(argv[2], &dir, &name);
		if (!r)
			r = argv[1][0] == 'm' ? pohm_ns_mkdir(ns, dir, name, 0755, 0, 0, NULL) :
			    argv[1][0] == 'r' ? pohm_ns_rmdir(ns, dir, name) :
			    pohm_ns_create(ns, dir, name, 0644, 0, 0, 0, POHM_CREATE_EXCL, NULL);
		printf("%s\n", r ? strerror(-r) : "ok");
		r = r != 0;
	} else if (!strcmp(argv[1], "resolve") && argc == 3) {
		r = pohm_ns_resolve(ns, argv[2], 0, &ino);
		if (r)
			printf("%s\n", strerror(-r));
		else
			printf("%llx\n", (unsigned long long)ino);
		r = r != 0;
	} else {
		fprintf(stderr, "ns_stress: bad arguments\n");
		r = 2;
	}
	pohm_ns_close(ns);
	pohm_client_close(client);
	pohm_config_free(&cfg);
	return r;
}
