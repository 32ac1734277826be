#!/usr/bin/env bats
# ux_stats.bats — counters: stats=1 prints a process's table at exit on
# stderr (never stdout), and `pohmelfs stats` shows the total of every
# process that used the cache.

bats_require_minimum_version 1.5.0

setup() {
	load lib/common
	load lib/cluster
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 1 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=stats-$RANDOM POHMELFS_PREFIX=$T/p POHMELFS_CACHE_DIR=$T/state
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	mkdir -p "$T/p"
}

teardown() {
	[ -f "$T/state/pohmelfsd.pid" ] && kill "$(cat "$T/state/pohmelfsd.pid")" 2>/dev/null
	cluster_stop
}

# counter NAME: its value in `pohmelfs stats --json`.
counter() {
	"$B/pohmelfs" --json stats | python3 -c "import json,sys; print(json.load(sys.stdin)['counters']['$1'])"
}

@test "stats=1 prints the process's table on stderr at exit, stdout untouched" {
	run --separate-stderr env LD_PRELOAD=$PRELOAD POHMELFS_STATS=1 python3 -c "
import os
open('$T/p/a', 'w').write('hello')
print(open('$T/p/a').read())
os.mkdir('$T/p/d')"
	[ "$status" -eq 0 ]
	[ "$output" = "hello" ]
	[[ "$stderr" == *"calls under $T/p"* ]]
	[[ "$stderr" == *"create"* ]]
	[[ "$stderr" == *"pushes"* ]]
	# coreutils close stderr in an atexit handler: the table still comes.
	run --separate-stderr env LD_PRELOAD=$PRELOAD POHMELFS_STATS=1 cat "$T/p/a"
	[ "$output" = "hello" ]
	[[ "$stderr" == *"calls under $T/p"*"open"* ]]
	# Without stats=1 nothing is printed.
	run --separate-stderr env LD_PRELOAD=$PRELOAD python3 -c "print(open('$T/p/a').read())"
	[ "$output" = "hello" ]
	[ -z "$stderr" ]
}

@test "pohmelfs stats adds up the counters of every process" {
	[ "$(counter create)" -eq 0 ]
	for i in 1 2 3; do
		LD_PRELOAD=$PRELOAD python3 -c "open('$T/p/f$i', 'w').write('x' * 1000)"
	done
	LD_PRELOAD=$PRELOAD python3 -c "open('$T/p/f1').read(); open('$T/p/f2').read()"
	LD_PRELOAD=$PRELOAD python3 -c "import os; os.rename('$T/p/f3', '$T/p/g3')"
	[ "$(counter create)" -ge 3 ]
	[ "$(counter pushes)" -ge 3 ]
	[ "$(counter bytes_pushed)" -ge 3000 ]
	[ "$(counter namespace_change)" -ge 1 ]
	[ "$(counter open)" -ge 2 ]
	run "$B/pohmelfs" stats
	[ "$status" -eq 0 ]
	[[ "$output" == *"counters"* ]]
	# A damaged total is reported, and the next exit starts it again.
	echo garbage >"$T/state/stats"
	run "$B/pohmelfs" stats
	[ "$status" -eq 0 ]
	[[ "$output" == *"stats"*"counters shown as 0"* ]] || [[ "$stderr" == *"counters shown as 0"* ]]
	LD_PRELOAD=$PRELOAD python3 -c "open('$T/p/f1').read()"
	[ "$(counter open)" -ge 1 ]
}

@test "net_waits and net_requests count the client's round trips, setup apart" {
	w0=$(counter net_waits)
	[ "$w0" -eq 0 ]
	run --separate-stderr env LD_PRELOAD=$PRELOAD POHMELFS_STATS=1 python3 -c "
import os
os.mkdir('$T/p/d')"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"net_waits"* ]]
	[[ "$stderr" == *"net_requests"* ]]
	w1=$(counter net_waits) s1=$(counter net_requests) sw1=$(counter net_setup_waits)
	[ "$w1" -ge 1 ]
	[ "$s1" -ge "$w1" ]	# each wait was for at least one request
	[ "$sw1" -ge 1 ]	# the process connected (handshake)
	# A file made and then statted by a new process within attr_timeout:
	# the stat waits for nothing and connects to nothing.
	POHMELFS_ATTR_TIMEOUT=30 LD_PRELOAD=$PRELOAD python3 -c "open('$T/p/d/f', 'w').write('x')"
	w2=$(counter net_waits) s2=$(counter net_requests) sw2=$(counter net_setup_waits)
	[ "$w2" -gt "$w1" ]
	run --separate-stderr env POHMELFS_ATTR_TIMEOUT=30 LD_PRELOAD=$PRELOAD POHMELFS_STATS=1 \
		python3 -c "import os; os.stat('$T/p/d/f')"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"stat"* ]]
	[[ "$stderr" != *"net_"* ]]
	[ "$(counter net_waits)" -eq "$w2" ]
	[ "$(counter net_requests)" -eq "$s2" ]
	[ "$(counter net_setup_waits)" -eq "$sw2" ]
}

