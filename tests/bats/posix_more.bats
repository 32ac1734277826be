#!/usr/bin/env bats
# posix_more.bats — issue 22 items 4, 7, 8, 9 and 11: the kernel's answers
# natively and under the shim must be identical (errno and resulting tree),
# and a fresh second cache must see exactly the tree the kernel left.
#
#   - sockets made by bind() exist only locally: every path walk, link and
#     rename through or onto one answers as the kernel does (item 4);
#   - chmod/chown through a symlink to a directory changes the directory,
#     in the storage too (item 7);
#   - a non-root user's chmod and chgrp are stored, also on directories that
#     user's cache has no record of (item 8);
#   - open checks what the kernel checks: search on the parents and the
#     open mode's own bits, not read permission on the file (item 9);
#   - st_dev and the file system type agree with the local file system
#     (item 11).
# Runs as root; other users through setpriv, in a world-searchable
# directory (W, mode 0755) so uid 65534 reaches the prefix by its path.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to uid 65534"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	T=$(mktemp -d /tmp/pohm-more.XXXXXX)
	chmod 755 "$T"
	export POHMELFS_CONFIG=/dev/null POHMELFS_FSID=more-$RANDOM POHMELFS_ATTR_TIMEOUT=0
	export POHMELFS_SYNC_ON_CLOSE=1
	mkdir -p "$T/nat" "$T/a" "$T/b"
	chmod 755 "$T/nat" "$T/a" "$T/b"
	unpriv_paths
	write_driver
}

teardown() {
	stop_daemons
	cluster_stop
	rm -rf "$T" /var/tmp/pohmelfs-65534/"$(echo "$T" | tr / _)"_a 2>/dev/null
	true
}

# The driver: ops.py SCENARIO ROOT [AS] — makes the scenario's starting tree
# under ROOT (cwd ROOT), runs its operations printing each result (OK or the
# errno's name), then the tree.  Scenario "tree" prints the tree alone;
# "tree-nosock" leaves sockets out (they exist only locally).
write_driver() {
	cat >"$T/ops.py" <<'EOF'
import errno, os, socket, sys

def tree(root, socks=True):
    out = []
    for d, ds, fs in os.walk(root):
        for n in sorted(ds + fs):
            p = os.path.join(d, n)
            st = os.lstat(p)
            r = os.path.relpath(p, root)
            own = "%d:%d" % (st.st_uid, st.st_gid)
            if os.path.islink(p):
                out.append("%s l %s" % (r, os.readlink(p)))
            elif os.path.isdir(p):
                out.append("%s d %o %s" % (r, st.st_mode & 0o7777, own))
            elif (st.st_mode >> 12) == 0o14:
                if socks:
                    out.append("%s s %o %s" % (r, st.st_mode & 0o7777, own))
            else:
                try:
                    data = open(p, "rb").read() if os.path.isfile(p) else b""
                except OSError as e:
                    data = errno.errorcode[e.errno]
                out.append("%s %o %o %s %r" % (r, st.st_mode >> 12, st.st_mode & 0o7777, own, data))
    return sorted(out)

def bind(p):
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    s.close()

def opener(p, fl, mode=0o666):
    os.close(os.open(p, fl, mode))

def run(ops):
    for op in ops:
        fn = {"bind": bind, "open": opener}.get(op[0]) or getattr(os, op[0])
        try:
            fn(*op[1:])
            r = "OK"
        except OSError as e:
            r = errno.errorcode[e.errno]
        print(op[0], " ".join(str(x) for x in op[1:] if isinstance(x, str)), r)

scenario, root = sys.argv[1], sys.argv[2]
os.chdir(root)
os.umask(0o022)
if scenario in ("tree", "tree-nosock"):
    for line in tree(".", scenario == "tree"):
        print(line)
    sys.exit(0)
if scenario == "sockets":
    os.mkdir("d"); os.mkdir("e"); open("f", "w").write("F"); open("g", "w").write("G")
    open("h", "w").write("H")
    run([("bind", "s"), ("bind", "d/s2"), ("bind", "t"), ("bind", "u"),
         ("link", "s/x", "y"), ("link", "f", "s/x"), ("link", "f", "s"), ("link", "s", "s3"),
         ("rename", "f", "s/x"), ("rename", "s/x", "f2"), ("rename", "d", "s"),
         ("rename", "s", "d"), ("rename", "s", "e"), ("rename", "e", "t"),
         ("mkdir", "s"), ("mkdir", "s/x"), ("symlink", "x", "s"), ("symlink", "x", "s/x"),
         ("mkfifo", "s"), ("mknod", "s/x", 0o100600), ("unlink", "s/x"), ("rmdir", "s"),
         ("rmdir", "s/x"), ("open", "s/x", os.O_CREAT | os.O_WRONLY),
         ("open", "s", os.O_CREAT | os.O_WRONLY | os.O_EXCL), ("chmod", "s/x", 0o600),
         ("rename", "g", "t"), ("rename", "u", "h"), ("rename", "d/s2", "s4"),
         ("link", "s4", "e/s5"), ("unlink", "s3")])
elif scenario == "symdir":
    os.mkdir("d"); os.mkdir("d2"); os.symlink("d", "ld"); os.symlink("d2", "ld2")
    os.symlink("f", "lf"); open("f", "w").write("F")
    run([("chmod", "ld", 0o711), ("chown", "ld", 12, 34), ("chmod", "lf", 0o600),
         ("chown", "ld2", 56, 78), ("lchown", "ld2", 9, 9)])
elif scenario == "nobody":
    # root's directory "k" (0755) holds a bound socket: refused as the kernel does
    run([("rename", "k/s", "k/s2"), ("link", "k/s", "u/s3"), ("rename", "k/s", "u/s4"),
         ("unlink", "k/s"), ("link", "k/s/x", "u/y"), ("mkdir", "k/s/x")])
    # uid 65534 in its own directory "u" (root made it and chowned it)
    os.chdir("u")
    os.mkdir("m"); open("w", "w").write("W"); open("r", "w").write("R")
    os.mkdir("dd"); open("dd/x", "w").write("X")
    run([("chmod", "w", 0o277), ("open", "w", os.O_WRONLY), ("open", "w", os.O_RDONLY),
         ("chmod", "m", 0o600), ("open", "m", os.O_RDONLY), ("open", "m/z", os.O_RDONLY),
         ("chmod", "dd", 0o300), ("open", "dd/x", os.O_RDONLY), ("open", "dd/x", os.O_WRONLY),
         ("chmod", "dd", 0o700), ("chmod", "r", 0o4751), ("chown", "r", -1, 100),
         ("chown", "r", -1, 0), ("chmod", "dd/x", 0o640), ("chmod", ".", 0o751)])
print("--- tree")
for line in tree("."):
    print(line)
EOF
}

