/*
 * exec.c — programs and libraries: the exec family, posix_spawn (+p, and
 * its addopen file action), dlopen/dlmopen, and vfork.
 *
 * exec hands the table of fds under the prefix to the new image in
 * POHMELFS_FDTAB (fd.c), which its shim adopts at init; the environment is
 * built in memory from a raw mmap, so this works in a vfork child too.
 * A binary under the prefix gets the lookup hook first (materialize it,
 * its #! interpreter and libraries).  execl* are built on execve/execvpe
 * (glibc's reach execve internally).  execvp/execvpe/execlp/posix_spawnp
 * search PATH inside glibc: the candidates under the prefix are fetched
 * first (execp_pre).
 *
 * vfork is fork when a prefix is configured (pohm_vfork_forks), so its
 * child fetches what it executes like any fork child.  Without a prefix it
 * is our own system call (x86-64): the child runs with pohm_depth
 * raised, so every wrapper it calls passes straight through and touches
 * no table and takes no lock, until the parent resumes and lowers it.
 * posix_spawn children run glibc's internal code only.  system and popen
 * are in shell.c.
 *
 * dlopen must stay a tail call: glibc looks at its caller's address to
 * find the RUNPATH and namespace, which must be the program's, not ours.
 *
 * Sections: exec; spawn; libraries; vfork.
 */
#include "shim.h"
#include "execdeps.h"

#include <dlfcn.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

/* ------------------------------------------------------------ exec */

/*
 * The lookup hook of a binary under the prefix, then what the kernel and
 * the loader will open for it (execdeps.c; not for an exec through an
 * fd): 0 to go on, or -errno.  envp: the new image's environment.
 */
static int exec_pre(int dirfd, const char *path, int atflags, char *const envp[])
{
	struct pohm_path p;
	int r;

	if (!pohm_claim_at_ro(dirfd, path, atflags, &p))
		return 0;
	r = pohm_hook_lookup(POHM_PL_EXEC, &p, 0);
	if (r != POHM_PASS && r < 0)
		return r;
	if (dirfd == AT_FDCWD && !(atflags & AT_EMPTY_PATH))
		pohm_exec_deps(path, envp ? envp : environ);
	return 0;
}

/*
 * execvp-style calls search PATH with glibc's internal execve, which no
 * wrapper sees: a candidate under the prefix would be tried as a stub
 * (core/cache/stub.h: EACCES).  So before glibc searches, walk PATH as it will (the
 * caller's PATH, or "/bin:/usr/bin"; an empty entry is the cwd) and fetch
 * each candidate under the prefix through the exec hook, up to the first
 * candidate that exists and may be executed (which glibc will run).  A
 * PATH with nothing under the prefix costs no system call.
 */
static int path_cand(char *cand, size_t size, const char *dir, size_t n, const char *file,
		     size_t flen)
{
	if (n + flen + 2 > size)
		return 0;
	memcpy(cand, dir, n);
	if (n)
		cand[n++] = '/';
	memcpy(cand + n, file, flen + 1);
	return 1;
}

/* 1 if glibc's search would stop at cand (it exists, may be executed, is no directory). */
static int path_runs(const char *cand)
{
	struct stat st;

	return pohm_real.faccessat(AT_FDCWD, cand, X_OK, AT_EACCESS) == 0 &&
	       pohm_real.stat(cand, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int execp_pre(const char *file, char *const envp[])
{
	const char *path, *dir, *end;
	char cand[PATH_MAX];
	struct pohm_path p;
	size_t flen;
	int pass, any = 0, saved;

	file = pohm_launder(file);
	if (!file || !*file || !pohm_active())
		return 0;
	if (strchr(file, '/'))
		return exec_pre(AT_FDCWD, file, 0, envp);
	if ((flen = strlen(file)) > NAME_MAX)
		return 0;
	if (!(path = getenv("PATH")))
		path = "/bin:/usr/bin";
	saved = errno;
	/* Pass 0 only looks for a candidate under the prefix; pass 1 fetches. */
	for (pass = 0; pass < 2 && (pass == 0 || any); pass++) {
		for (dir = path;; dir = end + 1) {
			end = strchrnul(dir, ':');
			if (path_cand(cand, sizeof(cand), dir, (size_t)(end - dir), file, flen) &&
			    pohm_claim_ro(AT_FDCWD, cand, &p)) {
				any = 1;
				if (pass == 1)
					pohm_hook_lookup(POHM_PL_EXEC, &p, 0);
			}
			if (pass == 1 && path_runs(cand)) {
				if (pohm_claim_ro(AT_FDCWD, cand, &p))
					pohm_exec_deps(cand, envp ? envp : environ);
				break;
			}
			if (!*end)
				break;
		}
	}
	errno = saved;
	return 0;
}

POHM_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	struct pohm_exec_mem m;
	char *const *env;
	int r;

	if ((r = exec_pre(AT_FDCWD, path, 0, envp)) < 0)
		return pohm_ret(r);
	env = pohm_exec_env(envp, 1, &m);
	r = pohm_real.execve(path, argv, env);
	pohm_exec_env_free(&m);
	return r;
}

POHM_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

POHM_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct pohm_exec_mem m;
	char *const *env;
	int r;

	if ((r = execp_pre(file, envp)) < 0)
		return pohm_ret(r);
	env = pohm_exec_env(envp, 1, &m);
	r = pohm_real.execvpe(file, argv, env);
	pohm_exec_env_free(&m);
	return r;
}

