#!/usr/bin/env bats
# node_threads.bats — which thread of pohmelfs-node answers a request
# (issue 23): small READs, LOOKUPs, WRITEs and DELs that do not wait for a
# sync are answered on the connection's own thread, with no handoff to a
# worker and back; what can take long (a write that waits for its group
# commit, a large read) goes to the workers, and the small requests sent
# after it overtake it, as with Elliptics (PROTOCOL.md §10.9).

setup() {
	load lib/common
	load lib/cluster
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
	cluster_start threads --groups 1
	NODE_DIR=$(cluster_dir 1-1)
	ADDR=$(cluster_addr 1-1)
}

teardown() {
	[ -n "${BENCH_PID:-}" ] && kill "$BENCH_PID" 2>/dev/null
	[ -n "${STRACE_PID:-}" ] && kill "$STRACE_PID" 2>/dev/null
	cluster_stop
}

c() { node_client 1-1 "$@"; }
bench() { "$NODE_BIN" --bench "$ADDR" "$@" --group 1; }

# counts: restart the node; print what its last run counted, "INLINE POOLED"
# (its log line "requests: N on the connections' threads, M handed to the workers").
counts() {
	cluster_restart 1-1
	grep 'requests: [0-9]* on the connections' "$NODE_DIR/node.log" | tail -n 1 |
		awk '{ print $(NF - 9), $(NF - 4) }'
}

# set_conf KEY = VALUE...: add a setting to the node's config and restart it.
set_conf() {
	echo "$*" >>"$NODE_DIR/node.conf"
	cluster_restart 1-1
}

# trace_node SYSCALLS: count the node's SYSCALLS (every thread) with
# strace -c into $TMP/strace until stop_trace; skip where strace or ptrace
# is missing, fail when the attach never settles.
trace_node() {
	command -v strace >/dev/null || skip "strace is not installed"
	: >"$TMP/strace.err"
	strace -f -c -e trace="$1" -o "$TMP/strace" -p "$(cluster_pid 1-1)" 2>"$TMP/strace.err" &
	STRACE_PID=$!
	attached() { grep -q attached "$TMP/strace.err" || ! kill -0 "$STRACE_PID" 2>/dev/null; }
	until_true 20 attached
	! grep -q 'Operation not permitted' "$TMP/strace.err" || skip "cannot ptrace the node here"
	grep -q attached "$TMP/strace.err"
}

# stop_trace: detach strace; its summary is complete in $TMP/strace.
stop_trace() {
	kill -INT "$STRACE_PID"
	wait "$STRACE_PID" || true
	STRACE_PID=
}

@test "small writes, reads, lookups and deletes are answered without a handoff" {
	bench write --size 4096 --count 300 --depth 4 >/dev/null
	bench read --size 4096 --count 300 --depth 4 >/dev/null
	printf 'v' >"$TMP/v"
	c put k "$TMP/v" >/dev/null
	c --checksum lookup k >/dev/null
	c del k >/dev/null
	read -r inline pooled <<<"$(counts)"
	echo "inline $inline, pooled $pooled" >&3
	[ "$inline" -ge 600 ]
	[ "$pooled" -eq 0 ]
}

@test "large requests and writes that wait for their group commit go to the workers" {
	head -c $((1 << 20)) /dev/urandom >"$TMP/big"
	c put big "$TMP/big" >/dev/null
	c get big >/dev/null
	read -r _ pooled <<<"$(counts)"
	[ "$pooled" -eq 2 ]
	set_conf "sync_interval = 0"
	printf 'v' >"$TMP/v"
	for i in 1 2 3; do c put "s$i" "$TMP/v" >/dev/null; done
	c del s1 >/dev/null
	c get s2 >/dev/null
	read -r _ pooled <<<"$(counts)"
	[ "$pooled" -eq 4 ]
}

@test "a small read sent after a large one on the same connection overtakes it" {
	head -c $((32 << 20)) /dev/urandom >"$TMP/big"
	c put big "$TMP/big" >/dev/null
	printf 'small' >"$TMP/small"
	c put small "$TMP/small" >/dev/null
	# With the IO checksum the large read hashes 32 MiB on a worker.
	run c --csum get-many big small
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "reply small status=0 size=5" ]
	[ "${lines[1]}" = "reply big status=0 size=$((32 << 20))" ]
}

@test "a write answered on one connection is read back at once on another" {
	for i in $(seq 1 30); do
		printf 'value %d' "$i" >"$TMP/v"
		c put k "$TMP/v" >/dev/null
		[ "$(c get k 2>/dev/null)" = "value $i" ]
	done
}

@test "a small write costs no futex call and no read of the old record in the node" {
	trace_node futex,pread64
	# 500 overwrites of one key, one at a time.
	bench write --size 4096 --count 500 --depth 1 >/dev/null
	stop_trace
	f=$(awk '$NF == "futex" { print $4 }' "$TMP/strace")
	r=$(awk '$NF == "pread64" { print $4 }' "$TMP/strace")
	echo "for 500 writes: ${f:-0} futex, ${r:-0} pread64" >&3
	# A handoff to a worker and back cost ~3 futex calls a write; the
	# sync thread and the fault file's lock may add a few.
	[ "${f:-0}" -lt 50 ]
	# A write of a whole object used to read the old record's header.
	[ "${r:-0}" -lt 50 ]
}

# lookups N: N (< 256) LOOKUP headers of a zero id in group 1 with NEED_ACK,
# trans 1..N (the 120-byte dnet_cmd: id 64, group 4, reserved 8, status 4,
# cmd 4, backend 4, trace 8, flags 8, trans 8, size 8), no fork per header.
lookups() {
	local z="" i hx pre
	for ((i = 0; i < 64; i++)); do z+='\x00'; done
	pre="$z\x01\x00\x00\x00${z:0:48}\x01\x00\x00\x00${z:0:48}\x01${z:0:28}"
	for ((i = 1; i <= $1; i++)); do
		printf -v hx '%02x' "$i"
		printf "$pre\\x$hx${z:0:60}"
	done
}

@test "the replies of a long burst go out in batches of at most 64" {
	lookups 200 >"$TMP/burst"
	[ "$(wc -c <"$TMP/burst")" -eq $((200 * 120)) ]
	trace_node sendto,sendmsg
	# 200 LOOKUPs of a missing key in one send: 200 acks of -2.
	run c --timeout 5 send-file "$TMP/burst"
	stop_trace
	[ "$(grep -c 'status=-2' <<<"$output")" -eq 200 ]
	n=$(awk '$NF == "sendto" || $NF == "sendmsg" { s += $4 } END { print s + 0 }' "$TMP/strace")
	echo "sends for 200 replies: $n" >&3
	# One recv brings them all; the batch goes out every 64 replies.
	[ "$n" -ge 4 ]
}

@test "one connection's flood of requests does not hold up another's" {
	printf 'v' >"$TMP/v"
	c put other "$TMP/v" >/dev/null
	bench read --size 4096 --count 2000000 --depth 64 >/dev/null &
	BENCH_PID=$!
	sleep 0.3
	for i in $(seq 1 10); do
		[ "$(c --timeout 5 get other 2>/dev/null)" = v ]
	done
	# The flood was still running while every read of the other connection
	# came back.
	kill -0 "$BENCH_PID"
}
