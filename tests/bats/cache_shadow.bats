#!/usr/bin/env bats
# cache_shadow.bats — pushes from write-only fds (DESIGN.md §2 "Never close a
# second fd at the wrong moment"): the POSIX locks a process holds on a file
# it opened O_WRONLY survive every push trigger (fsync, fdatasync, sync,
# syncfs, attribute changes, the close of another file), its data is pushed
# at close, and fsync commits it; a file the writer may not read back (mode
# 0200) is handed to pohmelfsd at close and still arrives in the storage.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=shadow-$RANDOM
	WOLOCK=$B/tests/helpers/cr_wolock
	U=
	mkdir -p "$T/a" "$T/b"
}

teardown() {
	local p
	[ -n "${WRITER:-}" ] && kill -KILL "$WRITER" 2>/dev/null
	stop_daemons
	if [ -n "$U" ]; then
		for p in $(pgrep -x pohmelfsd); do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^POHMELFS_PREFIX=$U/" &&
				kill "$p" 2>/dev/null
		done
		rm -rf "$U"
	fi
	cluster_stop
}

# reader_cmd OUT: a shell command that reads $T/b/f as host b into OUT.
reader_cmd() {
	echo "env LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/b POHMELFS_CACHE_DIR=$T/b-state POHMELFS_HOST_ID=b POHMELFS_ATTR_TIMEOUT=0 cat $T/b/f > $1 2>&1"
}

@test "sync_on_close: a write-only fd keeps its POSIX lock through every push trigger and is pushed at close" {
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	READER=$(reader_cmd "$T/at_close") run shim a timeout 120 "$WOLOCK" "$T/a/f" "$T/a/other"
	echo "$output"
	[ "$status" -eq 0 ]
	for step in write fsync fdatasync fstat fchmod sync syncfs other-close; do
		[[ "$output" == *"$step held"* ]]
	done
	[[ "$output" != *LOST* ]]
	# Read by host b after the close and before the writer exited.
	[ "$(cat "$T/at_close")" = "locked and written" ]
	[ "$(shim b cat "$T/b/other")" = other ]
}

@test "defaults (no sync_on_close): a write-only fd keeps its POSIX lock through every push trigger; pushed at exit" {
	unset POHMELFS_SYNC_ON_CLOSE
	export POHMELFS_ATTR_TIMEOUT=0
	run shim a timeout 120 "$WOLOCK" "$T/a/f" "$T/a/other"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *LOST* ]]
	[ "$(echo "$output" | grep -c ' held$')" -eq 8 ]
	[ "$(shim b cat "$T/b/f")" = "locked and written" ]
}

@test "fsync of a write-only fd commits the data (host b reads it before the close)" {
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	AFTER_FSYNC=$(reader_cmd "$T/after_fsync") run shim a timeout 120 "$WOLOCK" "$T/a/f" "$T/a/other"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fsync held"* ]]
	got=$(cat "$T/after_fsync")
	echo "host b after the writer's fsync: '$got'"
	[ "$got" = "locked and written" ]
}

