#!/usr/bin/env bats
# ux_demo.bats — `make demo` (tools/demo.sh) as a newcomer runs it (issue
# 21, item 8): it ends with 0, explains its storage sections in a line,
# prints no empty headers, writes plain text into a file (bold only on a
# terminal), and leaves no node running and no directory behind.

setup() {
	load lib/common
	for p in cc make git tar; do
		command -v "$p" >/dev/null || skip "$p is not installed"
	done
	preload_ok || skip "the library does not preload here"
	# `make demo` is the normal build's: the demo preloads the library
	# alone, without a sanitizer runtime before it.
	[ -z "${SAN:-}" ] || skip "SAN=$SAN: make demo runs the normal build"
}

# demo_work: the demo's work directory, from its output (section 2 names it).
demo_work() { sed -n 's/.*POHMELFS_PREFIX=\(\/[^;]*\)\/host1;.*/\1/p' <<<"$output" | head -n 1; }

# left_running WORK: pids of processes whose command line names WORK
# (nodes, pohmelfsd); pgrep leaves itself out.
left_running() { pgrep -f -- "$1" || true; }

@test "the demo runs to the end into a file: plain text, each storage section explained, nothing left" {
	run env -u MAKEFLAGS B="$B" timeout 300 "$TOP/tools/demo.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"== Done. Stopping the cluster."* ]]
	# No escape codes in a file.
	[ "$(grep -c $'\033' <<<"$output")" -eq 0 ]
	# No header without its lines (it printed "route (…):" and nothing).
	[ "$(grep -c '^route (' <<<"$output")" -eq 0 ]
	# Sections 3 and 6 say what they show and why it matters, right under the heading.
	for s in 3 6; do
		line=$(grep -A1 "^== $s\. " <<<"$output" | sed -n 2p)
		echo "section $s: $line"
		[[ $line == "   "[A-Z]*"group"*"." ]]
	done
	# The write made with a group down reached the storage: the other host reads it.
	[[ $output == *"host 1 reads: written with group 1 down"* ]]
	work=$(demo_work)
	[ -n "$work" ]
	[ ! -e "$work" ]
	[ -z "$(left_running "$work")" ]
}

@test "on a terminal the demo's headings are bold" {
	command -v script >/dev/null || skip "script(1) is not installed"
	run env -u MAKEFLAGS B="$B" timeout 300 script -qec "$TOP/tools/demo.sh" /dev/null
	[ "$status" -eq 0 ]
	[[ $output == *$'\033[1m== 1. '* ]]
	work=$(demo_work)
	[ -n "$work" ]
	[ -z "$(left_running "$work")" ]
}
