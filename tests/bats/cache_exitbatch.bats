#!/usr/bin/env bats
# cache_exitbatch.bats — an exit's pushes go out together (issue 23,
# decision 0057: core/cache/push.c pohm_cache_push_fds, core/ns/nsdata.c
# pohm_ns_commit_map_n), and every push's rules still hold for each file
# of the batch: a file another host changed meanwhile becomes a conflict
# copy while the others commit; with the storage down every file stays
# dirty and is pushed later; a big file (chunks) rides with small ones.
# Two groups, hosts a and b (lib/hosts), sync_on_close=0 for the writer.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	PY=$(command -v python3) || skip "python3 is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=exitb-$RANDOM
	export POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_TIMEOUT=600
	mkdir -p "$T/a" "$T/b" "$T/c"
	shim a mkdir -p "$T/a/d"
}

teardown() {
	stop_daemons
	cluster_stop
}

# A writer on host a: writes each file named ARG=TEXT (TEXT repeated to 2
# KiB), then waits (at most 60 s) for $T/go before it exits, sync_on_close=0.
WRITER='
import os, sys, time
go = sys.argv[1]
for a in sys.argv[2:]:
    p, t = a.split("=", 1)
    with open(p, "wb") as f:
        f.write((t * 2048)[:2048].encode() if t != "BIG" else os.urandom(3 * 1048576 + 5))
open(go + ".ready", "w").close()
for i in range(600):
    if os.path.exists(go):
        break
    time.sleep(0.1)
'

# start_writer ARGS...: the writer in the background, once it has written.
start_writer() {
	rm -f "$T/go" "$T/go.ready"
	POHMELFS_SYNC_ON_CLOSE=0 shim_bg a "$PY" -c "$WRITER" "$T/go" "$@"
	local i
	for i in $(seq 300); do [ -e "$T/go.ready" ] && return 0; sleep 0.1; done
	echo "the writer did not get ready"
	return 1
}

# finish_writer: let it exit (its exit pushes), and wait for it.
finish_writer() {
	touch "$T/go"
	wait "$SHIM_BG_PID"
}

# fresh HOST FILE: FILE as a fresh cache of HOST reads it.
fresh() {
	rm -rf "${T:?}/$1" "$T/$1-state" && mkdir -p "$T/$1"
	shim "$1" cat "$T/$1/$2"
}

# no_daemons: stop every pohmelfsd of the test and wait (10 s at most)
# until none is left.
no_daemons() {
	local i p left
	for i in $(seq 100); do
		stop_daemons
		left=
		for p in $(pgrep -x pohmelfsd); do
			tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -q "^POHMELFS_PREFIX=$T/" && left=1
		done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "a pohmelfsd of the test is still running"
	return 1
}

# dirty_of HOST: the cache's dirty count (`pohmelfs status --json`).
dirty_of() {
	POHMELFS_PREFIX=$T/$1 POHMELFS_CACHE_DIR=$T/$1-state POHMELFS_HOST_ID=$1 \
		"$B/pohmelfs" status --json | "$PY" -c '
import json, sys
print(json.load(sys.stdin)["cache"]["dirty"])'
}

@test "one file of the exit's batch changed on another host: its copy is a conflict copy, the others commit" {
	local i
	for i in 1 2 3 4 5; do shim a sh -c "echo 0 > '$T/a/d/f$i'"; done
	start_writer "$T/a/d/f1=a" "$T/a/d/f2=a" "$T/a/d/f3=a" "$T/a/d/f4=a" "$T/a/d/f5=a"
	# b commits f3 while a's copy waits for a's exit.
	POHMELFS_SYNC_ON_CLOSE=1 shim b sh -c "echo from-b > '$T/b/d/f3'"
	finish_writer
	for i in 1 2 4 5; do
		[ "$(fresh c "d/f$i" | head -c 4)" = aaaa ]
		[ "$(fresh c "d/f$i" | wc -c)" -eq 2048 ]
	done
	[ "$(fresh c d/f3)" = from-b ]
	run shim c find "$T/c/.pohmelfs-conflicts/a" -type f
	echo "$output"
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == */f3.* ]]
	[ "$(shim c head -c 4 "${lines[0]}")" = aaaa ]
	[ "$(dirty_of a)" -eq 0 ]
}

# A writer that creates its files (the storage must be up: a create goes
# to it at once), waits for $T/go.1, writes them (closes without
# sync_on_close: left for its exit), then waits for $T/go as WRITER does.
WRITER2='
import os, sys, time
go, names = sys.argv[1], sys.argv[2:]
def wait(p):
    for i in range(600):
        if os.path.exists(p):
            return
        time.sleep(0.1)
for p in names:
    open(p, "wb").close()
open(go + ".created", "w").close()
wait(go + ".1")
for p in names:
    with open(p, "wb") as f:
        f.write((os.path.basename(p) * 2048)[:2048].encode())
open(go + ".ready", "w").close()
wait(go)
'

# The writes happen with the storage down, so neither the pohmelfsd the
# closes start nor the exit can push them: all 20 are dirty after the exit.
@test "the storage down at exit: every file of the batch stays dirty, and is pushed once it is back" {
	local i names=()
	for i in $(seq 1 20); do names+=("$T/a/d/g$i"); done
	rm -f "$T/go" "$T/go.1" "$T/go.created" "$T/go.ready"
	POHMELFS_SYNC_ON_CLOSE=0 shim_bg a "$PY" -c "$WRITER2" "$T/go" "${names[@]}"
	for i in $(seq 300); do [ -e "$T/go.created" ] && break; sleep 0.1; done
	[ -e "$T/go.created" ]
	cluster_kill 1-1
	cluster_kill 2-1
	touch "$T/go.1"
	for i in $(seq 300); do [ -e "$T/go.ready" ] && break; sleep 0.1; done
	[ -e "$T/go.ready" ]
	finish_writer
	no_daemons
	# (status asks the storage too: counted once it is back, before any push.)
	cluster_start_node 1-1
	cluster_start_node 2-1
	[ "$(dirty_of a)" -eq 20 ]
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a \
		timeout -k 5 120 "$B/pohmelfs" sync
	[ "$(dirty_of a)" -eq 0 ]
	for i in 1 7 20; do
		[ "$(fresh c "d/g$i" | head -c 4)" = "$(printf "g%sg%s" "$i" "$i" | head -c 4)" ]
		[ "$(fresh c "d/g$i" | wc -c)" -eq 2048 ]
	done
}

@test "a big file among small ones in one exit: all of them whole on a fresh host" {
	local i args=()
	for i in $(seq 1 30); do args+=("$T/a/d/s$i=s$i."); done
	args+=("$T/a/d/big=BIG")
	start_writer "${args[@]}"
	sha256sum <"$T/a/d/big" >"$T/big.sum"
	finish_writer
	[ "$(dirty_of a)" -eq 0 ]
	fresh c d/big | sha256sum | cmp - "$T/big.sum"
	for i in 1 15 30; do
		[ "$(fresh c "d/s$i" | wc -c)" -eq 2048 ]
	done
}
