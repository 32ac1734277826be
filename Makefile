# libpohmelfs — one non-recursive Makefile.
# Sources are found by wildcard: a new core/<layer>/*.c, preload/*.c, node/*.c,
# tools/<prog>/*.c or tests/unit/test_*.c needs no edit here.  core/ is split
# into layer folders (doc/ARCHITECTURE.md); a new layer is added to
# CORE_LAYERS, in its place from the bottom up.
#
#   make                      build everything into build/
#   make check [SAN=address|undefined|thread]   all tests, one summary line
#   make bench | demo | fuzz | deps | install | uninstall | clean

# Parallel by default, one job per core (the build is most of a fresh
# `make check`'s first minutes); `make -jN` overrides.  Not in a sub-make
# that shares its parent's jobserver (forcing -j there resets it; the
# parent's flags are in the environment, not yet in MAKEFLAGS).
ifeq ($(filter -j%,$(MAKEFLAGS))$(findstring --jobserver,$(shell printenv MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

.DEFAULT_GOAL := all

# ---------------------------------------------------------------- setup
# `make deps` escalates with sudo only when it is not root (a root image
# has no sudo; the README's `make deps demo` works as written either way).
DEPS := build-essential clang libjemalloc-dev libclang-rt-14-dev bats strace \
        sqlite3 git rsync python3 util-linux man-db groff-base gnuplot-nox
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@[ -z "$(SUDO)" ] || command -v $(SUDO) >/dev/null || \
	    { echo "make deps: not root and no $(SUDO): run it as root" >&2; exit 1; }
	$(SUDO) apt-get update
	$(SUDO) apt-get install -y $(DEPS)

# `make deps GOAL...` (the README's `make deps demo`): the dependencies are
# installed first, then GOAL... is made by a new make.  Within one make the
# build would run beside apt (parallel jobs), and what this Makefile finds on
# the system (JEMALLOC_PIC below) was looked up before apt ran.
DEPS_THEN := $(if $(filter deps,$(MAKECMDGOALS)),$(filter-out deps,$(MAKECMDGOALS)))
ifneq ($(DEPS_THEN),)
.PHONY: deps deps-then $(DEPS_THEN)
$(DEPS_THEN): deps-then ; @:
deps-then: deps
	+$(MAKE) -f $(firstword $(MAKEFILE_LIST)) $(DEPS_THEN)
else	# the build: everything below, to the endif on the last line

CC       ?= cc
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wstrict-prototypes -Wshadow -Wmissing-prototypes \
            -Wno-unused-parameter
PREFIX   ?= /usr/local
DESTDIR  ?=
SAN      ?=

# A sanitizer build lives in its own directory so it never mixes with the
# normal one.  Under a sanitizer the library uses the sanitizer's malloc
# instead of the private jemalloc (the runtime must see every allocation).
ifeq ($(SAN),)
B        := build
SANFLAGS :=
else ifeq ($(SAN),address)
B        := build/san-address
SANFLAGS := -fsanitize=address -fno-omit-frame-pointer
else ifeq ($(SAN),undefined)
B        := build/san-undefined
SANFLAGS := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SAN),thread)
B        := build/san-thread
SANFLAGS := -fsanitize=thread
else
$(error SAN must be address, undefined or thread)
endif

# The layers of core/, bottom first: a layer may include the headers of the
# layers before it, never of those after it (tests/layering checks this).
# admin/ (fsck, repair, cache tools) sits beside the top: the tools link it,
# the library does not.
CORE_LAYERS := sys wire config net store ns cache mount admin
CPPFLAGS += -D_GNU_SOURCE $(addprefix -Icore/,$(CORE_LAYERS)) -MMD -MP
# Thread-locals are initial-exec everywhere (the library is preloaded, its
# TLS static; preload/'s POHM_TLS already is): core's plain __thread in a
# -fPIC object called __tls_get_addr at every use, and every fork child
# bound that PLT slot anew in its atfork handler (issue 23).
CFLAGS   += -std=gnu11 $(OPT) $(WARN) -fPIC -fvisibility=hidden -fno-builtin-malloc \
            -ftls-model=initial-exec -pthread $(SANFLAGS)
LDFLAGS  += -pthread $(SANFLAGS)

# The library always links the private jemalloc, except under a sanitizer:
# without libjemalloc_pic.a the build stops (never a silent fallback to the
# host's malloc, which the shim must not share with the program).
JEMALLOC_PIC ?= $(firstword $(wildcard /usr/lib/*/libjemalloc_pic.a /usr/lib/libjemalloc_pic.a))
ifeq ($(SAN),)
LIB_ALLOC := $(B)/jemalloc_lazy.a
else
LIB_ALLOC :=
endif

CORE_SRC    := $(foreach l,$(CORE_LAYERS),$(wildcard core/$(l)/*.c))
PRELOAD_SRC := $(wildcard preload/*.c)
NODE_SRC    := $(wildcard node/*.c)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
TOOL_DIRS   := $(patsubst tools/%/,%,$(dir $(wildcard tools/*/main.c)))
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)

