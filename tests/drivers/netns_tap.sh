#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The DPDK driver on net_tap against kernel UDP sockets, IPv4 and IPv6, in a
# network namespace of its own (deleted on exit, also on failure).
#   netns_tap.sh <test_dpdk_kernel binary>
# Exit 77 (skip) without root, /dev/net/tun or iproute2.
set -u
prog=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no iproute2"; exit 77; }

ns=dpqtap$$
cleanup() { ip netns del "$ns" 2>/dev/null; }
trap cleanup EXIT
ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
ip -n "$ns" link set lo up

# The tap interfaces appear at EAL init and are configured by the program
# (198.18.0.1/24 on dpqt4, 2001:db8:d0::1/64 on dpqt6, kernel side).
timeout -k 2 20 ip netns exec "$ns" "$prog" -l 0 --no-huge --no-shconf \
	--no-pci -m 256 --log-level=error --no-telemetry \
	--vdev=net_tap0,iface=dpqt4 --vdev=net_tap1,iface=dpqt6 \
	-- tap dpqt4 dpqt6
rc=$?
[ $rc = 0 ] && echo PASS || echo "FAIL (rc $rc)"
exit $rc
