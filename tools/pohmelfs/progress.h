/*
 * progress.h — one updating progress line on stderr for the long commands
 * of `pohmelfs` (sync, cache clean, fsck, repair): count, bytes, rate, and
 * an ETA when the total is known.  Shown only when stderr is a terminal and
 * the output is not --json; otherwise every call does nothing.  The line is
 * redrawn at most every 100 ms and erased by progress_end, so the report
 * on stdout (the same terminal) is left as it would be without it.
 */
#ifndef POHM_TOOLS_POHMELFS_PROGRESS_H
#define POHM_TOOLS_POHMELFS_PROGRESS_H

#include <stdint.h>

struct progress {
	int on;				/* stderr is a terminal and not --json */
	int shown;			/* a line is on the terminal */
	char label[48];			/* "sync", "fsck: scanning" */
	const char *unit;		/* "files", "objects" */
	uint64_t total, total_bytes;	/* 0: unknown */
	uint64_t done, bytes;
	uint64_t t0, last;		/* monotonic ns: phase start, last redraw */
};

/* Start (or restart with a new label) counting: unit names what is counted,
 * total and total_bytes are 0 when unknown.  json: --json was asked (off). */
void progress_start(struct progress *p, int json, const char *label, const char *unit,
		    uint64_t total, uint64_t total_bytes);
/* A new phase of the same command: label, unit and totals as progress_start. */
void progress_phase(struct progress *p, const char *label, const char *unit, uint64_t total,
		    uint64_t total_bytes);
/* done items and bytes so far (absolute); redraws when due. */
void progress_update(struct progress *p, uint64_t done, uint64_t bytes);
/* Erase the line (before a message or the report); the next update redraws it. */
void progress_clear(struct progress *p);
/* Erase the line and stop. */
void progress_end(struct progress *p);

#endif
