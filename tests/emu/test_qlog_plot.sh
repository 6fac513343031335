#!/usr/bin/env bash
# dpq-sim --qlog, then bench/qlog_plot.py: the qlog parses record by record
# and the plot is a PNG with the metrics in it.
set -euo pipefail
sim=$1 plot=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sim" --link delay=10ms,rate=20mbit,queue=60kb,loss=1% --bytes 3M \
	--qlog "$dir/t" >"$dir/sim.out"
grep -q ' ok in ' "$dir/sim.out"
for side in client server; do
	test -s "$dir/t-$side.sqlog"
done
# The sender (server) has metrics; both parse.
"$plot" "$dir/t-server.sqlog" "$dir/t.png" | tee "$dir/plot.out"
grep -q 'metrics updates' "$dir/plot.out"
head -c 8 "$dir/t.png" | od -An -tx1 | grep -q '89 50 4e 47'
test "$(stat -c %s "$dir/t.png")" -gt 20000
# A file that is not qlog is refused with a message, not a traceback.
printf '\x1e{"x":1}\n\x1e{bad\n' >"$dir/bad.sqlog"
if "$plot" "$dir/bad.sqlog" "$dir/bad.png" 2>"$dir/err"; then
	echo "bad qlog accepted"; exit 1
fi
grep -q 'not JSON' "$dir/err"
echo "qlog_plot: ok"
