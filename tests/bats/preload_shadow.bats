#!/usr/bin/env bats
# preload_shadow.bats — the read-only shadow fds of preload/shadow.c follow
# the program's fd table: one per inode, kept while any fd of the program
# on the inode is open (dup, dup2, F_DUPFD, a second open), closed with the
# last; fsync through any of them commits; many write-only files at once;
# after exec an inherited write-only fd gets a shadow at its first push.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 1 --nodes-per-group 1 --nosync
	T=$BATS_TEST_TMPDIR
	export POHMELFS_FSID=pshadow-$RANDOM POHMELFS_ATTR_TIMEOUT=0
	mkdir -p "$T/a" "$T/b"
}

teardown() {
	stop_daemons
	cluster_stop
}

# Host b's view of file NAME.
b_cat() { shim b cat "$T/b/$1" 2>&1; }

@test "a shadow follows dup, dup2 and F_DUPFD and closes with the inode's last fd" {
	run shim a timeout 60 python3 - "$T/a/f" <<'PY'
import fcntl, os, sys
p = sys.argv[1]
def ours():
    # fds of the library on p (the program's own are below 100 here); by
    # the kernel's name: the shim's stat overlay changes st_dev/st_ino
    n = 0
    for e in os.listdir('/proc/self/fd'):
        try:
            if int(e) >= 700 and os.readlink('/proc/self/fd/' + e) == p:
                n += 1
        except OSError:
            pass
    return n
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
print("after open", ours())
os.write(fd, b"one\n")
d1 = os.dup(fd)
d2 = fcntl.fcntl(fd, fcntl.F_DUPFD, 50)
os.dup2(fd, 60)
os.close(fd)
os.fsync(d1)
print("after fsync", ours())
os.close(d1); os.close(d2)
print("one left", ours())
os.write(60, b"two\n")
os.fsync(60)
os.close(60)
print("all closed", ours())
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "after open 1
after fsync 1
one left 1
all closed 0" ]
	[ "$(b_cat f)" = "one
two" ]
}

@test "forty write-only files open at once: fsync of each commits it" {
	# Host b reads three of them while the writer still holds them open.
	run shim a timeout 120 python3 - "$T/a" "LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/b POHMELFS_CACHE_DIR=$T/b-state POHMELFS_HOST_ID=b cat $T/b/m0 $T/b/m17 $T/b/m39" <<'PY'
import os, subprocess, sys
d = sys.argv[1]
fds = [os.open("%s/m%d" % (d, i), os.O_WRONLY | os.O_CREAT, 0o644) for i in range(40)]
for i, fd in enumerate(fds):
    os.write(fd, b"file %d\n" % i)
    os.fsync(fd)
sys.stdout.write(subprocess.run(sys.argv[2], shell=True, capture_output=True, text=True).stdout)
for fd in fds:
    os.close(fd)
PY
	echo "$output"
	[ "$output" = "file 0
file 17
file 39" ]
}

@test "after exec, an inherited write-only fd is committed by fsync (shadow opened at the first push)" {
	# bash opens fd 3 write-only; python inherits it through exec, writes
	# and fsyncs it while it is still open (bash's exec pushed the empty
	# file already); host b reads the data before the close.
	shim a bash -c "exec 3>'$T/a/inh'; exec python3 -c '
import os, subprocess, sys
os.write(3, b\"inherited\\n\")
os.fsync(3)
sys.stdout.write(subprocess.run(sys.argv[1], shell=True, capture_output=True, text=True).stdout)
os.close(3)' \"LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/b POHMELFS_CACHE_DIR=$T/b-state POHMELFS_HOST_ID=b cat $T/b/inh\"" >"$T/out" 2>&1
	cat "$T/out"
	[ "$(cat "$T/out")" = inherited ]
}
