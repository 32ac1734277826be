#!/usr/bin/env bats
# ux_mismatch.bats — small mismatches between what the tools say and do
# (issue 21 item 8): `pohmelfs --help` names fsck's and repair's --json; a
# bad boolean says every accepted spelling; `pohmelfs-run -o` with a typo
# gets the configuration's "did you mean"; a missing command is reported
# as a shell would (127, no script line number); `pohmelfsd --help` is
# usage and status 0.  No cluster: nothing here reaches a node.

bats_require_minimum_version 1.5.0

setup() {
	load lib/common
	T=$BATS_TEST_TMPDIR
	P=$B/pohmelfs
	RUN=$B/pohmelfs-run
	unset $(env | sed -n 's/^\(POHMELFS_[A-Z_]*\)=.*/\1/p')
	unset LD_PRELOAD
	export POHMELFS_CONFIG=/dev/null XDG_CONFIG_HOME=$T/xdg HOME=$T/home
	export POHMELFS_SERVERS=127.0.0.1:1 POHMELFS_GROUPS=1:2:3 POHMELFS_READ_WAIT_TIMEOUT=0.2
}

@test "pohmelfs --help says that fsck and repair take --json" {
	run "$P" --help
	[ "$status" -eq 0 ]
	[[ $output == *"fsck [--json] [-v] [--age=S]"* ]]
	[[ $output == *"repair [--json] [-v]"* ]]
	[[ $output == *"--json prints the report of status, sync, stats, cache clean, lookup, fsck"*"and repair as JSON"* ]]
}

@test "a bad boolean names every spelling that is accepted, and they are" {
	run env POHMELFS_SYNC_ON_CLOSE=2 "$P" stats
	echo "$output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"sync_on_close=2: invalid value, expected 1, yes, true or on; 0, no, false or off" ]]
	printf 'read_repair = maybe\n' >"$T/c.conf"
	run env POHMELFS_CONFIG="$T/c.conf" "$P" stats
	[ "$status" -eq 2 ]
	[[ $output == *"c.conf:1: read_repair=maybe: invalid value, expected 1, yes, true or on; 0, no, false or off" ]]
	# Each spelling the message names is accepted (stats then fails for
	# want of a prefix, not for the value).
	for v in 1 yes true on 0 no false off YES Off; do
		run env POHMELFS_SYNC_ON_CLOSE=$v "$P" stats
		echo "$v -> $status: $output"
		[[ $output != *"invalid value"* ]]
	done
}

@test "pohmelfs-run -o with a mistyped key: the configuration's did-you-mean" {
	run "$RUN" -o grups=1:2 -- touch "$T/ran"
	echo "$output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == "pohmelfs-run: -o grups=1:2: unknown key \"grups\", expected one of pohmelfs.conf(5): "*"; did you mean \"groups\"?" ]]
	[ ! -e "$T/ran" ]
	# The same suggestion as a config file's error.
	printf 'grups = 1:2\n' >"$T/c.conf"
	run env POHMELFS_CONFIG="$T/c.conf" "$P" stats
	[[ $output == *"did you mean \"groups\"?"* ]]
	run "$RUN" -o read_repiar true
	[[ $output == *"did you mean \"read_repair\"?" ]]
	# Nothing near: no suggestion.
	run "$RUN" -o frobnicate=1 true
	[ "$status" -eq 2 ]
	[[ $output != *"did you mean"* ]]
	run "$P" config suggest cache_siz
	[ "$status" -eq 0 ]
	[ "$output" = cache_size ]
	run "$P" config suggest frobnicate
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}

@test "pohmelfs-run with a missing command: 'command not found', status 127, no line number" {
	run -127 "$RUN" nonexistcmd arg
	echo "$output"
	[ "$status" -eq 127 ]
	[ "$output" = "pohmelfs-run: nonexistcmd: command not found" ]
	run -127 "$RUN" -- "$T/nonexist"
	[ "$status" -eq 127 ]
	[ "$output" = "pohmelfs-run: $T/nonexist: No such file or directory" ]
	printf 'not a program\n' >"$T/plain"
	run -126 "$RUN" "$T/plain"
	[ "$status" -eq 126 ]
	[ "$output" = "pohmelfs-run: $T/plain: Permission denied" ]
	# A command that exists still runs, with its own status.
	[ -n "${SAN:-}" ] || {
		run "$RUN" sh -c 'exit 7'
		[ "$status" -eq 7 ]
	}
}

@test "pohmelfsd --help prints its usage on stdout and exits 0; a bad option is still 2" {
	run "$B/pohmelfsd" --help
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == "usage: pohmelfsd [--foreground] [--once] [--idle SECONDS]" ]]
	[[ $output == *"--once"*"--idle SECONDS"* ]]
	run "$B/pohmelfsd" -h
	[ "$status" -eq 0 ]
	run "$B/pohmelfsd" --frobnicate
	[ "$status" -eq 2 ]
	[[ $output == "usage: pohmelfsd"* ]]
	"$B/pohmelfsd" --help 2>/dev/null | grep -q "usage: pohmelfsd"
}
