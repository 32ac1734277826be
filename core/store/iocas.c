/*
 * iocas.c — compare-and-swap objects on every group (io.h "compare-and-swap
 * objects", DESIGN.md §3 "Versions and replicas"): the content quorum,
 * cas_get (read, wait out or settle splits, repair) and cas_put (every
 * group at once, count exactly where it applied, settle a slow group's
 * unknown outcome by lookups until write_wait_timeout, roll back or
 * forward, catch up; after a split between racers one retry, the arbiter
 * first).
 *
 * Sections: pure helpers · marker and timing · reading · repair · get ·
 * put (outcome, confirm, rollback, catch-up).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io_int.h"
#include "wire.h"
#include "sys.h"

#define ARBITER_MIN_NS	50000000ULL	/* a CAS arbiter is waited for at least this */

/* ---------------------------------------------------------------- pure helpers */

/*
 * Content classes of CAS votes: class[i] = index of the first group with
 * the same content as i (absent is one class of its own), -1 no answer.
 */
static void cas_classes(const struct pohm_cas_vote *v, size_t n, int *cls, size_t *cnt)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		cnt[i] = 0;
		cls[i] = -1;
		if (v[i].status != 0 && v[i].status != -ENOENT)
			continue;
		cls[i] = (int)i;
		for (j = 0; j < i; j++) {
			if (cls[j] != (int)j || v[j].status != v[i].status)
				continue;
			if (v[i].status == -ENOENT || !memcmp(v[i].csum, v[j].csum, POHM_ID_SIZE)) {
				cls[i] = (int)j;
				break;
			}
		}
		cnt[cls[i]]++;
	}
}

int pohm_cas_pick(const struct pohm_cas_vote *v, size_t n, int final)
{
	size_t cnt[POHM_MAX_GROUPS], i, answered = 0, pending = 0, best = 0, m = n / 2 + 1;
	int cls[POHM_MAX_GROUPS], at = -1;

	if (n > POHM_MAX_GROUPS)
		return POHM_CAS_NOQUORUM;
	cas_classes(v, n, cls, cnt);
	for (i = 0; i < n; i++) {
		if (cls[i] >= 0)
			answered++;
		else if (v[i].status == 1 && !final)
			pending++;
		if (cls[i] == (int)i && cnt[i] > best) {
			best = cnt[i];
			at = (int)i;
		}
	}
	if (best >= m)
		return v[at].status == -ENOENT ? -ENOENT : at;
	if (answered + pending < m)
		return POHM_CAS_NOQUORUM;
	if (pending && best + pending >= m)
		return POHM_CAS_UNDECIDED;
	return POHM_CAS_SPLIT;
}

int pohm_cas_fallback(const struct pohm_cas_vote *v, size_t n)
{
	size_t cnt[POHM_MAX_GROUPS], i, j;
	int cls[POHM_MAX_GROUPS], at = -1;
	struct pohm_time newest[POHM_MAX_GROUPS];

	if (n > POHM_MAX_GROUPS)
		return POHM_CAS_NOQUORUM;
	cas_classes(v, n, cls, cnt);
	for (i = 0; i < n; i++) {
		if (cls[i] != (int)i)
			continue;
		newest[i] = v[i].ts;
		for (j = i + 1; j < n; j++)
			if (cls[j] == (int)i && pohm_time_cmp(&v[j].ts, &newest[i]) > 0)
				newest[i] = v[j].ts;
		/* Most holders; then a present copy over absence; then the newest stamp. */
		if (at < 0 || cnt[i] > cnt[at] ||
		    (cnt[i] == cnt[at] && v[at].status == -ENOENT && v[i].status == 0) ||
		    (cnt[i] == cnt[at] && v[at].status == 0 && v[i].status == 0 &&
		     pohm_time_cmp(&newest[i], &newest[at]) > 0))
			at = (int)i;
	}
	if (at < 0)
		return POHM_CAS_NOQUORUM;
	return v[at].status == -ENOENT ? -ENOENT : at;
}

/*
 * Whether an old split may be settled (finding 1 of tests/RELIABILITY.md):
 * a version is committed once a majority of ALL groups holds it (DESIGN.md
 * §3), and a group that gave no usable answer may hold any of the versions
 * seen.  A content "could be committed" if its holders plus the silent
 * groups reach a majority.  Settling spreads one content over the others,
 * so it is safe only while at most one content could be committed — always
 * so when every group answered; pohm_cas_fallback then picks that one (it
 * has the most holders).  Absence that no group stamped (the key was never
 * written there) is not a version anyone committed: a present copy wins
 * over it as before (an abandoned create spread is an orphan, harmless).
 */
static int cas_split_settleable(const struct pohm_cas_vote *v, size_t n)
{
	size_t cnt[POHM_MAX_GROUPS], i, j, answered = 0, could = 0, m = n / 2 + 1;
	int cls[POHM_MAX_GROUPS], stamped;

	if (n > POHM_MAX_GROUPS)
		return 0;
	cas_classes(v, n, cls, cnt);
	for (i = 0; i < n; i++)
		answered += cls[i] >= 0;
	for (i = 0; i < n; i++) {
		if (cls[i] != (int)i || cnt[i] + (n - answered) < m)
			continue;
		stamped = v[i].status == 0;
		for (j = i; j < n && !stamped; j++)
			stamped = cls[j] == (int)i && (v[j].ts.tsec || v[j].ts.tnsec);
		could += stamped;
	}
	return could <= 1;
}

/* ---------------------------------------------------------------- marker and timing */

const uint8_t pohm_io_absent_marker[POHM_IO_MARKER_LEN] = {
	'p', 'o', 'h', 'm', 'e', 'l', 'f', 's', ':', 'a', 'b', 's', 'e', 'n', 't', '\n',
};

/*
 * A CAS write counts only the acks that arrive within this of its start
 * (its stamp is at least the real time of its start), so a copy older than
 * the window plus a margin for clock skew between hosts cannot be a write
 * whose writer may still count it: read repair may replace it then.
 */
uint64_t io_cas_ack_window(const struct pohm_client *c)
{
	uint64_t w = c->cfg->write_wait_timeout_ns;

	return w < POHM_CAS_ACK_WINDOW ? w : POHM_CAS_ACK_WINDOW;
}

static uint64_t cas_age_limit(const struct pohm_client *c)
{
	return io_cas_ack_window(c) + POHM_CAS_CLOCK_SKEW;
}

static int cas_old_enough(const struct pohm_client *c, const struct pohm_time *ts, uint64_t now)
{
	uint64_t t = pohm_time_to_ns(ts);

	return t < now && now - t > cas_age_limit(c);
}

static void cas_pause(uint64_t *pause_ns)
{
	static __thread uint64_t rng;	/* this thread's; reseeded in a fork child */
	static __thread pid_t rng_pid;
	pid_t pid = pohm_sys_pid();
	struct timespec t;
	uint64_t ns;

	if (!rng || rng_pid != pid) {
		rng = pohm_sys_seed();
		rng_pid = pid;
	}
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	ns = *pause_ns / 2 + rng % (*pause_ns / 2 + 1);
	t.tv_sec = (time_t)(ns / 1000000000ULL);
	t.tv_nsec = (long)(ns % 1000000000ULL);
	nanosleep(&t, NULL);
	if (*pause_ns < 20 * 1000000ULL)
		*pause_ns *= 2;
}

