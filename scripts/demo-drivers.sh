#!/usr/bin/env bash
# The driver demo: UDP datagrams through every dpquic driver, one table.
#
# Installs the packages (scripts/setup.sh), builds into build/, then runs
# dpq-drvbench (bench/dpq_drvbench.c) over
#   - net_ring: two DPDK drivers on in-process ring ports, back to back
#   - net_memif: two processes, one DPDK driver each
#   - kernel UDP sockets on loopback, with and without UDP GSO/GRO
#   - net_tap <-> kernel UDP socket, both directions over IPv4 and one over
#     IPv6, inside a network namespace this script creates (addresses from
#     198.18.0.0/24 and 2001:db8::/64 only) and removes on exit
# and prints packets/s and Gbit/s (UDP payload) of sender and receiver and
# the loss. No hugepages needed (--no-huge). Run as root for the tap rows.
#
# Environment: DEMO_SECONDS (default 2) per run, DEMO_SIZE (default 1350)
# payload bytes, DEMO_WINDOW (default 1024) datagrams the sender keeps in
# flight (the receiver acks; 0: open loop, the loss column then shows how
# much the sender overran the receiver).
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${DEMO_SECONDS:-2}
SIZE=${DEMO_SIZE:-1350}
WINDOW=${DEMO_WINDOW:-1024}
BENCH=build/bench/dpq-drvbench
EAL=(--no-huge --no-shconf --no-pci -m 512 --log-level=error)
NS=dpqdemo$$
TAP=dpqtap0
tmp=$(mktemp -d /tmp/dpq-demo.XXXXXX)
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scripts/setup.sh
echo "== build (build/) =="
scripts/build.sh build >"$tmp/build.log" 2>&1 || {
	cat "$tmp/build.log"
	# build.sh keeps meson setup quiet: show why configuring failed
	meson setup --reconfigure build 2>&1 | grep -E 'ERROR|error' >&2 || true
	echo "demo: build failed" >&2
	exit 1
}
[ -x "$BENCH" ] || { echo "demo: $BENCH was not built" >&2; exit 1; }

rows=()	# "label|tx_pps|tx_gbps|rx_pps|rx_gbps|loss|status"
failed=0

# result FILE KEY: a value of the RESULT line of a dpq-drvbench output
result() {
	local line kv
	line=$(grep '^RESULT ' "$1" 2>/dev/null | tail -n 1) || return 0
	for kv in $line; do
		if [ "${kv%%=*}" = "$2" ]; then
			echo "${kv#*=}"
			return 0
		fi
	done
}

# add_row LABEL SENDER_OUT RECEIVER_OUT STATUS
add_row() {
	local label=$1 so=$2 ro=$3 st=$4
	if [ "$st" = ok ] && [ "$(result "$so" ok)" = 1 ] &&
			[ "$(result "$ro" ok)" = 1 ]; then
		st=ok
	elif [ "$st" = ok ]; then
		st=FAILED
	fi
	[ "$st" = FAILED ] && failed=1
	rows+=("$label|$(result "$so" tx_pps)|$(result "$so" tx_gbps)|$(result "$ro" rx_pps)|$(result "$ro" rx_gbps)|$(result "$ro" loss_pct)|$st")
}

# run NAME ARGS...: one dpq-drvbench process, output in $tmp/NAME.{out,err}
run() {
	local name=$1; shift
	local rc=0
	echo "-- $name: dpq-drvbench $*"
	timeout 60 "$BENCH" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	[ "$rc" -eq 0 ] && return 0
	echo "   failed (exit $rc):"
	sed 's/^/   | /' "$tmp/$name.out" "$tmp/$name.err" | tail -n 20
	return 1
}

opts=(--size "$SIZE" --seconds "$SECS" --window "$WINDOW")
echo "== runs: ${SECS}s each, ${SIZE}-byte datagrams, window $WINDOW =="

# 1. net_ring: both drivers in one process (two lcores when available)
st=ok
run ring "${EAL[@]}" -- --mode ring "${opts[@]}" || st=FAILED
add_row "net_ring (1 process)" "$tmp/ring.out" "$tmp/ring.out" $st

# 2. memif: server (receiver) and client (sender) processes on a file socket
sock=$tmp/memif.sock
st=ok
timeout 60 "$BENCH" "${EAL[@]}" -l 0 --file-prefix dpqdemo-srv$$ \
	--vdev="net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
	--mode memif --role server "${opts[@]}" \
	>"$tmp/memif-srv.out" 2>"$tmp/memif-srv.err" &
srv=$!
pids+=("$srv")
# the client must connect after the server's port is configured and started
for i in $(seq 200); do
	grep -q 'ready:' "$tmp/memif-srv.out" 2>/dev/null && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.05
done
cl_lcore=1
[ "$(nproc)" -ge 2 ] || cl_lcore=0
run memif-cli "${EAL[@]}" -l $cl_lcore --file-prefix dpqdemo-cli$$ \
	--vdev="net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
	--mode memif --role client "${opts[@]}" || st=FAILED
if ! wait "$srv"; then
	st=FAILED
	echo "   memif server failed:"
	sed 's/^/   | /' "$tmp/memif-srv.out" "$tmp/memif-srv.err" | tail -n 20
