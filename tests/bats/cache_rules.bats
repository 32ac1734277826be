#!/usr/bin/env bats
# cache_rules.bats — rules of DESIGN.md §2 that no other test checks, with
# the storage on (a local 2-group cluster, one fsid per test):
#   - "Refresh by rename": with cache_dir on another device than the prefix,
#     fetches are built in .pohmelfs-staging at the prefix root, which
#     readdir hides, which never reaches the storage, and which keeps no
#     temp file;
#   - "Special files": a FIFO's and a device's data is never pushed (and a
#     push never hangs reading them); a unix socket stays local;
#   - "Space": cache_min_free makes pohmelfsd evict clean, unopened files,
#     and only until that much is free;
#   - step 1: a symlink outside the prefix that points into it, used to open
#     a stub, is noticed on the stub's EACCES (ENXIO for root: core/cache/stub.h)
#     and the open retried as a prefix path, so the program reads the
#     stored content;
#   - create marks (now a lock on cache_dir/c.lock, decision 0016; a
#     listing leaves an in-flight create alone) leave no file behind, and
#     pohmelfsd drops earlier-format files (p/DINO.cHASH) a killed creator
#     left once they are past their 5 s.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID="rules-$BATS_TEST_NUMBER-$RANDOM" POHMELFS_ATTR_TIMEOUT=0 \
		POHMELFS_SYNC_ON_CLOSE=1
	mkdir -p "$T/a" "$T/b" "$T/c"
	PIDS= SHM=
}

teardown() {
	local p
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	pkill -KILL -f "$T/a/s/sock" 2>/dev/null
	stop_daemons
	cluster_stop
	[ -z "$SHM" ] || rm -rf "$SHM"
}


# on HOST CMD...: CMD under the shim as HOST, bounded in time.
on() {
	local h=$1
	shift
	shim "$h" timeout -k 5 120 "$@"
}

# is_stub FILE: an empty mode-000 local file (a socket inode: core/cache/stub.h).
is_stub() {
	[ "$(stat -c '%s %a' "$1")" = "0 0" ]
}

# daemon_once HOST [VAR=VALUE...]: one pohmelfsd round for HOST (push, adopt, evict).
daemon_once() {
	local h=$1
	shift
	env POHMELFS_PREFIX="$T/$h" POHMELFS_CACHE_DIR="$T/$h-state" POHMELFS_HOST_ID="$h" "$@" \
		timeout -k 5 120 "$B/pohmelfsd" --once
}

@test "cache_dir on another device: fetches go through a hidden .pohmelfs-staging at the prefix root and leave nothing" {
	SHM=$(mktemp -d /dev/shm/pohm-rules.XXXXXX)
	[ "$(stat -c %d "$SHM")" != "$(stat -c %d "$T")" ] || skip "/dev/shm is on the same file system as $T"
	P=$SHM/p
	# ss CMD...: CMD under the shim as host s: prefix on /dev/shm, cache_dir under $T.
	ss() {
		LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$P POHMELFS_CACHE_DIR=$T/s-state POHMELFS_HOST_ID=s \
			timeout -k 5 120 "$@"
	}
	on a sh -c "echo one > '$T/a/f'; mkdir '$T/a/d'; echo deep > '$T/a/d/g'"
	[ "$(ss cat "$P/f")" = one ]
	# The staging directory is used: it is at the prefix root (seen without the shim).
	[ -d "$P/.pohmelfs-staging" ]
	old=$(stat -c %i "$P/f")
	on a sh -c "echo two > '$T/a/f'"
	[ "$(ss cat "$P/f")" = two ]
	[ "$(ss cat "$P/d/g")" = deep ]
	# Refreshed by rename on the prefix's own file system: a new local inode there.
	[ "$(stat -c %i "$P/f")" != "$old" ]
	[ "$(stat -c %d "$P/f")" = "$(stat -c %d "$P")" ]
	# A program that lists the root under the shim never sees it.
	run ss ls -a "$P"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *pohmelfs-staging* ]]
	[[ "$output" == *d*f* ]]
	run ss find "$P" -maxdepth 1
	[ "$status" -eq 0 ]
	[[ "$output" != *pohmelfs-staging* ]]
	run ss python3 -c "import os; print(os.listdir('$P'), [e.name for e in os.scandir('$P')])"
	[ "$status" -eq 0 ]
	[[ "$output" != *pohmelfs-staging* ]]
	# No temp file left behind, in the staging directory or the cache.
	[ -z "$(ls -A "$P/.pohmelfs-staging")" ]
	[ ! -d "$T/s-state/tmp" ] || [ -z "$(ls -A "$T/s-state/tmp")" ]
	# A write on s is pushed; after a sync and a daemon round the staging
	# directory never reached the storage: host c does not list it.
	ss sh -c "echo from-s > '$P/h'"
	POHMELFS_PREFIX=$P POHMELFS_CACHE_DIR=$T/s-state POHMELFS_HOST_ID=s timeout -k 5 120 "$B/pohmelfs" sync
	sleep 5.5
	POHMELFS_PREFIX=$P POHMELFS_CACHE_DIR=$T/s-state POHMELFS_HOST_ID=s timeout -k 5 120 "$B/pohmelfsd" --once
	[ "$(on c cat "$T/c/h")" = from-s ]
	run on c ls -a "$T/c"
	echo "$output"
	[[ "$output" != *pohmelfs-staging* ]]
	run on c stat "$T/c/.pohmelfs-staging"
	[ "$status" -ne 0 ]
	[ -z "$(ls -A "$P/.pohmelfs-staging")" ]
}

