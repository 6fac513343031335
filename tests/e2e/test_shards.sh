#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquicd with two shards on a net_tap port (no RSS: every packet arrives
# on queue 0), dpquic-client and ngtcp2 clients over kernel UDP.
#
#   test_shards.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT [NGTCP2_CLIENT]
#
# EAL -l 0,1: one worker lcore runs shard 0, the main lcore runs shard 1.
# Proves: 24 connections (4 dpquic-client runs in sequence, then 20
# ngtcp2 runs 5 at a time; 20 more dpquic-client runs 4 at a time when
# ngtcp2 is not built) all complete with correct
# sha256; dpquic-ctl stats shows that both shards created connections and
# completed handshakes (new connections are spread by a hash of the
# client's first DCID), that datagrams were handed between shards
# (handoff_out and handoff_in > 0 and equal in sum), that nothing was
# lost on the handoff rings, and that no connection closed on an error.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT [NGTCP2_CLIENT]}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
NGCLIENT=${4:-}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
lib_init shards
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom > "$ROOT/f1k"
head -c $((1024 * 1024)) /dev/urandom > "$ROOT/f1m"

NS=dpq-e4-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1

start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock" \
	--shards 2 --allow-no-rss --duration 200
grep -q '2 shard(s)' "$TMP/d.log" || fail "dpquicd did not start 2 shards"

t0=$(date +%s.%N)
# 4 dpquic-client connections, one after the other.
NDQ=4
for i in $(seq 1 $NDQ); do
	if run_timed dq$i 0 ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--timeout 60 --sha256 "$DADDR:4433" /f1k /f1m; then
		check_sha dq$i /f1k /f1m
	fi
done
# 20 ngtcp2 connections, 5 at a time (poll-driven: they do not compete
# with the busy-polling shards for the two CPUs).
NNG=0
if [ -n "$NGCLIENT" ] && [ -x "$NGCLIENT" ]; then
	for b in 1 2 3 4; do
		pids=()
		for j in 1 2 3 4 5; do
			n=ng${b}_$j
			ip netns exec "$NS" "$NGCLIENT" --timeout 60 --sha256 \
				"$DADDR" 4433 /f1k /f1m \
				> "$TMP/$n.out" 2> "$TMP/$n.err" &
			pids+=($!)
		done
		j=1
		for p in "${pids[@]}"; do
			n=ng${b}_$j
			wait "$p"
			rc=$?
			if [ $rc -ne 0 ]; then
				fail "$n exit $rc"
				tail -n 5 "$TMP/$n.out" "$TMP/$n.err"
			else
				check_sha "$n" /f1k /f1m >/dev/null
			fi
			NNG=$((NNG + 1))
			j=$((j + 1))
		done
	done
else
	# No ngtcp2 client built: 20 more dpquic-client runs, 4 at a time.
	for b in 1 2 3 4 5; do
		pids=()
		for j in 1 2 3 4; do
			n=par${b}_$j
			ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 60 \
				--sha256 "$DADDR:4433" /f1k /f1m \
				> "$TMP/$n.out" 2> "$TMP/$n.err" &
			pids+=($!)
		done
		j=1
		for p in "${pids[@]}"; do
			n=par${b}_$j
			wait "$p"
			rc=$?
			if [ $rc -ne 0 ]; then
				fail "$n exit $rc"
				tail -n 5 "$TMP/$n.out" "$TMP/$n.err"
			else
				check_sha "$n" /f1k /f1m >/dev/null
			fi
			NDQ=$((NDQ + 1))
			j=$((j + 1))
		done
	done
fi
t1=$(date +%s.%N)
TOTAL=$((NDQ + NNG))
if [ $FAILS -eq 0 ]; then
	ok "$TOTAL connections fetched /f1k /f1m with correct sha256 in" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
fi

sleep 0.5
if ctl_stats "$NS" "$TMP/d.sock" "$TMP/stats.json"; then
	S=$TMP/stats.json
	python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
for x in s["shards"]:
    print("   shard %d lcore %d: created %d handshakes %d handoff_out %d "
          "handoff_in %d handoff_ring_full %d rx %d tx %d" % (x["shard"],
          x["lcore"], x["connections_created"], x["handshakes"],
          x["handoff_out"], x["handoff_in"], x["handoff_ring_full"],
          x["rx_packets"], x["tx_packets"]))' "$S"
	check_json "$S" "len(s['shards']) == 2" "stats: 2 shards"
	check_json "$S" "sorted(x['lcore'] for x in s['shards']) == [0, 1]" \
		"shards on lcores 0 (main) and 1 (worker)"
	check_json "$S" "all(x['connections_created'] > 0 for x in s['shards'])" \
		"both shards created connections"
	check_json "$S" "all(x['handshakes'] > 0 for x in s['shards'])" \
		"both shards completed handshakes"
	check_json "$S" "sum(x['connections_created'] for x in s['shards']) == $TOTAL" \
		"$TOTAL connections created in all"
	check_json "$S" "sum(x['handshakes'] for x in s['shards']) == $TOTAL" \
		"$TOTAL handshakes in all"
	check_json "$S" "sum(x['handoff_out'] for x in s['shards']) > 0" \
		"datagrams handed out between shards"
	check_json "$S" "sum(x['handoff_in'] for x in s['shards']) > 0" \
		"datagrams handed in between shards"
	check_json "$S" "sum(x['handoff_out'] for x in s['shards']) == sum(x['handoff_in'] for x in s['shards'])" \
		"every datagram handed out was handed in"
	check_json "$S" "sum(x['handoff_ring_full'] for x in s['shards']) == 0" \
		"no handoff ring overflow"
	check_json "$S" "sum(x['closed_error'] + x['mgmt_handshakes_failed'] for x in s['shards']) == 0" \
		"no connection closed on an error"
fi
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
grep '^dpquicd: shard' "$TMP/d.log"
no_sanitizer_report "$TMP/d.log" "$TMP"/*.err
finish
