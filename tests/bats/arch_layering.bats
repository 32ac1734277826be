#!/usr/bin/env bats
# arch_layering.bats — core/ is split into layer folders whose includes point
# down (tests/layering.sh, run by the build too), raw system calls are made
# only in core/sys (tests/rawsys.sh), preload/ makes one hook call per
# operation (tests/hookpairs.sh), and the library that host processes
# load carries no admin or test code (doc/ARCHITECTURE.md).

setup() {
	load lib/common
	LAYERS=$(sed -n 's/^CORE_LAYERS *:= *//p' "$TOP/Makefile")
	[ -n "$LAYERS" ]
}

# copy_tree DIR: core/, preload/, node/, tools/ and the checker copied into
# DIR, to break on purpose.
copy_tree() {
	mkdir -p "$1/tests"
	cp -r "$TOP/core" "$TOP/preload" "$TOP/node" "$TOP/tools" "$1/"
	cp "$TOP/tests/layering.sh" "$TOP/tests/rawsys.sh" "$TOP/tests/rawsys.allow" \
	   "$TOP/tests/hookpairs.sh" "$1/tests/"
}

@test "the tree's layers include only downwards" {
	# shellcheck disable=SC2086
	run "$TOP/tests/layering.sh" $LAYERS
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a lower layer including a higher one is named and fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	echo '#include "mount.h"' >>"$t/core/wire/buf.c"
	# shellcheck disable=SC2086
	POHM_LAYER_ROOT=$t run "$t/tests/layering.sh" $LAYERS
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'core/wire/buf.c:'*'core/wire includes "mount.h" of core/mount, a higher layer'* ]]
}

@test "a folder of core/ that is no layer, or a header in no layer, fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	mkdir "$t/core/misc" && echo 'int x;' >"$t/core/misc/x.c"
	echo '#include "nowhere.h"' >>"$t/core/ns/ns.c"
	# shellcheck disable=SC2086
	POHM_LAYER_ROOT=$t run "$t/tests/layering.sh" $LAYERS
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'core/misc: a folder that is not a layer'* ]]
	[[ $output == *'core/ns/ns.c:'*'"nowhere.h", which is in no layer'* ]]
}

@test "outside a layer, including a part of it instead of its public header fails the check" {
	# Issue 20: core/L/L.h is layer L's whole interface.  A higher layer,
	# preload/, node/ and tools/ include only that; the parts (log.h,
	# io_int.h, conn.h, ...) are the layer's own business.
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	echo '#include "io_int.h"' >>"$t/core/ns/nsdir.c"
	echo '#include "log.h"' >>"$t/preload/fd.c"
	echo '#include "conn.h"' >>"$t/tools/pohmelfs/status.c"
	echo '#include "buf.h"' >>"$t/node/wire.c"
	echo '/* x */' >"$t/node/store.h"
	# shellcheck disable=SC2086
	POHM_LAYER_ROOT=$t run "$t/tests/layering.sh" $LAYERS
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'core/ns/nsdir.c:'*'includes "io_int.h", a part of core/store; include its public header "store.h"'* ]]
	[[ $output == *'preload/fd.c:'*'includes "log.h", a part of core/sys; include its public header "sys.h"'* ]]
	[[ $output == *'tools/pohmelfs/status.c:'*'includes "conn.h", a part of core/net; include its public header "net.h"'* ]]
	[[ $output == *'node/wire.c:'*'includes "buf.h", a part of core/wire'* ]]
	[[ $output == *'node/store.h: has the name of core/store/store.h'* ]]
	[ "${#lines[@]}" -eq 5 ]
	# The layer's own files include their parts freely, and the public
	# header is all an outsider needs: the unchanged tree passes.
	# shellcheck disable=SC2086
	POHM_LAYER_ROOT=$TOP run "$TOP/tests/layering.sh" $LAYERS
	[ "$status" -eq 0 ]
}

@test "a layer without its public header fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	rm "$t/core/admin/admin.h"
	# shellcheck disable=SC2086
	POHM_LAYER_ROOT=$t run "$t/tests/layering.sh" $LAYERS
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'core/admin: no public header core/admin/admin.h'* ]]
}

@test "a public header that does not open with its layer's comment fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	sed -i '1,/\*\//d' "$t/core/net/net.h"		# the comment goes
	sed -i 's|core/wire|core/w|' "$t/core/wire/wire.h"	# names no layer
	# shellcheck disable=SC2086
	POHM_LAYER_ROOT=$t run "$t/tests/layering.sh" $LAYERS
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'core/net/net.h: does not open with a comment about layer core/net'* ]]
	[[ $output == *'core/wire/wire.h: does not open with a comment about layer core/wire'* ]]
	[ "${#lines[@]}" -eq 2 ]
}

