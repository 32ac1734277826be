#!/usr/bin/env bash
# profile_small_files.sh — where the time of a small-file workload goes
# under the shim (issue 23; not a bench_*.sh, so `make bench` does not run
# it).  For `tar -x` of FILES (300) files of 0-8 KiB in 10 directories and
# `git clone` of a repository of GITFILES (300) files and 10 commits, on a
# 2-group cluster with the nodes' default durability, sync_on_close=1:
#
#   wall, user and system CPU of the program (with its children) under the
#   shim and on local disk, and the nodes' CPU during the shim run;
#   net_waits / net_requests (the shim's stats) and the kv operations that
#   made them (the "rtt:" lines of a log_level=debug run, by operation);
#   `strace -f -c` of both sides: every syscall the shim adds, per file;
#   `strace -f -w -c` of the shim run: wall time inside each syscall
#   (ppoll/poll = waiting on the cluster, fsync, locks);
#   `strace -f -y` of the shim run, each call classed by what it touches
#   (the cache's own files, the cached data, the cluster's sockets, other).
#
# Output: a report on stdout; the raw traces stay in PROFILE_OUT (default
# tests/tmp/profile).  PERF=1 also records `perf record -g` of the nodes
# during a tar run (PROFILE_OUT/node.perf.txt).  Takes ~1-2 minutes.
. "$(dirname "$0")/lib.sh"
bench_init profile
FILES=${FILES:-300} GITFILES=${GITFILES:-300}
OUT=${PROFILE_OUT:-$PWD/tests/tmp/profile}
mkdir -p "$OUT"
command -v strace >/dev/null || fail "strace is not installed"
BENCH_GROUPS=2 BENCH_NODE_SYNC=default bench_cluster
mkdir -p "$W/local" "$W/src"
small_tar "$W/src/tree.tar" "$FILES"
git_repo "$W/src/repo" "$GITFILES"
S=$W/src
declare -A CMD=([tar]="tar -xf '$S/tree.tar'" [git]="git clone -q 'file://$S/repo' clone")
declare -A PER=([tar]=$FILES [git]=$(git -C "$S/repo" ls-files | wc -l))

counter() { awk -v k="$2" '$1 == k {v = $2} END {print v + 0}' "$W/$1-state/stats" 2>/dev/null || echo 0; }
node_ticks() {	# the nodes' user+system CPU so far, in clock ticks
	local n p t=0
	for n in $("$BIN/pohmelfs-cluster" nodes "$CLUSTER"); do
		p=$("$BIN/pohmelfs-cluster" pid "$CLUSTER" "$n")
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t"
}
HZ=$(getconf CLK_TCK)
# The shim's environment as a command prefix (for time and strace, which
# cannot run lib.sh's shim function).
SHIM=(env LD_PRELOAD="$LIB" POHMELFS_PREFIX="$W/a" POHMELFS_CACHE_DIR="$W/a-state" POHMELFS_HOST_ID=a)
# timed CMD...: "wall user sys" of CMD and its children.
timed() { /usr/bin/time -f '%e %U %S' -o "$W/time" "$@" >&2 || fail "command failed: $*"; cat "$W/time"; }

