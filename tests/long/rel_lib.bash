# rel_lib.bash — helpers shared by the reliability tests (tests/bats/rel_*.bats
# and tests/long/*.sh): hosts under the shim, tree listings, a timer.
# Load after lib/common and lib/cluster (bats: `load ../long/rel_lib`).
#
#   rel_env                 the client settings every reliability test uses
#   shim HOST CMD...        run CMD under the shim as host HOST
#                           (prefix $T/HOST, cache $T/HOST-state)
#   rel_stop_daemons        stop every pohmelfsd of $T/*-state (by pid file)
#   tree_of HOW DIR         type, mode, size, links and md5 of everything in DIR
#   names_of HOW DIR        the sorted relative names under DIR
#   ms_since T0             milliseconds since T0 (a `date +%s%N` value)
#   ino_key HOST PATH       the storage key i:<hex> of PATH's inode
#   group_sum KEY G         the sha512 prefix of group G's copy of KEY ("absent")

rel_env() {
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID="rel-${BATS_TEST_NUMBER:-0}" \
		POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0 POHMELFS_READ_REPAIR=1 \
		POHMELFS_READ_WAIT_TIMEOUT=${POHMELFS_READ_WAIT_TIMEOUT:-3} \
		POHMELFS_WRITE_WAIT_TIMEOUT=${POHMELFS_WRITE_WAIT_TIMEOUT:-3}
	unset POHMELFS_PREFIX POHMELFS_CACHE_DIR POHMELFS_HOST_ID
}

shim() {
	local h=$1
	shift
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state POHMELFS_HOST_ID=$h "$@"
}

rel_stop_daemons() {
	local f pid
	for f in "$T"/*-state/pohmelfsd.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null) || continue
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	return 0
}

tree_of() {
	local how=$1 dir=$2
	# Symlink and directory mtimes are left out (creation time / entry changes).
	$how bash -c "cd '$dir' && { find . -mindepth 1 -type f -printf '%y %m %s %n %p\n'; \
		find . -mindepth 1 -type d -printf '%y %m %p\n'; \
		find . -mindepth 1 -type l -printf '%y %p %l\n'; } | sort \
		&& find . -type f -print0 | sort -z | xargs -0 -r md5sum"
}

names_of() {
	local how=$1 dir=$2
	$how bash -c "cd '$dir' && find . -mindepth 1 | sort"
}

native() { "$@"; }

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

ino_key() {
	printf 'i:%x' "$(shim "$1" stat -c %i "$2")"
}

group_sum() {
	"$B/pohmelfs" --json lookup "$1" 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("absent"); sys.exit(0)
g = next((g for g in d.get("groups", []) if g.get("group") == int(sys.argv[1])), {})
print(g.get("checksum", "absent")[:32] if g.get("status", -1) == 0 else "absent")' "$2"
}
