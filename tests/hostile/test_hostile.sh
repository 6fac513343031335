#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Hostile peers against the real daemon: dpquicd on net_tap in a network
# namespace of its own, dpq-hostile (tests/hostile/dpq_hostile.c) running
# each bad-input mode from the kernel side, and after every mode:
#   - dpq-hostile's own verdict (the server's CONNECTION_CLOSE code, VN,
#     reset or silence per RFC 9000);
#   - the daemon counted it (dpquic-ctl -r stats: closed_error_codes,
#     closed_idle, listener outcomes, connections_created);
#   - a well-behaved dpquic-client --sha256 fetch of a 1 MB file, run in
#     parallel with the mode, succeeds with the right digest;
# and at the end that the daemon is still alive and exits 0 on SIGTERM.
#
#   test_hostile.sh DPQUICD DPQUIC_CLIENT DPQUIC_CTL DPQ_HOSTILE [MODE...]
#
# Addresses: 198.18.0.0/15 only, inside the namespace (198.18.0.1 kernel
# side of the tap, 198.18.0.2 the daemon). Exit 77 (skip) without root,
# /dev/net/tun, iproute2 or python3 (JSON). DPQ_HOSTILE_LCORES overrides
# the daemon's -l (default 0).
#
# Cases whose failure is a known dpquic bug are listed in KNOWN_FAIL: they
# still run and print FAIL, marked "known", without failing the test.
set -u

DPQUICD=${1:?usage: $0 DPQUICD CLIENT CTL HOSTILE [MODE...]}
CLIENT=${2:?}
CTL=${3:?}
HOSTILE=${4:?}
shift 4
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no iproute2"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
command -v sha256sum >/dev/null || { echo "SKIP: no sha256sum"; exit 77; }
for b in "$DPQUICD" "$CLIENT" "$CTL" "$HOSTILE"; do
	[ -x "$b" ] || { echo "FAIL: not executable: $b"; exit 1; }
done

MODES=(garbage truncated small version sreset badaead
	tp-ack-exp tp-udp-size tp-ack-delay tp-cid-limit tp-dup
	tp-server-only tp-truncated crypto-initial crypto-1rtt
	flow-stream flow-conn flow-engine streams silent oversize halfopen
	halfopen-ping)