/* ---------------------------------------------------------------- reading */

/*
 * The vote of READ request r; data and dlen point into its reply.  Without
 * verify the server's checksum is taken as is (cheap, under the client's
 * lock); with verify the bytes are hashed and checked against it.
 */
void io_cas_vote_read(const struct gop *op, const struct pohm_req *r, struct pohm_cas_vote *v,
		      const uint8_t **data, size_t *dlen, int verify)
{
	int csum = !op->c->cfg->noreadcsum;
	const struct pohm_pkt *p;
	struct pohm_io_attr a;

	memset(v, 0, sizeof(*v));
	*data = NULL;
	*dlen = 0;
	if (!r->done) {
		v->status = 1;
		return;
	}
	v->status = r->status;
	if (r->status)
		return;
	p = pohm_req_final(r);
	if (!p || pohm_io_payload_decode(&a, data, dlen, p->data, (size_t)p->cmd.size, 1)) {
		v->status = -EPROTO;
		return;
	}
	if (a.offset || a.total_size != *dlen) {
		v->status = -EFBIG;	/* more than one READ answers: no CAS object is */
		return;
	}
	v->ts = a.timestamp;
	if (*dlen == POHM_IO_MARKER_LEN && !memcmp(*data, pohm_io_absent_marker, POHM_IO_MARKER_LEN)) {
		v->status = -ENOENT;
		memcpy(v->csum, op->c->marker_sum, POHM_ID_SIZE);
		return;
	}
	if (csum && !verify) {
		memcpy(v->csum, a.parent, POHM_ID_SIZE);
		return;
	}
	pohm_sha512(*data, *dlen, v->csum);
	if (csum && memcmp(v->csum, a.parent, POHM_ID_SIZE))
		v->status = -EBADMSG;
}

static void cas_votes_init(const struct gop *op, struct pohm_cas_vote *v)
{
	unsigned gi;

	for (gi = 0; gi < op->res->ngroups; gi++) {
		memset(&v[gi], 0, sizeof(v[gi]));
		v[gi].status = op->res->g[gi].status == -ENXIO ? -ENXIO : -ECANCELED;
	}
}

static int cas_read_enough(void *arg, struct pohm_req **reqs, size_t n, uint64_t *dl)
{
	struct gop *op = arg;
	struct pohm_cas_vote v[POHM_MAX_GROUPS];
	const uint8_t *d;
	size_t k, dn, pending = 0;
	int r;

	(void)reqs;
	(void)n;
	cas_votes_init(op, v);
	for (k = 0; k < op->n; k++) {
		io_cas_vote_read(op, &op->reqs[k], &v[op->gi[k]], &d, &dn, 0);
		pending += v[op->gi[k]].status == 1;
	}
	r = pohm_cas_pick(v, op->res->ngroups, 0);
	if (r == POHM_CAS_UNDECIDED)
		return 0;
	if (r == POHM_CAS_SPLIT)
		return !pending;	/* all answers help to judge the split */
	if (r == POHM_CAS_NOQUORUM || !op->wait_rest)
		return 1;
	io_set_read_grace(op, dl);	/* read repair: the rest, briefly */
	return !pending;
}

/*
 * READ every group; fill v, and bytes/blen pointing into the replies (valid
 * until io_op_release).  fill_res: record each group's answer in res->g.
 * 0 or -errno (no route to anything).
 */
static int cas_read_all(struct gop *op, struct pohm_cas_vote *v, const uint8_t **bytes,
			size_t *blen, int wait_rest, int fill_res, uint64_t deadline)
{
	struct pohm_client *c = op->c;
	struct pohm_io_result *res = op->res;
	uint8_t io[POHM_IO_ATTR_SIZE];
	struct pohm_io_attr a;
	unsigned gi;
	size_t k;
	int rc;

	rc = pohm_net_refresh(c->net, deadline, 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(c->net, m, sizeof(m));
		io_note(op, "%s", m);
		return rc;
	}
	memset(&a, 0, sizeof(a));
	memcpy(a.id, op->id, POHM_ID_SIZE);
	memcpy(a.parent, op->id, POHM_ID_SIZE);
	a.flags = c->cfg->noreadcsum ? 0 : POHM_IO_CHECKSUM;
	pohm_io_attr_encode(io, &a);
	io_op_release(op);
	op->wait_rest = wait_rest;
	op->quorum_at = 0;
	for (gi = 0; gi < res->ngroups; gi++) {
		bytes[gi] = NULL;
		blen[gi] = 0;
		io_op_add(op, gi, POHM_CMD_READ, 0, io, sizeof(io), NULL, 0);
	}
	io_op_run(op, deadline, cas_read_enough);
	for (gi = 0; gi < res->ngroups; gi++) {
		memset(&v[gi], 0, sizeof(v[gi]));
		v[gi].status = -ENXIO;
	}
	for (k = 0; k < op->n; k++) {
		unsigned g = op->gi[k];
		struct pohm_group_reply *gr = &res->g[g];

		io_cas_vote_read(op, &op->reqs[k], &v[g], &bytes[g], &blen[g], 1);
		if (!fill_res)
			continue;
		gr->rtt_ns = op->reqs[k].done_ns - op->reqs[k].sent_ns;
		gr->status = v[g].status;
		gr->ts = v[g].ts;
		gr->size = blen[g];
		memcpy(gr->csum, v[g].csum, POHM_ID_SIZE);
		gr->has_csum = v[g].status == 0;
		if (v[g].status == -EBADMSG || v[g].status == -EILSEQ)
			op->bad[g] = v[g].status;
	}
	return 0;
}

/* ---------------------------------------------------------------- repair */

/*
 * Write content (data, or the absent marker when data is NULL) over every
 * copy that differs from it, each by a data CAS against what that group
 * holds, under the stamp of the version (stamp; NULL: a fresh one), so
 * that every copy of a version carries its stamp.  forced: also copies
 * that may be young (a split being settled).  only: the groups to touch
 * (bit = group index; 0: all).
 */
