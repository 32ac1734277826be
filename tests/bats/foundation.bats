#!/usr/bin/env bats
# foundation.bats — symbol hygiene and the private allocator (issue 3).

setup() {
	load lib/common
	[ -f "$LIB" ]
}

# Names the version script should export: exactly the entries of syms.def.
expected_exports() {
	sed -n 's/^SYM[VX]\{0,1\}([^,]*, *\([A-Za-z0-9_]*\),.*/\1/p' \
		"$BATS_TEST_DIRNAME/../../preload/syms.def" | sort
}

@test "the library exports exactly the interposed libc names" {
	got=$(nm -D --defined-only "$LIB" | awk '{print $3}' | sort)
	want=$(expected_exports)
	[ -n "$want" ]
	if [ "$got" != "$want" ]; then
		diff <(echo "$want") <(echo "$got") || true
		return 1
	fi
}

@test "no allocator or internal symbol is exported" {
	run sh -c "nm -D --defined-only '$LIB' | awk '{print \$3}' | \
		grep -E '^(malloc|free|calloc|realloc|posix_memalign|aligned_alloc|memalign|valloc|malloc_usable_size|mallocx|je_|pohm_|__libc_)'"
	[ "$status" -ne 0 ]
	[ -z "$output" ]
}

@test "the private jemalloc is linked in and hidden (no libjemalloc.so dependency)" {
	[ -z "${SAN:-}" ] || skip "sanitizer builds use the sanitizer's allocator"
	run ldd "$LIB"
	[ "$status" -eq 0 ]
	[[ "$output" != *jemalloc* ]]
	# jemalloc's entry points are present as local symbols.
	nm "$LIB" | grep -qE ' t (je_)?mallocx$'
}

@test "every wrapper resolves its real function (nothing logs ENOSYS)" {
	run env LD_PRELOAD="$PRELOAD" POHMELFS_LOG_LEVEL=debug /bin/true
	[ "$status" -eq 0 ]
	[[ "$output" != *ENOSYS* ]]
}

@test "a malloc-heavy python program runs unchanged under the shim" {
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	run env LD_PRELOAD="$PRELOAD" python3 -c '
import os, threading
def work(n):
    d = {}
    for i in range(200000):
        d[i] = bytes(i % 512)
        if i % 3 == 0: del d[i]
    s = sum(len(v) for v in d.values())
    assert s > 0
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("ok", os.stat("/").st_ino)'
	[ "$status" -eq 0 ]
	[[ "$output" == ok* ]]
}

@test "sort of a large input under the shim equals sort without it" {
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	in=$BATS_TEST_TMPDIR/in
	seq 1 300000 | awk '{print ($1 * 7919) % 300007}' >"$in"
	want=$(sort -n "$in" | md5sum)
	got=$(LD_PRELOAD="$PRELOAD" sort -S 64M --parallel=2 -n "$in" | md5sum)
	[ "$want" = "$got" ]
}

@test "errno and results of passthrough calls match the kernel" {
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	d=$BATS_TEST_TMPDIR/d
	run env LD_PRELOAD="$PRELOAD" sh -c "mkdir '$d' && mkdir '$d' 2>&1; rmdir '$d' && rmdir '$d' 2>&1; ls '$d/none' 2>&1; true"
	[[ "$output" == *"File exists"* ]]
	[[ "$output" == *"No such file or directory"* ]]
	[ ! -e "$d" ]
}

# Dependencies the host process must never load (issue #4: no libelliptics,
# no libcurl, no OpenSSL): the lines of `ldd FILE` that name one.
forbidden_deps() {
	ldd "$1" | grep -Ei 'lib(ssl|crypto|curl|elliptics)[^ /]*\.so' || true
}

@test "the library and the tools load no ssl, crypto, curl or elliptics library" {
	for f in "$LIB" "$B/pohmelfs" "$B/pohmelfsd"; do
		[ -f "$f" ]
		run ldd "$f"
		[ "$status" -eq 0 ]
		[[ $output == *libc.so* ]]	# ldd really listed the dependencies
		run forbidden_deps "$f"
		[ -z "$output" ]
	done
	# The check sees such a dependency where there is one.
	[ -x /usr/bin/curl ] || skip "no /usr/bin/curl to check the check against"
	run forbidden_deps /usr/bin/curl
	[[ $output == *libcurl* ]]
}
