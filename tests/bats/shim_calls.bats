#!/usr/bin/env bats
# shim_calls.bats — single libc entry points under LD_PRELOAD=libpohmelfs.so
# with the storage on (a local 2-group cluster, one fsid per test), through
# the helpers tests/helpers/sc_*.c.  What one host does is checked from a
# second host with an empty cache ("b"), and, where a plain directory can
# say what is right, against a native run.
#
# Calls that turn out broken keep their assertion but are skipped with
# "BUG: …" unless REL_RUN_BUGS=1 (as in rel_*.bats).

setup() {
	load lib/common
	load lib/cluster
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	H=$B/tests/helpers
	# sc_calls names glibc's compat-only __xstat family; with -fsanitize=address
	# this toolchain's linker leaves R_X86_64_NONE slots in its .rela.plt and
	# ld.so refuses to start it ("unexpected PLT reloc type 0x00").
	if "$H/sc_calls" 2>&1 | grep -q "error while loading shared libraries"; then
		skip "sc_calls cannot be loaded in this build: $("$H/sc_calls" 2>&1 | head -1)"
	fi
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID="sc-${BATS_TEST_NUMBER}" POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0 \
	       POHMELFS_READ_REPAIR=1
	U= OUT=
	mkdir -p "$T/native"
	# The storage is authoritative: the working directory is made through
	# the shim (a local mkdir would be a name the storage does not know).
	shim a mkdir -p "$T/a/w"
}

teardown() {
	local h
	for h in a b c d; do
		[ -f "$T/$h-state/pohmelfsd.pid" ] && kill "$(cat "$T/$h-state/pohmelfsd.pid")" 2>/dev/null
		[ -n "$U" ] && [ -f "$U/$h-state/pohmelfsd.pid" ] && kill "$(cat "$U/$h-state/pohmelfsd.pid")" 2>/dev/null
	done
	cluster_stop
	[ -z "$U" ] || rm -rf "$U"
	[ -z "$OUT" ] || rm -rf "$OUT"
}

# shim HOST CMD...: run CMD under the shim as host HOST (prefix $T/HOST),
# bounded in time.
shim() {
	local h=$1
	shift
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/$h POHMELFS_CACHE_DIR=$T/$h-state POHMELFS_HOST_ID=$h \
		timeout -k 5 120 "$@"
}

sc() { "$H/sc_calls" "$@"; }

# bug MESSAGE: skip with "BUG: MESSAGE" unless REL_RUN_BUGS is set; then
# the caller's next assertion fails.
bug() {
	[ -n "${REL_RUN_BUGS:-}" ] || skip "BUG: $1"
}

@test "open64, openat64, creat, creat64: the files and their data reach another host" {
	shim a "$H/sc_calls" open64 "$T/a/w/o64" "open64 data"
	shim a "$H/sc_calls" openat64 "$T/a/w" oat64 "openat64 data"
	shim a "$H/sc_calls" creat "$T/a/w/cr" "creat data"
	shim a "$H/sc_calls" creat64 "$T/a/w/cr64" "creat64 data"
	# Rewriting an existing file through open64 truncates it.
	shim a "$H/sc_calls" open64 "$T/a/w/cr" "again"
	run shim b bash -c "cd '$T/b/w' && for f in o64 oat64 cr cr64; do printf '%s %s ' \$f \"\$(stat -c %a \$f)\"; cat \$f; echo; done"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'o64 644 open64 data\noat64 644 openat64 data\ncr 644 again\ncr64 644 creat64 data')" ]
}

