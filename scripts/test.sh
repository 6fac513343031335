#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#  1. install packages, build with -Wall -Wextra -Werror, run every suite
#     (unit, drivers, netns: the netns suite needs root and /dev/net/tun);
#  2. rebuild with AddressSanitizer + UndefinedBehaviorSanitizer and run the
#     unit, driver, interop and e2e suites again (the last two run dpquicd,
#     dpquic-client and the ngtcp2 peers end to end under the sanitizers);
#  3. build the libFuzzer targets with clang and run each a few seconds.
# Ends with one line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh || exit 1

passed=0 failed=0 skipped=0
count() {	# add the counts of a meson testlog.json to the totals
	local log=$1/meson-logs/testlog.json
	[ -f "$log" ] || return 0
	passed=$((passed + $(grep -c '"result": "OK"' "$log")))
	failed=$((failed + $(grep -Ec '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log")))
	skipped=$((skipped + $(grep -c '"result": "SKIP"' "$log")))
}

rc=0
echo "== build (warnings are errors) =="
scripts/build.sh build-ci -Dwerror_ci=true || exit 1
echo "== tests =="
meson test -C build-ci --print-errorlogs --num-processes 2 || rc=1
count build-ci

echo "== ASan + UBSan build =="
scripts/build.sh build-asan -Dwerror_ci=true -Db_sanitize=address,undefined \
	-Db_lundef=false -Dbuildtype=debug || exit 1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
meson test -C build-asan --print-errorlogs --num-processes 2 \
	--suite unit --suite drivers --suite interop --suite e2e || rc=1
count build-asan

# libFuzzer targets (tests/fuzz), clang with ASan+UBSan: each runs a few
# seconds over its seeds and regression inputs, so a harness that breaks
# or a fixed crash that comes back fails CI. scripts/fuzz.sh runs longer.
echo "== fuzz targets (clang, libFuzzer) =="
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug >/dev/null || exit 1
fi
ninja -C build-fuzz tests/fuzz/fuzz_seeds $(sed -n \
	"s/^\t'\([a-z]*\)': \[.*/tests\/fuzz\/fuzz_\1/p" \
	tests/fuzz/meson.build) >/dev/null || exit 1
meson test -C build-fuzz --no-rebuild --print-errorlogs --num-processes 2 \
	--suite fuzz || rc=1
count build-fuzz

echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || rc=1
exit $rc
