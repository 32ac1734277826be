/*
 * fsck.c — `pohmelfs fsck [--json] [-v] [--age=SECONDS]` and
 * `pohmelfs repair [--json] [-v] [--dry-run] [--age=SECONDS]` (core/admin/fsck.h).
 *
 * The report lists every issue (with -v also what is in progress and
 * left alone), then counts per class and a verdict.  Exit status, OR'ed
 * like fsck(8): 0 clean; 1 repairable issues found (fsck) or left (repair);
 * 2 the check could not be completed (a group or backend unreadable, bad
 * configuration, usage); 4 data lost (every copy of something corrupt or
 * missing).  repair runs the check again after fixing and reports what is
 * left; its exit status is that of the second check (plus 4 for loss).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "admin.h"
#include "store.h"
#include "ns.h"
#include "progress.h"

struct fsck_out {
	int json, verbose, first;
	FILE *f;
	struct progress pg;		/* the progress line (a terminal only) */
	int phase;			/* of the progress line, -1 none yet */
	const char *cmd;		/* "fsck" or "repair" */
};

static void show_progress(void *arg, int phase, uint64_t done, uint64_t total, uint64_t bytes)
{
	static const char *const label[] = { "reading every copy", "repairing copies",
					     "reading again" };
	struct fsck_out *o = arg;
	char l[48];

	if (phase != o->phase) {
		snprintf(l, sizeof(l), "%s: %s", o->cmd, label[phase < 0 || phase > 2 ? 0 : phase]);
		progress_phase(&o->pg, l, phase == 1 ? "keys" : "objects", total, 0);
		o->phase = phase;
	}
	progress_update(&o->pg, done, bytes);
}

static const char *sev_name(enum pohm_fsck_sev s)
{
	return s == POHM_FSCK_LOSS ? "data-loss" : s == POHM_FSCK_ERR ? "error" :
	       s == POHM_FSCK_FIX ? "repairable" : "info";
}

static const char *action_name(int a)
{
	return a == 1 ? "repaired" : a == 2 ? "would repair" : a < 0 ? "repair failed" : "";
}

static void print_issue(void *arg, const struct pohm_fsck_issue *is)
{
	struct fsck_out *o = arg;

	if (is->sev == POHM_FSCK_INFO && !o->verbose)
		return;
	progress_clear(&o->pg);
	if (o->json) {
		fprintf(o->f, "%s\n    {\"class\": \"%s\", \"severity\": \"%s\", \"key\": ",
			o->first ? "" : ",", pohm_fsck_class_name(is->cls), sev_name(is->sev));
		cli_json_str(o->f, is->key);
		fprintf(o->f, ", \"ino\": %" PRIu64 ", \"action\": \"%s\", \"error\": %d, "
			"\"after_repair\": %s, \"what\": ", is->ino,
			is->action == 1 ? "repaired" : is->action == 2 ? "would-repair" :
			is->action < 0 ? "failed" : "none", is->action < 0 ? -is->action : 0,
			is->verify ? "true" : "false");
		cli_json_str(o->f, is->what);
		fputc('}', o->f);
		o->first = 0;
		return;
	}
	fprintf(o->f, "%s%-10s %-10s %s%s%s%s%s%s%s\n", is->verify ? "left: " : "",
		pohm_fsck_class_name(is->cls), sev_name(is->sev), is->key[0] ? is->key : "-",
		is->key[0] ? ": " : " ", is->what, is->action ? " — " : "",
		action_name(is->action), is->action < 0 ? ": " : "",
		is->action < 0 ? strerror(-is->action) : "");
}

static const char *verdict(int status, int repair)
{
	if (status & POHM_FSCK_DATALOSS)
		return "DATA LOST: every copy of something is corrupt or missing";
	if (status & POHM_FSCK_ERROR)
		return "INCOMPLETE: some groups or objects could not be read";
	if (status & POHM_FSCK_FOUND)
		return repair ? "issues left: run `pohmelfs repair` again later" :
				"issues found: `pohmelfs repair` fixes them";
	return "clean";
}

