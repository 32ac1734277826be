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

@test "README names only files inside the repository, and each one exists (issue 21)" {
	r=$TOP/README.md
	run grep -n '\.\./' "$r"
	[ "$status" -ne 0 ] || { echo "README points outside the repository: $output"; false; }
	n=0
	for p in $(grep -o '`[a-z][A-Za-z0-9_.-]*/[A-Za-z0-9_./*-]*`' "$r" | tr -d '`' | sort -u); do
		top=${p%%/*}
		# build/ holds outputs, $HOME-like paths are examples.
		case $top in build) continue ;; esac
		[ -d "$TOP/$top" ] || continue
		compgen -G "$TOP/$p" >/dev/null || { echo "README names $p, which does not exist"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 4 ]
}

@test "the sections of libpohmelfs(7) that README and pohmelfs.conf(5) send the reader to exist and say it (issue 21)" {
	m=$TOP/man/libpohmelfs.7
	for s in CONSISTENCY FAILURES OFFLINE; do
		grep -qx "\.SH $s" "$m" || { echo "libpohmelfs.7 has no $s section"; false; }
		grep -q "($s)" "$TOP/README.md" || { echo "README does not cite $s"; false; }
	done
	for s in CONSISTENCY FAILURES; do
		grep -q "$s" "$TOP/man/pohmelfs.conf.5" || { echo "pohmelfs.conf.5 does not cite $s"; false; }
	done
	# section NAME: its text, rendered.
	# (spaces squeezed: justified text puts two where the source has one)
	section() { MANWIDTH=200 man -l "$m" 2>/dev/null | sed -n "/^$1\$/,/^[A-Z][A-Z ]*\$/p" | sed '1d;$d' | tr -s ' '; }
	c=$(section CONSISTENCY)
	for w in attr_timeout sync_on_close sync_timeout fsync "Close-to-open" "conflict copy"; do
		[[ $c == *"$w"* ]] || { echo "CONSISTENCY does not mention $w"; false; }
	done
	f=$(section FAILURES)
	for w in "One node" "One group of 3" "2 groups" "N-1 of N groups" "process dies" "host crashes"; do
		[[ $f == *"$w"* ]] || { echo "FAILURES does not cover $w"; false; }
	done
	o=$(section OFFLINE)
	for w in "Offline is a mode" EIO ENOENT EHOSTUNREACH "no node answers" pohmelfsd "conflict copy" "5 seconds"; do
		[[ $o == *"$w"* ]] || { echo "OFFLINE does not mention $w"; false; }
	done
	p=$(section "PROCESS MODEL")
	for w in Threads fork vfork exec Signals Exit Offline SIGCHLD pthread_atfork; do
		[[ $p == *"$w"* ]] || { echo "PROCESS MODEL does not mention $w"; false; }
	done
}
