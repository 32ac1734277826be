/*
 * elfsym.c — the GNU hash lookup behind real.c's fast path (elfsym.h).
 *
 * The layout read here is the ELF gABI's plus the GNU extensions every
 * glibc object has: DT_GNU_HASH (nbuckets, symoffset, bloom_size,
 * bloom_shift, the bloom words, the buckets, the hash chain whose low bit
 * ends a bucket's run), DT_VERSYM (one half-word per symbol: the version
 * index, bit 15 set for a hidden, non-default version).
 */
#include "elfsym.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#if __ELF_NATIVE_CLASS == 64
#define ST_BIND(i)	ELF64_ST_BIND(i)
#define ST_TYPE(i)	ELF64_ST_TYPE(i)
#else
#define ST_BIND(i)	ELF32_ST_BIND(i)
#define ST_TYPE(i)	ELF32_ST_TYPE(i)
#endif

/* d_ptr of a dynamic entry as an address: glibc relocates most of them in
 * place, the vDSO's are offsets; an offset is below the load bias. */
static const void *dyn_ptr(ElfW(Addr) base, ElfW(Addr) p)
{
	return (const void *)(p < base ? p + base : p);
}

static int obj_read(const struct link_map *m, struct pohm_elf_obj *o)
{
	const ElfW(Dyn) *d;

	memset(o, 0, sizeof(*o));
	o->base = m->l_addr;
	if (!m->l_ld)
		return -1;
	for (d = m->l_ld; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			o->symtab = dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			o->strtab = dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_GNU_HASH:
			o->gnu_hash = dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_VERSYM:
			o->versym = dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		}
	}
	return o->symtab && o->strtab && o->gnu_hash ? 0 : -1;
}

/* The object that holds an address, as dl_iterate_phdr sees it: its load
 * bias and its dynamic section. */
struct self_find {
	const void *addr;
	ElfW(Addr) bias;
	const void *dyn;
	unsigned long long subs;	/* objects unloaded so far */
};

/* dlpi_subs of info, or ~0 when this libc does not report it (then every
 * pinned lookup is refused: dlsym answers). */
static unsigned long long info_subs(const struct dl_phdr_info *info, size_t size)
{
	return size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs) ?
	       info->dlpi_subs : ~0ull;
}

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_find *f = arg;
	const void *dyn = NULL;
	int i, in = 0;

	f->subs = info_subs(info, size);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (uintptr_t)f->addr - lo < ph->p_memsz)
			in = 1;
		else if (ph->p_type == PT_DYNAMIC)
			dyn = (const void *)lo;
	}
	if (!in)
		return 0;
	f->bias = info->dlpi_addr;
	f->dyn = dyn;
	return 1;
}

/*
 * The link_map of the object that holds addr: the object's bias and
 * dynamic section from dl_iterate_phdr, the map with both from the
 * loader's list (_r_debug: the initial namespace, where a preload lives).
 * dladdr1 gives the same but looks up the nearest symbol first: 9 000
 * instructions, a sixth of the symbol table's resolution at every start.
 * NULL when not found that way (another namespace): the caller asks
 * dladdr1.
 */
static struct link_map *self_map(const void *addr, unsigned long long *subs)
{
	struct self_find f = { addr, 0, NULL, ~0ull };
	struct link_map *m;

	if (dl_iterate_phdr(self_cb, &f) != 1 || !f.dyn)
		return NULL;
	*subs = f.subs;
	for (m = _r_debug.r_map; m; m = m->l_next)
		if (m->l_addr == f.bias && (const void *)m->l_ld == f.dyn)
			return m;
	return NULL;
}

int pohm_elf_scope_init(struct pohm_elf_scope *s, const void *self_addr)
{
	struct link_map *m = NULL;
	Dl_info info;

	/* Only what is used is written: real.c's scope lies on a page of its
	 * own beyond the first objects (preload/start.ld). */
	s->n = 0;
	s->partial = 0;
	s->subs = ~0ull;	/* unknown: pohm_elf_pinned refuses */
	if (!(m = self_map(self_addr, &s->subs)) &&
	    (!dladdr1(self_addr, &info, (void **)&m, RTLD_DL_LINKMAP) || !m))
		return -1;
	for (m = m->l_next; m; m = m->l_next) {
		if (s->n == POHM_ELF_OBJS || obj_read(m, &s->obj[s->n])) {
			/* Past here the search order is unknown to us: stop, so a
			 * hit is never an object that an unread one would shadow. */
			s->partial = 1;
			break;
		}
		s->n++;
	}
	return 0;
}

static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (; *name; name++)
		h = h * 33 + (uint8_t)*name;
	return h;
}

/* name's default-version plain function in o: 1 (address in *out), 0 not
 * defined here, -1 defined but not plainly (an IFUNC, another type, or only
 * hidden compat versions, which dlsym may still pick): dlsym decides. */
static int obj_find(const struct pohm_elf_obj *o, const char *name, uint32_t h, void **out)
{
	const uint32_t nbuckets = o->gnu_hash[0], symoffset = o->gnu_hash[1];
	const uint32_t bloom_size = o->gnu_hash[2], bloom_shift = o->gnu_hash[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(o->gnu_hash + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word, mask;
	uint32_t i;
	int hidden = 0;

	if (!nbuckets || !bloom_size)
		return 0;
	word = bloom[(h / bits) % bloom_size];
	mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> bloom_shift) % bits));
	if ((word & mask) != mask)
		return 0;
	i = buckets[h % nbuckets];
	if (i < symoffset)
		return 0;
	for (;; i++) {
		const ElfW(Sym) *sym = &o->symtab[i];
		uint32_t ch = chain[i - symoffset];
		unsigned bind = ST_BIND(sym->st_info);

		if ((ch | 1) == (h | 1) && sym->st_shndx != SHN_UNDEF &&
		    (bind == STB_GLOBAL || bind == STB_WEAK) &&
		    !strcmp(o->strtab + sym->st_name, name)) {
			if (o->versym && (o->versym[i] & 0x8000 || !(o->versym[i] & 0x7fff))) {
				hidden = 1;	/* a compat version: look on */
			} else {
				if (ST_TYPE(sym->st_info) != STT_FUNC)
					return -1;
				*out = (void *)(o->base + sym->st_value);
				return 1;
			}
		}
		if (ch & 1)
			return hidden ? -1 : 0;
	}
}

struct pinned {
	const struct pohm_elf_scope *s;
	void (*fn)(void *);
	void *arg;
	int ran;
};

/* Called for the first object only (it returns 1), with the list locked. */
static int pinned_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct pinned *p = arg;

	if (info_subs(info, size) == p->s->subs && p->s->subs != ~0ull) {
		p->fn(p->arg);
		p->ran = 1;
	}
	return 1;
}

int pohm_elf_pinned(const struct pohm_elf_scope *s, void (*fn)(void *), void *arg)
{
	struct pinned p = { s, fn, arg, 0 };

	dl_iterate_phdr(pinned_cb, &p);
	return p.ran ? 0 : -1;
}

void *pohm_elf_find(const struct pohm_elf_scope *s, const char *name)
{
	return pohm_elf_find_h(s, name, gnu_hash(name));
}

void *pohm_elf_find_h(const struct pohm_elf_scope *s, const char *name, uint32_t h)
{
	void *f = NULL;
	int i, r;

	for (i = 0; i < s->n; i++) {
		r = obj_find(&s->obj[i], name, h, &f);
		if (r > 0)
			return f;
		if (r < 0)
			return NULL;
	}
	return NULL;
}
