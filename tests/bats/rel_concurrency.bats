#!/usr/bin/env bats
# rel_concurrency.bats — concurrency through the shim: 8 shell processes in
# one directory running real programs (cp, mkdir -p, mv, rm, all of them
# racing on one mkdir -p), and many threads of one process writing
# different files and one file with O_APPEND (tests/helpers/rel_threads.c).
# What a second cache (another host) reads afterwards must be exactly what
# the programs report: no lost, doubled or torn record, no conflict copy.

setup() {
	load lib/common
	load lib/cluster
	load ../long/rel_lib
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	rel_env
	HELPER=$B/tests/helpers/rel_threads
	if [ ! -x "$HELPER" ]; then
		# A build directory made before this helper existed: build it here.
		HELPER=${BATS_FILE_TMPDIR:-$BATS_TMPDIR}/rel_threads
		case ${SAN:-} in
		address) san="-fsanitize=address -fno-omit-frame-pointer" ;;
		undefined) san="-fsanitize=undefined" ;;
		thread) san="-fsanitize=thread" ;;
		*) san= ;;
		esac
		# shellcheck disable=SC2086
		[ -x "$HELPER" ] || ${CC:-cc} -D_GNU_SOURCE -std=gnu11 -O2 -g $san \
			"$TOP/tests/helpers/rel_threads.c" -pthread -o "$HELPER"
	fi
	shim a mkdir -p "$T/a/w"
}

teardown() {
	rel_stop_daemons
	cluster_stop
}

no_conflicts() {
	run shim z ls -A "$T/z"
	[ "$status" -eq 0 ]
	[[ $output != *.pohmelfs-conflicts* ]]
}

@test "8 processes with cp, mkdir -p, mv, rm in one directory: another host lists exactly what they report" {
	local p k=5 t0
	mkdir -p "$T/src"
	for p in $(seq 0 7); do head -c $((p * 3001 + 5)) /dev/urandom >"$T/src/c$p"; done
	t0=$(date +%s%N)
	rel_race a "$T/a/w" "$T/src" "$T/log" 8 $k
	echo "# 8 processes × $k rounds in $(ms_since "$t0") ms" >&3
	cat "$T"/log.err.*
	[ -z "$(cat "$T"/log.err.*)" ]
	# What the workers report: names made minus names removed, plus the
	# directory they all raced to create (REL_WORKER, rel_lib.bash).
	rel_expected "$T"/log.? >"$T/expected"
	rel_listing b "$T/b/w" >"$T/seen"
	if ! diff "$T/expected" "$T/seen"; then
		rel_race_evidence a b w
		false
	fi
	[ "$(wc -l <"$T/seen")" -gt $((8 * k * 2)) ]
	no_conflicts
}

@test "8 threads of one process write 20 files each: every file whole on another host" {
	run shim a "$HELPER" files "$T/a/w" 8 20
	echo "$output"
	[ "$status" -eq 0 ]
	run shim b "$HELPER" check-files "$T/b/w" 8 20
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(names_of "shim c" "$T/c/w" | wc -l)" -eq 160 ]
	no_conflicts
}

@test "8 threads append 300 records each to one O_APPEND file: none lost, doubled or torn" {
	run shim a "$HELPER" append "$T/a/w/log" 8 300
	echo "$output"
	[ "$status" -eq 0 ]
	# The writer's cache, and another host through the storage.
	run shim a "$HELPER" check-append "$T/a/w/log" 8 300
	echo "$output"
	[ "$status" -eq 0 ]
	run shim b "$HELPER" check-append "$T/b/w/log" 8 300
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "ok 2400 records" ]
	no_conflicts
}

@test "4 shell processes append to one file with >>: every line once, on another host too" {
	local p
	for p in 0 1 2 3; do
		shim a bash -c "for i in \$(seq 50); do printf 'p%d line %03d\n' $p \$i >> '$T/a/w/shared'; done" 2>"$T/err.$p" &
	done
	wait
	cat "$T"/err.*
	eexist=$(cat "$T"/err.* | grep -c "File exists" || true)
	run shim a bash -c "cd '$T/a/w' && sync shared"
	echo "sync: $status $output"
	sync_status=$status
	shim b sort "$T/b/w/shared" >"$T/got"
	for p in 0 1 2 3; do for i in $(seq 50); do printf 'p%d line %03d\n' $p "$i"; done; done | sort >"$T/want"
	lost=$(comm -23 "$T/want" "$T/got" | wc -l)
	shim a sort "$T/a/w/shared" >"$T/got.a"
	echo "lost on host a: $(comm -23 "$T/want" "$T/got.a" | wc -l), through the storage: $lost"
	[ "$eexist" -eq 0 ]
	[ "$sync_status" -eq 0 ]
	diff "$T/want" "$T/got.a"
	diff "$T/want" "$T/got"
	no_conflicts
}
