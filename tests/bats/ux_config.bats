#!/usr/bin/env bats
# ux_config.bats — configuration errors as a user meets them (issue 9):
# one test per class of bad value, each giving exactly one line that names
# the key, the value and what is expected (exit status 2 from the tools);
# a program under the shim with a bad configuration still does everything
# outside the prefix; the sample configuration parses.

bats_require_minimum_version 1.5.0

setup() {
	load lib/common
	T=$BATS_TEST_TMPDIR
	P=$B/pohmelfs
	# Nothing from the machine running the tests.
	unset $(env | sed -n 's/^\(POHMELFS_[A-Z_]*\)=.*/\1/p')
	export POHMELFS_CONFIG=/dev/null XDG_CONFIG_HOME=$T/xdg HOME=$T/home
	# A well-formed client configuration that each test spoils in one place.
	export POHMELFS_SERVERS=127.0.0.1:1 POHMELFS_GROUPS=1:2:3 POHMELFS_READ_WAIT_TIMEOUT=0.2
}

teardown() {
	[ -z "${U:-}" ] || rm -rf "$U"
}

# one_line_error CMD...: CMD fails with status 2 and prints exactly one line.
one_line_error() {
	run "$@"
	echo "status $status, output: $output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == "pohmelfs: "* ]]
}

@test "config error: an unknown key in the file names the file, line, key and value" {
	printf 'groups = 1:2\n# comment\ngrups = 1:2:3\n' >"$T/c.conf"
	one_line_error env POHMELFS_CONFIG="$T/c.conf" "$P" status
	[[ $output == *"$T/c.conf:3: unknown configuration key \"grups\" in grups=1:2:3"* ]]
	[[ $output == *"expected a key of pohmelfs.conf(5); did you mean \"groups\"?"* ]]
	printf 'frobnicate=yes\n' >"$T/d.conf"
	one_line_error env POHMELFS_CONFIG="$T/d.conf" "$P" stats
	[[ $output == *"d.conf:1: unknown configuration key \"frobnicate\" in frobnicate=yes: expected a key"* ]]
}

@test "config error: a bad number names the key, the value and the unit expected" {
	one_line_error env POHMELFS_SYNC_TIMEOUT=5s "$P" status
	[ "$output" = "pohmelfs: POHMELFS_SYNC_TIMEOUT: sync_timeout=5s: invalid value, expected seconds, e.g. 5 or 0.5" ]
	one_line_error env POHMELFS_SUCCESSFUL_WRITE_COUNT=two "$P" status
	[[ $output == *"successful_write_count=two: invalid value, expected a number of groups"* ]]
	one_line_error env POHMELFS_CACHE_SIZE=10Q "$P" status
	[[ $output == *"cache_size=10Q: invalid value, expected bytes with an optional K, M, G or T suffix"* ]]
	printf 'attr_timeout = -1\n' >"$T/c.conf"
	one_line_error env POHMELFS_CONFIG="$T/c.conf" "$P" status
	[[ $output == *"c.conf:1: attr_timeout=-1: invalid value, expected seconds"* ]]
}

@test "config error: a bad address names the server and the address syntax" {
	one_line_error env POHMELFS_SERVERS=127.0.0.1:1025,example.org:1025 "$P" status
	[ "$output" = "pohmelfs: POHMELFS_SERVERS: server=example.org:1025: invalid value, expected addr:port[:family] with a numeric IPv4 or [IPv6] address (or localhost), family 2 or 10" ]
	printf 'server = 127.0.0.1:70000\n' >"$T/c.conf"
	one_line_error env -u POHMELFS_SERVERS POHMELFS_CONFIG="$T/c.conf" "$P" status
	[[ $output == *"c.conf:1: server=127.0.0.1:70000: invalid value, expected addr:port"* ]]
	# No server at all: which key, and how to set it.
	one_line_error env -u POHMELFS_SERVERS "$P" status
	[[ $output == *"no server configured: set POHMELFS_SERVERS=addr:port"* ]]
}

@test "config error: a relative prefix" {
	one_line_error env POHMELFS_PREFIX=relative/dir "$P" status
	[ "$output" = "pohmelfs: POHMELFS_PREFIX: prefix=relative/dir: invalid value, expected an absolute directory path" ]
	one_line_error env POHMELFS_PREFIX=relative "$P" sync
	one_line_error env POHMELFS_PREFIX=relative "$P" cache clean
}

