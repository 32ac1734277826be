/*
 * fault.c — the run-time fault file (format in fault.h).
 */
#include "fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sys.h"
#include "wire.h"
#include "node_store.h"

#define FAULT_MAX_RULES 64
#define FAULT_CHECK_NS 1000000ull	/* stat the file at most once per ms */

struct prefix {
	uint8_t b[POHM_ID_SIZE];
	unsigned nibbles;		/* 0 = every key */
};

struct node_faults {
	char path[4200];
	struct node_store *store;
	pthread_mutex_t lock;		/* guards everything below */
	uint64_t last_check;		/* mono ns of the last stat */
	struct stat seen;		/* identity of the file last loaded */
	int have_file;
	struct node_fault_state st;
	struct prefix corrupt[FAULT_MAX_RULES];
	unsigned ncorrupt;
};

/* A hex digit's value, or -1. */
static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "all" or a hex id prefix; 0 or -EINVAL. */
static int parse_prefix(const char *s, struct prefix *p)
{
	unsigned i;

	memset(p, 0, sizeof(*p));
	if (!strcmp(s, "all"))
		return 0;
	for (i = 0; s[i]; i++) {
		int v = hexval(s[i]);

		if (v < 0 || i >= 2 * POHM_ID_SIZE)
			return -EINVAL;
		p->b[i / 2] |= (uint8_t)(i % 2 ? v : v << 4);
	}
	if (!i)
		return -EINVAL;
	p->nibbles = i;
	return 0;
}

/* 1 if id starts with the prefix. */
static int prefix_match(const struct prefix *p, const uint8_t *id)
{
	unsigned full = p->nibbles / 2;

	if (memcmp(p->b, id, full))
		return 0;
	if (p->nibbles % 2 && (id[full] & 0xf0) != p->b[full])
		return 0;
	return 1;
}

/* corrupt-disk: flip a byte of every stored record matching p. */
static void corrupt_disk(struct node_faults *f, const struct prefix *p)
{
	uint8_t *ids = NULL;
	size_t n = 0, i;

	if (!f->store || node_store_list(f->store, &ids, &n))
		return;
	for (i = 0; i < n; i++)
		if (prefix_match(p, ids + i * POHM_ID_SIZE)) {
			int r = node_store_corrupt(f->store, ids + i * POHM_ID_SIZE);

			pohm_info("fault: corrupt-disk on a record: %d", r);
		}
	free(ids);
}

/* Parse the file into f (lock held). */
static void load(struct node_faults *f)
{
	char line[512], word[64], arg[160];
	FILE *fp = fopen(f->path, "re");

	memset(&f->st, 0, sizeof(f->st));
	f->ncorrupt = 0;
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *hash = strchr(line, '#');
		int k;

		if (hash)
			*hash = '\0';
		arg[0] = '\0';
		k = sscanf(line, "%63s %159s", word, arg);
		if (k < 1)
			continue;
		if (!strcmp(word, "drop")) {
			f->st.drop = 1;
		} else if (!strcmp(word, "hang")) {
			f->st.hang = 1;
		} else if (!strcmp(word, "refuse-writes")) {
			f->st.refuse_writes = 1;
		} else if (!strcmp(word, "delay") && k == 2) {
			f->st.delay_ms = (unsigned)strtoul(arg, NULL, 10);
		} else if (!strcmp(word, "corrupt") && k == 2 && f->ncorrupt < FAULT_MAX_RULES &&
			   !parse_prefix(arg, &f->corrupt[f->ncorrupt])) {
			f->ncorrupt++;
			f->st.corrupt = 1;
		} else if (!strcmp(word, "corrupt-disk") && k == 2) {
			struct prefix p;

			if (!parse_prefix(arg, &p) && p.nibbles)
				corrupt_disk(f, &p);
			else
				pohm_warn("fault: corrupt-disk needs a hex id prefix: %s", arg);
		} else {
			pohm_warn("fault: ignoring unknown directive '%s'", word);
		}
	}
	fclose(fp);
	pohm_info("fault: loaded %s (drop %d hang %d delay %u refuse-writes %d corrupt %u)",
		  f->path, f->st.drop, f->st.hang, f->st.delay_ms, f->st.refuse_writes,
		  f->ncorrupt);
}

/* See fault.h. */
struct node_faults *node_faults_new(const char *dir, struct node_store *store)
{
	struct node_faults *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	snprintf(f->path, sizeof(f->path), "%s/faults", dir);
	f->store = store;
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

/* See fault.h. */
void node_faults_free(struct node_faults *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Re-read the file if it changed since the last look (lock held). */
static void refresh(struct node_faults *f)
{
	uint64_t now = pohm_sys_mono_ns();
	struct stat st;

	if (f->last_check && now - f->last_check < FAULT_CHECK_NS)
		return;
	f->last_check = now;
	if (stat(f->path, &st) < 0) {
		if (f->have_file) {
			f->have_file = 0;
			memset(&f->st, 0, sizeof(f->st));
			f->ncorrupt = 0;
			pohm_info("fault: %s removed, no faults", f->path);
		}
		return;
	}
	if (f->have_file && st.st_ino == f->seen.st_ino && st.st_size == f->seen.st_size &&
	    st.st_mtim.tv_sec == f->seen.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == f->seen.st_mtim.tv_nsec)
		return;
	f->seen = st;
	f->have_file = 1;
	load(f);
}

/* See fault.h. */
void node_faults_get(struct node_faults *f, struct node_fault_state *st)
{
	pthread_mutex_lock(&f->lock);
	refresh(f);
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
}

/* See fault.h. */
int node_faults_corrupts(struct node_faults *f, const uint8_t *id)
{
	unsigned i;
	int hit = 0;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->ncorrupt && !hit; i++)
		hit = !f->corrupt[i].nibbles || prefix_match(&f->corrupt[i], id);
	pthread_mutex_unlock(&f->lock);
	return hit;
}