static void cas_repair(struct gop *op, const struct pohm_cas_vote *v, const void *data, size_t len,
		       const uint8_t *sum, const struct pohm_time *stamp, int forced,
		       unsigned only, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	uint8_t io[POHM_MAX_GROUPS][POHM_IO_ATTR_SIZE];
	uint64_t floor = 0, now = pohm_sys_real_ns(), fresh = 0;
	const void *content = data ? data : pohm_io_absent_marker;
	size_t clen = data ? len : POHM_IO_MARKER_LEN, k;
	unsigned gi;

	for (gi = 0; gi < res->ngroups; gi++)
		if ((v[gi].status == 0 || v[gi].status == -ENOENT) &&
		    pohm_time_to_ns(&v[gi].ts) > floor)
			floor = pohm_time_to_ns(&v[gi].ts);
	io_op_release(op);
	for (gi = 0; gi < res->ngroups; gi++) {
		struct pohm_io_attr a;

		if (only && !(only & (1u << gi)))
			continue;
		memset(&a, 0, sizeof(a));
		a.flags = POHM_IO_CAS;
		if (v[gi].status == 0) {
			if (sum && !memcmp(v[gi].csum, sum, POHM_ID_SIZE))
				continue;		/* holds it */
			if (!forced && !cas_old_enough(op->c, &v[gi].ts, now))
				continue;		/* may be a write in flight: its writer's */
			memcpy(a.parent, v[gi].csum, POHM_ID_SIZE);
		} else if (v[gi].status == -ENOENT) {
			if (!sum)
				continue;		/* absent wanted, absent held */
			/* Passes where the key is missing or holds the marker. */
			memcpy(a.parent, op->c->marker_sum, POHM_ID_SIZE);
		} else if (res->g[gi].status == -EILSEQ) {
			a.flags = POHM_IO_CAS_TIMESTAMP;	/* corrupt: no CAS can match it */
		} else {
			continue;			/* no answer: nothing known to replace */
		}
		if (stamp && a.flags == POHM_IO_CAS) {
			a.timestamp = *stamp;
		} else {
			if (!fresh)
				fresh = pohm_clock_next(&op->c->clock_last, now, floor + 1);
			a.timestamp = pohm_time_from_ns(fresh);
		}
		memcpy(a.id, op->id, POHM_ID_SIZE);
		a.size = clen;
		pohm_io_attr_encode(io[gi], &a);
		io_op_add(op, gi, POHM_CMD_WRITE, 0, io[gi], POHM_IO_ATTR_SIZE, content, clen);
	}
	if (!op->n)
		return;
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++) {
		struct pohm_group_reply *g = &res->g[op->gi[k]];
		int st = op->reqs[k].status;

		g->repair = st ? st : 1;
		if (st == -EBADFD)
			io_note(op, "group %u changed meanwhile: not repaired", g->group);
		else if (st)
			io_note_group(op, op->gi[k], st, "read repair failed on ");
		else
			io_note(op, "group %u repaired%s", g->group, data ? "" : " (absent)");
	}
	io_op_release(op);
}

/*
 * The groups holding a lost write that blocks writers: a copy other than
 * the committed content idx (-ENOENT: absent) that is stamped after it and
 * older than any writer may count (RELIABILITY.md finding 12).  A writer
 * that died between the arbiter's ack and its rollback leaves exactly
 * that; on the arbiter it refuses every later CAS of the key, and nobody
 * else would undo it without read repair.  Bit = group index; 0: none.
 */
static unsigned cas_lost_ahead(const struct pohm_client *c, const struct pohm_cas_vote *v,
			       size_t n, int idx, const struct pohm_time *ts)
{
	uint64_t now = pohm_sys_real_ns();
	unsigned gi, mask = 0;

	for (gi = 0; gi < n; gi++) {
		int differs = idx >= 0 ? (v[gi].status == 0 &&
					  memcmp(v[gi].csum, v[idx].csum, POHM_ID_SIZE)) ||
						 (v[gi].status == -ENOENT && v[gi].ts.tsec)
				       : v[gi].status == 0;

		if (differs && pohm_time_cmp(&v[gi].ts, ts) > 0 && cas_old_enough(c, &v[gi].ts, now))
			mask |= 1u << gi;
	}
	return mask;
}

/* ---------------------------------------------------------------- get */

/*
 * One read of every group.  0 (*data, *len, csum), -ENOENT, POHM_CAS_SPLIT
 * (read again; *unsettled = 1 if it is an old split that a silent group
 * keeps from being settled), or -errno.
 */
static int cas_read_once(struct gop *op, uint8_t **data, size_t *len, uint8_t *csum,
			 int *unsettled)
{
	struct pohm_client *c = op->c;
	struct pohm_io_result *res = op->res;
	struct pohm_cas_vote v[POHM_MAX_GROUPS];
	const uint8_t *bytes[POHM_MAX_GROUPS];
	size_t blen[POHM_MAX_GROUPS];
	uint64_t now;
	unsigned gi, ahead;
	int rc, idx, forced = 0;

	rc = cas_read_all(op, v, bytes, blen, c->cfg->read_repair, 1,
			  op->start + c->cfg->read_wait_timeout_ns);
	if (rc)
		return rc;
	idx = pohm_cas_pick(v, res->ngroups, 1);
	if (idx == POHM_CAS_SPLIT) {
		/* Young copies may be writes in flight or lost ones their writers undo: wait. */
		now = pohm_sys_real_ns();
		for (gi = 0; gi < res->ngroups; gi++)
			if ((v[gi].status == 0 || (v[gi].status == -ENOENT && v[gi].ts.tsec)) &&
			    !cas_old_enough(c, &v[gi].ts, now))
				break;
		if (gi < res->ngroups) {
			io_op_release(op);
			return POHM_CAS_SPLIT;
		}
		if (!cas_split_settleable(v, res->ngroups)) {
			/*
			 * Old, but a group that did not answer may hold the
			 * committed version: spreading one of these could
			 * overwrite it (RELIABILITY.md finding 1).  Read again
			 * until that group is back or the read's time is up.
			 */
			*unsettled = 1;
			io_op_release(op);
			return POHM_CAS_SPLIT;
		}
		idx = pohm_cas_fallback(v, res->ngroups);
		forced = 1;
		io_note(op, "the groups disagree and nobody is settling it: taking %s",
		     idx >= 0 ? "the newest copy most groups hold" : "absent");
	}
	if (idx == POHM_CAS_NOQUORUM || idx == POHM_CAS_SPLIT) {
		io_note(op, "fewer than a majority of the groups answered");
		for (gi = 0; gi < res->ngroups; gi++)
			if (v[gi].status != 0 && v[gi].status != -ENOENT)
				io_note_group(op, gi, res->g[gi].status, "");
		io_op_release(op);
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].status == -ETIMEDOUT)
				return -ETIMEDOUT;
		return -EIO;
	}
	if (idx >= 0) {
		res->chosen = idx;
		res->size = blen[idx];
		for (gi = 0; gi < res->ngroups; gi++)
			if (v[gi].status == 0 && !memcmp(v[gi].csum, v[idx].csum, POHM_ID_SIZE) &&
			    pohm_time_cmp(&v[gi].ts, &res->ts) > 0)
				res->ts = v[gi].ts;
		*data = malloc(blen[idx] ? blen[idx] : 1);
		if (!*data) {
			io_op_release(op);
			return -ENOMEM;
		}
		memcpy(*data, bytes[idx], blen[idx]);
		*len = blen[idx];
		memcpy(csum, v[idx].csum, POHM_ID_SIZE);
		for (gi = 0; gi < res->ngroups; gi++) {
			int64_t d = (int64_t)(pohm_time_to_ns(&v[gi].ts) - pohm_time_to_ns(&res->ts));

			if (v[gi].status == -ENOENT)
				io_note(op, "group %u has no copy", res->g[gi].group);
			else if (!v[gi].status && memcmp(v[gi].csum, csum, POHM_ID_SIZE))
				io_note(op, "group %u holds another version, stamped %lld us %s", res->g[gi].group,
				     (long long)(d < 0 ? -d : d) / 1000, d < 0 ? "earlier" : "later");
		}
	}
	/* Without read repair, still undo a lost write that would block every writer. */
	ahead = c->cfg->read_repair || forced ? 0 : cas_lost_ahead(c, v, res->ngroups, idx, &res->ts);
	if (c->cfg->read_repair || forced || ahead)
		cas_repair(op, v, idx >= 0 ? *data : NULL, *len, idx >= 0 ? csum : NULL,
			   idx >= 0 ? &res->ts : NULL, forced, ahead,
			   pohm_sys_mono_ns() + c->cfg->write_wait_timeout_ns);
	io_op_release(op);
	if (forced) {
		/* Read it back: the settled content is committed only once a majority holds it. */
		free(*data);
		*data = NULL;
		*len = 0;
		return POHM_CAS_SPLIT;
	}
	return idx >= 0 ? 0 : -ENOENT;
}

