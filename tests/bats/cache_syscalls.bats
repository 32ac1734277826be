#!/usr/bin/env bats
# cache_syscalls.bats — issue 23's syscall budget, counted with strace:
#   "create + write 4 KiB + close with sync_on_close=1: <= 30 syscalls more
#    than the same program on local disk";
#   "stat, open for read of a cached file validated within attr_timeout:
#    0 round trips and <= 2 extra syscalls".
# One python program (tests/helpers/syscall_ops.py) does the operation between marker
# calls (a stat of a name outside any prefix, which fails), once and then 10
# times, in a directory on local disk and, under the shim, in one under the
# prefix (2 groups, sync_on_close=1, attr_timeout 30 s, the files cached and
# validated just before).  `strace -f` counts every call between the
# markers in every thread; "extra" is shim minus local disk.  Two figures:
# the first operation of the process (it opens the cache, maybe connects)
# and a steady one (the 10, divided by 10).
#
# Not counted, so the counts are the same in every run: the calls that
# wait for or read the cluster's replies (ppoll, poll, reads of the
# sockets: how many depends on when the replies arrive) and preload/addr.c's
# one-byte pointer probes (process_vm_readv, once per new page).  The
# requests sent (sendmsg) and connects are counted apart: a validated stat
# or open for read sends none.
#
# Where the budget is not met yet, the limit is today's figure (session 13,
# doc/notes-s13-bench23.md has what the calls are) and the test's name says
# "not yet at the budget: N, budget M": a change may only lower it.

# lim MAPPED_LIMIT PREAD_LIMIT: the limit for the journal's read path here.
lim() {
	if [ "$MAPPED" = 1 ]; then echo "$1"; else echo "$2"; fi
}

setup() {
	POHM_TEST_BUILD=1	# POHMELFS_TEST_DIR_TIME_LAG: build/test/ reads it
	load lib/common
	load lib/cluster
	load lib/hosts
	[ -z "${SAN:-}" ] || skip "the counts are the plain build's (a sanitizer's runtime makes its own calls)"
	preload_ok || skip "LD_PRELOAD does not work here"
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -o /dev/null /bin/true 2>/dev/null || skip "ptrace is refused here"
	# The interpreter itself, not a wrapper script (pyenv's would run bash
	# under the shim too).
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || skip "python3 is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	# Decision 0069: the journal's level 0 is mapped only on the disk file
	# systems jmap.c lists; on any other (tmpfs, overlayfs: a CI container's
	# root, say) it is read with pread as in session 16, whose limits apply.
	case $(stat -f -c %t "$T") in
	ef53 | 58465342 | 9123683e | f2f52010 | 2fc12fc1) MAPPED=1 ;;
	*) MAPPED=0 ;;
	esac
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=syscalls-$RANDOM
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=30 POHMELFS_TEST_DIR_TIME_LAG=60
	unset POHMELFS_STATS POHMELFS_LOG_LEVEL
	D=$T/a/d L=$T/local/d
	mkdir -p "$T/a" "$L/t"
	shim a mkdir -p "$D/t"
	for d in "$D" "$L"; do
		shim a "$PY" -c "
for n in ('s', 's0'):
    open('$d/' + n, 'wb').write(b'x' * 4096)"
	done
}

teardown() {
	stop_daemons
	cluster_stop
}

# counts FILE: from an `strace -f -y` trace of syscall_ops.py, "FIRST TEN
# REQUESTS CONNECTS": the calls between marks a and b, between b and c (not
# counting waits, socket reads and pointer probes, see the file comment),
# and the sendmsg/sendto and connect calls between a and c.
counts() {
	awk -f "$BATS_TEST_DIRNAME/../helpers/syscall_counts.awk" "$1"
}

