#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquicd's life cycle on a net_tap port in a namespace, with a config
# file, as an operator drives it:
#   A. `dpquic-ctl connections`, `conn ID`, `close ID` during a transfer:
#      the client reports the operator's CONNECTION_CLOSE;
#   B. SIGHUP and `dpquic-ctl reload`: a changed log level is applied, a
#      changed shard count is reported as needing a restart, a broken
#      file changes nothing and the daemon keeps serving;
#   C. `dpquic-ctl drain`: a new client is refused with
#      CONNECTION_REFUSED and says so at once; the transfer in progress
#      finishes complete; the daemon exits 0 when it is gone (the
#      transfer is held in progress by its client, blocked writing into
#      a FIFO until the test reads it: no race with a fast machine);
#   D. SIGTERM during a transfer: the client reports the server's
#      CONNECTION_CLOSE within seconds (not its 60 s timeout) and how many
#      bytes arrived; the daemon exits 0.
#
#   test_lifecycle.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
lib_init lifecycle
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom > "$ROOT/f1k"
# Far too big to finish while the test closes it (sparse: free to make).
truncate -s 16G "$ROOT/big"
# The drain's transfer: real bytes, checked by sha256.
head -c $((16 * 1024 * 1024)) /dev/urandom > "$ROOT/mid"

NS=dpq-e5-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
SOCK=$TMP/d.sock
CONF=$TMP/dpquicd.conf
write_conf() {	# write_conf LEVEL SHARDS
	cat > "$CONF" <<CONF
server = {
  addr = "$DADDR:4433";
  root = "$ROOT";
  shards = $2;
  # the drain's client is held for a while: no idle timeout meanwhile
  idle-timeout-ms = 600000;
};
ctl = { path = "$SOCK"; };
log = { level = "$1"; };
drain = { timeout = 60; };
CONF
}
# Generous, bounded: on a loaded machine a shard may answer late.
ctl() { ip netns exec "$NS" timeout 60 "$DPQUIC_CTL" -t 30000 -s "$SOCK" -r "$@"; }
client_bg() {	# client_bg NAME [client options] PATH...: fetch in the background
	local n=$1
	shift
	ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 600 --sha256 \
		--idle-timeout 600 "$DADDR:4433" "$@" > "$TMP/$n.out" \
		2> "$TMP/$n.err" &
	eval "PID_$n=$!"
	BG_PIDS+=($!)
}
# wait_gone PID S: until PID exits, at most S seconds; 1 if it did not.
wait_gone() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
# wait_conns N: until the daemon lists N connections (bounded).
wait_conns() {
	local i
	for i in $(seq 1 100); do
		ctl connections > "$TMP/conns.json" 2>/dev/null &&
			[ "$(json_get "$TMP/conns.json" "s['total']")" = "$1" ] &&
			return 0
		sleep 0.1
	done
	return 1
}
# wait_established: until the first listed connection finished its
# handshake (bounded: listed at its first Initial, a loaded machine may
# take seconds to complete it; then ALPN and state are known).
wait_established() {
	local i
	for i in $(seq 1 300); do
		ctl connections > "$TMP/conns.json" 2>/dev/null &&
			[ "$(json_get "$TMP/conns.json" \
				"s['total'] >= 1 and s['connections'][0]['state'] == 'established'")" = True ] &&
			return 0
		sleep 0.2
	done
	return 1
}
# elapsed T0: seconds since T0 (date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

start_daemon() {
	start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/d$1.log" \
		0,1 -- -c "$CONF"
}

