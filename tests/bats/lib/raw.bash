# raw.bash — helpers for tests/bats/raw_*.bats, the `pohmelfs` raw tool
# (put/get/lookup/del/status) against local pohmelfs-node clusters.
#
#   load lib/cluster
#   load lib/raw
#   p put KEY < file        run the tool ($POHMELFS_BIN) with the cluster's env
#   timed CMD...            run CMD; sets ELAPSED_MS and ELAPSED_RC
#
# POHMELFS_BIN is build/pohmelfs (make builds it); a tree built without it
# (an old build directory) gets it compiled here once per test file from
# tools/pohmelfs/*.c and the build's libpohmcore.a.

raw_find_bin() {
	local top out san=
	top=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	if [ -x "$POHM_BUILD/pohmelfs" ]; then
		POHMELFS_BIN=$POHM_BUILD/pohmelfs
		return 0
	fi
	out=${BATS_FILE_TMPDIR:-$BATS_TMPDIR}/pohmelfs
	if [ ! -x "$out" ]; then
		case ${SAN:-} in
		address) san="-fsanitize=address -fno-omit-frame-pointer" ;;
		undefined) san="-fsanitize=undefined" ;;
		thread) san="-fsanitize=thread" ;;
		esac
		# shellcheck disable=SC2086
		${CC:-cc} -D_GNU_SOURCE $(for d in "$top"/core/*/; do printf -- "-I%s " "$d"; done) -std=gnu11 -O2 -g $san \
			"$top"/tools/pohmelfs/*.c "$POHM_BUILD/libpohmcore.a" -pthread -o "$out" || return 1
	fi
	POHMELFS_BIN=$out
}
raw_find_bin
export POHMELFS_BIN

# Short timeouts so failure cases stay fast; tests override where needed.
export POHMELFS_READ_WAIT_TIMEOUT=${POHMELFS_READ_WAIT_TIMEOUT:-3}
export POHMELFS_WRITE_WAIT_TIMEOUT=${POHMELFS_WRITE_WAIT_TIMEOUT:-3}
# No config file from the machine running the tests.
export POHMELFS_CONFIG=/dev/null

p() { "$POHMELFS_BIN" "$@"; }

timed() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	ELAPSED_RC=$?
	t1=$(date +%s%N)
	ELAPSED_MS=$(((t1 - t0) / 1000000))
}
