#!/usr/bin/env bats
# ux_cluster.bats — pohmelfs-cluster as a user meets it (issue 21, item 6):
# --help, usage errors with exit 2, a mistyped directory that is refused
# and never created, a failed start that removes what it made, and a
# restart that keeps the ports an exported POHMELFS_SERVERS names (new ones
# only for a port someone else took, said on stderr).

bats_require_minimum_version 1.5.0

setup() {
	load lib/common
	load lib/cluster
	T=$BATS_TEST_TMPDIR
	C=$CLUSTER_BIN
	SQUAT=
}

teardown() {
	[ -n "$SQUAT" ] && kill "$SQUAT" 2>/dev/null && wait "$SQUAT" 2>/dev/null
	cluster_stop
}

# squat PORT: another process listens on 127.0.0.1:PORT (not a node: one
# would join the running nodes that still redial the port).  It leaves by
# itself after 2 minutes should teardown never run.
squat() {
	command -v python3 >/dev/null || skip "python3 is not installed"
	python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("up", flush=True)
time.sleep(120)' "$1" >"$T/squat.out" 2>&1 3>&- &
	SQUAT=$!
	until_true 10 grep -q up "$T/squat.out"
}

# port_of NODE: the node's port as cluster.env records it.
port_of() { "$C" addr "$CLUSTER_DIR" "$1" | cut -d: -f2; }

@test "--help prints the whole usage on stdout and exits 0; no arguments is a usage error" {
	run --separate-stderr "$C" --help
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ $output == "usage: pohmelfs-cluster COMMAND DIR"* ]]
	[[ $output != *"set -u"* ]]
	for c in start stop status env nodes addr kill start-node restart fault corrupt-disk wait; do
		[[ $output == *"  $c "* || $output == *"  addr|dir|pid "* ]] || { echo "usage lacks $c"; false; }
	done
	[[ $output == *"See pohmelfs-cluster(1)."* ]]
	run "$C" start --help
	[ "$status" -eq 0 ]
	[[ $output == "usage: pohmelfs-cluster"* ]]
	run --separate-stderr "$C"
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[[ $stderr == "usage: pohmelfs-cluster"* ]]
}

@test "an unknown command or option, a missing argument or a bad value exits 2 with a message" {
	run "$C" strat "$T/cl"
	[ "$status" -eq 2 ]
	[[ $output == *"pohmelfs-cluster: unknown command 'strat'"* ]]
	run "$C" stop
	[ "$status" -eq 2 ]
	[[ $output == *"stop: which cluster directory?"* ]]
	run "$C" start "$T/cl" --grops 2
	[ "$status" -eq 2 ]
	[[ $output == *"unknown option '--grops'"* ]]
	run "$C" start "$T/cl" --groups
	[ "$status" -eq 2 ]
	[[ $output == *"--groups needs a value"* ]]
	run "$C" start "$T/cl" --protocol 4
	[ "$status" -eq 2 ]
	[[ $output == *"--protocol 4: not 3.0 or 2.26"* ]]
	[ ! -e "$T/cl" ]
}

@test "start with a bad argument creates nothing, not even the parents of DIR" {
	for bad in "--groups 0" "--groups x" "--nodes-per-group -1" "--ids 2000" "--log-level loud" \
		"--base-port 65535 --groups 3" "--watch-pid me"; do
		# shellcheck disable=SC2086
		run "$C" start "$T/new/cl" $bad
		echo "$bad: $status $output"
		[ "$status" -eq 2 ]
		[ ! -e "$T/new" ]
	done
}

@test "stop, status, env on a mistyped directory fail with a message and create nothing" {
	cluster_start real --groups 2 --watch-pid $$
	for cmd in stop status env nodes wait; do
		run "$C" "$cmd" "$CLUSTER_DIR-typo"
		echo "$cmd: $status $output"
		[ "$status" -eq 2 ]
		[[ $output == *"$cmd: $CLUSTER_DIR-typo: no such directory"* ]]
		[ ! -e "$CLUSTER_DIR-typo" ]
	done
	# An existing directory that holds no cluster: refused, left as it was.
	mkdir "$T/empty"
	run "$C" stop "$T/empty"
	[ "$status" -eq 2 ]
	[[ $output == *"$T/empty is not a cluster directory (no cluster.env)"* ]]
	[ -z "$(ls -A "$T/empty")" ]
	# The real cluster was never touched.
	run "$C" status "$CLUSTER_DIR"
	[ "$status" -eq 0 ]
	[ "$(grep -c running <<<"$output")" -eq 2 ]
}

@test "a node name that is not in the cluster is a usage error" {
	cluster_start names --groups 2 --watch-pid $$
	run "$C" addr "$CLUSTER_DIR" 3-1
	[ "$status" -eq 2 ]
	[[ $output == *"addr: no node '3-1' in $CLUSTER_DIR"* ]]
	run "$C" kill "$CLUSTER_DIR"
	[ "$status" -eq 2 ]
	[[ $output == *"kill: missing argument"* ]]
	run "$C" status "$CLUSTER_DIR" extra
	[ "$status" -eq 2 ]
}

