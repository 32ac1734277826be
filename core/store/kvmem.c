/*
 * kvmem.c — an in-memory pohm_kv for unit tests: an open hash table under
 * one mutex, with the CAS rules of kv.h and put-count fault injection.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv.h"
#include "wire.h"

struct mem_ent {
	char *key;
	uint8_t *data;
	size_t len;
	uint8_t csum[POHM_KV_CSUM];
	struct mem_ent *next;
};

/* A value a thread read or wrote (mem_peek), per thread as kv.h says. */
#define PEEK_N	16
struct mem_seen {
	pthread_t tid;
	char *key;			/* NULL: empty slot */
	uint8_t *data;
	size_t len;
	uint8_t csum[POHM_KV_CSUM];
	uint64_t mono_ns, tick;
};

/* A put_deferred whose outcome its writer has not been told (mem_settle). */
struct mem_deferred {
	struct mem_deferred *next;
	int st;
	void (*done)(void *arg, int st);
	void *arg;
};

struct mem_kv {
	pthread_mutex_t lock;		/* guards everything below */
	struct mem_deferred *deferred;	/* newest first */
	long ndeferred;
	int defer_lose;			/* pohm_kvmem_defer_lose */
	struct mem_seen seen[PEEK_N];	/* LRU by tick */
	uint64_t tick;
	struct mem_ent *tab[4096];
	size_t count;
	long puts;
	long fail_after;		/* < 0: no fault */
	long unsure_at;			/* the put that applies but answers -EIO; < 0: none */
	int unsure_then;		/* gets failing -EIO after it */
	int failing;			/* of those, still to fail */
	int put_n_reverse;		/* put_n applies its keys last first */
	long put_n_calls;
	long write_n_calls;		/* write_n calls (lock) */
};

/* A get the "unsure" fault fails (lock held). */
static int fault_now(struct mem_kv *m)
{
	if (m->failing <= 0)
		return 0;
	m->failing--;
	return 1;
}

