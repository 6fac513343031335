#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquicd's counters read back with DPDK's own telemetry client, Debian's
# dpdk-telemetry.py (package dpdk-dev), fed commands on stdin, and
# compared with `dpquic-ctl stats`: both come from one table
# (control/dpquicd/stats.c), so they must name and count the same.
#
#   test_telemetry.sh DPQUICD DPQUIC_CTL DPQUIC_CLIENT
#
# dpquicd runs 2 shards on a net_tap port in a namespace, with its own
# --file-prefix (a shared runtime directory, not --no-shconf: that is
# where the telemetry socket lives). Four clients fetch a file, one asks
# for a missing one. Proves: /dpquic/info, /dpquic/shard,N, /dpquic/stats,
# /dpquic/port, /dpquic/mgmt answer through dpdk-telemetry.py; their
# handshake and hq-interop counts match what the clients did; each
# shard's telemetry dictionary has exactly the control socket's counters
# (nested groups flattened as group_name) with the same values; the
# totals are the shards' sums; a bad shard number gets no data; DPDK's
# own /ethdev/stats,0 is there too; each shard has the memory budget
# --mem-budget-mib gave.
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/../interop/netns_lib.sh"

DPQUICD=${1:?usage: $0 DPQUICD DPQUIC_CTL DPQUIC_CLIENT}
DPQUIC_CTL=${2:?}
DPQUIC_CLIENT=${3:?}
require_root
require_exec "$DPQUICD" "$DPQUIC_CTL" "$DPQUIC_CLIENT"
TEL=$(command -v dpdk-telemetry.py) ||
	{ echo "SKIP: dpdk-telemetry.py missing (package dpdk-dev)"; exit 77; }
lib_init telemetry
ROOT=$TMP/root
mkdir -p "$ROOT"
head -c 4096 /dev/urandom > "$ROOT/f4k"

NS=dpq-e6-$$
ns_add "$NS"
DADDR=198.18.0.2
KADDR=198.18.0.1
PREFIX=dpq-tel-$$
SOCK=$TMP/d.sock
DPQD_SHCONF="--file-prefix=$PREFIX"
start_dpquicd_tap PD "$NS" dpqt0 "$DADDR" "$KADDR" 24 "$TMP/d.log" 0,1 -- \
	--addr "$DADDR:4433" --root "$ROOT" --ctl "$SOCK" \
	--shards 2 --allow-no-rss --duration 120 --mem-budget-mib 64
# EAL removes its runtime directory at exit; a killed daemon leaves it.
trap 'lib_cleanup; rm -rf "/var/run/dpdk/$PREFIX"' EXIT

for i in 1 2 3 4; do
	run_timed "c$i" 0 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 30 \
		--sha256 "$DADDR:4433" /f4k && check_sha "c$i" /f4k
done
run_timed c404 1 ip netns exec "$NS" "$DPQUIC_CLIENT" --timeout 30 \
	"$DADDR:4433" /missing

# Quiet: no connection left (the closing periods end within seconds),
# so the counters stand still while both tools read them.
for i in $(seq 1 200); do
	ip netns exec "$NS" timeout 10 "$DPQUIC_CTL" -j -s "$SOCK" status \
		> "$TMP/status.json" 2>/dev/null &&
		[ "$(json_get "$TMP/status.json" "s['connections']")" = 0 ] && break
	sleep 0.1
done
ip netns exec "$NS" timeout 10 "$DPQUIC_CTL" -j -s "$SOCK" stats \
	> "$TMP/stats.json" 2> "$TMP/stats.err" ||
	fail "dpquic-ctl stats: $(cat "$TMP/stats.err")"

printf '%s\n' /dpquic/info /dpquic/shard,0 /dpquic/shard,1 /dpquic/stats \
	/dpquic/port /dpquic/mgmt /dpquic/shard,2 /dpquic/shard,x \
	/ethdev/stats,0 quit |
	timeout 30 python3 "$TEL" -f "$PREFIX" > "$TMP/tel.out" 2> "$TMP/tel.err"
rc=$?
[ "$rc" -eq 0 ] || fail "dpdk-telemetry.py exit $rc: $(cat "$TMP/tel.err")"
echo "--- dpdk-telemetry.py said:"
cut -c1-200 "$TMP/tel.out"

python3 - "$TMP/tel.out" "$TMP/stats.json" > "$TMP/check.out" <<'PY'
import json, sys