POHM_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

POHM_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct pohm_exec_mem m;
	char *const *env;
	int r;

	if ((r = exec_pre(fd, "", AT_EMPTY_PATH, envp)) < 0)
		return pohm_ret(r);
	env = pohm_exec_env(envp, 1, &m);
	r = pohm_real.fexecve(fd, argv, env);
	pohm_exec_env_free(&m);
	return r;
}

POHM_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			 int flags)
{
	struct pohm_exec_mem m;
	char *const *env;
	int r;

	if ((r = exec_pre(dirfd, path, flags, envp)) < 0)
		return pohm_ret(r);
	env = pohm_exec_env(envp, 1, &m);
	r = pohm_real.execveat(dirfd, path, argv, env, flags);
	pohm_exec_env_free(&m);
	return r;
}

/* Count the arguments after arg0 up to the NULL (execl style). */
static size_t count_args(const char *arg0, va_list ap)
{
	size_t n = 1;

	if (!arg0)
		return 0;
	while (va_arg(ap, const char *))
		n++;
	return n;
}

/* Fill argv[0..n) from arg0 and ap, then argv[n] = NULL; returns what follows. */
static char *const *fill_args(char **argv, size_t n, const char *arg0, va_list ap)
{
	size_t i;

	if (n)
		argv[0] = (char *)arg0;
	for (i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	if (n)
		(void)va_arg(ap, char *);	/* the NULL */
	argv[n] = NULL;
	return va_arg(ap, char *const *);	/* execle's envp (read only there) */
}

POHM_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg0);
	n = count_args(arg0, ap);
	va_end(ap);
	{
		char *argv[n + 1];
		size_t i;

		va_start(ap, arg0);
		if (n)
			argv[0] = (char *)arg0;
		for (i = 1; i < n; i++)
			argv[i] = va_arg(ap, char *);
		argv[n] = NULL;
		va_end(ap);
		return execve(path, argv, environ);
	}
}

POHM_EXPORT int execle(const char *path, const char *arg0, ...)
{
	char *const *envp;
	va_list ap;
	size_t n;

	va_start(ap, arg0);
	n = count_args(arg0, ap);
	va_end(ap);
	{
		char *argv[n + 1];

		va_start(ap, arg0);
		envp = fill_args(argv, n, arg0, ap);
		va_end(ap);
		return execve(path, argv, envp);
	}
}

POHM_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg0);
	n = count_args(arg0, ap);
	va_end(ap);
	{
		char *argv[n + 1];
		size_t i;

		va_start(ap, arg0);
		if (n)
			argv[0] = (char *)arg0;
		for (i = 1; i < n; i++)
			argv[i] = va_arg(ap, char *);
		argv[n] = NULL;
		va_end(ap);
		return execvpe(file, argv, environ);
	}
}

/* ------------------------------------------------------------ spawn */

/* posix_spawn reports errors as its result; errno is left as glibc leaves it. */
POHM_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct pohm_exec_mem m;
	char *const *env;
	int r;

	if ((r = exec_pre(AT_FDCWD, path, 0, envp)) < 0)
		return -r;
	env = pohm_exec_env(envp, 0, &m);
	r = pohm_real.posix_spawn(pid, path, fa, attr, argv, env);
	pohm_exec_env_free(&m);
	return r;
}