# trace NAME OP: syscall_ops.py OP on local disk and under the shim (host a); sets
# FIRST and TEN (extra calls of the first operation and of the 10 after it,
# shim minus disk), REQ and CONN (the shim side's), and WAITS (net_waits
# the shim side added).
trace() {
	local name=$1 op=$2 w0 disk shim
	# An uncounted change first: a directory's stored time moves at most
	# once per POHMELFS_TEST_DIR_TIME_LAG (decision 0015), so a create does
	# not pay that update by chance.
	shim a "$PY" -c "import os; open('$D/.fresh', 'w').close(); os.unlink('$D/.fresh')"
	shim a stat "$D/s" "$D/s0" >/dev/null
	strace -f -y -qq -o "$T/$name.disk" "$PY" "$BATS_TEST_DIRNAME/../helpers/syscall_ops.py" "$op" "$L"
	w0=$(waits a)
	strace -f -y -qq -o "$T/$name.shim" env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/a" \
		POHMELFS_CACHE_DIR="$T/a-state" POHMELFS_HOST_ID=a "$PY" "$BATS_TEST_DIRNAME/../helpers/syscall_ops.py" "$op" "$D"
	WAITS=$(($(waits a) - w0))
	read -r -a disk <<<"$(counts "$T/$name.disk")"
	read -r -a shim <<<"$(counts "$T/$name.shim")"
	FIRST=$((shim[0] - disk[0]))
	TEN=$((shim[1] - disk[1]))
	REQ=${shim[2]} CONN=${shim[3]}
	echo "# $name: disk ${disk[0]} + ${disk[1]}/10, shim ${shim[0]} + ${shim[1]}/10 calls;" \
		"extra: first $FIRST, the next 10 $TEN; $REQ requests, $CONN connects, $WAITS waits" >&3
}

