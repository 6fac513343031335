#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The man pages (docs/man) are well-formed and complete: groff formats
# each without a warning, and every long option a program's --help lists
# appears in its page (so a new option without documentation fails here).
#
#   test_man.sh MANDIR DPQUICD DPQUIC_CTL DPQUIC_CLIENT
MANDIR=${1:?usage: $0 MANDIR DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUICD=${2:?}
DPQUIC_CTL=${3:?}
DPQUIC_CLIENT=${4:?}
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
command -v groff >/dev/null || { echo "SKIP: groff missing"; exit 77; }

for page in "$MANDIR"/*.[18]; do
	w=$(groff -man -Tutf8 -ww "$page" 2>&1 >/dev/null)
	[ -z "$w" ] && ok "$(basename "$page"): groff -ww is silent" ||
		fail "$(basename "$page"): $w"
done

# check PAGE PROGRAM...: every --option of PROGRAM --help is in PAGE
check() {
	local page=$1 opt missing=0 n=0
	shift
	# groff escapes '-' as '\-' in the source: compare the formatted text
	local text
	text=$(groff -man -Tascii -P -cbou "$MANDIR/$page" 2>/dev/null)
	for opt in $("$@" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
		n=$((n + 1))
		if ! grep -qF -- "$opt" <<< "$text"; then
			fail "$page: $opt (from $(basename "$1") --help) is not documented"
			missing=1
		fi
	done
	[ "$n" -gt 3 ] || fail "$page: only $n options read from $1 --help"
	[ $missing -eq 0 ] && ok "$page: all $n options of $(basename "$1") --help"
}
check dpquicd.8 "$DPQUICD"
check dpquic-ctl.1 "$DPQUIC_CTL"
check dpquic-client.1 "$DPQUIC_CLIENT"

[ $FAILS -eq 0 ] && echo "all checks passed" || echo "$FAILS check(s) failed"
[ $FAILS -eq 0 ]
