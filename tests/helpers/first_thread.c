/*
 * first_thread.c — a program's first thread and the library's lazily
 * initialised allocator (preload_threads.bats, issue 8's fork window).
 *
 *   first_thread order FILE
 *	Writes "main: before pthread_create" to stderr, creates one thread
 *	that writes "thread: running", joins it, writes "main: joined", then
 *	opens and closes FILE (under the prefix: the library's first
 *	allocation if nothing allocated before) and writes "main: opened".
 *	errno is set to EDOM before pthread_create and reported if it comes
 *	back changed.  With MALLOC_CONF holding an unknown key the private
 *	jemalloc reports that key on stderr when it initialises, so the order
 *	of the lines shows when that happened.
 *
 *   first_thread order-c11 FILE
 *	The same with C11's thrd_create ("main: before thrd_create").
 *
 *   first_thread race FILE FORKS
 *	Thread A's first act is to open FILE (its first call under the
 *	prefix); meanwhile the main thread forks FORKS children at once, each
 *	of which opens FILE and _exits.  Exit 0 when every child ended within
 *	5 s, 1 (naming it) when one hung: killed, not waited for forever.
 *
 * Only write(2) reaches stderr: the lines keep their order with the
 * allocator's own messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define MAX_FORKS 256

static const char *file;
static int go;

static void say(const char *s)
{
	size_t n = strlen(s);

	if (write(2, s, n) != (ssize_t)n)
		_exit(3);
}

static void open_close(void)
{
	int fd = open(file, O_RDONLY);

	if (fd >= 0)
		close(fd);
}

static void *thread_running(void *arg)
{
	say("thread: running\n");
	return arg;
}

static int thread_running_c11(void *arg __attribute__((unused)))
{
	say("thread: running\n");
	return 0;
}

static int order(int c11)
{
	pthread_t t;
	thrd_t t11;
	char msg[64];
	int r;

	say(c11 ? "main: before thrd_create\n" : "main: before pthread_create\n");
	errno = EDOM;
	if (c11)
		r = thrd_create(&t11, thread_running_c11, NULL) != thrd_success;
	else
		r = pthread_create(&t, NULL, thread_running, NULL);
	if (errno != EDOM) {
		snprintf(msg, sizeof(msg), "main: errno changed to %d\n", errno);
		say(msg);
	}
	if (r) {
		say("main: thread creation failed\n");
		return 1;
	}
	if (c11)
		thrd_join(t11, NULL);
	else
		pthread_join(t, NULL);
	say("main: joined\n");
	open_close();
	say("main: opened\n");
	return 0;
}

static void *thread_a(void *arg)
{
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	open_close();
	return arg;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int race(int forks)
{
	pid_t pid[MAX_FORKS];
	pthread_t a;
	double end;
	int i, n, left, hung = 0;
	char msg[96];

	if (pthread_create(&a, NULL, thread_a, NULL)) {
		say("race: pthread_create failed\n");
		return 2;
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (n = 0; n < forks; n++) {
		pid[n] = fork();
		if (pid[n] == 0) {
			open_close();
			_exit(0);
		}
		if (pid[n] < 0)
			break;
	}
	pthread_join(a, NULL);
	end = now() + 5;
	for (left = n; left > 0 && now() < end;) {
		for (i = 0; i < n; i++)
			if (pid[i] > 0 && waitpid(pid[i], NULL, WNOHANG) == pid[i]) {
				pid[i] = 0;
				left--;
			}
		if (left)
			usleep(1000);
	}
	for (i = 0; i < n; i++) {
		if (pid[i] <= 0)
			continue;
		snprintf(msg, sizeof(msg), "race: child %d (fork %d of %d) hung\n", (int)pid[i], i, n);
		say(msg);
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
		hung++;
	}
	return hung ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && (!strcmp(argv[1], "order") || !strcmp(argv[1], "order-c11"))) {
		file = argv[2];
		return order(!strcmp(argv[1], "order-c11"));
	}
	if (argc == 4 && !strcmp(argv[1], "race") && atoi(argv[3]) > 0 &&
	    atoi(argv[3]) <= MAX_FORKS) {
		file = argv[2];
		return race(atoi(argv[3]));
	}
	fprintf(stderr, "usage: first_thread order|order-c11 FILE | race FILE FORKS (1-%d)\n", MAX_FORKS);
	return 2;
}
