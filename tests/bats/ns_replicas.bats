#!/usr/bin/env bats
# ns_replicas.bats — the namespace on replicated groups under contention
# (issue 6): 8 processes creating, renaming, unlinking and making
# directories in one directory, on 1, 2 and 3 groups and with one of 3
# groups (or one node of it) stopped for part of the run; racing directory
# moves; rmdir racing create.  Every run ends with `ns_stress check`: the
# listing has exactly the names the workers leave (each missing or
# unexpected one is named), every name looks up to its listed inode, every
# inode is alive, no duplicates.
#
# Scale: issue 6 asks for 8 × (2000 files + 200 directories).  The long
# tier (CI=true or LONG=1) runs NS_FILES=500 NS_DIRS=50 per process (a
# quarter: 4000 files, 400 directories, 800 renames, 800 unlinks: 6000
# operations), which keeps each test under a minute on the shared 2-CPU
# machine (3 groups: 30 s at a load average of 10).  The main tier runs the
# plain stress runs (1, 2, 3 groups) at 150 files and 15 directories per
# process, still 8 processes contending for one directory, to stay short
# (issue 21); the runs with a group stopped keep 500/50 there too, as they
# need the workers busy through the stop from 2 s to 6 s.  Sanitizer builds
# use a tenth of the long tier's size.  NS_FILES / NS_DIRS override
# (NS_FILES=2000 NS_DIRS=200 is the full issue 6 load).

setup() {
	load lib/common
	load lib/cluster
	S=$B/tests/progs/ns_stress
	[ -x "$S" ]	# built by make check (all): missing is a failure, not a skip
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
	if [ -n "${SAN:-}" ]; then
		FILES=${NS_FILES:-50} DIRS=${NS_DIRS:-5}
	else
		FILES=${NS_FILES:-500} DIRS=${NS_DIRS:-50}
	fi
	export POHMELFS_FSID=ns-replicas POHMELFS_READ_REPAIR=1
}

teardown() {
	cluster_stop
}

# workers N DIR: start N ns_stress workers on DIR in the background (pids in WPIDS).
workers() {
	local i
	WPIDS=()
	for i in $(seq 1 "$1"); do
		"$S" work "$i" "$FILES" "$DIRS" "$2" >"$TMP/w$i.out" 2>&1 &
		WPIDS+=($!)
	done
}

# finish N DIR: wait for the workers; each must report no error; the sum of
# their names must be exactly what `check` lists, and check must be clean.
finish() {
	local i rc=0 total=0 names
	for i in "${!WPIDS[@]}"; do
		wait "${WPIDS[$i]}" || rc=1
	done
	for i in $(seq 1 "$1"); do
		names=$(awk '/^names/ {print $2, $4}' "$TMP/w$i.out")
		[ -n "$names" ] || { echo "worker $i printed no result:"; cat "$TMP/w$i.out"; return 1; }
		total=$((total + ${names%% *}))
		if [ "${names##* }" != 0 ] || [ $rc != 0 ]; then
			echo "worker $i: $names"
			grep -v '^names' "$TMP/w$i.out" | head -20
			rc=1
		fi
	done
	[ $rc = 0 ] || return 1
	run "$S" check "$2" "$total" "$1" "$FILES" "$DIRS"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "ok $total entries" ]
}

stress() {
	local groups=$1 t0
	# The main tier's size (above), unless given.
	if [ -z "${SAN:-}" ] && ! long_tier; then
		FILES=${NS_FILES:-150} DIRS=${NS_DIRS:-15}
	fi
	cluster_start "g$groups" --groups "$groups" --nodes-per-group 2 --nosync
	run "$S" mkdir d
	echo "mkdir d: $output"
	[ "$output" = ok ]
	t0=$(date +%s%N)
	workers 8 d
	finish 8 d
	echo "# $groups group(s): 8 × ($FILES files, $DIRS dirs) in $((($(date +%s%N) - t0) / 1000000)) ms" >&3
}

@test "8 processes in one directory, 1 group" {
	stress 1
}

@test "8 processes in one directory, 2 groups" {
	stress 2
}

@test "8 processes in one directory, 3 groups" {
	stress 3
}

# stopped_run NODE...: the 3-group stress with NODEs stopped from 2 s to 6 s.
stopped_run() {
	local t0 n
	cluster_start down --groups 3 --nodes-per-group 2 --nosync
	run "$S" mkdir d
	echo "mkdir d: $output"
	[ "$output" = ok ]
	t0=$(date +%s%N)
	workers 8 d
	sleep 2
	for n; do cluster_kill "$n"; done
	sleep 4
	for n; do cluster_start_node "$n"; done
	finish 8 d
	echo "# $* down 4 s: 8 × ($FILES files, $DIRS dirs) in $((($(date +%s%N) - t0) / 1000000)) ms" >&3
}

