/*
 * init.c — light initialisation of the shim (DESIGN.md §5), which fills
 * the global state (state.c).  Light init: the real table, the log
 * level, the prefix (POHMELFS_PREFIX, else prefix= of the configuration
 * files) and its realpath, the cwd, the fds handed over by the previous
 * image, fork handlers.  No network, no file kept open: a program that
 * never touches the prefix pays only this (measured in
 * tests/bench/bench_passthrough.sh).  The heavy stage (connections,
 * journal) belongs to the storage side and starts from its hooks.
 *
 * Sections: state; light init; entry from wrappers; constructor and
 * destructor; test-only internal fd.
 */
#include "shim.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>

#include "config.h"
#include "sys.h"

extern char **environ;

/* ------------------------------------------------------------ state */

/* The state itself (pohm_state, pohm_depth, pohm_busy) is state.c's, at the
 * bottom of preload/.  init.c is the top of the process-state side: it
 * fills the state and calls the fd table, the cwd, the exec handoff and
 * the hooks (light init, fork handlers, exit); none of those calls it, only
 * the wrappers do (pohm_init_slow, through shim.h's pohm_init and
 * pohm_active).  doc/ARCHITECTURE.md §4.6. */

/* pohm_sys_once's word (no futex wake at the end of a lone start). */
static POHM_START_BSS int init_once;
/* This thread is running init: its nested wrappers must not wait for it. */
static POHM_TLS int in_init;

/* ------------------------------------------------------------ light init */

/*
 * realpath() of a prefix that does not exist yet ("created on first use"):
 * resolve the longest existing ancestor and append the rest.  Uses the
 * real realpath with our own buffer (nothing allocated).  Not inlined:
 * its buffer stays off the stack of a start whose prefix exists.
 */
static __attribute__((noinline)) int prefix_realpath_ancestor(const char *prefix, char *out)
{
	char tmp[PATH_MAX];
	size_t n = strlen(prefix), cut = n, m;

	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, prefix, n + 1);
	for (;;) {
		while (cut && tmp[cut] != '/')
			cut--;
		tmp[cut] = '\0';
		if (pohm_real.realpath(cut ? tmp : "/", out))
			break;
		if (errno != ENOENT || !cut)
			return -errno;
	}
	m = strlen(out);
	if (m == 1)
		m = 0;		/* "/" + "/rest" */
	if (m + (n - cut) >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(out + m, prefix + cut, n - cut + 1);
	return 0;
}

/* realpath() of the prefix (normalised, shorter than PATH_MAX), or of its
 * longest existing ancestor with the rest appended. */
static int prefix_realpath(const char *prefix, char *out)
{
	if (pohm_real.realpath(prefix, out))
		return 0;
	return errno == ENOENT ? prefix_realpath_ancestor(prefix, out) : -errno;
}

/*
 * prefix= of the configuration files, when POHMELFS_PREFIX is not set.
 * Errors are not reported here: the storage side's heavy init loads the
 * configuration again and says what is wrong, once, on the first call
 * under the prefix (DESIGN.md §1).
 */
static int prefix_from_files(char *out, size_t len)
{
	struct pohm_config c;
	struct stat st;
	const char *v, *dir;
	char err[POHM_CFG_ERRLEN], user[PATH_MAX];
	int found = 0;

	/* Most processes have no file at all: two stats, and nothing allocated. */
	if ((dir = getenv("XDG_CONFIG_HOME")) && *dir)
		snprintf(user, sizeof(user), "%s/pohmelfs.conf", dir);
	else if ((dir = getenv("HOME")) && *dir)
		snprintf(user, sizeof(user), "%s/.config/pohmelfs.conf", dir);
	else
		user[0] = '\0';
	if (!getenv("POHMELFS_CONFIG") && pohm_sys_fstatat(AT_FDCWD, "/etc/pohmelfs.conf", &st, 0) &&
	    (!user[0] || pohm_sys_fstatat(AT_FDCWD, user, &st, 0)))
		return 0;
	pohm_config_load(&c, environ, err, sizeof(err));
	v = pohm_config_raw(&c, "prefix");
	if (v && *v && strlen(v) < len) {
		memcpy(out, v, strlen(v) + 1);
		found = 1;
	}
	pohm_config_free(&c);
	return found;
}

/* Before a line of the light init: the log= of the configuration, if any
 * (errors only, so nothing is loaded in the common case). */
