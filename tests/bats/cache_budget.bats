#!/usr/bin/env bats
# cache_budget.bats — issue 23's round-trip budget, as far as it is met: the
# waits for the cluster's replies (net_waits in cache_dir/stats, the count
# every process adds at exit) of one call by a new process, 2 groups,
# sync_on_close=1, in a directory validated just before (attr_timeout 30).
# The limits are the figures of sessions 9 to 12 (tests/bench/RESULTS.md,
# doc/notes-s10-budget.md, doc/notes-s11-cas1.md: a CAS is one wait since
# session 11; doc/notes-s12-budget.md: a create's inode and entry, and a
# mkdir's parent count, in one wait since session 12; doc/notes-s12-inline.md:
# a small file's data inline in its inode, decision 0023; doc/notes-s13-ns23.md:
# CAS bases kept in cache_dir for the next process, decision 0048), not yet
# issue 23's targets: a change that adds a wait fails here.
#
# A directory's stored mtime moves with its entries at most once a second
# (decision 0015): the first entry change a second after the last one pays
# an inode update more (2-3 waits).  Each counted call comes right after an
# uncounted change in the directories it works in, and the test build
# widens that window to a minute (POHMELFS_TEST_DIR_TIME_LAG): the call
# counts its own waits only, however long a loaded machine makes it.
# (bench_rtt.sh, on the shipped build, sleeps a second instead.)

setup() {
	POHM_TEST_BUILD=1	# POHMELFS_TEST_DIR_TIME_LAG: build/test/ reads it
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	PY=$(command -v python3) || skip "python3 is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=budget-$RANDOM
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=30 POHMELFS_TEST_DIR_TIME_LAG=60
	unset POHMELFS_STATS
	mkdir -p "$T/a" "$T/b"
	D=$T/a/d E=$T/a/e
	shim a mkdir -p "$D" "$E" "$D/rd"
	shim a "$PY" -c "
for n in ('u', 'r', 'c', 's', 'x'):
    with open('$D/' + n, 'wb') as f: f.write(b'x' * 4096)"
	shim a stat "$D" "$E" >/dev/null
}

teardown() {
	stop_daemons
	cluster_stop
}

# freshen: an uncounted change in $D and $E (see the file comment).
freshen() {
	shim a "$PY" -c "
import os
for d in ('$D', '$E'):
    open(d + '/.fresh', 'w').close(); os.unlink(d + '/.fresh')"
}

# within NAME LIMIT HOST CMD...: CMD under the shim as HOST waits at most
# LIMIT times.  A call reuses what its thread read within 2 s as the base of
# a CAS (decision 0017); a process that a loaded machine keeps running
# longer reads again, and its count says nothing of the code: over the
# limit after 1.8 s is reported, not failed (a call takes ~0.1 s here).
within() {
	local name=$1 limit=$2 host=$3 w0 w t0 ms
	shift 3
	freshen
	w0=$(waits "$host")
	t0=$(date +%s%N)
	# At log_level=debug each kv operation logs its waits (kvio.c "rtt:").
	POHMELFS_LOG_LEVEL=debug POHMELFS_LOG=$T/$name.log shim "$host" "$@"
	ms=$((($(date +%s%N) - t0) / 1000000))
	w=$(($(waits "$host") - w0))
	echo "# $name: $w waits (limit $limit) in $ms ms" >&3
	[ "$w" -le "$limit" ] && return 0
	grep -E "rtt: |rename" "$T/$name.log" | sed "s/^/#   /" >&3
	if [ "$ms" -ge 1800 ]; then
		echo "# $name: over the limit, but the call took $ms ms (> the 2 s reuse window): not counted" >&3
		return 0
	fi
	return 1
}

# The waits: put_n (the new inode, the entry against the bucket another
# process of this cache just wrote: decision 0048), the commit's CAS
# carrying the 4 KiB (decision 0023).  Without that base: a get_n first.
@test "create + write 4 KiB + close with sync_on_close: at most 2 waits" {
	within create 2 a "$PY" -c "open('$D/new', 'wb').write(b'z' * 4096)"
	[ "$(shim b cat "$T/b/d/new" | wc -c)" -eq 4096 ]
	# The first file of a directory a process before made (decision 0079).
	shim a mkdir "$D/nd"
	within create-first 2 a "$PY" -c "open('$D/nd/f', 'wb').write(b'z' * 4096)"
	mkdir -p "$T/c"		# (b's listing of d is younger than nd: attr_timeout)
	[ "$(shim c cat "$T/c/d/nd/f" | wc -c)" -eq 4096 ]
}

