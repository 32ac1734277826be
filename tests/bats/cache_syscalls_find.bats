#!/usr/bin/env bats
# cache_syscalls_find.bats — issue 23's find -ls, counted with strace
# (deterministic counts, not times; the bench's find rows have the times):
#   - of a tree validated within attr_timeout (30 s here): the calls per
#     entry.  A stat of a/t/dNN/fNNN used to walk every directory from the
#     prefix root (a fstatat, an index and a record read, an open and a
#     close each); the walk now starts at a parent it walked within
#     attr_timeout whose directories are all still fresh (core/cache
#     walkfresh.c): one open of the parent per stat;
#   - from a fresh cache: the journal writes per new entry;
#   - of the same tree after attr_timeout (1 s): the requests.  Its
#     listings and batches send a request per entry and group; several go
#     out in one sendmsg (core/net net.c conn_flush), not one each; and
#     the local calls of the batch (the marks' locks, the lstats).
# And the guarantee the walk table must keep: a directory another host
# removed is seen gone by a process that walked it, once attr_timeout
# passed.
# Not counted (their number depends on when replies arrive): waits, reads
# of the cluster's sockets, preload/addr.c's pointer probes.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	[ -z "${SAN:-}" ] || skip "the counts are the plain build's (a sanitizer's runtime makes its own calls)"
	preload_ok || skip "LD_PRELOAD does not work here"
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -o /dev/null /bin/true 2>/dev/null || skip "ptrace is refused here"
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || skip "python3 is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=sysfind-$RANDOM
	export POHMELFS_SYNC_ON_CLOSE=1
	unset POHMELFS_STATS POHMELFS_LOG_LEVEL
	mkdir -p "$T/a" "$T/b" "$T/local"
	# 4 directories of 25 files, two levels below the prefix, on both sides.
	for top in "$T/a/t" "$T/local/t"; do
		shim a "$PY" -c "
import os
for d in range(4):
    os.makedirs('$top/d%02d' % d)
    for i in range(25):
        open('$top/d%02d/f%03d' % (d, i), 'w').write('x')"
	done
	N=104	# 100 files and 4 directories below t
}

teardown() {
	stop_daemons
	cluster_stop
}

