#!/usr/bin/env bats
# net_routefile.bats — cache_dir/routes (decision 0074): a new process takes
# the route table the cache's last full refresh saw, skips ROUTE_LIST and
# sends its handshakes ahead of its first requests; a wrong, stale or
# foreign table still works (a -95 or a failed connect leads to a full
# refresh, and the next process takes the corrected file).

bats_require_minimum_version 1.5.0

setup() {
	load lib/common
	load lib/cluster
	preload_ok || skip "LD_PRELOAD does not work here"
	case $BATS_TEST_DESCRIPTION in
	"one group"*) cluster_start "$BATS_TEST_NAME" --groups 1 --nodes-per-group 2 --nosync ;;
	*) cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync ;;
	esac
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=rt-$RANDOM POHMELFS_PREFIX=$T/p POHMELFS_CACHE_DIR=$T/state
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	mkdir -p "$T/p"
}

teardown() {
	[ -f "$T/state/pohmelfsd.pid" ] && kill "$(cat "$T/state/pohmelfsd.pid")" 2>/dev/null
	cluster_stop
}

# net NAME: the value of counter NAME in the last run's stderr table (0 if absent).
net() {
	local v
	v=$(printf '%s\n' "$stderr" | awk -v k="$1" '$1 == k { print $2; exit }')
	echo "${v:-0}"
}

# shim_run CMD...: CMD under the shim with stats=1 (run's output and stderr kept).
shim_run() { run --separate-stderr env LD_PRELOAD=$PRELOAD POHMELFS_STATS=1 "$@"; }

# routes_edit ACTION: rewrite $T/state/routes (format 1) and its sum.
#   swap   the two nodes' backends exchanged (every key of both groups routed
#          to the node of the other group)
#   old    written 61 s ago
#   dead   the first node's port moved to one where nothing listens
routes_edit() {
	python3 - "$T/state/routes" "$1" "$(cluster_addr 1-1)" <<'PY'
import struct, sys, time
path, action, addr1 = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(path, "rb").read())
def fnv(d):
    h = 0xcbf29ce484222325
    for x in d:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h
assert b[:8] == b"POHMRTBL" and fnv(b[:-8]) == struct.unpack("<Q", b[-8:])[0]
assert struct.unpack_from("<I", b, 8)[0] == 1
count = struct.unpack_from("<I", b, 32)[0]
nodes, off = [], 36
for i in range(count):
    n = struct.unpack_from("<I", b, off + 48)[0]
    nodes.append([bytes(b[off:off + 52]), bytes(b[off + 52:off + 52 + n])])
    off += 52 + n
assert off == len(b) - 8 and count == 2
if action == "swap":
    nodes[0][1], nodes[1][1] = nodes[1][1], nodes[0][1]
    for nd in nodes:
        nd[0] = nd[0][:48] + struct.pack("<I", len(nd[1]))
elif action == "old":
    struct.pack_into("<Q", b, 16, time.time_ns() - 61 * 10**9)
elif action == "dead":
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    h = bytearray(nodes[0][0])
    h[2:4] = struct.pack(">H", port)
    nodes[0][0] = bytes(h)
out = bytearray(b[:36])
for h, ids in nodes:
    out += h + ids
out += struct.pack("<Q", fnv(out))
open(path, "wb").write(out)
PY
}

@test "a second process takes the cache's route table: no setup wait" {
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# the first one: handshake, ROUTE_LIST
	[ -s "$T/state/routes" ]
	shim_run touch "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -eq 0 ]
	[ "$(net net_waits)" -ge 1 ]
	# A cat whose validation expired: its one lookup is its only wait.
	shim_run cat "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -eq 0 ]
	[ "$(net net_waits)" -eq 1 ]
	# Another cache (another host) sees both files.
	run env LD_PRELOAD=$PRELOAD POHMELFS_CACHE_DIR=$T/state2 POHMELFS_PREFIX=$T/p2 \
		ls "$T/p2"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb')" ]
}

@test "a wrong table: the nodes refuse (-95), a full refresh, the operation succeeds" {
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	[ -s "$T/state/routes" ]
	routes_edit swap
	echo hello >"$T/hello"
	echo again >"$T/again"
	shim_run cp "$T/hello" "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# the refresh after the -95
	# The full refresh wrote a table that routes right again: the next
	# process takes it and waits for no setup.
	shim_run cp "$T/again" "$T/p/c"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -eq 0 ]
	run env LD_PRELOAD=$PRELOAD POHMELFS_CACHE_DIR=$T/state2 POHMELFS_PREFIX=$T/p2 \
		cat "$T/p2/b" "$T/p2/c"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'hello\nagain')" ]
}