n=0
for wl in tar git; do
	cmd=${CMD[$wl]} per=${PER[$wl]}
	echo "== $wl: ${cmd//$W/\$W} ($per files), load $(cut -d' ' -f1-3 /proc/loadavg)"
	# Times: 3 alternating rounds each, the median.
	: >"$W/t.disk"; : >"$W/t.shim"
	for r in 1 2 3; do
		n=$((n + 1))
		timed bash -ec "mkdir '$W/local/$wl$n' && cd '$W/local/$wl$n' && $cmd" >>"$W/t.disk"
		n=$((n + 1))
		w0=$(counter a net_waits) q0=$(counter a net_requests) k0=$(node_ticks)
		[ -n "$k0" ] || fail "the nodes' CPU"
		t=$(timed "${SHIM[@]}" bash -ec "mkdir -p '$W/a/$wl$n' && cd '$W/a/$wl$n' && $cmd")
		echo "$t $(($(counter a net_waits) - w0)) $(($(counter a net_requests) - q0)) $(($(node_ticks) - k0))" >>"$W/t.shim"
	done
	awk -v per="$per" -v hz="$HZ" '
		FNR == 1 {f++}
		f == 1 {dw[FNR] = $1; du[FNR] = $2; ds[FNR] = $3}
		f == 2 {sw[FNR] = $1; su[FNR] = $2; ss[FNR] = $3; wt[FNR] = $4; rq[FNR] = $5; nd[FNR] = $6 / hz}
		function med(a,   n, i, j, t, b) { n = 0; for (i in a) b[++n] = a[i]
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
			return b[int((n + 1) / 2)] }
		END {
			printf "  local disk: wall %.3f s, user %.2f s, sys %.2f s (median of 3)\n", med(dw), med(du), med(ds)
			printf "  shim:       wall %.3f s, user %.2f s, sys %.2f s; nodes CPU %.2f s; ratio %.1fx\n", med(sw), med(su), med(ss), med(nd), med(sw) / med(dw)
			printf "  shim per file: wall %.2f ms, client CPU %.2f ms, nodes CPU %.2f ms, %.2f waits, %.2f requests\n", med(sw) * 1000 / per, (med(su) + med(ss)) * 1000 / per, med(nd) * 1000 / per, med(wt) / per, med(rq) / per
			printf "  wall not covered by client or node CPU: %.0f %%\n", 100 * (1 - (med(su) + med(ss) + med(nd)) / med(sw))
		}' "$W/t.disk" "$W/t.shim"

	# The kv operations that waited (debug log, one run).
	n=$((n + 1))
	POHMELFS_LOG_LEVEL=debug POHMELFS_LOG=$OUT/$wl.debug.log shim a bash -ec \
		"mkdir -p '$W/a/$wl$n' && cd '$W/a/$wl$n' && $cmd" >&2 || fail "$wl debug run"
	echo "  kv operations by kind (debug run): count, waits, requests; per file"
	sed -n 's/.*rtt: \([a-z_]*\) \([^ /]*\).*: -\{0,1\}[0-9]*, \([0-9]*\) waits, \([0-9]*\) requests/\1 \2 \3 \4/p' \
		"$OUT/$wl.debug.log" | awk -v per="$per" '
		{ k = $1; c[k]++; w[k] += $3; q[k] += $4; tw += $3 }
		END { for (k in c) printf "    %-22s %6d %6d %6d   %.2f waits/file\n", k, c[k], w[k], q[k], w[k] / per | "sort -k3 -nr"
			close("sort -k3 -nr"); printf "    total waits %d (%.2f per file)\n", tw, tw / per }'

	# Syscalls, shim against local disk.
	n=$((n + 1))
	strace -f -c -S calls -o "$OUT/$wl.disk.strace-c" bash -ec \
		"mkdir '$W/local/$wl$n' && cd '$W/local/$wl$n' && $cmd" >&2 || fail "strace $wl disk"
	strace -f -c -S calls -o "$OUT/$wl.shim.strace-c" "${SHIM[@]}" bash -ec \
		"mkdir -p '$W/a/$wl$n' && cd '$W/a/$wl$n' && $cmd" >&2 || fail "strace $wl shim"
	echo "  syscalls (strace -f -c): the calls the shim adds, per file (shim - disk)"
	awk -v per="$per" '
		function rd(f, a,   l, x) { while ((getline l < f) > 0) { n = split(l, x)
			if (l ~ /^-|^%|total/ || n < 5) continue; a[x[n]] = (n == 6) ? x[4] : x[4] } }
		BEGIN { rd(ARGV[1], d); rd(ARGV[2], s)
			for (k in s) { ts += s[k]; if ((s[k] - d[k]) / per >= 0.5) printf "    %-16s %7d %7d  %+7.1f per file\n", k, s[k], d[k], (s[k] - d[k]) / per | "sort -k4 -gr" }
			for (k in d) td += d[k]
			close("sort -k4 -gr")
			printf "    all syscalls: shim %d (%.1f per file), disk %d (%.1f per file)\n", ts, ts / per, td, td / per }' \
		"$OUT/$wl.disk.strace-c" "$OUT/$wl.shim.strace-c"

	# Wall time inside syscalls (strace -w: overhead inflates the cheap ones).
	n=$((n + 1))
	strace -f -w -c -S time -o "$OUT/$wl.shim.strace-wc" "${SHIM[@]}" bash -ec \
		"mkdir -p '$W/a/$wl$n' && cd '$W/a/$wl$n' && $cmd" >&2 || fail "strace -w $wl shim"
	echo "  wall time inside syscalls under strace -w (top 8; seconds, calls):"
	grep -vE '^(-|%|$)|total' "$OUT/$wl.shim.strace-wc" | head -n 8 | awk '{printf "    %-16s %8.3f s %7d\n", $NF, $2, $4}'

	# Every call classed by what it touches.
	n=$((n + 1))
	strace -f -y -T -qq -o "$OUT/$wl.shim.strace-y" "${SHIM[@]}" bash -ec \
		"mkdir -p '$W/a/$wl$n' && cd '$W/a/$wl$n' && $cmd" >&2 || fail "strace -y $wl shim"
	echo "  syscalls by what they touch (strace -f -y -T), calls per file and seconds in them:"
	"$PY" - "$OUT/$wl.shim.strace-y" "$W/a-state" "$W/a" "$per" <<'PY'
