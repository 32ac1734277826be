#!/usr/bin/env bash
# profile_cpu.sh — the instructions a workload costs under the shim
# (issue 23; not a bench_*.sh, so `make bench` does not run it): callgrind
# of the program on a 2-group cluster with the nodes' default durability,
# sync_on_close=1, in a fresh fsid.
#
#   tests/bench/profile_cpu.sh tar [FILES]     tar -x of FILES (200) files of
#                                             0-8 KiB in 10 directories
#   tests/bench/profile_cpu.sh sqlite [ROWS]   sqlite3 inserting ROWS (100 000)
#                                             rows, 1000 a transaction
#
# Prints each profiled process's total; the callgrind files stay in
# PROFILE_OUT (default tests/tmp/profile-cpu; read them with
# callgrind_annotate).  LIB=/path/libpohmelfs.so profiles another build's
# library (a base to compare with).  Instruction counts, not times: they
# hold on a shared machine.  (rep stosb counts once per byte in callgrind.)
# tar takes ~15 s, sqlite ~5 min.
WHAT=${1:-tar}
N=${2:-}
OTHER_LIB=${LIB:-}
. "$(dirname "$0")/lib.sh"
bench_init cpu
[ -n "$OTHER_LIB" ] && LIB=$OTHER_LIB
OUT=${PROFILE_OUT:-$PWD/tests/tmp/profile-cpu}
mkdir -p "$OUT" "$W/src" "$W/a"
rm -f "$OUT"/cg.*
command -v valgrind >/dev/null || fail "valgrind is not installed"
BENCH_GROUPS=2 BENCH_NODE_SYNC=default bench_cluster
case $WHAT in
tar)
	small_tar "$W/src/in" "${N:-200}"
	CMD=(tar -xf "$W/src/in") IN=/dev/null ;;
sqlite)
	"$PY" - "$W/src" "${N:-100000}" <<'PY' || fail "making the inputs"
import sys
src, rows = sys.argv[1], int(sys.argv[2])
with open(src + "/in", "w") as f:
    f.write("create table t(id integer primary key, name text, value real);\n")
    for t in range(0, rows, 1000):
        f.write("begin;\n")
        for i in range(t, min(t + 1000, rows)):
            f.write("insert into t(name, value) values('row %d', %d.5);\n" % (i, i))
        f.write("commit;\n")
PY
	CMD=(sqlite3 db) IN=$W/src/in ;;
*) fail "usage: $0 tar|sqlite [N]" ;;
esac
shim a mkdir -p "$W/a/x" || fail "mkdir"
cd "$W/a/x" || fail "cd"
shim a valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$OUT/cg.%p" \
	"${CMD[@]}" <"$IN" 2>"$OUT/valgrind.log" || fail "$WHAT under callgrind"
for f in "$OUT"/cg.*; do
	printf '%s %s: %s instructions\n' "${f##*/}" "$(sed -n 's/^cmd: *//p' "$f" | cut -d' ' -f1)" \
		"$(sed -n 's/^summary: //p' "$f")"
done
