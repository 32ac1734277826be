#!/usr/bin/env bats
# preload_errno.bats — the shim returns what libc returns and leaves errno
# as the kernel sets it (issue 8), and makes rename/link across the prefix
# boundary fail EXDEV exactly as the kernel does across two mounts.

setup() {
	# These test the interposition layer alone: the storage hooks stay out.
	export POHMELFS_TEST_PASSTHROUGH=1
	POHM_TEST_BUILD=1	# the library that reads the switch
	load lib/common
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	H=$B/tests/helpers
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/plain" "$T/pfx/in" "$T/away" "$T/out"
	P=$T/pfx
}

shim() { env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" "$@"; }

# probe MODE: the battery without the shim, under the prefix, and outside it.
probe() {
	"$H/errno_probe" "$T/plain" "$1" >"$T/want"
	shim "$H/errno_probe" "$T/pfx/in" "$1" >"$T/under"
	shim "$H/errno_probe" "$T/out" "$1" >"$T/outside"
	[ "$(wc -l <"$T/want")" -gt 100 ]
	diff "$T/want" "$T/under"
	diff "$T/want" "$T/outside"
}

@test "errno probe: the same results and errno with and without the shim (absolute paths)" {
	probe abs
}

@test "errno probe: the same with relative paths from a cwd inside and outside the prefix" {
	probe rel
}

# pyerr OP SRC DST: os.OP(SRC, DST) under the shim, printing OK or the errno name.
pyerr() {
	shim python3 -c '
import errno, os, sys
try:
    getattr(os, sys.argv[1])(sys.argv[2], sys.argv[3]); print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])' "$@"
}

@test "rename across the prefix boundary fails EXDEV, both ways" {
	echo a >"$P/f"; echo b >"$T/out/g"
	[ "$(pyerr rename "$P/f" "$T/out/f2")" = EXDEV ]
	[ "$(pyerr rename "$T/out/g" "$P/g2")" = EXDEV ]
	[ "$(pyerr replace "$P/f" "$T/out/g")" = EXDEV ]
	[ -f "$P/f" ]
	[ -f "$T/out/g" ]
	[ ! -e "$T/out/f2" ]
	[ ! -e "$P/g2" ]
	# inside the prefix and outside it, rename works as usual
	[ "$(pyerr rename "$P/f" "$P/f3")" = OK ]
	[ "$(pyerr rename "$T/out/g" "$T/out/g3")" = OK ]
}

@test "across the boundary the kernel's own errors come first, as across two mounts" {
	echo a >"$P/f"; echo b >"$T/out/g"
	# missing parent directory: ENOENT; missing source in an existing one: EXDEV
	[ "$(pyerr rename "$P/nodir/x" "$T/out/x")" = ENOENT ]
	[ "$(pyerr rename "$P/f" "$T/out/nodir/x")" = ENOENT ]
	[ "$(pyerr rename "$P/missing" "$T/out/x")" = EXDEV ]
	[ "$(pyerr rename "$P/f/x" "$T/out/x")" = ENOTDIR ]
	# link: the source must exist, the target must not
	[ "$(pyerr link "$P/missing" "$T/out/x")" = ENOENT ]
	[ "$(pyerr link "$P/f" "$T/out/g")" = EEXIST ]
	[ "$(pyerr link "$P/f" "$T/out/new")" = EXDEV ]
	[ "$(pyerr link "$T/out/g" "$P/new")" = EXDEV ]
	[ ! -e "$T/out/new" ]
	[ ! -e "$P/new" ]
}

@test "the EXDEV emulation matches a real cross-device rename and link" {
	shm=/dev/shm
	[ -d "$shm" ] && [ -w "$shm" ] || skip "no writable /dev/shm"
	[ "$(stat -c %d "$shm")" != "$(stat -c %d "$T")" ] || skip "/dev/shm is on the test's file system"
	d=$(mktemp -d "$shm/pohm.XXXXXX")
	echo a >"$d/f"; echo a >"$P/f"; echo b >"$T/out/g"
	real() { python3 -c '
import errno, os, sys
try:
    getattr(os, sys.argv[1])(sys.argv[2], sys.argv[3]); print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])' "$@"; }
	for c in "rename f out/x" "rename missing out/x" "rename nodir/x out/x" "rename f out/nodir/x" \
		 "link missing out/x" "link f out/g" "link f out/new" "rename f/x out/x"; do
		set -- $c
		want=$(real "$1" "$d/$2" "$T/${3}")
		got=$(pyerr "$1" "$P/$2" "$T/${3}")
		echo "$c: kernel $want, shim $got"
		[ "$want" = "$got" ]
	done
	rm -rf "$d"
}

@test "mv out of and into the prefix falls back to copy and works" {
	mkdir -p "$P/dir/sub"; echo one >"$P/dir/sub/a"; echo two >"$P/file"
	run shim mv "$P/file" "$T/out/file"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/out/file")" = two ]
	[ ! -e "$P/file" ]
	run shim mv "$P/dir" "$T/out/dir"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/out/dir/sub/a")" = one ]
	[ ! -e "$P/dir" ]
	run shim mv "$T/out/dir" "$P/back"
	[ "$status" -eq 0 ]
	[ "$(cat "$P/back/sub/a")" = one ]
	[ ! -e "$T/out/dir" ]
	run shim cp -l "$P/back/sub/a" "$T/out/hard"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cross-device"* ]]
}
