#!/usr/bin/env bats
# ux_run.bats — pohmelfs-run (options, --shell, errors, where it finds the
# library) and `make install` into a temporary DESTDIR, run from there
# (issue 9).

setup() {
	load lib/common
	T=$BATS_TEST_TMPDIR
	RUN=$B/pohmelfs-run
	unset $(env | sed -n 's/^\(POHMELFS_[A-Z_]*\)=.*/\1/p')
	unset LD_PRELOAD
}

# The library of a sanitizer build cannot be preloaded alone into
# uninstrumented programs (the runtime must come first): such tests skip.
need_plain_build() {
	[ -z "${SAN:-}" ] || skip "pohmelfs-run preloads the $SAN build alone into uninstrumented programs"
}

@test "pohmelfs-run: -o sets POHMELFS_<KEY>, server= repeats, a boolean key alone means 1" {
	need_plain_build
	run env POHMELFS_SERVERS=10.0.0.1:1 "$RUN" -o groups=1:2 -o server=127.0.0.1:1025 \
		-o server=127.0.0.1:1026:2 -o noreadcsum -o fsid=a=b -o prefix= -- \
		sh -c 'env | grep -E "^(POHMELFS_|LD_PRELOAD=)" | sort'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "LD_PRELOAD=$LIB
POHMELFS_FSID=a=b
POHMELFS_GROUPS=1:2
POHMELFS_NOREADCSUM=1
POHMELFS_PREFIX=
POHMELFS_SERVERS=127.0.0.1:1025,127.0.0.1:1026:2" ]
}

@test "pohmelfs-run: -c sets POHMELFS_CONFIG, made absolute; the command's status passes through" {
	need_plain_build
	echo "groups = 1" >"$T/my.conf"
	cd "$T"
	run "$RUN" -c my.conf -- sh -c 'echo "$POHMELFS_CONFIG"; exit 7'
	[ "$status" -eq 7 ]
	[ "$output" = "$T/my.conf" ]
	# Without "--" the first non-option starts the command.
	run "$RUN" -c "$T/my.conf" printenv POHMELFS_CONFIG
	[ "$status" -eq 0 ]
	[ "$output" = "$T/my.conf" ]
}

@test "pohmelfs-run: a bad option fails with one line and status 2, running nothing" {
	need_plain_build	# a mistaken parse would run touch with the sanitizer build alone
	for args in "-o bogus=1" "-o grups=1:2" "-o fsid" "-o" "-c" "-c $T/missing.conf" \
		    "--frobnicate" "-o =1"; do
		# shellcheck disable=SC2086
		run "$RUN" $args -- touch "$T/ran"
		echo "$args -> $status: $output"
		[ "$status" -eq 2 ]
		[[ ${lines[-1]} == "pohmelfs-run: "* ]]
		[ ! -e "$T/ran" ]
	done
	run "$RUN" -o bogus=1 true
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *'-o bogus=1: unknown key "bogus", expected one of pohmelfs.conf(5): server fsid groups'* ]]
	run "$RUN" -o fsid true
	[ "$output" = "pohmelfs-run: -o fsid: expected key=value (only boolean keys may stand alone)" ]
	run "$RUN" -c "$T/missing.conf" true
	[ "$output" = "pohmelfs-run: -c $T/missing.conf: no readable file of that name" ]
	# No command at all: usage.
	run "$RUN"
	[ "$status" -eq 2 ]
	[[ $output == *"usage: pohmelfs-run"* ]]
	run "$RUN" --help
	[ "$status" -eq 0 ]
	[[ $output == *"--shell"* ]]
}

@test "pohmelfs-run --shell runs \$SHELL with the library preloaded" {
	need_plain_build
	run env SHELL=/bin/sh "$RUN" -o fsid=shelltest --shell <<'EOF'
echo "preload=$LD_PRELOAD fsid=$POHMELFS_FSID"
grep -c libpohmelfs.so /proc/self/maps >/dev/null && echo "mapped in a child"
exit 3
EOF
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${lines[0]}" = "preload=$LIB fsid=shelltest" ]
	[ "${lines[1]}" = "mapped in a child" ]
	run env SHELL=/bin/sh "$RUN" --shell ls
	[ "$status" -eq 2 ]
	[[ $output == *"--shell takes no command"* ]]
}