@test "config error: a prefix that exists and is not a directory" {
	echo data >"$T/file"
	one_line_error env POHMELFS_PREFIX="$T/file" "$P" status
	[ "$output" = "pohmelfs: POHMELFS_PREFIX: prefix=$T/file: exists and is not a directory, expected an absolute directory path" ]
	printf 'prefix = /\n' >"$T/c.conf"
	one_line_error env POHMELFS_CONFIG="$T/c.conf" "$P" stats
	[[ $output == *"c.conf:1: prefix=/: is the root directory itself, expected an absolute directory path"* ]]
	# A missing prefix is fine: it is created on first use.
	run env POHMELFS_PREFIX="$T/not/yet" "$P" stats
	[ "$status" -eq 0 ]
	[ ! -e "$T/not" ]		# ... and stats does not create it
}

@test "config error: empty groups" {
	one_line_error env POHMELFS_GROUPS= "$P" status
	[[ $output == *"POHMELFS_GROUPS: groups=: invalid value, expected group numbers 1..4294967295 separated by ':'"* ]]
	printf 'groups =\n' >"$T/c.conf"
	one_line_error env -u POHMELFS_GROUPS POHMELFS_CONFIG="$T/c.conf" "$P" status
	[[ $output == *"c.conf:1: groups=: invalid value, expected group numbers"* ]]
	one_line_error env -u POHMELFS_GROUPS "$P" status
	[[ $output == *"no groups configured: set POHMELFS_GROUPS=1:2:3 or groups=1:2:3"* ]]
}

@test "config error: successful_write_count larger than the groups" {
	one_line_error env POHMELFS_GROUPS=1:2 POHMELFS_SUCCESSFUL_WRITE_COUNT=3 "$P" status
	[ "$output" = "pohmelfs: POHMELFS_SUCCESSFUL_WRITE_COUNT: successful_write_count=3: more than the 2 groups of groups=1:2, expected 1 to 2" ]
	printf 'groups = 4\nsuccessful_write_count = 2\n' >"$T/c.conf"
	one_line_error env -u POHMELFS_GROUPS POHMELFS_CONFIG="$T/c.conf" "$P" get k
	[ "$output" = "pohmelfs: successful_write_count=2: more than the 1 group of groups=4, expected 1 to 1" ]
}

@test "config error: POHMELFS_CONFIG naming a missing file" {
	one_line_error env POHMELFS_CONFIG="$T/none.conf" "$P" status
	[ "$output" = "pohmelfs: POHMELFS_CONFIG=$T/none.conf: no such file" ]
}

@test "a program under the shim with a bad configuration still works outside the prefix" {
	preload_ok || skip "cannot preload this build into uninstrumented programs"
	want_ls=$(ls /)
	want_host=$(cat /etc/hostname)
	# The relative prefix: the shim says so once and stays out of the way.
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=relative ls / >"$T/out" 2>"$T/err"
	[ "$(cat "$T/out")" = "$want_ls" ]
	[ "$(wc -l <"$T/err")" -eq 1 ]
	grep -q 'prefix=relative.*absolute' "$T/err"
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=relative cat /etc/hostname >"$T/out" 2>"$T/err"
	[ "$(cat "$T/out")" = "$want_host" ]
	[ "$(wc -l <"$T/err")" -eq 1 ]
	# Every other class: the work outside the prefix is untouched, and the
	# shim says at most one line about it.
	echo data >"$T/file"
	printf 'grups = 1\n' >"$T/bad.conf"
	for bad in "POHMELFS_PREFIX=$T/file" "POHMELFS_PREFIX=$T/p POHMELFS_GROUPS=" \
		   "POHMELFS_PREFIX=$T/p POHMELFS_SERVERS=nohost" \
		   "POHMELFS_PREFIX=$T/p POHMELFS_SYNC_TIMEOUT=soon" \
		   "POHMELFS_PREFIX=$T/p POHMELFS_CONFIG=$T/bad.conf" \
		   "POHMELFS_PREFIX=$T/p POHMELFS_GROUPS=1 POHMELFS_SUCCESSFUL_WRITE_COUNT=2"; do
		# shellcheck disable=SC2086
		env $bad LD_PRELOAD="$PRELOAD" sh -c 'ls /; cat /etc/hostname' >"$T/out" 2>"$T/err"
		[ "$(cat "$T/out")" = "$(printf '%s\n%s' "$want_ls" "$want_host")" ]
		[ "$(wc -l <"$T/err")" -le 1 ]
	done
}

