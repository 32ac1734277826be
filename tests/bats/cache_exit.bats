#!/usr/bin/env bats
# cache_exit.bats — issue 18 case 2: the output of a program that never
# closes its file the usual way (exits with the fd open, _exit, SIGKILL,
# SIGTERM, node's raw syscall(SYS_close)) reaches the storage.  A write-open
# makes the inode "open for write" (an OFD lock the kernel drops with the
# writer, core/cache/writer.c) and makes sure pohmelfsd runs whatever
# sync_on_close says; pohmelfsd pushes what the writer left.  Three groups,
# hosts a and b, a fresh cache c that must see every write (lib/hosts).

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts exit
	export POHMELFS_SYNC_TIMEOUT=0.5
	W=$B/tests/helpers/exit_writer
}

teardown() {
	stop_daemons
	cluster_stop
}

# seen_by HOST FILE TEXT: HOST (a fresh cache each time: its state is
# wiped) reads TEXT from FILE within 15 s.
seen_by() {
	local h=$1 f=$2 want=$3 got i
	for i in $(seq 60); do
		rm -rf "${T:?}/$h" "$T/$h-state" && mkdir -p "$T/$h"
		got=$(shim "$h" cat "$T/$h/$f" 2>/dev/null) && [ "$got" = "$want" ] && return 0
		sleep 0.25
	done
	echo "$h reads '$got' from $f, expected '$want'"
	return 1
}

# daemon_of HOST: the pid of the pohmelfsd serving HOST, if one runs.
daemon_of() {
	local p
	for p in $(pgrep -x pohmelfsd); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "POHMELFS_PREFIX=$T/$1" &&
			echo "$p" && return 0
	done
	return 1
}

@test "sh -c 'echo hi' > P/f reaches the storage (sync_on_close=1: no close by sh)" {
	# bash forks a child that opens f and execs sh (dash's own vfork keeps
	# the fd in the parent shell, which pushes when it restores fd 1).
	shim a bash -c "sh -c 'echo hi' > '$T/a/f'; true"
	seen_by c f hi
	# b too, which had the name before (a create pushed at open, data later).
	[ "$(shim b cat "$T/b/f")" = hi ]
}

@test "a program that write(1)s then _exit()s: its output reaches the storage" {
	shim a bash -c '"$1" exit from-exit > "$2/g"; true' sh "$W" "$T/a"
	seen_by c g from-exit
}

@test "the same without sync_on_close" {
	POHMELFS_SYNC_ON_CLOSE=0 shim a bash -c '"$1" exit no-soc > "$2/g"; true' sh "$W" "$T/a"
	seen_by c g no-soc
}

@test "a SIGKILLed writer: pohmelfsd runs while it writes, and pushes what it left" {
	shim_bg a "$W" hang "$T/a/k" killed
	local pid=$SHIM_BG_PID i
	for i in $(seq 100); do
		[ -s "$T/a/k" ] && break
		sleep 0.05
	done
	# Running whatever sync_on_close says, and staying up while a writer lives.
	for i in $(seq 40); do daemon_of a >/dev/null && break; sleep 0.1; done
	daemon_of a
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	seen_by c k killed
}

@test "a SIGTERMed writer (default action, no destructor) is pushed too" {
	shim_bg a "$W" hang "$T/a/t" termed
	local pid=$SHIM_BG_PID i
	for i in $(seq 100); do
		[ -s "$T/a/t" ] && break
		sleep 0.05
	done
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	seen_by c t termed
}

# Issue 19 item 4: the library starts pohmelfsd from someone else's
# process; once log= is set, nothing of ours may go to that process's
# stderr, and pohmelfsd's lines are in the log= file like the library's.
@test "log=: pohmelfsd, started by a host or by hand, writes its lines to the file, none to stderr" {
	export POHMELFS_LOG_LEVEL=info POHMELFS_SYNC_ON_CLOSE=0
	# Started by a host's write-open: its start line in the file.
	POHMELFS_LOG=$T/a.log shim a bash -c "echo hi > '$T/a/f'" 2>"$T/a.err"
	local d i
	for i in $(seq 100); do d=$(daemon_of a) && break; sleep 0.1; done
	for i in $(seq 100); do grep -q "pohmelfsd $d: prefix $T/a," "$T/a.log" && break; sleep 0.1; done
	cat "$T/a.log"
	grep -q "^pohmelfs\[$d\]: info: pohmelfsd $d: prefix $T/a," "$T/a.log"
	[ ! -s "$T/a.err" ]
	[ ! -e "$T/a-state/pohmelfsd.log" ]
	# Its standard streams are not the host's (a.err): /dev/null.
	[ "$(readlink "/proc/$d/fd/2")" = /dev/null ]
	[ "$(readlink "/proc/$d/fd/1")" = /dev/null ]
	seen_by c f hi
	# By hand in the foreground: log= too, not the terminal's stderr.
	POHMELFS_LOG=$T/b.log POHMELFS_PREFIX=$T/b POHMELFS_CACHE_DIR=$T/b-state POHMELFS_HOST_ID=b \
		"$B/pohmelfsd" --once 3>&- 2>"$T/b.err"
	cat "$T/b.err"
	[ ! -s "$T/b.err" ]
	grep -q ": info: pohmelfsd [0-9]*: prefix $T/b," "$T/b.log"
	# A log= that cannot be opened: the library drops its lines, the
	# daemon writes into its own pohmelfsd.log, saying why.
	POHMELFS_LOG=$T/none/x.log shim b bash -c "echo hi > '$T/b/g'" 2>"$T/b.err"
	for i in $(seq 100); do grep -qs "log=$T/none/x.log: No such file" "$T/b-state/pohmelfsd.log" && break; sleep 0.1; done
	cat "$T/b-state/pohmelfsd.log"
	grep -q "log=$T/none/x.log: No such file or directory; logging to pohmelfsd.log" "$T/b-state/pohmelfsd.log"
	grep -q ": info: pohmelfsd [0-9]*: prefix $T/b," "$T/b-state/pohmelfsd.log"
	[ ! -s "$T/b.err" ]
	[ ! -e "$T/none" ]
}