@test "8 processes in one directory, 3 groups, group 2 stopped for part of the run" {
	stopped_run 2-1 2-2
	# The group that was away is brought in line by repair (read repair
	# alone may leave a copy: the check reads only until a majority agrees
	# plus a short grace, and leaves copies younger than a writer may still
	# count, about 3 s, to their writers).  Then it takes part again: with
	# group 1 gone, a create needs it and group 3 to agree.
	sleep 3.2
	run "$B/pohmelfs" repair
	echo "pohmelfs repair: $status $output"
	[ "$status" -eq 0 ]
	run "$B/pohmelfs" fsck
	echo "pohmelfs fsck: $status $output"
	[ "$status" -eq 0 ]
	cluster_kill 1-1
	cluster_kill 1-2
	run "$S" create d/after
	echo "create d/after: $output"
	[ "$output" = ok ]
	run "$S" resolve d/after
	echo "resolve d/after: $status $output"
	[ "$status" -eq 0 ]
}

# One node of a group down: for these compare-and-swap objects its keys do
# not fall to the other node of the group (which never held them; a CAS
# passes where the key is missing), so group 2 is silent for that node's
# keys and groups 1 and 3 carry on (RELIABILITY.md finding 13).  The lost
# entry of finding 13 needs a write to straddle the node's death or return;
# this run meets that rarely, test_io's failed-node test checks the routing.
@test "8 processes in one directory, 3 groups, one node of group 2 stopped for part of the run" {
	stopped_run 2-1
}

@test "two hosts racing mv a b/ and mv b a/ never build a cycle" {
	local r rounds=20 one two ok
	cluster_start mv --groups 3 --nodes-per-group 2 --nosync
	run "$S" mkdir t
	[ "$output" = ok ]
	for r in $(seq 1 $rounds); do
		"$S" mkdir "t/a$r" >/dev/null
		"$S" mkdir "t/b$r" >/dev/null
	done
	for r in $(seq 1 $rounds); do
		"$S" mv "t/a$r" "t/b$r/a$r" >"$TMP/m1.$r" 2>&1 &
		"$S" mv "t/b$r" "t/a$r/b$r" >"$TMP/m2.$r" 2>&1 &
	done
	wait
	ok=0
	for r in $(seq 1 $rounds); do
		one=$(cat "$TMP/m1.$r") two=$(cat "$TMP/m2.$r")
		# Never both; a loser sees the source gone (or the lease busy).
		! { [ "$one" = ok ] && [ "$two" = ok ]; } || { echo "round $r: both moves done"; false; }
		if [ "$one" = ok ]; then
			run "$S" resolve "t/b$r/a$r"
			[ "$status" -eq 0 ]
			run "$S" resolve "t/a$r"
			[ "$output" = "No such file or directory" ]
			ok=$((ok + 1))
		elif [ "$two" = ok ]; then
			run "$S" resolve "t/a$r/b$r"
			[ "$status" -eq 0 ]
			run "$S" resolve "t/b$r"
			[ "$output" = "No such file or directory" ]
			ok=$((ok + 1))
		fi
	done
	[ "$ok" -gt 0 ]
	# Rounds where a move won leave one directory at the top; the others two.
	run "$S" check t $((2 * rounds - ok))
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "rmdir racing create never leaves an orphan" {
	local r rounds=20 rm cr removed=0 created=0
	cluster_start rmdir --groups 3 --nodes-per-group 2 --nosync
	run "$S" mkdir t
	[ "$output" = ok ]
	for r in $(seq 1 $rounds); do
		"$S" mkdir "t/d$r" >/dev/null
	done
	for r in $(seq 1 $rounds); do
		"$S" rmdir "t/d$r" >"$TMP/rm.$r" 2>&1 &
		"$S" create "t/d$r/f" >"$TMP/cr.$r" 2>&1 &
	done
	wait
	for r in $(seq 1 $rounds); do
		rm=$(cat "$TMP/rm.$r") cr=$(cat "$TMP/cr.$r")
		if [ "$rm" = ok ]; then
			# Removed: the create lost, and nothing is left under the name.
			[ "$cr" != ok ] || { echo "round $r: rmdir and create both succeeded"; false; }
			run "$S" resolve "t/d$r"
			[ "$output" = "No such file or directory" ]
			removed=$((removed + 1))
		else
			# Kept: a create that succeeded is reachable, and the directory is not empty.
			if [ "$cr" = ok ]; then
				run "$S" resolve "t/d$r/f"
				[ "$status" -eq 0 ]
				run "$S" rmdir "t/d$r"
				[ "$output" = "Directory not empty" ]
				created=$((created + 1))
			fi
		fi
	done
	echo "# rmdir won $removed, create won $created of $rounds" >&3
	run "$S" check t $((rounds - removed))
	echo "$output"
	[ "$status" -eq 0 ]
}