tel = {}
shards = []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith('{'):
        continue
    d = json.loads(line)
    (cmd, val), = d.items()
    if cmd == '/dpquic/shard':
        shards.append(val)
    else:
        tel[cmd] = val
ctl = json.load(open(sys.argv[2]))
fails = 0

def check(cond, what):
    global fails
    print(('ok: ' if cond else 'FAIL: ') + what)
    if not cond:
        fails += 1

def flat(o):
    out = {}
    for k, v in o.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                out[k + '_' + k2] = v2
        else:
            out[k] = v
    return out

check(len(shards) == 4, 'four /dpquic/shard answers (%d)' % len(shards))
info = tel.get('/dpquic/info') or {}
check(info.get('state') == 'serving' and info.get('shards') == 2 and
      info.get('version', '').startswith('dpquic '),
      '/dpquic/info: serving, 2 shards, version (%s)' % info)
if len(shards) == 4:
    check(shards[2] is None and shards[3] is None,
          '/dpquic/shard,2 and /dpquic/shard,x: no data (%s, %s)'
          % (shards[2], shards[3]))
    for i in (0, 1):
        t, c = shards[i], flat(ctl['shards'][i])
        check(t is not None and set(t) == set(c),
              'shard %d: telemetry names = control socket names (%d keys)%s'
              % (i, len(c), '' if t is None or set(t) == set(c) else
                 ' differ: %s' % sorted(set(t) ^ set(c))))
        check(c.get('mem_budget') == 64 << 20,
              'shard %d: mem_budget %s (--mem-budget-mib 64)'
              % (i, c.get('mem_budget')))
        if t is None:
            continue
        diff = [k for k in c if k in t and t[k] != c[k]
                and not k.startswith('mem_')]
        check(not diff, 'shard %d: same values (%s)' % (i, diff or
              'handshakes %d, hq_ok_200 %d' % (t['handshakes'],
                                              t['hq_ok_200'])))
    tot = tel.get('/dpquic/stats') or {}
    for k in ('handshakes', 'hq_ok_200', 'hq_not_found_404', 'hq_requests',
              'connections_created', 'rx_packets', 'tx_bytes',
              'mgmt_handshakes_ok'):
        s = sum(shards[i][k] for i in (0, 1) if shards[i])
        check(tot.get(k) == s, '/dpquic/stats %s = sum of shards (%s = %d)'
              % (k, tot.get(k), s))
    check(tot.get('handshakes') == 5, 'five handshakes (%s)'
          % tot.get('handshakes'))
    check(tot.get('hq_ok_200') == 4 and tot.get('hq_not_found_404') == 1,
          'hq answers: 4 x 200, 1 x 404 (%s, %s)'
          % (tot.get('hq_ok_200'), tot.get('hq_not_found_404')))
    check(tot.get('hq_bytes_served') == 4 * 4096,
          'hq bytes served %s' % tot.get('hq_bytes_served'))
port = tel.get('/dpquic/port') or {}
check(port.get('rx_packets', 0) >= 10 and port.get('tx_packets', 0) >= 10,
      '/dpquic/port: packets both ways (%s / %s)'
      % (port.get('rx_packets'), port.get('tx_packets')))
check(port.get('tx_packets') == ctl['port']['tx_packets'] or
      port.get('tx_packets', 0) >= ctl['port']['tx_packets'],
      '/dpquic/port tx_packets agrees with stats (%s, %s)'
      % (port.get('tx_packets'), ctl['port']['tx_packets']))
mg = tel.get('/dpquic/mgmt') or {}
check(mg.get('channels') == 2 and mg.get('handshakes_ok') == 5 and
      mg.get('handshakes_active') == 0,
      '/dpquic/mgmt: 2 channels, 5 handshakes ok, none active (%s)' % mg)
eth = tel.get('/ethdev/stats') or {}
check(eth.get('ipackets', 0) >= 10,
      "DPDK's own /ethdev/stats,0 (ipackets %s)" % eth.get('ipackets'))
sys.exit(1 if fails else 0)
PY
rc=$?
cat "$TMP/check.out"
if [ "$rc" -ne 0 ]; then
	n=$(grep -c '^FAIL' "$TMP/check.out")
	FAILS=$((FAILS + (n > 0 ? n : 1)))
fi

bg_stop "$PD"
[ "$BG_RC" -eq 0 ] || fail "dpquicd exit $BG_RC after SIGTERM"
[ -e "/var/run/dpdk/$PREFIX/dpdk_telemetry.v2" ] &&
	fail "telemetry socket left behind after exit"
finish
