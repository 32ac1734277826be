#!/usr/bin/env bats
# cache_users.bats — per-user caches (core/mount/mount_user.c) share the prefix's
# local tree: a directory the first user's cache made is unknown to the
# second user's journal.  The second user works in it as its permissions
# allow, hears about it once per process (not on every walk), and nothing
# of the first user's is touched.  Runs as root, then as uid 65534 through
# setpriv (CI runs as root).

bats_require_minimum_version 1.5.0

setup() {
	load lib/common
	load lib/cluster
	preload_ok || skip "LD_PRELOAD does not work here"
	[ "$(id -u)" = 0 ] || skip "needs root to run as another user"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	export POHMELFS_FSID=users-$RANDOM POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	# bats's own directory is mode 700: the prefixes live where 65534 reaches.
	U=$(mktemp -d /tmp/cr-users-XXXXXX)
	chmod 755 "$U"
	mkdir -m 1777 "$U/tmp"
	: >"$U/empty.conf"	# /root/.config is not readable for 65534
	chmod 644 "$U/empty.conf"
	export POHMELFS_CONFIG=$U/empty.conf
}

teardown() {
	local p
	for p in $(pgrep -x pohmelfsd); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^POHMELFS_PREFIX=$U/" &&
			kill "$p" 2>/dev/null
	done
	cluster_stop
	[ -z "${U:-}" ] || rm -rf "$U"
}

# as_root HOST CMD...: CMD under the shim as root on host HOST (prefix $U/HOST).
as_root() {
	local h=$1
	shift
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$U/$h POHMELFS_CACHE_DIR=$U/$h-state \
		POHMELFS_HOST_ID=$h timeout -k 5 120 "$@"
}

# as_user CMD...: CMD under the shim as uid 65534 on host a, root's cache_dir
# configured (so it gets a cache of its own under $U/tmp), warnings logged.
# LD_PRELOAD reaches CMD only, not setpriv.
as_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env TMPDIR="$U/tmp" \
		LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$U/a" POHMELFS_CACHE_DIR="$U/a-state" \
		POHMELFS_HOST_ID=a POHMELFS_LOG_LEVEL=warn timeout -k 5 120 "$@"
}

@test "a directory another user's cache made: usable by the second user, reported once per process, the first user's files untouched" {
	unpriv_paths
	as_root a bash -c "mkdir '$U/a/w' && chmod 777 '$U/a/w' && echo first >'$U/a/w/f'"
	# In one process (bash builtins only): five walks through w, a read, a
	# create.  Then a listing (ls: another process, which says it once too).
	run as_user bash -c 'echo "pid $$"; for i in 1 2 3 4 5; do [ -d "$1/w/." ] || exit 1; done
		read -r x <"$1/w/f" && echo "read $x" && echo second >"$1/w/g" &&
		[ -d "$1/w/." ] && ls "$1/w"; echo "ls $?"' _ "$U/a"
	echo "$output"
	[ "$status" = 0 ]
	pid=$(sed -n 's/^pid //p' <<<"$output")
	[ "$(grep -c "pohmelfs\[$pid\]: warning: w: a local directory this cache did not make" <<<"$output")" = 1 ]
	[ "$(grep -c 'w: a local directory this cache did not make' <<<"$output")" = 2 ]
	! grep -q 'w: changed here and replaced elsewhere' <<<"$output" || false
	grep -q '^read first$' <<<"$output"
	grep -q '^ls 0$' <<<"$output"
	grep -qx g <<<"$output"
	[ -d "$U/tmp/pohmelfs-65534" ]	# its own cache, as mount_user.c says
	# The second user's file reached the storage; the first user's is intact
	# here and there, and the first user's cache_dir got nothing of 65534.
	[ "$(as_root b cat "$U/b/w/g")" = second ]
	[ "$(as_root b cat "$U/b/w/f")" = first ]
	[ "$(cat "$U/a/w/f")" = first ]
	[ -z "$(find "$U/a-state" -user 65534)" ]
}

# stop_user_daemon: stop uid 65534's pohmelfsd of host a and wait for it.
stop_user_daemon() {
	local p i
	for p in $(pgrep -x -u 65534 pohmelfsd); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "POHMELFS_PREFIX=$U/a" || continue
		kill "$p" 2>/dev/null
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	done
	return 0
}

# user_sync: `pohmelfs sync` (push and reconcile) of uid 65534's cache on host a.
user_sync() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env TMPDIR="$U/tmp" \
		POHMELFS_PREFIX="$U/a" POHMELFS_CACHE_DIR="$U/a-state" POHMELFS_HOST_ID=a \
		timeout -k 5 120 "$UB/pohmelfs" sync
}

