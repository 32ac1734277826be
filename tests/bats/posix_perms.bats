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

# attr_tree DIR: root's files for the attribute checks (d 0777 with f 0644,
# t 0666, t2 0644).
attr_tree() {
	mkdir -p "$1/d" && echo hi >"$1/d/f" && echo t >"$1/t" && echo t2 >"$1/t2" &&
		chmod 644 "$1/d/f" "$1/t2" && chmod 666 "$1/t" && chmod 777 "$1/d"
}

# attrs_as_nobody DIR [WRAPPER...]: each attribute change as uid 65534 in
# DIR, one line each: "CMD: exit status and the message's errno part".
attrs_as_nobody() {
	local dir=$1 cmd
	shift
	for cmd in 'chmod 600 d/f' 'chmod 700 d' 'chmod 600 t' 'touch -m -d @1000 t' 'touch t2' \
		'touch t' 'chown 65534 d/f' 'chgrp 65534 t' 'chown -h 65534 t2'; do
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@" \
			sh -c 'cd "$1" && eval "$2" 2>&1; echo "status $?"' sh "$dir" "$cmd" |
			sed 's/.*: //' | paste -sd' ' | sed "s|^|$cmd: |"
	done
}

@test "chmod, chown and utimes of another user's file made on another host: the kernel's EPERM/EACCES, the storage untouched" {
	# Root makes the files through host a; uid 65534 works in its own
	# prefix p, where its cache makes the local copies (owned by 65534,
	# so the kernel's own owner check on them would pass).
	mkdir "$W/native" "$W/a" "$W/p" "$W/q"
	chmod 755 "$W/a" "$W/q"
	chmod 1777 "$W/p"
	attr_tree "$W/native"
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$W/a POHMELFS_CACHE_DIR=$W/a-state POHMELFS_HOST_ID=a \
		bash -c "$(declare -f attr_tree); attr_tree '$W/a'"
	native=$(attrs_as_nobody "$W/native")
	shimmed=$(attrs_as_nobody "$W/p" env LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$W/p" \
		POHMELFS_CACHE_DIR="$W/p-state" POHMELFS_HOST_ID=p)
	echo "native:"; echo "$native"; echo "shim:"; echo "$shimmed"
	[ "$native" = "$shimmed" ]
	[[ $native == *"chmod 600 d/f: Operation not permitted status 1"* ]]
	[[ $native == *"touch -m -d @1000 t: Operation not permitted status 1"* ]]
	[[ $native == *"touch t2: Permission denied status 1"* ]]
	[[ $native == *"touch t: status 0"* ]]
	# The storage holds root's modes and owners, and t's time is no 1000.
	stored=$(LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$W/q POHMELFS_CACHE_DIR=$W/q-state \
		sh -c 'cd "$1" && stat -c "%n %a %u %g" d d/f t t2' sh "$W/q")
	echo "stored:"; echo "$stored"
	[ "$stored" = "$(cd "$W/native" && stat -c "%n %a %u %g" d d/f t t2)" ]
	[ "$(LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$W/q POHMELFS_CACHE_DIR=$W/q-state \
		stat -c %Y "$W/q/t")" != 1000 ]
}
