#!/bin/sh
# pohmelfs-run [-c CONFIG] [-o key[=value]]... [--] CMD [ARGS...]
# pohmelfs-run [-c CONFIG] [-o key[=value]]... --shell
#
# Run a command (or an interactive shell) with libpohmelfs.so preloaded.
# -c names a config file (exported as POHMELFS_CONFIG, made absolute);
# -o key=value sets one key of pohmelfs.conf(5) for this run (exported as
# POHMELFS_<KEY>; server= is repeatable and builds POHMELFS_SERVERS); a
# boolean key alone means key=1.  Everything else comes from the
# environment and the config files.  Keys are checked here; values are
# checked by the library when the command first uses the prefix.
#
# The library is looked for next to this script (the build tree), then in
# ../lib beside it (an installed tree, also one staged under a DESTDIR or
# moved as a whole), then in POHMELFS_LIBDIR, which `make install` sets.
set -e
POHMELFS_LIBDIR=
me=$(readlink -f "$0" 2>/dev/null || echo "$0")
here=$(dirname "$me")

# The keys of pohmelfs.conf(5) (core/config/config.c; a test keeps them equal).
KEYS="server fsid groups successful_write_count noreadcsum read_wait_timeout
write_wait_timeout keepalive_interval read_repair auth_cookie protocol log
log_level host_id sync_timeout sync_on_close http_compat prefix cache_dir
cache_size cache_min_free attr_timeout stats inline_data"
BOOL_KEYS="noreadcsum read_repair sync_on_close http_compat stats inline_data"

usage() {
	cat <<-EOF
	usage: pohmelfs-run [-c CONFIG] [-o key[=value]]... [--] CMD [ARGS...]
	       pohmelfs-run [-c CONFIG] [-o key[=value]]... --shell
	Run CMD (or \$SHELL) with libpohmelfs.so preloaded.
	  -c CONFIG      use this configuration file (POHMELFS_CONFIG)
	  -o key=value   set one key of pohmelfs.conf(5) for this run (POHMELFS_<KEY>);
	                 -o server=... is repeatable; a boolean key alone means key=1
	  --shell        run an interactive shell (\$SHELL, else /bin/sh)
	See pohmelfs-run(1).
	EOF
}

die() {
	echo "pohmelfs-run: $*" >&2
	exit 2
}

is_in() {
	for k in $2; do
		[ "$k" = "$1" ] && return 0
	done
	return 1
}

shell=
servers_set=
while [ $# -gt 0 ]; do
	case $1 in
	-c)
		[ $# -ge 2 ] || die "-c needs a file name"
		[ -r "$2" ] || die "-c $2: no readable file of that name"
		case $2 in
		/*) POHMELFS_CONFIG=$2 ;;
		*) POHMELFS_CONFIG=$(pwd)/$2 ;;	# the command may chdir before it is read
		esac
		export POHMELFS_CONFIG
		shift 2 ;;
	-o)
		[ $# -ge 2 ] || die "-o needs key=value"
		case $2 in
		*=*) key=${2%%=*}; val=${2#*=} ;;
		*) key=$2; val= ;;
		esac
		is_in "$key" "$KEYS" || {
			# The configuration's own "did you mean" (pohmelfs beside this script).
			hint=$("$here/pohmelfs" config suggest "$key" 2>/dev/null) || hint=
			die "-o $2: unknown key \"$key\", expected one of pohmelfs.conf(5): $(echo $KEYS)${hint:+; did you mean \"$hint\"?}"
		}
		case $2 in
		*=*) ;;
		*) is_in "$key" "$BOOL_KEYS" ||
			die "-o $2: expected key=value (only boolean keys may stand alone)"
		   val=1 ;;
		esac
		if [ "$key" = server ]; then
			# The first -o server replaces POHMELFS_SERVERS; the next ones add to it.
			if [ -n "$servers_set" ]; then
				POHMELFS_SERVERS="$POHMELFS_SERVERS,$val"
			else
				POHMELFS_SERVERS=$val
			fi
			servers_set=1
			export POHMELFS_SERVERS
		else
			export "POHMELFS_$(echo "$key" | tr '[:lower:]' '[:upper:]')=$val"
		fi
		shift 2 ;;
	--shell) shell=1; shift ;;
	--) shift; break ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; die "unknown option $1" ;;
	*) break ;;
	esac
done

lib=
for d in "$here" "$here/../lib" "$POHMELFS_LIBDIR"; do
	if [ -n "$d" ] && [ -f "$d/libpohmelfs.so" ]; then
		lib=$(cd "$d" && pwd)/libpohmelfs.so
		break
	fi
done
[ -n "$lib" ] || {
	echo "pohmelfs-run: cannot find libpohmelfs.so (looked in $here, $here/../lib${POHMELFS_LIBDIR:+ and $POHMELFS_LIBDIR})" >&2
	exit 127
}
case " $(echo "$LD_PRELOAD" | tr ':' ' ') " in
*" $lib "*) ;;			# already preloaded (pohmelfs-run inside pohmelfs-run)
*) LD_PRELOAD="$lib${LD_PRELOAD:+ $LD_PRELOAD}" ;;
esac
export LD_PRELOAD

if [ -n "$shell" ]; then
	[ $# -eq 0 ] || die "--shell takes no command (got: $*)"
	exec "${SHELL:-/bin/sh}"
fi
[ $# -gt 0 ] || { usage >&2; exit 2; }
# Say what is missing as a shell would (exec's own message names this
# script's line), with the shell's statuses: 127 not found, 126 not runnable.
case $1 in
*/*)
	[ -e "$1" ] || { echo "pohmelfs-run: $1: No such file or directory" >&2; exit 127; }
	if [ ! -f "$1" ] || [ ! -x "$1" ]; then
		echo "pohmelfs-run: $1: Permission denied" >&2
		exit 126
	fi ;;
*)
	command -v "$1" >/dev/null 2>&1 || { echo "pohmelfs-run: $1: command not found" >&2; exit 127; } ;;
esac
exec "$@"
