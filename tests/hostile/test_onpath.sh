#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# An on-path attacker against dpquicd (RFC 9000 §9.3.2, §9.3.3, §21.5):
# dpquicd on a net_tap in a namespace; dpq-hostile, in the namespace,
# fetches a 4 MB file (again and again) and plays the attacker as well:
# 20 times, at most one per 50 ms, it sends a copy of one of its own
# 1-RTT datagrams from a second address, 198.18.0.66:6666, just ahead of
# the original. To dpquicd the copy is a valid, newest packet from a new
# address: it may move there, but only with the 3x limit of an
# unvalidated address (§8, §9.3.1), and the client's next packets bring
# it back. The second address stands for a victim: dpq-hostile only
# counts what arrives there and never answers.
#
#   test_onpath.sh DPQUICD DPQUIC_CTL DPQ_HOSTILE
#
# Proves: every fetch completes with the whole file on one connection (one
# handshake, no connection closed on an error); the spoofed address got
# at most 3x the bytes sent from it (probes, and data within that limit:
# §8.2.1 lets the limit cut a PATH_CHALLENGE datagram below 1200 bytes);
# dpquicd was tempted (at least one migration to it and one back) and
# its validation of the spoofed address failed.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQ_HOSTILE}
DPQUIC_CTL=${2:?}
HOSTILE=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$HOSTILE"
lib_init onpath
ROOT=$TMP/root
mkdir -p "$ROOT"
SIZE=$((4 * 1024 * 1024))
head -c $SIZE /dev/urandom > "$ROOT/f4m"

NS=dpq-e4-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
SPOOF=198.18.0.66
SOCK=$TMP/d.sock
COPIES=20

start_dpquicd_tap PD "$NS" dpqo0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$SOCK" --duration 200
ip netns exec "$NS" ip addr add "$SPOOF/24" dev dpqo0 nodad 2>/dev/null ||
	ip netns exec "$NS" ip addr add "$SPOOF/24" dev dpqo0


ip netns exec "$NS" timeout 200 "$HOSTILE" --file /f4m --count $COPIES \
	--spoof "$SPOOF:6666" --timeout 150 onpath "$DADDR:4433" \
	> "$TMP/h.out" 2> "$TMP/h.err"
RC=$?
sed 's/^/   hostile: /' "$TMP/h.out"
[ -s "$TMP/h.err" ] && sed 's/^/   hostile err: /' "$TMP/h.err"
if [ "$RC" -eq 0 ]; then
	ok "dpq-hostile onpath: PASS (fetches complete, at most 3x to $SPOOF)"
else
	fail "dpq-hostile onpath exit $RC"
fi
# Check its figures here too: a PASS line is not taken on trust.
read -r FETCHES BYTES < <(awk '$2 == "fetches" { print $3, $5 }' \
	"$TMP/h.out")
read -r NCOPY CBYTES SDGRAMS SBYTES SLARGE < <(awk '$2 == "copies" {
	print $3, $5, $7, $9, $11 }' "$TMP/h.out")
if [ -n "${FETCHES:-}" ] && [ "$FETCHES" -ge 1 ] &&
   [ "$BYTES" -eq $((FETCHES * SIZE)) ]; then
	ok "$FETCHES fetch(es) of the 4 MB file, $BYTES bytes"
else
	fail "fetches '${FETCHES:-}' bytes '${BYTES:-}' (want n x $SIZE)"
fi
if [ -n "${NCOPY:-}" ] && [ "$NCOPY" -eq $COPIES ] &&
   [ "$SBYTES" -le $((3 * CBYTES)) ]; then
	ok "spoofed address: $SDGRAMS datagrams, $SBYTES bytes for $NCOPY copies of $CBYTES bytes (<= 3x), largest $SLARGE"
else
	fail "copies '${NCOPY:-}' of '${CBYTES:-}' bytes; the spoofed address got '${SBYTES:-}' bytes, largest '${SLARGE:-}'"
fi

# The server's side, once the connection is gone (counted at close).
if stats_settled "$NS" "$SOCK" "$TMP/stats.json"; then
	S=$TMP/stats.json
	echo "   paths: $(json_get "$S" "s['shards'][0]['paths']")"
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == 1" \
		"one handshake"
	check_json "$S" "sum(x['closed_error'] for x in s['shards']) == 0" \
		"no connection closed on an error"
	check_json "$S" "sum(x['paths']['migrations'] for x in s['shards']) >= 2" \
		"dpquicd moved to the spoofed address and back"
	check_json "$S" "sum(x['paths']['failed'] for x in s['shards']) >= 1" \
		"its validation of the spoofed address failed"
fi
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log" "$TMP/h.err"
finish
