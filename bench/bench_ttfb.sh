#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Time to the first response byte over an emulated path, in round trips
# and milliseconds (issue 8 §6): dpquic-client against dpquicd for a fresh
# connection, a resumed one (1-RTT request) and a 0-RTT one, each beside a
# kernel TCP + TLS 1.3 (GnuTLS) request/response over the same path in the
# same run; then what a full and a resumed handshake cost dpquicd's
# management thread (CPU per handshake, from its stats), with its default
# ECDSA P-256 certificate and with an RSA-2048 one. Root.
#
#   A (198.18.0.1: clients) -- veth -- M: dpq-linkem -- veth -- B (198.18.0.2:
#   TCP+TLS server; dpquicd owns 198.18.0.3 on the same veth via af_packet)
#
#   bench/bench_ttfb.sh [BUILD_DIR] [RUNS] [ONE_WAY_DELAY_MS]
# Defaults: build, 7 runs, 25 ms each way (50 ms RTT). The figure per
# kind is the median of RUNS; "RTT" is the emulated round trip.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
RUNS=${2:-7}
OWD=${3:-25}
. "$HERE/../tests/interop/netns_lib.sh"
require_root
command -v ethtool >/dev/null || { echo "needs ethtool"; exit 1; }
LINKEM=$BUILD/emu/dpq-linkem
TLS=$BUILD/bench/dpq-tls-ttfb
DPQUICD=$BUILD/dpquicd
DPQUIC_CLIENT=$BUILD/dpquic-client
DPQUIC_CTL=$BUILD/control/ctl/dpquic-ctl
require_exec "$LINKEM" "$TLS" "$DPQUICD" "$DPQUIC_CLIENT" "$DPQUIC_CTL"
lib_init bench-ttfb
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 1000 /dev/urandom > "$ROOT/f1k"

NA=dpq-e4-$$ NB=dpq-e5-$$ NM=dpq-e6-$$
A=198.18.0.1 B=198.18.0.2 D=198.18.0.3
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
ip -n "$NA" addr add "$A/24" dev la0
ip -n "$NB" addr add "$B/24" dev lb0

rm -f "$TMP/ready"
bg_start LPID "$TMP/linkem.log" ip netns exec "$NM" "$LINKEM" \
	--no-huge --no-shconf --no-pci -m 256 -l 1 --log-level=error \
	--no-telemetry --vdev=net_af_packet0,iface=la1 \
	--vdev=net_af_packet1,iface=lb1 -- --link "delay=${OWD}ms,seed=1" \
	--delay-line 8192 --ready "$TMP/ready"
for i in $(seq 1 600); do
	[ -f "$TMP/ready" ] && break
	sleep 0.1
done
[ -f "$TMP/ready" ] || { echo "dpq-linkem did not start"; cat "$TMP/linkem.log"; exit 1; }

bg_start TPID "$TMP/tls.log" ip netns exec "$NB" "$TLS" serve "$B" 4443 "$ROOT"
# startd LOG [DPQUICD-OPTIONS]: dpquicd on lb0 (af_packet), address D.
startd() {
	local log=$1 i
	shift
	bg_start DPQD "$TMP/$log" ip netns exec "$NB" "$DPQUICD" --no-huge \
		--no-shconf --no-pci -m 512 -l 0 --log-level='lib.*:error' \
		--no-telemetry --vdev=net_af_packet0,iface=lb0 -- \
		--addr "$D:4433" --prefix 24 --root "$ROOT" --ctl "$TMP/d.sock" \
		--duration 900 "$@"
	for i in $(seq 1 300); do
		grep -q 'dpquicd: serving ' "$TMP/$log" && return 0
		kill -0 "$DPQD" 2>/dev/null || break
		sleep 0.1
	done
	echo "dpquicd did not start"
	tail -5 "$TMP/$log"
	exit 1
}
startd dpquicd.log
CACHE=$TMP/cache
# quic KIND [CLIENT-OPTIONS]: one fetch, its first_byte_ms and the session
# line ("resumed accepted") appended to $TMP/KIND.
quic() {
	local kind=$1
	shift
	if ip netns exec "$NA" "$DPQUIC_CLIENT" --timeout 20 "$@" "$D:4433" \
		/f1k > "$TMP/q.out" 2> "$TMP/q.err"; then
		echo "$(awk '$1 == "first_byte_ms" { print $2 }' "$TMP/q.out")" \
			"$(awk '$1 == "session" { print $2, $4 }' "$TMP/q.out")" \
			"$(awk '$1 == "handshake_ms" { print "hs", $2 }' "$TMP/q.out")" \
			>> "$TMP/$kind"
	else
		echo "fail" >> "$TMP/$kind"
		sed 's/^/   /' "$TMP/q.err" | tail -3
	fi
}
# One untimed run of each first: the neighbours learn each other (an ARP
# crosses the emulated link too), the programs' pages are warm.
ip netns exec "$NA" "$TLS" fetch "$B" 4443 /f1k > /dev/null 2>&1
quic warmup
: > "$TMP/tcp"; : > "$TMP/fresh"; : > "$TMP/resumed"; : > "$TMP/0rtt"
for r in $(seq 1 "$RUNS"); do
	ip netns exec "$NA" "$TLS" fetch "$B" 4443 /f1k 2>/dev/null |
		awk '{ print $7, "full none hs", $5 }' >> "$TMP/tcp"
	rm -f "$CACHE"
	quic fresh --cache "$CACHE"
	quic resumed --cache "$CACHE" --no-0rtt
	quic 0rtt --cache "$CACHE"
