#!/usr/bin/env bats
# preload_walks.bats — the glibc functions that reach the kernel without an
# interposable call (nftw/ftw, fts_*, glob, scandir, realpath, the PATH
# search of execvp/posix_spawnp, system/popen) work under the prefix.
#
# Host "a" writes a tree into the storage; each call then runs on a fresh
# host whose cache holds nothing yet, so a call that bypassed the shim
# would meet empty mode-000 stubs or miss entries.  Its output must equal
# the same call's on a native copy of the tree (tests/helpers/walks.c
# prints what two copies of a tree share).

setup() {
	load lib/common
	load lib/cluster
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID="w-${BATS_TEST_NUMBER}" POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0
	W=$B/tests/helpers/walks
	S=$B/tests/helpers/spawns
	fresh=0
	make_tree
}

teardown() {
	for s in "$T"/*-state/pohmelfsd.pid; do
		[ -f "$s" ] && kill "$(cat "$s")" 2>/dev/null
	done
	cluster_stop
}

# shim HOST CMD...: run CMD under the shim as host HOST (prefix $T/HOST).
shim() {
	local h=$1
	shift
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state POHMELFS_HOST_ID=$h "$@"
}

# The same tree natively ($T/native/w) and in the storage (written by host a).
tree_script='mkdir -p w/a/b/c w/skip/x w/e w/bin && echo hi > w/a/f && echo hello > w/a/b/g \
	&& head -c 5000 /dev/zero > w/a/b/c/big && echo x > w/skip/x/y && echo dot > w/.hid \
	&& ln -s ../a w/dl && ln -s a w/al && ln -s nowhere w/dang && ln -s a/f w/follow && ln -s loop w/loop \
	&& ln w/a/f w/hard && chmod 751 w/a/b && chmod 600 w/a/b/g && cp /bin/echo w/bin/myecho'

make_tree() {
	mkdir -p "$T/native" "$T/a"
	(cd "$T/native" && bash -e -c "$tree_script")
	shim a bash -e -c "cd '$T/a' && $tree_script"
}

# both CMD...: run CMD natively in $T/native and on a fresh host in its prefix;
# the same output and exit status.
both() {
	local h=f$((fresh += 1))
	{ (cd "$T/native" && "$@") || echo "exit $?"; } >"$T/native.out" 2>&1
	mkdir -p "$T/$h"
	{ shim "$h" bash -c 'cd "$0" && exec "$@"' "$T/$h" "$@" || echo "exit $?"; } >"$T/shim.out" 2>&1
	diff -u "$T/native.out" "$T/shim.out"
	[ -s "$T/native.out" ]
}

@test "nftw and ftw (+64) with FTW_PHYS, FTW_DEPTH, FTW_CHDIR, FTW_MOUNT, FTW_ACTIONRETVAL" {
	both "$W" nftw - w
	both "$W" nftw d w
	both "$W" nftw pcda w/
	both "$W" nftw64 m w
	both "$W" nftw64 pa w
	both "$W" nftw c w/a/b/g
	both "$W" nftw - w/dang
	both "$W" nftw - w/nothing
	both "$W" ftw w
	both "$W" ftw64 w/a
}

@test "fts_open/fts_read/fts_children/fts_set (+64) with FTS_* options" {
	both "$W" fts - w
	both "$W" fts p w
	both "$W" fts pn w/a w/e
	both "$W" fts l w
	both "$W" fts ps w
	both "$W" fts pd w/a
	both "$W" fts c w/follow w/dang w/al
	both "$W" fts64 x w
	both "$W" fts64 - w/nothing w/a/f
}

@test "glob (+64) with GLOB_MARK, GLOB_ONLYDIR, GLOB_NOCHECK, GLOB_BRACE, GLOB_NOSORT" {
	both "$W" glob - 'w/*'
	both "$W" glob m 'w/*/*'
	both "$W" glob o 'w/*/*'
	both "$W" glob mo 'w/a/*'
	both "$W" glob n 'w/a/zz*'
	both "$W" glob b 'w/{a,skip}/*'
	both "$W" glob s 'w/a/b/*'
	both "$W" glob64 - 'w/?/b/c/*'
	both "$W" glob - 'w/a/f'
}