static __attribute__((noinline)) void log_early(void)
{
	struct pohm_config c;
	char err[POHM_CFG_ERRLEN];
	int r;

	r = pohm_config_load(&c, environ, err, sizeof(err));
	pohm_log_configure(&c, !r);
	pohm_config_free(&c);
}

/* The hot path's copy of the spellings (fast.h), NUL-padded (the state is
 * zeroed memory and each copy is written once). */
static void fast_setup(void)
{
	const struct pohm_pc_prefix *pf = &pohm_state.prefix;
	unsigned s;

	for (s = 0; s < pf->nsp; s++) {
		memcpy(pohm_state.fast[s].path, pf->sp[s].path, pf->sp[s].len);
		pohm_state.fast[s].len = (uint32_t)pf->sp[s].len;
	}
	pohm_state.nfast = pf->nsp;
}

/* Light init's prefix p: its spellings (as given, and its realpath when that
 * differs) and the hot path's copy. */
static void prefix_use(const char *p)
{
	char real[PATH_MAX];
	int r;

	r = pohm_pc_prefix_add(&pohm_state.prefix, p);
	if (r < 0) {
		log_early();
		pohm_err("prefix=%s: expected an absolute path below \"/\"; the shim stays inactive",
			 p);
		return;
	}
	/* A realpath equal to the spelling is not set as a second one only to
	 * be found a duplicate: that wrote two more pages of the state. */
	if (prefix_realpath(pohm_state.prefix.sp[0].path, real) == 0 &&
	    strcmp(real, pohm_state.prefix.sp[0].path) &&
	    pohm_pc_prefix_add(&pohm_state.prefix, real) < 0) {
		log_early();
		pohm_warn("prefix=%s: its realpath %s is inside it or contains it; "
			  "only the configured spelling is used", p, real);
	}
	fast_setup();
	pohm_state.on = 1;
}

/* prefix= of the configuration files.  Not inlined: its buffers (and the
 * configuration's) stay off the stack of a start that has POHMELFS_PREFIX;
 * light init's frames took ~16 KiB of stack, pages a small program never
 * touches otherwise (issue 23). */
static __attribute__((noinline)) void prefix_setup_files(void)
{
	char file[PATH_MAX];

	if (prefix_from_files(file, sizeof(file)))
		prefix_use(file);
}

static void prefix_setup(void)
{
	const char *p = getenv("POHMELFS_PREFIX");

	if (p && *p)
		prefix_use(p);
	else
		prefix_setup_files();
}

/* Test builds only (sys.h pohm_sys_test_switch): POHMELFS_TEST_INTERNAL_FD=FILE
 * makes init hold FILE open as an internal fd, and the destructor writes one
 * line through it. */
static void test_ifd_setup(void)
{
	const char *f = pohm_sys_test_switch(POHM_TEST_INTERNAL_FD);
	int fd;

	if (!f || !*f)
		return;
	fd = pohm_sys_open_high(AT_FDCWD, f, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0)
		return;
	pohm_state.test_ifd = pohm_ifd_register(fd);
	if (pohm_state.test_ifd < 0)
		pohm_sys_close(fd);
}

/*
 * The preload locks (fd table, cwd, shadows) are taken around a fork only
 * when another thread may hold one: glibc's __libc_single_threaded, as
 * jefork.c does for the allocator's (decision 0059).  A single-threaded
 * shell's forks wrote them on some five pages in parent and child for
 * nothing (issue 23).  The hooks' child phase runs in every child
 * (POHM_FORK_CHILD_NOLOCK without the shadow lock): core/mount's resets,
 * the parent's dirty list, counters and kept bases, and core's own
 * mutexes made new.  Per thread: the prepare handler decides, the parent
 * and child handlers follow.  Every fork is counted in the parent
 * (pohm_hook_fork's prepare phases and parent phase): the child of a single-threaded one may never run
 * those resets, so the parent must not rely on them (decision 0065's and
 * 0066's corrections).
 */
static POHM_TLS int fork_locked;

#ifdef __GLIBC__
/* What libc_nonshared's pthread_atfork stub calls (glibc's exported
 * __register_atfork@GLIBC_2.3.2, the ABI every program's pthread_atfork
 * uses), called directly: the stub is linked at the very end of .text,
 * a text fault of its own in every process started (issue 23). */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso);
extern void *__dso_handle;
#define register_atfork(p, a, c) __register_atfork(p, a, c, __dso_handle)
#else
#define register_atfork(p, a, c) pthread_atfork(p, a, c)
#endif

