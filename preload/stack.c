/*
 * stack.c — the library's own stack, one per thread (issue 19 item 10).
 *
 * A hook reaches core/: the cache's walk, the namespace, the network
 * client, the journal; on a cold cache a stat goes through some twenty
 * frames and 40-60 KiB of stack (measured: tests/helpers/stackuse.c).  A
 * host thread may have much less (a 64 KiB pthread stack, a coroutine's),
 * and a library must not decide for its host how deep its stack must be.
 * So every hook runs on a stack of the library's: pohm_stack_run switches
 * the stack pointer to the top of this thread's library stack, calls the
 * function there and switches back.  The caller's stack then carries only
 * the wrapper's frames (a struct pohm_path of 4 KiB per path argument)
 * and the classification: at most 16 KiB per call (shim_procs.bats).
 *
 * The stack: POHM_STACK_SIZE bytes mapped on this thread's first hook
 * (raw mmap: async-signal-safe, no allocator), a PROT_NONE guard page
 * below it, only the pages touched are ever resident; unmapped when the
 * thread exits (a pthread key's destructor).  A fork child keeps the
 * forking thread's.  When it cannot be had (no memory), or while this
 * thread already runs on it (a hook calling another hook, a signal
 * handler interrupting a hook that calls a wrapper), the function runs on
 * the current stack.
 *
 * The switch (x86-64 only; elsewhere, and in sanitizer builds, whose
 * runtimes track each thread's stack bounds, the call is direct) keeps
 * the caller's frame pointer in %rbp with call-frame information that
 * names it, so debuggers and unwinders (pthread_cancel's forced unwind)
 * walk from the library's frames back into the caller's.
 *
 * Limit: a signal handler that longjmps out of a hook leaves `on` set on
 * that thread: its later calls run on their own stack (as before this
 * file), never on a library stack whose frames might still be live.
 */
#include "shim.h"
#include "sys.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define POHM_STACK_SIZE	(256u << 10)
#define POHM_STACK_GUARD	4096u

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define POHM_STACK_SWITCH 1
#else
#define POHM_STACK_SWITCH 0
#endif

#if POHM_STACK_SWITCH

/*
 * pohm_stack_switch(arg, fn, top): fn(arg) with %rsp = top (16-byte
 * aligned), then back.  %rbp holds the caller's %rsp across the call (it
 * is callee-saved, so fn keeps it) and is the CFA's base meanwhile.
 */
long pohm_stack_switch(void *arg, long (*fn)(void *), char *top) POHM_HIDDEN;
__asm__(".text\n"
	".globl pohm_stack_switch\n"
	".hidden pohm_stack_switch\n"
	".type pohm_stack_switch, @function\n"
	"pohm_stack_switch:\n"
	"	.cfi_startproc\n"
	"	pushq %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	movq %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	movq %rdx, %rsp\n"
	"	call *%rsi\n"
	"	movq %rbp, %rsp\n"
	"	popq %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size pohm_stack_switch, .-pohm_stack_switch\n");

/* This thread's library stack (its lowest mapped byte, guard included) and
 * whether a hook runs on it now.  Per thread: no lock. */
static POHM_TLS char *base;
static POHM_TLS int on;

/* The key whose destructor unmaps a thread's stack; created once. */
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;		/* written once under key_once */

/* Runs on the exiting thread: a later destructor (the host's) that calls
 * into the library maps a new one (pthread_setspecific again: glibc runs
 * the destructors up to PTHREAD_DESTRUCTOR_ITERATIONS times). */
static void unmap(void *b)
{
	if (base == b)
		base = NULL;
	pohm_sys_munmap(b, (size_t)POHM_STACK_SIZE + POHM_STACK_GUARD);
}

static void key_make(void)
{
	key_ok = !pthread_key_create(&key, unmap);
}

/* The top of this thread's stack, mapped on first use; NULL when none. */
static char *stack_top(void)
{
	long b;

	if (base)
		return base + POHM_STACK_GUARD + POHM_STACK_SIZE;
	pthread_once(&key_once, key_make);
	if (!key_ok)
		return NULL;
	/* core/sys: no errno touched (pthread_* return their error). */
	b = pohm_sys_mmap(NULL, (size_t)POHM_STACK_SIZE + POHM_STACK_GUARD,
			  PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
			  -1, 0);
	if (b < 0 || pohm_sys_mprotect((void *)b, (size_t)POHM_STACK_GUARD, PROT_NONE) < 0 ||
	    pthread_setspecific(key, (void *)b)) {
		if (b >= 0)
			unmap((void *)b);
		return NULL;
	}
	base = (char *)b;
	return base + POHM_STACK_GUARD + POHM_STACK_SIZE;
}

long pohm_stack_run(long (*fn)(void *), void *arg)
{
	char *top;
	long r;

	if (on)
		return fn(arg);
	/* Set before stack_top: a handler that interrupts the thread's first
	 * mapping (or the process's pthread_once) stays on its own stack. */
	on = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	top = stack_top();
	r = top ? pohm_stack_switch(arg, fn, top) : fn(arg);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	on = 0;
	return r;
}

#else

long pohm_stack_run(long (*fn)(void *), void *arg)
{
	return fn(arg);
}

#endif