@test "pohmelfs-run keeps another preloaded library after ours and never adds ours twice" {
	need_plain_build
	run env LD_PRELOAD="$LIB" "$RUN" -- printenv LD_PRELOAD
	[ "$output" = "$LIB" ]
	run "$RUN" -- "$RUN" -- printenv LD_PRELOAD
	[ "$output" = "$LIB" ]
	# A library that is not there is only a warning of ld.so; ours comes first.
	run env LD_PRELOAD=/nonexistent/libx.so "$RUN" -- printenv LD_PRELOAD
	[[ $output == *"$LIB /nonexistent/libx.so" ]]
}

@test "pohmelfs-run knows exactly the keys of core/config/config.c, and pohmelfs.conf(5) documents each" {
	config_keys=$(sed -n 's/^[[:space:]]*{ "\([a-z_]*\)", T_[A-Z]*,.*/\1/p' "$TOP/core/config/config.c" | sort)
	[ "$(echo "$config_keys" | wc -l)" -ge 23 ]
	run_keys=$(sed -n '/^KEYS="/,/"$/p' "$TOP/tools/pohmelfs-run.sh" | tr -d '"' |
		sed 's/^KEYS=//' | tr ' ' '\n' | grep . | sort)
	[ "$config_keys" = "$run_keys" ]
	for k in $config_keys; do
		grep -q "^\.BI $k=" "$TOP/man/pohmelfs.conf.5" || { echo "$k missing from pohmelfs.conf.5"; false; }
		grep -q "^#\{0,1\}$k *=" "$TOP/conf/pohmelfs.conf" || { echo "$k missing from conf/pohmelfs.conf"; false; }
	done
}

@test "make install into a DESTDIR, then run the installed tools from there; make uninstall" {
	command -v make >/dev/null || skip "make is not installed"
	d=$T/dest
	# The existing build, no rebuild (-o all); SAN selects the build directory.
	run make -C "$TOP" -s -o all install DESTDIR="$d" PREFIX=/usr/local ${SAN:+SAN=$SAN}
	echo "$output"
	[ "$status" -eq 0 ]
	for f in lib/libpohmelfs.so bin/pohmelfs bin/pohmelfsd bin/pohmelfs-run bin/pohmelfs-node \
		 bin/pohmelfs-cluster share/man/man1/pohmelfs.1 share/man/man1/pohmelfs-run.1 \
		 share/man/man5/pohmelfs.conf.5 share/man/man8/pohmelfsd.8 \
		 share/doc/libpohmelfs/pohmelfs.conf; do
		[ -f "$d/usr/local/$f" ] || { echo "missing $f"; false; }
	done
	# The installed script names the installed library directory (without DESTDIR)...
	grep -qx 'POHMELFS_LIBDIR=/usr/local/lib' "$d/usr/local/bin/pohmelfs-run"
	# ...and, staged under DESTDIR, finds the library beside it in ../lib.
	if [ -z "${SAN:-}" ]; then
		run "$d/usr/local/bin/pohmelfs-run" -- sh -c 'echo "$LD_PRELOAD"; grep -c libpohmelfs.so /proc/self/maps'
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "$d/usr/local/lib/libpohmelfs.so" ]
		[ "${lines[1]}" -ge 1 ]
		run "$d/usr/local/bin/pohmelfs-run" -- true
		[ "$status" -eq 0 ]
		# A copy of the script elsewhere falls back to the configured directory.
		sed "s|^POHMELFS_LIBDIR=.*|POHMELFS_LIBDIR=$d/usr/local/lib|" \
			"$d/usr/local/bin/pohmelfs-run" >"$T/elsewhere-run"
		chmod +x "$T/elsewhere-run"
		run "$T/elsewhere-run" -- printenv LD_PRELOAD
		[ "$output" = "$d/usr/local/lib/libpohmelfs.so" ]
	fi
	run "$d/usr/local/bin/pohmelfs" --help
	[ "$status" -eq 0 ]
	[[ $output == "usage: pohmelfs"* ]]
	run env POHMELFS_CONFIG=/dev/null POHMELFS_PREFIX="$T/p" HOME="$T" "$d/usr/local/bin/pohmelfs" stats
	[ "$status" -eq 0 ]
	if command -v man >/dev/null; then
		run env MANPATH="$d/usr/local/share/man" MANWIDTH=80 man --warnings pohmelfs.conf
		[ "$status" -eq 0 ]
		[[ $output == *"configuration of libpohmelfs"* ]]
	fi
	run make -C "$TOP" -s uninstall DESTDIR="$d" PREFIX=/usr/local ${SAN:+SAN=$SAN}
	[ "$status" -eq 0 ]
	[ -z "$(find "$d" -type f)" ]
}