static void atfork_prepare(void)
{
	pohm_real_bind_all();	/* once: the children inherit the table */
	fork_locked = !__libc_single_threaded;
	if (!fork_locked) {
		pohm_hook_fork(POHM_FORK_PREPARE_NOLOCK);
		return;
	}
	pohm_hook_fork(POHM_FORK_PREPARE);
	pohm_cwd_atfork(POHM_FORK_PREPARE);
	pohm_fd_atfork(POHM_FORK_PREPARE);
}

static void atfork_parent(void)
{
	if (!fork_locked)
		return;
	pohm_fd_atfork(POHM_FORK_PARENT);
	pohm_cwd_atfork(POHM_FORK_PARENT);
	pohm_hook_fork(POHM_FORK_PARENT);
}

static void atfork_child(void)
{
	pohm_sig_fork_child();
	if (!fork_locked) {
		pohm_hook_fork(POHM_FORK_CHILD_NOLOCK);
		return;
	}
	pohm_fd_atfork(POHM_FORK_CHILD);
	pohm_cwd_atfork(POHM_FORK_CHILD);
	pohm_hook_fork(POHM_FORK_CHILD);
}

static void shim_init(void)
{
	const char *lvl = getenv("POHMELFS_LOG_LEVEL");
	uint64_t t0 = 0;
	int saved = errno;

	in_init = 1;
	pohm_depth++;
	if (lvl && pohm_log_parse_level(lvl) >= 0)
		pohm_log_setup((enum pohm_log_level)pohm_log_parse_level(lvl), -1);
	/* The clock only for the debug line: its first read binds
	 * clock_gettime and faults in the vDSO's data page and libc's code,
	 * two faults of a start that has no other use for it (issue 23). */
	if (pohm_log_level() >= POHM_LOG_DEBUG)
		t0 = pohm_sys_mono_ns();
	pohm_real_init();
	if (pohm_log_level() >= POHM_LOG_DEBUG && getenv("POHMELFS_LOG"))
		pohm_log_configure(NULL, 0);	/* the light init's own debug line */
	prefix_setup();
	if (pohm_state.on) {
		pohm_cwd_resync();
		pohm_fd_adopt_env();
		register_atfork(atfork_prepare, atfork_parent, atfork_child);
		pohm_vfork_forks = 1;	/* exec.c's vfork */
		pohm_sys_keep_attrs();	/* creds.c reports their changes */
	}
	test_ifd_setup();
	if (t0)
		pohm_debug("light init: %.1f us, prefix %s",
			   (double)(pohm_sys_mono_ns() - t0) / 1e3,
			   pohm_state.on ? pohm_state.prefix.sp[0].path : "(none)");
	pohm_depth--;
	in_init = 0;
	pohm_fd_plain_start();
	__atomic_store_n(&pohm_state.ready, pohm_state.on ? POHM_READY_ON : POHM_READY_OFF,
			 __ATOMIC_RELEASE);
	errno = saved;
}

/* ------------------------------------------------------------ entry from wrappers */

void pohm_init_slow(void)
{
	if (in_init)
		return;		/* a wrapper called from init itself: depth > 0 */
	if (!environ) {
		/*
		 * Too early to read the configuration: a sanitizer runtime (or
		 * another preinit function) calls us before libc has set up
		 * environ.  Resolve the table so the call can go through, and
		 * leave the rest for later (our constructor at the latest).
		 */
		pohm_real_init();
		return;
	}
	pohm_sys_once(&init_once, shim_init);
}

/* ------------------------------------------------------------ constructor and destructor */

__attribute__((constructor)) static void shim_constructor(void)
{
	pohm_init_slow();
}

/*
 * The library's DT_FINI (Makefile: -Wl,-fini=pohm_dt_fini) instead of
 * crti's _fini, which does nothing (a stack adjustment: no object of the
 * library puts code in .fini) and lies after the last byte of .text: a text
 * fault at every process exit (issue 23).  Destructors run from
 * .fini_array, as before.
 */
POHM_HIDDEN void pohm_dt_fini(void);
void pohm_dt_fini(void)
{
}

__attribute__((destructor)) static void shim_destructor(void)
{
	static const char line[] = "pohmelfs: internal fd survived\n";
	int fd;

	if (!__atomic_load_n(&pohm_state.ready, __ATOMIC_ACQUIRE) || pohm_depth)
		return;
	if (pohm_state.on)
		pohm_hook_exit();
	if (pohm_state.test_ifd >= 0 && (fd = pohm_ifd_fd(pohm_state.test_ifd)) >= 0)
		pohm_sys_write_full(fd, line, sizeof(line) - 1);
}
