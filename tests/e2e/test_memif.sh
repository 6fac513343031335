#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquic-client -> dpquicd with DPDK on both sides: two processes joined
# by a net_memif link (dpquicd the memif server, the client the memif
# client; socket-abstract=no, socket file in the test's temp dir,
# --no-shconf on both), run inside a private network namespace.
#
#   test_memif.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT
#
# Proves: the client's DPDK stack resolves dpquicd's address by ARP over
# memif, completes a handshake and fetches 1 KB + 1 MB (AES-128-GCM) and
# 50 MB (CHACHA20-POLY1305) with sha256 equal to sha256sum's; dpquicd's
# stats count both connections and handshakes, ARP traffic on the port
# and no drops or errors. Then 24 memif peers go away one after another
# (half exit after a fetch, half are SIGKILLed mid-transfer) and 30 pairs
# of clients are SIGKILLed while connecting: dpquicd stays up, serves the
# next client and exits 0 (DPQ_MEMIF_CHURN=N, DPQ_MEMIF_FLAPS=N).
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
lib_init memif
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom > "$ROOT/f1k"
head -c $((1024 * 1024)) /dev/urandom > "$ROOT/f1m"
head -c $((50 * 1024 * 1024)) /dev/urandom > "$ROOT/f50m"

NS=dpq-e5-$$
ns_add "$NS"
SADDR=198.18.2.1
CADDR=198.18.2.2
SOCK=$TMP/memif.sock
MEMIF="socket=$SOCK,socket-abstract=no"

# dpquicd: worker lcore 1 runs the shard; the client polls on lcore 0.
bg_start PD "$TMP/d.log" ip netns exec "$NS" "$DPQUICD" --no-huge \
	--no-shconf --no-pci -m 512 -l 0,1 --log-level='lib.*:error' \
	"--vdev=net_memif0,role=server,id=0,$MEMIF" -- \
	--addr "$SADDR:4433" --prefix 24 --root "$ROOT" --ctl "$TMP/d.sock" \
	--duration 200
for i in $(seq 1 300); do
	grep -q 'dpquicd: serving ' "$TMP/d.log" && break
	kill -0 "$PD" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q 'dpquicd: serving ' "$TMP/d.log" || [ ! -S "$SOCK" ]; then
	echo "dpquicd did not start on memif:"
	cat "$TMP/d.log"
	exit 1
fi
echo "dpquicd serving on $SADDR:4433 over memif ($SOCK)"

# dqm NAME RC [client options] PATHS: dpquic-client on the memif client.
dqm() {
	local name=$1 want=$2
	shift 2
	run_timed "$name" "$want" ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--no-huge --no-shconf --no-pci -m 256 -l 0 --log-level=error \
		--no-telemetry "--vdev=net_memif0,role=client,id=0,$MEMIF" -- \
		--dpdk "$CADDR" --prefix 24 --timeout 200 "$@"
}

if dqm m_small 0 --sha256 --ciphers AES-128-GCM "$SADDR:4433" /f1k /f1m; then
	expect_line m_small '^handshake_ms [0-9.]+ cipher 0x1301 '
	expect_line m_small '^files_ok 2/2$'
	check_sha m_small /f1k /f1m
fi
if dqm m_big 0 --sha256 --ciphers CHACHA20-POLY1305 "$SADDR:4433" /f50m; then
	expect_line m_big '^handshake_ms [0-9.]+ cipher 0x1303 '
	check_sha m_big /f50m
fi

sleep 0.3
if ctl_stats "$NS" "$TMP/d.sock" "$TMP/stats.json"; then
	S=$TMP/stats.json
	check_json "$S" "sum(x['connections_created'] for x in s['shards']) == 2" \
		"stats: 2 connections created"
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == 2" \
		"stats: 2 handshakes"
	check_json "$S" "sum(x['closed_error'] + x['mgmt_handshakes_failed'] for x in s['shards']) == 0" \
		"stats: no connection closed on an error"
	check_json "$S" "s['port'].get('arp_rx', 0) >= 1" \
		"stats: ARP received on the memif port"
	check_json "$S" "s['port']['tx_packets'] > 36000" \
		"stats: port sent the 51 MB in > 36000 packets"
	check_json "$S" "s['port']['rx_bad'] == 0" \
		"stats: no bad packets received on the port"
	# A full memif ring refuses packets when the client falls behind
	# (two busy pollers share two CPUs): loss that QUIC recovers, so
	# only reported.
	echo "port: $(json_get "$S" "s['port']")"
