#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# XOR-FEC with the programs, as an operator runs them: dpquicd on a net_tap
# port in a namespace, its [fec] config section, dpquic-client over kernel
# UDP in the namespace, and random loss toward the client from iptables.
#   A. a file fetched through 3% loss: the client rebuilds packets from
#      repairs (its report says so) and sends speculative copies
#      (--spec all), sha256 matches, and the daemon's connection listing
#      shows the repairs it sent;
#   B. `dpquic-client --fec none`: the extension is not negotiated
#      (no "fec" line, no "fec" object in the listing), fetch still ok;
#   C. `dpquic-ctl fec`: shows the settings; sets policy, max_group and
#      speculative retransmission for
#      new connections; refuses bad values with a reason; `fec id=ID
#      policy=P` changes one connection; a reload goes back to the file;
#   D. bad [fec] values in the file and options: exit 2 with the key named.
#
#   test_fec_daemon.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
command -v iptables >/dev/null || { echo "iptables missing (packages.txt)"; exit 1; }
lib_init fec
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 3000000 /dev/urandom > "$ROOT/f3m"
head -c 1024 /dev/urandom > "$ROOT/f1k"
# In flight long enough to be listed; sparse, so cheap to make.
truncate -s 512M "$ROOT/big"

NS=dpq-e6-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
SOCK=$TMP/d.sock
CONF=$TMP/dpquicd.conf
write_conf() {	# write_conf POLICY MAXGROUP
	cat > "$CONF" <<CONF
server = { addr = "$DADDR:4433"; root = "$ROOT"; shards = 1; };
ctl = { path = "$SOCK"; };
fec = { policy = "$1"; max-group = $2; };
CONF
}
ctl() { ip netns exec "$NS" timeout 10 "$DPQUIC_CTL" -s "$SOCK" -r "$@"; }
client() {	# client NAME [options] PATH...
	local n=$1
	shift
	ip netns exec "$NS" timeout 120 "$DPQUIC_CLIENT" --timeout 90 --sha256 \
		"$@" > "$TMP/$n.out" 2> "$TMP/$n.err"
}
sha_ok() {	# sha_ok NAME FILE
	local want got
	want=$(sha256sum "$ROOT/$2" | cut -d' ' -f1)
	got=$(awk -v p="/$2" '$1 == "sha256" && $3 == p { print $2 }' \
		"$TMP/$1.out")
	[ "$want" = "$got" ]
}

# ---- D: bad values stop the daemon before EAL, naming the key -------------
"$DPQUICD" --check --fec fixed:1 --addr "$DADDR:1" --root "$ROOT" \
	> "$TMP/bad1.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- '--fec "fixed:1": expected off' "$TMP/bad1.out"; then
	ok "D: --fec fixed:1 refused (exit 2)"
else
	fail "D: --fec fixed:1: exit $rc, $(cat "$TMP/bad1.out")"
fi
"$DPQUICD" --check --fec-cc ignore --addr "$DADDR:1" --root "$ROOT" \
	> "$TMP/bad4.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- 'expected guarded or loss' "$TMP/bad4.out"; then
	ok "D: --fec-cc ignore refused (exit 2: an experiment, C API only)"
else
	fail "D: --fec-cc ignore: exit $rc, $(cat "$TMP/bad4.out")"
fi
write_conf "adaptive:9-4" 16
"$DPQUICD" --check -c "$CONF" > "$TMP/bad2.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q 'fec.policy' "$TMP/bad2.out"; then
	ok "D: fec.policy adaptive:9-4 in the file refused with its line"
else
	fail "D: adaptive:9-4: exit $rc, $(cat "$TMP/bad2.out")"
fi
write_conf fixed:4 65
"$DPQUICD" --check -c "$CONF" > "$TMP/bad3.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q 'fec.max-group' "$TMP/bad3.out"; then
	ok "D: fec.max-group 65 refused"
else
	fail "D: max-group 65: exit $rc, $(cat "$TMP/bad3.out")"
fi

# ---- A: 3% loss toward the client, repairs in groups of 4 ---------------
write_conf fixed:4 16
start_dpquicd_tap PD "$NS" dpqf0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 \
	-- -c "$CONF"
ip netns exec "$NS" iptables -A INPUT -p udp --sport 4433 \
	-m statistic --mode random --probability 0.03 -j DROP
if client a --spec all "$DADDR:4433" /f3m && sha_ok a f3m; then
	ok "A: 3 MB through 3% loss, sha256 matches"
else
	fail "A: fetch: $(tail -3 "$TMP/a.err") $(tail -3 "$TMP/a.out")"
fi
rebuilt=$(awk '$1 == "fec" { print $3 }' "$TMP/a.out")
if [ -n "$rebuilt" ] && [ "$rebuilt" -gt 0 ]; then
	ok "A: the client rebuilt $rebuilt packets ($(grep '^fec ' "$TMP/a.out"))"
else
	fail "A: no packet rebuilt: $(cat "$TMP/a.out")"
fi
if grep -q '^spec copies_sent [1-9]' "$TMP/a.out"; then
	ok "A: --spec all: the client sent speculative copies"
else
	fail "A: no speculative copies: $(cat "$TMP/a.out")"