CORE_OBJ    := $(CORE_SRC:%.c=$(B)/obj/%.o)
# What a host process loads: core without the admin layer and the in-memory
# test store.
LIB_CORE_OBJ := $(filter-out $(B)/obj/core/admin/% $(B)/obj/core/store/kvmem.o,$(CORE_OBJ))
PRELOAD_OBJ := $(PRELOAD_SRC:%.c=$(B)/obj/%.o)
NODE_OBJ    := $(NODE_SRC:%.c=$(B)/obj/%.o)
UNIT_BIN    := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
TOOL_BIN    := $(TOOL_DIRS:%=$(B)/%)
SCRIPTS     := $(B)/pohmelfs-run $(if $(wildcard tools/pohmelfs-cluster),$(B)/pohmelfs-cluster)

PROG_SRC    := $(wildcard tests/progs/*.c)
PROG_BIN    := $(PROG_SRC:tests/progs/%.c=$(B)/tests/progs/%)

LIB         := $(B)/libpohmelfs.so
CORE_A      := $(B)/libpohmcore.a

# The test switches (POHMELFS_TEST_*, core/sys/sys.h pohm_sys_test_switch)
# and the crash-test kill hook: linked into test builds only.
TEST_SWITCH_O := $(B)/obj/tests/progs/hooks/test_switch.o
TEST_KILL_O   := $(B)/obj/tests/progs/hooks/test_kill.o
# build/test/: the library, pohmelfs and pohmelfsd built with the switches,
# and links to the rest of build/, so that a bats file that needs a switch
# runs with B=build/test (POHM_TEST_BUILD=1, tests/bats/lib/common.bash).
TB          := $(B)/test
TEST_BUILD  := $(TB)/libpohmelfs.so $(TOOL_DIRS:%=$(TB)/%) $(TB)/.links
TB_LINKS    := tests obj pohmelfs-node pohmelfs-run pohmelfs-cluster libpohmcore.a \
               libpohmelfs.map jemalloc_lazy.a

all: $(LIB) $(CORE_A) $(TOOL_BIN) $(if $(NODE_SRC),$(B)/pohmelfs-node) $(SCRIPTS) $(UNIT_BIN) \
     $(PROG_BIN) $(B)/tests/helpers/.stamp $(TEST_BUILD)

# Every object depends on the compile flags as they were last used
# ($(B)/.cflags, rewritten only when they change): a new flag here rebuilds
# what it changes instead of leaving old objects in place.
CFLAGS_NOW := $(CC) $(CPPFLAGS) $(CFLAGS)
$(B)/.cflags: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = '$(CFLAGS_NOW)' ] || echo '$(CFLAGS_NOW)' > $@
FORCE:
.PHONY: FORCE

$(B)/obj/%.o: %.c $(B)/.cflags
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(CORE_A): $(CORE_OBJ) $(B)/layering.ok
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $(CORE_OBJ)

# The build fails when a layer of core/ includes a higher one, or anything
# outside a layer includes a part of it instead of its public header
# (core/L/L.h): checked before anything is compiled.
$(CORE_OBJ) $(PRELOAD_OBJ) $(NODE_OBJ) $(patsubst %.c,$(B)/obj/%.o,$(wildcard tools/*/*.c)): \
		| $(B)/layering.ok
