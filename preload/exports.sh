#!/bin/sh
# exports.sh SYMS.DEF — print the linker version script that exports exactly
# the names listed in syms.def and hides everything else (the private
# jemalloc, core/ and preload/ internals).
set -e
echo '{'
echo '  global:'
sed -n 's/^SYM[VX]\{0,1\}([^,]*, *\([A-Za-z0-9_]*\),.*/    \1;/p' "$1"
echo '  local: *;'
echo '};'
