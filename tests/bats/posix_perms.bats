#!/usr/bin/env bats
# posix_perms.bats — issue 22 item 2: a namespace change the kernel refuses
# for permissions never changes the storage.  A directory tree is made by
# root (through the shim, so every host sees it); then uid 65534, whose own
# per-user cache has no record of those directories, tries to unlink,
# rmdir and rename in them: in a root-owned 0755 directory, in a sticky
# 1777 directory on root's file, and at the prefix root.  The same runs on
# a plain local tree; the errors and the resulting trees must be the same,
# and a fresh cache must list exactly the tree root made.

setup() {
	load lib/common
	load lib/cluster
	preload_ok || skip "LD_PRELOAD does not work here"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to uid 65534"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	# Under a world-searchable directory: uid 65534 must reach the prefix
	# by its path (issue 22 item 1 is the case where it cannot).
	W=$(mktemp -d /tmp/pohm-perms.XXXXXX)
	chmod 755 "$W"
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=perms-$RANDOM POHMELFS_SYNC_ON_CLOSE=1
	export POHMELFS_ATTR_TIMEOUT=0
	unpriv_paths
}

teardown() {
	for p in $(pgrep -x pohmelfsd); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^POHMELFS_PREFIX=$W/" &&
			kill "$p" 2>/dev/null
	done
	cluster_stop
	rm -rf "$W" /var/tmp/pohmelfs-65534/"$(echo "$W" | tr / _)"_p 2>/dev/null
	true
}

# make_tree DIR: root's tree (d 0755 with f, s 1777 with rootf, top).
make_tree() {
	mkdir -p "$1/d" "$1/s" && echo hi >"$1/d/f" && echo r >"$1/s/rootf" && echo top >"$1/top" &&
		chmod 755 "$1" "$1/d" && chmod 1777 "$1/s"
}

# as_nobody DIR: each refused change as uid 65534 in DIR, one line each:
# "CMD: exit status and the message's errno part".
as_nobody() {
	local dir=$1 cmd
	shift
	for cmd in 'rm -f d/f' 'rm -f s/rootf' 'mv d/f s/g' 'mv s/rootf s/g' 'rm -f top' \
		'rmdir d' 'mv top top2' 'ln d/f d/f2'; do
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@" \
			sh -c 'cd "$1" && eval "$2" 2>&1; echo "status $?"' sh "$dir" "$cmd" |
			sed 's/.*: //' | paste -sd' ' | sed "s|^|$cmd: |"
	done
}

@test "refused unlink, rmdir, rename and link of another user: the kernel's errors, and the storage untouched" {
	mkdir "$W/native" "$W/p" "$W/q"
	chmod 755 "$W/p"
	make_tree "$W/native"
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$W/p POHMELFS_CACHE_DIR=$W/p-state \
		bash -c "$(declare -f make_tree); make_tree '$W/p'"
	native=$(as_nobody "$W/native")
	shimmed=$(as_nobody "$W/p" env LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$W/p" \
		POHMELFS_CACHE_DIR="$W/p-state")
	echo "native:"; echo "$native"; echo "shim:"; echo "$shimmed"
	[ "$native" = "$shimmed" ]
	[[ $native == *"rm -f d/f: Permission denied status 1"* ]]
	[[ $native == *"rm -f s/rootf: Operation not permitted status 1"* ]]
	# The local trees are the same ...
	[ "$(cd "$W/native" && find . | sort)" = "$(cd "$W/p" && find . | sort)" ]
	# ... and so is the storage, seen by a fresh cache.
	stored=$(LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$W/q POHMELFS_CACHE_DIR=$W/q-state \
		find "$W/q" | sed "s|^$W/q|.|" | sort)
	echo "stored:"; echo "$stored"
	[ "$stored" = "$(cd "$W/native" && find . | sort)" ]
}
