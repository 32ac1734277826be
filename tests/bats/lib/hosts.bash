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

# stop_daemons: every pohmelfsd serving a prefix under $T (teardown), also
# one started in a private mount namespace, whose pid file we cannot see.
stop_daemons() {
	local p
	for p in $(pgrep -x pohmelfsd); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^POHMELFS_PREFIX=$T/" &&
			kill "$p" 2>/dev/null
	done
	return 0
}