# A second cache reads a small file: the bucket and the inode (which brings
# the data: decision 0023) in one get_n, no chunk read: b's stat of the
# directory read its first bucket along and kept it, which guesses the
# name's inode; the fresh bucket confirms it (decision 0053).
@test "cold read of 4 KiB from a second cache: at most 1 wait" {
	shim b stat "$T/b/d" >/dev/null
	within cold-read 1 b "$PY" -c "
assert open('$T/b/d/c', 'rb').read() == b'x' * 4096"
}

# Decision 0053: the guess is stale when another host changed the name after
# b kept the bucket: replaced by another file, or unlinked (its inode still
# lives, marked: decision 0049).  The fresh bucket decides: the new file's
# data, and ENOENT.
@test "cold read on a kept guess another host made stale: the new file, or ENOENT" {
	mkdir -p "$T/c"
	shim a "$PY" -c "open('$E/g', 'wb').write(b'g')"
	shim b stat "$T/b/d" "$T/b/e" >/dev/null
	[ "$(ls "$T/b-state/k" | grep -c '^b:')" -ge 2 ]
	shim a "$PY" -c "
import os
open('$D/c2', 'wb').write(b'new c')
os.rename('$D/c2', '$D/c')
os.unlink('$E/g')"
	export POHMELFS_LOG_LEVEL=debug
	POHMELFS_LOG=$T/stale-guess.log run shim b cat "$T/b/d/c"
	[ "$status" -eq 0 ]
	[ "$output" = "new c" ]
	POHMELFS_LOG=$T/stale-gone.log run shim b cat "$T/b/e/g"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file"* ]]
	unset POHMELFS_LOG_LEVEL
	grep -h "rtt: " "$T"/stale-guess.log "$T"/stale-gone.log | sed "s/^/# /" >&3 || true
	# Each read the guess with the bucket first, then looked the name up.
	grep -A3 "rtt: get_n b:" "$T/stale-guess.log" | grep -q "rtt: get_n i:"
	grep -A3 "rtt: get_n b:" "$T/stale-gone.log" | grep -q "rtt: get_n i:"
	[ "$(shim c cat "$T/c/d/c")" = "new c" ]
}

# Decisions 0048 (bases kept in cache_dir) and 0049: mkdir is its put_n alone,
# unlink the entry and the inode's mark in one put_n, chmod and utimes the
# setattr's CAS.  Decision 0052: a rename in a directory whose target is not
# here is its put_n alone (the bucket's CAS, the source's ctime), no lookup;
# decision 0054: a file into another directory is its intent, its commit
# and the finish with the ctime, no lookup; decision 0073: the ctime in
# the commit's put_n, the finish sent without a wait and its reply read at
# exit (not counted when it is in by then: a wait that does not block);
# decision 0079: also into a new directory as its first entry (its mkdir
# wrote its empty bucket: kept, no lookup, the ctime with the commit; was 5);
# decision 0055: rmdir needs no lookup; decision 0058: its intent with the seal created on the empty
# directory (one put_n), then the entry's removal with the tombstone and
# the parent's count (one put_n).
@test "mkdir 1, unlink 1, rmdir 2, rename 1 in a directory and 2 across, chmod 1, utimes 1 waits" {
	within mkdir 1 a "$PY" -c "import os; os.mkdir('$D/sub')"
	within unlink 1 a "$PY" -c "import os; os.unlink('$D/u')"
	within rmdir 2 a "$PY" -c "import os; os.rmdir('$D/rd')"
	within rename 1 a "$PY" -c "import os; os.rename('$D/r', '$D/r2')"
	within rename-across 2 a "$PY" -c "import os; os.rename('$D/x', '$E/x')"
	shim a mkdir "$D/new"
	within rename-across-new 2 a "$PY" -c "import os; os.rename('$D/s', '$D/new/s')"
	within chmod 1 a "$PY" -c "import os; os.chmod('$D/c', 0o600)"
	within utimes 1 a "$PY" -c "import os; os.utime('$D/c', (1, 1))"
	# What another cache sees.
	run shim b ls "$T/b/d"
	[ "$output" = "$(printf 'c\nnew\nr2\nsub')" ]
	[ "$(shim b ls "$T/b/d/new")" = s ]
	[ "$(shim b ls "$T/b/e")" = x ]
	[ "$(shim b stat -c %X "$T/b/d/c")" = 1 ]
	[ "$(shim b stat -c %a "$T/b/d/c")" = 600 ]
}