int pohm_io_cas_get(struct pohm_client *c, const void *key, size_t keylen, uint8_t **data,
		    size_t *len, uint8_t csum[POHM_ID_SIZE], struct pohm_io_result *res)
{
	struct gop *op = malloc(sizeof(*op));
	uint64_t t0 = pohm_sys_mono_ns(), pause = 100000, splits = 0;
	uint64_t limit = t0 + c->cfg->read_wait_timeout_ns + cas_age_limit(c);
	unsigned gi;
	int rc, unsettled = 0;

	*data = NULL;
	*len = 0;
	if (!op)
		return -ENOMEM;
	for (;;) {
		io_op_init(op, c, key, keylen, res);
		op->own_node = 1;
		unsettled = 0;
		rc = cas_read_once(op, data, len, csum, &unsettled);
		if (rc != POHM_CAS_SPLIT)
			break;
		splits++;
		if (pohm_sys_mono_ns() >= limit) {
			io_note(op, "the groups still disagree after %.1f s (%llu reads)%s",
			     (double)(pohm_sys_mono_ns() - t0) / 1e9, (unsigned long long)splits,
			     unsettled ? ": the groups that answered hold different old versions "
			     "and one that did not may hold the committed one; not settled" : "");
			if (unsettled)
				for (gi = 0; gi < res->ngroups; gi++)
					if (res->g[gi].status && res->g[gi].status != -ENOENT)
						io_note_group(op, gi, res->g[gi].status, "");
			rc = -EIO;
			break;
		}
		cas_pause(&pause);
	}
	if (splits && !rc)
		io_note(op, "read %llu times while the groups disagreed", (unsigned long long)splits);
	free(op);
	return rc;
}

/* ---------------------------------------------------------------- put */

/* A WRITE's outcome: 1 applied, 0 not (refused, failed, never sent), -1 unknown. */
int io_cas_write_outcome(const struct pohm_req *r)
{
	if (pohm_req_final(r))
		return r->status == 0;
	return r->txoff ? -1 : 0;
}

/* LOOKUP the groups whose outcome is unknown: those holding exactly our version applied it. */
static void cas_confirm(struct gop *op, const uint8_t *sum, const struct pohm_time *ts,
			uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	unsigned gi;
	size_t k;

	io_op_release(op);
	for (gi = 0; gi < res->ngroups; gi++)
		if (res->g[gi].applied < 0)
			io_op_add(op, gi, POHM_CMD_LOOKUP, POHM_FLAG_CHECKSUM, NULL, 0, NULL, 0);
	if (!op->n)
		return;
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++) {
		const struct pohm_pkt *p = pohm_req_final(&op->reqs[k]);
		struct pohm_file_info fi;

		if (op->reqs[k].status || !p ||
		    pohm_lookup_reply_decode(NULL, &fi, p->data, (size_t)p->cmd.size))
			continue;
		if (!memcmp(fi.checksum, sum, POHM_ID_SIZE) && !pohm_time_cmp(&fi.mtime, ts))
			res->g[op->gi[k]].applied = 1;
	}
	io_op_release(op);
}

/*
 * Settle an attempt whose outcome is still unknown when its ack window
 * closed (a group slow but maybe alive: a GC pause, a disk stall), until
 * end (write_wait_timeout from the attempt's start), by LOOKUPs of every
 * group (session 11, decision 0006).  Acks later than the window do not
 * count: what counts is that every group holds our bytes (sum), seen in
 * two rounds one after the other.  Why every group and twice: our copies
 * are older than the age limit by now, so a reader that saw our bytes on
 * a minority and the replaced content on a majority may undo them (read
 * repair, cas_lost_ahead).  A group leaves our bytes only by such an undo
 * and never comes back to them, so two rounds that both found every group
 * holding them (the second sent after the first's last answer) mean that
 * at one instant all did; up to that instant no undo had landed, each
 * pending one was decided on a minority of ours (our copies only grew
 * until then), and what is left after them is still a majority.  A
 * majority alone found late is not enough: the undos may be on their way.
 * With 1 or 2 groups a majority is every group, so no reader ever sees
 * one without a group holding ours: one round is enough.
 * Returns 1 when committed (every group applied, res->g[].applied = 1).
 * Else 0, with res->g[].applied raised to 1 where the last round found our
 * bytes (for the rollback): it stops early when nothing can change any
 * more (no group where our write may still land: silent, or holding what
 * we replaced) or when too few such groups are left for a majority.
 * Called only when no group refused (no racing writer seen) and before
 * any rollback, so a late ack never counts for a writer that undid its
 * write.
 */
static int cas_settle(struct gop *op, const uint8_t *sum, const uint8_t *parent, uint64_t end)
{
	struct pohm_io_result *res = op->res;
	uint64_t pause = 20000000ULL, now, t0 = pohm_sys_mono_ns();
	unsigned gi, rounds = 0, all_ours = 0, need = res->ngroups > op->w ? 2 : 1;

	while ((now = pohm_sys_mono_ns()) < end) {
		int seen[POHM_MAX_GROUPS], st[POHM_MAX_GROUPS];
		unsigned ours = 0, known = 0, maybe = 0;
		size_t k;

		io_op_release(op);
		for (gi = 0; gi < res->ngroups; gi++) {
			seen[gi] = 0;	/* 0 no answer, 1 ours, 2 what we replaced, 3 other */
			st[gi] = res->g[gi].status;
			if (!io_op_add(op, gi, POHM_CMD_LOOKUP, POHM_FLAG_CHECKSUM, NULL, 0, NULL, 0))
				res->g[gi].status = st[gi];	/* keep the write's status */
		}
		io_op_run(op, end, NULL);
		rounds++;
		for (k = 0; k < op->n; k++) {
			const struct pohm_pkt *p = pohm_req_final(&op->reqs[k]);
			struct pohm_file_info fi;

			gi = op->gi[k];
			if (op->reqs[k].status == -ENOENT)
				seen[gi] = 2;	/* missing: our CAS passes there */
			else if (op->reqs[k].status || !p ||
				 pohm_lookup_reply_decode(NULL, &fi, p->data, (size_t)p->cmd.size))
				seen[gi] = 0;
			else if (!memcmp(fi.checksum, sum, POHM_ID_SIZE))
				seen[gi] = 1;
			else
				seen[gi] = !memcmp(fi.checksum, parent, POHM_ID_SIZE) ? 2 : 3;
		}
		io_op_release(op);
		for (gi = 0; gi < res->ngroups; gi++) {
			if (seen[gi] == 1) {
				ours++;
				if (res->g[gi].applied < 0) {
					res->g[gi].applied = 1;
					res->g[gi].status = 0;
				}
			}
			if (seen[gi] == 1 || (seen[gi] == 0 && res->g[gi].applied > 0))
				known++;
			else if (res->g[gi].applied < 0 && seen[gi] != 3)
				maybe++;	/* silent, or our write not there yet */
		}
		if (ours == res->ngroups) {
			if (++all_ours == need) {
				io_note(op, "every group holds this version %.1f s after the write "
					"(%u lookups): committed",
					(double)(pohm_sys_mono_ns() - op->start) / 1e9, rounds);
				return 1;
			}
			continue;
		}
		all_ours = 0;
		if (!maybe || known + maybe < op->w)
			break;
		/* Answers came before our write landed (or it was lost): ask again. */
		now = pohm_sys_mono_ns();
		if (now + pause >= end)
			break;
		{
			struct timespec ts = { 0, (long)pause };

			nanosleep(&ts, NULL);
		}
		if (pause < 400000000ULL)
			pause *= 2;
	}
	io_op_release(op);
	io_note(op, "not settled by lookups in %.1f s (%u rounds)",
		(double)(pohm_sys_mono_ns() - t0) / 1e9, rounds);
	return 0;
}