@test "a FIFO's data is never pushed, and pushing it never blocks" {
	on a mkfifo "$T/a/fifo"
	on a cat "$T/a/fifo" >"$T/fifo.out" &
	PIDS=$!
	on a sh -c "echo 'through the pipe' > '$T/a/fifo'"
	wait "$PIDS"
	PIDS=
	[ "$(cat "$T/fifo.out")" = "through the pipe" ]
	# A push of everything a has (foreground) neither hangs nor stores data.
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a timeout -k 5 120 "$B/pohmelfs" sync
	[ "$(on b stat -c '%F %s' "$T/b/fifo")" = "fifo 0" ]
	[ -p "$T/b/fifo" ]
	run on b python3 -c "import os; fd = os.open('$T/b/fifo', os.O_RDONLY | os.O_NONBLOCK); print(len(os.read(fd, 100)))"
	[ "$status" -eq 0 ]
	[ "$output" = 0 ]
}

@test "a device's data is never pushed, and pushing it never reads the device (as root)" {
	[ "$(id -u)" = 0 ] || skip "needs root for mknod of a device"
	on a mknod -m 0666 "$T/a/zero" c 1 5
	[ -c "$T/a/zero" ]
	# Reading and writing it works as on a local disk and returns promptly
	# (a push at close that read /dev/zero to its end would never return).
	[ "$(on a head -c 1000 "$T/a/zero" | wc -c)" = 1000 ]
	on a sh -c "echo data > '$T/a/zero'"
	on a python3 -c "
import os
fd = os.open('$T/a/zero', os.O_RDWR)
os.write(fd, b'x' * 4096)
os.close(fd)
"
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a timeout -k 5 120 "$B/pohmelfs" sync
	[ "$(on b stat -c '%F %t:%T %s' "$T/b/zero")" = "character special file 1:5 0" ]
	[ -c "$T/b/zero" ]
	[ "$(on b head -c 10 "$T/b/zero" | wc -c)" = 10 ]
}

