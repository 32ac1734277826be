#!/usr/bin/env bats
# cache_attrs_times.bats — issue 18 case 4: times and link counts travel.
# A 3-group cluster, hosts a and b, and a fresh third cache c that must see
# every acknowledged change.  sync_on_close=1, attr_timeout=1 (as found).
# The setuid part of case 4 is in cache_refresh.bats.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts times
}

teardown() {
	stop_daemons
	cluster_stop
}

# mt HOST NAME [FMT]: NAME's stat(1) fields (default the mtime) as HOST sees it.
mt() {
	shim "$1" stat -c "${3:-%Y}" "$T/$1/$2"
}

@test "case 4: an empty file carries its stored mtime (touch -d is pushed)" {
	old=$(date -d 2001-01-01 +%s)
	shim a sh -c ': >"$1/e" && touch -d 2001-01-01 "$1/e"' sh "$T/a"
	[ "$(mt a e)" = "$old" ]
	[ "$(mt c e)" = "$old" ]
	[ "$(mt b e)" = "$old" ]
	# ... also when b already holds it: a clean copy takes the new time.
	shim a touch -d 2002-02-02 "$T/a/e"
	sleep 1.3
	[ "$(mt b e)" = "$(date -d 2002-02-02 +%s)" ]
}

@test "case 4: an atime set by utime is kept here and travels" {
	at=$(date -d 2001-01-01 +%s)
	shim a sh -c 'echo data >"$1/f" && mkdir "$1/d" && touch -a -d 2001-01-01 "$1/f" "$1/d"' sh "$T/a"
	[ "$(mt a f %X)" = "$at" ]
	[ "$(mt a d %X)" = "$at" ]
	[ "$(mt c f %X)" = "$at" ]
	[ "$(mt c d %X)" = "$at" ]
}

@test "case 4: CPython's test_os UtimeTests pass in a prefix directory" {
	python3 -c 'import test.test_os' 2>/dev/null || skip "no python3 test package"
	run env TMPDIR="$T/a" LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state \
		POHMELFS_HOST_ID=a timeout 120 python3 -m test test_os -m '*Utime*'
	echo "$output" | tail -20
	[ "$status" -eq 0 ]
}

@test "case 4: a directory's mtime moves when entries are added or removed (every host)" {
	shim a mkdir "$T/a/d"
	m0=$(mt a d)
	sleep 1.2	# past the lag window (decision 0015) and attr_timeout
	shim a touch "$T/a/d/f"
	m1=$(mt a d)
	[ "$m1" -gt "$m0" ]
	[ "$(mt c d)" = "$m1" ]
	sleep 1.2
	shim b rm "$T/b/d/f"
	m2=$(mt b d)
	[ "$m2" -gt "$m1" ]
	sleep 1.2	# a's view is revalidated after attr_timeout
	[ "$(mt a d)" = "$m2" ]
	# The prefix root's too, with its ctime.
	r0=$(mt a . %Z)
	sleep 1.2
	shim b mkdir "$T/b/sub"
	sleep 1.2
	[ "$(mt a . %Z)" -gt "$r0" ]
	[ "$(mt c . %Y)" = "$(mt b . %Y)" ]
}

@test "case 4: the prefix root's link count follows another host's mkdir with attr_timeout=0" {
	export POHMELFS_ATTR_TIMEOUT=0
	n0=$(mt a . %h)
	shim b mkdir "$T/b/x" "$T/b/y"
	[ "$(mt a . %h)" = $((n0 + 2)) ]
	shim b rmdir "$T/b/x"
	[ "$(mt a . %h)" = $((n0 + 1)) ]
	[ "$(mt c . %h)" = $((n0 + 1)) ]
}