POHM_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[],
			     char *const envp[])
{
	struct pohm_exec_mem m;
	char *const *env;
	int r;

	if ((r = execp_pre(file, envp)) < 0)
		return -r;
	env = pohm_exec_env(envp, 0, &m);
	r = pohm_real.posix_spawnp(pid, file, fa, attr, argv, env);
	pohm_exec_env_free(&m);
	return r;
}

/* The child opens path inside glibc: materialize it now (a create happens there). */
POHM_EXPORT int posix_spawn_file_actions_addopen(posix_spawn_file_actions_t *fa, int fd,
						 const char *path, int oflag, mode_t mode)
{
	struct pohm_path p;
	int r;

	if (pohm_claim_op(AT_FDCWD, path, (oflag & (O_CREAT | O_TRUNC | O_ACCMODE)) != 0, &p) &&
	    (r = pohm_hook_lookup(POHM_PL_SPAWN_OPEN, &p, oflag)) != POHM_PASS && r < 0)
		return -r;
	return pohm_real.posix_spawn_file_actions_addopen(fa, fd, path, oflag, mode);
}

/* ------------------------------------------------------------ libraries */

/* Out of line so that dlopen itself keeps no frame and tail-calls libc. */
__attribute__((noinline)) static void dl_pre(const char *file)
{
	struct pohm_path p;

	if (pohm_claim_ro(AT_FDCWD, file, &p))
		pohm_hook_lookup(POHM_PL_DLOPEN, &p, 0);
}

POHM_EXPORT void *dlopen(const char *file, int mode)
{
	pohm_init();
	if (pohm_launder(file) && strchr(file, '/'))
		dl_pre(file);
	return pohm_real.dlopen(file, mode);
}

POHM_EXPORT void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
	pohm_init();
	if (pohm_launder(file) && strchr(file, '/'))
		dl_pre(file);
	return pohm_real.dlmopen(lmid, file, mode);
}

/* ------------------------------------------------------------ vfork */

/* Called from the vfork below, around the system call. */
void pohm_vfork_enter(void);
void pohm_vfork_leave(void);
void pohm_vfork_errno(int e);

/*
 * 1 once light init found a prefix: vfork is then fork (POSIX allows it).
 * A vfork child shares the parent's memory, so it can run none of the
 * library's code that fetches (locks held by the parent's other threads,
 * the client's pid check that would reset the parent's connections, the
 * sockets' replies): an exec of a binary under the prefix that is not yet
 * in the cache failed ENOENT or EACCES (issue 19 item 2, Python's
 * subprocess).  A fork child runs the exec path whole.  The cost is the
 * page-table copy vfork avoids.  Written once by light init before the
 * shim is ready; read by the vfork below.  Defined in state.c, the
 * bottom of preload/ (shim.h), so that init.c, which sets it, calls
 * nothing of this file.
 */

void pohm_vfork_enter(void)
{
	pohm_depth++;
}

void pohm_vfork_leave(void)
{
	pohm_depth--;
}

void pohm_vfork_errno(int e)
{
	errno = e;
}

#if defined(__x86_64__)
/*
 * As glibc's: the return address lives in %rdi across the system call (the
 * child returns first and reuses the stack), and is pushed back after it.
 * The child keeps pohm_depth raised; the parent lowers it when it resumes.
 */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork,@function\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	cmpl $0, pohm_vfork_forks(%rip)\n"
	"	jne 3f\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call pohm_vfork_enter\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %rdi\n"
	"	movl $58, %eax\n"		/* SYS_vfork */
	"	syscall\n"
	"	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rip, 0\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"			/* the child: return 0 */
	"	pushq %rax\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call pohm_vfork_leave\n"
	"	popq %rax\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	cmpq $-4095, %rax\n"
	"	jae 2f\n"
	"1:	ret\n"
	"2:	movl %eax, %edi\n"
	"	negl %edi\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call pohm_vfork_errno\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	movq $-1, %rax\n"
	"	ret\n"
	"3:	jmp fork@PLT\n"		/* a prefix is configured: a real fork */
	"	.cfi_endproc\n"
	".size vfork, .-vfork\n");
#else
#error "vfork is implemented for x86-64 only; add the architecture's version here"
#endif