@test "a unix socket made under the prefix stays local: another host never sees it, it keeps working" {
	on a mkdir "$T/a/s"
	shim_bg a timeout -k 5 300 python3 -c "
import os, socket
s = socket.socket(socket.AF_UNIX)
s.bind('$T/a/s/sock')
s.listen(4)
open('$T/listening', 'w').close()
while True:
    c, _ = s.accept()
    c.sendall(b'pong')
    c.close()
"
	# SHIM_BG_PID is timeout's: teardown's pkill stops the server below it.
	PIDS=$SHIM_BG_PID
	for i in $(seq 300); do [ -e "$T/listening" ] && break; sleep 0.1; done
	[ -S "$T/a/s/sock" ]
	# A regular file made without the shim in the same directory: the
	# adoption below must take it (so it did look) but not the socket.
	echo native >"$T/a/s/plain"
	sleep 5.5
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a timeout -k 5 120 "$B/pohmelfs" sync
	daemon_once a
	# Host a's own listing (re-listed at every open here) keeps it.
	run on a ls "$T/a/s"
	[[ "$output" == *sock* ]]
	[ -S "$T/a/s/sock" ]
	run on a python3 -c "
import socket
c = socket.socket(socket.AF_UNIX)
c.connect('$T/a/s/sock')
print(c.recv(10).decode())
"
	[ "$output" = pong ]
	# Host b: the adopted file, not the socket.
	[ "$(on b cat "$T/b/s/plain")" = native ]
	run on b ls -a "$T/b/s"
	echo "$output"
	[[ "$output" != *sock* ]]
	run on b stat "$T/b/s/sock"
	[ "$status" -ne 0 ]
	[ ! -e "$T/b/s/sock" ]
}

@test "cache_min_free beyond what the disk can give: pohmelfsd evicts every clean, unopened file, keeps dirty and open ones" {
	for i in 1 2 3 4; do
		on a sh -c "head -c 1048576 /dev/urandom > '$T/a/f$i'"
		sha256sum <"$T/a/f$i" >"$T/f$i.sum"
	done
	# A bound that holds already: nothing is evicted.
	daemon_once a POHMELFS_CACHE_MIN_FREE=1K
	for i in 1 2 3 4; do ! is_stub "$T/a/f$i" || false; done
	# f1 changed without the shim (dirty), f2 held open.  The storage is
	# down, so the round's push of f1 fails and f1 is still dirty when the
	# round evicts (with the storage up the round pushes f1 first, and then
	# f1 is clean: see below).
	printf 'tail' >>"$T/a/f1"
	sleep 60 <"$T/a/f2" &
	PIDS=$!
	cluster_kill 1-1
	cluster_kill 2-1
	run daemon_once a POHMELFS_CACHE_MIN_FREE=100%
	echo "pohmelfsd --once, storage down: $status $output"
	kill "$PIDS"
	PIDS=
	! is_stub "$T/a/f1" || false
	! is_stub "$T/a/f2" || false
	is_stub "$T/a/f3"
	is_stub "$T/a/f4"
	# The storage back: the next round pushes f1, which is then clean and
	# unopened, so it goes too, and comes back with its tail.
	cluster_start_node 1-1
	cluster_start_node 2-1
	daemon_once a POHMELFS_CACHE_MIN_FREE=100%
	is_stub "$T/a/f1"
	[ "$(on a tail -c 4 "$T/a/f1")" = tail ]
	# The evicted files come back whole; the dirty one reached the storage.
	for i in 2 3 4; do
		on a cat "$T/a/f$i" | sha256sum | cmp - "$T/f$i.sum"
	done
	on b cat "$T/b/f1" | tail -c 4 | grep -qx tail
}

@test "cache_min_free on a small file system: pohmelfsd evicts until that much is free, and no further (as root)" {
	[ "$(id -u)" = 0 ] || skip "needs root for a private tmpfs (CI runs as root)"
	unshare -m true 2>/dev/null || skip "no mount namespaces here"
	mkdir -p "$T/small"
	export PRELOAD B T
	run timeout -k 5 300 unshare -m bash -c '
		set -u
		mount -t tmpfs -o size=16m tmpfs "$T/small" && mkdir "$T/small/p" || exit 10
		S() { LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/small/p POHMELFS_CACHE_DIR=$T/small/state \
			POHMELFS_HOST_ID=small "$@"; }
		for i in 1 2 3 4 5; do
			S sh -c "head -c 2097152 /dev/urandom > $T/small/p/f$i" || exit 11
		done
		free() { echo $(( $(stat -f -c "%a * %S" "$T/small") )); }
		echo "free before: $(free)"
		POHMELFS_PREFIX=$T/small/p POHMELFS_CACHE_DIR=$T/small/state POHMELFS_HOST_ID=small \
			POHMELFS_CACHE_MIN_FREE=9M $B/pohmelfsd --once || exit 12
		after=$(free)
		echo "free after: $after"
		[ "$after" -ge $((9 << 20)) ] || exit 13
		# No further: without the last 2 MiB file evicted it was still short.
		[ $((after - 2097152)) -lt $((9 << 20)) ] || exit 15
		n=0
		for i in 1 2 3 4 5; do
			[ "$(stat -c "%s %a" $T/small/p/f$i)" = "0 0" ] && n=$((n + 1))
		done
		echo "stubs: $n"
		[ "$n" -ge 1 ] && [ "$n" -le 4 ] || exit 14
		exit 0
	'
	echo "$output"
	[ "$status" -eq 0 ]
}