@test "each user's reconcile leaves the other user's files in the tree and adopts its own user's" {
	unpriv_paths
	as_root a bash -c "mkdir '$U/a/w' && chmod 777 '$U/a/w' && echo first >'$U/a/w/f'"
	# 65534 writes in root's directory, and makes one of its own (its cache records it).
	run as_user bash -c 'echo second >"$1/w/g" && echo third >"$1/w/h" && mkdir "$1/w/ud" &&
		chmod 777 "$1/w/ud"' _ "$U/a"
	echo "$output"
	[ "$status" = 0 ]
	# 65534's write-opens started its pohmelfsd (decision 0016), which would
	# push h's change below: this test is about what root's sync does with
	# it, so that one stops first (SIGTERM: its last round, then exit).
	stop_user_daemon
	# h changed after its push by 65534 without the shim: no longer the stored file.
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo more >>'$U/a/w/h'"
	as_root a bash -c "echo root >'$U/a/w/ud/rf'"
	echo nos >"$U/a/w/nos"	# root's, without the shim
	sleep 5.5	# cachescan.c SETTLE_NS
	as_root a "$B/pohmelfs" sync
	[ "$(cat "$U/a/w/g")" = second ]
	[ "$(printf '%s ' $(cat "$U/a/w/h"))" = "third more " ]
	# Root's file made without the shim was adopted by root's cache; 65534's
	# unpushed change was not pushed by it (65534's own sync pushes it).
	[ "$(as_root b cat "$U/b/w/nos")" = nos ]
	[ "$(as_root b cat "$U/b/w/h")" = third ]
	user_sync
	[ "$(cat "$U/a/w/f")" = first ]
	[ "$(cat "$U/a/w/ud/rf")" = root ]
	[ "$(cat "$U/a/w/nos")" = nos ]
	[ ! -e "$U/a/.pohmelfs-conflicts" ]
	[ "$(as_root b cat "$U/b/w/ud/rf")" = root ]
	[ "$(printf '%s ' $(as_root b cat "$U/b/w/h"))" = "third more " ]
	[ -z "$(as_root b ls "$U/b/.pohmelfs-conflicts" 2>/dev/null)" ]
}

# as_member NAME CHOWN [EXIT]: as uid 65534 with group 4242 too, write
# w/NAME through a write-only fd, fchown it to group 4242 when CHOWN is 1,
# close, exit (os._exit with EXIT=_exit: nothing pushed at exit); its
# stats=1 table on stderr.
as_member() {
	setpriv --reuid=65534 --regid=65534 --groups=4242 env TMPDIR="$U/tmp" \
		LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$U/a" POHMELFS_CACHE_DIR="$U/a-state" \
		POHMELFS_HOST_ID=a POHMELFS_LOG_LEVEL=warn POHMELFS_STATS=1 timeout -k 5 120 python3 -c "
import os
fd = os.open('$U/a/w/$1', os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'data')
if $2:
    os.fchown(fd, -1, 4242)
os.close(fd)
if '${3:-}' == '_exit':
    os._exit(0)"
}

@test "a non-root user's fchown through a write-only fd: the close's push stores the group" {
	# tar -x keeping a file's group as its user: write, fchown(fd, -1, g)
	# on the write-only fd, close.  The push at the close sends the group
	# (a non-root cache's pushes send none otherwise), in its commit: no
	# wait of its own.
	unpriv_paths
	as_root a bash -c "mkdir '$U/a/w' && chmod 777 '$U/a/w'"
	as_member warm 0
	run --separate-stderr as_member g 0
	[ "$status" = 0 ]
	waits_g=$(awk '$1 == "net_waits" { print $2 }' <<<"$stderr")
	[ "$waits_g" -ge 1 ]
	run --separate-stderr as_member f 1
	echo "$stderr"
	[ "$status" = 0 ]
	[ "$(awk '$1 == "net_waits" { print $2 }' <<<"$stderr")" = "$waits_g" ]
	[ "$(stat -c %g "$U/a/w/f")" = 4242 ]
	[ "$(as_root b stat -c %u:%g "$U/b/w/f")" = 65534:4242 ]
	[ "$(as_root b cat "$U/b/w/f")" = data ]
	# Closed without a push (sync_on_close=0) by a process that then
	# leaves at once: pohmelfsd's push sends the group (the journal noted
	# it, not the process).
	POHMELFS_SYNC_ON_CLOSE=0 as_member h 1 _exit
	until_true 30 sh -c "[ \"\$(LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$U/b POHMELFS_CACHE_DIR=$U/b-state \
		POHMELFS_HOST_ID=b stat -c %g '$U/b/w/h')\" = 4242 ]"
}
