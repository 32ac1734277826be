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
	# One process on host a (bash's own stat and open), attr_timeout=3:
	# d and d/s checked between ta and tb; b renames d; at once after that
	# d/s/f is opened first (d, d/s from their records, f looked up now);
	# at tb + 3.3 s d was last checked longer than attr_timeout ago: the
	# open must find d gone.  The times are the process's own clock, not
	# sleeps after the rename: under TSan and load a shimmed mv and each
	# sleep process take hundreds of ms (a 0.05 s head start and a 0.7 s
	# sleep with attr_timeout=1 failed so, doc/notes-s19-ciflake.md).
	# Exit 7: the rename took so long that no open inside the window was
	# left to try.
	shim_bg a env POHMELFS_ATTR_TIMEOUT=3 bash -c '
		ta=${EPOCHREALTIME/[.,]/}
		[ -d "$1/d/s" ] || exit 9
		tb=${EPOCHREALTIME/[.,]/}
		: >"$2/checked"
		while [ ! -e "$2/moved" ]; do sleep 0.02; done
		((${EPOCHREALTIME/[.,]/} - ta < 2500000)) || exit 7
		read -r x <"$1/d/s/f" || exit 8
		while ((${EPOCHREALTIME/[.,]/} - tb < 3300000)); do sleep 0.05; done
		read -r x <"$1/d/s/f" 2>/dev/null && exit 1
		exit 0' sh "$T/a" "$T"
	pid=$SHIM_BG_PID
	# The rename only after a's check (a's start under TSan is slow).
	while [ ! -e "$T/checked" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
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