@test "a start that fails removes the directory it created and keeps one it was given" {
	# A node binary that answers --free-ports but will not serve.
	mkdir -p "$T/bin"
	printf '#!/bin/sh\ncase $1 in --free-ports|--probe) exec "%s" "$@" ;; esac\necho "fake node: will not serve" >&2\nexit 1\n' \
		"$NODE_BIN" >"$T/bin/pohmelfs-node"
	chmod +x "$T/bin/pohmelfs-node"
	POHMELFS_NODE=$T/bin/pohmelfs-node run "$C" start "$T/made/cl" --groups 2
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"fake node: will not serve"* ]]
	[[ $output == *"node 1-1 (pid "*") exited with status 1; its log:"* ]]
	[[ $output == *"removed $T/made"* ]]
	[ ! -e "$T/made" ]
	# A directory the caller made stays, with the logs to read.
	mkdir "$T/given"
	POHMELFS_NODE=$T/bin/pohmelfs-node run "$C" start "$T/given" --groups 2
	[ "$status" -eq 1 ]
	[[ $output == *"logs in $T/given/nodes/*/node.log"* ]]
	grep -q "will not serve" "$T/given/nodes/1-1/node.log"
	# No node of it runs.
	run "$C" status "$T/given"
	[ "$status" -eq 1 ]
	[ "$(grep -c stopped <<<"$output")" -eq 2 ]
}

@test "start on a stopped cluster keeps its ports and settings: the exported servers stay true" {
	cluster_start again --groups 2 --nodes-per-group 2 --watch-pid $$
	old=$POHMELFS_SERVERS
	grep -q "^PORTS='1-1:[0-9]* 1-2:[0-9]* 2-1:[0-9]* 2-2:[0-9]*'$" "$CLUSTER_DIR/cluster.env"
	"$C" stop "$CLUSTER_DIR"
	# No options: the cluster's own shape (2 x 2), not the default 3 x 1.
	run --separate-stderr "$C" start "$CLUSTER_DIR"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ $output == *"export POHMELFS_SERVERS=$old"$'\n'* ]]
	for a in ${old//,/ }; do
		"$NODE_BIN" --probe "${a%:2}" --expect-nodes 4 --timeout 5
	done
	# A node stopped and started again keeps its port too.
	p=$(port_of 2-1)
	cluster_kill 2-1
	cluster_start_node 2-1
	[ "$(port_of 2-1)" = "$p" ]
	[ "$("$C" env "$CLUSTER_DIR" | sed -n 's/^export POHMELFS_SERVERS=//p')" = "$old" ]
}

@test "a port taken while the cluster was stopped is replaced, and said so" {
	cluster_start taken --groups 2 --watch-pid $$
	p=$(port_of 1-1)
	q=$(port_of 2-1)
	"$C" stop "$CLUSTER_DIR"
	squat "$p"
	run --separate-stderr "$C" start "$CLUSTER_DIR" --watch-pid $$
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ $stderr == *"port $p of node 1-1 is in use by another process; the node listens on "*" now, so POHMELFS_SERVERS changes"* ]]
	[ "$(port_of 1-1)" != "$p" ]
	[ "$(port_of 2-1)" = "$q" ]
	[[ $output == *"export POHMELFS_SERVERS=127.0.0.1:$(port_of 1-1):2,127.0.0.1:$q:2"* ]]
	"$C" wait "$CLUSTER_DIR"
	# start-node: the same, for one node.
	cluster_kill 2-1
	kill "$SQUAT"
	wait "$SQUAT" 2>/dev/null || true
	squat "$q"
	run --separate-stderr "$C" start-node "$CLUSTER_DIR" 2-1
	[ "$status" -eq 0 ]
	[[ $stderr == *"port $q of node 2-1 is in use by another process"* ]]
	[ "$(port_of 2-1)" != "$q" ]
	# The other node's config names the new port for its next start.
	grep -qx "join = 127.0.0.1:$(port_of 2-1)" "$(cluster_dir 1-1)/node.conf"
	"$C" wait "$CLUSTER_DIR"
}