@test "the sample configuration parses, also with every key uncommented" {
	sample=$TOP/conf/pohmelfs.conf
	run env -u POHMELFS_SERVERS -u POHMELFS_GROUPS POHMELFS_CONFIG="$sample" \
		POHMELFS_PREFIX="$T/p" "$P" stats
	[ "$status" -eq 0 ]
	sed 's/^#\([a-z_]* *=\)/\1/' "$sample" >"$T/all.conf"
	# every key of the sample is now set (prefix and cache_dir point at
	# /home/alice, which need not exist; the log goes elsewhere)
	[ "$(grep -cE '^[a-z_]+ *=' "$T/all.conf")" -ge 23 ]
	run env -u POHMELFS_SERVERS -u POHMELFS_GROUPS POHMELFS_CONFIG="$T/all.conf" \
		POHMELFS_LOG="$T/log" "$P" stats
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == "prefix"*"/home/alice/pohmelfs" ]]
}

@test "another user's unreadable default config file is not this user's configuration; one's own still errors" {
	[ "$(id -u)" = 0 ] || skip "needs root to switch users"
	unpriv_paths
	U=$(mktemp -d /tmp/ux-config-u.XXXXXX)
	chmod 755 "$U"
	mkdir -p "$U/root/.config" "$U/own/.config"
	chmod 700 "$U/root"
	printf 'groups = 1:2:3\n' >"$U/root/.config/pohmelfs.conf"
	printf 'groups = 1:2:3\n' >"$U/own/.config/pohmelfs.conf"
	chmod 000 "$U/own/.config/pohmelfs.conf"
	chown -R 65534:65534 "$U/own"
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env -u POHMELFS_CONFIG -u XDG_CONFIG_HOME "$@"; }
	# HOME kept from the user who started the program (root's, mode 0700).
	run as_nobody HOME="$U/root" "$UB/pohmelfs" status
	echo "root's HOME: status $status, output: $output"
	[[ $output != *"configuration file"* ]]
	[ "$status" -ne 2 ]
	# The user's own file that it cannot read is still an error.
	run as_nobody HOME="$U/own" "$UB/pohmelfs" status
	echo "own HOME: status $status, output: $output"
	[ "$status" -eq 2 ]
	[[ $output == *"$U/own/.config/pohmelfs.conf: cannot open the configuration file: Permission denied"* ]]
}

@test "log= is honoured by the library: with a bad configuration the line goes to the file, never to the program's stderr" {
	preload_ok || skip "cannot preload this build into uninstrumented programs"
	# A bad value in the environment: the load stops before reading
	# POHMELFS_LOG, which still names the file.  The first call under the
	# prefix (test -e) logs the error; the shell's stderr stays empty, the
	# fd of the file is high and close-on-exec (ls, exec'd, has no fd on
	# it; the shell has one at 700 or above).
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/p POHMELFS_LOG=$T/env.log POHMELFS_SYNC_TIMEOUT=soon \
		sh -c "test -e '$T/p/x'; ls -l /proc/\$\$/fd /proc/self/fd" >"$T/out" 2>"$T/err"
	cat "$T/err" "$T/out"
	[ ! -s "$T/err" ]
	[ "$(wc -l <"$T/env.log")" -eq 1 ]
	grep -q 'POHMELFS_SYNC_TIMEOUT.*soon' "$T/env.log"
	[ "$(grep -c "$T/env.log" "$T/out")" -eq 1 ]
	fd=$(sed -n "s|.* \([0-9]*\) -> $T/env.log\$|\1|p" "$T/out")
	[ "$fd" -ge 700 ]
	# log= in the file, and an error further down that file.
	printf 'log = %s\ngrups = 1\n' "$T/file.log" >"$T/bad.conf"
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=$T/p POHMELFS_CONFIG=$T/bad.conf \
		sh -c "test -e '$T/p/x'; true" 2>"$T/err"
	cat "$T/err"
	[ ! -s "$T/err" ]
	grep -q 'grups' "$T/file.log"
	# The light init's own error (a relative prefix): the same.
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=relative POHMELFS_LOG=$T/early.log \
		cat /etc/hostname >/dev/null 2>"$T/err"
	cat "$T/err"
	[ ! -s "$T/err" ]
	grep -q 'prefix=relative.*absolute' "$T/early.log"
	# Appended, never truncated: a second process adds its line.
	LD_PRELOAD=$PRELOAD POHMELFS_PREFIX=relative POHMELFS_LOG=$T/early.log \
		cat /etc/hostname >/dev/null 2>"$T/err"
	[ ! -s "$T/err" ]
	[ "$(grep -c 'prefix=relative' "$T/early.log")" -eq 2 ]
}

# node_error ARGS...: pohmelfs-node refuses ARGS with status 2; $err is the
# first line of its stderr (the usage follows it).
node_error() {
	run --separate-stderr "$B/pohmelfs-node" "$@"
	echo "status $status, stderr: $stderr"
	[ "$status" -eq 2 ]
	err=${stderr_lines[0]}
}

