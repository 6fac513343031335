#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Proves that the layering of meson.build is enforced by the compiler.

For each case, a one-line file including a header is compiled with the
exact command line of a library's own source file (from the build
directory's compile_commands.json, with -fsyntax-only): headers of the
library's own and lower folders must compile, any other must stop the
compiler with the "layering:" #error of the hidden tree.

usage: check_layering.py BUILD_DIR
"""
import json
import os
import shlex
import subprocess
import sys

# (source of the library, header to include, allowed?)
CASES = [
    ("dataplane/engine/frame.c", "dataplane/engine/packet.h", True),
    ("dataplane/engine/frame.c", "dataplane/crypto/crypto.h", False),
    ("dataplane/engine/frame.c", "dataplane/quic/conn.h", False),
    ("dataplane/crypto/crypto.c", "dataplane/quic/conn.h", False),
    ("dataplane/fec/xor.c", "dataplane/engine/packet.h", True),
    ("dataplane/fec/xor.c", "dataplane/crypto/crypto.h", False),
    ("dataplane/quic/conn.c", "dataplane/crypto/crypto.h", True),
    ("dataplane/quic/conn.c", "dataplane/server/listener.h", False),
    ("dataplane/quic/conn.c", "dataplane/shard/shard.h", False),
    ("dataplane/quic/conn.c", "control/tls/tls.h", False),
    ("dataplane/server/listener.c", "dataplane/quic/conn.h", False),
    ("dataplane/app/app.c", "dataplane/quic/conn.h", True),
    ("dataplane/app/app.c", "dataplane/shard/shard.h", False),
    ("drivers/addr.c", "dpquic/driver.h", True),
    ("drivers/addr.c", "dataplane/engine/packet.h", False),
    ("dataplane/shard/shard.c", "dataplane/shard/msg.h", True),
    ("dataplane/shard/shard.c", "dpquic/driver.h", True),
    ("dataplane/shard/shard.c", "control/mgmt/mgmt.h", False),
    ("dataplane/shard/shard.c", "dataplane/app/app.h", False),
    ("control/tls/tls.c", "dataplane/quic/conn.h", True),
    ("control/tls/tls.c", "control/mgmt/mgmt.h", False),
    ("control/mgmt/mgmt.c", "dataplane/shard/msg.h", True),
    ("control/ctl/json.c", "dataplane/engine/errors.h", False),
    ("emu/sim.c", "control/tls/hs_direct.h", True),
    ("emu/linkem.c", "dataplane/shard/shard.h", False),
]


def library_command(entries, src):
    """The compile command of src as part of its static library."""
    for e in entries:
        f = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if f.endswith("/" + src) and "libdpq_" in e["command"]:
            return e
    sys.exit(f"check_layering: no library compile command for {src}")


def syntax_only(args, src_arg, probe):
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MQ", "-MF"):
            skip = True
        elif a == "-MD":
            pass
        elif a == src_arg:
            out.append(probe)
        else:
            out.append(a)
    return out + ["-fsyntax-only"]


def main():
    build = os.path.abspath(sys.argv[1])
    with open(os.path.join(build, "compile_commands.json")) as fp:
        entries = json.load(fp)
    probe_dir = os.path.join(build, "tests", "layering")
    os.makedirs(probe_dir, exist_ok=True)
    probe = os.path.join(probe_dir, "probe.c")
    failed = 0
    for src, hdr, allowed in CASES:
        e = library_command(entries, src)
        args = shlex.split(e["command"])
        with open(probe, "w") as fp:
            fp.write(f'#include "{hdr}"\n')
        r = subprocess.run(syntax_only(args, e["file"], probe),
                           cwd=e["directory"], capture_output=True,
                           text=True)
        msg = f"layering: {hdr} is not visible"
        ok = (r.returncode == 0) if allowed else \
            (r.returncode != 0 and msg in r.stderr)
        what = "allowed" if allowed else "refused"
        print(f"{'ok  ' if ok else 'FAIL'} {src}: #include \"{hdr}\" "
              f"expected {what}")
        if not ok:
            print(r.stderr)
            failed += 1
    os.unlink(probe)
    print(f"{len(CASES) - failed}/{len(CASES)} cases as expected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
