#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# server.poll-sleep-us: an idle dpquicd stops burning its CPUs, and still
# serves.
#
#   test_poll_sleep.sh DPQUICD DPQUIC_CLIENT
#
# dpquicd with two shards (a worker lcore and the main one) on a net_tap
# in a namespace, run twice: busy-polling (the default) and with
# --poll-sleep-us 200. Each run fetches 1 MB and 10 fresh 13-byte files
# with dpquic-client (sha256 checked), then sits idle for 3 s while the
# CPU time of the whole process (/proc/PID/stat utime + stime) is read.
# Proves: both runs serve every file intact; the sleeping daemon used
# less than a quarter of the busy one's CPU time while idle (both
# measured in the same run, so a loaded machine slows both; the busy one
# spins two threads, the sleeping one wakes a few thousand times a
# second), and it says at exit that its shards slept. The figures and the
# fetch times are printed, not asserted (the machine is shared).
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CLIENT}
DPQUIC_CLIENT=${2:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CLIENT"
lib_init pollsleep
ROOT=$TMP/root
mkdir -p "$ROOT"
printf 'hello, world\n' > "$ROOT/hello"
head -c $((1024 * 1024)) /dev/urandom > "$ROOT/f1m"

NS=dpq-e9-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
HZ=$(getconf CLK_TCK)

cpu_ticks() {	# utime + stime of process $1, in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# run NAME [dpquicd options]: start, fetch, measure 3 s idle, stop.
run() {
	local name=$1 c0 c1 i times=()
	shift
	# The test sets the option itself: none from netns_lib.
	DPQD_POLL_SLEEP_US= start_dpquicd_tap PDQ "$NS" dpqs0 "$DADDR" \
		"$KADDR" 24 "$TMP/$name.log" 0,1 -- --addr "$DADDR:4433" \
		--root "$ROOT" --shards 2 --allow-no-rss --duration 120 "$@"
	if run_timed "$name-1m" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" \
		--timeout 30 --sha256 "$DADDR:4433" /f1m; then
		check_sha "$name-1m" /f1m >/dev/null
	fi
	for i in $(seq 1 10); do
		run_timed "$name-h$i" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" \
			--timeout 20 --sha256 "$DADDR:4433" /hello || continue
		check_sha "$name-h$i" /hello >/dev/null
		times+=("$(awk '$1 == "total_bytes" { for (k = 1; k < NF; k++)
			if ($k == "transfer_ms") print $(k + 1) }' \
			"$TMP/$name-h$i.out")")
	done
	echo "   $name: transfer_ms of 10 fresh fetches: ${times[*]}"
	sleep 0.5
	c0=$(cpu_ticks "$PDQ")
	sleep 3
	c1=$(cpu_ticks "$PDQ")
	IDLE_TICKS=$((c1 - c0))
	echo "   $name: CPU time while idle 3 s:" \
		"$(awk -v t="$IDLE_TICKS" -v hz="$HZ" \
		'BEGIN { printf "%.2f s", t / hz }')"
	bg_stop "$PDQ"
	[ "$BG_RC" -eq 0 ] || fail "$name: dpquicd exit $BG_RC after SIGTERM"
}

run busy
BUSY=$IDLE_TICKS
run sleep --poll-sleep-us 200
SLEEP=$IDLE_TICKS

if [ "$BUSY" -gt 0 ] && [ $((SLEEP * 4)) -lt "$BUSY" ]; then
	ok "idle CPU: $SLEEP ticks with --poll-sleep-us 200 against $BUSY" \
		"busy-polling (less than a quarter)"
else
	fail "idle CPU: $SLEEP ticks with --poll-sleep-us 200 against $BUSY" \
		"busy-polling: expected less than a quarter"
fi
n=$(grep -c 'poll-sleep: slept [1-9][0-9]* times' "$TMP/sleep.log")
if [ "$n" -eq 2 ]; then
	ok "both shards say they slept"
else
	fail "$n of 2 shards say they slept:"
	grep 'poll-sleep' "$TMP/sleep.log"
fi
if grep -q 'poll-sleep:' "$TMP/busy.log"; then
	fail "the busy-polling daemon reports sleeps"
fi
grep 'poll-sleep:' "$TMP/sleep.log" | sed 's/^/   /'
no_sanitizer_report "$TMP/busy.log" "$TMP/sleep.log" "$TMP"/*.err
finish
