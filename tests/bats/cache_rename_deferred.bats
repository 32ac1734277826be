#!/usr/bin/env bats
# cache_rename_deferred.bats — decision 0073: a file's rename across
# directories answers at its commit; its finish (the source's MOVE intent
# removed) leaves without a wait and its reply is read by the process's
# next storage call or at exit.  A process killed right after the rename
# returned never reads it; whatever became of the finish, a fresh process
# of the same cache and another host see exactly the new name.  Two hosts
# renaming one source: exactly one of them wins, one name remains.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	PY=$(command -v python3) || skip "python3 is not installed"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=mvdefer-$RANDOM
	export POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	unset POHMELFS_STATS
	mkdir -p "$T/a" "$T/b" "$T/c"
	shim a mkdir -p "$T/a/d" "$T/a/e"
	shim a "$PY" -c "
for n in ('x', 'y', 'z'):
    with open('$T/a/d/' + n, 'wb') as f: f.write(n.encode() * 100)
open('$T/a/e/keep', 'w').close()"
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "killed with SIGKILL right after a rename across returned: a fresh process and another host see only the new name" {
	local n
	for n in x y z; do
		run shim a "$PY" -c "
import os, signal
os.rename('$T/a/d/$n', '$T/a/e/$n')
os.kill(os.getpid(), signal.SIGKILL)"
		[ "$status" -eq 137 ]
	done
	run shim a ls "$T/a/d" "$T/a/e"
	echo "$output"
	[ "$output" = "$(printf '%s\n' "$T/a/d:" '' "$T/a/e:" keep x y z)" ]
	run shim b ls "$T/b/d" "$T/b/e"
	echo "$output"
	[ "$output" = "$(printf '%s\n' "$T/b/d:" '' "$T/b/e:" keep x y z)" ]
	[ "$(shim b cat "$T/b/e/y")" = yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy ]
	[ "$(shim b stat -c %h "$T/b/e/x")" -eq 1 ]
	# The moved names change as any (their first change settles the source).
	shim b rm "$T/b/e/x"
	shim b mv "$T/b/e/y" "$T/b/d/y2"
	run shim c ls "$T/c/d" "$T/c/e"
	echo "$output"
	[ "$output" = "$(printf '%s\n' "$T/c/d:" y2 '' "$T/c/e:" keep z)" ]
}

@test "two hosts rename one source across directories at once: one wins, one name remains" {
	local k out
	for k in 1 2 3 4 5; do
		shim a "$PY" -c "open('$T/a/d/s$k', 'w').write('s$k')"
		shim b ls "$T/b/d" >/dev/null
		shim_bg a "$PY" -c "
import os
try: os.rename('$T/a/d/s$k', '$T/a/e/ra$k')
except FileNotFoundError: pass"
		local pa=$SHIM_BG_PID
		shim b "$PY" -c "
import os
try: os.rename('$T/b/d/s$k', '$T/b/e/rb$k')
except FileNotFoundError: pass"
		wait "$pa"
		out=$(shim c ls "$T/c/d" "$T/c/e" | grep -c "^\(s\|ra\|rb\)$k\$")
		echo "round $k: $(shim c ls "$T/c/d" "$T/c/e" | tr '\n' ' ')"
		[ "$out" -eq 1 ]
		[ "$(shim c ls "$T/c/d" | grep -c "^s$k\$")" -eq 0 ]
	done
}

# The exit reads the finish's reply of every mount the process used, not
# only the current euid's: a process that renamed as root and then
# switched to another user exits without a call as that user (session 20;
# before, the root mount's finish went untold, its refusal never owed).
@test "a rename across, then seteuid to another user: the exit still reads the finish's reply" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (seteuid)"
	POHMELFS_LOG_LEVEL=debug POHMELFS_LOG=$T/su.log shim a "$PY" -c "
import os
os.rename('$T/a/d/x', '$T/a/e/x')
os.setegid(65534); os.seteuid(65534)"
	grep -q "deferred .*sent" "$T/su.log"
	run grep -c "deferred put told" "$T/su.log"
	echo "$output"
	[ "$output" -ge 1 ]
	run shim b ls "$T/b/d" "$T/b/e"
	[ "$output" = "$(printf '%s\n' "$T/b/d:" y z '' "$T/b/e:" keep x)" ]
}