import re, sys, collections
path, state, pfx, per = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cnt, tim, calls = collections.Counter(), collections.Counter(), collections.defaultdict(collections.Counter)
for line in open(path, errors="replace"):
    m = re.match(r"\d+\s+(\w+)\((.*)\)\s+=.*<([\d.]+)>$", line)
    if not m:
        continue
    name, args, t = m.group(1), m.group(2), float(m.group(3))
    if state in args:
        if re.search(r'[/"]j/|j\.lock|j\.slots|x\.idx', args):
            c = "the cache's journal (j.slots, j/, j.lock, x.idx)"
        elif ".lock" in args:
            c = "the cache's other locks (*.lock)"
        else:
            c = "the cache's other files (sq/, stats, ...)"
    elif "TCP:" in args or "socket:" in args or name in ("ppoll", "poll", "epoll_wait", "sendmsg", "recvmsg", "sendto", "recvfrom"):
        c = "cluster sockets / waits"
    elif pfx in args:
        c = "files under the prefix (program's and shim's)"
    elif name in ("geteuid", "getegid", "getuid", "getgid", "setfsuid", "setfsgid", "capget"):
        c = "credential checks"
    elif name in ("getpid", "gettid", "clock_gettime", "rt_sigprocmask", "futex"):
        c = "process bookkeeping (" + name + ")"
    else:
        c = "other"
    cnt[c] += 1; tim[c] += t; calls[c][name] += 1
for c, n in cnt.most_common():
    top = ", ".join("%s %d" % kv for kv in calls[c].most_common(5))
    print("    %-44s %7.1f/file %7.3f s   %s" % (c, n / per, tim[c], top))
PY
done

if [ "${PERF:-0}" = 1 ] && command -v perf >/dev/null; then
	pids=$(for nd in $("$BIN/pohmelfs-cluster" nodes "$CLUSTER"); do "$BIN/pohmelfs-cluster" pid "$CLUSTER" "$nd"; done | paste -sd,)
	perf record -q -g -o "$OUT/node.perf" -p "$pids" -- sleep 600 >&2 2>&1 &
	pp=$!
	sleep 0.5
	n=$((n + 1))
	shim a bash -ec "mkdir -p '$W/a/tar$n' && cd '$W/a/tar$n' && ${CMD[tar]}" >&2
	kill -INT "$pp"; wait "$pp" 2>/dev/null
	perf report -q -i "$OUT/node.perf" --no-children --sort symbol --stdio 2>/dev/null |
		grep -E '^ +[0-9]' | head -n 25 >"$OUT/node.perf.txt"
	echo "== the nodes during one tar -x (perf, top symbols, self):"
	head -n 15 "$OUT/node.perf.txt" | sed 's/^/   /'
fi
