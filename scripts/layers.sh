#!/usr/bin/env bash
# Include trees that make the layering of meson.build a compile error.
#
#   layers.sh tree   SRC DIR FOLDER...  DIR gets a symlink to SRC/FOLDER for
#                                       each FOLDER, nothing else
#   layers.sh hidden SRC DIR FOLDER...  DIR gets, for every header under the
#                                       FOLDERs, a header of the same path
#                                       that stops the compiler with #error
#
# A library compiles with -I its tree, then -I the hidden tree: a header of
# its own or a lower folder resolves to the real file, any other to the
# #error one, which names the header and the rule. "include/dpquic" is
# seen as "dpquic" (the public headers' include path). Run by meson at
# configure time; recreates DIR from scratch, so it is idempotent.
set -euo pipefail

mode=$1 src=$2 dir=$3
shift 3
rm -rf "$dir"
mkdir -p "$dir"

incpath() {	# folder in the source tree -> path as #include names it
	case $1 in
	include/*) echo "${1#include/}" ;;
	*) echo "$1" ;;
	esac
}

case $mode in
tree)
	for f in "$@"; do
		[ -d "$src/$f" ] || { echo "layers.sh: no folder $src/$f" >&2; exit 1; }
		p=$(incpath "$f")
		[ -L "$dir/$p" ] && continue	# listed twice
		mkdir -p "$dir/$(dirname "$p")"
		ln -sn "$src/$f" "$dir/$p"
	done
	;;
hidden)
	for f in "$@"; do
		p=$(incpath "$f")
		(cd "$src/$f" && find . -name '*.h' -printf '%P\n') |
		while read -r h; do
			mkdir -p "$dir/$p/$(dirname "$h")"
			printf '#error "layering: %s is not visible to this library: each library sees only its own and lower folders (meson.build, Layering)"\n' \
				"$p/$h" >"$dir/$p/$h"
		done
	done
	;;
*)
	echo "usage: layers.sh tree|hidden SRC DIR FOLDER..." >&2
	exit 2
	;;
esac
