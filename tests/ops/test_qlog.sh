#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Per-connection qlog files from dpquicd (README "Seeing connections"):
#   A. `dpquic-ctl qlog ID on` during a transfer writes DIR/dpquicd-ID.sqlog
#      (qlog 0.3 JSON-SEQ: a header, then transport and recovery events,
#      every record valid JSON); `connections` shows the connection as
#      traced; `qlog ID off` stops the file growing while the transfer
#      goes on; an unknown ID is refused with a message;
#   B. qlog.sample = 1 (applied by a reload): a new connection gets its
#      file from its first packet (its first record is a packet received
#      in the Initial space), without any command;
#   C. qlog.dir = "" (reload): `qlog ID on` says what to set.
# The shard only copies records into a ring; the files are written by the
# control loop (control/dpquicd/qlog.c).
#
#   test_qlog.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
lib_init qlog
ROOT=$TMP/root
mkdir -p "$ROOT" "$TMP/qlog"
head -c 1024 /dev/urandom > "$ROOT/f1k"
truncate -s 16G "$ROOT/big"	# far too big to finish during the test

NS=dpq-ql-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
SOCK=$TMP/d.sock
CONF=$TMP/dpquicd.conf
write_conf() {	# write_conf DIR SAMPLE
	cat > "$CONF" <<CONF
server = { addr = "$DADDR:4433"; root = "$ROOT"; shards = 1; };
ctl = { path = "$SOCK"; };
qlog = { dir = "$1"; sample = $2; };
CONF
}
ctl() { ip netns exec "$NS" timeout 90 "$DPQUIC_CTL" -t 60000 -s "$SOCK" "$@"; }
wait_conns() {	# wait_conns N: bounded by time (a loaded machine is slow)
	local until=$((SECONDS + 120))
	while [ $SECONDS -lt $until ]; do
		ctl -r connections > "$TMP/conns.json" 2>/dev/null &&
			[ "$(json_get "$TMP/conns.json" "s['total']")" = "$1" ] &&
			return 0
		sleep 0.2
	done
	return 1
}
# check_qlog FILE: every record is RS + JSON; prints "records first_event"
check_qlog() {
	python3 - "$1" <<'PY'
import json, sys
data = open(sys.argv[1], 'rb').read()
assert data[:1] == b'\x1e', 'no RS at the start'
recs = [json.loads(r) for r in data.split(b'\x1e')[1:]]
assert recs[0]['qlog_format'] == 'JSON-SEQ' and recs[0]['qlog_version'] == '0.3'
names = [r['name'] for r in recs[1:]]
assert 'transport:packet_sent' in names, 'no packet_sent'
assert 'transport:packet_received' in names, 'no packet_received'
first = recs[1]
print(len(recs) - 1, first['name'], first['data'].get('header', {}).get('packet_type', '-'))
PY
}

write_conf "$TMP/qlog" 0
start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- -c "$CONF"

# ---- A: on demand ------------------------------------------------------------
if ctl qlog 123abc on > "$TMP/bad.out" 2> "$TMP/bad.err"; then
	fail "A: qlog of an unknown connection accepted"
elif grep -q 'dpquic-ctl: qlog: qlog 123abc on: no connection' "$TMP/bad.err"; then
	ok "A: an unknown ID is refused: $(cat "$TMP/bad.err")"
else
	fail "A: unknown ID: $(cat "$TMP/bad.err")"
fi
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 600 --idle-timeout 600 \
	"$DADDR:4433" /big > "$TMP/a.out" 2> "$TMP/a.err" &
PC=$!
BG_PIDS+=($PC)
wait_conns 1 || fail "A: the transfer never showed up"
ID=$(json_get "$TMP/conns.json" "s['connections'][0]['id']")
F=$TMP/qlog/dpquicd-$ID.sqlog
if ctl qlog "$ID" on > "$TMP/on.out" 2>&1 && grep -q "$F" "$TMP/on.out"; then
	ok "A: qlog $ID on: $(tr '\n' ' ' < "$TMP/on.out")"
else
	fail "A: qlog $ID on: $(cat "$TMP/on.out")"
fi
ctl -r connections > "$TMP/conns2.json" &&
	check_json "$TMP/conns2.json" "s['connections'][0]['qlog'] == True" \
		"A: connections shows the connection as traced"
