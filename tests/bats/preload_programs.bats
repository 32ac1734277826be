#!/usr/bin/env bats
# preload_programs.bats — real programs run unchanged under the shim, in a
# directory under the prefix and in one outside it (issue 8).  Each
# scenario runs three times: without the shim in a plain directory, with
# it under the prefix, with it outside the prefix; the outputs (with the
# directory's name replaced) and the resulting trees must be identical.
# With no cluster the storage hooks pass (POHMELFS_TEST_PASSTHROUGH), so this
# checks the interposition layer itself: classification, fd tracking,
# exec handoff and EXDEV must never change what a program sees.

setup() {
	# These test the interposition layer alone: the storage hooks stay out.
	export POHMELFS_TEST_PASSTHROUGH=1
	POHM_TEST_BUILD=1	# the library that reads the switch
	load lib/common
	preload_ok || skip "this sanitizer runtime cannot be preloaded into uninstrumented programs"
	T=$BATS_TEST_TMPDIR
	# three places whose names have the same length (git stores paths in files)
	P=$T/pf
	mkdir -p "$T/r1/work" "$P/work" "$T/r2/work" "$T/elsewhere" "$T/spill"
	export GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" GIT_COMMITTER_DATE="2020-01-01T00:00:00Z"
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=t
	export GIT_COMMITTER_EMAIL=t@example.org HOME=$T LC_ALL=C TZ=UTC
}

# The tree below $1: type, mode, size, links, name, and the content of files.
tree() {
	(cd "$1" && find . -mindepth 1 -printf '%y %m %s %n %p\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
}

# run3 NAME: run scenario_NAME in each place; compare outputs and trees.
run3() {
	local fn=scenario_$1 d out
	for where in plain under outside; do
		case $where in
		plain) d=$T/r1/work/$1; mkdir -p "$d"
			(cd "$d" && $fn "$d" "$T/spill/plain") >"$T/$where.out" 2>&1 ;;
		under) d=$P/work/$1; mkdir -p "$d"
			(cd "$d" && LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$P" \
				$fn "$d" "$T/spill/under") >"$T/$where.out" 2>&1 ;;
		outside) d=$T/r2/work/$1; mkdir -p "$d"
			(cd "$d" && LD_PRELOAD="$PRELOAD" POHMELFS_PREFIX="$T/elsewhere" \
				$fn "$d" "$T/spill/outside") >"$T/$where.out" 2>&1 ;;
		esac
		echo "rc=$?" >>"$T/$where.out"
		sed -i "s|$d|DIR|g; s|$T/spill/$where|SPILL|g" "$T/$where.out"
		tree "$d" >"$T/$where.tree"
	done
	cat "$T/plain.out"
	grep -q '^rc=0$' "$T/plain.out"
	diff "$T/plain.out" "$T/under.out"
	diff "$T/plain.out" "$T/outside.out"
	diff "$T/plain.tree" "$T/under.tree"
	diff "$T/plain.tree" "$T/outside.tree"
}

scenario_coreutils() {
	set -e
	mkdir -p src/sub && echo hello >src/a && echo world >src/sub/b
	ln -s a src/link && ln src/a src/hard
	cp -a src copy
	mv copy moved
	ln -s moved/a sym && ln moved/a hard2
	ls -la moved | awk '{print $1, $2, $5, $NF}'
	find . -name '*' | LC_ALL=C sort
	du -sb moved | cut -f1
	chmod -R go-rwx moved
	stat -c '%A %s %h %F %N' moved/* | LC_ALL=C sort
	touch -d '2020-01-02 03:04:05' moved/a && stat -c %Y moved/a
	df -P . | tail -1 | awk '{print $6}' >/dev/null
	rm -rf moved/sub
	# out of the directory and back (across the prefix boundary under the shim)
	echo lone >lone && chmod 640 lone
	mkdir -p "$2" && mv lone "$2/lone" && cat "$2/lone" && mv "$2/lone" back
	mkdir -p "$2/tree/x" && echo t >"$2/tree/x/y" && mv "$2/tree" tree && mv tree "$2/tree2"
	cat back "$2/tree2/x/y"; ls
}

scenario_tar() {
	set -e
	mkdir -p t/d/e && echo 1 >t/d/one && ln t/d/one t/d/hl && ln -s ../one t/d/e/sl
	printf 'x%.0s' $(seq 1 5000) >t/big
	set -- --sort=name --mtime=2020-01-01 --owner=0 --group=0
	tar "$@" -cf t.tar t && mkdir x && tar -xf t.tar -C x && diff -r t x/t
	stat -c '%h' x/t/d/one
	tar -tvf t.tar | awk '{print $1, $3, $NF}'
	tar "$@" -cf - t | gzip -n >t.tgz && mkdir y && tar -xzf t.tgz -C y && diff -r t y/t && echo same
}

scenario_shell() {
	set -e
	echo a >r && echo b >>r && cat <r >r2 && cat r2
	exec 3>fd3 && echo via3 >&3 && exec 3>&-
	cat fd3
	sh -c 'cat r > r3; echo sub >> r3' && cat r3
	(cd .. && cd - >/dev/null && pwd | sed 's|.*/||')
	for i in 1 2 3; do echo $i >"n$i"; done; cat n* | tr -d '\n'; echo
	: >empty && [ -s empty ] || echo empty
}

