#!/usr/bin/env bash
# tests/circles.sh BUILD_DIR — no circles between files that are not one
# unit (issue 20).
#
# The graph: object file A -> B when A refers to a symbol (function or
# data, nm) that B defines, over BUILD_DIR/obj/{core,preload,node,tools}.
# Objects whose source is gone (a working build directory's leftovers) are
# left out.  This is the real "who calls whom": since the layer folders, a layer's
# files share one public or private header, so #include lines no longer
# show it.  A circle is a strongly connected set of two or more files.
#
# tests/units.list declares the circles that are one unit on purpose: one
# line per unit, its files (paths without .c), each circle a reason.
# Every circle found must be exactly one unit of the list: a circle that
# is not listed (a new mutual call between files, or a listed unit that
# grew a file) fails, and so does a listed unit that is no longer exactly
# a circle (a file left it, or the files are gone): take it off or shrink
# it, so that the list stays the truth.
#
# Prints one line per violation and exits 1 if there is any, else 0.
# Run by tests/bats/arch_layering.bats (make check).
set -u
cd "${POHM_CIRCLES_ROOT:-$(dirname "$0")/..}" || exit 2
[ $# -eq 1 ] || { echo "usage: tests/circles.sh BUILD_DIR" >&2; exit 2; }
[ -d "$1/obj" ] || { echo "$1/obj: no objects" >&2; exit 2; }
list=tests/units.list
[ -f "$list" ] || { echo "$list: missing" >&2; exit 2; }
exec python3 - "$1/obj" "$list" <<'PY'
import os, subprocess, sys
from collections import defaultdict
objdir, listf = sys.argv[1], sys.argv[2]
objs = []
for top in ("core", "preload", "node", "tools"):
    for d, _, fs in os.walk(os.path.join(objdir, top)):
        # An object whose source is gone is an earlier layout's leftover
        # in a working build directory: not part of the tree.
        objs += [os.path.join(d, f) for f in fs if f.endswith(".o") and
                 os.path.exists(os.path.relpath(os.path.join(d, f), objdir)[:-2] + ".c")]
name = {o: os.path.relpath(o, objdir)[:-2] for o in objs}
defs, refs = {}, defaultdict(set)
for o in sorted(objs):
    out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRVWGS":
            defs.setdefault(p[2], name[o])
        elif len(p) == 2 and p[0] == "U":
            refs[name[o]].add(p[1])
edges = defaultdict(set)
for a, syms in refs.items():
    for s in syms:
        b = defs.get(s)
        if b and b != a:
            edges[a].add(b)
# Tarjan's strongly connected components, iteratively.
index, low, stack, on, circles, n = {}, {}, [], set(), [], 0
for root in sorted(name.values()):
    if root in index:
        continue
    work = [(root, iter(sorted(edges[root])))]
    index[root] = low[root] = n; n += 1; stack.append(root); on.add(root)
    while work:
        v, it = work[-1]
        for w in it:
            if w not in index:
                index[w] = low[w] = n; n += 1; stack.append(w); on.add(w)
                work.append((w, iter(sorted(edges[w]))))
                break
            if w in on:
                low[v] = min(low[v], index[w])
        else:
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                c = set()
                while True:
                    w = stack.pop(); on.discard(w); c.add(w)
                    if w == v:
                        break
                if len(c) > 1:
                    circles.append(frozenset(c))
units = {}
for ln, line in enumerate(open(listf), 1):
    line = line.split("#", 1)[0].split()
    if not line:
        continue
    units[frozenset(line)] = ln
bad = 0
for c in sorted(circles, key=sorted):
    if c in units:
        continue
    bad = 1
    print("a circle that is not one unit of %s: %s" % (listf, " ".join(sorted(c))))
    for a in sorted(c):
        for b in sorted(edges[a] & c):
            print("    %s -> %s" % (a, b))
for u, ln in sorted(units.items(), key=lambda x: x[1]):
    if u not in circles:
        bad = 1
        print("%s:%d: %s is not exactly one circle (any more): shrink the unit or "
              "take it off" % (listf, ln, " ".join(sorted(u))))
sys.exit(bad)
PY