$(B)/layering.ok: $(wildcard core/*/*.[ch] preload/*.[ch] node/*.[ch] tools/*/*.[ch]) \
		  tests/layering.sh Makefile
	@mkdir -p $(@D)
	tests/layering.sh $(CORE_LAYERS)
	@touch $@

# The export list is generated from the one symbol list, so the library
# exports exactly what preload/syms.def names and nothing else.
$(B)/libpohmelfs.map: preload/syms.def preload/exports.sh
	@mkdir -p $(@D)
	sh preload/exports.sh preload/syms.def > $@

# The library, the node and the tools are linked to NAME.tmp and renamed into
# place: a program started while the linker writes would otherwise run with a
# half-written file (ld.so only warns "cannot be preloaded" and goes on
# without the shim: RELIABILITY.md finding 10).
# The private jemalloc without its constructor: it initialises on the first
# allocation (the first call under the prefix) instead of at every program's
# start (/bin/true: 46 page faults and ~63k instructions less).  Its call to
# pthread_atfork goes to preload/jefork.c, which runs jemalloc's fork
# handlers only in a process that may have another thread (a shell's fork:
# ~50 page faults less).
$(B)/jemalloc_lazy.a: $(wildcard $(JEMALLOC_PIC)) Makefile
	@[ -f "$(JEMALLOC_PIC)" ] || { \
	    echo "error: libjemalloc_pic.a not found$(if $(JEMALLOC_PIC), (JEMALLOC_PIC=$(JEMALLOC_PIC))):" \
	         "the library links a private jemalloc." >&2; \
	    echo "error: install the package libjemalloc-dev (make deps)," \
	         "or set JEMALLOC_PIC=/path/to/libjemalloc_pic.a." >&2; exit 1; }
	rm -rf $@.d && mkdir -p $@.d
	cd $@.d && ar x $(abspath $<) && for o in *.o; do \
	    objcopy --remove-section=.init_array --remove-section=.rela.init_array \
	        --redefine-sym pthread_atfork=pohm_je_atfork $$o || exit 1; \
	done && rm -f ../$(@F).tmp && ar rcs ../$(@F).tmp *.o
	rm -rf $@.d && mv -f $@.tmp $@

# Lazy binding (no -z now): the library's ~140 PLT slots into libc are bound
# on first use, not at every start (/bin/true: ~85k instructions less);
# -z relro still makes the rest of the GOT read-only after relocation.
# The allocator comes first: without it the build stops before compiling.
# DT_FINI is init.c's empty pohm_dt_fini, in the start code's window
# (crti's _fini, past the end of .text, cost a text fault at every exit).
LIB_LINK = $(CC) -shared -o $@.tmp $(filter %.o,$^) $(filter %.a,$^) -Wl,-fini=pohm_dt_fini \
	    -Wl,--version-script=$(B)/libpohmelfs.map -Wl,-z,relro -Wl,-z,defs -Wl,-T,preload/start.ld \
	    $(LDFLAGS) -ldl -lm
# What every process start runs (light init, the symbol table, the exit
# path; the fd and cwd tables every wrapper asks) is linked first.  Where
# its code goes is preload/start.ld's (.text.pohm_start, with what a
# shell's fork child runs: one fault-around window, issue 23); this order
# is its data's.  A name missing here only costs a fault.
LIB_START_OBJ := $(filter $(PRELOAD_OBJ) $(LIB_CORE_OBJ),$(addprefix $(B)/obj/, \
	preload/init.o preload/real.o preload/real_lazy.o preload/elfsym.o preload/fallback.o preload/state.o \
	preload/cwd.o preload/fd.o preload/handoff.o preload/sigsafe.o preload/stack.o \
	preload/hooks_stack.o preload/hooks_cache.o core/sys/log.o core/sys/sys.o \
	core/mount/pathclass.o))
$(LIB): $(LIB_ALLOC) $(LIB_START_OBJ) $(PRELOAD_OBJ) $(LIB_CORE_OBJ) $(B)/libpohmelfs.map \
	$(B)/layering.ok Makefile preload/start.ld
	$(LIB_LINK)
	mv -f $@.tmp $@
