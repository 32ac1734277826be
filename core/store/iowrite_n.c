/*
 * iowrite_n.c — pohm_io_write_n: plain writes of several keys (a push's
 * new chunk generations) sent together to every group and waited for
 * once (issue 23: "independent requests go out together").  Each key is
 * committed as pohm_io_write commits it (its own stamp, its own quorum of
 * successful_write_count groups); one that cannot ride along (larger than
 * one packet) or whose group needs a re-route goes on alone from there.
 */
#include "io_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sys.h"
#include "wire.h"

/* w's outcome after its run (op's requests collected), as pohm_io_write says it. */
static int write_one_end(struct gop *op, struct pohm_io_write_one *w)
{
	unsigned gi, ok = io_write_collect(op);

	w->res.committed = ok;
	if (ok < op->w)
		return io_write_error(op, ok);
	for (gi = 0; gi < w->res.ngroups; gi++)
		if (w->res.g[gi].status && w->res.g[gi].status != -ECANCELED)
			io_note_group(op, gi, w->res.g[gi].status, "not written to ");
	return 0;
}

int pohm_io_write_n(struct pohm_client *c, size_t n, struct pohm_io_write_one *w)
{
	struct io_many m;
	struct pohm_req **ptrs = NULL;
	uint8_t (*io)[POHM_IO_ATTR_SIZE] = NULL;
	uint64_t deadline;
	size_t i, k, np = 0, together = 0;
	unsigned gi;

	memset(&m, 0, sizeof(m));
	m.n = n;
	for (i = 0; i < n; i++) {
		w[i].rc = 0;
		w[i].done = 0;
	}
	m.op = calloc(n ? n : 1, sizeof(*m.op));
	m.dl = calloc(n ? n : 1, sizeof(*m.dl));
	ptrs = calloc((n ? n : 1) * POHM_MAX_GROUPS, sizeof(*ptrs));
	io = calloc(n ? n : 1, sizeof(*io));
	if (!m.op || !m.dl || !ptrs || !io)
		goto alone;	/* each alone: each call says what failed */
	for (i = 0; i < n; i++) {
		if (!w[i].len || w[i].len > POHM_IO_PACKET_MAX)
			continue;	/* pohm_io_write's own rules (refusal, pieces) */
		m.op[i] = malloc(sizeof(*m.op[i]));
		if (!m.op[i])
			goto alone;
		io_op_init(m.op[i], c, w[i].key, w[i].keylen, &w[i].res);
		together++;
	}
	if (together < 2)
		goto alone;	/* nothing to gain */
	deadline = pohm_sys_mono_ns() + c->cfg->write_wait_timeout_ns;
	if (pohm_net_refresh(c->net, deadline, 0))
		goto alone;	/* each call says what failed */
	for (i = 0; i < n; i++) {
		struct gop *op = m.op[i];
		struct pohm_io_attr a;

		if (!op)
			continue;
		op->w = io_write_quorum(c, 0);
		w[i].res.ts = pohm_time_from_ns(pohm_clock_next(&c->clock_last, pohm_sys_real_ns(),
								  0));
		w[i].res.size = w[i].len;
		memset(&a, 0, sizeof(a));
		memcpy(a.id, op->id, POHM_ID_SIZE);
		a.timestamp = w[i].res.ts;
		a.size = w[i].len;
		pohm_io_attr_encode(io[i], &a);
		for (gi = 0; gi < w[i].res.ngroups; gi++)
			io_op_add(op, gi, POHM_CMD_WRITE, 0, io[i], POHM_IO_ATTR_SIZE, w[i].data,
				  w[i].len);
		for (k = 0; k < op->n; k++)
			ptrs[np++] = op->ptrs[k];
		m.dl[i] = deadline;
	}
	/* One wait for every key (issue 23). */
	pohm_net_run(c->net, ptrs, np, deadline, io_many_enough, &m);
	for (i = 0; i < n; i++) {
		struct gop *op = m.op[i];

		if (!op)
			continue;
		io_op_reroute(op, deadline, io_write_enough);
		w[i].rc = write_one_end(op, &w[i]);
		io_op_release(op);
		w[i].done = 1;
	}
alone:
	for (i = 0; i < n; i++) {
		if (m.op && m.op[i]) {
			io_op_release(m.op[i]);
			free(m.op[i]);
		}
		if (!w[i].done)
			w[i].rc = pohm_io_write(c, w[i].key, w[i].keylen, w[i].data, w[i].len, NULL,
						&w[i].res);
		w[i].done = 1;
	}
	free(m.op);
	free(m.dl);
	free(ptrs);
	free(io);
	return 0;
}
