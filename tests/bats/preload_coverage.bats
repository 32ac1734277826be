#!/usr/bin/env bats
# preload_coverage.bats — the coverage list of man/libpohmelfs.7 and the
# one symbol list (preload/syms.def) name the same functions (issue 8:
# "the coverage list in the man page matches").

setup() {
	# These test the interposition layer alone: the storage hooks stay out.
	export POHMELFS_TEST_PASSTHROUGH=1
	POHM_TEST_BUILD=1	# the library that reads the switch
	load lib/common
	syms=$TOP/preload/syms.def
	man=$TOP/man/libpohmelfs.7
}

# Function names in the COVERAGE section of the man page: ".B name" or
# ".BR name ," (not headings, man page references or variables).
man_names() {
	sed -n '/^\.SH COVERAGE/,/^\.SH /p' "$man" |
		sed -n 's/^\.BR\{0,1\} \([a-z_][a-z0-9_]*[a-z0-9]\)\( [,:.]\)\{0,1\}$/\1/p' |
		grep -vx -e environ -e fts | sort -u
}

sym_names() {
	sed -n 's/^SYM[VX]\{0,1\}([^,]*, *\([A-Za-z0-9_]*\),.*/\1/p' "$syms" | sort -u
}

@test "every interposed function is in the man page's coverage list" {
	man_names >"$BATS_TEST_TMPDIR/man"
	missing=
	for n in $(sym_names); do
		# "64" names and fts64_* are covered by "and their 64 names"
		base=${n%64}; base=${base/fts64_/fts_}
		grep -qx -e "$n" -e "$base" "$BATS_TEST_TMPDIR/man" || missing="$missing $n"
	done
	echo "not in the man page:$missing"
	[ -z "$missing" ]
}

@test "every function the coverage list names is interposed" {
	sym_names >"$BATS_TEST_TMPDIR/syms"
	extra=
	for n in $(man_names); do
		case $n in read|write|pread|pwrite|lseek|fallocate|posix_fallocate|splice) continue ;; esac
		grep -qx "$n" "$BATS_TEST_TMPDIR/syms" || extra="$extra $n"
	done
	echo "named but not interposed:$extra"
	[ -z "$extra" ]
}

@test "every interposed function has a test that calls it" {
	# errno_probe, pathops, threads and fdtorture call most of them; the
	# programs of preload_programs.bats the rest (exec, spawn, stdio, walks).
	called=$(cat "$TOP"/tests/helpers/*.c | grep -oE '(\b[a-z_][a-z0-9_]*\(|"[a-z_][a-z0-9_]*")' |
		tr -d '("' | sort -u)
	untested=
	for n in $(sym_names); do
		base=${n%64}; base=${base/fts64_/fts_}; base=${base/readdir64_r/readdir_r}
		case $n in
		# The fortified entry points are calls the compiler writes (no
		# name in a source; shim_calls.bats builds sc_fortify.c fortified
		# for the __open_2 family); __xmknod* are compat-only since glibc
		# 2.33.  The __xstat family is called by name (sc_calls.c).
		__*_chk|__*_2|__xmknod|__xmknodat) continue ;;
		esac
		echo "$called" | grep -qx -e "$n" -e "$base" || untested="$untested $n"
	done
	echo "not called by a helper:$untested"
	[ -z "$untested" ]
}

# The functions the man page says the library implements itself ("Functions
# that reach the kernel inside glibc", the headings before fopen's): each
# must be called by the helpers that preload_walks.bats runs against a
# cache of stubs (walks.c, spawns.c).
own_names() {
	sed -n '/^\.SS Functions that reach the kernel inside glibc/,/^\.BR fopen ", "/p' "$man" |
		grep -A1 '^\.TP' | grep '^\.BR ' | grep -v '^\.BR fopen' |
		sed 's/"[^"]*"/ /g; s/^\.BR //' | tr ' ' '\n' | grep -E '^[a-z_]' |
		sed 's/^fts_\*$/fts_open fts_read fts_children fts_set fts_close/' | tr ' ' '\n' | sort -u
}

@test "every function the library implements itself is tested on a cache of stubs" {
	names=$(own_names)
	[ "$(echo "$names" | wc -w)" -ge 15 ]	# the parse found the list
	grep -q 'helpers/walks' "$TOP/tests/bats/preload_walks.bats"
	grep -q 'helpers/spawns' "$TOP/tests/bats/preload_walks.bats"
	untested=
	for n in $names; do
		grep -qE "\\b$n\\(" "$TOP/tests/helpers/walks.c" "$TOP/tests/helpers/spawns.c" ||
			untested="$untested $n"
	done
	echo "not called by walks.c or spawns.c:$untested"
	[ -z "$untested" ]
}
