/*
 * cache.c — the commands about the prefix's cache: status's cache part,
 * `sync`, `stats` and `cache clean`.
 *
 * The prefix and cache_dir come from the same configuration as the library
 * (prefix=, cache_dir= or its default).  status, stats and cache clean read
 * the journal and the local files only (core/cachetool), so they work while
 * the cluster is down and never create a cache; sync opens the prefix as the
 * library does (core/mount) and pushes.
 *
 * Sections: helpers · status · stats · sync · cache clean.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "sys.h"
#include "cli.h"
#include "store.h"
#include "mount.h"
#include "ns.h"
#include "progress.h"

#define LIST_SHOW 20	/* names shown in text output; JSON lists up to LIST_MAX */
#define LIST_MAX 10000

/* ---------------------------------------------------------------- helpers */

static const char *human(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)b);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Local time of a realtime ns stamp, "YYYY-MM-DD HH:MM:SS". */
static const char *when(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	if (!ns || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "never");
	return buf;
}

/* prefix and cache_dir of the configuration; 0, or 2 after a message. */
static int cache_paths(struct cli *cli, const char *cmd, const char **prefix, char *cache_dir,
		       size_t len)
{
	*prefix = pohm_config_raw(&cli->cfg, "prefix");
	if (!*prefix) {
		fprintf(stderr, "pohmelfs: %s: no prefix configured: set POHMELFS_PREFIX=/absolute/dir "
			"or prefix= in the configuration file\n", cmd);
		return 2;
	}
	if (pohm_mount_cache_dir(&cli->cfg, cache_dir, len)) {
		fprintf(stderr, "pohmelfs: %s: cache_dir: cannot derive it from prefix=%s "
			"(set cache_dir=, XDG_STATE_HOME or HOME)\n", cmd, *prefix);
		return 2;
	}
	return 0;
}

/* A growing list of names (and their inode and size). */
struct item {
	uint64_t ino, size;
	char *name;
};

struct list {
	struct item *v;
	size_t n, cap;
	uint64_t total;		/* items offered, kept or not */
};

static void list_add(struct list *l, uint64_t ino, uint64_t size, const char *name)
{
	l->total++;
	if (l->n >= LIST_MAX)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct item *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name)
		return;
	l->v[l->n].ino = ino;
	l->v[l->n].size = size;
	l->n++;
}

