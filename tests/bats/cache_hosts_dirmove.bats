#!/usr/bin/env bats
# cache_hosts_dirmove.bats — a directory another host moved into another
# parent follows here (decision 0071); what the follow must keep: the
# changed files inside it are still pushed (the records below the moved
# directory take their new hints), and a rename of this host in flight
# keeps its directory (review of s18-dirmove, doc/notes-s18-dirmove2.md).
# A re-hint cut short or too deep loses nothing either: the sync finds the
# files not at their recorded names by identity (doc/notes-s19-rehint.md).

setup() {
	POHM_TEST_BUILD=1
	load lib/common
	load lib/cluster
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	export POHMELFS_FSID=hosts POHMELFS_ATTR_TIMEOUT=0 POHMELFS_READ_REPAIR=1
	CTL=$B/tests/progs/cache_ctl
	T=$BATS_TEST_TMPDIR
}

teardown() {
	cluster_stop
}

on() {
	local h=$1
	shift
	POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state POHMELFS_HOST_ID=$h "$@"
}

# Host a changes d/sub/<path> (closed, not pushed); host b moves d/sub to e/sub.
changed_then_moved() {
	local path=$1
	on a "$CTL" mkdir d
	on a "$CTL" mkdir d/sub
	[ "$path" = f ] || on a "$CTL" mkdir "d/sub/${path%/*}"
	on a "$CTL" mkdir e
	on a "$CTL" write "d/sub/$path" "one"
	sleep 0.05
	printf 'two' >"$T/a/d/sub/$path"
	on b "$CTL" ls d
	on b "$CTL" ls e
	on b "$CTL" mv d/sub e/sub
}

@test "control: a changed file, no move, is pushed by sync" {
	on a "$CTL" mkdir d
	on a "$CTL" mkdir d/sub
	on a "$CTL" write d/sub/f "one"
	sleep 0.05
	printf 'two' >"$T/a/d/sub/f"
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get d/sub/f
	[ "$(cat "$T/c/d/sub/f")" = two ]
}

@test "a changed file in a directory that followed a move (old parent listed) is pushed by sync" {
	changed_then_moved f
	on a "$CTL" ls d
	[ "$(cat "$T/a/e/sub/f")" = two ]
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get e/sub/f
	[ "$(cat "$T/c/e/sub/f")" = two ]
}

@test "as above, the file then read by its new name before the sync" {
	changed_then_moved f
	on a "$CTL" ls d
	on a "$CTL" get e/sub/f
	[ "$(cat "$T/a/e/sub/f")" = two ]
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get e/sub/f
	[ "$(cat "$T/c/e/sub/f")" = two ]
}

@test "a changed file two levels below a directory that followed a move (new parent listed) is pushed by pohmelfsd" {
	changed_then_moved deep/f
	on a "$CTL" ls e
	[ "$(cat "$T/a/e/sub/deep/f")" = two ]
	sleep 0.1
	on a env POHMELFS_SYNC_TIMEOUT=0.2 "$B/pohmelfsd" --once
	on c "$CTL" get e/sub/deep/f
	[ "$(cat "$T/c/e/sub/deep/f")" = two ]
}

@test "a changed file in a directory renamed within its parent on another host is pushed by sync" {
	on a "$CTL" mkdir d
	on a "$CTL" mkdir d/sub
	on a "$CTL" write d/sub/f "one"
	sleep 0.05
	printf 'two' >"$T/a/d/sub/f"
	on b "$CTL" ls d
	on b "$CTL" mv d/sub d/sub2
	on a "$CTL" ls d
	[ "$(cat "$T/a/d/sub2/f")" = two ]
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get d/sub2/f
	[ "$(cat "$T/c/d/sub2/f")" = two ]
}

