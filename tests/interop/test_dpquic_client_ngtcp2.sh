#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquic-client -> ngtcp2 server (code nobody here wrote), kernel UDP,
# inside a network namespace (addresses on its loopback device).
#
#   test_dpquic_client_ngtcp2.sh DPQUIC_CLIENT NGTCP2_SERVER
#
# Proves: dpquic-client fetches 1 KB, 1 MB and 50 MB files and 20
# concurrent streams on one connection from ngtcp2, every sha256 equal to
# sha256sum's; each TLS 1.3 suite is negotiated when dpquic-client forces
# it (cipher codes 0x1301/0x1302/0x1303 on its output); over IPv4 and IPv6;
# against "ngtcp2-hq-server --retry" dpquic-client follows the Retry (the
# server logs that it sent a Retry and validated the token the client
# echoed) and completes; moving to a new port mid-download (RFC 9000
# §9.2) completes on the same connection; the server logs one connection
# per client run.
# Failures say why (server C): an ALPN the server does not speak gets
# "TLS alert 120 no_application_protocol" and what to do; --verify
# against its self-signed certificate gets "the handshake failed here"
# with the alert and the hint about --ca; both with the bytes of each
# file ("file /f1k bytes 0 aborted").
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/netns_lib.sh"

DPQUIC_CLIENT=${1:?usage: $0 DPQUIC_CLIENT NGTCP2_SERVER}
NGSERVER=${2:?}
require_root
require_exec "$DPQUIC_CLIENT" "$NGSERVER"
lib_init dpquic-cli-ngtcp2
make_content

NS=dpq-i2-$$
ns_add "$NS"
A4=198.18.1.1
A6=2001:db8:1::1
ip netns exec "$NS" ip addr add "$A4/32" dev lo
ip netns exec "$NS" ip addr add "$A6/128" dev lo nodad