/*
 * Undo our version on the groups that applied it, by a data CAS against
 * ours (a group that moved on is left alone).  What goes back is the
 * content committed now, if a majority holds one (so a group that took our
 * lost write is not left behind the others), else what we replaced (the
 * absent marker for a create).  Returns the groups where ours may still be
 * (no answer); *replaced counts groups that had moved on.  If a majority
 * already holds exactly our bytes (our write landed where its outcome was
 * unknown, or another writer made the same change), nothing is undone and
 * *committed is set to how many groups hold them.  *forward: a majority
 * held other content (the key moved on) and that is what went back.
 * keep: our write may be on a quorum (decision 0078): nothing is undone
 * unless a majority holds content other than ours and our parent (then
 * the key moved on past ours and goes forward to it, as a reader's repair
 * would); the groups that applied are returned as stuck.
 */
static unsigned cas_rollback(struct gop *op, const uint8_t *sum, const struct pohm_cas_old *old,
			     const struct pohm_time *ours, int keep, unsigned *replaced,
			     unsigned *committed, int *forward)
{
	struct pohm_io_result *res = op->res;
	struct pohm_cas_vote v[POHM_MAX_GROUPS];
	const uint8_t *bytes[POHM_MAX_GROUPS];
	size_t blen[POHM_MAX_GROUPS], clen = 0, k;
	uint8_t io[POHM_IO_ATTR_SIZE], *fwd = NULL;
	const void *content = NULL;
	struct pohm_io_attr a;
	unsigned gi, stuck = 0;
	uint64_t stamp;
	int idx = POHM_CAS_SPLIT;

	*replaced = 0;
	*committed = 0;
	*forward = 0;
	if (!cas_read_all(op, v, bytes, blen, 0, 0,
			  pohm_sys_mono_ns() + op->c->cfg->read_wait_timeout_ns))
		idx = pohm_cas_pick(v, res->ngroups, 1);
	if (idx >= 0 && !memcmp(v[idx].csum, sum, POHM_ID_SIZE)) {
		/* A majority holds our bytes: ours landed after all, or another writer's same change. */
		for (gi = 0; gi < res->ngroups; gi++) {
			if (v[gi].status || memcmp(v[gi].csum, sum, POHM_ID_SIZE))
				continue;
			(*committed)++;
			if (pohm_time_cmp(&v[gi].ts, &res->ts) > 0)
				res->ts = v[gi].ts;	/* the version's stamp: its newest holder */
		}
		io_note(op, "a majority holds these bytes after all (%u groups): committed, left in place",
			*committed);
		io_op_release(op);
		return 0;
	}
	/*
	 * keep: no majority, or a majority of what ours replaced (our parent,
	 * or absence for a create), is no sign ours lost: the groups whose
	 * outcome is unknown may answer this read before our write to them
	 * lands, and going back to the parent could take back what readers
	 * saw once ours did land (decision 0078 point 2).  Left in place.
	 */
	if (keep && (idx == -ENOENT ? !old->csum :
		     idx < 0 || (old->csum && !memcmp(v[idx].csum, old->csum, POHM_ID_SIZE)))) {
		io_op_release(op);
		for (gi = 0; gi < res->ngroups; gi++)
			stuck += res->g[gi].applied > 0;
		io_note(op, "not undone: with the groups whose outcome is unknown it may be on a "
			"majority (decision 0078)");
		return stuck;
	}
	/* The version put back keeps its stamp (every copy of a version carries it). */
	stamp = pohm_clock_next(&op->c->clock_last, pohm_sys_real_ns(), pohm_time_to_ns(ours) + 1);
	*forward = idx >= 0;
	if (idx >= 0 && (fwd = malloc(blen[idx] ? blen[idx] : 1))) {
		memcpy(fwd, bytes[idx], blen[idx]);
		content = fwd;
		clen = blen[idx];
		stamp = 0;
		for (gi = 0; gi < res->ngroups; gi++)
			if (!v[gi].status && !memcmp(v[gi].csum, v[idx].csum, POHM_ID_SIZE) &&
			    pohm_time_to_ns(&v[gi].ts) > stamp)
				stamp = pohm_time_to_ns(&v[gi].ts);
	} else if (idx == -ENOENT || (idx < 0 && !old->csum)) {
		content = pohm_io_absent_marker;
		clen = POHM_IO_MARKER_LEN;
	} else if (old->data && old->len) {
		content = old->data;
		clen = old->len;
		if (old->min_ts_ns)
			stamp = old->min_ts_ns - 1;
	}
	io_op_release(op);
	if (!content) {
		for (gi = 0; gi < res->ngroups; gi++)
			stuck += res->g[gi].applied > 0;
		if (stuck)
			io_note(op, "no rollback: no majority to roll forward to and the replaced "
				"content is not known");
		return stuck;
	}
	memset(&a, 0, sizeof(a));
	memcpy(a.id, op->id, POHM_ID_SIZE);
	memcpy(a.parent, sum, POHM_ID_SIZE);
	a.flags = POHM_IO_CAS;
	a.size = clen;
	a.timestamp = pohm_time_from_ns(stamp);
	pohm_io_attr_encode(io, &a);
	for (gi = 0; gi < res->ngroups; gi++)
		if (res->g[gi].applied > 0)
			io_op_add(op, gi, POHM_CMD_WRITE, 0, io, sizeof(io), content, clen);
	if (!op->n) {
		free(fwd);
		return 0;	/* applied nowhere known: nothing to undo */
	}
	io_op_run(op, pohm_sys_mono_ns() + op->c->cfg->write_wait_timeout_ns, NULL);
	for (k = 0; k < op->n; k++) {
		struct pohm_group_reply *g = &res->g[op->gi[k]];
		int st = op->reqs[k].status;

		g->repair = st ? st : 1;
		if (!st) {
			io_note(op, "%s on group %u", fwd ? "rolled forward to the committed content" :
			     "rolled back", g->group);
		} else if (st == -EBADFD && pohm_req_final(&op->reqs[k])) {
			(*replaced)++;
			io_note(op, "group %u moved on before the rollback", g->group);
		} else {
			stuck++;
			io_note_group(op, op->gi[k], st, "rollback failed on ");
		}
	}
	io_op_release(op);
	free(fwd);
	return stuck;
}

