#!/usr/bin/env bats
# rel_corrupt.bats — corruption through the shim: data corrupted in one
# group's store (the node answers -84) or in its replies (the checksum does
# not match) is caught and the file a program reads comes whole from another
# group; with every group corrupt the program's read fails with EIO and
# never gets wrong bytes.  (raw_faults.bats covers the raw client; this is
# the same promise for a program under the shim reading through the cache.)

setup() {
	load lib/common
	load lib/cluster
	load ../long/rel_lib
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	rel_env
	head -c 300000 /dev/urandom >"$T/data"
	shim a mkdir -p "$T/a/w"
	touch "$T/before"
	for n in 1-1 2-1 3-1; do node_records "$n" >"$T/before.$n"; done
	sleep 0.05
	shim a cp "$T/data" "$T/a/w/f"
}

teardown() {
	rel_stop_daemons
	cluster_stop
}

# objects NODE [MINSIZE]: ids of the records NODE stored for f (written after
# $T/before: not in that listing), optionally only those of more than
# MINSIZE bytes (data chunks).
objects() {
	node_records "$1" | grep -vxFf "$T/before.$1" |
		awk -v min="${2:-0}" '{ split($2, a, "="); if (a[2] + 0 > min + 0) print $1 }'
}

# corrupt_store NODE [MINSIZE]: flip a byte of each of those records.
corrupt_store() {
	local id n=0
	for id in $(objects "$@"); do
		cluster_corrupt_disk "$1" "$id" >/dev/null
		n=$((n + 1))
	done
	echo "# $1: $n records corrupted on disk" >&3
	[ "$n" -gt 0 ]
}

# read_as HOST: cat f through the shim as a fresh host into $T/HOST.out.
read_as() {
	shim "$1" cat "$T/$1/w/f" >"$T/$1.out" 2>"$T/$1.err"
}

@test "one group's store corrupt (inode, bucket and chunks): the file is read whole from the others" {
	corrupt_store 1-1
	# Groups 2 and 3 answer late, so the corrupt copies are met first.
	cluster_fault 2-1 "delay 150"
	cluster_fault 3-1 "delay 150"
	read_as b
	cmp "$T/data" "$T/b.out"
	cluster_clear_faults all
	# Every group answering: still the right bytes, for another fresh host.
	read_as c
	cmp "$T/data" "$T/c.out"
}

@test "one group's replies corrupted in transit: caught by the checksum, served from another group" {
	cluster_fault 2-1 "corrupt all"
	cluster_fault 1-1 "delay 150"
	cluster_fault 3-1 "delay 150"
	read_as b
	cmp "$T/data" "$T/b.out"
}

@test "every group's copy of the data corrupt on disk: the read fails with EIO, never wrong bytes" {
	for n in 1-1 2-1 3-1; do corrupt_store $n 4096; done
	run read_as b
	cat "$T/b.err"
	[ "$status" -ne 0 ]
	grep -q "Input/output error" "$T/b.err"
	[ ! -s "$T/b.out" ]
	# The writer's own cache still holds the bytes it wrote.
	shim a cmp "$T/data" "$T/a/w/f"
}

@test "every group's replies corrupted in transit: the read fails with EIO, never wrong bytes" {
	# Corrupt only the data chunks' replies: the namespace still reads.
	local n id dirs
	for n in 1-1 2-1 3-1; do
		dirs=()
		for id in $(objects $n 4096); do dirs+=("corrupt ${id:0:16}"); done
		[ ${#dirs[@]} -gt 0 ]
		cluster_fault $n "${dirs[@]}"
	done
	run read_as b
	cat "$T/b.err"
	[ "$status" -ne 0 ]
	grep -q "Input/output error" "$T/b.err"
	[ ! -s "$T/b.out" ]
	# With the replies clean again the same host reads the right bytes.
	cluster_clear_faults all
	read_as b
	cmp "$T/data" "$T/b.out"
}
