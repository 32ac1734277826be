#!/usr/bin/env bats
# node_hostile.bats — hostile input never crashes pohmelfs-node and never
# applies a partial write: random bytes, absurd sizes, truncated payloads,
# malformed payloads (-22) (issue 5).

setup() {
	load lib/cluster
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
	cluster_start hostile --groups 1
	PID=$(cluster_pid 1-1)
}

teardown() {
	cluster_stop
}

c() { node_client 1-1 "$@"; }

# The node is the same process and still answers.
still_alive() {
	[ "$(cluster_pid 1-1)" = "$PID" ]
	node_client 1-1 ping >/dev/null
}

# A raw request: header fields and a payload file (python-free, printf-only).
le() { # le VALUE BYTES: little-endian bytes as printf escapes
	local v=$1 n=$2 i out=""
	for ((i = 0; i < n; i++)); do
		out+=$(printf '\\x%02x' $((v & 255)))
		v=$((v >> 8))
	done
	printf '%s' "$out"
}

# header CMD FLAGS TRANS SIZE [GROUP] -> the 120-byte dnet_cmd on stdout (id zero):
# id 64, group 4, reserved 8, status 4, cmd 4, backend 4, trace 8, flags 8, trans 8, size 8.
header() {
	head -c 64 /dev/zero
	printf "$(le "${5:-1}" 4)$(le 0 8)$(le 0 4)$(le "$1" 4)$(le 0 4)$(le 0 8)$(le "$2" 8)$(le "$3" 8)$(le "$4" 8)"
}

@test "random bytes: the connection is dropped or answered, the node survives" {
	for i in $(seq 1 20); do
		head -c $((RANDOM % 4000 + 1)) /dev/urandom >"$TMP/rnd"
		run c --timeout 2 send-file "$TMP/rnd"
		[[ $status -eq 0 || $status -eq 124 ]]
	done
	still_alive
}

@test "random payloads behind valid headers of every command get an error or an answer" {
	for cmd in 1 2 3 4 5 8 11 13 14 15 16 17 19 23 24 25 26 27 99; do
		for size in 0 300; do
			{ header "$cmd" 1 5 "$size"; head -c "$size" /dev/urandom; } >"$TMP/pkt"
			run c --timeout 2 send-file "$TMP/pkt"
			[[ $status -eq 0 || $status -eq 124 ]]
		done
	done
	still_alive
}

@test "an absurd size (2^40) drops the connection without a reply" {
	run c --timeout 5 header-size $((1 << 40))
	[ "$status" -eq 0 ]
	[ -z "$(grep '^reply' <<<"$output")" ]
	run c --timeout 5 header-size $(((1 << 32) + 1))
	[ "$status" -eq 0 ]
	still_alive
}

@test "a truncated WRITE payload is never applied" {
	{ header 4 1 7 1208; head -c 208 /dev/zero; head -c 500 /dev/urandom; } >"$TMP/pkt"
	[ "$(wc -c <"$TMP/pkt")" -eq $((120 + 708)) ]
	run c --timeout 2 send-file "$TMP/pkt"
	[ "$status" -eq 0 ]
	[ -z "$(grep '^reply' <<<"$output")" ]
	[ -z "$(node_records 1-1)" ]
	still_alive
}

@test "malformed payloads get -22: short io_attr, size mismatch, AUTH and STATUS of the wrong size" {
	for spec in "4 100" "5 10" "11 12" "17 300" "16 10" "13 4" "19 50"; do
		set -- $spec
		{ header "$1" 9 11 "$2"; head -c "$2" /dev/zero; } >"$TMP/pkt"
		run c --timeout 2 send-file "$TMP/pkt"
		[ "$status" -eq 0 ]
		[[ $output == *"status=-22"* ]]
	done
	# WRITE whose io.size disagrees with the bytes sent.
	{ header 4 9 12 $((208 + 10)); head -c 200 /dev/zero; printf "$(le 99 8)"; head -c 10 /dev/zero; } >"$TMP/pkt"
	run c --timeout 2 send-file "$TMP/pkt"
	[[ $output == *"status=-22"* ]]
	[ -z "$(node_records 1-1)" ]
	still_alive
}

@test "many connections at once, some abandoned mid-packet" {
	printf 'v' >"$TMP/v"
	for i in $(seq 1 30); do
		c put "k$i" "$TMP/v" >/dev/null &
		{ header 4 1 1 5000; head -c 100 /dev/zero; } >"$TMP/half$i"
		c --timeout 1 send-file "$TMP/half$i" >/dev/null 2>&1 &
	done
	wait
	for i in 1 15 30; do
		run c get "k$i"
		[ "$status" -eq 0 ]
	done
	still_alive
}
