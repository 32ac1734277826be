#!/usr/bin/env bats
# cache_special.bats — FIFOs and device nodes made under the shim are typed
# inodes in the storage (DESIGN.md §2 "Special files"): another host sees
# them with their type, mode and rdev; sockets stay local.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	export POHMELFS_FSID=special-$RANDOM POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_ON_CLOSE=1
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/a" "$T/b"
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "mkfifo and mknod travel as typed inodes; the local call's errors stay native" {
	shim a mkfifo -m 0640 "$T/a/fifo"
	shim a python3 -c "import os; os.mknod('$T/a/plain', 0o600)"
	[ "$(stat -c %F "$T/a/fifo")" = "fifo" ]
	run shim b stat -c '%F %a %s' "$T/b/fifo" "$T/b/plain"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "fifo 640 0" ]
	[ "${lines[1]}" = "regular empty file 600 0" ]
	# Exists already: EEXIST, as natively, and nothing changes.
	run shim a mkfifo "$T/a/fifo"
	[ "$status" -ne 0 ]
	[[ "$output" == *"File exists"* ]]
	if [ "$(id -u)" = 0 ]; then
		shim a mknod -m 0600 "$T/a/null" c 1 3
		run shim b stat -c '%F %t:%T' "$T/b/null"
		[ "$output" = "character special file 1:3" ]
	fi
	# Without privilege it fails, and nothing is stored.
	run shim a setpriv --reuid=65534 --regid=65534 --clear-groups mknod "$T/a/dev2" c 1 3
	[ "$status" -ne 0 ]
	run shim b stat "$T/b/dev2"
	[ "$status" -ne 0 ]
}

@test "fchmod and futimens of a directory fd, and a symlink's own times, reach another host" {
	shim a python3 -c "
import os
os.mkdir('$T/a/y', 0o700)
fd = os.open('$T/a/y', os.O_RDONLY)
os.fchmod(fd, 0o751)
os.close(fd)
os.mkdir('$T/a/v')
os.chdir('$T/a/v')
fd = os.open('.', os.O_PATH | os.O_DIRECTORY)
os.utime('.', (1000000000, 1000000000), follow_symlinks=False)
os.close(fd)
os.symlink('target', '$T/a/l')
os.utime('$T/a/l', (1100000000, 1100000000), follow_symlinks=False)
"
	run shim b stat -c '%n %a %Y' "$T/b/y" "$T/b/v" "$T/b/l"
	echo "$output"
	[ "${lines[0]}" = "$T/b/y 751 $(stat -c %Y "$T/a/y")" ]
	[ "${lines[1]}" = "$T/b/v 755 1000000000" ]
	[ "${lines[2]}" = "$T/b/l 777 1100000000" ]
}