# The test build of the library: the same objects and the test switches.
$(TB)/libpohmelfs.so: $(LIB_ALLOC) $(LIB_START_OBJ) $(TEST_SWITCH_O) $(PRELOAD_OBJ) $(LIB_CORE_OBJ) \
		      $(B)/libpohmelfs.map $(B)/layering.ok Makefile preload/start.ld
	@mkdir -p $(@D)
	$(LIB_LINK)
	mv -f $@.tmp $@
$(TB)/.links: Makefile
	@mkdir -p $(@D)
	for l in $(TB_LINKS); do ln -sfn ../$$l $(TB)/$$l || exit 1; done
	@touch $@

$(B)/pohmelfs-node: $(NODE_OBJ) $(CORE_A)
	$(CC) -o $@.tmp $(NODE_OBJ) $(CORE_A) $(LDFLAGS)
	mv -f $@.tmp $@

# Each tools/<prog>/main.c (plus its siblings) becomes build/<prog>.
.SECONDEXPANSION:
$(TOOL_BIN): $(B)/%: $$(addprefix $(B)/obj/,$$(subst .c,.o,$$(wildcard tools/$$*/*.c))) $(CORE_A)
	$(CC) -o $@.tmp $(filter %.o,$^) $(CORE_A) $(LDFLAGS)
	mv -f $@.tmp $@
$(TOOL_DIRS:%=$(TB)/%): $(TB)/%: $$(addprefix $(B)/obj/,$$(subst .c,.o,$$(wildcard tools/$$*/*.c))) \
				$(TEST_SWITCH_O) $(CORE_A)
	@mkdir -p $(@D)
	$(CC) -o $@.tmp $(filter %.o,$^) $(CORE_A) $(LDFLAGS)
	mv -f $@.tmp $@

$(B)/pohmelfs-run: tools/pohmelfs-run.sh
	@mkdir -p $(@D)
	install -m 755 $< $@
$(B)/pohmelfs-cluster: tools/pohmelfs-cluster
	@mkdir -p $(@D)
	install -m 755 $< $@

# Unit tests of the node (tests/unit/test_node_*.c) also link its objects
# (all but main.o).
NODE_LIB_OBJ := $(filter-out $(B)/obj/node/main.o,$(NODE_OBJ))
$(B)/tests/test_node_%: $(B)/obj/tests/unit/test_node_%.o $(NODE_LIB_OBJ) $(TEST_SWITCH_O) $(CORE_A)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(NODE_LIB_OBJ) $(TEST_SWITCH_O) $(CORE_A) $(LDFLAGS)
$(B)/obj/tests/unit/test_node_%.o: CPPFLAGS += -Inode

# The unit test of preload/elfsym.c links that one object.
$(B)/tests/test_elfsym: $(B)/obj/tests/unit/test_elfsym.o $(B)/obj/preload/elfsym.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS)
$(B)/obj/tests/unit/test_elfsym.o: CPPFLAGS += -Ipreload
# The unit test of the real-function table (preload/real.c, real_lazy.c).
REALTAB_OBJ := $(addprefix $(B)/obj/preload/,real.o real_lazy.o elfsym.o fallback.o)
$(B)/tests/test_reallazy: $(B)/obj/tests/unit/test_reallazy.o $(REALTAB_OBJ) $(TEST_SWITCH_O) $(CORE_A)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(REALTAB_OBJ) $(TEST_SWITCH_O) $(CORE_A) $(LDFLAGS) -ldl
$(B)/obj/tests/unit/test_reallazy.o: CPPFLAGS += -Ipreload

# test_jstale watches the cache's journal reads (tests/unit/test_jstale.c).
$(B)/tests/test_jstale: LDFLAGS += -Wl,--wrap=pohm_journal_get
# test_sigqueue runs a replay just before a chosen local unlink (tests/unit/test_sigqueue.c).
$(B)/tests/test_sigqueue: LDFLAGS += -Wl,--wrap=pohm_sys_unlinkat
# test_crash dies at a chosen record put or test-kill point (tests/unit/test_crash.c).
$(B)/tests/test_crash: LDFLAGS += -Wl,--wrap=pohm_journal_put -Wl,--wrap=pohm_journal_put_commit \
	-Wl,--wrap=pohm_sys_test_kill

