#!/usr/bin/env bats
# cache_attrs_stat.bats — issue 18 case 3: `stat` follows another host's
# change after attr_timeout without the file being opened (make's view).
# A 3-group cluster, hosts a and b, and a fresh third cache c that must see
# every acknowledged change.  sync_on_close=1, attr_timeout=1.

setup() {
	load lib/common
	load lib/cluster
	load lib/hosts
	three_hosts attrs
}

teardown() {
	stop_daemons
	cluster_stop
}

# st HOST NAME: "size mtime mode" of NAME as HOST's stat(1) shows it.
st() {
	shim "$1" stat -c '%s %Y %a' "$T/$1/$2"
}

@test "case 3: stat on host a shows b's new size and mtime after attr_timeout, unopened" {
	shim a sh -c 'echo in >"$1/in.txt" && touch -d 2020-01-01 "$1/in.txt" &&
		echo out >"$1/out.txt" && touch -d 2021-01-01 "$1/out.txt"' sh "$T/a"
	[ "$(st a in.txt)" = "3 $(date -d 2020-01-01 +%s) 644" ]
	shim b sh -c 'echo "in changed" >"$1/in.txt" && chmod 600 "$1/in.txt"' sh "$T/b"
	want=$(st b in.txt)
	echo "b: $want"
	[ "${want%% *}" = 11 ]
	sleep 1.3	# past attr_timeout
	# make's question, asked by stat alone: in.txt newer than out.txt?
	run st a in.txt
	echo "a: $output"
	[ "$output" = "$want" ]
	run shim a sh -c 'test "$1/in.txt" -nt "$1/out.txt"' sh "$T/a"
	[ "$status" -eq 0 ]
	# stat did not fetch: the content comes at the next open, and is b's.
	[ "$(shim a cat "$T/a/in.txt")" = "in changed" ]
	[ "$(st a in.txt)" = "$want" ]
	[ "$(st c in.txt)" = "$want" ]
}

@test "case 3: a make-like rule rebuilds after another host's change" {
	command -v make >/dev/null || skip "no make"
	shim a sh -c 'cd "$1" && echo v1 >in.txt && touch -d "2 minutes ago" in.txt &&
		printf "out.txt: in.txt\n\tcp in.txt out.txt\n" >Makefile && make -s' sh "$T/a"
	[ "$(cat "$T/a/out.txt")" = v1 ]
	run shim a make -s -C "$T/a" -q out.txt
	[ "$status" -eq 0 ]		# up to date
	shim b sh -c 'echo v2 >"$1/in.txt"' sh "$T/b"
	sleep 1.3
	run shim a make -s -C "$T/a" -q out.txt
	echo "make -q: $status"
	[ "$status" -eq 1 ]		# out of date now
	shim a make -s -C "$T/a"
	[ "$(shim a cat "$T/a/out.txt")" = v2 ]
	[ "$(shim c cat "$T/c/out.txt")" = v2 ]
}
