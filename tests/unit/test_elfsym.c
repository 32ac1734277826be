/*
 * test_elfsym.c — preload/elfsym.c, the fast path of the real-function
 * table: for every name in preload/syms.def it must answer exactly what
 * dlsym(RTLD_NEXT) answers, or nothing (dlsym then decides); and it must
 * answer most of them, or the fast path is not one.
 */
#include <dlfcn.h>
#include <string.h>

#include "harness.h"
#include "elfsym.h"

/* Each name with its hash folded at compile time, as real.c gives them. */
static const uint32_t hashes[] = {
#define SYM(ret, name, args) POHM_ELF_HASH(#name),
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

static const char *const names[] = {
#define SYM(ret, name, args) #name,
#define SYMV SYM
#define SYMX(ret, name, args)
#include "syms.def"
#undef SYM
#undef SYMV
#undef SYMX
};

static struct pohm_elf_scope scope;

/* Is the next definition of name libc's own? */
static int libc_has(const char *name)
{
	Dl_info info;
	void *f = dlsym(RTLD_NEXT, name);

	return f && dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so");
}

static void scope_once(void)
{
	if (!scope.n)
		EXPECT_EQ_INT(pohm_elf_scope_init(&scope, (const void *)&scope), 0);
}

TEST(every_answer_is_dlsyms_answer)
{
	size_t i, n = sizeof(names) / sizeof(*names), found = 0;

	scope_once();
	EXPECT(scope.n >= 1);	/* libc at least */
	for (i = 0; i < n; i++) {
		void *f = pohm_elf_find(&scope, names[i]);

		if (!f)
			continue;
		found++;
		if (f != dlsym(RTLD_NEXT, names[i])) {
			printf("# %s: %p, dlsym says %p\n", names[i], f, dlsym(RTLD_NEXT, names[i]));
			EXPECT(0);
		}
	}
	printf("# %zu of %zu names found without dlsym\n", found, n);
	EXPECT(found * 10 >= n * 9);
}

TEST(what_is_not_a_plain_default_function_is_left_to_dlsym)
{
	scope_once();
	EXPECT(!pohm_elf_find(&scope, "pohm_no_such_function"));
	EXPECT(!pohm_elf_find(&scope, ""));
	/* An IFUNC (glibc picks the variant for this CPU at resolution), when
	 * libc's strlen is the next one; a sanitizer's runtime loaded before
	 * libc has a plain strlen of its own, and that is what both answer. */
	if (libc_has("strlen"))
		EXPECT(!pohm_elf_find(&scope, "strlen"));
	else
		EXPECT(pohm_elf_find(&scope, "strlen") == dlsym(RTLD_NEXT, "strlen"));
	/* Data, not a function. */
	EXPECT(!pohm_elf_find(&scope, "environ"));
	/* Two versions (realpath@GLIBC_2.2.5 hidden, @@GLIBC_2.3 default): the
	 * default one, as dlsym picks. */
	EXPECT(pohm_elf_find(&scope, "realpath") == dlsym(RTLD_NEXT, "realpath"));
	if (dlvsym(RTLD_NEXT, "realpath", "GLIBC_2.2.5"))
		EXPECT(pohm_elf_find(&scope, "realpath") !=
		       dlvsym(RTLD_NEXT, "realpath", "GLIBC_2.2.5"));
	/* And a plain one is found. */
	EXPECT(pohm_elf_find(&scope, "openat") == dlsym(RTLD_NEXT, "openat"));
}

TEST(an_address_in_no_object_gives_an_empty_scope)
{
	struct pohm_elf_scope s;

	EXPECT_EQ_INT(pohm_elf_scope_init(&s, (const void *)16), -1);
	EXPECT(!pohm_elf_find(&s, "open"));
}

/* The GNU hash as the ELF tables hold it, computed at run time. */
static uint32_t run_hash(const char *name)
{
	uint32_t h = 5381;

	for (; *name; name++)
		h = h * 33 + (uint8_t)*name;
	return h;
}

TEST(the_compile_time_hash_is_the_gnu_hash)
{
	size_t i, n = sizeof(names) / sizeof(*names);

	EXPECT_EQ_INT(sizeof(hashes) / sizeof(*hashes), n);
	for (i = 0; i < n; i++)
		if (hashes[i] != run_hash(names[i])) {
			printf("# %s: %08x, run time %08x\n", names[i], hashes[i], run_hash(names[i]));
			EXPECT(0);
		}
	EXPECT(POHM_ELF_HASH("") == 5381);
	EXPECT(POHM_ELF_HASH("0123456789012345678901234567890123456789") ==
	       run_hash("0123456789012345678901234567890123456789"));
	/* And the lookup with it finds what dlsym finds. */
	scope_once();
	EXPECT(pohm_elf_find_h(&scope, "openat", POHM_ELF_HASH("openat")) ==
	       dlsym(RTLD_NEXT, "openat"));
}

/* A scope of its own for the test below. */
static struct pohm_elf_scope unl;

static void find_missing(void *arg)
{
	*(void **)arg = pohm_elf_find(&unl, "pohm_no_such_function");
}

/*
 * A scope filled while a dlopened object was loaded: once that object is
 * dlclosed, its hash tables are unmapped, and a lookup that reaches it (a
 * name no earlier object defines) read them — a crash.  Pinned lookups
 * are refused from then on (the caller asks dlsym).  Checked: a plain
 * pohm_elf_find(&unl, ...) after the dlclose dies with SIGSEGV.
 */
TEST(a_scope_is_not_read_after_one_of_its_objects_is_unloaded)
{
	void *h = dlopen("libanl.so.1", RTLD_NOW | RTLD_LOCAL);
	void *f = (void *)1;

	if (!h) {
		printf("# skip: no libanl.so.1 (%s)\n", dlerror());
		return;
	}
	EXPECT_EQ_INT(pohm_elf_scope_init(&unl, (const void *)&unl), 0);
	EXPECT_EQ_INT(pohm_elf_pinned(&unl, find_missing, &f), 0);
	EXPECT(f == NULL);
	EXPECT_EQ_INT(dlclose(h), 0);
	f = (void *)1;
	EXPECT_EQ_INT(pohm_elf_pinned(&unl, find_missing, &f), -1);
	EXPECT(f == (void *)1);
}
