#!/usr/bin/env bats
# cache_negative_kept.bats — negative lookups across processes (issue 23,
# decision 0061): a name missing locally and missing from its directory's
# bucket as a process of this cache read or wrote it within attr_timeout
# (the copy kept in cache_dir/k/, decision 0048) is absent, with no wait
# and no connection; past attr_timeout the storage is asked again; a name
# another process of this host made is seen at once (its local file), one
# another host made once attr_timeout has passed.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	PY=$(command -v python3) || skip "python3 is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=negkept-$RANDOM POHMELFS_SYNC_ON_CLOSE=1
	export POHMELFS_ATTR_TIMEOUT=30
	unset POHMELFS_STATS
	mkdir -p "$T/a" "$T/b"
	# One process makes d, another a file in it: that one writes d's
	# bucket and keeps its copy at its exit (k/; not sh, whose _exit
	# writes nothing).
	shim a mkdir "$T/a/d"
	shim a "$PY" -c "open('$T/a/d/f', 'w').write('f\\n')"
}

teardown() {
	stop_daemons
	cluster_stop
}

# asked LOG NAME: how many times the process logging to LOG asked the
# storage about NAME (cache.c ensure_entry's debug line).
asked() {
	grep -c "/$2: asking the storage" "$1" || true
}

# node_connects FILE: connect(2) calls to a node of the cluster in strace
# output FILE (as cache_lazy.bats).
node_connects() {
	local p n=0
	for p in $(tr ',' '\n' <<<"$POHMELFS_SERVERS" | cut -d: -f2); do
		n=$((n + $(grep -c "connect(.*htons($p)" "$1" || true)))
	done
	echo "$n"
}

@test "a missing name in a directory another process read within attr_timeout: no wait, no connect; past it the storage is asked" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	w0=$(waits a)
	run env POHMELFS_LOG_LEVEL=debug POHMELFS_LOG="$T/within.log" \
		LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/a" POHMELFS_CACHE_DIR="$T/a-state" \
		POHMELFS_HOST_ID=a strace -f -qq -o "$T/within.trace" -e trace=connect \
		"$PY" -c "
import os
for i in range(5):
    assert not os.path.lexists('$T/a/d/missing%d' % i)
assert os.path.exists('$T/a/d/f')"
	[ "$status" -eq 0 ]
	w=$(($(waits a) - w0))
	echo "# within attr_timeout: $w waits, $(node_connects "$T/within.trace") connects," \
		"$(asked "$T/within.log" 'missing[0-9]') asked" >&3
	[ "$(asked "$T/within.log" 'missing[0-9]')" -eq 0 ]
	[ "$(node_connects "$T/within.trace")" -eq 0 ]
	[ "$w" -eq 0 ]

	# Past attr_timeout (1 s here) the copy is too old: the storage is
	# asked (d's revalidation brings d's bucket along, decision 0053, or
	# the name's own lookup).
	sleep 1.3
	w0=$(waits a)
	POHMELFS_ATTR_TIMEOUT=1 shim a "$PY" -c "import os; assert not os.path.lexists('$T/a/d/missing0')"
	w=$(($(waits a) - w0))
	echo "# past attr_timeout: $w waits" >&3
	[ "$w" -ge 1 ]
}

@test "a name another process of this host makes is seen at once, while the kept copy without it is young" {
	# A creator that stays alive: its bucket write is in its memory only
	# (k/ still holds the copy without the name) until it ends.
	shim_bg a "$PY" -c "
import os, time
open('$T/a/d/new', 'w').write('n\\n')
open('$T/made', 'w').close()
while not os.path.exists('$T/go'):
    time.sleep(0.01)" 2>"$T/bg.err"
	bg=$SHIM_BG_PID
	for _ in $(seq 500); do [ -e "$T/made" ] && break; sleep 0.02; done
	[ -e "$T/made" ]
	w0=$(waits a)
	shim a "$PY" -c "
import os
assert open('$T/a/d/new').read() == 'n\\n'
assert not os.path.lexists('$T/a/d/missing')"
	w=$(($(waits a) - w0))
	touch "$T/go"
	wait "$bg" || { cat "$T/bg.err" >&3; false; }
	echo "# new seen, missing answered with $w waits" >&3
	# The copy was in force (the miss cost nothing), and did not hide "new".
	[ "$w" -eq 0 ]
	[ "$(shim a cat "$T/a/d/new")" = n ]
}

@test "a name another host makes: absent from a copy read within attr_timeout, seen past it" {
	shim b sh -c "echo new >'$T/b/d/new'"
	# a's copy of d's bucket (from its create of f) lacks it: within
	# attr_timeout the name may stay unseen, as NFS's negative entries
	# (acdirmin); this copy is 30 s young, so it does.
	shim a "$PY" -c "import os; assert not os.path.lexists('$T/a/d/new')"
	sleep 1.3
	# Past attr_timeout (1 s): asked, and there.
	[ "$(POHMELFS_ATTR_TIMEOUT=1 shim a cat "$T/a/d/new")" = new ]
}
