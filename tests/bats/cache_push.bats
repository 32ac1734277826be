#!/usr/bin/env bats
# cache_push.bats — what a push sends and when (issue 22 item 12): only the
# chunks that changed, once per write session of an open fd (ftruncate and
# munmap are changes of a writer still open, not pushes of their own), and
# at once where the program asks for durability (fsync, msync MS_SYNC).
# A 3-group cluster, host a writes, fresh hosts read (lib/hosts).

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts push
	export POHMELFS_ATTR_TIMEOUT=0
	CHUNK=1048576
	SIZE=4500000	# 5 chunks: 4 whole and a short last one
	head -c $SIZE /dev/urandom >"$T/want"
	shim a cp "$T/want" "$T/a/f"
}

teardown() {
	stop_daemons
	cluster_stop
}

# counter NAME FILE: the value of NAME in a stats=1 table (FILE: its stderr).
counter() {
	awk -v n="$1" '$1 == n { print $2 }' "$2"
}

@test "a 1-byte change, ftruncates and a mapping of one open fd: one push of one chunk; a fresh cache reads it all" {
	# The same change to the expected copy, without the shim.
	python3 -c "
import os
fd = os.open('$T/want', os.O_RDWR)
os.pwrite(fd, b'Z', 2100000)
os.pwrite(fd, b'Y', 2 * $CHUNK + 100)
os.close(fd)"
	# Written through one fd: a byte, two ftruncates that leave the size as
	# it was, a byte through a shared mapping unmapped before the close.
	# All in chunk 2.
	shim a env POHMELFS_STATS=1 python3 -c "
import mmap, os
fd = os.open('$T/a/f', os.O_RDWR)
os.pwrite(fd, b'Z', 2100000)
os.ftruncate(fd, $SIZE + 1)
os.ftruncate(fd, $SIZE)
m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=2 * $CHUNK)
m[100:101] = b'Y'
m.close()
os.close(fd)" 2>"$T/stats"
	cat "$T/stats"
	[ "$(counter pushes "$T/stats")" -eq 1 ]
	[ "$(counter bytes_pushed "$T/stats")" -eq $CHUNK ]
	shim c cat "$T/c/f" >"$T/got"
	cmp "$T/got" "$T/want"
}

