#!/usr/bin/env bash
# tests/lint_bats.sh — no assertion in a bats test that cannot fail.
#
# bats runs a test under errexit, and bash's errexit ignores a pipeline
# negated with `!`: a line `! grep -q x f` in the middle of a test never
# fails it, whatever grep finds (session 14 found 38 such lines).  The
# check: in tests/bats/*.bats and tests/bats/lib/*.bash, every command
# negated with `!` (at the start of a line, or after `;`, `&&`, `{`, `do`,
# `then` or `else`) is followed in its list by `||` and a command that is
# not `true`, `:`, `echo` or `printf` (`! cmd || false`, `! cmd ||
# return 0`, `! a || b`).
# `!` inside `[ ]`/`[[ ]]`, after `if`/`elif`/`while`/`until` (a condition)
# and inside quotes (`run`'s or `eval`'s text) is no negated command of
# the test and is left alone, as are comments and here-documents.  A
# `&& !` on a line starting with if/elif/while/until is in the condition.
# Lines continued with `\`, `|`, `&&` or `||` are read as one.
# Prints one line per case, FILE:LINE: text, and exits 1 if there is any,
# else 0.  Run by tests/bats/lint_bats.bats (make check).
set -u
cd "${POHM_LINTBATS_ROOT:-$(dirname "$0")/..}" || exit 2
shopt -s nullglob
files=(tests/bats/*.bats tests/bats/lib/*.bash)
[ "${#files[@]}" -gt 0 ] || { echo "tests/bats: no bats file" >&2; exit 2; }
awk '
FNR == 1 { term = ""; buf = ""; flush_pending() }
function flush_pending() { buf = ""; at = 0 }
# check(S, N): report each negated command of the logical line S (from line N)
# whose list has no "|| cmd" after it.
function check(s, n,    t, rest, pre, tail, cond) {
	t = s
	gsub(/\\./, "xx", t)			# escaped characters, quotes included
	gsub(/'\''[^'\'']*'\''/, "QQ", t)	# single-quoted text
	gsub(/"[^"]*"/, "QQ", t)		# double-quoted text
	sub(/[ \t]#[^\n]*$/, "", t)		# a trailing comment
	cond = t ~ /^[ \t]*(if|elif|while|until)[ \t]/
	rest = t
	while (match(rest, /(^|;|&&|\{|[ \t]do|[ \t]then|[ \t]else)[ \t]*![ \t]/)) {
		pre = substr(rest, RSTART, RLENGTH)
		tail = substr(rest, RSTART + RLENGTH)
		rest = tail
		if (cond && pre ~ /^&&/) continue
		while (gsub(/\{[^{}]*\}/, "BB", tail)) ;	# { ...; } groups
		sub(/;.*/, "", tail)
		if (tail ~ /\|\|[ \t]*[^ \t:]/ && tail !~ /\|\|[ \t]*true[ \t]*$/ &&
		    tail !~ /\|\|[ \t]*(echo|printf)([ \t]|$)/) continue
		printf "%s:%d: a command negated with ! that cannot fail the test (add || false): %s\n",
		       FILENAME, n, s
		bad = 1
	}
}
{
	line = $0
	if (term != "") {			# inside a here-document
		l = line
		if (dash) sub(/^\t+/, "", l)
		if (l == term) term = ""
		next
	}
	if (buf == "" && line ~ /^[ \t]*#/) next
	if (match(line, /<<-?[ \t]*['\''"]?[A-Za-z_][A-Za-z_0-9]*/) &&
	    substr(line, RSTART, 3) != "<<<") {
		h = substr(line, RSTART, RLENGTH)
		dash = h ~ /^<<-/
		sub(/^<<-?[ \t]*['\''"]?/, "", h)
		term = h
	}
	if (buf == "") at = FNR
	buf = buf (buf == "" ? "" : " ") line
	if (line ~ /(\\|\||&&)[ \t]*$/ && term == "") {
		sub(/\\[ \t]*$/, "", buf)
		next
	}
	check(buf, at)
	buf = ""
}
END { exit bad }
' "${files[@]}"
