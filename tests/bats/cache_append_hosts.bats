#!/usr/bin/env bats
# cache_append_hosts.bats — issue 18 (Tests): two hosts appending to one
# file at the same time, each line acknowledged by its program's exit
# status (sync_on_close=1: the close pushes, and a push that fails fails
# the close).  A fresh third cache must find every acknowledged line in the
# file or in one of the conflict copies (.pohmelfs-conflicts/HOST/).  Short
# on purpose: it is the two-host run of the SAN=thread tier (tests/run).

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts append2
}

teardown() {
	stop_daemons
	cluster_stop
}

# appender HOST N: N appends of "HOST line I" to $T/HOST/f, one process
# each (printf(1) checks its close of stdout: the push); logs the
# acknowledged lines to $T/ack.HOST and the programs' stderr to $T/err.HOST.
appender() {
	local h=$1 n=$2 i
	for ((i = 1; i <= n; i++)); do
		if shim "$h" timeout -k 5 60 sh -c 'exec printf "%s\n" "$2" >>"$1"' sh "$T/$h/f" \
			"$h line $i" 2>>"$T/err.$h"; then
			echo "$h line $i" >>"$T/ack.$h"
		fi
	done
}

@test "two hosts append to one file at once: every acknowledged line is in the file or a conflict copy" {
	local n=12 f copies=0
	shim a sh -c ': >"$1/f"' sh "$T/a"
	appender a $n &
	appender b $n &
	wait
	# Every append succeeds (a conflict is settled by a copy, not an
	# error), and no sanitizer report (TSan exits 66 after one).
	cat "$T"/err.* 2>/dev/null || true
	[ "$(cat "$T"/ack.* | wc -l)" -eq $((2 * n)) ]
	[ -z "$(grep -h Sanitizer "$T"/err.* 2>/dev/null)" ]
	shim c cat "$T/c/f" >"$T/seen"
	for f in $(shim c find "$T/c/.pohmelfs-conflicts" -type f 2>/dev/null); do
		shim c cat "$f" >>"$T/seen"
		copies=$((copies + 1))
	done
	echo "# $((2 * n)) appends, $copies conflict copies" >&3
	sort -u "$T/seen" >"$T/seen.u"
	cat "$T"/ack.* | sort >"$T/acked"
	comm -23 "$T/acked" "$T/seen.u" >"$T/lost"
	echo "lost: $(cat "$T/lost")"
	[ ! -s "$T/lost" ]
}
