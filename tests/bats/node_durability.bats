#!/usr/bin/env bats
# node_durability.bats — when pohmelfs-node's writes reach the disk (issue 23):
# by default a sync interval (the page cache survives a killed process, so
# a SIGKILL loses no acknowledged write), and with sync_interval = 0 group
# commit (N concurrent writers share one sync).  Deletes survive a restart.

setup() {
	load lib/common
	load lib/cluster
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
	cluster_start dur --groups 1
	NODE_DIR=$(cluster_dir 1-1)
}

teardown() {
	[ -n "${LOOP_PID:-}" ] && kill "$LOOP_PID" 2>/dev/null
	[ -n "${STRACE_PID:-}" ] && kill "$STRACE_PID" 2>/dev/null
	cluster_stop
}

c() { node_client 1-1 "$@"; }

# set_conf KEY = VALUE...: add a setting to the node's config and restart it.
set_conf() {
	echo "$*" >>"$NODE_DIR/node.conf"
	cluster_restart 1-1
}

# sync_calls FILE: the fsync + fdatasync + syncfs count of a strace -c summary.
sync_calls() {
	# Columns: % time, seconds, usecs/call, calls, [errors], syscall.
	awk '$NF ~ /^(fsync|fdatasync|syncfs)$/ { n += $4 } END { print n + 0 }' "$1"
}

# trace_syncs: attach strace to the node (every thread); stop_trace prints the count.
trace_syncs() {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -c -e trace=fsync,fdatasync,syncfs -o "$TMP/strace" -p "$(cluster_pid 1-1)" \
		2>"$TMP/strace.err" &
	STRACE_PID=$!
	# Skip only when ptrace is refused; an attach that is merely slow
	# (a loaded machine) fails instead of passing vacuously.
	strace_settled() { grep -q attached "$TMP/strace.err" || ! kill -0 "$STRACE_PID" 2>/dev/null; }
	until_true 20 strace_settled
	! grep -q attached "$TMP/strace.err" || return 0
	cat "$TMP/strace.err"
	! grep -q 'Operation not permitted' "$TMP/strace.err" || skip "cannot ptrace the node here"
	return 1
}
# stop_trace: detach strace and set NSYNC to the sync calls it counted.
stop_trace() {
	kill -INT "$STRACE_PID"
	wait "$STRACE_PID" || true
	STRACE_PID=
	NSYNC=$(sync_calls "$TMP/strace")
}

# acked_at_least N: N writes were acknowledged.
acked_at_least() { [ "$(wc -l <"$TMP/acked")" -ge "$1" ]; }

@test "default sync interval: a SIGKILL in the middle of writes loses no acknowledged write" {
	: >"$TMP/acked"
	(
		i=0
		while :; do
			i=$((i + 1))
			printf 'value %d' "$i" >"$TMP/v.$i"
			node_client 1-1 put "k$i" "$TMP/v.$i" >/dev/null 2>&1 && echo "$i" >>"$TMP/acked"
		done
	) &
	LOOP_PID=$!
	until_true 60 acked_at_least 30
	cluster_kill 1-1 KILL
	kill "$LOOP_PID"
	wait "$LOOP_PID" || true
	LOOP_PID=
	cluster_start_node 1-1
	n=0
	while read -r i; do
		run c get "k$i"
		[ "$status" -eq 0 ]
		[[ $output == *"value $i" ]]
		n=$((n + 1))
	done <"$TMP/acked"
	[ "$n" -ge 30 ]
}

@test "default sync interval: writes do not wait for a sync; the interval syncs them" {
	trace_syncs
	"$NODE_BIN" --bench "$(cluster_addr 1-1)" write --size 4096 --count 200 --conns 2 \
		--depth 2 >/dev/null
	sleep 6			# one interval (5 s) and a bit
	stop_trace
	n=$NSYNC
	echo "syncs: $n for 200 writes" >&3
	[ "$n" -ge 1 ]
	[ "$n" -le 3 ]
}

@test "sync_interval = 0: group commit, concurrent writers share syncs" {
	set_conf "sync_interval = 0"
	grep -q "sync every write" "$NODE_DIR/node.log"
	trace_syncs
	run "$NODE_BIN" --bench "$(cluster_addr 1-1)" write --size 4096 --count 800 --conns 8 --depth 1
	[ "$status" -eq 0 ]
	[[ $output == *" 0 errors"* ]]
	writes=$(grep -o '[0-9]* requests' <<<"$output" | cut -d' ' -f1)
	stop_trace
	# The node's own counters, logged at shutdown.
	cluster_restart 1-1
	line=$(grep -o 'store: [0-9]* writes, [0-9]* syncs' "$NODE_DIR/node.log" | tail -n 1)
	read -r _ w _ n _ <<<"$line"
	echo "syncs: $NSYNC (strace), $n (node) for $w writes ($writes acked) by 8 writers" >&3
	[ "$w" -ge "$writes" ]
	[ "$n" -ge 1 ]
	[ "$NSYNC" -ge 1 ]
	# Shared, they cost fewer syncs than writes (the node counts sync
	# rounds; a round whose writes an earlier call already covered makes
	# no call, so strace may see fewer).  How many fewer is a benchmark's
	# question: under a sanitizer on a loaded machine the writers arrive
	# one by one more often (CI once saw more than half as many syncs).
	[ "$NSYNC" -le "$n" ]
	[ "$n" -lt "$w" ]
}

@test "sync_interval = 0: one writer alone still syncs every write before the ack" {
	set_conf "sync_interval = 0"
	trace_syncs
	printf 'x' >"$TMP/v"
	for i in 1 2 3 4 5; do c put "s$i" "$TMP/v" >/dev/null; done
	stop_trace
	n=$NSYNC
	[ "$n" -ge 5 ]
}

@test "a delete survives a SIGKILL and a restart" {
	printf 'doomed' >"$TMP/v"
	c put gone "$TMP/v" >/dev/null
	c put kept "$TMP/v" >/dev/null
	run c del gone
	[ "$status" -eq 0 ]
	cluster_kill 1-1 KILL
	cluster_start_node 1-1
	run c get gone
	[ "$status" -eq 2 ]
	run c get kept
	[ "$status" -eq 0 ]
	[[ $output == *doomed ]]
}

@test "sync_interval and nosync are checked" {
	run "$NODE_BIN" --listen 127.0.0.1:1 --group 1 --data "$TMP/x" --sync-interval -1
	[ "$status" -ne 0 ]
	[[ $output == *sync-interval* || $output == *sync_interval* ]]
	run "$NODE_BIN" --listen 127.0.0.1:1 --group 1 --data "$TMP/x" --sync-interval 1x
	[ "$status" -ne 0 ]
}
