#!/usr/bin/env bats
# cache_hosts_walk.bats — a create's walk to its parent directory on one
# host after another host renamed the directory away (review s15,
# doc/notes-s15-walkfix.md): the walk table (core/cache/walkfresh.c) and
# the walk itself (cache.c walk_parent_dir) must not put the new file into
# the local directory the old name still holds.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts walkh
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "an ancestor renamed on another host: a create below it fails after attr_timeout" {
	shim b mkdir -p "$T/b/d/s"
	# One process on host a, attr_timeout=3: d validated (stat) between
	# ta and tb, then after the rename on b, not before tb + 0.5 s, a
	# create in d/s (d from its record, s looked up now), then at tb +
	# 3.3 s another create: d/s's own record is fresh (~2.8 s), d's is not
	# (3.3 s).  The times are the process's own clock, not sleeps after
	# the rename, which a slow shimmed mv under TSan and load pushes past
	# the timeout (cache_hosts_openwalk 1 failed so,
	# doc/notes-s19-ciflake.md).  Exit 7: the rename took so long that no
	# create inside the window was left to try.
	shim_bg a env POHMELFS_ATTR_TIMEOUT=3 bash -c '
		ta=${EPOCHREALTIME/[.,]/}
		[ -d "$1/d" ] || exit 9
		tb=${EPOCHREALTIME/[.,]/}
		: >"$2/checked"
		while [ ! -e "$2/moved" ]; do sleep 0.02; done
		while ((${EPOCHREALTIME/[.,]/} - tb < 500000)); do sleep 0.05; done
		((${EPOCHREALTIME/[.,]/} - ta < 2500000)) || exit 7
		: >"$1/d/s/f1" || exit 8
		while ((${EPOCHREALTIME/[.,]/} - tb < 3300000)); do sleep 0.05; done
		: >"$1/d/s/f2" 2>/dev/null && exit 1
		exit 0' sh "$T/a" "$T"
	pid=$SHIM_BG_PID
	# The rename only after a's check (a's start under TSan is slow).
	while [ ! -e "$T/checked" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
	shim b mv "$T/b/d" "$T/b/d2"
	touch "$T/moved"
	st=0
	wait "$pid" || st=$?
	echo "status $st"
	shim c ls "$T/c/d2/s"
	[ "$st" -eq 0 ]
	run shim c stat "$T/c/d2/s/f2"
	[ "$status" -ne 0 ]
}

@test "a directory renamed on another host: a new process's create by its old path fails" {
	export POHMELFS_ATTR_TIMEOUT=2
	shim b mkdir -p "$T/b/d/s"
	shim a stat "$T/a/d" >/dev/null	# d validated now
	sleep 1
	shim a stat "$T/a/d/s" >/dev/null	# d from its record, s validated now
	shim b mv "$T/b/d" "$T/b/d2"
	sleep 1.1
	# A new process (no walk table): d's record is stale (> 2 s), d/s's
	# fresh (~1.2 s); the walk finds d gone from the storage, and the
	# local d/s, still there, is the stored d2/s.
	run shim a bash -c ': >"$1/d/s/f1"' sh "$T/a"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file or directory"* ]]
	[ ! -e "$T/a/d/s/f1" ]
	run shim c stat "$T/c/d2/s/f1"
	[ "$status" -ne 0 ]
	# A listing of the root on a moves the local d to d2 (list_drop_gone).
	run shim a ls "$T/a"
	echo "$output"
	[ "$output" = d2 ]
}

# link_after_creates N: one process on host a makes N files in d/s, then d
# becomes a symlink to the same directory under another name (d_old),
# without the shim, and the process creates d/s/f1: that create must fail
# and make nothing in d_old/s.
link_after_creates() {
	export POHMELFS_ATTR_TIMEOUT=30
	shim a mkdir -p "$T/a/d/s"
	run shim a bash -c '
		for i in $(seq "$2"); do : >"$1/d/s/f0.$i" || exit 9; done
		env -u LD_PRELOAD mv "$1/d" "$1/d_old" || exit 7
		env -u LD_PRELOAD ln -s d_old "$1/d" || exit 7
		: >"$1/d/s/f1" && exit 1
		exit 0' sh "$T/a" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$T/a/d_old/s/f1" ]
	[ -e "$T/a/d_old/s/f0.$1" ]
}

@test "an ancestor replaced here by a symlink: the walk table does not follow it" {
	# One create walks d/s (the walk table holds d and d/s); a fresh
	# process's walk refuses d after the switch (the stored d is a
	# directory, the local name a link) and so must this one's.
	link_after_creates 1
	run shim a bash -c ': >"$1/d/s/f2"' sh "$T/a"
	[ "$status" -ne 0 ]
}

@test "an ancestor replaced here by a symlink after creates in the directory: the kept parent is not taken" {
	# Three creates: the first walks, the second takes d/s from the walk
	# table, the third keeps its parent fd for the next create
	# (walkfresh.c, the kept look, issue 23); the create after the switch
	# must see that d/s is no longer reached as spelled.
	link_after_creates 3
}

# opens_until_full N PATH: one process on host a (RLIMIT_NOFILE 760) makes
# N files in d/s, then opens PATH until EMFILE; prints the opens counted.
opens_until_full() {
	shim a python3 -c '
import os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (760, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for i in range(int(sys.argv[2])):
    open("%s/d/s/f0.%d" % (sys.argv[1], i), "w").close()
n = 0
try:
    while True:
        os.open(sys.argv[3], os.O_RDONLY)
        n += 1
except OSError as e:
    assert e.errno == 24, e
print(n)' "$T/a" "$1" "$2"
}

@test "a program near RLIMIT_NOFILE: the kept parent is given back at its EMFILE" {
	export POHMELFS_ATTR_TIMEOUT=30
	shim a mkdir -p "$T/a/d/s"
	shim a bash -c ': >"$1"' sh "$T/a/d/s/r"
	for p in "$T/a/d/s/r" /dev/null; do
		one=$(opens_until_full 1 "$p")
		three=$(opens_until_full 3 "$p")
		echo "$p: after 1 create $one, after 3 (parent kept) $three"
		[ "$one" -gt 600 ]
		[ "$three" -eq "$one" ]
	done
}

@test "RLIMIT_NOFILE below the internal fds: a create's parent is moved high once, not at every create" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -o /dev/null /bin/true 2>/dev/null || skip "ptrace is refused here"
	export POHMELFS_ATTR_TIMEOUT=30
	shim a mkdir -p "$T/a/d/s"
	shim a strace -y -qq -o "$T/tr" python3 -c '
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (600, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for i in range(6):
    open("%s/d/s/f%d" % (sys.argv[1], i), "w").close()' "$T/a"
	[ -e "$T/a/d/s/f5" ]
	n=$(grep -cE '/d/s>, F_DUPFD_CLOEXEC, 700\) = -1' "$T/tr" || true)
	echo "failed moves of d/s: $n"
	[ "$n" -eq 1 ]
}

# A create in the kept parent is opened there by name with O_EXCL
# (procopen.c, issue 23); anything at the name already makes it the
# host's own open by path, as before.  new_files DIR: one python process
# makes f1..f4 in DIR (f0 held open, f2 closed before f3), then ln5, a
# dangling symlink to ../out5 made beforehand, and f6 over a file made
# beforehand, and closes them all; prints the fd numbers its opens got.
new_files() {
	local d=$1
	shift
	"$@" python3 -c '
import os, sys
d = sys.argv[1]
w = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
got = [os.open(d + "/f0", w, 0o644)]
for i in range(1, 5):
    got.append(os.open("%s/f%d" % (d, i), w, 0o644))
    os.write(got[-1], b"x%d" % i)
    if i == 2:
        os.close(got[-1])
for n in ("ln5", "f6"):
    fd = os.open(d + "/" + n, w, 0o644)
    got.append(fd)
    os.write(fd, n.encode())
    os.close(fd)
for fd in got[:2] + got[3:5]:
    os.close(fd)
print(" ".join(map(str, got)))' "$d"
}

@test "creates in the kept parent: the fd numbers, a symlink and a file at the name as on local disk" {
	export POHMELFS_ATTR_TIMEOUT=30
	shim a mkdir -p "$T/a/d/s"
	mkdir -p "$T/l/d/s"
	for base in "$T/a/d" "$T/l/d"; do
		ln -s ../out5 "$base/s/ln5"
		echo old >"$base/s/f6"
	done
	shim a cat "$T/a/d/s/f6" >/dev/null
	local disk shimmed
	disk=$(new_files "$T/l/d/s" env)
	shimmed=$(new_files "$T/a/d/s" shim a)
	echo "disk: $disk; shim: $shimmed"
	[ "$shimmed" = "$disk" ]
	# The symlink was followed (its target made), as the kernel does.
	[ -L "$T/a/d/s/ln5" ]
	[ "$(cat "$T/a/d/out5")" = ln5 ]
	[ "$(cat "$T/a/d/s/f6")" = f6 ]
	# The new files are in the storage: host b reads them.
	mkdir -p "$T/b"
	[ "$(shim b cat "$T/b/d/s/f4")" = x4 ]
	[ "$(shim b cat "$T/b/d/s/f6")" = f6 ]
}
