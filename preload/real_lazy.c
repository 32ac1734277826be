/*
 * real_lazy.c — the stand-ins that resolve a real-table entry at its first
 * call (x86-64; real.h POHM_REAL_LAZY, real.c's top says why).
 *
 * One stand-in per entry of syms.def, 16 bytes apart and in the table's
 * order, so the address a stand-in passes on names its entry.  Each loads
 * its own address into %r11 and jumps to the common part, which saves the
 * argument registers (the six integer ones, %rax — a variadic call's
 * vector count — and %xmm0-7), calls pohm_real_lazy_resolver (real.c's,
 * set before the first stand-in is stored) with that address, restores
 * them and jumps to the answer: the real function gets
 * the caller's arguments and returns to the caller, as through the PLT.
 * Arguments on the stack are not touched.  Nothing of ours is locked (the
 * lookup holds the loader's recursive list lock, real.c): any number
 * of threads, a signal handler or a vfork child may resolve the same
 * entry at once, and they store the same answer.
 */
#include "real.h"

#include <stdint.h>

#include "sys.h"

#if POHM_REAL_LAZY

POHM_START_BSS void (*(*pohm_real_lazy_resolver)(uintptr_t at))(void);

/* One stand-in: endbr64 (4 bytes), lea (7), jmp (5 at most): 16.  The
 * .org makes a longer one a build error ("attempt to move .org
 * backwards"), never a stand-in that names another entry: an assembler
 * told to pad branches (-Wa,-mbranches-within-32B-boundaries) would. */
#define LAZY_STUB							\
	"	.p2align 4\n"						\
	"0:	endbr64\n"						\
	"	lea 0(%rip), %r11\n"					\
	"	jmp pohm_real_lazy_common\n"				\
	"	.org 0b + 16\n"

__asm__(
	"	.pushsection .text\n"
	"	.globl pohm_real_lazy_stubs\n"
	"	.hidden pohm_real_lazy_stubs\n"
	"	.type pohm_real_lazy_stubs, @function\n"
	"	.p2align 4\n"
	"pohm_real_lazy_stubs:\n"
	"	.cfi_startproc\n"
#define SYM(ret, name, args) LAZY_STUB
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
	"	.cfi_endproc\n"
	"	.size pohm_real_lazy_stubs, . - pohm_real_lazy_stubs\n"
	"\n"
	/* Entered with the caller's return address on top (%rsp = 8 mod 16):
	 * 8 pushes and 136 bytes leave it 16-aligned for the call and for
	 * movaps.  The answer replaces the saved %r11 and is popped last. */
	"	.p2align 4\n"
	"	.type pohm_real_lazy_common, @function\n"
	"pohm_real_lazy_common:\n"
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
	"	call *pohm_real_lazy_resolver(%rip)\n"
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
	"	.size pohm_real_lazy_common, . - pohm_real_lazy_common\n"
	"	.popsection\n");

#endif