/*
 * After a commit of ours (stamp res->ts, over parent whose newest stamp
 * was floor): bring each group that refused it up to it where that cannot
 * undo a write that may still be committed.  A group holding our parent
 * (it refused because another write was still on its way) takes our CAS
 * as sent; a missing copy is created; a copy stamped before our parent is
 * older than everything a write that could still win must be based on
 * (our version or a later one), so it is replaced.  Anything else is left
 * to read repair.
 */
static void cas_catch_up(struct gop *op, const void *data, size_t len, const uint8_t *sum,
			 const uint8_t *parent, uint64_t floor)
{
	struct pohm_io_result *res = op->res;
	uint8_t io[POHM_MAX_GROUPS][POHM_IO_ATTR_SIZE];
	uint8_t with[POHM_MAX_GROUPS][POHM_ID_SIZE];
	unsigned gi, want[POHM_MAX_GROUPS] = { 0 };
	uint64_t deadline = pohm_sys_mono_ns() + op->c->cfg->write_wait_timeout_ns;
	size_t k;

	io_op_release(op);
	for (gi = 0; gi < res->ngroups; gi++)
		if (res->g[gi].status == -EBADFD && !res->g[gi].applied)
			io_op_add(op, gi, POHM_CMD_LOOKUP, POHM_FLAG_CHECKSUM, NULL, 0, NULL, 0);
	if (!op->n)
		return;
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++) {
		const struct pohm_pkt *p = pohm_req_final(&op->reqs[k]);
		struct pohm_file_info fi;

		gi = op->gi[k];
		if (op->reqs[k].status == -ENOENT) {
			memcpy(with[gi], op->c->marker_sum, POHM_ID_SIZE);
		} else if (op->reqs[k].status || !p ||
			   pohm_lookup_reply_decode(NULL, &fi, p->data, (size_t)p->cmd.size) ||
			   !memcmp(fi.checksum, sum, POHM_ID_SIZE)) {
			continue;
		} else if (!memcmp(fi.checksum, parent, POHM_ID_SIZE) ||
			   pohm_time_to_ns(&fi.mtime) < floor) {
			memcpy(with[gi], fi.checksum, POHM_ID_SIZE);
		} else {
			continue;
		}
		want[gi] = 1;
	}
	io_op_release(op);
	for (gi = 0; gi < res->ngroups; gi++) {
		struct pohm_io_attr a;

		if (!want[gi])
			continue;
		memset(&a, 0, sizeof(a));
		memcpy(a.id, op->id, POHM_ID_SIZE);
		memcpy(a.parent, with[gi], POHM_ID_SIZE);
		a.flags = POHM_IO_CAS;
		a.timestamp = res->ts;
		a.size = len;
		pohm_io_attr_encode(io[gi], &a);
		io_op_add(op, gi, POHM_CMD_WRITE, 0, io[gi], POHM_IO_ATTR_SIZE, data, len);
	}
	if (!op->n)
		return;
	io_op_run(op, deadline, NULL);
	for (k = 0; k < op->n; k++) {
		gi = op->gi[k];
		res->g[gi].repair = op->reqs[k].status ? op->reqs[k].status : 1;
		if (!op->reqs[k].status) {
			res->g[gi].applied = 1;
			io_note(op, "group %u caught up", res->g[gi].group);
		}
	}
	io_op_release(op);
}

/*
 * Send our CAS (attributes io, bytes data) and record each group's outcome
 * in res->g[].applied.  parallel: every group at once.  Else the arbiter
 * first: the first group, in an order that depends on the key only, so
 * that racing writers meet there one at a time; the loser has written
 * nothing and stops, the winner goes on to the others, which then hold
 * what it expects.  A group that was behind when we read (a stale copy,
 * not yet repaired) would refuse everyone: it is passed over (one ahead is
 * not: it holds a write in flight that we must lose to).  A group that
 * cannot be reached passes the role on; one that does not answer within an
 * eighth of the window (at least ARBITER_MIN_NS) leaves the rest to be
 * written in parallel.  0, or -EBADFD when the arbiter refused (nothing
 * else was sent).
 */
static int cas_send(struct gop *op, const uint8_t *io, const void *data, size_t len,
		    const struct pohm_cas_old *old, int parallel, uint64_t deadline)
{
	struct pohm_io_result *res = op->res;
	unsigned gi, rot = (unsigned)op->id[0] % res->ngroups;
	uint64_t arbiter_dl = io_cas_ack_window(op->c) / 8;
	uint32_t sent = 0;
	size_t k;

	arbiter_dl = op->start + (arbiter_dl > ARBITER_MIN_NS ? arbiter_dl : ARBITER_MIN_NS);
	for (k = 0; k < res->ngroups && !parallel; k++) {
		const struct pohm_req *r;
		int o;

		gi = (rot + (unsigned)k) % res->ngroups;
		if (old->behind & (1u << gi))
			continue;
		sent |= 1u << gi;
		io_op_release(op);
		if (!io_op_add(op, gi, POHM_CMD_WRITE, 0, io, POHM_IO_ATTR_SIZE, data, len))
			continue;	/* no route: -ENXIO */
		io_op_run(op, arbiter_dl < deadline ? arbiter_dl : deadline, NULL);
		io_write_collect(op);
		r = &op->reqs[0];
		o = res->g[gi].applied = io_cas_write_outcome(r);
		if (o > 0) {
			op->pre_ok = 1;
			break;
		}
		if (r->status == -EBADFD && pohm_req_final(r)) {
			io_note(op, "compare-and-swap refused by group %u (the arbiter)", res->g[gi].group);
			io_op_release(op);
			return -EBADFD;
		}
		if (o < 0)
			break;		/* may still apply: no second arbiter */
	}
	io_op_release(op);
	op->quorum_at = 0;
	for (gi = 0; gi < res->ngroups; gi++)
		if (!(sent & (1u << gi)))
			io_op_add(op, gi, POHM_CMD_WRITE, 0, io, POHM_IO_ATTR_SIZE, data, len);
	if (op->n) {
		io_op_run(op, deadline, io_write_enough);
		io_write_collect(op);
		for (k = 0; k < op->n; k++)
			res->g[op->gi[k]].applied = io_cas_write_outcome(&op->reqs[k]);
	}
	io_op_release(op);
	return 0;
}

/*
 * The group that decides which of two writers that split a parallel
 * attempt may retry: the first group in the key's order (the arbiter's)
 * that answered our write, applied or refused.  A group applies one CAS
 * over a given content, so of writers racing from the same version at
 * most one was applied there.  -1: none answered.
 */
static int cas_tie_group(const struct gop *op)
{
	const struct pohm_io_result *res = op->res;
	unsigned k, gi, rot = (unsigned)op->id[0] % res->ngroups;

	for (k = 0; k < res->ngroups; k++) {
		gi = (rot + k) % res->ngroups;
		if (res->g[gi].applied > 0 || res->g[gi].status == -EBADFD)
			return (int)gi;
	}
	return -1;
}

