#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The real-time link emulator (dpq-linkem) between two network namespaces:
#
#   A (198.18.0.1, la0) -- veth -- M: dpq-linkem -- veth -- B (lb0: kernel
#   198.18.0.2; dpquicd owns 198.18.0.3 on the same veth via af_packet)
#
# Checks that the emulated path does what it is told (RTT from the delay,
# loss, duplication, reordering seen by UDP probes and in the emulator's
# counters), then that transfers cross it byte-exact: kernel TCP, the
# dpquic client (kernel UDP) against the ngtcp2 server, and the ngtcp2
# client against dpquicd, under loss + reordering + duplication +
# corruption, and the dpquic client across a 2-second blackout.
#   test_linkem_rt.sh DPQ_LINKEM NETPROBE DPQUIC_CLIENT NGTCP2_SERVER
#                     NGTCP2_CLIENT DPQUICD
set -u
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

LINKEM=${1:?usage: $0 DPQ_LINKEM NETPROBE DPQUIC_CLIENT NGSERVER NGCLIENT DPQUICD}
NETPROBE=${2:?}
DPQUIC_CLIENT=${3:?}
NGSERVER=${4:?}
NGCLIENT=${5:?}
DPQUICD=${6:?}
require_root
command -v ethtool >/dev/null || { echo "SKIP: ethtool missing"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
require_exec "$LINKEM" "$NETPROBE" "$DPQUIC_CLIENT" "$NGSERVER" "$NGCLIENT" \
	"$DPQUICD"
lib_init linkem-rt
make_content

NA=dpq-e7-$$ NB=dpq-e8-$$ NM=dpq-e9-$$
A=198.18.0.1 B=198.18.0.2 D=198.18.0.3
ns_add "$NA"
ns_add "$NB"
ns_add "$NM"
ip link add la0 netns "$NA" type veth peer name la1 netns "$NM"
ip link add lb0 netns "$NB" type veth peer name lb1 netns "$NM"
# Whole frames with finished checksums: no offloads on any end (af_packet
# would otherwise see 64 KB TSO frames and partial checksums).
for x in "$NA la0" "$NM la1" "$NM lb1" "$NB lb0"; do
	read -r ns ifc <<<"$x"
	ip netns exec "$ns" ethtool -K "$ifc" tx off tso off gso off gro off \
		>/dev/null 2>&1
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1"
	ip -n "$ns" link set "$ifc" up
done
ip -n "$NA" addr add "$A/24" dev la0
ip -n "$NB" addr add "$B/24" dev lb0

LPID=
# linkem_start NAME SPEC [OPTION...]: (re)start the emulator with SPEC
# both ways.
linkem_start() {
	local i name=$1 spec=$2
	linkem_stop
	rm -f "$TMP/ready"
	bg_start LPID "$TMP/linkem-$1.log" ip netns exec "$NM" "$LINKEM" \
		--no-huge --no-shconf --no-pci -m 256 -l 1 --log-level=error \
		--no-telemetry --vdev=net_af_packet0,iface=la1 \
		--vdev=net_af_packet1,iface=lb1 -- --link "$spec" \
		--delay-line 8192 --ready "$TMP/ready" "${@:3}"
	LNAME=$name
	for i in $(seq 1 600); do
		[ -f "$TMP/ready" ] && return 0
		kill -0 "$LPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "dpq-linkem did not start:"
	cat "$TMP/linkem-$1.log"
	exit 1
}
linkem_stop() {
	if [ -n "$LPID" ]; then
		bg_stop "$LPID" 10
		LPID=
		sed 's/^/   linkem: /' "$TMP/linkem-$LNAME.log" | grep -v '^   linkem: EAL'
	fi
}
# counter LOG DIR FIELD: a number from the emulator's exit report.
counter() {
	sed -n "s/^$2: .*$3 \([0-9]*\).*/\1/p" "$1" | head -1
}
in_range() {	# NAME VALUE LO HI
	if [ -n "$2" ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ]; then
		ok "$1 = $2 (expected $3..$4)"
	else
		fail "$1 = '$2', expected $3..$4"
	fi
}
probe() {	# NAME COUNT INTERVAL_MS: UDP pings A -> B echo
	local pid
	bg_start pid "$TMP/echo-$1.log" ip netns exec "$NB" "$NETPROBE" \
		udp-echo 5000 $(( $2 * $3 / 1000 + 8 ))
	sleep 0.3
	ip netns exec "$NA" "$NETPROBE" udp-ping "$B" 5000 "$2" "$3" \
		> "$TMP/ping-$1.out" 2>&1
	echo "-- ping $1: $(cat "$TMP/ping-$1.out")"
	kill "$pid" 2>/dev/null
}
pfield() {	# NAME FIELD: a number from the ping summary
	sed -n "s/.*$2 \([0-9.]*\).*/\1/p" "$TMP/ping-$1.out" | head -1
}

# 1. Delay: 25 ms each way gives an RTT of at least 50 ms.
linkem_start delay "delay=25ms,seed=1"
probe delay 40 25
rtt_min=$(pfield delay min)
rtt_med=$(pfield delay median)
in_range "delay: replies" "$(pfield delay received)" 40 40
in_range "delay: min RTT (ms, x100)" \
	"$(awk -v v="$rtt_min" 'BEGIN { printf "%d", v * 100 }')" 5000 8000
echo "   median RTT $rtt_med ms"
linkem_stop

# 2. Loss, duplication, reordering, as the probes and the counters see it.
linkem_start mix "delay=5ms,loss=10%,dup=10%,reorder=20%,reorder_delay=15ms,seed=2"
probe mix 300 3
linkem_stop
L=$TMP/linkem-mix.log
# Each probe crosses twice: P(reply) = 0.81; 300 probes -> 243 +- 7 sd.
in_range "mix: replies" "$(pfield mix received)" 205 280
in_range "mix: a2b lost" "$(counter "$L" a2b 'loss')" 10 60
in_range "mix: a2b duplicated" "$(counter "$L" a2b 'duplicated')" 10 60
in_range "mix: a2b reordered" "$(counter "$L" a2b 'reordered')" 20 100
in_range "mix: duplicates seen" "$(pfield mix dup)" 1 120
in_range "mix: reordered seen" "$(pfield mix reordered)" 1 200

IMPAIR="delay=10ms,rate=50mbit,queue=128kb,loss=2%,reorder=1%,dup=1%,corrupt=0.5%"

# 3. Kernel TCP, byte-exact (sha256 checked by the sink).
linkem_start tcp "$IMPAIR,seed=3"
bg_start SINK "$TMP/sink.log" ip netns exec "$NB" "$NETPROBE" tcp-sink 5001 100
sleep 0.3
if run_timed tcp 0 ip netns exec "$NA" "$NETPROBE" tcp-source "$B" 5001 \
	8000000; then
	expect_line tcp ' ok$'
	cat "$TMP/tcp.out"
fi
linkem_stop
in_range "tcp: a2b corrupted" "$(counter "$TMP/linkem-tcp.log" a2b corrupted)" 1 1000

# 4. dpquic-client (kernel UDP) -> ngtcp2 server in B.
linkem_start quic1 "$IMPAIR,seed=4"
bg_start NGS "$TMP/ngs.log" ip netns exec "$NB" "$NGSERVER" --timeout 170 \
	"$B" 0 "$ROOT"
PORT=
for i in $(seq 1 100); do
	PORT=$(sed -n 's/^listening on .* port \([0-9]*\)$/\1/p' "$TMP/ngs.log")
	[ -n "$PORT" ] && break
	sleep 0.05
done
[ -n "$PORT" ] || { echo "ngtcp2 server did not start"; cat "$TMP/ngs.log"; exit 1; }
if run_timed quic_dpq_ng 0 ip netns exec "$NA" "$DPQUIC_CLIENT" --timeout 90 \
	--sha256 "$B:$PORT" /f1k /f1m /m1 /m2; then
	expect_line quic_dpq_ng '^files_ok 4/4$'
	check_sha quic_dpq_ng /f1k /f1m /m1 /m2
fi
linkem_stop
in_range "quic1: b2a lost" "$(counter "$TMP/linkem-quic1.log" b2a 'loss')" 1 100000

# 5. ngtcp2 client in A -> dpquicd (af_packet on lb0, address D).
linkem_start quic2 "$IMPAIR,seed=5"
bg_start DPQD "$TMP/dpquicd.log" ip netns exec "$NB" "$DPQUICD" --no-huge \
	--no-shconf --no-pci -m 512 -l 0 --log-level='lib.*:error' --no-telemetry \
	--vdev=net_af_packet0,iface=lb0 -- --addr "$D:4433" --prefix 24 \
	--root "$ROOT" --ctl "$TMP/d.sock" --duration 150
for i in $(seq 1 300); do
	grep -q 'dpquicd: serving ' "$TMP/dpquicd.log" && break
	kill -0 "$DPQD" 2>/dev/null || break
	sleep 0.1
done
if grep -q 'dpquicd: serving ' "$TMP/dpquicd.log"; then
	if run_timed quic_ng_dpqd 0 ip netns exec "$NA" "$NGCLIENT" \
		--timeout 90 --sha256 "$D" 4433 /f1k /f1m /m1 /m2; then
		expect_line quic_ng_dpqd '^files_ok 4/4 '
		check_sha quic_ng_dpqd /f1k /f1m /m1 /m2
	fi
else
	fail "dpquicd did not start: $(tail -5 "$TMP/dpquicd.log")"
fi
bg_stop "$DPQD" 20
linkem_stop

# 6. A 2-second blackout in the middle of a transfer at 10 Mbit/s.
linkem_start blackout "delay=10ms,rate=10mbit,queue=100kb,blackout=1s+2s,seed=6" \
	--clock-on-traffic
# The emulator's clock starts with the first frame (the client's ARP or
# Initial): the blackout begins 1 s in, while the 5 MB fetch runs (4 s
# at 10 Mbit/s).
if run_timed quic_blackout 0 ip netns exec "$NA" "$DPQUIC_CLIENT" \
	--timeout 120 --sha256 "$B:$PORT" /m3 /m4 /m5 /m6 /f1m; then
	check_sha quic_blackout /m3 /m4 /m5 /m6 /f1m
	w=$(awk -v w="$LAST_WALL" 'BEGIN { printf "%d", w * 10 }')
	in_range "blackout: fetch took (s x10)" "$w" 50 1200
fi
linkem_stop
in_range "blackout: a2b dropped" \
	"$(counter "$TMP/linkem-blackout.log" a2b 'blackout')" 1 100000
in_range "blackout: b2a dropped" \
	"$(counter "$TMP/linkem-blackout.log" b2a 'blackout')" 1 100000
bg_stop "$NGS" 10
no_sanitizer_report "$TMP"/*.log "$TMP"/*.err
finish
