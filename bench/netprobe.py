#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Small kernel-socket probes for the real-time link emulator (dpq-linkem).

  netprobe.py udp-echo PORT SECONDS
      echo UDP datagrams back for SECONDS
  netprobe.py udp-ping HOST PORT COUNT INTERVAL_MS
      send COUNT numbered datagrams, print
      "sent N received M dup D reordered R rtt_ms min X median Y max Z"
  netprobe.py tcp-sink PORT SECONDS
      accept one TCP connection, read to EOF, answer "BYTES SHA256\\n"
  netprobe.py tcp-source HOST PORT BYTES [CC]
      connect (congestion control CC, default the system's), send BYTES of
      a pattern, read the sink's answer, check it, print
      "tcp bytes N seconds S goodput_mbps G cc NAME ok|MISMATCH"
      (time from connect to the sink's answer: every byte arrived)

Every wait is bounded; exit status 0 on success.
"""
import hashlib
import socket
import struct
import sys
import time

CHUNK = 65536


def pattern_chunk():
    h = hashlib.sha256(b"dpq-linkem").digest()
    return (h * (CHUNK // len(h) + 1))[:CHUNK]


def udp_echo(port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            data, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        s.sendto(data, addr)
    return 0


def udp_ping(host, port, count, interval_ms):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    sent_at, rtts, seen = {}, [], set()
    dup = reord = 0
    last = -1
    pad = b"\0" * 64

    def drain(deadline):
        nonlocal dup, reord, last
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            s.settimeout(left)
            try:
                data = s.recv(2048)
            except (socket.timeout, ConnectionRefusedError):
                return
            if len(data) < 8:
                continue
            seq = struct.unpack("!Q", data[:8])[0]
            if seq in seen:
                dup += 1
                continue
            seen.add(seq)
            if seq < last:
                reord += 1
            last = max(last, seq)
            rtts.append((time.monotonic() - sent_at[seq]) * 1000)

    for i in range(count):
        sent_at[i] = time.monotonic()
        s.send(struct.pack("!Q", i) + pad)
        drain(time.monotonic() + interval_ms / 1000.0)
    drain(time.monotonic() + 2.0)
    rtts.sort()
    med = rtts[len(rtts) // 2] if rtts else 0
    print("sent %d received %d dup %d reordered %d rtt_ms min %.2f "
          "median %.2f max %.2f" % (count, len(rtts), dup, reord,
                                    rtts[0] if rtts else 0, med,
                                    rtts[-1] if rtts else 0))
    return 0 if rtts else 1


def tcp_sink(port, seconds):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(seconds)
    c, _ = ls.accept()
    c.settimeout(seconds)
    h = hashlib.sha256()
    n = 0
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
    c.sendall(("%d %s\n" % (n, h.hexdigest())).encode())
    c.close()
    return 0


def tcp_source(host, port, nbytes, cc=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    used = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                        16).split(b"\0")[0].decode()
    s.settimeout(120)
    chunk = pattern_chunk()
    h = hashlib.sha256()
    t0 = time.monotonic()
    s.connect((host, port))
    left = nbytes
    while left > 0:
        b = chunk if left >= CHUNK else chunk[:left]
        s.sendall(b)
        h.update(b)
        left -= len(b)
    s.shutdown(socket.SHUT_WR)
    answer = b""
    while not answer.endswith(b"\n"):
        b = s.recv(256)
        if not b:
            break
        answer += b
    secs = time.monotonic() - t0
    ok = answer.decode().split() == [str(nbytes), h.hexdigest()]
    print("tcp bytes %d seconds %.3f goodput_mbps %.2f cc %s %s"
          % (nbytes, secs, nbytes * 8 / secs / 1e6, used,
             "ok" if ok else "MISMATCH"))
    return 0 if ok else 1


def main(a):
    try:
        if len(a) == 4 and a[1] == "udp-echo":
            return udp_echo(int(a[2]), float(a[3]))
        if len(a) == 6 and a[1] == "udp-ping":
            return udp_ping(a[2], int(a[3]), int(a[4]), float(a[5]))
        if len(a) == 4 and a[1] == "tcp-sink":
            return tcp_sink(int(a[2]), float(a[3]))
        if len(a) in (5, 6) and a[1] == "tcp-source":
            return tcp_source(a[2], int(a[3]), int(a[4]),
                              a[5] if len(a) == 6 else None)
    except (OSError, ValueError) as e:
        print("netprobe: %s" % e, file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
