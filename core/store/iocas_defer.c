/*
 * iocas_defer.c — a CAS put whose reply is read later (issue 23: a
 * rename's last write, decision 0067's finish, sent without waiting).
 *
 * pohm_io_cas_put_deferred sends the first attempt to every group at once
 * (the parallel attempt of pohm_io_cas_put) through a window of its own
 * and returns: no wait.  The entry (its copies of the key, the bytes and
 * the content replaced, the op and its requests) stays in the client's
 * list until pohm_io_cas_settle_deferred processes it: it waits until a
 * quorum of replies and its grace are in (deferred_enough; bounded), then
 * goes on exactly as
 * pohm_io_cas_put's first attempt does (confirm unknown outcomes, catch up
 * a refused group after a commit, roll back our copies where a split left
 * them) — everything but the second attempt: a deferred put that lost is
 * reported lost (-EBADFD), its caller's state must be one the readers
 * settle.  A settle whose deadline ends before a quorum is in leaves
 * the entry's outcome to the readers, as a writer that died after sending
 * does (-EIO, "unknown").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io_int.h"
#include "net.h"
#include "wire.h"
#include "sys.h"

struct io_deferred {
	struct io_deferred *next;
	pid_t pid;				/* the process that sent it */
	struct gop op;
	struct pohm_io_result res;
	struct pohm_batch *w;
	uint8_t io[POHM_IO_ATTR_SIZE];
	uint8_t sum[POHM_ID_SIZE];
	uint8_t old_sum[POHM_ID_SIZE];
	struct pohm_cas_old old;		/* csum/data point into this entry */
	void *data, *old_data;
	size_t len;
	void (*done)(void *arg, int rc, const struct pohm_io_result *res);
	void *arg;
};

static void deferred_free(struct io_deferred *d)
{
	io_op_release(&d->op);
	free(d->data);
	free(d->old_data);
	free(d);
}

int pohm_io_cas_put_deferred(struct pohm_client *c, const void *key, size_t keylen,
			     const void *data, size_t len, const struct pohm_cas_old *old,
			     void (*done)(void *arg, int rc, const struct pohm_io_result *res),
			     void *arg)
{
	struct io_deferred *d;
	unsigned gi;
	int r;

	if (!len || len > POHM_IO_PACKET_MAX)
		return len ? -EFBIG : -EINVAL;
	/* Only a first attempt that may go to every group at once (a split
	 * it leaves must be one its writer can undo). */
	if (!io_cas_parallel_first(old))
		return -EAGAIN;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->data = malloc(len);
	d->old_data = old->data ? malloc(old->len) : NULL;
	if (!d->data || (old->data && !d->old_data)) {
		r = -ENOMEM;
		goto fail;
	}
	memcpy(d->data, data, len);
	d->len = len;
	d->old = *old;
	if (old->csum) {
		memcpy(d->old_sum, old->csum, sizeof(d->old_sum));
		d->old.csum = d->old_sum;
	}
	if (old->data) {
		memcpy(d->old_data, old->data, old->len);
		d->old.data = d->old_data;
	}
	d->done = done;
	d->arg = arg;
	d->pid = pohm_sys_pid();
	io_op_init(&d->op, c, key, keylen, &d->res);
	d->op.own_node = 1;
	d->op.w = d->res.ngroups / 2 + 1;
	r = pohm_net_refresh(c->net, d->op.start + io_cas_ack_window(c), 0);
	if (r)
		goto fail;
	d->w = pohm_net_window_open(c->net);
	if (!d->w) {
		r = -ENOMEM;
		goto fail;
	}
	d->res.size = len;
	pohm_sha512(d->data, len, d->sum);
	memcpy(d->res.csum, d->sum, sizeof(d->res.csum));
	d->res.has_csum = 1;
	io_cas_attempt_start(&d->op, len, &d->old, d->io);
	for (gi = 0; gi < d->res.ngroups; gi++)
		io_op_add(&d->op, gi, POHM_CMD_WRITE, 0, d->io, POHM_IO_ATTR_SIZE, d->data, len);
	pohm_net_window_send(c->net, d->w, d->op.ptrs, d->op.n,
			     d->op.start + io_cas_ack_window(c));
	d->next = __atomic_load_n(&c->deferred, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&c->deferred, &d->next, d, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return 0;
fail:
	if (d->w)
		pohm_net_window_close(c->net, d->w, d->op.ptrs, d->op.n);
	deferred_free(d);
	return r;
}

/*
 * enough() for a deferred put: io_write_enough's rule (a quorum applied,
 * then a grace as long as the quorum took for the rest), the quorum's time
 * being when its last reply came (done_ns), not this settle's: a settle
 * long after the send waits for no slow group whose grace is over.
 */
static int deferred_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl)
{
	struct io_deferred *d = arg;
	uint64_t t[POHM_MAX_GROUPS], q, end;
	size_t k, j, ok = 0, pending = 0;

	(void)reqs;
	(void)n;
	for (k = 0; k < d->op.n; k++) {
		const struct pohm_req *r = &d->op.reqs[k];

		if (!r->done) {
			pending++;
			continue;
		}
		if (r->status)
			continue;
		/* Insertion sort: the reply times in order. */
		for (j = ok++; j && t[j - 1] > r->done_ns; j--)
			t[j] = t[j - 1];
		t[j] = r->done_ns;
	}
	if (ok < d->op.w)
		return 0;
	q = t[d->op.w - 1];
	end = io_grace_end(&d->op, q);
	if (end < *dl)
		*dl = end;
	return !pending;
}

