#!/usr/bin/env bats
# ux_build.bats — the Makefile as a new user meets it (issue 21): the
# README's first command `make deps demo` installs the dependencies before
# anything is built (a fake sudo stands in for apt), escalates with sudo only
# when it is not root, a library without its private jemalloc stops the
# build with a message naming the package, a missing jemalloc archive is
# remade with the library, and `make install` makes no empty directory.
# Nothing here runs apt or touches the tree's build directory.

setup() {
	load lib/common
	command -v make >/dev/null || skip "make is not installed"
	T=$BATS_TEST_TMPDIR
	PIC=$(ls /usr/lib/*/libjemalloc_pic.a /usr/lib/libjemalloc_pic.a 2>/dev/null | head -n 1)
}

# mk ARGS...: make in the tree, as a user would start it (no make above it).
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" "$@"; }

@test "the README's first command is 'make deps demo', without sudo; .ci/run runs its test command" {
	block=$(awk '/^```/ {n++; next} n == 1' "$TOP/README.md")
	first=$(sed -n 1p <<<"$block" | sed 's/ *#.*//')
	second=$(sed -n 2p <<<"$block" | sed 's/ *#.*//')
	[ "$first" = "make deps demo" ]
	# .ci/run: make deps, then exactly the README's test command.
	ci=$(grep -v '^#\|^set \|^cd \|^$' "$TOP/.ci/run")
	[ "$ci" = "make deps"$'\n'"$second" ]
}

@test "make deps uses sudo only when it is not root" {
	[ "$(id -u)" = 0 ] || skip "needs root to compare with another user"
	# The Makefile on stdin, from /: the other user need not reach the tree.
	run sh -c 'cd / && make -n -f - deps' <"$TOP/Makefile"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'apt-get install -y .*libjemalloc-dev.*' <<<"$output"
	! grep -q '^sudo ' <<<"$output" || false
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null || skip "setpriv cannot switch users here"
	run setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cd / && make -n -f - deps' <"$TOP/Makefile"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'sudo apt-get install -y .*libjemalloc-dev.*' <<<"$output"
}

@test "make deps GOAL: the install ends before the build starts, and the build sees what it installed" {
	[ -z "${SAN:-}" ] || skip "a sanitizer build has no private jemalloc"
	[ -n "$PIC" ] || skip "libjemalloc_pic.a is not installed"
	# A fake sudo: "apt-get install" takes a second, then libjemalloc_pic.a
	# exists (where JEMALLOC_PIC points), as after a real install.
	cat >"$T/fake-sudo" <<-EOF
	#!/bin/sh
	[ "\$1 \$2" = "apt-get install" ] || exit 0
	sleep 1
	cp "$PIC" "$T/pic.a"
	echo "fake install done"
	EOF
	chmod +x "$T/fake-sudo"
	run mk -j2 SUDO="$T/fake-sudo" B="$T/b" JEMALLOC_PIC="$T/pic.a" deps "$T/b/jemalloc_lazy.a"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$T/b/jemalloc_lazy.a" ]
	# The archive was made after the install had finished.
	inst=$(grep -n 'fake install done' <<<"$output" | cut -d: -f1)
	arch=$(grep -n 'ar rcs' <<<"$output" | head -n 1 | cut -d: -f1)
	[ -n "$inst" ]
	[ -n "$arch" ]
	[ "$inst" -lt "$arch" ]
}

@test "a library without its private jemalloc stops the build, naming the package" {
	[ -z "${SAN:-}" ] || skip "a sanitizer build has no private jemalloc"
	for pic in "" "$T/nowhere/libjemalloc_pic.a"; do
		t0=$(date +%s)
		run mk -j1 B="$T/b" JEMALLOC_PIC="$pic" "$T/b/libpohmelfs.so"
		echo "$output"
		[ "$status" -ne 0 ]
		[[ $output == *"libjemalloc_pic.a not found"* ]]
		[[ $output == *"install the package libjemalloc-dev"* ]]
		[ ! -e "$T/b/libpohmelfs.so" ]
		# It stops first, not after compiling everything.
		[ ! -d "$T/b/obj" ]
		echo "stopped after $(($(date +%s) - t0)) s"
	done
}

@test "a missing jemalloc archive is remade, and the library relinked with it" {
	[ -z "${SAN:-}" ] || skip "a sanitizer build has no private jemalloc"
	[ -f "$B/jemalloc_lazy.a" ] && [ -n "$PIC" ] || skip "no private jemalloc in this build"
	# A copy of the library's part of the build (times kept), without the archive.
	mkdir -p "$T/b/obj"
	cp -a "$B/obj/core" "$B/obj/preload" "$T/b/obj/"
	cp -a "$B/libpohmelfs.map" "$B/libpohmelfs.so" "$T/b/"
	# Newer than everything it is made from: only the missing archive is
	# a reason to remake it.
	touch "$T/b/libpohmelfs.so"
	run mk -n -j1 B="$T/b" "$T/b/libpohmelfs.so"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q 'ar rcs \.\./jemalloc_lazy\.a\.tmp' <<<"$output"
	grep -q -- "-shared -o $T/b/libpohmelfs.so.tmp .*$T/b/jemalloc_lazy.a" <<<"$output"
}

@test "make install makes no empty directory (no empty sbin)" {
	[ -f "$LIB" ] || skip "not built"
	d=$T/dest
	run mk -s -o all install DESTDIR="$d" PREFIX=/usr B="$B" ${SAN:+SAN=$SAN}
	echo "$output"
	[ "$status" -eq 0 ]
	[ -f "$d/usr/lib/libpohmelfs.so" ]
	[ -x "$d/usr/bin/pohmelfs" ]
	[ ! -e "$d/usr/sbin" ]
	empty=$(find "$d" -type d -empty)
	[ -z "$empty" ] || { echo "empty: $empty"; false; }
}