# The limits are session 13's exact counts (the same in every run): 10
# creates 1472 extra calls, the first 286 (it opens the cache and connects);
# 10 stats 107, the first 115; 10 opens 42, the first 130.
# What a create's calls are: doc/notes-s13-bench23.md.  Lowered since, one
# step each (doc/notes-s13-bookkeep.md has before and after):
#   the pid asked once per process (pohm_sys_pid): creates 1391, first 278;
#     the first stat and open +2 (the pid page's mmap and madvise): 117, 132;
#   the umask kept (pohm_sys_umask_kept): creates 1362;
#   the credentials kept (core/sys perm.c): creates 1282, the first 268;
#     stats 75, the first 114; opens 12, the first 127;
#   a write-only fd's push straight to its readable fd: creates 1181, the
#     first 258;
#   (main's CAS bases kept across processes, decision 0048, wrote a k/
#     file per create for a while, +11 calls; written once at exit since
#     keptlazy: back to 1181, the first 258.)
#   the journal's records in slots of one file opened once per process
#     (j.slots, decision 0056: a record read is one pread, a write one
#     pwrite between two fcntl; no record file, no j.lock open per
#     record): creates 832, the first 226; stats 45, the first 108; the
#     first open 121; and x.idx changed through its kept fd too (no open
#     per index entry): creates 822, the first 225 (doc/notes-s14-journal.md).
#   a stat of a name materialized within attr_timeout makes the real call
#     first and compares its file with the one the walk found (no fstatat
#     of its own), and the storage inode is remembered with the path (no
#     index read): one record read is left; the first outermost hook of a
#     process replays the signal queue's older records at once, not the
#     next one (+9 for the first stat, -11 for the ten): stats 13, the
#     first 117 (doc/notes-s14-percall.md);
#   a create's parent: the walk opens it and knows its inode (no second
#     open, stat and record read of it): creates 792, the first 221;
#   the created file's storage inode and local stat as its record was just
#     written (no fstat, index and record read after it): creates 762,
#     the first 218;
#   pohm_sys_open_parent walks from its base fd, no copy of it first (two
#     calls fewer per use: a create's check that its name holds the opened
#     file): creates 742, the first 216;
#   a create's parent walked to within attr_timeout is opened again in one
#     openat2 that follows no symlink and checked against its record, no
#     walk (cache.c parent_recent), and pohm_sys_open_parent opens a parent
#     of two or more components in one openat2: creates 702, the first 216
#     (doc/notes-s15-tarx.md);
#   that parent taken from the walk table (walkfresh.c: every directory of
#     its path re-checked, one openat2 and one fstat, no index and record
#     read of it): creates 661, the first 214 (doc/notes-s15-walkfix.md).
# Session 16, the created file's own calls, from 661/214:
#   (crsysb, doc/notes-s16-crsysb.md) the create's journal record written
#     once, after the real open, under its lock (none before the open, no
#     read between; decision 0063): creates 612, the first 209;
#   the local file this thread just indexed taken from its hint, confirmed
#     by the record the fstat's overlay and the close's push read anyway
#     (no x.idx read in either): creates 592, the first 207;
#   (crsysa, doc/notes-s16-crsysa.md; each step's figures measured on its
#     own branch, from 662) a write-only fd's shadow opened on the stat its
#     open took (no fstat before, none after), and the close's push, shadow
#     look-up and shadow close on the one fstat of the close: -50, the
#     first -5;
#   no open-for-write prelock for a name the open just created (its
#     fstatat only failed ENOENT): -10;
#   p.lock and c.lock descriptions kept between uses (lockfd.c, decision
#     0065: an F_UNLCK instead of an open and a close): -20, the first +4
#     (each kept fd is moved high once);
#   w.lock descriptions kept between writers, a fork child takes its own
#     (decision 0065): -30;
#   a write-only fd's access mode from the fd table, no F_GETFL at its
#     close: -10;
#   both merged: creates 471, the first 204.
#   (crsys2, doc/notes-s16-crsys2.md) a created file's name checked by the
#     kernel's path of its fd against the prefix's (read once per process),
#     the walk only when they differ (one readlink for openat, fstatat and
#     close): creates 452, the first 203.
# Session 17:
#   (crsys3, doc/notes-s17-crsys3.md) the first level of j.slots and x.idx
#     read through a read-only shared mapping made at a process's first
#     read (decision 0069: a record or index read is a copy from memory,
#     writes stay pwrite): the create's 5 record preads (the parent's, the
#     one under the lock at opened_as, the fstat overlay's, the push
#     turn's, the put's) and 2 index preads gone; the first read of each
#     file pays an fstatfs, an fstat and an mmap: creates 382, the first
#     199; stats 2, the first 115; opens 11-12, the first 117.
# Session 18:
#   (crsys4, doc/notes-s18-crsys4.md) the close's push takes the kept
#     shadow of the write-only fd without an fstat, the push's own fstat
#     in its turn checks it: creates 372, the first 198 (with pread: 441,
#     206).
# Session 19:
#   (gitafter, doc/notes-s19-gitafter.md) the prefix and cache_dir made by
#     one mkdirat when they exist, not one per component: every first
#     operation -8 (here, 5 components each): create 190, stat 107, open 109.
#   (create, doc/notes-s19-create.md) a create's parent from the walk
#     table kept open after the create (walkfresh.c, the kept look): the
#     next create in that directory checks it with one readlink, no
#     openat2, fstat and close: creates 355, the first 198 (with pread:
#     424, 206);
#   a write-only fd's close takes its file from the shadow its open made
#     (no fstat of the program's fd; the push's fstat of the shadow in
#     its turn checks it): creates 345, the first 197 (with pread: 414,
#     205);
#   the parent kept only from the second create in a row in a directory
#     (creates that alternate between directories pay nothing for it):
#     creates 347 (with pread: 416).
#   both (the merge): creates 346, the first 189 (with pread: 416, 197).
# Session 20:
#   (create, doc/notes-s20-create.md) a new file in the kept parent
#     opened there by name with O_EXCL (procopen.c): no stale-name
#     fstatat before the open, no readlink of the new file and no fstat
#     before its record after it (the one after its utimensat stays):
#     creates 323, the first 189 (with pread: 392, 195).  A create whose
#     parent is the kept one is 31 calls over disk; the ten's first two
#     (the walk table's, its fd moved high after the second) pay the walk
#     and the checks as before.  (x.idx's bucket locks moved into j.slots,
#     one call fewer, were tried and taken out: decision 0075, rejected.)
#   (routes, doc/notes-s20-routes.md) a process takes the route table
#     from cache_dir/routes (decision 0074: an openat, an fstat — whose
#     file it is — a read and a close) and sends no ROUTE_LIST and its
#     handshakes with its first requests (sendmsg calls saved; the waits'
#     ppoll and socket reads saved too but not counted here): the first
#     create 190 (the file's 4 calls against the sendmsg saved: 189
#     without the fstat; with pread: 198); the ten 347 on its branch (323
#     after the create merge), 44 requests in
#     all (a process that pays ROUTE_LIST and sends its handshakes alone
#     sends more: the request count catches the route file lost).
# The ten creates, stats and opens count one call more in some runs than
# in others (also before these changes; seen most with other tests running
# beside), the first create too: their limits are the higher figures (now
# 324, 191, 3, 12; where the journal is read with pread: 393, 199, 14, 12 —
# the first create pays 4 calls more there, 197 on tmpfs: the fstatfs that
# decides not to map).
@test "create + write 4 KiB + close, sync_on_close=1, in a running process: not yet at the budget: 32.3 extra syscalls, budget 30" {
	trace create create
	[ "$TEN" -le "$(lim 324 393)" ]
	[ "$FIRST" -le "$(lim 191 199)" ]
	[ "$REQ" -le 44 ]
	[ "$CONN" -ge 1 ]
	[ "$(shim a cat "$D/new11" | wc -c)" -eq 4096 ]
}

