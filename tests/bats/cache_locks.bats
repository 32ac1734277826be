#!/usr/bin/env bats
# cache_locks.bats — POSIX locks survive pushes (DESIGN.md §2 "Never close
# a second fd at the wrong moment"): an sqlite database used by two
# processes under the shim, with a push of the database in the middle of a
# write transaction, inside the process that holds the lock.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	preload_ok || skip "LD_PRELOAD does not work here"
	command -v sqlite3 >/dev/null || skip "no sqlite3"
	python3 -c 'import sqlite3' 2>/dev/null || skip "no python3 sqlite3 module"
	cluster_start "$BATS_TEST_NAME" --groups 2 --nodes-per-group 1 --nosync
	export POHMELFS_FSID=locks-$RANDOM POHMELFS_ATTR_TIMEOUT=0 POHMELFS_SYNC_ON_CLOSE=0
	T=$BATS_TEST_TMPDIR
}

teardown() {
	stop_daemons
	cluster_stop
}

@test "sqlite: a push in the middle of a transaction keeps the writer's locks" {
	mkdir -p "$T/a"
	cat >"$T/writer.py" <<-EOF
	import os, sqlite3, subprocess, sys
	db = "$T/a/db.sqlite"
	con = sqlite3.connect(db, timeout=0, isolation_level=None)
	con.execute("create table t(x)")
	con.execute("insert into t values (1)")
	con.execute("begin immediate")          # the RESERVED lock: no other writer
	con.execute("insert into t values (2)")
	os.sync()                               # the shim pushes db.sqlite through sqlite's fd
	# Another process must still find the database locked.
	r = subprocess.run(["sqlite3", db, ".timeout 0", "insert into t values (3);"],
	                   capture_output=True, text=True)
	print("other writer:", r.returncode, r.stderr.strip())
	if r.returncode == 0 or "locked" not in r.stderr:
	    sys.exit("the lock was lost during the push")
	con.execute("commit")
	r = subprocess.run(["sqlite3", db, "insert into t values (3);"], capture_output=True, text=True)
	if r.returncode != 0:
	    sys.exit("other writer after commit: " + r.stderr)
	con.close()
	EOF
	run shim a python3 "$T/writer.py"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"other writer: "[1-9]*"locked"* ]]
	# Everything reaches the storage whole: another host reads 1, 2, 3.
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state "$B/pohmelfs" sync >/dev/null
	run shim b sqlite3 "$T/b/db.sqlite" "pragma integrity_check; select group_concat(x) from (select x from t order by x);"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "ok" ]
	[ "${lines[1]}" = "1,2,3" ]
}

@test "sqlite: the pushed mid-transaction copy is the last committed state" {
	mkdir -p "$T/a"
	cat >"$T/mid.py" <<-EOF
	import os, sqlite3, subprocess, sys
	db = "$T/a/db.sqlite"
	con = sqlite3.connect(db, timeout=0, isolation_level=None)
	con.execute("create table t(x)")
	con.execute("insert into t values (1)")
	con.execute("begin immediate")
	con.execute("insert into t values (2)")
	os.sync()
	sys.stdout.flush()
	# Host b reads the storage while the transaction is open.
	subprocess.run(["sh", "-c", os.environ["READER"]], check=True)
	con.execute("commit")
	con.close()
	EOF
	export READER="env LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/b POHMELFS_CACHE_DIR=$T/b-state POHMELFS_HOST_ID=b sqlite3 $T/b/db.sqlite 'select count(*) from t;' > $T/mid.out"
	run shim a python3 "$T/mid.py"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/mid.out")" = "1" ]
}
