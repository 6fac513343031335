#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquicd under systemd, without systemd running it:
#   A. the unit (dist/dpquicd.service.in with this build's paths) passes
#      `systemd-analyze verify`;
#   B. the Type=notify protocol: with NOTIFY_SOCKET pointing at a socket
#      this test reads, dpquicd sends READY=1 once serving, RELOADING=1
#      then READY=1 around a SIGHUP, STOPPING=1 on SIGTERM, and exits 0;
#   C. EAL failures for want of hugepages are explained: a --huge-dir
#      that is no hugetlbfs mount is named as such (exit 3); with no free
#      hugepages on the machine (checked first), the message says how to
#      reserve them.
# DPDK runs on net_null (no network), --no-shconf or its own prefix.
#
#   test_systemd.sh DPQUICD UNIT_TEMPLATE
DPQUICD=${1:?usage: $0 DPQUICD UNIT_TEMPLATE}
UNIT=${2:?}
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (DPDK EAL)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
TMP=$(mktemp -d /tmp/dpq-systemd.XXXXXX) || exit 1
PID=
cleanup() {
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	[ -n "${LPID:-}" ] && kill "$LPID" 2>/dev/null
	rm -rf "$TMP" "/var/run/dpdk/dpq-sd-$$"
}
trap cleanup EXIT
mkdir -p "$TMP/www" "$TMP/etc/dpquic"
DPQUICD=$(readlink -f "$DPQUICD")

# ---- A: the unit ------------------------------------------------------
sed -e "s#@BINDIR@#$(dirname "$DPQUICD")#g" -e "s#@SYSCONFDIR@#$TMP/etc#g" \
	-e "s#@DOCDIR@#$TMP#g" -e "s#@UNITDIR@#$TMP#g" "$UNIT" \
	> "$TMP/dpquicd.service"
grep -q @ "$TMP/dpquicd.service" && fail "unit: unsubstituted @VAR@"
if command -v systemd-analyze >/dev/null; then
	if SYSTEMD_LOG_LEVEL=warning systemd-analyze verify \
		"$TMP/dpquicd.service" > "$TMP/verify.out" 2>&1 &&
	   ! grep -q "dpquicd.service" "$TMP/verify.out"; then
		ok "systemd-analyze verify: the unit is clean"
	else
		fail "systemd-analyze verify:"
		cat "$TMP/verify.out"
	fi
else
	echo "(systemd-analyze missing: unit not verified)"
fi
grep -q '^Type=notify$' "$TMP/dpquicd.service" &&
	grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$TMP/dpquicd.service" &&
	ok "unit: Type=notify, reload by SIGHUP" || fail "unit: type or reload"

# ---- B: sd_notify -----------------------------------------------------
python3 - "$TMP/notify" > "$TMP/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(120)
print('listening', flush=True)
try:
    while True:
        m = s.recv(4096).decode()
        for l in m.split('\n'):
            print(l, flush=True)
except socket.timeout:
    pass
PY
LPID=$!
for i in $(seq 1 100); do
	grep -q listening "$TMP/notify.log" && break
	sleep 0.1
done
# wait_msg TEXT N: the N-th line TEXT in the notify log, bounded (60 s).
wait_msg() {
	local i
	for i in $(seq 1 600); do
		[ "$(grep -c "^$1\$" "$TMP/notify.log")" -ge "$2" ] && return 0
		kill -0 "$PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
NOTIFY_SOCKET=$TMP/notify "$DPQUICD" --no-huge --no-shconf --no-pci -m 256 \
	-l 0 --vdev=net_null0 --log-level='lib.*:error' -- \
	--addr 198.18.0.2:4433 --root "$TMP/www" --ctl "$TMP/d.sock" \
	> "$TMP/d.log" 2>&1 &
PID=$!
if wait_msg READY=1 1; then
	grep -q 'dpquicd: serving' "$TMP/d.log" &&
		ok "READY=1 after \"serving\"" ||
		fail "READY=1 before the daemon said serving"
	kill -HUP "$PID"
	wait_msg RELOADING=1 1 && wait_msg READY=1 2 &&
		ok "SIGHUP: RELOADING=1 then READY=1" ||
		fail "SIGHUP: no RELOADING=1/READY=1 ($(tr '\n' ' ' < "$TMP/notify.log"))"
	kill -TERM "$PID"
	wait_msg STOPPING=1 1 && ok "SIGTERM: STOPPING=1" ||
		fail "SIGTERM: no STOPPING=1"
	for i in $(seq 1 300); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$PID"
	rc=$?
	PID=
	[ "$rc" -eq 0 ] && ok "exit 0 after SIGTERM" || fail "exit $rc after SIGTERM"
else
	fail "no READY=1 from dpquicd"
	cat "$TMP/d.log"
fi

# ---- C: hugepages ---------------------------------------------------------
mkdir -p "$TMP/nohuge"
"$DPQUICD" --huge-dir="$TMP/nohuge" --file-prefix=dpq-sd-$$ --no-pci -l 0 \
	--vdev=net_null0 -- --addr 198.18.0.2:4433 --root "$TMP/www" --ctl "" \
	> "$TMP/h1.log" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && grep -q "huge-dir $TMP/nohuge (config: eal.huge-dir) is not a hugetlbfs mount" "$TMP/h1.log"; then
	ok "--huge-dir without hugetlbfs: named, exit 3"
else
	fail "--huge-dir without hugetlbfs: exit $rc"
	tail -5 "$TMP/h1.log"
fi
free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
if [ "${free:-1}" -eq 0 ]; then
	"$DPQUICD" --file-prefix=dpq-sd-$$ --no-pci -l 0 --vdev=net_null0 -- \
		--addr 198.18.0.2:4433 --root "$TMP/www" --ctl "" \
		> "$TMP/h2.log" 2>&1
	rc=$?
	if [ "$rc" -eq 3 ] && grep -q "DPDK found no usable hugepages" "$TMP/h2.log" &&
	   grep -q "nr_hugepages" "$TMP/h2.log"; then
		ok "no hugepages: explained with how to reserve them, exit 3"
	else
		fail "no hugepages: exit $rc"
		tail -8 "$TMP/h2.log"
	fi
else
	echo "(this machine has $free free hugepages: the no-hugepage message is not tried)"
fi

if [ $FAILS -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
