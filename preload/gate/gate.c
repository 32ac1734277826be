/*
 * gate.c — PROTOTYPE (session 18, not in the default build; see
 * doc/notes-s18-split.md): the small preload of the split library
 * (notes-s17-startup2 "the split library").  Every name of syms.def is a
 * generated trampoline (gen.sh tramp) that jumps through pohm_gate_core[i]
 * once the core library has that entry, else here: pohm_gate_decide looks
 * at the call's arguments (gen.sh args: which are paths, which are their
 * directory fds) and either loads libpohmelfs-core.so (next to this
 * library) and goes to its wrapper, or goes to the real function.
 *
 * The core is loaded at the first call with a path the lexical classifier
 * (core/mount/pathclass) puts under the prefix or on one of its ancestors,
 * at light init when the parent handed fds over (POHMELFS_FDTAB,
 * POHMELFS_WLOCKS), when the cwd cannot be read, when the prefix
 * comes from a configuration file, and for the calls listed in
 * always_core().  Before it is loaded no fd, FILE or DIR of ours exists,
 * so fd arguments need no look.
 *
 * Known blocker: dlopen of the core fails ("cannot allocate memory in
 * static TLS block") unless GLIBC_TUNABLES=glibc.rtld.optional_static_tls
 * is at least ~8 KiB: the core has 7.7 KiB of initial-exec TLS (jemalloc's
 * tsd 2.6 KiB, the address cache 2 KiB, ...), glibc keeps ~1.6 KiB.
 */
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys.h"

extern char **environ;

enum {
#define SYM(ret, name, args) G_##name,
#define SYMV SYM
#define SYMX SYM
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
	GATE_N
};

/* The entries the trampolines jump through: the core's wrapper, stored at
 * its first call after the core is loaded (atomic stores). */
POHM_HIDDEN void *pohm_gate_core[GATE_N];

/* Per entry, per integer argument: P path, D its dirfd, L path list. */
static const char gate_codes[GATE_N][8] = {
#define GATE_ARGS(name, codes) [G_##name] = codes,
#include "gate_args.h"
#undef GATE_ARGS
};

