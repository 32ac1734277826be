#!/usr/bin/env bats
# preload_access.bats — the access family on a host that has fetched
# nothing (the local files are mode-000 stubs) answers from the stored
# owner, group and mode with the kernel's rules, for an unprivileged user
# as natively (root's case is in shim_calls.bats).  Directories are not
# stubs (made locally by the user who lists them): not covered here.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to an unprivileged user"
	unpriv_paths
	cluster_start "$BATS_TEST_NAME" --groups 1 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=paccess-$RANDOM POHMELFS_ATTR_TIMEOUT=0
	U=$(mktemp -d /tmp/paccess-u.XXXXXX)
	chmod 755 "$U"
	mkdir -p "$T/a" "$U/native" "$U/c" "$U/c-state"
	chown 65534:65534 "$U/c" "$U/c-state"
}

teardown() {
	stop_daemons
	[ -n "${U:-}" ] && [ -f "$U/c-state/pohmelfsd.pid" ] && kill "$(cat "$U/c-state/pohmelfsd.pid")" 2>/dev/null
	cluster_stop
	[ -z "${U:-}" ] || rm -rf "$U"
}

nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# make_files DIR RUNNER: the fixture, made by root through RUNNER.
make_files() {
	$2 bash -c "cd '$1' && for m in 755 750 705 700 070 007 604 000; do echo x > f\$m; chmod \$m f\$m; done \
		&& chown 0:65534 f070 f750"
}

# probe DIR: each file and mode, as the unprivileged user.
probe() {
	nobody env "$@" python3 -c '
import os, sys
d = sys.argv[1]
for n in ["f755", "f750", "f705", "f700", "f070", "f007", "f604", "f000"]:
    for m, name in ((os.R_OK, "r"), (os.W_OK, "w"), (os.X_OK, "x"), (os.F_OK, "f")):
        print(n, name, os.access(os.path.join(d, n), m), os.access(os.path.join(d, n), m, effective_ids=True))
' "$DIR"
}

@test "access, faccessat(AT_EACCESS) as an unprivileged user on a fresh host: as natively" {
	shim a mkdir "$T/a/w"
	shim a chmod 755 "$T/a/w"
	make_files "$T/a/w" "env LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a"
	mkdir "$U/native/w"
	make_files "$U/native/w" env
	DIR=$U/native/w probe >"$T/native.out"
	# The fixture must tell the rules apart.
	grep -q "f700 x False" "$T/native.out"
	grep -q "f070 r True" "$T/native.out"
	DIR=$U/c/w probe HOME="$U" LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$U/c" \
		POHMELFS_CACHE_DIR="$U/c-state" POHMELFS_HOST_ID=c >"$T/c.out" 2>"$T/c.err" || true
	cat "$T/c.err"
	diff "$T/native.out" "$T/c.out"
}