@test "the library links no admin layer and no in-memory test store" {
	# Symbols of the library's own (hidden) functions: none from core/admin
	# (fsck, cache tools) nor core/store/kvmem.c.
	run nm "$LIB"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -gt 100 ]
	! grep -E ' [tTdDbB] (pohm_fsck_|pohm_ct_|pohm_kvmem_)' <<<"$output" || false
	# ... while the tools' archive has them.
	nm "$B/libpohmcore.a" 2>/dev/null | grep -qE ' T pohm_fsck_'
	nm "$B/libpohmcore.a" 2>/dev/null | grep -qE ' T pohm_kvmem_'
	# Nothing the library needs is left undefined (it is linked with -z defs).
	! nm -D --undefined-only "$LIB" | grep -v '@' | grep -E ' U pohm_' || false
}

@test "the shipped library, tools and node read no POHMELFS_TEST_* switch; build/test/ does" {
	# Issue 20: test-only switches are compiled into test builds only
	# (core/sys/sys.h pohm_sys_test_switch, tests/progs/hooks/test_switch.c).
	local f
	for f in "$B/libpohmelfs.so" "$B/pohmelfs" "$B/pohmelfsd" "$B/pohmelfs-node"; do
		[ -s "$f" ]
		run grep -c POHMELFS_TEST < <(strings "$f")
		echo "$f: $output"
		[ "$output" = 0 ]
	done
	# The test build carries every switch the bats tests set ...
	# (a name's line may start with the printable bytes that precede it in
	# .rodata: strings joins them, so the line's end is matched)
	for f in PASSTHROUGH REGULAR_STUBS INTERNAL_FD BOOT_ID LIST_FAIL; do
		strings "$B/test/libpohmelfs.so" | grep -q "POHMELFS_TEST_$f\$"
	done
	strings "$B/test/pohmelfsd" | grep -qx POHMELFS_TEST_REGULAR_STUBS
	# ... and so do the test programs, which also kill (cache_hosts.bats
	# checks that the library, also its test build, never does).
	strings "$B/tests/progs/cache_ctl" | grep -qx POHMELFS_TEST_KILL_IN_RENAME
}

# ------------------------------------------------------------ raw system calls

@test "syscall( is called only in core/sys and the files tests/rawsys.allow lists" {
	# Issue 20: core/sys's wrappers return -errno and never touch errno;
	# the allow-list holds exactly the files not converted yet.  The
	# objects of the shipped build are checked too (nm -u: a call through
	# a macro or a function pointer).
	run "$TOP/tests/rawsys.sh" "${SHIPPED_LIB%/*}"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a new syscall( outside core/sys fails the check; comments and strings do not" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	n=$(wc -l <"$t/preload/fd.c")
	echo 'static long raw_pid(void) { return syscall(SYS_getpid); }' >>"$t/preload/fd.c"
	cat >>"$t/core/ns/ns.c" <<'EOF'
/* syscall(SYS_getpid) in a comment,
 * syscall(SYS_getpid) on its next line */ static const char *s = "syscall(";
// syscall(SYS_getpid)
static const char c = '"'; /* "syscall(" */
static long pohm_my_syscall(long nr);
EOF
	POHM_RAWSYS_ROOT=$t run "$t/tests/rawsys.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ ${lines[0]} == "preload/fd.c:$((n + 1)):"*'syscall( outside core/sys'* ]]
	[ "${#lines[@]}" -eq 1 ]
	# core/sys itself may call it
	echo 'static long raw_pid(void) { return syscall(SYS_getpid); }' >>"$t/core/sys/sys.c"
	sed -i '$d' "$t/preload/fd.c"
	POHM_RAWSYS_ROOT=$t run "$t/tests/rawsys.sh"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the allow-list only shrinks: a listed file without syscall( fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	# The list is empty: list a file that has no call, and one that is gone.
	f=preload/fd.c
	! grep -q 'syscall(' "$t/$f" || false
	printf '%s\tno call\npreload/nowhere.c\tgone\n' "$f" >>"$t/tests/rawsys.allow"
	POHM_RAWSYS_ROOT=$t run "$t/tests/rawsys.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"tests/rawsys.allow: $f calls syscall( no more: take it off the list"* ]]
	[[ $output == *'tests/rawsys.allow: preload/nowhere.c does not exist: take it off the list'* ]]
	[ "${#lines[@]}" -eq 2 ]
}

@test "an object outside core/sys that refers to syscall fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	mkdir -p "$t/b/obj/preload" "$t/b/obj/core/sys"
	printf '#include <unistd.h>\nlong f(long nr) { long (*sc)(long, ...) = syscall; return sc(nr); }\n' \
		>"$t/preload/x.c"
	cc -c -o "$t/b/obj/preload/x.o" "$t/preload/x.c"
	cp "$t/b/obj/preload/x.o" "$t/b/obj/core/sys/y.o"	# core/sys may
	POHM_RAWSYS_ROOT=$t run "$t/tests/rawsys.sh" "$t/b"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'b/obj/preload/x.o: refers to syscall (from preload/x.c, not on tests/rawsys.allow)'* ]]
	[ "${#lines[@]}" -eq 1 ]
}

# ------------------------------------------------------------ circles

