/*
 * pool.c — the worker pool: a FIFO of requests and a fixed set of threads
 * running each through the function given at start (node_run_req).  Slow
 * requests (writes waiting for their group commit, large reads and writes,
 * BULK_READ, the iterator, delayed replies under the delay fault) wait
 * here instead of blocking their connection; the rest never come here
 * (handlers.c runs_inline).  It knows only the queue:
 * the handlers above push to it and name the job, so no circle.
 */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct node_pool {
	struct node *node;
	void (*run)(struct node *n, struct node_req *req);	/* set at start */
	pthread_mutex_t lock;		/* guards head, tail */
	pthread_cond_t cond;
	struct node_req *head, *tail;
};

/* Take requests off the queue forever. */
static void *worker(void *arg)
{
	struct node_pool *p = arg;

	for (;;) {
		struct node_req *r;

		pthread_mutex_lock(&p->lock);
		while (!p->head)
			pthread_cond_wait(&p->cond, &p->lock);
		r = p->head;
		p->head = r->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		p->run(p->node, r);
	}
	return NULL;
}

/* See node.h. */
struct node_pool *node_pool_start(struct node *n, unsigned threads,
				  void (*run)(struct node *n, struct node_req *req))
{
	struct node_pool *p = calloc(1, sizeof(*p));
	pthread_attr_t at;
	unsigned i;

	if (!p)
		return NULL;
	p->node = n;
	p->run = run;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, &at, worker, p)) {
			pthread_attr_destroy(&at);
			/* Workers already started keep p alive; report failure only if none. */
			if (!i)
				free(p);
			return i ? p : NULL;
		}
	}
	pthread_attr_destroy(&at);
	return p;
}

/* See node.h. */
void node_pool_push(struct node_pool *p, struct node_req *req)
{
	req->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = req;
	else
		p->head = req;
	p->tail = req;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}
