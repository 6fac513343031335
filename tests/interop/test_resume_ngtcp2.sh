#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Resumption and 0-RTT against the libngtcp2 peers, both ways (issue 8 §4).
#
#   test_resume_ngtcp2.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT NGTCP2_CLIENT
#                         NGTCP2_SERVER
#
# Proves, every file checked with sha256:
#   A. dpquic-client --cache -> "ngtcp2-hq-server --resume" (kernel UDP in
#      a namespace): a full handshake stores the ngtcp2 server's ticket;
#      the next fetch resumes and its request goes in 0-RTT the server
#      accepts (the server logs "session resumed early_data accepted" and
#      served the GET before its handshake was done); against a restarted
#      server (a new ticket key) the 0-RTT request is refused and sent
#      again in 1-RTT, complete.
#   B. "ngtcp2-hq-client --session" -> dpquicd (net_tap): full, then
#      resumed with 0-RTT accepted (dpquicd counts a 0-RTT handshake);
#      dpquicd restarted with the same key files but 0-RTT off: resumed,
#      0-RTT rejected, the ngtcp2 client sends its requests again, complete;
#      a stranger's key files: a full handshake.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT NGCLIENT NGSERVER}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
NGCLIENT=${4:?}
NGSERVER=${5:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT" "$NGCLIENT" "$NGSERVER"
lib_init resume-ngtcp2
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom > "$ROOT/f1k"
head -c $((300 * 1024)) /dev/urandom > "$ROOT/f300k"
FILES=(/f1k /f300k)

# ---- A: dpquic-client -> ngtcp2 server -------------------------------------
NS=dpq-i5-$$
ns_add "$NS"
A4=198.18.1.1
ip netns exec "$NS" ip addr add "$A4/32" dev lo

NGS=
# The same port each time: dpquic-client's cache is per IP:PORT.
start_ngserver() {	# start_ngserver NAME: sets PORT
	local i
	bg_start NGS "$TMP/$1.log" ip netns exec "$NS" "$NGSERVER" --resume \
		--timeout 170 "$A4" 4433 "$ROOT"
	PORT=
	for i in $(seq 1 100); do
		PORT=$(sed -n 's/^listening on .* port \([0-9]*\)$/\1/p' \
			"$TMP/$1.log")
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "ngtcp2 server did not start:"
	cat "$TMP/$1.log"
	exit 1
}
# session NAME EXPECTED: the dpquic client's "session S 0rtt R" line.
session() {
	local got
	got=$(awk '$1 == "session" { print $2, $4 }' "$TMP/$1.out")
	[ "$got" = "$2" ] && ok "$1: session $2" ||
		fail "$1: session '$got', expected '$2'"
}
dqc() {	# dqc NAME: one dpquic-client fetch with the cache, checked
	run_timed "$1" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 60 \
		--sha256 --cache "$TMP/dq.cache" "$A4:$PORT" "${FILES[@]}" &&
		check_sha "$1" "${FILES[@]}"
}
start_ngserver ngsA
dqc a1 && session a1 "full none"
dqc a2 && session a2 "resumed accepted"
# The server's own view: the second connection resumed with early data,
# and its GET came before its handshake was done (a 0-RTT request).
if grep -q '^conn 2 handshake done .* session resumed early_data accepted$' \
	"$TMP/ngsA.log"; then
	ok "ngtcp2 server: conn 2 resumed, early data accepted"
else
	fail "ngtcp2 server log: $(grep '^conn 2 handshake' "$TMP/ngsA.log")"
fi
first=$(grep -n '^conn 2 ' "$TMP/ngsA.log" | grep -m1 -E 'GET|handshake done')
case "$first" in
*GET*) ok "ngtcp2 server: conn 2's request arrived before its handshake ended";;
*) fail "ngtcp2 server: conn 2's first event: $first";;
esac
bg_stop "$NGS" 10
# A new server process: a new ticket key, the cached ticket is worthless.
start_ngserver ngsB
dqc a3 && session a3 "full rejected"
dqc a4 && session a4 "resumed accepted"
bg_stop "$NGS" 10

# ---- B: ngtcp2 client -> dpquicd ---------------------------------------------
NS2=dpq-i6-$$
ns_add "$NS2"
DADDR=198.18.0.2
KADDR=198.18.0.1
TK=$TMP/ticket.key
KK=$TMP/token.key
head -c 32 /dev/urandom > "$TK"
head -c 32 /dev/urandom > "$KK"
chmod 600 "$TK" "$KK"
N=0
startd() {
	N=$((N + 1))
	ip netns exec "$NS2" ip link del dpqr1 2>/dev/null
	start_dpquicd_tap PD "$NS2" dpqr1 "$DADDR" "$KADDR" 24 "$TMP/d$N.log" \
		0 -- --addr "$DADDR:4433" --root "$ROOT" --ctl "$TMP/d.sock" \
		--ticket-key "$TK" --token-key "$KK" --duration 200 "$@"
}
stopd() {
	bg_stop "$PD"
	[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
}
ngc() {	# ngc NAME EXPECTED: one ngtcp2 client fetch, checked
	if run_timed "$1" 0 ip netns exec "$NS2" "$NGCLIENT" --timeout 60 \
		--sha256 --session "$TMP/ng.session" "$DADDR" 4433 \
		"${FILES[@]}"; then
		check_sha "$1" "${FILES[@]}"
		expect_line "$1" "^session $2 ticket saved\$"
	fi
}
d_stat() {	# d_stat PYEXPR-OF-x: summed over shards
	ctl_stats "$NS2" "$TMP/d.sock" "$TMP/stats.json" || return 1
	json_get "$TMP/stats.json" "sum($1 for x in s['shards'])"
}
startd
ngc b1 "full early_data none"
ngc b2 "resumed early_data accepted"
r=$(d_stat "x['handshakes_0rtt']")
[ "$r" = 1 ] && ok "dpquicd counted the 0-RTT handshake" ||
	fail "dpquicd 0-RTT handshakes: $r"
r=$(d_stat "x['handshakes_resumed']")
[ "$r" = 1 ] && ok "dpquicd counted 1 resumption" ||
	fail "dpquicd resumptions: $r"
stopd
cat > "$TMP/d.conf" <<EOF
tickets = { early-data = false; };
EOF
startd -c "$TMP/d.conf"
# The ticket allowed 0-RTT: the client tries, dpquicd refuses, the client
# sends its requests again in 1-RTT.
ngc b3 "resumed early_data rejected"
stopd
head -c 32 /dev/urandom > "$TK"
head -c 32 /dev/urandom > "$KK"
startd
ngc b4 "full early_data rejected"
ngc b5 "resumed early_data accepted"
stopd

no_sanitizer_report "$TMP"/*.log "$TMP"/*.err
finish