fi
# Memif peers that go away, one after another: half fetch 1 MB and exit,
# half are SIGKILLed in the middle of a 50 MB fetch (dpquicd sending at full
# rate). The PMD tears the link down on EAL's interrupt thread while the
# shard polls the port; before the interrupt gate (drivers/dpdk/
# intr_gate.c) about one disconnect in 40 crashed dpquicd in rx_burst.
# memif_idle: wait (at most 10 s) until dpquicd has closed its control
# socket to the last peer. A client that connects before that is refused
# ("Already connected") and DPDK 22.11's memif client never tries again.
memif_idle() {
	local i
	for i in $(seq 1 100); do
		ip netns exec "$NS" ss -xH 2>/dev/null | grep -qF "$SOCK " ||
			return 0
		sleep 0.1
	done
	echo "   dpquicd still holds a memif peer after 10 s"
}

CHURN=${DPQ_MEMIF_CHURN:-24}
churn_ok=0
gone=0
while [ "$gone" -lt "$CHURN" ] && kill -0 "$PD" 2>/dev/null; do
	gone=$((gone + 1))
	memif_idle
	if [ $((gone % 2)) -eq 1 ]; then
		dqm "churn$gone" 0 "$SADDR:4433" /f1m &&
			churn_ok=$((churn_ok + 1))
	else
		ip netns exec "$NS" "$DPQUIC_CLIENT" --no-huge --no-shconf \
			--no-pci -m 256 -l 0 --log-level=error --no-telemetry \
			"--vdev=net_memif0,role=client,id=0,$MEMIF" -- \
			--dpdk "$CADDR" --prefix 24 --timeout 20 \
			"$SADDR:4433" /f50m > "$TMP/kill.out" 2>&1 &
		sleep "0.$((3 + RANDOM % 6))"
		kill -KILL $! 2>/dev/null
		wait $! 2>/dev/null
	fi
done
if kill -0 "$PD" 2>/dev/null; then
	ok "dpquicd alive after $gone memif peers went away"
else
	fail "dpquicd died after memif peer $gone of $CHURN went away"
fi
[ "$churn_ok" -eq $(((gone + 1) / 2)) ] ||
	fail "only $churn_ok of $(((gone + 1) / 2)) churn fetches completed"
# Flaps: two clients at once, both SIGKILLed 20-300 ms after they start,
# mostly inside memif's connection handshake (one of them is refused:
# "Already connected"). Without the gate dpquicd died within 60 of these.
FLAPS=${DPQ_MEMIF_FLAPS:-30}
flaps=0
while [ "$flaps" -lt "$FLAPS" ] && kill -0 "$PD" 2>/dev/null; do
	flaps=$((flaps + 1))
	for c in 2 3; do
		ip netns exec "$NS" "$DPQUIC_CLIENT" --no-huge --no-shconf \
			--no-pci -m 256 -l $((c - 2)) --log-level=error \
			--no-telemetry "--vdev=net_memif0,role=client,id=0,$MEMIF" \
			-- --dpdk "198.18.2.$((c + 1))" --prefix 24 --timeout 5 \
			"$SADDR:4433" /f1m > /dev/null 2>&1 &
		[ $c -eq 2 ] && P2=$! || P3=$!
	done
	sleep "0.$(printf %03d $((20 + RANDOM % 280)))"
	kill -KILL "$P2" "$P3" 2>/dev/null
	wait "$P2" "$P3" 2>/dev/null
done
if kill -0 "$PD" 2>/dev/null; then
	ok "dpquicd alive after $flaps flaps of two memif clients"
elif [ "$flaps" -gt 0 ]; then
	fail "dpquicd died at flap $flaps of $FLAPS"
fi

memif_idle
if dqm m_after 0 --sha256 "$SADDR:4433" /f1m; then
	check_sha m_after /f1m
fi

bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log" "$TMP"/*.err
if [ $FAILS -ne 0 ]; then
	echo "--- dpquicd log"
	cat "$TMP/d.log"
fi
grep -h "^total_bytes" "$TMP"/m_*.out | sed 's/^/goodput: /'
finish