fi
add_row "net_memif (2 processes)" "$tmp/memif-cli.out" "$tmp/memif-srv.out" $st

# 3. kernel UDP sockets on loopback
st=ok
run udp "${EAL[@]}" -- --mode udp "${opts[@]}" || st=FAILED
add_row "kernel UDP, GSO+GRO (loopback)" "$tmp/udp.out" "$tmp/udp.out" $st
st=ok
run udp-plain "${EAL[@]}" -- --mode udp --no-gso --no-gro "${opts[@]}" ||
	st=FAILED
add_row "kernel UDP, plain (loopback)" "$tmp/udp-plain.out" \
	"$tmp/udp-plain.out" $st

# 4. net_tap <-> kernel UDP socket in a private network namespace. The
# DPDK side is 198.18.0.2 / 2001:db8::2 behind the tap; the kernel side
# binds .1 / ::1 on the tap's kernel interface, which exists only once EAL
# has created it: configure it then (dpq-drvbench retries the bind until
# it can). IPv6 is off on the interface for the IPv4 runs, so the kernel's
# router / neighbour chatter does not show up as noise; the IPv6 run turns
# it on and skips duplicate address detection (nodad).
tap_run() {	# tap_run NAME KERNEL_ADDR/PREFIX DPDK_IP:PORT KERNEL_IP:PORT [args]
	local name=$1 kaddr=$2 local=$3 peer=$4 p i
	shift 4
	echo "-- $name: ip netns exec $NS dpq-drvbench ... --vdev=net_tap0,iface=$TAP -- --mode dpdk-kernel --kernel-side --local $local --peer $peer ${opts[*]} $*"
	ip netns exec "$NS" timeout 60 "$BENCH" "${EAL[@]}" \
		--vdev=net_tap0,iface=$TAP -- --mode dpdk-kernel --kernel-side \
		--local "$local" --peer "$peer" "${opts[@]}" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &
	p=$!
	pids+=("$p")
	for i in $(seq 100); do
		ip netns exec "$NS" ip link show $TAP >/dev/null 2>&1 && break
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	if [[ $kaddr == *:* ]]; then
		ip netns exec "$NS" sysctl -qw net.ipv6.conf.$TAP.disable_ipv6=0 || true
		ip netns exec "$NS" ip -6 addr add "$kaddr" dev $TAP nodad || true
	else
		ip netns exec "$NS" ip addr add "$kaddr" dev $TAP || true
	fi
	ip netns exec "$NS" ip link set $TAP up || true
	if ! wait "$p"; then
		echo "   failed:"
		sed 's/^/   | /' "$tmp/$name.out" "$tmp/$name.err" | tail -n 20
		return 1
	fi
}

if [ "$(id -u)" -eq 0 ] && [ -c /dev/net/tun ] && ip netns add "$NS" 2>/dev/null; then
	ip netns exec "$NS" ip link set lo up
	ip netns exec "$NS" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	st=ok
	tap_run tap 198.18.0.1/24 198.18.0.2:9000 198.18.0.1:9001 || st=FAILED
	add_row "net_tap -> kernel UDP (netns)" "$tmp/tap.out" "$tmp/tap.out" $st
	st=ok
	tap_run tap-rev 198.18.0.1/24 198.18.0.2:9000 198.18.0.1:9001 \
		--reverse || st=FAILED
	add_row "kernel UDP -> net_tap (netns)" "$tmp/tap-rev.out" \
		"$tmp/tap-rev.out" $st
	st=ok
	tap_run tap6 2001:db8::1/64 "[2001:db8::2]:9000" "[2001:db8::1]:9001" ||
		st=FAILED
	add_row "net_tap -> kernel UDP, IPv6" "$tmp/tap6.out" "$tmp/tap6.out" $st
	ip netns del "$NS"
else
	echo "-- tap: skipped (needs root, /dev/net/tun and network namespaces)"
	rows+=("net_tap <-> kernel UDP (netns)||||||skipped")
fi

# ---- summary ------------------------------------------------------------------
mpps() { [ -n "$1" ] && awk -v v="$1" 'BEGIN { printf "%.3f", v / 1e6 }' || echo "-"; }
echo
echo "== dpq-drvbench summary: ${SIZE}-byte UDP payloads, ${SECS}s per run, window $WINDOW, $(nproc) cores =="
printf '%-32s %10s %8s %10s %8s %8s  %s\n' "path" "send Mpps" "Gbit/s" \
	"recv Mpps" "Gbit/s" "loss %" "status"
for r in "${rows[@]}"; do
	IFS='|' read -r label txp txg rxp rxg loss st <<<"$r"
	printf '%-32s %10s %8s %10s %8s %8s  %s\n' "$label" "$(mpps "$txp")" \
		"${txg:--}" "$(mpps "$rxp")" "${rxg:--}" "${loss:--}" "$st"
done
echo "(Gbit/s counts UDP payload only; loss = datagrams the sender's driver"
echo " took but the receiver never got. One run each on a shared machine:"
echo " compare rows of one run, not runs of different days.)"
exit $failed
