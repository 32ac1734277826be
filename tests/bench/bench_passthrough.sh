#!/usr/bin/env bash
# bench_passthrough.sh — what the shim costs a program outside the prefix
# (issue 8: <= 2 % on open/stat/close, goal 1 %; <= 0.5 ms on /bin/true,
# DESIGN.md §5: light init <= 0.3 ms).
#
# Rows "name | ratio | detail": ratio = with shim / without, the median of
# RUNS interleaved pairs (the order alternates within pairs, so drift and
# other load hit both sides alike).  POHMELFS_PREFIX points at a directory
# the benchmark never touches, so every call is classified and passed on.
#
# Environment: B (build dir), RUNS (pairs, default 15), ROUNDS (calls per
# run), BENCH_QUICK=1 (a short smoke run).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
lib=$PWD/$B/libpohmelfs.so
ops=$PWD/$B/tests/helpers/bench_ops
RUNS=${RUNS:-15}
ROUNDS=${ROUNDS:-200000}
STARTS=${STARTS:-400}
if [ "${BENCH_QUICK:-}" = 1 ]; then RUNS=3 ROUNDS=20000 STARTS=50; fi
[ -f "$lib" ] && [ -x "$ops" ] || { echo "bench_passthrough | SKIP | build first (make)"; exit 0; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo data >"$tmp/file"
mkdir -p "$tmp/away"
export POHMELFS_PREFIX=$tmp/away/prefix

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# pairs NAME CMD...: RUNS interleaved runs of CMD (which prints ns/op) without and with the shim.
pairs() {
	local name=$1 i a b
	shift
	: >"$tmp/ratios"; : >"$tmp/base"; : >"$tmp/shim"
	for ((i = 0; i < RUNS; i++)); do
		if ((i % 2)); then
			b=$(LD_PRELOAD=$lib "$@"); a=$("$@")
		else
			a=$("$@"); b=$(LD_PRELOAD=$lib "$@")
		fi
		echo "$a" >>"$tmp/base"; echo "$b" >>"$tmp/shim"
		awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f\n", b / a}' >>"$tmp/ratios"
	done
	printf '%-44s | %-10s | %s\n' "$name" "$(median <"$tmp/ratios")" \
		"median of $RUNS pairs; $(median <"$tmp/base") ns/round without, $(median <"$tmp/shim") with"
}

pairs "passthrough open+fstat+stat+close (abs)" "$ops" "$tmp/file" "$ROUNDS"
pairs "passthrough open+fstat+stat+close (rel)" "$ops" "$tmp/file" "$ROUNDS" rel

# Start-up: STARTS executions of /bin/true in a loop, per exec, in ns.
starts() {
	local t0 t1
	t0=$(date +%s%N)
	for ((j = 0; j < STARTS; j++)); do /bin/true; done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / STARTS))
}
: >"$tmp/d"; : >"$tmp/sa"; : >"$tmp/sb"
for ((i = 0; i < RUNS; i++)); do
	a=$(starts); b=$(LD_PRELOAD=$lib starts_env=1 bash -c "$(declare -f starts); STARTS=$STARTS; export LD_PRELOAD=$lib; starts")
	a2=$(bash -c "$(declare -f starts); STARTS=$STARTS; starts")
	echo "$a2" >>"$tmp/sa"; echo "$b" >>"$tmp/sb"
	echo $((b - a2)) >>"$tmp/d"
done
sa=$(median <"$tmp/sa"); sb=$(median <"$tmp/sb"); d=$(median <"$tmp/d")
printf '%-44s | %-10s | %s\n' "start-up of /bin/true" \
	"$(awk -v a="$sa" -v b="$sb" 'BEGIN {printf "%.4f", b / a}')" \
	"$(awk -v d="$d" 'BEGIN {printf "%+.3f ms per exec", d / 1e6}') (median of $RUNS x $STARTS; $sa ns without)"
