#!/usr/bin/env bats
# preload_threads.bats — pthread_create warms the library's allocator before
# the process first becomes multi-threaded (preload/thread.c, issue 8).
#
# The private jemalloc starts without its constructor and initialises on
# the library's first allocation; a fork that races that initialisation in
# another thread leaves a child that hangs on its first call under the
# prefix.  The programs are tests/helpers/first_thread.c.
#
# Observable: MALLOC_CONF is read only by the private jemalloc (the host's
# glibc malloc ignores it), and an unknown key in it makes jemalloc write
# "<jemalloc>: Invalid conf pair: ..." to stderr when it initialises, so the
# position of that line among the helper's own stderr lines says when the
# initialisation happened.  Sanitizer builds use the sanitizer's malloc and
# have no such line: there only the program's behaviour is checked.

setup() {
	# The interposition layer alone: the storage hooks stay out.
	export POHMELFS_TEST_PASSTHROUGH=1
	POHM_TEST_BUILD=1	# the library that reads the switch
	load lib/common
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	T=$BATS_TEST_TMPDIR
	P=$T/p
	mkdir -p "$P" "$T/cfg"
	echo f >"$P/f"
	H=$B/tests/helpers
	# No configuration file may make light init allocate first.
	unset POHMELFS_CONFIG
	export HOME=$T XDG_CONFIG_HOME=$T/cfg
	PROBE="<jemalloc>: Invalid conf pair: pohm_thread_probe:1"
}

