#!/usr/bin/env bats
# preload_process.bats — the shim inside other people's processes (DESIGN.md
# §5, issue 8): fds under the prefix handed across exec, fork/vfork/
# posix_spawn children, internal fds that survive hosts closing what they
# never opened, many threads at once, dlopen keeping the caller's RUNPATH,
# nothing on stdout, and a cheap light init.

setup() {
	# These test the interposition layer alone: the storage hooks stay out.
	export POHMELFS_TEST_PASSTHROUGH=1
	POHM_TEST_BUILD=1	# the library that reads the switch
	load lib/common
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	T=$BATS_TEST_TMPDIR
	P=$T/p
	mkdir -p "$P/d" "$T/o"
	echo f >"$P/f"; echo g >"$T/o/g"
	H=$B/tests/helpers
}

shim() { env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" "$@"; }

@test "exec hands the fds under the prefix to the new image (sh -c 'exec 3<file; exec cmd')" {
	run shim sh -c "exec 3<'$P/f' 4<'$T/o/g' 5>'$P/new'; LD_PRELOAD= exec '$H/pathops' --dump"
	[ "$output" = "fdtab: 3 5" ]
	# the new image adopts them (and says so at debug level) ...
	run shim env POHMELFS_LOG_LEVEL=debug sh -c "exec 3<'$P/f'; exec /bin/true"
	[[ "$output" == *"inherited fd 3 under the prefix"* ]]
	# ... removes the variable from its own environment ...
	run shim sh -c "exec 3<'$P/f'; exec env"
	[[ "$output" != *POHMELFS_FDTAB* ]]
	# ... and hands them on at its own exec
	run shim sh -c "exec 3<'$P/f'; exec sh -c \"LD_PRELOAD= exec '$H/pathops' --dump\""
	[ "$output" = "fdtab: 3" ]
}

@test "close-on-exec fds are not handed over; a stale table in the environment is dropped" {
	run shim python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)          # close-on-exec by default in python
fd2 = os.open(sys.argv[1], os.O_RDONLY); os.set_inheritable(fd2, True)
env = dict(os.environ); env.pop("LD_PRELOAD")
os.execve(sys.argv[2], [sys.argv[2], "--dump"], env)' "$P/f" "$H/pathops"
	[[ "$output" =~ ^fdtab:\ [0-9]+$ ]]
	run shim env POHMELFS_FDTAB="7:0:0;" sh -c "LD_PRELOAD= exec '$H/pathops' --dump"
	[ "$output" = "fdtab: none" ]
}

@test "fork, vfork and posix_spawn children keep working and see the table" {
	run shim "$H/pathops" open "$P/d" 4 open "$P/f" 6 forkshow vforkshow spawnshow
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'fdtab: 4 6\nfdtab: 4 6\nfdtab: 4 6')" ]
	run shim python3 -c '
import os, sys
p = sys.argv[1]
pid = os.fork()
if pid == 0:
    with open(p + "/child", "w") as f: f.write("c")
    os.rename(p + "/child", p + "/d/child")
    os._exit(0)
os.waitpid(pid, 0)
with open(p + "/d/child") as f: print(f.read())' "$P"
	[ "$output" = c ]
}

@test "the library's internal fds survive close, close_range, closefrom and dup2 by the host" {
	for m in close-each close-range closefrom dup2-onto; do
		run shim env POHMELFS_TEST_INTERNAL_FD="$T/ifd.$m" "$H/fdtorture" $m
		echo "$m: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"open 1"* ]]
		grep -q "internal fd survived" "$T/ifd.$m"
	done
	# close() of an internal fd looks like close() of an fd that is not open
	run "$H/fdtorture" close-each
	want=$output
	run shim env POHMELFS_TEST_INTERNAL_FD="$T/ifd.x" "$H/fdtorture" close-each
	[ "${output%%$'\n'*}" = "${want%%$'\n'*}" ]
}

