#!/usr/bin/env bats
# cache_hosts_dirfdstat.bats — an lstat of a name below a dirfd (find -ls,
# fts, du: fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)), issue 23
# (doc/notes-s17-findfd.md).  The shim makes the host's own call first
# and hands its result to the walk as the walk's look at the name
# (core/mount procstat.c stat_base).  That result stands only when the
# walk answered the name from a fresh record; a name the walk changed (a
# file another host replaced, found after attr_timeout) is looked at
# again, or the caller would see the local file the walk just replaced.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts dirfdstat
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || skip "python3 is not installed"
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "a file another host replaced: an lstat through a dirfd shows the new file after attr_timeout" {
	shim b mkdir -p "$T/b/d"
	shim b sh -c "echo x >'$T/b/d/f'"
	# One process on a: f read (its data here: a regular local file, not
	# a stub whose attributes the overlay shows; kept open, so that the
	# stub replacing it cannot reuse its local inode number, which the
	# overlay would take for the new one's), its dirfd of d, f stat'ed
	# through it (the walk table holds d); b replaces f by a new file of 6
	# bytes; after attr_timeout the same process's lstat through the dirfd
	# must show the new file, the one host c sees.
	shim_bg a "$PY" -c "
import os, sys, time
old = open('$T/a/d/f')
old.read()
fd = os.open('$T/a/d', os.O_RDONLY | os.O_DIRECTORY)
for _ in range(2):
    st = os.stat('f', dir_fd=fd, follow_symlinks=False)
if st.st_size != 2:
    sys.exit('before: size %d' % st.st_size)
open('$T/go', 'w').close()
while not os.path.exists('$T/done'):
    time.sleep(0.05)
time.sleep(1.2)
st = os.stat('f', dir_fd=fd, follow_symlinks=False)
open('$T/after', 'w').write('%d %d\n' % (st.st_ino, st.st_size))"
	pid=$SHIM_BG_PID
	for _ in $(seq 100); do [ -e "$T/go" ] && break; sleep 0.1; done
	[ -e "$T/go" ]
	shim b sh -c "rm '$T/b/d/f' && echo hello >'$T/b/d/f'"
	touch "$T/done"
	wait "$pid"
	want=$(shim c "$PY" -c "
import os
st = os.lstat('$T/c/d/f')
print(st.st_ino, st.st_size)")
	echo "a: $(cat "$T/after"), c: $want"
	[ "$(cat "$T/after")" = "$want" ]
	[ "${want#* }" = 6 ]
}

# Review 2 of session 17, finding 1: the classifier's open of the dirfd's
# directory was held through the hook, and where the walk table does not
# hold the directory (after attr_timeout) the walk from the prefix root
# opened its own fds besides (EMFILE with two fds free); and that walk
# held a directory while it opened the next (EMFILE with one free, by
# path too).  The kernel's lstat needs no fd: with RLIMIT_NOFILE leaving
# exactly one free, an lstat by path and through a dirfd, one and two
# levels below the prefix root, must answer as with many.
@test "an lstat through a dirfd or by path after attr_timeout with one fd free: as the kernel's" {
	shim b mkdir -p "$T/b/d/e"
	shim b sh -c "echo x >'$T/b/d/f' && echo yy >'$T/b/d/e/g'"
	run shim a "$PY" -c "
import os, resource, time
top = os.open('$T/a', os.O_RDONLY | os.O_DIRECTORY)
fd = os.open('$T/a/d', os.O_RDONLY | os.O_DIRECTORY)
efd = os.open('$T/a/d/e', os.O_RDONLY | os.O_DIRECTORY)
for d, n in ((top, 'd'), (fd, 'f'), (efd, 'g')):
    os.stat(n, dir_fd=d, follow_symlinks=False)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
held = []
while True:
    try:
        held.append(os.open('/dev/null', os.O_RDONLY))
    except OSError:
        break
os.close(held.pop())
for d, n, p in ((fd, 'f', 'd/f'), (efd, 'g', 'd/e/g'), (top, 'd', 'd')):
    for how in ('path', 'dirfd'):
        time.sleep(1.2)
        try:
            if how == 'path':
                st = os.lstat('$T/a/' + p)
            else:
                st = os.stat(n, dir_fd=d, follow_symlinks=False)
            print(how, p, 'OK', 'dir' if p == 'd' else st.st_size)
        except OSError as e:
            print(how, p, e.strerror)
try:
    os.open('/dev/null', os.O_RDONLY)
    os.open('/dev/null', os.O_RDONLY)
    print('two fds free')
except OSError:
    pass
"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'path d/f OK 2' <<<"$output"
	grep -qx 'dirfd d/f OK 2' <<<"$output"
	grep -qx 'path d/e/g OK 3' <<<"$output"
	grep -qx 'dirfd d/e/g OK 3' <<<"$output"
	grep -qx 'dirfd d OK dir' <<<"$output"
	! grep -q 'two fds free' <<<"$output" || false
}

# Review 2 of session 17, finding 3: where openat2 is missing or filtered
# (ENOSYS, or a seccomp filter's EPERM), the classifier's check of a
# dirfd's name by openat2 fails on every stat below the dirfd, and the
# fstatat decides after it.  Once refused, it is not tried again: 20
# stats through a dirfd (the walk table holding the directory, within
# attr_timeout) make the classifier's one failed openat2, besides the
# walk's own look (one each, walkfresh.c) and the lstat by path's: 22,
# not 41 (measured: 41 before).
@test "openat2 refused (ENOSYS): the classifier tries it once, not once per stat through a dirfd" {
	command -v strace >/dev/null || skip "strace is not installed"
	export POHMELFS_ATTR_TIMEOUT=30
	shim b mkdir -p "$T/b/d"
	shim b sh -c "echo x >'$T/b/d/f'"
	shim a ls -l "$T/a/d" >/dev/null
	shim a strace -f -qq -o "$T/o2" -e trace=openat2 -e inject=openat2:error=ENOSYS "$PY" -c "
import os
fd = os.open('$T/a/d', os.O_RDONLY | os.O_DIRECTORY)
os.lstat('$T/a/d/f')
for _ in range(20):
    st = os.stat('f', dir_fd=fd, follow_symlinks=False)
    assert st.st_size == 2"
	n=$(grep -c 'openat2(' "$T/o2")
	echo "# openat2 calls for 20 stats: $n" >&3
	[ "$n" -le 23 ]
	[ "$n" -ge 1 ]
}

# Session 18 (doc/notes-s18-findls4.md): an lstat's classifier checks the
# dirfd by the kernel's name of it (readlink of /proc/self/fd/N) and, when
# that is the prefix root's name + the hint, the walk answers from the
# walk table with no fd.  A directory moved out of the prefix behind the
# shim's back (a plain mv) keeps its dirfd and its (dev, ino), and the
# walk table still holds it within attr_timeout: only the name tells that
# the dirfd is outside now, and a name outside is the kernel's alone (its
# local inode, no storage inode laid over).
@test "a directory moved out of the prefix behind the shim: an lstat through its dirfd is the kernel's" {
	mkdir -p "$T/out"
	POHMELFS_ATTR_TIMEOUT=30 shim a "$PY" -c "
import os, sys, subprocess
os.makedirs('$T/a/m/d')
open('$T/a/m/d/f', 'w').write('x')
fd = os.open('$T/a/m/d', os.O_RDONLY | os.O_DIRECTORY)
for _ in range(2):
    inside = os.stat('f', dir_fd=fd, follow_symlinks=False)
subprocess.check_call(['env', '-u', 'LD_PRELOAD', 'mv', '$T/a/m/d', '$T/out/d'])
via = os.stat('f', dir_fd=fd, follow_symlinks=False)
real = os.stat('$T/out/d/f', follow_symlinks=False)
print('inside', inside.st_ino, 'moved out: via the dirfd', via.st_ino, 'the kernel', real.st_ino)
sys.exit(0 if via.st_ino == real.st_ino else 1)"
}
