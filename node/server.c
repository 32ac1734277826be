/*
 * server.c — the node's lifecycle: init (store, ids, ring, faults), the
 * listening socket, the pid file, signals, and the accept loop.
 *
 * The main thread blocks SIGTERM/SIGINT/SIGHUP before any thread starts and
 * waits for them on a signalfd next to the listening socket, so every
 * other thread runs with them blocked and shutdown is one code path.
 * Shutdown needs no flushing: a write is durable before it is acknowledged.
 */
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fault.h"
#include "sys.h"
#include "ring.h"
#include "node_store.h"
#include "node_wire.h"

/* See node.h. */
int node_init(struct node *n, const struct node_config *cfg)
{
	struct pohm_backend_ids be;
	uint64_t now;
	int ret;

	memset(n, 0, sizeof(*n));
	n->cfg = *cfg;
	n->listen_fd = -1;
	n->handle = node_handle;
	n->nflags = 0;
	n->log_level = (uint32_t)cfg->log_level;
	pthread_mutex_init(&n->conns_lock, NULL);
	now = pohm_sys_real_ns();
	n->started.tsec = now / 1000000000ull;
	n->started.tnsec = now % 1000000000ull;
	if (cfg->auth_cookie[0]) {
		n->need_auth = 1;
		pohm_auth_cookie_from_string(n->cookie, cfg->auth_cookie);
	}
	ret = node_store_open(&n->store, cfg->data, cfg->nosync ? -1 : cfg->sync_interval,
			      cfg->max_object, cfg->blob_size);
	if (ret) {
		pohm_err("cannot open the data directory %s: %s", cfg->data, strerror(-ret));
		goto fail;
	}
	ret = node_store_ids(n->store, cfg->ids, &n->ids, &n->nids);
	if (ret) {
		pohm_err("cannot read or create %s/ids: %s", cfg->data, strerror(-ret));
		goto fail;
	}
	ret = -ENOMEM;
	n->ring = node_ring_new(&cfg->listen);
	if (!n->ring)
		goto fail;
	memset(&be, 0, sizeof(be));
	be.backend_id = cfg->backend_id;
	be.group = cfg->group;
	be.ids_count = n->nids;
	be.ids = n->ids;
	ret = node_ring_set(n->ring, &cfg->listen, &be, 1);
	if (ret)
		goto fail;
	ret = -ENOMEM;
	n->faults = node_faults_new(cfg->data, n->store);
	if (!n->faults)
		goto fail;
	return 0;
fail:
	node_fini(n);
	return ret;
}

/* See node.h. */
void node_fini(struct node *n)
{
	node_faults_free(n->faults);
	node_ring_free(n->ring);
	node_store_close(n->store);
	free(n->ids);
	if (n->listen_fd >= 0)
		close(n->listen_fd);
	pthread_mutex_destroy(&n->conns_lock);
	memset(n, 0, sizeof(*n));
	n->listen_fd = -1;
}

/* Write the pid file atomically (temp + rename) so readers never see half. */
static int write_pidfile(const char *path)
{
	char tmp[NODE_PATH_MAX + 8], line[32];
	int fd, len, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	len = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (pohm_sys_write_full(fd, line, (size_t)len) < 0)
		ret = -EIO;
	close(fd);
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	return ret;
}

/* 1 if --watch-pid names a process that no longer exists. */
static int watched_gone(const struct node *n)
{
	return n->cfg.watch_pid > 0 && kill(n->cfg.watch_pid, 0) < 0 && errno == ESRCH;
}

/*
 * Accept until a signal arrives (returns its number) or the watched process
 * is gone (returns 0): a test harness killed before its teardown cannot
 * leave nodes behind.
 */
