#!/usr/bin/env bats
# offline.bats — offline is a mode, not an error (issue 19 item 3, DESIGN
# §0.4): with every node of the cluster stopped, clean cached files and
# directories stay readable as last validated, a write to a cached file
# stays in the cache and is pushed when the nodes are back, what needs the
# storage fails with EIO, and no network errno (EHOSTUNREACH, ECONNREFUSED,
# ETIMEDOUT, ...) ever reaches a program.  Host a is the cache under test,
# b another host that changes the storage, c a fresh cache that reads what
# the storage holds.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=offline-$RANDOM POHMELFS_SYNC_ON_CLOSE=1
	export POHMELFS_ATTR_TIMEOUT=1 POHMELFS_SYNC_TIMEOUT=1
	mkdir -p "$T/a" "$T/b" "$T/c"
	# a's cache: d/f, g, d/sub (made here, so validated and clean); h made
	# by b and seen by a's listing only (a stub in a); d/late made by b
	# after a's last listing (a knows nothing of it).
	shim a sh -c "mkdir '$T/a/d' && echo hello > '$T/a/d/f' && echo top > '$T/a/g' && mkdir '$T/a/d/sub'"
	shim b sh -c "echo from-b > '$T/b/h'"
	shim a ls "$T/a" >/dev/null
	shim b sh -c "echo late > '$T/b/d/late'"
}

teardown() {
	stop_daemons
	cluster_stop
}

# all_down: stop every node (TERM, as an administrator would).
all_down() {
	"$CLUSTER_BIN" stop "$CLUSTER_DIR"
}

# all_up: start the stopped cluster again with its data and ports.
all_up() {
	"$CLUSTER_BIN" start "$CLUSTER_DIR" --watch-pid $$ >/dev/null
}

