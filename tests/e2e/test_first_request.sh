#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A fresh connection's first request is answered at once: dpquicd on a
# net_tap in a namespace, dpquic-client over kernel UDP (about 0.5 ms
# RTT), ten fetches of a 13-byte file, each on a new connection.
#
#   test_first_request.sh DPQUICD DPQUIC_CLIENT
#
# The client's request travels in a 1-RTT packet coalesced with its
# Finished; dpquicd's handshake runs on the management thread, so the
# shard holds that packet until the handshake completes (RFC 9001 §5.7).
# It once dropped it instead and served the request only after the
# client's retransmission, some 25 ms later, with one packet counted
# lost. Proves: every fetch reports "lost 0" (no packet of the client was
# declared lost, so nothing was retransmitted) and the file is intact.
# The transfer times are printed, not asserted (the machine is shared).
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CLIENT}
DPQUIC_CLIENT=${2:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CLIENT"
lib_init firstreq
ROOT=$TMP/root
mkdir -p "$ROOT"
printf 'hello, world\n' > "$ROOT/hello"

NS=dpq-e5-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1

start_dpquicd_tap PD "$NS" dpqf0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock" --duration 120

N=10
times=()
for i in $(seq 1 $N); do
	run_timed f$i 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 20 \
		--sha256 "$DADDR:4433" /hello || continue
	check_sha f$i /hello >/dev/null
	lost=$(awk '$1 == "total_bytes" { for (k = 1; k < NF; k++)
		if ($k == "lost") print $(k + 1) }' "$TMP/f$i.out")
	if [ "$lost" != "0" ]; then
		fail "fetch $i: lost '$lost', expected 0"
		sed 's/^/   out: /' "$TMP/f$i.out"
	fi
	times+=("$(awk '$1 == "total_bytes" { for (k = 1; k < NF; k++)
		if ($k == "transfer_ms") print $(k + 1) }' "$TMP/f$i.out")")
done
[ $FAILS -eq 0 ] && ok "$N fresh connections: request answered, lost 0 each"
echo "   transfer_ms of the $N fetches: ${times[*]}"

bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log" "$TMP"/*.err
finish
