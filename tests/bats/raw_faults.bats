#!/usr/bin/env bats
# raw_faults.bats — the raw tool when nodes fail: a group down during a
# write (quorum holds; successful_write_count=3 fails clearly), a stale group
# after it returns (reads get the committed version, read repair fixes it),
# corrupted copies on disk (-84) and in transit (checksum mismatch) failing
# over, a hung node, a node killed in the middle of a large transfer.

setup() {
	load lib/cluster
	load lib/raw
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
}

teardown() {
	cluster_stop
}

# Timestamp of group G's copy of KEY from `lookup --json` ("" if it has none).
group_ts() {
	p --json lookup "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((g.get("timestamp", "") for g in d["groups"] if g["group"] == int(sys.argv[1])), ""))' "$2"
}

@test "a group down during a write: the quorum commits; 3 of 3 fails naming the group and node" {
	cluster_start down --groups 3
	echo v1 | p put k
	cluster_kill 3-1
	run bash -c 'echo v2 | "$POHMELFS_BIN" put k'
	[ "$status" -eq 0 ]
	[[ $output == *"warning: key k: not written to group 3"* ]]
	[ "$(p get k)" = v2 ]
	addr=$(cluster_addr 3-1)
	run bash -c 'echo v3 | POHMELFS_SUCCESSFUL_WRITE_COUNT=3 "$POHMELFS_BIN" put k'
	[ "$status" -eq 1 ]
	[[ $output == *"key k: write committed on 2 of 3 groups, 3 needed; group 3"* ]]
	[[ $output == *"${addr%:*}"*"Connection refused"* ]]
}

@test "a stale group after it returns: reads get the committed version; read repair fixes it" {
	cluster_start stale --groups 3
	echo old | p put k
	cluster_kill 3-1
	echo new | p put k
	cluster_start_node 3-1
	run p get k
	[ "$status" -eq 0 ]
	# the data streams out first; any warning follows on stderr
	[ "${lines[0]}" = new ]
	# lookup waits for every group: the stale one is shown as not committed
	run p lookup k
	[[ ${lines[2]} == "group 3 "*"(not the committed version)" ]]
	[ "$(group_ts k 3)" != "$(group_ts k 1)" ]
	run env POHMELFS_READ_REPAIR=1 "$POHMELFS_BIN" get k
	[ "$status" -eq 0 ]
	[[ $output == *"group 3 repaired"* ]]
	t1=$(group_ts k 1)
	[ -n "$t1" ]
	[ "$(group_ts k 2)" = "$t1" ]
	[ "$(group_ts k 3)" = "$t1" ]
	# group 3 now answers alone with the committed content
	cluster_kill 1-1
	cluster_kill 2-1
	[ "$(p get k)" = new ]
}

@test "groups churn: an acknowledged version is never read as an older one or as missing" {
	# Issue 18 case 5: v2 acknowledged by groups 1 and 3 while group 2 was
	# down; group 2 comes back holding v1 (or nothing, for a key new at v2);
	# then group 1 goes.  The answering groups 2 and 3 disagree, and the
	# read must give v2 (the stock dnet_ioclient does), never v1 or ENOENT.
	cluster_start churn --groups 3
	echo v1 | p put k
	cluster_kill 2-1
	echo v2 | p put k
	echo v2 | p put fresh
	cluster_start_node 2-1
	cluster_kill 1-1
	run p get k
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = v2 ]
	# Served with a warning: group 2 answered with an older copy.
	[[ $output == *"the newest copy is on 1 group(s), fewer than the 2 a write needs"* ]]
	run p get fresh
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = v2 ]
	# lookup names the version it reads: group 3's, not group 2's v1.
	run p lookup k
	echo "$output"
	[[ $output == *"group 2 "*"(not the committed version)"* ]]
	! grep -q "group 3 .*(not the committed version)" <<<"$output" || false
	# A write after the churn still wins over both.
	echo v3 | p put k
	[ "$(p get k)" = v3 ]
}