@test "scandir and scandirat (+64): entries, types, errno kept" {
	both "$W" scandir w
	both "$W" scandir64 w/a/b
	both "$W" scandirat w a
	both "$W" scandirat64 w/a b/c
	both "$W" scandir w/nothing
}

@test "realpath and canonicalize_file_name through links not fetched yet" {
	both "$W" realpath w/dl/b/../f w/al/b/c w/follow w/a/f/ w/a/f/.. w/dang w/loop w/a/./b//c/ .
	both "$W" canon w/al/b/g w/follow/. w/a/../al/f w/nothing/x
}

@test "realpath through a link outside the prefix into entries not fetched yet" {
	mkdir -p "$T/out" "$T/f9"
	ln -s "$T/f9/w" "$T/out/l"
	run shim f9 "$W" realpath "$T/out/l/a/b/g" "$T/out/l/a/nothing"
	[ "${lines[0]}" = "$T/out/l/a/b/g -> $T/f9/w/a/b/g" ]
	[ "${lines[1]}" = "${lines[0]}" ]
	[[ "${lines[2]}" = "$T/out/l/a/nothing -> "*No\ such* ]]
}

# Issue 23 (make -j2): gcc's include search asks realpath of many names
# that do not exist, outside the prefix; with no link on the way the shim
# adds no walk of its own (it used to repeat every readlink).
@test "realpath of a missing name outside the prefix makes only glibc's readlinks" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -o /dev/null /bin/true 2>/dev/null || skip "ptrace is refused here"
	mkdir -p "$T/out/d1/d2" "$T/f8"
	strace -f -e trace=readlink -o "$T/native.tr" "$W" realpath "$T/out/d1/d2/missing"
	shim f8 strace -f -e trace=readlink -o "$T/shim.tr" "$W" realpath "$T/out/d1/d2/missing"
	n=$(grep -c "readlink(\"$T/out" "$T/native.tr")
	s=$(grep -c "readlink(\"$T/out" "$T/shim.tr")
	echo "native $n, shim $s"
	[ "$n" -ge 6 ]	# out, d1, d2, missing: by realpath(name, NULL) and (name, buf)
	[ "$s" -eq "$n" ]
}

@test "execvp, execlp and posix_spawnp find a binary copied into the prefix through PATH" {
	export PATH="w/bin:$PATH"
	both "$S" execvp myecho one two
	both "$S" execlp myecho three
	both "$S" execvpe myecho six
	both "$S" execvpe sh -c 'echo $SPAWNS'	# the caller's environment arrives
	both "$S" spawnp myecho four
	both "$S" execvp nosuchprogram
	# and by name, from the prefix itself
	both "$S" spawnp ./w/bin/myecho five
}

@test "system and popen: the shell and its children push what they write" {
	shim a "$S" system "cat '$T/a/w/a/f' > '$T/a/w/sys'"
	shim a "$S" popen w "cat > '$T/a/w/pop'" "through popen"
	shim a "$S" popen r "cat '$T/a/w/a/b/g'"
	# fd 5 was opened by the parent and closed before the shell wrote to it
	run shim a "$S" hold "$T/a/w/held" 'sleep 0.2; cat >&5' "inherited"
	[ "$output" = "pclose 0" ]
	run shim a "$S" system "true"
	[ "$output" = "system 0" ]
	[ "$(shim b cat "$T/b/w/sys")" = hi ]
	[ "$(shim b cat "$T/b/w/pop")" = "through popen" ]
	[ "$(shim b cat "$T/b/w/held")" = inherited ]
}