@test "1500 writes closed with syscall(SYS_close) under ulimit -n 1024: no fd leak, all pushed" {
	shim a mkdir "$T/a/n"
	run shim a bash -c 'ulimit -n 1024 && exec "$1" rawclose "$2" 1500' sh "$W" "$T/a/n"
	echo "$output"
	[ "$status" -eq 0 ]
	# The program's own 3 and the library's few: not one per write.
	local fds=${output##*fds }
	[ "$fds" -lt 64 ]
	seen_by c n/f1499 f1499
	seen_by c n/f777 f777
	seen_by c n/f0 f0
}

@test "an exec'd image adopts the open-for-write lock it inherits: its own close ends it" {
	# bash opens x on fd 3 (inheritable), writes, and execs a program that
	# closes fd 3 later and goes on living.
	shim_bg a bash -c 'exec 3>"$1/x" && echo data >&3 && exec "$2" closewait 3 "$3"' \
		sh "$T/a" "$W" "$T/go" >"$T/out"
	local pid=$SHIM_BG_PID i ino
	for i in $(seq 100); do grep -q started "$T/out" && break; sleep 0.05; done
	ino=$(shim a stat -c %i "$T/a/x")
	[ "$(wlock_state a "$ino")" = held ]
	touch "$T/go"
	for i in $(seq 100); do grep -q closed "$T/out" && break; sleep 0.05; done
	grep -q closed "$T/out"
	[ "$(wlock_state a "$ino")" = free ]
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	seen_by c x data
	# The hand-over variable is the library's: the program never sees it.
	run shim a bash -c 'exec 3>"$1/y" && exec env' sh "$T/a"
	[ "$status" -eq 0 ]
	! grep -q POHMELFS_WLOCKS <<<"$output" || false
}

@test "pohmelfsd stays up while a file is open for write, however idle, and leaves after the writer" {
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a \
		"$B/pohmelfsd" --foreground --idle 1 3>&- 2>"$T/d.log" &
	local d=$! i
	for i in $(seq 100); do [ -s "$T/a-state/pohmelfsd.pid" ] && break; sleep 0.05; done
	[ "$(cat "$T/a-state/pohmelfsd.pid")" = "$d" ]
	shim_bg a "$W" hang "$T/a/s" stay
	local pid=$SHIM_BG_PID
	for i in $(seq 100); do [ -s "$T/a/s" ] && break; sleep 0.05; done
	sleep 3		# three idle periods (its one push of s was at the first round)
	kill -0 "$d"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	seen_by c s stay
	for i in $(seq 100); do kill -0 "$d" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$d" 2>/dev/null || false
	[ ! -e "$T/a-state/pohmelfsd.pid" ]
}

# pushes_of HOST: the pushes counted in HOST's cache (every process's, pohmelfsd's too).
pushes_of() {
	shim "$1" "$B/pohmelfs" --json stats |
		python3 -c "import json,sys; print(json.load(sys.stdin)['counters']['pushes'])"
}

@test "pohmelfsd leaves a file that is being written to its writer: one push, of the whole file" {
	export POHMELFS_SYNC_ON_CLOSE=0 POHMELFS_SYNC_TIMEOUT=1
	# A line every 0.1 s for 2.5 s: with a round every second, pohmelfsd
	# used to push 3 or 4 half-written states (its first round came as the
	# write-open started it).  The file changes within every period: it is
	# left to its writer, and pushed once the writer is gone.
	shim a bash -c 'exec 3>"$1"; for i in $(seq 25); do echo "line $i" >&3; sleep 0.1; done' sh "$T/a/busy"
	seen_by c busy "$(seq 25 | sed 's/^/line /')"
	local n
	n=$(pushes_of a)
	echo "pushes: $n"
	[ "$n" -ge 1 ]
	[ "$n" -le 2 ]		# 2: a writer stalled a whole second by the load
}

@test "a writer that keeps its file busy still has it pushed every 4 periods (a host crash loses at most that)" {
	export POHMELFS_SYNC_ON_CLOSE=0 POHMELFS_SYNC_TIMEOUT=1
	shim_bg a bash -c 'exec 3>"$1"; for i in $(seq 100); do echo "line $i" >&3; sleep 0.1; done' sh "$T/a/steady"
	local pid=$SHIM_BG_PID got i
	# Within 4 periods and a round (5 s) and some slack, a snapshot while it writes.
	for i in $(seq 80); do
		rm -rf "${T:?}/c" "$T/c-state" && mkdir -p "$T/c"
		got=$(shim c cat "$T/c/steady" 2>/dev/null) || got=
		[ -n "$got" ] && break
		sleep 0.1
	done
	kill -0 "$pid"		# still writing
	[ -n "$got" ]
	[[ $got == "line 1"* ]]
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}
