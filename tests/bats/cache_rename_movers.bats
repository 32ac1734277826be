#!/usr/bin/env bats
# cache_rename_movers.bats — decision 0073 under contention (the review of
# s18-mv4): a rename across directories answers at its commit and sends
# its finish without a wait.  Movers on two hosts renaming in and out of
# the same directories at once refuse each other's finishes (the source's
# bucket changed under them): a refused finish is redone, a third fresh
# cache sees every acknowledged rename, and the emptied directories are
# removed at once, without a listing first.  And a slow replica does not
# make the call after a rename wait for the CAS ack window.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts movers-$RANDOM
	PY=$(command -v python3) || skip "python3 is not installed"
	unset POHMELFS_STATS
}

teardown() {
	stop_daemons
	cluster_stop
}

# movers HOST FROM TO PREFIX N: rename FROM/PREFIXi to TO/PREFIXi for i < N
# under the shim as HOST, in the background (pid appended to MPIDS); each
# acknowledged rename printed to $T/HOST-PREFIX.ok.
MPIDS=()
movers() {
	shim_bg "$1" "$PY" -c "
import os, sys
with open('$T/$1-$4.ok', 'w') as ok:
    for i in range($5):
        os.rename('$T/$1/$2/$4%d' % i, '$T/$1/$3/$4%d' % i)
        ok.write('$4%d\n' % i)
        ok.flush()"
	MPIDS+=("$SHIM_BG_PID")
}

# make_files HOST DIR PREFIX N: N small files DIR/PREFIXi under the shim as HOST.
make_files() {
	shim "$1" "$PY" -c "
for i in range($4):
    with open('$T/$1/$2/$3%d' % i, 'w') as f: f.write('$3%d' % i)"
}

wait_movers() {
	local p rc=0
	for p in "${MPIDS[@]}"; do
		wait "$p" || rc=1
	done
	MPIDS=()
	return $rc
}

@test "two hosts move files in and out of the same directories at once: a fresh cache sees every rename, the emptied directories go" {
	local n=20 want f
	shim a mkdir "$T/a/d1" "$T/a/d2" "$T/a/d3"
	make_files a d1 p "$n"
	make_files a d1 q "$n"
	shim b ls "$T/b/d1" "$T/b/d2" >/dev/null
	make_files b d2 r "$n"
	make_files b d2 s "$n"
	shim a ls "$T/a/d1" "$T/a/d2" >/dev/null
	# Crossing: d1 → d2 on a, d2 → d1 on b, two movers each.
	movers a d1 d2 p "$n"
	movers a d1 d2 q "$n"
	movers b d2 d1 r "$n"
	movers b d2 d1 s "$n"
	wait_movers
	for f in a-p a-q b-r b-s; do
		[ "$(wc -l <"$T/$f.ok")" -eq "$n" ]
	done
	want=$( (for i in $(seq 0 $((n - 1))); do echo r$i; echo s$i; done) | sort)
	run shim c ls "$T/c/d1"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ] || { echo "d1: $output"; false; }
	want=$( (for i in $(seq 0 $((n - 1))); do echo p$i; echo q$i; done) | sort)
	run shim c ls "$T/c/d2"
	[ "$output" = "$want" ] || { echo "d2: $output"; false; }
	# Out of both into d3, four movers on two hosts at once; then a
	# fresh process of a fourth cache that never listed d1 or d2 removes
	# them (a source whose finish was refused or untold is resolved).
	movers a d2 d3 p "$n"
	movers a d2 d3 q "$n"
	movers b d1 d3 r "$n"
	movers b d1 d3 s "$n"
	wait_movers
	mkdir "$T/e"
	run shim e rmdir "$T/e/d1" "$T/e/d2"
	echo "$output"
	[ "$status" -eq 0 ]
	run shim e ls "$T/e"
	[ "$output" = d3 ]
	[ "$(shim c ls "$T/c/d3" | wc -l)" -eq $((4 * n)) ]
	[ "$(shim c cat "$T/c/d3/q7")" = q7 ]
	[ "$(shim c cat "$T/c/d3/s13")" = s13 ]
	[ "$(shim c stat -c %h "$T/c/d3/r3")" -eq 1 ]
	run shim a ls "$T/a"
	[ "$output" = d3 ]
}

@test "one slow replica: the call after a rename across does not wait for the ack window" {
	local ms fd
	shim a mkdir "$T/a/d" "$T/a/e"
	make_files a d f 5
	shim a touch "$T/a/e/keep"
	fd=$(cluster_dir 3-1)
	# Once connected, group 3's replies come 1.5 s late (its fault file,
	# read by the node at most 1 ms after it changes): a quorum (groups 1
	# and 2) is in at once.  Before the settle used the quorum's grace,
	# each finish's settle at the next call waited for group 3 (1.5 s a
	# rename: 6 s or more for these five); the synchronous writes never
	# did (their grace: as long as the quorum took, 20 ms at least).
	ms=$(shim a "$PY" -c "
import os, time
os.stat('$T/a/d/f0'); os.stat('$T/a/e/keep')
open('$fd/faults.tmp', 'w').write('delay 1500\n')
os.rename('$fd/faults.tmp', '$fd/faults')
time.sleep(0.05)
t0 = time.monotonic()
for i in range(5):
    os.rename('$T/a/d/f%d' % i, '$T/a/e/g%d' % i)
print(int((time.monotonic() - t0) * 1000))")
	echo "# 5 renames with a slow replica: $ms ms" >&3
	cluster_clear_faults
	[ "$ms" -lt 4000 ]
	run shim c ls "$T/c/d" "$T/c/e"
	[ "$output" = "$(printf '%s\n' "$T/c/d:" '' "$T/c/e:" g0 g1 g2 g3 g4 keep)" ]
}
