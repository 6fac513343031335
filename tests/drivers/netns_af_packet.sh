#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The DPDK driver on net_af_packet over a veth pair against a kernel UDP
# socket (IPv4), in a network namespace of its own (deleted on exit, also on
# failure). dpqv0 is DPDK's end (no kernel address), dpqv1 the kernel's
# (198.18.1.1/24) with transmit checksum offload off: otherwise the kernel
# hands af_packet unfinished (CHECKSUM_PARTIAL) UDP checksums, which the
# driver counts and drops as bad.
#   netns_af_packet.sh <test_dpdk_kernel binary>
set -u
prog=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no iproute2"; exit 77; }
command -v ethtool >/dev/null || { echo "SKIP: no ethtool"; exit 77; }

ns=dpqafp$$
cleanup() { ip netns del "$ns" 2>/dev/null; }
trap cleanup EXIT
ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
set -e
ip -n "$ns" link set lo up
ip -n "$ns" link add dpqv0 type veth peer name dpqv1
ip netns exec "$ns" sysctl -qw net.ipv6.conf.dpqv0.disable_ipv6=1
ip -n "$ns" addr add 198.18.1.1/24 dev dpqv1
ip netns exec "$ns" ethtool -K dpqv1 tx off >/dev/null
ip -n "$ns" link set dpqv0 up
ip -n "$ns" link set dpqv1 up
set +e

timeout -k 2 20 ip netns exec "$ns" "$prog" -l 0 --no-huge --no-shconf \
	--no-pci -m 256 --log-level=error --no-telemetry \
	--vdev=net_af_packet0,iface=dpqv0 -- afp dpqv1
rc=$?
[ $rc = 0 ] && echo PASS || echo "FAIL (rc $rc)"
exit $rc
