#!/usr/bin/env bats
# cache_defaults.bats — the DEFAULT configuration end to end (DESIGN.md §2,
# the consistency contract): sync_on_close=0, attr_timeout=1, sync_timeout=5.
# No test here sets SYNC_ON_CLOSE, ATTR_TIMEOUT or SYNC_TIMEOUT, and none runs
# `pohmelfs sync`: what reaches host b got there by the push at exit of the
# writer, by the pohmelfsd the shim started, or not at all.
#
# Promises checked (DESIGN.md §2):
#   - a closed file reaches the storage when the writing process exits;
#   - ... or within sync_timeout from pohmelfsd, started on demand by the shim
#     (detached: own session, stdio on /dev/null, no inherited fds, so
#     $(cmd) never waits), which exits when idle;
#   - an open more than attr_timeout after the push sees the file whole;
#   - namespace changes are visible to other hosts after attr_timeout.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	unset POHMELFS_SYNC_ON_CLOSE POHMELFS_ATTR_TIMEOUT POHMELFS_SYNC_TIMEOUT
	: >"$T/empty.conf"	# no /etc or ~/.config file may change the defaults
	export POHMELFS_CONFIG=$T/empty.conf POHMELFS_FSID=defaults-$RANDOM
	mkdir -p "$T/a" "$T/b"
}

teardown() {
	[ -n "${WRITER:-}" ] && kill -KILL "$WRITER" 2>/dev/null
	stop_daemons
	cluster_stop
}

# daemon_of HOST: the pid of the running pohmelfsd of HOST's cache, or nothing.
daemon_of() {
	local p
	for p in $(pgrep -x pohmelfsd); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "POHMELFS_PREFIX=$T/$1" &&
			echo "$p"
	done
	return 0
}

# daemon_up HOST: true once HOST's pohmelfsd runs (for until_true, which
# must call the check each time, not a value computed once).
daemon_up() {
	[ -n "$(daemon_of "$1")" ]
}

# b_reads FILE TEXT: host b (a new process) reads FILE and finds TEXT.
b_reads() {
	[ "$(shim b timeout 30 cat "$T/b/$1" 2>/dev/null)" = "$2" ]
}

@test "defaults: a process that writes and exits pushes at exit (no pohmelfsd, no pohmelfs sync)" {
	# A copy of the library with no pohmelfsd beside it: the shim cannot
	# start one, so only the push at exit can bring the data to host b.
	mkdir -p "$T/lib"
	cp "$LIB" "$T/lib/libpohmelfs.so"
	NODAEMON=${PRELOAD%"$LIB"}$T/lib/libpohmelfs.so
	nodaemon() {
		LD_PRELOAD=$NODAEMON POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state \
			POHMELFS_HOST_ID=a timeout 60 "$@"
	}
	nodaemon bash -c "echo 'version one' > '$T/a/f'"
	[ -z "$(daemon_of a)" ]
	run b_reads f "version one"
	[ "$status" -eq 0 ]
	# Host b has read it; a new version reaches b once attr_timeout passed.
	nodaemon bash -c "echo 'version two' > '$T/a/f'"
	sleep 1.5
	run b_reads f "version two"
	[ "$status" -eq 0 ]
	# Another kind of writer: a program that writes through stdio and exits.
	head -c 3000000 /dev/urandom >"$T/big"
	nodaemon python3 -c "
import shutil, sys
with open(sys.argv[1], 'rb') as s, open(sys.argv[2], 'wb') as d:
    shutil.copyfileobj(s, d)" "$T/big" "$T/a/big"
	[ -z "$(daemon_of a)" ]
	sleep 1.2
	[ "$(shim b timeout 30 md5sum "$T/b/big" | cut -d' ' -f1)" = "$(md5sum <"$T/big" | cut -d' ' -f1)" ]
}