/* "1 h", "5 s": an age for the note. */
static void age_text(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = (ns ? ns : POHM_FSCK_DEFAULT_AGE) / 1000000000ULL;

	if (s && s % 3600 == 0)
		snprintf(buf, len, "%" PRIu64 " h", s / 3600);
	else if (s && s % 60 == 0)
		snprintf(buf, len, "%" PRIu64 " min", s / 60);
	else
		snprintf(buf, len, "%" PRIu64 " s", s);
}

static void summary(struct fsck_out *o, const struct cli *cli, const struct pohm_fsck_result *r,
		    int status, int repair, uint64_t age_ns)
{
	unsigned c;
	int any;

	if (o->json) {
		fprintf(o->f, "%s\n  ],\n  \"objects\": %" PRIu64 ", \"inodes\": %" PRIu64
			", \"tombstones\": %" PRIu64 ", \"buckets\": %" PRIu64 ", \"chunks\": %" PRIu64
			", \"maps\": %" PRIu64 ", \"leases\": %" PRIu64 ", \"markers\": %" PRIu64
			", \"other\": %" PRIu64 ",\n  \"found\": {", o->first ? "" : "", r->objects,
			r->inodes, r->tombstones, r->buckets, r->chunks, r->maps, r->leases, r->markers,
			r->foreign);
		for (c = 0; c < POHM_FSCK_NCLASSES; c++)
			fprintf(o->f, "%s\"%s\": %" PRIu64, c ? ", " : "",
				pohm_fsck_class_name((enum pohm_fsck_class)c), r->found[c]);
		fprintf(o->f, "},\n  \"repaired\": %" PRIu64 ", \"repair_failed\": %" PRIu64
			", \"young_garbage\": %" PRIu64 ", \"complete\": %s, \"status\": %d, "
			"\"verdict\": ", r->fixed, r->failed, r->young,
			r->complete ? "true" : "false", status);
		cli_json_str(o->f, verdict(status, repair));
		fprintf(o->f, "\n}\n");
		return;
	}
	fprintf(o->f, "objects: %" PRIu64 " (inodes %" PRIu64 ", tombstones %" PRIu64
		", buckets %" PRIu64 ", chunks %" PRIu64 ", chunk maps %" PRIu64 ", leases %" PRIu64
		", absent markers %" PRIu64 ", other %" PRIu64 ")\n", r->objects, r->inodes,
		r->tombstones, r->buckets, r->chunks, r->maps, r->leases, r->markers, r->foreign);
	fprintf(o->f, "issues:");
	for (c = 0, any = 0; c < POHM_FSCK_NCLASSES; c++)
		if (r->found[c]) {
			fprintf(o->f, " %s %" PRIu64, pohm_fsck_class_name((enum pohm_fsck_class)c),
				r->found[c]);
			any = 1;
		}
	fprintf(o->f, "%s\n", any ? "" : " none");
	if (repair)
		fprintf(o->f, "repaired: %" PRIu64 ", failed: %" PRIu64 "\n", r->fixed, r->failed);
	if (r->young) {
		char a[32];

		age_text(a, sizeof(a), age_ns);
		fprintf(o->f, "note: %" PRIu64 " unreferenced object(s) younger than %s left alone "
			"(replaced versions, or writes in progress or stopped mid-way): not an "
			"issue; repair reclaims them once older (--age=SECONDS to choose)%s\n",
			r->young, a, o->verbose ? "" : "; -v lists them");
	}
	fprintf(o->f, "fsid \"%s\": %s (exit %d)\n", cli->cfg.fsid, verdict(status, repair), status);
}

/* Parse "--age=SECONDS": 0 or -1. */
static int parse_age(const char *s, uint64_t *ns)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > 100ULL * 365 * 86400)
		return -1;
	*ns = v ? v * 1000000000ULL : 1;
	return 0;
}

