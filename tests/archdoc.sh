#!/usr/bin/env bash
# tests/archdoc.sh — the tree matches doc/ARCHITECTURE.md (issue 20).
#
# In §2-§5 of doc/ARCHITECTURE.md (the tree, core/ layer by layer,
# preload/, node/ and tools/):
#   - every .c of core/, preload/, node/ and tools/ is named, as `x.c` or
#     by its header `x.h` (a newcomer finds each file's place);
#   - every x.c, x.h, x.sh or x.def named there exists somewhere in core/,
#     preload/, node/, tools/ or tests/ (by its name, or its path when a
#     path is given), except the names in GONE below, which the text names
#     as removed or as a pattern ("a.c/b.c" names a.c and b.c).
# Prints one line per mismatch and exits 1 if there is any, else 0.  Run by
# tests/bats/arch_layering.bats (make check).
set -u
cd "${POHM_ARCHDOC_ROOT:-$(dirname "$0")/..}" || exit 2
doc=doc/ARCHITECTURE.md
GONE=' core/L/L.h hooks_pass.c '
text=$(awk '/^## 2\./ { on = 1 } /^## 6\./ { on = 0 } on' "$doc")
[ -n "$text" ] || { echo "$doc: no §2-§5" >&2; exit 2; }
mapfile -t files < <(find core preload node tools tests -type f \
	\( -name '*.[ch]' -o -name '*.sh' -o -name '*.def' \) | sort)
bad=0
for f in "${files[@]}"; do
	case $f in core/*/*.c | preload/*.c | node/*.c | tools/*/*.c) ;; *) continue ;; esac
	s=${f##*/}
	s=${s%.c}
	grep -qE "(^|[^A-Za-z0-9_])${s}\.[ch]([^A-Za-z0-9_]|$)" <<<"$text" && continue
	echo "$f: not named in $doc §2-§5"
	bad=1
done
all=$(printf '/%s\n' "${files[@]}")
while read -r n; do
	[[ $GONE == *" $n "* ]] && continue
	case $n in
	*/*) [ -e "$n" ] || grep -qF -- "/${n#./}" <<<"$all" && continue ;;
	*) grep -qx -- ".*/$n" <<<"$all" && continue ;;
	esac
	echo "$doc: names $n, which is not in the tree"
	bad=1
done < <(grep -oE '[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(c|h|sh|def)([^A-Za-z0-9_]|$)' <<<"$text" |
	sed -E 's/[^A-Za-z0-9_]$//; s#\.([ch])/#.\1\n#g' | sort -u)
exit "$bad"