done

RTT=$((2 * OWD))
echo "== time to first response byte, 1 kB answer, emulated RTT $RTT ms," \
	"median of $RUNS =="
printf "%-28s %10s %8s %10s  %s\n" kind ms RTTs vs_tcp sessions
med() {	# the median of column 1 of $TMP/$1 (failures excluded)
	awk '$1 != "fail" { print $1 }' "$TMP/$1" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'
}
echo "-- each run (first_byte_ms session 0rtt hs handshake_ms):"
for k in tcp fresh resumed 0rtt; do
	echo "   $k: $(tr '\n' '|' < "$TMP/$k")"
done
TCP=$(med tcp)
for k in tcp fresh resumed 0rtt; do
	case $k in
	tcp) name="kernel TCP + TLS 1.3";;
	fresh) name="dpquic, fresh";;
	resumed) name="dpquic, resumed (1-RTT)";;
	0rtt) name="dpquic, resumed + 0-RTT";;
	esac
	m=$(med $k)
	printf "%-28s %10s %8s %10s  %s\n" "$name" "$m" \
		"$(awk -v m="$m" -v r="$RTT" 'BEGIN { printf "%.2f", m / r }')" \
		"$(awk -v m="$m" -v t="$TCP" 'BEGIN { printf "%.2f", m / t }')" \
		"$(cut -d' ' -f2-3 "$TMP/$k" | sort | uniq -c | tr -s ' ' |
			tr '\n' ';')"
done

# mgmt_cpu LABEL: what the handshakes so far cost dpquicd's management
# thread, from its stats.
mgmt_cpu() {
	ip netns exec "$NB" "$DPQUIC_CTL" -j -s "$TMP/d.sock" stats \
		> "$TMP/stats.json" || return
	json_get "$TMP/stats.json" "'\n'.join('%-16s full: %3d handshakes, %5.0f us each; resumed: %3d, %5.0f us each; full/resumed %.2f' % ('$1', x['handshakes_full'], x['mgmt_cpu_ns_per_full'] / 1e3, x['handshakes_resumed'], x['mgmt_cpu_ns_per_resumed'] / 1e3, x['mgmt_cpu_ns_per_full'] / max(1, x['mgmt_cpu_ns_per_resumed'])) for x in s['shards'])"
}
echo
echo "== dpquicd management thread, CPU per handshake (thread CPU time) =="
mgmt_cpu "ECDSA P-256"
bg_stop "$DPQD" 20
# The same with an RSA-2048 certificate: RSA signing is what a resumed
# handshake saves most.
if ip netns exec "$NB" "$TLS" mkcert rsa "$TMP/rsa.pem" "$TMP/rsa.key"; then
	startd dpquicd-rsa.log --cert "$TMP/rsa.pem" --key "$TMP/rsa.key"
	for r in $(seq 1 "$RUNS"); do
		rm -f "$CACHE"
		quic rsa_fresh --cache "$CACHE"
		quic rsa_resumed --cache "$CACHE" --no-0rtt
		quic rsa_0rtt --cache "$CACHE"
	done
	mgmt_cpu "RSA-2048"
	bg_stop "$DPQD" 20
fi
bg_stop "$TPID" 5
bg_stop "$LPID" 10
