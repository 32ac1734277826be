#!/usr/bin/env bats
# cache_stubs.bats — a stub (a listed file whose data is not fetched,
# core/cache/stub.h: a mode-000 socket inode) fails loudly for every program that
# bypasses the shim, root included (issue 21 item 9: root used to read a
# stub as an empty file, exit 0), whether `pohmelfs cache clean` made it or
# a listing did; and under the shim it is the stored file in every respect:
# stat and lstat, readdir's d_type (find -type f), access, read, exec,
# rename, link, unlink, xattrs — without a fetch where none is needed.
# Runs as root, as CI does: what a user sees (EACCES) is in cache_hosts.bats,
# the retry through a symlink from outside the prefix in cache_rules.bats,
# a stub written without the shim (only the regular form can be) in
# cache_refresh.bats.

setup() {
	POHM_TEST_BUILD=1	# POHMELFS_TEST_REGULAR_STUBS: build/test/ reads it
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	[ "$(id -u)" = 0 ] || skip "checks what root sees without the shim (CI runs as root)"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID="stubs-$BATS_TEST_NUMBER-$RANDOM" POHMELFS_ATTR_TIMEOUT=0 \
		POHMELFS_SYNC_ON_CLOSE=1
	unset POHMELFS_TEST_REGULAR_STUBS
	mkdir -p "$T/a" "$T/b"
}

teardown() {
	stop_daemons
	cluster_stop
}

# on HOST CMD...: CMD under the shim as HOST, bounded in time.
on() {
	local h=$1
	shift
	shim "$h" timeout -k 5 120 "$@"
}

# plain CMD...: CMD without the shim (as root), bounded in time.
plain() {
	timeout -k 5 60 "$@"
}

# clean HOST: `pohmelfs cache clean` of HOST's cache.
clean() {
	POHMELFS_PREFIX=$T/$1 POHMELFS_CACHE_DIR=$T/$1-state POHMELFS_HOST_ID=$1 \
		timeout -k 5 120 "$B/pohmelfs" cache clean
}

# refuses FILE: root without the shim cannot read FILE (cat and head fail,
# print no data) nor write into it, and it stays a stub.
refuses() {
	run plain cat "$1"
	echo "cat $1: status $status: $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such device or address"* ]]
	run plain head -c 1 "$1"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such device or address"* ]]
	run plain sh -c "echo overwritten >> '$1'"
	[ "$status" -ne 0 ]
	[ "$(stat -c '%F %s %a' "$1")" = "socket 0 0" ]
}

@test "after pohmelfs cache clean, root without the shim gets an error reading a stub, never empty data" {
	on a sh -c "echo 'stored data' > '$T/a/f'"
	[ "$(plain cat "$T/a/f")" = "stored data" ]	# a fetched copy is a plain file
	run clean a
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "cache clean: 1 file replaced by stubs, "* ]]
	refuses "$T/a/f"
	# Under the shim: the stored file, without a fetch for stat ...
	[ "$(on a stat -c '%F %s %a' "$T/a/f")" = "regular file 12 644" ]
	on a test -f "$T/a/f"
	[ -S "$T/a/f" ]
	# ... and with one for a read; then a plain file again.
	[ "$(on a cat "$T/a/f")" = "stored data" ]
	[ "$(plain cat "$T/a/f")" = "stored data" ]
}

@test "a file listed but not fetched: plain programs fail, the shim shows the stored file and reads and runs it" {
	on a sh -c "mkdir '$T/a/d' && echo 'stored data' > '$T/a/d/f' &&
		printf '#!/bin/sh\necho ran\n' > '$T/a/d/x' && chmod 755 '$T/a/d/x'"
	on b ls "$T/b/d" >/dev/null
	refuses "$T/b/d/f"
	run plain "$T/b/d/x"
	echo "$output"
	[ "$status" -eq 126 ]
	[ ! -f "$T/b/d/f" ]
	# Under the shim, no fetch needed: stat, lstat, ls -l, access, and
	# readdir's d_type (find -type f decides by it).
	[ "$(on b stat -c '%F %s %a' "$T/b/d/f")" = "regular file 12 644" ]
	[ "$(on b stat -L -c '%F %s %a' "$T/b/d/x")" = "regular file 19 755" ]
	[ "$(on b ls -l "$T/b/d/f" | cut -c1-10)" = "-rw-r--r--" ]
	on b test -f "$T/b/d/f"
	on b test -x "$T/b/d/x"
	[ "$(on b find "$T/b/d" -type f | sort)" = "$(printf '%s\n%s' "$T/b/d/f" "$T/b/d/x")" ]
	[ -z "$(on b find "$T/b/d" -type s)" ]
	[ -S "$T/b/d/f" ]
	[ -S "$T/b/d/x" ]
	# A read and an exec fetch.
	[ "$(on b cat "$T/b/d/f")" = "stored data" ]
	[ "$(on b "$T/b/d/x")" = ran ]
	[ "$(on b sh -c "PATH='$T/b/d' x")" = ran ]
	[ -f "$T/b/d/x" ]
}

