#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Goodput vs random loss at 20 ms RTT and a 1 Gbit/s bottleneck: dpquic
# for each congestion controller through the emulated link in virtual
# time (dpq-bench-emu loss), and beside it kernel TCP (CUBIC) through the
# same impairments in real time (dpq-linkem between two namespaces), in
# the same run. Root. Prints the table and where the CPU went.
#   bench/bench_loss.sh [BUILD_DIR] [SEEDS] [TCP_RUNS]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
SEEDS=${2:-3}
RUNS=${3:-3}
. "$HERE/../tests/interop/netns_lib.sh"
require_root
command -v ethtool >/dev/null || { echo "needs ethtool"; exit 1; }
LINKEM=$BUILD/emu/dpq-linkem
BENCH=$BUILD/bench/dpq-bench-emu
NETPROBE=$HERE/netprobe.py
require_exec "$LINKEM" "$BENCH" "$NETPROBE"
lib_init bench-loss

echo "== dpquic, virtual time (emu/sim.c) =="
"$BENCH" --seeds "$SEEDS" loss | tee "$TMP/sim.txt"
echo

NA=dpq-e4-$$ NB=dpq-e5-$$ NM=dpq-e6-$$
ns_add "$NA"
ns_add "$NB"
ns_add "$NM"
ip link add la0 netns "$NA" type veth peer name la1 netns "$NM"
ip link add lb0 netns "$NB" type veth peer name lb1 netns "$NM"
for x in "$NA la0" "$NM la1" "$NM lb1" "$NB lb0"; do
	read -r ns ifc <<<"$x"
	ip netns exec "$ns" ethtool -K "$ifc" tx off tso off gso off gro off \
		>/dev/null 2>&1
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1"
	ip -n "$ns" link set "$ifc" up
done
ip -n "$NA" addr add 198.18.0.1/24 dev la0
ip -n "$NB" addr add 198.18.0.2/24 dev lb0

# tcp_run SPEC BYTES: one CUBIC transfer through dpq-linkem with SPEC;
# prints "MBITS LINKEM_CPU_PERCENT" (MBITS "fail" when it did not finish).
tcp_run() {
	local lp sp i g cpu
	rm -f "$TMP/ready"
	bg_start lp "$TMP/linkem.log" ip netns exec "$NM" "$LINKEM" \
		--no-huge --no-shconf --no-pci -m 256 -l 1 --log-level=error \
		--no-telemetry --vdev=net_af_packet0,iface=la1 \
		--vdev=net_af_packet1,iface=lb1 -- --link "$1" \
		--ready "$TMP/ready"
	for i in $(seq 1 600); do
		[ -f "$TMP/ready" ] && break
		sleep 0.1
	done
	bg_start sp "$TMP/sink.log" ip netns exec "$NB" "$NETPROBE" \
		tcp-sink 5001 300
	sleep 0.3
	ip netns exec "$NA" "$NETPROBE" tcp-source 198.18.0.2 5001 "$2" cubic \
		> "$TMP/tcp.out" 2>&1
	g=$(awk '$NF == "ok" { print $7 }' "$TMP/tcp.out")
	bg_stop "$sp" 5
	bg_stop "$lp" 10
	cpu=$(sed -n 's/.*(\([0-9]*\)% of one core).*/\1/p' "$TMP/linkem.log")
	echo "${g:-fail} ${cpu:-?}"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-";
	else if (NR % 2) print v[(NR + 1) / 2];
	else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== kernel TCP (CUBIC) through dpq-linkem, real time, median of $RUNS =="
printf "%-6s %8s %12s %14s\n" loss bytes "TCP Mbit/s" "linkem CPU %"
for pair in "0 200000000" "0.1 50000000" "1 10000000" "5 3000000"; do
	read -r loss bytes <<<"$pair"
	: > "$TMP/g" ; : > "$TMP/c"
	for r in $(seq 1 "$RUNS"); do
		read -r g c <<<"$(tcp_run "delay=10ms,rate=1gbit,queue=2500kb,loss=$loss%,seed=$r" "$bytes")"
		[ "$g" != fail ] && echo "$g" >> "$TMP/g"
		echo "$c" >> "$TMP/c"
	done
	printf "%4s%%  %7.1fMB %12s %14s\n" "$loss" "$(awk -v b="$bytes" \
		'BEGIN { print b / 1e6 }')" "$(median < "$TMP/g")" \
		"$(median < "$TMP/c")"
done
read -r g c <<<"$(tcp_run "delay=0" 200000000)"
echo "ceiling: TCP through dpq-linkem with no impairment: $g Mbit/s" \
	"(linkem ${c}% of a core): the real-time path itself is limited by" \
	"af_packet over veth and this machine's 2 shared cores"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min run queue)"