@test "config error: pohmelfs-node's bad values, from its file and its command line, in the client's one format" {
	# A bad value in the file: FILE:LINE: key=value: ..., expected ...
	printf 'listen = 127.0.0.1:1\n# comment\n\ngroup = 0\n' >"$T/n.conf"
	node_error --config "$T/n.conf" --data "$T/d"
	[ "$err" = "pohmelfs-node: $T/n.conf:4: group=0: invalid value, expected a group number 1..4294967295" ]
	# The client's size rules: binary suffixes, no "B", no percentage.
	for v in 64KB 10% 0x1000 1K; do
		printf 'max_packet = %s\n' "$v" >"$T/n.conf"
		node_error --config "$T/n.conf"
		[ "$err" = "pohmelfs-node: $T/n.conf:1: max_packet=$v: invalid value, expected a size between 4K and 4G (K, M, G or T suffix)" ]
	done
	# An unknown key, with the nearest one; a bare key that needs a value.
	printf 'grup = 3\n' >"$T/n.conf"
	node_error --config "$T/n.conf"
	[ "$err" = "pohmelfs-node: $T/n.conf:1: unknown configuration key \"grup\" in grup=3: expected a key of pohmelfs-node(8); did you mean \"group\"?" ]
	printf 'nosync\nlisten\n' >"$T/n.conf"
	node_error --config "$T/n.conf"
	[ "$err" = "pohmelfs-node: $T/n.conf:2: listen: missing value, expected listen=host:port with a numeric IPv4 or [IPv6] address (or localhost)" ]
	printf 'nosync = maybe\n' >"$T/n.conf"
	node_error --config "$T/n.conf"
	[[ $err == "pohmelfs-node: $T/n.conf:1: nosync=maybe: invalid value, expected 1, yes, true or on; 0, no, false or off" ]]
	# A line longer than the client's limit; a missing file.
	{ printf 'data = '; head -c 5000 /dev/zero | tr '\0' x; echo; } >"$T/n.conf"
	node_error --config "$T/n.conf"
	[[ $err == "pohmelfs-node: $T/n.conf:1: line too long (at most "*" bytes)" ]]
	node_error --config "$T/none.conf"
	[ "$err" = "pohmelfs-node: $T/none.conf: cannot open the configuration file: No such file or directory" ]
	node_error --config="$T/none.conf"	# the = form is read too (it was ignored)
	[ "$err" = "pohmelfs-node: $T/none.conf: cannot open the configuration file: No such file or directory" ]
	# The command line: --option: key=value: ..., both spellings.
	node_error --listen 127.0.0.1:1 --group 1 --data "$T/d" --threads 0
	[ "$err" = "pohmelfs-node: --threads: threads=0: invalid value, expected a thread count 1..256" ]
	node_error --listen 127.0.0.1:1 --group 1 --data "$T/d" --sync-interval=-1
	[ "$err" = "pohmelfs-node: --sync-interval: sync_interval=-1: invalid value, expected seconds between syncs, 0..86400" ]
	node_error --protocol 4
	[ "$err" = "pohmelfs-node: --protocol: protocol=4: invalid value, expected 3.0 or 2.26" ]
	node_error --listen 127.0.0.1:1 --group
	[ "$err" = "pohmelfs-node: --group: group: missing value, expected group=a group number 1..4294967295" ]
	node_error --grops 2
	[[ $err == *"unknown configuration key \"grops\""*"did you mean \"group\"?" ]]
	[ ! -e "$T/d" ]
}

@test "pohmelfs-node's sample configuration parses, also with every key uncommented" {
	# log= names a file that cannot be opened: the first thing the node does
	# after parsing, so status 1 with that message means the file parsed.
	sed 's|^#*log = .*|log = /proc/nonexistent/log|' "$TOP/conf/node.conf" >"$T/n.conf"
	run "$B/pohmelfs-node" --config "$T/n.conf"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == "pohmelfs-node: cannot open log /proc/nonexistent/log"* ]]
	sed -e 's/^#\([a-z_]* = \)/\1/' -e 's/^#nosync$/nosync/' \
		-e 's|^#*log = .*|log = /proc/nonexistent/log|' "$TOP/conf/node.conf" >"$T/n.conf"
	grep -q '^nosync$' "$T/n.conf"
	grep -q '^max_object = ' "$T/n.conf"
	grep -q '^join = ' "$T/n.conf"
	run "$B/pohmelfs-node" --config "$T/n.conf"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == "pohmelfs-node: cannot open log /proc/nonexistent/log"* ]]
}