@test "rename, hardlink and unlink of a stub under the shim" {
	on a sh -c "echo 'stored data' > '$T/a/f'"
	on b ls "$T/b" >/dev/null
	[ -S "$T/b/f" ]
	on b mv "$T/b/f" "$T/b/g"
	[ -S "$T/b/g" ]
	[ ! -e "$T/b/f" ]
	on b ln "$T/b/g" "$T/b/h"
	[ "$(on b stat -c '%F %h %s' "$T/b/h")" = "regular file 2 12" ]
	[ "$(on b cat "$T/b/h")" = "stored data" ]
	[ "$(on b cat "$T/b/g")" = "stored data" ]
	on b rm "$T/b/g"
	[ "$(on a cat "$T/a/h")" = "stored data" ]
	on a test ! -e "$T/a/g"
	# Written under the shim after all that: the other host reads it.
	on b sh -c "echo 'new data' > '$T/b/h'"
	[ "$(on a cat "$T/a/h")" = "new data" ]
}

@test "xattrs of a stub: user.* from the stored inode; a stub without any is not fetched to list them" {
	command -v python3 >/dev/null || skip "no python3"
	touch "$T/probe"
	python3 -c "import os; os.setxattr('$T/probe', 'user.k', b'v')" 2>/dev/null ||
		skip "no user xattrs on this file system"
	on a sh -c "echo 'stored data' > '$T/a/f' && echo 'no xattrs' > '$T/a/p'"
	on a python3 -c "import os; os.setxattr('$T/a/f', 'user.k', b'v')"
	on b ls "$T/b" >/dev/null
	[ -S "$T/b/f" ]
	[ -S "$T/b/p" ]
	# ls -l asks for ACLs and SELinux labels: no fetch.
	on b ls -l "$T/b" >/dev/null
	[ "$(on b python3 -c "import os; print(os.listxattr('$T/b/p'))")" = "[]" ]
	[ -S "$T/b/p" ]
	[ "$(on b python3 -c "import os; print(os.listxattr('$T/b/f'))")" = "['user.k']" ]
	[ "$(on b python3 -c "import os; print(os.getxattr('$T/b/f', 'user.k').decode())")" = v ]
	[ -f "$T/b/f" ]
	# After cache clean too (the stub keeps what the clean copy had).
	run clean b
	[ "$status" -eq 0 ]
	[ -S "$T/b/f" ]
	[ "$(on b python3 -c "import os; print(os.getxattr('$T/b/f', 'user.k').decode())")" = v ]
}

@test "the regular stub form (a file system without socket inodes) still serves the shim" {
	export POHMELFS_TEST_REGULAR_STUBS=1
	on a sh -c "echo 'stored data' > '$T/a/f'"
	on b ls "$T/b" >/dev/null
	[ "$(stat -c '%F %s %a' "$T/b/f")" = "regular empty file 0 0" ]
	[ "$(on b stat -c '%F %s %a' "$T/b/f")" = "regular file 12 644" ]
	[ "$(on b cat "$T/b/f")" = "stored data" ]
	run clean b
	[ "$status" -eq 0 ]
	[ "$(stat -c '%F %s %a' "$T/b/f")" = "regular empty file 0 0" ]
	[ "$(on b cat "$T/b/f")" = "stored data" ]
}

@test "a stub chmod'ed without the shim holds no data: read under the shim, gone when removed elsewhere, no conflict copy" {
	on a sh -c "echo 'stored data' > '$T/a/f' && echo 'other' > '$T/a/g'"
	on b ls "$T/b" >/dev/null
	chmod 644 "$T/b/f" "$T/b/g"
	run plain cat "$T/b/f"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such device or address"* ]]
	[ "$(on b cat "$T/b/f")" = "stored data" ]
	on a rm "$T/a/g"
	on b ls "$T/b" >/dev/null
	[ ! -e "$T/b/g" ]
	run on b ls -A "$T/b"
	[ "$output" = f ]
}
