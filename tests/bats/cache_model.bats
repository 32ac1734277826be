#!/usr/bin/env bats
# cache_model.bats — issue 18's cases of acknowledged changes lost or hidden
# between hosts, each against a 3-group cluster with two caches (hosts a and
# b) and a fresh third cache (c) that must see every acknowledged change, or
# its conflict copy.  sync_on_close=1, attr_timeout=1, as the issue found
# them.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts model
}

teardown() {
	stop_daemons
	cluster_stop
}

# conflicts HOST: the names under HOST's .pohmelfs-conflicts (one a line).
conflicts() {
	shim "$1" find "$T/$1/.pohmelfs-conflicts" -type f 2>/dev/null | sort
}

# dirty_of HOST: the cache's dirty count, from `pohmelfs status --json`.
dirty_of() {
	POHMELFS_PREFIX=$T/$1 POHMELFS_CACHE_DIR=$T/$1-state POHMELFS_HOST_ID=$1 \
		"$B/pohmelfs" status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["cache"]["dirty"])'
}

@test "case 1: another host's append survives a rename's moved ctime (no silent adoption)" {
	shim a sh -c 'echo x >"$1/f.tmp" && mv "$1/f.tmp" "$1/f"' sh "$T/a"
	shim b sh -c 'echo b1 >>"$1/f"' sh "$T/b"
	sleep 2		# past attr_timeout: a's next open validates
	shim a sh -c 'echo a2 >>"$1/f"' sh "$T/a"
	run shim c cat "$T/c/f"
	echo "$output"
	[ "$status" -eq 0 ]
	if [ "$output" != "$(printf 'x\nb1\na2')" ]; then
		# Never b1 lost silently: then it is in a conflict copy.
		conflicts a
		[ -n "$(conflicts a)" ]
		shim a cat $(conflicts a) | grep -q b1
	fi
}

@test "case 1: the same after a hardlink made and removed on the first host" {
	shim a sh -c 'echo x >"$1/f" && ln "$1/f" "$1/f2" && rm "$1/f2"' sh "$T/a"
	shim b sh -c 'echo b1 >>"$1/f"' sh "$T/b"
	sleep 2
	shim a sh -c 'echo a2 >>"$1/f"' sh "$T/a"
	run shim c cat "$T/c/f"
	echo "$output"
	[ "$output" = "$(printf 'x\nb1\na2')" ]
}

@test "case 6: a file renamed into place (a lock file) is not reported dirty" {
	shim a sh -c 'cd "$1" && for n in HEAD config index; do
		echo "$n" >"$n.lock" && mv "$n.lock" "$n"; done && ln config config2' sh "$T/a"
	run dirty_of a
	echo "$output"
	[ "$output" = 0 ]
	# ... and the data did reach the storage.
	[ "$(shim c cat "$T/c/index")" = index ]
	[ "$(shim c cat "$T/c/config2")" = config ]
}

@test "case 6: after git clone (sync_on_close=1) status reports nothing dirty" {
	command -v git >/dev/null || skip "git is not installed"
	# A repository outside the prefix, cloned in twice (once from inside),
	# then looked at (git status rewrites the index).
	mkdir "$T/src"
	(cd "$T/src" && git init -q && for i in 1 2 3; do echo $i >f$i; done && git add . \
		&& git -c user.email=t@t -c user.name=t commit -qm one)
	shim a bash -e -c 'cd "$1" && git clone -q "$2" clone && git clone -q clone clone2 \
		&& cd clone && git status --porcelain && sleep 1.2 && git status --porcelain' \
		sh "$T/a" "$T/src"
	run dirty_of a
	echo "$output"
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a \
		"$B/pohmelfs" status 2>&1 | head -20
	[ "$output" = 0 ]
	[ "$(shim c cat "$T/c/clone2/f3")" = 3 ]
	[ "$(shim c cat "$T/c/clone/.git/HEAD")" = "$(cat "$T/a/clone/.git/HEAD")" ]
}

@test "case 1: a push of an unchanged copy never adopts a newer stored version" {
	# The ctime moves without the shim (chmod there and back), so the copy
	# looks changed; its bytes are the base's.  The push finds no changed
	# chunk; it must not record b's newer version as this copy's, or the
	# next local write overwrites b's change.
	shim a sh -c 'echo x >"$1/f"' sh "$T/a"
	chmod 600 "$T/a/f" && chmod 644 "$T/a/f"
	shim b sh -c 'echo b1 >>"$1/f"' sh "$T/b"
	POHMELFS_PREFIX=$T/a POHMELFS_CACHE_DIR=$T/a-state POHMELFS_HOST_ID=a "$B/pohmelfs" sync
	sleep 1.2	# past attr_timeout
	shim a sh -c 'echo a2 >>"$1/f"' sh "$T/a"
	run shim c cat "$T/c/f"
	echo "$output"
	[ "$output" = "$(printf 'x\nb1\na2')" ]
}

@test "case 5: after groups churn a cache never reads an acknowledged write as older or missing" {
	# The issue's churn with caches: v1 stored by a (all groups up); group 2
	# down; b overwrites k with v2 and creates fresh (both acknowledged by
	# groups 1 and 3); group 2 back, holding v1 and a root bucket without
	# fresh; group 1 down.  The namespace objects are CAS objects: with
	# groups 2 and 3 disagreeing they may fail with EIO (ARCHITECTURE §12,
	# amendment 2), never answer v1 or "no such file".  Once group 1 is back,
	# a fresh cache c and host a (v1 cached clean) read v2.
	shim a sh -c 'echo v1 >"$1/k"' sh "$T/a"
	[ "$(shim b cat "$T/b/k")" = v1 ]
	cluster_kill 2-1
	shim b sh -c 'echo v2 >"$1/k" && echo v2 >"$1/fresh"' sh "$T/b"
	cluster_start_node 2-1
	cluster_kill 1-1
	# Group 1 must stay down, not answered by whatever else listens on its
	# port (a foreign node says "absent" to every key: session 14's CI
	# failure, doc/notes-s14-model.md): checked around the reads.
	cluster_port_unheld 1-1
	local -A st out
	for f in k fresh; do
		run shim c cat "$T/c/$f"
		st[$f]=$status out[$f]=$output
	done
	run shim a cat "$T/a/k"
	cluster_port_unheld 1-1
	for f in k fresh; do
		echo "$f, group 1 down: ${st[$f]} ${out[$f]}"
		if [ "${st[$f]}" -eq 0 ]; then
			[ "${out[$f]##*$'\n'}" = v2 ]
		else
			[[ ${out[$f]} == *"Input/output error"* ]]
		fi
	done
	echo "a, group 1 down: $status $output"
	[[ $output != *v1* ]] || [ "$status" -ne 0 ] || false
	[[ $output == *v2* || $output == *"Input/output error"* ]]
	cluster_start_node 1-1
	rm -rf "$T/c" "$T/c-state" && mkdir "$T/c"
	for f in k fresh; do
		run shim c cat "$T/c/$f"
		echo "$f, all up: $status $output"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = v2 ]
	done
	sleep 2		# past attr_timeout: a revalidates its copy
	run shim a cat "$T/a/k"
	echo "a, all up: $output"
	[ "${lines[-1]}" = v2 ]
}
