#!/usr/bin/env bash
# The main demo: dpquicd serving a generated file to dpquic-client over
# DPDK virtual devices, then the driver table of scripts/demo-drivers.sh.
#
#  1. net_memif: dpquicd and dpquic-client in two processes, DPDK on both
#     sides (the dataplane answers ARP and resolves its peer itself).
#  2. net_tap: dpquicd on a tap device inside a network namespace this
#     script creates; dpquic-client over the kernel UDP driver in the same
#     namespace (addresses from 198.18.0.0/24 only), then dpquic-ctl stats.
#  3. dpq-drvbench over each driver (DEMO_SECONDS=1 per run).
#
# Prints the handshake time and goodput of each fetch, checks the sha256
# of what arrived, and cleans up processes, sockets and the namespace.
# Needs root for the tap part; no hugepages (--no-huge).
# Environment: DEMO_FILE_MB (default 50) size of the generated file.
set -euo pipefail
cd "$(dirname "$0")/.."

MB=${DEMO_FILE_MB:-50}
EAL=(--no-huge --no-shconf --no-pci -m 512 --log-level=error)
tmp=$(mktemp -d /tmp/dpq-demo.XXXXXX)
NS=dpqdemo$$
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
	exit 1
}
D=build/dpquicd
C=build/dpquic-client
CTL=build/control/ctl/dpquic-ctl

mkdir -p "$tmp/www"
head -c $((MB * 1000 * 1000)) /dev/urandom >"$tmp/www/big.bin"
head -c 1000 /dev/urandom >"$tmp/www/small.bin"
want=$(sha256sum "$tmp/www/big.bin" | cut -d' ' -f1)
echo "== files: big.bin ${MB} MB (sha256 ${want:0:16}...), small.bin 1 KB =="

failed=0
check() {	# check LABEL OUTPUT_FILE
	local out=$2 got
	got=$(awk '$1 == "sha256" && $3 == "/big.bin" { print $2 }' "$out")
	if grep -q '^files_ok 2/2' "$out" && [ "$got" = "$want" ]; then
		printf '%-34s handshake %8s ms   goodput %6s Gbit/s   sha256 ok\n' \
			"$1" "$(awk '$1 == "handshake_ms" { print $2 }' "$out")" \
			"$(awk '$1 == "total_bytes" { print $6 }' "$out")"
	else
		echo "$1: FAILED"
		sed 's/^/   | /' "$out" | tail -n 20
		failed=1
	fi
}

# 1. memif: two processes, DPDK on both sides.
echo "== dpquicd <-> dpquic-client over net_memif (DPDK both sides) =="
sock=$tmp/memif.sock
timeout 60 "$D" "${EAL[@]}" -l 1 --file-prefix dpqd$$ \
	--vdev="net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
	--addr 198.18.5.1:4433 --root "$tmp/www" --ctl "" --duration 30 \
	>"$tmp/d1.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	grep -q '^dpquicd: serving' "$tmp/d1.out" 2>/dev/null && break
	sleep 0.05
done
timeout 60 "$C" "${EAL[@]}" -l 0 --file-prefix dpqc$$ \
	--vdev="net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
	--dpdk 198.18.5.2 --sha256 --timeout 30 198.18.5.1:4433 /small.bin \
	/big.bin >"$tmp/c1.out" 2>&1 || true
check "net_memif (2 processes)" "$tmp/c1.out"
kill "${pids[-1]}" 2>/dev/null || true

# 2. tap: dpquicd in a namespace, kernel UDP client.
if [ "$(id -u)" -eq 0 ] && [ -c /dev/net/tun ] && ip netns add "$NS" 2>/dev/null; then
	echo "== dpquicd on net_tap <-> dpquic-client on kernel UDP (netns $NS) =="
	ip netns exec "$NS" ip link set lo up
	ip netns exec "$NS" timeout 60 "$D" "${EAL[@]}" -l 0,1 \
		--file-prefix dpqt$$ --vdev=net_tap0,iface=dpqt0 -- \
		--addr 198.18.0.2:4433 --root "$tmp/www" \
		--ctl "$tmp/ctl.sock" --duration 30 >"$tmp/d2.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		ip netns exec "$NS" ip link show dpqt0 >/dev/null 2>&1 && break
		sleep 0.05
	done
	ip netns exec "$NS" ip addr add 198.18.0.1/24 dev dpqt0
	ip netns exec "$NS" ip link set dpqt0 up
	for _ in $(seq 100); do
		grep -q '^dpquicd: serving' "$tmp/d2.out" 2>/dev/null && break
		sleep 0.05
	done
	ip netns exec "$NS" timeout 60 "$C" --sha256 --timeout 30 \
		198.18.0.2:4433 /small.bin /big.bin >"$tmp/c2.out" 2>&1 || true
	check "net_tap <-> kernel UDP" "$tmp/c2.out"
	echo "-- dpquic-ctl stats (shard 0):"
	"$CTL" -s "$tmp/ctl.sock" -r stats 2>/dev/null |
		tr ',' '\n' | grep -E '"(connections_created|handshakes|rx_packets|tx_packets|tx_bytes|rx_batched)"' |
		head -n 6 | sed 's/^/   /' || true
	kill "${pids[-1]}" 2>/dev/null || true
	ip netns del "$NS"
else
	echo "== net_tap: skipped (needs root, /dev/net/tun, network namespaces) =="
fi

# 3. the drivers alone
echo
DEMO_SECONDS=${DEMO_SECONDS:-1} bash scripts/demo-drivers.sh | sed -n '/== runs/,$p' || failed=1
exit $failed
