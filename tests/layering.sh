#!/usr/bin/env bash
# tests/layering.sh LAYER... — check that core/'s layers include downwards.
#
# LAYER... are core/'s folders from the bottom up (the Makefile's
# CORE_LAYERS).  A file in core/L may include the headers of L and of the
# layers listed before L; including a header of a later layer, a header that
# is in no layer, or two layers' headers of the same name, is an error.
# Prints one line per violation (file:line: what) and exits 1 if there is
# any, 0 otherwise.  Run by the build before the core archive is made, and
# by tests/bats/arch_layering.bats.
set -u
cd "${POHM_LAYER_ROOT:-$(dirname "$0")/..}" || exit 2
[ $# -gt 0 ] || { echo "usage: tests/layering.sh LAYER..." >&2; exit 2; }
declare -A rank where
i=0
for l in "$@"; do
	[ -d "core/$l" ] || { echo "core/$l: no such layer folder" >&2; exit 2; }
	rank[$l]=$i
	i=$((i + 1))
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
bad=${bad:-0}
for l in "$@"; do
	for f in core/"$l"/*.[ch]; do
		[ -e "$f" ] || continue
		while IFS=: read -r ln inc; do
			inc=${inc#*\"}
			inc=${inc%\"*}
			to=${where[$inc]:-}
			if [ -z "$to" ]; then
				echo "$f:$ln: includes \"$inc\", which is in no layer of core/"
				bad=1
			elif [ "${rank[$to]}" -gt "${rank[$l]}" ]; then
				echo "$f:$ln: core/$l includes \"$inc\" of core/$to, a higher layer"
				bad=1
			fi
		done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
	done
done
exit "$bad"
