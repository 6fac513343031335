#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot congestion window, bytes in flight and RTT over time from a qlog.

usage: qlog_plot.py TRACE.sqlog OUT.png [--title TEXT]

Reads qlog 0.3 JSON-SEQ (what dpq-sim --qlog and dpquicd write): the
recovery:metrics_updated events (each carries only the values that
changed, so the last value of each field is carried forward), and marks
recovery:packet_lost events. Also checks the file as it goes: a record
that is not JSON, or a file without metrics, is an error (exit 1).
Uses Debian's python3-matplotlib.
"""
import json
import sys


def read_seq(path):
    """Records of a JSON-SEQ file (RFC 7464): RS-separated JSON texts."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for i, chunk in enumerate(data.split(b"\x1e")):
        if not chunk.strip():
            continue
        try:
            out.append(json.loads(chunk))
        except ValueError as e:
            raise SystemExit("%s: record %d is not JSON: %s" % (path, i, e))
    return out


def series(records):
    t, cwnd, bif, srtt, lrtt, mrtt, lost = [], [], [], [], [], [], []
    cur = {}
    for r in records[1:]:
        name = r.get("name", "")
        if name == "recovery:metrics_updated":
            cur.update(r["data"])
            t.append(r["time"] / 1000.0)
            cwnd.append(cur.get("congestion_window", 0) / 1024.0)
            bif.append(cur.get("bytes_in_flight", 0) / 1024.0)
            srtt.append(cur.get("smoothed_rtt", float("nan")))
            lrtt.append(cur.get("latest_rtt", float("nan")))
            mrtt.append(cur.get("min_rtt", float("nan")))
        elif name == "recovery:packet_lost":
            lost.append(r["time"] / 1000.0)
    return t, cwnd, bif, srtt, lrtt, mrtt, lost


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2])
        return 2 if len(argv) < 3 else 0
    src, dst = argv[1], argv[2]
    title = src
    if len(argv) >= 5 and argv[3] == "--title":
        title = argv[4]
    records = read_seq(src)
    if not records or "qlog_version" not in records[0]:
        raise SystemExit("%s: no qlog header" % src)
    vp = records[0].get("trace", {}).get("vantage_point", {}).get("type", "?")
    t, cwnd, bif, srtt, lrtt, mrtt, lost = series(records)
    if not t:
        raise SystemExit("%s: no recovery:metrics_updated events "
                         "(the sender's trace has them)" % src)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(10, 6.5))
    ax1.step(t, cwnd, where="post", label="congestion window", lw=1.2)
    ax1.step(t, bif, where="post", label="bytes in flight", lw=0.8,
             alpha=0.8)
    if lost:
        top = max(cwnd) if cwnd else 1
        ax1.plot(lost, [top * 1.02] * len(lost), "rx", ms=4,
                 label="packet lost (%d)" % len(lost))
    ax1.set_ylabel("KiB")
    ax1.legend(loc="upper right", fontsize=8)
    ax1.grid(alpha=0.3)
    ax1.set_title("%s (%s)" % (title, vp), fontsize=10)
    ax2.plot(t, lrtt, ".", ms=2, label="latest RTT", alpha=0.5)
    ax2.step(t, srtt, where="post", label="smoothed RTT", lw=1.2)
    ax2.step(t, mrtt, where="post", label="min RTT", lw=0.8)
    ax2.set_ylabel("ms")
    ax2.set_xlabel("time (s)")
    ax2.legend(loc="upper right", fontsize=8)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print("%s: %d metrics updates, %d losses, %.2f s -> %s"
          % (src, len(t), len(lost), t[-1] - t[0], dst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
