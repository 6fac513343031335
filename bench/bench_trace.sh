#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A qlog per congestion controller from one emulated transfer each, and a
# PNG of congestion window, bytes in flight and RTT over time from each
# (bench/qlog_plot.py, python3-matplotlib). The .sqlog files open in qvis.
#   bench/bench_trace.sh [BUILD_DIR] [OUT_DIR] [LINK_SPEC] [BYTES]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
OUT=${2:-trace-out}
LINK=${3:-delay=10ms,rate=100mbit,queue=250kb,loss=0.2%}
BYTES=${4:-40M}
mkdir -p "$OUT"
for cc in $("$BUILD/emu/dpq-sim" --cc list 2>&1 | sed -n 's/.*known: //p' |
		tr ' ' '\n' | grep -v '^all$'); do
	"$BUILD/emu/dpq-sim" --link "$LINK" --bytes "$BYTES" --cc "$cc" \
		--qlog "$OUT/$cc"
	"$HERE/qlog_plot.py" "$OUT/$cc-server.sqlog" "$OUT/$cc.png" \
		--title "$cc, $LINK, sender"
done
echo "qlogs and plots in $OUT/"