# errnos.py PATH...: for each path, the outcome of open, stat, listdir,
# unlink, mkdir and rename under it ("op path ok" or "op path ERRNAME").
write_errnos_py() {
	cat >"$T/errnos.py" <<'EOF'
import errno, os, sys
def run(op, fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
for p in sys.argv[1:]:
    n = os.path.basename(p)
    print("open", n, run("open", lambda: os.close(os.open(p, os.O_RDONLY))))
    print("stat", n, run("stat", lambda: os.stat(p)))
    print("listdir", n, run("listdir", lambda: os.listdir(p)))
    print("mkdir", n, run("mkdir", lambda: os.mkdir(p + ".new")))
    print("rename", n, run("rename", lambda: os.rename(p, p + ".moved")))
    print("unlink", n, run("unlink", lambda: os.unlink(p)))
EOF
}

# no_net_errno FILE: FILE names no errno of the network.
no_net_errno() {
	! grep -E 'EHOSTUNREACH|ECONNREFUSED|ETIMEDOUT|ENOTCONN|ECONNRESET|EPIPE|ENETUNREACH|ENETDOWN|EHOSTDOWN|ECONNABORTED|ECANCELED|EPROTO|ENXIO' "$1" || false
}

@test "offline: cd, ls, cat, stat of cached files work; uncached names and namespace changes give EIO, never a network errno" {
	all_down
	sleep 1.2	# past attr_timeout: every call below would validate
	run shim a sh -c "cd '$T/a' && ls && cat d/f g && ls d && stat -c '%n %s' d/f g h d/sub"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello"*"top"* ]]
	[[ "$output" == *"d/f 6"* ]]
	[[ "$output" == *"g 4"* ]]
	[[ "$output" == *"h 7"* ]]	# a stub shows its recorded attributes
	printf '%s\n' "$output" | grep -qx h

	write_errnos_py
	run shim a python3 "$T/errnos.py" "$T/a/d/f" "$T/a/d" "$T/a/h" "$T/a/d/late" "$T/a/nope"
	echo "$output" | tee "$T/out"
	[ "$status" -eq 0 ]
	no_net_errno "$T/out"
	grep -qx 'open f ok' "$T/out"
	grep -qx 'stat f ok' "$T/out"
	grep -qx 'listdir f ENOTDIR' "$T/out"
	grep -qx 'open d ok' "$T/out"
	grep -qx 'listdir d ok' "$T/out"
	grep -qx 'stat h ok' "$T/out"
	grep -qx 'open h EIO' "$T/out"		# a stub: its data is in the storage only
	grep -qx 'stat late EIO' "$T/out"	# not in the cache: unknown, not ENOENT
	grep -qx 'stat nope EIO' "$T/out"
	for n in f d h late nope; do
		grep -qx "mkdir $n EIO" "$T/out"
		grep -qx "rename $n EIO" "$T/out"
		grep -qx "unlink $n EIO" "$T/out"
	done
	# Nothing changed locally either.
	[ "$(cat "$T/a/d/f")" = hello ]
	[ -e "$T/a/g" ]
	[ ! -e "$T/a/d/f.moved" ]
	[ ! -e "$T/a/d.new" ]
	# One warning, at most, per process; never the root failure.
	run shim a sh -c "cat '$T/a/d/f' '$T/a/g' '$T/a/d/f'"
	[ "$status" -eq 0 ]
	[[ "$output" != *"cannot open the root"* ]]
}

@test "offline: calls do not wait for connects (a stat costs well under a few ms, connects are rate-limited)" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	all_down
	cat >"$T/stats.py" <<'EOF'
import os, sys, time
p = sys.argv[1]
t0 = time.monotonic()
os.stat(p)				# the first call finds the storage offline
t = time.monotonic()
for i in range(300):
    os.stat(p)
    with open(p) as f:
        f.read()
end = time.monotonic()
# ms per round, and ms from the first call on
print("%.3f %.0f" % ((end - t) * 1000 / 300, (end - t0) * 1000))
EOF
	# attr_timeout=0: every call would validate against the storage.
	POHMELFS_ATTR_TIMEOUT=0 run shim a python3 "$T/stats.py" "$T/a/d/f"
	echo "ms per stat+open+read, ms in all: $output"
	[ "$status" -eq 0 ]
	read -r per ms <<<"${lines[-1]}"
	awk -v ms="$per" 'BEGIN { exit !(ms < 2) }'
	# The connects of 100 such rounds (200 calls that would each validate):
	# an attempt of the first call, then one probe per window that ended
	# while the process ran, each at most 2 connects per node (the route
	# refresh and the request; a probe makes 1 when the machine is quiet).
	# The windows (libpohmelfs(7) OFFLINE: 1 s, doubling up to 5 s) end
	# at 1, 3, 7, 12, 17, ... s, so the bound follows from the time the
	# traced process spent from its first call on: 4 connects while that
	# is under 1 s (a quiet machine), more when strace on a loaded machine
	# stretches it (6 connects in 1.9 s at load 14, where the old bound of
	# 4 failed).  Windows of 10 ms instead (the limit broken) made 8 in
	# 0.5 s and 12 in 1.8 s: over the bound.
	sed -i 's/range(300)/range(100)/; s|/ 300|/ 100|' "$T/stats.py"
	POHMELFS_ATTR_TIMEOUT=0 run shim a strace -f -qq -tt -o "$T/trace" -e trace=connect \
		python3 "$T/stats.py" "$T/a/d/f"
	[ "$status" -eq 0 ]
	read -r per ms <<<"${lines[-1]}"
	ports=$(tr ',' '\n' <<<"$POHMELFS_SERVERS" | cut -d: -f2)
	nodes=0 n=0
	for p in $ports; do
		nodes=$((nodes + 1))
		n=$((n + $(grep -c "connect(.*htons($p)" "$T/trace" || true)))
	done
	windows=$(awk -v ms="$ms" 'BEGIN { r = 1; t = 0; w = 1000
		while (t + w <= ms) { t += w; r++; w = w * 2 > 5000 ? 5000 : w * 2 }
		print r }')
	echo "connects to the nodes: $n in $ms ms, bound $((2 * nodes * windows))" \
		"($per ms per round under strace)" >&3
	grep 'connect(' "$T/trace" | cut -c1-120
	[ "$n" -le $((2 * nodes * windows)) ]
}