@test "a killed node's port stays reserved: no other cluster gets it until the node's cluster stops" {
	# Session 14 (doc/notes-s14-model.md): a cluster started while a node
	# of another was down took that node's port, and the other cluster's
	# clients read its empty storage as the down node's group.
	export POHMELFS_CLUSTER_PORTS=$T/reg
	# "other" ran on port x before; it is stopped (its start keeps x).
	"$C" start "$T/other" --groups 1 --watch-pid $$ >/dev/null
	x=$("$C" addr "$T/other" 1-1 | cut -d: -f2)
	"$C" stop "$T/other"
	cluster_start held --groups 2 --base-port "$x" --watch-pid $$
	p=$(port_of 1-1)
	[ "$p" = "$x" ]
	cluster_kill 1-1
	# Neither asked for (--base-port) ...
	run --separate-stderr "$C" start "$T/third" --groups 1 --base-port "$p" --watch-pid $$
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ $stderr == *"port $p is reserved by the cluster in $CLUSTER_DIR (a node of it is down)"* ]]
	[ ! -e "$T/third" ]
	# ... nor offered as free (a pohmelfs-node whose --free-ports lists
	# it first, as the random choice can) ...
	mkdir "$T/wrap"
	printf '#!/bin/sh\n[ "$1" = --free-ports ] && echo %s\nexec %q "$@"\n' "$p" "$NODE_BIN" \
		>"$T/wrap/pohmelfs-node"
	chmod +x "$T/wrap/pohmelfs-node"
	[ "$("$T/wrap/pohmelfs-node" --free-ports 1 | head -n 1)" = "$p" ]
	POHMELFS_NODE=$T/wrap/pohmelfs-node "$C" start "$T/fourth" --groups 1 --watch-pid $$ >/dev/null
	[ "$("$C" addr "$T/fourth" 1-1 | cut -d: -f2)" != "$p" ]
	"$C" stop "$T/fourth"
	# ... nor kept by a stopped cluster's restart: it moves, and says so.
	run --separate-stderr "$C" start "$T/other" --watch-pid $$
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ $stderr == *"port $p of node 1-1 is reserved by the cluster in $CLUSTER_DIR"* ]]
	[ "$("$C" addr "$T/other" 1-1 | cut -d: -f2)" != "$p" ]
	"$C" stop "$T/other"
	# The node comes back on its own port.
	cluster_start_node 1-1
	[ "$(port_of 1-1)" = "$p" ]
	# Stopped, the cluster holds nothing: the port is anyone's.
	cluster_stop
	"$C" start "$T/third" --groups 1 --base-port "$p" --watch-pid $$ >/dev/null
	"$C" stop "$T/third"
	[ -z "$(ls "$T/reg")" ]
}

@test "a killed node is gone only once its last thread is: until then its port still accepts" {
	command -v python3 >/dev/null || skip "python3 is not installed"
	# The tool's own test of a process (kill, stop and start-node wait on it).
	eval "$(sed -n '/^alive() {/,/^}/p' "$C")"
	# A process whose main thread has exited (a zombie thread group leader)
	# while a worker still runs and holds its listening socket: a killed
	# node between its main thread's exit and its last worker's.  It ends
	# by itself (SIGALRM) should teardown never run.
	python3 -c '
import ctypes, os, signal, socket, threading, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
signal.alarm(120)
threading.Thread(target=time.sleep, args=(120,)).start()
print(os.getpid(), s.getsockname()[1], flush=True)
ctypes.CDLL(None).pthread_exit(None)' >"$T/worker.out" 2>&1 3>&- &
	SQUAT=$!
	until_true 10 grep -q ' ' "$T/worker.out"
	read -r pid port <"$T/worker.out"
	until_true 10 grep -q ') Z ' "/proc/$pid/stat"
	# Its port accepts, so it is not gone.
	timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
	alive "$pid"
	# Killed: gone once its last thread is, and then its port refuses.
	kill -KILL "$pid"
	until_true 10 eval '! alive "$pid"'
	! timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || false
	wait "$pid" 2>/dev/null || true
	SQUAT=
}

# A node process that ends while the cluster starts: how it ended (status
# or signal) and its log's tail on stderr, also when the log is empty (a
# test's output is all that is left once bats removes its directory).
@test "a node killed while the cluster starts: the start says by which signal, and that its log is empty" {
	mkdir -p "$T/bin"
	printf '#!/bin/sh\ncase $1 in --free-ports|--probe) exec "%s" "$@" ;; esac\nkill -KILL $$\n' \
		"$NODE_BIN" >"$T/bin/pohmelfs-node"
	chmod +x "$T/bin/pohmelfs-node"
	mkdir "$T/cl"
	POHMELFS_NODE=$T/bin/pohmelfs-node run "$C" start "$T/cl" --groups 1 --watch-pid $$
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"node 1-1 (pid "*") was killed by signal 9 (KILL); its log:"$'\n'"    (empty: it wrote nothing)"* ]]
}

# Under load (the TSan tier: two test files' clusters on 2 cores) the
# launched process may take long to become the node, and while it execs
# the kernel shows an empty command line: neither is a node that died.
# Here it stays a process that is not the node until the tool's first
# readiness probe (after the launch's own 2 s wait): a start that takes
# it for dead fails.
@test "a launched node not yet exec'ed when the start checks it is waited for, not taken for dead" {
	mkdir -p "$T/bin"
	printf '#!/bin/sh\ncase $1 in --free-ports) exec "%s" "$@" ;; --probe) touch "%s"; exec "%s" "$@" ;; esac
i=0
while [ ! -e "%s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
exec "%s" "$@"\n' "$NODE_BIN" "$T/probed" "$NODE_BIN" "$T/probed" "$NODE_BIN" >"$T/bin/slow-exec"
	chmod +x "$T/bin/slow-exec"
	mkdir "$T/cl"
	CLUSTER_DIR=$T/cl
	POHMELFS_NODE=$T/bin/slow-exec run "$C" start "$T/cl" --groups 1 --watch-pid $$
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"export POHMELFS_SERVERS=127.0.0.1:"* ]]
	run "$C" status "$T/cl"
	[ "$status" -eq 0 ]
}