@test "defaults: a writer that keeps running is pushed within sync_timeout by the pohmelfsd the shim started" {
	[ -z "$(daemon_of a)" ]
	# A long-lived writer: writes, closes, sleeps.  It is killed with SIGKILL
	# at the end, so nothing it does at exit can push.
	marker=$T/marker
	: >"$marker"
	shim_bg a python3 -c "
import os, sys, time
keep = os.open(sys.argv[2], os.O_RDONLY)      # an fd pohmelfsd must not inherit
os.set_inheritable(keep, True)
with open(sys.argv[1], 'w') as f:
    f.write('pushed by the daemon\n')
print('written', flush=True)
time.sleep(120)" "$T/a/g" "$marker" >"$T/writer.out" 2>&1
	WRITER=$SHIM_BG_PID
	until_true 30 grep -q written "$T/writer.out"
	t0=$(date +%s)
	# The shim started pohmelfsd for cache a at the close.
	until_true 15 daemon_up a
	d=$(daemon_of a)
	[ "$(echo "$d" | wc -w)" -eq 1 ]
	[ "$(cat "$T/a-state/pohmelfsd.pid")" = "$d" ]
	# Detached: not the writer's child, its own session, stdio on /dev/null,
	# none of the writer's fds, no LD_PRELOAD.
	[ "$(awk '/^PPid:/ { print $2 }' "/proc/$d/status")" != "$WRITER" ]
	[ "$(ps -o sid= -p "$d" | tr -d ' ')" = "$d" ]
	[ "$(readlink "/proc/$d/fd/0")" = /dev/null ]
	[ "$(readlink "/proc/$d/fd/1")" = /dev/null ]
	! ls -l "/proc/$d/fd/" | grep -q "$marker" || false
	! tr '\0' '\n' <"/proc/$d/environ" | grep -q '^LD_PRELOAD=' || false
	# Host b sees the data while the writer still runs: within sync_timeout
	# (5 s) plus attr_timeout, with a margin for a busy machine.
	until_true 25 b_reads g "pushed by the daemon"
	echo "# reached host b after $(($(date +%s) - t0)) s" >&3
	kill -0 "$WRITER"
	kill -KILL "$WRITER"
	wait "$WRITER" 2>/dev/null || true
	WRITER=
}

@test "defaults: \$(cmd) of a writer returns at once although it starts pohmelfsd" {
	t0=$(date +%s%N)
	out=$(shim a timeout 60 bash -c "echo data > '$T/a/h'; echo done")
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "# \$(cmd) took $ms ms" >&3
	[ "$out" = done ]
	[ "$ms" -lt 20000 ]
	until_true 15 daemon_up a
	run b_reads h data
	[ "$status" -eq 0 ]
}

@test "defaults: the pohmelfsd the shim started exits when idle (60 s)" {
	shim a timeout 60 bash -c "echo data > '$T/a/i'; sleep 1"
	until_true 15 daemon_up a
	d=$(daemon_of a)
	run b_reads i data
	[ "$status" -eq 0 ]
	# Idle (--idle default 60 s, checked every sync_timeout 5 s): it leaves
	# by itself and removes its pid file.
	until_true 100 bash -c "! kill -0 $d 2>/dev/null"
	[ ! -f "$T/a-state/pohmelfsd.pid" ]
	# A later write starts a new one.
	shim a timeout 60 bash -c "echo again > '$T/a/i'"
	until_true 15 daemon_up a
	sleep 1.2
	run b_reads i again
	[ "$status" -eq 0 ]
}

@test "defaults: close-to-open: after attr_timeout host b reads the new version whole" {
	head -c 2500000 /dev/urandom >"$T/v1"
	head -c 2600000 /dev/urandom >"$T/v2"
	shim a timeout 60 cp "$T/v1" "$T/a/data"
	[ "$(shim b timeout 30 md5sum "$T/b/data" | cut -d' ' -f1)" = "$(md5sum <"$T/v1" | cut -d' ' -f1)" ]
	shim a timeout 60 cp "$T/v2" "$T/a/data"
	# Within attr_timeout b may still serve its cached copy, but whole:
	# one version or the other, never a mix (nothing more is promised).
	now=$(shim b timeout 30 md5sum "$T/b/data" | cut -d' ' -f1)
	[ "$now" = "$(md5sum <"$T/v1" | cut -d' ' -f1)" ] || [ "$now" = "$(md5sum <"$T/v2" | cut -d' ' -f1)" ]
	sleep 1.5
	[ "$(shim b timeout 30 md5sum "$T/b/data" | cut -d' ' -f1)" = "$(md5sum <"$T/v2" | cut -d' ' -f1)" ]
	[ "$(shim b stat -c %s "$T/b/data")" = 2600000 ]
}

