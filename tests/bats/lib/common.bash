# common.bash — shared setup for bats tests: `load lib/common` in setup().
#
# Sets B (absolute build dir), LIB (the library) and PRELOAD, the value to
# give LD_PRELOAD so the library loads into uninstrumented programs: under a
# sanitizer build the sanitizer runtime must come first in the preload list.

B=${POHM_BUILD:-$BATS_TEST_DIRNAME/../../build}
B=$(cd "$B" && pwd)
SHIPPED_LIB=$B/libpohmelfs.so
# A bats file whose tests set a POHMELFS_TEST_* switch sets POHM_TEST_BUILD=1
# before loading this file: B is then build/test/, where the library,
# pohmelfs and pohmelfsd read the switches (the ones make install installs
# read none: core/sys/sys.h pohm_sys_test_switch) and everything else is a
# link into build/.  SHIPPED_LIB stays the installed form of the library.
[ "${POHM_TEST_BUILD:-}" != 1 ] || B=$B/test
LIB=$B/libpohmelfs.so
TOP=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

case ${SAN:-} in
address)
	PRELOAD="$(${CC:-cc} -print-file-name=libasan.so):$LIB"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0} ;;
undefined)
	PRELOAD="$(${CC:-cc} -print-file-name=libubsan.so):$LIB" ;;
thread)
	PRELOAD="$(${CC:-cc} -print-file-name=libtsan.so):$LIB"
	# Host programs' own signal handlers that spoil errno (rsync's) are
	# their business, not the library's: suppressed by module.
	export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$BATS_TEST_DIRNAME/lib/tsan.supp} ;;
*)
	PRELOAD=$LIB ;;
esac
PRELOAD_SHIPPED=${PRELOAD/"$LIB"/"$SHIPPED_LIB"}

# True when preloading into an arbitrary uninstrumented program works here.
preload_ok() {
	LD_PRELOAD=$PRELOAD /bin/true 2>/dev/null
}

# until_true SECONDS CMD...: poll CMD every 0.3 s; false if it never succeeds.
until_true() {
	local end=$(($(date +%s) + $1))
	shift
	while [ "$(date +%s)" -le "$end" ]; do
		"$@" && return 0
		sleep 0.3
	done
	return 1
}

# hold_renamer_lock STATE INO DIR: in the background, hold ino's byte of
# STATE/m.lock (an OFD lock, as a live renamer holds it) until DIR/release
# exists (60 s at most); returns once it is held (DIR/locked), false if it
# never was.  The caller touches DIR/release and waits for the job.
hold_renamer_lock() {
	local i
	python3 - "$1/m.lock" "$2" "$3/locked" "$3/release" <<'PY' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
start = int(sys.argv[2], 16) & 0x3fffffffffffffff
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, start, 1, 0))
open(sys.argv[3], "w").close()
t0 = time.time()
while not os.path.exists(sys.argv[4]) and time.time() - t0 < 60:
    time.sleep(0.05)
PY
	for i in $(seq 100); do [ -e "$3/locked" ] && break; sleep 0.05; done
	[ -e "$3/locked" ]
}

# unpriv_paths: set UB and UPRELOAD, the build dir and the preload list as
# user 65534 (the tests' unprivileged user) can reach them.  A clone under a
# mode-0700 directory (mktemp -d, as CI makes it) is out of that user's
# reach: then the library, pohmelfsd (the library starts the one beside it),
# pohmelfs and the test helpers are copied once per build of the library
# into a world-readable directory under /tmp; making one removes the older
# copies of the same build dir, so at most one per build dir stays.
unpriv_paths() {
	local t
	UB=$B UPRELOAD=$PRELOAD
	setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$LIB" 2>/dev/null && return 0
	UB=/tmp/pohm-unpriv-$(stat -c %i "$B")-$(stat -c %Y "$LIB")
	if [ ! -d "$UB" ]; then
		t=$(mktemp -d /tmp/pohm-unpriv.XXXXXX) &&
			mkdir "$t/tests" && cp -a "$LIB" "$B/pohmelfs" "$B/pohmelfsd" "$t/" &&
			cp -a "$B/tests/helpers" "$t/tests/" && chmod -R a+rX "$t" &&
			mv -T "$t" "$UB" 2>/dev/null || rm -rf "$t"
		# the copies of this build dir's earlier libraries are garbage now
		for t in "${UB%-*}"-*; do
			[ "$t" = "$UB" ] || rm -rf "$t"
		done
	fi
	UPRELOAD=${PRELOAD/"$LIB"/"$UB/libpohmelfs.so"}
}

# long_tier: true in the long tier (tests/run with CI=true or LONG=1), where
# the scale and soak versions of tests run; `make check` alone is the main
# tier, which must stay short on 2 busy cores (issue 21), so a test that
# proves the same thing at a smaller size runs that size there.
long_tier() {
	[ "${CI:-}" = true ] || [ "${LONG:-}" = 1 ]
}

# long_only: skip this test outside the long tier.
long_only() {
	long_tier || skip "long tier only (CI=true or LONG=1)"
}
