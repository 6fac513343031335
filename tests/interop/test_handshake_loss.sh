#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Handshakes and transfers against the libngtcp2 peers through heavy
# random loss (RFC 9002 §6.2: probes carry unacknowledged data), on a
# real-time path in a namespace (no netem here: iptables' statistic match
# and nftables' numgen drop packets at random):
#   A. dpquic-client -> ngtcp2 server over kernel UDP on the namespace's
#      loopback, LOSS% of the datagrams dropped each way: N fetches of
#      /f1k, each must complete (a lost ClientHello is resent by the
#      client's probe; an ngtcp2 server never answers a PING-only Initial);
#   B. ngtcp2 client -> dpquicd on a net_tap port, LOSS% dropped each way
#      (nftables on the tap's kernel side, both hooks): N fetches of /f1k,
#      each must complete (a lost server flight is resent by the server's
#      probe, not after the client acknowledges a PING);
#   C. a 1 MB fetch each way at 5% loss, sha256 checked, with every
#      congestion controller on the dpquic side.
# Prints each connection's wall time, and the worst.
#
#   test_handshake_loss.sh DPQUICD DPQUIC_CLIENT NGTCP2_CLIENT NGTCP2_SERVER [N] [LOSS]
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CLIENT NGTCP2_CLIENT NGTCP2_SERVER [N] [LOSS]}
DPQUIC_CLIENT=${2:?}
NGCLIENT=${3:?}
NGSERVER=${4:?}
N=${5:-12}
LOSS=${6:-30}
require_root
require_exec "$DPQUICD" "$DPQUIC_CLIENT" "$NGCLIENT" "$NGSERVER"
command -v iptables >/dev/null || { echo "iptables missing (packages.txt)"; exit 1; }
command -v nft >/dev/null || { echo "nft missing (packages.txt)"; exit 1; }
lib_init hsloss
make_content

NS=dpq-i4-$$
ns_add "$NS"
P=$(awk -v l="$LOSS" 'BEGIN { printf "%.2f", l / 100 }')

# worst NAME...: the largest wall time among the runs named.
WORST=0
note_wall() {
	WORST=$(awk -v a="$WORST" -v b="$LAST_WALL" 'BEGIN { print (b > a) ? b : a }')
}

# ---- A: dpquic-client -> ngtcp2 server, loopback ---------------------------
A4=198.18.1.1
ip netns exec "$NS" ip addr add "$A4/32" dev lo
bg_start PS "$TMP/ngs.log" ip netns exec "$NS" "$NGSERVER" --timeout 600 \
	"$A4" 0 "$ROOT"
PORT=
for i in $(seq 1 100); do
	PORT=$(sed -n 's/^listening on .* port \([0-9]*\)$/\1/p' "$TMP/ngs.log")
	[ -n "$PORT" ] && break
	sleep 0.05
done
[ -n "$PORT" ] || { fail "ngtcp2 server did not start"; cat "$TMP/ngs.log"; finish; }
# Every datagram crosses INPUT once on lo: LOSS% each way.
ip netns exec "$NS" iptables -A INPUT -i lo -p udp \
	-m statistic --mode random --probability "$P" -j DROP

ok_a=0
WORST=0
for i in $(seq 1 "$N"); do
	if run_timed "a$i" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--timeout 60 --sha256 "$A4:$PORT" /f1k &&
	   grep -q '^files_ok 1/1$' "$TMP/a$i.out"; then
		ok_a=$((ok_a + 1))
		note_wall
	fi
done
[ "$ok_a" -eq "$N" ] &&
	ok "A: dpquic-client -> ngtcp2 server, $LOSS% loss each way: $ok_a/$N fetches complete, worst ${WORST}s" ||
	fail "A: only $ok_a/$N fetches completed through $LOSS% loss"
dropped=$(ip netns exec "$NS" iptables -L INPUT -v -x -n | awk '/DROP/ { print $1 }')
[ "${dropped:-0}" -gt 0 ] && ok "A: iptables dropped $dropped datagrams" ||
	fail "A: nothing dropped: the loss did not happen"

