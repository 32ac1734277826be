#!/usr/bin/env bash
# bench_cold.sh — SIZE_MB (256 MiB) through the shim against the raw client
# and the local disk (issue 11: cold read ≥ 0.9 of the raw client).
#
#   cold read:   `cat` of a file stored by host a, on a host with an empty
#                cache (a new one each round: the open fetches the whole
#                file, then cat reads the local copy)
#                ÷ `pohmelfs get` of a key holding the same bytes
#                ÷ `cat` of a local file (in the page cache: no disk is cold here)
#   write+push:  `cat src > file` under the shim with sync_on_close (the push
#                is part of close) ÷ `pohmelfs put` ÷ `cat src > file` locally
#                (the nodes run --nosync, so neither side waits for a disk).
# Wall time of the whole command, a new file name each round; ratios are
# throughput under the shim ÷ the other side, median of REPS interleaved
# rounds.  Checksums are on (the default) for both the shim and the raw client.
. "$(dirname "$0")/lib.sh"
bench_init cold
REPS=${REPS:-5} SIZE_MB=${SIZE_MB:-256}
[ "$QUICK" = 1 ] && REPS=3 SIZE_MB=16
bench_cluster
# A loaded 2-core machine can take longer than the default 5 s for one
# piece of a 256 MiB read with checksums (the node hashes the record); the
# benchmark measures throughput, so it waits (both the shim and the raw client).
export POHMELFS_READ_WAIT_TIMEOUT=${POHMELFS_READ_WAIT_TIMEOUT:-60} POHMELFS_WRITE_WAIT_TIMEOUT=${POHMELFS_WRITE_WAIT_TIMEOUT:-60}
P=$BIN/pohmelfs

head -c "${SIZE_MB}M" /dev/urandom >"$W/src" || fail "making the data"
mkdir -p "$W/local"
cp "$W/src" "$W/local/cold"

# The stored copies: one file through the shim, one raw key.
shim a bash -c "mkdir -p '$W/a/d' && cat '$W/src' > '$W/a/d/cold'" || fail "storing the file through the shim"
"$P" put cold-raw <"$W/src" >&2 || fail "pohmelfs put"

read_shim() { secs shim "r$1" bash -c "cat '$W/r$1/d/cold' >/dev/null"; }
read_raw() { secs bash -c "'$P' get cold-raw >/dev/null"; }
read_disk() { secs bash -c "cat '$W/local/cold' >/dev/null"; }
write_shim() { secs shim a bash -c "cat '$W/src' > '$W/a/d/w$1'"; }
write_raw() { secs bash -c "'$P' put w$1 < '$W/src'"; }
write_disk() { secs bash -c "cat '$W/src' > '$W/local/w$1'"; }

interleave "$REPS" read_shim read_raw read_disk
# Every fetched copy is whole and right.
for ((r = 0; r < REPS; r++)); do
	cmp "$W/r$r/d/cold" "$W/src" || fail "host r$r fetched different bytes"
done
interleave "$REPS" write_shim write_raw write_disk
for ((r = 0; r < REPS; r++)); do
	rm -f "$W/local/w$r"
done
shim c cmp "$W/c/d/w$((REPS - 1))" "$W/src" || fail "another host does not read back what was written"

out=$(bench_out throughput.tsv)
for op in read write; do
	ts=$(median_of "$W/m.${op}_shim"); tr=$(median_of "$W/m.${op}_raw"); td=$(median_of "$W/m.${op}_disk")
	what="cold read" raw=get
	[ $op = write ] && what="write+push" raw=put
	row "$what ${SIZE_MB}M (MB/s shim/raw)" "$(ratio_median "${op}_raw" "${op}_shim")" \
		"$(fmt "$SIZE_MB / $ts") MiB/s under the shim, $(fmt "$SIZE_MB / $tr") raw pohmelfs $raw; wall, median of $REPS"
	row "$what ${SIZE_MB}M (MB/s shim/disk)" "$(ratio_median "${op}_disk" "${op}_shim")" \
		"$(fmt "$SIZE_MB / $td") MiB/s local cat (page cache)"
	printf '%s\t%s\t%s\t%s\n' "$what" "$(fmt "$SIZE_MB / $ts")" "$(fmt "$SIZE_MB / $tr")" \
		"$(fmt "$SIZE_MB / $td")" >>"$out"
done
