#!/usr/bin/env bats
# cache_refresh.bats — the rules of the cache that protect local data
# (DESIGN.md §2 "By inode, not by path", "Refresh by rename", "Stubs"):
#   - a refresh never removes or overwrites a dirty local file: the local
#     change ends as a push or a conflict copy, never lost;
#   - a process holding the old copy open (fd, mmap, running binary) keeps
#     it undisturbed while the refresh replaces the name;
#   - a refresh renames over every local name of a hardlinked inode, and a
#     second name of a cached inode is materialized as a local hardlink;
#   - writes through an fd whose name was unlinked or renamed over follow the
#     inode or are dropped, never land on whatever holds the name now;
#   - an unchanged file is not refetched;
#   - a stub changed without the shim becomes a conflict copy, never a push.
# Local identity is checked WITHOUT the shim (real st_dev/st_ino): the
# shim's stat reports the storage identity.  Hosts here check at every open
# (attr_timeout=0) and push at close, unless a test says otherwise.

setup() {
	POHM_TEST_BUILD=1	# POHMELFS_TEST_REGULAR_STUBS: build/test/ reads it
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=refresh-$RANDOM POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_ON_CLOSE=1
	mkdir -p "$T/a" "$T/b" "$T/c"
	PIDS=
}

teardown() {
	local p
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	stop_daemons
	cluster_stop
}

# real PATH: the local "dev:ino" of PATH, seen without the shim.
real() { stat -c '%d:%i' "$1"; }

# sync_host HOST: push what HOST's cache has dirty, in the foreground.
sync_host() {
	POHMELFS_PREFIX=$T/$1 POHMELFS_CACHE_DIR=$T/$1-state POHMELFS_HOST_ID=$1 \
		timeout 120 "$B/pohmelfs" sync
}

# conflicts_on HOST FROM: the contents of every conflict copy FROM left, as HOST sees them.
conflicts_on() {
	local h=$1 from=$2 f
	shim "$h" timeout 30 ls "$T/$h/.pohmelfs-conflicts/$from" 2>/dev/null | while read -r f; do
		shim "$h" timeout 30 cat "$T/$h/.pohmelfs-conflicts/$from/$f"
	done
}

@test "a refresh never overwrites a dirty local file: the local change ends as a conflict copy" {
	shim b timeout 60 bash -c "echo base > '$T/b/f'"
	[ "$(shim a timeout 30 cat "$T/a/f")" = base ]
	# Host a changes f and does not push yet: a writer with sync_on_close=0
	# whose shim cannot start pohmelfsd (a copy of the library alone), killed
	# with SIGKILL so nothing is pushed at exit.
	mkdir -p "$T/lib"
	cp "$LIB" "$T/lib/libpohmelfs.so"
	LD_PRELOAD=${PRELOAD%"$LIB"}$T/lib/libpohmelfs.so POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state \
		POHMELFS_HOST_ID=a POHMELFS_SYNC_ON_CLOSE=0 python3 -c "
import sys, time
with open(sys.argv[1], 'w') as f:
    f.write('from a, not pushed\n')
print('written', flush=True)
time.sleep(120)" "$T/a/f" >"$T/writer.out" 2>&1 &
	PIDS=$!
	until_true 30 grep -q written "$T/writer.out"
	kill -KILL "$PIDS"
	wait "$PIDS" 2>/dev/null || true
	# Host b commits a newer version.
	shim b timeout 60 bash -c "echo 'from b, committed' > '$T/b/f'"
	[ "$(shim c timeout 30 cat "$T/c/f")" = "from b, committed" ]
	# Host a opens f: the refresh must leave the dirty copy alone.
	shim a timeout 30 cat "$T/a/f"
	[ "$(cat "$T/a/f")" = "from a, not pushed" ]
	shim a timeout 30 ls -la "$T/a"
	[ "$(cat "$T/a/f")" = "from a, not pushed" ]
	# Its push loses the compare-and-swap: the storage keeps b's version and
	# a's change is a conflict copy that every host can read.
	sync_host a || true
	[ "$(shim c timeout 30 cat "$T/c/f")" = "from b, committed" ]
	[ "$(conflicts_on c a)" = "from a, not pushed" ]
}