@test "a push is counted once, however many children the writer forks and execs" {
	# The writer pushes f at close (sync_on_close), then forks children
	# that exec, and execvp tries a missing PATH entry first: each of those
	# images used to report the parent's cumulative pushes again.
	LD_PRELOAD=$PRELOAD PATH="$T/nowhere:$PATH" bash -c "
echo data > '$T/p/f'
for i in 1 2 3 4; do env true; done
python3 -c 'import subprocess; subprocess.run([\"true\"])'"
	[ "$(counter pushes)" -eq 1 ]
	[ "$(counter create)" -eq 1 ]
}

@test "fork children that reach the storage count only their own calls" {
	# A single-threaded process's fork child takes core/mount's resets (the
	# parent's counters and dirty list dropped) at its first call under
	# the prefix, not in the fork handler (hooks_cache.c fork_resets): each
	# subshell here opens f itself, and must not report the parent's
	# create and push again at its exit.
	LD_PRELOAD=$PRELOAD bash -c "
echo data > '$T/p/f'
for i in 1 2 3; do ( : < '$T/p/f' ); done
( ( : < '$T/p/f' ) )"
	[ "$(counter pushes)" -eq 1 ]
	[ "$(counter create)" -eq 1 ]
	# And each child's own open is counted (the resets run before it, not
	# after: at its exit they would drop it).
	[ "$(counter open)" -eq 4 ]
}

@test "pushes made by pohmelfsd count in pohmelfs stats" {
	# The writer exits without closing (os._exit): its file is left for
	# pohmelfsd, which a write-open starts whatever sync_on_close says.
	LD_PRELOAD=$PRELOAD python3 -c "
import os
f = open('$T/p/k', 'w'); f.write('y' * 100); f.flush(); os._exit(0)"
	until_true 30 sh -c "[ \"\$(\"$B/pohmelfs\" --json stats | python3 -c \"import json,sys; print(json.load(sys.stdin)['counters']['pushes'])\")\" -ge 1 ]"
	[ "$(counter bytes_pushed)" -ge 100 ]
}

# table_sum NAME FILE: the sum of NAME over the stats=1 tables in FILE;
# table_of PID NAME FILE: NAME in the table of process PID (0 if absent).
table_sum() {
	awk -v k="$1" '$1 == k { s += $2 } END { printf "%.0f\n", s }' "$2"
}
table_of() {
	awk -v p="pohmelfs[$1]:" -v k="$2" '$1 == p { on = 1; next } /^pohmelfs\[/ { on = 0 }
		on && $1 == k { v = $2 } END { printf "%.0f\n", v }' "$3"
}

# fork_stats THREADED: a parent that made requests (it writes f) forks a
# child that stats f 5 times (attr_timeout=0: each asks the storage); with
# THREADED=1 a thread of the parent is alive at the fork.  Prints the
# child's pid; the tables go to $T/tables.
fork_stats() {
	POHMELFS_STATS=1 LD_PRELOAD=$PRELOAD python3 -c "
import os, sys, threading, time
open('$T/p/f', 'w').write('x' * 100)
os.stat('$T/p/f')
if $1:
    ev = threading.Event(); th = threading.Thread(target=ev.wait); th.start()
pid = os.fork()
if pid == 0:
    for i in range(5):
        os.stat('$T/p/f')
    sys.exit(0)
print(pid)
os.waitpid(pid, 0)
if $1:
    ev.set(); th.join()" 2>"$T/tables"
}

# The child's own requests: a new process making the same 5 stats
# (setup, its connection, is counted apart).
solo_stats() {
	POHMELFS_STATS=1 LD_PRELOAD=$PRELOAD python3 -c "
import os
for i in range(5):
    os.stat('$T/p/f')" 2>"$T/solo"
}

check_fork_stats() {
	local k r0 w0 child solo_r solo_w
	r0=$(counter net_requests) w0=$(counter net_waits)
	child=$(fork_stats "$1")
	# Each process reports its own calls: the total rises by the sum of
	# the tables, and no value wraps.
	for k in net_requests net_waits; do
		[ "$(table_sum $k "$T/tables")" -lt 1000 ]
	done
	[ "$(counter net_requests)" -eq $((r0 + $(table_sum net_requests "$T/tables"))) ]
	[ "$(counter net_waits)" -eq $((w0 + $(table_sum net_waits "$T/tables"))) ]
	# The child's own: exactly what a new process's 5 stats cost.
	solo_stats
	solo_r=$(table_sum net_requests "$T/solo") solo_w=$(table_sum net_waits "$T/solo")
	[ "$solo_r" -ge 5 ]
	[ "$(table_of "$child" net_requests "$T/tables")" -eq "$solo_r" ]
	[ "$(table_of "$child" net_waits "$T/tables")" -eq "$solo_w" ]
}

@test "a fork child's net counters are its own: the total never wraps" {
	check_fork_stats 0
}

@test "a threaded parent's fork child's net counters are its own" {
	check_fork_stats 1
}
