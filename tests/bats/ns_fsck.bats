#!/usr/bin/env bats
# ns_fsck.bats — `pohmelfs fsck` and `pohmelfs repair` against a local
# cluster of 3 groups: a clean tree is clean (text and JSON); a group that
# was down while the tree changed is reported divergent and brought in line
# by repair (proved by reading with another group gone); a copy corrupted
# on disk is a checksum error that repair rewrites, every copy corrupt is
# data loss (exit 4); a rename killed between its intent and its commit
# leaves an intent that repair completes once it is stale; old chunk
# generations and tombstones go past the age (the chunk GC).  The tree is
# built with the cache's C API (cache_ctl: files with data) and ns_stress.

setup() {
	load lib/common
	load lib/cluster
	load lib/raw
	S=$B/tests/progs/ns_stress
	CTL=$B/tests/progs/cache_ctl
	# make check builds them (all): a missing one is a failure, not a skip.
	[ -x "$S" ] && [ -x "$CTL" ]
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=fsck POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_ON_CLOSE=1
	export POHMELFS_PREFIX=$T/p POHMELFS_CACHE_DIR=$T/state POHMELFS_HOST_ID=a
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
}

teardown() {
	[ -f "$T/state/pohmelfsd.pid" ] && kill "$(cat "$T/state/pohmelfsd.pid")" 2>/dev/null
	cluster_stop
}

tree() {
	"$CTL" mkdir d
	"$CTL" write d/f1 "one"
	"$CTL" write d/f2 "two two"
	"$CTL" mkdir d/sub
	"$CTL" write d/sub/f3 "three three three"
	"$CTL" symlink f1 d/l
	"$CTL" ln d/f1 d/hard
}

# id KEY: the storage id (hex) of KEY in the fsid namespace.
id() { printf '%s\0%s' "$POHMELFS_FSID" "$1" | sha512sum | cut -c1-128; }

@test "a fresh tree is clean, in text and in JSON" {
	tree
	run p fsck
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"clean (exit 0)"* ]]
	# Three small files, their data inline in their inodes (decision 0023):
	# no chunk object, and no "missing chunk" either.
	[[ $output == *"chunks 0"* ]]
	run p fsck --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == 0 and r["complete"] and r["issues"] == [], r
assert r["inodes"] >= 7 and r["chunks"] == 0, r'
	run p repair
	[ "$status" -eq 0 ]
	[[ $output == *"repaired: 0, failed: 0"* ]]
}

@test "a group down while the tree changed: fsck reports it, repair brings it in line" {
	tree
	cluster_kill 2-1
	"$CTL" write d/new "written while group 2 was down"
	"$CTL" mv d/f2 d/sub/f2moved
	"$CTL" mkdir e
	# While it is down the check cannot be complete, and repair deletes nothing.
	run p fsck
	echo "$output"
	[ $((status & 2)) -eq 2 ]
	[[ $output == *"unchecked"*"group 2"* ]]
	cluster_start_node 2-1
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"divergent"*"group 2 has no copy"* ]]
	[[ $output == *"group 2 holds another version"* ]]
	run p repair --dry-run
	[ "$status" -eq 1 ]
	[[ $output == *"would repair"* ]]
	# Copies younger than a writer may count (about 3 s) are the writer's.
	sleep 3.2
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"repaired"* ]]
	run p fsck
	[ "$status" -eq 0 ]
	# Group 2 holds everything now: with group 1 gone, 2 and 3 agree.
	cluster_kill 1-1
	run "$S" resolve d/new
	[ "$status" -eq 0 ]
	run "$S" resolve d/sub/f2moved
	[ "$status" -eq 0 ]
	run "$S" resolve e
	[ "$status" -eq 0 ]
}

@test "a corrupt copy is a checksum error repair rewrites; every copy corrupt is data loss" {
	tree
	cluster_corrupt_disk 3-1 "$(id i:1)"
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"checksum"*"i:1: group 3 corrupt"* ]]
	sleep 3.2
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"checksum"*"i:1: group 3 corrupt — repaired"* ]]
	run p fsck
	[ "$status" -eq 0 ]
	# The root directory's bucket corrupt in every group: nothing to repair from.
	for n in 1-1 2-1 3-1; do cluster_corrupt_disk "$n" "$(id b:1:0:0)"; done
	run p fsck
	echo "$output"
	[ $((status & 4)) -eq 4 ]
	[[ $output == *"lost"*"every readable copy is corrupt"* ]]
	run p repair
	[ $((status & 4)) -eq 4 ]
}