[ $# -gt 0 ] && MODES=("$@")
# mode -> why it is expected to fail today (see the report in the log)
declare -A KNOWN_FAIL=(
)

ADDR=198.18.0.2
PORT=4433
NS=dpqhostile$$
TMP=$(mktemp -d /tmp/dpq-hostile.XXXXXX) || exit 1
SOCK=$TMP/ctl.sock
DPID=
FAILS=0
KNOWN=0

cleanup() {
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill -TERM "$DPID" 2>/dev/null
		for _ in $(seq 1 50); do
			kill -0 "$DPID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

in_ns() {
	ip netns exec "$NS" "$@"
}

# ---- content and daemon ------------------------------------------------
mkdir -p "$TMP/root"
head -c $((1024 * 1024)) /dev/urandom > "$TMP/root/m1"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$TMP/root/big"
M1_SHA=$(sha256sum "$TMP/root/m1" | cut -d' ' -f1)

ip netns add "$NS" || { echo "FAIL: ip netns add"; exit 1; }
ip -n "$NS" link set lo up

# ip netns exec execs the daemon (no fork): $! is its pid.
ip netns exec "$NS" "$DPQUICD" -l "${DPQ_HOSTILE_LCORES:-0}" --no-huge --no-shconf \
	--no-pci -m 512 --log-level=error --no-telemetry \
	--vdev=net_tap0,iface=dpqt0 -- --addr "$ADDR:$PORT" \
	--root "$TMP/root" --ctl "$SOCK" --duration 850 \
	> "$TMP/dpquicd.log" 2>&1 &
DPID=$!
for _ in $(seq 1 100); do
	ip -n "$NS" link show dpqt0 >/dev/null 2>&1 && break
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
# .1 is the good client's, .3 the hostile tool's (--from): the server
# bounds half-open handshakes per source address, and a good client that
# shared the attacker's address would rightly be evicted with it.
ip -n "$NS" addr add 198.18.0.1/24 dev dpqt0 &&
	ip -n "$NS" addr add 198.18.0.3/24 dev dpqt0 &&
	ip -n "$NS" link set dpqt0 up || {
	echo "FAIL: the tap did not appear"
	cat "$TMP/dpquicd.log"
	exit 1
}
for _ in $(seq 1 100); do
	[ -S "$SOCK" ] && break
	sleep 0.1
done
[ -S "$SOCK" ] || { echo "FAIL: no control socket"; cat "$TMP/dpquicd.log"; exit 1; }

# stats FILE: the daemon's counters, one JSON line.
stats() {
	local i
	for i in 1 2 3; do
		"$CTL" -s "$SOCK" -t 5000 -r stats > "$1" 2>/dev/null &&
			return 0
	done
	echo "{}" > "$1"
	return 1
}

# delta BEFORE AFTER KEY: AFTER - BEFORE summed over shards. KEY is a
# shard key (connections_created), or group.key (listener.drop_malformed,
# closed_error_codes.FLOW_CONTROL_ERROR), or port.key.
delta() {
	python3 - "$1" "$2" "$3" <<'EOF'
import json, sys

def val(path, key):
    try:
        d = json.load(open(path))
    except Exception:
        return 0
    parts = key.split(".")
    if parts[0] == "port":
        return d.get("port", {}).get(parts[1], 0)
    total = 0
    for s in d.get("shards", []):
        v = s
        for p in parts:
            v = v.get(p, 0) if isinstance(v, dict) else 0
        total += v if isinstance(v, int) else 0
    return total

print(val(sys.argv[2], sys.argv[3]) - val(sys.argv[1], sys.argv[3]))
EOF
}

# Datagrams the kernel side sent into the daemon's tap so far.
tap_tx() {
	in_ns cat /sys/class/net/dpqt0/statistics/tx_packets 2>/dev/null ||
		echo 0
}

# fetch NAME: a well-behaved 1 MB fetch; checks its digest.
fetch() {
	local out=$TMP/$1.fetch rc t0
	t0=$(date +%s%N)
	in_ns "$CLIENT" --sha256 --timeout 20 "$ADDR:$PORT" /m1 > "$out" 2>&1
	rc=$?
	echo "wall_ms $((($(date +%s%N) - t0) / 1000000))" >> "$out"
	if [ $rc -ne 0 ] || ! grep -q "^sha256 $M1_SHA /m1" "$out"; then
		echo "   good client ($1): rc=$rc"
		sed 's/^/     /' "$out" | tail -12
		return 1
	fi
	return 0
}

# wait_delta BEFORE KEY MIN: poll stats until KEY grew by MIN (closes are
# counted when the closing period ends, RFC 9000 §10.2). Prints the delta.
wait_delta() {
	local d=0 i
	for i in $(seq 1 40); do
		stats "$TMP/now.json"
		d=$(delta "$1" "$TMP/now.json" "$2")
		[ "$d" -ge "$3" ] && break
		sleep 0.25
	done
	echo "$d"
}

# What each mode must leave in the stats: "KEY MIN [KEY MIN...]", and
# whether it may create connections.
declare -A EXPECT=(
	[garbage]="listener.drop_malformed 40"
	[truncated]="listener.drop_malformed 20"
	[small]="listener.drop_initial_small 4"
	[version]="listener.version_negotiation 3 listener.drop_vn_small 2 listener.drop_vn_received 1"
	[sreset]="listener.stateless_reset 2 listener.drop_malformed 2"
	[crypto-initial]="closed_error_codes.CRYPTO_BUFFER_EXCEEDED 1"
	[crypto-1rtt]="closed_error_codes.CRYPTO_BUFFER_EXCEEDED 1"
	[flow-stream]="closed_error_codes.FLOW_CONTROL_ERROR 1"
	[flow-conn]="closed_error_codes.FLOW_CONTROL_ERROR 1"
	[flow-engine]="closed_error_codes.FLOW_CONTROL_ERROR 1"
	[streams]="closed_error_codes.STREAM_LIMIT_ERROR 1"
	[silent]="closed_idle 1"
	[oversize]=""
	# How many are evicted depends on how many the management ring took
	# in (the rest are refused there): the bound is what matters.
	[halfopen]="conns_evicted 100"
	[halfopen-ping]="conns_evicted 100"
)
for m in tp-ack-exp tp-udp-size tp-ack-delay tp-cid-limit tp-dup \
		tp-server-only tp-truncated; do
	EXPECT[$m]="closed_error_codes.TRANSPORT_PARAMETER_ERROR 1"
done
# Modes that must not create a connection (the listener drops or answers
# statelessly).
NO_CONN=" garbage truncated small version sreset badaead "

echo "{}" > "$TMP/empty.json"
fetch warmup || fail "the first good fetch failed"
# The daemon's MAC, as the warm-up resolved it, pinned: on a loaded machine
# the kernel's ARP can give up before dpquicd answers (the flood keeps its
# shard busy), and a good client's sends then fail with "no route to
# host" for seconds. Neighbour resolution is not what this test is about.
MAC=$(in_ns ip neigh show "$ADDR" dev dpqt0 |
	awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }')
[ -n "$MAC" ] && in_ns ip neigh replace "$ADDR" lladdr "$MAC" dev dpqt0 \
	nud permanent

for m in "${MODES[@]}"; do
	echo "== $m"
	bad=0
	stats "$TMP/before.json"
	case $m in
	silent) args=(--file /big) ;;
	*) args=() ;;
	esac
	case $m in
	halfopen*)
		# The good client must meet the flood, not finish before it
		# starts: it starts once the server evicts (bounded wait;
		# a loaded machine is slow to start a process).
		timeout -k 2 120 ip netns exec "$NS" "$HOSTILE" \
			--from 198.18.0.3 "$m" "$ADDR:$PORT" \
			> "$TMP/$m.out" 2>&1 &
		hpid=$!
		# Under way: 200 of its Initials crossed the tap (the
		# kernel side's counter: cheap to read, unlike stats).
		n0=$(tap_tx)
		for _ in $(seq 1 200); do
			[ $(($(tap_tx) - n0)) -gt 200 ] && break
			kill -0 "$hpid" 2>/dev/null || break
			sleep 0.05
		done
		kill -0 "$hpid" 2>/dev/null ||
			echo "   (the flood ended before the good client started)"
		fetch "par-$m" &
		fpid=$!
		wait "$hpid"
		rc=$?
		;;
	*)
		# A good client in parallel with the hostile one.
		fetch "par-$m" &
		fpid=$!
		timeout -k 2 60 ip netns exec "$NS" "$HOSTILE" \
			--from 198.18.0.3 "${args[@]}" "$m" \
			"$ADDR:$PORT" > "$TMP/$m.out" 2>&1
		rc=$?
		;;
	esac
	sed 's/^/   /' "$TMP/$m.out"
	[ $rc -eq 0 ] || { echo "   dpq-hostile $m: exit $rc"; bad=1; }
	if wait "$fpid"; then
		case $m in
		halfopen*) echo "   good fetch during the flood: ok:" \
			"$(awk '
			/^handshake_ms/ { printf "handshake_ms %s srtt_ms %s ",
				$2, $6 }
			/^total_bytes/ { printf "transfer_ms %s ", $4 }
			/^wall_ms/ { printf "wall_ms %s", $2 }' \
			"$TMP/par-$m.fetch")" ;;
		esac
	else
		echo "   good fetch in parallel with $m failed"
		bad=1
	fi
	set -- ${EXPECT[$m]:-}
	while [ $# -ge 2 ]; do
		d=$(wait_delta "$TMP/before.json" "$1" "$2")
		echo "   stats: $1 +$d (want >= $2)"
		[ "$d" -ge "$2" ] || bad=1
		shift 2
	done
	stats "$TMP/after.json"
	if [ "$m" = halfopen ] || [ "$m" = halfopen-ping ]; then
		[ -n "${DPQ_HOSTILE_DUMP:-}" ] && cat "$TMP/after.json"
		# One host holds at most its prefix's share of half-open
		# connections (64), however many it opened (issue 7).
		d=$(delta "$TMP/empty.json" "$TMP/after.json" halfopen)
		echo "   stats: halfopen $d (want <= 65)"
		[ "$d" -le 65 ] || bad=1
		# The management thread skips the handshakes of evicted
		# connections (shown, not required: how many were still
		# queued when evicted depends on the machine's speed).
		echo "   stats: mgmt_cancelled +$(delta "$TMP/before.json" \
			"$TMP/after.json" mgmt_cancelled)," \
			"hs_ring_new_refused +$(delta "$TMP/before.json" \
			"$TMP/after.json" hs_ring_new_refused)"
	fi
	if [[ $NO_CONN == *" $m "* ]]; then
		# The good fetch of this round made exactly one.
		d=$(delta "$TMP/before.json" "$TMP/after.json" connections_created)
		echo "   stats: connections_created +$d (want 1: the good client's)"
		[ "$d" -eq 1 ] || bad=1
	fi
	kill -0 "$DPID" 2>/dev/null || { fail "dpquicd died during $m"; break; }
	fetch "after-$m" || { echo "   good fetch after $m failed"; bad=1; }
	if [ $bad -ne 0 ]; then
		if [ -n "${KNOWN_FAIL[$m]:-}" ]; then
			echo "KNOWN FAIL: $m: ${KNOWN_FAIL[$m]}"
			KNOWN=$((KNOWN + 1))
		else
			fail "$m"
			python3 -m json.tool "$TMP/after.json" 2>/dev/null |
				sed 's/^/     /' | head -60
		fi
	else
		echo "ok: $m"
	fi
done

# ---- the daemon survived all of it, and stops cleanly ------------------
if kill -0 "$DPID" 2>/dev/null; then
	kill -TERM "$DPID"
	rc=
	for _ in $(seq 1 100); do
		if ! kill -0 "$DPID" 2>/dev/null; then
			wait "$DPID"
			rc=$?
			break
		fi
		sleep 0.1
	done
	if [ -z "$rc" ]; then
		fail "dpquicd did not exit within 10 s of SIGTERM"
	elif [ "$rc" -ne 0 ]; then
		fail "dpquicd exited $rc on SIGTERM"
	else
		echo "ok: dpquicd exited 0 on SIGTERM"
	fi
	DPID=
else
	fail "dpquicd is not running at the end"
fi
tail -3 "$TMP/dpquicd.log" | sed 's/^/   dpquicd: /'

echo "hostile: $FAILS failed, $KNOWN known failures"
[ $FAILS -eq 0 ] && echo PASS || echo FAIL
[ $FAILS -eq 0 ]
