#!/usr/bin/env bats
# cache_hosts_rmdir.bats — a directory removed on another host (`rm -r`)
# goes from this host's local tree with its entries once this host looks
# (a listing of its parent, or a walk through it after attr_timeout):
# before session 16 only an empty one went, and the files below it stayed
# found here for good (doc/notes-s15-findls.md).  Nothing changed here is
# lost: such a file is kept as a conflict copy (DESIGN §1 "Conflicts").

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts rmdirh
}

teardown() {
	stop_daemons
	cluster_stop
}

# made HOST: b's tree d (f1, f3, s/f2), every file fetched by HOST.
made() {
	shim b mkdir -p "$T/b/d/s"
	shim b sh -c "echo one >'$T/b/d/f1'; echo two >'$T/b/d/s/f2'; echo three >'$T/b/d/f3'"
	shim "$1" cat "$T/$1/d/f1" "$T/$1/d/s/f2" "$T/$1/d/f3" >/dev/null
	[ -f "$T/$1/d/s/f2" ]
}

@test "a directory another host removed: a listing of its parent removes it here, a changed file kept as a conflict copy" {
	made a
	shim b rm -r "$T/b/d"
	# f3 changed here without the shim (as a program the shim does not
	# see would): dirty, not pushed.
	echo local >>"$T/a/d/f3"
	sleep 1.2
	run shim a ls "$T/a"
	[ "$status" -eq 0 ]
	[[ "$output" != *d* ]]
	[ ! -e "$T/a/d" ]
	run shim a stat "$T/a/d/s/f2"
	[ "$status" -ne 0 ]
	# The changed copy is in the storage, under a's conflict directory.
	run shim c sh -c "cat '$T/c/.pohmelfs-conflicts/a/'f3.*"
	echo "$output"
	[ "$output" = "three
local" ]
}

@test "a directory another host removed: a stat below it after attr_timeout finds nothing here" {
	made a
	shim b rm -r "$T/b/d"
	sleep 1.2
	run shim a stat "$T/a/d/s/f2"
	[ "$status" -ne 0 ]
	run shim a stat "$T/a/d/f1"
	[ "$status" -ne 0 ]
	[ ! -e "$T/a/d" ]
	# Nothing here was changed: no conflict copy.
	run shim c ls "$T/c/.pohmelfs-conflicts/a"
	[ "$status" -ne 0 ] || [ -z "$output" ]
}

# A writer of this host keeps d/f open; pohmelfsd pushed what it wrote so
# far (clean record), then b removes d.  Before the fix a's listing
# unlinked the clean file under the writer: its later bytes went to a
# local inode no name shows, never pushed.  Now the file (and d) stays
# while open for write here, and what it writes reaches its storage inode.
@test "a directory another host removed: a file open for write here stays while it is written" {
	export POHMELFS_SYNC_TIMEOUT=0.5
	shim a mkdir "$T/a/d"
	shim_bg a python3 -c '
import os, sys, time
f = open(sys.argv[1], "w"); f.write("one\n"); f.flush()
print("opened", flush=True)
while not os.path.exists(sys.argv[2]): time.sleep(0.05)
f.write("two\n"); f.close()
print("closed", flush=True)' "$T/a/d/f" "$T/go" >"$T/out"
	local pid=$SHIM_BG_PID i
	for i in $(seq 100); do grep -q opened "$T/out" && break; sleep 0.05; done
	grep -q opened "$T/out"
	# pohmelfsd pushes the open file once it is quiet: the record is clean.
	for i in $(seq 30); do
		[ "$(shim c cat "$T/c/d/f" 2>/dev/null)" = one ] && break
		sleep 0.3
	done
	[ "$(shim c cat "$T/c/d/f")" = one ]
	shim b rm -r "$T/b/d"
	sleep 1.2
	run shim a ls "$T/a"
	[ "$status" -eq 0 ]
	# The file open for write stays, and its directory with it.
	[ -f "$T/a/d/f" ]
	run shim a ls "$T/a"
	[ -f "$T/a/d/f" ]
	touch "$T/go"
	wait "$pid"
	grep -q closed "$T/out"
	[ "$(cat "$T/a/d/f")" = "one
two" ]
	# The writer is done: the next look drops the copy and d.
	sleep 1.2
	run shim a ls "$T/a"
	[ "$status" -eq 0 ]
	[ ! -e "$T/a/d" ]
}

# Host c listed d (x, y); host a removed x and y; c's rmdir d decides
# emptiness by the storage, not by c's stale listing: before session 20 it
# failed "Directory not empty" although the storage's d was empty (and,
# from session 19, removed), and c kept listing d with x and y for good.
# A directory that holds an entry in the storage is still refused.
@test "rmdir of a directory another host emptied: removed, though this host listed its entries" {
	shim a mkdir -p "$T/a/d" "$T/a/e"
	shim a sh -c "echo x >'$T/a/d/x'; echo y >'$T/a/d/y'; echo z >'$T/a/e/z'"
	run shim c ls "$T/c/d" "$T/c/e"
	[ "$status" -eq 0 ]
	[[ "$output" == *x*y*z* ]]
	shim a rm "$T/a/d/x" "$T/a/d/y"
	# Within attr_timeout: c's listing of d is young, and stale.
	run shim c rmdir "$T/c/d"
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$T/c/d" ]
	run shim b ls "$T/b"
	[[ "$output" != *d* ]]
	# A socket lives here only: refused before the storage changes (the
	# storage's s stays too: no removal the call then denies).
	shim c mkdir "$T/c/s"
	shim c python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('$T/c/s/sock')"
	run shim c rmdir "$T/c/s"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not empty"* ]]
	[ -S "$T/c/s/sock" ]
	# e holds z in the storage: refused, e and z stay on every host.
	run shim c rmdir "$T/c/e"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not empty"* ]]
	[ "$(shim b cat "$T/b/e/z")" = z ]
	# The other way round: c's listing of e is stale by a newer entry.
	shim a sh -c "echo w >'$T/a/e/w'"
	shim c rm "$T/c/e/z"
	run shim c rmdir "$T/c/e"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not empty"* ]]
	# A fresh host sees e with w only.
	mkdir -p "$T/f"
	run shim f ls "$T/f/e"
	[ "$status" -eq 0 ]
	[ "$output" = w ]
	# and s, which c's rmdir left in the storage (the socket kept it).
	run shim f stat -c %F "$T/f/s"
	echo "$output"
	[ "$output" = directory ]
}

# A file made here without the shim (a static binary; or a signal
# handler's create not replayed yet, a mkstemp file not adopted yet) is
# not in the storage, and the directory is not empty: ENOTEMPTY, nothing
# removed anywhere.  Session 20's first rmdir fix took the storage's
# "empty" for the local directory too: rmdir answered 0 and moved the
# file to the conflict directory (found by the review of s20-mvleft).
@test "rmdir of a directory holding a file made here without the shim: ENOTEMPTY, the file and the stored directory stay" {
	shim c mkdir "$T/c/d"
	echo precious >"$T/c/d/mine"
	run shim c rmdir "$T/c/d"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not empty"* ]]
	[ "$(cat "$T/c/d/mine")" = precious ]
	run shim b stat -c %F "$T/b/d"
	[ "$output" = directory ]
	run shim c ls "$T/c/.pohmelfs-conflicts"
	[ "$status" -ne 0 ] || [ -z "$output" ]
	# Once it is gone, the rmdir goes through.
	rm "$T/c/d/mine"
	shim c rmdir "$T/c/d"
	[ ! -e "$T/c/d" ]
	run shim b ls "$T/b"
	[[ "$output" != *d* ]]
}

# A writer that is not the shim's holds d/log open: the rmdir is refused,
# and what it writes after the rmdir stays in d/log (before: the file was
# copied and unlinked under it, its later bytes lost).
@test "rmdir while a writer without the shim holds a file open: ENOTEMPTY, nothing it writes is lost" {
	shim c mkdir "$T/c/d"
	( exec 7>"$T/c/d/log"; echo first >&7; while [ ! -e "$T/go" ]; do sleep 0.05; done; echo second >&7 ) &
	local pid=$! i
	for i in $(seq 100); do [ -s "$T/c/d/log" ] && break; sleep 0.05; done
	run shim c rmdir "$T/c/d"
	echo "$output"
	touch "$T/go"
	wait "$pid"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not empty"* ]]
	[ "$(cat "$T/c/d/log")" = "first
second" ]
	run shim b stat -c %F "$T/b/d"
	[ "$output" = directory ]
}
