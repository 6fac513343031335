#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Self-test of the ngtcp2 hq-interop peers against each other on loopback
# (127.0.0.1 and ::1), before they are pointed at dpquic.
#
#   test_ngtcp2_loopback.sh CLIENT SERVER
#
# Proves: one connection fetches 20 paths concurrently (1 KB, 1 MB and
# 50 MB files) with every sha256 equal to sha256sum's and the --out files
# byte-identical; each TLS 1.3 suite (AES-128-GCM, AES-256-GCM,
# CHACHA20-POLY1305) is negotiated when forced (client-side and
# server-side); --retry makes the client see and pass a Retry; path
# traversal / symlink escape / missing files get the stream reset while the
# other streams of the connection succeed; a server serves sequential and
# parallel connections without restart; --keylog writes the TLS 1.3 labels;
# --ca verification succeeds for the right name and fails for a wrong one;
# a client with no server exits 4 within its --timeout; SIGTERM stops the
# server with exit 0.
#
# Servers bind port 0 (the kernel picks a free ephemeral port, so parallel
# test runs cannot collide) and print the port they got.
set -u

CLIENT=${1:?usage: $0 CLIENT SERVER}
SERVER=${2:?usage: $0 CLIENT SERVER}
for b in "$CLIENT" "$SERVER"; do
	[ -x "$b" ] || { echo "not executable: $b"; exit 1; }
done
command -v sha256sum >/dev/null || { echo "sha256sum missing"; exit 77; }

TMP=$(mktemp -d /tmp/dpq-ngtcp2-interop.XXXXXX) || exit 1
SERVER_PIDS=()
FAILS=0
PORT=
LAST_WALL=0