# Decision 0067: its commit (the marked destination entry) never landed,
# so once stale the rename is rolled back (the destination fenced first).
@test "a rename killed after its intent: fsck shows it, repair rolls it back once stale" {
	local t0
	"$S" create victim
	"$S" mkdir m2
	# The renamer dies between its intent and its commit: a hook in the
	# rename kills it there (a kill raced against the clock could land
	# after the commit).
	run env POHMELFS_TEST_KILL_AT_RENAME_INTENT=1 "$S" mv victim m2/moved
	[ "$status" -eq 137 ]
	t0=$(date +%s%N)
	# The intent is in the root directory's bucket (the target name shows);
	# the destination entry was never written.
	p get b:1:0:0 | grep -aq moved
	run "$S" resolve m2/moved
	[ "$output" = "No such file or directory" ]
	run p fsck -v
	echo "$output"
	[[ $output == *"rename of \"victim\""* ]]
	# Stale after the clients' intent timeout (10 s): repair rolls it back.
	sleep $(( 11 - ($(date +%s%N) - t0) / 1000000000 ))
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"intent"*"unfinished rename of \"victim\""* ]]
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	run "$S" resolve victim
	[ "$status" -eq 0 ]
	run "$S" resolve m2/moved
	[ "$output" = "No such file or directory" ]
	run p fsck
	[ "$status" -eq 0 ]
}

# Decision 0058: rmdir writes its intent and the seal of the empty
# directory in one put_n; both written, the rmdir is committed.  Killed
# there (before the entry's removal), fsck shows the rmdir in progress
# and, once stale, repair completes it: the name goes, the directory's
# inode is a tombstone, and a second fsck finds nothing.
@test "an rmdir killed after its intent and seal: fsck shows it, repair completes it once stale" {
	local t0 ino
	"$S" mkdir gone
	"$S" mkdir kept
	ino=$("$S" resolve gone)
	run env POHMELFS_TEST_KILL_AT_RMDIR_SEALED=1 "$S" rmdir gone
	[ "$status" -eq 137 ]
	t0=$(date +%s%N)
	run p fsck -v
	echo "$output"
	[[ $output == *"rmdir of \"gone\" in progress"* ]]
	[[ $output == *"seal (rmdir) in progress"* ]]
	sleep $(( 11 - ($(date +%s%N) - t0) / 1000000000 ))
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"unfinished rmdir of \"gone\""* ]]
	run p repair
	echo "$output"
	[[ $output == *"unfinished rmdir of \"gone\""*"repaired"* ]]
	run "$S" resolve gone
	[ "$output" = "No such file or directory" ]
	# The parent's count may be one too high (its decrement went with the
	# entry's removal, which died): the next pass counts the names.
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	run "$S" resolve kept
	[ "$status" -eq 0 ]
	run p fsck
	echo "$output"
	[ "$status" -eq 0 ]
	# The name is free again.
	"$S" mkdir gone
}

# Decision 0022: a create writes its inode and its entry at once, so an
# entry may be read before its inode lands.  Only a bucket unchanged for
# the intent timeout says the create died: younger, the name is noted and
# kept; older, repair removes it.
@test "an entry whose inode is missing: kept while its bucket is young, removed by repair after the intent timeout" {
	local t0 ino
	"$S" create keep
	"$S" create gone
	t0=$(date +%s%N)
	ino=$("$S" resolve gone)
	p del "i:$ino"
	run p fsck -v
	echo "$output"
	[[ $output == *"\"gone\""*"missing; the bucket changed recently"* ]]
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$("$S" resolve gone)" = "$ino" ]
	sleep $(( 11 - ($(date +%s%N) - t0) / 1000000000 ))
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"dangling"*"\"gone\""*"missing"* ]]
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	run "$S" resolve gone
	[ "$output" = "No such file or directory" ]
	run "$S" resolve keep
	[ "$status" -eq 0 ]
	run p fsck
	[ "$status" -eq 0 ]
}

@test "old chunk generations and tombstones are reclaimed past the age, live data kept" {
	export POHMELFS_INLINE_DATA=0	# small files in chunks (decision 0023)
	tree
	"$CTL" write d/f1 "one, second version"
	"$CTL" unlink d/f2
	# Within the default age (1 h) nothing is reclaimable yet.
	run p fsck
	[ "$status" -eq 0 ]
	run p fsck --age=0
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"garbage"*"chunk generation no committed inode names"*"inode live"* ]]
	# The unlink was one wait (decision 0049): f2's inode is live, marked,
	# without a name: garbage, removed (never /lost+found); its chunk and
	# its tombstone go at the next repair.
	[[ $output == *"orphan"*"unlinked, removed"* ]]
	run p repair --age=0
	echo "$output"
	[[ $output == *"issues: orphan 1 garbage 1"* ]]
	run p fsck --age=0
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"garbage"*"inode deleted"* ]]
	[[ $output == *"tombstone"*"reclaimed"* ]]
	run p repair --age=0
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"issues: garbage 1 tombstone 1"* ]]
	run p fsck --age=0 --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["chunks"] == 2 and r["tombstones"] == 0, r'
	rm -rf "$T/p" "$T/state"
	"$CTL" get d/hard
	[ "$(cat "$T/p/d/hard")" = "one, second version" ]
}