# Decision 0067: the destination entry of a rename across carries the
# MOVED_IN mark until its first change, which settles the source first.
# The renaming process knows its finish landed once told (decision 0073:
# the finish left without a wait; the unlink right after the rename waits
# for its reply, which is not in yet), then its unlink is the one put_n of
# a kept copy (mv 2 + the finish's outcome 1 + rm 1; 3 when the reply is
# in before the rm asks).  A later process reads the source's bucket first
# (1 wait), then the same put_n: 2 where a plain entry takes 1.  Its rename away: the source's read, then the 2 waits of a rename
# across on kept copies (decision 0073): 3 where a plain entry takes 2.
@test "first change of an entry moved across: unlink 1 in the renaming process, 2 in a later one; rename away 3" {
	within mv-then-rm 4 a "$PY" -c "
import os; os.rename('$D/x', '$E/x'); os.unlink('$E/x')"
	shim a "$PY" -c "import os; os.rename('$D/u', '$E/u'); os.rename('$D/c', '$E/c')"
	within moved-unlink 2 a "$PY" -c "import os; os.unlink('$E/u')"
	within moved-rename-away 3 a "$PY" -c "import os; os.rename('$E/c', '$D/c2')"
	run shim b ls "$T/b/d" "$T/b/e"
	[ "$output" = "$(printf '%s\n' "$T/b/d:" c2 r rd s '' "$T/b/e:")" ]
}

# One process making many files in one directory (tar -x, a checkout): a
# create needs no lookup (decision 0022: the bucket the previous create
# wrote lacks the name; the insert's CAS decides; the first one's base is
# the bucket the process before kept, decision 0048), so each
# file is its inode and entry (1) and its commit carrying its data (1:
# decision 0023), and each directory its inode, entry and the parent's
# count (1).
@test "20 files and 5 directories made by one process: at most 2 waits a file, 1 a directory" {
	within creates $((20 * 2 + 5)) a "$PY" -c "
import os
for i in range(20):
    open('$D/n%02d' % i, 'wb').write(b'z' * 4096)
    if i % 4 == 3:
        os.mkdir('$D/m%02d' % i)"
	[ "$(shim b ls "$T/b/d" | grep -c '^n')" -eq 20 ]
	[ "$(shim b ls "$T/b/d" | grep -c '^m')" -eq 5 ]
	[ "$(shim b cat "$T/b/d/n19" | wc -c)" -eq 4096 ]
	[ "$(shim b stat -c %h "$T/b/d")" -eq 8 ]
}

@test "a stat validated within attr_timeout: no wait at all" {
	within stat 0 a "$PY" -c "import os; os.stat('$D/s')"
}

# fits NAME WAITS LIMIT N: WAITS within LIMIT.  With attr_timeout 1 s, a
# call that a loaded machine kept running over a second lets the entries
# it checked last expire again before their lstat: over the limit then is
# reported, not failed, unless it is half of N or more (one wait per entry
# of N, the old code's count, always fails).
fits() {
	[ "$2" -le "$3" ] && return 0
	if [ "$(cat "$T/$1.ms")" -ge 1000 ] && [ "$2" -lt $(($4 / 2)) ]; then
		echo "# $1: over the limit after a second: not counted" >&3
		return 0
	fi
	return 1
}

# Issue 23: "ls -l of a directory of 1000 entries whose validation expired:
# <= 10 waits" (validate a directory's entries together).  200 entries
# here (LSN=1000 for the issue's size), to bound the time; one lstat's
# round trip each (the old code: 203 waits) fails.  An expired ls -l: the
# directory itself (1), its inode with the bucket levels (1 for 200
# entries in one bucket) and the inodes of the entries the cache knows in
# the same round trip (session 20: they went in a wait of their own, 3 in
# all): 2.  A second cache makes the stubs from a batch of inodes after
# the listing (5); when making them took half of attr_timeout (a loaded
# machine) it lists and checks them once more (+2).
@test "ls -l of 200 entries whose validation expired: at most 2 waits (a second cache 7)" {
	export POHMELFS_ATTR_TIMEOUT=1
	L=$T/a/L
	shim a mkdir "$L"
	shim a "$PY" -c "
for i in range(${LSN:-200}):
    open('$L/f%04d' % i, 'w').close()"
	shim a ls -l "$L" >/dev/null
	sleep 1.2
	n=${LSN:-200}
	w=$(counted ls-expired a ls -l "$L")
	fits ls-expired "$w" "${LS_EXPIRED:-2}" "$n"
	# A second cache: the listing makes the stubs from one batch of inodes.
	w=$(counted ls-second b ls -l "$T/b/L")
	fits ls-second "$w" "${LS_SECOND:-7}" "$n"
	[ "$(shim b ls "$T/b/L" | wc -l)" -eq "$n" ]
	sleep 1.2
	w=$(counted ls-second-expired b ls -l "$T/b/L")
	fits ls-second-expired "$w" "${LS_EXPIRED:-2}" "$n"
}

