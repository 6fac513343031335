#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquic-client with nobody answering must fail within its --timeout.
#
#   test_dpquic_client_timeout.sh DPQUIC_CLIENT
#
# Proves: against an address where no server listens (kernel UDP in a
# namespace), dpquic-client gives up after --timeout 2, exits non-zero,
# and reports the file as not ok ("files_ok 0/1").
#
# KNOWN BUG (meson: should_fail): the hq client's result status starts at
# DPQ_HQ_OK (= 0), so an unfinished request is printed "ok", files_ok
# counts it and the client exits 0 after a timeout.  Drop should_fail
# from this test's meson entry once dpquic-client is fixed.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/netns_lib.sh"

DPQUIC_CLIENT=${1:?usage: $0 DPQUIC_CLIENT}
require_root
require_exec "$DPQUIC_CLIENT"
lib_init dpquic-cli-timeout

NS=dpq-i3-$$
ns_add "$NS"
ip netns exec "$NS" ip addr add 198.18.1.1/32 dev lo

t0=$(date +%s.%N)
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 2 198.18.1.1:4433 /f1k \
	> "$TMP/dead.out" 2> "$TMP/dead.err"
rc=$?
t1=$(date +%s.%N)
LAST_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "-- dead: rc=$rc wall=${LAST_WALL}s"
sed 's/^/   out: /' "$TMP/dead.out"
sed 's/^/   err: /' "$TMP/dead.err"
if [ $rc -ne 0 ]; then
	ok "exit code $rc (non-zero)"
else
	fail "exit code 0 after a timeout"
fi
if awk -v w="$LAST_WALL" 'BEGIN { exit !(w < 6) }'; then
	ok "gave up after ${LAST_WALL}s (--timeout 2)"
else
	fail "took ${LAST_WALL}s with --timeout 2"
fi
grep -q 'timeout' "$TMP/dead.err" && ok "says it timed out" ||
	fail "no timeout message on stderr"
# Whatever the exact code, it must not be 0 and the file must not be ok.
if grep -Eq '^file /f1k bytes [0-9]+ ok$' "$TMP/dead.out"; then
	fail "an unanswered request is reported ok"
fi
expect_line dead '^files_ok 0/1$'
finish
