#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquic-client says why it got no answer, and how much arrived:
#
#   test_dpquic_client_timeout.sh DPQUIC_CLIENT
#
# Proves (kernel UDP in a namespace):
#   dead:   nobody listens on 198.18.1.1:4433 (an address of the
#           namespace's lo): the kernel answers ICMP port unreachable,
#           the client reports it (IP_RECVERR) and stops at once instead
#           of waiting for --timeout; exit non-zero, "file /f1k bytes 0
#           incomplete", "files_ok 0/1";
#   silent: 198.18.2.2 behind a dummy interface drops every datagram
#           without a word: the client gives up after --timeout 2 and
#           says it timed out without any answer from that address.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/netns_lib.sh"

DPQUIC_CLIENT=${1:?usage: $0 DPQUIC_CLIENT}
require_root
require_exec "$DPQUIC_CLIENT"
lib_init dpquic-cli-timeout

NS=dpq-i3-$$
ns_add "$NS"
ip netns exec "$NS" ip addr add 198.18.1.1/32 dev lo
ip netns exec "$NS" ip link add dpqd0 type dummy
ip netns exec "$NS" ip addr add 198.18.2.1/24 dev dpqd0
ip netns exec "$NS" ip link set dpqd0 up

run() {	# run NAME TIMEOUT ADDR: the client, timed
	local t0 t1
	t0=$(date +%s.%N)
	ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout "$2" "$3" /f1k \
		> "$TMP/$1.out" 2> "$TMP/$1.err"
	RC=$?
	t1=$(date +%s.%N)
	LAST_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "-- $1: rc=$RC wall=${LAST_WALL}s"
	sed 's/^/   out: /' "$TMP/$1.out"
	sed 's/^/   err: /' "$TMP/$1.err"
}

# ---- dead: ICMP port unreachable ----------------------------------------------
run dead 30 198.18.1.1:4433
[ $RC -ne 0 ] && ok "dead: exit code $RC (non-zero)" || fail "dead: exit code 0"
if grep -q '^dpquic-client: ICMP port unreachable: no server listens on that UDP port (type 3 code 3) from 198.18.1.1 for 198.18.1.1:4433$' "$TMP/dead.err"; then
	ok "dead: reports the ICMP error: $(cat "$TMP/dead.err")"
else
	fail "dead: no ICMP message"
fi
# No timing assertion beyond "not the whole --timeout": the machine may
# be loaded, but 30 s is far away.
awk -v w="$LAST_WALL" 'BEGIN { exit !(w < 20) }' &&
	ok "dead: stopped after ${LAST_WALL}s, not its 30 s --timeout" ||
	fail "dead: took ${LAST_WALL}s"
expect_line dead '^file /f1k bytes 0 incomplete$'
expect_line dead '^files_ok 0/1$'

# ---- silent: a timeout ---------------------------------------------------------
run silent 2 198.18.2.2:4433
[ $RC -ne 0 ] && ok "silent: exit code $RC (non-zero)" || fail "silent: exit code 0"
# The client's own clock (transfer_ms: from its start to giving up), not
# the wall time of the run: on a loaded machine starting the process
# alone took 5-7 s. Not before 2 s, and far from its 30 s idle timeout.
T=$(sed -n 's/^total_bytes .* transfer_ms \([0-9.]*\) .*/\1/p' "$TMP/silent.out")
awk -v t="${T:-0}" 'BEGIN { exit !(t >= 2000 && t < 10000) }' &&
	ok "silent: gave up after ${T} ms (--timeout 2; wall ${LAST_WALL}s)" ||
	fail "silent: gave up after '${T:-}' ms with --timeout 2 (wall ${LAST_WALL}s)"
grep -q '^dpquic-client: timeout after 2.0 s: no answer from 198.18.2.2:4433 (is a QUIC server listening there' "$TMP/silent.err" &&
	ok "silent: says it timed out with no answer" || fail "silent: no timeout message"
grep -q 'ICMP' "$TMP/silent.err" && fail "silent: an ICMP error out of nowhere"
expect_line silent '^file /f1k bytes 0 incomplete$'
expect_line silent '^files_ok 0/1$'
finish