scenario_python() {
	python3 - <<-'PY'
	import os, shutil, tempfile, mmap
	os.makedirs("p/q/r", exist_ok=True)
	with open("p/f", "w") as f: f.write("hello\n")
	shutil.copytree("p", "p2")
	shutil.move("p2", "p3")
	print(sorted(os.listdir("p3")), os.path.getsize("p3/f"))
	with tempfile.TemporaryDirectory(dir=".") as d:
	    with tempfile.NamedTemporaryFile(dir=d, delete=False) as t: t.write(b"tmp")
	    print(os.path.getsize(t.name))
	fd, name = tempfile.mkstemp(dir=".")
	os.write(fd, b"x" * 4096); os.close(fd)
	with open(name, "r+b") as f:
	    m = mmap.mmap(f.fileno(), 4096); m[0:5] = b"mmap!"; m.flush(); m.close()
	print(open(name, "rb").read(5)); os.unlink(name)
	for root, dirs, files in sorted(os.walk(".")): print(root, sorted(dirs), sorted(files))
	os.symlink("p/f", "lnk"); print(os.readlink("lnk"), os.path.realpath("lnk").endswith("p/f"))
	shutil.rmtree("p3"); print(os.path.exists("p3"))
	st = os.stat("p/f"); os.utime("p/f", (1, 2)); print(os.stat("p/f").st_mtime)
	PY
}

scenario_git() {
	set -e
	git init -q g && cd g
	echo one >f && mkdir d && echo two >d/g
	git add . && git commit -q -m first
	echo three >>f && git commit -q -am second
	git log --format='%H %s'
	git gc -q && git fsck 2>&1
	git clone -q . ../clone && cd ../clone && git log --format=%s && cat f
	# what differs by nature: the index caches inode numbers, the clone names its origin
	cd .. && rm g/.git/index clone/.git/index
	sed -i "s|$1|DIR|g" clone/.git/config clone/.git/logs/HEAD clone/.git/logs/refs/heads/master \
		clone/.git/logs/refs/remotes/origin/HEAD
}

scenario_sqlite() {
	set -e
	sqlite3 db.sqlite 'create table t(x integer); insert into t values (1),(2),(3);'
	sqlite3 db.sqlite 'pragma journal_mode=wal; insert into t values (4); select sum(x) from t;'
	sqlite3 db.sqlite 'pragma integrity_check;'
}

scenario_make() {
	set -e
	printf 'int two(void);\nint main(void){return two() - 2;}\n' >main.c
	printf 'int two(void){return 2;}\n' >two.c
	printf 'prog: main.o two.o\n\t$(CC) -o $@ main.o two.o\n%%.o: %%.c\n\t$(CC) -c -o $@ $<\n' >Makefile
	make -s -j2 && ./prog && echo built
	touch two.c && make -s -j2 && echo rebuilt
	ls *.o prog
}

@test "coreutils: cp -a, mv in and out, ln, ls, find, du, chmod -R, stat, touch -d, rm -rf" {
	run3 coreutils
}

@test "tar: create and extract a tree with hardlinks and symlinks (plain and gzip)" {
	run3 tar
}

@test "sh: redirections, fd 3, subshells, cd" {
	run3 shell
}

@test "python3: os, shutil, tempfile, mmap" {
	run3 python
}

@test "git: init, add, commit, gc, fsck, clone" {
	command -v git >/dev/null || skip "git is not installed"
	run3 git
}

@test "sqlite3: create, insert, WAL, integrity check" {
	command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
	run3 sqlite
}

@test "make -j2 builds a small C project" {
	command -v make >/dev/null && command -v cc >/dev/null || skip "make or cc is not installed"
	run3 make
}