# records of both directions arrive while the transfer runs (bounded
# wait: on a loaded machine the client may not ACK for a while)
until=$((SECONDS + 60))
while [ $SECONDS -lt $until ]; do
	[ -s "$F" ] && [ "$(tr -cd '\036' < "$F" | wc -c)" -gt 50 ] &&
		grep -q 'packet_received' "$F" && grep -q 'packet_sent' "$F" &&
		break
	sleep 0.2
done
ctl qlog "$ID" off > "$TMP/off.out" 2>&1 || fail "A: qlog off: $(cat "$TMP/off.out")"
S1=$(stat -c %s "$F" 2>/dev/null || echo 0)
if R=$(check_qlog "$F" 2> "$TMP/py.err"); then
	ok "A: $F is qlog JSON-SEQ: $R"
else
	fail "A: $F: $(tail -2 "$TMP/py.err") ($(ctl qlog 2>&1 | tr '\n' ' '))"
fi
sleep 1.5
S2=$(stat -c %s "$F" 2>/dev/null || echo 0)
kill -0 "$PC" 2>/dev/null || fail "A: the transfer ended early"
[ "$S1" -gt 0 ] && [ "$S1" = "$S2" ] &&
	ok "A: after qlog off the file stays at $S1 bytes while the transfer goes on" ||
	fail "A: file grew after qlog off ($S1 -> $S2)"
ctl qlog > "$TMP/list.out" 2>&1 && grep -q "dir  *$TMP/qlog" "$TMP/list.out" &&
	ok "A: dpquic-ctl qlog shows the settings" ||
	fail "A: dpquic-ctl qlog: $(cat "$TMP/list.out")"
kill "$PC" 2>/dev/null
wait "$PC" 2>/dev/null

# ---- B: a sample from the first packet -----------------------------------
write_conf "$TMP/qlog" 1
ctl reload > "$TMP/reload.out" 2>&1 || fail "B: reload: $(cat "$TMP/reload.out")"
ls "$TMP/qlog" > "$TMP/before.ls"
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 60 "$DADDR:4433" /f1k \
	> "$TMP/b.out" 2> "$TMP/b.err" || fail "B: client: $(cat "$TMP/b.err")"
NEW=""
for i in $(seq 1 100); do
	NEW=$(ls "$TMP/qlog" | grep -vxF -f "$TMP/before.ls" | head -1)
	[ -n "$NEW" ] && [ "$(tr -cd '\036' < "$TMP/qlog/$NEW" | wc -c)" -gt 5 ] && break
	sleep 0.1
done
if [ -n "$NEW" ] && R=$(check_qlog "$TMP/qlog/$NEW" 2> "$TMP/py2.err"); then
	case "$R" in
	*"transport:packet_received initial")
		ok "B: qlog.sample = 1 traced the new connection from its first packet: $NEW: $R" ;;
	*) fail "B: $NEW does not start with the client's Initial: $R" ;;
	esac
else
	fail "B: no qlog file for the sampled connection ($NEW: $(tail -2 "$TMP/py2.err" 2>/dev/null))"
fi

# ---- C: no directory ----------------------------------------------------------
write_conf "" 0
ctl reload > /dev/null 2>&1 || fail "C: reload"
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 600 --idle-timeout 600 \
	"$DADDR:4433" /big > "$TMP/c.out" 2> "$TMP/c.err" &
PC=$!
BG_PIDS+=($PC)
wait_conns 1 || fail "C: the transfer never showed up"
ID=$(json_get "$TMP/conns.json" "s['connections'][0]['id']")
if ctl qlog "$ID" on > /dev/null 2> "$TMP/c.err2"; then
	fail "C: qlog on without a directory accepted"
elif grep -q 'no qlog directory: set qlog.dir' "$TMP/c.err2"; then
	ok "C: without qlog.dir: $(cat "$TMP/c.err2")"
else
	fail "C: $(cat "$TMP/c.err2")"
fi
kill "$PC" 2>/dev/null
wait "$PC" 2>/dev/null

kill -TERM "$PD"
wait "$PD"
rc=$?
[ "$rc" -eq 0 ] && ok "the daemon exited 0" || fail "daemon exit $rc"
no_sanitizer_report "$TMP/d.log" "$TMP"/*.err
finish
