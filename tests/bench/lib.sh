# tests/bench/lib.sh — what the bench_*.sh scripts share: a work directory
# and a local cluster that are removed on exit, the shim's environment,
# timing, interleaved repetitions, medians and the row format.
#
#   . "$(dirname "$0")/lib.sh"
#   bench_init NAME            work dir $W, trap; BENCH_QUICK → $QUICK=1
#   bench_cluster [opts]       a local cluster (loopback), stopped by the trap
#   shim HOST CMD...           CMD under LD_PRELOAD as host HOST (prefix $W/HOST)
#   shim_sync HOST             `pohmelfs sync` of HOST's cache (the final push)
#   secs CMD...                run CMD (output to the log), print its wall seconds
#   interleave REPS FN...      REPS rounds; each FN runs once a round, the
#                              order rotating; FN prints one number, kept in $W/m.FN
#   median_of FILE             the median of the numbers in FILE
#   ratio_median A B           median over rounds of (line of m.A) / (line of m.B)
#   small_tar TAR FILES        an archive of FILES small files (the profiles' input)
#   row NAME RATIO DETAIL      one table row "NAME | RATIO | DETAIL"
#   fail MESSAGE               a row saying FAILED, then exit 1
#   fail_with FILE MESSAGE     the same after a command whose stderr went to
#                              FILE: FILE goes to the log, its last line and
#                              the exit status into the row
#
# Rows go to stdout; everything else (commands' output, progress) goes to
# stderr, which tests/bench/run keeps in its log.

