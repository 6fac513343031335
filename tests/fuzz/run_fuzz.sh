#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One fuzz target for a bounded time, as the 'fuzz' meson suite runs it:
#   run_fuzz.sh TARGET_EXE FUZZ_SEEDS_EXE CORPUS_DIR NAME SECONDS
# Inputs: seeds made by fuzz_seeds, and the regression inputs kept in
# CORPUS_DIR/NAME (crashes found once, fixed since). New coverage found is
# written to a temporary directory, not into the source tree. Fails on any
# crash, sanitizer report, leak or check failure; prints the executions.
set -u
EXE=${1:?usage: $0 TARGET SEEDS CORPUS NAME SECONDS}
SEEDS=${2:?}
CORPUS=${3:?}
NAME=${4:?}
SECS=${5:?}
EXE=$(realpath "$EXE"); SEEDS=$(realpath "$SEEDS"); CORPUS=$(realpath -m "$CORPUS")
TMP=$(mktemp -d /tmp/dpq-fuzz-"$NAME".XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
"$SEEDS" "$TMP/seeds" > /dev/null || { echo "FAIL: fuzz_seeds"; exit 1; }
mkdir -p "$TMP/new" "$TMP/seeds/$NAME"
dirs=("$TMP/new" "$TMP/seeds/$NAME")
[ -d "$CORPUS/$NAME" ] && dirs+=("$CORPUS/$NAME")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$TMP" || exit 1
"$EXE" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$TMP/" "${dirs[@]}" \
	> "$TMP/log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/log")
cov=$(grep -o 'cov: [0-9]*' "$TMP/log" | tail -1)
if [ $rc -ne 0 ]; then
	tail -40 "$TMP/log"
	for f in "$TMP"/crash-* "$TMP"/leak-* "$TMP"/timeout-* "$TMP"/oom-*; do
		[ -f "$f" ] || continue
		echo "input $(basename "$f"): $(od -An -tx1 -v "$f" | head -c 600)"
	done
	echo "FAIL: fuzz_$NAME (exit $rc) after ${execs:-?} executions"
	exit 1
fi
echo "fuzz_$NAME: ${execs:-?} executions in ${SECS} s, $cov"