@test "offline: hung nodes (SIGSTOP) cost one timeout, then calls are served at once" {
	POHMELFS_READ_WAIT_TIMEOUT=1 POHMELFS_WRITE_WAIT_TIMEOUT=1 POHMELFS_ATTR_TIMEOUT=0 \
		shim_bg a python3 -c "
import os, sys, time
p = sys.argv[1]
open(sys.argv[2] + '.ready', 'w').close()
while not os.path.exists(sys.argv[2] + '.go'):
    time.sleep(0.05)
t = time.monotonic(); os.stat(p); first = time.monotonic() - t
t = time.monotonic()
for i in range(50):
    os.stat(p)
    with open(p) as f: f.read()
print('%.3f %.3f' % (first, (time.monotonic() - t) * 1000 / 50), file=open(sys.argv[2], 'w'))
" "$T/a/d/f" "$T/res"
	until_true 10 test -e "$T/res.ready"
	for pid in $(cluster_pids); do kill -STOP "$pid"; done
	touch "$T/res.go"
	until_true 30 test -s "$T/res"
	# New processes learn it from the cache (cache_dir/offline): one of
	# them may probe when the window is over (and wait a timeout), the
	# ones after it do not.
	fast=0
	for i in 1 2 3 4; do
		t0=$(date +%s%N)
		POHMELFS_READ_WAIT_TIMEOUT=3 POHMELFS_WRITE_WAIT_TIMEOUT=3 POHMELFS_ATTR_TIMEOUT=0 \
			shim a cat "$T/a/d/f" >/dev/null
		ms=$((($(date +%s%N) - t0) / 1000000))
		echo "new process $i: $ms ms" >&3
		[ "$ms" -lt 500 ] && fast=$((fast + 1))
	done
	for pid in $(cluster_pids); do kill -CONT "$pid"; done
	read -r first per <"$T/res"
	echo "first call ${first}s, then ${per} ms per stat+open+read" >&3
	awk -v f="$first" -v p="$per" 'BEGIN { exit !(f < 4 && p < 3) }'
	[ "$fast" -ge 3 ]
}

@test "offline: a write to a cached file succeeds, is pushed when the nodes are back, and a fresh cache reads it" {
	all_down
	run shim a sh -c "echo more >> '$T/a/d/f' && echo again > '$T/a/g' && cat '$T/a/d/f'"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'hello\nmore')" ]
	# A cached file's mode, times and user.* xattrs travel with its push;
	# a directory's mode and any owner cannot, so they fail and change nothing.
	run shim a python3 -c "
import os, sys
g, d = sys.argv[1], sys.argv[2]
os.chmod(g, 0o600); os.utime(g, (1000000000, 1000000000)); os.setxattr(g, 'user.k', b'v')
for name, fn in (('chmod-dir', lambda: os.chmod(d, 0o700)), ('chown', lambda: os.chown(g, 0, 0))):
    try:
        fn(); print(name, 'ok')
    except OSError as e:
        print(name, e.strerror)
" "$T/a/g" "$T/a/d"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"chmod-dir Input/output error"* ]]
	[[ "$output" == *"chown Input/output error"* ]]
	[ "$(stat -c %a "$T/a/d")" = 755 ]
	# A new name still needs the storage.
	run shim a sh -c "echo x > '$T/a/d/new'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	[ ! -e "$T/a/d/new" ]
	sleep 2		# pohmelfsd's rounds fail meanwhile; the files stay dirty
	all_up
	# pohmelfsd (started by the close) pushes them within its retry window.
	until_true 30 sh -c "[ \"\$(LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/c POHMELFS_CACHE_DIR=$T/c-state POHMELFS_HOST_ID=c cat '$T/c/d/f' 2>/dev/null)\" = \"\$(printf 'hello\nmore')\" ]"
	run shim c cat "$T/c/g"
	[ "$output" = again ]
	run shim c python3 -c "
import os, sys
st = os.stat(sys.argv[1]); print(oct(st.st_mode & 0o777), int(st.st_mtime), os.getxattr(sys.argv[1], 'user.k'))
" "$T/c/g"
	echo "$output"
	[ "$output" = "0o600 1000000000 b'v'" ]
	# No conflict copies: nobody else changed them.
	[ ! -e "$T/c/.pohmelfs-conflicts" ]
}

