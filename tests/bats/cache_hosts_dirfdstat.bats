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
