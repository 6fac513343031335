#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# NAT rebinding against dpquicd (RFC 9000 §9.3): the client does not know
# it moved. dpquicd on a net_tap in a namespace; dpquic-client over kernel
# UDP in the same namespace; a stateless NAT of nftables rules (notrack)
# rewrites the client's datagrams on their way to dpquicd, and the
# answers back; what dpquicd sends to an old mapping is dropped (a NAT
# forgets it), so the old path is dead at once.
#
# The client runs with --no-gso: nftables rewriting the ports or address
# of a UDP GSO send on the sending host leaves its segments with UDP
# checksums of the old header (seen with tshark: off by exactly the port
# delta), and dpquicd rightly drops them (rx_bad). The client's
# PATH_RESPONSEs, padded to 1200 bytes and usually sent in a GSO batch
# with the next datagram, were all lost that way: every validation of
# the new address failed, dpquicd went back to the dead one, and this
# test failed. A NAT on another box sees the segments, not the GSO send.
#
#   test_nat_rebinding.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT
#
# The client writes its download into a FIFO that the test reads, so the
# transfer waits for the test at each step (no race with a fast or slow
# machine):
#   1. the handshake is done and the first bytes arrived;
#   2. the NAT maps the client's port to 40000 (a port-only rebinding);
#      the test reads 1 MB: dpquicd must now send to KADDR:40000;
#   3. the NAT maps the client to KADDR2:40000 (an address rebinding);
#      the test reads the rest: dpquicd must send to KADDR2:40000.
#   3b. the test reads 1 MB more (all of it through the new mapping):
#      dpquicd must send to KADDR2:40000; then the rest.
#
# Proves: the download completes with the right sha256, one handshake (no
# reconnect), dpquicd followed both changes, validated both new paths
# (PATH_CHALLENGE answered through the NAT), never went back, no datagram
# reached dpquicd with a bad checksum, and no connection closed on an
# error.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
command -v nft >/dev/null || { echo "SKIP: nft (nftables) missing"; exit 77; }
lib_init natrebind
ROOT=$TMP/root
mkdir -p "$ROOT" "$TMP/out"
SIZE=$((5 * 1024 * 1024))
FIRST=$((1024 * 1024))
head -c $SIZE /dev/urandom > "$ROOT/f5m"

NS=dpq-e7-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
KADDR2=198.18.0.3
NATPORT=40000
SOCK=$TMP/d.sock

start_dpquicd_tap PD "$NS" dpqn0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$SOCK" --duration 150
ip netns exec "$NS" ip addr add "$KADDR2/24" dev dpqn0 nodad 2>/dev/null ||
	ip netns exec "$NS" ip addr add "$KADDR2/24" dev dpqn0

ctl() { ip netns exec "$NS" timeout 60 "$DPQUIC_CTL" -t 30000 -s "$SOCK" -r "$@"; }
# server_peer: the peer address of dpquicd's only connection ("" if none).
server_peer() {
	ctl connections > "$TMP/conns.json" 2>/dev/null || return 1
	json_get "$TMP/conns.json" \
		"s['connections'][0]['peer'] if s['total'] == 1 else ''"
}
# wait_peer ADDR: until dpquicd sends to ADDR (at most 30 s).
wait_peer() {
	local p end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		p=$(server_peer)
		[ "$p" = "$1" ] && return 0
		sleep 0.1
	done
	echo "   dpquicd's peer: '$p'"
	return 1
}
# nat OUT PRE: replace the NAT's rules (output: client -> dpquicd,
# prerouting: dpquicd -> client); before conntrack (notrack), stateless.
# PRE's rewrite accepts; any other datagram from dpquicd (to an old
# mapping, or to the client's own port) is dropped.
nat() {
	{
		echo "table ip dpqnat"
		echo "delete table ip dpqnat"
		echo "table ip dpqnat {"
		echo "  chain out { type filter hook output priority -300; $1 }"
		echo "  chain pre { type filter hook prerouting priority -300; $2"
		echo "    ip saddr $DADDR udp sport 4433 drop; }"
		echo "}"
	} > "$TMP/nat.nft"
	ip netns exec "$NS" nft -f "$TMP/nat.nft"
}