static int accept_loop(struct node *n, int sigfd)
{
	struct pollfd pfd[2] = { { n->listen_fd, POLLIN, 0 }, { sigfd, POLLIN, 0 } };
	uint64_t last_watch = pohm_sys_mono_ns();

	for (;;) {
		int r = poll(pfd, 2, n->cfg.watch_pid > 0 ? 1000 : -1), fd;

		/* Checked once a second, busy or idle. */
		if (n->cfg.watch_pid > 0 && pohm_sys_mono_ns() - last_watch >= 1000000000ull) {
			last_watch = pohm_sys_mono_ns();
			if (watched_gone(n)) {
				pohm_info("process %d is gone: exiting", n->cfg.watch_pid);
				return 0;
			}
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			pohm_err("poll: %s", strerror(errno));
			return 0;
		}
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP)
					continue;	/* faults are re-read anyway */
				return (int)si.ssi_signo;
			}
		}
		if (pfd[0].revents) {
			fd = accept4(n->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0) {
				if (errno == EMFILE || errno == ENFILE) {
					pohm_warn("accept: %s", strerror(errno));
					poll(NULL, 0, 50);	/* let connections close */
				}
				continue;
			}
			if (node_conn_serve(n, fd))
				pohm_warn("cannot start a connection thread");
		}
	}
}

/* See node.h: signals are blocked before any thread starts. */
int node_run(const struct node_config *cfg)
{
	static struct node node;	/* one per process; lives until exit */
	struct node *n = &node;
	char addr[64];
	sigset_t set;
	int sigfd = -1, ret, sig, logfd = -1;
	uint64_t writes = 0, syncs = 0;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (cfg->log[0]) {
		logfd = open(cfg->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (logfd < 0) {
			fprintf(stderr, "pohmelfs-node: cannot open log %s: %s\n", cfg->log,
				strerror(errno));
			return 1;
		}
	}
	pohm_log_setup((enum pohm_log_level)cfg->log_level, logfd);
	if (sigfd < 0) {
		pohm_err("signalfd: %s", strerror(errno));
		return 1;
	}
	ret = node_init(n, cfg);
	if (ret)
		return 1;
	n->listen_fd = node_wire_listen(&cfg->listen);
	pohm_addr_format(&cfg->listen, addr, sizeof(addr));
	if (n->listen_fd < 0) {
		pohm_err("cannot listen on %s: %s", addr, strerror(-n->listen_fd));
		return 1;
	}
	n->pool = node_pool_start(n, cfg->threads, node_run_req);
	if (!n->pool) {
		pohm_err("cannot start the worker threads");
		return 1;
	}
	ret = node_peers_start(n);
	if (ret) {
		pohm_err("cannot start the peer manager: %s", strerror(-ret));
		return 1;
	}
	if (cfg->pidfile[0] && (ret = write_pidfile(cfg->pidfile))) {
		pohm_err("cannot write the pid file %s: %s", cfg->pidfile, strerror(-ret));
		return 1;
	}
	pohm_info("listening on %s, group %u, %u ids, protocol %d.%d, %s%s", addr, cfg->group,
		  n->nids, cfg->proto_major, cfg->proto_minor,
		  cfg->nosync ? "nosync" : !cfg->sync_interval ? "sync every write" : "sync interval",
		  n->need_auth ? ", auth required" : "");
	sig = accept_loop(n, sigfd);
	if (sig)
		pohm_info("signal %d: shutting down", sig);
	__atomic_store_n(&n->stopping, 1, __ATOMIC_RELEASE);
	close(n->listen_fd);
	n->listen_fd = -1;
	node_conn_drop_all(n);
	/* Acknowledged writes still in the page cache reach the disk now. */
	ret = node_store_flush(n->store, &writes, &syncs);
	pohm_info("store: %llu writes, %llu syncs%s", (unsigned long long)writes,
		  (unsigned long long)syncs, ret ? ", the last sync failed" : "");
	pohm_info("requests: %llu on the connections' threads, %llu handed to the workers",
		  (unsigned long long)__atomic_load_n(&n->served_inline, __ATOMIC_RELAXED),
		  (unsigned long long)__atomic_load_n(&n->handed_off, __ATOMIC_RELAXED));
	if (cfg->pidfile[0])
		unlink(cfg->pidfile);
	/*
	 * Worker and link threads may still be inside a request; every
	 * acknowledged write is durable now, so leave without joining them.
	 */
	return 0;
}