# nodac CMD...: CMD without the power to read a mode-000 file (root loses
# CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH; others are unaffected).
nodac() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --inh-caps=-dac_override,-dac_read_search \
			--bounding-set=-dac_override,-dac_read_search "$@"
	else
		"$@"
	fi
}

@test "a symlink outside the prefix pointing at a stub inside: the shim notices the EACCES or ENXIO and reads the stored content" {
	on a sh -c "mkdir '$T/a/d'; echo 'the stored content' > '$T/a/d/f'"
	on b ls "$T/b/d" >/dev/null
	is_stub "$T/b/d/f"
	mkdir "$T/out"
	ln -s "$T/b/d/f" "$T/out/link"
	ln -s "$T/b/d" "$T/out/dir"
	# Without the shim the stub refuses (so the capabilities are really gone).
	run nodac cat "$T/out/link"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	# Under the shim, by the file symlink and through a directory symlink
	# (first a stub next to it by its own path: the shim works without the
	# capabilities).
	on a sh -c "echo 'another' > '$T/a/d/f2'"
	on b ls "$T/b/d" >/dev/null
	is_stub "$T/b/d/f2"
	[ "$(nodac env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/b" POHMELFS_CACHE_DIR="$T/b-state" \
		POHMELFS_HOST_ID=b timeout -k 5 120 cat "$T/b/d/f2")" = another ]
	is_stub "$T/b/d/f"
	run nodac env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/b" POHMELFS_CACHE_DIR="$T/b-state" \
		POHMELFS_HOST_ID=b timeout -k 5 120 cat "$T/out/link" "$T/out/dir/f"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'the stored content\nthe stored content')" ]
	# Root with its capabilities: the stub refuses it too (ENXIO, never empty
	# data), and the shim notices that as well.
	[ "$(id -u)" = 0 ] || return 0
	on a sh -c "echo 'third' > '$T/a/d/f3'"
	on b ls "$T/b/d" >/dev/null
	is_stub "$T/b/d/f3"
	ln -s "$T/b/d/f3" "$T/out/link3"
	run cat "$T/out/link3"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such device or address"* ]]
	[ "$(on b cat "$T/out/link3" "$T/out/dir/f3")" = "$(printf 'third\nthird')" ]
}

@test "create marks: none stay after creates; pohmelfsd drops marks past their age and keeps young ones" {
	on a bash -c "mkdir '$T/a/d' && for i in \$(seq 20); do echo \$i > '$T/a/d/f'\$i; done"
	run bash -c "ls '$T/a-state/p' | grep -E '^[0-9a-f]+\.c[0-9a-f]{16}\$'"
	[ -z "$output" ]
	# What a creator killed between its storage insert and its local open leaves.
	echo 999999 >"$T/a-state/p/1f.c0123456789abcdef"
	touch -d '1 minute ago' "$T/a-state/p/1f.c0123456789abcdef"
	echo $$ >"$T/a-state/p/1f.cfedcba9876543210"
	echo keep >"$T/a-state/p/1f.cnot-a-mark"
	touch -d '1 minute ago' "$T/a-state/p/1f.cnot-a-mark"
	daemon_once a
	[ ! -e "$T/a-state/p/1f.c0123456789abcdef" ]
	[ -e "$T/a-state/p/1f.cfedcba9876543210" ]
	[ -e "$T/a-state/p/1f.cnot-a-mark" ]
	[ "$(on b cat "$T/b/d/f7")" = 7 ]
}