@test "offline: a running process keeps reading across the stop and the restart, and creates again once the nodes are back" {
	# The runner reads a cached file in a loop while the nodes run, while
	# all of them are stopped and after they are back.  It holds its calls
	# while the test stops or starts the nodes: `pohmelfs-cluster stop` and
	# `start` take the nodes down and up one by one, and meanwhile a
	# minority of the 2 groups answers, which is not offline but a storage
	# short of a quorum (libpohmelfs(7) FAILURES: EIO).  On a loaded machine
	# that window lasts long enough for a call to land in it (CI, load 19).
	# Every call the runner makes is with all nodes up or all down.
	cat >"$T/runner.py" <<'EOF'
import errno, os, sys, time
base, ctl = sys.argv[1], sys.argv[2]
errs, created, reads = [], None, {}
def ctl_read(name):
    try:
        with open(ctl + "/" + name) as f:
            return f.read().strip()
    except OSError:
        return ""
def ctl_write(name, text):
    with open(ctl + "/" + name + ".tmp", "w") as f:
        f.write(text + "\n")
    os.rename(ctl + "/" + name + ".tmp", ctl + "/" + name)
ctl_write("ready", "")
deadline = time.monotonic() + 90
while not os.path.exists(ctl + "/done") and time.monotonic() < deadline:
    hold = ctl_read("hold")
    if hold:			# the test is stopping or starting nodes
        ctl_write("held", hold)
        time.sleep(0.02)
        continue
    phase = ctl_read("phase") or "up"
    try:
        os.stat(base + "/d/f")
        with open(base + "/d/f") as f:
            assert f.read().startswith("hello")
        os.listdir(base + "/d")
        reads[phase] = reads.get(phase, 0) + 1
        ctl_write("reads." + phase, str(reads[phase]))
    except OSError as e:
        errs.append(phase + ":" + errno.errorcode.get(e.errno, str(e.errno)))
    if phase == "back" and created is None:
        try:
            with open(base + "/d/after", "w") as f:
                f.write("after\n")
            created = time.monotonic()
            ctl_write("created", "")
        except OSError as e:
            if e.errno != errno.EIO:
                errs.append("create:" + errno.errorcode.get(e.errno, str(e.errno)))
    time.sleep(0.05)
print("reads=%s errors=%s created=%s" % (
      ",".join("%s:%d" % kv for kv in sorted(reads.items())) or "none",
      ",".join(errs) or "none", created is not None), file=open(ctl + "/result", "w"))
EOF
	mkdir "$T/ctl"
	# hold N: the runner's calls wait (it says so in held); unhold PHASE:
	# they go on, counted under PHASE.
	hold() {
		echo "$1" >"$T/ctl/hold"
		until_true 30 grep -qsx "$1" "$T/ctl/held"
	}
	unhold() {
		echo "$1" >"$T/ctl/phase"
		rm -f "$T/ctl/hold"
	}
	# reads_at_least PHASE N: the runner read N times in PHASE.
	reads_at_least() {
		[ "$(cat "$T/ctl/reads.$1" 2>/dev/null || echo 0)" -ge "$2" ]
	}
	shim_bg a python3 "$T/runner.py" "$T/a" "$T/ctl"
	runner=$SHIM_BG_PID
	until_true 10 test -e "$T/ctl/ready"
	until_true 30 reads_at_least up 5
	hold 1
	all_down
	unhold down
	# Reads with every node down: past the first offline window and its
	# probe (1 s, then 2 s), and at least 10 of them.
	sleep 2.5
	until_true 30 reads_at_least down 10
	hold 2
	all_up
	unhold back
	until_true 30 test -e "$T/ctl/created"
	until_true 30 reads_at_least back 5
	touch "$T/ctl/done"
	wait "$runner"
	cat "$T/ctl/result"
	grep -q 'errors=none created=True' "$T/ctl/result"
	reads_at_least down 10
	run shim c cat "$T/c/d/after"
	[ "$output" = after ]
}

@test "offline: a write made while this host could not reach the storage, to a file another host changed meanwhile, becomes a conflict copy" {
	# Host a alone is cut off (its servers are a closed port), host b goes on.
	run env POHMELFS_SERVERS=127.0.0.1:1:2 LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/a \
		POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a POHMELFS_ATTR_TIMEOUT=0 \
		sh -c "echo mine >> '$T/a/d/f'"
	[ "$status" -eq 0 ]
	shim b sh -c "echo theirs >> '$T/b/d/f'"
	# Back in touch: the push finds another version than the one its copy
	# was fetched at.
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a "$B/pohmelfs" sync || true
	run shim c cat "$T/c/d/f"
	[ "$output" = "$(printf 'hello\ntheirs')" ]
	run shim c sh -c "cat '$T/c/.pohmelfs-conflicts/a/'*"
	echo "$output"
	[ "$output" = "$(printf 'hello\nmine')" ]
}