static unsigned slot(const char *key)
{
	return (unsigned)(pohm_fnv1a(POHM_NAME_BASIS, key) % 4096);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* This thread saw e's value (lock held); an allocation failure forgets it. */
static void seen(struct mem_kv *m, const struct mem_ent *e)
{
	struct mem_seen *v = NULL;
	pthread_t me = pthread_self();
	size_t i;

	for (i = 0; i < PEEK_N; i++)
		if (m->seen[i].key && pthread_equal(m->seen[i].tid, me) &&
		    !strcmp(m->seen[i].key, e->key)) {
			v = &m->seen[i];
			break;
		}
	if (!v) {
		v = &m->seen[0];
		for (i = 1; i < PEEK_N; i++)
			if (m->seen[i].tick < v->tick)
				v = &m->seen[i];
		free(v->key);
		v->key = strdup(e->key);
	}
	free(v->data);
	v->data = malloc(e->len);
	if (!v->key || !v->data) {
		free(v->key);
		free(v->data);
		memset(v, 0, sizeof(*v));
		return;
	}
	memcpy(v->data, e->data, e->len);
	v->len = e->len;
	memcpy(v->csum, e->csum, POHM_KV_CSUM);
	v->tid = me;
	v->mono_ns = mono_ns();
	v->tick = ++m->tick;
}

static struct mem_ent *find(struct mem_kv *m, const char *key)
{
	struct mem_ent *e;

	for (e = m->tab[slot(key)]; e; e = e->next)
		if (!strcmp(e->key, key))
			return e;
	return NULL;
}

static int mem_settle(void *ctx, uint64_t deadline_ns);

/* Every op's start, as kvio's gate: the pending put_deferred outcomes told
 * first (review 1 finding 6: told only at an explicit settle before). */
static void mem_gate(void *ctx)
{
	mem_settle(ctx, UINT64_MAX);
}

static int mem_get(void *ctx, const char *key, struct pohm_kv_val *out)
{
	struct mem_kv *m = ctx;
	struct mem_ent *e;
	int r = 0;

	mem_gate(ctx);
	pthread_mutex_lock(&m->lock);
	if (fault_now(m)) {
		r = -EIO;
		goto out;
	}
	e = find(m, key);
	if (!e) {
		r = -ENOENT;
		goto out;
	}
	out->data = malloc(e->len);
	if (!out->data) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(out->data, e->data, e->len);
	out->len = e->len;
	memcpy(out->csum, e->csum, POHM_KV_CSUM);
	seen(m, e);
out:
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int mem_peek(void *ctx, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	struct mem_kv *m = ctx;
	pthread_t me = pthread_self();
	int r = -ENOENT;
	size_t i;

	mem_gate(ctx);
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < PEEK_N; i++) {
		const struct mem_seen *v = &m->seen[i];

		if (!v->key || !pthread_equal(v->tid, me) || strcmp(v->key, key))
			continue;
		out->data = malloc(v->len);
		r = out->data ? 0 : -ENOMEM;
		if (!r) {
			memcpy(out->data, v->data, v->len);
			out->len = v->len;
			memcpy(out->csum, v->csum, POHM_KV_CSUM);
			*age_ns = mono_ns() - v->mono_ns;
		}
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int mem_read(void *ctx, const char *key, uint64_t off, void *buf, size_t len)
{
	struct mem_kv *m = ctx;
	struct mem_ent *e;
	int r;

	mem_gate(ctx);
	pthread_mutex_lock(&m->lock);
	e = find(m, key);
	if (!e) {
		r = -ENOENT;
	} else if (off >= e->len) {
		r = 0;
	} else {
		if (len > e->len - off)
			len = e->len - off;
		memcpy(buf, e->data + off, len);
		r = (int)len;
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int mem_put(void *ctx, const char *key, const void *data, size_t len,
		   const uint8_t *expect)
{
	struct mem_kv *m = ctx;
	struct mem_ent *e;
	uint8_t *copy = NULL;
	int r = 0;

	mem_gate(ctx);
	if (!len)
		return -EINVAL;		/* Elliptics cannot create an empty object */
	pthread_mutex_lock(&m->lock);
	if (m->fail_after >= 0 && m->puts >= m->fail_after) {
		r = -EIO;
		goto out;
	}
	e = find(m, key);
	if (e && (expect == pohm_kv_absent || expect == pohm_kv_new)) {
		r = -EEXIST;
		goto out;
	}
	if (e && expect && memcmp(expect, e->csum, POHM_KV_CSUM)) {
		r = -EAGAIN;
		goto out;
	}
	copy = malloc(len);
	if (!copy) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(copy, data, len);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->key = malloc(strlen(key) + 1))) {
			free(e);
			r = -ENOMEM;
			goto out;
		}
		strcpy(e->key, key);
		e->next = m->tab[slot(key)];
		m->tab[slot(key)] = e;
		m->count++;
	}
	free(e->data);
	e->data = copy;
	copy = NULL;
	e->len = len;
	pohm_sha512(data, len, e->csum);
	if (m->puts++ == m->unsure_at) {
		r = -EIO;	/* applied, but the answer is lost */
		m->unsure_at = -1;
		m->failing = m->unsure_then;
	} else {
		seen(m, e);
	}
out:
	pthread_mutex_unlock(&m->lock);
	free(copy);
	return r;
}

static int mem_del(void *ctx, const char *key)
{
	struct mem_kv *m = ctx;
	struct mem_ent **pp, *e;
	size_t i;
	int r = -ENOENT;

	mem_gate(ctx);
	pthread_mutex_lock(&m->lock);
	if (m->fail_after >= 0 && m->puts >= m->fail_after) {
		r = -EIO;
		goto out;
	}
	for (pp = &m->tab[slot(key)]; (e = *pp); pp = &e->next) {
		if (strcmp(e->key, key))
			continue;
		*pp = e->next;
		free(e->key);
		free(e->data);
		free(e);
		m->count--;
		r = 0;
		break;
	}
	/* What any thread read or wrote of it is gone with it (mem_peek). */
	for (i = 0; !r && i < PEEK_N; i++)
		if (m->seen[i].key && !strcmp(m->seen[i].key, key)) {
			free(m->seen[i].key);
			free(m->seen[i].data);
			memset(&m->seen[i], 0, sizeof(m->seen[i]));
		}
out:
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int mem_scan(void *ctx, const char *prefix,
		    int (*fn)(void *arg, const char *key, const void *data, size_t len), void *arg)
{
	struct mem_kv *m = ctx;
	struct mem_ent *e;
	size_t plen = strlen(prefix);
	int r = 0;
	unsigned i;

	mem_gate(ctx);
	/* Called with the lock held: fn must not call back into this store. */
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < 4096 && !r; i++)
		for (e = m->tab[i]; e && !r; e = e->next)
			if (!strncmp(e->key, prefix, plen))
				r = fn(arg, e->key, e->data, e->len);
	pthread_mutex_unlock(&m->lock);
	return r;
}

/* One copy per key: a copy fn refuses is -EIO (no other replica). */
static int mem_get_many(void *ctx, size_t n, const char *const *keys, unsigned inflight,
			size_t max_len,
			int (*fn)(void *arg, size_t i, const uint8_t *data, size_t len), void *arg)
{
	size_t i;
	int r = 0;

	mem_gate(ctx);
	(void)inflight;
	(void)max_len;
	for (i = 0; i < n && !r; i++) {
		struct pohm_kv_val v = { 0 };

		r = mem_get(ctx, keys[i], &v);
		if (!r)
			r = fn(arg, i, v.data, v.len);
		if (r == -EBADMSG)
			r = -EIO;
		pohm_kv_val_free(&v);
	}
	return r;
}

static int mem_get_n(void *ctx, size_t n, const char *const *keys, struct pohm_kv_val *out,
		     int *st)
{
	size_t i;

	mem_gate(ctx);
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		st[i] = mem_get(ctx, keys[i], &out[i]);
	}
	return 0;
}

/* One put after the other, in order or reversed (the fault hook): a
 * replicated store gives no order, so tests crash between them both ways. */
static int mem_put_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		     const size_t *len, const uint8_t *const *expect, int *st)
{
	struct mem_kv *m = ctx;
	size_t i, k;
	int rev;

	mem_gate(ctx);
	if (n > POHM_KV_PUT_N)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!expect[i])
			return -EINVAL;
	pthread_mutex_lock(&m->lock);
	rev = m->put_n_reverse;
	m->put_n_calls++;
	pthread_mutex_unlock(&m->lock);
	for (k = 0; k < n; k++) {
		i = rev ? n - 1 - k : k;
		st[i] = mem_put(ctx, keys[i], data[i], len[i], expect[i]);
	}
	return 0;
}

