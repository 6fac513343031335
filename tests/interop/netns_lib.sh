# SPDX-License-Identifier: BSD-3-Clause
#
# Shared helpers for the interop and e2e scripts (sourced, not run).
#
# Each script gets: a private temp dir ($TMP) and test content under
# $ROOT; network namespaces it creates with ns_add, deleted at exit;
# background processes it starts with bg_start, killed at exit; check
# helpers that count failures in $FAILS (DPQ_KEEP_TMP=1 keeps $TMP); dpquicd start-up on a net_tap
# device inside a namespace with every wait bounded.
#
# Addresses come only from 198.18.0.0/15 and 2001:db8::/32 (RFC 2544 /
# RFC 3849 ranges, never routed).

set -u

FAILS=0
BG_PIDS=()
NETNS=()
TMP=
ROOT=
LAST_WALL=0

require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: needs root (network namespaces, tap devices)"
		exit 77
	fi
	command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
	command -v sha256sum >/dev/null || { echo "SKIP: sha256sum missing"; exit 77; }
	command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
}

require_exec() {
	local b
	for b in "$@"; do
		[ -x "$b" ] || { echo "not executable: $b"; exit 1; }
	done
}

lib_cleanup() {
	local p n i
	for p in "${BG_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	# Bounded: a process that ignores SIGTERM gets SIGKILL after 5 s.
	for i in $(seq 1 50); do
		n=0
		for p in "${BG_PIDS[@]}"; do
			kill -0 "$p" 2>/dev/null && n=$((n + 1))
		done
		[ $n -eq 0 ] && break
		sleep 0.1
	done
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for n in "${NETNS[@]}"; do
		ip netns del "$n" 2>/dev/null
	done
	if [ -n "${DPQ_KEEP_TMP:-}" ]; then
		echo "kept $TMP (DPQ_KEEP_TMP)"
	elif [ -n "$TMP" ]; then
		rm -rf "$TMP"
	fi
}

# lib_init NAME: temp dir and traps. Also deletes namespaces left by an
# earlier run of these scripts that was SIGKILLed (meson's timeout): their
# names end in the pid of a script that no longer runs.
lib_init() {
	local n
	for n in $(ip netns list 2>/dev/null | awk '{ print $1 }' |
		grep -E '^dpq-[ei][0-9]-[0-9]+$'); do
		kill -0 "${n##*-}" 2>/dev/null || ip netns del "$n" 2>/dev/null
	done
	TMP=$(mktemp -d "/tmp/dpq-$1.XXXXXX") || exit 1
	trap lib_cleanup EXIT
	trap 'echo "interrupted"; exit 1' INT TERM
}

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

ok() {
	echo "ok: $*"
}

