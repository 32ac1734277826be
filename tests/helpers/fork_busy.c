/*
 * fork_busy.c — issue 19 item 6: fork from a threaded host whose threads are
 * inside the library.  THREADS threads create, write, stat and unlink files
 * under DIR without pause while the main thread forks FORKS times; each child
 * creates DIR/child.N, writes and closes it, and exits.  A child that hangs
 * (a lock another thread held at the fork, copied locked) is killed after
 * 20 s and counted.  Prints "ok FORKS" when every child made its file; a
 * busy thread's failure is reported on stderr with the call that failed.
 *
 *   fork_busy DIR THREADS FORKS
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static int stop, failed;

static void *busy(void *arg)
{
	long t = (long)arg;
	char f[4096];
	struct stat st;
	int i = 0, fd;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		const char *call = "open";

		snprintf(f, sizeof(f), "%s/busy.%ld.%d", dir, t, i++ % 8);
		fd = open(f, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0 || (call = "write", write(fd, "busy\n", 5) != 5) ||
		    (call = "close", close(fd)) || (call = "stat", stat(f, &st)) ||
		    (call = "unlink", unlink(f))) {
			fprintf(stderr, "thread %ld: %s %s: %s\n", t, call, f, strerror(errno));
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			return NULL;
		}
	}
	return NULL;
}

/* Wait for pid at most 20 s; 0 when it exited 0. */
static int reap(pid_t pid)
{
	struct timespec nap = { 0, 10000000 };
	int st, i;

	for (i = 0; i < 2000; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		nanosleep(&nap, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 2;
}

int main(int argc, char **argv)
{
	pthread_t th[16];
	int nth, forks, i, hung = 0, bad = 0;

	if (argc != 4)
		return 2;
	dir = argv[1];
	nth = atoi(argv[2]);
	forks = atoi(argv[3]);
	if (nth < 1 || nth > 16 || forks < 1)
		return 2;
	for (i = 0; i < nth; i++)
		pthread_create(&th[i], NULL, busy, (void *)(long)i);
	for (i = 0; i < forks; i++) {
		char f[4096];
		pid_t pid;
		int r;

		snprintf(f, sizeof(f), "%s/child.%d", dir, i);
		pid = fork();
		if (pid == 0) {
			int fd = open(f, O_CREAT | O_EXCL | O_WRONLY, 0644);

			if (fd < 0 || write(fd, "child\n", 6) != 6 || close(fd))
				_exit(1);
			_exit(0);
		}
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		r = reap(pid);
		hung += r == 2;
		bad += r == 1;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (hung || bad || failed) {
		printf("fail: %d hung, %d failed children, threads %s\n", hung, bad,
		       failed ? "failed" : "ok");
		return 1;
	}
	printf("ok %d\n", forks);
	return 0;
}
