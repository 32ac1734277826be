#!/usr/bin/env bats
# rel_boot.bats — an unclean shutdown of the host, end to end (DESIGN.md §2,
# core/cache/cacheboot.c; tests/RELIABILITY.md "rel_boot.bats").
#
# Host a writes files under the shim in boot "boot-1" (POHMELFS_TEST_BOOT_ID,
# the test-only override of the kernel's boot id): some are closed under
# sync_on_close and committed, then a second program (sync_on_close off)
# rewrites some of them, creates one, rewrites one with equal bytes, and
# appends to another until it is killed with SIGKILL at a random moment —
# so its changes are on disk but never pushed (no exit, no pohmelfsd: the
# library is a copy with no pohmelfsd beside it, so the shim cannot start
# one).  A fresh cache confirms the storage still holds the committed
# versions.  Then:
#   - the boot id changes: every changed file becomes exactly one conflict
#     copy under /.pohmelfs-conflicts/a/ with the bytes host a had, nothing
#     of them is pushed (a second, empty cache reads the committed
#     versions), host a's names show the committed versions again, the
#     clean files and the equal rewrite are left alone;
#   - the same with the marking done by a program of the new boot and the
#     push by pohmelfsd;
#   - the boot id stays: the same changes are pushed, no conflict copy.

setup() {
	POHM_TEST_BUILD=1	# POHMELFS_TEST_BOOT_ID: build/test/ reads it
	load lib/common
	load lib/cluster
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	cluster_start "$BATS_TEST_NAME" --groups 3 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID="boot-$BATS_TEST_NUMBER" \
		POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_TIMEOUT=3600 \
		POHMELFS_READ_WAIT_TIMEOUT=3 POHMELFS_WRITE_WAIT_TIMEOUT=3
	unset POHMELFS_PREFIX POHMELFS_CACHE_DIR POHMELFS_HOST_ID POHMELFS_TEST_BOOT_ID
	# The library alone: with no pohmelfsd beside it (nor in ../bin) the
	# shim starts none, so nothing pushes behind the test's back.
	mkdir -p "$T/lib" "$T/a" "$T/v" "$T/w"
	cp "$LIB" "$T/lib/libpohmelfs.so"
	[ ! -e "$T/lib/pohmelfsd" ]
	[ ! -e "$T/bin/pohmelfsd" ]
	BPRELOAD=${PRELOAD/"$LIB"/"$T/lib/libpohmelfs.so"}
	WRITER=
}

