#!/usr/bin/env bats
# preload_unloaded.bats — finding 10 of tests/RELIABILITY.md: a `mkdir -p`
# and a writer's creates under the prefix reached host a's disk only.  The
# cause: the library was being relinked (a `make` in the shared build
# directory) when those processes started; ld.so then says "cannot be
# preloaded" on stderr and runs the program without the shim.  These tests
# check that the kill loop now catches such a run at once and says why, and
# that tests/long/kill_loop.sh runs from its own copy of the binaries.

setup() {
	load lib/common
	load lib/cluster
	load ../long/rel_lib
	load ../long/rel_kill
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	T=$BATS_TEST_TMPDIR
}

teardown() {
	rel_stop_daemons
	cluster_stop
}

@test "a kill-loop iteration whose mkdir ran without the shim fails at once and names the cause" {
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	rel_env
	PRELOAD=$T/gone/libpohmelfs.so		# what a process sees while the linker rewrites it
	run kill_iteration 1
	[ "$status" -eq 1 ]
	kill_iteration 1 || true
	echo "$KILL_WHY"
	[[ $KILL_WHY == *"mkdir -p w1 returned 0 but the storage has no w1"* ]]
	[[ $KILL_WHY == *"the shim was not loaded"*"cannot be preloaded"* ]]
	[ -d "$T/a/w1" ]			# made on the local disk only, as in the finding
	[ -n "$(ls "$KILL_KEPT"/cluster-*/nodes)" ]	# the nodes' data is kept for a post-mortem
}

@test "with the shim loaded, the kill loop's check finds a new directory in the storage" {
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	rel_env
	POHMELFS_LOG_LEVEL=info shim a mkdir -p "$T/a/w1" 2>"$T/mkdir.1.log"
	kill_storage_has 1 || { cat "$T/mkdir-check.1"; return 1; }
	[ -z "$(kill_unloaded 1)" ]
	! kill_storage_has 2 || false			# and it can fail: no w2
}

@test "kill_loop.sh runs from its own copy: removing the build's library during the run changes nothing" {
	[ -z "${SAN:-}" ] || skip "kill_loop.sh preloads the plain library"
	mkdir "$T/b"
	cp "$B"/{libpohmelfs.so,pohmelfsd,pohmelfs,pohmelfs-node,pohmelfs-cluster} "$T/b/"
	mkdir -p "$T/b/tests/progs"
	cp "$B/tests/progs/jlookup" "$T/b/tests/progs/"	# the index reader (session 12)
	POHM_BUILD=$T/b TMPDIR=$T timeout 120 "$BATS_TEST_DIRNAME/../long/kill_loop.sh" 2 >"$T/out" 2>&1 &
	local pid=$! i
	for ((i = 0; i < 300; i++)); do
		[ -s "$T/out" ] && break	# "1..2": the copy is made
		sleep 0.1
	done
	rm "$T/b/libpohmelfs.so"		# as a relink does, for a moment
	wait "$pid"
	cat "$T/out"
	# Both kills ran with the shim and their mkdir reached the storage (other
	# failures of a kill, e.g. finding 6, are the kill loop's own business).
	grep -q '^\(not \)\?ok 1 - kill 1 at' "$T/out"
	grep -q '^\(not \)\?ok 2 - kill 2 at' "$T/out"
	! grep -q 'not loaded\|storage has no\|missing from the storage\|Bail out' "$T/out" || false
}