cleanup() {
	local p
	for p in "${SERVER_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${SERVER_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

ok() {
	echo "ok: $*"
}

# ---- content ------------------------------------------------------------
ROOT=$TMP/root
mkdir -p "$ROOT" "$TMP/out"
head -c $((50 * 1024 * 1024)) /dev/urandom > "$ROOT/big50m"
for i in 1 2 3 4 5 6; do
	head -c $((1024 * 1024)) /dev/urandom > "$ROOT/m$i"
done
for i in $(seq -w 1 13); do
	head -c 1024 /dev/urandom > "$ROOT/k$i"
done
echo "must not be served" > "$TMP/outside.txt"
ln -s "$TMP/outside.txt" "$ROOT/escape"

PATHS20=(/big50m /m1 /m2 /m3 /m4 /m5 /m6)
for i in $(seq -w 1 13); do
	PATHS20+=("/k$i")
done
[ ${#PATHS20[@]} -eq 20 ] || { echo "internal: need 20 paths"; exit 1; }

# ---- helpers ------------------------------------------------------------

# start_server NAME ADDR [options...]: sets PORT.
start_server() {
	local name=$1 addr=$2 i
	shift 2
	"$SERVER" --timeout 170 "$@" "$addr" 0 "$ROOT" \
		> "$TMP/$name.log" 2>&1 &
	SERVER_PIDS+=($!)
	eval "PID_$name=$!"
	for i in $(seq 1 100); do
		PORT=$(sed -n 's/^listening on .* port \([0-9]*\)$/\1/p' \
			"$TMP/$name.log")
		[ -n "$PORT" ] && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.05
	done
	echo "server $name did not start:"
	cat "$TMP/$name.log"
	exit 1
}

# run_client NAME EXPECTED_RC [client args...]
run_client() {
	local name=$1 want=$2 rc t0 t1
	shift 2
	t0=$(date +%s.%N)
	"$CLIENT" --timeout 60 "$@" > "$TMP/$name.out" 2> "$TMP/$name.err"
	rc=$?
	t1=$(date +%s.%N)
	LAST_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "-- $name: rc=$rc wall=${LAST_WALL}s" \
		"$(grep -E '^(handshake_ms|cipher|retry) ' "$TMP/$name.out" |
		   tr '\n' ' ')"
	grep -E '^total_bytes' "$TMP/$name.out" | sed 's/^/   /'
	if [ "$rc" -ne "$want" ]; then
		fail "$name exit code $rc, expected $want"
		sed 's/^/   stderr: /' "$TMP/$name.err" | tail -20
		return 1
	fi
	return 0
}

# expect_line NAME REGEX: the client output must contain a matching line.
expect_line() {
	if grep -Eq "$2" "$TMP/$1.out"; then
		ok "$1: /$2/"
	else
		fail "$1: no line matching /$2/"
		sed 's/^/   out: /' "$TMP/$1.out" | tail -30
	fi
}

# check_sha NAME PATH...: every PATH has a matching sha256 line.
check_sha() {
	local name=$1 p want got bad=0
	shift
	for p in "$@"; do
		want=$(sha256sum "$ROOT$p" | cut -d' ' -f1)
		got=$(awk -v p="$p" '$1 == "sha256" && $3 == p { print $2 }' \
			"$TMP/$name.out")
		if [ "$want" != "$got" ]; then
			fail "$name: sha256 of $p: got '$got' want '$want'"
			bad=1
		fi
	done
	[ $bad -eq 0 ] && ok "$name: sha256 of $# files match sha256sum"
}

# check_out DIR PATH...: the --out files are identical to the originals.
check_out() {
	local dir=$1 p bad=0
	shift
	for p in "$@"; do
		if ! cmp -s "$ROOT$p" "$dir/${p#/}"; then
			fail "--out file $dir/${p#/} differs from $ROOT$p"
			bad=1
		fi
	done
	[ $bad -eq 0 ] && ok "--out: $# files byte-identical"
}

# fast_fail NAME: the last client failed within 3 s (closed, not timed out).
fast_fail() {
	if awk -v w="$LAST_WALL" 'BEGIN { exit !(w < 3) }'; then
		ok "$1: failed fast (${LAST_WALL}s)"
	else
		fail "$1: took ${LAST_WALL}s, expected an immediate close"
	fi
}

# ---- server A: IPv4, all suites ------------------------------------------
start_server A 127.0.0.1
PA=$PORT
echo "server A on 127.0.0.1 port $PA"

# 20 concurrent streams on one connection, AES-128-GCM forced by the client.
if run_client a_aes128 0 --ciphers AES-128-GCM --sha256 --out "$TMP/out" \
	127.0.0.1 "$PA" "${PATHS20[@]}"; then
	expect_line a_aes128 '^cipher AES-128-GCM$'
	expect_line a_aes128 '^retry no$'
	expect_line a_aes128 '^files_ok 20/20 '
	check_sha a_aes128 "${PATHS20[@]}"
	check_out "$TMP/out" "${PATHS20[@]}"
fi
if [ "$(grep -c ' GET ' "$TMP/A.log")" -ne 20 ] ||
   [ "$(grep -c ' new from ' "$TMP/A.log")" -ne 1 ]; then
	fail "server A should log 1 connection with 20 requests"
else
	ok "server A: 20 requests on 1 connection"
fi

# Second connection to the same server, CHACHA20-POLY1305.
if run_client a_chacha 0 --ciphers CHACHA20-POLY1305 --sha256 \
	127.0.0.1 "$PA" "${PATHS20[@]}"; then
	expect_line a_chacha '^cipher CHACHA20-POLY1305$'
	check_sha a_chacha "${PATHS20[@]}"
fi

# Refused requests reset their stream; the good one on the same
# connection still completes.  Client exit 1 = some request failed.
run_client a_refuse 1 --sha256 127.0.0.1 "$PA" \
	/../outside.txt /escape /no-such-file /k01
expect_line a_refuse '^file /\.\./outside\.txt bytes 0 reset 0x10b$'
expect_line a_refuse '^file /escape bytes 0 reset 0x10b$'
expect_line a_refuse '^file /no-such-file bytes 0 reset 0x10c$'
expect_line a_refuse '^file /k01 bytes 1024 ok$'
check_sha a_refuse /k01

# Two clients at once on the same server.
"$CLIENT" --timeout 60 --sha256 127.0.0.1 "$PA" /m1 /m2 /k02 \
	> "$TMP/a_par1.out" 2> "$TMP/a_par1.err" &
P1=$!
"$CLIENT" --timeout 60 --sha256 127.0.0.1 "$PA" /m3 /m4 /k03 \
	> "$TMP/a_par2.out" 2> "$TMP/a_par2.err" &
P2=$!
wait $P1; R1=$?
wait $P2; R2=$?
if [ $R1 -eq 0 ] && [ $R2 -eq 0 ]; then
	ok "two parallel connections"
	check_sha a_par1 /m1 /m2 /k02
	check_sha a_par2 /m3 /m4 /k03
else
	fail "parallel clients exit $R1 / $R2"
	cat "$TMP/a_par1.err" "$TMP/a_par2.err"
fi

# ---- server B: IPv6, server forces AES-256-GCM, keylog ---------------------
start_server B ::1 --ciphers AES-256-GCM --keylog "$TMP/keylog-server.txt"
PB=$PORT
echo "server B on ::1 port $PB"
if run_client b_aes256 0 --sha256 --keylog "$TMP/keylog-client.txt" \
	::1 "$PB" "${PATHS20[@]}"; then
	expect_line b_aes256 '^cipher AES-256-GCM$'
	expect_line b_aes256 '^files_ok 20/20 '
	check_sha b_aes256 "${PATHS20[@]}"
fi
for f in keylog-client keylog-server; do
	n=$(grep -cE '^(CLIENT|SERVER)_(HANDSHAKE_TRAFFIC_SECRET|TRAFFIC_SECRET_0) [0-9a-f]{64} [0-9a-f]{96}$' \
		"$TMP/$f.txt" 2>/dev/null)
	if [ "${n:-0}" -eq 4 ]; then
		ok "$f: 4 SSLKEYLOGFILE secrets (SHA-384 suite)"
	else
		fail "$f: expected 4 traffic secret lines, got ${n:-0}"
	fi
done
if cmp -s <(sort "$TMP/keylog-client.txt" | grep -v EXPORTER) \
	  <(sort "$TMP/keylog-server.txt" | grep -v EXPORTER); then
	ok "client and server keylogs agree"
else
	fail "client and server keylogs differ"
fi
# A client that insists on another suite than the server's: no handshake,
# and the TLS alert must arrive at once (not an idle/handshake timeout).
run_client b_mismatch 3 --ciphers CHACHA20-POLY1305 ::1 "$PB" /k01
fast_fail b_mismatch

# ---- server C: Retry, certificate verification -----------------------------
start_server C ::1 --retry --cert-out "$TMP/cert.pem"
PC=$PORT
echo "server C (--retry) on ::1 port $PC"
if run_client c_retry 0 --sha256 --ciphers AES-256-GCM --ca "$TMP/cert.pem" \
	--sni localhost ::1 "$PC" /big50m /m5 /k04; then
	expect_line c_retry '^retry yes$'
	expect_line c_retry '^cipher AES-256-GCM$'
	check_sha c_retry /big50m /m5 /k04
fi
if grep -q 'retry token valid' "$TMP/C.log" &&
   grep -q '^retry sent to ' "$TMP/C.log"; then
	ok "server C sent a Retry and validated the token"
else
	fail "server C log lacks Retry / token validation"
fi
run_client c_badname 3 --ca "$TMP/cert.pem" --sni not-localhost \
	::1 "$PC" /k01
fast_fail c_badname

# ---- bounded run time, SIGTERM ------------------------------------------------
# Nobody listens on server A's port once A is gone: the client must give
# up by its own --timeout, not hang.
kill -TERM "$PID_A"
wait "$PID_A"
rc=$?
if [ $rc -eq 0 ] && grep -q '^server exiting: signal' "$TMP/A.log"; then
	ok "server A: SIGTERM -> exit 0"
else
	fail "server A exit $rc after SIGTERM"
	tail -5 "$TMP/A.log"
fi
t0=$(date +%s)
"$CLIENT" --timeout 2 127.0.0.1 "$PA" /k01 > "$TMP/dead.out" 2>&1
rc=$?
t1=$(date +%s)
if [ $rc -eq 4 ] && [ $((t1 - t0)) -le 4 ]; then
	ok "client without server: exit 4 after $((t1 - t0)) s"
else
	fail "client without server: exit $rc after $((t1 - t0)) s"
fi

for n in B C; do
	eval "pid=\$PID_$n"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	[ $rc -eq 0 ] || fail "server $n exit $rc after SIGTERM"
	if grep -qiE 'AddressSanitizer|runtime error:' "$TMP/$n.log"; then
		fail "sanitizer report in server $n log"
		grep -iE -A5 'AddressSanitizer|runtime error:' "$TMP/$n.log"
	fi
done
SERVER_PIDS=()
if grep -qiE 'AddressSanitizer|runtime error:' "$TMP"/*.err 2>/dev/null; then
	fail "sanitizer report in a client"
	grep -iE -A5 'AddressSanitizer|runtime error:' "$TMP"/*.err
fi

echo "--- server logs (tail) ---"
tail -n 4 "$TMP/A.log" "$TMP/B.log" "$TMP/C.log"
if [ $FAILS -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
exit 0
