# syscall_ops.py OP DIR — issue 23's syscall budget: OP (create, alt, stat
# or read, wattr) once and then 10 times in DIR, between marker calls (a stat of a
# path that does not exist) that tests/helpers/syscall_counts.awk finds in
# an `strace -f -y` trace.  Used by tests/bats/cache_syscalls.bats and
# tests/bench/bench_syscalls.sh.
import os, sys
op, d = sys.argv[1], sys.argv[2]
def mark(w):
    try:
        os.stat("/nonexistent-syscalls-mark-" + w)
    except OSError:
        pass
n = [0]
def one():
    if op == "create":
        n[0] += 1
        with open("%s/new%02d" % (d, n[0]), "wb") as f:
            f.write(b"z" * 4096)
    elif op == "alt":
        # creates that go from one directory to the other (d, d/t) each time
        n[0] += 1
        with open("%s%s/alt%02d" % (d, "/t" if n[0] % 2 else "", n[0]), "wb") as f:
            f.write(b"z" * 4096)
    elif op == "wattr":
        # tar -x's file: create write-only, write, then fchmod and futimens
        # through the same fd before its close.
        n[0] += 1
        fd = os.open("%s/att%02d" % (d, n[0]), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"a" * 4096)
        os.fchmod(fd, 0o640)
        os.utime(fd, (1500000000, 1500000000))
        os.close(fd)
    elif op == "stat":
        os.stat(d + "/s")
    elif op == "read":
        os.close(os.open(d + "/s", os.O_RDONLY))
mark("a")
one()
mark("b")
for i in range(10):
    one()
mark("c")
