#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# ngtcp2 client (code nobody here wrote) -> dpquicd over a DPDK net_tap
# port inside a network namespace.
#
#   test_ngtcp2_client_dpquicd.sh DPQUICD DPQUIC_CTL NGTCP2_CLIENT
#
# Proves: dpquicd serves 1 KB, 1 MB and 50 MB files, and 20 concurrent
# streams on one connection, with every sha256 equal to sha256sum's; each
# TLS 1.3 suite (AES-128-GCM, AES-256-GCM, CHACHA20-POLY1305) is
# negotiated when the ngtcp2 client forces it; with --retry always the
# ngtcp2 client sees a Retry and still completes; dpquic-ctl stats counts
# every connection, handshake and Retry, with no connection closed on an
# error; SIGTERM stops dpquicd with exit 0.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL NGTCP2_CLIENT}
DPQUIC_CTL=${2:?}
NGCLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$NGCLIENT"
lib_init ngtcp2-cli-dpquicd
make_content

NS=dpq-i1-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1

# ngc NAME RC [client args...]: the ngtcp2 client inside the namespace.
ngc() {
	local name=$1 want=$2
	shift 2
	run_timed "$name" "$want" ip netns exec "$NS" "$NGCLIENT" \
		--timeout 60 "$@"
}

# ---- dpquicd A: no Retry -------------------------------------------------
start_dpquicd_tap PA "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/dA.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/a.sock" \
	--retry never --duration 200
echo "dpquicd A serving on $DADDR:4433 (net_tap dpqt0)"

if ngc a_aes128_20 0 --sha256 --ciphers AES-128-GCM \
	"$DADDR" 4433 "${PATHS20[@]}"; then
	expect_line a_aes128_20 '^cipher AES-128-GCM$'
	expect_line a_aes128_20 '^retry no$'
	expect_line a_aes128_20 '^alpn hq-interop$'
	expect_line a_aes128_20 '^files_ok 20/20 '
	check_sha a_aes128_20 "${PATHS20[@]}"
fi
if ngc a_aes256 0 --sha256 --ciphers AES-256-GCM \
	"$DADDR" 4433 /f1k /f1m /f50m; then
	expect_line a_aes256 '^cipher AES-256-GCM$'
	expect_line a_aes256 '^files_ok 3/3 '
	check_sha a_aes256 /f1k /f1m /f50m
fi
if ngc a_chacha_20 0 --sha256 --ciphers CHACHA20-POLY1305 \
	"$DADDR" 4433 "${PATHS20[@]}"; then
	expect_line a_chacha_20 '^cipher CHACHA20-POLY1305$'
	expect_line a_chacha_20 '^files_ok 20/20 '
	check_sha a_chacha_20 "${PATHS20[@]}"
fi
# Each suite alone on the small files too (a fresh handshake each).
for c in AES-128-GCM AES-256-GCM CHACHA20-POLY1305; do
	n=a_small_$c
	if ngc "$n" 0 --sha256 --ciphers "$c" "$DADDR" 4433 /f1k /f1m; then
		expect_line "$n" "^cipher $c\$"
		check_sha "$n" /f1k /f1m
	fi
done