# Decision 0048: a new process writes against the bucket and inode another
# process of its cache kept (k/ in cache_dir).  Another host changes them
# in between: the optimistic CAS loses, the call reads and writes again, and
# nothing of either host's changes is lost or hidden from a third cache.
@test "a kept base another host changed meanwhile: the write reads again and loses nothing" {
	mkdir -p "$T/c"
	shim a "$PY" -c "
import os
open('$D/base', 'wb').write(b'y')
os.chmod('$D/base', 0o640)"
	[ -n "$(ls "$T/a-state/k" | grep '^b:')" ]
	# b: a new name in the same bucket, a new time on the same inode.
	shim b "$PY" -c "
import os
open('$T/b/d/from-b', 'wb').write(b'b')
os.utime('$T/b/d/base', (7, 7))"
	# a, new processes: their bases are stale now.
	export POHMELFS_LOG_LEVEL=debug
	POHMELFS_LOG=$T/stale-create.log shim a "$PY" -c "open('$D/from-a', 'wb').write(b'a')"
	shim b "$PY" -c "open('$T/b/d/from-b2', 'wb').write(b'b')"
	POHMELFS_LOG=$T/stale-mkdir.log shim a "$PY" -c "import os; os.mkdir('$D/dir-a')"
	POHMELFS_LOG=$T/stale-chmod.log shim a "$PY" -c "import os; os.chmod('$D/base', 0o600)"
	unset POHMELFS_LOG_LEVEL
	# Each wrote against its kept base first, lost, read, and wrote again.
	grep "rtt: " "$T"/stale-*.log | sed "s/^/# /" >&3 || true
	grep -A9 "rtt: put_n" "$T/stale-create.log" | grep -q "rtt: get"
	grep -A9 "rtt: put_n" "$T/stale-mkdir.log" | grep -q "rtt: get"
	grep -A9 "rtt: cas" "$T/stale-chmod.log" | grep -q "rtt: get"
	run shim c ls "$T/c/d"
	[[ "$output" == *from-a* ]]
	[[ "$output" == *from-b* ]]
	[[ "$output" == *from-b2* ]]
	[[ "$output" == *dir-a* ]]
	[ "$(shim c stat -c %a "$T/c/d/base")" = 600 ]
	[ "$(shim c stat -c %X "$T/c/d/base")" = 7 ]
	[ "$(shim c stat -c %h "$T/c/d")" -eq 4 ]
	[ "$(shim c cat "$T/c/d/from-a")" = a ]
}

