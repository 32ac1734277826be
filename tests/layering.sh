#!/usr/bin/env bash
# tests/layering.sh LAYER... — check that core/'s layers include downwards,
# and only through each layer's public header.
#
# LAYER... are core/'s folders from the bottom up (the Makefile's
# CORE_LAYERS).  Layer L's public header is core/L/L.h, its whole interface;
# every other header of core/L is a part of L (the public header includes
# the parts callers need; *_int.h and the like are private to L).
#
#   - A file in core/L may include any header of L, and the public header
#     of a layer listed before L; including a later layer's header, a part
#     of another layer, or a header that is in no layer is an error.
#   - A file in preload/, node/ or tools/ may include only the public
#     header of a layer, never a part of one; and none of their own headers
#     may share a name with a header of core/ (a quoted include would find
#     the local one instead).
#   - Every layer has its public header, which opens with a README-style
#     comment naming the layer (core/L), and no two layers have headers of
#     the same name.
# The unit tests (tests/unit) and test programs (tests/progs) are not
# checked: they test a layer's parts and may include them.
#
# Prints one line per violation (file:line: what) and exits 1 if there is
# any, 0 otherwise.  Run by the build before anything is compiled, and by
# tests/bats/arch_layering.bats.
set -u
cd "${POHM_LAYER_ROOT:-$(dirname "$0")/..}" || exit 2
[ $# -gt 0 ] || { echo "usage: tests/layering.sh LAYER..." >&2; exit 2; }
declare -A rank where
bad=0
i=0
for l in "$@"; do
	[ -d "core/$l" ] || { echo "core/$l: no such layer folder" >&2; exit 2; }
	rank[$l]=$i
	i=$((i + 1))
	if [ ! -e "core/$l/$l.h" ]; then
		echo "core/$l: no public header core/$l/$l.h"; bad=1
	elif ! head -1 "core/$l/$l.h" | grep -qx '/\*' ||
		! awk 'NR == 1, /\*\// { print }' "core/$l/$l.h" | grep -q "core/$l\b"; then
		# The README-style comment: the file opens with a comment
		# that names its layer (what it does, its types, its rules).
		echo "core/$l/$l.h: does not open with a comment about layer core/$l"; bad=1
	fi
	for h in core/"$l"/*.h; do
		[ -e "$h" ] || continue
		b=${h##*/}
		if [ -n "${where[$b]:-}" ]; then
			echo "$h: a header of the same name is in core/${where[$b]}"
			bad=1
		fi
		where[$b]=$l
	done
done
for d in core/*/; do
	d=${d%/}
	[ -n "${rank[${d#core/}]:-}" ] || { echo "$d: a folder that is not a layer"; bad=1; }
done

# includes FILE: "line:name" for each #include "name" of FILE.
includes() {
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$1" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/'
}

for l in "$@"; do
	for f in core/"$l"/*.[ch]; do
		[ -e "$f" ] || continue
		while IFS=: read -r ln inc; do
			to=${where[$inc]:-}
			if [ -z "$to" ]; then
				echo "$f:$ln: includes \"$inc\", which is in no layer of core/"
				bad=1
			elif [ "${rank[$to]}" -gt "${rank[$l]}" ]; then
				echo "$f:$ln: core/$l includes \"$inc\" of core/$to, a higher layer"
				bad=1
			elif [ "$to" != "$l" ] && [ "$inc" != "$to.h" ]; then
				echo "$f:$ln: includes \"$inc\", a part of core/$to; include its public header \"$to.h\""
				bad=1
			fi
		done < <(includes "$f")
	done
done

while IFS= read -r f; do
	b=${f##*/}
	if [[ $f == *.h ]] && [ -n "${where[$b]:-}" ]; then
		echo "$f: has the name of core/${where[$b]}/$b, which it would hide"
		bad=1
	fi
	while IFS=: read -r ln inc; do
		to=${where[$inc]:-}
		if [ -n "$to" ] && [ "$inc" != "$to.h" ]; then
			echo "$f:$ln: includes \"$inc\", a part of core/$to; include its public header \"$to.h\""
			bad=1
		fi
	done < <(includes "$f")
done < <(find preload node tools -name '*.[ch]' 2>/dev/null | sort)
exit "$bad"
