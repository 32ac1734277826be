#!/usr/bin/env bash
# tests/hookpairs.sh — one hook call per operation in preload/ (issue 20).
#
# A wrapper passes its own libc call to one hook (preload/hooks.h, struct
# pohm_real_call) and the hook makes it between the storage's halves; no
# wrapper calls one hook before its libc call and another after it (a
# before/after pair: state would pass between the two calls, and a signal
# handler between them would find the shim not busy).  The check: no
# function of preload/*.c but hooks_stack.c and hooks_cache.c (where the
# hooks are defined) calls two different pohm_hook_* functions.  A
# function is what follows a line that starts with a letter, has a '(' and
# does not end in ';'; comments are left out.
# Prints one line per such function and exits 1 if there is any, else 0.
# Run by tests/bats/arch_layering.bats (make check).
set -u
cd "${POHM_HOOKPAIRS_ROOT:-$(dirname "$0")/..}" || exit 2
bad=0
for f in preload/*.c; do
	case $f in preload/hooks_stack.c | preload/hooks_cache.c) continue ;; esac
	out=$(awk -v F="$f" '
	function flush() {
		if (nh > 1)
			printf "%s:%d: %s calls %s: one hook call per operation (hooks.h)\n",
			       F, at, name, hooks
	}
	{
		line = $0
		if (incom) {
			if (!sub(/.*\*\//, "", line)) next
			incom = 0
		}
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
		if (sub(/\/\*.*/, "", line)) incom = 1
		sub(/\/\/.*/, "", line)
	}
	line ~ /^[A-Za-z_].*\(/ && line !~ /;[ \t]*$/ {
		flush()
		name = line; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
		at = NR; nh = 0; hooks = ""; delete seen
	}
	{
		s = line
		while (match(s, /pohm_hook_[a-z_0-9]+\(/)) {
			h = substr(s, RSTART, RLENGTH - 1)
			s = substr(s, RSTART + RLENGTH)
			if (!(h in seen)) {
				seen[h] = 1
				hooks = hooks (nh ? " and " : "") h
				nh++
			}
		}
	}
	END { flush() }' "$f")
	[ -n "$out" ] && { echo "$out"; bad=1; }
done
exit "$bad"
