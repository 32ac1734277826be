#!/usr/bin/env bats
# preload_classify.bats — path classification as the running shim does it
# (DESIGN.md §2 step 1): absolute, cwd-relative, dirfd-relative, "..",
# /proc/self/fd/N and /dev/fd/N, the realpath spelling of the prefix,
# fchdir, dup/fcntl; observed through the fd table the shim hands to an
# exec'd image (tests/helpers/pathops.c "show").  The lexical cases in
# detail are the unit tests of core/pathclass (tests/unit/test_pathclass.c).

setup() {
	# These test the interposition layer alone: the storage hooks stay out.
	export POHMELFS_TEST_PASSTHROUGH=1
	POHM_TEST_BUILD=1	# the library that reads the switch
	load lib/common
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	T=$BATS_TEST_TMPDIR
	P=$T/p
	mkdir -p "$P/d/e" "$T/o"
	echo f >"$P/f"; echo g >"$T/o/g"
	ops=$B/tests/helpers/pathops
}

ops() { env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" "$ops" "$@"; }

@test "absolute paths: under the prefix or not" {
	run ops open "$P/f" 3 open "$T/o/g" 4 open "$P/d" 5 open "$P" 6 open "$T" 7 show
	[ "$output" = "fdtab: 3 5 6" ]
	run ops open "$P/../o/g" 3 open "$T/o/../p/f" 4 open "$T//p/./d/" 5 open "$P/d/../../o" 6 show
	[ "$output" = "fdtab: 4 5" ]
}

@test "relative paths from a tracked cwd, in, above and outside the prefix" {
	run ops cd "$T" open p/f 3 open o/g 4 open p/../o/g 5 open o/../p/d 6 show
	[ "$output" = "fdtab: 3 6" ]
	run ops cd "$P/d" open ../f 3 open ../../o/g 4 open e 5 open ./../../p/f 7 open . 8 show
	[ "$output" = "fdtab: 3 5 7 8" ]
	run ops cd "$T/o" open ../p/f 3 open g 4 cd / open "${T#/}/p/d" 5 show
	[ "$output" = "fdtab: 3 5" ]
}

@test "dirfd-relative paths, and fchdir into a tracked directory" {
	run ops open "$T" 3 openat 3 p/f 4 openat 3 o/g 5 openat 4 . 6 show
	# fd 6: openat on a file fd fails, so it is not there; see the next case
	[[ "$output" == "FAIL openat"* ]]
	run ops open "$T" 3 openat 3 p/f 4 openat 3 o/g 5 openat 3 p/d 6 openat 6 e 7 openat 6 ../../o 8 show
	[ "$output" = "fdtab: 4 6 7" ]
	run ops open "$T/o" 3 openat 3 ../p/d 4 openat 3 g 5 show
	[ "$output" = "fdtab: 4" ]
	run ops open "$P/d" 4 fcd 4 open e 5 open ../f 6 open ../../o/g 7 show
	[ "$output" = "fdtab: 4 5 6" ]
	run ops dirat "$P/d" 4 openat 4 e 5 show
	[ "$output" = "fdtab: 4 5" ]
}

@test "/proc/self/fd/N and /dev/fd/N name the fd's own place" {
	run ops open "$P/d" 4 open /proc/self/fd/4/e 5 open /dev/fd/4/../f 6 open /proc/self/fd/4 7 \
		open /proc/thread-self/fd/4/e 8 open /proc/self/fd/0 9 show
	[ "$output" = "fdtab: 4 5 6 7 8" ]
}

@test "a dirfd the shim never saw opened is resolved through /proc when .. climbs out of it" {
	# fd 5 comes from the parent shell, which ran without the shim
	run env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" bash -c \
		"exec 5<'$T/o'; LD_PRELOAD= true; exec '$ops' openat 5 ../p/f 6 openat 5 g 7 show" 5<"$T/o"
	[ "$output" = "fdtab: 6" ]
}

@test "the realpath of the prefix is a second spelling of it" {
	ln -s p "$T/plink"
	run env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/plink" "$ops" open "$P/f" 3 \
		open "$T/plink/d" 4 cd "$T/plink" open f 5 cd "$P" open d/e 6 open "$T/o/g" 7 show
	[ "$output" = "fdtab: 3 4 5 6" ]
}

@test "a prefix that does not exist yet is classified by its would-be realpath" {
	mkdir -p "$T/real"
	ln -s real "$T/via"
	run env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/via/new/p" "$ops" \
		sh "mkdir -p '$T/real/new/p'" open "$T/real/new/p" 3 open "$T/via/new/p" 4 show
	[ "$output" = "fdtab: 3 4" ]
}

@test "without POHMELFS_PREFIX the prefix comes from the configuration file" {
	echo "prefix=$P" >"$T/c.conf"
	run env -u POHMELFS_PREFIX POHMELFS_CONFIG="$T/c.conf" LD_PRELOAD="$PRELOAD" \
		"$ops" open "$P/f" 3 open "$T/o/g" 4 show
	[ "$output" = "fdtab: 3" ]
	mkdir -p "$T/home/.config"
	echo "prefix=$P/d" >"$T/home/.config/pohmelfs.conf"
	run env -u POHMELFS_PREFIX -u POHMELFS_CONFIG -u XDG_CONFIG_HOME HOME="$T/home" \
		LD_PRELOAD="$PRELOAD" "$ops" open "$P/f" 3 open "$P/d/e" 4 show
	[ "$output" = "fdtab: 4" ]
	# the variable wins over the file
	run env POHMELFS_PREFIX="$T/o" POHMELFS_CONFIG="$T/c.conf" LD_PRELOAD="$PRELOAD" \
		"$ops" open "$P/f" 3 open "$T/o/g" 4 show
	[ "$output" = "fdtab: 4" ]
}

@test "dup2, fcntl(F_DUPFD) and close keep the table right" {
	run ops open "$P/d" 4 dup2 4 10 fdup 4 20 close 4 show
	[ "$output" = "fdtab: 10 20" ]
	run ops open "$P/d" 4 dup2 4 10 open "$T/o" 10 show
	[ "$output" = "fdtab: 4" ]
	run ops open "$P/d" 4 open "$P/f" 5 open "$P/f" 6 closerange 5 show
	[ "$output" = "fdtab: 4" ]
}

@test "a 4095-byte relative path works, with the cwd deep inside the prefix" {
	# 15 directories and a file of 255-byte names: 4095 bytes, below a cwd
	# that is itself 8 levels deep in the prefix (rel would not fit a PATH_MAX)
	run env LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" python3 -c '
import os, sys
os.chdir(sys.argv[1])
for i in range(8):
    n = "c%d" % i + "x" * 150
    os.mkdir(n); os.chdir(n)
parts = ["d%02d" % i + "d" * 252 for i in range(15)] + ["f" * 255]
rel = "/".join(parts)
assert len(rel) == 4095, len(rel)
for i in range(1, 16):
    os.mkdir("/".join(parts[:i]))
fd = os.open(rel, os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"deep"); os.close(fd)
assert os.stat(rel).st_size == 4
with open(rel) as f: assert f.read() == "deep"
os.rename(rel, rel[:-1] + "g")
os.unlink(rel[:-1] + "g")
try:
    os.stat(rel + "x")
except OSError as e:
    print("long", e.strerror)
print("ok")' "$P"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"long File name too long"* ]]
	[[ "$output" == *ok ]]
}
