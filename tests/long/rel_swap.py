#!/usr/bin/env python3
"""rel_swap.py DIR TARGET SECONDS STOPFILE — the attacker of rel_security.bats.

Swaps the directory DIR and a symlink DIR.swap -> TARGET atomically
(renameat2 RENAME_EXCHANGE), back and forth, until SECONDS pass or STOPFILE
exists; DIR is a real directory again when it exits.  Prints the number of
swaps.  Exit 1 if the exchange is not supported.
"""
import ctypes
import os
import sys
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2

libc = ctypes.CDLL(None, use_errno=True)


def exchange(a, b):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), a)


def main():
    d, target, secs, stop = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    link = d + ".swap"
    os.symlink(target, link)
    end = time.monotonic() + secs
    n = 0
    try:
        while time.monotonic() < end and not os.path.exists(stop):
            exchange(d, link)           # DIR is now the symlink
            time.sleep(0.001)
            exchange(d, link)           # DIR is the directory again
            n += 2
            time.sleep(0.001)
    finally:
        if os.path.islink(d):
            exchange(d, link)
        os.unlink(link)
    print(n)


if __name__ == "__main__":
    main()