@test "a process holding the old copy (fd, mmap, running binary) is undisturbed by a refresh" {
	head -c 200000 /dev/urandom >"$T/v1"
	head -c 300000 /dev/urandom >"$T/v2"
	shim b timeout 60 cp "$T/v1" "$T/b/data"
	shim b timeout 60 cp /bin/sleep "$T/b/prog"
	# Host a: a reader with an fd and a mapping of data, and prog running.
	shim a timeout 120 python3 -c "
import mmap, os, sys, time, hashlib
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
print('open', hashlib.md5(os.pread(fd, 1 << 20, 0)).hexdigest(), flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
print('fd', hashlib.md5(os.pread(fd, 1 << 20, 0)).hexdigest(), flush=True)
print('map', hashlib.md5(m[:]).hexdigest(), flush=True)" "$T/a/data" "$T/go" >"$T/reader.out" 2>&1 &
	reader=$!
	PIDS=$reader
	shim a env "$T/a/prog" 100 &
	PIDS="$PIDS $!"
	until_true 30 grep -q open "$T/reader.out"
	until_true 30 pgrep -f -x "$T/a/prog 100" >/dev/null
	prog=$(pgrep -f -x "$T/a/prog 100")
	PIDS="$PIDS $prog"
	old_data=$(real "$T/a/data")
	old_prog=$(real "$T/a/prog")
	# Host b commits new versions of both; host a opens them again.
	shim b timeout 60 cp "$T/v2" "$T/b/data"
	shim b timeout 60 cp /bin/true "$T/b/prog"
	[ "$(shim a timeout 30 md5sum "$T/a/data" | cut -d' ' -f1)" = "$(md5sum <"$T/v2" | cut -d' ' -f1)" ]
	[ "$(shim a timeout 30 md5sum "$T/a/prog" | cut -d' ' -f1)" = "$(md5sum </bin/true | cut -d' ' -f1)" ]
	# The names were replaced by rename: new local inodes.
	[ "$(real "$T/a/data")" != "$old_data" ]
	[ "$(real "$T/a/prog")" != "$old_prog" ]
	shim a timeout 30 "$T/a/prog"
	# The old copies live on for those who hold them.
	touch "$T/go"
	wait "$reader"
	cat "$T/reader.out"
	v1=$(md5sum <"$T/v1" | cut -d' ' -f1)
	[ "$(cat "$T/reader.out")" = "$(printf 'open %s\nfd %s\nmap %s' "$v1" "$v1" "$v1")" ]
	kill -0 "$prog"
	[ "$(md5sum <"/proc/$prog/exe" | cut -d' ' -f1)" = "$(md5sum </bin/sleep | cut -d' ' -f1)" ]
	kill "$prog"
	wait "$prog" 2>/dev/null || true
}

@test "a second name of a cached inode is a local hardlink, and a refresh renames over every name" {
	shim b timeout 60 bash -c "echo one > '$T/b/f' && mkdir '$T/b/d' && ln '$T/b/f' '$T/b/d/g'"
	[ "$(shim a timeout 30 cat "$T/a/f")" = one ]
	[ "$(shim a timeout 30 cat "$T/a/d/g")" = one ]
	# One local inode for both names (the real identity, not the overlay's).
	[ "$(real "$T/a/f")" = "$(real "$T/a/d/g")" ]
	[ "$(stat -c %h "$T/a/f")" -eq 2 ]
	# Host b commits a new version through one name; host a opens the other.
	shim b timeout 60 bash -c "echo two > '$T/b/f'"
	[ "$(shim c timeout 30 cat "$T/c/d/g")" = two ]
	got=$(shim a timeout 30 cat "$T/a/d/g")
	echo "host a reads d/g: '$got'; locally f: '$(cat "$T/a/f")' $(real "$T/a/f"), d/g: '$(cat "$T/a/d/g")' $(real "$T/a/d/g")"
	[ "$got" = two ]
	# Both local names now hold the new copy, one inode.
	[ "$(cat "$T/a/f")" = two ]
	[ "$(cat "$T/a/d/g")" = two ]
	[ "$(real "$T/a/f")" = "$(real "$T/a/d/g")" ]
	[ "$(shim a timeout 30 cat "$T/a/f")" = two ]
}

@test "a second name listed before the first was read becomes a hardlink when both are read" {
	shim b timeout 60 bash -c "echo one > '$T/b/f' && ln '$T/b/f' '$T/b/g'"
	shim a timeout 30 ls -l "$T/a"
	[ "$(shim a timeout 30 cat "$T/a/g")" = one ]
	[ "$(shim a timeout 30 cat "$T/a/f")" = one ]
	[ "$(real "$T/a/f")" = "$(real "$T/a/g")" ]
}

@test "writes through an fd whose name was renamed over or unlinked follow the inode, never the name" {
	shim b timeout 60 bash -c "echo 'f original' > '$T/b/f' && echo 'g replacement' > '$T/b/g' &&
		echo 'h original' > '$T/b/h' && echo 'k original' > '$T/b/k1' && ln '$T/b/k1' '$T/b/k2'"
	shim a timeout 120 python3 -c "
import os, subprocess, sys
d = sys.argv[1]
def sh(cmd):
    subprocess.run(['sh', '-c', cmd], check=True)
def done(name, fd):
    for call in (os.fsync, os.close):
        try:
            call(fd)
        except OSError as e:
            print(name, call.__name__, e.strerror, flush=True)
# f: renamed over while open for writing; the writes go to the orphan.
f = os.open(d + '/f', os.O_RDWR)
os.write(f, b'ORPHAN F DATA\n')
sh('mv ' + d + '/g ' + d + '/f')
os.write(f, b'MORE ORPHAN\n')
done('f', f)
# h: unlinked while open; the writes go nowhere.
h = os.open(d + '/h', os.O_RDWR)
sh('rm ' + d + '/h')
os.write(h, b'ORPHAN H DATA\n')
done('h', h)
# k1/k2: one name unlinked while open; the inode lives on as k2 and gets the writes.
k = os.open(d + '/k1', os.O_RDWR | os.O_TRUNC)
sh('rm ' + d + '/k1')
os.write(k, b'k through the fd\n')
done('k', k)
print('done', flush=True)" "$T/a" >"$T/orphans.out" 2>&1
	cat "$T/orphans.out"
	grep -q '^done$' "$T/orphans.out"
	# Host c (empty cache) sees what POSIX says.
	[ "$(shim c timeout 30 cat "$T/c/f")" = "g replacement" ]
	run shim c timeout 30 cat "$T/c/g"
	[ "$status" -ne 0 ]
	run shim c timeout 30 cat "$T/c/h"
	[ "$status" -ne 0 ]
	run shim c timeout 30 cat "$T/c/k1"
	[ "$status" -ne 0 ]
	[ "$(shim c timeout 30 cat "$T/c/k2")" = "k through the fd" ]
	[ "$(shim c timeout 30 ls -A "$T/c" | tr '\n' ' ')" = "f k2 " ]
	! shim c timeout 30 grep -r ORPHAN "$T/c/" || false
	# POSIX: fsync and close of such an fd succeed.
	[ "$(cat "$T/orphans.out")" = done ]
}

@test "an unchanged file is not refetched by a validation; an attribute change is not a refetch; new data is" {
	shim b timeout 60 bash -c "echo same > '$T/b/f'"
	[ "$(shim a timeout 30 cat "$T/a/f")" = same ]
	first=$(real "$T/a/f")
	mtime=$(stat -c %Y "$T/a/f")
	for i in 1 2 3; do
		[ "$(shim a timeout 30 cat "$T/a/f")" = same ]
	done
	[ "$(real "$T/a/f")" = "$first" ]
	# Another host changes only the mode: the overlay shows it, no refetch.
	shim b timeout 60 chmod 600 "$T/b/f"
	sync_host b		# a chmod travels with the next push
	[ "$(shim c timeout 30 stat -c %a "$T/c/f")" = 600 ]
	amode=$(shim a timeout 30 stat -c %a "$T/a/f")
	[ "$(shim a timeout 30 cat "$T/a/f")" = same ]
	[ "$(real "$T/a/f")" = "$first" ]
	[ "$(stat -c %Y "$T/a/f")" = "$mtime" ]
	# New data is fetched (by rename: a new local inode).
	shim b timeout 60 bash -c "echo different > '$T/b/f'"
	[ "$(shim a timeout 30 cat "$T/a/f")" = different ]
	[ "$(real "$T/a/f")" != "$first" ]
	# The stored mode was shown on host a after the chmod on b.
	[ "$amode" = 600 ]
}

@test "a stub changed without the shim becomes a conflict copy, never a push" {
	# Only a regular stub can be written into: the form a filesystem without
	# socket inodes gets (core/cache/stub.h; cache_stubs.bats has the default form).
	export POHMELFS_TEST_REGULAR_STUBS=1
	shim b timeout 60 bash -c "echo stored > '$T/b/f'"
	shim a timeout 30 ls -l "$T/a"
	# a/f is a regular stub: empty, mode 000.
	[ -f "$T/a/f" ]
	[ "$(stat -c '%s %a' "$T/a/f")" = "0 0" ]
	# A program without the shim (root) writes into the stub.
	chmod 644 "$T/a/f"
	echo "written into the stub" >"$T/a/f"
	run sync_host a
	echo "$output"
	# The storage is unchanged: a fresh host reads the stored version.
	[ "$(shim c timeout 30 cat "$T/c/f")" = stored ]
	[ "$(shim b timeout 30 cat "$T/b/f")" = stored ]
	# pohmelfsd's round too must not push it.
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a timeout 120 "$B/pohmelfsd" --once || true
	[ "$(shim c timeout 30 cat "$T/c/f")" = stored ]
	# The local data is kept as a conflict copy (at the latest once a
	# process of host a opens the name), and a's f shows the stored version.
	got=$(conflicts_on c a)
	if [ "$got" != "written into the stub" ]; then
		echo "no conflict copy after sync and pohmelfsd --once; host a opens f"
		shim a timeout 30 cat "$T/a/f"
		got=$(conflicts_on c a)
		[ "$got" != "written into the stub" ] || NEEDS_OPEN=1
	fi
	[ "$got" = "written into the stub" ]
	[ "$(shim a timeout 30 cat "$T/a/f")" = stored ]
	[ -z "${NEEDS_OPEN:-}" ]
}

@test "an O_CREAT open of a file replaced without the shim keeps a newer stored version: a conflict copy" {
	# Host b commits v2 over a's v1; on host a, f is replaced without the
	# shim.  a's refresh (the cat) maps the local file to f's record so that
	# its push keeps it as a conflict copy (note_unrecorded_fetch); the
	# append's O_CREAT open must not adopt it over v2 (pohm_cache_adopt).
	shim a timeout 30 sh -c 'printf v1 >"$1"' sh "$T/a/f"
	[ "$(shim b timeout 30 cat "$T/b/f")" = v1 ]
	shim b timeout 30 sh -c 'printf v2 >"$1"' sh "$T/b/f"
	printf local >"$T/a/tmp"
	mv "$T/a/tmp" "$T/a/f"
	shim a timeout 30 cat "$T/a/f"
	shim a timeout 30 sh -c 'printf more >>"$1"' sh "$T/a/f"
	run sync_host a
	echo "$output"
	[ "$(shim c timeout 30 cat "$T/c/f")" = v2 ]
	[ "$(conflicts_on c a)" = localmore ]
}

@test "setuid and setgid bits survive another cache's fetch and refresh (owner before mode)" {
	# chown clears S_ISUID/S_ISGID of a file, root's chown too: a cache that
	# set the mode first and the owner after lost them (issue 18 case 4).
	[ "$(id -u)" = 0 ] || skip "needs root: the files are given to another owner"
	shim a sh -c 'printf "#!/bin/sh\necho hi\n" >"$1/tool" && : >"$1/empty" &&
		chown 1000:1000 "$1/tool" "$1/empty" && chmod 6755 "$1/tool" && chmod 4711 "$1/empty"' \
		sh "$T/a"
	# b fetches both (the empty one is made whole at listing time).
	shim b cat "$T/b/tool" >/dev/null
	shim b ls "$T/b" >/dev/null
	[ "$(stat -c '%a %u:%g' "$T/b/tool")" = "6755 1000:1000" ]
	[ "$(stat -c '%a %u:%g' "$T/b/empty")" = "4711 1000:1000" ]
	# A clean copy whose stored owner and mode change is refreshed with both.
	shim a sh -c 'chown 1001:1001 "$1/tool" && chmod 4750 "$1/tool"' sh "$T/a"
	shim b cat "$T/b/tool" >/dev/null
	[ "$(stat -c '%a %u:%g' "$T/b/tool")" = "4750 1001:1001" ]
	# ... and a third cache, fresh, sees them too.
	shim c cat "$T/c/tool" >/dev/null
	[ "$(stat -c '%a %u:%g' "$T/c/tool")" = "4750 1001:1001" ]
}

@test "a refresh between a writer's open and its open-for-write step never takes its writes" {
	# Issue 18: the shim's writer holds its inode's w.lock byte from before
	# its real open.  POHMELFS_TEST_REFRESH_IN_OPEN (test build) moves the
	# write-open's refresh from before the real open to right after it,
	# before the open-for-write step: the refresh must leave the name, and
	# the appended line must reach the name (then a conflict copy: its base
	# is the old version), never a replaced copy no name shows.
	shim a timeout 60 bash -c "echo old > '$T/a/f'"
	[ "$(shim b timeout 30 cat "$T/b/f")" = old ]
	shim a timeout 60 bash -c "echo new > '$T/a/f'"
	# An append to an existing file (O_WRONLY|O_APPEND, no O_CREAT).  Not
	# dd: its aligned_alloc(4096, 512) aborts under a preloaded ASan.
	POHMELFS_TEST_REFRESH_IN_OPEN=1 shim b timeout 30 python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"appended\n")
os.close(fd)' "$T/b/f"
	[ "$(shim c timeout 30 cat "$T/c/f")" = new ]
	[ "$(shim b timeout 30 cat "$T/b/f")" = new ]
	[ "$(conflicts_on c b)" = "$(printf 'old\nappended')" ]
}