@test "a copy corrupted on disk (-84) fails over and is reported" {
	cluster_start disk --groups 3
	head -c 100000 /dev/urandom >"$TMP/v"
	p put k <"$TMP/v"
	id=$(printf 'pohmelfs\0k' | sha512sum | cut -c1-128)
	cluster_corrupt_disk 1-1 "$id"
	cluster_corrupt_disk 2-1 "$id"
	# group 3 answers last, so the corrupt copies are met first
	cluster_fault 3-1 "delay 200"
	p get k >"$TMP/out" 2>"$TMP/err"
	cmp "$TMP/v" "$TMP/out"
	grep -q "corrupt (EILSEQ, -84)" "$TMP/err"
	grep -q "group [12] node 127.0.0.1:" "$TMP/err"
}

@test "a copy corrupted in transit (checksum mismatch) fails over and is reported" {
	cluster_start transit --groups 3
	head -c 100000 /dev/urandom >"$TMP/v"
	p put k <"$TMP/v"
	cluster_fault 1-1 "corrupt all"
	cluster_fault 2-1 "corrupt all"
	cluster_fault 3-1 "delay 200"
	p get k >"$TMP/out" 2>"$TMP/err"
	cmp "$TMP/v" "$TMP/out"
	grep -q "checksum mismatch" "$TMP/err"
	# every copy corrupted in transit: the read fails, nothing wrong is output
	cluster_fault 3-1 "corrupt all"
	run p get k
	[ "$status" -eq 1 ]
	[[ $output == *"checksum mismatch"*"checksum mismatch"*"checksum mismatch"* ]]
	# with noreadcsum the same bytes are accepted: what the option trades away
	POHMELFS_NOREADCSUM=1 p get k >"$TMP/out2"
	! cmp -s "$TMP/v" "$TMP/out2" || false
}

@test "a hung node: answers come from the others within the timeout" {
	cluster_start hung --groups 3
	echo v1 | p put k
	cluster_fault 2-1 hang
	export POHMELFS_READ_WAIT_TIMEOUT=4 POHMELFS_WRITE_WAIT_TIMEOUT=4
	timed p get k
	[ "$ELAPSED_RC" -eq 0 ]
	[ "$ELAPSED_MS" -lt 2500 ]
	timed bash -c 'echo v2 | "$POHMELFS_BIN" put k'
	[ "$ELAPSED_RC" -eq 0 ]
	[ "$ELAPSED_MS" -lt 2500 ]
	[ "$(p get k)" = v2 ]
}

@test "a node killed in the middle of a large put: the put ends clearly, the data is whole" {
	cluster_start kill --groups 3
	head -c 60000000 /dev/urandom >"$TMP/big"
	( sleep 0.15; cluster_kill 2-1 ) &
	run p put big <"$TMP/big"
	wait
	if [ "$status" -eq 0 ]; then
		p get big >"$TMP/out"
		cmp "$TMP/big" "$TMP/out"
	else
		[[ $output == *"key big: write committed on"* ]]
	fi
	# either way a new put with one group down commits and reads back whole
	# (generous timeouts: 60 MB under a sanitizer on a loaded machine is slow)
	POHMELFS_WRITE_WAIT_TIMEOUT=60 p put big2 <"$TMP/big"
	POHMELFS_READ_WAIT_TIMEOUT=60 p get big2 >"$TMP/out2"
	cmp "$TMP/big" "$TMP/out2"
}

@test "a node killed and restarted between calls of one process is reconnected" {
	cluster_start restart --groups 1
	echo v1 | p put k
	cluster_restart 1-1
	[ "$(p get k)" = v1 ]
}

# FIELD of group G's entry in `lookup --json KEY` (node, status, committed, ...).
group_field() {
	p --json lookup "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
g = next((g for g in d["groups"] if g["group"] == int(sys.argv[1])), {})
v = g.get(sys.argv[2], "")
print(str(v).lower() if isinstance(v, bool) else v)' "$2" "$3"
}

