#!/bin/bash
# check_layers.sh DIR='ALLOWED...' ...: every C file in DIR includes only
# headers of its own folder and of the folders its layer allows (the
# LAYER_ table in the Makefile).  BPF skeletons ("*.skel.h") count as bpf.
# A word "!HEADER" (e.g. "!common/kafka.h") takes that one header away from
# an allowed folder.  Prints one line per offending include and exits 1 if
# there is any.
set -u
cd "$(dirname "$0")/.."
bad=0
for spec in "$@"; do
	dir=${spec%%=*} allowed=" " denied=" "
	for w in ${spec#*=}; do
		case $w in
		!*) denied="$denied${w#!} " ;;
		*) allowed="$allowed$w " ;;
		esac
	done
	told="allowed:${allowed% }"
	[ "$denied" = " " ] || told="$told; not:${denied% }"
	allowed="$allowed$dir "
	for f in "$dir"/*.c "$dir"/*.h; do
		[ -f "$f" ] || continue
		while IFS=: read -r line inc; do
			case $inc in
			*.skel.h) comp=bpf ;;
			*/*) comp=${inc%%/*} ;;
			*) continue ;;	# system or generated header of its own
			esac
			case $denied in
			*" $inc "*) comp="!" ;;
			esac
			case $allowed in
			*" $comp "*) ;;
			*) echo "$f:$line: '$dir' may not include '$inc' ($told)"
			   bad=1 ;;
			esac
		done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
	done
done
[ $bad -eq 0 ] && echo "layers: every include follows the table"
exit $bad
