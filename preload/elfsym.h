/*
 * elfsym.h — find the next definition of a function after an object, as
 * dlsym(RTLD_NEXT) does, by reading the loaded objects' GNU hash tables.
 *
 * Why: the symbol table is resolved at every process start (real.c), and
 * dlsym costs ~800 instructions a name (its lock, the caller's object, the
 * version checks): 162 000 of the 344 000 instructions of `/bin/true` under
 * the shim (issue 23, process start).  A hash lookup in the few objects
 * after ours costs a tenth of that.
 *
 * What it answers: the first object loaded after `self` (in load order,
 * which for the objects a process starts with is the global search order)
 * whose dynamic symbol table defines `name` as a function (STT_FUNC) with
 * its default version (not a hidden compat version), bound GLOBAL or WEAK.
 * Anything else — an IFUNC, a compat-only symbol, an object without a GNU
 * hash table, no definition — answers NULL, and the caller asks dlsym:
 * this is a fast path, never the only path.  No allocation, no lock, no
 * libc call after pohm_elf_scope_init (pohm_elf_pinned around it takes the
 * loader's list lock).
 */
#ifndef POHM_PRELOAD_ELFSYM_H
#define POHM_PRELOAD_ELFSYM_H

#include <elf.h>
#include <link.h>
#include <stdint.h>

#define POHM_ELF_OBJS	16	/* objects after ours that are searched */

/* One loaded object's dynamic symbol table. */
struct pohm_elf_obj {
	ElfW(Addr) base;		/* load bias */
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash;
	const ElfW(Half) *versym;	/* NULL: no versions */
};

/* The objects after ours, in search order. */
struct pohm_elf_scope {
	int n;
	int partial;		/* more objects than POHM_ELF_OBJS, or one not readable */
	unsigned long long subs;	/* dl_iterate_phdr's dlpi_subs when filled */
	struct pohm_elf_obj obj[POHM_ELF_OBJS];	/* [0, n) filled */
};

/* Fill s with the objects loaded after the one that holds self_addr.
 * 0, or -1 when that object cannot be found (then every lookup misses). */
int pohm_elf_scope_init(struct pohm_elf_scope *s, const void *self_addr);

/*
 * Run fn(arg) while no object can be unloaded (inside dl_iterate_phdr, whose
 * lock dlclose takes to remove one), provided none was unloaded since s was
 * filled: 0, or -1 (fn not run: an object of s may be gone, ask dlsym).  A
 * lookup in s that may run while the program dlcloses something goes
 * through here: light init's scope would otherwise keep the hash tables of
 * an object unmapped since (one dlopened before light init).  Takes the
 * loader's list lock (recursive), allocates nothing.
 */
int pohm_elf_pinned(const struct pohm_elf_scope *s, void (*fn)(void *), void *arg);

/* The address of name's default-version function in the first object of s
 * that defines it, or NULL (not found, or not a plain function: ask dlsym).
 * A scope marked partial answers NULL for a name none of its objects has.
 * The objects of s must still be loaded (pohm_elf_pinned). */
void *pohm_elf_find(const struct pohm_elf_scope *s, const char *name);

/* The same with name's GNU hash given (POHM_ELF_HASH of a literal costs
 * nothing at run time). */
void *pohm_elf_find_h(const struct pohm_elf_scope *s, const char *name, uint32_t h);

/*
 * POHM_ELF_HASH("literal"): the GNU hash (h = h * 33 + c from 5381) of a
 * string literal of at most POHM_ELF_HASH_MAX characters, folded by the
 * compiler into a constant (each step is h * m + c, m and c constants, so
 * the expansion grows linearly).  A longer literal fails to compile.
 */
#define POHM_ELF_HASH_MAX	40
#define POHM_EH_(s, i, h)						\
	((uint32_t)(h) * ((i) < sizeof(s) - 1 ? 33u : 1u) +		\
	 ((i) < sizeof(s) - 1 ? (uint32_t)(uint8_t)(s)[(i) < sizeof(s) - 1 ? (i) : 0] : 0u))
#define POHM_EH4_(s, i, h)						\
	POHM_EH_(s, (i) + 3, POHM_EH_(s, (i) + 2, POHM_EH_(s, (i) + 1, POHM_EH_(s, (i), h))))
#define POHM_EH20_(s, i, h)						\
	POHM_EH4_(s, (i) + 16, POHM_EH4_(s, (i) + 12, POHM_EH4_(s, (i) + 8,	\
	POHM_EH4_(s, (i) + 4, POHM_EH4_(s, (i), h)))))
#define POHM_ELF_HASH(s)						\
	(0 * sizeof(char[sizeof(s) - 1 <= POHM_ELF_HASH_MAX ? 1 : -1]) +	\
	 POHM_EH20_(s, 20, POHM_EH20_(s, 0, 5381u)))

#endif