# The client blocks on its output FIFO until the test reads it; the test
# holds the FIFO open read-write so that nothing blocks on open.
mkfifo "$TMP/out/f5m"
exec 3<> "$TMP/out/f5m"
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 150 --idle-timeout 60 \
	--no-gso --sha256 --out "$TMP/out" "$DADDR:4433" /f5m > "$TMP/c.out" \
	2> "$TMP/c.err" &
CPID=$!
BG_PIDS+=($CPID)

P=""
for i in $(seq 1 300); do
	P=$(server_peer) && [ -n "$P" ] && break
	sleep 0.1
done
case "$P" in
"$KADDR":*) ok "the connection is up from $P" ;;
*) fail "no connection from $KADDR (peer '$P')"; P="" ;;
esac
CPORT=${P##*:}

if [ -n "$P" ]; then
	# 2. Port-only rebinding.
	nat "ip daddr $DADDR udp sport $CPORT udp sport set $NATPORT notrack;" \
	    "ip saddr $DADDR ip daddr $KADDR udp dport $NATPORT udp dport set $CPORT notrack accept;"
	timeout 60 head -c $FIRST <&3 > "$TMP/part1"
	if wait_peer "$KADDR:$NATPORT"; then
		ok "port rebinding: dpquicd sends to $KADDR:$NATPORT"
	else
		fail "port rebinding: dpquicd did not follow to $KADDR:$NATPORT"
	fi
	# 3. Address rebinding (the port stays the NAT's).
	# The answers' UDP checksum is zeroed (IPv4: none): the rule does
	# not fix it for the rewritten destination address.
	nat "ip daddr $DADDR udp sport $CPORT ip saddr set $KADDR2 udp sport set $NATPORT notrack;" \
	    "ip saddr $DADDR ip daddr $KADDR2 udp dport $NATPORT ip daddr set $KADDR udp dport set $CPORT udp checksum set 0 notrack accept;"
	timeout 60 head -c $FIRST <&3 > "$TMP/part2"
	if wait_peer "$KADDR2:$NATPORT"; then
		ok "address rebinding: dpquicd sends to $KADDR2:$NATPORT"
	else
		fail "address rebinding: dpquicd did not follow to $KADDR2:$NATPORT"
	fi
	timeout 120 head -c $((SIZE - 2 * FIRST)) <&3 > "$TMP/part3"
fi
for i in $(seq 1 600); do
	kill -0 "$CPID" 2>/dev/null || break
	sleep 0.1
done
kill "$CPID" 2>/dev/null
wait "$CPID"
RC=$?
exec 3<&-
if [ "$RC" -eq 0 ]; then
	ok "client exit 0"
else
	fail "client exit $RC: $(tail -5 "$TMP/c.err")"
fi
check_sha c /f5m
if cat "$TMP/part1" "$TMP/part2" "$TMP/part3" 2>/dev/null |
	cmp -s - "$ROOT/f5m"; then
	ok "the bytes read from the FIFO are the file"
else
	fail "the bytes read from the FIFO differ from the file"
fi
grep -E '^migrations' "$TMP/c.out" | sed 's/^/   client: /'
echo "   kernel: $(ip netns exec "$NS" nstat -az UdpInCsumErrors UdpNoPorts 2>/dev/null | tail -n +2 | awk '{ printf "%s %s ", $1, $2 }')"

# The server's side, once the connection is gone (counted at close).
if stats_settled "$NS" "$SOCK" "$TMP/stats.json"; then
	S=$TMP/stats.json
	echo "   paths: $(json_get "$S" "s['shards'][0]['paths']")"
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == 1" \
		"one handshake (no reconnect)"
	check_json "$S" "sum(x['paths']['migrations'] for x in s['shards']) == 2" \
		"two path changes seen by dpquicd"
	check_json "$S" "sum(x['paths']['validated'] for x in s['shards']) >= 2" \
		"both new addresses validated through the NAT"
	check_json "$S" "sum(x['paths']['reverts'] for x in s['shards']) == 0" \
		"no return to an old path"
	check_json "$S" "sum(x['closed_error'] for x in s['shards']) == 0" \
		"no connection closed on an error"
	echo "   port: $(json_get "$S" "s['port']")"
	check_json "$S" "s['port']['rx_bad'] == 0" \
		"no datagram with a bad checksum reached dpquicd"
fi
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log" "$TMP/c.err"
finish
