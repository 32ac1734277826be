#!/usr/bin/env bats
# cache_listfail.bats — a directory whose listing fails opens (savewd,
# fchdir, fts go on: GNU `mkdir -p d2/s3 common/sub` once made d2/common,
# doc/notes-s15-conc.md), but reading its entries fails with EIO: ls, tar,
# find exit non-zero rather than take the local entries for all of them
# (DESIGN.md §0; preload/dir.c, core/cache/cache.c list_for_open).

setup() {
	POHM_TEST_BUILD=1	# POHMELFS_TEST_LIST_FAIL: build/test/ reads it
	load lib/common
	load lib/cluster
	load ../long/rel_lib
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	rel_env
	shim a mkdir -p "$T/a/w/src"
}

teardown() {
	rel_stop_daemons
	cluster_stop
}

# The records NODE stored since $T/before.NODE was taken.
new_records() {
	node_records "$1" | grep -vxFf "$T/before.$1" | awk '{ print $1 }'
}

@test "every group fails the reads of a cold directory's records: ls, tar and find fail with EIO" {
	for n in 1-1 2-1; do node_records "$n" >"$T/before.$n"; done
	sleep 0.05
	shim a sh -c 'echo one >"$1/f1" && echo two >"$1/f2"' sh "$T/a/w/src"
	# Host b knows w (and src's name in it), never listed src.
	shim b ls "$T/b/w" >"$T/ls.w"
	grep -qx src "$T/ls.w"
	# Every record written for src's entries (its bucket, the files)
	# replies corrupted: the reads of them fail, w's own still answer.
	local n id dirs
	for n in 1-1 2-1; do
		dirs=()
		for id in $(new_records $n); do dirs+=("corrupt ${id:0:16}"); done
		[ ${#dirs[@]} -gt 0 ]
		cluster_fault $n "${dirs[@]}"
	done
	run shim b ls "$T/b/w/src"
	echo "ls: $status $output"
	[ "$status" -ne 0 ]
	[[ $output == *"Input/output error"* ]]
	# The same through open(".") + fdopendir (tar's savedir) and fts (find).
	run shim b tar cf /dev/null -C "$T/b/w" src
	echo "tar: $status $output"
	[ "$status" -ne 0 ]
	[[ $output == *"Input/output error"* ]]
	run shim b sh -c 'cd "$1" && find . -type f' sh "$T/b/w/src"
	echo "find: $status $output"
	[ "$status" -ne 0 ]
	[[ $output == *"Input/output error"* ]]
	# The replies clean again: the same host lists both files.
	cluster_clear_faults all
	run shim b ls "$T/b/w/src"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'f1\nf2')" ]
}

@test "the working directory's listing fails: mkdir -p builds the right tree, ls fails with EIO" {
	shim a mkdir "$T/a/w/old"
	# Host b's fresh cache; each open of w for reading fails to list it.
	run shim b env POHMELFS_TEST_LIST_FAIL=w sh -c 'cd "$1" && mkdir -p d2/s3 common/sub' sh "$T/b/w"
	echo "mkdir: $status $output"
	[ "$status" -eq 0 ]
	[ -d "$T/b/w/d2/s3" ] && [ -d "$T/b/w/common/sub" ]
	[ ! -e "$T/b/w/d2/common" ]
	run shim b env POHMELFS_TEST_LIST_FAIL=w sh -c 'cd "$1" && ls' sh "$T/b/w"
	echo "ls: $status $output"
	[ "$status" -ne 0 ]
	[[ $output == *"Input/output error"* ]]
	[[ $output != *d2* ]]
	# Listed whole (old, from a) once the listing works; on host a too.
	run shim b sh -c 'cd "$1" && ls' sh "$T/b/w"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'common\nd2\nold\nsrc')" ]
	run shim a ls "$T/a/w"
	[ "$output" = "$(printf 'common\nd2\nold\nsrc')" ]
}

@test "a program's own getdents64 (glibc's, syscall(2)'s) fails with EIO as readdir does" {
	shim a mkdir "$T/a/w/old"
	local how
	for how in libc raw; do
		run shim b env POHMELFS_TEST_LIST_FAIL=w "$B/tests/helpers/dents" "$T/b/w" $how
		echo "$how: $status $output"
		[ "$status" -eq 1 ]
		[[ $output == *"Input/output error"* ]]
	done
	# Listed whole once the listing works.
	run shim b "$B/tests/helpers/dents" "$T/b/w" raw
	[ "$status" -eq 0 ]
	[ "$(sort <<<"$output")" = "$(printf 'old\nsrc')" ]
}
