#!/usr/bin/env bash
# rel_writer.bash DIR LOG N SEED SRC — a stream of file writes and namespace
# changes made with real programs (cp, cat >> with `sync FILE` (fsync),
# mkdir -p, mv, rm) in DIR, meant to run under the shim.  Every command that exits 0
# is appended to LOG exactly as run (relative to DIR), every one that fails
# to LOG.fail with its status, so `cd NATIVE && bash LOG` rebuilds what the
# program was told succeeded.  SRC holds the contents (c0 … c15, outside the
# prefix).  Op i starts when the file LOG.pause does not exist (a test can
# hold the writer between two ops).  Exits 0; the caller judges the logs.
set -u
dir=$1 log=$2 n=$3 RANDOM=$4 src=$5
cd "$dir" || exit 1
files=() dirs=(.)
: >"$log"
: >"$log.fail"

pick() { echo $((RANDOM % $1)); }

for ((i = 0; i < n; i++)); do
	while [ -e "$log.pause" ]; do sleep 0.05; done
	op=$(pick 10)
	[ ${#files[@]} -eq 0 ] && op=0
	k=$(pick 16)
	new_file= gone= moved_to=
	case $op in
	0 | 1 | 2 | 3)
		d=${dirs[$(pick ${#dirs[@]})]}
		new_file=$d/f$i
		cmd="cp $src/c$k $new_file" ;;
	4)	cmd="cat $src/c$k >>append.log && sync append.log" ;;
	5)	d=${dirs[$(pick ${#dirs[@]})]}
		cmd="mkdir -p $d/d$i/sub" ;;
	6)	j=$(pick ${#files[@]}) d=${dirs[$(pick ${#dirs[@]})]}
		moved_to=$d/m$i
		cmd="mv ${files[$j]} $moved_to" ;;
	7)	j=$(pick ${#files[@]}) gone=1
		cmd="rm ${files[$j]}" ;;
	8)	j=$(pick ${#files[@]})
		cmd="cp $src/c$k ${files[$j]}" ;;
	9)	j=$(pick ${#files[@]})
		moved_to=$(dirname "${files[$j]}")/r$i
		cmd="mv ${files[$j]} $moved_to" ;;
	esac
	if eval "$cmd" 2>>"$log.err"; then
		echo "$cmd" >>"$log"
		[ -n "$new_file" ] && files+=("$new_file")
		[ "$op" = 5 ] && dirs+=("$d/d$i" "$d/d$i/sub")
		if [ -n "$gone" ]; then
			unset "files[$j]" && files=("${files[@]}")
		elif [ -n "$moved_to" ]; then
			files[$j]=$moved_to
		fi
	else
		echo "$? $cmd" >>"$log.fail"
	fi
done
exit 0