@test "defaults: close-to-open in a long-running process of host b" {
	shim a timeout 60 bash -c "echo one > '$T/a/f'"
	# One process of b opens the file, then (told by a flag) again after
	# the change plus attr_timeout: its recently-validated table must expire.
	shim b timeout 90 python3 -c "
import os, sys, time
p, flag = sys.argv[1], sys.argv[2]
print(open(p).read().strip(), flush=True)
while not os.path.exists(flag):
    time.sleep(0.05)
print(open(p).read().strip(), flush=True)" "$T/b/f" "$T/flag" >"$T/b.out" 2>&1 &
	reader=$!
	until_true 30 grep -q one "$T/b.out"
	shim a timeout 60 bash -c "echo two > '$T/a/f'"
	sleep 1.5
	touch "$T/flag"
	wait "$reader"
	cat "$T/b.out"
	[ "$(cat "$T/b.out")" = "$(printf 'one\ntwo')" ]
}

@test "defaults: rename, unlink and mkdir on host a are visible on host b after attr_timeout" {
	shim a timeout 60 bash -c "mkdir '$T/a/d' && echo keep > '$T/a/d/old' && echo gone > '$T/a/d/victim'"
	# b lists and reads everything, so it has it all cached.
	[ "$(shim b timeout 30 ls "$T/b/d" | tr '\n' ' ')" = "old victim " ]
	[ "$(shim b timeout 30 cat "$T/b/d/old" "$T/b/d/victim" | tr '\n' ' ')" = "keep gone " ]
	# b keeps a process that looks again once told to.
	shim b timeout 90 python3 -c "
import os, sys, time
d, flag = sys.argv[1], sys.argv[2]
print(sorted(os.listdir(d)), flush=True)
while not os.path.exists(flag):
    time.sleep(0.05)
print(sorted(os.listdir(d)), flush=True)
print(open(d + '/new').read().strip(), os.path.isdir(d + '/sub'), flush=True)" "$T/b/d" "$T/flag" >"$T/b.out" 2>&1 &
	reader=$!
	until_true 30 grep -q victim "$T/b.out"
	shim a timeout 60 bash -c "mv '$T/a/d/old' '$T/a/d/new' && rm '$T/a/d/victim' && mkdir '$T/a/d/sub'"
	sleep 1.5
	touch "$T/flag"
	wait "$reader"
	cat "$T/b.out"
	# New processes of b: a listing, then each name.
	listing=$(shim b timeout 30 ls "$T/b/d" 2>&1 | tr '\n' ' ')
	echo "listing on b: $listing"
	[ "$(shim b timeout 30 cat "$T/b/d/new")" = keep ]
	shim b timeout 30 test -d "$T/b/d/sub"
	[ "$(sed -n 3p "$T/b.out")" = "keep True" ]
	old=0 victim=0
	shim b timeout 30 stat "$T/b/d/old" >/dev/null 2>&1 && old=1
	shim b timeout 30 stat "$T/b/d/victim" >/dev/null 2>&1 && victim=1
	echo "old still there: $old, victim still there: $victim"
	[ "$listing" = "new sub " ]
	[ $old = 0 ]
	[ $victim = 0 ]
	[ "$(sed -n 2p "$T/b.out")" = "['new', 'sub']" ]
}

@test "defaults: a file unlinked on host a disappears from host b's listing after attr_timeout" {
	shim a timeout 60 bash -c "mkdir '$T/a/e' && echo x > '$T/a/e/one' && echo y > '$T/a/e/two'"
	[ "$(shim b timeout 30 ls "$T/b/e" | tr '\n' ' ')" = "one two " ]
	shim a timeout 60 rm "$T/a/e/one"
	sleep 1.5
	listing=$(shim b timeout 30 ls "$T/b/e" 2>&1 | tr '\n' ' ')
	echo "listing on b: $listing"
	[ "$listing" = "two " ]
}
