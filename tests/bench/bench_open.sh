#!/usr/bin/env bash
# bench_open.sh — what the shim adds to open+close of a cached file whose
# validation is within attr_timeout (issue 7: ≤ 5 µs over the real open),
# and of one that must be validated (attr_timeout=0: one LOOKUP round trip
# to the local node); and the cached open through a dirfd under the prefix
# (openat, the dirfd's name checked by identity: one fstatat, issue 18) and
# relative to a cwd under the prefix (one getcwd).  helpers/open_loop times N pairs; the same file is
# opened without the shim as the baseline; median of REPS interleaved rounds.
. "$(dirname "$0")/lib.sh"
bench_init open
REPS=${REPS:-9} N=${N:-20000} NV=${NV:-2000}
[ "$QUICK" = 1 ] && REPS=3 N=2000 NV=200
loop=$BIN/tests/helpers/open_loop
[ -x "$loop" ] || fail "$loop missing (make)"
bench_cluster
shim a sh -c "echo cached > $W/a/f" || fail "write"
shim a cat "$W/a/f" >/dev/null || fail "materialize"

none() { "$loop" "$N" "$W/a/f"; }
cached() { POHMELFS_ATTR_TIMEOUT=3600 shim a "$loop" "$N" "$W/a/f"; }
none_v() { "$loop" "$NV" "$W/a/f"; }
validated() { POHMELFS_ATTR_TIMEOUT=0 shim a "$loop" "$NV" "$W/a/f"; }

interleave "$REPS" none cached
d=$(paste "$W/m.none" "$W/m.cached" | awk '{print $2 - $1}' | sort -g |
	awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
row "open of a cached file (shim-none us)" "$(fmt "$d / 1000")" \
	"open+close within attr_timeout; $(fmt "$(median_of "$W/m.none") / 1000") us without; median of $REPS x $N"
interleave "$REPS" none_v validated
d=$(paste "$W/m.none_v" "$W/m.validated" | awk '{print $2 - $1}' | sort -g |
	awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
row "open with validation (shim-none us)" "$(fmt "$d / 1000")" \
	"attr_timeout=0: one LOOKUP round trip per open; median of $REPS x $NV"

none_at() { "$loop" "$N" "$W/a/f" at; }
cached_at() { POHMELFS_ATTR_TIMEOUT=3600 shim a "$loop" "$N" "$W/a/f" at; }
none_cwd() { "$loop" "$N" "$W/a/f" cwd; }
cached_cwd() { POHMELFS_ATTR_TIMEOUT=3600 shim a "$loop" "$N" "$W/a/f" cwd; }

interleave "$REPS" none_at cached_at
d=$(paste "$W/m.none_at" "$W/m.cached_at" | awk '{print $2 - $1}' | sort -g |
	awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
row "openat(dirfd) of a cached file (shim-none us)" "$(fmt "$d / 1000")" \
	"dirfd under the prefix, checked by identity; $(fmt "$(median_of "$W/m.none_at") / 1000") us without; median of $REPS x $N"
interleave "$REPS" none_cwd cached_cwd
d=$(paste "$W/m.none_cwd" "$W/m.cached_cwd" | awk '{print $2 - $1}' | sort -g |
	awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
row "relative open, cwd under the prefix (shim-none us)" "$(fmt "$d / 1000")" \
	"the cwd's name from getcwd; $(fmt "$(median_of "$W/m.none_cwd") / 1000") us without; median of $REPS x $N"