/* One put after the other (the fault hooks count each); one wait: put_n's count. */
static int mem_put_many(void *ctx, size_t n, struct pohm_kv_cas *p)
{
	struct mem_kv *m = ctx;
	size_t i;

	mem_gate(ctx);
	for (i = 0; i < n; i++)
		if (!p[i].expect)
			return -EINVAL;
	pthread_mutex_lock(&m->lock);
	m->put_n_calls++;
	pthread_mutex_unlock(&m->lock);
	for (i = 0; i < n; i++)
		p[i].st = mem_put(ctx, p[i].key, p[i].data, p[i].len, p[i].expect);
	return 0;
}

static int mem_write_n(void *ctx, size_t n, const char *const *keys, const void *const *data,
		       const size_t *len, int *st)
{
	struct mem_kv *m = ctx;
	size_t i;

	mem_gate(ctx);
	pthread_mutex_lock(&m->lock);
	m->write_n_calls++;
	pthread_mutex_unlock(&m->lock);
	for (i = 0; i < n; i++)
		st[i] = mem_put(ctx, keys[i], data[i], len[i], NULL);
	return 0;
}

/* Applied when sent (or lost: pohm_kvmem_defer_lose); told at settle. */
static int mem_put_deferred(void *ctx, const char *key, const void *data, size_t len,
			    const uint8_t *expect, void (*done)(void *arg, int st), void *arg)
{
	struct mem_kv *m = ctx;
	struct mem_deferred *d;
	int lose;

	/* kvio's refusals: no condition, or a drawn key's create (put them). */
	if (!expect || expect == POHM_KV_NEW)
		return -EAGAIN;
	if (!len)
		return -EINVAL;
	mem_gate(ctx);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	lose = m->defer_lose;
	pthread_mutex_unlock(&m->lock);
	d->st = lose ? -EIO : mem_put(ctx, key, data, len, expect);
	d->done = done;
	d->arg = arg;
	pthread_mutex_lock(&m->lock);
	d->next = m->deferred;
	m->deferred = d;
	m->ndeferred++;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int mem_settle(void *ctx, uint64_t deadline_ns)
{
	struct mem_kv *m = ctx;
	struct mem_deferred *d, *next, *rev = NULL;
	int n = 0;

	(void)deadline_ns;
	pthread_mutex_lock(&m->lock);
	d = m->deferred;
	m->deferred = NULL;
	m->ndeferred = 0;
	pthread_mutex_unlock(&m->lock);
	for (; d; d = next) {	/* in the order they were sent */
		next = d->next;
		d->next = rev;
		rev = d;
	}
	for (d = rev; d; d = next) {
		next = d->next;
		if (d->done)
			d->done(d->arg, d->st);
		free(d);
		n++;
	}
	return n;
}

static const struct pohm_kv_ops mem_ops = {
	.get = mem_get, .read = mem_read, .put = mem_put, .del = mem_del, .scan = mem_scan,
	.get_many = mem_get_many, .get_n = mem_get_n, .peek = mem_peek, .put_n = mem_put_n,
	.put_many = mem_put_many, .write_n = mem_write_n, .put_deferred = mem_put_deferred,
	.settle = mem_settle,
};

int pohm_kvmem_new(struct pohm_kv *kv)
{
	struct mem_kv *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->fail_after = -1;
	m->unsure_at = -1;
	kv->ops = &mem_ops;
	kv->ctx = m;
	return 0;
}

void pohm_kvmem_free(struct pohm_kv *kv)
{
	struct mem_kv *m = kv->ctx;
	struct mem_ent *e, *n;
	unsigned i;

	if (!m)
		return;
	for (i = 0; i < 4096; i++)
		for (e = m->tab[i]; e; e = n) {
			n = e->next;
			free(e->key);
			free(e->data);
			free(e);
		}
	while (m->deferred) {	/* nobody is told any more */
		struct mem_deferred *d = m->deferred;

		m->deferred = d->next;
		free(d);
	}
	for (i = 0; i < PEEK_N; i++) {
		free(m->seen[i].key);
		free(m->seen[i].data);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
	kv->ctx = NULL;
}

void pohm_kvmem_fail_after(struct pohm_kv *kv, long puts_left)
{
	struct mem_kv *m = kv->ctx;

	pthread_mutex_lock(&m->lock);
	m->fail_after = puts_left < 0 ? -1 : m->puts + puts_left;
	pthread_mutex_unlock(&m->lock);
}

void pohm_kvmem_fail_unsure(struct pohm_kv *kv, long puts_left, int then_failing)
{
	struct mem_kv *m = kv->ctx;

	pthread_mutex_lock(&m->lock);
	m->unsure_at = puts_left < 0 ? -1 : m->puts + puts_left;
	m->unsure_then = then_failing;
	m->failing = 0;
	pthread_mutex_unlock(&m->lock);
}

long pohm_kvmem_puts(const struct pohm_kv *kv)
{
	struct mem_kv *m = kv->ctx;
	long n;

	pthread_mutex_lock(&m->lock);
	n = m->puts;
	pthread_mutex_unlock(&m->lock);
	return n;
}

size_t pohm_kvmem_count(const struct pohm_kv *kv)
{
	struct mem_kv *m = kv->ctx;
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = m->count;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void pohm_kvmem_put_n_reverse(struct pohm_kv *kv, int on)
{
	struct mem_kv *m = kv->ctx;

	pthread_mutex_lock(&m->lock);
	m->put_n_reverse = on;
	pthread_mutex_unlock(&m->lock);
}

long pohm_kvmem_put_n_calls(const struct pohm_kv *kv)
{
	struct mem_kv *m = kv->ctx;
	long n;

	pthread_mutex_lock(&m->lock);
	n = m->put_n_calls;
	pthread_mutex_unlock(&m->lock);
	return n;
}

long pohm_kvmem_write_n_calls(const struct pohm_kv *kv)
{
	struct mem_kv *m = kv->ctx;
	long n;

	pthread_mutex_lock(&m->lock);
	n = m->write_n_calls;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void pohm_kvmem_defer_lose(struct pohm_kv *kv, int on)
{
	struct mem_kv *m = kv->ctx;

	pthread_mutex_lock(&m->lock);
	m->defer_lose = on;
	pthread_mutex_unlock(&m->lock);
}

long pohm_kvmem_deferred(const struct pohm_kv *kv)
{
	struct mem_kv *m = kv->ctx;
	long n;

	pthread_mutex_lock(&m->lock);
	n = m->ndeferred;
	pthread_mutex_unlock(&m->lock);
	return n;
}
