#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Fewer round trips end to end (issue 8 §2-4): dpquicd on a net_tap in a
# namespace, dpquic-client over kernel UDP with --cache.
#
#   test_rtt0.sh DPQUICD DPQUIC_CLIENT DPQUIC_CTL
#
# Proves, each from the client's report line "session S 0rtt R" and the
# daemon's stats:
#   A. a first fetch is a full handshake; the cache file appears, 0600;
#      the next fetch resumes and its request goes in accepted 0-RTT;
#      with --no-0rtt it resumes without 0-RTT;
#   B. under `retry = always` the NEW_TOKEN token of the previous fetch
#      skips the Retry (RFC 9000 §8.1.3); a token used once is not taken
#      again (the cached one is replaced after each fetch);
#   C. another daemon given the same key files (a fleet, here the next
#      one on the same address) resumes the first one's session and takes
#      its token; 0-RTT on that ticket is refused (it predates the new
#      daemon's anti-replay recording, RFC 8446 §8.2) and the request
#      goes again in 1-RTT, complete;
#   D. `dpquic-ctl rotate-keys`: a ticket of the previous key still
#      resumes, one two rotations old does not (a full handshake); an
#      unchanged key file is refused with a message;
#   E. 0-RTT off by policy (`tickets.early-data = false` and a reload):
#      resumed, 0-RTT rejected, answer complete; an expired ticket
#      (tickets.lifetime) gives a full handshake;
#   F. a damaged cache file: a full handshake, no crash, a fresh file.
# Every fetch's file is checked with sha256.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CLIENT DPQUIC_CTL}
DPQUIC_CLIENT=${2:?}
DPQUIC_CTL=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CLIENT" "$DPQUIC_CTL"
lib_init rtt0
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 20000 /dev/urandom > "$ROOT/f20k"

NS=dpq-e7-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
SOCK=$TMP/d.sock
CACHE=$TMP/client.cache
TK=$TMP/ticket.key
KK=$TMP/token.key
head -c 32 /dev/urandom > "$TK"
head -c 32 /dev/urandom > "$KK"
chmod 600 "$TK" "$KK"

