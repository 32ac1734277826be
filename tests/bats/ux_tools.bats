#!/usr/bin/env bats
# ux_tools.bats — the cache commands of `pohmelfs` (issue 9): sync, status's
# cache part (text and --json), stats, cache clean, and fsck/repair saying
# "not yet".  Two caches on one machine act as two hosts (different
# host_id, prefix and cache_dir) against one local cluster; files are made
# through the cache's C API (tests/progs/cache_ctl) and changed "without
# the shim" by plain shell redirections.

setup() {
	load lib/common
	load lib/cluster
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=ux POHMELFS_ATTR_TIMEOUT=0
	export POHMELFS_READ_WAIT_TIMEOUT=3 POHMELFS_WRITE_WAIT_TIMEOUT=3
	unset POHMELFS_PREFIX POHMELFS_CACHE_DIR POHMELFS_HOST_ID
	CTL=$B/tests/progs/cache_ctl
	if [ ! -x "$CTL" ]; then
		# `make all` does not build tests/progs yet (PROG_BIN is defined after
		# the all: line): build the one program these tests drive, once.
		CTL=${BATS_FILE_TMPDIR:-$BATS_TMPDIR}/cache_ctl
		case ${SAN:-} in
		address) san="-fsanitize=address -fno-omit-frame-pointer" ;;
		undefined) san="-fsanitize=undefined" ;;
		thread) san="-fsanitize=thread" ;;
		*) san= ;;
		esac
		# shellcheck disable=SC2086
		[ -x "$CTL" ] || ${CC:-cc} -D_GNU_SOURCE $(for d in "$TOP"/core/*/; do printf -- "-I%s " "$d"; done) -std=gnu11 -O2 -g $san \
			"$TOP/tests/progs/cache_ctl.c" "$B/libpohmcore.a" -pthread -o "$CTL"
	fi
	P=$B/pohmelfs
	T=$BATS_TEST_TMPDIR
}

teardown() {
	for h in a b c; do
		[ -f "$T/$h-state/pohmelfsd.pid" ] && kill "$(cat "$T/$h-state/pohmelfsd.pid")" 2>/dev/null
	done
	cluster_stop
}

# on HOST CMD...: run CMD as host HOST.
on() {
	local h=$1
	shift
	POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state POHMELFS_HOST_ID=$h "$@"
}

# json EXPR: evaluate a python expression over the JSON in $output (as d).
json() {
	python3 -c "import json, sys; d = json.loads(sys.argv[1]); print($1)" "$output"
}

@test "pohmelfs sync pushes a file changed without the shim; a second cache reads it" {
	on a "$CTL" mkdir dir
	on a "$CTL" write dir/f "first version"
	printf 'written by a program without the shim\n' >"$T/a/dir/f"
	run on a "$P" sync
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "sync: pushed 1 file (38 B in 1 chunk) in "*" s" ]]
	run on b "$CTL" get dir/f
	[ "$status" -eq 0 ]
	[ "$(cat "$T/b/dir/f")" = "written by a program without the shim" ]
	# Nothing left to push.
	run on a "$P" sync
	[ "$status" -eq 0 ]
	[[ $output == "sync: pushed 0 files (0 B in 0 chunks) in "* ]]
}

@test "pohmelfs sync draws a progress line on a terminal and prints a plain summary otherwise" {
	command -v script >/dev/null || skip "script(1) is not installed"
	for i in 1 2 3; do on a "$CTL" write "f$i" "v1"; done
	for i in 1 2 3; do echo "v2 of $i" >"$T/a/f$i"; done
	run on a script -qec "$P sync" /dev/null
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"sync: "*"/3 files"* ]]
	[[ $output == *"sync: pushed 3 files"* ]]
	echo "v3" >"$T/a/f1"
	run on a "$P" sync
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output != *"["* ]]
	run on a "$P" --json sync
	[ "$status" -eq 0 ]
	[ "$(json 'd["pushed"], d["failed"], d["conflicts"]')" = "0 0 0" ]
}

@test "pohmelfs status --json parses and shows the dirty files" {
	on a "$CTL" write one "1"
	on a "$CTL" write two "2"
	on a "$CTL" write three "3"
	printf 'changed' >"$T/a/one"
	printf 'changed too' >"$T/a/two"
	run on a "$P" --json status
	[ "$status" -eq 0 ]
	echo "$output" | python3 -m json.tool >/dev/null
	[ "$(json 'd["cache"]["dirty"], sorted(d["cache"]["dirty_files"]), d["cache"]["dirty_bytes"]')" = "2 ['one', 'two'] 18" ]
	[ "$(json 'd["cache"]["cached_files"], d["cache"]["exists"], d["cache"]["fsid"], d["healthy"]')" = "3 True ux True" ]
	[ "$(json 'd["cache"]["pohmelfsd"]["running"], d["cache"]["conflict_copies"]')" = "False []" ]
	# The text form says the same.
	run on a "$P" status
	[[ $output == *"dirty       2 files, 18 B, not pushed yet"* ]]
	on a "$P" sync
	run on a "$P" status --json
	[ "$(json 'd["cache"]["dirty"], d["cache"]["dirty_files"]')" = "0 []" ]
	# File names are bytes, JSON is UTF-8: quotes, control characters and
	# invalid sequences still give valid JSON.
	odd=$'odd "name"\t\xe9\xff'
	on a "$CTL" write "$odd" "1"
	printf 'changed' >"$T/a/$odd"
	run on a "$P" --json status
	echo "$output" | python3 -m json.tool >/dev/null
	[ "$(json 'd["cache"]["dirty_files"] == ["odd \"name\"\t\ufffd\ufffd"]')" = "True" ]
}

@test "pohmelfs status without a prefix shows only the cluster; with a fresh prefix, no cache yet" {
	run "$P" --json status
	[ "$status" -eq 0 ]
	[ "$(json 'd["cache"], len(d["nodes"])')" = "None 3" ]
	run on z "$P" --json status
	[ "$status" -eq 0 ]
	[ "$(json 'd["cache"]["exists"]')" = "False" ]
	[ ! -e "$T/z" ]	# status creates nothing
	[ ! -e "$T/z-state" ]
	run on z "$P" status
	[[ $output == *"cache (prefix $T/z):"*"none: cache_dir=$T/z-state: no cache yet"* ]]
}

@test "pohmelfs status lists conflict records and the conflict copies in the storage" {
	on a "$CTL" write doc "base"
	on b "$CTL" get doc
	on a "$CTL" write doc "from a"
	printf 'from b!' >"$T/b/doc"		# b's program changed it too
	run on b "$P" sync
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"1 kept as conflict copy"* ]]
	run on b "$P" --json status
	[ "$(json 'd["cache"]["conflicts"], d["cache"]["conflict_files"]')" = "1 ['doc']" ]
	[ "$(json 'len(d["cache"]["conflict_copies"]), d["cache"]["conflict_copies"][0].startswith("/.pohmelfs-conflicts/b/doc.")')" = "1 True" ]
	# Another host sees the copy too (it lives in the storage).
	run on a "$P" status
	[[ $output == *"conflicts   0 files here had a conflict; 1 copy in the storage:"* ]]
	[[ $output == *"/.pohmelfs-conflicts/b/doc."* ]]
}

@test "pohmelfs status tells whether pohmelfsd runs" {
	on a "$CTL" write f "x"
	run on a "$P" status
	[[ $output == *"pohmelfsd   not running"* ]]
	on a env POHMELFS_SYNC_TIMEOUT=0.2 "$B/pohmelfsd" --idle 30
	for i in $(seq 50); do [ -f "$T/a-state/pohmelfsd.pid" ] && break; sleep 0.1; done
	pid=$(cat "$T/a-state/pohmelfsd.pid")
	run on a "$P" status
	[[ $output == *"pohmelfsd   running (pid $pid)"* ]]
	run on a "$P" --json stats
	[ "$(json 'd["pohmelfsd"]["running"], d["pohmelfsd"]["pid"]')" = "True $pid" ]
	kill "$pid"
	for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	# A stale pid file (its process gone) is not a running pohmelfsd.
	echo "$pid" >"$T/a-state/pohmelfsd.pid"
	run on a "$P" --json status
	[ "$(json 'd["cache"]["pohmelfsd"]["running"]')" = "False" ]
	# Nor is a live process of another program.
	echo "$$" >"$T/a-state/pohmelfsd.pid"
	run on a "$P" --json status
	[ "$(json 'd["cache"]["pohmelfsd"]["running"]')" = "False" ]
	rm -f "$T/a-state/pohmelfsd.pid"
}

@test "pohmelfs sync and pohmelfsd push side by side without losing or doubling anything" {
	for i in $(seq 20); do on a "$CTL" write "f$i" "v1"; done
	on a env POHMELFS_SYNC_TIMEOUT=0.05 "$B/pohmelfsd" --idle 30
	for i in $(seq 50); do [ -f "$T/a-state/pohmelfsd.pid" ] && break; sleep 0.1; done
	for round in 1 2 3; do
		for i in $(seq 20); do echo "round $round of $i" >"$T/a/f$i"; done
		run on a "$P" sync
		echo "$output"
		[ "$status" -eq 0 ]
		[[ $output != *FAILED* && $output != *conflict* ]]
	done
	for i in $(seq 20); do
		on b "$CTL" get "f$i" >/dev/null
		[ "$(cat "$T/b/f$i")" = "round 3 of $i" ]
	done
	run on a "$P" --json status
	[ "$(json 'd["cache"]["dirty"], d["cache"]["conflicts"], d["cache"]["conflict_copies"]')" = "0 0 []" ]
}

@test "pohmelfs cache clean turns a clean fetched file into a stub and leaves a dirty one alone" {
	on a "$CTL" write clean "small"
	head -c 200000 /dev/urandom | base64 >"$T/a/clean"	# 270 kB, pushed by sync
	on a "$P" sync
	on a "$CTL" write dirty "original"
	on b "$CTL" get clean >/dev/null
	on b "$CTL" get dirty >/dev/null
	cmp "$T/a/clean" "$T/b/clean"
	size=$(stat -c %s "$T/b/clean")
	printf 'changed here, not pushed' >"$T/b/dirty"
	run on b "$P" cache clean
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "cache clean: 1 file replaced by stubs, "*" freed; kept 1 dirty, 0 open, 0 with several names" ]]
	# The clean one is a stub now: empty, mode 000, its size still in the overlay.
	[ "$(stat -c '%s %a' "$T/b/clean")" = "0 0" ]
	[ "$(on b "$CTL" stat clean | cut -d' ' -f4)" = "$size" ]
	# The dirty one is untouched and still dirty.
	[ "$(cat "$T/b/dirty")" = "changed here, not pushed" ]
	run on b "$P" --json stats
	[ "$(json 'd["stubs"], d["dirty"], d["clean"]')" = "1 1 0" ]
	# Opening through the cache fetches the data again.
	on b "$CTL" get clean >/dev/null
	cmp "$T/a/clean" "$T/b/clean"
	# And the dirty one still reaches the storage (read on a third host).
	on b "$P" sync
	on c "$CTL" get dirty >/dev/null
	[ "$(cat "$T/c/dirty")" = "changed here, not pushed" ]
	# Nothing left to drop but what is open: JSON report.
	run on b "$P" --json cache clean
	[ "$(json 'd["stubbed"], d["kept_dirty"], d["failed"], d["freed_bytes"] > 200000')" = "2 0 0 True" ]
}

@test "pohmelfs cache clean keeps files that a process has open" {
	on a "$CTL" write busy "in use"
	on a "$CTL" write idle "not in use"
	# Another process holds it open (as a reader, mapped or not, it is the same).
	sleep 60 <"$T/a/busy" >/dev/null 2>&1 3>&- &
	holder=$!
	# The shell opens the file after the fork: wait until it is open.
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(readlink "/proc/$holder/fd/0" 2>/dev/null)" = "$T/a/busy" ] && break
		sleep 0.05
	done
	[ "$(readlink "/proc/$holder/fd/0")" = "$T/a/busy" ]
	run on a "$P" --json cache clean
	kill "$holder"
	echo "$output"
	[ "$(json 'd["stubbed"], d["kept_open"]')" = "1 1" ]
	[ "$(cat "$T/a/busy")" = "in use" ]
	[ "$(stat -c '%s %a' "$T/a/idle")" = "0 0" ]
	# The stub is filled again through the cache.
	on a "$CTL" get idle >/dev/null
	[ "$(cat "$T/a/idle")" = "not in use" ]
}

@test "pohmelfs stats reports the journal and cache_dir, in text and JSON" {
	on a "$CTL" mkdir d
	on a "$CTL" write d/x "12345"
	on a "$CTL" symlink x d/l
	on b "$CTL" ls d
	run on b "$P" stats
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"prefix              $T/b"* ]]
	[[ $output == *"stubs               1 (5 B in the storage only)"* ]]
	[[ $output == *"pohmelfsd           not running"* ]]
	run on b "$P" stats --json
	[ "$(json 'd["stubs"], d["stub_bytes"], d["directories"], d["other"], d["cached_files"]')" = "1 5 2 1 0" ]
	[ "$(json 'd["cache_dir_bytes"] > 0, d["fs_size_bytes"] > 0, d["exists"]')" = "True True True" ]
	# stats works without the cluster.
	cluster_stop
	run on b "$P" --json stats
	[ "$status" -eq 0 ]
	[ "$(json 'd["stubs"]')" = 1 ]
}

@test "the cache commands need a prefix; fsck and repair on an fsid without a root stop with exit 2" {
	for cmd in sync stats "cache clean"; do
		# shellcheck disable=SC2086
		run "$P" $cmd
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ $output == "pohmelfs: $cmd: no prefix configured: set POHMELFS_PREFIX="* ]]
	done
	for cmd in fsck repair; do
		run "$P" $cmd
		[ "$status" -eq 2 ]
		[[ $output == *"has no root inode"* ]]
	done
	run "$P" cache purge
	[ "$status" -eq 2 ]
	run "$P" sync extra
	[ "$status" -eq 2 ]
	[[ $output == *"sync takes no arguments"* ]]
	run "$P" --help
	[ "$status" -eq 0 ]
	[[ $output == *"cache clean"* && $output == *"fsck, repair"* ]]
}