@test "fortified __open_2, __openat_2, __open64_2, __openat64_2: read on a fresh host, written back" {
	command -v "${CC:-cc}" >/dev/null && command -v nm >/dev/null || skip "no C compiler or nm"
	"${CC:-cc}" -D_FORTIFY_SOURCE=2 -O2 -o "$T/fort" "$TOP/tests/helpers/sc_fortify.c"
	"${CC:-cc}" -D_FORTIFY_SOURCE=2 -D_FILE_OFFSET_BITS=64 -O2 -o "$T/fort64" "$TOP/tests/helpers/sc_fortify.c"
	nm -u "$T/fort" | grep -qw '__open_2'
	nm -u "$T/fort" | grep -qw '__openat_2'
	nm -u "$T/fort64" | grep -qw '__open64_2'
	nm -u "$T/fort64" | grep -qw '__openat64_2'
	for f in p pa q qa; do shim a "$H/sc_calls" creat "$T/a/w/$f" "from a $f"; done
	# Host b has fetched nothing: each fortified open must materialize.
	[ "$(shim b "$T/fort" read "$T/b/w/p")" = "from a p" ]
	[ "$(shim b "$T/fort" readat "$T/b/w" pa)" = "from a pa" ]
	[ "$(shim b "$T/fort64" read "$T/b/w/q")" = "from a q" ]
	[ "$(shim b "$T/fort64" readat "$T/b/w" qa)" = "from a qa" ]
	shim b "$T/fort" write "$T/b/w/p" "b wrote p"
	shim b "$T/fort" writeat "$T/b/w" pa "b wrote pa"
	shim b "$T/fort64" write "$T/b/w/q" "b wrote q"
	shim b "$T/fort64" writeat "$T/b/w" qa "b wrote qa"
	run shim a bash -c "cd '$T/a/w' && cat p; echo; cat pa; echo; cat q; echo; cat qa"
	[ "$output" = "$(printf 'b wrote p\nb wrote pa\nb wrote q\nb wrote qa')" ]
}

@test "the __xstat family, stat, fstat, fstatat and statx on a fresh host report what the writing host reports" {
	local v
	shim a bash -c "cd '$T/a/w' && mkdir d && for v in xstat xstat64 fxstat fxstat64 fxstatat fxstatat64 statx stat fstat fstatat; do
		printf '%s' \$v > f-\$v && chmod 640 f-\$v; done
		for v in lxstat lxstat64 lstat; do ln -s f-stat l-\$v; done
		touch -d '2003-04-05 06:07' f-xstat f-statx"
	for v in xstat xstat64 fxstat fxstat64 fxstatat fxstatat64 statx stat fstat fstatat; do
		# The first access on b is the call under test.
		run shim b "$H/sc_calls" stat $v "$T/b/w/f-$v"
		echo "$v on b: $output"
		[ "$status" -eq 0 ]
		[ "$output" = "$(shim a "$H/sc_calls" stat stat "$T/a/w/f-$v")" ]
		# The size is the stored size, not a stub's 0.
		[ "$(echo "$output" | cut -d' ' -f6)" = "${#v}" ]
	done
	# A symlink's own mtime is not kept by the storage (its creation time on
	# each host): compared without it.
	for v in lxstat lxstat64 lstat; do
		run shim b "$H/sc_calls" stat $v "$T/b/w/l-$v"
		echo "$v on b: $output"
		[ "$status" -eq 0 ]
		[ "$(echo "$output" | cut -d' ' -f1-6)" = "$(shim a "$H/sc_calls" stat lstat "$T/a/w/l-$v" | cut -d' ' -f1-6)" ]
		[ "$(echo "$output" | cut -d' ' -f2)" = 120777 ]
	done
	# A missing name under the prefix fails as the kernel says.
	run shim b "$H/sc_calls" stat xstat "$T/b/w/missing"
	echo "missing: $output"
	[ "$(echo "$output" | head -1)" = "ERR ENOENT" ]
}

@test "access, faccessat, euidaccess, eaccess on a fresh host answer as on a local disk" {
	local d
	for d in "$T/native" "$T/a/w"; do
		shim a bash -c "cd '$d' && printf x > x && chmod 755 x && printf r > r && chmod 644 r && mkdir sub && printf s > sub/s"
	done
	script() {
		local w=$1
		"$H/sc_calls" access "$w/x" x || true
		"$H/sc_calls" access "$w/r" x || true
		"$H/sc_calls" access "$w/r" rw || true
		"$H/sc_calls" faccessat "$w/sub" s r || true
		"$H/sc_calls" faccessat "$w" sub x || true
		"$H/sc_calls" euidaccess "$w/x" rx || true
		"$H/sc_calls" eaccess "$w/r" x || true
		"$H/sc_calls" access "$w/missing" f || true
		"$H/sc_calls" access "$w/r/below" f || true
		return 0
	}
	script "$T/native" >"$T/native.out" 2>/dev/null
	grep -q EACCES "$T/native.out"
	export -f script
	export H
	# The host that wrote the files (they are local there).
	shim a bash -c "script '$T/a/w'" >"$T/a.out" 2>/dev/null
	diff "$T/native.out" "$T/a.out"
	# A host that has fetched nothing: the first access is the call.
	shim b bash -c "script '$T/b/w'" >"$T/b.out" 2>/dev/null
	cat "$T/b.out"
	diff "$T/native.out" "$T/b.out"
}