N=0
start() {	# start EXTRA-OPTIONS...: a daemon with the key files
	N=$((N + 1))
	ip netns exec "$NS" ip link del dpqr0 2>/dev/null
	start_dpquicd_tap PD "$NS" dpqr0 "$DADDR" "$KADDR" 24 "$TMP/d$N.log" 0 \
		-- --addr "$DADDR:4433" --root "$ROOT" --ctl "$SOCK" \
		--ticket-key "$TK" --token-key "$KK" --duration 300 "$@"
}
stop() {
	bg_stop "$PD"
	[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
}
fetch() {	# fetch NAME [CLIENT-OPTIONS...]: one fetch, checked
	local n=$1
	shift
	# --spec off: one copy of each Initial, so Retries and token uses
	# count one per connection.
	if ! run_timed "$n" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--timeout 20 --spec off --sha256 --cache "$CACHE" "$@" \
		"$DADDR:4433" /f20k
	then
		# What the daemon saw of it, for the failure's diagnosis.
		ctl_stats "$NS" "$SOCK" "$TMP/$n.stats.json" &&
			python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
for x in s["shards"]:
	print("   daemon:", {k: v for k, v in x.items() if not isinstance(v, (dict, list)) and v},
		x.get("listener"), x.get("tokens"))
print("   daemon ports:", s.get("ports"))' "$TMP/$n.stats.json"
		return 1
	fi
	check_sha "$n" /f20k >/dev/null
}
session() {	# session NAME EXPECTED: "resumed accepted", "full none"...
	local got
	got=$(awk '$1 == "session" { print $2, $4 }' "$TMP/$1.out")
	if [ "$got" = "$2" ]; then
		ok "$1: session $2"
	else
		fail "$1: session '$got', expected '$2'"
		sed 's/^/   out: /' "$TMP/$1.out" "$TMP/$1.err" 2>/dev/null
	fi
}
stat_sum() {	# stat_sum PYEXPR-OF-x (a shard's stats): summed over shards
	ctl_stats "$NS" "$SOCK" "$TMP/stats.json" || return 1
	json_get "$TMP/stats.json" "sum($1 for x in s['shards'])"
}

# ---- A: full, resumed with 0-RTT, resumed without ------------------------
start
rm -f "$CACHE"
fetch a1 && session a1 "full none"
if [ -f "$CACHE" ] && [ "$(stat -c %a "$CACHE")" = 600 ]; then
	ok "cache file created 0600"
else
	fail "cache file: $(stat -c %a "$CACHE" 2>&1)"
fi
fetch a2 && session a2 "resumed accepted"
fetch a3 --no-0rtt && session a3 "resumed none"
r=$(stat_sum "x['handshakes_resumed']")
[ "$r" = 2 ] && ok "daemon counted 2 resumptions" ||
	fail "daemon resumptions: $r"
r=$(stat_sum "x['handshakes_0rtt']")
[ "$r" = 1 ] && ok "daemon counted 1 0-RTT handshake" ||
	fail "daemon 0-RTT handshakes: $r"
stop

# ---- B: a NEW_TOKEN token skips Retry ------------------------------------
start --retry always
fetch b1 --no-0rtt
r=$(stat_sum "x['listener'].get('accept_new_token', 0)")
[ "$r" = 1 ] && ok "retry=always: the cached token skipped the Retry" ||
	fail "accept_new_token: $r"
r=$(stat_sum "x['listener'].get('retry', 0)")
[ "$r" = 0 ] && ok "no Retry sent" || fail "Retries sent: $r"
# The token is replaced after every fetch: the next one is new again.
fetch b2 --no-0rtt
r=$(stat_sum "x['tokens']['new_token_replayed']")
[ "$r" = 0 ] && ok "a fresh token each time (no replay)" ||
	fail "replayed tokens: $r"
# Replaying the same cache (the token used once): refused, Retry instead.
cp "$CACHE" "$TMP/cache.b"
fetch b3 --no-0rtt
cp "$TMP/cache.b" "$CACHE"
fetch b4 --no-0rtt
r=$(stat_sum "x['tokens']['new_token_replayed']")
[ "$r" = 1 ] && ok "a token used twice is refused the second time" ||
	fail "replayed tokens: $r"
r=$(stat_sum "x['listener'].get('retry', 0)")
[ "$r" = 1 ] && ok "... and that client got a Retry" || fail "Retries: $r"
stop

# ---- C: another daemon with the same key files ---------------------------
start
fetch c1 && session c1 "resumed rejected"
r=$(stat_sum "x['listener'].get('accept_new_token', 0)")
[ "$r" = 1 ] && ok "the other daemon took the token" ||
	fail "accept_new_token: $r"
fetch c2 && session c2 "resumed accepted"

# ---- D: rotation -----------------------------------------------------------
out=$(ip netns exec "$NS" "$DPQUIC_CTL" -s "$SOCK" rotate-keys 2>&1)
if echo "$out" | grep -q 'unchanged'; then
	ok "rotate-keys with an unchanged key file is refused"
else
	fail "rotate-keys with unchanged files: $out"
fi
head -c 32 /dev/urandom > "$TK"
head -c 32 /dev/urandom > "$KK"
ip netns exec "$NS" "$DPQUIC_CTL" -j -s "$SOCK" rotate-keys > "$TMP/rot.json" &&
	check_json "$TMP/rot.json" "s['version'] >= 2 and s['tickets']['previous'] != ''" \
		"rotate-keys: a new version, the old key kept as previous"
# The first daemon's ticket, sealed under the key now previous, resumes.
fetch d1 --no-0rtt && session d1 "resumed none"
# A ticket of the current key (a full handshake gets one)...
rm -f "$CACHE"
fetch d2 --no-0rtt && session d2 "full none"
cp "$CACHE" "$TMP/cache.d"
head -c 32 /dev/urandom > "$TK"
head -c 32 /dev/urandom > "$KK"
ip netns exec "$NS" "$DPQUIC_CTL" -s "$SOCK" rotate-keys > /dev/null
# ...resumes one rotation later (previous key)...
fetch d3 --no-0rtt && session d3 "resumed none"
head -c 32 /dev/urandom > "$TK"
head -c 32 /dev/urandom > "$KK"
ip netns exec "$NS" "$DPQUIC_CTL" -s "$SOCK" rotate-keys > /dev/null
# ...and not two rotations later: a full handshake.
cp "$TMP/cache.d" "$CACHE"
fetch d4 --no-0rtt && session d4 "full none"
stop

# ---- E: 0-RTT off by policy; expiry ---------------------------------------
cat > "$TMP/d.conf" <<EOF
tickets = { early-data = false; };
EOF
start -c "$TMP/d.conf"
# The ticket (same key files) allowed 0-RTT: offered, refused, resumed.
fetch e1 && session e1 "resumed rejected"
# Tickets of this daemon do not allow 0-RTT: not even offered.
fetch e2 && session e2 "resumed none"
stop
cat > "$TMP/d.conf" <<EOF
tickets = { lifetime = 2; };
EOF
start -c "$TMP/d.conf"
fetch e3
sleep 3
fetch e4 && session e4 "full none"
# 0-RTT allowed again, then off by a reload: the client offers it (its
# ticket allows it), the server refuses, the answer is complete.
cat > "$TMP/d.conf" <<EOF
tickets = { lifetime = 600; };
EOF
ip netns exec "$NS" "$DPQUIC_CTL" -s "$SOCK" reload > /dev/null
fetch e5
cat > "$TMP/d.conf" <<EOF
tickets = { lifetime = 600; early-data = false; };
EOF
ip netns exec "$NS" "$DPQUIC_CTL" -s "$SOCK" reload > "$TMP/reload.json" 2>&1 ||
	fail "reload: $(cat "$TMP/reload.json")"
fetch e6 && session e6 "resumed rejected"

# ---- F: a damaged cache file ---------------------------------------------
head -c $(( $(stat -c %s "$CACHE") / 2 )) "$CACHE" > "$TMP/cut" &&
	cp "$TMP/cut" "$CACHE"
fetch f1 && session f1 "full none"
grep -q damaged "$TMP/f1.err" && ok "the client said the cache was damaged" ||
	fail "no word about the damaged cache: $(cat "$TMP/f1.err")"
# A fresh file came out of it (0-RTT is still off on this daemon).
fetch f2 && session f2 "resumed none"
stop

no_sanitizer_report "$TMP"/d*.log "$TMP"/*.err
finish