teardown() {
	[ -n "$WRITER" ] && kill -KILL -- "-$WRITER" 2>/dev/null
	local f
	for f in "$T"/*-state/pohmelfsd.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	cluster_stop
}

# on HOST BOOT CMD...: CMD under the shim as host HOST, in its prefix, in boot BOOT.
on() {
	local h=$1 boot=$2
	shift 2
	(cd "$T/$h" && LD_PRELOAD=$BPRELOAD POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state \
		POHMELFS_HOST_ID=$h POHMELFS_TEST_BOOT_ID=$boot timeout 60 "$@")
}

# tool BOOT CMD...: a program of ours (pohmelfs, pohmelfsd) for host a in boot BOOT.
tool() {
	local boot=$1
	shift
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a \
		POHMELFS_TEST_BOOT_ID=$boot timeout 60 "$@"
}

# files HOST DIR [BOOT]: "name md5" of every file under DIR of HOST's prefix,
# read through the shim (a fresh cache fetches them from the storage).
files() {
	on "$1" "${3:-boot-$1}" bash -c 'cd "$0" && find . -type f -printf "%P\n" | LC_ALL=C sort |
		while read -r n; do printf "%s %s\n" "$n" "$(md5sum <"$n" | cut -c1-32)"; done' "$2"
}

md5() { md5sum <"$1" | cut -c1-32; }

# committed: the committed versions as "name md5" lines, n1 (created by the
# killed writer: the storage has it, empty) among them.
committed() {
	{ echo "$WANT_OLD"; echo "n1 $(printf '' | md5sum | cut -c1-32)"; } | LC_ALL=C sort
}

# Committed versions, then changes left on disk by a killed writer.  Sets
# WANT_OLD (the committed files as "name md5"), CHANGED (the names the
# writer changed) and LOCAL_<name> (md5 of host a's bytes of each).
crash_in_boot_1() {
	local i n
	POHMELFS_SYNC_ON_CLOSE=1 on a boot-1 bash -c \
		'mkdir d && for f in c1 c2 d1 d2 d3 same; do echo "v1 $f" >d/$f; done && printf "base\n" >d/t'
	[ "$(cat "$T/a-state/boot")" != "" ]	# the boot was recorded
	WANT_OLD=$(files v d)
	[ "$(echo "$WANT_OLD" | wc -l)" -eq 7 ]
	# The writer: rewrites, a create, an equal rewrite, then appends until
	# the kill (and kills itself should the kill not come: never an exit).
	cat >"$T/writer.sh" <<'EOF'
for f in d1 d2 d3 n1; do echo "v2 $f" >d/$f; done
echo "v1 same" >d/same
for ((i = 0; i < 200000; i++)); do echo "line $i" >>d/t; done
kill -KILL $$
EOF
	(cd "$T/a" && POHMELFS_SYNC_ON_CLOSE=0 LD_PRELOAD=$BPRELOAD POHMELFS_PREFIX=$T/a \
		POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a POHMELFS_TEST_BOOT_ID=boot-1 \
		exec setsid bash "$T/writer.sh") </dev/null >/dev/null 2>&1 3>&- &
	WRITER=$!
	# Kill it at a random moment once it is appending.
	for ((i = 0; i < 100; i++)); do
		[ "$(stat -c %s "$T/a/d/t" 2>/dev/null || echo 0)" -gt 5 ] && break
		sleep 0.1
	done
	sleep "0.$((RANDOM % 6 + 1))"
	# It runs in its own process group (setsid did not fork), so the kill
	# reaches the writer itself.
	kill -KILL -- "-$WRITER"
	for ((i = 0; i < 100; i++)); do
		kill -0 -- "-$WRITER" 2>/dev/null || break
		sleep 0.05
	done
	wait "$WRITER" 2>/dev/null || true
	WRITER=
	sleep 0.3
	CHANGED="d1 d2 d3 n1 t"
	for n in $CHANGED; do
		printf -v "LOCAL_$n" %s "$(md5 "$T/a/d/$n")"
	done
	echo "# the writer was killed with $(wc -l <"$T/a/d/t") lines in d/t" >&3
	[ "$(cat "$T/a/d/d1")" = "v2 d1" ]
	[ "$(wc -l <"$T/a/d/t")" -gt 1 ]
	# Nothing of it reached the storage: a fresh cache still reads the
	# committed versions (n1 was created empty by its open; the data is not there).
	run files w d
	[ "$status" -eq 0 ]
	if [ "$output" != "$(committed)" ]; then
		echo "the killed writer's changes reached the storage before the test's sync:"
		diff <(committed) <(echo "$output")
		return 1
	fi
	rm -rf "$T/w" "$T/w-state" && mkdir "$T/w"
}

# after_unclean_shutdown: the checks common to tests 1 and 2.
after_unclean_shutdown() {
	local n copies
	# The storage keeps the committed versions (a second, empty cache).
	rm -rf "$T/v" "$T/v-state" && mkdir "$T/v"
	run files v d
	[ "$status" -eq 0 ]
	[ "$output" = "$(committed)" ]
	# One conflict copy per changed file, holding host a's bytes; none else.
	run files v .pohmelfs-conflicts/a
	[ "$status" -eq 0 ]
	copies=$output
	echo "# conflict copies: $(echo "$copies" | cut -d' ' -f1 | tr '\n' ' ')" >&3
	[ "$(echo "$copies" | wc -l)" -eq 5 ]
	for n in $CHANGED; do
		local want=LOCAL_$n
		[ "$(echo "$copies" | grep -c "^$n\.")" -eq 1 ]
		echo "$copies" | grep -q "^$n\.[^ ]* ${!want}\$"
	done
	[ "$(on v boot-v ls -A .pohmelfs-conflicts)" = a ]
	# Host a's names show the committed versions again; the clean files and
	# the equal rewrite are what they were.
	run files a d boot-2
	[ "$status" -eq 0 ]
	[ "$output" = "$(committed)" ]
	[ "$(cat "$T/a/d/c1")" = "v1 c1" ]
	[ "$(cat "$T/a/d/same")" = "v1 same" ]
	# pohmelfs status names the copies; a second sync has nothing to do.
	run tool boot-2 "$B/pohmelfs" status
	[ "$status" -eq 0 ]
	for n in $CHANGED; do
		[[ $output == *"/.pohmelfs-conflicts/a/$n."* ]]
	done
	run tool boot-2 "$B/pohmelfs" sync
	[ "$status" -eq 0 ]
	[[ $output == *"pushed 0 files"* ]]
	[[ $output != *conflict* ]]
}

@test "unclean shutdown (boot id changed): pohmelfs sync keeps every dirty file as a conflict copy and pushes none" {
	crash_in_boot_1
	local ino_c1
	ino_c1=$(stat -c %i "$T/a/d/c1")
	run tool boot-2 "$B/pohmelfs" sync
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"5 kept as conflict"* ]]
	# The clean file was not touched (same local inode, same bytes).
	[ "$(stat -c %i "$T/a/d/c1")" = "$ino_c1" ]
	after_unclean_shutdown
}

@test "unclean shutdown: the first program of the new boot marks the dirty files, pohmelfsd keeps them as conflict copies" {
	crash_in_boot_1
	# A program of the new boot that only reads a clean file: it opens the
	# cache first, so it marks; it must push nothing itself.
	run on a boot-2 cat d/c1
	[ "$status" -eq 0 ]
	[ "$output" = "v1 c1" ]
	rm -rf "$T/v" "$T/v-state" && mkdir "$T/v"
	run files v d
	[ "$output" = "$(committed)" ]
	# pohmelfsd, one round in the foreground, pushes what is dirty.
	run tool boot-2 "$B/pohmelfsd" --foreground --once
	echo "$output"
	[ "$status" -eq 0 ]
	after_unclean_shutdown
}

@test "unclean shutdown: a program of the new boot that only reads starts pohmelfsd, which keeps the dirty files as conflict copies" {
	crash_in_boot_1
	# The library beside pohmelfsd this time: what an unclean shutdown left
	# dirty is pushed when the cache is next used (DESIGN.md §3), even by a
	# reader, with no writer or `pohmelfs sync` after it.
	(cd "$T/a" && LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state \
		POHMELFS_HOST_ID=a POHMELFS_TEST_BOOT_ID=boot-2 timeout 60 cat d/c1) >"$T/out"
	[ "$(cat "$T/out")" = "v1 c1" ]
	local i copies=0
	for ((i = 0; i < 200; i++)); do
		rm -rf "$T/v" "$T/v-state" && mkdir "$T/v"
		copies=$(on v boot-v find .pohmelfs-conflicts/a -type f 2>/dev/null | wc -l)
		[ "$copies" -eq 5 ] && break
		sleep 0.1
	done
	echo "# conflict copies after $i polls: $copies" >&3
	[ "$copies" -eq 5 ]
	[ -f "$T/a-state/pohmelfsd.pid" ]
	kill "$(cat "$T/a-state/pohmelfsd.pid")"
	after_unclean_shutdown
}

@test "no reboot (same boot id): pohmelfs sync pushes the dirty files, no conflict copy" {
	crash_in_boot_1
	run tool boot-1 "$B/pohmelfs" sync
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *conflict* ]]
	rm -rf "$T/v" "$T/v-state" && mkdir "$T/v"
	run files v d
	[ "$status" -eq 0 ]
	local n want
	for n in $CHANGED; do
		want=LOCAL_$n
		echo "$output" | grep -qx "$n ${!want}"
	done
	echo "$output" | grep -qx "c1 $(echo "v1 c1" | md5sum | cut -c1-32)"
	run on v boot-v ls -A
	[[ $output != *pohmelfs-conflicts* ]]
}