# ---- A: listing and closing one connection ------------------------------
write_conf info 1
start_daemon 1
client_bg a1 /big
if wait_conns 1 && wait_established; then
	S=$TMP/conns.json
	check_json "$S" "s['connections'][0]['peer'].startswith('$KADDR:')" \
		"connections: peer address"
	check_json "$S" "s['connections'][0]['alpn'] == 'hq-interop'" \
		"connections: ALPN hq-interop"
	check_json "$S" "s['connections'][0]['state'] == 'established'" \
		"connections: state established"
	check_json "$S" "len(s['connections'][0]['scid']) == 16 and s['connections'][0]['shard'] == 0" \
		"connections: SCID and shard"
	check_json "$S" "s['connections'][0]['cipher'].startswith('TLS_')" \
		"connections: cipher suite"
	ID=$(json_get "$S" "s['connections'][0]['id']")
	ctl conn "$ID" > "$TMP/conn.json" ||
		fail "dpquic-ctl conn $ID: $(cat "$TMP/conn.json")"
	check_json "$TMP/conn.json" "s['connection']['id'] == '$ID' and s['connection']['srtt_us'] > 0 and s['connection']['streams'] >= 1" \
			"conn $ID: one connection with RTT and streams"
	t0=$(date +%s.%N)
	ctl close "$ID" > "$TMP/close.json" ||
		fail "dpquic-ctl close $ID failed: $(cat "$TMP/close.json")"
	wait "$PID_a1"
	rc=$?
	[ "$rc" -eq 1 ] || fail "a1: exit $rc, expected 1 (incomplete)"
	if grep -q 'the server closed the connection: NO_ERROR (0x0): "closed by the operator"' "$TMP/a1.err"; then
		ok "close: the client reports the operator's close after $(elapsed "$t0") s"
	else
		fail "close: client did not report the close"
		cat "$TMP/a1.err" "$TMP/a1.out"
	fi
	grep -Eq '^file /big bytes [0-9]+ ' "$TMP/a1.out" ||
		fail "a1: no bytes count for /big"
	# RFC 9000 §10.2.1: it stays in closing state for 3 PTO, or is gone.
	if ctl conn "$ID" > "$TMP/conn2.json" 2>&1; then
		check_json "$TMP/conn2.json" "s['connection']['state'] in ('closing', 'closed')" \
			"conn $ID after close: closing"
	else
		grep -q "no connection $ID" "$TMP/conn2.json" &&
			ok "conn $ID after close: gone" ||
			fail "conn $ID after close: $(cat "$TMP/conn2.json")"
	fi
else
	fail "connections: the transfer never showed up"
fi
ip netns exec "$NS" timeout 60 "$DPQUIC_CTL" -t 30000 -s "$SOCK" -j status |
	grep -q '"state": "serving"' && ok "status: serving" ||
	fail "status: not serving"

# ---- B: reload ------------------------------------------------------------
write_conf debug 2
kill -HUP "$PD"
for i in $(seq 1 600); do
	grep -q 'reloaded' "$TMP/d1.log" && break
	sleep 0.1
done
if grep -q 'reloaded .*applied: log.level; need a restart: server.shards' "$TMP/d1.log"; then
	ok "SIGHUP: log.level applied, server.shards needs a restart"
else
	fail "SIGHUP: no reload summary"
	tail -5 "$TMP/d1.log"
fi
kill -0 "$PD" 2>/dev/null && ok "SIGHUP: the daemon is still running" ||
	fail "SIGHUP killed the daemon"
write_conf info 2
ctl reload > "$TMP/reload.json" &&
	check_json "$TMP/reload.json" "s['applied'] == ['log.level'] and s['need_restart'] == ['server.shards']" \
		"dpquic-ctl reload: applied and need_restart lists"
echo 'server = { shards = "x"; };' > "$CONF"
ctl reload > "$TMP/reload2.json"
[ $? -eq 1 ] && grep -q "$CONF:1: server.shards: \\\\\"x\\\\\": expected an integer" "$TMP/reload2.json" &&
	ok "reload of a broken file: refused with file, line and key" ||
	{ fail "reload of a broken file"; cat "$TMP/reload2.json"; }
ctl config > "$TMP/config.json" &&
	check_json "$TMP/config.json" "[k['value'] for k in s['keys'] if k['key'] == 'log.level'] == ['info'] and [k['from'] for k in s['keys'] if k['key'] == 'server.shards'][0].endswith(':4')" \
		"config: running values and where they came from"
write_conf info 1

