#!/bin/sh
# build.sh [B] — PROTOTYPE: build the split library by hand from the objects
# of a finished `make` in B (default build): B/gate/libpohmelfs.so (the
# gate) and B/gate/libpohmelfs-core.so (today's library, renamed).  Not
# part of the Makefile: the core cannot be dlopened without
# GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384 (doc/notes-s18-split.md).
set -e
B=${1:-build}
O=$B/obj
mkdir -p $B/gate
sh preload/gate/gen.sh args preload/syms.def > $B/gate/gate_args.h
sh preload/gate/gen.sh tramp preload/syms.def > $B/gate/tramp.S
CFLAGS=$(cat $B/.cflags | sed 's/ -MMD -MP//')
$CFLAGS -I$B/gate -Ipreload -c -o $B/gate/gate.o preload/gate/gate.c
${CC:-cc} -c -o $B/gate/tramp.o $B/gate/tramp.S
${CC:-cc} -shared -o $B/gate/libpohmelfs.so $B/gate/gate.o $B/gate/tramp.o \
	$O/preload/real.o $O/preload/real_lazy.o $O/preload/elfsym.o $O/preload/fallback.o \
	$O/preload/state.o $O/preload/addr.o $O/core/mount/pathclass.o $O/core/sys/log.o \
	$O/core/sys/sys.o $O/core/sys/longat.o \
	-Wl,--version-script=$B/libpohmelfs.map -Wl,-z,relro -Wl,-z,defs -pthread -ldl
cp $B/libpohmelfs.so $B/gate/libpohmelfs-core.so
ls -l $B/gate/*.so