# C (client side): 1 MB at 5%, every controller.
ip netns exec "$NS" iptables -F INPUT
ip netns exec "$NS" iptables -A INPUT -i lo -p udp \
	-m statistic --mode random --probability 0.05 -j DROP
for cc in newreno cubic bbr; do
	if run_timed "ca_$cc" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--timeout 90 --sha256 --cc "$cc" "$A4:$PORT" /f1m; then
		check_sha "ca_$cc" /f1m
	fi
done
ip netns exec "$NS" iptables -F INPUT
bg_stop "$PS"

# ---- B: ngtcp2 client -> dpquicd on net_tap --------------------------------
DADDR=198.18.0.2
KADDR=198.18.0.1
start_dpquicd_tap PD "$NS" dpqh0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock"
# start_dpquicd_tap pins dpquicd's MAC as a permanent neighbour (under
# load the kernel's ARP stalled: client datagrams held, then dropped).
# Both directions on the tap's kernel side: egress toward dpquicd,
# ingress from it (an OUTPUT DROP would fail sendmsg, not lose a packet).
ip netns exec "$NS" nft -f - <<NFT
table netdev hsloss {
	chain eg { type filter hook egress device dpqh0 priority 0;
		udp dport 4433 numgen random mod 100 < $LOSS counter drop; }
	chain in { type filter hook ingress device dpqh0 priority 0;
		udp sport 4433 numgen random mod 100 < $LOSS counter drop; }
}
NFT
[ $? -eq 0 ] || fail "B: nft rules refused"

ok_b=0
WORST=0
# The ngtcp2 client's idle timeout as long as its overall one: with the
# default 30 s, a client whose Initials (sent at 0, 1, 3, 7 and 15 s,
# ngtcp2's PTO backoff) are all lost gives up before its sixth, and at
# 30% loss that is 0.3^5 = 0.24% of clients (1 in 21 runs of 12 seen).
for i in $(seq 1 "$N"); do
	if run_timed "b$i" 0 ip netns exec "$NS" "$NGCLIENT" --timeout 60 \
		--idle-timeout 60 --sha256 "$DADDR" 4433 /f1k &&
	   grep -q '^files_ok 1/1' "$TMP/b$i.out"; then
		ok_b=$((ok_b + 1))
		note_wall
	fi
done
if [ "$ok_b" -eq "$N" ]; then
	ok "B: ngtcp2 client -> dpquicd, $LOSS% loss each way: $ok_b/$N fetches complete, worst ${WORST}s"
else
	fail "B: only $ok_b/$N fetches completed through $LOSS% loss"
	# How dpquicd's connections ended (closes by reason, evictions,
	# refusals): what tells a server-side stall from a lost client.
	CTL=${DPQUIC_CTL:-$(dirname "$DPQUICD")/control/ctl/dpquic-ctl}
	[ -x "$CTL" ] && "$CTL" -s "$TMP/d.sock" stats 2>&1 | sed 's/^/   stats: /'
	# HSLOSS_KEEP=FILE keeps dpquicd's log (by hand, with DPQD_EXTRA
	# raising its level).
	[ -n "${HSLOSS_KEEP:-}" ] && cp "$TMP/d.log" "$HSLOSS_KEEP"
fi
counts=$(ip netns exec "$NS" nft list table netdev hsloss |
	awk '/counter/ { for (i = 1; i <= NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }')
[ "$counts" -gt 0 ] && ok "B: nftables dropped $counts datagrams" ||
	fail "B: nothing dropped: the loss did not happen"

# C (server side): 1 MB at 5%.
ip netns exec "$NS" nft delete table netdev hsloss
ip netns exec "$NS" nft -f - <<NFT
table netdev hsloss5 {
	chain eg { type filter hook egress device dpqh0 priority 0;
		udp dport 4433 numgen random mod 100 < 5 drop; }
	chain in { type filter hook ingress device dpqh0 priority 0;
		udp sport 4433 numgen random mod 100 < 5 drop; }
}
NFT
if run_timed cb 0 ip netns exec "$NS" "$NGCLIENT" --timeout 90 --sha256 \
	"$DADDR" 4433 /f1m; then
	check_sha cb /f1m
fi
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] && ok "dpquicd exited 0" || fail "dpquicd exit $BG_RC"
finish