/*
 * One attempt of pohm_io_cas_put (see there), stamped now: send, count,
 * confirm unknown outcomes, then commit (catch-up) or undo (rollback).
 * *retry is set when a parallel attempt split and left nothing of ours
 * anywhere (everything it applied was put back to what it replaced, no
 * outcome unknown), the key did not move on (no majority content to roll
 * forward to, no group replaced ours) and the tie group applied ours:
 * the caller may then try once more, the arbiter first.
 */
/* An attempt's start: outcomes cleared, stamped now, its WRITE attributes in io. */
void io_cas_attempt_start(struct gop *op, size_t len, const struct pohm_cas_old *old,
			  uint8_t io[POHM_IO_ATTR_SIZE])
{
	struct pohm_client *c = op->c;
	struct pohm_io_result *res = op->res;
	struct pohm_io_attr a;
	unsigned gi;

	res->committed = 0;
	op->pre_ok = 0;
	for (gi = 0; gi < res->ngroups; gi++) {
		res->g[gi].applied = 0;
		res->g[gi].repair = 0;
		res->g[gi].status = -ECANCELED;
	}
	res->ts = pohm_time_from_ns(pohm_clock_next(&c->clock_last, pohm_sys_real_ns(),
						    old->min_ts_ns));
	memset(&a, 0, sizeof(a));
	memcpy(a.id, op->id, POHM_ID_SIZE);
	memcpy(a.parent, old->csum ? old->csum : c->marker_sum, POHM_ID_SIZE);
	a.flags = POHM_IO_CAS;
	a.timestamp = res->ts;
	a.size = len;
	pohm_io_attr_encode(io, &a);
}

static int cas_attempt(struct gop *op, const void *data, size_t len, const uint8_t *sum,
		       const struct pohm_cas_old *old, int parallel, int *retry)
{
	uint8_t io[POHM_IO_ATTR_SIZE];
	int rc;

	*retry = 0;
	io_cas_attempt_start(op, len, old, io);
	rc = cas_send(op, io, data, len, old, parallel, op->start + io_cas_ack_window(op->c));
	return rc ? rc : io_cas_attempt_end(op, data, len, sum, old, parallel, retry);
}

/* The rest of an attempt once its writes were answered (cas_attempt). */
int io_cas_attempt_end(struct gop *op, const void *data, size_t len, const uint8_t *sum,
		       const struct pohm_cas_old *old, int parallel, int *retry)
{
	struct pohm_client *c = op->c;
	struct pohm_io_result *res = op->res;
	struct {
		uint8_t parent[POHM_ID_SIZE];
	} a;
	uint64_t deadline = op->start + io_cas_ack_window(c);	/* later acks do not count */
	unsigned gi, applied = 0, unknown = 0, refused = 0, stuck, replaced = 0, held = 0;
	int tie, forward = 0, late = 0, maybe;

	*retry = 0;
	memcpy(a.parent, old->csum ? old->csum : c->marker_sum, POHM_ID_SIZE);
	tie = cas_tie_group(op);
	for (gi = 0; gi < res->ngroups; gi++) {
		applied += res->g[gi].applied > 0;
		unknown += res->g[gi].applied < 0;
		refused += res->g[gi].status == -EBADFD;
	}
	if (applied < op->w && unknown && pohm_sys_mono_ns() < deadline) {
		cas_confirm(op, sum, &res->ts, deadline);
		applied = unknown = 0;
		for (gi = 0; gi < res->ngroups; gi++) {
			applied += res->g[gi].applied > 0;
			unknown += res->g[gi].applied < 0;
		}
	}
	/*
	 * Past the window with outcomes unknown and no racing writer seen: a
	 * slow group within write_wait_timeout is not a failure (session 11).
	 * Late answers count only when every group holds our bytes
	 * (cas_settle); else what they found goes to the rollback below.
	 */
	if (applied < op->w && unknown && !refused && applied + unknown >= op->w &&
	    op->start + c->cfg->write_wait_timeout_ns > deadline) {
		late = 1;
		if (cas_settle(op, sum, a.parent, op->start + c->cfg->write_wait_timeout_ns)) {
			res->committed = res->ngroups;
			return 0;
		}
		applied = unknown = 0;
		for (gi = 0; gi < res->ngroups; gi++) {
			applied += res->g[gi].applied > 0;
			unknown += res->g[gi].applied < 0;
		}
	}
	res->committed = applied;
	if (applied >= op->w && !late) {
		for (gi = 0; gi < res->ngroups; gi++)
			if (res->g[gi].applied <= 0 && res->g[gi].status != -ECANCELED)
				io_note_group(op, gi, res->g[gi].status, "not written to ");
		if (refused)
			cas_catch_up(op, data, len, sum, a.parent,
				     old->min_ts_ns ? old->min_ts_ns - 1 : 0);
		return 0;
	}
	io_note(op, "compare-and-swap applied on %u of %u groups, %u needed%s", applied,
		res->ngroups, op->w, parallel ? " (all groups at once)" : "");
	for (gi = 0; gi < res->ngroups; gi++)
		if (res->g[gi].applied <= 0)
			io_note_group(op, gi, res->g[gi].status, "");
	/*
	 * Also where none is known to have applied but some outcome is unknown
	 * and a group refused (a racing writer, maybe with the same bytes): the
	 * rollback's read tells whether a majority holds our bytes after all.
	 * Where the groups that applied (in the window or found later) and
	 * those whose outcome is unknown make a quorum, our write may have
	 * been on a quorum at once, and a reader may have taken it as
	 * committed: it is never undone and never reported lost, only
	 * committed or unknown (decision 0078).  Readers settle it once the
	 * silent groups answer (pohm_cas_pick, cas_split_settleable).
	 */
	maybe = applied + unknown >= op->w;
	stuck = applied || (unknown && refused) ?
		cas_rollback(op, sum, old, &res->ts, maybe, &replaced, &held, &forward) : 0;
	res->split += applied > 0;
	if (held >= op->w) {
		/* The truth is "committed", whoever's write put the bytes there. */
		res->committed = held;
		return 0;
	}
	if (maybe || stuck + unknown >= op->w || (replaced && unknown)) {
		io_note(op, "outcome unknown: %u group(s) may still hold this version", stuck + unknown);
		res->unknown = stuck + unknown ? stuck + unknown : 1;
		return -EIO;
	}
	if (refused) {
		*retry = parallel && !old->fresh && !stuck && !unknown && !replaced && !forward &&
			 tie >= 0 && res->g[tie].applied > 0;
		return -EBADFD;
	}
	for (gi = 0; gi < res->ngroups; gi++)
		if (res->g[gi].status && res->g[gi].status != -ETIMEDOUT)
			break;
	return gi < res->ngroups ? -EIO : -ETIMEDOUT;
}

/*
 * Whether the first attempt goes to every group at once (one wait when
 * uncontended; session 11).  Not when a group was behind (it would refuse
 * and split every parallel attempt), nor when the content replaced is not
 * known (a split could not be rolled back), nor when the caller asks for
 * the arbiter (a key it just lost: contended).
 */
int io_cas_parallel_first(const struct pohm_cas_old *old)
{
	if (old->fresh && !old->csum)
		return 1;
	return !old->arbiter && !old->behind && (!old->csum || (old->data && old->len));
}