@test "a walk does not move a directory this host's rename is moving" {
	local ino
	on a "$CTL" mkdir d
	on a "$CTL" mkdir d/sub
	on a "$CTL" mkdir e
	ino=$(on a "$CTL" stat d/sub | cut -d' ' -f1)
	run env POHMELFS_TEST_KILL_IN_RENAME=1 POHMELFS_PREFIX="$T/a" POHMELFS_CACHE_DIR="$T/a-state" \
		POHMELFS_HOST_ID=a "$CTL" mv d/sub e/sub
	[ "$status" -eq 137 ]
	[ -f "$T/a-state/p/$ino.mv" ]
	# The renamer's lock held, as a live renamer holds it (no recovery).
	hold_renamer_lock "$T/a-state" "$ino" "$T"
	on a "$CTL" ls d
	[ -d "$T/a/d/sub" ]	# the listing leaves it to the renamer
	run on a "$CTL" stat d/sub
	touch "$T/release"
	wait
	[ -d "$T/a/d/sub" ]	# and so does the walk
	[ ! -e "$T/a/e/sub" ]
}

@test "a changed file in a directory this host renamed is pushed by sync" {
	on a "$CTL" mkdir d
	on a "$CTL" mkdir d/sub
	on a "$CTL" write d/sub/f "one"
	sleep 0.05
	printf 'two' >"$T/a/d/sub/f"
	on a "$CTL" mv d d2
	[ "$(cat "$T/a/d2/sub/f")" = two ]
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get d2/sub/f
	[ "$(cat "$T/c/d2/sub/f")" = two ]
}

# The other object of an exchange keeps a record naming where it is now
# (review of s18-dirmove2: only the source's record was re-hinted, so x's
# later change was never pushed by name).
@test "a changed file exchanged (RENAME_EXCHANGE) with another is pushed by sync" {
	on a "$CTL" write x "one"
	on a "$CTL" write y "uno"
	on a env LD_PRELOAD="$PRELOAD" python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2):
    raise OSError(ctypes.get_errno(), "renameat2")' "$T/a/x" "$T/a/y"
	[ "$(cat "$T/a/x")" = uno ]
	sleep 0.05
	printf 'two' >"$T/a/x"
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get x
	[ "$(cat "$T/c/x")" = two ]
	on c "$CTL" get y
	[ "$(cat "$T/c/y")" = one ]
}

# The re-hint walk had a 64-level bound; past it the records kept their old
# names and the push skipped the file.
@test "a changed file 70 levels below a directory this host renamed is pushed by sync" {
	local p=d q i
	on a "$CTL" mkdir d
	for i in $(seq 70); do
		p=$p/x
		on a "$CTL" mkdir "$p"
	done
	on a "$CTL" write "$p/f" "one"
	sleep 0.05
	printf 'two' >"$T/a/$p/f"
	on a "$CTL" mv d d2
	q=d2${p#d}
	[ "$(cat "$T/a/$q/f")" = two ]
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get "$q/f"
	[ "$(cat "$T/c/$q/f")" = two ]
}

# A follow whose re-hint is cut short (killed): no intent of this host says
# so; the sync's repair finds the files by identity.
@test "a changed file below a directory that followed a move, its re-hint killed, is pushed by sync" {
	changed_then_moved deep/f
	run on a env POHMELFS_TEST_KILL_IN_REHINT=1 "$CTL" ls d
	[ "$status" -eq 137 ]
	[ "$(cat "$T/a/e/sub/deep/f")" = two ]
	sleep 0.1
	on a "$CTL" sync
	on c "$CTL" get e/sub/deep/f
	[ "$(cat "$T/c/e/sub/deep/f")" = two ]
}

@test "as above, pushed by pohmelfsd" {
	changed_then_moved deep/f
	run on a env POHMELFS_TEST_KILL_IN_REHINT=1 "$CTL" ls d
	[ "$status" -eq 137 ]
	sleep 0.1
	on a env POHMELFS_SYNC_TIMEOUT=0.2 "$B/pohmelfsd" --once
	on c "$CTL" get e/sub/deep/f
	[ "$(cat "$T/c/e/sub/deep/f")" = two ]
}