# Creates that go from one directory to another each time (d/t, d, d/t,
# ...): the kept parent (walkfresh.c) is taken only from a directory's
# second create in a row, so these pay what they paid before it (kept
# from every create, each would pay a move high and a close more: 20 more
# for the ten).  Session 19: the ten 366 (with pread: 435); session 20:
# the same (the kept parent's open by name does not apply: there is none).
@test "creates alternating between two directories: no cost from the kept parent" {
	trace alt alt
	[ "$TEN" -le "$(lim 367 436)" ]
	[ "$(shim a cat "$D/t/alt11" | wc -c)" -eq 4096 ]
}

# tar -x's pattern: fchmod and futimens through the write-only fd of the
# file it is writing.  Their push through that fd would read the bytes and
# fail EBADF (the change travels with the close's push); it used to find
# that out after the push turn (p.lock opened, locked, closed), the record
# and a pread: 8 calls each, now 4.  pohm_cache_push_wronly answers from the
# record alone (session 15, doc/notes-s15-tarx.md): the ten 942 -> 862
# (822 with the create's parent opened at once, above; 781 with it taken
# from the walk table; session 16: 732 with the create's record written
# once, 722 with the index hint, 702 with the hint for the fchmod and
# futimens too, which then read no x.idx; 581 with the created file's
# steps of crsysa, above; 562 with its name checked by one readlink;
# session 17: 442 with the journal's first level read from its mapping;
# session 18: 432 with the close's shadow checked by the push's fstat;
# session 19: 415 with the create's parent kept between creates, 405 with
# the close's file taken from its shadow, 407 with the parent kept from
# the second create in a row; session 20: 383 with the open in the kept
# parent).
# The close still pushes both: host b reads the mode and the mtime.
@test "fchmod + futimens of a file being written through a write-only fd: no push turn before the close" {
	trace wattr wattr
	[ "$TEN" -le "$(lim 384 503)" ]
	mkdir -p "$T/b"
	[ "$(shim b stat -c '%a %Y %s' "$T/b/d/att11")" = "640 1500000000 4096" ]
}

@test "stat of a cached file validated within attr_timeout: no request; within the budget: 2 extra syscalls, budget 2" {
	trace stat stat
	[ "$REQ" -eq 0 ]
	[ "$CONN" -eq 0 ]
	[ "$WAITS" -eq 0 ]
	[ "$TEN" -le "$(lim 3 14)" ]
	[ "$FIRST" -le "$(lim 108 110)" ]
}

@test "open for read of a cached file validated within attr_timeout: no request; within the budget: 2 extra syscalls, budget 2" {
	trace read read
	[ "$REQ" -eq 0 ]
	[ "$CONN" -eq 0 ]
	[ "$WAITS" -eq 0 ]
	[ "$TEN" -le 12 ]
	[ "$FIRST" -le "$(lim 110 114)" ]
}