@test "many threads opening, renaming and stating under the prefix at once" {
	run shim "$H/threads" "$P" 16 60
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "ok 16 60" ]
	[ -z "$(ls -A "$P" | grep -v -e '^d$' -e '^f$')" ]
}

@test "dlopen keeps the caller's RUNPATH (the wrapper is a tail call)" {
	command -v "${CC:-cc}" >/dev/null || skip "no C compiler"
	case ${SAN:-} in address|thread)
		skip "the $SAN runtime's own dlopen interceptor loses the caller's RUNPATH" ;;
	esac
	mkdir -p "$T/app/lib"
	echo 'int plugin_answer(void) { return 42; }' >"$T/plugin.c"
	cat >"$T/app.c" <<-'C'
	#include <dlfcn.h>
	#include <stdio.h>
	int main(void) {
		void *h = dlopen("libplugin.so", RTLD_NOW);
		int (*f)(void) = h ? (int (*)(void))dlsym(h, "plugin_answer") : 0;
		printf("%d\n", f ? f() : -1);
		return !f;
	}
	C
	${CC:-cc} -shared -fPIC -o "$T/app/lib/libplugin.so" "$T/plugin.c"
	${CC:-cc} -o "$T/app/app" "$T/app.c" -ldl -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib'
	run "$T/app/app"
	[ "$output" = 42 ]
	run shim "$T/app/app"
	[ "$output" = 42 ]
}

@test "the shim never writes to stdout, even at debug level" {
	out=$(shim env POHMELFS_LOG_LEVEL=debug sh -c "cat '$P/f' >/dev/null; exec 3<'$P/f'; exec /bin/true" 2>/dev/null)
	[ -z "$out" ]
}

# The 0.3 ms target is measured by `make bench` (tests/bench/bench_startup.sh,
# "light init"): an absolute time on a shared machine is a benchmark.  This
# only catches an init that does far too much (a connect, a scan): 10x.
@test "light init is reported at debug level and stays under 3 ms (the 0.3 ms target is in make bench)" {
	[ -z "${SAN:-}" ] || skip "timings mean nothing under a sanitizer"
	best=
	for i in 1 2 3 4 5 6 7 8 9; do
		line=$(shim env POHMELFS_LOG_LEVEL=debug /bin/true 2>&1 | grep 'light init')
		us=$(echo "$line" | sed -n 's/.*light init: \([0-9.]*\) us.*/\1/p')
		[ -n "$us" ]
		if [ -z "$best" ] || awk -v a="$us" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$us; fi
	done
	echo "best of 9: $best us"
	awk -v a="$best" 'BEGIN {exit !(a < 3000)}'
}

# Issue 23 (a shell under the shim starting programs): a process whose
# calls never reached the storage side has nothing to push at exit or to
# hand over at exec (hooks.h pohm_storage_idle).  It used to map the hooks'
# stack (256 KiB, MAP_STACK) at exit and a scratch environment at every
# exec; system calls are what strace can see of that.
@test "a process that never reached the storage maps nothing at exit, and a fork child nothing before its exec" {
	case ${SAN:-} in
	address|thread) skip "SAN=$SAN: no stack of the library's (stack.c), and the runtime maps for itself" ;;
	esac
	command -v strace >/dev/null || skip "no strace"
	# sh forks for the first /bin/true and execs the second; the prefix is
	# configured but nothing touches it.
	shim strace -f -qq -o "$T/st" -e trace=mmap,execve sh -c '/bin/true; /bin/true'
	cat "$T/st"
	! grep -q MAP_STACK "$T/st" || false
	# In sh's fork child, nothing is mapped between the fork and the exec.
	child=$(awk '$2 ~ /^execve\("\/bin\/true"/ {print $1; exit}' "$T/st")
	[ -n "$child" ]
	awk -v c="$child" '$1 == c && $2 ~ /^execve/ {exit} $1 == c && $2 ~ /^mmap/ {bad = 1; print "mapped before exec: " $0} END {exit bad}' "$T/st"
	# The probe sees the stack where there is one: a process that calls
	# under the prefix runs its hooks on it.
	shim strace -f -qq -o "$T/st2" -e trace=mmap sh -c "cat '$P/f' >/dev/null"
	grep -q MAP_STACK "$T/st2"
	# A shell that reached the storage itself (its own redirection from a
	# file under the prefix) forks a child that has not: the child's exec
	# pushes nothing of the parent's, and maps nothing either.
	shim strace -f -qq -o "$T/st3" -e trace=mmap,execve sh -c ": <'$P/f'; /bin/true; /bin/true"
	cat "$T/st3"
	child=$(awk '$2 ~ /^execve\("\/bin\/true"/ {print $1; exit}' "$T/st3")
	[ -n "$child" ]
	awk -v c="$child" '$1 == c && $2 ~ /^execve/ {exit} $1 == c && $2 ~ /^mmap/ {bad = 1; print "mapped before exec: " $0} END {exit bad}' "$T/st3"
}

