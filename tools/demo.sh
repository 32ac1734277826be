#!/usr/bin/env bash
# tools/demo.sh — `make demo`: start a local 3-group cluster, run real,
# unmodified programs against it through LD_PRELOAD=libpohmelfs.so, show
# what happened, prove from a second empty cache ("another host") that
# everything is in the storage, stop the cluster.  About half a minute.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${B:-build}
case $B in /*) BIN=$B ;; *) BIN=$PWD/$B ;; esac
work=$(mktemp -d /tmp/pohmelfs-demo.XXXXXX)
cluster=$work/cluster
started=

cleanup() {
	for h in host1 host2; do
		[ -f "$work/$h-state/pohmelfsd.pid" ] && kill "$(cat "$work/$h-state/pohmelfsd.pid")" 2>/dev/null
	done
	[ -n "$started" ] && "$BIN/pohmelfs-cluster" stop "$cluster" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# Bold headings on a terminal only: `make demo > log` gets plain text.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
# why LINE: what the section shows and why it matters, in one line.
why() { printf '   %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

for f in libpohmelfs.so pohmelfs-node pohmelfs-cluster pohmelfs pohmelfsd; do
	[ -e "$BIN/$f" ] || { echo "demo: $BIN/$f is missing; run make first" >&2; exit 1; }
done

say "1. A local cluster: 3 groups x 2 nodes on 127.0.0.1 (pohmelfs-node speaks the Elliptics protocol)"
eval "$("$BIN/pohmelfs-cluster" start "$cluster" --groups 3 --nodes-per-group 2)" || exit 1
started=1
echo "POHMELFS_SERVERS=$POHMELFS_SERVERS"
echo "POHMELFS_GROUPS=$POHMELFS_GROUPS"
export POHMELFS_FSID=demo POHMELFS_SYNC_ON_CLOSE=1 POHMELFS_ATTR_TIMEOUT=0

# A small C project as a source tarball.
mkdir -p "$work/src/hello"
cat >"$work/src/hello/main.c" <<'C'
#include <stdio.h>
int greet(const char *who);
int main(int argc, char **argv) { return greet(argc > 1 ? argv[1] : "world"); }
C
cat >"$work/src/hello/greet.c" <<'C'
#include <stdio.h>
int greet(const char *who) { return printf("hello, %s, from a binary stored in Elliptics\n", who) < 0; }
C
printf 'hello: main.o greet.o\n\tcc -o hello main.o greet.o\nclean:\n\trm -f hello *.o\n' >"$work/src/hello/Makefile"
tar -C "$work/src" -czf "$work/hello.tar.gz" hello

host1() { LD_PRELOAD=$BIN/libpohmelfs.so POHMELFS_PREFIX=$work/host1 POHMELFS_CACHE_DIR=$work/host1-state POHMELFS_HOST_ID=host1 "$@"; }
host2() { LD_PRELOAD=$BIN/libpohmelfs.so POHMELFS_PREFIX=$work/host2 POHMELFS_CACHE_DIR=$work/host2-state POHMELFS_HOST_ID=host2 "$@"; }

say "2. Host 1 unpacks the tarball into its prefix, builds it with make, runs it from there"
echo "   (LD_PRELOAD=libpohmelfs.so, POHMELFS_PREFIX=$work/host1; tar, make, cc and the shell are unmodified)"
host1 bash -c "cd '$work/host1' && tar -xzf '$work/hello.tar.gz' && make -s -C hello && ./hello/hello demo && git init -q notes && echo 'stored in 3 groups' > notes/README && git -C notes add . && git -C notes -c user.email=demo@pohmelfs -c user.name=demo commit -qm 'first note' && echo '   git commit: ok'" || exit 1

say "2b. What the library did for those programs (pohmelfs stats: every process's counters)"
POHMELFS_PREFIX=$work/host1 POHMELFS_CACHE_DIR=$work/host1-state "$BIN/pohmelfs" stats |
	sed -n '/^counters/,$p' | awk 'NR == 1 || $2 != 0'

say "3. The raw storage: the root directory's object, looked up in every group"
why "A group is one complete copy of the data; the same size and sha512 in all 3 groups mean 3 identical copies, so one group can be lost."
run "$BIN/pohmelfs" lookup i:1 || true

say "4. Host 2 starts with an empty cache and sees everything, from the storage"
host2 bash -c "cd '$work/host2' && ls -l hello && ./hello/hello 'host 2' && git -C notes log --format='   git log: %s' && cmp hello/main.c '$work/src/hello/main.c' && echo '   sources identical'" || exit 1

say "5. One group goes down: reads and writes go on with the other two"
"$BIN/pohmelfs-cluster" kill "$cluster" 1-1 >/dev/null 2>&1 || true
"$BIN/pohmelfs-cluster" kill "$cluster" 1-2 >/dev/null 2>&1 || true
rm -rf "$work/host2" "$work/host2-state"	# a fresh cache again (plain rm: not through the shim)
host2 bash -c "cd '$work/host2' && ./hello/hello 'a host reading with group 1 down' && echo 'written with group 1 down' > notes/down && echo \"   \$(cat notes/down)\"" || exit 1
host1 bash -c "cat '$work/host1/notes/down' | sed 's/^/   host 1 reads: /'" || exit 1

say "6. Cluster status, as a client sees it with group 1 down"
why "Group 1's nodes are DOWN and it has NO ROUTE; writes need a quorum of 2 of the 3 groups, so they went on in section 5."
# Up to the route table (one line per ring id of every node): its size only.
"$BIN/pohmelfs" status 2>&1 | awk '/^route/ { r = 1; next } r && /^  / { n++; next } { r = 0; print }
	END { if (n) printf "route: %d ring ids, each naming the node that stores the keys from it up (pohmelfs status lists them)\n", n }' || true

say "Done. Stopping the cluster."
