#!/usr/bin/env bash
# A fuzzing campaign (README "Fuzzing"): build the libFuzzer targets of
# tests/fuzz with clang, ASan and UBSan into build-fuzz/, then run each
# for SECONDS (default 300) on all cores but one, keeping what it learns in
# build-fuzz/corpus/<target>/ between campaigns. Prints, per target, the
# time, the executions and the coverage reached, and where any crash went
# (build-fuzz/crashes/<target>/; once fixed, copy the input into
# tests/fuzz/corpus/<target>/ so CI replays it).
#
#   scripts/fuzz.sh [-t SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
SECS=300
if [ "${1:-}" = -t ]; then
	SECS=${2:?usage: $0 [-t SECONDS] [TARGET...]}
	shift 2
fi
ALL=(frame packet tparams recvbuf conn listener netproto ctl hq tls)
TARGETS=("${@:-${ALL[@]}}")
[ $# -gt 0 ] && TARGETS=("$@")
B=build-fuzz
command -v clang >/dev/null || { echo "fuzz: clang is missing (scripts/setup.sh)" >&2; exit 1; }
if [ ! -f $B/build.ninja ]; then
	CC=clang meson setup $B -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debug >/dev/null || exit 1
fi
ninja -C $B tests/fuzz/fuzz_seeds $(printf 'tests/fuzz/fuzz_%s ' "${TARGETS[@]}") \
	>/dev/null || { echo "fuzz: build failed (ninja -C $B)" >&2; exit 1; }
$B/tests/fuzz/fuzz_seeds $B/seeds >/dev/null || exit 1
jobs=$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
printf '%-10s %8s %14s %10s %8s  %s\n' target seconds executions exec/s cov result
rc=0
for t in "${TARGETS[@]}"; do
	mkdir -p $B/corpus/$t $B/crashes/$t
	dirs=($B/corpus/$t $B/seeds/$t)
	[ -d tests/fuzz/corpus/$t ] && dirs+=(tests/fuzz/corpus/$t)
	log=$B/crashes/$t/last.log
	start=$(date +%s)
	# -fork keeps going after a crash (each saved) on $jobs cores.
	$B/tests/fuzz/fuzz_$t -max_total_time="$SECS" -timeout=20 \
		-rss_limit_mb=2048 -print_final_stats=1 -fork=$jobs \
		-ignore_crashes=1 -artifact_prefix=$B/crashes/$t/ \
		"${dirs[@]}" > "$log" 2>&1
	r=$?
	took=$(( $(date +%s) - start ))
	# libFuzzer's own summary (fork mode reports per job; sum them).
	execs=$(grep -o 'exec/s: [0-9]*\|execs: [0-9]*' "$log" | tail -1)
	total=$(awk '/^stat::number_of_executed_units:/ {s += $2} END {print s+0}' "$log")
	[ "$total" -eq 0 ] && total=$(grep -o '#[0-9]*' "$log" | tail -1 | tr -d '#')
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	crashes=$(find $B/crashes/$t -name 'crash-*' -o -name 'leak-*' -o \
		-name 'timeout-*' -o -name 'oom-*' | wc -l)
	res=ok
	if [ "$crashes" -gt 0 ] || [ $r -ne 0 ]; then
		res="FAIL: $crashes inputs in $B/crashes/$t (log: $log)"
		rc=1
	fi
	printf '%-10s %8s %14s %10s %8s  %s\n' "$t" "$took" "${total:-?}" \
		"$(( ${total:-0} / (took > 0 ? took : 1) ))" "${cov:-?}" "$res"
	: "$execs"
done
exit $rc
