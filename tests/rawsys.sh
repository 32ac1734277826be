#!/usr/bin/env bash
# tests/rawsys.sh [BUILD_DIR] — raw system calls only in core/sys (issue 20).
#
# The library makes its own system calls through core/sys (sys.h, raw.h:
# -errno returned, errno never touched).  A call of libc's syscall(2)
# anywhere else in core/, preload/, node/ or tools/ is an error, except in
# the files of tests/rawsys.allow: those not converted yet.  The list may
# only shrink: a file on it that calls syscall( no more (or is gone) is an
# error too, so that the entry is taken off when the file is converted.
#
# Source check: a line of a .c or .h file whose code (comments removed:
# /* ... */, also across lines, and // to the end of the line; string and
# character literals emptied) has `syscall(` not preceded by a letter,
# digit or '_' (pohm_syscall( is fine, so are comments such as
# "syscall(2)" and the vfork's "syscall" instruction in exec.c's asm).
# With BUILD_DIR: also every object under BUILD_DIR/obj/{core,preload,
# node,tools} outside obj/core/sys that refers to the symbol syscall (nm -u:
# catches a call through a macro or a function pointer) must be of an
# allowed file.
#
# Prints one line per violation and exits 1 if there is any, else 0.
# Run by tests/bats/arch_layering.bats (make check).
set -u
cd "${POHM_RAWSYS_ROOT:-$(dirname "$0")/..}" || exit 2
allow_file=tests/rawsys.allow
[ -f "$allow_file" ] || { echo "$allow_file: missing" >&2; exit 2; }
declare -A allowed seen
while read -r f _; do
	case $f in '' | '#'*) continue ;; esac
	allowed[$f]=1
done <"$allow_file"
bad=0

mapfile -t files < <(find core preload node tools -name '*.[ch]' -not -path 'core/sys/*' | sort)
hits=$(awk '
# The code of line: comments (inc: inside /* */ from an earlier line) and
# the contents of string and character literals removed.
function code(line,   out, p, c, rest, q, ch) {
	out = ""
	while (length(line)) {
		if (inc) {
			p = index(line, "*/")
			if (!p)
				return out
			line = substr(line, p + 2); inc = 0; out = out " "; continue
		}
		if (!match(line, /["\047\/]/))
			return out line
		p = RSTART; c = substr(line, p, 1)
		out = out substr(line, 1, p - 1)
		if (c == "/") {
			ch = substr(line, p + 1, 1)
			if (ch == "*") { inc = 1; line = substr(line, p + 2); continue }
			if (ch == "/")
				return out
			out = out "/"; line = substr(line, p + 1); continue
		}
		rest = substr(line, p + 1)
		for (q = 1; q <= length(rest); q++) {
			ch = substr(rest, q, 1)
			if (ch == "\\") { q++; continue }
			if (ch == c)
				break
		}
		out = out c c; line = substr(rest, q + 1)
	}
	return out
}
FNR == 1 { inc = 0 }
code($0) ~ /(^|[^[:alnum:]_])syscall[[:space:]]*\(/ { print FILENAME ":" FNR ":" $0 }
' "${files[@]}")

while IFS= read -r h; do
	[ -n "$h" ] || continue
	f=${h%%:*}
	seen[$f]=1
	if [ -z "${allowed[$f]:-}" ]; then
		echo "$h: syscall( outside core/sys: call a core/sys wrapper (sys.h, raw.h) instead"
		bad=1
	fi
done <<<"$hits"

for f in "${!allowed[@]}"; do
	if [ ! -e "$f" ]; then
		echo "$allow_file: $f does not exist: take it off the list"
		bad=1
	elif [ -z "${seen[$f]:-}" ]; then
		echo "$allow_file: $f calls syscall( no more: take it off the list"
		bad=1
	fi
done

if [ $# -gt 0 ]; then
	obj=$1/obj
	[ -d "$obj" ] || { echo "$obj: no objects (build first)" >&2; exit 2; }
	while IFS= read -r o; do
		nm -u "$o" 2>/dev/null | grep -qE '^[[:space:]]*U syscall(@|$)' || continue
		src=${o#"$obj"/}
		src=${src%.o}.c
		# An object left by an earlier layout of the tree (its source
		# moved or went) is not part of this build.
		[ -e "$src" ] || continue
		if [ -z "${allowed[$src]:-}" ]; then
			echo "$o: refers to syscall (from $src, not on $allow_file)"
			bad=1
		fi
	done < <(find "$obj/core" "$obj/preload" "$obj/node" "$obj/tools" -name '*.o' \
		-not -path "$obj/core/sys/*" 2>/dev/null | sort)
fi
exit $bad