@test "no circle between files that are not one unit of tests/units.list" {
	# Issue 20: circles found from the objects' symbols (tests/circles.sh);
	# the list says which are one unit and why.
	run "$TOP/tests/circles.sh" "${SHIPPED_LIB%/*}"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a new circle fails the check, and so does a listed unit that is no circle" {
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/tests" "$t/b/obj/core/x" "$t/core/x"
	cp "$TOP/tests/circles.sh" "$t/tests/"
	# a.o and b.o call each other; c.o only calls a.o.
	printf 'int b(int);\nint a(int n) { return n ? b(n - 1) : 0; }\n' >"$t/core/x/a.c"
	printf 'int a(int);\nint b(int n) { return a(n); }\n' >"$t/core/x/b.c"
	printf 'int a(int), z(int);\nint c(int n) { return a(n) + z(n); }\n' >"$t/core/x/c.c"
	# gone.o calls c back, but its source is gone: a leftover of an
	# earlier layout, which counts for nothing.
	printf 'int c(int);\nint z(int n) { return n ? c(n - 1) : 0; }\n' >"$t/core/x/gone.c"
	for f in a b c gone; do cc -c -o "$t/b/obj/core/x/$f.o" "$t/core/x/$f.c"; done
	rm "$t/core/x/gone.c"
	printf '# none\n' >"$t/tests/units.list"
	POHM_CIRCLES_ROOT=$t run "$t/tests/circles.sh" "$t/b"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ ${lines[0]} == 'a circle that is not one unit of tests/units.list: core/x/a core/x/b' ]]
	[ "${#lines[@]}" -eq 3 ]
	# Declared as one unit, it passes ...
	printf 'core/x/a core/x/b\t# one unit\n' >"$t/tests/units.list"
	POHM_CIRCLES_ROOT=$t run "$t/tests/circles.sh" "$t/b"
	echo "$output"
	[ "$status" -eq 0 ]
	# ... but a unit larger than its circle, or one that is gone, fails.
	printf 'core/x/a core/x/b core/x/c\n' >"$t/tests/units.list"
	POHM_CIRCLES_ROOT=$t run "$t/tests/circles.sh" "$t/b"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'tests/units.list:1: core/x/a core/x/b core/x/c is not exactly one circle'* ]]
	printf 'int c(int n) { return n; }\n' >"$t/core/x/a.c"
	cc -c -o "$t/b/obj/core/x/a.o" "$t/core/x/a.c"
	printf 'core/x/a core/x/b\n' >"$t/tests/units.list"
	POHM_CIRCLES_ROOT=$t run "$t/tests/circles.sh" "$t/b"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'tests/units.list:1: core/x/a core/x/b is not exactly one circle (any more)'* ]]
}

# ------------------------------------------------------------ the tree and its doc

@test "the tree matches doc/ARCHITECTURE.md: every source file named, every named file there" {
	run "$TOP/tests/archdoc.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a source file the doc does not name, or a named file that is gone, fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/doc"
	cp -r "$TOP/core" "$TOP/preload" "$TOP/node" "$TOP/tools" "$TOP/tests" "$t/"
	cp "$TOP/doc/ARCHITECTURE.md" "$t/doc/"
	POHM_ARCHDOC_ROOT=$t run "$t/tests/archdoc.sh"
	[ "$status" -eq 0 ]
	echo 'int x;' >"$t/core/ns/nsnew.c"
	rm "$t/preload/mprot.c"
	POHM_ARCHDOC_ROOT=$t run "$t/tests/archdoc.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'core/ns/nsnew.c: not named in doc/ARCHITECTURE.md §2-§5'* ]]
	[[ $output == *'doc/ARCHITECTURE.md: names mprot.c, which is not in the tree'* ]]
	[ "${#lines[@]}" -eq 2 ]
}

# ------------------------------------------------------------ hook pairs

@test "preload/ makes one hook call per operation: no wrapper calls two hooks" {
	# Issue 20: the before/after hook pairs went (the mkstemp family's was
	# the last, session 12); each wrapper passes its libc call to one hook.
	run "$TOP/tests/hookpairs.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a wrapper calling a hook before its libc call and another after fails the check" {
	t=$BATS_TEST_TMPDIR/tree
	copy_tree "$t"
	n=$(wc -l <"$t/preload/fd.c")
	cat >>"$t/preload/fd.c" <<'EOT'
static int paired(const struct pohm_path *p, struct pohm_fd_info *fi)
{
	/* pohm_hook_stat( and pohm_hook_ns( in a comment are no calls */
	int r = pohm_hook_lookup(POHM_PL_TEMPDIR, p, 0);

	return r < 0 ? r : pohm_hook_mktemp(p, 0, fi, NULL);
}

static int single(const struct pohm_path *p)
{
	return pohm_hook_lookup(POHM_PL_TEMPDIR, p, 0) +	/* pohm_hook_open( */
	       pohm_hook_lookup(POHM_PL_TEMPDIR, p, 0);
}
EOT
	POHM_HOOKPAIRS_ROOT=$t run "$t/tests/hookpairs.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "preload/fd.c:$((n + 1)): paired calls pohm_hook_lookup and pohm_hook_mktemp: one hook call per operation (hooks.h)" ]
	[ "${#lines[@]}" -eq 1 ]
}
