#!/usr/bin/env bats
# cache_space.bats — the cache's space rules (DESIGN.md §2 "Space"):
# eviction to cache_size by pohmelfsd (LRU, never dirty or open files), and
# a full cache filesystem (a small tmpfs in a private mount namespace):
# ENOSPC to the writer as natively, pushed data unharmed, a fetch that finds
# the disk full has pohmelfsd evict and succeeds, or fails with EIO.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	export POHMELFS_FSID=space-$RANDOM POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_ON_CLOSE=1
	T=$BATS_TEST_TMPDIR
}

teardown() {
	stop_daemons
	cluster_stop
}

# is_stub FILE: an empty mode-000 local file (what eviction leaves).
is_stub() {
	[ "$(stat -c '%s %a' "$1")" = "0 0" ]
}

@test "eviction to cache_size keeps dirty and open files and evicts least recently used first" {
	for i in 1 2 3 4 5 6; do
		shim a sh -c "head -c 1048576 /dev/urandom > $T/a/f$i"
		sha256sum <"$T/a/f$i" >"$T/f$i.sum"
	done
	# f1 changed without the shim (dirty), f2 held open by another process.
	printf 'tail' >>"$T/a/f1"
	sleep 60 <"$T/a/f2" &
	holder=$!
	# f5 and f6 used recently (atime), the rest not.
	sleep 1.1
	cat "$T/a/f5" "$T/a/f6" >/dev/null
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a \
		POHMELFS_CACHE_SIZE=4M "$B/pohmelfsd" --once
	kill $holder
	! is_stub "$T/a/f1" || false
	! is_stub "$T/a/f2" || false
	is_stub "$T/a/f3"
	is_stub "$T/a/f4"
	if [ "$(stat -c %X "$T/a/f5")" -gt "$(stat -c %Y "$T/a/f5")" ]; then
		# atime works on this filesystem: the recently read files stay.
		! is_stub "$T/a/f5" || false
		! is_stub "$T/a/f6" || false
	fi
	used=$(du -k -c "$T"/a/f? | tail -1 | cut -f1)
	[ "$used" -le 4200 ]
	# The dirty file is still pushed, the evicted ones come back whole.
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state "$B/pohmelfs" sync >/dev/null
	for i in 2 3 4 5 6; do
		shim a cat "$T/a/f$i" | sha256sum | cmp - "$T/f$i.sum"
	done
	shim b cat "$T/b/f1" | tail -c 4 | grep -qx tail
}

# in_small SCRIPT: run SCRIPT (bash) in a private mount namespace where
# $T/small is a fresh 8 MiB tmpfs; host "small" keeps prefix and cache there.
in_small() {
	mkdir -p "$T/small"
	unshare -m bash -c "mount -t tmpfs -o size=8m tmpfs '$T/small' && mkdir '$T/small/p' && $1"
}

@test "a full cache filesystem: ENOSPC to the writer, pushed data kept, fetches evict or fail with EIO" {
	[ "$(id -u)" = 0 ] || skip "needs root for a private tmpfs (CI runs as root)"
	unshare -m true 2>/dev/null || skip "no mount namespaces here"
	# Another host puts a 5 MiB file in the storage.
	shim b sh -c "head -c 5242880 /dev/urandom > $T/b/big; head -c 3145728 /dev/urandom > $T/b/big2"
	sha256sum <"$T/b/big" >"$T/big.sum"
	export PRELOAD B T
	run in_small '
		set -u
		S() { LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/small/p POHMELFS_CACHE_DIR=$T/small/state \
			POHMELFS_HOST_ID=small "$@"; }
		for i in 1 2 3; do
			S sh -c "head -c 2097152 /dev/urandom > $T/small/p/f$i" || exit 11
			sha256sum <$T/small/p/f$i >$T/f$i.sum
		done
		# 1: a write that does not fit gets ENOSPC, as natively.
		if S sh -c "head -c 4194304 /dev/zero > $T/small/p/huge" 2>$T/err; then exit 12; fi
		grep -q "No space left on device" $T/err || exit 13
		S rm -f $T/small/p/huge || exit 14
		# 2: the cache works again once there is room.
		S sh -c "echo again > $T/small/p/again" || exit 15
		# 3: fetching 5 MiB with ~2 MiB free: pohmelfsd evicts clean files, the read succeeds.
		S cat $T/small/p/big > $T/big.read 2>$T/err || { cat $T/err; exit 16; }
		sha256sum <$T/big.read | cmp - $T/big.sum || exit 17
		# 4: nothing left to evict (the rest of the disk held by a file outside the cache).
		POHMELFS_PREFIX=$T/small/p POHMELFS_CACHE_DIR=$T/small/state $B/pohmelfs cache clean >/dev/null
		head -c 8388608 /dev/zero > $T/small/filler 2>/dev/null
		S env POHMELFS_LOG_LEVEL=info sh -c "cat $T/small/p/big2" >/dev/null 2>$T/err && exit 18
		cat $T/err; grep -q "Input/output error" $T/err || exit 19
		exit 0
	'
	echo "$output"
	[ "$status" -eq 0 ]
	# Everything pushed before the disk filled is intact in the storage.
	for i in 1 2 3; do
		shim b cat "$T/b/f$i" | sha256sum | cmp - "$T/f$i.sum"
	done
	shim b cat "$T/b/again" | grep -qx again
}
