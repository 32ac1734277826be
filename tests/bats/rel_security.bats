#!/usr/bin/env bats
# rel_security.bats — path tricks through the shim (.., symlinks out of the
# prefix, /proc/self/fd/N/.., a directory swapped for a symlink while the
# shim fetches into it) never make it push a file from outside the prefix
# or write into one; cache_dir and its journal are 0700 whatever the umask;
# a program with the wrong auth_cookie gets an error and stores nothing.
#
# The oracle for "pushed": a marker string written only outside the prefix
# must not appear in any node's data directory (a positive control shows
# that a marker written inside the prefix does).  raw_roundtrip.bats and
# node_faults.bats test the cookie at the raw client and the node; here it is
# a program under the shim.

setup() {
	load lib/common
	load lib/cluster
	load ../long/rel_lib
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	T=$BATS_TEST_TMPDIR
	rel_env
	mkdir -p "$T/outside"
	echo "OUTSIDE-SECRET-$$" >"$T/outside/secret"
}

teardown() {
	rel_stop_daemons
	cluster_stop
}

# stored STRING: true if any node of the cluster stores STRING (its blobs
# and staged records; not its log).
stored() {
	local n
	for n in $("$CLUSTER_BIN" nodes "$CLUSTER_DIR"); do
		grep -rqa --exclude=node.log -- "$1" "$(cluster_dir "$n")" && return 0
	done
	return 1
}

# outside_state: a listing with checksums of $T/outside (to see it unchanged).
outside_state() {
	(cd "$T/outside" && find . -printf '%y %p %s\n' | sort && find . -type f -exec md5sum {} + | sort)
}

@test ".. and symlinks out of the prefix: the outside file is never pushed" {
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	shim a mkdir -p "$T/a/w"
	# Positive control: what is written inside the prefix is stored.
	shim a bash -c "echo INSIDE-MARK-$$ > '$T/a/w/inside'"
	stored "INSIDE-MARK-$$"
	# Through .. out of the prefix, absolute and relative to a cwd inside.
	shim a bash -c "echo DOTDOT-ABS-$$ > '$T/a/w/../../outside/dotdot1'"
	shim a bash -c "cd '$T/a/w' && echo DOTDOT-REL-$$ > ../../outside/dotdot2 && cat ../../outside/secret >/dev/null"
	[ "$(cat "$T/outside/dotdot1")" = "DOTDOT-ABS-$$" ]
	# A symlink in the prefix to an outside file and to an outside directory.
	shim a ln -s "$T/outside/secret" "$T/a/w/filelink"
	shim a ln -s "$T/outside" "$T/a/w/dirlink"
	shim a cat "$T/a/w/filelink" >/dev/null
	# Creating through the directory symlink either fails (the shim refuses
	# it: EXDEV) or lands outside; either way it must not be pushed.
	shim a bash -c "echo VIA-DIRLINK-$$ > '$T/a/w/dirlink/new'; cp '$T/a/w/inside' '$T/a/w/dirlink/copied'; \
		cd '$T/a/w/dirlink' && echo VIA-CWD-$$ > cwdfile" || true
	shim a sync
	[ ! -e "$T/a/w/new" ]
	[ ! -e "$T/a/w/copied" ]
	[ ! -e "$T/a/w/cwdfile" ]
	for m in OUTSIDE-SECRET DOTDOT-ABS DOTDOT-REL VIA-DIRLINK VIA-CWD; do
		if stored "$m-$$"; then
			echo "$m-$$ was pushed to the storage"
			return 1
		fi
	done
	# Another host sees the two symlinks as symlinks and nothing else new.
	[ "$(names_of "shim b" "$T/b/w")" = "$(printf './dirlink\n./filelink\n./inside')" ]
	[ "$(shim b readlink "$T/b/w/dirlink")" = "$T/outside" ]
}

@test "appending through a symlink to an outside file: the outside file is never pushed" {
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	shim a mkdir -p "$T/a/w"
	shim a ln -s "$T/outside/secret" "$T/a/w/filelink"
	shim a bash -c "echo VIA-FILELINK-$$ >> '$T/a/w/filelink'"
	shim a sync
	[ "$(tail -n 1 "$T/outside/secret")" = "VIA-FILELINK-$$" ]
	[ -L "$T/a/w/filelink" ]
	run stored "OUTSIDE-SECRET-$$"
	[ "$status" -ne 0 ]
	run stored "VIA-FILELINK-$$"
	[ "$status" -ne 0 ]
}

@test "/proc/self/fd/N/.. climbing out of a prefix directory: nothing outside is pushed" {
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	shim a mkdir -p "$T/a/w/d"
	shim a bash -c "cd /tmp && exec 3<'$T/a/w/d' && echo PROC-OUT-$$ > /proc/self/fd/3/../../../outside/procfile \
		&& cat /proc/self/fd/3/../../../outside/secret > /dev/null \
		&& echo PROC-IN-$$ > /proc/self/fd/3/in-d"
	[ "$(cat "$T/outside/procfile")" = "PROC-OUT-$$" ]
	stored "PROC-IN-$$"
	run stored "PROC-OUT-$$"
	[ "$status" -ne 0 ]
	run stored "OUTSIDE-SECRET-$$"
	[ "$status" -ne 0 ]
	[ "$(names_of "shim b" "$T/b/w")" = "$(printf './d\n./d/in-d')" ]
}

