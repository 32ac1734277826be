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
