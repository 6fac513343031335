#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Connection migration against dpquicd (RFC 9000 §9): dpquicd on a
# net_tap in a namespace, clients over kernel UDP whose side of the tap
# has two addresses.
#
#   test_migration.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT [NGTCP2_CLIENT]
#
# dpquicd runs two shards on one queue. Proves: a dpquic-client that
# moves to a new UDP port after 1 MB of a
# 5 MB download (a new socket, RFC 9000 §9.2), and one that moves to its
# second address, both finish with the right sha256 on the same
# connection; each used a fresh connection ID from the server
# (NEW_CONNECTION_ID) and validated the new path; an ngtcp2 client that
# migrates the same way also finishes. dpquicd's stats then show one
# migration per client, each new path validated, one handshake per
# client (no reconnect), the CIDs it issued and the ones retired, and no
# connection closed on an error.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT [NGTCP2_CLIENT]}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
NGCLIENT=${4:-}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
lib_init migration
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c $((5 * 1024 * 1024)) /dev/urandom > "$ROOT/f5m"

NS=dpq-e6-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
KADDR2=198.18.0.3

# Two shards on one queue (no RSS on net_tap): a datagram reaches the
# shard its CID names (QUIC-LB shard byte) by a hand-over ring, so the
# CIDs issued in NEW_CONNECTION_ID must name the connection's shard.
start_dpquicd_tap PD "$NS" dpqg0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock" --duration 150 \
	--shards 2 --allow-no-rss
ip netns exec "$NS" ip addr add "$KADDR2/24" dev dpqg0

NCLIENTS=0
# m_port: a new port, same address.
if run_timed m_port 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 60 \
	--sha256 --migrate-after 1000000 "$DADDR:4433" /f5m; then
	check_sha m_port /f5m
	if grep -Eq "^dpquic-client: migrated from $KADDR:[0-9]+ to $KADDR:[0-9]+\$" \
		"$TMP/m_port.err"; then
		ok "m_port: moved to a new port of $KADDR"
	else
		fail "m_port: no 'migrated' line: $(cat "$TMP/m_port.err")"
	fi
	expect_line m_port '^migrations 1 paths_validated [1-9]'
fi
NCLIENTS=$((NCLIENTS + 1))
# m_addr: the second address.
if run_timed m_addr 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 60 \
	--sha256 --migrate-after 1000000 --migrate-addr "$KADDR2" \
	"$DADDR:4433" /f5m; then
	check_sha m_addr /f5m
	if grep -Eq "^dpquic-client: migrated from $KADDR:[0-9]+ to $KADDR2:[0-9]+\$" \
		"$TMP/m_addr.err"; then
		ok "m_addr: moved from $KADDR to $KADDR2"
	else
		fail "m_addr: no 'migrated' line: $(cat "$TMP/m_addr.err")"
	fi
	expect_line m_addr '^migrations 1 paths_validated [1-9]'
fi
NCLIENTS=$((NCLIENTS + 1))
NMIG=2
if [ -n "$NGCLIENT" ] && [ -x "$NGCLIENT" ]; then
	if run_timed ng_mig 0 ip netns exec "$NS" "$NGCLIENT" --timeout 60 \
		--sha256 --migrate-after 1000000 "$DADDR" 4433 /f5m; then
		check_sha ng_mig /f5m
		expect_line ng_mig "^migrated to $KADDR port [0-9]+\$"
	fi
	NCLIENTS=$((NCLIENTS + 1))
	NMIG=3
fi

# The server's side, once the connections are gone (counted at close).
if stats_settled "$NS" "$TMP/d.sock" "$TMP/stats.json"; then
	S=$TMP/stats.json
	for i in 0 1; do
		echo "   shard $i: $(json_get "$S" "(s['shards'][$i]['handshakes'], s['shards'][$i]['handoff_out'], s['shards'][$i]['handoff_in'], s['shards'][$i]['paths'])")"
	done
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == $NCLIENTS" \
		"$NCLIENTS handshakes for $NCLIENTS clients (no reconnect)"
	check_json "$S" "sum(x['paths']['migrations'] for x in s['shards']) == $NMIG" \
		"$NMIG migrations seen by the server"
	check_json "$S" "sum(x['paths']['validated'] for x in s['shards']) >= $NMIG" \
		"each new client address validated (PATH_CHALLENGE answered)"
	check_json "$S" "sum(x['paths']['reverts'] for x in s['shards']) == 0" \
		"no return to an old path"
	check_json "$S" "sum(x['paths']['cids_issued'] for x in s['shards']) >= 2 * $NCLIENTS" \
		"NEW_CONNECTION_ID frames sent to every client"
	check_json "$S" "sum(x['paths']['cids_retired'] for x in s['shards']) >= $NMIG" \
		"the clients retired the CIDs of their old paths"
	check_json "$S" "sum(x['closed_error'] for x in s['shards']) == 0" \
		"no connection closed on an error"
	check_json "$S" "sum(x['handoff_out'] for x in s['shards']) == sum(x['handoff_in'] for x in s['shards'])" \
		"every datagram handed to another shard arrived there"
fi
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log" "$TMP"/*.err
finish
