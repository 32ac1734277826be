#!/usr/bin/env bats
# cache_hosts_walk.bats — a create's walk to its parent directory on one
# host after another host renamed the directory away (review s15,
# doc/notes-s15-walkfix.md): the walk table (core/cache/walkfresh.c) and
# the walk itself (cache.c walk_parent_dir) must not put the new file into
# the local directory the old name still holds.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts walkh
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "an ancestor renamed on another host: a create below it fails after attr_timeout" {
	shim b mkdir -p "$T/b/d/s"
	# One process on host a, attr_timeout=3: d validated (stat) between
	# ta and tb, then after the rename on b, not before tb + 0.5 s, a
	# create in d/s (d from its record, s looked up now), then at tb +
	# 3.3 s another create: d/s's own record is fresh (~2.8 s), d's is not
	# (3.3 s).  The times are the process's own clock, not sleeps after
	# the rename, which a slow shimmed mv under TSan and load pushes past
	# the timeout (cache_hosts_openwalk 1 failed so,
	# doc/notes-s19-ciflake.md).  Exit 7: the rename took so long that no
	# create inside the window was left to try.
	shim_bg a env POHMELFS_ATTR_TIMEOUT=3 bash -c '
		ta=${EPOCHREALTIME/[.,]/}
		[ -d "$1/d" ] || exit 9
		tb=${EPOCHREALTIME/[.,]/}
		: >"$2/checked"
		while [ ! -e "$2/moved" ]; do sleep 0.02; done
		while ((${EPOCHREALTIME/[.,]/} - tb < 500000)); do sleep 0.05; done
		((${EPOCHREALTIME/[.,]/} - ta < 2500000)) || exit 7
		: >"$1/d/s/f1" || exit 8
		while ((${EPOCHREALTIME/[.,]/} - tb < 3300000)); do sleep 0.05; done
		: >"$1/d/s/f2" 2>/dev/null && exit 1
		exit 0' sh "$T/a" "$T"
	pid=$SHIM_BG_PID
	# The rename only after a's check (a's start under TSan is slow).
	while [ ! -e "$T/checked" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
	shim b mv "$T/b/d" "$T/b/d2"
	touch "$T/moved"
	st=0
	wait "$pid" || st=$?
	echo "status $st"
	shim c ls "$T/c/d2/s"
	[ "$st" -eq 0 ]
	run shim c stat "$T/c/d2/s/f2"
	[ "$status" -ne 0 ]
}

@test "a directory renamed on another host: a new process's create by its old path fails" {
	export POHMELFS_ATTR_TIMEOUT=2
	shim b mkdir -p "$T/b/d/s"
	shim a stat "$T/a/d" >/dev/null	# d validated now
	sleep 1
	shim a stat "$T/a/d/s" >/dev/null	# d from its record, s validated now
	shim b mv "$T/b/d" "$T/b/d2"
	sleep 1.1
	# A new process (no walk table): d's record is stale (> 2 s), d/s's
	# fresh (~1.2 s); the walk finds d gone from the storage, and the
	# local d/s, still there, is the stored d2/s.
	run shim a bash -c ': >"$1/d/s/f1"' sh "$T/a"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file or directory"* ]]
	[ ! -e "$T/a/d/s/f1" ]
	run shim c stat "$T/c/d2/s/f1"
	[ "$status" -ne 0 ]
	# A listing of the root on a moves the local d to d2 (list_drop_gone).
	run shim a ls "$T/a"
	echo "$output"
	[ "$output" = d2 ]
}

@test "an ancestor replaced here by a symlink: the walk table does not follow it" {
	export POHMELFS_ATTR_TIMEOUT=30
	shim a mkdir -p "$T/a/d/s"
	# One process: walks d/s (the walk table holds d and d/s), then the
	# local d becomes a symlink to the same directory under another name,
	# without the shim; a fresh process's walk refuses d now (the stored
	# d is a directory, the local name a link) and so must this one's.
	run shim a bash -c '
		: >"$1/d/s/f0" || exit 9
		env -u LD_PRELOAD mv "$1/d" "$1/d_old" || exit 7
		env -u LD_PRELOAD ln -s d_old "$1/d" || exit 7
		: >"$1/d/s/f1" && exit 1
		exit 0' sh "$T/a"
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$T/a/d_old/s/f1" ]
	run shim a bash -c ': >"$1/d/s/f2"' sh "$T/a"
	[ "$status" -ne 0 ]
}
