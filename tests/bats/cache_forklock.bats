#!/usr/bin/env bats
# cache_forklock.bats — a single-threaded process's fork child and the lock
# files' descriptions its parent keeps (decisions 0065, 0066 and their
# session-16 corrections; doc/notes-s16-forkfix.md).  The child of such a
# fork resets core/mount only at its first use of the storage, and write(2)
# is not interposed: the parent must neither release a lock the child
# shares (its close of a writer that existed at the fork) nor lock a kept
# description the child still holds a copy of.  (From the session-16
# review's reproducers.)
setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts forklock-$RANDOM
	export POHMELFS_SYNC_TIMEOUT=0.5
}

teardown() {
	stop_daemons
	cluster_stop
}

# lock_after_close NAME: once the background program (SHIM_BG_PID) has
# printed "closed" to $T/out, the state of host a's w.lock byte of $T/a/NAME
# in LOCK_ST (lib/hosts wlock_state); then lets it go on ($T/go) and waits
# for it (in this shell: it is this shell's child).
lock_after_close() {
	local pid=$SHIM_BG_PID i
	for i in $(seq 100); do grep -q closed "$T/out" && break; sleep 0.05; done
	grep -q closed "$T/out"
	LOCK_ST=$(wlock_state a "$(shim a stat -c %i "$T/a/$1")")
	touch "$T/go"
	wait "$pid" || true
}

@test "a fork child still writing holds the open-for-write lock after its parent's close" {
	shim_bg a python3 -c '
import os, sys, time
f = open(sys.argv[1], "w"); f.write("a\n"); f.flush()   # O_CLOEXEC (PEP 446)
pid = os.fork()
if pid == 0:
    while not os.path.exists(sys.argv[2]): time.sleep(0.05)
    os.write(f.fileno(), b"b\n"); os._exit(0)
f.close()
print("closed", flush=True)
os.waitpid(pid, 0)' "$T/a/x" "$T/go" >"$T/out"
	lock_after_close x
	echo "lock while the child writes: $LOCK_ST"
	[ "$LOCK_ST" = held ]
}

@test "an inheritable writer's lock is gone at its close while an earlier fork child lives" {
	shim_bg a python3 -c '
import ctypes, os, sys, time
f = open(sys.argv[1], "w"); f.write("a\n"); f.close()   # a kept w.lock description now
pid = os.fork()
if pid == 0:
    while not os.path.exists(sys.argv[3]): time.sleep(0.05)
    os._exit(0)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.open(sys.argv[2].encode(), os.O_WRONLY | os.O_CREAT, 0o644)   # no O_CLOEXEC: keep
assert fd >= 0
os.write(fd, b"b\n"); os.close(fd)
print("closed", flush=True)
os.waitpid(pid, 0)' "$T/a/x1" "$T/a/x2" "$T/go" >"$T/out"
	lock_after_close x2
	echo "x2's lock after its only writer closed: $LOCK_ST"
	[ "$LOCK_ST" = free ]
}

@test "data loss: a refresh replaces the file a fork child still writes" {
	shim a sh -c 'echo 0 > "$1/x"' sh "$T/a"
	shim b cat "$T/b/x" >/dev/null
	shim_bg a python3 -c '
import os, sys, time
f = open(sys.argv[1], "a"); f.write("a\n"); f.flush()
pid = os.fork()
if pid == 0:
    while not os.path.exists(sys.argv[2]): time.sleep(0.05)
    os.write(f.fileno(), b"child\n"); sys.exit(0)
f.close()
print("closed", flush=True)
os.waitpid(pid, 0)' "$T/a/x" "$T/go" >"$T/out"
	local pid=$SHIM_BG_PID i
	for i in $(seq 100); do grep -q closed "$T/out" && break; sleep 0.05; done
	grep -q closed "$T/out"
	sleep 1.2
	shim b sh -c 'echo B > "$1/x"' sh "$T/b"
	sleep 1.2
	echo "a reads: $(shim a cat "$T/a/x")"
	touch "$T/go"
	wait "$pid" || true
	sleep 2
	rm -rf "${T:?}/c" "$T/c-state"; mkdir -p "$T/c"
	echo "c reads x: $(shim c cat "$T/c/x")"
	found=$( (shim c cat "$T/c/x"; for f in $(shim c find "$T/c/.pohmelfs-conflicts" -type f 2>/dev/null); do shim c cat "$f"; done) | grep -c child || true)
	echo "child line seen: $found"
	[ "$found" -ge 1 ]
}