/* pohm_io_cas_put with the SHA-512 of data already known (known), or NULL. */
static int cas_put_known(struct pohm_client *c, const void *key, size_t keylen, const void *data,
			 size_t len, const struct pohm_cas_old *old, struct pohm_io_result *res,
			 const uint8_t *known)
{
	uint8_t sum[POHM_ID_SIZE];
	struct gop *op = malloc(sizeof(*op));
	int rc, retry = 0, parallel = io_cas_parallel_first(old);

	if (!op)
		return -ENOMEM;
	io_op_init(op, c, key, keylen, res);
	op->own_node = 1;
	if (!len || len > POHM_IO_PACKET_MAX) {
		io_note(op, "a CAS object must be 1 byte to %u MiB", POHM_IO_PACKET_MAX >> 20);
		rc = len ? -EFBIG : -EINVAL;
		goto out;
	}
	rc = pohm_net_refresh(c->net, op->start + io_cas_ack_window(c), 0);
	if (rc) {
		char m[256];

		pohm_net_last_error(c->net, m, sizeof(m));
		io_note(op, "%s", m);
		goto out;
	}
	/* CAS-arbitrated objects: a majority of all groups, always (DESIGN.md §3). */
	op->w = res->ngroups / 2 + 1;
	res->size = len;
	if (known)
		memcpy(sum, known, sizeof(sum));
	else
		pohm_sha512(data, len, sum);
	memcpy(res->csum, sum, sizeof(res->csum));
	res->has_csum = 1;
	/*
	 * Optimistic: every group at once (decision 0006, amended in session
	 * 11).  A majority that applied it commits it in one wait.  Racing
	 * writers may split the groups between them; each undoes its own
	 * copies (rollback, by CAS against its own bytes: a version's bytes
	 * are unique, finding 15), and the one the tie group applied tries
	 * once more the arbiter first, so racers cannot keep splitting.
	 */
	rc = cas_attempt(op, data, len, sum, old, parallel, &retry);
	if (retry) {
		io_note(op, "split by a racing writer and undone: again, the arbiter first");
		op->start = pohm_sys_mono_ns();
		rc = cas_attempt(op, data, len, sum, old, 0, &retry);
	}
out:
	io_op_release(op);
	free(op);
	return rc;
}

int pohm_io_cas_put(struct pohm_client *c, const void *key, size_t keylen, const void *data,
		    size_t len, const struct pohm_cas_old *old, struct pohm_io_result *res)
{
	return cas_put_known(c, key, keylen, data, len, old, res, NULL);
}

/* ---------------------------------------------------------------- put of several keys */

/* Its run is io_many_enough's (io_op.c): each key's write enough, all of
 * them for the run to end; the ops on the heap (up to POHM_IO_CAS_PUT_N
 * keys: an exit push's batch). */
int pohm_io_cas_put_n(struct pohm_client *c, size_t n, struct pohm_io_cas_put *p)
{
	struct io_many m;
	struct pohm_req **ptrs = NULL;
	uint8_t (*io)[POHM_IO_ATTR_SIZE] = NULL;
	uint8_t (*sum)[POHM_ID_SIZE] = NULL;
	uint64_t start, deadline;
	size_t i, k, np = 0, together = 0;
	unsigned gi;
	int retry;

	if (n > POHM_IO_CAS_PUT_N)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.n = n;
	m.op = calloc(n ? n : 1, sizeof(*m.op));
	m.dl = calloc(n ? n : 1, sizeof(*m.dl));
	ptrs = calloc((n ? n : 1) * POHM_MAX_GROUPS, sizeof(*ptrs));
	io = calloc(n ? n : 1, sizeof(*io));
	sum = calloc(n ? n : 1, sizeof(*sum));
	if (!m.op || !m.dl || !ptrs || !io || !sum) {
		free(m.op);
		m.op = NULL;
		for (i = 0; i < n; i++)
			p[i].rc = 0;
		goto alone;	/* each alone: each call says what failed */
	}
	for (i = 0; i < n; i++) {
		p[i].rc = 0;
		/* Only first attempts that go to every group at once ride together. */
		if (!io_cas_parallel_first(&p[i].old) || !p[i].len || p[i].len > POHM_IO_PACKET_MAX)
			continue;
		m.op[i] = malloc(sizeof(*m.op[i]));
		if (!m.op[i])
			goto alone;
		io_op_init(m.op[i], c, p[i].key, p[i].keylen, &p[i].res);
		m.op[i]->own_node = 1;
		m.op[i]->w = p[i].res.ngroups / 2 + 1;
		p[i].res.size = p[i].len;
		pohm_sha512(p[i].data, p[i].len, sum[i]);
		memcpy(p[i].res.csum, sum[i], sizeof(p[i].res.csum));
		p[i].res.has_csum = 1;
		together++;
	}
	if (together < 2 || pohm_net_refresh(c->net, pohm_sys_mono_ns() + io_cas_ack_window(c), 0))
		goto alone;	/* nothing to gain, or each call says what failed */
	start = pohm_sys_mono_ns();
	deadline = start + io_cas_ack_window(c);
	for (i = 0; i < n; i++) {
		if (!m.op[i])
			continue;
		m.op[i]->start = start;
		io_cas_attempt_start(m.op[i], p[i].len, &p[i].old, io[i]);
		for (gi = 0; gi < p[i].res.ngroups; gi++)
			io_op_add(m.op[i], gi, POHM_CMD_WRITE, 0, io[i], POHM_IO_ATTR_SIZE,
				  p[i].data, p[i].len);
		for (k = 0; k < m.op[i]->n; k++)
			ptrs[np++] = m.op[i]->ptrs[k];
		m.dl[i] = deadline;
	}
	/* One wait for every key's first attempt (issue 23). */
	pohm_net_run(c->net, ptrs, np, deadline, io_many_enough, &m);
	for (i = 0; i < n; i++) {
		struct gop *op = m.op[i];

		if (!op)
			continue;
		io_op_reroute(op, deadline, io_write_enough);
		io_write_collect(op);
		for (k = 0; k < op->n; k++)
			p[i].res.g[op->gi[k]].applied = io_cas_write_outcome(&op->reqs[k]);
		io_op_release(op);
		op->quorum_at = 0;
		/* Then each key as pohm_io_cas_put goes on from there. */
		p[i].rc = io_cas_attempt_end(op, p[i].data, p[i].len, sum[i], &p[i].old, 1, &retry);
		if (retry) {
			io_note(op, "split by a racing writer and undone: again, the arbiter first");
			op->start = pohm_sys_mono_ns();
			p[i].rc = cas_attempt(op, p[i].data, p[i].len, sum[i], &p[i].old, 0, &retry);
		}
		io_op_release(op);
		free(op);
		m.op[i] = NULL;
		p[i].done = 1;
	}
alone:
	for (i = 0; i < n; i++) {
		/* A key readied to go together was hashed: not again (issue 23). */
		const uint8_t *known = m.op && m.op[i] ? sum[i] : NULL;

		if (!p[i].done)
			p[i].rc = cas_put_known(c, p[i].key, p[i].keylen, p[i].data, p[i].len,
						&p[i].old, &p[i].res, known);
		if (m.op)
			free(m.op[i]);
		p[i].done = 1;
	}
	free(m.op);
	free(m.dl);
	free(ptrs);
	free(io);
	free(sum);
	return 0;
}
