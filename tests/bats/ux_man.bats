#!/usr/bin/env bats
# ux_man.bats — every man page in man/ renders without warnings and has a
# NAME line that lexgrog (mandb's whatis parser) understands; the pages of
# the user tools have the sections a man page is expected to have (issue 9).

setup() {
	load lib/common
	command -v man >/dev/null || skip "man is not installed (apt-get install man-db groff-base)"
}

@test "every man page renders with man --warnings and groff -ww without a warning" {
	n=0
	for m in "$TOP"/man/*.[1-8]; do
		run sh -c "MANWIDTH=80 man --warnings -l '$m' 2>&1 >/dev/null"
		echo "$m: $output"
		[ "$status" -eq 0 ]
		[ -z "$output" ]
		if command -v groff >/dev/null; then
			run groff -man -ww -z -Tutf8 "$m"
			[ -z "$output" ]
		fi
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "lexgrog finds the NAME line of every man page" {
	command -v lexgrog >/dev/null || skip "lexgrog is not installed"
	for m in "$TOP"/man/*.[1-8]; do
		run lexgrog "$m"
		echo "$output"
		[ "$status" -eq 0 ]
		name=$(basename "$m" | sed 's/\.[1-8]$//')
		[[ $output == *": \"$name - "* ]]
	done
}

@test "the tools' pages have NAME, SYNOPSIS, DESCRIPTION, OPTIONS, ENVIRONMENT, FILES, EXIT STATUS, EXAMPLES, SEE ALSO" {
	for p in pohmelfs.1 pohmelfs-run.1 pohmelfs-cluster.1 pohmelfs.conf.5 pohmelfsd.8; do
		m=$TOP/man/$p
		[ -f "$m" ]
		got=$(sed -n 's/^\.SH "\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$m" | tr '\n' '|')
		echo "$p: $got"
		prev=0
		for s in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT FILES "EXIT STATUS" EXAMPLES "SEE ALSO"; do
			pos=$(echo "$got" | tr '|' '\n' | grep -nx "$s" | cut -d: -f1)
			[ -n "$pos" ] || { echo "$p: no $s section"; false; }
			[ "$pos" -gt "$prev" ] || { echo "$p: $s out of order"; false; }
			prev=$pos
		done
	done
}

@test "pohmelfs(1) names every subcommand of the tool, and the tool names every page" {
	for c in put get lookup del status sync stats "cache clean" fsck repair; do
		grep -q "$c" "$TOP/man/pohmelfs.1" || { echo "pohmelfs.1 lacks $c"; false; }
	done
	run "$B/pohmelfs" --help
	for c in put get lookup del status sync stats "cache clean" "fsck, repair"; do
		[[ $output == *"$c"* ]] || { echo "--help lacks $c"; false; }
	done
}

@test "every program make install puts in bin has a man page (issue 21)" {
	command -v make >/dev/null || skip "make is not installed"
	# The existing build, no rebuild (-o all); SAN selects the build directory.
	run make -C "$TOP" -s -o all install DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/usr ${SAN:+SAN=$SAN}
	echo "$output"
	[ "$status" -eq 0 ]
	n=0
	for t in "$BATS_TEST_TMPDIR"/root/usr/bin/* "$BATS_TEST_TMPDIR"/root/usr/sbin/*; do
		[ -e "$t" ] || continue
		name=${t##*/}
		ls "$TOP"/man/"$name".[1-8] >/dev/null 2>&1 || { echo "no man page for $name"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "pohmelfs-cluster(1) describes every command its --help names" {
	run "$TOP/tools/pohmelfs-cluster" --help
	[ "$status" -eq 0 ]
	cmds=$(sed -n 's/^  \([a-z|-]*\) .*/\1/p' <<<"$output" | tr '|' '\n')
	[ "$(wc -l <<<"$cmds")" -ge 14 ]
	for c in $cmds; do
		grep -q "^\.BI $(sed 's/-/\\\\-/g' <<<"$c") \"" "$TOP/man/pohmelfs-cluster.1" ||
			{ echo "pohmelfs-cluster.1 does not describe $c"; false; }
	done
}
