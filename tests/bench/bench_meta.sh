#!/usr/bin/env bash
# bench_meta.sh — metadata in one directory as it grows (issue 11: create
# scaling 100k÷1k ≤ 1.3).
#
# For each size N (SIZES, default 1000 10000 100000; BENCH_QUICK: 100 500)
# one python3 process, in a new directory, creates N empty files (open
# O_CREAT + close), stats each, runs `ls -l` of the directory and unlinks
# them all, timing each phase (wall: under the shim these wait for the
# storage).  Rounds alternate the shim (host a) and the local disk; REPS_N
# rounds per size (default 5 / 3 / 1: the 100 000 point takes minutes
# under the shim).  Rows: each phase shim ÷ disk (time) per size, `ls -l`
# at the largest size, and the scaling of the shim's per-operation time
# from the smallest to the largest size.
. "$(dirname "$0")/lib.sh"
bench_init meta
SIZES=${SIZES:-1000 10000 100000}
[ "$QUICK" = 1 ] && SIZES=${QUICK_SIZES:-100 500}
reps_for() {
	[ "$QUICK" = 1 ] && { echo 1; return; }
	if [ "$1" -le 1000 ]; then echo "${REPS_SMALL:-5}"
	elif [ "$1" -le 10000 ]; then echo "${REPS_MID:-3}"
	else echo "${REPS_LARGE:-1}"; fi
}
bench_cluster

cat >"$W/meta.py" <<'PY'
import os, subprocess, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.mkdir(d)
names = ["%s/f%07d" % (d, i) for i in range(n)]
t0 = time.perf_counter()
for p in names:
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
t1 = time.perf_counter()
for p in names:
    os.stat(p)
t2 = time.perf_counter()
ls = subprocess.run(["ls", "-l", d], stdout=subprocess.PIPE, check=True).stdout
t3 = time.perf_counter()
if ls.count(b"\n") != n + 1:
    sys.exit("ls -l listed %d lines, expected %d" % (ls.count(b"\n"), n + 1))
for p in names:
    os.unlink(p)
t4 = time.perf_counter()
if os.listdir(d):
    sys.exit("directory not empty after the unlinks")
os.rmdir(d)
print("%.6f %.6f %.6f %.6f" % (t1 - t0, t2 - t1, t3 - t2, t4 - t3))
PY
mkdir -p "$W/local"
shim a mkdir -p "$W/a/m" || fail "mkdir through the shim"

phases=(create stat ls unlink)
# col FN K: the K-th number (1-based) of each line of m.FN into m.FN.K.
col() { awk -v k="$2" '{print $k}' "$W/m.$1" >"$W/m.$1.$2"; }

out=$(bench_out meta_scaling.tsv)
first= last=
for n in $SIZES; do
	eval "disk_$n() { '$PY' '$W/meta.py' '$W/local/d$n.'\"\$1\" $n; }"
	eval "shim_$n() { shim a '$PY' '$W/meta.py' '$W/a/m/d$n.'\"\$1\" $n; }"
	reps=$(reps_for "$n")
	echo "meta: N=$n, $reps rounds" >&2
	interleave "$reps" "disk_$n" "shim_$n"
	for k in 1 2 3 4; do
		col "disk_$n" $k; col "shim_$n" $k
		ph=${phases[$((k - 1))]}
		ts=$(median_of "$W/m.shim_$n.$k"); td=$(median_of "$W/m.disk_$n.$k")
		eval "t_${ph}_$n=$ts"
		if [ "$ph" = ls ]; then
			continue
		fi
		row "$ph in a dir of $n (time shim/disk)" "$(ratio_median "shim_$n.$k" "disk_$n.$k")" \
			"$(fmt "$n / $ts")/s under the shim, $(fmt "$n / $td")/s on disk; median of $reps"
		printf '%s\t%s\t%s\t%s\n' "$n" "$ph" "$(fmt "$n / $ts")" "$(fmt "$n / $td")" >>"$out"
	done
	[ -z "$first" ] && first=$n
	last=$n
done
eval "tl=\$t_ls_$last"
row "ls -l of a dir of $last (time shim/disk)" "$(ratio_median "shim_$last.3" "disk_$last.3")" \
	"$(fmt "$tl") s under the shim, $(fmt "$(median_of "$W/m.disk_$last.3")") s on disk; median of $(reps_for "$last")"
for ph in create stat unlink; do
	eval "a=\$t_${ph}_$first b=\$t_${ph}_$last"
	row "$ph scaling $last/$first (per-op time, shim)" \
		"$(awk -v a="$a" -v b="$b" -v n1="$first" -v n2="$last" 'BEGIN {printf "%.3f", (b / n2) / (a / n1)}')" \
		"$(fmt "$a / $first * 1e6") us per op at $first, $(fmt "$b / $last * 1e6") us at $last"
done
