#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# DPDK's own tools against a running dpquicd (Debian's dpdk-dev):
# dpdk-dumpcap captures the daemon's port into pcapng through rte_pdump,
# tshark decrypts that capture with the daemon's --keylog, and
# dpdk-proc-info reads the port's statistics.
#
#   test_dumpcap.sh DPQUICD DPQUIC_CLIENT
#
# Both tools are DPDK secondary processes: they need the daemon's shared
# runtime directory (its own --file-prefix, not --no-shconf) and its
# memory in hugepages. The test reserves 2 MiB pages if too few are free
# and mounts a hugetlbfs of its own, and gives both back at exit.
# Proves: dumpcap attaches while dpquicd serves and records both
# directions of a transfer (client Initial in, server 1-RTT out); with the
# server's keylog tshark decrypts every 1-RTT packet to frames and finds
# the HTTP/0.9 request "GET /f64k" in STREAM data and the file's first
# bytes in the server's STREAM data; without the keylog it cannot;
# dpdk-proc-info --stats shows port 0 with packets both ways; dpquicd
# exits 0 after the tools detached.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CLIENT}
DPQUIC_CLIENT=${2:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CLIENT"
for t in dpdk-dumpcap dpdk-proc-info tshark; do
	command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
lib_init dumpcap
ROOT=$TMP/root
mkdir -p "$ROOT"
# Known first bytes, to find in the decrypted STREAM data.
{ printf 'dpquic-dumpcap-marker'; head -c 65515 /dev/urandom; } > "$ROOT/f64k"

PREFIX=dpq-cap-$$
HUGE=$(mktemp -d /tmp/dpq-huge.XXXXXX)
NR=/proc/sys/vm/nr_hugepages
PAGES=320	# -m 256 for the daemon, the rest for dumpcap's pool
ADDED=0		# pages this run reserved, given back at exit
cleanup() {
	lib_cleanup
	umount "$HUGE" 2>/dev/null
	rmdir "$HUGE" 2>/dev/null
	if [ "$ADDED" -gt 0 ]; then
		local now
		now=$(cat $NR)
		echo $((now > ADDED ? now - ADDED : 0)) > $NR
	fi
	rm -rf "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT
# One run at a time on this machine (others run the suites from their
# own trees): the reservation below must not race another run's.
exec 9> /tmp/dpq-e2e-dumpcap.lock
flock -w 900 9 || { echo "another e2e_dumpcap held the lock for 900 s"; exit 1; }

free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
size=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)
[ "$size" = 2048 ] || { echo "SKIP: default hugepage size ${size} kB"; exit 77; }
if [ "${free:-0}" -lt $PAGES ]; then
	ADDED=$((PAGES - free))
	echo $(($(cat $NR) + ADDED)) > $NR
	free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	[ "$free" -ge $PAGES ] ||
		{ echo "SKIP: could reserve only $free 2 MiB pages"; exit 77; }
fi
mount -t hugetlbfs -o pagesize=2M nodev "$HUGE" ||
	{ echo "cannot mount hugetlbfs on $HUGE"; exit 1; }

NS=dpq-e7-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
CAP=$TMP/dpquicd.pcapng
K=$TMP/server.keylog
DPQD_SHCONF="--file-prefix=$PREFIX"
# dumpcap and proc-info are secondary processes: they must map the
# hugepage memory at the primary's addresses, which fails at random when
# their own libraries already sit there (the primary under ASan makes it
# likelier). A fixed base far above the libraries' mmap area avoids it
# (and above ASan's shadow, which ends at 0x10007fff7fff).
DPQD_MEM="--huge-dir=$HUGE -m 256 --iova-mode=va --base-virtaddr=0x200000000000"
start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock" \
	--keylog "$K" --duration 150
grep -q "DPDK tools: dpdk-dumpcap --file-prefix=$PREFIX -i 0" "$TMP/d.log" ||
	fail "dpquicd does not say how to capture: $(grep 'DPDK tools' "$TMP/d.log")"

# dumpcap counts "Packets captured: N" once rte_pdump enabled the capture
# in the daemon ("Capturing on" comes late: its stdout is buffered).
bg_start DC "$TMP/dumpcap.log" ip netns exec "$NS" dpdk-dumpcap \
	--file-prefix="$PREFIX" -i 0 -w "$CAP"
for i in $(seq 1 300); do
	grep -q "Packets captured:" "$TMP/dumpcap.log" && break
	kill -0 "$DC" 2>/dev/null || break
	sleep 0.1
done
grep -q "Packets captured:" "$TMP/dumpcap.log" ||
	{ echo "dpdk-dumpcap did not start:"; cat "$TMP/dumpcap.log"; exit 1; }
ok "dpdk-dumpcap attached to dpquicd's port"

run_timed cli 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 30 --sha256 \
	"$DADDR:4433" /f64k && check_sha cli /f64k
sleep 0.5
kill -INT "$DC"
for i in $(seq 1 100); do
	kill -0 "$DC" 2>/dev/null || break
	sleep 0.1
done
wait "$DC"
rc=$?
[ "$rc" -eq 0 ] || fail "dpdk-dumpcap exit $rc after SIGINT: $(cat "$TMP/dumpcap.log")"
tail -2 "$TMP/dumpcap.log" | sed 's/^/   dumpcap: /'

# dpdk-proc-info: the port's statistics, from outside the daemon.
timeout 60 dpdk-proc-info --file-prefix="$PREFIX" --no-pci --log-level=error \
	-- --stats > "$TMP/procinfo.out" 2>&1
rc=$?
rx=$(awk '/NIC statistics for port 0/ { p = 1 } p && /RX-packets:/ { print $2; exit }' "$TMP/procinfo.out")
tx=$(awk '/NIC statistics for port 0/ { p = 1 } p && /TX-packets:/ { print $2; exit }' "$TMP/procinfo.out")
if [ "$rc" -eq 0 ] && [ "${rx:-0}" -ge 10 ] && [ "${tx:-0}" -ge 10 ]; then
	ok "dpdk-proc-info --stats: port 0 RX $rx TX $tx packets"
else
	fail "dpdk-proc-info exit $rc, RX '$rx' TX '$tx'"
	head -20 "$TMP/procinfo.out"
fi

[ -s "$CAP" ] || { fail "no capture file"; finish; }
[ "$(head -c 4 "$CAP" | od -An -tx1 | tr -d ' ')" = 0a0d0d0a ] &&
	ok "capture is pcapng" || fail "capture is not pcapng"

count() {	# count KEYLOG FILTER
	local k=()
	[ -n "$1" ] && k=(-o "tls.keylog_file:$1")
	tshark -r "$CAP" "${k[@]}" -Y "$2" 2>/dev/null | wc -l
}
expect_count() {	# expect_count KEYLOG FILTER OP N DESCRIPTION
	local got
	got=$(count "$1" "$2")
	if [ "$got" "$3" "$4" ]; then
		ok "$5 ($got)"
	else
		fail "$5: '$2' matched $got packets, expected $3 $4"
	fi
}
expect_count "$K" "quic.long.packet_type == 0 && ip.src == $KADDR" -ge 1 \
	"client Initial captured (port rx)"
expect_count "$K" "quic.short && ip.src == $DADDR" -ge 30 \
	"server 1-RTT packets captured (port tx)"
expect_count "$K" "quic.short && !quic.frame" -eq 0 \
	"every 1-RTT packet decrypted with --keylog"
expect_count "$K" "quic.decryption_failed" -eq 0 "no decryption failure"
expect_count "$K" 'quic.stream_data contains "GET /f64k"' -ge 1 \
	"HTTP/0.9 request in decrypted STREAM data"
expect_count "$K" "ip.src == $DADDR && quic.stream_data contains \"dpquic-dumpcap-marker\"" -ge 1 \
	"the file's first bytes in the server's STREAM data"
expect_count "" "quic.remaining_payload" -ge 30 \
	"without the keylog 1-RTT payloads stay encrypted"

bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
no_sanitizer_report "$TMP/d.log"
finish
