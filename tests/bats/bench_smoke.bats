#!/usr/bin/env bats
# bench_smoke.bats — `make bench` must not rot: one BENCH_QUICK=1 run of
# tests/bench/run (every bench_*.sh at smoke sizes, each with its own
# loopback cluster) prints a table with rows from every script and no
# FAILED row.  About a minute; bounded at 8 (2.5 min seen at load 12).

setup() {
	load lib/common
	[ -z "${SAN:-}" ] || skip "the benchmarks measure the plain build"
	preload_ok || skip "the library cannot be preloaded here"
}

@test "BENCH_QUICK=1 tests/bench/run: a row from every benchmark, none FAILED" {
	out=$BATS_TEST_TMPDIR/bench
	b=$B
	case $b in "$TOP"/*) b=${b#"$TOP"/} ;; esac	# the scripts take B relative to the tree
	t0=$(date +%s)
	run timeout -k 10 480 env -u ONLY BENCH_QUICK=1 BENCH_OUT="$out" BENCH_TMP="$BATS_TEST_TMPDIR" B="$b" \
		"$TOP/tests/bench/run"
	echo "$output"
	echo "took $(($(date +%s) - t0)) s"
	# A failed script's log goes with the test's directory: its end here,
	# so a failure in CI explains itself (bench_push.sh's mix once failed
	# at load 19 and said nothing more than "FAILED").
	for s in $(awk -F'\t' 'NR > 1 && $4 == "FAILED" { print $6 }' "$out/results.tsv" 2>/dev/null | sort -u); do
		echo "--- the end of $s's log:"
		tail -n 60 "$out/logs/$s.log"
	done
	[ "$status" -eq 0 ]
	! grep -q 'FAILED' <<<"$output" || false
	[[ $output =~ bench:\ ([0-9]+)\ rows ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	# Every script contributed rows (results.tsv's last column names it).
	for s in "$TOP"/tests/bench/bench_*.sh; do
		name=$(basename "$s" .sh)
		n=$(awk -F'\t' -v s="$name" 'NR > 1 && $6 == s' "$out/results.tsv" | wc -l)
		[ "$n" -gt 0 ] || { echo "no rows from $name"; false; }
	done
	# The rows are "name | ratio | target | verdict | detail" with a number
	# (or SKIP) as the ratio.
	bad=$(awk -F'\t' 'NR > 1 && $2 !~ /^[-+]?[0-9.]+$/ && $2 != "SKIP"' "$out/results.tsv")
	[ -z "$bad" ] || { echo "rows without a ratio: $bad"; false; }
}