# Both nodes in the right group, each given the other's ids: every key
# goes to the node that does not own it, which refuses it (-95).
@test "one group of two nodes, their ids swapped in the table: writes and reads right" {
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	routes_edit swap
	mkdir -m 700 "$T/state3"
	cp -p "$T/state/routes" "$T/state3/routes"	# for the reads below
	mkdir "$T/src"
	for i in 1 2 3 4 5 6 7 8; do echo "data $i" >"$T/src/f$i"; done
	shim_run cp "$T"/src/f? "$T/p/"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# the -95's full refresh
	# A fresh cache whose table is the swapped one reads every file right.
	shim_run env POHMELFS_CACHE_DIR=$T/state3 POHMELFS_PREFIX=$T/p3 cat "$T"/p3/f1 \
		"$T"/p3/f2 "$T"/p3/f3 "$T"/p3/f4 "$T"/p3/f5 "$T"/p3/f6 "$T"/p3/f7 "$T"/p3/f8
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$T"/src/f?)" ]
	[ "$(net net_setup_waits)" -ge 1 ]
	run env LD_PRELOAD=$PRELOAD POHMELFS_CACHE_DIR=$T/state2 POHMELFS_PREFIX=$T/p2 \
		cat "$T/p2/f1" "$T/p2/f8"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'data 1\ndata 8')" ]
}

@test "a table older than a minute is not taken; a node of the table gone: full refresh" {
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	routes_edit old
	shim_run touch "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# ROUTE_LIST again
	shim_run touch "$T/p/c"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -eq 0 ]	# the file it wrote is fresh
	# A node of the table where nothing listens: not taken, the full
	# refresh finds the real nodes.
	routes_edit dead
	shim_run touch "$T/p/d"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]
	run env LD_PRELOAD=$PRELOAD POHMELFS_CACHE_DIR=$T/state2 POHMELFS_PREFIX=$T/p2 \
		ls "$T/p2"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb\nc\nd')" ]
}

@test "a damaged or foreign table is ignored" {
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	printf 'garbage' >"$T/state/routes"
	shim_run touch "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]
	# Written under other servers (the same nodes, named in another
	# order): another configuration, not taken.
	shim_run env POHMELFS_SERVERS="$(echo "$POHMELFS_SERVERS" | awk -F, '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? "," : "") }')" \
		touch "$T/p/c"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]
	shim_run touch "$T/p/d"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]
}

# plant_links: a link to $T/victim at every name a table's temporary may
# take in the next 3000 process ids: state/tmp/routes.PID, and the
# state/routes.tmp.PID a first version used (one process: the ids stay free).
plant_links() {
	python3 - "$T" <<'PY'
import os, sys
t = sys.argv[1]
last = int(open("/proc/sys/kernel/ns_last_pid").read())
top = int(open("/proc/sys/kernel/pid_max").read())
for i in range(1, 3001):
    pid = (last + i) % top
    for name in ("%s/state/tmp/routes.%d" % (t, pid), "%s/state/routes.tmp.%d" % (t, pid)):
        if os.path.lexists(name):
            os.unlink(name)
        os.symlink(t + "/victim", name)
PY
}

@test "links planted at the temporary's name and at routes are not followed" {
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	echo victim >"$T/victim"
	plant_links
	rm -f "$T/state/routes"
	ln -s "$T/victim" "$T/state/routes"
	shim_run touch "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# the link is not read as a table
	[ "$(cat "$T/victim")" = victim ]
	[ -f "$T/state/routes" ] && [ ! -L "$T/state/routes" ]	# renamed over the link
	shim_run touch "$T/p/c"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -eq 0 ]	# the table it wrote is taken
	[ "$(cat "$T/victim")" = victim ]
}

@test "a table not the process's alone is ignored; none in a cache_dir it does not own" {
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	[ "$(id -u)" -eq 0 ] || skip "chown needs root"
	shim_run touch "$T/p/a"
	[ "$status" -eq 0 ]
	chown nobody "$T/state/routes"
	shim_run touch "$T/p/b"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# another user's: not taken
	[ "$(stat -c %u "$T/state/routes")" -eq 0 ]	# rewritten by the refresh
	chmod g+w "$T/state/routes"
	shim_run touch "$T/p/c"
	[ "$status" -eq 0 ]
	[ "$(net net_setup_waits)" -ge 1 ]	# group-writable: not taken
	# Root in a cache_dir another user owns: no table written there.
	rm -f "$T/state/routes"
	chown nobody "$T/state"
	shim_run touch "$T/p/d"
	[ "$status" -eq 0 ]
	[ ! -e "$T/state/routes" ]
	chown 0 "$T/state"
	run env LD_PRELOAD=$PRELOAD POHMELFS_CACHE_DIR=$T/state2 POHMELFS_PREFIX=$T/p2 \
		ls "$T/p2"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb\nc\nd')" ]
}
