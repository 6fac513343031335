#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot p99 completion time vs loss rate from dpq-bench-fec --csv.

usage: fec_plot.py BENCH.csv OUT.png [--transfer]

One panel per transfer size and loss kind (random, bursty per datagram,
bursty in time); one line per mode (off, fixed, adaptive, ...), the clean
path at loss 0 in each. A p99 that is a failed run (inf) is left out of
its line and marked with an x at the top of the panel, in its colour.
--transfer plots the transfer time (handshake's end to last byte)
instead of the completion time (first Initial to last byte). Checks the
file as it reads it: a missing column or no rows is an error (exit 1).
Uses Debian's python3-matplotlib.
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    col = "xfer_p99_ms" if "--transfer" in argv[3:] else "p99_ms"
    with open(argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit("%s: no rows" % argv[1])
    for need in ("bytes", "loss_kind", "loss", "mode", col):
        if need not in rows[0]:
            raise SystemExit("%s: no column %s" % (argv[1], need))
    sizes = sorted({int(r["bytes"]) for r in rows})
    modes = []
    for r in rows:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    kinds = [k for k in ("random", "burst", "tburst")
             if any(r["loss_kind"] == k for r in rows)]
    titles = {"random": "random loss", "burst": "bursty loss (per datagram)",
              "tburst": "bursty loss (in time)"}
    fig, axes = plt.subplots(len(sizes), len(kinds),
                             figsize=(6 * len(kinds), 4.5 * len(sizes)),
                             squeeze=False)
    for i, size in enumerate(sizes):
        for j, kind in enumerate(kinds):
            ax = axes[i][j]
            fails = []
            for mode in modes:
                pts, failed = [], []
                for r in rows:
                    if int(r["bytes"]) != size or r["mode"] != mode:
                        continue
                    if r["loss_kind"] not in (kind, "none"):
                        continue
                    x, y = float(r["loss"]) * 100, float(r[col])
                    (pts if math.isfinite(y) else failed).append((x, y))
                pts.sort()
                if pts:
                    line, = ax.plot([p[0] for p in pts],
                                    [p[1] for p in pts], marker="o",
                                    label=mode)
                    fails += [(x, line.get_color()) for x, _ in failed]
            top = ax.get_ylim()[1]
            for x, colour in fails:
                ax.plot([x], [top], marker="x", markersize=12,
                        color=colour, clip_on=False)
                ax.annotate("p99 failed", (x, top), xytext=(-60, -14),
                            textcoords="offset points", fontsize=8,
                            color=colour)
            ax.set_title("%d kB, %s" % (size // 1000, titles[kind]))
            ax.set_xlabel("loss rate (%)")
            ax.set_ylabel("p99 %s time (ms)" %
                          ("transfer" if col.startswith("xfer")
                           else "completion"))
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("dpq-bench-fec: p99 %s time vs loss, 20 ms RTT, "
                 "100 Mbit/s" % ("transfer" if col.startswith("xfer")
                                 else "completion"))
    fig.tight_layout()
    fig.savefig(argv[2], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