/* Wait for d's replies until deadline, by deferred_enough: 1 when enough
 * (every one in, or the quorum's grace over), 0 at the deadline. */
static int deferred_wait(struct pohm_client *c, struct io_deferred *d, uint64_t deadline)
{
	return !pohm_net_window_wait_enough(c->net, d->w, deferred_enough, d, deadline);
}

/* Process one entry (see the file comment): what its done() is told. */
static int deferred_settle_one(struct pohm_client *c, struct io_deferred *d, uint64_t deadline)
{
	uint64_t end = d->op.start + io_cas_ack_window(c);
	int retry, enough;
	size_t k;

	enough = deferred_wait(c, d, deadline < end ? deadline : end);
	if (!enough && deadline < end) {
		/* The caller's bound (an exit) before the window's end: what
		 * landed is the readers' to settle, as a dead writer's. */
		pohm_net_window_close(c->net, d->w, d->op.ptrs, d->op.n);
		d->w = NULL;
		io_note(&d->op, "deferred compare-and-swap not answered in time: "
				"outcome left to the readers");
		d->res.unknown = d->res.ngroups;
		return -EIO;
	}
	pohm_net_window_close(c->net, d->w, d->op.ptrs, d->op.n);
	d->w = NULL;
	io_op_reroute(&d->op, end, io_write_enough);
	io_write_collect(&d->op);
	for (k = 0; k < d->op.n; k++)
		d->res.g[d->op.gi[k]].applied = io_cas_write_outcome(&d->op.reqs[k]);
	io_op_release(&d->op);
	d->op.quorum_at = 0;
	return io_cas_attempt_end(&d->op, d->data, d->len, d->sum, &d->old, 1, &retry);
}

/* d not processed by this process (client close, or a fork child's copy
 * of its parent's entry): told -ECANCELED, outcome unknown here. */
static void deferred_cancel(struct io_deferred *d)
{
	d->res.unknown = d->res.ngroups;
	io_note(&d->op, "deferred compare-and-swap not processed here (client closed, or "
			"a fork child's copy): outcome left to the readers");
	if (d->done)
		d->done(d->arg, -ECANCELED, &d->res);
	deferred_free(d);
}

/* This thread is running a settle (a done's own store call must not wait
 * for it: the nested call goes on). */
static __thread int settling_here;

/*
 * Become c's one settler (c->settler = this pid): 1, or 0 when deadline
 * passed while another thread of this process settled.  A settler pid
 * not ours is a fork child's copy of its parent's (that thread is not in
 * the child): taken over.
 */
static int settler_take(struct pohm_client *c, pid_t pid, uint64_t deadline)
{
	struct timespec ts = { 0, 100000 };	/* 100 µs */

	for (;;) {
		pid_t cur = 0;

		if (__atomic_compare_exchange_n(&c->settler, &cur, pid, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 1;
		if (cur != pid) {
			__atomic_compare_exchange_n(&c->settler, &cur, 0, 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED);
			continue;
		}
		if (pohm_sys_mono_ns() >= deadline)
			return 0;
		nanosleep(&ts, NULL);
	}
}

int pohm_io_cas_settle_deferred(struct pohm_client *c, uint64_t deadline)
{
	struct io_deferred *d, *next, *rev = NULL;
	pid_t pid;
	int n = 0, rc;

	/* Nothing pending and nobody processing: at once.  (A settler sets
	 * c->settler before it takes the list, and clears it after its last
	 * done: a list seen empty with no settler was processed whole.) */
	if (!__atomic_load_n(&c->deferred, __ATOMIC_SEQ_CST) &&
	    !__atomic_load_n(&c->settler, __ATOMIC_SEQ_CST))
		return 0;
	if (settling_here)
		return 0;
	pid = pohm_sys_pid();
	if (!settler_take(c, pid, deadline))
		return 0;
	d = __atomic_exchange_n(&c->deferred, NULL, __ATOMIC_SEQ_CST);
	/* In the order they were sent. */
	for (; d; d = next) {
		next = d->next;
		d->next = rev;
		rev = d;
	}
	settling_here = 1;
	for (d = rev; d; d = next) {
		next = d->next;
		if (d->pid != pid) {
			/* A fork child: the parent's requests may still be
			 * queued on the connections; unlink them first. */
			pohm_net_fork_check(c->net);
			free(d->w);
			deferred_cancel(d);
			continue;
		}
		rc = deferred_settle_one(c, d, deadline);
		if (d->done)
			d->done(d->arg, rc, &d->res);
		deferred_free(d);
		n++;
	}
	settling_here = 0;
	__atomic_store_n(&c->settler, 0, __ATOMIC_SEQ_CST);
	return n;
}

void io_cas_deferred_drop(struct pohm_client *c)
{
	struct io_deferred *d = __atomic_exchange_n(&c->deferred, NULL, __ATOMIC_ACQUIRE), *next;

	for (; d; d = next) {
		next = d->next;
		if (d->pid == pohm_sys_pid()) {
			pohm_net_window_close(c->net, d->w, d->op.ptrs, d->op.n);
		} else {
			pohm_net_fork_check(c->net);
			free(d->w);
		}
		d->w = NULL;
		deferred_cancel(d);
	}
}