# calls FILE KIND: the calls of KIND (a regex of names; "all": every call
# but waits, socket reads and pointer probes) in an `strace -f -y` trace.
calls() {
	awk -v k="$2" '/resumed>/ || / (\+\+\+|---) / { next }
	{
		call = $2; sub(/\(.*/, "", call)
		if (call ~ /^(ppoll|poll|epoll_wait|epoll_pwait|select|pselect6|process_vm_readv)$/) next
		if (call ~ /^(read|recvmsg|recvfrom|readv)$/ && $2 ~ /<(TCP|TCPv6|UDP|socket):/) next
		if (k == "all" || call ~ "^(" k ")$") n++
	}
	END { print n + 0 }' "$1"
}

# strace_find HOST DIR OUT: find DIR -ls under the shim as HOST, traced into OUT.
strace_find() {
	strace -f -y -qq -o "$3" env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/$1" \
		POHMELFS_CACHE_DIR="$T/$1-state" POHMELFS_HOST_ID="$1" find "$2" -ls >"$3.out"
}

# The counts of session 15 (doc/notes-s15-findls.md): per entry, the calls
# of find -ls of t (104 entries) minus those of t/d00 (26 entries: what a
# process makes once, opening the cache, cancels out), divided by 78,
# validated (3 of the 78 are directories, listed at their opendir).
# Before the walk table: 259 opens (3.3 per entry) and 2646 calls in all
# (33.9; local disk 216, 2.8); after it and the overlay reading the record
# by the inode the walk found: 102 opens (1.3) and 1609 calls (20.6);
# session 16, the listings of the first find left in the directories'
# records (decision 0062): the second lists nothing again, 20 → 8 opens,
# 1609 → 1162 calls (14.9); session 16 (findls2), the walk's record of
# the name is the overlay's (read once per stat, not twice) and the storage
# inode readdir's overlay found is the walk's (no second index read): 426 →
# 266 pread64, 1162 → 1002 calls (12.8).  The limits are these counts
# (the largest of three runs: 1000 and 264 in two; the hint table is
# direct-mapped by local inode number, and a collision costs an index read);
# the hint taken only when the record's local size and ctime are the
# file's (a reused local inode number must not name an unlinked file's
# record: session 16's second review): 280 pread64, 1016 calls; session 17
# (findfd, doc/notes-s17-findfd.md), for find's fstatat(dirfd, name):
# the classifier's check of the dirfd's name is the walk's open of it (an
# openat2 with no symlink, handed down; no fstatat from the prefix root
# besides), and the host's own lstat of the name is the walk's look at it
# (no second fstatat): 426 -> 264 newfstatat, 1016 -> 866 calls (11.1);
# with the journal mapped (decision 0069) 586 calls (7.5), of them 86
# openat2; session 18 (findls4, doc/notes-s18-findls4.md), the dirfd's
# name checked by the kernel's name of the dirfd itself (one readlink of
# /proc/self/fd/N, no open, fstat and close) and the name answered from
# its fresh record with no fd of the directory: 86 -> 3 openat2, 586 ->
# 420 calls (5.4).
@test "find -ls of a tree validated within attr_timeout: one open per entry, not one per directory of its path" {
	export POHMELFS_ATTR_TIMEOUT=30
	shim a find "$T/a/t" -ls >/dev/null
	strace_find a "$T/a/t" "$T/all"
	strace_find a "$T/a/t/d00" "$T/one"
	[ "$(grep -c "$T/a/t/d0./f0" "$T/all.out")" -eq 100 ]
	[ "$(grep -c "$T/a/t/d00/f0" "$T/one.out")" -eq 25 ]
	opens=$(($(calls "$T/all" "openat|open") - $(calls "$T/one" "openat|open")))
	preads=$(($(calls "$T/all" pread64) - $(calls "$T/one" pread64)))
	stats=$(($(calls "$T/all" newfstatat) - $(calls "$T/one" newfstatat)))
	all=$(($(calls "$T/all" all) - $(calls "$T/one" all)))
	o2=$(($(calls "$T/all" openat2) - $(calls "$T/one" openat2)))
	strace -f -y -qq -o "$T/disk" find "$T/local/t" -ls >/dev/null
	strace -f -y -qq -o "$T/disk1" find "$T/local/t/d00" -ls >/dev/null
	disk=$(($(calls "$T/disk" all) - $(calls "$T/disk1" all)))
	echo "# validated, for 78 entries: $opens opens, $o2 openat2, $preads pread64, $stats newfstatat, $all calls; local disk $disk calls" >&3
	[ "$opens" -le 8 ]
	[ "$o2" -le 4 ]
	[ "$preads" -le 282 ]
	[ "$stats" -le 266 ]
	[ "$all" -le 424 ]
}

# From a fresh cache every entry is new: its stub and its record (one
# pwrite of the record, one of its index entry).  The record says validated
# as of the listing's start when it is written: before session 15 a
# second write (pohm_journal_touch) set that right after, 3 pwrite64 per
# entry (over 312 for 104); now 2 (about 220 with the process's own few).
# And each new name is checked for a create mark twice (list_prefetch,
# list_one): c.lock was opened and closed for each check (3 calls, 6 per
# entry: 208 opens and as many closes for 104 entries once c.lock exists); now it
# is opened once per process (cache_create_marked's marks_fd).
# A directory one process listed is complete for the next process of the
# same cache within attr_timeout (decision 0062: the mark is in the
# directory's record): the next find -ls or ls -lR lists nothing again,
# and asks the cluster nothing (before: a listing per directory, its
# bucket reads going out in sendmsg calls: 10 for find -ls of t).
@test "find -ls and ls -lR of a tree another process listed within attr_timeout: no request" {
	export POHMELFS_ATTR_TIMEOUT=30
	shim a find "$T/a/t" -ls >/dev/null
	strace_find a "$T/a/t" "$T/find"
	[ "$(grep -c "$T/a/t/d0./f0" "$T/find.out")" -eq 100 ]
	strace -f -y -qq -o "$T/ls" env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/a" \
		POHMELFS_CACHE_DIR="$T/a-state" POHMELFS_HOST_ID=a ls -lR "$T/a/t" >"$T/ls.out"
	[ "$(grep -c ' f0' "$T/ls.out")" -eq 100 ]
	f=$(calls "$T/find" "sendmsg|sendto")
	l=$(calls "$T/ls" "sendmsg|sendto")
	echo "# listed by another process: find -ls $f sendmsg, ls -lR $l, $N entries" >&3
	[ "$f" -eq 0 ]
	[ "$l" -eq 0 ]
	# The cache's own count: no wait for the cluster either.
	w=$(counted ls-l a ls -l "$T/a/t/d02")
	echo "# ls -l of t/d02 in a new process: $w waits" >&3
	[ "$w" -eq 0 ]
}

@test "find -ls from a fresh cache: two journal writes per new entry, not three; c.lock opened once" {
	export POHMELFS_ATTR_TIMEOUT=30
	# A create first: c.lock exists, as in any cache that made a file.
	shim b touch "$T/b/made"
	strace_find b "$T/b/t" "$T/fresh"
	[ "$(grep -c "$T/b/t/d0./f0" "$T/fresh.out")" -eq 100 ]
	writes=$(calls "$T/fresh" pwrite64)
	clock=$(grep -c 'openat(.*c\.lock' "$T/fresh" || true)
	echo "# fresh: $writes pwrite64, $clock opens of c.lock for $N entries" >&3
	[ "$writes" -le $((N * 5 / 2)) ]
	[ "$clock" -le 2 ]
}

@test "find -ls of a tree after attr_timeout: its requests go out several to a sendmsg" {
	export POHMELFS_ATTR_TIMEOUT=1
	shim a find "$T/a/t" -ls >/dev/null
	sleep 1.2
	strace_find a "$T/a/t" "$T/shim"
	[ "$(grep -c "$T/a/t/d0./f0" "$T/shim.out")" -eq 100 ]
	sends=$(calls "$T/shim" "sendmsg|sendto")
	locks=$(calls "$T/shim" fcntl)
	stats=$(calls "$T/shim" newfstatat)
	echo "# expired: $sends sendmsg, $locks fcntl, $stats newfstatat for $N entries, 2 groups" >&3
	# One request per entry and group at least (the batch checks each
	# inode): one sendmsg each was 2.3 per entry.  Session 20: a
	# directory's known entries' inodes go out with its bucket reads,
	# not after them (25 sendmsg before, 15 after).
	[ "$sends" -le $((N / 5)) ]
	# The checked entries' marks (validated_ns in their records): one
	# lock of the slot file for a directory's batch, not a lock and an
	# unlock each (session 20: 256 fcntl before, 58 after).
	[ "$locks" -le $((N * 3 / 4)) ]
	# A known entry is looked at once before the listing and not again
	# by it (session 20: 610 newfstatat before, 506 after).
	[ "$stats" -le $((N * 21 / 4)) ]
}

@test "a directory another host replaced: a process that walked it looks in the new one after attr_timeout" {
	export POHMELFS_ATTR_TIMEOUT=1
	shim b find "$T/b/t" -ls >/dev/null
	# b's process stats d01's files (its walk table holds t and t/d01);
	# meanwhile a moves d01 away and makes a new d01 with a new name in
	# it; after attr_timeout b's stat of that name must look in the new
	# d01 (by its storage inode), not in the one the table remembered.
	shim b "$PY" -c "
import os, sys, time
os.lstat('$T/b/t/d01/f000')
os.lstat('$T/b/t/d01/f001')
open('$T/go', 'w').close()
while not os.path.exists('$T/done'):
    time.sleep(0.05)
time.sleep(1.2)
try:
    os.lstat('$T/b/t/d01/new')
except FileNotFoundError:
    sys.exit('d01/new: not found')
print('found')" >"$T/py.out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -e "$T/go" ] && break; sleep 0.1; done
	shim a sh -c "mv '$T/a/t/d01' '$T/a/t/old' && mkdir '$T/a/t/d01' && echo n >'$T/a/t/d01/new'"
	touch "$T/done"
	wait "$pid" || { cat "$T/py.out"; false; }
	grep -qx found "$T/py.out"
}