# compare SCENARIO [NOSOCK]: natively and under the shim the same results
# and trees; then a fresh cache (host b) sees the kernel's tree (without
# sockets when NOSOCK: bind makes nothing in the storage).
compare() {
	python3 "$T/ops.py" "$1" "$T/nat" >"$T/want"
	shim a python3 "$T/ops.py" "$1" "$T/a" >"$T/got"
	[ "$(grep -c . "$T/want")" -gt 5 ]
	diff -u "$T/want" "$T/got"
	fresh "${2:+-nosock}"
}

# fresh [-nosock]: host b's view is the tree the kernel left natively.
fresh() {
	(cd "$T/nat" && python3 "$T/ops.py" "tree$1" .) >"$T/want-tree"
	shim b python3 "$T/ops.py" "tree$1" "$T/b" >"$T/seen"
	diff -u "$T/want-tree" "$T/seen"
}

@test "sockets bound locally: link, rename and path walks through them answer as the kernel" {
	compare sockets nosock
	grep -qx 'link s/x y ENOTDIR' "$T/got"
	grep -qx 'rename d s ENOTDIR' "$T/got"
	grep -qx 'rename g t OK' "$T/got"
}

@test "chmod and chown through a symlink to a directory change the directory, stored too" {
	compare symdir
	grep -qx 'd d 711 12:34' "$T/want-tree"
}

# as_nobody ROOT [ENV...]: the "nobody" scenario as uid 65534 (groups 65534
# and 100) in ROOT/u, a directory root made and gave to that user.
as_nobody() {
	local root=$1
	shift
	setpriv --reuid=65534 --regid=65534 --groups=100 "$@" \
		/usr/bin/python3 "$T/ops.py" nobody "$root"
}

@test "another user: open checks what the kernel checks, chmod and chgrp are stored" {
	mkdir "$T/nat/u" "$T/nat/k" && chown 65534:65534 "$T/nat/u"
	shim a sh -c "mkdir '$T/a/u' '$T/a/k' && chown 65534:65534 '$T/a/u'"
	for r in nat a; do
		shim a python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('$T/$r/k/s')"
	done
	as_nobody "$T/nat" >"$T/want"
	as_nobody "$T/a" env LD_PRELOAD="$UPRELOAD" POHMELFS_PREFIX="$T/a" \
		POHMELFS_CACHE_DIR="$T/a-state" >"$T/got"
	diff -u "$T/want" "$T/got"
	grep -qx 'open w OK' "$T/got"
	grep -qx 'open m OK' "$T/got"
	grep -qx 'rename k/s k/s2 EACCES' "$T/got"
	fresh -nosock
	grep -q '^u/r 10 751 65534:100 ' "$T/seen"
	grep -qx 'u d 751 65534:65534' "$T/seen"
}

@test "st_dev and the file system type under the prefix: consistent for stat, statfs and the mount table" {
	shim a sh -c "mkdir '$T/a/d' && echo x >'$T/a/d/f'"
	real=$(realpath "$T/a")
	# one device for the whole prefix, the root included
	dev=$(shim a stat -c %d "$T/a/d/f")
	[ "$(shim a stat -c %d "$T/a/d")" = "$dev" ]
	[ "$(shim a stat -c %d "$T/a")" = "$dev" ]
	# statfs: the local file system's type; df and findmnt name it too (they
	# find the file system by st_dev in /proc/self/mountinfo: "-" before)
	want_type=$(df -PT "$T/a" | awk 'NR==2 {print $2}')
	[ "$(shim a stat -f -c %T "$T/a/d")" = "$(stat -f -c %T "$T/a")" ]
	run shim a df -PT "$T/a/d/f"
	echo "$output"
	[ "$(echo "$output" | awk 'NR==2 {print $2}')" = "$want_type" ]
	[ "$(echo "$output" | awk 'NR==2 {print $7}')" = "$real" ]
	[ "$(shim a findmnt -n -o TARGET,FSTYPE -T "$T/a/d/f" | tr -s ' ')" = "$real $want_type" ]
	maj=$(shim a python3 -c "import os; d=os.stat('$T/a/d/f').st_dev; print('%d:%d' % (os.major(d), os.minor(d)))")
	shim a cat /proc/self/mountinfo | grep " $maj " | grep " $real " >"$T/line"
	grep -q " - $want_type " "$T/line"
	shim a cat /proc/mounts | grep -q " $real $want_type "
	# outside the prefix nothing changes
	[ "$(shim a df -PT "$T" | awk 'NR==2 {print $7}')" = "$(df -PT "$T" | awk 'NR==2 {print $7}')" ]
	! grep -q " $real " /proc/self/mountinfo || false
}
