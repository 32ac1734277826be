/*
 * progress.c — the progress line of the long commands (progress.h).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "sys.h"

#define REDRAW_NS	100000000ULL	/* at most ten redraws a second */

/* "512 B", "1.5 KiB", "3.2 MiB". */
static void size_text(char *buf, size_t len, double b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

/* "7 s", "3 min 5 s", "2 h 10 min". */
static void time_text(char *buf, size_t len, double s)
{
	unsigned long t = (unsigned long)(s + 0.5);

	if (t < 60)
		snprintf(buf, len, "%lu s", t);
	else if (t < 3600)
		snprintf(buf, len, "%lu min %lu s", t / 60, t % 60);
	else
		snprintf(buf, len, "%lu h %lu min", t / 3600, t % 3600 / 60);
}

static void draw(struct progress *p)
{
	char line[256], a[32], b[32];
	size_t off = 0;
	double el = (double)(pohm_sys_mono_ns() - p->t0) / 1e9;
	double rate = el > 0.05 ? (double)p->done / el : 0;

#define ADD(...) do { \
		if (off < sizeof(line)) \
			off += (size_t)snprintf(line + off, sizeof(line) - off, __VA_ARGS__); \
	} while (0)
	ADD("%s: %llu", p->label, (unsigned long long)p->done);
	if (p->total)
		ADD("/%llu", (unsigned long long)p->total);
	ADD(" %s", p->unit);
	if (p->bytes || p->total_bytes) {
		size_text(a, sizeof(a), (double)p->bytes);
		ADD(", %s", a);
		if (p->total_bytes) {
			size_text(b, sizeof(b), (double)p->total_bytes);
			ADD(" of %s", b);
		}
	}
	if (rate > 0) {
		ADD(rate < 10 ? ", %.1f %s/s" : ", %.0f %s/s", rate, p->unit);
		if (p->bytes) {
			size_text(a, sizeof(a), (double)p->bytes / el);
			ADD(", %s/s", a);
		}
	}
	if (rate > 0 && p->total && p->done < p->total) {
		double left = (double)(p->total - p->done) / rate;

		/* With bytes known, the bytes left are the better measure. */
		if (p->total_bytes && p->bytes && p->bytes < p->total_bytes)
			left = (double)(p->total_bytes - p->bytes) / ((double)p->bytes / el);
		time_text(a, sizeof(a), left);
		ADD(", ETA %s", a);
	}
#undef ADD
	/* One line: carriage return, the text, erase what an earlier line left. */
	fprintf(stderr, "\r%.200s\033[K", line);
	fflush(stderr);
	p->shown = 1;
	p->last = pohm_sys_mono_ns();
}

void progress_phase(struct progress *p, const char *label, const char *unit, uint64_t total,
		    uint64_t total_bytes)
{
	snprintf(p->label, sizeof(p->label), "%s", label);
	p->unit = unit;
	p->total = total;
	p->total_bytes = total_bytes;
	p->done = p->bytes = 0;
	p->t0 = pohm_sys_mono_ns();
	if (p->on)
		draw(p);
	p->last = 0;	/* the first count of the phase is drawn at once */
}

void progress_start(struct progress *p, int json, const char *label, const char *unit,
		    uint64_t total, uint64_t total_bytes)
{
	memset(p, 0, sizeof(*p));
	p->on = !json && isatty(2);
	progress_phase(p, label, unit, total, total_bytes);
}

void progress_update(struct progress *p, uint64_t done, uint64_t bytes)
{
	uint64_t now;

	if (!p->on)
		return;
	p->done = done;
	p->bytes = bytes;
	if (p->total && done > p->total)
		p->total = 0;		/* the estimate was short: count without one */
	now = pohm_sys_mono_ns();
	if (p->shown && now - p->last < REDRAW_NS && !(p->total && done >= p->total))
		return;
	draw(p);
}

void progress_clear(struct progress *p)
{
	if (!p->on || !p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = 0;
	p->last = 0;
}

void progress_end(struct progress *p)
{
	progress_clear(p);
	p->on = 0;
}