@test "fsck and repair refuse bad arguments with a clear message" {
	run p fsck --dry-run
	[ "$status" -eq 2 ]
	[[ $output == *"--dry-run belongs to repair"* ]]
	run p fsck --age=soon
	[ "$status" -eq 2 ]
	[[ $output == *"--age=soon: expected a number of seconds"* ]]
	run p fsck extra
	[ "$status" -eq 2 ]
	[[ $output == *"unexpected argument \"extra\""* ]]
	POHMELFS_FSID=never-used run p fsck
	[ "$status" -eq 2 ]
	[[ $output == *"has no root inode"* ]]
}

# key_on NODE PATTERN: a stored key on NODE matching PATTERN (the node
# keeps the key next to the data).
# The object's own key is read from its header (nsobj.h: ... u16 fsid
# length, u16 key length, fsid, key, then the body), never by a regex over
# the raw bytes: the body's first byte may be a hex digit, and a regex for
# a hex key would run into it.
key_on() {
	python3 - "$(cluster_dir "$1")/blob" "$POHMELFS_FSID" "$2" <<'PY'
import os, re, struct, sys
top, fsid, pat = sys.argv[1], sys.argv[2].encode(), re.compile(sys.argv[3])
for dirpath, _, files in os.walk(top):
    for f in sorted(files):
        data = open(os.path.join(dirpath, f), 'rb').read()
        i = data.find(fsid)
        while i >= 4:
            fl, kl = struct.unpack_from('<HH', data, i - 4)
            if fl == len(fsid):
                key = data[i + fl:i + fl + kl].decode('ascii', 'replace')
                if pat.fullmatch(key):
                    print(key)
                    sys.exit(0)
            i = data.find(fsid, i + 1)
sys.exit(1)
PY
}

@test "a write stopped mid-way leaves young garbage: fsck and repair agree, exit 0 with a note" {
	export POHMELFS_INLINE_DATA=0	# small files in chunks (decision 0023)
	"$CTL" mkdir d
	"$CTL" write d/f "first"
	# Groups 2 and 3 refuse writes: the new chunk reaches group 1 only and
	# the inode never names it (the push fails), as when a cluster stops
	# in the middle of a write.
	cluster_fault 2-1 refuse-writes
	cluster_fault 3-1 refuse-writes
	run "$CTL" write d/f "second, never committed"
	[ "$status" -ne 0 ]
	cluster_clear_faults all
	run p fsck
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"note: 1 unreferenced object(s) younger than 1 h left alone"* ]]
	[[ $output != *"divergent"* ]]
	run p fsck -v
	[[ $output == *"divergent"*"info"*"no committed inode names it: left to the garbage check"* ]]
	[[ $output == *"garbage"*"info"*"unreferenced chunk generation, young"* ]]
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"repaired: 0, failed: 0"* ]]
	[[ $output != *"()"* ]]
	run p fsck --json
	echo "$output" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == 0 and r["young_garbage"] == 1 and r["found"]["divergent"] == 0, r'
	# Past the age it is garbage repair deletes, from the one group too.
	run p repair --age=0
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"garbage"*"chunk generation no committed inode names"*"repaired"* ]]
	run p fsck --age=0
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"chunks 1,"* ]]
	[[ $output != *"note:"* ]]
}

@test "a chunk its map names, held by one group only: repair writes it to the others" {
	export POHMELFS_INLINE_DATA=0	# small files in chunks (decision 0023)
	local key
	"$CTL" mkdir d
	"$CTL" write d/f "the only copy left"
	until_true 10 key_on 1-1 'd:[0-9a-f]+:0:[0-9a-f]+' >/dev/null
	key=$(key_on 1-1 'd:[0-9a-f]+:0:[0-9a-f]+')
	# Groups 2 and 3 lose their copies (a reader wants a majority: it
	# cannot repair this, so repair must write the copy it checked).
	POHMELFS_GROUPS=2:3 p del "$key"
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"divergent"*"$key: group 2 has no copy, group 3 has no copy"* ]]
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"divergent"*"$key"*"— repaired"* ]]
	[[ $output != *"()"* ]]
	run p fsck
	[ "$status" -eq 0 ]
	# The same with the copies of groups 1 and 2 corrupt on disk: written
	# again from group 3's, the one that matches.
	cluster_corrupt_disk 1-1 "$(id "$key")"
	cluster_corrupt_disk 2-1 "$(id "$key")"
	run p fsck
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"checksum"*"$key: group 1 corrupt, group 2 corrupt"* ]]
	run p repair
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"checksum"*"$key"*"— repaired"* ]]
	run p fsck
	[ "$status" -eq 0 ]
	# Groups 2 and 3 alone serve it now.
	cluster_kill 1-1
	rm -rf "$T/p" "$T/state"
	"$CTL" get d/f
	[ "$(cat "$T/p/d/f")" = "the only copy left" ]
}