$(B)/tests/test_%: $(B)/obj/tests/unit/test_%.o $(TEST_SWITCH_O) $(CORE_A)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(TEST_SWITCH_O) $(CORE_A) $(LDFLAGS)
$(B)/obj/tests/unit/%.o: CPPFLAGS += -Itests/unit

# Test programs linked with core (tests/progs/*.c → build/tests/progs/*).
# They carry the crash-test hooks (tests/progs/hooks/), which nothing else
# links, and the test switches.
$(B)/tests/progs/%: $(B)/obj/tests/progs/%.o $(TEST_KILL_O) $(TEST_SWITCH_O) $(CORE_A)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(TEST_KILL_O) $(TEST_SWITCH_O) $(CORE_A) $(LDFLAGS)

# Small C programs the bats tests run (tests/helpers/*.c → build/tests/helpers/*).
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(B)/tests/helpers/%)
$(B)/tests/helpers/.stamp: $(HELPER_BIN)
	@mkdir -p $(@D) && touch $@
$(B)/tests/helpers/%: tests/helpers/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(OPT) -Wall -Wextra -Werror $(SANFLAGS) -o $@ $< -pthread

# ---------------------------------------------------------------- tests
# The tests and tools run without our make flags: a `make` inside a test
# (shim_programs builds a project) must not inherit a jobserver.
check: all
	env -u MAKEFLAGS -u MFLAGS B=$(B) SAN=$(SAN) CC=$(CC) tests/run

fuzz:
	tests/fuzz/run $(FUZZ_SECONDS)

bench: all
	env -u MAKEFLAGS -u MFLAGS B=$(B) tests/bench/run

demo: all
	env -u MAKEFLAGS -u MFLAGS B=$(B) tools/demo.sh

# ---------------------------------------------------------------- install
# Only the directories something is installed into are made (install -d of
# a man section with no page, or of sbin, left empty directories behind).
MANS := $(wildcard man/*.[1-8])
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin \
	    $(addprefix $(DESTDIR)$(PREFIX)/share/man/man,$(sort $(subst .,,$(suffix $(MANS))))) \
	    $(if $(wildcard conf/*),$(DESTDIR)$(PREFIX)/share/doc/libpohmelfs)
	install -m 755 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	for t in $(TOOL_BIN) $(B)/pohmelfs-node; do [ -f $$t ] && install -m 755 $$t $(DESTDIR)$(PREFIX)/bin/; done; true
	sed 's|^POHMELFS_LIBDIR=.*|POHMELFS_LIBDIR=$(PREFIX)/lib|' tools/pohmelfs-run.sh > $(DESTDIR)$(PREFIX)/bin/pohmelfs-run
	chmod 755 $(DESTDIR)$(PREFIX)/bin/pohmelfs-run
	install -m 755 tools/pohmelfs-cluster $(DESTDIR)$(PREFIX)/bin/
	for m in man/*.[1-8]; do [ -f $$m ] && install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/; done; true
	for c in conf/*; do [ -f $$c ] && install -m 644 $$c $(DESTDIR)$(PREFIX)/share/doc/libpohmelfs/; done; true

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libpohmelfs.so
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,pohmelfs pohmelfsd pohmelfs-node pohmelfs-run pohmelfs-cluster)
	for m in man/*.[1-8]; do rm -f $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m##*/}; done; true
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/libpohmelfs

clean:
	rm -rf build tests/tmp

# Keep objects of test programs (they are otherwise intermediate files).
# Only those: a bare .SECONDARY makes every target secondary, and a missing
# secondary file is not remade while what uses it is newer than its sources
# (a missing jemalloc_lazy.a was never rebuilt into the library).
.SECONDARY: $(UNIT_SRC:tests/unit/%.c=$(B)/obj/tests/unit/%.o) \
            $(PROG_SRC:tests/progs/%.c=$(B)/obj/tests/progs/%.o) \
            $(TEST_KILL_O) $(TEST_SWITCH_O)

.PHONY: all check fuzz bench demo deps install uninstall clean
-include $(shell find $(B)/obj $(B)/tests/helpers -name '*.d' 2>/dev/null)
endif	# DEPS_THEN