finish() {
	if [ $FAILS -ne 0 ]; then
		echo "$FAILS check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}

# ns_add NAME: a fresh namespace with lo up (a stale one is replaced).
ns_add() {
	ip netns del "$1" 2>/dev/null
	ip netns add "$1" || { echo "cannot create netns $1"; exit 1; }
	NETNS+=("$1")
	ip netns exec "$1" ip link set lo up
}

# dpquicd started by start_dpquicd_tap sleeps up to this many microseconds
# between empty polls (server.poll-sleep-us; empty: busy poll). The
# suites run on a 2-core machine shared with the clients, peers and
# sanitizers they test against: busy-polling shards there take both CPUs
# from threads that have work (seconds-long waits for a CPU were
# measured at load 10), which is what a dedicated server is for, not a
# test box. tests/e2e/test_poll_sleep.sh runs the busy-poll default.
DPQD_POLL_SLEEP_US=${DPQD_POLL_SLEEP_US-200}

# bg_start PIDVAR LOG cmd...: run in the background, remember the pid.
bg_start() {
	local var=$1 log=$2
	shift 2
	"$@" > "$log" 2>&1 &
	BG_PIDS+=($!)
	eval "$var=$!"
}

# bg_stop PID [TIMEOUT_S]: SIGTERM, wait at most TIMEOUT_S (20), then
# SIGKILL. Sets BG_RC to the exit status (or 137 when killed).
bg_stop() {
	local pid=$1 t=${2:-20} i
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 1 $((t * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "process $pid ignored SIGTERM for ${t}s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	BG_RC=$?
}

# make_content: $ROOT with 1 KB, 1 MB and 50 MB files and the 20-path set
# PATHS20 (one 50 MB, six 1 MB, thirteen 1 KB files).
make_content() {
	local i
	ROOT=$TMP/root
	mkdir -p "$ROOT"
	head -c 1024 /dev/urandom > "$ROOT/f1k"
	head -c $((1024 * 1024)) /dev/urandom > "$ROOT/f1m"
	head -c $((50 * 1024 * 1024)) /dev/urandom > "$ROOT/f50m"
	for i in 1 2 3 4 5 6; do
		head -c $((1024 * 1024)) /dev/urandom > "$ROOT/m$i"
	done
	for i in $(seq -w 1 13); do
		head -c 1024 /dev/urandom > "$ROOT/k$i"
	done
	PATHS20=(/f50m /m1 /m2 /m3 /m4 /m5 /m6)
	for i in $(seq -w 1 13); do
		PATHS20+=("/k$i")
	done
}

# run_timed NAME EXPECTED_RC cmd...: output in $TMP/NAME.out / .err,
# wall time in LAST_WALL. Returns 1 (and counts a failure) on another rc.
run_timed() {
	local name=$1 want=$2 rc t0 t1
	shift 2
	t0=$(date +%s.%N)
	"$@" > "$TMP/$name.out" 2> "$TMP/$name.err"
	rc=$?
	t1=$(date +%s.%N)
	LAST_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "-- $name: rc=$rc wall=${LAST_WALL}s" \
		"$(grep -E '^(handshake_ms|cipher|retry|total_bytes) ' \
			"$TMP/$name.out" | tr '\n' ' ')"
	if [ "$rc" -ne "$want" ]; then
		fail "$name exit code $rc, expected $want"
		sed 's/^/   out: /' "$TMP/$name.out" | tail -10
		sed 's/^/   err: /' "$TMP/$name.err" | tail -20
		return 1
	fi
	return 0
}

# expect_line NAME REGEX: $TMP/NAME.out has a matching line.
expect_line() {
	if grep -Eq "$2" "$TMP/$1.out"; then
		ok "$1: /$2/"
	else
		fail "$1: no line matching /$2/"
		sed 's/^/   out: /' "$TMP/$1.out" | tail -30
	fi
}

# check_sha NAME PATH...: each PATH has a "sha256 HEX PATH" line equal to
# sha256sum's digest of $ROOT/PATH, and a "file PATH bytes N ok" line.
check_sha() {
	local name=$1 p want got n bad=0
	shift
	for p in "$@"; do
		want=$(sha256sum "$ROOT$p" | cut -d' ' -f1)
		got=$(awk -v p="$p" '$1 == "sha256" && $3 == p { print $2 }' \
			"$TMP/$name.out")
		n=$(stat -c %s "$ROOT$p")
		if [ "$want" != "$got" ]; then
			fail "$name: sha256 of $p: got '$got' want '$want'"
			bad=1
		elif ! grep -Eq "^file $p bytes $n ok\$" "$TMP/$name.out"; then
			fail "$name: no 'file $p bytes $n ok' line"
			bad=1
		fi
	done
	if [ $bad -eq 0 ]; then
		ok "$name: sha256 of $# files match sha256sum"
	else
		sed 's/^/   out: /' "$TMP/$name.out" | tail -12
		sed 's/^/   err: /' "$TMP/$name.err" 2>/dev/null | tail -12
	fi
}

# no_sanitizer_report FILE...: no ASan/UBSan report in the given logs.
no_sanitizer_report() {
	if grep -qiE 'AddressSanitizer|LeakSanitizer|runtime error:' "$@" \
		2>/dev/null; then
		fail "sanitizer report in $*"
		grep -iE -A8 'AddressSanitizer|LeakSanitizer|runtime error:' \
			"$@" | head -40
	fi
}

# ---- dpquicd on net_tap ------------------------------------------------

# start_dpquicd_tap PIDVAR NS IFACE DADDR KADDR PREFIX LOG EAL_LCORES -- dpquicd-args...
# Starts dpquicd (binary $DPQUICD) in NS with a net_tap whose kernel side
# is IFACE; gives the kernel side KADDR/PREFIX once the tap exists and
# waits (bounded) for the "serving" line; then enters DADDR with
# dpquicd's MAC in the kernel's neighbour table (permanent).
# DPQD_SHCONF replaces the default --no-shconf (e.g. "--file-prefix=NAME"
# for DPDK's tools, which need the shared runtime directory), DPQD_MEM the
# default "--no-huge -m 512" (dpdk-dumpcap needs hugepages); DPQD_EXTRA
# adds dpquicd options to every start (by hand, to trace a run:
# DPQD_EXTRA="--qlog-dir /tmp/q --qlog-sample 1 --log-level debug").
start_dpquicd_tap() {
	local var=$1 ns=$2 ifc=$3 daddr=$4 kaddr=$5 plen=$6 log=$7 lcores=$8
	local i pid mac
	shift 8
	[ "$1" = "--" ] && shift
	bg_start pid "$log" ip netns exec "$ns" "$DPQUICD" ${DPQD_MEM:---no-huge -m 512} \
		${DPQD_SHCONF:---no-shconf} --no-pci -l "$lcores" --log-level='lib.*:error' \
		"--vdev=net_tap0,iface=$ifc" -- "$@" \
		${DPQD_POLL_SLEEP_US:+--poll-sleep-us "$DPQD_POLL_SLEEP_US"} \
		${DPQD_EXTRA:-}
	eval "$var=$pid"
	for i in $(seq 1 300); do
		ip netns exec "$ns" ip link show "$ifc" >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! ip netns exec "$ns" ip link show "$ifc" >/dev/null 2>&1; then
		echo "dpquicd did not create $ifc:"
		cat "$log"
		exit 1
	fi
	ip netns exec "$ns" ip addr add "$kaddr/$plen" dev "$ifc" nodad \
		2>/dev/null ||
		ip netns exec "$ns" ip addr add "$kaddr/$plen" dev "$ifc"
	ip netns exec "$ns" ip link set "$ifc" up
	for i in $(seq 1 300); do
		grep -q 'dpquicd: serving ' "$log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q 'dpquicd: serving ' "$log"; then
		echo "dpquicd did not start serving $daddr:"
		cat "$log"
		exit 1
	fi
	# dpquicd's MAC (its "port N: MAC" line) as a static neighbour entry:
	# on a loaded machine the kernel's ARP resolution sometimes gave up
	# (3 requests in 3 s) before dpquicd answered, and a client's first
	# sends failed with "no route to host". Neighbour resolution is not
	# what these tests are about (the netns suite tests it).
	mac=$(sed -n 's/.*dpq_dpdk: port [0-9]*: \([0-9A-Fa-f:]\{17\}\) .*/\1/p' \
		"$log" | tail -1)
	[ -n "$mac" ] && ip netns exec "$ns" ip neigh replace "$daddr" \
		lladdr "$mac" dev "$ifc" nud permanent
}

# ctl_stats NS SOCK OUTFILE: dpquic-ctl stats as JSON in OUTFILE.
ctl_stats() {
	if ! ip netns exec "$1" timeout 10 "$DPQUIC_CTL" -j -s "$2" stats \
		> "$3" 2> "$3.err"; then
		fail "dpquic-ctl stats failed: $(cat "$3.err")"
		return 1
	fi
	return 0
}

# stats_settled NS SOCK OUTFILE [SECONDS]: dpquic-ctl stats as JSON in
# OUTFILE once no connection is left: a connection's counters are added
# at its close, after its draining period (3 PTO, RFC 9000 §10.2).
# Bounded by time (60 s by default: on a loaded machine a shard may wait
# seconds for its CPU, and the PTO grows with the RTT variance); a
# request that fails is tried again within the bound. Returns 0 with the
# last stats read (connections may remain: the checks that follow say
# what is missing), 1 after a FAIL line when no stats came at all.
stats_settled() {
	local ns=$1 sock=$2 out=$3 until=$((SECONDS + ${4:-60})) got=1
	while :; do
		if ip netns exec "$ns" timeout 60 "$DPQUIC_CTL" -j -s "$sock" \
			stats > "$out.new" 2> "$out.err"; then
			mv "$out.new" "$out"
			got=0
			[ "$(json_get "$out" \
				"sum(x['connections'] for x in s['shards'])")" = 0 ] &&
				return 0
		fi
		[ $SECONDS -ge $until ] && break
		sleep 0.2
	done
	[ $got -eq 0 ] && return 0
	fail "dpquic-ctl stats failed: $(cat "$out.err")"
	return 1
}

# json_get FILE PYEXPR: evaluates PYEXPR with s = the parsed JSON (e.g.
# "sum(x['handshakes'] for x in s['shards'])") and prints the result.
json_get() {
	python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$1" "$2"
}

# check_json FILE PYEXPR DESCRIPTION: PYEXPR must be true.
check_json() {
	local r
	r=$(json_get "$1" "$2" 2>&1)
	if [ "$r" = "True" ]; then
		ok "$3"
	else
		fail "$3: ($2) is $r"
	fi
}
