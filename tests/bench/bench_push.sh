#!/usr/bin/env bash
# bench_push.sh — what pushes send (issue 22 item 12): the pushes and bytes
# of a program that changes one file continuously through one fd, against
# the number of times it asked for durability (msync MS_SYNC); and the
# bytes of a 1-byte change in a 5-chunk file.  Counters are the process's
# own (stats=1 at exit: pushes, bytes_pushed).
#
# The mix imitates fsx (xfstests' ltp/fsx.c, default options: a file of at
# most 256 KiB, random writes, ftruncates, mapped writes with msync and
# munmap, mapped reads, reads), seeded, so every run does the same.  With
# FSX=/path/to/fsx the real fsx runs too (-N 20000 -q; fsx is not packaged
# by Debian: build it from xfstests' ltp/fsx.c).
. "$(dirname "$0")/lib.sh"
bench_init push
bench_cluster
export POHMELFS_ATTR_TIMEOUT=0
# Every push counted here is the measured process's own: no pohmelfsd
# pushing a dirty file on its timer between a write and its close (the
# 1-byte row once read "1 push, 0 B" in CI: the daemon had sent the chunk).
export POHMELFS_SYNC_TIMEOUT=3600
OPS=5000
[ "$QUICK" = 1 ] && OPS=500
mkdir -p "$W/a"

# stat_of NAME FILE: NAME's value in a stats=1 table.
stat_of() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }

# The fsx-like mix.  Prints the msync count on stdout.  Log level info:
# a failure's cause (which storage call, which node: "compare-and-swap
# applied on 0 of 1 groups ... no answer in time") lands in mix.stats,
# which fail_with shows; the counters are what is measured, not time.
shim a env POHMELFS_STATS=1 POHMELFS_LOG_LEVEL=info "$PY" - "$W/a/f" "$OPS" >"$W/mix.out" 2>"$W/mix.stats" <<'EOF' ||
import mmap, os, random, sys, traceback
path, ops = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
MAX = 256 * 1024
NAMES = ("pwrite", "ftruncate", "mapped write+msync", "mapped write+munmap", "pread", "mapped read")
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
size, syncs = 0, 0

def step(op, off, n):
    global size, syncs
    if op == 0:
        os.pwrite(fd, rnd.randbytes(n), off)
        size = max(size, off + n)
    elif op == 1:
        size = rnd.randrange(MAX)
        os.ftruncate(fd, size)
    elif op in (2, 3):
        if off + n > size:
            size = off + n
            os.ftruncate(fd, size)
        base = off - off % mmap.PAGESIZE
        m = mmap.mmap(fd, off + n - base, mmap.MAP_SHARED,
                      mmap.PROT_READ | mmap.PROT_WRITE, offset=base)
        m[off - base:off - base + n] = rnd.randbytes(n)
        if op == 2:
            m.flush()           # msync(MS_SYNC): a durability point
            syncs += 1
        m.close()
    elif op == 4 and size:
        os.pread(fd, n, rnd.randrange(size))
    elif op == 5 and size:
        base = 0
        m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        m[rnd.randrange(size)]
        m.close()

for i in range(ops):
    op = rnd.randrange(6)
    off = rnd.randrange(MAX)
    n = rnd.randrange(1, 65536)
    if off + n > MAX:
        n = MAX - off
    try:
        step(op, off, n)
    except Exception as e:
        # Which call failed: the last line, for the FAILED row (fail_with).
        traceback.print_exc()
        sys.exit("mix: op %d of %d failed (%s, offset %d, %d bytes, file size %d, "
                 "%d msyncs before): %r" % (i, ops, NAMES[op], off, n, size, syncs, e))
try:
    os.close(fd)
except OSError as e:
    traceback.print_exc()
    sys.exit("mix: the final close failed: %r" % e)
print(syncs)
EOF
	fail_with "$W/mix.stats" "the fsx-like mix"
cat "$W/mix.stats" >&2
syncs=$(cat "$W/mix.out")
pushes=$(stat_of pushes "$W/mix.stats")
bytes=$(stat_of bytes_pushed "$W/mix.stats")
[ -n "$pushes" ] && [ -n "$bytes" ] || fail "no counters from the mix"
row "push: fsx-like mix (pushes per durability point)" "$(fmt "$pushes / ($syncs + 1)")" \
	"$OPS ops, $syncs msync(MS_SYNC) + 1 close: $pushes pushes, $(fmt "$bytes / 1e6") MB"

# A 1-byte change in a 5-chunk file: one chunk.
head -c 4500000 /dev/urandom >"$W/src"
shim a cp "$W/src" "$W/a/g" || fail "cp"
shim a env POHMELFS_STATS=1 "$PY" -c "
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b'Z', 2100000)
os.close(fd)" "$W/a/g" 2>"$W/one.stats" || fail_with "$W/one.stats" "1-byte change"
cat "$W/one.stats" >&2
bytes=$(stat_of bytes_pushed "$W/one.stats")
row "push: 1 byte of a 4.5 MB file (MiB sent)" "$(fmt "$bytes / 1048576")" \
	"$(stat_of pushes "$W/one.stats") push, $bytes B"

if [ -n "${FSX:-}" ] && [ -x "$FSX" ]; then
	N=20000
	[ "$QUICK" = 1 ] && N=2000
	shim a env POHMELFS_STATS=1 "$FSX" -q -N $N -P "$W" "$W/a/fsx" >&2 2>"$W/fsx.stats" ||
		fail_with "$W/fsx.stats" "fsx"
	cat "$W/fsx.stats" >&2
	row "push: fsx -N $N (pushes)" "$(stat_of pushes "$W/fsx.stats")" \
		"$(fmt "$(stat_of bytes_pushed "$W/fsx.stats") / 1e6") MB pushed"
fi
