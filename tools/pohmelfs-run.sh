#!/bin/sh
# pohmelfs-run [-c CONFIG] [-o key=value]... -- CMD [ARGS...]
# pohmelfs-run --shell
#
# Run a command (or an interactive shell) with libpohmelfs.so preloaded.
# -c names a config file (POHMELFS_CONFIG); -o key=value sets one key for
# this run (exported as POHMELFS_<KEY>); the rest of the configuration comes
# from the environment and the config files (see pohmelfs.conf(5)).
set -e
POHMELFS_LIBDIR=
me=$(readlink -f "$0" 2>/dev/null || echo "$0")
here=$(dirname "$me")
lib=
for d in "$POHMELFS_LIBDIR" "$here" "$here/../lib"; do
	if [ -n "$d" ] && [ -f "$d/libpohmelfs.so" ]; then
		lib=$(cd "$d" && pwd)/libpohmelfs.so
		break
	fi
done
if [ -z "$lib" ]; then
	echo "pohmelfs-run: cannot find libpohmelfs.so (looked in ${POHMELFS_LIBDIR:-$here} and $here/../lib)" >&2
	exit 127
fi

usage() {
	echo "usage: pohmelfs-run [-c CONFIG] [-o key=value]... -- CMD [ARGS...]" >&2
	echo "       pohmelfs-run [-c CONFIG] [-o key=value]... --shell" >&2
	exit 2
}

shell=
while [ $# -gt 0 ]; do
	case $1 in
	-c) [ $# -ge 2 ] || usage; export POHMELFS_CONFIG="$2"; shift 2 ;;
	-o) [ $# -ge 2 ] || usage
	    key=${2%%=*}; val=${2#*=}
	    [ "$key" != "$2" ] || { echo "pohmelfs-run: -o $2: expected key=value" >&2; exit 2; }
	    case $key in
	    server|servers) var=POHMELFS_SERVERS ;;
	    *[!A-Za-z0-9_]*|'') echo "pohmelfs-run: -o $2: bad key name" >&2; exit 2 ;;
	    *) var=POHMELFS_$(echo "$key" | tr '[:lower:]' '[:upper:]') ;;
	    esac
	    export "$var=$val"; shift 2 ;;
	--shell) shell=1; shift ;;
	--) shift; break ;;
	-h|--help) usage ;;
	*) break ;;
	esac
done
export LD_PRELOAD="$lib${LD_PRELOAD:+ $LD_PRELOAD}"
if [ -n "$shell" ]; then
	exec "${SHELL:-/bin/sh}"
fi
[ $# -gt 0 ] || usage
exec "$@"
