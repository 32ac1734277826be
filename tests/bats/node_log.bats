#!/usr/bin/env bats
# node_log.bats — pohmelfs-node's log-structured store (issue 23): records
# appended to blob files, the index rebuilt by a scan at start, a torn
# tail cut off, tombstones, compaction at start.

setup() {
	load lib/common
	load lib/cluster
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
	cluster_start log --groups 1
	D=$(cluster_dir 1-1)
}

teardown() {
	cluster_stop
}

c() { node_client 1-1 "$@"; }

# put_value KEY VALUE
put_value() {
	printf '%s' "$2" >"$TMP/pv"
	c put "$1" "$TMP/pv" >/dev/null
}

# blob_bytes: the total size of the node's blob files.
blob_bytes() { cat "$D"/blob/data-0.* | wc -c; }

@test "writes append to one blob: no file per key" {
	for i in $(seq 1 50); do put_value "k$i" "value $i"; done
	[ "$(ls "$D/blob")" = data-0.0 ]
	[ -z "$(find "$D/data" -type f)" ]
	[ "$(node_records 1-1 | wc -l)" -eq 50 ]
}

@test "the index is rebuilt at start: overwrites, deletes and appends read back after a SIGKILL" {
	for i in $(seq 1 40); do put_value "k$i" "first $i"; done
	for i in $(seq 1 40 | grep '[05]$'); do put_value "k$i" "second $i"; done
	for i in $(seq 1 40 | grep '[3]$'); do c del "k$i" >/dev/null; done
	printf '+tail' >"$TMP/t"
	c --append put k1 "$TMP/t" >/dev/null
	cluster_kill 1-1 KILL
	cluster_start_node 1-1
	grep -q "store: 36 records in 1 blob" "$D/node.log"
	for i in $(seq 1 40); do
		run c get "k$i"
		case $i in
		*3) [ "$status" -eq 2 ] ;;
		*0 | *5) [ "$status" -eq 0 ]; [[ $output == *"second $i" ]] ;;
		1) [ "$status" -eq 0 ]; [[ $output == *"first 1+tail" ]] ;;
		*) [ "$status" -eq 0 ]; [[ $output == *"first $i" ]] ;;
		esac
	done
	run c iterate
	[ "$status" -eq 0 ]
	[ "$(grep -c '^key ' <<<"$output")" -eq 36 ]
}

@test "a torn tail (a write cut short by a crash) is cut off at start, never fatal" {
	put_value a alpha
	put_value b beta
	cluster_kill 1-1 KILL
	blob=$D/blob/data-0.0
	size=$(stat -c %s "$blob")
	# What a crash in the middle of an append leaves: the start of a record
	# (here a copy of the first one's header) and part of its data.
	{ head -c 150 "$blob"; head -c 3000 /dev/urandom; } >>"$blob"
	cluster_start_node 1-1
	[ "$(stat -c %s "$blob")" -eq "$size" ]
	grep -q "torn tail of 3150 bytes at $size" "$D/node.log"
	run c get a
	[[ $output == *alpha ]]
	run c get b
	[[ $output == *beta ]]
	# New writes land after the good records and survive another restart.
	put_value c gamma
	cluster_kill 1-1 KILL
	cluster_start_node 1-1
	run c get c
	[ "$status" -eq 0 ]
	[[ $output == *gamma ]]
	run c get b
	[[ $output == *beta ]]
}

@test "PREPARE hides the old object across a restart; COMMIT makes the new one visible" {
	put_value k old
	printf 'abcd' >"$TMP/p"
	run c --prepare --num 8 put k "$TMP/p"
	[ "$status" -eq 0 ]
	cluster_kill 1-1 KILL
	cluster_start_node 1-1
	run c get k
	[ "$status" -eq 2 ]
	run c --plain --commit --offset 4 --num 8 put k "$TMP/p"
	[ "$status" -eq 0 ]
	run c get k
	[[ $output == *abcdabcd ]]
	cluster_restart 1-1
	run c get k
	[[ $output == *abcdabcd ]]
}

@test "compaction at start: garbage over half the blobs is dropped, live records and deletes kept" {
	head -c 300000 /dev/urandom >"$TMP/big"
	for i in 1 2 3 4 5 6 7 8; do c put big "$TMP/big" >/dev/null; done
	put_value small kept
	put_value gone doomed
	c del gone >/dev/null
	before=$(blob_bytes)
	[ "$before" -gt 2400000 ]
	cluster_restart 1-1
	grep -q "store: compacted to" "$D/node.log"
	after=$(blob_bytes)
	echo "blobs: $before bytes before, $after after" >&3
	[ "$after" -lt 400000 ]
	run c --out "$TMP/back" get big
	[ "$status" -eq 0 ]
	cmp "$TMP/big" "$TMP/back"
	run c get small
	[[ $output == *kept ]]
	run c get gone
	[ "$status" -eq 2 ]
	# The compacted blob is a normal one: writes go on, a restart reads it.
	put_value after compaction
	cluster_kill 1-1 KILL
	cluster_start_node 1-1
	run c get after
	[[ $output == *compaction ]]
	run c get gone
	[ "$status" -eq 2 ]
	[ "$(node_records 1-1 | wc -l)" -eq 3 ]
}

@test "a blob fills up (blob_size): the next one is started and both are read at start" {
	echo "blob_size = 1M" >>"$D/node.conf"
	cluster_restart 1-1
	head -c 300000 /dev/urandom >"$TMP/chunk"
	for i in $(seq 1 9); do c put "o$i" "$TMP/chunk" >/dev/null; done
	ls "$D/blob" >&3
	[ -e "$D/blob/data-0.2" ]
	[ "$(stat -c %s "$D/blob/data-0.0")" -le $((1 << 20)) ]
	cluster_kill 1-1 KILL
	cluster_start_node 1-1
	grep -q "store: 9 records in 3 blob" "$D/node.log"
	for i in 1 5 9; do
		run c --out "$TMP/back" get "o$i"
		[ "$status" -eq 0 ]
		cmp "$TMP/chunk" "$TMP/back"
	done
}