@test "fsync after an ftruncate and msync(MS_SYNC) of a mapping push at once: fresh hosts see each before the writer closes" {
	shim a python3 -c "
import mmap, os, subprocess
def fresh(h):
    env = dict(os.environ, POHMELFS_PREFIX='$T/' + h, POHMELFS_CACHE_DIR='$T/' + h + '-state',
               POHMELFS_HOST_ID=h)
    return subprocess.run(['cat', '$T/' + h + '/f'], env=env, stdout=subprocess.PIPE,
                          check=True).stdout
fd = os.open('$T/a/f', os.O_RDWR)
os.ftruncate(fd, 10)
os.fsync(fd)
got = fresh('b')
assert got == open('$T/want', 'rb').read(10), got
m = mmap.mmap(fd, 10, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[3:4] = b'Q'
m.flush()			# msync(MS_SYNC)
got = fresh('c')
want = bytearray(open('$T/want', 'rb').read(10))
want[3:4] = b'Q'
assert got == bytes(want), got
m.close()
os.close(fd)"
}

@test "an ftruncate of an open fd travels with its close: a fresh host sees the size after it" {
	shim a python3 -c "
import os
fd = os.open('$T/a/f', os.O_WRONLY)
os.ftruncate(fd, 1000)
os.close(fd)"
	run shim c stat -c %s "$T/c/f"
	[ "$output" = 1000 ]
	shim c cat "$T/c/f" | cmp - <(head -c 1000 "$T/want")
}

@test "sync_on_close with two writing fds of one file: the first close pushes nothing, the last one pushes both writes once" {
	# Each written byte differs from the random one it replaces (a byte
	# written over its equal changes no chunk: 1 run in 128 failed).
	python3 -c "
import os
fd = os.open('$T/want', os.O_RDWR)
for off in (10, 3 * $CHUNK + 10):
    os.pwrite(fd, bytes([os.pread(fd, 1, off)[0] ^ 0xff]), off)
os.close(fd)"
	shim a env POHMELFS_STATS=1 python3 -c "
import os
want = open('$T/want', 'rb').read()
fd1 = os.open('$T/a/f', os.O_RDWR)
fd2 = os.dup(fd1)
os.pwrite(fd2, want[10:11], 10)
os.close(fd2)
os.pwrite(fd1, want[3 * $CHUNK + 10:3 * $CHUNK + 11], 3 * $CHUNK + 10)
os.close(fd1)" 2>"$T/stats" || { cat "$T/stats"; false; }
	cat "$T/stats"
	# Chunks 0 and 3 in one push (a push at the first close would make two).
	[ "$(counter pushes "$T/stats")" -eq 1 ]
	[ "$(counter bytes_pushed "$T/stats")" -eq $((2 * CHUNK)) ]
	shim c cat "$T/c/f" >"$T/got"
	cmp "$T/got" "$T/want"
}

@test "a shared mapping written after its fd's close and never unmapped: the exit pushes it" {
	shim a "$B/tests/helpers/map_exit" "$T/a/f" "MAPPED"
	printf 'MAPPED' | dd of="$T/want" conv=notrunc status=none
	cmp "$T/a/f" "$T/want"
	shim c cat "$T/c/f" >"$T/got"
	cmp "$T/got" "$T/want"
}

# Session 19 review of the racy-record settle: the kernel moves a file's
# times at a shared mapping's write fault only; a later store to the same
# dirty page moves nothing.  A sync that settled the racy record between
# the two (the fd closed, the mapping still live) must not hide the store.
@test "a store through a still-dirty mapping after pohmelfs sync read the file reaches a fresh cache" {
	printf 'aaaaaaaa' >"$T/small"
	shim a cp "$T/small" "$T/a/m"
	# ctypes' mmap: Python's mmap module keeps a dup of the fd, and the
	# close below must be the last writer fd's.
	shim a python3 -c "
import ctypes, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
fd = os.open('$T/a/m', os.O_RDWR)
m = libc.mmap(None, 8, 3, 1, fd, 0)     # PROT_READ|PROT_WRITE, MAP_SHARED
ctypes.memmove(m, b'B', 1)              # the write fault: ctime moves
os.close(fd)                            # the close push records it (racy)
time.sleep(0.1)
subprocess.run(['$B/pohmelfs', 'sync'], check=True)   # reads it: the same bytes
time.sleep(0.05)
ctypes.memmove(m + 1, b'C', 1)          # no fault: no time moves
libc.munmap(m, 8)
"
	shim a "$B/pohmelfs" sync
	run shim c cat "$T/c/m"
	echo "host c reads: $output; host a has: $(cat "$T/a/m")"
	[ "$output" = "BCaaaaaa" ]
}

# The same store when the close push came a tick (20 ms) after the fault:
# its record is not racy, and only a comparison of the bytes can see the
# store.  The munmap pushes m1, the exit pushes m2 (never unmapped).
@test "stores through still-dirty mappings after a non-racy close push: the munmap and the exit push them" {
	printf 'aaaaaaaa' >"$T/small"
	shim a cp "$T/small" "$T/a/m1"
	shim a cp "$T/small" "$T/a/m2"
	shim a python3 -c "
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
maps = []
for name in ('m1', 'm2'):
    fd = os.open('$T/a/' + name, os.O_RDWR)
    m = libc.mmap(None, 8, 3, 1, fd, 0)     # PROT_READ|PROT_WRITE, MAP_SHARED
    ctypes.memmove(m, b'B', 1)              # the write fault: ctime moves
    time.sleep(0.05)                        # past the racy tick
    os.close(fd)                            # the close push: a record not racy
    maps.append(m)
for m in maps:
    ctypes.memmove(m + 1, b'C', 1)          # no fault: no time moves
libc.munmap(maps[0], 8)
"
	run shim c cat "$T/c/m1"
	echo "m1: host c reads $output; host a has $(cat "$T/a/m1")"
	[ "$output" = "BCaaaaaa" ]
	run shim c cat "$T/c/m2"
	echo "m2: host c reads $output; host a has $(cat "$T/a/m2")"
	[ "$output" = "BCaaaaaa" ]
}
