#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpquicd's command line and config file, as a new user meets them: each
# mistake gets exit code 2 (bad configuration) and one message that
# names the option, or the file, line and key, and says what is allowed;
# --help prints the daemon's own options; --check accepts a good file.
# Everything here fails (or stops) before EAL starts: no root needed.
#
#   test_config_errors.sh DPQUICD
DPQUICD=${1:?usage: $0 DPQUICD}
TMP=$(mktemp -d /tmp/dpq-conf.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# expect NAME RC REGEX -- dpquicd args: exit code RC and stderr or stdout
# matching REGEX (extended).
expect() {
	local name=$1 want=$2 re=$3 rc
	shift 4
	"$DPQUICD" "$@" > "$TMP/out" 2> "$TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name: exit $rc, expected $want"
		sed 's/^/   /' "$TMP/out" "$TMP/err" | head -5
	elif ! grep -Eq -- "$re" "$TMP/out" "$TMP/err"; then
		fail "$name: no message matching /$re/"
		sed 's/^/   /' "$TMP/out" "$TMP/err" | head -5
	else
		echo "ok: $name: exit $rc: $(head -1 "$TMP/err" "$TMP/out" 2>/dev/null | grep -v '^==>' | grep -v '^$' | head -1)"
	fi
}

mkdir -p "$TMP/www"
A=(--addr 198.18.0.2:4433 --root "$TMP/www")

expect help 0 '--shards N +dataplane shards' -- --help
expect help-config 0 'config file section "server"' -- --help
expect version 0 '^dpquic [0-9]' -- --version
expect shards-2x 2 '^dpquicd: --shards "2x": expected an integer 1\.\.16$' -- "${A[@]}" --shards 2x
expect shards-0 2 '--shards "0": expected an integer 1\.\.16' -- "${A[@]}" --shards 0
expect shards-huge 2 'expected an integer 1\.\.16' -- "${A[@]}" --shards 99999999999999999999999
expect duration-abc 2 '--duration "abc": expected a number of seconds' -- "${A[@]}" --duration abc
expect duration-inf 2 '--duration "inf"' -- "${A[@]}" --duration inf
expect mem-budget-0 2 '--mem-budget-mib "0": expected an integer 16\.\.1048576' -- "${A[@]}" --mem-budget-mib 0
expect mem-budget-huge 2 '--mem-budget-mib "2000000": expected an integer 16\.\.1048576' -- "${A[@]}" --mem-budget-mib 2000000
expect mem-budget-unit 2 '--mem-budget-mib "256M": expected an integer' -- "${A[@]}" --mem-budget-mib 256M
expect poll-sleep-huge 2 '--poll-sleep-us "10001": expected an integer 0\.\.10000' -- "${A[@]}" --poll-sleep-us 10001
expect poll-sleep-neg 2 '--poll-sleep-us "-5": expected an integer 0\.\.10000' -- "${A[@]}" --poll-sleep-us -5
expect port-id 2 '--port-id "-1": expected an integer 0\.\.1023' -- "${A[@]}" --port-id -1
expect addr 2 '--addr "198.18.0.2": expected IP:PORT' -- --addr 198.18.0.2 --root "$TMP/www"
expect retry 2 '--retry "rate:0": expected auto, never, always or rate:N' -- "${A[@]}" --retry rate:0
expect cc 2 '--cc "cubicx": unknown congestion controller \(known: newreno' -- "${A[@]}" --cc cubicx
expect no-addr 2 'no address to serve on: give --addr IP:PORT' -- --root "$TMP/www"
expect no-root 2 'no directory to serve: give --root DIR' -- --addr 198.18.0.2:4433
expect root-missing 2 'server.root \(--root\) /nonexistent-dpq: No such file' -- --addr 198.18.0.2:4433 --root /nonexistent-dpq
expect cert-alone 2 'tls.cert \(--cert\) and tls.key \(--key\) go together' -- "${A[@]}" --cert /etc/hostname
expect eal-option 2 '--no-huge is an EAL option: EAL arguments go before "--"' -- "${A[@]}" --no-huge
expect unknown-option 2 'unknown option --shardz ' -- "${A[@]}" --shardz 2
expect missing-value 2 '--shards needs a value' -- "${A[@]}" --shards
expect stray-arg 2 'unexpected argument "extra"' -- "${A[@]}" extra
LONG=/tmp/$(printf 'x%.0s' $(seq 1 120))
expect ctl-too-long 2 '--ctl ".*": path is 125 bytes, a Unix socket path holds at most 107' -- "${A[@]}" --ctl "$LONG"
expect set-bad 2 '--set ctl.maxclients=4: |ctl.maxclients: no such key' -- "${A[@]}" --set ctl.maxclients=4

# The config file: errors name FILE:LINE: section.key.
C=$TMP/d.conf
conf() { printf '%s\n' "$@" > "$C"; }
conf 'server = {' "  addr = \"198.18.0.2:4433\";" "  root = \"$TMP/www\";" '  shards = "2x";' '};'
expect file-shards 2 "^dpquicd: $C:4: server.shards: \"2x\": expected an integer 1\.\.16\$" -- -c "$C"
conf 'server = {' "  addr = \"198.18.0.2:4433\";" "  root = \"$TMP/www\";" '  shards = 4294967297;' '};'
expect file-int-wrap 2 "$C:4: server.shards: integer out of range" -- -c "$C"
conf 'server = {' "  root = \"$TMP/www\";" '  shardz = 2;' '};'
expect file-typo 2 "$C:3: server.shardz: unknown key in section server; did you mean shards\?" -- -c "$C"
conf 'server = {' "  root = \"$TMP/www\";" '};' 'shards = 2;'
expect file-no-section 2 "$C:4: shards: unknown section; shards is a key of section server" -- -c "$C"
conf 'srever = {' '  shards = 2;' '};'
expect file-section-typo 2 "$C:1: srever: unknown section; did you mean server\?" -- -c "$C"
conf 'server = {' '  shards 2;' '};'
expect file-syntax 2 "$C:2: syntax error" -- -c "$C"
conf 'server = {' '  shards = 2;' '  shards = 3;' '};'
expect file-duplicate 2 "$C:3: duplicate setting name" -- -c "$C"
conf 'server = {' '  addr = [ "198.18.0.2:4433" ];' '};'
expect file-list 2 "$C:2: server.addr: expected a single value" -- -c "$C"
conf 'eal = {' '  vdev = ( "net_tap0", { a = 1; } );' '};'
expect file-list-elem 2 "$C:2: eal.vdev: element 2: expected a string" -- -c "$C"
conf 'log = {' '  level = "loud";' '};'
expect file-level 2 "$C:2: log.level: \"loud\": expected a log level" -- -c "$C"
conf 'log = {' '  levels = [ "dpquic.peer:debug", "dpquic.nope:debug" ];' '};'
expect file-log-type 2 "$C:2: log.levels: .*no log type dpquic.nope \\(dpquic's: dpquic.daemon" -- -c "$C"
conf 'log = {' '  levels = [ "dpquic.*:debug", "lib.eal:error", "dpquic.driver.udp:info" ];' '};'
expect file-log-types-ok 2 'no address to serve on' -- -c "$C"
# every dpquic.* type the daemon registers is one the config accepts
for t in $(sed -n 's/.*RTE_LOG_REGISTER([a-z_]*, *\(dpquic[a-z.]*\),.*/\1/p' \
		"$(dirname "$0")"/../../control/dpquicd/*.c \
		"$(dirname "$0")"/../../control/mgmt/*.c \
		"$(dirname "$0")"/../../drivers/*/*.c "$(dirname "$0")"/../../drivers/*.c \
		"$(dirname "$0")"/../../dataplane/shard/*.c 2>/dev/null); do
	conf 'log = {' "  levels = [ \"$t:debug\" ];" '};'
	expect "log-type-$t" 2 'no address to serve on' -- -c "$C"
done
conf 'server = {' "  addr = \"198.18.0.2:4433\";" "  root = \"$TMP/www\";" '};' 'tls = {' '  cert = "/etc/hostname";' '};'
expect file-cert-alone 2 "$C:6: tls.cert \\(--cert\\) and tls.key \\(--key\\) go together" -- -c "$C"
expect file-missing 2 "$TMP/none.conf: cannot read the config file: No such file" -- -c "$TMP/none.conf"
head -c 300000 /dev/urandom > "$C"
expect file-garbage 2 "$C:[0-9]+: " -- -c "$C"
: > "$C"
expect file-empty 2 'no address to serve on' -- -c "$C"
conf 'server = {' "  addr = \"198.18.0.2:4433\";" "  root = \"$TMP/www\";" '  shards = 2;' '};'
# the command line overrides the file
expect cli-overrides 2 '^dpquicd: --shards "0"' -- -c "$C" --shards 0
expect check-ok 0 "configuration OK: $C" -- -c "$C" --check

if [ $FAILS -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
