#!/usr/bin/env bats
# ux_progress.bats — the progress line of the long commands (issue 21 item
# 10): `pohmelfs sync`, `cache clean`, `fsck` and `repair` show count,
# bytes, rate and (when the total is known) an ETA on one updating line of
# stderr when it is a terminal (script(1) gives one), and print nothing of
# it when stderr is not a terminal or with --json.

setup() {
	load lib/common
	load lib/cluster
	command -v script >/dev/null || skip "script(1) (util-linux) is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=prog POHMELFS_ATTR_TIMEOUT=0
	export POHMELFS_READ_WAIT_TIMEOUT=3 POHMELFS_WRITE_WAIT_TIMEOUT=3
	export POHMELFS_PREFIX=$BATS_TEST_TMPDIR/p POHMELFS_CACHE_DIR=$BATS_TEST_TMPDIR/state
	export POHMELFS_HOST_ID=a
	CTL=$B/tests/progs/cache_ctl
	[ -x "$CTL" ]	# built by make check (all): missing is a failure, not a skip
	P=$B/pohmelfs
	T=$BATS_TEST_TMPDIR
}

teardown() {
	[ -f "$T/state/pohmelfsd.pid" ] && kill "$(cat "$T/state/pohmelfsd.pid")" 2>/dev/null
	cluster_stop
}

# tty CMD: run CMD (a shell command line) with a terminal as its stdout and
# stderr; $output is what the terminal got.
tty() { run script -qec "$1" /dev/null; }

# files N: N files in the cache, then changed without the shim (dirty).
files() {
	local i
	for i in $(seq "$1"); do "$CTL" write "f$i" "v1" >/dev/null; done
	for i in $(seq "$1"); do printf 'second version of file %s\n' "$i" >"$T/p/f$i"; done
}

@test "sync: count, bytes, rate and ETA on one updating line of a terminal" {
	files 12
	# Each push takes a while (every node delays its answers), so the
	# line is redrawn while the sync runs (at most every 100 ms).
	cluster_fault all "delay 40"
	tty "$P sync"
	cluster_clear_faults all
	echo "$output" | cat -v
	[ "$status" -eq 0 ]
	[[ $output == *"sync: pushed 12 files"* ]]
	# The progress line: carriage returns, the count of the known total,
	# bytes of the known total, a rate and an ETA; erased at the end.
	[[ $output == *$'\r'"sync: 0/12 files, 0 B of 3"*" B"* ]]
	[[ $output == *"sync: "[1-9]*"/12 files, "*" B of "*" files/s, "*"/s, ETA "*" s"* ]]
	[[ $output == *$'\r\e[K'"sync: pushed"* ]]
}

@test "sync: nothing of the line without a terminal or with --json" {
	files 3
	run "$P" sync 2>"$T/err"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	[[ $output != *$'\r'* ]]
	printf 'again\n' >"$T/p/f1"
	tty "$P --json sync"
	echo "$output" | cat -v
	[ "$status" -eq 0 ]
	[[ $output != *$'\r'"sync:"* ]]
	[[ $output != *"files/s"* ]]
	[[ $output == *'"pushed":1'* ]]
}

@test "cache clean, fsck and repair show their progress on a terminal, and nothing without one" {
	files 5
	"$P" sync >/dev/null
	tty "$P cache clean"
	echo "$output" | cat -v
	[ "$status" -eq 0 ]
	[[ $output == *$'\r'"cache clean: "*"/5 files"* ]]
	[[ $output == *"cache clean: 5 files replaced by stubs"* ]]
	tty "$P fsck"
	echo "$output" | cat -v
	[ "$status" -eq 0 ]
	[[ $output == *$'\r'"fsck: reading every copy: "[1-9]*" objects, "*" B"* ]]
	[[ $output == *"clean (exit 0)"* ]]
	tty "$P repair"
	echo "$output" | cat -v
	[ "$status" -eq 0 ]
	[[ $output == *$'\r'"repair: reading every copy: "[1-9]*" objects"* ]]
	[[ $output == *$'\r'"repair: reading again: "[1-9]*" objects"* ]]
	# Not a terminal, or --json: not a byte of it.
	run "$P" fsck 2>"$T/err"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	run "$P" repair 2>"$T/err"
	[ ! -s "$T/err" ]
	run "$P" cache clean 2>"$T/err"
	[ ! -s "$T/err" ]
	tty "$P fsck --json"
	[ "$status" -eq 0 ]
	[[ $output != *"reading every copy"* ]]
	tty "$P repair --json"
	[[ $output != *"reading"* ]]
}