shim() { env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" timeout -k 5 60 "$@"; }

# jemalloc_only: skip where the library has no private jemalloc.
jemalloc_only() {
	[ -z "${SAN:-}" ] || skip "SAN=$SAN: the library allocates with the sanitizer's malloc"
	[ ! -e /etc/pohmelfs.conf ] || skip "/etc/pohmelfs.conf makes light init allocate"
}

# line_no TEXT: the number of the first line of $output that is TEXT, or 0.
line_no() {
	local i
	for i in "${!lines[@]}"; do
		[ "${lines[$i]}" = "$1" ] && { echo $((i + 1)); return; }
	done
	echo 0
}

@test "pthread_create initialises the private allocator before the new thread runs" {
	jemalloc_only
	run shim env MALLOC_CONF=pohm_thread_probe:1 "$H/first_thread" order "$P/f"
	echo "$output"
	[ "$status" -eq 0 ]
	before=$(line_no "main: before pthread_create")
	probe=$(line_no "$PROBE")
	running=$(line_no "thread: running")
	# Without the wrapper the probe comes after "main: joined", at the open.
	[ "$before" -gt 0 ]
	[ "$probe" -gt "$before" ]
	[ "$running" -gt "$probe" ]
	# once: the open under the prefix found it initialised
	[ "$(grep -cF "$PROBE" <<<"$output")" -eq 1 ]
}

@test "thrd_create (C11) initialises the private allocator before the new thread runs" {
	jemalloc_only
	run shim env MALLOC_CONF=pohm_thread_probe:1 "$H/first_thread" order-c11 "$P/f"
	echo "$output"
	[ "$status" -eq 0 ]
	before=$(line_no "main: before thrd_create")
	probe=$(line_no "$PROBE")
	running=$(line_no "thread: running")
	# glibc's thrd_create calls its internal pthread_create, not the
	# library's: without its own wrapper the probe comes at the open.
	[ "$before" -gt 0 ]
	[ "$probe" -gt "$before" ]
	[ "$running" -gt "$probe" ]
	[ "$(grep -cF "$PROBE" <<<"$output")" -eq 1 ]
	[[ "$output" != *"errno changed"* ]]
}

@test "the probe works: the first open under the prefix initialises the allocator" {
	jemalloc_only
	# The observable itself, without threads: nothing before the open
	# under the prefix initialises the private jemalloc, the open does.
	run shim env MALLOC_CONF=pohm_thread_probe:1 cat "$P/f"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$PROBE" ]
	run shim env MALLOC_CONF=pohm_thread_probe:1 /bin/true
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "with no prefix configured pthread_create allocates nothing" {
	jemalloc_only
	run env LD_PRELOAD="$PRELOAD" MALLOC_CONF=pohm_thread_probe:1 timeout -k 5 60 \
		"$H/first_thread" order "$P/f"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(line_no "thread: running")" -gt 0 ]
	[ "$(line_no "main: opened")" -gt 0 ]
	[[ "$output" != *"<jemalloc>"* ]]
}

@test "pthread_create through the library creates the thread and keeps errno" {
	run shim "$H/first_thread" order "$P/f"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(line_no "main: before pthread_create")" -eq 1 ]
	[ "$(line_no "thread: running")" -eq 2 ]
	[ "$(line_no "main: joined")" -eq 3 ]
	[[ "$output" != *"errno changed"* ]]
	[[ "$output" != *failed* ]]
}

@test "children forked while a thread makes the first call under the prefix never hang" {
	# Before the wrapper about 2 runs in 3 had a child stuck on jemalloc's
	# init lock (held by thread A, absent from the child); 20 runs of 20
	# children each.  first_thread kills a child stuck for 5 s and fails.
	# GCC 12's ASan and TSan allocators keep a size-class lock held across
	# fork: a child can hang in them with no library loaded (the same
	# program shape, plain calloc: 1 in 60 runs under ASan, 11 in 60 under
	# TSan), so there this would test the sanitizer runtime.
	case ${SAN:-} in
	address|thread) skip "SAN=$SAN: the sanitizer's allocator is not fork-safe (a child hangs without the library too)" ;;
	esac
	local i
	for i in $(seq 20); do
		run shim "$H/first_thread" race "$P/f" 20
		[ "$status" -eq 0 ] || { echo "run $i (status $status): $output"; return 1; }
	done
}

@test "a single-threaded process forks without the private allocator's fork handlers; a threaded one with them" {
	# Issue 23 (a shell under the shim starting programs): jemalloc's fork
	# handlers lock and unlock every mutex it has, some thirty pages
	# written in the parent and the child of every fork.  preload/jefork.c
	# runs them only when another thread may hold one of those locks.
	# Page faults per fork (fork_faults: a read under the prefix first, so
	# the allocator is initialised): without a thread far fewer than with
	# one (without jefork.c: parent 18 / 21, child 67 / 76).
	jemalloc_only
	run shim "$H/fork_faults" single "$P/f" 50
	echo "single: $output"
	[ "$status" -eq 0 ]
	read -r _ sp _ sc <<<"$output"
	run shim "$H/fork_faults" thread "$P/f" 50
	echo "thread: $output"
	[ "$status" -eq 0 ]
	read -r _ tp _ tc <<<"$output"
	# The handlers still run with a thread: its forks cost more than a
	# few faults over the single-threaded ones, in parent and child.
	awk -v s="$sp" -v t="$tp" 'BEGIN {exit !(t - s >= 8)}'
	awk -v s="$sc" -v t="$tc" 'BEGIN {exit !(t - s >= 15)}'
	# The library's own locks likewise (init.c atfork_*): a single-threaded
	# fork costs the parent about what it costs without the shim (with
	# them: 4 faults more; without jefork.c 16 more).
	run "$H/fork_faults" single "$P/f" 50
	echo "no shim: $output"
	[ "$status" -eq 0 ]
	read -r _ np _ nc <<<"$output"
	awk -v s="$sp" -v n="$np" 'BEGIN {exit !(s - n <= 2)}'
	# And its child, until it reaches the storage itself, runs none of
	# core/mount's resets (hooks_cache.c fork_resets): a few faults more
	# than without the shim (with them: some 20 more).
	awk -v s="$sc" -v n="$nc" 'BEGIN {exit !(s - n <= 10)}'
}