# Decision 0052: a's kept copies say the target names are absent, but
# another host made them meanwhile.  The rename sent without a lookup loses
# its CAS, reads, and decides on what is stored: b's file is replaced (a
# third cache sees a's data under the name, once), b's directory refuses a
# file (EISDIR, the source stays).  A target that is here locally (the
# lookup path) is replaced as before.
@test "rename without a lookup onto a name another host made meanwhile: replaced or refused as stored" {
	mkdir -p "$T/c"
	freshen
	shim b "$PY" -c "open('$T/b/d/t2', 'wb').write(b'from b')"
	export POHMELFS_LOG_LEVEL=debug
	POHMELFS_LOG=$T/blind-file.log shim a "$PY" -c "import os; os.rename('$D/r', '$D/t2')"
	# (a's process kept the bucket it read: b changes it again.)
	shim b mkdir "$T/b/d/td"
	POHMELFS_LOG=$T/blind-dir.log run shim a "$PY" -c "
import os
try:
    os.rename('$D/s', '$D/td')
except IsADirectoryError:
    print('EISDIR')"
	unset POHMELFS_LOG_LEVEL
	grep -E "rtt: |not looked up" "$T"/blind-*.log | sed "s/^/# /" >&3 || true
	[ "$output" = EISDIR ]
	# Both went out on the kept copies, lost and read.
	grep -q "not looked up" "$T/blind-file.log"
	grep -q "not looked up" "$T/blind-dir.log"
	grep -A9 "rtt: put_n" "$T/blind-file.log" | grep -q "rtt: get"
	[ "$(shim c cat "$T/c/d/t2" | wc -c)" -eq 4096 ]
	# b made t2: its copy is valid for attr_timeout; checked afresh, the new file
	[ "$(POHMELFS_ATTR_TIMEOUT=0 shim b cat "$T/b/d/t2" | wc -c)" -eq 4096 ]
	[ "$(shim c ls "$T/c/d" | grep -c '^t2$')" -eq 1 ]
	[ "$(shim c ls "$T/c/d" | grep -c '^r$')" -eq 0 ]
	[ "$(shim a cat "$D/t2" | wc -c)" -eq 4096 ]
	[ "$(shim c stat -c %F "$T/c/d/td")" = directory ]
	[ "$(shim c cat "$T/c/d/s" | wc -c)" -eq 4096 ]
	[ "$(shim a cat "$D/s" | wc -c)" -eq 4096 ]
	# A target that is here: looked up (validated), replaced.
	POHMELFS_LOG_LEVEL=debug POHMELFS_LOG=$T/here.log shim a "$PY" -c "import os; os.rename('$D/c', '$D/t2')"
	! grep -q "not looked up" "$T/here.log" || false
	# (c listed d within attr_timeout: another host's rename shows at a
	# check, decision 0062.)
	[ "$(POHMELFS_ATTR_TIMEOUT=0 shim c ls "$T/c/d" | grep -c '^t2$')" -eq 1 ]
	[ "$(POHMELFS_ATTR_TIMEOUT=0 shim c ls "$T/c/d" | grep -c '^c$')" -eq 0 ]
	[ "$(shim a ls "$D" | grep -c '^t2$')" -eq 1 ]
}

# Decision 0054: a file moving into another directory on a's kept copies,
# which say the target is absent; b made it meanwhile.  The commit meets it,
# the rename starts over on reads and replaces it; a third cache sees the
# moved file under the name once, and no name left at the source.
@test "rename across without a lookup onto a name another host made meanwhile: replaced" {
	mkdir -p "$T/c"
	freshen
	shim b "$PY" -c "open('$T/b/e/t3', 'wb').write(b'from b')"
	POHMELFS_LOG_LEVEL=debug POHMELFS_LOG=$T/blind-across.log \
		shim a "$PY" -c "import os; os.rename('$D/x', '$E/t3')"
	grep -E "rtt: |not looked up" "$T/blind-across.log" | sed "s/^/# /" >&3 || true
	grep -q "not looked up" "$T/blind-across.log"
	[ "$(shim c cat "$T/c/e/t3" | wc -c)" -eq 4096 ]
	[ "$(shim c ls "$T/c/e" | grep -c '^t3$')" -eq 1 ]
	[ "$(shim c ls "$T/c/d" | grep -c '^x$')" -eq 0 ]
	[ "$(shim a cat "$E/t3" | wc -c)" -eq 4096 ]
	[ ! -e "$D/x" ]
}

# Decision 0055: an rmdir on a's kept copies of a directory another host
# filled meanwhile: the seal's create fails, the walk finds the file:
# ENOTEMPTY; the directory and its file stay for everyone, and a new
# file can be made in it (no seal left).
@test "rmdir on kept copies of a directory another host filled meanwhile: ENOTEMPTY, nothing lost" {
	mkdir -p "$T/c"
	shim a mkdir "$D/full"
	freshen
	shim b "$PY" -c "open('$T/b/d/full/f', 'wb').write(b'b')"
	run shim a "$PY" -c "
import os
try:
    os.rmdir('$D/full')
except OSError as e:
    print(e.errno)"
	[ "$output" = 39 ]
	[ "$(shim c cat "$T/c/d/full/f")" = b ]
	shim c "$PY" -c "open('$T/c/d/full/g', 'wb').write(b'c')"
	[ "$(shim b ls "$T/b/d/full" | wc -l)" -ge 1 ]
	[ "$(POHMELFS_ATTR_TIMEOUT=0 shim a ls "$D/full" | tr '\n' ' ')" = "f g " ]
}