@test "a cache directory swapped for a symlink to outside while the shim fetches: nothing is written outside" {
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	shim a mkdir -p "$T/a/w/d"
	for i in $(seq 40); do echo "SWAP-DATA-$i" >"$T/f$i"; done
	shim a bash -c "for i in \$(seq 40); do cp '$T'/f\$i '$T/a/w/d/f'\$i; done"
	shim b ls "$T/b/w/d" >/dev/null	# b lists d: 40 stubs to fetch
	before=$(outside_state)
	# The attacker exchanges b's local d with a symlink to the outside
	# directory, back and forth, while a program of b reads every file.
	python3 "$TOP/tests/long/rel_swap.py" "$T/b/w/d" "$T/outside" 8 "$T/stop" >"$T/swaps" &
	swapper=$!
	for round in 1 2 3; do
		shim b bash -c "for i in \$(seq 40); do cat '$T/b/w/d/f'\$i >/dev/null 2>&1; done" || true
	done
	touch "$T/stop"
	wait "$swapper"
	echo "# $(cat "$T/swaps") swaps during 3 × 40 reads" >&3
	[ "$(cat "$T/swaps")" -gt 0 ]
	[ -d "$T/b/w/d" ]
	[ ! -L "$T/b/w/d" ]
	# Reading never wrote into the outside directory.
	[ "$(outside_state)" = "$before" ]
	# And the storage still holds the right bytes.
	shim c bash -c "for i in \$(seq 40); do [ \"\$(cat '$T/c/w/d/f'\$i)\" = SWAP-DATA-\$i ] || exit 1; done"
}

@test "a directory swapped for a symlink to outside while a program appends: no outside file is pushed" {
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	shim a mkdir -p "$T/a/w/d"
	# Files of the same names exist inside (in the storage) and outside.
	for i in $(seq 30); do echo "PRE-OUT-$i-$$" >"$T/outside/g$i"; done
	shim a bash -c "for i in \$(seq 30); do echo IN-\$i > '$T/a/w/d/g'\$i; done"
	python3 "$TOP/tests/long/rel_swap.py" "$T/a/w/d" "$T/outside" 8 "$T/stop" >"$T/swaps" &
	swapper=$!
	for round in 1 2; do
		shim a bash -c "for i in \$(seq 30); do echo SWAPW-\$i >> '$T/a/w/d/g'\$i 2>/dev/null; done" || true
	done
	touch "$T/stop"
	wait "$swapper"
	echo "# $(cat "$T/swaps") swaps during 2 × 30 appends; $(grep -l SWAPW "$T"/outside/g* | wc -l) appends landed outside" >&3
	shim a sync || true
	run stored "OUTSIDE-SECRET-$$"
	[ "$status" -ne 0 ]
	pushed=$(for i in $(seq 30); do stored "PRE-OUT-$i-$$" && echo "$i"; done | wc -l)
	[ "$pushed" -eq 0 ]
}

@test "cache_dir, the journal and the index are created 0700, also with umask 000" {
	cluster_start "$BATS_TEST_NAME" --groups 1 --nodes-per-group 1 --nosync
	shim a bash -c "umask 000 && mkdir -p '$T/a/w' && echo x > '$T/a/w/f'"
	[ "$(stat -c %a "$T/a-state")" = 700 ]
	for d in j tmp; do
		[ "$(stat -c %a "$T/a-state/$d")" = 700 ]
	done
	# The index is one file since session 12 (x.idx; no x/ folder).
	[ "$(stat -c %a "$T/a-state/x.idx")" = 600 ]
	[ ! -e "$T/a-state/x" ]
	# Nothing in the cache directory is writable by others.
	[ -z "$(find "$T/a-state" -perm -o+w ! -type l)" ]
	# A cache_dir that already exists with looser modes is not widened further
	# and the journal under it is still 0700.
	mkdir -m 755 "$T/b-state"
	shim b bash -c "umask 000 && cat '$T/b/w/f' >/dev/null"
	[ "$(stat -c %a "$T/b-state/j")" = 700 ]
}

@test "auth_cookie: a program with the right cookie works; with a wrong one its calls fail and nothing is stored" {
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync --auth-cookie "s3cret-$$"
	POHMELFS_AUTH_COOKIE="s3cret-$$" shim a bash -c "mkdir -p '$T/a/w' && echo COOKIE-OK-$$ > '$T/a/w/ok'"
	[ "$(POHMELFS_AUTH_COOKIE="s3cret-$$" shim b cat "$T/b/w/ok")" = "COOKIE-OK-$$" ]
	run env POHMELFS_AUTH_COOKIE=wrong LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/c" \
		POHMELFS_CACHE_DIR="$T/c-state" POHMELFS_HOST_ID=c bash -c "mkdir -p '$T/c/w' && echo COOKIE-BAD-$$ > '$T/c/w/bad'"
	echo "$output"
	[ "$status" -ne 0 ]
	bad_cookie_output=$output
	run stored "COOKIE-BAD-$$"
	[ "$status" -ne 0 ]
	# Without a cookie at all, the same.
	run env -u POHMELFS_AUTH_COOKIE LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/d" \
		POHMELFS_CACHE_DIR="$T/d-state" POHMELFS_HOST_ID=d cat "$T/d/w/ok"
	[ "$status" -ne 0 ]
	[[ $output != *"COOKIE-OK"* ]]
	# The log line should say why (the raw tool says "auth_cookie rejected by the node").
	[[ $bad_cookie_output == *auth* ]]
}
