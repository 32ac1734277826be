#!/usr/bin/env bash
# (Not named bench_*: tests/bench/run runs every bench_*.sh without arguments.)
# ab_passthrough.sh LIB_A LIB_B — bench_passthrough.sh's rows for two
# builds of the library side by side in one run: the same file, prefix and
# helpers; each round runs the program without the shim, with A and with B
# in a rotating order, so load drift hits all three alike.  Prints, per
# row, the median ratio (with / without) of A and of B over RUNS rounds,
# and for /bin/true the median extra CPU time per start; with valgrind, the
# exact user-space instructions per round first.
#
# Environment: B (build dir with tests/helpers, default build), RUNS
# (default 21), ROUNDS (calls per run, default 200000), STARTS (default 400).
set -u
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 LIB_A LIB_B" >&2; exit 2; }
libA=$(realpath "$1") libB=$(realpath "$2")
B=${B:-build}
case $B in /*) BIN=$B ;; *) BIN=$PWD/$B ;; esac
ops=$BIN/tests/helpers/bench_ops spawner=$BIN/tests/helpers/spawn_loop
RUNS=${RUNS:-21} ROUNDS=${ROUNDS:-200000} STARTS=${STARTS:-400}
[ -x "$ops" ] && [ -x "$spawner" ] || { echo "build the helpers first (make B=$B)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Private copies: a relink of either library during the run would make some
# runs go without the shim (ld.so only warns).
mkdir "$tmp/liba" "$tmp/libb"
cp "$libA" "$tmp/liba/libpohmelfs.so" && cp "$libB" "$tmp/libb/libpohmelfs.so" || exit 1
libA=$tmp/liba/libpohmelfs.so libB=$tmp/libb/libpohmelfs.so
for l in "$libA" "$libB"; do
	out=$(LD_PRELOAD=$l /bin/true 2>&1)
	[ -z "$out" ] || { echo "$l: $out" >&2; exit 1; }
done
echo data >"$tmp/file"
mkdir -p "$tmp/away"
export POHMELFS_PREFIX=$tmp/away/prefix

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# best KIND: A and B from the best (lowest) run of each side, the least
# disturbed by other load: "A x, B y" as ratios or extra ms.
best() {
	local n a b
	n=$(sort -g "$tmp/n" | head -1); a=$(sort -g "$tmp/a" | head -1); b=$(sort -g "$tmp/b" | head -1)
	if [ "$1" = ratio ]; then
		awk -v n="$n" -v a="$a" -v b="$b" 'BEGIN {printf "A %.4f, B %.4f", a / n, b / n}'
	else
		awk -v n="$n" -v a="$a" -v b="$b" 'BEGIN {printf "A %.3f, B %.3f", (a - n) / 1e6, (b - n) / 1e6}'
	fi
}

# one WHO CMD...: CMD's output without the shim (WHO=n) or with lib A / B;
# the spawner itself runs without it and passes it to what it starts.
one() {
	local who=$1 lib
	shift
	case $who in
	n) "$@"; return ;;
	a) lib=$libA ;;
	b) lib=$libB ;;
	esac
	if [ "$1" = "$spawner" ]; then
		"$1" -e LD_PRELOAD="$lib" "${@:2}"
	else
		LD_PRELOAD=$lib "$@"
	fi
}

# rows NAME KIND CMD...: KIND ratio (with/without) or diff (ms per start)
rows() {
	local name=$1 kind=$2 i who
	shift 2
	: >"$tmp/n"; : >"$tmp/a"; : >"$tmp/b"; : >"$tmp/ra"; : >"$tmp/rb"
	for ((i = 0; i < RUNS; i++)); do
		case $((i % 3)) in
		0) order="n a b" ;; 1) order="a b n" ;; *) order="b n a" ;;
		esac
		for who in $order; do one "$who" "$@" >"$tmp/$who.1"; done
		read -r vn <"$tmp/n.1"; read -r va <"$tmp/a.1"; read -r vb <"$tmp/b.1"
		echo "$vn" >>"$tmp/n"; echo "$va" >>"$tmp/a"; echo "$vb" >>"$tmp/b"
		if [ "$kind" = ratio ]; then
			awk -v a="$va" -v n="$vn" 'BEGIN {printf "%.4f\n", a / n}' >>"$tmp/ra"
			awk -v b="$vb" -v n="$vn" 'BEGIN {printf "%.4f\n", b / n}' >>"$tmp/rb"
		else
			awk -v a="$va" -v n="$vn" 'BEGIN {printf "%.3f\n", (a - n) / 1e6}' >>"$tmp/ra"
			awk -v b="$vb" -v n="$vn" 'BEGIN {printf "%.3f\n", (b - n) / 1e6}' >>"$tmp/rb"
		fi
	done
	printf '%-40s | A %-8s | B %-8s | median of %d; without %s, A %s, B %s; best: %s\n' "$name" \
		"$(median <"$tmp/ra")" "$(median <"$tmp/rb")" "$RUNS" "$(median <"$tmp/n")" \
		"$(median <"$tmp/a")" "$(median <"$tmp/b")" "$(best "$kind")"
}

# instr [LIB] [rel]: user-space instructions per round of bench_ops (exact,
# callgrind; two lengths, so start-up and exit cancel out).
instr() {
	local lib=$1 mode=${2:-} n
	for n in 2000 4000; do
		env ${lib:+LD_PRELOAD=$lib} valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$ops" "$tmp/file" "$n" $mode 2>&1 >/dev/null | awk '/Collected/ {print $NF}'
	done | { read -r a; read -r b; echo $(((b - a) / 2000)); }
}
if command -v valgrind >/dev/null; then
	for mode in "" rel; do
		printf '%-40s | A %-8s | B %-8s | without %s (callgrind, user space)\n' \
			"instructions per round${mode:+, relative}" "$(instr "$libA" $mode)" \
			"$(instr "$libB" $mode)" "$(instr "" $mode)"
	done
fi

rows "open+fstat+stat+close, absolute (ratio)" ratio "$ops" "$tmp/file" "$ROUNDS"
rows "open+fstat+stat+close, relative (ratio)" ratio "$ops" "$tmp/file" "$ROUNDS" rel
rows "/bin/true start-up (+ms CPU per start)" diff "$spawner" "$STARTS" /bin/true