@test "a process without a prefix configured passes everything through untouched" {
	run env LD_PRELOAD="$PRELOAD" POHMELFS_LOG_LEVEL=debug sh -c "exec 3<'$P/f'; LD_PRELOAD= exec '$H/pathops' --dump"
	[[ "$output" == *"fdtab: none"* ]]
	[[ "$output" == *"prefix (none)"* ]]
}

@test "exec of hostile binaries and scripts under the prefix: the shim's ELF and #! reads stay in bounds" {
	# execdeps.c reads each file under the prefix before its exec (PT_INTERP,
	# the dynamic section, DT_NEEDED strings, a #! line).  Broken files must
	# give the kernel's own answer, never a crash of the shim.  (e_machine
	# is EM_NONE: the kernel refuses each ELF, the shim still parses it.)
	python3 - "$P" <<'PY'
import os, struct, sys
P = sys.argv[1]
def ehdr(phoff, phnum, phentsize=56):
    return (b'\x7fELF\x02\x01\x01' + b'\0' * 9 +
            struct.pack('<HHIQQQIHHHHHH', 3, 0, 1, 0, phoff, 0, 0, 64, phentsize, phnum, 0, 0, 0))
def phdr(t, off, va, fsz):
    return struct.pack('<IIQQQQQQ', t, 4, off, va, va, fsz, fsz, 8)
def dyn(tag, v):
    return struct.pack('<qQ', tag, v)
files = {
    'trunc': b'\x7fELF\x02\x01',
    'phnum': ehdr(1 << 40, 65535),
    'phent': ehdr(64, 3, 1000),
    'bigseg': ehdr(64, 2) + phdr(3, 1 << 50, 0, 1 << 62) + phdr(2, 1 << 60, 0, 1 << 62),
}
# A dynamic section whose strings are out of range, unterminated, or huge.
body = ehdr(64, 2) + phdr(1, 0, 0, 4096) + phdr(2, 200, 200, 16 * 8)
body += b'\0' * (200 - len(body))
body += (dyn(5, 400) + dyn(10, 1 << 62) + dyn(1, 1 << 40) + dyn(1, 0) + dyn(29, 5) +
         dyn(1, 2**64 - 1) + dyn(15, 3) + dyn(0, 0))
body += b'\0' * (400 - len(body)) + b'A' * 3000
files['dynamic'] = body
files['longbang'] = b'#!' + b'/' * 300
files['selfbang'] = ('#!%s/selfbang\n' % P).encode()
files['emptybang'] = b'#!\n'
for n, b in files.items():
    with open(os.path.join(P, n), 'wb') as f:
        f.write(b)
    os.chmod(os.path.join(P, n), 0o755)
PY
	cat >"$T/ex.py" <<'PY'
import os, sys
try:
    os.execv(sys.argv[1], [sys.argv[1]])
except OSError as e:
    print("errno", e.errno)
PY
	for n in trunc phnum phent bigseg dynamic longbang selfbang emptybang; do
		native=$(timeout 20 python3 "$T/ex.py" "$P/$n" 2>&1)
		run timeout 20 env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" python3 "$T/ex.py" "$P/$n"
		echo "$n: $status $output (natively: $native)"
		[ "$status" -eq 0 ]
		[[ "$output" == "errno "* ]]
		[ "$output" = "$native" ]
	done
}

