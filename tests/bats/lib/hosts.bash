# hosts.bash — two or more "hosts" (caches) on one machine for bats tests:
# `load lib/hosts` after lib/common and lib/cluster; set T (the test's
# directory) first.  Host H has prefix $T/H and cache $T/H-state.

# shim HOST CMD...: CMD under the shim as host HOST.
shim() {
	local h=$1
	shift
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state \
		POHMELFS_HOST_ID=$h "$@"
}

# shim_bg HOST CMD...: CMD under the shim as HOST in the background, its
# pid in SHIM_BG_PID.  Not `shim ... &`: that backgrounds a subshell, so $!
# is not CMD's pid and a kill of it leaves CMD running; and CMD closes fd 3,
# or bats waits for it at the end of the file (5 minutes once, in CI).
shim_bg() {
	local h=$1
	shift
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state \
		POHMELFS_HOST_ID=$h "$@" 3>&- &
	SHIM_BG_PID=$!
}

# stop_daemons: every pohmelfsd serving a prefix under $T (teardown), also
# one started in a private mount namespace, whose pid file we cannot see.
# 2>/dev/null before the <: redirections apply left to right, and the < of
# a daemon that is gone meanwhile fails ("No such process") before a later
# 2> would silence it.
stop_daemons() {
	local p
	for p in $(pgrep -x pohmelfsd); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -q "^POHMELFS_PREFIX=$T/" &&
			kill "$p" 2>/dev/null
	done
	return 0
}

# three_hosts FSID: the issue-18 setting — a 3-group cluster, hosts a and b
# and a fresh third c (prefixes $T/a, $T/b, $T/c), sync_on_close=1,
# attr_timeout=1 (call from setup after loading lib/common and lib/cluster;
# tear down with stop_daemons and cluster_stop).
three_hosts() {
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=$1 POHMELFS_SYNC_ON_CLOSE=1
	export POHMELFS_ATTR_TIMEOUT=1
	mkdir -p "$T/a" "$T/b" "$T/c"
}

# waits HOST: HOST's net_waits total so far (cache_dir/stats: the waits for
# the cluster's replies that every process adds at exit).
waits() {
	awk '$1 == "net_waits" {v = $2} END {print v + 0}' "$T/$1-state/stats" 2>/dev/null || echo 0
}

# counted NAME HOST CMD...: CMD's waits under the shim as HOST, echoed; its
# output dropped, its debug log in $T/NAME.log (each kv operation logs its
# waits, kvio.c "rtt:"), its time in ms in $T/NAME.ms.
counted() {
	local name=$1 host=$2 w0 w t0
	shift 2
	w0=$(waits "$host")
	t0=$(date +%s%N)
	POHMELFS_LOG_LEVEL=debug POHMELFS_LOG=$T/$name.log shim "$host" "$@" >/dev/null
	w=$(($(waits "$host") - w0))
	echo $((($(date +%s%N) - t0) / 1000000)) >"$T/$name.ms"
	echo "# $name: $w waits in $(cat "$T/$name.ms") ms" >&3
	echo "$w"
}

# wlock_state HOST INO: "held" if some process holds INO's byte of HOST's
# w.lock (a write lock would conflict), else "free".
wlock_state() {
	python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]) & (2**62 - 1))
    print("free")
except OSError:
    print("held")' "$T/$1-state/w.lock" "$2"
}