fi
ip netns exec "$NS" iptables -F INPUT
# The listing of a connection in progress shows the repairs sent. The
# background client fetches far more than it can in the test's time (we
# stop it ourselves), and the connection we act on is the established one
# that sent repairs: client A's connection may still be listed, closing,
# with repairs of its own, and be freed at any moment.
ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 280 "$DADDR:4433" \
	/big /big /big /big /big /big /big /big > "$TMP/bg.out" 2>&1 &
BGC=$!
LIVE="[c['id'] for c in s['connections'] if c['state'] == 'established' and c.get('fec', {}).get('repairs_sent', 0) > 0]"
ID=
for i in $(seq 1 200); do
	if ctl connections > "$TMP/conns.json" 2>/dev/null; then
		ID=$(json_get "$TMP/conns.json" "($LIVE or [''])[0]" 2>/dev/null)
		[ -n "$ID" ] && break
	fi
	kill -0 $BGC 2>/dev/null || break
	sleep 0.1
done
if [ -n "$ID" ]; then
	ok "A: \`dpquic-ctl connections\` shows the connection's fec counters"
else
	fail "A: no established connection with fec counters: $(head -c 600 "$TMP/conns.json"); client: $(tail -3 "$TMP/bg.out")"
fi

# ---- C: the control command -------------------------------------------------
ctl fec > "$TMP/fec0.json"
check_json "$TMP/fec0.json" "s['policy'] == 'fixed:4' and s['max_group'] == 16 and s['extension'] == 'offered' and s['xor'] != '' and s['cc'] == 'guarded'" \
	"C: \`fec\` shows policy, max_group, the XOR kernel and the congestion response"
if [ -z "$ID" ]; then
	fail "C: fec id=ID: no live connection to act on"
elif ctl fec id="$ID" policy=off > "$TMP/fec1.json" 2>&1; then
	check_json "$TMP/fec1.json" "s['policy'] == 'off'" \
		"C: \`fec id=ID policy=off\` changes one connection"
else
	fail "C: fec id=$ID: $(cat "$TMP/fec1.json"); client alive: $(kill -0 $BGC 2>/dev/null && echo yes || echo no) $(tail -3 "$TMP/bg.out")"
fi
kill $BGC 2>/dev/null
wait $BGC
if ctl fec id=ffff policy=off > "$TMP/fec2.json" 2>&1; then
	fail "C: a connection that does not exist was accepted"
elif grep -q 'no connection' "$TMP/fec2.json"; then
	ok "C: fec id of a closed connection: 'no connection'"
else
	fail "C: fec id=ffff: $(cat "$TMP/fec2.json")"
fi
if ctl fec policy=fixed:70 > "$TMP/fec3.json" 2>&1; then
	fail "C: policy fixed:70 accepted"
elif grep -q 'expected off, fixed' "$TMP/fec3.json"; then
	ok "C: policy fixed:70 refused with the allowed values"
else
	fail "C: fixed:70: $(cat "$TMP/fec3.json")"
fi
ctl fec spec=handshake,tail > "$TMP/fec3b.json"
check_json "$TMP/fec3b.json" "s['spec_retx'] == 'handshake,tail'" \
	"C: \`fec spec=handshake,tail\` sets speculative retransmission"
if ctl fec spec=sometimes > "$TMP/fec3c.json" 2>&1; then
	fail "C: spec=sometimes accepted"
else
	grep -q 'handshake, tail, repair' "$TMP/fec3c.json" &&
		ok "C: spec=sometimes refused with the allowed values" ||
		fail "C: spec=sometimes: $(cat "$TMP/fec3c.json")"
fi
ctl fec max_group=0 > "$TMP/fec4.json"
check_json "$TMP/fec4.json" "s['extension'] == 'off'" \
	"C: max_group=0 turns the extension off for new connections"
if client c0 "$DADDR:4433" /f1k && sha_ok c0 f1k &&
   ! grep -q '^fec ' "$TMP/c0.out"; then
	ok "C: a new connection then has no XOR-FEC"
else
	fail "C: after max_group=0: $(cat "$TMP/c0.out")"
fi
ctl config > "$TMP/config.json"
grep -q '"key":"fec.max-group","value":"0"' "$TMP/config.json" &&
	ok "C: \`config\` shows the running fec.max-group" ||
	fail "C: config: $(grep -o '"key":"fec[^}]*' "$TMP/config.json")"
ctl reload > /dev/null
ctl fec > "$TMP/fec5.json"
check_json "$TMP/fec5.json" "s['max_group'] == 16 and s['policy'] == 'fixed:4'" \
	"C: a reload goes back to the file's settings"
write_conf adaptive 32
ctl reload > "$TMP/reload.json"
check_json "$TMP/reload.json" "'fec.policy' in s['applied'] and 'fec.max-group' in s['applied']" \
	"C: a reload applies changed [fec] keys"

# ---- B: a client without the extension ------------------------------------
ip netns exec "$NS" iptables -A INPUT -p udp --sport 4433 \
	-m statistic --mode random --probability 0.03 -j DROP
if client b --fec none "$DADDR:4433" /f3m && sha_ok b f3m &&
   ! grep -q '^fec ' "$TMP/b.out"; then
	ok "B: --fec none: not negotiated, 3 MB through 3% loss ok"
else
	fail "B: $(tail -3 "$TMP/b.err") $(cat "$TMP/b.out")"
fi
ip netns exec "$NS" iptables -F INPUT
bg_stop "$PD" 20
[ "$BG_RC" -eq 0 ] && ok "dpquicd exited 0" || fail "dpquicd exit $BG_RC"
finish