/* Names, as real.c keeps them (no pointers: nothing relocated at load). */
struct gate_names {
#define SYM(ret, name, args) char name[sizeof(#name)];
#define SYMV SYM
#define SYMX SYM
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};
static const struct gate_names gate_names = {
#define SYM(ret, name, args) #name,
#define SYMV SYM
#define SYMX SYM
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};
static const uint16_t gate_name_off[GATE_N] = {
#define SYM(ret, name, args) [G_##name] = offsetof(struct gate_names, name),
#define SYMV SYM
#define SYMX SYM
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

/* The real-table slot of each entry, -1 for the SYMX ones (no real). */
static const int16_t gate_real_slot[GATE_N] = {
#define SYM(ret, name, args) [G_##name] = offsetof(struct pohm_real, name) / sizeof(void *),
#define SYMV SYM
#define SYMX(ret, name, args) [G_##name] = -1,
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
static POHM_TLS int gate_busy;		/* this thread runs light init or the load */
static int gate_on;			/* a prefix is configured (set once) */
static struct pohm_pc_pos gate_cwd;	/* the cwd's position at light init */
static int gate_cwd_in;			/* ... which is under the prefix */
static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;
static void *core_handle;		/* under core_lock; read atomically */

static const char *gate_name(size_t i)
{
	return (const char *)&gate_names + gate_name_off[i];
}

/* ------------------------------------------------------------ the core */

static void core_load(void)
{
	char path[PATH_MAX];
	Dl_info info;
	const char *slash;
	void *h = NULL;

	pthread_mutex_lock(&core_lock);
	if (__atomic_load_n(&core_handle, __ATOMIC_ACQUIRE))
		goto out;
	if (!dladdr((void *)core_load, &info) || !info.dli_fname ||
	    !(slash = strrchr(info.dli_fname, '/')) ||
	    (size_t)(slash - info.dli_fname) + sizeof("/libpohmelfs-core.so") > sizeof(path))
		goto fail;
	memcpy(path, info.dli_fname, (size_t)(slash - info.dli_fname));
	memcpy(path + (slash - info.dli_fname), "/libpohmelfs-core.so",
	       sizeof("/libpohmelfs-core.so"));
	gate_busy++;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	gate_busy--;
	if (!h)
		goto fail;
	__atomic_store_n(&core_handle, h, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&core_lock);
	return;
fail:
	/* The prefix cannot be served: never let a call reach the local disk. */
	dprintf(2, "libpohmelfs: cannot load the core library: %s\n", dlerror());
	_exit(127);
}

static void *core_entry(size_t i)
{
	void *f = __atomic_load_n(&pohm_gate_core[i], __ATOMIC_RELAXED);

	if (!f) {
		f = dlsym(core_handle, gate_name(i));
		__atomic_store_n(&pohm_gate_core[i], f, __ATOMIC_RELAXED);
	}
	return f;
}

/* ------------------------------------------------------------ light init */

static int config_file_exists(void)
{
	char user[PATH_MAX];
	const char *dir;
	struct stat st;

	if (getenv("POHMELFS_CONFIG"))
		return 1;
	if (!pohm_sys_fstatat(AT_FDCWD, "/etc/pohmelfs.conf", &st, 0))
		return 1;
	if ((dir = getenv("XDG_CONFIG_HOME")) && *dir)
		snprintf(user, sizeof(user), "%s/pohmelfs.conf", dir);
	else if ((dir = getenv("HOME")) && *dir)
		snprintf(user, sizeof(user), "%s/.config/pohmelfs.conf", dir);
	else
		return 0;
	return !pohm_sys_fstatat(AT_FDCWD, user, &st, 0);
}

/* The prefix's realpath (its longest existing ancestor's, plus the rest). */
static void prefix_realpath_add(const char *prefix)
{
	char tmp[PATH_MAX], out[PATH_MAX];
	size_t n = strlen(prefix), cut = n, m;

	if (n >= sizeof(tmp))
		return;
	memcpy(tmp, prefix, n + 1);
	while (!pohm_real.realpath(cut ? tmp : "/", out)) {
		if (!cut)
			return;
		while (cut && tmp[cut] != '/')
			cut--;
		tmp[cut] = '\0';
	}
	m = strlen(out);
	if (m == 1)
		m = 0;
	if (m + (n - cut) >= PATH_MAX)
		return;
	memcpy(out + m, prefix + cut, n - cut + 1);
	pohm_pc_prefix_add(&pohm_state.prefix, out);
}

static int path_needs_core(int dirfd, const char *path, int ro);

static int cwd_setup(void)
{
	char buf[PATH_MAX];
	struct pohm_pc_res res;
	size_t rl = 0;
	long r = syscall(SYS_getcwd, buf, sizeof(buf));

	if (r < 0 || buf[0] != '/')
		return -1;
	/* A cwd under the prefix needs no core yet: every relative path from
	 * it walks IN and loads the core at its first use (issue 23's bench
	 * runs its loop in a directory under the prefix). */
	gate_cwd = (struct pohm_pc_pos){ 0, { 0, 0 } };
	gate_cwd_in = pohm_pc_walk(&pohm_state.prefix, &gate_cwd, NULL, 0, &rl, buf, POHM_PC_FULL,
				   &res) == POHM_PC_IN;
	return 0;
}

static void gate_init(void)
{
	const char *p = getenv("POHMELFS_PREFIX");
	int eager = 0;

	gate_busy++;
	pohm_real_init();
	if (!p || !*p) {
		eager = config_file_exists();
	} else if (pohm_pc_prefix_add(&pohm_state.prefix, p) < 0) {
		eager = 1;	/* the core says what is wrong */
	} else {
		prefix_realpath_add(pohm_state.prefix.sp[0].path);
		gate_on = 1;
		eager = cwd_setup() < 0 || getenv(POHM_FDTAB_ENV) || getenv(POHM_WLOCK_ENV) ||
			path_needs_core(AT_FDCWD, (const char *)getauxval(AT_EXECFN), 0);
		pthread_atfork(pohm_real_bind_all, NULL, NULL);
	}
	if (eager)
		core_load();
	gate_busy--;
}

/* ------------------------------------------------------------ the decision */

/* The read-only lookups of a name that the kernel answers alike on an
 * ancestor of the prefix (no fd, no listing, no change).  UNVERIFIED for
 * an ancestor missing on disk (notes-s18-split). */
static int ancestor_passes(size_t i)
{
	return (i >= G_stat && i <= G_statx) || (i >= G_readlink && i <= G_pathconf) ||
	       (i >= G_statfs && i <= G_statvfs64 && i != G_fstatfs && i != G_fstatfs64) ||
	       i == G_getxattr || i == G_lgetxattr || i == G_listxattr || i == G_llistxattr;
}

/* 1 if (dirfd, path) is under the prefix, on an ancestor of it (ro: for
 * an open, a listing or a change only), in /proc (core/mount's views of
 * it), or climbs out of an unknown directory fd: the core decides then. */
static int path_needs_core(int dirfd, const char *path, int ro)
{
	struct pohm_pc_pos pos = { 0, { 0, 0 } };
	struct pohm_pc_res res;
	size_t rl = 0;

	if (!path || !pohm_addr_plain(path) || !pohm_addr_str(path))
		return 0;	/* the kernel answers EFAULT */
	if (path[0] == '/') {
		if (!ro && !strncmp(path, "/proc/", 6) &&
		    ((path[6] >= '0' && path[6] <= '9') || !strncmp(path + 6, "self", 4) ||
		     !strncmp(path + 6, "thread-self", 11) || !strncmp(path + 6, "mounts", 6)))
			return 1;	/* a process's own views: core/mount */
		if (pohm_pc_fast_out(&pohm_state.prefix, path))
			return 0;
	} else if (dirfd == AT_FDCWD) {
		if (gate_cwd_in)
			return 1;
		if (pohm_pc_fast_out_rel(&pohm_state.prefix, &gate_cwd, path))
			return 0;
		pos = gate_cwd;
	} else {
		pos.depth = POHM_PC_DEEP;
	}
	switch (pohm_pc_walk(&pohm_state.prefix, &pos, NULL, 0, &rl, path, 0, &res)) {
	case POHM_PC_OUT:
		return 0;
	case POHM_PC_ANCESTOR:
		return !ro;
	default:
		return 1;
	}
}

/* A stale hand-over variable in the environment an exec passes on. */
static int env_needs_core(char *const *env)
{
	size_t i;

	for (i = 0; env && pohm_addr_plain(env) && env[i]; i++)
		if (!strncmp(env[i], POHM_FDTAB_ENV "=", sizeof(POHM_FDTAB_ENV)) ||
		    !strncmp(env[i], POHM_WLOCK_ENV "=", sizeof(POHM_WLOCK_ENV)))
			return 1;
	return 0;
}

/* 1 if a PATH search (execvp, posix_spawnp) may find a name under the prefix. */
static int search_needs_core(const char *file)
{
	const char *path = getenv("PATH"), *dir, *end;
	char cand[PATH_MAX];

	if (!file || !pohm_addr_plain(file) || !pohm_addr_str(file) || strchr(file, '/'))
		return 0;	/* a name with a slash was classified as a path */
	for (dir = path ? path : "/bin:/usr/bin";; dir = end + 1) {
		end = strchrnul(dir, ':');
		if ((size_t)(end - dir) + 1 < sizeof(cand)) {
			memcpy(cand, dir, (size_t)(end - dir));
			cand[end - dir] = '\0';
			if (path_needs_core(AT_FDCWD, end == dir ? "." : cand, 1))
				return 1;
		}
		if (!*end)
			return 0;
	}
}

/* Calls the gate does not look into: the core takes them whenever a prefix
 * is configured (cwd tracking, raw system calls by number, the PATH
 * searches and shells that glibc runs inside, sync of the whole cache,
 * execl* and vfork, which have no real entry). */
static int always_core(size_t i, const long *a)
{
	switch (i) {
	case G_chdir: case G_fchdir: case G_syscall: case G_glob: case G_glob64:
	case G_popen: case G_sync: case G_syncfs: case G_vfork:
	case G_execl: case G_execle: case G_execlp:
		return 1;
	case G_execve: case G_execvpe: case G_fexecve:
		return env_needs_core((char *const *)a[2]);
	case G_execveat:
		return env_needs_core((char *const *)a[3]);
	case G_posix_spawn:
		return env_needs_core((char *const *)a[5]);
	case G_posix_spawnp:
		return env_needs_core((char *const *)a[5]) || search_needs_core((const char *)a[1]);
	case G_execv:
		return env_needs_core(environ);
	case G_execvp:
		return env_needs_core(environ) || search_needs_core((const char *)a[0]);
	}
	return 0;
}

static int needs_core(size_t i, const long *a)
{
	const char *c = gate_codes[i];
	int k;

	if (always_core(i, a))
		return 1;
	for (k = 0; k < 6 && c[k]; k++) {
		if (c[k] == 'P' &&
		    path_needs_core(k > 0 && c[k - 1] == 'D' ? (int)a[k - 1] : AT_FDCWD,
				    (const char *)a[k], ancestor_passes(i)))
			return 1;
		if (c[k] == 'L') {
			char *const *l = (char *const *)a[k];
			size_t j;

			for (j = 0; l && pohm_addr_plain(l) && l[j]; j++)
				if (path_needs_core(AT_FDCWD, l[j], 0))
					return 1;
		}
	}
	return 0;
}

/* The real function of entry i (mprotect and mremap: libc's, found once). */
static void *real_entry(size_t i)
{
	static void *mprot, *mrem;
	void **own;

	if (gate_real_slot[i] >= 0)
		return ((void **)(void *)&pohm_real)[gate_real_slot[i]];
	own = i == G_mprotect ? &mprot : i == G_mremap ? &mrem : NULL;
	if (!own)
		return NULL;
	if (!__atomic_load_n(own, __ATOMIC_RELAXED))
		__atomic_store_n(own, dlsym(RTLD_NEXT, gate_name(i)), __ATOMIC_RELAXED);
	return *own;
}

/* regs: the caller's %r9, %r8, %rcx, %rdx, %rsi, %rdi (pohm_gate_slow). */
POHM_HIDDEN void *pohm_gate_decide(unsigned long i, const long *regs);
void *pohm_gate_decide(unsigned long i, const long *regs)
{
	const long a[6] = { regs[5], regs[4], regs[3], regs[2], regs[1], regs[0] };
	int saved = errno;
	void *f;

	if (gate_busy || !environ) {
		pohm_real_init();
		f = real_entry(i);
		goto out;
	}
	pthread_once(&gate_once, gate_init);
	if (i == G_munmap || i == G_mremap || i == G_mprotect || i == G_mmap || i == G_mmap64)
		pohm_addr_changed();	/* pages found readable may not be */
	if (!__atomic_load_n(&core_handle, __ATOMIC_ACQUIRE) &&
	    (gate_on || gate_real_slot[i] < 0) && needs_core(i, a)) {
		if (getenv("GATE_DEBUG"))
			dprintf(2, "gate: %s(%s) loads the core\n", gate_name(i),
				gate_codes[i][0] == 'P' ? (const char *)a[0] :
				gate_codes[i][1] == 'P' ? (const char *)a[1] : "");
		core_load();
	}
	f = __atomic_load_n(&core_handle, __ATOMIC_ACQUIRE) ? core_entry(i) : real_entry(i);
out:
	errno = saved;
	return f;
}

__attribute__((constructor)) static void gate_constructor(void)
{
	if (environ)
		pthread_once(&gate_once, gate_init);
}

/* Entered from a trampoline with the entry's index in %r11 and the
 * caller's return address on top (%rsp = 8 mod 16); as real_lazy.c's
 * common part: the argument registers saved, pohm_gate_decide called,
 * restored, and a jump to its answer. */
__asm__(
	"	.pushsection .text\n"
	"	.globl pohm_gate_slow\n"
	"	.hidden pohm_gate_slow\n"
	"	.type pohm_gate_slow, @function\n"
	"	.p2align 4\n"
	"pohm_gate_slow:\n"
	"	.cfi_startproc\n"
	"	push %rdi\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rdx\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rcx\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r8\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r9\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rax\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r11\n	.cfi_adjust_cfa_offset 8\n"
	"	sub $136, %rsp\n	.cfi_adjust_cfa_offset 136\n"
	"	movaps %xmm0, 0(%rsp)\n"
	"	movaps %xmm1, 16(%rsp)\n"
	"	movaps %xmm2, 32(%rsp)\n"
	"	movaps %xmm3, 48(%rsp)\n"
	"	movaps %xmm4, 64(%rsp)\n"
	"	movaps %xmm5, 80(%rsp)\n"
	"	movaps %xmm6, 96(%rsp)\n"
	"	movaps %xmm7, 112(%rsp)\n"
	"	mov %r11, %rdi\n"
	"	lea 152(%rsp), %rsi\n"
	"	call pohm_gate_decide\n"
	"	mov %rax, 136(%rsp)\n"
	"	movaps 0(%rsp), %xmm0\n"
	"	movaps 16(%rsp), %xmm1\n"
	"	movaps 32(%rsp), %xmm2\n"
	"	movaps 48(%rsp), %xmm3\n"
	"	movaps 64(%rsp), %xmm4\n"
	"	movaps 80(%rsp), %xmm5\n"
	"	movaps 96(%rsp), %xmm6\n"
	"	movaps 112(%rsp), %xmm7\n"
	"	add $136, %rsp\n	.cfi_adjust_cfa_offset -136\n"
	"	pop %r11\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rax\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r9\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r8\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rcx\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rdx\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rsi\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rdi\n	.cfi_adjust_cfa_offset -8\n"
	"	jmp *%r11\n"
	"	.cfi_endproc\n"
	"	.size pohm_gate_slow, . - pohm_gate_slow\n"
	"	.popsection\n");