# ---- C: drain -------------------------------------------------------------
# The client writes /mid into a FIFO nobody reads yet: it blocks at the
# first bytes, so the transfer is in progress for as long as the test
# needs; reading the FIFO lets it finish.
mkdir -p "$TMP/out"
mkfifo "$TMP/out/mid"
client_bg c1 --out "$TMP/out" /mid
wait_conns 1 || fail "drain: the transfer never showed up"
ctl drain 600 > "$TMP/drain.json" &&
	check_json "$TMP/drain.json" "s['state'] == 'draining' and s['connections'] == 1" \
		"drain: draining with 1 connection"
t0=$(date +%s.%N)
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 120 "$DADDR:4433" /f1k \
	> "$TMP/c2.out" 2> "$TMP/c2.err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'CONNECTION_REFUSED (0x2): "server draining' "$TMP/c2.err"; then
	ok "drain: a new client is refused and says so after $(elapsed "$t0") s"
else
	fail "drain: new client rc=$rc"
	cat "$TMP/c2.err"
fi
ctl connections > "$TMP/conns-drain.json" &&
	check_json "$TMP/conns-drain.json" "s['total'] == 1 and s['connections'][0]['stream_bytes_sent'] < 16 * 1024 * 1024" \
		"drain: the transfer is still in progress"
sha256sum < "$TMP/out/mid" > "$TMP/mid.sha" &
PID_reader=$!
wait "$PID_c1"
rc=$?
want=$(sha256sum < "$ROOT/mid" | cut -d' ' -f1)
wait "$PID_reader"
[ $rc -eq 0 ] && grep -q "^file /mid bytes 16777216 ok" "$TMP/c1.out" &&
	grep -q "^sha256 $want /mid" "$TMP/c1.out" &&
	[ "$(cut -d' ' -f1 "$TMP/mid.sha")" = "$want" ] &&
	ok "drain: the transfer in progress finished complete (sha256)" ||
	{ fail "drain: transfer rc=$rc"; tail -3 "$TMP/c1.out" "$TMP/c1.err"; }
if ! wait_gone "$PD" 60; then
	fail "drain: the daemon did not exit"
else
	wait "$PD"
	rc=$?
	[ $rc -eq 0 ] && ok "drain: the daemon exited 0 once drained" ||
		fail "drain: daemon exit $rc"
fi
grep -q 'drained: no connection left' "$TMP/d1.log" ||
	fail "drain: no 'drained' log line"

# ---- D: SIGTERM -------------------------------------------------------------
ip netns exec "$NS" ip link del dpqt0 2>/dev/null
start_daemon 2
client_bg d1 /big
wait_conns 1 || fail "SIGTERM: the transfer never showed up"
t0=$(date +%s.%N)
kill -TERM "$PD"
wait "$PID_d1"
rc=$?
dt=$(elapsed "$t0")
# The server's CONNECTION_CLOSE, not the client's 120 s timeout (no
# timing assertion: the machine may be loaded).
if grep -q 'the server closed the connection: NO_ERROR (0x0): "server shutting down"' "$TMP/d1.err"; then
	ok "SIGTERM: the client reports the server's close after $dt s (rc $rc)"
else
	fail "SIGTERM: client rc=$rc after $dt s"
	cat "$TMP/d1.err"
fi
grep -Eq '^file /big bytes [0-9]+ incomplete|^file /big bytes [0-9]+ aborted|^file /big incomplete' "$TMP/d1.out" ||
	{ fail "SIGTERM: client did not say how much of /big arrived"; cat "$TMP/d1.out"; }
wait_gone "$PD" 60 || fail "SIGTERM: the daemon still runs after 60 s"
wait "$PD"
rc=$?
[ "$rc" -eq 0 ] && ok "SIGTERM: the daemon exited 0" ||
	fail "SIGTERM: daemon exit $rc"
grep -q 'stopping on signal: closing 1 connection' "$TMP/d2.log" ||
	{ fail "SIGTERM: no closing log line"; tail -5 "$TMP/d2.log"; }
no_sanitizer_report "$TMP/d1.log" "$TMP/d2.log" "$TMP"/*.err
finish