# start_ngserver NAME ADDR [options]: sets PORT.
start_ngserver() {
	local name=$1 addr=$2 i pid
	shift 2
	bg_start pid "$TMP/$name.log" ip netns exec "$NS" "$NGSERVER" \
		--timeout 170 "$@" "$addr" 0 "$ROOT"
	eval "PID_$name=$pid"
	PORT=
	for i in $(seq 1 100); do
		PORT=$(sed -n 's/^listening on .* port \([0-9]*\)$/\1/p' \
			"$TMP/$name.log")
		[ -n "$PORT" ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "ngtcp2 server $name did not start:"
	cat "$TMP/$name.log"
	exit 1
}

# dqc NAME RC [client args...]: dpquic-client inside the namespace.
dqc() {
	local name=$1 want=$2
	shift 2
	run_timed "$name" "$want" ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--timeout 60 "$@"
}

# ---- server A: IPv4, client picks each suite --------------------------
start_ngserver A "$A4"
PA=$PORT
echo "ngtcp2 server A on $A4 port $PA"

if dqc c_aes128_20 0 --sha256 --ciphers AES-128-GCM "$A4:$PA" \
	"${PATHS20[@]}"; then
	expect_line c_aes128_20 '^handshake_ms [0-9.]+ cipher 0x1301 '
	expect_line c_aes128_20 '^files_ok 20/20$'
	check_sha c_aes128_20 "${PATHS20[@]}"
fi
if dqc c_aes256 0 --sha256 --ciphers AES-256-GCM "$A4:$PA" \
	/f1k /f1m /f50m; then
	expect_line c_aes256 '^handshake_ms [0-9.]+ cipher 0x1302 '
	expect_line c_aes256 '^files_ok 3/3$'
	check_sha c_aes256 /f1k /f1m /f50m
fi
if dqc c_chacha_20 0 --sha256 --ciphers CHACHA20-POLY1305 "$A4:$PA" \
	"${PATHS20[@]}"; then
	expect_line c_chacha_20 '^handshake_ms [0-9.]+ cipher 0x1303 '
	expect_line c_chacha_20 '^files_ok 20/20$'
	check_sha c_chacha_20 "${PATHS20[@]}"
fi
# --out writes byte-identical files.
mkdir -p "$TMP/out"
if dqc c_out 0 --out "$TMP/out" "$A4:$PA" /f1k /f1m; then
	if cmp -s "$ROOT/f1k" "$TMP/out/f1k" &&
	   cmp -s "$ROOT/f1m" "$TMP/out/f1m"; then
		ok "c_out: --out files byte-identical"
	else
		fail "c_out: --out files differ (ls: $(ls "$TMP/out" | tr '\n' ' '))"
	fi
fi
# RFC 9000 §9.2: dpquic-client moves to a new port mid-download, with a
# connection ID ngtcp2 issued; ngtcp2 validates the new path.
if dqc c_migrate 0 --sha256 --migrate-after 1000000 "$A4:$PA" /f50m; then
	check_sha c_migrate /f50m
	if grep -Eq "^dpquic-client: migrated from $A4:[0-9]+ to $A4:[0-9]+\$" \
		"$TMP/c_migrate.err"; then
		ok "c_migrate: moved to a new port"
	else
		fail "c_migrate: no 'migrated' line: $(cat "$TMP/c_migrate.err")"
	fi
	expect_line c_migrate '^migrations 1 paths_validated [1-9]'
fi
n=$(grep -c ' new from ' "$TMP/A.log")
if [ "$n" -eq 5 ]; then
	ok "server A: 5 connections"
else
	fail "server A logged $n connections, expected 5"
fi
n=$(grep -c ' GET ' "$TMP/A.log")
if [ "$n" -eq 46 ]; then
	ok "server A: 46 requests"
else
	fail "server A logged $n requests, expected 46"
fi

# ---- server B: IPv6, Retry ----------------------------------------------
start_ngserver B "$A6" --retry
PB=$PORT
echo "ngtcp2 server B (--retry) on $A6 port $PB"
if dqc c_retry 0 --sha256 --ciphers AES-256-GCM "[$A6]:$PB" \
	/f1k /f1m /f50m; then
	expect_line c_retry '^handshake_ms [0-9.]+ cipher 0x1302 '
	check_sha c_retry /f1k /f1m /f50m
fi
if dqc c_retry_chacha 0 --sha256 --ciphers CHACHA20-POLY1305 \
	"[$A6]:$PB" "${PATHS20[@]}"; then
	expect_line c_retry_chacha '^handshake_ms [0-9.]+ cipher 0x1303 '
	check_sha c_retry_chacha "${PATHS20[@]}"
fi
n1=$(grep -c '^retry sent to ' "$TMP/B.log")
n2=$(grep -c 'retry token valid' "$TMP/B.log")
# dpquic-client sends its ClientHello twice by default (speculative
# retransmission, docs/fec.md §11): a copy that reaches the server before
# the client took the Retry gets a Retry of its own.
if [ "$n1" -ge 2 ] && [ "$n1" -le 4 ] && [ "$n2" -eq 2 ]; then
	ok "server B: $n1 Retries sent, 2 tokens echoed and valid"
else
	fail "server B: $n1 Retries sent, $n2 valid tokens (expected 2/2)"
	sed 's/^/   B: /' "$TMP/B.log" | head -20
fi

# ---- server C: failures the client explains ---------------------------
start_ngserver C "$A4"
PC=$PORT
if dqc c_alpn 1 --alpn nope "$A4:$PC" /f1k; then
	if grep -q '^dpquic-client: the server closed the connection: TLS alert 120 no_application_protocol (CRYPTO_ERROR 0x178).* (the server does not speak ALPN "nope": try --alpn with one it offers)$' "$TMP/c_alpn.err"; then
		ok "c_alpn: $(cat "$TMP/c_alpn.err")"
	else
		fail "c_alpn: $(cat "$TMP/c_alpn.err")"
	fi
	expect_line c_alpn '^file /f1k bytes 0 (aborted|incomplete)$'
fi
if dqc c_verify 1 --verify "$A4:$PC" /f1k; then
	if grep -q '^dpquic-client: the handshake failed here: TLS alert 4[2-8] [a-z_]* (CRYPTO_ERROR 0x1[0-9a-f]*).* (the server.s certificate did not verify: give its CA with --ca FILE' "$TMP/c_verify.err"; then
		ok "c_verify: $(cat "$TMP/c_verify.err")"
	else
		fail "c_verify: $(cat "$TMP/c_verify.err")"
	fi
	expect_line c_verify '^file /f1k bytes 0 (aborted|incomplete)$'
fi
bg_stop "$PID_C"

for n in A B; do
	eval "pid=\$PID_$n"
	bg_stop "$pid"
	[ "$BG_RC" -eq 0 ] || fail "ngtcp2 server $n exit $BG_RC after SIGTERM"
	if grep -qE 'error [^0]|error 0x[1-9]|failed' "$TMP/$n.log"; then
		fail "ngtcp2 server $n logged an error close or failure:"
		grep -E 'error [^0]|error 0x[1-9]|failed' "$TMP/$n.log" | head -5
	fi
done
no_sanitizer_report "$TMP"/*.err

grep -H '^total_bytes' "$TMP"/*.out | sed "s|^$TMP/||; s/^/goodput: /"
finish