int cmd_fsck_main(int argc, char **argv)
{
	struct fsck_out out;
	struct pohm_fsck_opts o;
	struct pohm_fsck_result *res = calloc(1, sizeof(*res));
	struct pohm_ns_opts nso;
	struct pohm_ns *ns = NULL;
	struct pohm_kv kv;
	struct cli cli;
	const char *cmd = NULL;
	int i, rc, repair = 0, status = 2;

	memset(&cli, 0, sizeof(cli));
	memset(&o, 0, sizeof(o));
	memset(&out, 0, sizeof(out));
	out.first = 1;
	out.f = stdout;
	out.phase = -1;
	if (!res)
		return 2;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			out.json = 1;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			out.verbose = 1;
		} else if (!strcmp(argv[i], "--dry-run")) {
			o.dry_run = 1;
		} else if (!strncmp(argv[i], "--age=", 6)) {
			if (parse_age(argv[i] + 6, &o.age_ns)) {
				fprintf(stderr, "pohmelfs: --age=%s: expected a number of seconds\n",
					argv[i] + 6);
				goto out;
			}
		} else if (!cmd && (!strcmp(argv[i], "fsck") || !strcmp(argv[i], "repair"))) {
			cmd = argv[i];
		} else {
			fprintf(stderr, "pohmelfs: %s: unexpected argument \"%s\" (usage: pohmelfs "
				"fsck [--json] [-v] [--age=SECONDS] | pohmelfs repair [--json] [-v] "
				"[--dry-run] [--age=SECONDS])\n", cmd ? cmd : "fsck", argv[i]);
			goto out;
		}
	}
	repair = cmd && !strcmp(cmd, "repair");
	if (o.dry_run && !repair) {
		fprintf(stderr, "pohmelfs: fsck: --dry-run belongs to repair (fsck never changes "
			"anything)\n");
		goto out;
	}
	if ((rc = cli_load(&cli)))
		goto out;
	/* A check changes nothing: no read repair (until the repair pass, below). */
	cli.cfg.read_repair = 0;
	if ((rc = cli_open(&cli)))
		goto out;
	pohm_kvio_init(&kv, cli.client);
	{
		struct pohm_kv_val v = { 0 };

		rc = kv.ops->get(kv.ctx, "i:1", &v);
		pohm_kv_val_free(&v);
		if (rc == -ENOENT) {
			fprintf(stderr, "pohmelfs: %s: fsid \"%s\" has no root inode (never used, or "
				"the root was lost); nothing checked\n", cmd, cli.cfg.fsid);
			status = 2;
			goto out;
		}
	}
	memset(&nso, 0, sizeof(nso));
	nso.fsid = cli.cfg.fsid;
	nso.http_compat = pohm_config_bool(&cli.cfg, "http_compat");
	rc = pohm_ns_open(&ns, &kv, &nso);
	if (rc) {
		fprintf(stderr, "pohmelfs: %s: cannot open fsid \"%s\": %s\n", cmd, cli.cfg.fsid,
			strerror(-rc));
		goto out;
	}
	o.repair = repair;
	o.report = print_issue;
	o.progress = show_progress;
	o.arg = &out;
	if (out.json) {
		fprintf(out.f, "{\n  \"command\": \"%s\", \"dry_run\": %s, \"fsid\": ", cmd,
			o.dry_run ? "true" : "false");
		cli_json_str(out.f, cli.cfg.fsid);
		fprintf(out.f, ",\n  \"issues\": [");
	} else {
		fprintf(out.f, "%s fsid \"%s\" on %u group(s)%s\n", repair ? "repairing" : "checking",
			cli.cfg.fsid, cli.cfg.ngroups, o.dry_run ? " (dry run: nothing is changed)" : "");
	}
	fflush(out.f);
	/* Repairing divergent copies is read repair (the client reads cfg at each
	 * call), waiting for every group's answer: a copy that answers after
	 * the usual grace (a loaded node) is repaired too, not "left". */
	cli.cfg.read_repair = repair && !o.dry_run ? 2 : 0;
	out.cmd = repair ? "repair" : "fsck";
	progress_start(&out.pg, out.json, out.cmd, "objects", 0, 0);
	rc = pohm_fsck_run(ns, &kv, cli.client, &o, res);
	progress_end(&out.pg);
	status = rc < 0 ? POHM_FSCK_ERROR : rc;
	if (rc < 0)
		fprintf(stderr, "pohmelfs: %s: %s\n", cmd, strerror(-rc));
	summary(&out, &cli, res, status, repair, o.age_ns);
out:
	if (ns)
		pohm_ns_close(ns);
	if (cli.client)
		pohm_client_close(cli.client);
	if (cli.loaded)
		pohm_config_free(&cli.cfg);
	free(res);
	return status;
}
