#!/usr/bin/env bats
# raw_roundtrip.bats — `pohmelfs put|get|lookup|del|status` through three
# groups of local nodes: round trips (small, binary, chunked), JSON output,
# configuration errors, protocol versions and the auth cookie (issue 4).

setup() {
	load lib/cluster
	load lib/raw
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
}

teardown() {
	cluster_stop
}

@test "put/get/lookup/del round trip through 3 groups" {
	cluster_start rt --groups 3
	echo "hello world" | p put greeting
	run p get greeting
	[ "$status" -eq 0 ]
	[ "$output" = "hello world" ]
	run p lookup greeting
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	for g in 1 2 3; do
		[[ ${lines[$((g - 1))]} =~ ^group\ $g\ +node\ 127\.0\.0\.1:[0-9]+\ +size\ 12\ +timestamp ]]
	done
	# every group holds the same version
	[ "$(printf '%s\n' "${lines[@]}" | sed 's/.*timestamp \([0-9.]*\).*/\1/' | sort -u | wc -l)" -eq 1 ]
	run p del greeting
	[ "$status" -eq 0 ]
	run p get greeting
	[ "$status" -eq 1 ]
	[[ $output == *"key greeting"* ]]
	[[ $output == *"No such file or directory"* ]]
	run p del greeting
	[ "$status" -eq 1 ]
}

@test "binary data and a chunked (PREPARE/PLAIN_WRITE/COMMIT) object round-trip exactly" {
	cluster_start bin --groups 3
	head -c 3000000 /dev/urandom >"$TMP/small"
	p put bin <"$TMP/small"
	p get bin >"$TMP/small.out"
	cmp "$TMP/small" "$TMP/small.out"
	# larger than one packet (32 MiB): written in 8 MiB chunks, read in 4 MiB pieces
	head -c 41000000 /dev/urandom >"$TMP/big"
	# generous timeouts: a sanitizer build on a loaded machine takes seconds
	# per step here, and this test is about the bytes, not about timeouts
	env POHMELFS_WRITE_WAIT_TIMEOUT=20 "$POHMELFS_BIN" put big <"$TMP/big"
	env POHMELFS_READ_WAIT_TIMEOUT=20 "$POHMELFS_BIN" get big >"$TMP/big.out"
	cmp "$TMP/big" "$TMP/big.out"
	run p --json lookup big
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["found"] and d["size"] == 41000000, d
assert all(g["status"] == 0 and g["committed"] for g in d["groups"]), d
assert len({g["checksum"] for g in d["groups"]}) == 1
'
}

@test "an overwrite gets a newer timestamp and the new content" {
	cluster_start ow --groups 3
	echo one | p put k
	t1=$(p --json lookup k | python3 -c 'import json,sys; print(json.load(sys.stdin)["timestamp"])')
	echo two | p put k
	t2=$(p --json lookup k | python3 -c 'import json,sys; print(json.load(sys.stdin)["timestamp"])')
	[ "$(p get k)" = two ]
	python3 -c "import sys; sys.exit(0 if float('$t2') > float('$t1') else 1)"
}

@test "status lists nodes, groups and the route; --json is valid" {
	cluster_start st --groups 3
	run p status
	[ "$status" -eq 0 ]
	[[ $output == *"write quorum 2"* ]]
	[ "$(grep -c ' up  *protocol 3.0.0.1  ping ' <<<"$output")" -eq 3 ]
	for g in 1 2 3; do grep -q "group $g .*1 nodes, 1 backends" <<<"$output"; done
	run p --json status
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["healthy"] and len(d["nodes"]) == 3 and all(n["up"] for n in d["nodes"])
assert sorted(g["group"] for g in d["groups"]) == [1, 2, 3]
assert len(d["route"]) >= 3
'
	cluster_kill 2-1
	run p status
	[ "$status" -eq 1 ]
	[[ $output == *"DOWN  connect: Connection refused"* ]]
}

@test "configuration errors name the key, the value and what is expected" {
	run env POHMELFS_SERVERS=127.0.0.1:1 POHMELFS_GROUPS=1:1 "$POHMELFS_BIN" get k
	[ "$status" -eq 2 ]
	[ "$output" = "pohmelfs: POHMELFS_GROUPS: groups=1:1: invalid value, expected group numbers 1..4294967295 separated by ':' (e.g. 1:2:3), no repeats" ]
	run env -u POHMELFS_SERVERS POHMELFS_GROUPS=1 "$POHMELFS_BIN" get k
	[ "$status" -eq 2 ]
	[[ $output == *"no server configured"* ]]
	run env POHMELFS_SERVERS=127.0.0.1:1 POHMELFS_GROUPS=1 POHMELFS_READ_WAIT_TIMEOUT=soon "$POHMELFS_BIN" get k
	[ "$status" -eq 2 ]
	[[ $output == *"read_wait_timeout=soon"*"expected seconds"* ]]
	printf 'server=127.0.0.1:1\ngroups=1\nbogus=1\n' >"$TMP/bad.conf"
	run env -u POHMELFS_SERVERS -u POHMELFS_GROUPS POHMELFS_CONFIG="$TMP/bad.conf" "$POHMELFS_BIN" get k
	[ "$status" -eq 2 ]
	[[ $output == *"bad.conf:3: unknown configuration key \"bogus\""* ]]
	run p frobnicate k
	[ "$status" -eq 2 ]
	run p put
	[ "$status" -eq 2 ]
}

@test "no node reachable: one clear error, exit 1" {
	run env POHMELFS_SERVERS=127.0.0.1:1,127.0.0.1:2 POHMELFS_GROUPS=1:2 "$POHMELFS_BIN" get k
	[ "$status" -eq 1 ]
	[[ $output == *"key k: no node reachable: 127.0.0.1:1: connect: Connection refused; 127.0.0.1:2: connect: Connection refused"* ]]
}

@test "protocol: a 2.26 cluster refuses 3.0 with a named version; protocol=2.26 works" {
	cluster_start v226 --groups 1 --protocol 2.26
	run bash -c 'echo x | "$POHMELFS_BIN" put k'
	[ "$status" -eq 1 ]
	[[ $output == *"server refused protocol 3.0 (version mismatch): the node speaks 2.26"*"set protocol=2.26"* ]]
	echo x | POHMELFS_PROTOCOL=2.26 p put k
	[ "$(POHMELFS_PROTOCOL=2.26 p get k)" = x ]
}

@test "auth cookie: refused without it, works with it" {
	cluster_start auth --groups 1 --auth-cookie s3cret
	run bash -c 'echo x | POHMELFS_AUTH_COOKIE=wrong "$POHMELFS_BIN" put k'
	[ "$status" -eq 1 ]
	[[ $output == *"auth_cookie rejected by the node"* ]]
	echo x | POHMELFS_AUTH_COOKIE=s3cret p put k
	[ "$(POHMELFS_AUTH_COOKIE=s3cret p get k)" = x ]
}

@test "an empty object is refused with a reason" {
	cluster_start empty --groups 1
	run p put k </dev/null
	[ "$status" -eq 1 ]
	[[ $output == *"empty objects cannot be stored"* ]]
}
