#!/usr/bin/env bats
# ns_http_compat.bats — with http_compat, a file written through the cache
# (tests/progs/cache_ctl, the calls the shim makes) is also stored whole
# under "/" + its path in the fsid namespace; the raw tool reads it back by
# that key, and the key follows rename (of the file and of its directory)
# and unlink; fsck finds stale and missing copies and repair rewrites them;
# completing a rename whose renamer died moves the copy.

setup() {
	load lib/common
	load lib/cluster
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	export POHMELFS_FSID=httpc POHMELFS_ATTR_TIMEOUT=0 POHMELFS_HTTP_COMPAT=1
	export POHMELFS_PREFIX=$BATS_TEST_TMPDIR/p POHMELFS_CACHE_DIR=$BATS_TEST_TMPDIR/s
	CTL=$B/tests/progs/cache_ctl
	RAW=$B/pohmelfs
}

teardown() {
	[ -f "$BATS_TEST_TMPDIR/s/pohmelfsd.pid" ] &&
		kill "$(cat "$BATS_TEST_TMPDIR/s/pohmelfsd.pid")" 2>/dev/null
	[ -n "${CLUSTER_DIR:-}" ] && cluster_stop
	true
}

# get_is KEY TEXT: the raw tool reads exactly TEXT under KEY.
get_is() {
	run timeout 20 "$RAW" get "$1"
	[ "$status" -eq 0 ] || { echo "get $1: status $status: $output"; return 1; }
	[ "$output" = "$2" ] || { echo "get $1: '$output', expected '$2'"; return 1; }
}

# absent KEY: the raw tool finds nothing under KEY.
absent() {
	run timeout 20 "$RAW" get "$1"
	[ "$status" -ne 0 ] || { echo "get $1: still there: '$output'"; return 1; }
}

@test "a file's content is readable by its path key, which follows rename and unlink" {
	timeout 20 "$CTL" mkdir dir
	timeout 20 "$CTL" write dir/f "hello over http"
	get_is /dir/f "hello over http"
	timeout 20 "$CTL" write dir/f "version two"
	get_is /dir/f "version two"
	timeout 20 "$CTL" mv dir/f dir/g
	absent /dir/f
	get_is /dir/g "version two"
	timeout 20 "$CTL" mv dir top
	absent /dir/g
	get_is /top/g "version two"
	timeout 20 "$CTL" unlink top/g
	absent /top/g
	# The namespace itself is untouched by the copies.
	run timeout 20 "$CTL" get top/g
	[ "$status" -ne 0 ] || [ ! -e "$POHMELFS_PREFIX/top/g" ]
}

@test "a file replaced by a rename leaves the new content under the target's key" {
	timeout 20 "$CTL" write a "from a"
	timeout 20 "$CTL" write b "from b"
	get_is /b "from b"
	timeout 20 "$CTL" mv a b
	absent /a
	get_is /b "from a"
}

@test "without http_compat no path key is written" {
	POHMELFS_HTTP_COMPAT=0 timeout 20 "$CTL" write plain "no copy"
	absent /plain
	run timeout 20 "$CTL" get plain
	[ "$status" -eq 0 ]
	[ "$(cat "$POHMELFS_PREFIX/plain")" = "no copy" ]
}

@test "under the shim: cp, mv of the directory and rm move and remove the path keys" {
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	echo "written by cp under the shim" >"$BATS_TEST_TMPDIR/src"
	shim() { LD_PRELOAD=$PRELOAD POHMELFS_SYNC_ON_CLOSE=1 timeout 20 "$@"; }
	shim mkdir -p "$POHMELFS_PREFIX/d/e"
	shim cp "$BATS_TEST_TMPDIR/src" "$POHMELFS_PREFIX/d/e/f.txt"
	get_is /d/e/f.txt "written by cp under the shim"
	shim mv "$POHMELFS_PREFIX/d" "$POHMELFS_PREFIX/moved"
	absent /d/e/f.txt
	get_is /moved/e/f.txt "written by cp under the shim"
	shim rm "$POHMELFS_PREFIX/moved/e/f.txt"
	absent /moved/e/f.txt
}

@test "fsck finds a stale and a missing path copy, repair rewrites them from the committed files" {
	timeout 20 "$CTL" mkdir dir
	timeout 20 "$CTL" write dir/f "the committed content"
	timeout 20 "$CTL" write g "another file"
	get_is /dir/f "the committed content"
	get_is /g "another file"
	run timeout 60 "$RAW" fsck
	echo "$output"
	[ "$status" -eq 0 ]
	# What a writer that died between its commit and its copy leaves: an
	# older copy; and a copy that is gone.  Neither is fixed by reading.
	printf 'stale bytes' | timeout 20 "$RAW" put /dir/f
	timeout 20 "$RAW" del /g
	get_is /dir/f "stale bytes"
	absent /g
	# Changed a moment ago, a file's copy may still be on its way: fsck
	# judges copies of files older than 5 s.
	sleep 5.5
	run timeout 60 "$RAW" fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"http_compat copy of inode"*"group 1: stale, group 2: stale"* ]]
	[[ $output == *"http_compat copy of inode"*"group 1: missing, group 2: missing"* ]]
	get_is /dir/f "stale bytes"
	run timeout 60 "$RAW" repair
	echo "$output"
	[ "$status" -eq 0 ]
	get_is /dir/f "the committed content"
	get_is /g "another file"
	run timeout 60 "$RAW" fsck
	[ "$status" -eq 0 ]
}

# Decision 0067: its commit never landed, so a stale intent is rolled back.
@test "a rename killed after its intent: repair rolls it back, the path copy stays" {
	local t0
	timeout 20 "$CTL" write victim "kept by the roll-back"
	timeout 20 "$CTL" mkdir m2
	get_is /victim "kept by the roll-back"
	# The renamer dies between its intent and its commit: a hook in the
	# rename kills it there (a kill raced against the clock could land
	# after the commit).
	run env POHMELFS_TEST_KILL_AT_RENAME_INTENT=1 timeout 20 "$CTL" mv victim m2/moved
	[ "$status" -eq 137 ]
	t0=$(date +%s%N)
	# The intent is in the root directory's bucket (the target name shows);
	# the path copy has not moved.
	timeout 10 "$RAW" get b:1:0:0 | grep -aq moved
	get_is /victim "kept by the roll-back"
	absent /m2/moved
	# Stale after the clients' intent timeout (10 s, counted from the
	# kill): repair rolls it back; the copy stays where the name is.
	sleep $(( 11 - ($(date +%s%N) - t0) / 1000000000 ))
	run timeout 60 "$RAW" repair
	echo "$output"
	[ "$status" -eq 0 ]
	get_is /victim "kept by the roll-back"
	absent /m2/moved
	run timeout 60 "$RAW" fsck
	[ "$status" -eq 0 ]
}