static void list_free(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void list_json(const struct list *l)
{
	size_t i;

	putchar('[');
	for (i = 0; i < l->n; i++) {
		if (i)
			putchar(',');
		cli_json_str(stdout, l->v[i].name);
	}
	putchar(']');
}

/* Text: up to LIST_SHOW names, indented, then how many more. */
static void list_text(const struct list *l, const char *prefix)
{
	size_t i;

	for (i = 0; i < l->n && i < LIST_SHOW; i++)
		printf("%s%s\n", prefix, l->v[i].name);
	if (l->total > i)
		printf("%s... and %llu more\n", prefix, (unsigned long long)(l->total - i));
}

struct collect {
	struct list dirty, changed, conflicted;
};

static int collect_one(void *arg, const struct pohm_jrec *r, enum pohm_ct_state st,
		       const struct stat *lst)
{
	struct collect *c = arg;

	if (st == POHM_CT_DIRTY)
		list_add(&c->dirty, r->ino, (uint64_t)lst->st_size, r->hint);
	else if (st == POHM_CT_STUB_CHANGED)
		list_add(&c->changed, r->ino, (uint64_t)lst->st_size, r->hint);
	if (r->flags & POHM_J_CONFLICT)
		list_add(&c->conflicted, r->ino, r->size, r->hint);
	return 0;
}

static void collect_free(struct collect *c)
{
	list_free(&c->dirty);
	list_free(&c->changed);
	list_free(&c->conflicted);
}

/* The conflict copies in the storage: /.pohmelfs-conflicts/HOST/NAME. */
struct conflict_walk {
	struct list *out;
	const char *host;
};

static int conflict_entry(void *arg, const char *name, uint64_t ino, uint8_t type)
{
	struct conflict_walk *w = arg;
	char path[1024];

	snprintf(path, sizeof(path), "/.pohmelfs-conflicts/%s%s%s", w->host ? w->host : name,
		 w->host ? "/" : "", w->host ? name : "");
	list_add(w->out, ino, 0, path);
	return 0;
}

static int list_conflicts(struct pohm_client *client, const char *fsid, struct list *out)
{
	struct pohm_ns_opts o = { .fsid = fsid };
	struct conflict_walk w = { NULL, NULL };
	struct list hosts = { NULL, 0, 0, 0 };
	struct pohm_ns *ns = NULL;
	struct pohm_kv kv;
	uint64_t top;
	size_t i;
	int r;

	pohm_kvio_init(&kv, client);
	r = pohm_ns_open(&ns, &kv, &o);
	if (r)
		return r;
	r = pohm_ns_resolve(ns, ".pohmelfs-conflicts", 1, &top);
	if (r == -ENOENT) {
		r = 0;
		goto out;
	}
	if (r)
		goto out;
	/* Hosts first, then each host's copies (no listing inside a listing). */
	w.out = &hosts;
	r = pohm_ns_readdir(ns, top, conflict_entry, &w);
	w.out = out;
	for (i = 0; !r && i < hosts.n; i++) {
		w.host = hosts.v[i].name + strlen("/.pohmelfs-conflicts/");
		r = pohm_ns_readdir(ns, hosts.v[i].ino, conflict_entry, &w);
		if (r == -ENOTDIR)
			r = 0;
	}
out:
	list_free(&hosts);
	pohm_ns_close(ns);
	return r;
}

/* ---------------------------------------------------------------- status */

void status_cache(struct cli *cli)
{
	struct collect col;
	struct list copies = { NULL, 0, 0, 0 };
	struct pohm_ct_summary s;
	struct pohm_ct t;
	char cache_dir[4096], err[1024], a[32], b[32], c[32], tm[32];
	const char *prefix = pohm_config_raw(&cli->cfg, "prefix");
	int r, pid, listed = 0;

	if (!prefix) {
		if (cli->json)
			printf(",\"cache\":null");
		return;
	}
	if (pohm_mount_cache_dir(&cli->cfg, cache_dir, sizeof(cache_dir)))
		snprintf(cache_dir, sizeof(cache_dir), "(unknown: set cache_dir= or HOME)");
	r = pohm_ct_open(&t, prefix, cache_dir, err, sizeof(err));
	if (r) {
		if (cli->json) {
			printf(",\"cache\":{\"prefix\":");
			cli_json_str(stdout, prefix);
			printf(",\"cache_dir\":");
			cli_json_str(stdout, cache_dir);
			printf(",\"exists\":false,\"error\":");
			cli_json_str(stdout, err);
			printf("}");
		} else {
			printf("cache (prefix %s):\n  none: %s\n", prefix, err);
		}
		return;
	}
	memset(&col, 0, sizeof(col));
	r = pohm_ct_scan(&t, &s, collect_one, &col);
	if (r)
		fprintf(stderr, "pohmelfs: status: journal in %s: %s\n", cache_dir, strerror(-r));
	if (cli->client && (!t.fsid[0] || !strcmp(t.fsid, cli->cfg.fsid)))
		listed = !list_conflicts(cli->client, cli->cfg.fsid, &copies);
	pid = pohm_cache_daemon_pid(cache_dir);

	if (cli->json) {
		printf(",\"cache\":{\"prefix\":");
		cli_json_str(stdout, prefix);
		printf(",\"cache_dir\":");
		cli_json_str(stdout, cache_dir);
		printf(",\"exists\":true,\"fsid\":");
		cli_json_str(stdout, t.fsid);
		printf(",\"journal_records\":%llu,\"cache_dir_bytes\":%llu,\"cached_files\":%llu,"
		       "\"cached_bytes\":%llu,\"cached_disk_bytes\":%llu,\"stubs\":%llu,"
		       "\"dirty\":%llu,\"dirty_bytes\":%llu,\"dirty_files\":",
		       (unsigned long long)s.records, (unsigned long long)s.state_disk,
		       (unsigned long long)(s.clean + s.dirty), (unsigned long long)s.cached_bytes,
		       (unsigned long long)s.cached_disk, (unsigned long long)s.stubs,
		       (unsigned long long)s.dirty, (unsigned long long)s.dirty_bytes);
		list_json(&col.dirty);
		printf(",\"stubs_changed\":%llu,\"stubs_changed_files\":",
		       (unsigned long long)s.stubs_changed);
		list_json(&col.changed);
		printf(",\"conflicts\":%llu,\"conflict_files\":", (unsigned long long)s.conflicts);
		list_json(&col.conflicted);
		printf(",\"conflict_copies\":");
		if (listed)
			list_json(&copies);
		else
			printf("null");
		printf(",\"last_fetch_or_push\":");
		if (s.last_ns)
			printf("%.3f", (double)s.last_ns / 1e9);
		else
			printf("null");
		printf(",\"pohmelfsd\":{\"running\":%s,\"pid\":%d}}", pid ? "true" : "false", pid);
		goto out;
	}
	printf("cache (prefix %s):\n", prefix);
	printf("  cache_dir   %s%s%s%s\n", cache_dir, t.fsid[0] ? " (fsid " : "", t.fsid,
	       t.fsid[0] ? ")" : "");
	if (t.fsid[0] && strcmp(t.fsid, cli->cfg.fsid))
		printf("  WARNING     this cache is bound to fsid \"%s\" but fsid=%s is configured: "
		       "the prefix will be refused\n", t.fsid, cli->cfg.fsid);
	printf("  data        %llu %s cached (%s, %s on disk), %llu %s (%s in the storage only)\n",
	       (unsigned long long)(s.clean + s.dirty), plural(s.clean + s.dirty, "file", "files"),
	       human(s.cached_bytes, a, sizeof(a)), human(s.cached_disk, b, sizeof(b)),
	       (unsigned long long)s.stubs, plural(s.stubs, "stub", "stubs"),
	       human(s.stub_bytes, c, sizeof(c)));
	printf("  journal     %llu %s, %s in cache_dir\n", (unsigned long long)s.records,
	       plural(s.records, "record", "records"), human(s.state_disk, a, sizeof(a)));
	if (s.dirty) {
		printf("  dirty       %llu %s, %s, not pushed yet (pohmelfs sync pushes them):\n",
		       (unsigned long long)s.dirty, plural(s.dirty, "file", "files"),
		       human(s.dirty_bytes, a, sizeof(a)));
		list_text(&col.dirty, "                ");
	} else {
		printf("  dirty       none\n");
	}
	if (s.stubs_changed) {
		printf("  changed     %llu %s written without the shim (each becomes a conflict "
		       "copy when next opened through it):\n", (unsigned long long)s.stubs_changed,
		       plural(s.stubs_changed, "stub", "stubs"));
		list_text(&col.changed, "                ");
	}
	if (s.conflicts || (listed && copies.total)) {
		printf("  conflicts   %llu %s here had a conflict", (unsigned long long)s.conflicts,
		       plural(s.conflicts, "file", "files"));
		if (listed)
			printf("; %llu %s in the storage:\n", (unsigned long long)copies.total,
			       plural(copies.total, "copy", "copies"));
		else
			printf(" (copies not listed: the storage did not answer)\n");
		if (listed)
			list_text(&copies, "                ");
		else
			list_text(&col.conflicted, "                ");
	} else {
		printf("  conflicts   none\n");
	}
	printf("  last fetch or push  %s\n", when(s.last_ns, tm, sizeof(tm)));
	if (pid)
		printf("  pohmelfsd   running (pid %d)\n", pid);
	else
		printf("  pohmelfsd   not running\n");
out:
	collect_free(&col);
	list_free(&copies);
	pohm_ct_close(&t);
}

/* ---------------------------------------------------------------- stats */

int cmd_stats(struct cli *cli)
{
	struct pohm_ct_summary s;
	struct pohm_ct t;
	struct statvfs vfs;
	char cache_dir[4096], err[1024], a[32], b[32], tm[32];
	const char *prefix, *size, *minfree;
	uint64_t fs_free = 0, fs_size = 0;
	struct pohm_stats ctr;
	unsigned i;
	int r, pid, have;

	r = cli_load(cli);
	if (r)
		return r;
	r = cache_paths(cli, "stats", &prefix, cache_dir, sizeof(cache_dir));
	if (r)
		return r;
	r = pohm_stats_load(cache_dir, &ctr);
	if (r)
		fprintf(stderr, "pohmelfs: stats: %s/stats: %s (counters shown as 0)\n", cache_dir,
			strerror(-r));
	size = pohm_config_raw(&cli->cfg, "cache_size");
	minfree = pohm_config_raw(&cli->cfg, "cache_min_free");
	if (!statvfs(prefix, &vfs)) {
		fs_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		fs_size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	}
	r = pohm_ct_open(&t, prefix, cache_dir, err, sizeof(err));
	have = !r;
	if (r && r != -ENOENT) {
		fprintf(stderr, "pohmelfs: stats: %s\n", err);
		return 1;
	}
	memset(&s, 0, sizeof(s));
	if (have) {
		r = pohm_ct_scan(&t, &s, NULL, NULL);
		if (r) {
			fprintf(stderr, "pohmelfs: stats: journal in %s: %s\n", cache_dir, strerror(-r));
			pohm_ct_close(&t);
			return 1;
		}
	}
	pid = pohm_cache_daemon_pid(cache_dir);
	if (cli->json) {
		printf("{\"prefix\":");
		cli_json_str(stdout, prefix);
		printf(",\"cache_dir\":");
		cli_json_str(stdout, cache_dir);
		printf(",\"exists\":%s,\"fsid\":", have ? "true" : "false");
		cli_json_str(stdout, have ? t.fsid : "");
		printf(",\"journal_records\":%llu,\"directories\":%llu,\"files\":%llu,\"other\":%llu,"
		       "\"cached_files\":%llu,\"clean\":%llu,\"dirty\":%llu,\"stubs\":%llu,"
		       "\"stubs_changed\":%llu,\"missing\":%llu,\"conflicts\":%llu,"
		       "\"cached_bytes\":%llu,\"cached_disk_bytes\":%llu,\"dirty_bytes\":%llu,"
		       "\"stub_bytes\":%llu,\"cache_dir_bytes\":%llu,",
		       (unsigned long long)s.records, (unsigned long long)s.dirs,
		       (unsigned long long)s.files, (unsigned long long)s.others,
		       (unsigned long long)(s.clean + s.dirty), (unsigned long long)s.clean,
		       (unsigned long long)s.dirty, (unsigned long long)s.stubs,
		       (unsigned long long)s.stubs_changed, (unsigned long long)s.missing,
		       (unsigned long long)s.conflicts, (unsigned long long)s.cached_bytes,
		       (unsigned long long)s.cached_disk, (unsigned long long)s.dirty_bytes,
		       (unsigned long long)s.stub_bytes, (unsigned long long)s.state_disk);
		printf("\"cache_size\":");
		cli_json_str(stdout, size ? size : "");
		printf(",\"cache_min_free\":");
		cli_json_str(stdout, minfree ? minfree : "");
		printf(",\"fs_free_bytes\":%llu,\"fs_size_bytes\":%llu,\"last_fetch_or_push\":",
		       (unsigned long long)fs_free, (unsigned long long)fs_size);
		if (s.last_ns)
			printf("%.3f", (double)s.last_ns / 1e9);
		else
			printf("null");
		printf(",\"pohmelfsd\":{\"running\":%s,\"pid\":%d},\"counters\":{",
		       pid ? "true" : "false", pid);
		for (i = 0; i < POHM_ST_COUNT; i++)
			printf("%s\"%s\":%llu", i ? "," : "", pohm_stat_name((enum pohm_stat)i),
			       (unsigned long long)ctr.v[i]);
		printf("}}\n");
	} else {
		printf("prefix              %s\n", prefix);
		printf("cache_dir           %s%s\n", cache_dir, have ? "" : " (no cache yet)");
		printf("journal records     %llu (%llu %s, %llu regular %s, %llu other)\n",
		       (unsigned long long)s.records, (unsigned long long)s.dirs,
		       plural(s.dirs, "directory", "directories"), (unsigned long long)s.files,
		       plural(s.files, "file", "files"), (unsigned long long)s.others);
		printf("cached files        %llu (%s, %s on disk)\n",
		       (unsigned long long)(s.clean + s.dirty), human(s.cached_bytes, a, sizeof(a)),
		       human(s.cached_disk, b, sizeof(b)));
		printf("  clean             %llu\n", (unsigned long long)s.clean);
		printf("  dirty             %llu (%s)\n", (unsigned long long)s.dirty,
		       human(s.dirty_bytes, a, sizeof(a)));
		printf("stubs               %llu (%s in the storage only)\n",
		       (unsigned long long)s.stubs, human(s.stub_bytes, a, sizeof(a)));
		printf("stubs changed       %llu (written without the shim)\n",
		       (unsigned long long)s.stubs_changed);
		printf("missing             %llu (journal names a file that is gone)\n",
		       (unsigned long long)s.missing);
		printf("conflicts           %llu\n", (unsigned long long)s.conflicts);
		printf("cache_dir on disk   %s\n", human(s.state_disk, a, sizeof(a)));
		printf("cache_size          %s\n", size ? size : "(not set: no limit)");
		printf("cache_min_free      %s\n", minfree ? minfree : "(not set)");
		printf("free on prefix fs   %s of %s\n", human(fs_free, a, sizeof(a)),
		       human(fs_size, b, sizeof(b)));
		printf("last fetch or push  %s\n", when(s.last_ns, tm, sizeof(tm)));
		if (pid)
			printf("pohmelfsd           running (pid %d)\n", pid);
		else
			printf("pohmelfsd           not running\n");
		printf("counters (every process under the shim that has exited, since the cache "
		       "was made):\n");
		for (i = 0; i < POHM_ST_COUNT; i++)
			printf("  %-18s %llu\n", pohm_stat_name((enum pohm_stat)i),
			       (unsigned long long)ctr.v[i]);
	}
	if (have)
		pohm_ct_close(&t);
	return 0;
}

/* ---------------------------------------------------------------- sync */

int cmd_sync(struct cli *cli)
{
	struct pohm_cache_stats cs;
	struct pohm_ct_summary s;
	struct collect col;
	struct pohm_mount m;
	struct pohm_ct t;
	struct list failed = { NULL, 0, 0, 0 };
	char cache_dir[4096], err[1024], a[32];
	const char *prefix;
	uint64_t pushed = 0, unchanged = 0, conflicts = 0, t0, bytes = 0, done_bytes = 0;
	struct progress pg;
	int r, opened = 0;
	size_t i;

	r = cli_load(cli);
	if (r)
		return r;
	r = cache_paths(cli, "sync", &prefix, cache_dir, sizeof(cache_dir));
	if (r)
		return r;
	memset(&col, 0, sizeof(col));
	err[0] = '\0';
	r = pohm_mount_open(&m, &cli->cfg, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pohmelfs: sync: %s\n", err[0] ? err : strerror(-r));
		return r == -EINVAL ? 2 : 1;
	}
	opened = 1;
	t0 = pohm_sys_mono_ns();
	r = pohm_ct_open(&t, m.prefix, m.cache_dir, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pohmelfs: sync: %s\n", err);
		r = 1;
		goto out;
	}
	r = pohm_ct_scan(&t, &s, collect_one, &col);
	if (r) {
		fprintf(stderr, "pohmelfs: sync: journal in %s: %s\n", m.cache_dir, strerror(-r));
		pohm_ct_close(&t);
		r = 1;
		goto out;
	}
	for (i = 0; i < col.dirty.n; i++)
		bytes += col.dirty.v[i].size;
	progress_start(&pg, cli->json || !col.dirty.n, "sync", "files", col.dirty.n, bytes);
	for (i = 0; i < col.dirty.n; i++) {
		struct item *it = &col.dirty.v[i];
		struct pohm_jrec rec;

		progress_update(&pg, i, done_bytes);
		r = pohm_cache_push_path(m.cache, it->name);
		done_bytes += it->size;
		if (r < 0) {
			progress_clear(&pg);
			fprintf(stderr, "pohmelfs: sync: %s: %s\n", it->name, strerror(-r));
			list_add(&failed, it->ino, 0, it->name);
			continue;
		}
		if (r > 0) {
			pushed++;
		} else if (!pohm_journal_get(&t.j, it->ino, &rec)) {
			/* The storage moved on: ours became a conflict copy (and a stub here). */
			if (rec.flags & POHM_J_CONFLICT)
				conflicts++;
			else
				unchanged++;
			pohm_jrec_clear(&rec);
		} else {
			unchanged++;
		}
	}
	progress_update(&pg, col.dirty.n, done_bytes);
	progress_end(&pg);
	/* A last sweep, as pohmelfsd does: names made without the shim, then files
	 * that became dirty while we ran. */
	r = pohm_cache_reconcile(m.cache);
	if (r > 0)
		pushed += (uint64_t)r;
	else if (r < 0)
		fprintf(stderr, "pohmelfs: sync: adopting names made without the shim: %s\n",
			strerror(-r));
	r = pohm_cache_sync_all(m.cache);
	if (r > 0)
		pushed += (uint64_t)r;
	else if (r < 0)
		fprintf(stderr, "pohmelfs: sync: %s\n", strerror(-r));
	pohm_cache_get_stats(m.cache, &cs);
	pohm_ct_close(&t);
	if (cli->json) {
		printf("{\"prefix\":");
		cli_json_str(stdout, m.prefix);
		printf(",\"pushed\":%llu,\"pushed_bytes\":%llu,\"pushed_chunks\":%llu,"
		       "\"unchanged\":%llu,\"conflicts\":%llu,\"failed\":%llu,\"failed_files\":",
		       (unsigned long long)pushed, (unsigned long long)cs.pushed_bytes,
		       (unsigned long long)cs.pushed_chunks, (unsigned long long)unchanged,
		       (unsigned long long)conflicts, (unsigned long long)failed.total);
		list_json(&failed);
		printf(",\"stubs_changed\":%llu,\"seconds\":%.3f}\n",
		       (unsigned long long)s.stubs_changed, (double)(pohm_sys_mono_ns() - t0) / 1e9);
	} else {
		printf("sync: pushed %llu %s (%s in %llu %s)", (unsigned long long)pushed,
		       plural(pushed, "file", "files"), human(cs.pushed_bytes, a, sizeof(a)),
		       (unsigned long long)cs.pushed_chunks, plural(cs.pushed_chunks, "chunk", "chunks"));
		if (unchanged)
			printf(", %llu unchanged", (unsigned long long)unchanged);
		if (conflicts)
			printf(", %llu kept as conflict %s, not pushed (changed on another host too, or possibly torn by an unclean shutdown)",
			       (unsigned long long)conflicts, plural(conflicts, "copy", "copies"));
		if (failed.total)
			printf(", %llu FAILED", (unsigned long long)failed.total);
		printf(" in %.1f s\n", (double)(pohm_sys_mono_ns() - t0) / 1e9);
		if (s.stubs_changed)
			printf("sync: %llu %s written without the shim %s not pushed: each becomes a "
			       "conflict copy when next opened through the shim\n",
			       (unsigned long long)s.stubs_changed,
			       plural(s.stubs_changed, "stub", "stubs"),
			       plural(s.stubs_changed, "is", "are"));
	}
	r = failed.total || r < 0 ? 1 : 0;
out:
	collect_free(&col);
	list_free(&failed);
	if (opened)
		pohm_mount_close(&m);
	return r;
}

/* ---------------------------------------------------------------- cache clean */

struct clean_progress {
	struct progress pg;
	uint64_t done, bytes;
};

static void clean_seen(void *arg, const struct pohm_jrec *r, enum pohm_ct_verdict v,
		       uint64_t bytes)
{
	struct clean_progress *cp = arg;

	cp->done++;
	cp->bytes += bytes;
	if (v == POHM_CT_FAILED)
		progress_clear(&cp->pg);	/* its message follows on stderr */
	progress_update(&cp->pg, cp->done, cp->bytes);
}

int cmd_cache_clean(struct cli *cli)
{
	struct clean_progress cp;
	struct pohm_ct_summary s;
	struct pohm_ct_clean res;
	struct pohm_ct t;
	char cache_dir[4096], err[1024], a[32];
	const char *prefix;
	int r;

	r = cli_load(cli);
	if (r)
		return r;
	r = cache_paths(cli, "cache clean", &prefix, cache_dir, sizeof(cache_dir));
	if (r)
		return r;
	memset(&res, 0, sizeof(res));
	r = pohm_ct_open(&t, prefix, cache_dir, err, sizeof(err));
	if (r && r != -ENOENT) {
		fprintf(stderr, "pohmelfs: cache clean: %s\n", err);
		return 1;
	}
	if (!r) {
		/* A lease break (someone opens a file while we replace it) signals SIGIO. */
		signal(SIGIO, SIG_IGN);
		memset(&cp, 0, sizeof(cp));
		/* The files that may be replaced: the fetched ones (a terminal only). */
		memset(&s, 0, sizeof(s));
		if (!cli->json && isatty(2) && pohm_ct_scan(&t, &s, NULL, NULL))
			memset(&s, 0, sizeof(s));
		progress_start(&cp.pg, cli->json, "cache clean", "files", s.clean + s.dirty, 0);
		r = pohm_ct_clean(&t, &res, clean_seen, &cp);
		progress_end(&cp.pg);
		pohm_ct_close(&t);
		if (r) {
			fprintf(stderr, "pohmelfs: cache clean: %s\n", strerror(-r));
			return 1;
		}
	}
	if (cli->json) {
		printf("{\"prefix\":");
		cli_json_str(stdout, prefix);
		printf(",\"stubbed\":%llu,\"freed_bytes\":%llu,\"kept_dirty\":%llu,\"kept_open\":%llu,"
		       "\"kept_linked\":%llu,\"failed\":%llu}\n", (unsigned long long)res.stubbed,
		       (unsigned long long)res.freed, (unsigned long long)res.dirty,
		       (unsigned long long)res.busy, (unsigned long long)res.linked,
		       (unsigned long long)res.failed);
	} else {
		printf("cache clean: %llu %s replaced by stubs, %s freed", (unsigned long long)res.stubbed,
		       plural(res.stubbed, "file", "files"), human(res.freed, a, sizeof(a)));
		if (res.dirty || res.busy || res.linked)
			printf("; kept %llu dirty, %llu open, %llu with several names",
			       (unsigned long long)res.dirty, (unsigned long long)res.busy,
			       (unsigned long long)res.linked);
		if (res.failed)
			printf("; %llu FAILED (see the messages above)", (unsigned long long)res.failed);
		printf("\n");
	}
	return res.failed ? 1 : 0;
}
