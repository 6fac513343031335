#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A capture of dpquicd <-> dpquic-client dissected by an independent
# decoder (Wireshark's QUIC dissector, through tshark).
#
#   test_tshark_capture.sh DPQUICD DPQUIC_CLIENT
#
# dpquicd serves on a net_tap port in a namespace with --retry always and
# --keylog; dpquic-client (kernel UDP, --keylog) fetches 1 KB and 1 MB over
# the tap while dumpcap records the tap's kernel side.  Proves: the two
# keylogs agree; with either keylog tshark finds Initial, Retry (integrity
# tag verified), Handshake and 1-RTT packets, decrypts every one of them
# (no "remaining payload", no decryption failure, every short-header
# packet shows frames), sees CRYPTO, ACK, STREAM, HANDSHAKE_DONE and
# CONNECTION_CLOSE frames and the HTTP/0.9 request text; and reports no
# malformed packet and no expert error.  Without a keylog the same
# capture does not decrypt (the check can fail).
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CLIENT}
DPQUIC_CLIENT=${2:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CLIENT"
command -v tshark >/dev/null || { echo "SKIP: tshark missing"; exit 77; }
command -v dumpcap >/dev/null || { echo "SKIP: dumpcap missing"; exit 77; }
lib_init tshark-capture
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom > "$ROOT/f1k"
head -c $((1024 * 1024)) /dev/urandom > "$ROOT/f1m"

NS=dpq-e3-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
CAP=$TMP/capture.pcapng

start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock" \
	--retry always --keylog "$TMP/server.keylog" --duration 120

bg_start PCAP "$TMP/dumpcap.log" ip netns exec "$NS" dumpcap -q -i dpqt0 \
	-f udp -w "$CAP"
for i in $(seq 1 100); do
	grep -q 'Capturing on' "$TMP/dumpcap.log" && break
	kill -0 "$PCAP" 2>/dev/null || break
	sleep 0.1
done
grep -q 'Capturing on' "$TMP/dumpcap.log" ||
	{ echo "dumpcap did not start:"; cat "$TMP/dumpcap.log"; exit 1; }

# --spec off: one copy of the ClientHello. The default second copy can
# leave before the Retry arrives and draw a second Retry, which the client
# rightly ignores (RFC 9000 §17.2.5.2) but Wireshark checks against the
# DCID of the first and calls bad.
if run_timed cli 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 30 \
	--spec off --sha256 --keylog "$TMP/client.keylog" "$DADDR:4433" \
	/f1k /f1m; then
	check_sha cli /f1k /f1m
fi
sleep 0.3
bg_stop "$PCAP"
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
[ -s "$CAP" ] || { fail "no capture file"; finish; }

# Keylogs: both sides wrote the same secrets.
n=$(grep -cE '^(CLIENT|SERVER)_(HANDSHAKE_TRAFFIC_SECRET|TRAFFIC_SECRET_0) [0-9a-f]{64} [0-9a-f]{64,96}$' \
	"$TMP/server.keylog" 2>/dev/null)
if [ "${n:-0}" -eq 4 ]; then
	ok "server keylog: 4 traffic secrets"
else
	fail "server keylog: ${n:-0} traffic secret lines, expected 4"
fi
if cmp -s <(sort "$TMP/server.keylog") <(sort "$TMP/client.keylog"); then
	ok "client and server keylogs agree"
else
	fail "client and server keylogs differ"
fi

# count KEYLOG FILTER: packets of the capture matching a display filter.
count() {
	local k=()
	[ -n "$1" ] && k=(-o "tls.keylog_file:$1")
	tshark -r "$CAP" "${k[@]}" -Y "$2" 2>/dev/null | wc -l
}

# expect_count KEYLOG FILTER OP N DESCRIPTION
expect_count() {
	local got
	got=$(count "$1" "$2")
	if [ "$got" "$3" "$4" ]; then
		ok "$5 ($got)"
	else
		fail "$5: '$2' matched $got packets, expected $3 $4"
	fi
}

total=$(count "" "udp")
echo "capture: $total UDP datagrams"
[ "$total" -gt 700 ] || fail "capture holds only $total datagrams"

for who in server client; do
	K=$TMP/$who.keylog
	echo "--- dissecting with the $who keylog"
	expect_count "$K" "quic.long.packet_type == 0 && ip.src == $KADDR" -ge 2 \
		"client Initials (before and after Retry)"
	expect_count "$K" "quic.long.packet_type == 0 && ip.src == $DADDR" -ge 1 \
		"server Initials"
	# One Retry per token-less Initial (--retry always, stateless). On
	# a loaded machine the client may resend its first Initial before
	# the Retry arrives (PTO) and draw a second Retry, which it rightly
	# ignores (RFC 9000 §17.2.5.2); Wireshark checks such a later one
	# against the first Retry's new CID and flags it. The first must
	# verify.
	retries=$(count "$K" "quic.long.packet_type == 3")
	tokenless=$(count "$K" "quic.long.packet_type == 0 && ip.src == $KADDR && quic.token_length == 0")
	if [ "$retries" -ge 1 ] && [ "$retries" -le "$tokenless" ]; then
		ok "Retry: $retries, one per token-less client Initial ($tokenless)"
	else
		fail "Retry: $retries for $tokenless token-less client Initials"
	fi
	expect_count "$K" "quic.bad_retry" -le $((retries - 1)) \
		"Retry integrity tag verified by Wireshark (the first Retry)"
	expect_count "$K" "quic.long.packet_type == 0 && quic.token_length > 0" -ge 1 \
		"client Initial echoes the Retry token"
	expect_count "$K" "quic.long.packet_type == 2 && ip.src == $DADDR" -ge 1 \
		"server Handshake packets"
	expect_count "$K" "quic.long.packet_type == 2 && ip.src == $KADDR" -ge 1 \
		"client Handshake packets"
	expect_count "$K" "quic.short && ip.src == $DADDR" -gt 700 \
		"server 1-RTT packets"
	expect_count "$K" "quic.short && ip.src == $KADDR" -ge 1 \
		"client 1-RTT packets"
	expect_count "$K" "quic.short && !quic.frame" -eq 0 \
		"every 1-RTT packet decrypted to frames"
	expect_count "$K" "quic.remaining_payload" -eq 0 \
		"no undecrypted payload"
	expect_count "$K" "quic.decryption_failed" -eq 0 \
		"no decryption failure"
	expect_count "$K" "quic.frame_type == 0x06" -ge 2 "CRYPTO frames"
	expect_count "$K" "quic.frame_type == 0x02 || quic.frame_type == 0x03" \
		-ge 2 "ACK frames"
	expect_count "$K" "quic.frame_type >= 0x08 && quic.frame_type <= 0x0f" \
		-gt 700 "STREAM frames"
	expect_count "$K" "quic.frame_type == 0x1e && ip.src == $DADDR" -eq 1 \
		"HANDSHAKE_DONE from the server"
	expect_count "$K" "quic.frame_type == 0x1c || quic.frame_type == 0x1d" \
		-ge 1 "CONNECTION_CLOSE"
	expect_count "$K" 'quic.stream_data contains "GET /f1m"' -ge 1 \
		"HTTP/0.9 request visible in decrypted STREAM data"
	expect_count "$K" "_ws.malformed || _ws.expert.severity == error" -eq 0 \
		"no malformed packet, no expert error"
	if [ "$who" = server ]; then
		tshark -r "$CAP" -o "tls.keylog_file:$K" -q -z expert \
			2>/dev/null | sed -n '/=====/,$p' | sed 's/^/   expert: /'
	fi
done

# The negative control: no keylog, no decryption.
expect_count "" "quic.remaining_payload" -gt 700 \
	"without keylog 1-RTT payloads stay encrypted"

no_sanitizer_report "$TMP/d.log" "$TMP/cli.err"
if [ $FAILS -ne 0 ]; then
	echo "--- first packets"
	tshark -r "$CAP" -o "tls.keylog_file:$TMP/server.keylog" -c 30 \
		2>/dev/null
fi
finish