set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=${B:-build}
case $B in /*) BIN=$B ;; *) BIN=$PWD/$B ;; esac
LIB=$BIN/libpohmelfs.so
QUICK=0
# The interpreter itself (python3 may be a wrapper script, e.g. pyenv's).
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
[ "${BENCH_QUICK:-}" = 1 ] && QUICK=1
W=
BENCH_NAME=
CLUSTER=

bench_cleanup() {
	local f
	# pohmelfsd of any host's cache (sync_on_close normally starts none).
	for f in "$W"/*-state/pohmelfsd.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	[ -n "$CLUSTER" ] && "$BIN/pohmelfs-cluster" stop "$CLUSTER" >/dev/null 2>&1
	# Plain rm (no shim here): the prefixes are ordinary local directories.
	[ -n "$W" ] && rm -rf "$W"
	return 0
}

# bench_init NAME: checks the build, makes $W (under BENCH_TMP, default
# /tmp), installs the cleanup trap.
bench_init() {
	BENCH_NAME=$1
	local f
	for f in libpohmelfs.so pohmelfs pohmelfs-cluster pohmelfs-node; do
		[ -e "$BIN/$f" ] || { row "$BENCH_NAME" SKIP "build first (make): $BIN/$f is missing"; exit 0; }
	done
	W=$(mktemp -d "${BENCH_TMP:-/tmp}/pohmelfs-bench-$BENCH_NAME.XXXXXX") || exit 1
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

# bench_cluster [pohmelfs-cluster start options]: 1 group by default
# (BENCH_GROUPS), --nosync: the nodes write to the page cache, like the
# local-disk side they are compared with.  BENCH_NODE_SYNC=default starts
# the nodes with their default durability instead (real Elliptics's: the
# page cache, a sync every few seconds; issue 23's setting).
bench_cluster() {
	local out sync=--nosync
	[ "${BENCH_NODE_SYNC:-nosync}" = default ] && sync=
	CLUSTER=$W/cluster
	out=$("$BIN/pohmelfs-cluster" start "$CLUSTER" --groups "${BENCH_GROUPS:-1}" $sync \
		--watch-pid $$ "$@") || fail "cluster start"
	eval "$out"
	export POHMELFS_FSID=bench-$BENCH_NAME-$$ POHMELFS_SYNC_ON_CLOSE=1
	echo "cluster: $POHMELFS_SERVERS groups $POHMELFS_GROUPS" >&2
}

# shim HOST CMD...: CMD under the shim, prefix $W/HOST, cache $W/HOST-state.
shim() {
	local h=$1
	shift
	LD_PRELOAD=$LIB POHMELFS_PREFIX=$W/$h POHMELFS_CACHE_DIR=$W/$h-state POHMELFS_HOST_ID=$h "$@"
}

# shim_sync HOST: push whatever HOST's cache still holds dirty (normally
# nothing: sync_on_close pushed at close); part of a timed shim run.
shim_sync() {
	POHMELFS_PREFIX=$W/$1 POHMELFS_CACHE_DIR=$W/$1-state "$BIN/pohmelfs" sync >&2
}

now_ns() { date +%s%N; }

# secs CMD...: the wall seconds CMD took; its output goes to stderr; a
# failing CMD fails the benchmark.
secs() {
	local t0 t1
	t0=$(now_ns)
	"$@" >&2 || fail "command failed: $*"
	t1=$(now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f\n", (b - a) / 1e9}'
}

# interleave REPS FN...: REPS rounds; round r runs the FNs starting with
# number r mod count, so each one goes first, second, ... equally often and
# drift of the machine's load hits all alike.  FN is called with the round
# number and prints one number, appended to $W/m.FN.
interleave() {
	local reps=$1 r i k n v
	shift
	n=$#
	local fns=("$@")
	for f in "${fns[@]}"; do : >"$W/m.$f"; done
	for ((r = 0; r < reps; r++)); do
		for ((k = 0; k < n; k++)); do
			i=$(((r + k) % n))
			v=$("${fns[$i]}" "$r") || fail "${fns[$i]} round $r"
			[ -n "$v" ] || fail "${fns[$i]} round $r printed nothing"
			echo "$v" >>"$W/m.${fns[$i]}"
			echo "  $BENCH_NAME round $r ${fns[$i]}: $v (load $(cut -d" " -f1 /proc/loadavg))" >&2
		done
	done
}

median_of() {
	sort -g "$1" | awk '{a[NR] = $1} END {if (NR == 0) exit 1; print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# ratio_median A B: median of the per-round ratios m.A / m.B.
ratio_median() {
	paste "$W/m.$1" "$W/m.$2" | awk '$2 > 0 {printf "%.6f\n", $1 / $2}' >"$W/r.$1.$2"
	median_of "$W/r.$1.$2" | awk '{printf "%.3f", $1}'
}

row() { printf '%-44s | %-10s | %s\n' "$1" "$2" "$3"; }

fail() {
	echo "$BENCH_NAME: FAILED: $*" >&2
	row "$BENCH_NAME" FAILED "$*"
	exit 1
}

# fail_with FILE MESSAGE: right after `CMD 2>FILE || fail_with FILE MESSAGE`:
# FILE is in $W, which the exit removes, so what CMD said goes to the log
# and its last error line (a Python traceback's exception, a shim warning) and
# CMD's exit status into the FAILED row: a failure explains itself.
fail_with() {
	local rc=$? last
	echo "$BENCH_NAME: stderr of the failed command ($1):" >&2
	cat "$1" >&2 2>/dev/null
	# The last error line (a stats=1 table may follow it), else the last line.
	last=$(grep -E 'Error|error|rror:|failed|warn' "$1" 2>/dev/null | tail -n 1)
	[ -n "$last" ] || last=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1)
	last=$(tr '|' '/' <<<"$last" | cut -c1-200)
	fail "$2 (exit status $rc${last:+: $last})"
}

# small_tar TAR FILES: TAR, an archive of FILES files of 0-8 KiB (random
# bytes, the same every run) in 10 directories, the input of the small-file
# profiles' `tar -x`; fails the bench if making it does.
small_tar() {
	local d
	d=$(mktemp -d "$W/tree.XXXXXX") || fail "mktemp"
	"$PY" - "$d" "$2" <<'PY' || fail "making the tar input"
import os, random, sys
src, files = sys.argv[1], int(sys.argv[2])
rnd = random.Random(23)
for i in range(files):
    d = "%s/d%02d" % (src, i % 10)
    os.makedirs(d, exist_ok=True)
    with open("%s/f%05d.txt" % (d, i), "wb") as f:
        f.write(rnd.randbytes(rnd.randrange(0, 8192)))
PY
	tar -C "$d" -cf "$1" . || fail "tar -c"
	rm -rf "$d"
}

# git_repo DIR FILES: a new git repository in DIR of FILES files and 10
# commits (the first adds every file, commit c then changes the files i with
# i % 10 == c % 10), the input of the workloads' `git clone`; fails the bench
# if git does.
git_repo() {
	(
		mkdir -p "$1" && cd "$1" && git init -q && for c in $(seq 10); do
			for i in $(seq "$2"); do
				[ $((i % 10)) -eq $((c % 10)) ] || [ "$c" -eq 1 ] || continue
				echo "file $i commit $c $RANDOM" >"f$i.txt"
			done
			git add . && git -c user.email=b@b -c user.name=b commit -qm "commit $c" || exit 1
		done
	) >&2 || fail "making the git repository"
}

# fmt EXPR: awk arithmetic, printed as an integer from 100 up, else with 3
# significant digits.
fmt() { awk "BEGIN {x = $1; if (x >= 100 || x <= -100) printf \"%.0f\", x; else printf \"%.3g\", x}"; }

# bench_out FILE: where a script leaves data for the plot (BENCH_OUT, set by run).
bench_out() {
	[ -n "${BENCH_OUT:-}" ] || { echo /dev/null; return; }
	mkdir -p "$BENCH_OUT" && echo "$BENCH_OUT/$1"
}
