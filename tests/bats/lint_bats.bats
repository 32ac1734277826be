#!/usr/bin/env bats
# lint_bats.bats — no bats assertion that cannot fail: a command negated
# with `!` that is not the last of its test is ignored by errexit, so every
# such line ends in `|| false` (or another `|| cmd`); tests/lint_bats.sh
# checks it (session 14: 35 lines of 19 files could not fail).

setup() {
	load lib/common
}

# tree DIR: an empty tree with the checker, for one bats file to be checked.
tree() {
	mkdir -p "$1/tests/bats/lib"
	cp "$TOP/tests/lint_bats.sh" "$1/tests/"
}

@test "no negated command in tests/bats can be ignored by errexit" {
	run "$TOP/tests/lint_bats.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "bats ignores a negated command in mid-test, and sees it with || false" {
	# The reason for the check, on this machine's bats: a line "! true"
	# before the end passes the test; "! true || false" fails it.
	t=$BATS_TEST_TMPDIR
	printf '@test "inert" {\n\t! true\n\ttrue\n}\n' >"$t/inert.bats"
	printf '@test "bites" {\n\t! true || false\n\ttrue\n}\n' >"$t/bites.bats"
	run bats --tap "$t/inert.bats"
	echo "$output"
	[ "$status" -eq 0 ]
	run bats --tap "$t/bites.bats"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *'not ok 1 bites'* ]]
}

@test "a negated command without || fails the check, naming file and line" {
	t=$BATS_TEST_TMPDIR/tree
	tree "$t"
	# (its first line from printf: bats reads an @test line anywhere)
	printf '@%s "bad and good" {\n' test >"$t/tests/bats/x.bats"
	cat >>"$t/tests/bats/x.bats" <<'EOF'
	! grep -q a f
	for i in 1 2; do ! is_stub "$i"; done
	x && ! y
	! echo a | grep -v b |
		grep -q c
	{ ! z; }
	! grep -q a f || true
	! grep -q a f || false
	! grep -q a f || false		# a comment || ok
	! grep -q a f || return 0
	! { [ a = b ] && [ c = d ]; } || { echo "both"; false; }
	! [ -d /proc/1 ] || grep -q Z /proc/1/stat
	for i in 1 2; do ! is_stub "$i" || false; done
	if ! grep -q a f; then :; fi
	if [ -n "$a" ] && ! b; then :; fi
	while ! c; do :; done
	[ ! -e f ] && [[ ! -e f ]]
	run ! grep a f
	until_true 10 eval '! alive "$pid"'
	# ! a comment
	cat <<EOT
! in a here-document
EOT
	p() { grep -q a f || ! kill -0 1; }
}
EOF
	# (in column 0, and after || a command that cannot fail)
	printf 'f() {\n\t! g\n}\n! h\n! i || echo no\n' >"$t/tests/bats/lib/l.bash"
	POHM_LINTBATS_ROOT=$t run "$t/tests/lint_bats.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ ${lines[0]} == 'tests/bats/x.bats:2: a command negated with ! that cannot fail the test (add || false): '*'! grep -q a f' ]]
	[[ ${lines[1]} == 'tests/bats/x.bats:3: '* ]]
	[[ ${lines[2]} == 'tests/bats/x.bats:4: '* ]]
	[[ ${lines[3]} == 'tests/bats/x.bats:5: '* ]]
	[[ ${lines[4]} == 'tests/bats/x.bats:7: '* ]]
	[[ ${lines[5]} == 'tests/bats/x.bats:8: '* ]]
	[[ ${lines[6]} == 'tests/bats/lib/l.bash:2: '* ]]
	[[ ${lines[7]} == 'tests/bats/lib/l.bash:4: '* ]]
	[[ ${lines[8]} == 'tests/bats/lib/l.bash:5: '* ]]
	[ "${#lines[@]}" -eq 9 ]
	# The same lines with || false pass.
	sed -i -e '2,4s/$/ || false/' -e '6,8s/$/ || false/' -e '3s/; done || false$/ || false; done/' \
	       -e '7s/; } || false$/ || false; }/' "$t/tests/bats/x.bats"
	sed -i -e '2s/$/ || false/' -e '4s/$/ || false/' -e '5s/|| echo no$/|| false/' "$t/tests/bats/lib/l.bash"
	POHM_LINTBATS_ROOT=$t run "$t/tests/lint_bats.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}
