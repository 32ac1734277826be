#!/usr/bin/env bash
# bench_passthrough.sh — what the shim costs a program outside the prefix
# (issue 8: <= 2 % on open/stat/close, goal 1 %; <= 0.5 ms on /bin/true,
# DESIGN.md §5: light init <= 0.3 ms).
#
# Rows "name | value | detail": for the calls, value = with shim / without,
# the median of RUNS interleaved pairs (the order alternates within pairs,
# so drift hits both sides alike); for the start-up of /bin/true, the
# median extra CPU milliseconds per start (issue 8: <= 0.5).  Times are CPU
# times (user + system) of the measured process, so other load on the
# machine counts less.  POHMELFS_PREFIX points at a directory the benchmark
# never touches, a sibling of the file's ($tmp/away/prefix against
# $tmp/file: a long common start), so every call is classified and passed
# on.  With valgrind installed, two more rows give the exact user-space
# instructions per round (callgrind), which do not move with the load.
#
# Environment: B (build dir), RUNS (pairs, default 15), ROUNDS (calls per
# run), BENCH_QUICK=1 (a short smoke run).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
case $B in /*) BIN=$B ;; *) BIN=$PWD/$B ;; esac
lib=$BIN/libpohmelfs.so
ops=$BIN/tests/helpers/bench_ops
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

# The same calls measured inside one process (helpers/bench_inproc):
# alternating blocks through libc's own functions and through the global
# scope (the shim's wrappers), so the machine's drift hits both sides of
# every pair alike.  The control row runs without the shim (both sides are
# libc): its distance from 1 is the method's own error.  "far": a prefix
# whose first component differs from the file's (the common case); the
# other rows use the sibling prefix above (a long common start).
inproc=$BIN/tests/helpers/bench_inproc
IPAIRS=${IPAIRS:-2001}
[ "${BENCH_QUICK:-}" = 1 ] && IPAIRS=101
inrow() {
	local name=$1 r
	shift
	r=$("$@") || { printf '%-44s | %-10s | %s\n' "$name" FAIL "bench_inproc failed"; return; }
	set -- $r
	printf '%-44s | %-10s | %s\n' "$name" "$1" \
		"median of $IPAIRS in-process block pairs, 95 % CI [$2, $3]; $4 ns/round libc, $5 shim"
}
if [ -x "$inproc" ]; then
	inrow "in-process control, no shim (abs)" "$inproc" "$tmp/file" "$IPAIRS"
	inrow "in-process passthrough (abs, far prefix)" env LD_PRELOAD="$lib" \
		POHMELFS_PREFIX=/nonexistent-pohm-bench/prefix "$inproc" "$tmp/file" "$IPAIRS"
	inrow "in-process passthrough (abs, sibling prefix)" env LD_PRELOAD="$lib" "$inproc" "$tmp/file" "$IPAIRS"
	inrow "in-process passthrough (rel, sibling prefix)" env LD_PRELOAD="$lib" "$inproc" "$tmp/file" "$IPAIRS" 400 rel
fi

# Start-up: STARTS executions of /bin/true by posix_spawn (helpers/spawn_loop),
# CPU ns per start; the spawning process runs without the shim on both sides.
spawner=$BIN/tests/helpers/spawn_loop
: >"$tmp/d"; : >"$tmp/sa"; : >"$tmp/sb"
for ((i = 0; i < RUNS; i++)); do
	if ((i % 2)); then
		b=$("$spawner" -e LD_PRELOAD="$lib" "$STARTS" /bin/true)
		a=$("$spawner" "$STARTS" /bin/true)
	else
		a=$("$spawner" "$STARTS" /bin/true)
		b=$("$spawner" -e LD_PRELOAD="$lib" "$STARTS" /bin/true)
	fi
	echo "$a" >>"$tmp/sa"; echo "$b" >>"$tmp/sb"; echo $((b - a)) >>"$tmp/d"
done
sa=$(median <"$tmp/sa"); sb=$(median <"$tmp/sb"); d=$(median <"$tmp/d")
printf '%-44s | %-10s | %s\n' "start-up /bin/true, passthrough (shim-none ms)" \
	"$(awk -v d="$d" 'BEGIN {printf "%+.3f", d / 1e6}')" \
	"ms CPU per start; ratio $(awk -v a="$sa" -v b="$sb" 'BEGIN {printf "%.4f", b / a}'); median of $RUNS x $STARTS, $sa ns without"

# instr [LIB] MODE: user-space instructions per round of bench_ops, with LIB
# preloaded (or without the shim), from two callgrind runs of different
# lengths so that start-up and exit cancel out.
instr() {
	local lib=$1 mode=$2 n
	for n in 2000 4000; do
		env ${lib:+LD_PRELOAD=$lib} valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$ops" "$tmp/file" "$n" $mode 2>&1 >/dev/null | awk '/Collected/ {print $NF}'
	done | { read -r a; read -r b; echo $(((b - a) / 2000)); }
}
if command -v valgrind >/dev/null; then
	for mode in abs rel; do
		m=$mode; [ "$m" = abs ] && m=
		n=$(instr "" "$m"); w=$(instr "$lib" "$m")
		printf '%-44s | %-10s | %s\n' "instructions per open+fstat+stat+close ($mode)" \
			"$(awk -v a="$n" -v b="$w" 'BEGIN {printf "%.2f", b / a}')" \
			"user space only (callgrind): $w with the shim, $n without; the kernel's share is not counted"
	done
fi
