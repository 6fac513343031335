#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquicd's log as an operator reads it: rte_log lines with time and
# level, one log type per component, per-connection events at DEBUG when
# asked for (log.levels in the config file), a WARNING naming a peer that
# broke the protocol.
#
#   test_logs.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT DPQ_HOSTILE
#
# Proves: with dpquic.conn/dpquic.mgmt/dpquic.ctl at debug, one fetch logs
# the connection's opening (peer address), its TLS handshake (ALPN) and
# handshake time, and its close with bytes both ways; a control command
# logs who asked; a shard logs its start at INFO; a peer that overruns a
# stream's flow control gets one WARN line on dpquic.peer with the error
# code; a flood of half-open handshakes gets a WARN summary (at most one
# per 10 s) at the default level; the tap's per-packet signals reach the
# dataplane thread only; every line starts with a timestamp and its level; with the
# default levels none of the DEBUG lines appear.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT DPQ_HOSTILE}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
HOSTILE=${4:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT" "$HOSTILE"
lib_init logs
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 2048 /dev/urandom > "$ROOT/f2k"
NS=dpq-e8-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
SOCK=$TMP/d.sock
CONF=$TMP/d.conf
L=$TMP/d.log

# expect_log REGEX DESCRIPTION: a line of the daemon's log matches.
expect_log() {
	if grep -Eq "$1" "$L"; then
		ok "$2"
	else
		fail "$2: no line /$1/"
	fi
}

cat > "$CONF" <<CONF
server = { addr = "$DADDR:4433"; root = "$ROOT"; };
ctl = { path = "$SOCK"; };
log = { levels = [ "dpquic.conn:debug", "dpquic.mgmt:debug", "dpquic.ctl:debug", "dpquic.peer:debug" ]; };
CONF
start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$L" 0,1 -- -c "$CONF"
run_timed cli 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 30 --sha256 \
	"$DADDR:4433" /f2k && check_sha cli /f2k
ip netns exec "$NS" timeout 30 "$DPQUIC_CTL" -s "$SOCK" -j status \
	> /dev/null || fail "dpquic-ctl status"
timeout -k 2 60 ip netns exec "$NS" "$HOSTILE" flow-stream "$DADDR:4433" \
	> "$TMP/hostile.out" 2>&1 || fail "dpq-hostile flow-stream: $(cat "$TMP/hostile.out")"
timeout -k 2 60 ip netns exec "$NS" "$HOSTILE" garbage "$DADDR:4433" \
	> "$TMP/garbage.out" 2>&1 || fail "dpq-hostile garbage: $(cat "$TMP/garbage.out")"
# the closes are logged when the connections end (closing period)
for i in $(seq 1 100); do
	[ "$(grep -c ': closed ' "$L")" -ge 2 ] && break
	sleep 0.1
done

TS='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12} '
expect_log "${TS}INFO   shard 0: queue 0, [0-9]+ connection slots" \
	"dpquic.shard: the shard's start at INFO"
expect_log "${TS}DEBUG  conn [0-9a-f]+ shard 0: new from $KADDR:[0-9]+\$" \
	"dpquic.conn: a new connection with its peer"
expect_log "${TS}DEBUG  conn [0-9a-f]+: TLS handshake complete, ALPN hq-interop" \
	"dpquic.mgmt: the TLS handshake"
expect_log "${TS}DEBUG  conn [0-9a-f]+ $KADDR:[0-9]+: handshake done in [0-9.]+ ms, ALPN hq-interop" \
	"dpquic.conn: handshake done"
expect_log "${TS}DEBUG  conn [0-9a-f]+ $KADDR:[0-9]+: closed by the peer: application error 0x0; [0-9]+ bytes sent, [0-9]+ received" \
	"dpquic.conn: the close, why, and bytes"
expect_log "${TS}DEBUG  ctl: pid [0-9]+ uid 0: status\$" \
	"dpquic.ctl: who asked what"
expect_log "${TS}WARN   peer $KADDR:[0-9]+ \(shard 0\): FLOW_CONTROL_ERROR \(0x3\).*: its connection is closed" \
	"dpquic.peer: a WARN line names the peer and its error"
expect_log "${TS}DEBUG  peer $KADDR:[0-9]+ \(shard 0\): datagram of [0-9]+ bytes dropped: (drop_malformed|no connection ID)" \
	"dpquic.peer: a DEBUG line for a datagram the listener dropped"
n=$(grep -Evc "$TS" "$L")
[ "$n" -eq 0 ] && ok "every line has a timestamp and a level" ||
	{ fail "$n line(s) without timestamp"; grep -Ev "$TS" "$L" | head -5; }
bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC"

# Default levels: no DEBUG lines, the peer warning still there.
L=$TMP/d2.log
start_dpquicd_tap PD2 "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$L" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$SOCK"
run_timed cli2 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 30 \
	"$DADDR:4433" /f2k
# net_tap signals every received packet (a real-time signal, SIGRTMIN+1
# = 35 with glibc): only the dataplane lcore may take them, never the
# management, interrupt or telemetry threads (they would be woken per
# packet of a flood). SigBlk bit N-1 is signal N.
sigblk() {	# TASKDIR SIG: is SIG blocked in that thread?
	local m
	m=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$1/status")
	[ $(( (0x$m >> ($2 - 1)) & 1 )) -eq 1 ]
}
for t in /proc/$PD2/task/*; do
	comm=$(cat "$t/comm" 2>/dev/null) || continue
	[ "${t##*/}" = "$PD2" ] && comm=main
	case $comm in
	main)	# the main lcore runs the shard
		sigblk "$t" 35 && fail "the dataplane thread blocks signal 35" ;;
	dpq-mgmt|eal-intr-thread|telemetry-v2)
		if sigblk "$t" 35 && sigblk "$t" 29; then
			ok "$comm blocks the tap's signals"
		else
			fail "$comm does not block the tap's signals (35, SIGIO)"
		fi ;;
	esac
done
timeout -k 2 60 ip netns exec "$NS" "$HOSTILE" flow-stream "$DADDR:4433" \
	> "$TMP/hostile2.out" 2>&1
# 300 handshakes left half-open from one host: past the auto-Retry
# threshold (128) and the per-prefix bound, a flood the operator sees.
timeout -k 2 120 ip netns exec "$NS" "$HOSTILE" --count 300 halfopen \
	"$DADDR:4433" > "$TMP/halfopen.out" 2>&1
sleep 1
bg_stop "$PD2"
grep -q 'DEBUG ' "$L" && fail "DEBUG lines at the default level" ||
	ok "default level: no DEBUG lines"
expect_log "WARN   peer $KADDR:[0-9]+ \(shard 0\): FLOW_CONTROL_ERROR" \
	"default level: the peer warning"
expect_log "WARN   shard 0: a flood of new connections \([0-9]+ handshakes half-open\): so far [0-9]+ Initials answered with a Retry, [0-9]+ replies over their rate dropped, [0-9]+ half-open connections evicted, [0-9]+ new connections refused" \
	"default level: a half-open flood gets a WARN summary"
n=$(grep -c 'a flood of new connections' "$L")
[ "$n" -le 3 ] && ok "the flood summary is rate-limited ($n line(s))" ||
	fail "$n flood lines for one short flood"
finish
