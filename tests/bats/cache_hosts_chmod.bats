#!/usr/bin/env bats
# cache_hosts_chmod.bats — a directory's chmod whose store fails (online:
# the nodes answer, but refuse the write).  A local directory keeps u+rwx
# for the cache (stored 0500 is 0700 here), so no later push can tell a
# chmod u+rwx from the cache's own difference (push.c push_attrs_diff,
# dir_times_follow): the change is stored at the call or the call fails
# (core/cache/chattr.c chattr_unsent; doc/notes-s16-noticed.md item 4).

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts chmodh
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "a directory's chmod u+rwx the storage refuses fails, and every host keeps the stored mode" {
	shim a mkdir "$T/a/d"
	shim a chmod 500 "$T/a/d"
	[ "$(shim c stat -c %a "$T/c/d")" = 500 ]
	cluster_fault all refuse-writes
	run shim a chmod 700 "$T/a/d"
	echo "chmod: $status $output"
	cluster_clear_faults all
	[ "$status" -ne 0 ]
	# Nothing left to send later: a's next push of d (its fsync) keeps 500.
	shim a sync "$T/a/d"
	sleep 1.1
	[ "$(shim a stat -c %a "$T/a/d")" = 500 ]
	[ "$(shim c stat -c %a "$T/c/d")" = 500 ]
	# The same chmod with the storage answering: stored, seen everywhere.
	shim a chmod 700 "$T/a/d"
	sleep 1.1
	[ "$(shim c stat -c %a "$T/c/d")" = 700 ]
}

@test "a directory's chmod the storage refuses fails, and its local mode goes back: no later push sends it" {
	shim a mkdir "$T/a/e"
	shim a chmod 755 "$T/a/e"
	cluster_fault all refuse-writes
	run shim a chmod 750 "$T/a/e"
	echo "chmod: $status $output"
	cluster_clear_faults all
	[ "$status" -ne 0 ]
	[ "$(stat -c %a "$T/a/e")" = 755 ]	# the local directory, without the shim
	shim a sync "$T/a/e"
	sleep 1.1
	[ "$(shim c stat -c %a "$T/c/e")" = 755 ]
}
