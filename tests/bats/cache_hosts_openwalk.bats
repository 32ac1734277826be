#!/usr/bin/env bats
# cache_hosts_openwalk.bats — the open path's table of paths walked
# (core/cache/cache.c path_fresh) after another host renamed a directory
# on the path away: no directory of the path is trusted longer than
# attr_timeout after it was last checked, as the create's walk table
# (walkfresh.c, doc/notes-s15-walkfix.md).

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts openwalk
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "an ancestor renamed on another host: an open by the old path fails after attr_timeout" {
	shim b mkdir -p "$T/b/d/s"
	shim b bash -c 'echo x >"$1/d/s/f"' sh "$T/b"
	# One process on host a (bash's own stat and open): d and d/s checked
	# now; 0.8 s later d/s/f is opened first (d, d/s from their records,
	# f looked up now); b renames d meanwhile; 0.7 s after that open d was
	# last checked 1.5 s ago (> attr_timeout=1): the open must find d gone.
	shim_bg a bash -c '
		[ -d "$1/d/s" ] || exit 9
		while [ ! -e "$2/moved" ]; do sleep 0.02; done
		sleep 0.7
		read -r x <"$1/d/s/f" || exit 8
		sleep 0.7
		read -r x <"$1/d/s/f" 2>/dev/null && exit 1
		exit 0' sh "$T/a" "$T"
	pid=$SHIM_BG_PID
	sleep 0.05
	shim b mv "$T/b/d" "$T/b/d2"
	touch "$T/moved"
	st=0
	wait "$pid" || st=$?
	echo "status $st"
	[ "$st" -eq 0 ]
}

@test "a directory renamed on another host: a new process's open by its old path fails" {
	shim b mkdir -p "$T/b/d/s"
	shim b bash -c 'echo x >"$1/d/s/f"' sh "$T/b"
	run shim a cat "$T/a/d/s/f"
	[ "$output" = x ]
	shim b mv "$T/b/d" "$T/b/d2"
	sleep 1.1
	# d's record is stale; the storage has no d; the local d/s/f, still
	# there, is the stored d2/s/f: not opened by the old path.
	run shim a cat "$T/a/d/s/f"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file or directory"* ]]
	run shim a cat "$T/a/d2/s/f"
	[ "$output" = x ]
	# A directory made here without the shim (not in the storage until
	# pohmelfsd adopts it) is still the way to its files.
	mkdir "$T/a/n"
	echo y >"$T/a/n/g"
	run shim a cat "$T/a/n/g"
	[ "$output" = y ]
}
