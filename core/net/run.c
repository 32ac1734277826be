/*
 * run.c — the callers' two ways to send a batch, pohm_net_run and
 * pohm_net_window_send (net.h): set the batch's nodes up first
 * (pohm_net_prepare, conn_setup.c), then hand the batch to the transaction
 * engine (net.c).
 *
 * Why a file of its own: set-up's handshakes and pings run through the
 * engine (pohm_net_run_internal), and every callers' run is set up first.
 * With the callers' entry points in net.c that made net.c and
 * conn_setup.c one import circle; here, above both, the calls run one way:
 * run.c -> conn_setup.c -> net.c, and run.c -> net.c.  The engine itself
 * never sets a connection up.
 */
#include "conn.h"

int pohm_net_run(struct pohm_net *net, struct pohm_req **reqs, size_t n, uint64_t deadline,
		 pohm_enough_fn enough, void *arg)
{
	pohm_net_fork_check(net);
	pohm_net_prepare(net, reqs, n, deadline);
	return pohm_net_run_prepared(net, reqs, n, deadline, enough, arg);
}

void pohm_net_window_send(struct pohm_net *net, struct pohm_batch *w, struct pohm_req **reqs,
			  size_t n, uint64_t deadline)
{
	pohm_net_fork_check(net);
	pohm_net_prepare(net, reqs, n, deadline);
	pohm_net_window_submit(net, w, reqs, n);
}
