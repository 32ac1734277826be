#!/usr/bin/env bats
# cache_hosts_rmdir.bats — a directory removed on another host (`rm -r`)
# goes from this host's local tree with its entries once this host looks
# (a listing of its parent, or a walk through it after attr_timeout):
# before session 16 only an empty one went, and the files below it stayed
# found here for good (doc/notes-s15-findls.md).  Nothing changed here is
# lost: such a file is kept as a conflict copy (DESIGN §1 "Conflicts").

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts rmdirh
}

teardown() {
	stop_daemons
	cluster_stop
}

# made HOST: b's tree d (f1, f3, s/f2), every file fetched by HOST.
made() {
	shim b mkdir -p "$T/b/d/s"
	shim b sh -c "echo one >'$T/b/d/f1'; echo two >'$T/b/d/s/f2'; echo three >'$T/b/d/f3'"
	shim "$1" cat "$T/$1/d/f1" "$T/$1/d/s/f2" "$T/$1/d/f3" >/dev/null
	[ -f "$T/$1/d/s/f2" ]
}

@test "a directory another host removed: a listing of its parent removes it here, a changed file kept as a conflict copy" {
	made a
	shim b rm -r "$T/b/d"
	# f3 changed here without the shim (as a program the shim does not
	# see would): dirty, not pushed.
	echo local >>"$T/a/d/f3"
	sleep 1.2
	run shim a ls "$T/a"
	[ "$status" -eq 0 ]
	[[ "$output" != *d* ]]
	[ ! -e "$T/a/d" ]
	run shim a stat "$T/a/d/s/f2"
	[ "$status" -ne 0 ]
	# The changed copy is in the storage, under a's conflict directory.
	run shim c sh -c "cat '$T/c/.pohmelfs-conflicts/a/'f3.*"
	echo "$output"
	[ "$output" = "three
local" ]
}

@test "a directory another host removed: a stat below it after attr_timeout finds nothing here" {
	made a
	shim b rm -r "$T/b/d"
	sleep 1.2
	run shim a stat "$T/a/d/s/f2"
	[ "$status" -ne 0 ]
	run shim a stat "$T/a/d/f1"
	[ "$status" -ne 0 ]
	[ ! -e "$T/a/d" ]
	# Nothing here was changed: no conflict copy.
	run shim c ls "$T/c/.pohmelfs-conflicts/a"
	[ "$status" -ne 0 ] || [ -z "$output" ]
}
