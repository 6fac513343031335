#!/usr/bin/env bash
# dpq-bench-fec --csv, then bench/fec_plot.py: every cell of the table is
# a CSV row, runs finish, the plot is a PNG; bad input is refused with a
# message. Two runs per cell of the 100 kB size: the bench works, its
# figures are not the point here.
set -euo pipefail
bench=$1 plot=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bench" --runs 2 --size 100000 --csv "$dir/f.csv" >"$dir/out"
grep -q '^completion time' "$dir/out"
grep -q '^rebuilt/lost' "$dir/out"
# the p99 ratio and its interval for each of the 10 lossy settings; with
# two runs per cell the bench says it cannot tell
grep -q '^p99 completion time, adapt+pr / off' "$dir/out"
test "$(grep -c 'too few runs to tell' "$dir/out")" -eq 10
# 11 loss settings x 6 modes, plus the header
test "$(wc -l <"$dir/f.csv")" -eq 67
grep -q ',tburst,0.02,' "$dir/f.csv"
# every run finished (column ok = 2, failed = 0)
awk -F, 'NR > 1 && ($5 != 2 || $6 != 0) { bad = 1 } END { exit bad }' \
	"$dir/f.csv"
"$plot" "$dir/f.csv" "$dir/p.png"
"$plot" "$dir/f.csv" "$dir/t.png" --transfer
for f in p t; do
	head -c 8 "$dir/$f.png" | od -An -tx1 | grep -q '89 50 4e 47'
	test "$(stat -c %s "$dir/$f.png")" -gt 20000
done
printf 'a,b\n1,2\n' >"$dir/bad.csv"
if "$plot" "$dir/bad.csv" "$dir/bad.png" 2>"$dir/err"; then
	echo "bad csv accepted"; exit 1
fi
grep -q 'no column' "$dir/err"
if "$bench" --runs 0 >/dev/null 2>"$dir/err2"; then
	echo "--runs 0 accepted"; exit 1
fi
grep -q 'runs wants' "$dir/err2"
if "$bench" --spec sometimes >/dev/null 2>"$dir/err3"; then
	echo "--spec sometimes accepted"; exit 1
fi
grep -q 'spec: off' "$dir/err3"
if "$bench" --burst-time 0 >/dev/null 2>"$dir/err4"; then
	echo "--burst-time 0 accepted"; exit 1
fi
grep -q 'burst-time wants' "$dir/err4"
echo "fec_bench_plot: ok"