@test "sync_on_close: a file the writer may not read (mode 0200) is pushed by pohmelfsd" {
	[ "$(id -u)" = 0 ] || skip "needs root: the writer runs as uid 65534"
	U=$(mktemp -d /tmp/cr-shadow-XXXXXX)
	chmod 755 "$U"
	mkdir -p "$U/u" "$U/u-state"
	chown 65534:65534 "$U/u" "$U/u-state"
	: >"$U/empty.conf"	# /root/.config is not readable for the unprivileged writer
	chmod 644 "$U/empty.conf"
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	# Unprivileged (root reads anything): the close cannot open a shadow.
	# The writer stays alive, and is killed with SIGKILL, so its exit pushes nothing.
	# LD_PRELOAD reaches only the writer, not setpriv: under SAN=address the
	# library cannot be preloaded into an uninstrumented program.
	unpriv_paths
	setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$UPRELOAD" \
		POHMELFS_PREFIX="$U/u" POHMELFS_CACHE_DIR="$U/u-state" POHMELFS_HOST_ID=u \
		POHMELFS_CONFIG="$U/empty.conf" "$UB/tests/helpers/cr_wonly" "$U/u/wo" 120 >"$T/writer.out" 2>&1 &
	WRITER=$!
	until_true 30 grep -q readable "$T/writer.out" || true
	cat "$T/writer.out"
	grep -q "^closed 200$" "$T/writer.out"
	grep -q "^not readable$" "$T/writer.out"
	# Host b (root) finds it in the storage while the writer still runs.
	b_has() {
		[ "$(LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/b POHMELFS_CACHE_DIR=$T/b-state POHMELFS_HOST_ID=b \
			timeout 30 cat "$T/b/wo" 2>/dev/null)" = 'write-only data' ]
	}
	if ! until_true 30 b_has; then
		ls -la "$U/u" "$U/u-state"
		cat "$U/u-state/pohmelfsd.log" 2>/dev/null
		# What a foreground push by the same user says about it.
		POHMELFS_PREFIX=$U/u POHMELFS_CACHE_DIR=$U/u-state POHMELFS_CONFIG=$U/empty.conf \
			setpriv --reuid=65534 --regid=65534 --clear-groups timeout 60 "$UB/pohmelfs" sync 2>&1 | tee "$T/sync.out"
		false
	fi
	kill -0 "$WRITER"
	[ "$(shim b stat -c %a "$T/b/wo")" = 200 ]
}

# The close's push takes the kept shadow without an fstat of its own and
# lets the push's fstat in its turn check it (issue 23, session 18).  Here
# the program puts another file on the shadow's number behind the shim's
# back (raw dup2, as a program's close_range and reopen would): the push
# must notice before it reads, take a new shadow and push the file's own
# bytes, and must not close the program's fd on that number.
@test "sync_on_close: a shadow's number taken over by another file: the close pushes the file's own bytes and leaves that fd open" {
	[ "$(uname -m)" = x86_64 ] || skip "raw syscall numbers of x86_64"
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	printf 'other bytes, not the file' >"$T/other"
	run shim a python3 -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
p = '$T/a/f'
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b'the file own bytes')
def names(n):	# the shim hides its own fds from the program's calls: raw fcntl
    return libc.syscall(72, n, 1) >= 0 and os.readlink('/proc/self/fd/%d' % n) == os.path.realpath(p)
sh = [n for n in range(fd + 1, 4096) if names(n)]
print('shadows', len(sh))
o = os.open('$T/other', os.O_RDONLY)
assert libc.syscall(33, o, sh[0]) == sh[0]	# SYS_dup2: the number names another file now
os.close(fd)
print('kept', os.pread(sh[0], 64, 0).decode())
"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"shadows 1"* ]]
	[[ "$output" == *"kept other bytes, not the file"* ]]
	[ "$(shim b cat "$T/b/f")" = "the file own bytes" ]
}

@test "sync_on_close: the program's fd number taken over by another file (raw dup2): its close pushes the file it wrote, by its shadow" {
	[ "$(uname -m)" = x86_64 ] || skip "raw syscall numbers of x86_64"
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	printf 'other bytes, not the file' >"$T/other"
	# The close takes the file from the shadow its open made, not from an
	# fstat of the number (issue 23): host b reads the bytes while the
	# writer still runs (no exit push yet), and the other file is untouched.
	run shim a python3 -c "
import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('$T/a/f', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b'the file own bytes')
o = os.open('$T/other', os.O_RDONLY)
assert libc.syscall(33, o, fd) == fd	# SYS_dup2 behind the shim: fd names the other file now
os.close(fd)
subprocess.run('$(reader_cmd "$T/read")', shell=True)
print('read', open('$T/read').read())
"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"read the file own bytes"* ]]
	[ "$(cat "$T/other")" = "other bytes, not the file" ]
}