@test "what light init writes in the zeroed data lies on one page with the real table" {
	# start.ld groups the POHM_START_BSS words (light init's, and what a
	# shell's fork child writes before its exec), the real table and its
	# scope right after .data (issue 23: spread over .bss they cost four
	# more page faults per process); a start writes the scope's first
	# objects only.
	command -v nm >/dev/null || skip "nm not installed"
	[ -z "${SAN:-}" ] || skip "a sanitizer build has its own layout"
	local pages=() name addr n=0
	while read -r addr _ name; do
		case $name in
		init_once | real_once | rec_held | sig_ready | sig_lost | sq_want | mount_asked | \
		fork_reset_state | fork_resetter | fdt_under | log_threshold | keep_attrs | \
		cwd_lock | pohm_real | pohm_real_lazy_resolver | real_scope)
			pages+=("$name $((16#$addr / 4096))")
			n=$((n + 1)) ;;
		esac
	done < <(nm "$LIB")
	printf '%s\n' "${pages[@]}"
	[ "$n" -eq 16 ] || [ "$n" -eq 15 ]	# no lazy resolver off x86-64
	[ "$(printf '%s\n' "${pages[@]}" | awk '{ print $2 }' | sort -u | wc -l)" -eq 1 ]
}

@test "a start that touches nothing under the prefix: no futex call, one window of text, two pages of .data written" {
	# Issue 23 (500 x /bin/true from a shell): light init's once words end
	# without a futex wake (pohm_sys_once), the code a start runs lies in
	# one fault-around window (start.ld: .text.pohm_start after .plt, the
	# headers padded to 64 KiB; DT_FINI in it), and light init writes the
	# prefix's state on two pages (pathclass.h: path last in a spelling, no
	# duplicate second spelling).  Before: 2 futex calls, 184 kB of text
	# mapped, 24 kB of .data copied.  The shipped library: the test build
	# links the test switches' code elsewhere in its text.
	[ -z "${SAN:-}" ] || skip "a sanitizer build has its own layout and runtime"
	command -v strace >/dev/null || skip "no strace"
	local pfx pid i
	pfx=$(realpath -m "$P")	# one spelling: its realpath is itself
	env LD_PRELOAD="$PRELOAD_SHIPPED" POHMELFS_PREFIX="$pfx" strace -qq -o "$T/st" -e trace=futex /bin/true
	cat "$T/st"
	[ ! -s "$T/st" ]
	# The library's mappings in a process that started and waits (sleep:
	# its locale files are opened through the wrappers, outside the prefix).
	env LD_PRELOAD="$PRELOAD_SHIPPED" POHMELFS_PREFIX="$pfx" sleep 5 &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q "libpohmelfs" "/proc/$pid/maps" 2>/dev/null && break
		sleep 0.05
	done
	sleep 0.2	# past light init and sleep's own start
	local ok=0
	awk -v lib="$SHIPPED_LIB" '
		/^[0-9a-f]+-[0-9a-f]+ / { inlib = ($6 == lib); perm = $2 }
		inlib && perm == "r-xp" && $1 == "Rss:" { text += $2 }
		inlib && perm == "rw-p" && $1 == "Anonymous:" { data += $2 }
		END { print "text kB mapped " text ", .data kB copied " data; exit !(text > 0 && text <= 64 && data <= 12) }
	' "/proc/$pid/smaps" || ok=$?
	kill "$pid"	# before the verdict: no sleep outlives a failure
	[ "$ok" -eq 0 ]
}
