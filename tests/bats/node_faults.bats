#!/usr/bin/env bats
# node_faults.bats — pohmelfs-node fault injection (the DIR/faults file),
# on-disk corruption (-84), torn records and --auth-cookie (issue 5).

setup() {
	load lib/cluster
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
}

teardown() {
	cluster_stop
}

c() { node_client 1-1 "$@"; }

put_value() {
	printf '%s' "$2" >"$TMP/v"
	c put "$1" "$TMP/v" >/dev/null
}

@test "drop: the node closes connections instead of answering; clearing it heals" {
	cluster_start drop --groups 1
	put_value k hello
	cluster_fault 1-1 drop
	run c --no-handshake lookup k
	[ "$status" -eq 100 ]
	run c handshake
	[ "$status" -eq 100 ]
	cluster_clear_faults 1-1
	run c lookup k
	[ "$status" -eq 0 ]
}

@test "delay MS: replies come no sooner than MS later" {
	cluster_start delay --groups 1
	put_value k hello
	cluster_fault 1-1 "delay 700"
	start=$(date +%s%N)
	run c lookup k
	end=$(date +%s%N)
	[ "$status" -eq 0 ]
	# Handshake and lookup are delayed: at least 1.4 s.
	[ $(((end - start) / 1000000)) -ge 1400 ]
}

@test "hang: requests are read but never answered (the client times out)" {
	cluster_start hang --groups 1
	put_value k hello
	cluster_fault 1-1 hang
	run c --timeout 1 lookup k
	[ "$status" -eq 124 ]
	cluster_clear_faults 1-1
	run c --timeout 2 lookup k
	[ "$status" -eq 0 ]
}

@test "refuse-writes: WRITE and DEL fail -30, reads still work" {
	cluster_start ro --groups 1
	put_value k hello
	cluster_fault 1-1 refuse-writes
	printf 'x' >"$TMP/x"
	run c put k "$TMP/x"
	[ "$status" -eq 30 ]
	run c del k
	[ "$status" -eq 30 ]
	run c get k
	[ "$status" -eq 0 ]
	[[ $output == *hello ]]
}

@test "corrupt: READ data is flipped but io.parent still sums the true data" {
	cluster_start corrupt --groups 1
	put_value k hello
	put_value other world
	id=$(node_keyid k)
	cluster_fault 1-1 "corrupt ${id:0:10}"
	run c --csum get k
	[ "$status" -eq 84 ]
	[[ $output == *"checksum mismatch"* ]]
	run c --csum get other
	[ "$status" -eq 0 ]
	cluster_fault 1-1 "corrupt all"
	run c --csum get other
	[ "$status" -eq 84 ]
	cluster_clear_faults 1-1
	run c --csum get k
	[ "$status" -eq 0 ]
	[[ $output == *hello ]]
}

@test "corrupt-disk: the node itself answers -84 on READ and LOOKUP with CHECKSUM" {
	cluster_start cdisk --groups 1
	head -c 200000 /dev/urandom >"$TMP/big"
	c put k "$TMP/big" >/dev/null
	put_value k2 small
	id=$(node_keyid k)
	cluster_fault 1-1 "corrupt-disk $id"
	run c get k
	[ "$status" -eq 84 ]
	run c --checksum lookup k
	[ "$status" -eq 84 ]
	run c lookup k		# without CHECKSUM only the header is read
	[ "$status" -eq 0 ]
	# Applied once: re-reading the file does not flip the byte back.
	cluster_fault 1-1 "corrupt-disk $id" "# touched"
	run c get k
	[ "$status" -eq 84 ]
	# The offline tool works on a stopped node too.
	cluster_kill 1-1 TERM
	cluster_corrupt_disk 1-1 "$(node_keyid k2)"
	cluster_start_node 1-1
	run c get k2
	[ "$status" -eq 84 ]
	# NOCSUM skips the verification, as in eblob; a rewrite heals the key.
	run c --nocsum get k2
	[ "$status" -eq 0 ]
	put_value k2 fresh
	run c get k2
	[ "$status" -eq 0 ]
}

@test "torn records on disk are detected and never served" {
	cluster_start torn --groups 1
	head -c 300000 /dev/urandom >"$TMP/big"
	c put k "$TMP/big" >/dev/null
	put_value k2 hello
	cluster_kill 1-1 TERM
	d=$(cluster_dir 1-1)
	f=$(find "$d/data" -name "$(node_keyid k)")
	truncate -s 100000 "$f"				# torn tail
	f2=$(find "$d/data" -name "$(node_keyid k2)")
	printf 'XXXX' | dd of="$f2" bs=1 seek=20 conv=notrunc 2>/dev/null	# torn header
	# A half-written temp file of an interrupted write is swept at start.
	head -c 1000 /dev/urandom >"$d/data/00/$(printf '0%.0s' $(seq 128)).t"
	cluster_start_node 1-1
	run c get k
	[ "$status" -eq 84 ]
	run c lookup k
	[ "$status" -eq 84 ]
	run c get k2
	[ "$status" -eq 84 ]
	[ -z "$(find "$d/data" -name '*.t')" ]
}

@test "--auth-cookie: requests before AUTH get -1; the right cookie unlocks; nodes still link" {
	cluster_start auth --groups 1 --nodes-per-group 2 --auth-cookie s3cret
	printf 'v' >"$TMP/v"
	run c put k "$TMP/v"
	[ "$status" -eq 1 ]
	run c --auth wrong put k "$TMP/v"
	[ "$status" -eq 1 ]
	run c --auth s3cret --nodirect put k "$TMP/v"
	[ "$status" -eq 0 ]
	run c --auth s3cret routes
	[[ $output == *"nodes 2 "* ]]
}
