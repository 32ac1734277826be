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
#   REL_WORKER              one worker of the racing shell processes (rel_concurrency
#                           test 1, race_loop.sh): cp, mkdir -p, mv, rm in one directory
#   rel_race HOST DIR SRC LOGS N K   N workers of K rounds each in DIR under host HOST
#   rel_expected LOG...     what the workers' logs report, as rel_listing prints it
#   rel_listing HOST DIR    directories and files' md5 under DIR as host HOST sees them
#   rel_race_evidence A B DIR   after a mismatch: what tells the wrong-parent
#                           theories apart (doc/notes-s15-conc.md)

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

# worker P K SRC LOG DIR: K rounds of cp, mkdir -p, mv, rm in DIR; logs
# "+NAME MD5" for what it made and "-NAME" for what it removed.  Every
# worker races the others on `mkdir -p common/sub`.
# shellcheck disable=SC2016
REL_WORKER='p=$1 k=$2 src=$3 log=$4
cd "$5" || exit 1
for ((i = 0; i < k; i++)); do
	c=$src/c$(((p + i) % 8))
	cp "$c" f$p.$i && echo "+./f$p.$i $(md5sum <"$c" | cut -c1-32)" >>"$log" || echo "cp failed $p $i" >&2
	mkdir -p d$p/s$i common/sub && echo "+./d$p" >>"$log" && echo "+./d$p/s$i" >>"$log" || echo "mkdir failed $p $i" >&2
	mv f$p.$i d$p/s$i/m && echo "-./f$p.$i" >>"$log" && echo "+./d$p/s$i/m $(md5sum <"$c" | cut -c1-32)" >>"$log" \
		|| echo "mv failed $p $i" >&2
	if [ $((i % 3)) = 2 ]; then
		rm d$p/s$i/m && echo "-./d$p/s$i/m" >>"$log" || echo "rm failed $p $i" >&2
	fi
done'

# rel_race HOST DIR SRC LOGS N K: N workers (SRC holds c0..c7; worker P
# logs to LOGS.P, its stderr to LOGS.err.P), all waited for.
rel_race() {
	local h=$1 dir=$2 src=$3 logs=$4 n=$5 k=$6 p
	for ((p = 0; p < n; p++)); do
		shim "$h" bash -c "$REL_WORKER" worker "$p" "$k" "$src" "$logs.$p" "$dir" 2>"$logs.err.$p" &
	done
	wait
}

rel_expected() {
	python3 - "$@" <<-'EOF'
	import sys
	have = {"./common": None, "./common/sub": None}
	for path in sys.argv[1:]:
	    for line in open(path):
	        op, rest = line[0], line[1:].split()
	        if op == "+":
	            have[rest[0]] = rest[1] if len(rest) > 1 else None
	        else:
	            del have[rest[0]]
	for name in sorted(have):
	    print(name, have[name] or "dir")
	EOF
}

rel_listing() {
	shim "$1" bash -c "cd '$2' && find . -mindepth 1 -type d | sed 's/\$/ dir/'; \
		find . -type f -exec md5sum {} + | awk '{ print \$2, \$1 }'" | sort
}

# rel_race_evidence A B DIR: host A made DIR (under $T/A), host B listed it.
# A directory B lists that no worker made (session 14: ./d2/common and
# ./d2/common/sub) is either a stray entry naming common's own inode (same
# i: key as ./common) or a new inode; host A's local tree (without the
# shim) shows whether A made it locally too (the mkdir ran with the cwd in
# d2) or not (a wrong parent inode in the storage only).
rel_race_evidence() {
	local a=$1 b=$2 dir=$3 d
	echo "# evidence: host $a's local directories (no shim):"
	(cd "$T/$a/$dir" && find . -mindepth 1 -type d | sort | sed 's/^/#   /')
	echo "# evidence: storage inodes of the directories host $b lists:"
	for d in $(cd "$T/$b/$dir" && shim "$b" find . -mindepth 1 -type d | sort); do
		echo "#   $d $(ino_key "$b" "$T/$b/$dir/$d" 2>/dev/null)"
	done
}
