#!/usr/bin/env bash
# race_loop.sh [ROUNDS] — long tier (tests/run with CI=true or LONG=1):
# rel_concurrency.bats test 1 many times over, each round on new hosts
# and a new file system id (fresh caches, a fresh tree): 8 shell processes
# under the shim run cp, mkdir -p, mv, rm in one directory, all racing on
# `mkdir -p common/sub`, and another host must list exactly what they
# report.  The main tier's test failed once in ~22 runs at the end of
# session 14 (two directories no worker made: ./d2/common, ./d2/common/sub;
# doc/notes-s15-conc.md); this loop runs that shape ROUNDS times (default
# 30) to catch it again, with the evidence that tells its explanations
# apart (rel_race_evidence).  A failed round keeps $T and prints where.
# Prints TAP, one line per round.  Starts its own 3-group cluster and stops
# it, also when interrupted.
#   RACE_SECONDS=S    start no new round after S seconds (default 300; the rest: SKIP)
#   RACE_LOG_LEVEL    the shim's log level in the rounds (default: none);
#                     each round's log is $T/rN/shim.log
#   KEEP_TMP=1        keep $T even when every round passed
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD
rounds=${1:-${RACE_ROUNDS:-30}}
RACE_SECONDS=${RACE_SECONDS:-300}	# the long tier's bound (DESIGN §6)
B=${POHM_BUILD:-$TOP/build}
B=$(cd "$B" && pwd)
CLUSTER_BIN=$B/pohmelfs-cluster
[ -x "$CLUSTER_BIN" ] || CLUSTER_BIN=$TOP/tools/pohmelfs-cluster
T=$(mktemp -d "${TMPDIR:-/tmp}/race_loop.XXXXXX")
# Its own copy of the binaries, as kill_loop.sh: a `make` during the run
# would relink the library under the running shells.
mkdir "$T/bin" || exit 1
for ((i = 0; ; i++)); do
	for f in libpohmelfs.so pohmelfsd pohmelfs pohmelfs-node; do
		cp "$B/$f" "$T/bin/$f" || exit 1
	done
	cp "$CLUSTER_BIN" "$T/bin/pohmelfs-cluster" || exit 1
	out=$(LD_PRELOAD=$T/bin/libpohmelfs.so /bin/true 2>&1) && [ -z "$out" ] && break
	[ $i -lt 10 ] || { echo "Bail out! $B/libpohmelfs.so does not load: $out"; rm -rf "$T"; exit 1; }
	sleep 1
done
B=$T/bin CLUSTER_BIN=$T/bin/pohmelfs-cluster
export POHM_BUILD=$B POHMELFS_NODE=$B/pohmelfs-node
PRELOAD=$B/libpohmelfs.so
# shellcheck source=rel_lib.bash
. "$TOP/tests/long/rel_lib.bash"

kept=
cleanup() {
	rel_stop_daemons
	"$CLUSTER_BIN" stop "$T/cluster" >/dev/null 2>&1
	if [ -n "${KEEP_TMP:-}" ] || [ -n "$kept" ]; then
		echo "# kept $T${kept:+ (failed rounds:$kept)}"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "1..$rounds"
if ! env_out=$("$CLUSTER_BIN" start "$T/cluster" --groups 3 --nodes-per-group 1 --nosync --watch-pid $$); then
	for ((r = 1; r <= rounds; r++)); do echo "not ok $r - round $r: the cluster did not start"; done
	exit 1
fi
eval "$env_out"
rel_env
mkdir -p "$T/src"
for p in $(seq 0 7); do head -c $((p * 3001 + 5)) /dev/urandom >"$T/src/c$p"; done
t0=$(date +%s%N)
bad=0
for ((r = 1; r <= rounds; r++)); do
	if [ -n "${RACE_SECONDS:-}" ] && [ "$(ms_since "$t0")" -gt $((RACE_SECONDS * 1000)) ]; then
		echo "ok $r - round $r # SKIP time budget of ${RACE_SECONDS} s spent"
		continue
	fi
	# New hosts and a new tree: a$r and b$r, file system id race-$r.
	export POHMELFS_FSID=race-$r
	d=$T/r$r
	mkdir -p "$d"
	if [ -n "${RACE_LOG_LEVEL:-}" ]; then
		export POHMELFS_LOG_LEVEL=$RACE_LOG_LEVEL POHMELFS_LOG=$d/shim.log
	fi
	t1=$(date +%s%N)
	why=
	if ! shim "a$r" mkdir -p "$T/a$r/w"; then
		why="mkdir of w failed"
	else
		rel_race "a$r" "$T/a$r/w" "$T/src" "$d/log" 8 5
		ms=$(ms_since "$t1")
		unset POHMELFS_LOG_LEVEL POHMELFS_LOG
		if [ -n "$(cat "$d"/log.err.*)" ]; then
			why="a worker failed: $(cat "$d"/log.err.* | head -3 | tr '\n' ' ')"
		else
			rel_expected "$d"/log.? >"$d/expected"
			rel_listing "b$r" "$T/b$r/w" >"$d/seen"
			diff "$d/expected" "$d/seen" >"$d/diff" || why="host b$r lists otherwise: $(grep '^[<>]' "$d/diff" | head -4 | tr '\n' ' ')"
		fi
	fi
	unset POHMELFS_LOG_LEVEL POHMELFS_LOG
	if [ -n "$why" ]; then
		bad=$((bad + 1))
		kept="$kept $r"
		echo "not ok $r - round $r: $why"
		rel_race_evidence "a$r" "b$r" w 2>&1 | tee "$d/evidence"
	else
		echo "ok $r - round $r: 8 workers × 5 rounds in ${ms} ms, $(wc -l <"$d/seen") names"
		rm -rf "$d"
	fi
	rel_stop_daemons
done
echo "# $rounds rounds in $(ms_since "$t0") ms: $((rounds - bad)) passed"
[ $bad -eq 0 ]