@test "truncate, truncate64, ftruncate, ftruncate64 as calls of their own: the size and data reach another host" {
	local d
	for d in "$T/native" "$T/a/w"; do
		shim a bash -c "cd '$d' && for f in t1 t2 t3 t4; do seq 1 40 > \$f; done"
		shim a "$H/sc_calls" truncate "$d/t1" 10
		shim a "$H/sc_calls" truncate64 "$d/t2" 7000
		shim a "$H/sc_calls" ftruncate "$d/t3" 0
		shim a "$H/sc_calls" ftruncate64 "$d/t4" 50
	done
	(cd "$T/native" && stat -c '%n %s' t1 t2 t3 t4 && md5sum t1 t2 t3 t4) >"$T/native.out"
	shim b bash -c "cd '$T/b/w' && stat -c '%n %s' t1 t2 t3 t4 && md5sum t1 t2 t3 t4" >"$T/b.out"
	cat "$T/b.out"
	if ! diff "$T/native.out" "$T/b.out"; then
		false
	fi
}

@test "chown, lchown, fchown, fchownat as root: the owner is stored and another host sees it" {
	[ "$(id -u)" = 0 ] || skip "needs root"
	shim a bash -c "cd '$T/a/w' && for f in c1 c2 c3 c4 c5; do echo \$f > \$f; done && ln -s c1 lnk && mkdir dd"
	shim a "$H/sc_calls" chown "$T/a/w/c1" 1001 1002
	shim a "$H/sc_calls" lchown "$T/a/w/lnk" 1003 1004
	shim a "$H/sc_calls" fchown "$T/a/w/c3" 1005 1006
	shim a "$H/sc_calls" fchownat "$T/a/w" c4 1007 1008
	shim a "$H/sc_calls" chown "$T/a/w/dd" 1009 1010
	shim a "$H/sc_calls" chown "$T/a/w/c5" -1 1011
	expected="c1 1001 1002
c2 0 0
c3 1005 1006
c4 1007 1008
c5 0 1011
dd 1009 1010"
	[ "$(cd "$T/a/w" && stat -c '%n %u %g' c1 c2 c3 c4 c5 dd lnk)" = "$expected
lnk 1003 1004" ]
	run shim b bash -c "cd '$T/b/w' && stat -c '%n %u %g' c1 c2 c3 c4 c5 dd"
	echo "$output"
	[ "$output" = "$expected" ]
	# As root, the local files carry the stored owner (DESIGN §2 Ownership).
	[ "$(cd "$T/b/w" && stat -c '%n %u %g' c1 c2 c3 c4 c5 dd)" = "$expected" ]
	run shim b stat -c '%n %u %g' "$T/b/w/lnk"
	if [ "$output" != "$T/b/w/lnk 1003 1004" ]; then
		false
	fi
}

@test "futimens and futimes on an fd opened for reading: the times reach another host" {
	shim a bash -c "cd '$T/a/w' && echo n > n && echo s > s && mkdir dir"
	shim a "$H/sc_calls" futimens "$T/a/w/n" 1000000000
	shim a "$H/sc_calls" futimes "$T/a/w/s" 1100000000
	shim a "$H/sc_calls" futimens "$T/a/w/dir" 1200000000
	[ "$(stat -c '%n %Y' "$T/a/w/n" "$T/a/w/s" "$T/a/w/dir")" = "$(printf '%s\n' "$T/a/w/n 1000000000" "$T/a/w/s 1100000000" "$T/a/w/dir 1200000000")" ]
	run shim b bash -c "cd '$T/b/w' && stat -c '%n %Y' n s dir"
	echo "$output"
	if [ "$output" != "$(printf 'n 1000000000\ns 1100000000\ndir 1200000000')" ]; then
		false
	fi
}

@test "xattrs: set, get, list, remove in the path, l and f forms; user.* reaches another host and back" {
	local d
	for d in "$T/native" "$T/a/w"; do
		shim a bash -c "cd '$d' && echo f > f && echo g > g" 
		shim a "$H/sc_calls" xattr set "$d/f" user.p pv
		shim a "$H/sc_calls" xattr lset "$d/f" user.l lv
		shim a "$H/sc_calls" xattr fset "$d/f" user.f fv
		shim a "$H/sc_calls" xattr set "$d/f" user.gone x
		shim a "$H/sc_calls" xattr remove "$d/f" user.gone
		shim a "$H/sc_calls" xattr set "$d/g" user.a av
		shim a "$H/sc_calls" xattr set "$d/g" user.b bv
		shim a "$H/sc_calls" xattr lremove "$d/g" user.a
	done
	reads() {
		local d=$1
		"$H/sc_calls" xattr list "$d/f" || true
		"$H/sc_calls" xattr llist "$d/f" || true
		"$H/sc_calls" xattr flist "$d/g" || true
		"$H/sc_calls" xattr get "$d/f" user.p || true
		"$H/sc_calls" xattr lget "$d/f" user.l || true
		"$H/sc_calls" xattr fget "$d/f" user.f || true
		"$H/sc_calls" xattr get "$d/f" user.gone || true
		"$H/sc_calls" xattr fget "$d/g" user.b || true
		return 0
	}
	export -f reads
	export H
	reads "$T/native" >"$T/native.out" 2>/dev/null
	shim a bash -c "reads '$T/a/w'" >"$T/a.out" 2>/dev/null
	diff "$T/native.out" "$T/a.out"
	shim b bash -c "reads '$T/b/w'" >"$T/b.out" 2>/dev/null
	cat "$T/b.out"
	if ! diff "$T/native.out" "$T/b.out"; then
		false
	fi
	# Changes made on b travel back to a.
	shim b "$H/sc_calls" xattr fremove "$T/b/w/f" user.p
	shim b "$H/sc_calls" xattr fset "$T/b/w/g" user.b changed
	[ "$(shim a "$H/sc_calls" xattr list "$T/a/w/f")" = "$(printf 'user.f\nuser.l\n(2)')" ]
	[ "$(shim a "$H/sc_calls" xattr get "$T/a/w/g" user.b)" = changed ]
}

@test "remove() of a file and an empty directory on a fresh host reaches the storage; a full directory stays" {
	shim a bash -c "cd '$T/a/w' && echo f > f && mkdir e full && echo x > full/x"
	run shim b "$H/sc_calls" remove "$T/b/w/f"
	[ "$output" = ok ]
	run shim b "$H/sc_calls" remove "$T/b/w/e"
	[ "$output" = ok ]
	run shim b "$H/sc_calls" remove "$T/b/w/full"
	echo "full: $output"
	[ "$(echo "$output" | head -1)" = "ERR ENOTEMPTY" ]
	run shim b "$H/sc_calls" remove "$T/b/w/missing"
	[ "$(echo "$output" | head -1)" = "ERR ENOENT" ]
	# The storage has them no more (a host with an empty cache lists it).
	[ "$(shim c ls -A "$T/c/w")" = full ]
	[ "$(shim c cat "$T/c/w/full/x")" = x ]
	run shim a cat "$T/a/w/f"
	[ "$status" -ne 0 ]
	# The writing host's listing drops them too (attr_timeout=0).
	run shim a ls -A "$T/a/w"
	[ "$output" = full ]
}

@test "fdopendir and readdir on a fresh host list what the other host made, with storage inode numbers" {
	local d
	for d in "$T/native" "$T/a/w"; do
		shim a bash -c "cd '$d' && mkdir dir dir/sub && for i in \$(seq 1 30); do echo \$i > dir/f\$i; done && ln -s f1 dir/lnk && mkfifo dir/fifo"
	done
	"$H/sc_calls" fdopendir "$T/native/dir" >"$T/native.out"
	shim b "$H/sc_calls" fdopendir "$T/b/w/dir" >"$T/b.out"
	diff "$T/native.out" "$T/b.out"
	[ "$(wc -l <"$T/b.out")" -eq 33 ]
	# The inode numbers are the storage's: the same on both hosts.
	[ "$(shim b stat -c %i "$T/b/w/dir/f7")" = "$(shim a stat -c %i "$T/a/w/dir/f7")" ]
}

@test "freopen and fdopen write files whose data reaches another host" {
	shim a "$H/sc_calls" freopen "$T/a/w/fr" "through freopen"
	shim a "$H/sc_calls" fdopen "$T/a/w/fd" "through fdopen"
	[ "$(shim b cat "$T/b/w/fr")" = "through freopen" ]
	[ "$(shim b cat "$T/b/w/fd")" = "through fdopen" ]
	# freopen of an existing file on the fresh host truncates and rewrites it.
	shim b "$H/sc_calls" freopen "$T/b/w/fd" "b"
	[ "$(shim a cat "$T/a/w/fd")" = b ]
}

@test "fdatasync, syncfs, fsync and sync_file_range commit to the storage while the file is still open (sync_on_close off)" {
	local how
	# Nothing else may push: no close push, pohmelfsd's timer far away.
	export POHMELFS_SYNC_ON_CLOSE=0 POHMELFS_SYNC_TIMEOUT=3600
	# sync_one HOW NAME [rw]: the file as another host sees it while the
	# writer holds it open after HOW.
	sync_one() {
		rm -f "$T/hold"
		shim a "$H/sc_calls" $1 "$T/a/w/$2" "data of $2" "$T/hold" $3 >"$T/$2.out" &
		for _ in $(seq 600); do grep -q synced "$T/$2.out" && break; sleep 0.1; done
		grep -q synced "$T/$2.out"
		run shim b cat "$T/b/w/$2"
		touch "$T/hold"
		wait
		echo "$1 $3: $status $output"
	}
	for how in fdatasync syncfs fsync sync_file_range; do
		sync_one $how $how-rw rw
		[ "$output" = "data of $how-rw" ]
	done
	for how in fdatasync syncfs fsync sync_file_range; do
		sync_one $how $how-wo
		[ "$output" = "data of $how-wo" ]
	done
}

@test "copy_file_range and sendfile into a tracked file: the data reaches another host" {
	head -c 300000 /dev/urandom >"$T/src"
	shim a "$H/sc_calls" copy_file_range "$T/src" "$T/a/w/cfr"
	shim a "$H/sc_calls" sendfile "$T/src" "$T/a/w/sf"
	# Into an existing file on a fresh host: replaced, the size unchanged.
	head -c 300000 /dev/urandom >"$T/src2"
	shim b "$H/sc_calls" copy_file_range "$T/src2" "$T/b/w/sf"
	shim b cmp "$T/src" "$T/b/w/cfr"
	shim a cmp "$T/src2" "$T/a/w/sf"
	shim c cmp "$T/src2" "$T/c/w/sf"
}

@test "mkstemp, mkostemp, mkstemps, mkdtemp with TMPDIR under the prefix: in the storage; tmpfile leaves nothing there" {
	shim a mkdir -p "$T/a/w/tmp"
	run env TMPDIR="$T/a/w/tmp" LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/a" POHMELFS_CACHE_DIR="$T/a-state" \
		POHMELFS_HOST_ID=a timeout 120 "$H/sc_calls" temps
	echo "$output"
	echo "$output" | grep -q '^tmpfile ok$'
	echo "$output" | grep -E '^(stemp|otemp|stemps)\.' | sort >"$T/files"
	[ "$(wc -l <"$T/files")" -eq 3 ]
	grep -q '^stemps\.......\.sfx$' "$T/files"
	dtemp=$(echo "$output" | grep '^dtemp\.......\/$')
	# Another host finds each file with its own name as content, mode 0600.
	while read -r n; do
		[ "$(shim b cat "$T/b/w/tmp/$n")" = "$n" ]
		[ "$(shim b stat -c %a "$T/b/w/tmp/$n")" = 600 ]
	done <"$T/files"
	# ... and exactly these names plus the mkdtemp directory with its
	# file: tmpfile left nothing in the storage.
	(cat "$T/files"; echo "$dtemp"; echo "${dtemp}inside") | sort >"$T/expected"
	shim b bash -c "cd '$T/b/w/tmp' && find . -mindepth 1 -type d -printf '%P/\n' -o -printf '%P\n'" | sort >"$T/b.list"
	diff "$T/expected" "$T/b.list"
	[ "$(shim b stat -c %a "$T/b/w/tmp/$dtemp")" = 700 ]
}

@test "statfs, statvfs, fstatfs, fstatvfs and df on the prefix: f_bavail never above the local disk's" {
	# DESIGN §2: the cluster's figures where known, f_bavail = min(local,
	# cluster).  The nodes keep their data on the disk of the prefix, so
	# neither may be above what the local disk has.
	shim a bash -c "mkdir -p '$T/a/w/d'"
	native_blocks=$("$H/sc_calls" statfs "$T/native" | awk '$1 == "statfs" { print $2 }')
	native_avail=$("$H/sc_calls" statfs "$T/native" | awk '$1 == "statfs" { print $3 }')
	margin=$((native_blocks / 50))
	for h in a b; do
		run shim $h "$H/sc_calls" statfs "$T/$h/w/d"
		echo "$h: $output"
		[ "$status" -eq 0 ]
		[ "$(echo "$output" | wc -l)" -eq 6 ]
		echo "$output" | while read -r call blocks avail; do
			[ "$blocks" -gt 0 ] && [ "$avail" -gt 0 ] || exit 1
			[ "$avail" -le $((native_avail + margin)) ] || exit 1
			[ "$avail" -le "$blocks" ] || exit 1
		done
	done
	# df reports the prefix's file system, its available space within the
	# same bound.
	run shim b df -P -B1 "$T/b/w/d"
	echo "$output"
	[ "$status" -eq 0 ]
	avail=$(echo "$output" | awk 'NR == 2 { print $4 }')
	[ "$avail" -gt 0 ]
	[ "$avail" -le $((native_avail + margin)) ]
}

@test "errno of failing calls with the storage on equals the native errno (the writing host and a fresh host)" {
	OUT=$(mktemp -d /dev/shm/sc-calls.XXXXXX)
	[ "$(stat -c %d "$OUT")" != "$(stat -c %d "$T")" ] || skip "/dev/shm is on the same file system as the test directory"
	touch "$OUT/o"
	mkdir "$T/native/r"
	"$H/sc_errno" setup "$T/native/r"
	"$H/sc_errno" run "$T/native/r" "$OUT" >"$T/native.out"
	shim a bash -c "mkdir '$T/a/w/r' && '$H/sc_errno' setup '$T/a/w/r'"
	shim a "$H/sc_errno" run "$T/a/w/r" "$OUT" >"$T/a.out"
	diff "$T/native.out" "$T/a.out"
	shim b "$H/sc_errno" run "$T/b/w/r" "$OUT" >"$T/b.out"
	diff "$T/native.out" "$T/b.out"
	# Every errno the brief names is in the battery.
	for e in ENOENT EEXIST ENOTDIR EISDIR ENOTEMPTY ENAMETOOLONG ELOOP EXDEV; do
		grep -q " $e\$" "$T/native.out"
	done
	# Nothing failed halfway: the storage holds the fixture unchanged.
	[ -z "$(ls "$OUT" | grep -v '^o$')" ]
	[ "$(shim c bash -c "cd '$T/c/w/r' && ls -A | tr '\n' ' '; cat f; ls -A d")" = "$(printf 'd e f l1 l2 f\nx')" ]
}

# eacces_setup: $U with a plain directory and two hosts' prefixes and
# caches, all owned by the unprivileged user; nobody and ushim HOST run a
# command as that user (under the shim as HOST).
eacces_setup() {
	[ "$(id -u)" = 0 ] || skip "needs root to switch to an unprivileged user"
	unpriv_paths
	UH=$UB/tests/helpers
	U=$(mktemp -d /tmp/sc-calls-u.XXXXXX)
	chmod 755 "$U"
	mkdir -p "$U/native/r" "$U/c" "$U/c-state" "$U/d" "$U/d-state"
	chown -R 65534:65534 "$U"
	nobody "$UH/sc_errno" setup-eacces "$U/native/r"
	nobody "$UH/sc_errno" eacces "$U/native/r" >"$T/native.out"
	[ "$(grep -c ' EACCES$' "$T/native.out")" -eq 10 ]
	# w was made by root: the stored owner decides, so let the user in.
	shim a chmod 777 "$T/a/w"
	ushim c bash -c "mkdir -p '$U/c/w/r' && '$UH/sc_errno' setup-eacces '$U/c/w/r'"
}
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
ushim() {
	local h=$1
	shift
	nobody env HOME="$U" XDG_CONFIG_HOME= LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$U/$h" \
		POHMELFS_CACHE_DIR="$U/$h-state" POHMELFS_HOST_ID="$h" timeout -k 5 120 "$@"
}

@test "EACCES as an unprivileged user on the writing host: the native errno, and the storage loses nothing" {
	eacces_setup
	ushim c "$UH/sc_errno" eacces "$U/c/w/r" >"$T/c.out"
	cat "$T/c.out"
	# Whatever failed locally is not done in the storage either: a host
	# with an empty cache still finds ro/f and no ro/new, ro/n, moved.
	run ushim d bash -c "cd '$U/d/w/r' && ls -A . ro"
	echo "$output"
	[ "$output" = "$(printf '.:\nno\nro\n\nro:\nf')" ]
	diff "$T/native.out" "$T/c.out"
}

@test "EACCES as an unprivileged user on a host that has fetched nothing: the native errno, nothing changed" {
	eacces_setup
	ushim d "$UH/sc_errno" eacces "$U/d/w/r" >"$T/d.out"
	cat "$T/d.out"
	if ! diff "$T/native.out" "$T/d.out"; then
		false
	fi
}