@test "one node of a two-node group dies: its keys go to the group's live node; status shows it" {
	cluster_start pair --groups 3 --nodes-per-group 2
	dead=$(cluster_addr 1-1)
	live=$(cluster_addr 1-2)
	owned=()
	for i in $(seq 1 16); do
		echo "v$i" | p put "k$i"
		[ "$(group_field "k$i" 1 node)" = "$dead" ] && owned+=("$i")
	done
	# the ring gives some of these keys to each node of group 1
	[ "${#owned[@]}" -ge 1 ]
	[ "${#owned[@]}" -lt 16 ]
	cluster_kill 1-1
	for i in "${owned[@]}"; do
		# the committed copies of groups 2 and 3 answer; group 1 (now its live
		# node) has none.  (Whether the get's message names group 1 depends on
		# whether its answer came before the quorum of 2 and 3: not asserted;
		# a fresh-clone CI run under load failed on it.)
		[ "$(p get "k$i" 2>/dev/null)" = "v$i" ]
		# a new write commits on all three groups: group 1's share of the ring is the live node's
		run bash -c "echo new$i | \"\$POHMELFS_BIN\" put k$i"
		[ "$status" -eq 0 ]
		[[ $output != *"not written to group"* ]]
		[ "$(group_field "k$i" 1 node)" = "$live" ]
		[ "$(group_field "k$i" 1 committed)" = true ]
		[ "$(p get "k$i" 2>/dev/null)" = "new$i" ]
	done
	run p --json status
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
nodes = {n["address"]: n for n in d["nodes"]}
assert not nodes[sys.argv[2]]["up"] and nodes[sys.argv[2]]["error"], nodes[sys.argv[2]]
assert nodes[sys.argv[3]]["up"], nodes[sys.argv[3]]
g1 = next(g for g in d["groups"] if g["group"] == 1)
assert g1["nodes"] == 1 and g1["ids"] > 0, g1
assert all(r["node"] == sys.argv[3] for r in d["route"] if r["group"] == 1)
' "$output" "$dead" "$live"
	run p status
	[[ $output == *"$dead"*DOWN* ]]
	[[ $output == *"group 1      1 nodes"* ]]
}

@test "a node killed during a streamed get of 64 MiB: the rest comes from another group, whole" {
	cluster_start stream --groups 3
	head -c 67108864 /dev/urandom >"$TMP/big"
	POHMELFS_WRITE_WAIT_TIMEOUT=60 p put big <"$TMP/big"
	# groups 2 and 3 answer the lookup late, so the stream starts on group 1
	cluster_fault 2-1 "delay 300"
	cluster_fault 3-1 "delay 300"
	export POHMELFS_READ_WAIT_TIMEOUT=20
	# The reader takes 8 MiB (the tool then waits on the full pipe with at
	# most 8 pieces of 4 MiB asked for), group 1's node is killed, then the
	# reader takes the rest.
	{ rc=0; "$POHMELFS_BIN" get big 2>"$TMP/err" || rc=$?; echo "$rc" >"$TMP/rc"; } | {
		dd of="$TMP/out" bs=1M count=8 iflag=fullblock status=none
		cluster_clear_faults 2-1
		cluster_clear_faults 3-1
		cluster_kill 1-1
		cat >>"$TMP/out"
	}
	cat "$TMP/err"
	[ "$(cat "$TMP/rc")" -eq 0 ]
	cmp "$TMP/big" "$TMP/out"
	# it really failed over in the middle
	grep -q "read failed from group 1 node $(cluster_addr 1-1)" "$TMP/err"
}

@test "a node killed during a streamed get with no other copy: a clear error, only a prefix of the data" {
	cluster_start stream1 --groups 1
	head -c 67108864 /dev/urandom >"$TMP/big"
	POHMELFS_WRITE_WAIT_TIMEOUT=60 p put big <"$TMP/big"
	{ rc=0; "$POHMELFS_BIN" get big 2>"$TMP/err" || rc=$?; echo "$rc" >"$TMP/rc"; } | {
		dd of="$TMP/out" bs=1M count=8 iflag=fullblock status=none
		cluster_kill 1-1
		cat >>"$TMP/out"
	}
	cat "$TMP/err"
	[ "$(cat "$TMP/rc")" -eq 1 ]
	grep -q "key big" "$TMP/err"
	grep -q "group 1 node $(cluster_addr 1-1)" "$TMP/err"
	# what was written is the object's first bytes, never anything else, and less than all of it
	size=$(stat -c %s "$TMP/out")
	[ "$size" -ge 8388608 ]
	[ "$size" -lt 67108864 ]
	cmp -n "$size" "$TMP/big" "$TMP/out"
}