# The ngtcp2 client closes with NO_ERROR after its last file; dpquicd
# counts a connection once its draining period (3 PTO, RFC 9000 §10.2)
# ends: wait (bounded by time: on a loaded machine the PTO grows with
# the RTT variance, and a shard may run late) until none is left.
if stats_settled "$NS" "$TMP/a.sock" "$TMP/a_stats.json"; then
	S="$TMP/a_stats.json"
	check_json "$S" "s['ok'] is True" "stats: ok"
	check_json "$S" "sum(x['connections_created'] for x in s['shards']) == 6" \
		"stats A: 6 connections created"
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == 6" \
		"stats A: 6 handshakes"
	check_json "$S" "sum(x['mgmt_handshakes_ok'] for x in s['shards']) == 6" \
		"stats A: management thread completed 6 handshakes"
	check_json "$S" "sum(x['listener'].get('accept', 0) for x in s['shards']) == 6" \
		"stats A: listener accepted 6"
	check_json "$S" "sum(x['listener'].get('retry', 0) for x in s['shards']) == 0" \
		"stats A: no Retry sent (--retry never)"
	check_json "$S" "sum(x['closed_error'] + x['mgmt_handshakes_failed'] for x in s['shards']) == 0" \
		"stats A: no connection closed on an error"
	check_json "$S" "sum(x['closed_by_peer'] for x in s['shards']) == 6" \
		"stats A: all 6 closed by the peer (ngtcp2 CONNECTION_CLOSE)"
	# how the others ended, when they did not end so
	[ "$(json_get "$S" "sum(x['closed_by_peer'] for x in s['shards'])")" = 6 ] ||
		echo "   $(json_get "$S" "[(k, sum(x[k] for x in s['shards'])) for k in ('connections', 'closed_by_peer', 'closed_idle', 'closed_app', 'closed_error', 'closed_handshake_timeout')]")"
	check_json "$S" "sum(x['tx_bytes'] for x in s['shards']) > 2 * 52428800" \
		"stats A: tx_bytes covers two 50 MB transfers and more"
fi
bg_stop "$PA"
if [ "$BG_RC" -eq 0 ]; then
	ok "dpquicd A: SIGTERM -> exit 0"
else
	fail "dpquicd A exit $BG_RC after SIGTERM"
	tail -5 "$TMP/dA.log"
fi
no_sanitizer_report "$TMP/dA.log"

# ---- dpquicd B: Retry always ------------------------------------------------
# A new tap name: the old one disappears with its process, asynchronously.
start_dpquicd_tap PB "$NS" dpqt1 "$DADDR" "$KADDR" 24 "$TMP/dB.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/b.sock" \
	--retry always --duration 200
echo "dpquicd B (--retry always) serving on $DADDR:4433 (net_tap dpqt1)"
if ngc b_retry 0 --sha256 --ciphers AES-256-GCM "$DADDR" 4433 \
	/f1k /f1m /f50m; then
	expect_line b_retry '^retry yes$'
	expect_line b_retry '^cipher AES-256-GCM$'
	check_sha b_retry /f1k /f1m /f50m
fi
if ngc b_retry_chacha 0 --sha256 --ciphers CHACHA20-POLY1305 \
	"$DADDR" 4433 "${PATHS20[@]}"; then
	expect_line b_retry_chacha '^retry yes$'
	expect_line b_retry_chacha '^cipher CHACHA20-POLY1305$'
	check_sha b_retry_chacha "${PATHS20[@]}"
fi
sleep 0.5
if ctl_stats "$NS" "$TMP/b.sock" "$TMP/b_stats.json"; then
	S="$TMP/b_stats.json"
	# One Retry per connection, plus one for each first Initial the
	# client sent again before the Retry reached it (under load): the
	# listener keeps no state for them, so each gets its Retry, and the
	# client takes only the first (RFC 9000 §17.2.5.2). Every tokenless
	# Initial is answered, none is accepted.
	check_json "$S" "2 <= sum(x['listener'].get('retry', 0) for x in s['shards']) <= 12" \
		"stats B: a Retry for each connection (2, more if a first Initial was sent again)"
	check_json "$S" "sum(x['listener'].get('accept_retry_token', 0) for x in s['shards']) == 2" \
		"stats B: 2 connections accepted after Retry token validation"
	check_json "$S" "sum(x['listener'].get('accept', 0) for x in s['shards']) == 0" \
		"stats B: no connection accepted without a token"
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == 2" \
		"stats B: 2 handshakes"
	check_json "$S" "sum(x['closed_error'] + x['mgmt_handshakes_failed'] for x in s['shards']) == 0" \
		"stats B: no connection closed on an error"
fi
bg_stop "$PB"
[ "$BG_RC" -eq 0 ] || fail "dpquicd B exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/dB.log" "$TMP"/*.err

echo "--- dpquicd logs (tail) ---"
tail -n 3 "$TMP/dA.log" "$TMP/dB.log"
grep -h '^total_bytes' "$TMP"/*.out | sed 's/^/goodput: /'
finish
