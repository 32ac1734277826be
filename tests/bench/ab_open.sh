#!/usr/bin/env bash
# (Not named bench_*: tests/bench/run runs every bench_*.sh without arguments.)
# ab_open.sh LIB_A LIB_B — what two builds of the library add to open+close
# of a cached file, side by side in one run (the same cluster, file and
# rounds; the order rotates each round): O_RDONLY within attr_timeout (the
# cached open, issue 7), and O_WRONLY without a write (a write-open: since
# session 9 an open-for-write lock and a pohmelfsd liveness test, decision
# 0016).  sync_on_close=0, so the close of a writer does not push.
# Prints per row the median of (with - without) in microseconds for A and B.
#
# Environment: B (build dir with tests/helpers, default build), REPS
# (default 9), N (pairs per run, default 20000).
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || { echo "usage: $0 LIB_A LIB_B" >&2; exit 2; }
libA=$(realpath "$1") libB=$(realpath "$2")
bench_init ab_open
REPS=${REPS:-9} N=${N:-20000}
loop=$BIN/tests/helpers/open_loop
[ -x "$loop" ] || fail "$loop missing (make)"
mkdir "$W/liba" "$W/libb"
cp "$libA" "$W/liba/libpohmelfs.so" && cp "$libB" "$W/libb/libpohmelfs.so" || fail "copy"
bench_cluster
export POHMELFS_SYNC_ON_CLOSE=0 POHMELFS_ATTR_TIMEOUT=3600
shim a sh -c "echo cached > $W/a/f" || fail "write"
shim a cat "$W/a/f" >/dev/null || fail "materialize"

with() { LD_PRELOAD=$1 POHMELFS_PREFIX=$W/a POHMELFS_CACHE_DIR=$W/a-state POHMELFS_HOST_ID=a \
	"$loop" "$N" "$W/a/f" ${2:+"$2"}; }
r_none() { "$loop" "$N" "$W/a/f"; }
r_a() { with "$W/liba/libpohmelfs.so"; }
r_b() { with "$W/libb/libpohmelfs.so"; }
w_none() { "$loop" "$N" "$W/a/f" w; }
w_a() { with "$W/liba/libpohmelfs.so" w; }
w_b() { with "$W/libb/libpohmelfs.so" w; }

# delta X NONE: median over rounds of (m.X - m.NONE), in us.
delta() {
	paste "$W/m.$1" "$W/m.$2" | awk '{print ($1 - $2) / 1000}' >"$W/d.$1"
	median_of "$W/d.$1"
}

interleave "$REPS" r_none r_a r_b
interleave "$REPS" w_none w_a w_b
row "cached open O_RDONLY, A (shim-none us)" "$(fmt "$(delta r_a r_none)")" \
	"$(fmt "$(median_of "$W/m.r_none") / 1000") us without; median of $REPS x $N"
row "cached open O_RDONLY, B (shim-none us)" "$(fmt "$(delta r_b r_none)")" ""
row "write-open O_WRONLY, A (shim-none us)" "$(fmt "$(delta w_a w_none)")" \
	"$(fmt "$(median_of "$W/m.w_none") / 1000") us without"
row "write-open O_WRONLY, B (shim-none us)" "$(fmt "$(delta w_b w_none)")" ""
